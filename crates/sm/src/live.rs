//! Bring-up and the repair loop over a discovered fabric.

use crate::discover::Discovery;
use crate::mcast::McastState;
use crate::pipe::Pipe;
use crate::program::{Pushed, Scope};
use crate::sa::{Sa, SaStats, View};
use crate::sa_mcast::{is_mcmember, McastChange};
use crate::{Session, SmError};
use fabric::{Fabric, FaultMask, LinkId, NodeId, PortId};
use mad::attr::{sm_state, Notice, PortInfo, SmInfo, SwitchInfo};
use mad::{Method, Route, Smp, Transport};
use routing::cdg;
use routing::engines::{Engine, RouteOptions};
use routing::fault::verify::Snapshot;
use routing::fault::{Fault, RftrConfig, SessionError};
use routing::forward::{Control, Forward, Hop, Plane, WalkEnd};
use routing::Routing;
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;

/// How a failure is repaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RepairMode {
    /// RFTR: new paths for the affected pairs only, from the engine's base tables.
    Rftr,
    /// The engine run again on the fabric without the failed links (the baseline).
    Full,
}

/// The SM's settings.
#[derive(Clone, Debug)]
pub struct SmConfig {
    pub repair: RepairMode,
    /// RFTR's settings (VLs in all, SLs, tie-break). `keep_sl2vl` is set by the SM itself:
    /// the switches' identity SL2VL stays.
    pub rftr: RftrConfig,
    /// The engine's options (its VL budget already leaving RFTR's VLs free).
    pub opts: RouteOptions,
    /// Light sweep period: SwitchInfo.PortStateChange of every switch (`None`: traps only).
    pub sweep_interval: Option<Duration>,
    /// SMInfo.Priority (0-15) the SM answers with.
    pub priority: u8,
    /// Multicast groups whose trees the SM programs (MFTs) and mends (empty: none).
    pub mcast: Vec<routing::mcast::Group>,
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
        /// After the last confirmation, before the event: the checker on the programmed
        /// tables and, over RFTR, the state the first repair's check starts from.
        check_seconds: f64,
        smps: u64,
        discovery_smps: u64,
        lft_blocks: u64,
        sl2vl_entries: u64,
        /// MulticastForwardingTable blocks written (0 without `--mcast`).
        mft_blocks: u64,
        /// End ports asked to register again with the SA (those that support it).
        client_reregister: u64,
        /// SMPs that got no good answer after retries (0 on a healthy fabric).
        failed_smps: u64,
        deadlock_free: bool,
        unreachable_pairs: u64,
        /// Why RFTR was not started though asked for (its reachability tables would pass
        /// `RftrConfig::memory_limit`): faults are then repaired by full reconfiguration.
        #[serde(skip_serializing_if = "Option::is_none")]
        rftr_refused: Option<String>,
    },
    /// Another SM is master: this one stands by and polls it.
    Standby {
        master_guid: String,
        master_node: String,
        master_lid: u16,
        master_priority: u8,
        priority: u8,
        /// Discovery and the SMInfo queries to the other SMs.
        seconds: f64,
        smps: u64,
    },
    /// The master went silent (or stopped being master) and this SM took the subnet over:
    /// discovered it with the LIDs the ports hold, read back the tables the switches hold,
    /// checked them, and adopted them when clean.
    TakeOver {
        master_guid: String,
        master_node: String,
        master_priority: u8,
        /// How the master was lost: `silent`, or `not master (state N)`.
        lost: String,
        /// From the master's last answer to the decision to take over (at most the poll
        /// interval and the poll's retries).
        silent_seconds: f64,
        engine: &'static str,
        /// Discovery, read-back, check, routing and programming.
        seconds: f64,
        discovery_seconds: f64,
        readback_seconds: f64,
        readback_smps: u64,
        /// The tables found in the switches, walked and checked.
        held_deadlock_free: bool,
        held_unreachable_pairs: u64,
        /// True when the tables found were kept as they are (the repairs build on them);
        /// otherwise why not, and the engine's tables were pushed where they differ.
        adopted: bool,
        refused: Option<String>,
        compute_seconds: f64,
        smps: u64,
        /// LFT blocks, SL2VL rows and MFT blocks written (0, 0 and 0 on a clean fabric).
        lft_blocks: u64,
        sl2vl_entries: u64,
        mft_blocks: u64,
        /// End ports asked to register again with the SA (those that support it).
        client_reregister: u64,
        failed_smps: u64,
        /// The tables now in the switches, walked and checked.
        deadlock_free: bool,
        unreachable_pairs: u64,
        /// As in `SubnetUp`: RFTR refused for its memory, faults repaired by full
        /// reconfiguration.
        #[serde(skip_serializing_if = "Option::is_none")]
        rftr_refused: Option<String>,
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
    /// Failed links found physically up again that are not taken in: cables of a failed
    /// switch (the switch stays failed until the SM is restarted), or cables whose return
    /// was refused (`LinkRestored` with `taken_in: false` came first). Reported once.
    LinkUp { links: Vec<String> },
    /// Failed cables found physically up again and taken back in: ports ARMED and ACTIVE,
    /// the tables returned to what they are without these faults, only changed blocks
    /// pushed and confirmed.
    LinkRestored {
        repair: RepairMode,
        links: Vec<String>,
        /// Over RFTR: false when the union of the dependencies before and after the return
        /// had a cycle; nothing was pushed and the cables stay failed in the SM's model.
        taken_in: bool,
        /// Trap received (or sweep started) → last changed block confirmed.
        seconds: f64,
        /// The ports' PortInfo and their ARMED and ACTIVE steps.
        activate_seconds: f64,
        /// The tables to return to and the union check before the push.
        compute_seconds: f64,
        lft_blocks: u64,
        sl2vl_entries: u64,
        smps: u64,
        failed_smps: u64,
        unsent: u64,
        /// Distinct LFT blocks that differ between the tables before and after.
        blocks_changed: u64,
        /// Over RFTR: (source, destination) pairs whose path or (DLID, SL) changed — the
        /// pairs that moved back — and pairs still off their base (DLID, SL) afterwards (0
        /// once no fault remains).
        returned_pairs: u64,
        pairs_off_base: u64,
        /// Faults the SM still holds.
        faults_left: usize,
        uncovered_phantoms: u64,
        /// Over RFTR: the union of the old walks and the new ones is acyclic (checked before
        /// anything was pushed).
        union_deadlock_free: bool,
        /// Reports sent to subscribed hosts (trap 69 to the pairs that moved back, 64 about
        /// end ports back in service).
        reports: u64,
        /// The tables now in the switches, walked and checked.
        deadlock_free: bool,
        unreachable_pairs: u64,
    },
    /// Failed links repaired and the changed tables confirmed by every switch.
    Repaired {
        repair: RepairMode,
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
        /// Reports sent to subscribed hosts (trap 69 to moved sources, 65 about end ports
        /// cut off).
        reports: u64,
        /// MFT blocks written for the multicast trees the faults cut (0 without `--mcast`).
        mft_blocks: u64,
        /// The tables now in the switches, walked and checked (every pair, CDG over
        /// (channel, VL)); with RFTR also the union with the tables before the repair.
        deadlock_free: bool,
        unreachable_pairs: u64,
    },
    /// A port joined a multicast group through the SA (MCMemberRecord Set), the group's
    /// tree routed again and its changed MFT blocks confirmed.
    McastJoin(McastChange),
    /// A port left a multicast group through the SA (MCMemberRecord Delete).
    McastLeave(McastChange),
}

