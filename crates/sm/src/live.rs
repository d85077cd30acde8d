//! Bring-up and the repair loop over a discovered fabric.

use crate::discover::Discovery;
use crate::pipe::{Pipe, Req, ReqError};
use crate::sa::{Sa, SaStats, View};
use crate::{Session, SmError};
use fabric::{Fabric, FaultMask, LinkId, NodeId, NodeKind, PortId};
use mad::attr::{self, port_state, Notice, PortInfo, SwitchInfo, LFT_BLOCK};
use mad::{attr_id, Method, Route, Smp, Transport};
use routing::cdg;
use routing::engines::{Engine, RouteOptions};
use routing::fault::verify::{check_state, Snapshot};
use routing::fault::{Fault, RftrConfig};
use routing::forward::{Control, Forward, Hop, Plane, WalkEnd};
use routing::tables::PathSl;
use routing::tables::NUM_SLS;
use routing::Routing;
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;

/// How a failure is repaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Repair {
    /// RFTR: new paths for the affected pairs only, from the engine's base tables.
    Rftr,
    /// The engine run again on the fabric without the failed links (the baseline).
    Full,
}

/// The SM's settings.
#[derive(Clone, Debug)]
pub struct SmConfig {
    pub repair: Repair,
    /// RFTR's settings (VLs in all, SLs, tie-break).
    pub rftr: RftrConfig,
    /// The engine's options (its VL budget already leaving RFTR's VLs free).
    pub opts: RouteOptions,
    /// Light sweep period: SwitchInfo.PortStateChange of every switch (`None`: traps only).
    pub sweep_interval: Option<Duration>,
}

/// What the SM reports, one JSON object per line in `fabroute sm --events`.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The fabric is discovered, routed and programmed.
    SubnetUp {
        switches: usize,
        cas: usize,
        links: usize,
        engine: &'static str,
        /// Transport time from the first SMP to the last confirmation, and its parts.
        seconds: f64,
        discovery_seconds: f64,
        compute_seconds: f64,
        smps: u64,
        discovery_smps: u64,
        lft_blocks: u64,
        sl2vl_entries: u64,
        /// SMPs that got no good answer after retries (0 on a healthy fabric).
        failed_smps: u64,
        deadlock_free: bool,
        unreachable_pairs: u64,
    },
    /// A trap arrived.
    Trap {
        trap: u16,
        lid: u16,
        node: String,
        /// Ports of that switch found down whose links the SM had as up.
        ports_down: Vec<u8>,
    },
    /// A light sweep found switches whose PortStateChange was set.
    Sweep {
        switches_read: usize,
        changed: Vec<String>,
        /// Links found down that the SM had as up.
        links_down: usize,
    },
    /// Failed links found physically up again. They are not taken in: the SM keeps them
    /// failed (RFTR only removes links), until it is restarted.
    LinkUp { links: Vec<String> },
    /// Failed links repaired and the changed tables confirmed by every switch.
    Repaired {
        repair: Repair,
        faults: Vec<String>,
        /// Trap received (or sweep started) → last changed block confirmed.
        seconds: f64,
        compute_seconds: f64,
        lft_blocks: u64,
        sl2vl_entries: u64,
        smps: u64,
        failed_smps: u64,
        /// The completion for checkers that followed (RFTR): entries and SLs of the
        /// (source, LID) pairs no source uses, pushed after the repair was confirmed.
        completion_seconds: f64,
        completion_lft_blocks: u64,
        completion_sl2vl_entries: u64,
        /// Distinct LFT blocks that differ between the tables before and after (both phases).
        blocks_changed: u64,
        /// LFT blocks and SL2VL rows that should change but are not in the switches: no live
        /// route to them (a switch cut off from the SM) or no good answer.
        unsent: u64,
        /// (source, LID) pairs no source uses that the completion could not give a route
        /// that is safe (`Completion::uncovered`); `unreachable_pairs` counts them.
        uncovered_phantoms: u64,
        affected_pairs: u64,
        repaired_pairs: u64,
        unsupported_pairs: u64,
        /// Sources told a new (DLID, SL) since the fabric came up.
        source_updates: usize,
        /// The tables now in the switches, walked and checked (every pair, CDG over
        /// (channel, VL)); with RFTR also the union with the tables before the repair.
        deadlock_free: bool,
        unreachable_pairs: u64,
    },
}

