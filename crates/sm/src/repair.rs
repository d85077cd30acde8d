//! What the SM does when the fabric changes: the light sweep, failures turned into faults
//! (a switch whose every cable went down is one [`Fault::Switch`]), their repair, and links
//! that come back taken in again.

use crate::live::{node_routes, Event, Live, RepairState};
use crate::pipe::Req;
use crate::program::{Pushed, Scope};
use crate::SmError;
use fabric::link_name;
use fabric::{Fabric, FaultMask, Lid, LinkId, NodeId, PortId};
use mad::attr::{port_state, PortInfo, SwitchInfo};
use mad::{attr_id, Route, Transport};
use routing::cdg;
use routing::fault::verify::{check_state, check_tables, Snapshot};
use routing::fault::Fault;
use routing::forward::{Control, Forward, Plane};
use routing::tables::update::{self, lft_block};
use routing::tables::PathSl;
use routing::Routing;
use std::collections::HashMap;
use std::time::Duration;

/// How an event names a fault: `switch:NAME` for a switch, `A/p-B/q` for a cable.
pub fn fault_name(f: &Fabric, x: Fault) -> String {
    match x {
        Fault::Link(l) => link_name(f, l),
        Fault::Switch(n) => format!("switch:{}", f.node(n).name),
    }
}

/// The mask of a fault sequence as the SM keeps it: a failed switch is dead with every
/// cable it has (so no directed route or walk uses them).
pub(crate) fn mask_of(f: &Fabric, faults: &[Fault]) -> FaultMask {
    let mut m = FaultMask::none(f);
    for &x in faults {
        match x {
            Fault::Link(l) => m.fail_link(l),
            Fault::Switch(n) => {
                m.fail_node(n);
                for p in f.node_ports(n) {
                    if let Some(l) = f.port(p).link {
                        m.fail_link(l);
                    }
                }
            }
        }
    }
    m
}

/// The cables of switch `n` that join it to another switch.
fn switch_cables(f: &Fabric, n: NodeId) -> Vec<LinkId> {
    f.node_ports(n)
        .skip(1)
        .filter_map(|p| {
            let l = f.port(p).link?;
            let q = f.remote(p)?;
            f.is_switch(f.port(q).node).then_some(l)
        })
        .collect()
}

