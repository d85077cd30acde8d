//! The baseline RFTR is measured against: full reconfiguration, i.e. the base engine run again
//! on the faulty fabric, with the same delta accounting (changed LFT entries and blocks,
//! pairs whose path changed).

use super::delta::DeltaCounts;
use crate::engines::{Engine, EngineError, RouteOptions};
use crate::forward::{Control, Forward, Hop, Plane, WalkEnd};
use crate::tables::update::lft_block_changes;
use crate::tables::Routing;
use fabric::SwitchIdx;
use fabric::{Fabric, FaultMask, Lid};
use rayon::prelude::*;
use serde::Serialize;

/// Outcome of a full reconfiguration.
#[derive(Clone, Debug)]
pub struct Reconfig {
    pub routing: Routing,
    pub report: ReconfigReport,
}

/// Figures comparable with an RFTR repair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReconfigReport {
    /// (source end port, destination end port) pairs routed after the fault.
    pub routed_pairs: u64,
    /// Pairs with both ends alive that the new tables do not deliver.
    pub unrouted_pairs: u64,
    /// Of those, the pairs with no live path at all (their switches in different components
    /// of the live switch graph): no routing could deliver them.
    pub disconnected_pairs: u64,
    /// Pairs whose switch-level path differs from before (routed before and after).
    pub changed_pairs: u64,
    pub delta: DeltaCounts,
}

/// Runs `engine` on the fabric under `mask` and compares with `old`.
pub fn full_reconfiguration(
    f: &Fabric,
    engine: &dyn Engine,
    opts: &RouteOptions,
    mask: &FaultMask,
    old: &Routing,
) -> Result<Reconfig, EngineError> {
    let routing = engine.route(f, mask, opts)?;
    let report = compare(f, mask, old, &routing);
    Ok(Reconfig { routing, report })
}

/// Delta and path-change figures between two routings of the same fabric.
pub fn compare(f: &Fabric, mask: &FaultMask, old: &Routing, new: &Routing) -> ReconfigReport {
    let ns = f.num_switches();
    // LFT entries and blocks over the LIDs both tables cover, on live switches.
    let stride = old.stride().min(new.stride());
    let (entries, blocks, switches) = (0..ns as u32)
        .into_par_iter()
        .map(SwitchIdx)
        .filter(|&s| !mask.node_dead(f.switch_node(s)))
        .map(|s| {
            let (a, b) = (&old.lft_of(s)[..stride], &new.lft_of(s)[..stride]);
            let (e, blk) = lft_block_changes(a, b).fold((0, 0), |(e, k), (_, n)| (e + n, k + 1));
            (e, blk, usize::from(e > 0))
        })
        .reduce(|| (0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2));
    // Pairs: per source switch and destination end port (all sources on a switch share the
    // path). Per destination, one memoised pass over the switches settles every source.
    let mut ends_on = vec![0u64; ns];
    for &p in &f.end_ports {
        if let Some(r) = f.attached_switch(p) {
            if let Some(s) = f.switch_of(f.port(r).node) {
                ends_on[s.idx()] += 1;
            }
        }
    }
    let (plane_new, plane_old) = (Plane::new(f, Some(mask)), Plane::new(f, None));
    let (fw_new, fw_old) = (
        Forward::new(f, &plane_new, new),
        Forward::new(f, &plane_old, old),
    );
    let (comp, _) = super::switch_components(f, mask);
    let (routed, unrouted, changed, cut) = f
        .end_ports
        .par_iter()
        .map_init(
            || (Trees::new(ns), Trees::new(ns)),
            |(tn, to), &dp| {
                let Some(r) = f.attached_switch(dp) else {
                    return (0, 0, 0, 0);
                };
                let dsw = f.port(r).node;
                if mask.node_dead(dsw) {
                    return (0, 0, 0, 0);
                }
                let lid = f.port(dp).lid;
                let Some(d) = f.switch_of(dsw).map(SwitchIdx::idx) else {
                    return (0, 0, 0, 0);
                };
                tn.reset();
                to.reset();
                let (mut routed, mut unrouted, mut changed, mut cut) = (0u64, 0u64, 0u64, 0u64);
                for (s, &on) in ends_on.iter().enumerate() {
                    if on == 0 || mask.node_dead(f.switches[s]) {
                        continue;
                    }
                    let n = if d == s { on - 1 } else { on };
                    if comp[s] != comp[d] {
                        unrouted += n;
                        cut += n;
                    } else if tn.settle(&fw_new, s, lid, dp, Some(old)) {
                        routed += n;
                        if tn.differs[s] && to.settle(&fw_old, s, lid, dp, None) {
                            changed += n;
                        }
                    } else {
                        unrouted += n;
                    }
                }
                (routed, unrouted, changed, cut)
            },
        )
        .reduce(
            || (0, 0, 0, 0),
            |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2, x.3 + y.3),
        );
    ReconfigReport {
        routed_pairs: routed,
        unrouted_pairs: unrouted,
        disconnected_pairs: cut,
        changed_pairs: changed,
        delta: DeltaCounts {
            lft_entries: entries,
            lft_blocks: blocks,
            switches,
            sl2vl_entries: 0,
            source_updates: 0,
        },
    }
}

const UNSEEN: u8 = 0;
const PENDING: u8 = 1;
const ARRIVES: u8 = 2;
const FAILS: u8 = 3;

