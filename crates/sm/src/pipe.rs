//! The windowed request pipeline: up to `window` SMPs in flight, each matched to its
//! response by transaction id, resent after `timeout` up to `retries` times. Traps and
//! requests addressed to the SM (SA queries, MADs of other classes) that arrive meanwhile are
//! kept for the SM's loop. Every wait is bounded by the transport's clock.

use mad::sa::MadHeader;
use mad::{attr_id, Address, Method, Route, Smp, Transport, MAD_SIZE, SMP_DATA};
use std::collections::VecDeque;
use std::time::Duration;

/// One request of a batch.
#[derive(Clone, Debug)]
pub struct Req {
    pub route: Route,
    pub method: Method,
    pub attr: u16,
    pub modifier: u32,
    pub data: [u8; SMP_DATA],
}

impl Req {
    pub fn get(route: Route, attr: u16, modifier: u32) -> Req {
        Req {
            route,
            method: Method::Get,
            attr,
            modifier,
            data: [0; SMP_DATA],
        }
    }
    pub fn set(route: Route, attr: u16, modifier: u32, data: [u8; SMP_DATA]) -> Req {
        Req {
            route,
            method: Method::Set,
            attr,
            modifier,
            data,
        }
    }
}

/// Why one request has no good response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReqError {
    #[error("no response after {0} tries")]
    Timeout(u32),
    #[error("MAD status {0:#06x}")]
    Status(u16),
}

/// Pipeline settings.
#[derive(Clone, Copy, Debug)]
pub struct PipeConfig {
    pub window: usize,
    pub timeout: Duration,
    pub retries: u32,
}

impl Default for PipeConfig {
    fn default() -> Self {
        // ibsim answers in 15-35 µs; OpenSM's defaults are 4 on the wire and 200 ms.
        PipeConfig {
            window: 16,
            timeout: Duration::from_millis(100),
            retries: 3,
        }
    }
}

/// Counters of what went over the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    /// SMPs sent, retries included.
    pub sent: u64,
    pub retries: u64,
    pub timeouts: u64,
    /// MADs received that matched nothing in flight (late responses, stray MADs).
    pub stray: u64,
    /// Requests addressed to the SM received (SA queries, other classes).
    pub requests: u64,
}

/// A request addressed to the SM: the MAD, who sent it, and when it arrived.
#[derive(Clone, Debug)]
pub struct Incoming {
    pub at: Duration,
    pub mad: [u8; MAD_SIZE],
    pub from: Address,
}

/// Longest queue of unanswered requests; more are dropped (counted as strays), so that a
/// flood cannot grow the SM's memory while it is busy with a repair.
const MAX_REQUESTS: usize = 4096;

/// The pipeline over a transport.
#[derive(Debug)]
pub struct Pipe<T> {
    t: T,
    cfg: PipeConfig,
    next_tid: u32,
    pub stats: PipeStats,
    /// Traps (method Trap, attribute Notice) received and not yet handled, with the time
    /// they arrived on the transport's clock.
    pub traps: VecDeque<(Duration, Smp)>,
    /// Requests to the SM not yet answered: every MAD that is not an SMP and not a
    /// response, and LID-routed SMP Gets and Sets (another SM's SMInfo).
    pub requests: VecDeque<Incoming>,
}

/// What one received MAD is to the pipeline.
enum Kind {
    Trap(Smp),
    Response(Smp),
    Request,
    Stray,
}

fn kind(m: &[u8; MAD_SIZE]) -> Kind {
    let Some(h) = MadHeader::decode(m) else {
        return Kind::Stray;
    };
    if h.class != mad::CLASS_SUBN_DR && h.class != mad::CLASS_SUBN_LID {
        return if h.is_response() {
            Kind::Stray
        } else {
            Kind::Request
        };
    }
    match Smp::decode(m) {
        Ok(s) if s.method == Method::Trap && s.attr == attr_id::NOTICE => Kind::Trap(s),
        Ok(s) if s.method == Method::GetResp => Kind::Response(s),
        Ok(s)
            if matches!(s.method, Method::Get | Method::Set) && h.class == mad::CLASS_SUBN_LID =>
        {
            Kind::Request
        }
        _ => Kind::Stray,
    }
}

struct InFlight {
    idx: usize,
    tid: u32,
    deadline: Duration,
    tries: u32,
}