enum Rep<'f> {
    Rftr(Box<Session<'f>>),
    Full(Box<FullState<'f>>),
}

struct FullState<'f> {
    engine: &'f dyn Engine,
    opts: RouteOptions,
    routing: Routing,
}

/// The SM over one discovered fabric.
pub struct Live<'f, T: Transport> {
    f: &'f Fabric,
    pub pipe: Pipe<T>,
    cfg: SmConfig,
    sm_port: PortId,
    sm_lid: u16,
    port_info: Vec<PortInfo>,
    switch_info: Vec<SwitchInfo>,
    mask: FaultMask,
    /// The forwarding view under `mask` (the trap's way back is walked through it).
    plane: Plane,
    /// Directed routes to every node over live links, kept with `mask`.
    routes: Vec<Option<Vec<u8>>>,
    rep: Rep<'f>,
    /// What the switches hold now (complete tables, LMC LIDs included).
    current: Routing,
    next_sweep: Option<Duration>,
    /// Traps waiting behind the one being handled (issuer switch, arrival time).
    pending: VecDeque<(NodeId, Duration)>,
    /// Over RFTR: what is in use now, taken after the last repair for the next one's check.
    snapshot: Option<Snapshot>,
    /// Failed links found physically up again (not taken in), and those not yet reported.
    revived: Vec<LinkId>,
    revived_unreported: Vec<LinkId>,
    /// The subnet administrator on the SM's port.
    sa: Sa,
}

impl<T: Transport> std::fmt::Debug for Live<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("sm_lid", &self.sm_lid)
            .field("dead_links", &self.mask.dead_links().count())
            .finish_non_exhaustive()
    }
}

/// Counts of one push.
#[derive(Clone, Copy, Debug, Default)]
struct Pushed {
    lft_blocks: u64,
    sl2vl_entries: u64,
    failed: u64,
    /// Blocks and rows that differ but are not in the switches: no live route to them
    /// (a switch cut off from the SM) or no good answer.
    unsent: u64,
}

/// What one request of a push writes.
#[derive(Clone, Copy, Debug)]
enum Target {
    Lft(usize, usize),
    Sl2Vl(NodeId, u8, u8),
}

impl<'f, T: Transport> Live<'f, T> {
    /// Routes the discovered fabric with `engine` and programs it; returns the SM and its
    /// `SubnetUp` event.
    pub fn bring_up(
        d: &'f Discovery,
        pipe: Pipe<T>,
        engine: &'f dyn Engine,
        cfg: SmConfig,
    ) -> Result<(Self, Event), SmError> {
        let f = &d.fabric;
        let t0 = pipe.now();
        let sent0 = pipe.stats.sent;
        let mask = FaultMask::none(f);
        let rep = match cfg.repair {
            Repair::Rftr => {
                let s = Session::start(f, engine, &cfg.opts, cfg.rftr)
                    .map_err(|e| SmError::Routing(e.reason()))?;
                Rep::Rftr(Box::new(s))
            }
            Repair::Full => {
                let (opts, routing) = Session::route_base(f, engine, &cfg.opts)
                    .map_err(|e| SmError::Routing(e.reason()))?;
                Rep::Full(Box::new(FullState {
                    engine,
                    opts,
                    routing,
                }))
            }
        };
        let t_routed = pipe.now();
        let sm_lid = f.port(d.sm_port).lid;
        let next_sweep = cfg.sweep_interval.map(|i| pipe.now() + i);
        let mut live = Live {
            f,
            pipe,
            cfg,
            sm_port: d.sm_port,
            sm_lid,
            port_info: d.port_info.clone(),
            switch_info: d.switch_info.clone(),
            plane: Plane::new(f, Some(&mask)),
            routes: node_routes(f, &mask, d.sm_port),
            mask,
            rep,
            current: Routing::empty(f),
            next_sweep,
            pending: VecDeque::new(),
            snapshot: None,
            revived: Vec::new(),
            revived_unreported: Vec::new(),
            sa: Sa::new(f, d.node_info.clone()),
        };
        let (mut tables, _) = live.complete();
        let mut failed = live.program_lids()?;
        let pushed = live.push(&mut tables, true)?;
        failed += pushed.failed + live.activate()? + live.set_switch_info(None)?;
        live.current = tables;
        let report = cdg::check(f, &live.current, Some(&live.mask));
        if let Rep::Rftr(s) = &live.rep {
            live.snapshot = Some(Snapshot::of(s.rftr()));
        }
        let ev = Event::SubnetUp {
            switches: f.num_switches(),
            cas: f.nodes.len() - f.num_switches(),
            links: f.links.len(),
            engine: engine.name(),
            seconds: (live.pipe.now() - t0 + d.time).as_secs_f64(),
            discovery_seconds: d.time.as_secs_f64(),
            compute_seconds: (t_routed - t0).as_secs_f64(),
            smps: live.pipe.stats.sent - sent0 + d.smps,
            discovery_smps: d.smps,
            lft_blocks: pushed.lft_blocks,
            sl2vl_entries: pushed.sl2vl_entries,
            failed_smps: failed + d.failed,
            deadlock_free: report.deadlock_free,
            unreachable_pairs: report.unreachable_pairs.count,
        };
        Ok((live, ev))
    }