pub(crate) enum RepairState<'f> {
    Rftr(Box<Session<'f>>),
    Full(Box<FullState<'f>>),
}

pub(crate) struct FullState<'f> {
    pub(crate) engine: &'f dyn Engine,
    pub(crate) opts: RouteOptions,
    pub(crate) routing: Routing,
}

/// The SM over one discovered fabric.
pub struct Live<'f, T: Transport> {
    pub(crate) f: &'f Fabric,
    pub pipe: Pipe<T>,
    pub(crate) cfg: SmConfig,
    pub(crate) sm_port: PortId,
    pub(crate) sm_lid: u16,
    /// End ports asked to register again with the SA (PortInfo.ClientReregister).
    pub(crate) rereg_asked: u64,
    pub(crate) port_info: Vec<PortInfo>,
    pub(crate) switch_info: Vec<SwitchInfo>,
    pub(crate) mask: FaultMask,
    /// The forwarding view under `mask` (the trap's way back is walked through it).
    pub(crate) plane: Plane,
    /// Directed routes to every node over live links, kept with `mask`.
    pub(crate) routes: Vec<Option<Vec<u8>>>,
    pub(crate) rep: RepairState<'f>,
    /// What the switches hold now (complete tables, LMC LIDs included).
    pub(crate) current: Routing,
    /// Over RFTR, a copy of `current` (when set), refreshed after each repair outside the
    /// timed part: the next repair writes its entries into it and pushes the blocks they
    /// touch, instead of copying the tables (on the 4,096-HCA fat tree at LMC 2, a fresh
    /// copy of the 13 MB of LFTs cost 300 ms of page faults in the repair) and comparing
    /// every block.
    pub(crate) spare: Option<Routing>,
    pub(crate) next_sweep: Option<Duration>,
    /// Traps waiting behind the one being handled (issuer switch, arrival time).
    pub(crate) pending: VecDeque<(NodeId, Duration)>,
    /// Over RFTR: what is in use now, taken after the last repair for the next one's check.
    pub(crate) snapshot: Option<Snapshot>,
    /// The faults applied so far, in order (links and switches).
    pub(crate) faults: Vec<Fault>,
    /// Failed links found physically up again and not taken in (a cable of a failed switch,
    /// or one whose return was refused), and those not yet reported.
    pub(crate) revived: Vec<LinkId>,
    pub(crate) revived_unreported: Vec<LinkId>,
    /// Failed links found physically up again, to be taken in (`Live::restore`).
    pub(crate) revived_new: Vec<LinkId>,
    /// Cables up again whose return was refused (the union check found a cycle): tried
    /// again with the next cable that comes back.
    pub(crate) deferred: Vec<LinkId>,
    /// The subnet administrator on the SM's port.
    pub(crate) sa: Sa,
    /// The multicast trees and what the switches hold of them (with `SmConfig::mcast`, or
    /// once a host asks the SA about multicast).
    pub(crate) mcast: Option<McastState>,
    /// Events of the SA's work (multicast joins and leaves) for the next `step`.
    pub(crate) sa_events: Vec<Event>,
}