impl<T: Transport> Pipe<T> {
    pub fn new(t: T, cfg: PipeConfig) -> Self {
        Pipe {
            t,
            cfg,
            next_tid: 1,
            stats: PipeStats::default(),
            traps: VecDeque::new(),
            requests: VecDeque::new(),
        }
    }
    pub fn transport(&self) -> &T {
        &self.t
    }
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.t
    }
    pub fn now(&self) -> Duration {
        self.t.now()
    }
    /// Gives the transport back.
    pub fn into_transport(self) -> T {
        self.t
    }

    /// The next transaction id (never 0).
    fn fresh_tid(&mut self) -> u32 {
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1).max(1);
        tid
    }

    fn send(&mut self, r: &Req, tid: u32) -> std::io::Result<()> {
        let mut s = Smp::request(r.method, r.route.clone(), tid as u64, r.attr, r.modifier);
        s.data = r.data;
        self.stats.sent += 1;
        self.t.send(&s.encode(), Address::of(&r.route))
    }

    /// Sends a message that has no response (TrapRepress).
    pub fn send_unanswered(&mut self, s: &Smp) -> std::io::Result<()> {
        self.stats.sent += 1;
        self.t.send(&s.encode(), Address::of(&s.route))
    }

    /// Sends the answer to a request (not counted among the SMPs).
    pub fn answer(&mut self, m: &[u8; MAD_SIZE], to: Address) -> std::io::Result<()> {
        self.t.send(m, to)
    }

    /// Files a received MAD that is not a response to something in flight: a trap, a
    /// request to the SM, or a stray. Returns the response it is, if it is one.
    fn file(&mut self, m: [u8; MAD_SIZE], from: Address) -> Option<Smp> {
        match kind(&m) {
            Kind::Trap(s) => {
                let at = self.t.now();
                self.traps.push_back((at, s));
            }
            Kind::Response(s) => return Some(s),
            Kind::Request if self.requests.len() < MAX_REQUESTS => {
                self.stats.requests += 1;
                let at = self.t.now();
                self.requests.push_back(Incoming { at, mad: m, from });
            }
            Kind::Request | Kind::Stray => self.stats.stray += 1,
        }
        None
    }

    /// Sends every request and returns each one's response data, in order.
    pub fn run(&mut self, reqs: &[Req]) -> std::io::Result<Vec<Result<Smp, ReqError>>> {
        let mut out: Vec<Option<Result<Smp, ReqError>>> = vec![None; reqs.len()];
        let mut flight: Vec<InFlight> = Vec::with_capacity(self.cfg.window);
        let mut next = 0;
        let mut done = 0;
        while done < reqs.len() {
            while flight.len() < self.cfg.window.max(1) && next < reqs.len() {
                let tid = self.fresh_tid();
                self.send(&reqs[next], tid)?;
                flight.push(InFlight {
                    idx: next,
                    tid,
                    deadline: self.t.now() + self.cfg.timeout,
                    tries: 1,
                });
                next += 1;
            }
            let now = self.t.now();
            let wait = flight
                .iter()
                .map(|f| f.deadline.saturating_sub(now))
                .min()
                .unwrap_or_default();
            match self.t.recv(wait)? {
                Some((m, from)) => {
                    let Some(s) = self.file(m, from) else {
                        continue;
                    };
                    let tid = s.tid as u32;
                    match flight.iter().position(|f| f.tid == tid) {
                        Some(i) => {
                            let f = flight.swap_remove(i);
                            out[f.idx] = Some(if s.status == 0 {
                                Ok(s)
                            } else {
                                Err(ReqError::Status(s.status))
                            });
                            done += 1;
                        }
                        None => self.stats.stray += 1,
                    }
                }
                None => {
                    let now = self.t.now();
                    let mut i = 0;
                    while i < flight.len() {
                        if flight[i].deadline > now {
                            i += 1;
                            continue;
                        }
                        if flight[i].tries > self.cfg.retries {
                            let f = flight.swap_remove(i);
                            self.stats.timeouts += 1;
                            out[f.idx] = Some(Err(ReqError::Timeout(f.tries)));
                            done += 1;
                            continue;
                        }
                        // Resend under a new TID so that a late answer to the old one
                        // cannot be taken for this one.
                        let tid = self.fresh_tid();
                        let idx = flight[i].idx;
                        self.send(&reqs[idx], tid)?;
                        self.stats.retries += 1;
                        let f = &mut flight[i];
                        f.tid = tid;
                        f.tries += 1;
                        f.deadline = now + self.cfg.timeout;
                        i += 1;
                    }
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|o| o.expect("every request answered"))
            .collect())
    }

    /// Waits up to `timeout` for a trap. Returns `None` at the timeout, and as soon as a
    /// request to the SM is waiting in [`Pipe::requests`] (with every MAD that has arrived
    /// by then filed, and a trap among them returned); other MADs count as strays.
    pub fn wait_trap(&mut self, timeout: Duration) -> std::io::Result<Option<(Duration, Smp)>> {
        if let Some(t) = self.traps.pop_front() {
            return Ok(Some(t));
        }
        let end = self.t.now() + timeout;
        loop {
            let now = self.t.now();
            if !self.requests.is_empty() {
                // Whatever else has arrived already is filed too (a burst of queries is
                // answered in one go), without waiting.
                while self.requests.len() < MAX_REQUESTS {
                    let Some((m, from)) = self.t.recv(Duration::ZERO)? else {
                        break;
                    };
                    if self.file(m, from).is_some() {
                        self.stats.stray += 1;
                    }
                }
                return Ok(self.traps.pop_front());
            }
            if now >= end {
                return Ok(None);
            }
            match self.t.recv(end - now)? {
                Some((m, from)) => {
                    if self.file(m, from).is_some() {
                        self.stats.stray += 1;
                    }
                    if let Some(t) = self.traps.pop_front() {
                        return Ok(Some(t));
                    }
                }
                None => return Ok(None),
            }
        }
    }
}