/// Memoised outcomes of following one routing toward one LID from every switch: each switch
/// is expanded once per destination, so a whole column of sources costs O(switches).
struct Trees {
    state: Vec<u8>,
    /// Per arriving switch: whether its path differs from the other routing's path from there
    /// (set when [`Trees::settle`] is given that routing).
    differs: Vec<bool>,
    stack: Vec<u32>,
}

impl Trees {
    fn new(ns: usize) -> Self {
        Trees {
            state: vec![UNSEEN; ns],
            differs: vec![false; ns],
            stack: Vec::new(),
        }
    }

    fn reset(&mut self) {
        self.state.fill(UNSEEN);
    }

    /// True when following `fw`'s tables from switch index `s` toward `lid` leaves for end
    /// port `target` over live channels, by the walker's rules (no switch twice). With
    /// `other`, also records per switch whether the path differs from `other`'s path (which
    /// must then be followed for arrival separately).
    fn settle(
        &mut self,
        fw: &Forward<'_>,
        s: usize,
        lid: Lid,
        target: fabric::PortId,
        other: Option<&Routing>,
    ) -> bool {
        if self.state[s] != UNSEEN {
            return self.state[s] == ARRIVES;
        }
        let Trees {
            state,
            differs,
            stack,
        } = self;
        stack.clear();
        state[s] = PENDING;
        stack.push(s as u32);
        // Outcome and "differs" of what follows the last stacked switch.
        let mut tail = (FAILS, false);
        let end = fw.walk_from(&fw.column(lid), s as u32, 0, target, |step| {
            let Hop::Switch { sw, .. } = step.to else {
                return Control::Continue;
            };
            match state[sw as usize] {
                UNSEEN => {
                    state[sw as usize] = PENDING;
                    stack.push(sw);
                    Control::Continue
                }
                ARRIVES => {
                    tail = (ARRIVES, differs[sw as usize]);
                    Control::Stop
                }
                _ => Control::Stop,
            }
        });
        let (result, mut diff) = match end {
            WalkEnd::Delivered { .. } => (ARRIVES, false),
            WalkEnd::Broken(_) => (FAILS, false),
            WalkEnd::Stopped => tail,
        };
        for &v in stack.iter().rev() {
            let v = SwitchIdx(v);
            state[v.idx()] = result;
            if result == ARRIVES {
                if let Some(o) = other {
                    diff |= o.out_port(v, lid) != fw.r.out_port(v, lid);
                }
                differs[v.idx()] = diff;
            }
        }
        result == ARRIVES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::by_name;
    use fabric::{ChannelId, NO_PORT};

    /// Hop-by-hop walk from an end port, the plain way: the channels crossed, or None.
    fn naive(
        f: &Fabric,
        r: &Routing,
        mask: &FaultMask,
        src: fabric::PortId,
        dst: fabric::PortId,
    ) -> Option<Vec<ChannelId>> {
        let lid = f.port(dst).lid;
        let mut node = f.port(f.attached_switch(src)?).node;
        let mut out = Vec::new();
        for _ in 0..=f.num_switches() {
            let port = r.out_port(f.switch_of(node)?, lid);
            if port == NO_PORT || port == 0 || port > f.node(node).nports {
                return None;
            }
            let c = f.out_channel(f.port_id(node, port))?;
            if !mask.channel_alive(f, c) {
                return None;
            }
            out.push(c);
            let far = f.channel_dst(c);
            if far == dst {
                return Some(out);
            }
            node = f.port(far).node;
            if !f.is_switch(node) {
                return None;
            }
        }
        None
    }

    /// The memoised per-destination pass counts exactly what walking every pair does, on
    /// tables that deliver everything and on the base tables under a fault (broken pairs).
    #[test]
    fn compare_counts_match_pairwise_walks() {
        let f = super::super::test_fabric("torus 4x4 hcas=2");
        let engine = by_name("updn").unwrap();
        let opts = RouteOptions::default();
        let none = FaultMask::none(&f);
        let base = engine.route(&f, &none, &opts).unwrap();
        let links = super::super::sweep::switch_links(&f);
        for faults in [&links[..1], &links[3..6]] {
            let mut mask = FaultMask::none(&f);
            for &l in faults {
                mask.fail_link(l);
            }
            let new = engine.route(&f, &mask, &opts).unwrap();
            for (label, tables) in [("rerouted", &new), ("stale", &base)] {
                let rep = compare(&f, &mask, &base, tables);
                let (mut routed, mut unrouted, mut changed) = (0, 0, 0);
                for &s in &f.end_ports {
                    for &d in &f.end_ports {
                        if s == d {
                            continue;
                        }
                        match naive(&f, tables, &mask, s, d) {
                            Some(p) => {
                                routed += 1;
                                if naive(&f, &base, &none, s, d).is_some_and(|q| q != p) {
                                    changed += 1;
                                }
                            }
                            None => unrouted += 1,
                        }
                    }
                }
                assert_eq!(
                    (rep.routed_pairs, rep.unrouted_pairs, rep.changed_pairs),
                    (routed, unrouted, changed),
                    "{label}"
                );
                if label == "stale" {
                    assert!(
                        unrouted > 0 && changed == 0,
                        "stale tables break pairs, change none"
                    );
                } else {
                    assert!(
                        unrouted == 0 && changed > 0,
                        "rerouting delivers all, changes some"
                    );
                }
            }
        }
    }
}
