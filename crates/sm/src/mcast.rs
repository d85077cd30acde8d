//! Multicast on the live fabric: the groups' spanning trees (`routing::mcast`) programmed
//! as MulticastForwardingTable blocks at subnet up, and mended after each repair with only
//! the blocks that changed pushed.
//!
//! A block is 32 MLIDs × one 16-port position (`mad::attr::mft_modifier`); the SM keeps what
//! the switches hold (`held`) and sends a block only when some entry of it differs.

use crate::live::Live;
use crate::pipe::Req;
use crate::SmError;
use fabric::{Fabric, FaultMask};
use mad::attr::{self, MFT_MLIDS};
use mad::{attr_id, Route, Transport};
use routing::engines::{Engine, RouteOptions};
use routing::mcast::{
    repair_trees, route_groups, Group, McastRouting, Mfts, PortMask, TreeRule, MLID_FIRST,
};
use routing::turn::UpDownRule;
use std::collections::BTreeSet;

/// The multicast state of the SM.
#[derive(Debug)]
pub(crate) struct McastState {
    groups: Vec<Group>,
    /// The engine's up*/down* rule, when it has one (trees obey it).
    rule: Option<UpDownRule>,
    routing: McastRouting,
    /// What the switches hold.
    pub(crate) held: Mfts,
}

impl McastState {
    /// Routes `groups` on the fault-free fabric.
    pub(crate) fn start(
        f: &Fabric,
        engine: &dyn Engine,
        opts: &RouteOptions,
        groups: Vec<Group>,
    ) -> Result<Self, SmError> {
        let rule = routing::mcast::engine_up_down_rule(f, engine, opts);
        let tree = rule.as_ref().map_or(TreeRule::Shortest, TreeRule::UpDown);
        let routing = route_groups(f, &FaultMask::none(f), &groups, tree)
            .map_err(|e| SmError::Routing(format!("multicast: {e}")))?;
        Ok(McastState {
            groups,
            rule,
            routing,
            held: Mfts::default(),
        })
    }

    /// The trees now (what the switches should hold).
    pub(crate) fn mfts(&self) -> &Mfts {
        &self.routing.mfts
    }

    /// Mends the trees the faults of `mask` cut.
    fn repair(&mut self, f: &Fabric, mask: &FaultMask) -> Result<(), SmError> {
        let tree = self
            .rule
            .as_ref()
            .map_or(TreeRule::Shortest, TreeRule::UpDown);
        repair_trees(f, mask, &mut self.routing, &self.groups, tree)
            .map_err(|e| SmError::Routing(format!("multicast: {e}")))?;
        Ok(())
    }
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
        let todo: BTreeSet<(u32, usize, usize)> = if all {
            let mut s = BTreeSet::new();
            for g in &new.groups {
                let block = (g.mlid - MLID_FIRST) as usize / MFT_MLIDS;
                for &(sw, m) in &g.switches {
                    for p in m.ports() {
                        s.insert((sw, block, p as usize / 16));
                    }
                }
            }
            s
        } else {
            mc.held.diff(new).iter().flat_map(|c| c.blocks()).collect()
        };
        let by_switch = new.by_switch(f.num_switches());
        let mut reqs = Vec::with_capacity(todo.len());
        for &(sw, block, pos) in &todo {
            let Some(r) = self.routes[f.switches[sw as usize].idx()].clone() else {
                continue;
            };
            let mut masks = [0u16; MFT_MLIDS];
            let first = MLID_FIRST as usize + block * MFT_MLIDS;
            for &(mlid, m) in &by_switch[sw as usize] {
                let i = mlid as usize;
                if (first..first + MFT_MLIDS).contains(&i) {
                    masks[i - first] = mask16(&m, pos);
                }
            }
            reqs.push(Req::set(
                Route::Direct(r),
                attr_id::MFT,
                attr::mft_modifier(block as u32, pos as u8),
                attr::mft_encode(&masks),
            ));
        }
        let got = self.pipe.run(&reqs)?;
        let failed = got.iter().filter(|g| g.is_err()).count() as u64;
        if let Some(mc) = self.mcast.as_mut() {
            mc.held = mc.routing.mfts.clone();
        }
        Ok(MftPush {
            blocks: reqs.len() as u64,
            failed,
        })
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
        let blocks: BTreeSet<usize> = mlids
            .iter()
            .map(|&m| (m - MLID_FIRST) as usize / MFT_MLIDS)
            .collect();
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
                let mlid = (MLID_FIRST as usize + b * MFT_MLIDS + i) as u16;
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
}