    pub fn fabric(&self) -> &'f Fabric {
        self.f
    }
    /// The complete tables the switches hold.
    pub fn tables(&self) -> &Routing {
        &self.current
    }
    /// The links found dead so far.
    pub fn mask(&self) -> &FaultMask {
        &self.mask
    }
    /// What the SA answered so far.
    pub fn sa_stats(&self) -> SaStats {
        self.sa.stats
    }

    /// Answers every request waiting: SA queries from the tables the switches hold (and
    /// RFTR's per-pair DLIDs), error statuses for other classes.
    pub fn serve_requests(&mut self) -> Result<(), SmError> {
        while let Some(r) = self.pipe.requests.pop_front() {
            let view = View {
                f: self.f,
                tables: &self.current,
                plane: &self.plane,
                port_info: &self.port_info,
                rftr: match &self.rep {
                    Rep::Rftr(s) => Some(s.rftr()),
                    Rep::Full(_) => None,
                },
            };
            if let Some(a) = self.sa.answer(&view, &r.mad) {
                self.pipe.answer(&a, r.from)?;
            }
        }
        Ok(())
    }

    /// The RFTR session (with `Repair::Rftr`): delta, per-source (DLID, SL) updates.
    pub fn session(&self) -> Option<&Session<'f>> {
        match &self.rep {
            Rep::Rftr(s) => Some(s),
            Rep::Full(_) => None,
        }
    }

    /// The tables a subnet manager programs for the current state: every LID of an LMC
    /// range (virtual LIDs no repair uses follow their base LID) and, over RFTR, entries
    /// for the (source, LID) pairs no source uses (as `fabroute fault` writes them).
    /// Also returns the phantom pairs the completion could not cover (`Completion::uncovered`:
    /// pairs no source uses, left without a route; the checker counts them as undelivered).
    fn complete(&self) -> (Routing, u64) {
        match &self.rep {
            Rep::Rftr(s) => {
                // what `fabroute fault` writes, so no route added while pairs a live path
                // joins are left unrepaired
                let p = s.rftr().programmed(true);
                (p.tables, p.completion.uncovered)
            }
            Rep::Full(st) => {
                let mut t = st.routing.clone();
                t.mirror_unrouted_lmc_lids(self.f);
                (t, 0)
            }
        }
    }

    /// The directed route to end port `p` (landing on that port).
    fn port_route(&self, p: PortId) -> Option<Vec<u8>> {
        if p == self.sm_port {
            return Some(vec![]);
        }
        let peer = live_peer(self.f, &self.mask, p)?;
        let sw = self.f.port(peer).node;
        let mut r = self.routes[sw.idx()].clone()?;
        r.push(self.f.port(peer).num);
        Some(r)
    }

    /// Marks link `l` failed in the mask, the forwarding view and the directed routes.
    fn mark_dead(&mut self, l: LinkId) {
        if self.mask.link_dead(l) {
            return;
        }
        self.mask.fail_link(l);
        for c in [l.0 * 2, l.0 * 2 + 1] {
            self.plane.fail_channel(self.f, fabric::ChannelId(c));
        }
        self.routes = node_routes(self.f, &self.mask, self.sm_port);
    }

    /// The reverse of the route a LID-routed packet from switch `sw` to the SM takes
    /// through the tables the switches hold: live, since a trap just came along it.
    fn route_back(&self, sw: NodeId) -> Option<Vec<u8>> {
        let f = self.f;
        let fw = Forward::new(f, &self.plane, &self.current);
        // The port each hop enters its next switch by, from `sw` on.
        let mut entered = Vec::new();
        let end = fw.walk_from(
            &fw.column(self.sm_lid),
            f.switch_index[sw.idx()],
            0,
            self.sm_port,
            |st| {
                if let Hop::Switch { inp, .. } = st.to {
                    entered.push(inp);
                }
                Control::Continue
            },
        );
        if !matches!(end, WalkEnd::Delivered { .. }) {
            return None;
        }
        let mut path = vec![f.port(self.sm_port).num];
        path.extend(entered.iter().rev());
        Some(path)
    }

    fn program_lids(&mut self) -> Result<u64, SmError> {
        let f = self.f;
        let mut reqs = Vec::new();
        let mut ports = Vec::new();
        for &n in &f.switches {
            let Some(r) = self.routes[n.idx()].clone() else {
                continue;
            };
            let p0 = f.port_id(n, 0);
            let mut pi = self.port_info[p0.idx()].for_set();
            pi.set_lid(f.port(p0).lid);
            pi.set_lmc(0);
            pi.set_master_sm_lid(self.sm_lid);
            reqs.push(Req::set(Route::Direct(r), attr_id::PORT_INFO, 0, pi.0));
            ports.push(p0);
        }
        for &p in &f.end_ports {
            let Some(r) = self.port_route(p) else {
                continue;
            };
            let mut pi = self.port_info[p.idx()].for_set();
            pi.set_lid(f.port(p).lid);
            pi.set_lmc(f.port(p).lmc);
            pi.set_master_sm_lid(self.sm_lid);
            let num = f.port(p).num as u32;
            reqs.push(Req::set(Route::Direct(r), attr_id::PORT_INFO, num, pi.0));
            ports.push(p);
        }
        let got = self.pipe.run(&reqs)?;
        Ok(self.absorb_port_info(&ports, &got))
    }

    /// Keeps the PortInfo that the Set responses for `ports` return; counts failures.
    fn absorb_port_info(&mut self, ports: &[PortId], got: &[Result<Smp, ReqError>]) -> u64 {
        let mut failed = 0;
        for (&p, g) in ports.iter().zip(got) {
            match g {
                Ok(s) => self.port_info[p.idx()] = PortInfo(s.data),
                Err(_) => failed += 1,
            }
        }
        failed
    }

    /// Ports ARMED, then ACTIVE (ibsim and the spec allow one step at a time, with the peer
    /// within one step).
    fn activate(&mut self) -> Result<u64, SmError> {
        let mut failed = 0;
        for (from, to) in [
            (port_state::INIT, port_state::ARMED),
            (port_state::ARMED, port_state::ACTIVE),
        ] {
            let f = self.f;
            let mut reqs = Vec::new();
            let mut ports = Vec::new();
            for (i, p) in f.ports.iter().enumerate() {
                if p.num == 0 || p.link.is_none() || self.port_info[i].port_state() != from {
                    continue;
                }
                let pid = PortId(i as u32);
                let route = if f.is_switch(p.node) {
                    self.routes[p.node.idx()].clone()
                } else {
                    self.port_route(pid)
                };
                let Some(r) = route else { continue };
                let mut pi = self.port_info[i].for_set();
                pi.set_port_state(to);
                reqs.push(Req::set(
                    Route::Direct(r),
                    attr_id::PORT_INFO,
                    p.num as u32,
                    pi.0,
                ));
                ports.push(pid);
            }
            let got = self.pipe.run(&reqs)?;
            failed += self.absorb_port_info(&ports, &got);
        }
        Ok(failed)
    }

    /// SwitchInfo Set on `only` (or every switch): LinearFDBTop = the highest LID, and
    /// PortStateChange cleared.
    fn set_switch_info(&mut self, only: Option<&[NodeId]>) -> Result<u64, SmError> {
        let f = self.f;
        let list: Vec<NodeId> = only.map_or_else(|| f.switches.clone(), |s| s.to_vec());
        let mut reqs = Vec::new();
        let mut who = Vec::new();
        for n in list {
            let Some(r) = self.routes[n.idx()].clone() else {
                continue;
            };
            let mut si = self.switch_info[n.idx()];
            si.set_linear_fdb_top(f.max_lid());
            si.set_port_state_change(1);
            reqs.push(Req::set(Route::Direct(r), attr_id::SWITCH_INFO, 0, si.0));
            who.push(n);
        }
        let got = self.pipe.run(&reqs)?;
        let mut failed = 0;
        for (n, g) in who.into_iter().zip(got) {
            match g {
                Ok(s) => self.switch_info[n.idx()] = SwitchInfo(s.data),
                Err(_) => failed += 1,
            }
        }
        Ok(failed)
    }

    /// Sends the LFT blocks and SL2VL rows of `new` that differ from what the switches
    /// hold (everything when `first`), by directed route over live links, and waits for
    /// every answer.
    fn push(&mut self, new: &mut Routing, first: bool) -> Result<Pushed, SmError> {
        let f = self.f;
        let mut reqs = Vec::new();
        // What each request writes, and what could not be sent (no live route).
        let mut what: Vec<Target> = Vec::new();
        let mut unsent: Vec<Target> = Vec::new();
        let stride = new.stride();
        let blocks = stride.div_ceil(LFT_BLOCK);
        let mut pushed = Pushed::default();
        for (s, &n) in f.switches.iter().enumerate() {
            let route = self.routes[n.idx()].clone();
            let newl = new.lft_of(s);
            let oldl = self.current.lft_of(s);
            for b in 0..blocks {
                let range = b * LFT_BLOCK..((b + 1) * LFT_BLOCK).min(stride);
                if !first && newl[range.clone()] == oldl[range.clone()] {
                    continue;
                }
                let Some(r) = route.clone() else {
                    unsent.push(Target::Lft(s, b));
                    continue;
                };
                let mut d = [fabric::NO_PORT; mad::SMP_DATA];
                d[..range.len()].copy_from_slice(&newl[range]);
                reqs.push(Req::set(Route::Direct(r), attr_id::LFT, b as u32, d));
                what.push(Target::Lft(s, b));
                pushed.lft_blocks += 1;
            }
        }
        for (i, node) in f.nodes.iter().enumerate() {
            let n = NodeId(i as u32);
            if first && new.sl2vl.is_identity(n) {
                continue;
            }
            if !first && new.sl2vl.table(n) == self.current.sl2vl.table(n) {
                continue;
            }
            let rows: Vec<(u8, u8)> = if node.kind == NodeKind::Switch {
                (0..=node.nports)
                    .flat_map(|i| {
                        (1..=node.nports)
                            .filter(move |&o| o != i)
                            .map(move |o| (i, o))
                    })
                    .collect()
            } else {
                (1..=node.nports).map(|o| (0, o)).collect()
            };
            for (inp, out) in rows {
                let v: [u8; NUM_SLS] =
                    std::array::from_fn(|sl| new.sl2vl.vl(n, inp, out, sl as u8));
                let old: [u8; NUM_SLS] =
                    std::array::from_fn(|sl| self.current.sl2vl.vl(n, inp, out, sl as u8));
                if !first && v == old {
                    continue;
                }
                let (route, modifier) = if node.kind == NodeKind::Switch {
                    (self.routes[i].clone(), attr::sl2vl_modifier(inp, out))
                } else {
                    (self.port_route(f.port_id(n, out)), 0)
                };
                let Some(r) = route else {
                    unsent.push(Target::Sl2Vl(n, inp, out));
                    continue;
                };
                reqs.push(Req::set(
                    Route::Direct(r),
                    attr_id::SL2VL,
                    modifier,
                    attr::sl2vl_encode(&v),
                ));
                what.push(Target::Sl2Vl(n, inp, out));
                pushed.sl2vl_entries += 1;
            }
        }
        let got = self.pipe.run(&reqs)?;
        for (t, g) in what.into_iter().zip(&got) {
            if g.is_err() {
                pushed.failed += 1;
                unsent.push(t);
            }
        }
        // What was not confirmed is still what it was: `new` keeps the old values there, so
        // that it says what the switches hold.
        pushed.unsent = unsent.len() as u64;
        for t in unsent {
            match t {
                Target::Lft(s, b) => {
                    let range = b * LFT_BLOCK..((b + 1) * LFT_BLOCK).min(stride);
                    let old = self.current.lft_of(s)[range.clone()].to_vec();
                    new.lft_of_mut(s)[range].copy_from_slice(&old);
                }
                Target::Sl2Vl(n, inp, out) => {
                    for sl in 0..NUM_SLS as u8 {
                        let vl = self.current.sl2vl.vl(n, inp, out, sl);
                        new.sl2vl.set(n, inp, out, sl, vl);
                    }
                }
            }
        }
        Ok(pushed)
    }

    /// Reads the PortInfo of every port of switch `n` by `route`; returns the links the SM
    /// had as live that are now down.
    fn read_ports(&mut self, n: NodeId, route: Vec<u8>) -> Result<Vec<(u8, LinkId)>, SmError> {
        let f = self.f;
        let reqs: Vec<Req> = (1..=f.node(n).nports)
            .map(|p| Req::get(Route::Direct(route.clone()), attr_id::PORT_INFO, p as u32))
            .collect();
        let got = self.pipe.run(&reqs)?;
        let mut down = Vec::new();
        for (i, g) in got.into_iter().enumerate() {
            let num = i as u8 + 1;
            let p = f.port_id(n, num);
            let Ok(s) = g else { continue };
            let pi = PortInfo(s.data);
            self.port_info[p.idx()] = pi;
            if let Some(l) = f.port(p).link {
                let dead = self.mask.link_dead(l);
                if !dead && (!pi.link_up() || pi.port_state() == port_state::DOWN) {
                    down.push((num, l));
                }
                if dead && pi.link_up() && !self.revived.contains(&l) {
                    self.revived.push(l);
                    self.revived_unreported.push(l);
                }
            }
        }
        Ok(down)
    }

    /// The switch a trap 128 (link state change) comes from, by its issuer LID.
    fn trap_switch(&self, s: &Smp) -> Option<NodeId> {
        let notice = Notice::decode(&s.data);
        if notice.trap_number != Notice::TRAP_LINK_STATE {
            return None;
        }
        let n = self.f.port(self.f.lid_port(notice.issuer_lid)?).node;
        self.f.is_switch(n).then_some(n)
    }

    /// Waits up to `max_wait` (and not past the next light sweep) for a trap and handles
    /// it, or runs the light sweep when it is due. Returns what happened.
    pub fn step(&mut self, max_wait: Duration) -> Result<Vec<Event>, SmError> {
        let now = self.pipe.now();
        let wait = match self.next_sweep {
            Some(t) => max_wait.min(t.saturating_sub(now)),
            None => max_wait,
        };
        let mut events = Vec::new();
        self.serve_requests()?;
        let got = match self.pending.pop_front() {
            Some((n, at)) => Some((n, at)),
            None => self.pipe.wait_trap(wait)?.and_then(|(at, s)| {
                // Tell the switch the trap arrived (ibsim drops TrapRepress; hardware stops
                // resending).
                let mut rep = s.clone();
                rep.method = Method::TrapRepress;
                rep.route = Route::Lid(Notice::decode(&s.data).issuer_lid);
                let _ = self.pipe.send_unanswered(&rep);
                self.trap_switch(&s).map(|n| (n, at))
            }),
        };
        if let Some((n, at)) = got {
            let route = self.route_back(n).or_else(|| self.routes[n.idx()].clone());
            let down = match route {
                Some(r) => self.read_ports(n, r)?,
                None => Vec::new(),
            };
            events.push(Event::Trap {
                trap: Notice::TRAP_LINK_STATE,
                lid: self.f.switch_lid(n),
                node: self.f.node(n).name.clone(),
                ports_down: down.iter().map(|d| d.0).collect(),
            });
            if !down.is_empty() {
                let links: Vec<LinkId> = down.iter().map(|d| d.1).collect();
                events.push(self.repair(&links, at)?);
            }
            self.set_switch_info(Some(&[n]))?;
            // Traps that arrived meanwhile wait their turn.
            while let Some((at, s)) = self.pipe.traps.pop_front() {
                if let Some(m) = self.trap_switch(&s) {
                    if !self.pending.iter().any(|x| x.0 == m) {
                        self.pending.push_back((m, at));
                    }
                }
            }
        }
        if let Some(t) = self.next_sweep {
            if self.pipe.now() >= t {
                events.extend(self.light_sweep()?);
                self.next_sweep = self.cfg.sweep_interval.map(|i| self.pipe.now() + i);
            }
        }
        // Queries that came in while a repair ran.
        self.serve_requests()?;
        if !self.revived_unreported.is_empty() {
            let f = self.f;
            events.push(Event::LinkUp {
                links: self
                    .revived_unreported
                    .drain(..)
                    .map(|l| routing::fault::sweep::link_name(f, l))
                    .collect(),
            });
        }
        Ok(events)
    }

    /// Reads SwitchInfo of every reachable switch; the ports of those with
    /// PortStateChange set; repairs what went down.
    pub fn light_sweep(&mut self) -> Result<Vec<Event>, SmError> {
        let t0 = self.pipe.now();
        let f = self.f;
        let mut todo: Vec<NodeId> = f.switches.clone();
        let mut read = 0;
        let mut changed = Vec::new();
        let mut links = Vec::new();
        // A switch whose route crosses a cable found dead in this sweep does not answer;
        // it is read again over routes that avoid what was found (a few rounds at most).
        for _round in 0..4 {
            let mut reqs = Vec::new();
            let mut who = Vec::new();
            for &n in &todo {
                if let Some(r) = self.routes[n.idx()].clone() {
                    reqs.push(Req::get(Route::Direct(r.clone()), attr_id::SWITCH_INFO, 0));
                    who.push((n, r));
                }
            }
            let got = self.pipe.run(&reqs)?;
            let mut again = Vec::new();
            let mut found = false;
            for ((n, r), g) in who.into_iter().zip(got) {
                match g {
                    Ok(s) => {
                        read += 1;
                        if SwitchInfo(s.data).port_state_change() == 1 {
                            changed.push(n);
                            for (_, l) in self.read_ports(n, r)? {
                                if !links.contains(&l) {
                                    links.push(l);
                                    // Known dead at once, so later routes avoid it.
                                    self.mark_dead(l);
                                    found = true;
                                }
                            }
                        }
                    }
                    Err(_) => again.push(n),
                }
            }
            if again.is_empty() || !found {
                break;
            }
            todo = again;
        }
        let mut events = vec![Event::Sweep {
            switches_read: read,
            changed: changed.iter().map(|&n| f.node(n).name.clone()).collect(),
            links_down: links.len(),
        }];
        if !links.is_empty() {
            events.push(self.repair(&links, t0)?);
        }
        if !changed.is_empty() {
            self.set_switch_info(Some(&changed))?;
        }
        Ok(events)
    }

    /// Applies failed links, repairs, pushes the difference and waits for it.
    ///
    /// Over RFTR in two phases: first RFTR's own entries (the new paths of the affected
    /// pairs, `Rftr::delta`) over what the switches hold, confirmed by every switch — from
    /// then on every source's path delivers, and this is the repair time; then the
    /// completion for checkers that walk every (source, LID) (entries and SLs for pairs no
    /// source uses, `Rftr::complete_for_checkers`), which carries no traffic.
    fn repair(&mut self, links: &[LinkId], since: Duration) -> Result<Event, SmError> {
        let sent0 = self.pipe.stats.sent;
        let t_compute = self.pipe.now();
        let f = self.f;
        for &l in links {
            self.mark_dead(l);
        }
        let (mut affected, mut repaired, mut unsupported, mut union_ok) = (0, 0, 0, true);
        let mut before = None;
        let mut first = match &mut self.rep {
            Rep::Rftr(s) => {
                before = Some(
                    self.snapshot
                        .take()
                        .unwrap_or_else(|| Snapshot::of(s.rftr())),
                );
                for &l in links {
                    let rep = s.apply_unchecked(Fault::Link(l));
                    affected += rep.affected_pairs;
                    repaired += rep.repaired_pairs;
                    unsupported += rep.unsupported_pairs;
                }
                // RFTR's entries (all of them so far: earlier ones are in place already)
                // over what the switches hold.
                let r = s.rftr();
                let mut t = self.current.clone();
                for (&(sw, lid), &(_, new)) in &r.delta.lft {
                    t.lft_of_mut(sw as usize)[lid as usize] = new;
                }
                for (&(sw, i, o, sl), &(_, new)) in &r.delta.sl2vl {
                    t.sl2vl.set(f.switches[sw as usize], i, o, sl, new);
                }
                if let PathSl::PerPair { stride, sl } = &mut t.path_sl {
                    for (&(src, _), &(dlid, psl)) in &r.delta.sources {
                        sl[src as usize * *stride + dlid as usize] = psl;
                    }
                }
                t
            }
            Rep::Full(st) => {
                st.routing = st
                    .engine
                    .route(f, &self.mask, &st.opts)
                    .map_err(|e| SmError::Routing(e.to_string()))?;
                self.complete().0
            }
        };
        let compute = self.pipe.now() - t_compute;
        let pushed = self.push(&mut first, false)?;
        let old = std::mem::replace(&mut self.current, first);
        let seconds = (self.pipe.now() - since).as_secs_f64();
        let smps = self.pipe.stats.sent - sent0;
        // The completion for checkers (RFTR only).
        let t_completion = self.pipe.now();
        let mut completion = Pushed::default();
        let mut uncovered = 0;
        if let Rep::Rftr(_) = self.rep {
            let (mut full, u) = self.complete();
            uncovered = u;
            completion = self.push(&mut full, false)?;
            self.current = full;
        }
        let completion_seconds = (self.pipe.now() - t_completion).as_secs_f64();
        let blocks_changed = changed_blocks(f, &old, &self.current);
        // Verified after the push, outside the timed repair: the tables now in the switches
        // walked and checked, and over RFTR the union of the old walks' surviving prefixes
        // and the new ones (what packets in flight during the migration can meet).
        let report = cdg::check(f, &self.current, Some(&self.mask));
        if let (Rep::Rftr(s), Some(b)) = (&self.rep, &before) {
            union_ok = check_state(s.rftr(), Some(b)).deadlock_free;
            // What is in use now, for the next fault's check (taken here, outside the timed
            // repair).
            self.snapshot = Some(Snapshot::of(s.rftr()));
        }
        if let Rep::Full(_) = &self.rep {
            unsupported = report.unreachable_pairs.count;
        }
        let source_updates = match &self.rep {
            Rep::Rftr(s) => s.rftr().delta.sources.len(),
            Rep::Full(_) => 0,
        };
        Ok(Event::Repaired {
            repair: self.cfg.repair,
            faults: links
                .iter()
                .map(|&l| routing::fault::sweep::link_name(f, l))
                .collect(),
            seconds,
            compute_seconds: compute.as_secs_f64(),
            lft_blocks: pushed.lft_blocks,
            sl2vl_entries: pushed.sl2vl_entries,
            smps,
            failed_smps: pushed.failed + completion.failed,
            unsent: pushed.unsent + completion.unsent,
            uncovered_phantoms: uncovered,
            completion_seconds,
            completion_lft_blocks: completion.lft_blocks,
            completion_sl2vl_entries: completion.sl2vl_entries,
            blocks_changed,
            affected_pairs: affected,
            repaired_pairs: repaired,
            unsupported_pairs: unsupported,
            source_updates,
            deadlock_free: report.deadlock_free && union_ok,
            unreachable_pairs: report.unreachable_pairs.count,
        })
    }
}

