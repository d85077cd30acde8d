//! The discrete-event core. See the crate documentation for the model; this file holds the
//! state and the event handlers.

use crate::config::{Config, LinkRate, Unroutable};
use crate::net::{FrontHdr, FrontRings, Net};
use crate::queue::EventQueue;
use crate::reconf::{self, FaultEvent, Scheme, Smp};
use crate::report::{self, BufferRef, DropReason, Report, RunFacts};
use crate::stats::{BinAcc, Histogram};
use crate::traffic::{self, Dest};
use fabric::rng::Rng;
use fabric::{ChannelId, Fabric, Lid};
use routing::fault::Fault;
use routing::forward::{Failure, Forward, Hop, Plane, NONE};
use routing::tables::PathSl;
use routing::Routing;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Why a run cannot start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("the fabric has fewer than two hosts (end ports cabled to a switch)")]
    TooFewHosts,
    #[error("the tables do not fit the fabric: {0}")]
    Tables(String),
    #[error("bad configuration: {0}")]
    Config(String),
}

// Event kinds (top 4 bits of the payload).
const EV_GEN: u64 = 0;
const EV_ARRIVE: u64 = 1;
const EV_XBAR: u64 = 2;
const EV_LINK: u64 = 3;
const EV_CREDIT: u64 = 4;
const EV_WATCH: u64 = 5;
const EV_CTRL: u64 = 6;
const EV_END: u64 = 7;
const EV_TRACE: u64 = 8;
/// A crossbar transfer and the link transmission it fed, ending at the same time: an
/// [`EV_XBAR`] and the [`EV_LINK`] right behind it in the queue, as one event (see
/// [`Sim::grant`]).
const EV_XL: u64 = 9;
const KIND_SHIFT: u32 = 60;
/// How many events ahead each stage of [`Sim::prefetch`] looks.
const PF: [usize; 5] = [12, 9, 6, 3, 1];
const DATA_MASK: u64 = (1 << KIND_SHIFT) - 1;

#[inline]
fn ev(kind: u64, data: u64) -> u64 {
    (kind << KIND_SHIFT) | data
}

// Packet states.
const P_FREE: u8 = 0;
const P_SOURCE: u8 = 1;
const P_WIRE: u8 = 2;
const P_IN: u8 = 3;
const P_OUT: u8 = 4;

/// One packet in the slab, one cache line each (48 bytes unaligned would straddle two lines
/// for a third of the packets, and a packet is read at every hop).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Packet {
    gen: u64,
    inj: u64,
    /// When its tail is complete in the buffer it is in (or, on a wire, at the far end).
    tail: u64,
    /// Destination host.
    dst: u32,
    /// Channel it is on (wire) or arrived by (input buffer). Where a head is routed to is
    /// its buffer's [`Head`].
    ch: u32,
    dlid: Lid,
    bytes: u16,
    sl: u8,
    vl: u8,
    cr: u8,
    hops: u8,
    state: u8,
}

/// The head of an input buffer (per (channel, VL)) as routed: the one record of where it goes,
/// kept beside the buffer so that arbitration does not fetch every waiting packet. Valid while
/// the buffer is not empty; `out` is `NONE` while the head is not routed (held).
#[derive(Clone, Copy, Debug)]
struct Head {
    out: u32,
    ovl: u8,
    cr: u8,
}

impl Head {
    const EMPTY: Head = Head {
        out: NONE,
        ovl: 0,
        cr: 0,
    };
}

/// The state of one directed channel, everything the hot path reads about it in one cache
/// line: its static facts (a copy of [`crate::net::Chan`]), its output side (at the switch
/// or host it leaves: link, crossbar output, VL arbitration) and its input side (at the
/// switch it enters: the crossbar transfer in progress). Per-VL state lives beside it, in
/// arrays indexed `channel * nvl + vl`.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Cs {
    src_sw: u32,
    dst_sw: u32,
    src_host: u32,
    dst_host: u32,
    /// Picoseconds per byte.
    t_byte: u32,
    src_port: u8,
    dst_port: u8,
    /// The link is up (and both its ends).
    alive: bool,
    /// A packet is on the link (its VL and credits: `send_vl`, `send_cr`).
    busy: bool,
    send_vl: u8,
    send_cr: u8,
    /// The VL the link served last (round robin).
    vlarb: u8,
    /// The crossbar output feeding this channel is busy.
    xout_busy: bool,
    /// An injection channel: its host has packets waiting in its source queue (so that a
    /// link or credit event need not read the host to find its queue empty).
    src_queued: bool,
    /// The VLs whose output buffer is not empty (bit per VL).
    oq_mask: u16,
    /// Round-robin pointer over the crossbar output's request bits.
    xout_rr: u32,
    /// The crossbar output's request bits when they fit one word (see `Sim::req`).
    req: u64,
    /// Picoseconds the link has been sending.
    busy_ps: u64,
    /// Crossbar, this channel as an input: the packet crossing (or `NONE`), to which output,
    /// from which VL, with how many credits.
    xin_pkt: u32,
    xin_out: u32,
    xin_vl: u8,
    xin_cr: u8,
}

impl Cs {
    fn new(ch: &crate::net::Chan) -> Cs {
        Cs {
            src_sw: ch.src_sw,
            dst_sw: ch.dst_sw,
            src_host: ch.src_host,
            dst_host: ch.dst_host,
            t_byte: ch.t_byte,
            src_port: ch.src_port,
            dst_port: ch.dst_port,
            alive: true,
            busy: false,
            send_vl: 0,
            send_cr: 0,
            vlarb: 0,
            xout_busy: false,
            src_queued: false,
            oq_mask: 0,
            xout_rr: 0,
            req: 0,
            busy_ps: 0,
            xin_pkt: NONE,
            xin_out: NONE,
            xin_vl: 0,
            xin_cr: 0,
        }
    }
}

/// The state of one (channel, VL): its credits, its input buffer's routed head, and where
/// its two rings start.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
struct Vs {
    /// Credits the sender holds for the receiver's input buffer (those on their way back
    /// are `Sim::cred_fly`).
    credits: u32,
    /// Room left in the output buffer (credits).
    out_space: u32,
    /// The input buffer's head, see [`Head`].
    hd: Head,
    /// The input buffer ([`IN`]) and the output buffer ([`OUT`]): front packet, where the
    /// rest starts in `Sim::bufs`, length.
    q: [FrontHdr; 2],
}

/// The input buffer of a (channel, VL): at the switch the channel enters.
const IN: usize = 0;
/// The output buffer of a (channel, VL): at the switch the channel leaves.
const OUT: usize = 1;

// The layouts the hot path is built around: one cache line per channel, two (channel, VL)
// records per line.
const _: () = assert!(std::mem::size_of::<Cs>() == 64);
const _: () = assert!(std::mem::size_of::<Vs>() == 32);

impl Vs {
    fn new(in_cap: u32, out_cap: u32) -> Vs {
        Vs {
            credits: in_cap,
            out_space: out_cap,
            hd: Head::EMPTY,
            q: [FrontHdr::EMPTY; 2],
        }
    }
}

struct Host {
    ep: u32,
    ch: u32,
    /// Its end port: node and port number.
    node: fabric::NodeId,
    num: u8,
    rng: Rng,
    dest: Option<Dest>,
    queue: VecDeque<u32>,
    alive: bool,
}

/// A timed control action.
#[derive(Clone, Copy, Debug)]
enum Ctrl {
    Fail(Fault),
    /// The SM has detected the failure (static: stop injection now).
    Detected,
    /// The SM has the new tables.
    Computed,
    /// Apply SMP `i` of the plan.
    Smp(usize),
    /// Every SMP done: sources take their new (DLID, SL); injection resumes.
    Sources,
}

/// What happened to the fault and repair, for the report.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultLog {
    pub at: u64,
    pub scheme: Option<Scheme>,
    pub t_compute: u64,
    pub lft_blocks: usize,
    pub sl2vl_rows: usize,
    pub first_smp: Option<u64>,
    pub last_smp: Option<u64>,
    pub sources_at: Option<u64>,
    pub stopped_at: Option<u64>,
    pub drained_at: Option<u64>,
    pub drain_forced: bool,
    pub dropped_after: u64,
    pub lat_after: Histogram,
}

