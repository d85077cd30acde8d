//! An SL and a VL for multicast. A tree's own dependencies never close a cycle (a closed
//! walk in a tree must turn back on itself, and a switch never sends a packet back where it
//! came from), so multicast on an SL that maps to a VL no unicast route uses cannot take
//! part in a credit loop, whatever the unicast engine; where every VL of the budget carries
//! unicast (dfsssp spreads over all of them), one whose unicast layer stays acyclic with the
//! trees added will do. The caller tries [`candidate_vls`] in order with [`map_sl`].

use crate::tables::{PathSl, Routing, NUM_DATA_VLS};
use fabric::{Fabric, NodeId};

/// SLs the unicast paths carry (bit i = SL i).
pub fn sls_used(r: &Routing) -> u16 {
    let mut m = 0u16;
    match &r.path_sl {
        PathSl::Uniform(s) => m |= 1 << (s & 15),
        PathSl::PerDest(v) => v.iter().for_each(|&s| m |= 1 << (s & 15)),
        PathSl::PerPair { sl, .. } => sl.iter().for_each(|&s| m |= 1 << (s & 15)),
    }
    m
}

/// VLs a unicast route can take: every node's SL2VL entries for the SLs in use.
pub fn vls_used(f: &Fabric, r: &Routing) -> u16 {
    let sls = sls_used(r);
    let mut m = 0u16;
    for (i, n) in f.nodes.iter().enumerate() {
        let node = NodeId(i as u32);
        for sl in (0..16u8).filter(|&s| sls >> s & 1 == 1) {
            if r.sl2vl.is_identity(node) {
                m |= 1 << (sl % NUM_DATA_VLS);
                continue;
            }
            for inp in 0..=n.nports {
                for out in 0..=n.nports {
                    m |= 1 << (r.sl2vl.vl(node, inp, out, sl) & 15);
                }
            }
        }
    }
    m
}

/// The VLs below `max_vls` to try for multicast, free ones first, then the used ones.
pub fn candidate_vls(f: &Fabric, r: &Routing, max_vls: u8) -> Vec<u8> {
    let used = vls_used(f, r);
    let limit = max_vls.min(NUM_DATA_VLS);
    let (free, busy): (Vec<u8>, Vec<u8>) = (0..limit).partition(|&v| used >> v & 1 == 0);
    free.into_iter().chain(busy).collect()
}

/// An SL no unicast path uses for multicast on `vl`: `vl` itself when free (identity tables
/// then need no change), else the lowest free one.
pub fn free_sl(r: &Routing, vl: u8) -> Option<u8> {
    let used = sls_used(r);
    if vl < NUM_DATA_VLS && used >> vl & 1 == 0 {
        return Some(vl);
    }
    (0..NUM_DATA_VLS).find(|&s| used >> s & 1 == 0)
}

/// Maps `sl` to `vl` on every port pair of every node (nodes whose identity table already
/// does are left as they are).
pub fn map_sl(f: &Fabric, r: &mut Routing, sl: u8, vl: u8) {
    for (i, n) in f.nodes.iter().enumerate() {
        let node = NodeId(i as u32);
        if r.sl2vl.is_identity(node) && sl % NUM_DATA_VLS == vl {
            continue;
        }
        for inp in 0..=n.nports {
            for out in 0..=n.nports {
                r.sl2vl.set(node, inp, out, sl, vl);
            }
        }
    }
}