impl<T: Transport> std::fmt::Debug for Live<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("sm_lid", &self.sm_lid)
            .field("dead_links", &self.mask.dead_links().count())
            .finish_non_exhaustive()
    }
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
        let mut cfg = cfg;
        let (rep, rftr_refused) = Self::fresh_rep(f, engine, &cfg)?;
        if rftr_refused.is_some() {
            cfg.repair = RepairMode::Full;
        }
        let t_routed = pipe.now();
        let mut live = Self::assemble(d, pipe, cfg, rep, Routing::empty(f));
        live.start_mcast(engine)?;
        let (pushed, failed, t_up, report) = live.take_charge(Scope::First)?;
        let ev = Event::SubnetUp {
            switches: f.num_switches(),
            cas: f.nodes.len() - f.num_switches(),
            links: f.links.len(),
            engine: engine.name(),
            seconds: (t_up - t0 + d.time).as_secs_f64(),
            discovery_seconds: d.time.as_secs_f64(),
            compute_seconds: (t_routed - t0).as_secs_f64(),
            check_seconds: (live.pipe.now() - t_up).as_secs_f64(),
            smps: live.pipe.stats.sent - sent0 + d.smps,
            discovery_smps: d.smps,
            lft_blocks: pushed.lft_blocks,
            sl2vl_entries: pushed.sl2vl_entries,
            mft_blocks: pushed.mft_blocks,
            client_reregister: live.rereg_asked,
            failed_smps: failed + d.failed,
            deadlock_free: report.deadlock_free,
            unreachable_pairs: report.unreachable_pairs.count,
            rftr_refused,
        };
        Ok((live, ev))
    }

    /// Programs the fabric as master: LIDs and MasterSMLID, the tables within `scope`
    /// (everything at bring-up, what differs at a take-over), ports ACTIVE, SwitchInfo;
    /// then checks what the switches hold and, over RFTR, takes the state the first
    /// repair's check starts from. Returns the push, the failed SMPs, when the last
    /// confirmation came, and the checker's report.
    pub(crate) fn take_charge(
        &mut self,
        scope: Scope,
    ) -> Result<(Pushed, u64, Duration, cdg::CheckReport), SmError> {
        let first = matches!(scope, Scope::First);
        let (mut tables, _) = self.complete();
        let mut failed = self.program_lids()?;
        let mut pushed = self.push(&mut tables, scope)?;
        // Multicast trees: every block with a port in it at bring-up, what differs from the
        // blocks read back at a take-over.
        let mft = self.push_mfts(first)?;
        pushed.mft_blocks = mft.blocks;
        pushed.failed += mft.failed;
        failed += pushed.failed + self.activate()? + self.set_switch_info(None)?;
        let t_up = self.pipe.now();
        self.current = tables;
        let report = cdg::check(self.f, &self.current, Some(&self.mask));
        if let RepairState::Rftr(s) = &self.rep {
            self.snapshot = Some(Snapshot::of(s.rftr()));
            self.spare = Some(self.current.clone());
        }
        Ok((pushed, failed, t_up, report))
    }

    /// Routes the multicast groups of the configuration, if any.
    pub(crate) fn start_mcast(&mut self, engine: &dyn Engine) -> Result<(), SmError> {
        if self.cfg.mcast.is_empty() {
            return Ok(());
        }
        let opts = engine
            .pin_choices(self.f, &self.cfg.opts)
            .map_err(|e| SmError::Routing(format!("{}: {e}", engine.name())))?;
        self.mcast = Some(McastState::start(
            self.f,
            engine,
            &opts,
            self.cfg.mcast.clone(),
            self.mlid_pool(),
            &self.port_info,
        )?);
        Ok(())
    }

    /// The multicast trees the switches hold (empty without groups).
    pub fn mfts(&self) -> routing::mcast::Mfts {
        self.mcast
            .as_ref()
            .map(|m| m.held.clone())
            .unwrap_or_default()
    }

    /// The multicast groups, their members and trees (`None` before any: no `--mcast` and
    /// no host asked the SA about multicast yet).
    pub fn mcast(&self) -> Option<&McastState> {
        self.mcast.as_ref()
    }

    /// The engine's tables for the fault-free fabric: an RFTR session over them, or the
    /// tables alone for full reconfiguration. An SM must bring its fabric up: when RFTR's
    /// reachability tables would pass the memory limit (a fabric too large for them), the
    /// tables alone, and why (the caller then repairs by full reconfiguration).
    pub(crate) fn fresh_rep(
        f: &'f Fabric,
        engine: &'f dyn Engine,
        cfg: &SmConfig,
    ) -> Result<(RepairState<'f>, Option<String>), SmError> {
        let route =
            || Session::route_base(f, engine, &cfg.opts).map_err(|e| SmError::Routing(e.reason()));
        let (opts, routing) = route()?;
        let full = |opts, routing| {
            RepairState::Full(Box::new(FullState {
                engine,
                opts,
                routing,
            }))
        };
        Ok(match cfg.repair {
            RepairMode::Rftr => {
                // The switches come up with the identity SL2VL, which the SM does not write:
                // RFTR keeps it (SL 0 on VL 0 as the base has it) and sets only the entries
                // its new paths need, instead of an SL2VL row for every port pair at subnet up.
                // The base goes to RFTR whole; on the rare refusal it is routed again.
                match Session::from_base(f, engine, opts, routing, rftr_config(cfg)) {
                    Ok(s) => (RepairState::Rftr(Box::new(s)), None),
                    Err(e) => match too_large(&e) {
                        Some(why) => {
                            let (opts, routing) = route()?;
                            (full(opts, routing), Some(why))
                        }
                        None => return Err(SmError::Routing(e.reason())),
                    },
                }
            }
            RepairMode::Full => (full(opts, routing), None),
        })
    }

    /// The SM over a discovered fabric, master of it, with `current` as what the switches
    /// hold; nothing sent yet.
    pub(crate) fn assemble(
        d: &'f Discovery,
        pipe: Pipe<T>,
        cfg: SmConfig,
        rep: RepairState<'f>,
        current: Routing,
    ) -> Self {
        let f = &d.fabric;
        let mask = FaultMask::none(f);
        let next_sweep = cfg.sweep_interval.map(|i| pipe.now() + i);
        let mut live = Live {
            f,
            pipe,
            sm_port: d.sm_port,
            sm_lid: f.port(d.sm_port).lid,
            rereg_asked: 0,
            port_info: d.port_info.clone(),
            switch_info: d.switch_info.clone(),
            plane: Plane::new(f, Some(&mask)),
            routes: node_routes(f, &mask, d.sm_port),
            mask,
            rep,
            current,
            spare: None,
            next_sweep,
            pending: VecDeque::new(),
            snapshot: None,
            faults: Vec::new(),
            revived: Vec::new(),
            revived_new: Vec::new(),
            deferred: Vec::new(),
            revived_unreported: Vec::new(),
            sa: Sa::new(f, d.node_info.clone()),
            mcast: None,
            sa_events: Vec::new(),
            cfg,
        };
        live.sa.sm = SmInfo {
            guid: f.port(d.sm_port).guid,
            priority: live.cfg.priority & 0xf,
            state: sm_state::MASTER,
            ..SmInfo::default()
        };
        live
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
    /// RFTR's per-pair DLIDs), error statuses for other classes. A multicast join or leave
    /// is answered once its group's changed MFT blocks are confirmed.
    pub fn serve_requests(&mut self) -> Result<(), SmError> {
        while let Some(r) = self.pipe.requests.pop_front() {
            let t0 = self.pipe.now();
            if is_mcmember(&r.mad) {
                self.ensure_mcast();
            }
            self.sa.sm.act_count = self.pipe.stats.sent as u32;
            let view = View {
                f: self.f,
                tables: &self.current,
                plane: &self.plane,
                port_info: &self.port_info,
                switch_info: &self.switch_info,
                mask: &self.mask,
                rftr: match &self.rep {
                    RepairState::Rftr(s) => Some(s.rftr()),
                    RepairState::Full(_) => None,
                },
            };
            let a = self.sa.answer(&view, self.mcast.as_mut(), &r.mad, r.from);
            self.push_mcast_changes(t0)?;
            if let Some(a) = a {
                self.pipe.answer(&a, r.from)?;
            }
        }
        Ok(())
    }

    /// The RFTR session (with `Repair::Rftr`): delta, per-source (DLID, SL) updates.
    pub fn session(&self) -> Option<&Session<'f>> {
        match &self.rep {
            RepairState::Rftr(s) => Some(s),
            RepairState::Full(_) => None,
        }
    }

    /// The tables a subnet manager programs for the current state: every LID of an LMC
    /// range (virtual LIDs no repair uses follow their base LID) and, over RFTR, entries
    /// for the (source, LID) pairs no source uses (as `fabroute fault` writes them).
    /// Also returns the phantom pairs the completion could not cover (`Completion::uncovered`:
    /// pairs no source uses, left without a route; the checker counts them as undelivered).
    pub(crate) fn complete(&self) -> (Routing, u64) {
        match &self.rep {
            RepairState::Rftr(s) => {
                // what `fabroute fault` writes, so no route added while pairs a live path
                // joins are left unrepaired
                let p = s.rftr().programmed(true);
                (p.tables, p.completion.uncovered)
            }
            RepairState::Full(st) => {
                let mut t = st.routing.clone();
                t.mirror_unrouted_lmc_lids(self.f);
                (t, 0)
            }
        }
    }

    /// The directed route to end port `p` (landing on that port).
    pub(crate) fn port_route(&self, p: PortId) -> Option<Vec<u8>> {
        port_route(self.f, &self.mask, &self.routes, self.sm_port, p)
    }

    /// Marks link `l` failed in the mask, the forwarding view and the directed routes.
    pub(crate) fn mark_dead(&mut self, l: LinkId) {
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
            f.switch_of(sw).map_or(u32::MAX, |s| s.0),
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
                let faults = self.group_faults(links, &[n])?;
                events.push(self.repair(&faults, at)?);
            }
            if !self.revived_new.is_empty() {
                events.extend(self.restore(at)?);
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
        events.append(&mut self.sa_events);
        if !self.revived_unreported.is_empty() {
            let f = self.f;
            events.push(Event::LinkUp {
                links: self
                    .revived_unreported
                    .drain(..)
                    .map(|l| fabric::link_name(f, l))
                    .collect(),
            });
        }
        Ok(events)
    }
}

