//! Multicast on the live fabric: the groups' spanning trees (`routing::mcast`) programmed
//! as MulticastForwardingTable blocks at subnet up, and mended after each repair with only
//! the blocks that changed pushed; groups joined and left through the SA
//! ([`crate::sa_mcast`]), each change routing that group's tree again.
//!
//! A block is 32 MLIDs × one 16-port position (`mad::attr::mft_modifier`); the SM keeps what
//! the switches hold (`held`) and sends a block only when some entry of it differs.
//!
//! A group routed again after a join or leave is routed alone (`route_groups_with` on that
//! one group under the faults known), with the switch distances kept from the call before
//! while the faults stay the same, and with the other groups' trees counted on the links
//! and roots they use, so that it spreads around them as the groups routed together do.

use crate::live::{Event, Live};
use crate::mlid::MlidPool;
use crate::pipe::Req;
use crate::sa_mcast::{McAnswer, McGroups, McastChange, Plan};
use crate::SmError;
use fabric::{Fabric, FaultMask, PortId};
use mad::attr::{self, PortInfo, MFT_MLIDS};
use mad::sa::{method, sa_status, SaRequest};
use mad::{attr_id, Route, Transport};
use routing::engines::{Engine, RouteOptions};
use routing::mcast::{
    repair_trees, route_groups_with, Group, GroupMft, McastRouting, Mfts, OtherTrees, PortMask,
    TreeCache, TreeRule,
};
use routing::tables::update::{mft_block, mft_block_mlids, Update};
use routing::turn::UpDownRule;
use std::collections::BTreeSet;
use std::time::Duration;

/// The multicast state of the SM: the groups, their trees, what the switches hold, and the
/// SA's table of members.
#[derive(Debug)]
pub struct McastState {
    /// The groups as routed, by MLID.
    groups: Vec<Group>,
    /// The engine's up*/down* rule, when it has one (trees obey it).
    rule: Option<UpDownRule>,
    routing: McastRouting,
    /// What the switches hold.
    pub(crate) held: Mfts,
    /// The SA's groups and members, and the MLID pool.
    table: McGroups,
    /// Joins and leaves served whose blocks the SM has not pushed yet.
    pub(crate) changes: Vec<McastChange>,
    /// Switch distances under the faults of the last routing.
    cache: TreeCache,
}

impl McastState {
    /// Routes `groups` (the permanent groups of `SmConfig::mcast`) on the fault-free fabric;
    /// the SA's groups take their MLIDs from `pool`. `port_info`: every port's PortInfo (by
    /// `PortId`), for the groups' MTU and rate.
    pub fn start(
        f: &Fabric,
        engine: &dyn Engine,
        opts: &RouteOptions,
        mut groups: Vec<Group>,
        pool: MlidPool,
        port_info: &[PortInfo],
    ) -> Result<Self, SmError> {
        let rule = routing::mcast::engine_up_down_rule(f, engine, opts);
        let tree = TreeRule::of(rule.as_ref());
        let mut cache = TreeCache::default();
        let routing = route_groups_with(f, &FaultMask::none(f), &groups, tree, &mut cache, None)
            .map_err(|e| SmError::Routing(format!("multicast: {e}")))?;
        groups.sort_by_key(|g| g.mlid);
        let mut table = McGroups::new(f, pool);
        for g in &groups {
            table.add_permanent(port_info, g);
        }
        Ok(McastState {
            groups,
            rule,
            routing,
            held: Mfts::default(),
            table,
            changes: Vec::new(),
            cache,
        })
    }

    /// The trees now (what the switches should hold).
    pub fn mfts(&self) -> &Mfts {
        &self.routing.mfts
    }

    /// The groups as routed (members that receive are full), by MLID.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The SA's groups and members.
    pub fn table(&self) -> &McGroups {
        &self.table
    }

    /// Mends the trees the faults of `mask` cut.
    fn repair(&mut self, f: &Fabric, mask: &FaultMask) -> Result<(), SmError> {
        let tree = TreeRule::of(self.rule.as_ref());
        repair_trees(f, mask, &mut self.routing, &self.groups, tree)
            .map_err(|e| SmError::Routing(format!("multicast: {e}")))?;
        Ok(())
    }