/// The simulator. Build it with [`Sim::new`], add a fault with [`Sim::with_fault`], and
/// [`Sim::run`] it.
pub struct Sim<'f> {
    f: &'f Fabric,
    cfg: Config,
    net: Net,
    plane: Plane,
    routing: Routing,
    nvl: usize,
    q: EventQueue,
    now: u64,
    end: u64,

    /// Per channel: its state, in one cache line (see [`Cs`]).
    cs: Vec<Cs>,
    // Crossbar, per output channel: the request bits: bit `port * nvl + vl` is set exactly
    // when the head of input buffer (port, vl) of the switch is routed to this output.
    // `rw` words per output; when that is one word, it is `Cs::req` and this is empty.
    req: Vec<u64>,
    rw: usize,
    /// While [`Sim::grant`] calls `try_link`: the crossbar event it holds back (input
    /// channel or `NONE`, packet, end time).
    xbar_pending: (u32, u32, u64),
    max_ports: usize,
    /// Per (channel, VL), at `channel * nvl + vl`: its state, see [`Vs`].
    vs: Vec<Vs>,
    /// Per (channel, VL): the packets of its input and output buffers ([`IN`], [`OUT`]) behind
    /// their front ones (`Vs::q`).
    bufs: [FrontRings; 2],
    /// Per (channel, VL): credits on their way back upstream (only with a propagation or
    /// flow-control delay).
    cred_fly: Vec<u32>,
    in_cap: u32,
    out_cap: u32,
    inq_min_cr: usize,
    // Switches.
    sw_alive: Vec<bool>,
    held: Vec<(u32, u8)>,

    hosts: Vec<Host>,
    /// Per host: its LID (dense, for the destinations of new packets).
    host_lid: Vec<Lid>,
    pk: Vec<Packet>,
    free_pk: Vec<u32>,
    mean_bytes: u64,
    overrides: FxHashMap<(u32, u32), (Lid, u8)>,
    inject_stopped: bool,
    gen_stop: u64,

    // Faults and repair.
    fault: Option<FaultEvent>,
    plan: Vec<Smp>,
    ctrl: Vec<Ctrl>,
    computed: bool,
    waiting_drain: bool,
    log: FaultLog,

    // Counters.
    generated: u64,
    delivered: u64,
    dropped: [u64; DropReason::COUNT],
    in_sources: u64,
    live: u64,
    hops: u64,
    events: u64,
    progress: u64,
    last_progress: u64,
    bins: Vec<BinAcc>,
    lat: Histogram,
    net_lat: Histogram,
    win_del_bytes: u64,
    win_gen_bytes: u64,
    win_inj_bytes: u64,
    deadlock: Option<(u64, Vec<BufferRef>)>,
    invariant_checks: u64,
}

impl std::fmt::Debug for Sim<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("hosts", &self.hosts.len())
            .field("vls", &self.nvl)
            .finish_non_exhaustive()
    }
}

/// Highest VL any packet can use under `r` (SLs the path SLs use, through every SL2VL table).
/// VL 15, the drop lane, is not one: a packet a switch maps to it is dropped there
/// ([`DropReason::VlOutOfRange`]), as the checker drops it.
fn max_vl(f: &Fabric, r: &Routing, extra_sls: &[u8]) -> u8 {
    let mut sls = [false; 16];
    match &r.path_sl {
        PathSl::Uniform(s) => sls[*s as usize & 15] = true,
        PathSl::PerDest(v) => v.iter().for_each(|&s| sls[s as usize & 15] = true),
        PathSl::PerPair { sl, .. } => sl.iter().for_each(|&s| sls[s as usize & 15] = true),
    }
    for &s in extra_sls {
        sls[s as usize & 15] = true;
    }
    let used: Vec<u8> = (0..16u8).filter(|&s| sls[s as usize]).collect();
    let mut m = 0u8;
    for (i, node) in f.nodes.iter().enumerate() {
        let n = fabric::NodeId(i as u32);
        if r.sl2vl.is_identity(n) {
            for &s in &used {
                m = m.max(data_vl(r.sl2vl.vl(n, 0, 1, s)));
            }
            continue;
        }
        for inp in 0..=node.nports {
            for out in 0..=node.nports {
                for &s in &used {
                    m = m.max(data_vl(r.sl2vl.vl(n, inp, out, s)));
                }
            }
        }
    }
    m
}