/// Why RFTR cannot start, when it is that its tables would pass the memory limit: the one
/// refusal the SM answers with full reconfiguration instead of giving up.
pub(crate) fn too_large(e: &SessionError) -> Option<String> {
    e.too_large()
        .map(|r| format!("{r}; faults are repaired by full reconfiguration (--repair full)"))
}

/// RFTR's settings as the SM runs it: the switches' SL2VL tables kept.
pub(crate) fn rftr_config(cfg: &SmConfig) -> RftrConfig {
    RftrConfig {
        keep_sl2vl: true,
        ..cfg.rftr
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

/// The directed route to end port `p` (landing on that port) over `routes` (from
/// [`node_routes`]) and the links live in `mask`.
pub(crate) fn port_route(
    f: &Fabric,
    mask: &FaultMask,
    routes: &[Option<Vec<u8>>],
    sm_port: PortId,
    p: PortId,
) -> Option<Vec<u8>> {
    if p == sm_port {
        return Some(vec![]);
    }
    let peer = live_peer(f, mask, p)?;
    let mut r = routes[f.port(peer).node.idx()].clone()?;
    r.push(f.port(peer).num);
    Some(r)
}

/// Directed routes from the SM's port to every node over the links live in `mask`
/// (switches breadth first in port order; an end node by its first live port).
pub(crate) fn node_routes(f: &Fabric, mask: &FaultMask, sm_port: PortId) -> Vec<Option<Vec<u8>>> {
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