    /// Serves one MCMemberRecord request from `requester` (see [`crate::sa_mcast`]): a join
    /// or leave routes the group's tree again under `mask` (when its receivers or senders
    /// change) and applies it; a query reads the table. The MFT blocks are the caller's to
    /// push ([`McastState::mfts`] against what the switches hold).
    pub fn serve(
        &mut self,
        f: &Fabric,
        mask: &FaultMask,
        port_info: &[PortInfo],
        req: &SaRequest,
        requester: Option<PortId>,
    ) -> McAnswer {
        let m = req.hdr.method;
        let plan = match m {
            method::SET => self.table.plan_join(f, port_info, req, requester),
            method::DELETE => self.table.plan_leave(f, req, requester),
            method::GET | method::GET_TABLE => {
                return match self.table.query(f, req) {
                    Ok(recs) => McAnswer::table(m, recs),
                    Err(st) => McAnswer::error(st),
                };
            }
            _ => return McAnswer::error(mad::status::ATTR_UNSUPPORTED),
        };
        match plan {
            Ok(plan) => self.apply(f, mask, plan),
            Err(st) => McAnswer::error(st),
        }
    }

    /// Routes the plan's group (when its tree changes), then commits the plan and puts the
    /// tree in place of the old one. A group that cannot be routed is left as it was.
    fn apply(&mut self, f: &Fabric, mask: &FaultMask, plan: Plan) -> McAnswer {
        let routed = match (&plan.group, plan.tree_changes) {
            (_, false) => None,
            (None, true) => Some(None),
            (Some(g), true) => {
                let g = g.routing_group();
                let (load, rooted) = self.others(f, g.mlid);
                let others = OtherTrees {
                    link_load: &load,
                    rooted: &rooted,
                };
                let tree = TreeRule::of(self.rule.as_ref());
                let one = std::slice::from_ref(&g);
                match route_groups_with(f, mask, one, tree, &mut self.cache, Some(others)) {
                    Ok(r) => Some(Some((g, r))),
                    Err(_) => return McAnswer::error(sa_status::NO_RESOURCES),
                }
            }
        };
        let change = McastChange::of(f, &plan);
        let (mlid, record) = (plan.mlid, plan.record);
        self.table.commit(plan);
        if let Some(new) = routed {
            self.replace(f, mlid, new);
        }
        McAnswer {
            status: 0,
            records: vec![record],
            change: Some(change),
        }
    }

    /// The trees of every group but `mlid`: per link the trees using it, per switch the
    /// trees rooted there.
    fn others(&self, f: &Fabric, mlid: u16) -> (Vec<u32>, Vec<u32>) {
        let r = &self.routing;
        let mut load = r.link_load.clone();
        if let Ok(i) = r.mfts.groups.binary_search_by_key(&mlid, |g| g.mlid) {
            for l in tree_links(f, &r.mfts.groups[i]) {
                load[l] = load[l].saturating_sub(1);
            }
        }
        let mut rooted = vec![0u32; f.num_switches()];
        for g in r.groups.iter().filter(|g| g.mlid != mlid) {
            if let Some(s) = g.root {
                rooted[s as usize] += 1;
            }
        }
        (load, rooted)
    }

    /// Puts group `mlid`'s new tree (`None`: the group is gone) in place of its old one.
    fn replace(&mut self, f: &Fabric, mlid: u16, new: Option<(Group, McastRouting)>) {
        let r = &mut self.routing;
        if let Ok(i) = r.mfts.groups.binary_search_by_key(&mlid, |g| g.mlid) {
            let old = r.mfts.groups.remove(i);
            for l in tree_links(f, &old) {
                let load = &mut r.link_load[l];
                *load = load.saturating_sub(1);
            }
        }
        r.groups.retain(|s| s.mlid != mlid);
        let at = self.groups.binary_search_by_key(&mlid, |g| g.mlid);
        if let Ok(i) = at {
            self.groups.remove(i);
        }
        let Some((g, one)) = new else {
            return;
        };
        let at = self.groups.partition_point(|x| x.mlid < mlid);
        self.groups.insert(at, g);
        for (total, add) in r.link_load.iter_mut().zip(&one.link_load) {
            *total += add;
        }
        r.groups.extend(one.groups);
        for gm in one.mfts.groups {
            let at = r.mfts.groups.partition_point(|x| x.mlid < gm.mlid);
            r.mfts.groups.insert(at, gm);
        }
    }
}

/// The links of a group's tree: cables whose ports are in the masks at both ends.
fn tree_links(f: &Fabric, g: &GroupMft) -> Vec<usize> {
    let mut out = Vec::new();
    for &(s, m) in &g.switches {
        let n = f.switches[s as usize];
        for p in m.ports() {
            let pid = f.port_id(n, p);
            let (Some(l), Some(q)) = (f.port(pid).link, f.remote(pid)) else {
                continue;
            };
            let peer = f.port(q).node;
            // Each cable once, from its `a` end.
            if f.link(l).a == pid
                && f.switch_of(peer)
                    .is_some_and(|s| g.mask(s.0).has(f.port(q).num))
            {
                out.push(l.idx());
            }
        }
    }
    out
}

