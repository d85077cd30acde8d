//! The baseline RFTR is measured against: full reconfiguration, i.e. the base engine run again
//! on the faulty fabric, with the same delta accounting (changed LFT entries and blocks,
//! pairs whose path changed).

use super::delta::{DeltaCounts, LFT_BLOCK};
use crate::engines::{Engine, EngineError, RouteOptions};
use crate::tables::Routing;
use fabric::{ChannelId, Fabric, FaultMask, Lid};
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
    /// Pairs whose switch-level path differs from before (routed before and after).
    pub changed_pairs: u64,
    pub delta: DeltaCounts,
}

/// Walks switch-level hops from switch index `s` toward `lid` until the end port `target`;
/// `None` when the walk fails under `mask`.
pub(crate) fn walk_hops(
    f: &Fabric,
    r: &Routing,
    mask: &FaultMask,
    s: usize,
    lid: Lid,
    target: fabric::PortId,
    out: &mut Vec<ChannelId>,
) -> bool {
    out.clear();
    super::verify::follow(f, r, mask, f.switches[s], 0, lid, target, |_, _, _, c| {
        out.push(c)
    })
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
    let (entries, blocks, switches) = (0..ns)
        .into_par_iter()
        .filter(|&s| !mask.node_dead(f.switches[s]))
        .map(|s| {
            let (a, b) = (&old.lft_of(s)[..stride], &new.lft_of(s)[..stride]);
            let mut e = 0usize;
            let mut blk = 0usize;
            for (ca, cb) in a
                .chunks(LFT_BLOCK as usize)
                .zip(b.chunks(LFT_BLOCK as usize))
            {
                let d = ca.iter().zip(cb).filter(|(x, y)| x != y).count();
                e += d;
                blk += usize::from(d > 0);
            }
            (e, blk, usize::from(e > 0))
        })
        .reduce(|| (0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2));
    // Pairs: per source switch and destination end port (all sources on a switch share it).
    let mut ends_on = vec![0u64; ns];
    for &p in &f.end_ports {
        if let Some(r) = f.attached_switch(p) {
            ends_on[f.switch_index[f.port(r).node.idx()] as usize] += 1;
        }
    }
    let none = FaultMask::none(f);
    let (routed, unrouted, changed) = (0..ns)
        .into_par_iter()
        .filter(|&s| ends_on[s] > 0 && !mask.node_dead(f.switches[s]))
        .map(|s| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let (mut routed, mut unrouted, mut changed) = (0u64, 0u64, 0u64);
            for &dp in &f.end_ports {
                let Some(r) = f.attached_switch(dp) else {
                    continue;
                };
                let dsw = f.port(r).node;
                if mask.node_dead(dsw) {
                    continue;
                }
                let n = if f.switch_index[dsw.idx()] as usize == s {
                    ends_on[s] - 1
                } else {
                    ends_on[s]
                };
                let lid = f.port(dp).lid;
                let ok_new = walk_hops(f, new, mask, s, lid, dp, &mut b);
                if ok_new {
                    routed += n;
                    if walk_hops(f, old, &none, s, lid, dp, &mut a) && a != b {
                        changed += n;
                    }
                } else {
                    unrouted += n;
                }
            }
            (routed, unrouted, changed)
        })
        .reduce(|| (0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2));
    ReconfigReport {
        routed_pairs: routed,
        unrouted_pairs: unrouted,
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