/// `vl`, or 0 for the drop lane, which sizes nothing.
fn data_vl(vl: u8) -> u8 {
    if vl == routing::tables::DROP_VL {
        0
    } else {
        vl
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl<'f> Sim<'f> {
    /// A run of `routing` on `f` with `cfg`. Packets are routed through
    /// [`routing::forward::Forward::step`] over a [`Plane`] of `f`: the same forwarding view
    /// the checker reads.
    pub fn new(f: &'f Fabric, routing: Routing, cfg: Config) -> Result<Self, SimError> {
        routing
            .validate(f)
            .map_err(|e| SimError::Tables(e.to_string()))?;
        let m = &cfg.model;
        let tr = &cfg.traffic;
        if !(0.0..=1.0).contains(&tr.load) {
            return Err(SimError::Config(format!(
                "offered load {} is outside 0..=1",
                tr.load
            )));
        }
        let min_bytes = tr
            .trace
            .iter()
            .map(|x| x.3.max(1))
            .chain([tr.size.min()])
            .min()
            .unwrap_or(1);
        let max_bytes = tr
            .trace
            .iter()
            .map(|x| x.3)
            .chain([tr.size.max()])
            .max()
            .unwrap_or(1);
        if min_bytes == 0 {
            return Err(SimError::Config("packets must have at least 1 byte".into()));
        }
        let cr_max = (max_bytes as u32).div_ceil(64);
        if m.in_buf_bytes / 64 < cr_max || m.out_buf_bytes / 64 < cr_max {
            return Err(SimError::Config(format!(
                "buffers of {} / {} bytes cannot hold a {}-byte packet ({} credits of 64 bytes)",
                m.in_buf_bytes, m.out_buf_bytes, max_bytes, cr_max
            )));
        }
        for &(_, a, b, _) in &tr.trace {
            if a as usize >= f.end_ports.len() || b as usize >= f.end_ports.len() {
                return Err(SimError::Config(format!(
                    "trace packet {a} -> {b}: the fabric has {} end ports",
                    f.end_ports.len()
                )));
            }
        }
        if cr_max > 255 {
            return Err(SimError::Config(
                "packets above 16 KiB are not modelled".into(),
            ));
        }
        if m.xbar_speedup == 0 || cfg.t_bin == 0 || cfg.t_watchdog == 0 {
            return Err(SimError::Config(
                "speed-up, bin width and watchdog period must be positive".into(),
            ));
        }
        let plane = Plane::new(f, None);
        let rate = m.link_rate;
        let t_byte = |c: ChannelId| -> u32 {
            match rate {
                LinkRate::Uniform { ps_per_byte } => ps_per_byte,
                LinkRate::FromFabric => {
                    let l = f.link(c.link());
                    let gbps = l.width.lanes() as f64 * l.speed.gbps_per_lane();
                    (8000.0 / gbps).round().max(1.0) as u32
                }
            }
        };
        let net = Net::new(f, &plane, &t_byte);
        let cs: Vec<Cs> = net.chans.iter().map(Cs::new).collect();
        let host_lid: Vec<Lid> = net
            .host_ep
            .iter()
            .map(|&e| f.port(f.end_ports[e as usize]).lid)
            .collect();
        let nh = net.host_ep.len();
        if nh < 2 {
            return Err(SimError::TooFewHosts);
        }
        let nvl = max_vl(f, &routing, &[]) as usize + 1;
        let in_cap = m.in_buf_bytes / 64;
        let out_cap = m.out_buf_bytes / 64;
        let min_cr = (min_bytes as usize).div_ceil(64);
        let max_ports = f
            .switches
            .iter()
            .map(|&n| f.node(n).nports)
            .max()
            .unwrap_or(0);
        let mean_bytes = tr.size.mean().round().max(1.0) as u64;
        let dests = traffic::destinations(&tr.pattern, nh, cfg.seed, &|e| {
            net.ep_host.get(e as usize).copied().filter(|&h| h != NONE)
        });
        let hosts = (0..nh)
            .map(|h| Host {
                ep: net.host_ep[h],
                ch: net.host_ch[h],
                node: f.port(f.end_ports[net.host_ep[h] as usize]).node,
                num: f.port(f.end_ports[net.host_ep[h] as usize]).num,
                rng: Rng::new(
                    cfg.seed
                        .wrapping_mul(0xD1B5_4A32_D192_ED03)
                        .wrapping_add(h as u64 + 1),
                ),
                dest: dests[h].clone(),
                queue: VecDeque::new(),
                alive: true,
            })
            .collect::<Vec<_>>();
        // Bucket width: a power of two dividing the time quantum when it is coarse.
        let mut quantum = 0u64;
        for c in &net.chans {
            quantum = gcd(quantum, c.t_byte as u64);
        }
        for t in [m.t_route, m.t_prop, m.t_fc] {
            quantum = gcd(quantum, t);
        }
        let min_delay = net
            .chans
            .iter()
            .map(|c| c.t_byte as u64 * tr.size.min() as u64)
            .min()
            .unwrap_or(1)
            .min((m.hdr_bytes as u64 * quantum.max(1) + m.t_route).max(1));
        let q_shift = if quantum >= 64 {
            63 - quantum.leading_zeros()
        } else {
            (63 - (min_delay / 8).max(1).leading_zeros()).min(20)
        };
        // The wheel's horizon: four times the longest constant delay (a packet's
        // serialization on the slowest link, routing, propagation, credit return), so that
        // what is in flight stays in the wheel while the wheel itself stays small: it is
        // swept once per horizon, and a wider one only spreads the same events over more
        // cold memory (measured on the 18-ary 3-tree: 2^14 buckets of 2 ns, ~16 KiB each).
        let q_shift = q_shift.min(24);
        let slowest = net.chans.iter().map(|c| c.t_byte as u64).max().unwrap_or(1);
        let longest = slowest * max_bytes as u64 + m.t_route + m.t_prop + m.t_fc;
        let lb = ((4 * longest) >> q_shift)
            .max(1)
            .next_power_of_two()
            .trailing_zeros();
        let q = EventQueue::new(q_shift, lb.clamp(6, 14));
        let end = cfg.t_end;
        let gen_stop = tr.stop_at.unwrap_or(end).min(end);
        let mut sim = Sim {
            f,
            net,
            plane,
            routing,
            nvl,
            q,
            now: 0,
            end,
            cs,
            // the per-VL state: empty until `size_vls` below
            req: Vec::new(),
            rw: 0,
            xbar_pending: (NONE, NONE, 0),
            max_ports: max_ports as usize,
            vs: Vec::new(),
            bufs: [FrontRings::new(0, 1), FrontRings::new(0, 1)],
            cred_fly: Vec::new(),
            in_cap,
            out_cap,
            inq_min_cr: min_cr,
            sw_alive: vec![true; f.num_switches()],
            held: Vec::new(),
            host_lid,
            hosts,
            pk: Vec::new(),
            free_pk: Vec::new(),
            mean_bytes,
            overrides: FxHashMap::default(),
            inject_stopped: false,
            gen_stop,
            fault: None,
            plan: Vec::new(),
            ctrl: Vec::new(),
            computed: false,
            waiting_drain: false,
            log: FaultLog::default(),
            generated: 0,
            delivered: 0,
            dropped: [0; DropReason::COUNT],
            in_sources: 0,
            live: 0,
            hops: 0,
            events: 0,
            progress: 0,
            last_progress: 0,
            bins: Vec::new(),
            lat: Histogram::default(),
            net_lat: Histogram::default(),
            win_del_bytes: 0,
            win_gen_bytes: 0,
            win_inj_bytes: 0,
            deadlock: None,
            invariant_checks: 0,
            cfg,
        };
        sim.size_vls(nvl);
        Ok(sim)
    }

    /// Adds the run's failure (one per run) and the repair that follows it.
    pub fn with_fault(mut self, fault: FaultEvent) -> Result<Self, SimError> {
        if let Some(r) = &fault.repair {
            if r.tables.max_lid != self.routing.max_lid
                || r.tables.lft.len() != self.routing.lft.len()
            {
                return Err(SimError::Tables(
                    "the repair's tables cover another LID space than the base tables".into(),
                ));
            }
            r.tables
                .validate(self.f)
                .map_err(|e| SimError::Tables(e.to_string()))?;
            let sls: Vec<u8> = r.sources.values().map(|x| x.1).collect();
            let nvl = (max_vl(self.f, &r.tables, &sls) as usize + 1).max(self.nvl);
            if nvl > self.nvl {
                self.size_vls(nvl);
            }
        }
        self.fault = Some(fault);
        Ok(self)
    }

    /// The per-(channel, VL) state for `nvl` VLs, every buffer empty and every credit home
    /// (at the start of a run, or when a repair needs more VLs before it begins).
    fn size_vls(&mut self, nvl: usize) {
        let nch = self.net.chans.len();
        let min_cr = self.inq_min_cr;
        self.nvl = nvl;
        self.rw = ((self.max_ports + 1) * nvl).div_ceil(64);
        self.req = if self.rw == 1 {
            Vec::new()
        } else {
            vec![0; nch * self.rw]
        };
        self.cs.iter_mut().for_each(|c| c.req = 0);
        self.vs = vec![Vs::new(self.in_cap, self.out_cap); nch * nvl];
        self.bufs = [
            FrontRings::new(nch * nvl, self.in_cap as usize / min_cr),
            FrontRings::new(nch * nvl, self.out_cap as usize / min_cr),
        ];
        self.cred_fly = vec![0; nch * nvl];
    }

    /// Data VLs simulated.
    pub fn vls(&self) -> usize {
        self.nvl
    }

    fn bin(&mut self, t: u64) -> &mut BinAcc {
        let b = (t / self.cfg.t_bin) as usize;
        if b >= self.bins.len() {
            self.bins.resize(b + 1, BinAcc::default());
        }
        &mut self.bins[b]
    }

    /// Runs to the end (or to a deadlock) and reports.
    pub fn run(mut self) -> Report {
        self.start();
        while let Some((t, p)) = self.q.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.prefetch();
            let data = p & DATA_MASK;
            match p >> KIND_SHIFT {
                EV_ARRIVE => self.on_arrive(data as u32),
                EV_XBAR => self.on_xbar_done(data as u32),
                EV_LINK => self.on_link_free(data as u32),
                EV_XL => {
                    let c = data as u32;
                    let o = self.cs[c as usize].xin_out;
                    self.on_xbar_done(c);
                    self.events += 1;
                    self.on_link_free(o);
                }
                EV_CREDIT => self.on_credit(data),
                EV_GEN => self.on_gen(data as u32),
                EV_WATCH => {
                    if self.on_watchdog() {
                        break;
                    }
                }
                EV_CTRL => self.on_ctrl(data as usize),
                EV_TRACE => self.on_trace(data as usize),
                EV_END => break,
                _ => unreachable!("unknown event kind"),
            }
        }
        if self.deadlock.is_none() {
            self.now = self.end;
        }
        if self.cfg.check_invariants {
            self.check_invariants();
        }
        self.finish()
    }

    /// Prefetches what events a few places ahead in the queue will read, so that their
    /// cache misses overlap with the work of the events before them (the events of one
    /// instant are independent; the run is memory bound on large fabrics). An arrival is
    /// fetched in stages, each reading what the one before brought in: its packet
    /// [`PF`]`[0]` events ahead, the channel it came by at `PF[1]`, its LFT entry and input
    /// ring at `PF[2]`, the hop that entry leads to at `PF[3]`, that output's state at
    /// `PF[4]`; the other events' channel state in two stages. Only a hint: the results do
    /// not depend on it (checked bit for bit on fault, deadlock and multi-VL runs).
    #[inline]
    fn prefetch(&self) {
        use prefetch_index::prefetch_index as pf;
        let at = |k: usize| {
            self.q
                .ahead(k)
                .map(|e| (e >> KIND_SHIFT, (e & DATA_MASK) as usize))
        };
        match at(PF[0]) {
            Some((EV_ARRIVE, p)) => pf(&self.pk, p),
            Some((EV_XBAR | EV_XL | EV_LINK, c)) => pf(&self.cs, c),
            Some((EV_CREDIT, d)) => {
                let k = (d >> 24) * self.nvl + ((d >> 16) & 0xff);
                pf(&self.vs, k);
                pf(&self.cred_fly, k);
            }
            _ => {}
        }
        match at(PF[1]) {
            Some((EV_ARRIVE, p)) => {
                if let Some(pk) = self.pk.get(p) {
                    pf(&self.cs, pk.ch as usize);
                }
            }
            Some((kind @ (EV_XBAR | EV_XL), c)) => {
                if let Some(x) = self.cs.get(c) {
                    pf(&self.vs, c * self.nvl + x.xin_vl as usize);
                    let o = x.xin_out as usize;
                    pf(&self.cs, o);
                    if self.rw > 1 {
                        pf(&self.req, o * self.rw);
                    }
                    pf(&self.vs, o * self.nvl);
                    if kind == EV_XL && self.nvl > 1 {
                        pf(&self.vs, (o + 1) * self.nvl - 1);
                    }
                }
            }
            Some((EV_LINK, c)) => {
                pf(&self.vs, c * self.nvl);
            }
            _ => {}
        }
        // an arrival's packet (fetched at `PF[0]`) and the switch it enters
        let arrival = |k: usize| match at(k) {
            Some((EV_ARRIVE, p)) => {
                let pk = self.pk.get(p)?;
                let s = self.cs.get(pk.ch as usize)?.dst_sw;
                (s != NONE).then_some((pk, s as usize))
            }
            _ => None,
        };
        if let Some((pk, s)) = arrival(PF[2]) {
            pf(
                &self.routing.lft,
                s * self.routing.stride() + pk.dlid as usize,
            );
            pf(&self.vs, pk.ch as usize * self.nvl + pk.vl as usize);
        }
        let hop = |pk: &Packet, s: usize| {
            self.plane
                .hop_ref(s, self.routing.out_port_checked(s, pk.dlid))
        };
        if let Some(h) = arrival(PF[3]).and_then(|(pk, s)| hop(pk, s)) {
            pf(std::slice::from_ref(h), 0);
        }
        if let Some(o) = arrival(PF[4])
            .and_then(|(pk, s)| hop(pk, s))
            .and_then(|h| h.channel())
        {
            let o = o.idx();
            pf(&self.cs, o);
            if self.rw > 1 {
                pf(&self.req, o * self.rw);
            }
            pf(&self.vs, o * self.nvl);
        }
    }

    fn start(&mut self) {
        for h in 0..self.hosts.len() {
            if self.hosts[h].dest.is_some() {
                // A random phase within the first gap, so hosts do not start in lockstep.
                if let Some(g) = self.next_gap(h) {
                    let g = self.hosts[h].rng.below(g) / self.quantum_of(h) * self.quantum_of(h);
                    if g < self.gen_stop {
                        self.q.push(g, ev(EV_GEN, h as u64));
                    }
                }
            }
        }
        for (i, &(t, src, dst, _)) in self.cfg.traffic.trace.iter().enumerate() {
            let host = |e: u32| self.net.ep_host.get(e as usize).copied().unwrap_or(NONE);
            if t < self.end && host(src) != NONE && host(dst) != NONE {
                self.q.push(t, ev(EV_TRACE, i as u64));
            }
        }
        self.q.push(self.cfg.t_watchdog, ev(EV_WATCH, 0));
        self.q.push(self.end, ev(EV_END, 0));
        if let Some(fe) = &self.fault {
            let (at, fault) = (fe.at, fe.fault);
            let repair = fe.repair.as_ref().map(|r| (r.scheme, r.t_compute));
            self.log.at = at;
            self.ctrl.push(Ctrl::Fail(fault));
            self.q.push(at, ev(EV_CTRL, 0));
            if let Some((scheme, t_compute)) = repair {
                self.log.scheme = Some(scheme);
                self.log.t_compute = t_compute;
                let mask = reconf::mask_after(self.f, fault);
                let r = &self
                    .fault
                    .as_ref()
                    .expect("fault")
                    .repair
                    .as_ref()
                    .expect("repair");
                self.plan = reconf::plan(self.f, &mask, &self.routing, &r.tables);
                self.log.lft_blocks = self
                    .plan
                    .iter()
                    .filter(|s| matches!(s, Smp::Lft { .. }))
                    .count();
                self.log.sl2vl_rows = self.plan.len() - self.log.lft_blocks;
                let det = at + self.cfg.reconf.t_detect;
                self.ctrl.push(Ctrl::Detected);
                self.q.push(det, ev(EV_CTRL, 1));
                self.ctrl.push(Ctrl::Computed);
                self.q.push(det + t_compute, ev(EV_CTRL, 2));
            }
        }
    }

    fn quantum_of(&self, h: usize) -> u64 {
        self.cs[self.hosts[h].ch as usize].t_byte as u64
    }

    fn next_gap(&mut self, h: usize) -> Option<u64> {
        let tb = self.quantum_of(h);
        traffic::gap(
            &self.cfg.traffic,
            tb,
            self.mean_bytes,
            &mut self.hosts[h].rng,
        )
    }

    // ----- packets -----

    fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        if let Some(i) = self.free_pk.pop() {
            self.pk[i as usize] = p;
            i
        } else {
            self.pk.push(p);
            (self.pk.len() - 1) as u32
        }
    }

    fn free(&mut self, p: u32) {
        self.pk[p as usize].state = P_FREE;
        self.free_pk.push(p);
        self.live -= 1;
    }

    fn drop_pkt(&mut self, p: u32, why: DropReason) {
        self.dropped[why as usize] += 1;
        let now = self.now;
        self.bin(now).drop_pkts += 1;
        if self.fault.is_some() && now >= self.log.at {
            self.log.dropped_after += 1;
        }
        if self.pk[p as usize].state == P_SOURCE {
            self.in_sources -= 1;
            self.bin(now).drop_src_pkts += 1;
        }
        self.free(p);
        self.check_drained();
    }

    // ----- hosts -----

    fn on_gen(&mut self, h: u32) {
        let hi = h as usize;
        let now = self.now;
        if let Some(g) = self.next_gap(hi) {
            let t = now + g;
            if t < self.gen_stop {
                self.q.push(t, ev(EV_GEN, h as u64));
            }
        }
        if !self.hosts[hi].alive {
            return;
        }
        let n = self.hosts.len() as u32;
        let host = &mut self.hosts[hi];
        let Some(dest) = &host.dest else { return };
        let dst = traffic::pick(dest, h, n, &mut host.rng);
        let bytes = traffic::size(&self.cfg.traffic.size, &mut host.rng);
        self.make_packet(h, dst, bytes);
    }

    fn on_trace(&mut self, i: usize) {
        let (_, src, dst, bytes) = self.cfg.traffic.trace[i];
        let (h, d) = (
            self.net.ep_host[src as usize],
            self.net.ep_host[dst as usize],
        );
        if self.hosts[h as usize].alive && h != d {
            self.make_packet(h, d, bytes.max(1));
        }
    }

    fn make_packet(&mut self, h: u32, dst: u32, bytes: u16) {
        let hi = h as usize;
        let now = self.now;
        let src = &self.hosts[hi];
        let (src_ep, node, num) = (src.ep, src.node, src.num);
        let over = if self.overrides.is_empty() {
            None
        } else {
            self.overrides
                .get(&(src_ep, self.net.host_ep[dst as usize]))
                .copied()
        };
        let (dlid, sl) = over.unwrap_or_else(|| {
            let lid = self.host_lid[dst as usize];
            (lid, self.routing.path_sl.get(src_ep as usize, lid))
        });
        let vl = self.routing.sl2vl.vl(node, 0, num, sl);
        let vl = if (vl as usize) < self.nvl { vl } else { 0 };
        let p = self.alloc(Packet {
            gen: now,
            inj: 0,
            tail: now,
            dst,
            ch: self.hosts[hi].ch,
            dlid,
            bytes,
            sl,
            vl,
            cr: (bytes as u32).div_ceil(64) as u8,
            hops: 0,
            state: P_SOURCE,
        });
        self.generated += 1;
        self.in_sources += 1;
        if now >= self.cfg.t_warmup {
            self.win_gen_bytes += bytes as u64;
        }
        let b = self.bin(now);
        b.gen_bytes += bytes as u64;
        b.gen_pkts += 1;
        self.hosts[hi].queue.push_back(p);
        self.cs[self.hosts[hi].ch as usize].src_queued = true;
        if self.hosts[hi].queue.len() == 1 {
            self.try_inject(h);
        }
    }

    fn try_inject(&mut self, h: u32) {
        let host = &self.hosts[h as usize];
        let c = host.ch as usize;
        if self.cs[c].busy || self.inject_stopped || !self.cs[c].alive {
            return;
        }
        let Some(&p) = host.queue.front() else { return };
        let (vl, cr) = {
            let pk = &self.pk[p as usize];
            (pk.vl as usize, pk.cr as u32)
        };
        if self.vs[c * self.nvl + vl].credits < cr {
            return;
        }
        self.hosts[h as usize].queue.pop_front();
        self.cs[c].src_queued = !self.hosts[h as usize].queue.is_empty();
        self.in_sources -= 1;
        let now = self.now;
        let bytes = self.pk[p as usize].bytes as u64;
        self.pk[p as usize].inj = now;
        if now >= self.cfg.t_warmup {
            self.win_inj_bytes += bytes;
        }
        let b = self.bin(now);
        b.inj_bytes += bytes;
        b.inj_pkts += 1;
        self.start_tx(c as u32, p, vl as u8);
    }

    // ----- links -----

    /// Starts sending packet `p` on channel `c` on VL `vl`.
    #[inline]
    fn start_tx(&mut self, c: u32, p: u32, vl: u8) {
        let ci = c as usize;
        let ch = self.cs[ci];
        let m = &self.cfg.model;
        let pk = &mut self.pk[p as usize];
        let tb = ch.t_byte as u64;
        let ser = pk.bytes as u64 * tb;
        let s = self.now.max(pk.tail.saturating_sub(ser));
        let end = s + ser;
        self.cs[ci].busy = true;
        self.cs[ci].send_vl = vl;
        self.cs[ci].send_cr = pk.cr;
        self.cs[ci].busy_ps += ser;
        pk.ch = c;
        pk.vl = vl;
        pk.state = P_WIRE;
        pk.tail = end + m.t_prop;
        let arrive = if ch.dst_sw != NONE {
            self.vs[ci * self.nvl + vl as usize].credits -= pk.cr as u32;
            s + m.t_prop + m.hdr_bytes as u64 * tb + m.t_route
        } else {
            end + m.t_prop
        };
        let (xc, xp, xdone) = self.xbar_pending;
        if xc == NONE {
            self.q.push(end, ev(EV_LINK, c as u64));
        } else {
            // Called from `grant` for its output: the crossbar event it holds back goes in
            // first, as one event with this one when the two end together.
            self.xbar_pending.0 = NONE;
            if xp == p && xdone == end {
                self.q.push(end, ev(EV_XL, xc as u64));
            } else {
                self.q.push(xdone, ev(EV_XBAR, xc as u64));
                self.q.push(end, ev(EV_LINK, c as u64));
            }
        }
        self.q.push(arrive, ev(EV_ARRIVE, p as u64));
        self.progress += 1;
    }

    /// Starts a transmission on switch output `c` if the link is idle: VLs round robin, a VL
    /// eligible when its head has the credits downstream.
    fn try_link(&mut self, c: u32) {
        let ci = c as usize;
        let mask = self.cs[ci].oq_mask as u32;
        if mask == 0 || self.cs[ci].busy || !self.cs[ci].alive {
            return;
        }
        let nvl = self.nvl as u32;
        let to_switch = self.cs[ci].dst_sw != NONE;
        // Rotate so that bit 0 is the VL after the last one served.
        let first = if nvl == 1 {
            0
        } else {
            (self.cs[ci].vlarb as u32 + 1) % nvl
        };
        let rot = ((mask >> first) | (mask << (nvl - first))) & ((1u32 << nvl) - 1);
        let mut bits = rot;
        while bits != 0 {
            let v = bits.trailing_zeros() + first;
            let v = (if v >= nvl { v - nvl } else { v }) as usize;
            bits &= bits - 1;
            let k = ci * self.nvl + v;
            let p = self.q_front(OUT, k).expect("non-empty by the mask");
            if to_switch && self.vs[k].credits < self.pk[p as usize].cr as u32 {
                continue;
            }
            self.q_pop(OUT, k);
            if self.q_len(OUT, k) == 0 {
                self.cs[ci].oq_mask &= !(1 << v);
            }
            self.cs[ci].vlarb = v as u8;
            self.start_tx(c, p, v as u8);
            return;
        }
    }

    fn on_link_free(&mut self, c: u32) {
        let ci = c as usize;
        self.cs[ci].busy = false;
        let ch = self.cs[ci];
        if ch.src_sw != NONE {
            self.vs[ci * self.nvl + self.cs[ci].send_vl as usize].out_space +=
                self.cs[ci].send_cr as u32;
            if !self.cs[ci].alive {
                return;
            }
            self.try_link(c);
            self.arbitrate(c);
        } else if self.cs[ci].alive && self.cs[ci].src_queued {
            self.try_inject(ch.src_host);
        }
    }

    fn on_credit(&mut self, data: u64) {
        let c = (data >> 24) as u32;
        let vl = ((data >> 16) & 0xff) as usize;
        let cr = (data & 0xffff) as u32;
        let k = c as usize * self.nvl + vl;
        self.cred_fly[k] -= cr;
        self.credit_arrived(c, k, cr);
    }

    fn credit_arrived(&mut self, c: u32, k: usize, cr: u32) {
        if !self.cs[c as usize].alive {
            return;
        }
        self.vs[k].credits += cr;
        let src_host = self.cs[c as usize].src_host;
        if src_host != NONE {
            if self.cs[c as usize].src_queued {
                self.try_inject(src_host);
            }
        } else {
            self.try_link(c);
        }
    }

    /// The tail of a packet has left input buffer (`c`, `vl`) at `at`: its credits go back
    /// upstream.
    fn return_credits(&mut self, c: u32, vl: u8, cr: u8, at: u64) {
        let m = &self.cfg.model;
        let t = at + m.t_prop + m.t_fc;
        let k = c as usize * self.nvl + vl as usize;
        if t <= self.now {
            self.credit_arrived(c, k, cr as u32);
        } else {
            self.cred_fly[k] += cr as u32;
            self.q.push(
                t,
                ev(
                    EV_CREDIT,
                    ((c as u64) << 24) | ((vl as u64) << 16) | cr as u64,
                ),
            );
        }
    }

    // ----- switches -----

    fn on_arrive(&mut self, p: u32) {
        let pk = self.pk[p as usize];
        let c = pk.ch as usize;
        if !self.cs[c].alive {
            let why = if self.cs[c].dst_sw != NONE && !self.sw_alive[self.cs[c].dst_sw as usize]
                || self.cs[c].src_sw != NONE && !self.sw_alive[self.cs[c].src_sw as usize]
            {
                DropReason::SwitchDown
            } else {
                DropReason::LinkDown
            };
            self.drop_pkt(p, why);
            return;
        }
        let ch = self.cs[c];
        if ch.dst_sw == NONE {
            self.deliver(p, ch.dst_host);
            return;
        }
        let k = c * self.nvl + pk.vl as usize;
        {
            let pm = &mut self.pk[p as usize];
            pm.state = P_IN;
            pm.hops += 1;
        }
        self.hops += 1;
        self.q_push(IN, k, p);
        if self.q_len(IN, k) == 1 {
            if let Some(o) = self.route_head(c as u32, pk.vl) {
                self.arbitrate(o);
            }
        }
    }

    fn deliver(&mut self, p: u32, host: u32) {
        let pk = self.pk[p as usize];
        if host != pk.dst {
            self.drop_pkt(p, DropReason::Misdelivered);
            return;
        }
        let now = self.now;
        let lat = now - pk.gen;
        self.delivered += 1;
        self.progress += 1;
        let warm = self.cfg.t_warmup;
        if now >= warm {
            self.win_del_bytes += pk.bytes as u64;
            if pk.gen >= warm {
                self.lat.add(lat);
                self.net_lat.add(now - pk.inj);
            }
        }
        if self.fault.is_some() && pk.gen >= self.log.at && now < self.log.at + 200 * crate::US {
            self.log.lat_after.add(lat);
        }
        let b = self.bin(now);
        b.del_bytes += pk.bytes as u64;
        b.del_pkts += 1;
        b.lat_sum += lat as u128;
        self.free(p);
        self.check_drained();
    }

    /// Routes the head of input buffer (`c`, `vl`) through the forwarding view; drops heads
    /// that cannot go on (or holds them). Returns the output channel of a routed head.
    fn route_head(&mut self, c: u32, vl: u8) -> Option<u32> {
        let k = c as usize * self.nvl + vl as usize;
        let ch = self.cs[c as usize];
        let loop_limit = (2 * self.net.sw_base.len() + 4).min(255) as u8;
        loop {
            let p = self.q_front(IN, k)?;
            let pk = self.pk[p as usize];
            let fw = Forward::new(self.f, &self.plane, &self.routing);
            let (_, hop, ovl) = fw.step(ch.dst_sw, ch.dst_port, pk.dlid, pk.sl);
            let why = match hop {
                Hop::Switch { ch: o, .. } | Hop::End { ch: o, .. } => {
                    if (ovl as usize) >= self.nvl {
                        Some(DropReason::VlOutOfRange)
                    } else if pk.hops > loop_limit {
                        Some(DropReason::Loop)
                    } else {
                        self.vs[k].hd = Head {
                            out: o.0,
                            ovl,
                            cr: pk.cr,
                        };
                        let bit = ch.dst_port as usize * self.nvl + vl as usize;
                        *self.req_mut(o.idx(), bit / 64) |= 1u64 << (bit % 64);
                        return Some(o.0);
                    }
                }
                Hop::Fail(Failure::DeadChannel) if !self.cfg.model.drop_on_dead_port => {
                    // Kept: it waits for a table update.
                    self.vs[k].hd.out = NONE;
                    self.held.push((c, vl));
                    return None;
                }
                Hop::Fail(_) if self.cfg.model.unroutable == Unroutable::Hold => {
                    self.vs[k].hd.out = NONE;
                    self.held.push((c, vl));
                    return None;
                }
                Hop::Fail(Failure::DeadChannel) => Some(DropReason::DeadPort),
                Hop::Fail(_) => Some(DropReason::Unroutable),
            };
            self.q_pop(IN, k);
            let at = self.now.max(pk.tail);
            self.return_credits(c, vl, pk.cr, at);
            self.drop_pkt(p, why.expect("a reason"));
        }
    }

    /// Crossbar arbitration for output `o`: round robin over the (input port, VL) heads
    /// routed to `o` (an input sends one packet at a time); a head needs room for the whole
    /// packet in the output buffer of its VL (virtual cut-through).
    #[inline]
    fn arbitrate(&mut self, o: u32) {
        let oi = o as usize;
        if self.cs[oi].xout_busy || !self.cs[oi].alive {
            return;
        }
        // Most calls find no request: answer those without the scan's set-up.
        if self.rw == 1 && self.cs[oi].req == 0 {
            return;
        }
        self.arbitrate_scan(o);
    }

    /// [`Sim::arbitrate`] past its quick checks: scans the request bits round robin.
    #[inline(never)]
    fn arbitrate_scan(&mut self, o: u32) {
        let oi = o as usize;
        let s = self.cs[oi].src_sw;
        let nvl = self.nvl;
        let nbits = self.net.ports(s) as usize * nvl;
        let words = nbits.div_ceil(64);
        let mut start = self.cs[oi].xout_rr as usize + 1;
        if start >= nbits {
            start = 0;
        }
        // Words from the one holding `start`, wrapping; the first word masked below `start`
        // and visited again at the end for the bits below it.
        let (w0, b0) = (start / 64, start % 64);
        let mut wi = w0;
        for step in 0..=words {
            let mut bits = self.req_word(oi, wi);
            if step == 0 {
                bits &= !0u64 << b0;
            } else if step == words {
                bits &= !(!0u64 << b0);
            }
            while bits != 0 {
                let b = wi * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (port, v) = if nvl == 1 { (b, 0) } else { (b / nvl, b % nvl) };
                let c = self.net.in_channel(s, port as u8);
                let ci = c as usize;
                if self.cs[ci].xin_pkt != NONE {
                    continue;
                }
                let h = self.vs[ci * nvl + v].hd;
                debug_assert_eq!(h.out, o, "a request has a routed head");
                if self.vs[oi * nvl + h.ovl as usize].out_space >= h.cr as u32 {
                    self.cs[oi].xout_rr = b as u32;
                    self.grant(c, v as u8, o, h);
                    return;
                }
            }
            wi += 1;
            if wi == words {
                wi = 0;
            }
        }
    }

    /// Length of buffer `b` ([`IN`] or [`OUT`]) of (channel, VL) `k`.
    #[inline]
    fn q_len(&self, b: usize, k: usize) -> usize {
        self.vs[k].q[b].len()
    }
    #[inline]
    fn q_front(&self, b: usize, k: usize) -> Option<u32> {
        self.bufs[b].front(self.vs[k].q[b])
    }
    #[inline]
    fn q_push(&mut self, b: usize, k: usize, p: u32) {
        self.bufs[b].push(k, &mut self.vs[k].q[b], p)
    }
    #[inline]
    fn q_pop(&mut self, b: usize, k: usize) -> Option<u32> {
        self.bufs[b].pop(k, &mut self.vs[k].q[b])
    }
    fn q_drain(&mut self, b: usize, k: usize) -> Vec<u32> {
        self.bufs[b].drain(k, &mut self.vs[k].q[b])
    }
    fn q_iter(&self, b: usize, k: usize) -> impl Iterator<Item = u32> + '_ {
        self.bufs[b].iter(k, self.vs[k].q[b])
    }

    /// Word `wi` of output `o`'s request bits.
    #[inline]
    fn req_word(&self, o: usize, wi: usize) -> u64 {
        if self.rw == 1 {
            self.cs[o].req
        } else {
            self.req[o * self.rw + wi]
        }
    }

    #[inline]
    fn req_mut(&mut self, o: usize, wi: usize) -> &mut u64 {
        if self.rw == 1 {
            &mut self.cs[o].req
        } else {
            &mut self.req[o * self.rw + wi]
        }
    }

    /// Clears the request of input buffer (`c`, `vl`) at output `o`.
    #[inline]
    fn clear_req(&mut self, c: u32, vl: u8, o: u32) {
        let port = self.cs[c as usize].dst_port as usize;
        let bit = port * self.nvl + vl as usize;
        *self.req_mut(o as usize, bit / 64) &= !(1u64 << (bit % 64));
    }

    /// Moves head `h` of input buffer (`c`, `vl`) across the crossbar to output `o`.
    fn grant(&mut self, c: u32, vl: u8, o: u32, h: Head) {
        let (ci, oi) = (c as usize, o as usize);
        let nvl = self.nvl;
        let p = self
            .q_pop(IN, ci * nvl + vl as usize)
            .expect("a routed head is in its buffer");
        self.vs[ci * nvl + vl as usize].hd.out = NONE;
        self.clear_req(c, vl, o);
        let pk = &mut self.pk[p as usize];
        let ko = oi * nvl + h.ovl as usize;
        self.cs[oi].oq_mask |= 1 << h.ovl;
        self.vs[ko].out_space -= pk.cr as u32;
        let tx = pk.bytes as u64 * self.cs[oi].t_byte as u64;
        let tx = match self.cfg.model.xbar_speedup {
            1 => tx,
            k => tx / k as u64,
        };
        let done = (self.now + tx).max(pk.tail);
        pk.tail = done;
        pk.state = P_OUT;
        self.cs[ci].xin_pkt = p;
        self.cs[ci].xin_out = o;
        self.cs[ci].xin_vl = vl;
        self.cs[ci].xin_cr = pk.cr;
        self.cs[oi].xout_busy = true;
        self.q_push(OUT, ko, p);
        // The crossbar event is pushed where it always was, before what `try_link` pushes;
        // when `try_link` starts this packet on the link and the two end at the same time,
        // they are adjacent in the queue and go in as one event ([`EV_XL`]).
        self.xbar_pending = (c, p, done);
        self.try_link(o);
        if self.xbar_pending.0 != NONE {
            self.xbar_pending.0 = NONE;
            self.q.push(done, ev(EV_XBAR, c as u64));
        }
        // The next packet of this input buffer is routed now (its request waits for the
        // input to be free).
        self.route_head(c, vl);
    }

    fn on_xbar_done(&mut self, c: u32) {
        let ci = c as usize;
        let o = self.cs[ci].xin_out;
        let (vl, cr) = (self.cs[ci].xin_vl, self.cs[ci].xin_cr);
        self.cs[ci].xin_pkt = NONE;
        self.cs[o as usize].xout_busy = false;
        let s = self.cs[ci].dst_sw;
        if !self.sw_alive[s as usize] {
            return;
        }
        self.return_credits(c, vl, cr, self.now);
        self.arbitrate(o);
        // The input is free: every output its heads wait for may take it.
        let nvl = self.nvl;
        for v in 0..nvl {
            if self.cs[ci].xin_pkt != NONE {
                break;
            }
            let k = ci * nvl + v;
            if self.q_len(IN, k) > 0 {
                let out = self.vs[k].hd.out;
                if out != NONE && out != o {
                    self.arbitrate(out);
                }
            }
        }
    }

    // ----- faults and reconfiguration -----

    fn on_ctrl(&mut self, i: usize) {
        match self.ctrl[i] {
            Ctrl::Fail(fault) => self.fail(fault),
            Ctrl::Detected => {
                if self.log.scheme == Some(Scheme::FullStatic) {
                    self.inject_stopped = true;
                    self.log.stopped_at = Some(self.now);
                    self.waiting_drain = true;
                    self.check_drained();
                }
            }
            Ctrl::Computed => {
                self.computed = true;
                if self.log.scheme == Some(Scheme::FullStatic) {
                    self.check_drained();
                } else {
                    self.begin_upload();
                }
            }
            Ctrl::Smp(j) => {
                let smp = self.plan[j];
                let new = &self
                    .fault
                    .as_ref()
                    .expect("fault")
                    .repair
                    .as_ref()
                    .expect("repair")
                    .tables;
                reconf::apply(self.f, &mut self.routing, new, smp);
                self.log.first_smp.get_or_insert(self.now);
                self.log.last_smp = Some(self.now);
                self.retry_held();
            }
            Ctrl::Sources => {
                let r = self
                    .fault
                    .as_ref()
                    .expect("fault")
                    .repair
                    .as_ref()
                    .expect("repair");
                self.routing.path_sl = r.tables.path_sl.clone();
                self.routing.sl2vl = r.tables.sl2vl.clone();
                self.overrides = r.sources.iter().map(|(&k, &v)| (k, v)).collect();
                self.log.sources_at = Some(self.now);
                self.retry_held();
                if self.inject_stopped {
                    self.inject_stopped = false;
                    for h in 0..self.hosts.len() as u32 {
                        self.try_inject(h);
                    }
                }
            }
        }
    }

    fn check_drained(&mut self) {
        if self.waiting_drain && self.computed && self.live == self.in_sources {
            self.waiting_drain = false;
            self.log.drained_at = Some(self.now);
            self.begin_upload();
        }
    }

    /// Schedules every SMP of the plan from now: `smp_parallel` outstanding, each applied at
    /// the switch half a round trip after it is sent; sources switch when the last returns.
    fn begin_upload(&mut self) {
        let t = self.cfg.reconf;
        let par = t.smp_parallel.max(1) as usize;
        let base = self.ctrl.len();
        for j in 0..self.plan.len() {
            self.ctrl.push(Ctrl::Smp(j));
            let sent = self.now + (j / par) as u64 * t.t_smp;
            self.q
                .push(sent + t.t_smp / 2, ev(EV_CTRL, (base + j) as u64));
        }
        let rounds = self.plan.len().div_ceil(par) as u64;
        self.ctrl.push(Ctrl::Sources);
        self.q.push(
            self.now + rounds * t.t_smp,
            ev(EV_CTRL, (base + self.plan.len()) as u64),
        );
    }

    fn retry_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        for (c, vl) in held {
            let k = c as usize * self.nvl + vl as usize;
            if self.q_len(IN, k) > 0 && self.vs[k].hd.out == NONE {
                if let Some(o) = self.route_head(c, vl) {
                    self.arbitrate(o);
                }
            }
        }
    }

    fn fail(&mut self, fault: Fault) {
        let f = self.f;
        let mut chans = Vec::new();
        match fault {
            Fault::Link(l) => {
                chans.push(l.forward().0);
                chans.push(l.forward().reverse().0);
                self.plane.fail_channel(f, l.forward());
                self.plane.fail_channel(f, l.forward().reverse());
            }
            Fault::Switch(n) => {
                self.plane.fail_node(f, n);
                for p in f.node_ports(n) {
                    if let Some(c) = f.out_channel(p) {
                        chans.push(c.0);
                        chans.push(c.reverse().0);
                    }
                }
                let s = f.switch_index[n.idx()];
                if s != NONE {
                    self.sw_alive[s as usize] = false;
                }
            }
        }
        for &c in &chans {
            self.cs[c as usize].alive = false;
        }
        let nvl = self.nvl;
        // Hosts whose link died: their queues are lost, they stop sending.
        for h in 0..self.hosts.len() {
            if !self.cs[self.hosts[h].ch as usize].alive && self.hosts[h].alive {
                self.hosts[h].alive = false;
                let q = std::mem::take(&mut self.hosts[h].queue);
                self.cs[self.hosts[h].ch as usize].src_queued = false;
                for p in q {
                    self.drop_pkt(p, DropReason::SourceDown);
                }
            }
        }
        // A dead switch loses everything in its buffers.
        if let Fault::Switch(n) = fault {
            for p in f.node_ports(n) {
                let Some(oc) = f.out_channel(p) else { continue };
                let ic = oc.reverse().0 as usize;
                for v in 0..nvl {
                    let k = ic * nvl + v;
                    if self.q_len(IN, k) > 0 && self.vs[k].hd.out != NONE {
                        self.clear_req(ic as u32, v as u8, self.vs[k].hd.out);
                    }
                    self.cs[oc.idx()].oq_mask = 0;
                    for q in [
                        self.q_drain(IN, ic * nvl + v),
                        self.q_drain(OUT, oc.idx() * nvl + v),
                    ] {
                        for pkt in q {
                            self.drop_pkt(pkt, DropReason::SwitchDown);
                        }
                    }
                }
            }
        }
        // Outputs that died: their queues are dropped (or kept), heads routed to them too.
        for &c in &chans {
            let ci = c as usize;
            let src = self.cs[ci].src_sw;
            if src == NONE || !self.sw_alive[src as usize] || !self.cfg.model.drop_on_dead_port {
                continue;
            }
            self.cs[ci].oq_mask = 0;
            for v in 0..nvl {
                let k = ci * nvl + v;
                for pkt in self.q_drain(OUT, k) {
                    self.vs[k].out_space += self.pk[pkt as usize].cr as u32;
                    self.drop_pkt(pkt, DropReason::DeadPort);
                }
            }
            // Heads of the switch's inputs routed here.
            let nports = self.net.ports(src);
            for port in 1..nports {
                let ic = self.net.in_channel(src, port as u8);
                if ic == NONE || !self.cs[ic as usize].alive {
                    continue;
                }
                for v in 0..nvl {
                    let k = ic as usize * nvl + v;
                    if let Some(p) = self.q_front(IN, k) {
                        if self.vs[k].hd.out == c {
                            let pk = self.pk[p as usize];
                            self.q_pop(IN, k);
                            self.clear_req(ic, v as u8, c);
                            let at = self.now.max(pk.tail);
                            self.return_credits(ic, v as u8, pk.cr, at);
                            self.drop_pkt(p, DropReason::DeadPort);
                            if let Some(o) = self.route_head(ic, v as u8) {
                                self.arbitrate(o);
                            }
                        }
                    }
                }
            }
        }
    }

    // ----- deadlock detection -----

    /// Runs the exact check; returns true when the run must stop.
    fn on_watchdog(&mut self) -> bool {
        if self.cfg.check_invariants {
            self.check_invariants();
        }
        let in_network = self.live - self.in_sources;
        let stuck = self.progress == self.last_progress;
        self.last_progress = self.progress;
        if in_network > 0 {
            if let Some(cycle) = self.find_deadlock() {
                self.deadlock = Some((self.now, cycle));
                return true;
            }
            if stuck && self.waiting_drain && self.computed {
                // Nothing moves and nothing can drain: upload anyway.
                self.waiting_drain = false;
                self.log.drain_forced = true;
                self.log.drained_at = Some(self.now);
                self.begin_upload();
            }
        }
        let next = self.now + self.cfg.t_watchdog;
        if next < self.end {
            self.q.push(next, ev(EV_WATCH, 0));
        }
        false
    }

    /// What a non-empty buffer's head waits for, when nothing pending can give it (see the
    /// crate documentation): node `2k` is input buffer `k` = (channel, VL), `2k + 1` output
    /// buffer `k`.
    fn waits_for(&self, node: usize) -> Option<usize> {
        let nvl = self.nvl;
        let k = node / 2;
        let (c, v) = (k / nvl, k % nvl);
        if node & 1 == 0 {
            if self.q_len(IN, k) == 0 || self.vs[k].hd.out == NONE {
                return None;
            }
            let h = self.vs[k].hd;
            let o = h.out as usize;
            let ko = o * nvl + h.ovl as usize;
            if !self.cs[o].alive || self.vs[ko].out_space >= h.cr as u32 {
                return None;
            }
            if self.cs[o].busy && self.cs[o].send_vl == h.ovl {
                return None;
            }
            Some(2 * ko + 1)
        } else {
            let p = self.q_front(OUT, k)?;
            let ch = self.cs[c];
            if ch.dst_sw == NONE || !self.cs[c].alive {
                return None;
            }
            let mut coming = self.vs[k].credits + self.cred_fly[k];
            if self.cs[c].xin_pkt != NONE && self.cs[c].xin_vl as usize == v {
                coming += self.cs[c].xin_cr as u32;
            }
            if coming >= self.pk[p as usize].cr as u32 || self.q_len(IN, k) == 0 {
                return None;
            }
            Some(2 * k)
        }
    }

    fn find_deadlock(&self) -> Option<Vec<BufferRef>> {
        let n = self.net.chans.len() * self.nvl * 2;
        let mut state = vec![0u8; n];
        let mut path = Vec::new();
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            path.clear();
            let mut at = Some(start);
            while let Some(x) = at {
                match state[x] {
                    0 => {
                        state[x] = 1;
                        path.push(x);
                        at = self.waits_for(x);
                    }
                    1 => {
                        let i = path.iter().position(|&y| y == x).expect("on the path");
                        return Some(self.describe_cycle(&path[i..]));
                    }
                    _ => break,
                }
            }
            for &y in &path {
                state[y] = 2;
            }
        }
        None
    }

    /// The output buffers of a wait-for cycle as (switch, port, VL): each is the channel that
    /// leaves the switch on that port on that VL, i.e. a vertex of the channel dependency
    /// graph.
    fn describe_cycle(&self, nodes: &[usize]) -> Vec<BufferRef> {
        nodes
            .iter()
            .filter(|&&x| x % 2 == 1)
            .map(|&x| {
                let k = x / 2;
                let c = k / self.nvl;
                let ch = self.cs[c];
                let node = self.f.node(self.f.switches[ch.src_sw as usize]);
                BufferRef {
                    switch: node.name.clone(),
                    guid: format!("{:#018x}", node.guid),
                    port: ch.src_port,
                    vl: (k % self.nvl) as u8,
                    channel: c as u32,
                }
            })
            .collect()
    }

    // ----- invariants -----

    /// Credits + in flight + buffered = capacity on every live (channel, VL) into a switch;
    /// free space + queued + being sent = capacity on every switch output; every generated
    /// packet is delivered, dropped, or somewhere. Recomputed from the packets themselves.
    /// Panics on a violation.
    pub fn check_invariants(&mut self) {
        self.invariant_checks += 1;
        self.check_requests();
        let nvl = self.nvl;
        let nch = self.net.chans.len();
        let mut wire = vec![0u32; nch * nvl];
        let (mut in_src, mut in_net) = (0u64, 0u64);
        for pk in &self.pk {
            match pk.state {
                P_FREE => {}
                P_SOURCE => in_src += 1,
                P_WIRE => {
                    wire[pk.ch as usize * nvl + pk.vl as usize] += pk.cr as u32;
                    in_net += 1;
                }
                _ => in_net += 1,
            }
        }
        let dropped: u64 = self.dropped.iter().sum();
        assert_eq!(
            self.generated,
            self.delivered + dropped + in_src + in_net,
            "generated = delivered + dropped + in network + in source queues"
        );
        assert_eq!(in_src, self.in_sources);
        assert_eq!(
            in_src,
            self.hosts.iter().map(|h| h.queue.len() as u64).sum::<u64>()
        );
        for (i, h) in self.hosts.iter().enumerate() {
            assert_eq!(
                self.cs[h.ch as usize].src_queued,
                !h.queue.is_empty(),
                "host {i}: the queued flag of its channel"
            );
        }
        for c in 0..nch {
            let ch = self.cs[c];
            if !self.cs[c].alive {
                continue;
            }
            for v in 0..nvl {
                let k = c * nvl + v;
                if ch.dst_sw != NONE {
                    let mut buffered: u32 = self
                        .q_iter(IN, k)
                        .map(|p| self.pk[p as usize].cr as u32)
                        .sum();
                    if self.cs[c].xin_pkt != NONE && self.cs[c].xin_vl as usize == v {
                        buffered += self.cs[c].xin_cr as u32;
                    }
                    assert_eq!(
                        self.vs[k].credits + wire[k] + buffered + self.cred_fly[k],
                        self.in_cap,
                        "credits + in flight + buffered = capacity on channel {c} VL {v}"
                    );
                }
                if ch.src_sw != NONE {
                    assert_eq!(
                        self.cs[c].oq_mask >> v & 1 == 1,
                        self.q_len(OUT, k) > 0,
                        "non-empty VL mask of channel {c}"
                    );
                    let queued: u32 = self
                        .q_iter(OUT, k)
                        .map(|p| self.pk[p as usize].cr as u32)
                        .sum();
                    let sending = if self.cs[c].busy && self.cs[c].send_vl as usize == v {
                        self.cs[c].send_cr as u32
                    } else {
                        0
                    };
                    assert_eq!(
                        self.vs[k].out_space + queued + sending,
                        self.out_cap,
                        "output space on channel {c} VL {v}"
                    );
                }
            }
        }
    }

    /// The request bits are exactly the routed heads (checked with the invariants).
    fn check_requests(&self) {
        let nvl = self.nvl;
        for (o, ch) in self.net.chans.iter().enumerate() {
            if ch.src_sw == NONE || !self.cs[o].alive || !self.sw_alive[ch.src_sw as usize] {
                continue;
            }
            for port in 1..self.net.ports(ch.src_sw) as usize {
                let c = self.net.in_channel(ch.src_sw, port as u8);
                for v in 0..nvl {
                    let bit = port * nvl + v;
                    let set = self.req_word(o, bit / 64) >> (bit % 64) & 1 == 1;
                    let head = (c != NONE)
                        .then(|| self.q_front(IN, c as usize * nvl + v))
                        .flatten();
                    let h = (c != NONE).then(|| self.vs[c as usize * nvl + v].hd);
                    let routed = head.is_some() && h.is_some_and(|h| h.out == o as u32);
                    if let (Some(p), Some(h)) = (head, h) {
                        assert!(
                            h.out == NONE
                                || h.cr == self.pk[p as usize].cr && (h.ovl as usize) < nvl,
                            "the head record of port {port} VL {v} at switch {}: {h:?}",
                            ch.src_sw
                        );
                    }
                    assert_eq!(
                        set, routed,
                        "request bit of port {port} VL {v} at channel {o}"
                    );
                }
            }
        }
    }

    /// How many times [`Sim::check_invariants`] ran (tests check that it did).
    pub fn invariant_checks(&self) -> u64 {
        self.invariant_checks
    }

    // ----- report -----

    fn finish(self) -> Report {
        let dropped_total: u64 = self.dropped.iter().sum();
        let senders: Vec<usize> = (0..self.hosts.len())
            .filter(|&h| self.hosts[h].dest.is_some())
            .collect();
        // Bytes per ps a sending host's link carries, summed over senders.
        let rate: f64 = senders
            .iter()
            .map(|&h| 1.0 / self.quantum_of(h) as f64)
            .sum();
        let sw_busy: Vec<u64> = (0..self.net.chans.len())
            .filter(|&c| self.cs[c].src_sw != NONE && self.cs[c].dst_sw != NONE)
            .map(|c| self.cs[c].busy_ps)
            .collect();
        let facts = RunFacts {
            cfg: &self.cfg,
            end: self.now,
            hosts: self.hosts.len(),
            senders: senders.len(),
            vls: self.nvl,
            rate,
            generated: self.generated,
            delivered: self.delivered,
            dropped: self.dropped,
            dropped_total,
            in_network: self.live - self.in_sources,
            in_sources: self.in_sources,
            hops: self.hops,
            events: self.events,
            win_gen: self.win_gen_bytes,
            win_inj: self.win_inj_bytes,
            win_del: self.win_del_bytes,
            bins: &self.bins,
            lat: &self.lat,
            net_lat: &self.net_lat,
            deadlock: self.deadlock.clone(),
            fault: self.fault.as_ref().map(|_| &self.log),
            sw_busy: &sw_busy,
            invariant_checks: self.invariant_checks,
        };
        report::build(facts)
    }
}

/// Runs `routing` on `f` with `cfg` and an optional fault.
pub fn simulate(
    f: &Fabric,
    routing: Routing,
    cfg: Config,
    fault: Option<FaultEvent>,
) -> Result<Report, SimError> {
    let mut s = Sim::new(f, routing, cfg)?;
    if let Some(fe) = fault {
        s = s.with_fault(fe)?;
    }
    Ok(s.run())
}