/// The 16-bit mask of `m` at `position` (ports 16·position …).
fn mask16(m: &PortMask, position: usize) -> u16 {
    (m.0[position / 4] >> ((position % 4) * 16)) as u16
}

/// Counts of one MFT push.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MftPush {
    pub(crate) blocks: u64,
    pub(crate) failed: u64,
}

impl<T: Transport> Live<'_, T> {
    /// Sends the MFT blocks of the current trees that differ from what the switches hold
    /// (`all`: every block with a port in it, at subnet up), and waits for every answer.
    pub(crate) fn push_mfts(&mut self, all: bool) -> Result<MftPush, SmError> {
        let Some(mc) = self.mcast.as_ref() else {
            return Ok(MftPush::default());
        };
        let f = self.f;
        let new = mc.mfts();
        let todo: BTreeSet<Update> = if all {
            new.updates(f.num_switches())
        } else {
            mc.held.diff(new).iter().flat_map(|c| c.blocks()).collect()
        };
        let by_switch = new.by_switch(f.num_switches());
        let mut reqs = Vec::with_capacity(todo.len());
        for &u in &todo {
            let Update::Mft {
                sw,
                block,
                position: pos,
            } = u
            else {
                continue;
            };
            let Some(r) = self.routes[f.switches[sw as usize].idx()].clone() else {
                continue;
            };
            let mut masks = [0u16; MFT_MLIDS];
            let mlids = mft_block_mlids(block as usize);
            for &(mlid, m) in &by_switch[sw as usize] {
                let i = mlid as usize;
                if mlids.contains(&i) {
                    masks[i - mlids.start] = mask16(&m, pos as usize);
                }
            }
            reqs.push(Req::set(
                Route::Direct(r),
                attr_id::MFT,
                attr::mft_modifier(block as u32, pos),
                attr::mft_encode(&masks),
            ));
        }
        let got = self.pipe.run(&reqs)?;
        let mut failed = got.iter().filter(|g| g.is_err()).count() as u64;
        if let Some(mc) = self.mcast.as_mut() {
            mc.held = mc.routing.mfts.clone();
        }
        failed += self.set_mft_tops(&by_switch)?;
        Ok(MftPush {
            blocks: reqs.len() as u64,
            failed,
        })
    }

    /// SwitchInfo.MulticastFDBTop on every switch that honours it (its port 0 says so):
    /// the last MLID of the highest MFT block the switch has a port in, or 0xBFFF (below
    /// the multicast range: nothing forwarded) when it is in no tree, as OpenSM's
    /// `use_mfttop` does. Sent only where it differs from what the switch holds; after the
    /// blocks, so that no switch drops a group whose entries are on their way. Returns the
    /// Sets that failed.
    fn set_mft_tops(&mut self, by_switch: &[Vec<(u16, PortMask)>]) -> Result<u64, SmError> {
        let f = self.f;
        let mut sets = Vec::new();
        for (sw, held) in by_switch.iter().enumerate() {
            let n = f.switches[sw];
            let p0 = f.port_id(n, 0);
            if self.port_info[p0.idx()].cap_mask() & attr::cap::HAS_MCAST_FDB_TOP == 0 {
                continue;
            }
            let top = held
                .iter()
                .filter(|(_, m)| !m.is_empty())
                .map(|&(mlid, _)| mft_block_mlids(mft_block(mlid) as usize).end - 1)
                .max()
                .map_or(routing::mcast::MLID_FIRST - 1, |t| t as u16);
            let mut si = self.switch_info[n.idx()];
            if si.mcast_fdb_top() == top {
                continue;
            }
            si.set_mcast_fdb_top(top);
            // write-1-to-clear: a change the light sweep has yet to see stays pending
            si.set_port_state_change(0);
            sets.push((n, si));
        }
        self.send_switch_info(sets)
    }

    /// Reads back the MFT blocks the groups' MLIDs live in from every switch (a take-over),
    /// as what the switches hold, so that only blocks that differ are pushed. Returns the
    /// SMPs sent and those without a good answer (their entries count as empty).
    pub(crate) fn read_mfts(&mut self) -> Result<(u64, u64), SmError> {
        let Some(mc) = self.mcast.as_ref() else {
            return Ok((0, 0));
        };
        let f = self.f;
        let mlids: Vec<u16> = mc.groups.iter().map(|g| g.mlid).collect();
        let blocks: BTreeSet<usize> = mlids.iter().map(|&m| mft_block(m) as usize).collect();
        let mut reqs = Vec::new();
        let mut what = Vec::new();
        for (s, &n) in f.switches.iter().enumerate() {
            let Some(r) = self.routes[n.idx()].clone() else {
                continue;
            };
            for pos in 0..=(f.node(n).nports as usize / 16) {
                for &b in &blocks {
                    reqs.push(Req::get(
                        Route::Direct(r.clone()),
                        attr_id::MFT,
                        attr::mft_modifier(b as u32, pos as u8),
                    ));
                    what.push((s as u32, b, pos));
                }
            }
        }
        let got = self.pipe.run(&reqs)?;
        let mut held: std::collections::BTreeMap<u16, Vec<(u32, PortMask)>> =
            mlids.iter().map(|&m| (m, Vec::new())).collect();
        let mut failed = 0;
        for ((s, b, pos), g) in what.into_iter().zip(got) {
            let Ok(smp) = g else {
                failed += 1;
                continue;
            };
            let masks = attr::mft_decode(&smp.data);
            for (i, &m16) in masks.iter().enumerate() {
                let mlid = (mft_block_mlids(b).start + i) as u16;
                let Some(v) = held.get_mut(&mlid) else {
                    continue;
                };
                if m16 == 0 {
                    continue;
                }
                let e = match v.iter().position(|e| e.0 == s) {
                    Some(k) => &mut v[k].1,
                    None => {
                        v.push((s, PortMask::default()));
                        &mut v.last_mut().expect("just pushed").1
                    }
                };
                e.0[pos / 4] |= (m16 as u64) << ((pos % 4) * 16);
            }
        }
        if let Some(mc) = self.mcast.as_mut() {
            let sl_of = |m: u16| mc.routing.mfts.group(m).map_or(0, |g| g.sl);
            mc.held = Mfts {
                groups: held
                    .into_iter()
                    .map(|(mlid, mut switches)| {
                        switches.sort_by_key(|e| e.0);
                        routing::mcast::GroupMft {
                            mlid,
                            sl: sl_of(mlid),
                            switches,
                        }
                    })
                    .collect(),
            };
        }
        Ok((reqs.len() as u64, failed))
    }

    /// Mends the trees for the faults now in the mask and pushes the blocks that changed.
    pub(crate) fn repair_mcast(&mut self) -> Result<MftPush, SmError> {
        let (f, mask) = (self.f, &self.mask);
        match self.mcast.as_mut() {
            Some(mc) => mc.repair(f, mask)?,
            None => return Ok(MftPush::default()),
        }
        self.push_mfts(false)
    }

    /// Pushes the blocks the SA's joins and leaves changed (served since `t0`) and turns
    /// them into `mcast_join` / `mcast_leave` events for the next `step` to return.
    pub(crate) fn push_mcast_changes(&mut self, t0: Duration) -> Result<(), SmError> {
        let changes = match self.mcast.as_mut() {
            Some(mc) if !mc.changes.is_empty() => std::mem::take(&mut mc.changes),
            _ => return Ok(()),
        };
        let push = self.push_mfts(false)?;
        let seconds = (self.pipe.now().saturating_sub(t0)).as_secs_f64();
        for (i, mut c) in changes.into_iter().enumerate() {
            // One push for every change of the request (there is one per request).
            if i == 0 {
                c.mft_blocks = push.blocks;
                c.failed_smps = push.failed;
            }
            c.seconds = seconds;
            self.sa_events.push(if c.join {
                Event::McastJoin(c)
            } else {
                Event::McastLeave(c)
            });
        }
        Ok(())
    }

    /// Starts the multicast state without `--mcast` groups when a host first asks the SA
    /// about multicast (the engine's rule, the MLID pool of the switches' MFT capacity).
    /// Leaves it unset when the engine's rule cannot be had; the SA then answers as without
    /// groups.
    pub(crate) fn ensure_mcast(&mut self) {
        if self.mcast.is_some() {
            return;
        }
        let (engine, opts) = match &self.rep {
            crate::live::RepairState::Rftr(s) => (s.engine(), s.options().clone()),
            crate::live::RepairState::Full(st) => (st.engine, st.opts.clone()),
        };
        self.mcast = McastState::start(
            self.f,
            engine,
            &opts,
            Vec::new(),
            self.mlid_pool(),
            &self.port_info,
        )
        .ok();
    }

    /// The MLID pool: 0xC000 up to what every switch's MFT holds.
    pub(crate) fn mlid_pool(&self) -> MlidPool {
        MlidPool::for_caps(
            self.f
                .switches
                .iter()
                .filter_map(|n| self.switch_info.get(n.idx()))
                .map(|si| si.mcast_fdb_cap()),
        )
    }
}