impl<'f, T: Transport> Live<'f, T> {
    /// Reads the PortInfo of every port of switch `n` by `route`; returns the links the SM
    /// had as live that are now down. Failed links found physically up again are noted in
    /// `revived_new` (taken in by [`Live::restore`]).
    pub(crate) fn read_ports(
        &mut self,
        n: NodeId,
        route: Vec<u8>,
    ) -> Result<Vec<(u8, LinkId)>, SmError> {
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
                if dead
                    && pi.link_up()
                    && !self.revived.contains(&l)
                    && !self.revived_new.contains(&l)
                    && !self.deferred.contains(&l)
                {
                    self.revived_new.push(l);
                }
            }
        }
        Ok(down)
    }

    /// Turns the links found down into faults. A switch at the far end of one of them that
    /// the SM did not read itself (`read`: switches whose ports were just read) is probed
    /// from its neighbours: the PortInfo of the far port of each of its other switch cables,
    /// read over directed routes that avoid the switch. When every one of its switch cables
    /// went down in this step (this trap, or this sweep; none was failed before), the switch
    /// is one [`Fault::Switch`] (its end ports go with it, as `fabroute fault --fail
    /// switch:X` does); otherwise each cable found down is a [`Fault::Link`]. Every link
    /// returned in a fault is marked dead.
    pub(crate) fn group_faults(
        &mut self,
        mut down: Vec<LinkId>,
        read: &[NodeId],
    ) -> Result<Vec<Fault>, SmError> {
        let f = self.f;
        for &l in &down {
            self.mark_dead(l);
        }
        let mut candidates: Vec<NodeId> = Vec::new();
        for &l in &down {
            let k = f.link(l);
            for p in [k.a, k.b] {
                let m = f.port(p).node;
                let sm_switch = self
                    .f
                    .remote(self.sm_port)
                    .map(|q| f.port(q).node == m)
                    .unwrap_or(false);
                if f.is_switch(m)
                    && !read.contains(&m)
                    && !self.mask.node_dead(m)
                    && !sm_switch
                    && !candidates.contains(&m)
                {
                    candidates.push(m);
                }
            }
        }
        let mut dead_switches = Vec::new();
        for m in candidates {
            let cables = switch_cables(f, m);
            let others: Vec<LinkId> = cables
                .iter()
                .copied()
                .filter(|&l| !self.mask.link_dead(l))
                .collect();
            // Every cable must go within this step: a switch cut off cable by cable, over
            // several traps or sweeps, is a run of link faults (its end ports may still be
            // up).
            let mut all_down = cables
                .iter()
                .all(|l| down.contains(l) || others.contains(l));
            if all_down && !others.is_empty() {
                // Routes that do not go through m.
                let mut avoid = self.mask.clone();
                for &l in &cables {
                    avoid.fail_link(l);
                }
                let routes = node_routes(f, &avoid, self.sm_port);
                let mut reqs = Vec::new();
                let mut who: Vec<(PortId, LinkId)> = Vec::new();
                for &l in &others {
                    let k = f.link(l);
                    let q = if f.port(k.a).node == m { k.b } else { k.a };
                    let Some(r) = routes[f.port(q).node.idx()].clone() else {
                        all_down = false;
                        continue;
                    };
                    let num = f.port(q).num as u32;
                    reqs.push(Req::get(Route::Direct(r), attr_id::PORT_INFO, num));
                    who.push((q, l));
                }
                let got = self.pipe.run(&reqs)?;
                for ((q, l), g) in who.into_iter().zip(got) {
                    match g {
                        Ok(s) => {
                            let pi = PortInfo(s.data);
                            self.port_info[q.idx()] = pi;
                            if !pi.link_up() || pi.port_state() == port_state::DOWN {
                                // Down either way: a fault of its own if m lives.
                                down.push(l);
                                self.mark_dead(l);
                            } else {
                                all_down = false;
                            }
                        }
                        Err(_) => all_down = false,
                    }
                }
            }
            if all_down {
                dead_switches.push(m);
            }
        }
        let mut faults: Vec<Fault> = dead_switches.iter().map(|&m| Fault::Switch(m)).collect();
        for &m in &dead_switches {
            self.mark_switch_dead(m);
        }
        for l in down {
            let k = f.link(l);
            let on_dead = [k.a, k.b]
                .iter()
                .any(|&p| dead_switches.contains(&f.port(p).node));
            if !on_dead && !faults.contains(&Fault::Link(l)) {
                faults.push(Fault::Link(l));
            }
        }
        Ok(faults)
    }

    /// Reads SwitchInfo of every reachable switch; the ports of those with
    /// PortStateChange set; repairs what went down and takes in what came back.
    pub fn light_sweep(&mut self) -> Result<Vec<Event>, SmError> {
        let t0 = self.pipe.now();
        let f = self.f;
        let mut todo: Vec<NodeId> = f
            .switches
            .iter()
            .copied()
            .filter(|&n| !self.mask.node_dead(n))
            .collect();
        let mut read = 0;
        let mut answered = Vec::new();
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
                        answered.push(n);
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
        let links_down = links.len();
        let faults = if links.is_empty() {
            Vec::new()
        } else {
            self.group_faults(links, &answered)?
        };
        let mut events = vec![Event::Sweep {
            switches_read: read,
            changed: changed.iter().map(|&n| f.node(n).name.clone()).collect(),
            links_down,
        }];
        if !faults.is_empty() {
            events.push(self.repair(&faults, t0)?);
        }
        if !self.revived_new.is_empty() {
            events.extend(self.restore(t0)?);
        }
        if !changed.is_empty() {
            self.set_switch_info(Some(&changed))?;
        }
        Ok(events)
    }

    /// Marks switch `n` failed with every cable it has.
    fn mark_switch_dead(&mut self, n: NodeId) {
        let links: Vec<LinkId> = self
            .f
            .node_ports(n)
            .filter_map(|p| self.f.port(p).link)
            .collect();
        for l in links {
            self.mark_dead(l);
        }
        self.mask.fail_node(n);
    }

    /// Sets the mask, the forwarding view and the directed routes from `self.faults`.
    fn rebuild_model(&mut self) {
        self.mask = mask_of(self.f, &self.faults);
        self.plane = Plane::new(self.f, Some(&self.mask));
        self.routes = node_routes(self.f, &self.mask, self.sm_port);
    }

    /// Over RFTR, makes `spare` a copy of `current` again, in the storage of `old` (tables
    /// of the same shape that `current` replaced): no fresh pages. Outside timed parts.
    fn refresh_spare(&mut self, mut old: Routing) {
        if let RepairState::Rftr(_) = self.rep {
            old.clone_from(&self.current);
            self.spare = Some(old);
        }
    }

    /// Applies `faults`, repairs, pushes the difference and waits for it.
    ///
    /// Over RFTR in two phases: first RFTR's own entries (the new paths of the affected
    /// pairs, `Rftr::delta`) over what the switches hold, confirmed by every switch — from
    /// then on every source's path delivers, and this is the repair time; then the
    /// completion for checkers that walk every (source, LID) (entries and SLs for pairs no
    /// source uses, `Rftr::complete_for_checkers`), which carries no traffic.
    pub(crate) fn repair(&mut self, faults: &[Fault], since: Duration) -> Result<Event, SmError> {
        let sent0 = self.pipe.stats.sent;
        let t_compute = self.pipe.now();
        let f = self.f;
        for &x in faults {
            match x {
                Fault::Link(l) => self.mark_dead(l),
                Fault::Switch(n) => self.mark_switch_dead(n),
            }
            self.faults.push(x);
        }
        let (mut affected, mut repaired, mut unsupported, mut union_ok) = (0, 0, 0, true);
        let mut before = None;
        // Over RFTR: the (source, destination) pairs given a new (DLID, SL), told by Report.
        let mut moved: Vec<(u32, u32)> = Vec::new();
        // Over RFTR: the LFT blocks and SL2VL tables its entries touch.
        let (mut touched, mut touched_nodes) = (Vec::new(), Vec::new());
        let mut first = match &mut self.rep {
            RepairState::Rftr(s) => {
                before = Some(
                    self.snapshot
                        .take()
                        .unwrap_or_else(|| Snapshot::of(s.rftr())),
                );
                for &x in faults {
                    let rep = s.apply_unchecked(x);
                    affected += rep.affected_pairs;
                    repaired += rep.repaired_pairs;
                    unsupported += rep.unsupported_pairs;
                    moved.extend_from_slice(&s.rftr().last.sources);
                }
                // RFTR's entries (all of them so far: earlier ones are in place already)
                // over what the switches hold.
                let r = s.rftr();
                let mut t = self.spare.take().unwrap_or_else(|| self.current.clone());
                debug_assert!(
                    t.lft == self.current.lft,
                    "the spare tables are out of step"
                );
                for (&(sw, lid), &(_, new)) in &r.delta.lft {
                    t.lft_of_mut(fabric::SwitchIdx(sw))[lid as usize] = new;
                    touched.push((sw as usize, lft_block(lid) as usize));
                }
                for (&(sw, i, o, sl), &(_, new)) in &r.delta.sl2vl {
                    t.sl2vl.set(f.switches[sw as usize], i, o, sl, new);
                    touched_nodes.push(f.switches[sw as usize]);
                }
                touched.dedup();
                touched_nodes.sort_unstable();
                touched_nodes.dedup();
                if let PathSl::PerPair { stride, sl } = &mut t.path_sl {
                    for (&(src, _), &(dlid, psl)) in &r.delta.sources {
                        sl[src as usize * *stride + dlid as usize] = psl;
                    }
                }
                t
            }
            RepairState::Full(st) => {
                st.routing = st
                    .engine
                    .route(f, &self.mask, &st.opts)
                    .map_err(|e| SmError::Routing(e.to_string()))?;
                self.complete().0
            }
        };
        let compute = self.pipe.now() - t_compute;
        let scope = match self.rep {
            RepairState::Rftr(_) => Scope::Only(&touched, &touched_nodes),
            RepairState::Full(_) => Scope::All,
        };
        let pushed = self.push(&mut first, scope)?;
        let old = std::mem::replace(&mut self.current, first);
        let seconds = (self.pipe.now() - since).as_secs_f64();
        let smps = self.pipe.stats.sent - sent0;
        // The switches hold the new paths: queries that waited get them, and subscribed
        // hosts are told (before the completion and the checks).
        self.serve_requests()?;
        moved.sort_unstable();
        moved.dedup();
        let reports = self.notify(&moved, &end_ports_of(f, faults), &[])?;
        // The repair is in the switches and the hosts know: RFTR's bookkeeping for the next
        // fault (`Rftr::settle`) runs now, outside the time to repair.
        if let RepairState::Rftr(s) = &mut self.rep {
            s.settle();
        }
        // The multicast trees the faults cut, mended; their changed blocks pushed.
        let mft = self.repair_mcast()?;
        // The completion for checkers (RFTR only).
        let t_completion = self.pipe.now();
        let mut completion = Pushed::default();
        let mut uncovered = 0;
        if let RepairState::Rftr(_) = self.rep {
            let (mut full, u) = self.complete();
            uncovered = u;
            completion = self.push(&mut full, Scope::All)?;
            self.current = full;
        }
        let completion_seconds = (self.pipe.now() - t_completion).as_secs_f64();
        let blocks_changed = changed_blocks(f, &old, &self.current);
        self.refresh_spare(old);
        // Verified after the push, outside the timed repair: the tables now in the switches
        // walked and checked, and over RFTR the union of the old walks' surviving prefixes
        // and the new ones (what packets in flight during the migration can meet).
        let report = cdg::check(f, &self.current, Some(&self.mask));
        if let (RepairState::Rftr(s), Some(b)) = (&self.rep, &before) {
            union_ok = check_state(s.rftr(), Some(b)).deadlock_free;
            // What is in use now, for the next fault's check (taken here, outside the timed
            // repair).
            self.snapshot = Some(Snapshot::of(s.rftr()));
        }
        if let RepairState::Full(_) = &self.rep {
            unsupported = report.unreachable_pairs.count;
        }
        let source_updates = match &self.rep {
            RepairState::Rftr(s) => s.rftr().delta.sources.len(),
            RepairState::Full(_) => 0,
        };
        Ok(Event::Repaired {
            repair: self.cfg.repair,
            faults: faults.iter().map(|&x| fault_name(f, x)).collect(),
            seconds,
            compute_seconds: compute.as_secs_f64(),
            lft_blocks: pushed.lft_blocks,
            sl2vl_entries: pushed.sl2vl_entries,
            smps,
            failed_smps: pushed.failed + completion.failed + mft.failed,
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
            reports,
            mft_blocks: mft.blocks,
            deadlock_free: report.deadlock_free && union_ok,
            unreachable_pairs: report.unreachable_pairs.count,
        })
    }

    /// Takes in the failed links found physically up again (`revived_new`), as one step.
    ///
    /// A cable whose fault is one of the SM's link faults is taken in: its ports get their
    /// PortInfo again (an end port its LID, LMC and SM LID), go ARMED then ACTIVE, and the
    /// tables go back to what they would be had the cable never failed: over RFTR the
    /// session restarts from the base tables with the faults that remain
    /// ([`routing::fault::Session::restart_with`]), with `--repair full` the engine routes the
    /// fabric again. Over RFTR, before anything is pushed, the union of the dependencies of
    /// the walks in use now and of the walks after the return must be acyclic (what packets
    /// in flight during the migration can meet); if it is not, nothing is pushed, the cable
    /// stays failed in the SM's model, and its return is deferred: tried again together with
    /// the next cable that comes back (when every cable is back, the return is to the base
    /// tables, whose union with any RFTR state is acyclic). Only the LFT blocks and SL2VL
    /// rows that differ from what the switches hold are pushed, and confirmed.
    ///
    /// A cable of a failed switch is not taken in (the switch stays failed): it is reported
    /// once as `link_up`.
    pub(crate) fn restore(&mut self, since: Duration) -> Result<Vec<Event>, SmError> {
        let f = self.f;
        let found = std::mem::take(&mut self.revived_new);
        let (mut take, leave): (Vec<LinkId>, Vec<LinkId>) = found
            .into_iter()
            .partition(|&l| self.faults.contains(&Fault::Link(l)));
        for l in leave {
            self.revived.push(l);
            self.revived_unreported.push(l);
        }
        if take.is_empty() {
            return Ok(Vec::new());
        }
        // Cables whose return was deferred are tried again with these.
        for l in std::mem::take(&mut self.deferred) {
            if !take.contains(&l) {
                take.push(l);
            }
        }
        let sent0 = self.pipe.stats.sent;
        let old_faults = self.faults.clone();
        self.faults
            .retain(|x| !matches!(x, Fault::Link(l) if take.contains(l)));
        self.rebuild_model();

        // The ports of the cables: read (switch ports) or given their LID again (end ports),
        // then ARMED and ACTIVE with every other port still in INIT.
        let t_ports = self.pipe.now();
        let mut reqs = Vec::new();
        let mut ports = Vec::new();
        for &l in &take {
            let k = f.link(l);
            for p in [k.a, k.b] {
                let port = f.port(p);
                let num = port.num as u32;
                if f.is_switch(port.node) {
                    let Some(r) = self.routes[port.node.idx()].clone() else {
                        continue;
                    };
                    reqs.push(Req::get(Route::Direct(r), attr_id::PORT_INFO, num));
                } else {
                    let Some(r) = self.port_route(p) else {
                        continue;
                    };
                    let mut pi = self.port_info[p.idx()].for_set();
                    pi.set_lid(port.lid);
                    pi.set_lmc(port.lmc);
                    pi.set_master_sm_lid(self.sm_lid);
                    reqs.push(Req::set(Route::Direct(r), attr_id::PORT_INFO, num, pi.0));
                }
                ports.push(p);
            }
        }
        let got = self.pipe.run(&reqs)?;
        let mut failed = self.absorb_port_info(&ports, &got);
        // Only cables with both ends physically up now (a deferred one may have gone).
        let up = |p: PortId| self.port_info[p.idx()].link_up();
        let gone: Vec<LinkId> = take
            .iter()
            .copied()
            .filter(|&l| !(up(f.link(l).a) && up(f.link(l).b)))
            .collect();
        if !gone.is_empty() {
            take.retain(|l| !gone.contains(l));
            self.faults.extend(gone.iter().map(|&l| Fault::Link(l)));
            self.rebuild_model();
            if take.is_empty() {
                return Ok(Vec::new());
            }
        }
        failed += self.activate()?;
        let activate_seconds = (self.pipe.now() - t_ports).as_secs_f64();

        // The tables to return to, and the check of the union before anything is pushed.
        let t_compute = self.pipe.now();
        let mut union_ok = true;
        let mut before = None;
        match &mut self.rep {
            RepairState::Rftr(s) => {
                let b = self
                    .snapshot
                    .take()
                    .unwrap_or_else(|| Snapshot::of(s.rftr()));
                s.restart_with(&self.faults)
                    .map_err(|e| SmError::Routing(e.reason()))?;
                let r = s.rftr();
                union_ok = check_tables(
                    f,
                    &r.mask,
                    &r.routing,
                    &r.selected_pairs(),
                    Some((&b.routing, &b.pairs)),
                )
                .deadlock_free;
                if !union_ok {
                    // Back to the state before: the cable stays failed in the model.
                    s.restart_with(&old_faults)
                        .map_err(|e| SmError::Routing(e.reason()))?;
                }
                before = Some(b);
            }
            RepairState::Full(st) => {
                st.routing = st
                    .engine
                    .route(f, &self.mask, &st.opts)
                    .map_err(|e| SmError::Routing(e.to_string()))?;
            }
        }
        if !union_ok {
            self.faults = old_faults.clone();
            self.rebuild_model();
        }
        let (mut target, uncovered) = self.complete();
        let compute_seconds = (self.pipe.now() - t_compute).as_secs_f64();
        let pushed = self.push(&mut target, Scope::All)?;
        let old = std::mem::replace(&mut self.current, target);
        let seconds = (self.pipe.now() - since).as_secs_f64();
        let smps = self.pipe.stats.sent - sent0;

        // Checked after the push, outside the timed part.
        let blocks_changed = changed_blocks(f, &old, &self.current);
        self.refresh_spare(old);
        let report = cdg::check(f, &self.current, Some(&self.mask));
        let (mut returned, mut off_base) = (0, 0);
        let mut moved_back: Vec<(u32, u32)> = Vec::new();
        if let (RepairState::Rftr(s), Some(b)) = (&self.rep, &before) {
            let r = s.rftr();
            let sl = |t: &Routing, src: u32, dlid: Lid| t.path_sl.get(src as usize, dlid);
            let was: HashMap<(u32, u32), (Lid, u8)> = b
                .pairs
                .iter()
                .map(|&(src, dst, dlid)| ((src, dst), (dlid, sl(&b.routing, src, dlid))))
                .collect();
            // Walked through the tables before (under the mask before: the cable was dead)
            // and now.
            let old_plane = Plane::new(f, Some(&mask_of(f, &old_faults)));
            let (fw_old, fw_new) = (
                Forward::new(f, &old_plane, &b.routing),
                Forward::new(f, &self.plane, &r.routing),
            );
            let path = |fw: &Forward, src: u32, dst: u32, dlid: Lid| {
                let mut ch = Vec::new();
                fw.walk_pair(src, dlid, f.end_ports[dst as usize], |st| {
                    ch.push(st.ch);
                    Control::Continue
                });
                ch
            };
            for (src, dst, dlid) in r.selected_pairs() {
                let now = (dlid, sl(&r.routing, src, dlid));
                let moved = match was.get(&(src, dst)) {
                    Some(&(old_dlid, old_sl)) => {
                        (old_dlid, old_sl) != now
                            || path(&fw_old, src, dst, old_dlid) != path(&fw_new, src, dst, dlid)
                    }
                    None => true,
                };
                if moved {
                    returned += 1;
                    moved_back.push((src, dst));
                }
                let base_lid = f.port(f.end_ports[dst as usize]).lid;
                if now != (base_lid, sl(s.base(), src, base_lid)) {
                    off_base += 1;
                }
            }
            self.snapshot = Some(Snapshot::of(r));
        }
        let mut reports = 0;
        if union_ok {
            let links: Vec<Fault> = take.iter().map(|&l| Fault::Link(l)).collect();
            reports = self.notify(&moved_back, &[], &end_ports_of(f, &links))?;
        } else {
            // Tried again when another cable comes back (the return of every cable at
            // once, to the base, is safe).
            self.deferred = take.clone();
        }
        Ok(vec![Event::LinkRestored {
            repair: self.cfg.repair,
            links: take.iter().map(|&l| link_name(f, l)).collect(),
            taken_in: union_ok,
            seconds,
            activate_seconds,
            compute_seconds,
            lft_blocks: pushed.lft_blocks,
            sl2vl_entries: pushed.sl2vl_entries,
            smps,
            failed_smps: failed + pushed.failed,
            unsent: pushed.unsent,
            blocks_changed,
            returned_pairs: returned,
            pairs_off_base: off_base,
            faults_left: self.faults.len(),
            uncovered_phantoms: uncovered,
            union_deadlock_free: union_ok,
            reports,
            deadlock_free: report.deadlock_free,
            unreachable_pairs: report.unreachable_pairs.count,
        }])
    }
}

/// The end ports that `faults` cut off: an end port on a failed cable, and every end port
/// cabled to a failed switch.
fn end_ports_of(f: &Fabric, faults: &[Fault]) -> Vec<PortId> {
    let mut out = Vec::new();
    let mut cable = |l: LinkId| {
        for p in [f.link(l).a, f.link(l).b] {
            if !f.is_switch(f.port(p).node) {
                out.push(p);
            }
        }
    };
    for &x in faults {
        match x {
            Fault::Link(l) => cable(l),
            Fault::Switch(n) => f
                .node_ports(n)
                .filter_map(|p| f.port(p).link)
                .for_each(&mut cable),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Distinct 64-LID blocks whose entries differ between two tables of one fabric.
fn changed_blocks(f: &Fabric, a: &Routing, b: &Routing) -> u64 {
    f.switch_ids()
        .map(|s| update::lft_block_changes(a.lft_of(s), b.lft_of(s)).count() as u64)
        .sum()
}