/// The port at the other end of `p`'s cable, when the cable is not failed in `mask`.
fn live_peer(f: &Fabric, mask: &FaultMask, p: PortId) -> Option<PortId> {
    let l = f.port(p).link?;
    if mask.link_dead(l) {
        return None;
    }
    f.remote(p)
}

/// Directed routes from the SM's port to every node over the links live in `mask`
/// (switches breadth first in port order; an end node by its first live port).
fn node_routes(f: &Fabric, mask: &FaultMask, sm_port: PortId) -> Vec<Option<Vec<u8>>> {
    let mut r: Vec<Option<Vec<u8>>> = vec![None; f.nodes.len()];
    r[f.port(sm_port).node.idx()] = Some(vec![]);
    let mut q = VecDeque::new();
    if let Some(peer) = live_peer(f, mask, sm_port) {
        let n = f.port(peer).node;
        if f.is_switch(n) {
            r[n.idx()] = Some(vec![f.port(sm_port).num]);
            q.push_back(n);
        }
    }
    while let Some(n) = q.pop_front() {
        let base = r[n.idx()].clone().expect("queued with a route");
        for p in f.node_ports(n).skip(1) {
            let Some(peer) = live_peer(f, mask, p) else {
                continue;
            };
            let m = f.port(peer).node;
            if r[m.idx()].is_some() {
                continue;
            }
            let mut path = base.clone();
            path.push(f.port(p).num);
            if f.is_switch(m) {
                q.push_back(m);
            }
            r[m.idx()] = Some(path);
        }
    }
    r
}

/// Distinct 64-LID blocks whose entries differ between two tables of one fabric.
fn changed_blocks(f: &Fabric, a: &Routing, b: &Routing) -> u64 {
    let stride = a.stride();
    let mut n = 0;
    for s in 0..f.num_switches() {
        let (x, y) = (a.lft_of(s), b.lft_of(s));
        n += (0..stride.div_ceil(LFT_BLOCK))
            .filter(|&k| {
                let r = k * LFT_BLOCK..((k + 1) * LFT_BLOCK).min(stride);
                x[r.clone()] != y[r]
            })
            .count() as u64;
    }
    n
}
