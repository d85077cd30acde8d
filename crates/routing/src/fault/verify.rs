//! Independent verification of an RFTR state from its tables: every selected
//! (source end port, DLID, SL) is walked through the LFTs and SL2VL tables, and the channel
//! dependency graph over (channel, VL) of those walks — optionally together with the
//! surviving prefixes of the walks in use before the last fault (the migration union, walked
//! through the tables of a [`Snapshot`] taken before it) — is searched for cycles with the
//! checker's SCC routine.
//!
//! Walks are memoised per (DLID, SL): from a given (channel, VL) the rest of a walk is fixed
//! by the tables, so each (channel, VL) vertex is expanded once per (DLID, SL) and every pair
//! still gets its own arrival verdict. Nothing here reads RFTR's path store.

use super::rftr::Rftr;
use crate::cdg::cyclic_sccs;
use crate::tables::{Routing, NUM_SLS};
use fabric::{ChannelId, Fabric, FaultMask, Lid, NodeId, NO_PORT};
use serde::Serialize;

/// Verdict on one state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SelectedCheck {
    /// Selected pairs walked.
    pub pairs: u64,
    /// Selected pairs whose walk does not arrive (must be 0).
    pub undelivered: u64,
    /// Largest VL seen on an inter-switch hop, plus one.
    pub vls_used: u8,
    /// Cyclic strongly connected components in the dependency graph.
    pub cyclic_sccs: usize,
    pub deadlock_free: bool,
}

/// Follows the LFTs toward `dlid` from switch node `node` (entered on port `inp`) until the
/// packet leaves for end port `target`. `hop(switch, in port, out port, channel)` sees every
/// inter-switch hop. True when it arrives over live channels within the switch count.
#[allow(clippy::too_many_arguments)]
pub(crate) fn follow(
    f: &Fabric,
    r: &Routing,
    mask: &FaultMask,
    mut node: fabric::NodeId,
    mut inp: u8,
    dlid: Lid,
    target: fabric::PortId,
    mut hop: impl FnMut(fabric::NodeId, u8, u8, ChannelId),
) -> bool {
    for _ in 0..=f.num_switches() {
        let s = f.switch_index[node.idx()] as usize;
        let port = r.out_port(s, dlid);
        if port == NO_PORT || port == 0 || port > f.node(node).nports {
            return false;
        }
        let Some(c) = f.out_channel(f.port_id(node, port)) else {
            return false;
        };
        if !mask.channel_alive(f, c) {
            return false;
        }
        let far = f.channel_dst(c);
        if far == target {
            return true;
        }
        let nn = f.port(far).node;
        if !f.is_switch(nn) {
            return false;
        }
        hop(node, inp, port, c);
        node = nn;
        inp = f.port(far).num;
    }
    false
}

/// What was in use before a fault: the tables and every selected
/// (source end port, destination end port, DLID).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub routing: Routing,
    pub pairs: Vec<(u32, u32, Lid)>,
}

impl Snapshot {
    pub fn of(r: &Rftr<'_>) -> Self {
        Snapshot {
            routing: r.routing.clone(),
            pairs: r.selected_pairs(),
        }
    }
}

const PENDING: u8 = 0;
const ARRIVES: u8 = 1;
const FAILS: u8 = 2;

/// Memoised table walker: stamps per (channel, VL) vertex record the (DLID, SL) group that
/// expanded it and the outcome from there.
struct Walker<'a> {
    f: &'a Fabric,
    /// Per channel: alive under the mask.
    alive: Vec<bool>,
    /// Per end port: the switch it hangs off and the port there (None if not on a switch).
    entry: Vec<Option<(NodeId, u8)>>,
    stamp: Vec<u32>,
    status: Vec<u8>,
    stack: Vec<u32>,
    edges: Vec<(u32, u32)>,
    vmax: u8,
}

impl<'a> Walker<'a> {
    fn new(f: &'a Fabric, mask: &'a FaultMask) -> Self {
        let nv = f.links.len() * 2 * NUM_SLS;
        Walker {
            f,
            alive: (0..nv as u32 / NUM_SLS as u32)
                .map(|c| mask.channel_alive(f, ChannelId(c)))
                .collect(),
            entry: f
                .end_ports
                .iter()
                .map(|&p| {
                    f.attached_switch(p)
                        .map(|q| (f.port(q).node, f.port(q).num))
                })
                .collect(),
            stamp: vec![0; nv],
            status: vec![FAILS; nv],
            stack: Vec::new(),
            edges: Vec::new(),
            vmax: 0,
        }
    }

    /// Walks every pair through `r`; adds each newly expanded vertex's dependency edge. With
    /// `old`, walks stop silently at the first dead channel (surviving prefixes) and `salt`
    /// keeps their groups apart from the current state's. Returns the pairs that do not arrive.
    fn walk_all(&mut self, r: &Routing, pairs: &[(u32, u32, Lid)], salt: u32) -> u64 {
        let f = self.f;
        let mut bad = 0u64;
        // Group by (DLID, SL) so that the memo of one group is complete before the next.
        let mut order: Vec<(u32, u32, u32)> = pairs
            .iter()
            .map(|&(src, dst, dlid)| {
                let sl = r.path_sl.get(src as usize, dlid);
                ((dlid as u32) * NUM_SLS as u32 + sl as u32, src, dst)
            })
            .collect();
        let kmax = order.iter().map(|o| o.0 as usize + 1).max().unwrap_or(0);
        if kmax <= 8 * order.len() + 1024 {
            // Counting sort on the key: linear, and keys are dense enough.
            let mut at = vec![0u32; kmax + 1];
            for o in &order {
                at[o.0 as usize + 1] += 1;
            }
            for k in 0..kmax {
                at[k + 1] += at[k];
            }
            let mut sorted = vec![(0u32, 0u32, 0u32); order.len()];
            for o in &order {
                let slot = &mut at[o.0 as usize];
                sorted[*slot as usize] = *o;
                *slot += 1;
            }
            order = sorted;
        } else {
            order.sort_unstable();
        }
        for (key, src, dst) in order {
            let dlid = (key / NUM_SLS as u32) as Lid;
            let sl = (key % NUM_SLS as u32) as u8;
            let group = salt + key + 1;
            let Some((mut node, mut inp)) = self.entry[src as usize] else {
                bad += 1;
                continue;
            };
            let target = f.end_ports[dst as usize];
            let mut prev = u32::MAX;
            self.stack.clear();
            let mut result = FAILS;
            for _ in 0..=f.num_switches() {
                let s = f.switch_index[node.idx()] as usize;
                let port = r.out_port(s, dlid);
                if port == NO_PORT || port == 0 || port > f.node(node).nports {
                    break;
                }
                let Some(c) = f.out_channel(f.port_id(node, port)) else {
                    break;
                };
                if !self.alive[c.idx()] {
                    break;
                }
                let far = f.channel_dst(c);
                if far == target {
                    result = ARRIVES;
                    break;
                }
                let nn = f.port(far).node;
                if !f.is_switch(nn) {
                    break;
                }
                let vl = r.sl2vl.vl(node, inp, port, sl);
                self.vmax = self.vmax.max(vl + 1);
                let v = (c.idx() * NUM_SLS + vl as usize) as u32;
                if prev != u32::MAX {
                    self.edges.push((prev, v));
                }
                if self.stamp[v as usize] == group {
                    // Known from here on (or a loop back into this walk: PENDING).
                    result = self.status[v as usize];
                    if result == PENDING {
                        result = FAILS;
                    }
                    break;
                }
                self.stamp[v as usize] = group;
                self.status[v as usize] = PENDING;
                self.stack.push(v);
                prev = v;
                node = nn;
                inp = f.port(far).num;
            }
            for &v in &self.stack {
                self.status[v as usize] = result;
            }
            if result != ARRIVES {
                bad += 1;
            }
        }
        bad
    }
}

/// Checks the current state of `r`: every selected pair arrives, and the dependency graph of
/// its walks — with `before`, together with the surviving prefixes of the walks selected
/// before the last fault — is acyclic.
pub fn check_state(r: &Rftr<'_>, before: Option<&Snapshot>) -> SelectedCheck {
    check_tables(
        r.fabric(),
        &r.mask,
        &r.routing,
        &r.selected_pairs(),
        before.map(|b| (&b.routing, &b.pairs[..])),
    )
}

/// Selected pairs: (source end port, destination end port, DLID).
pub type Pairs = [(u32, u32, Lid)];

/// [`check_state`] on plain tables: `pairs` walked through `routing` under `mask`, plus the
/// surviving prefixes of `before`'s pairs walked through its tables.
pub fn check_tables(
    f: &Fabric,
    mask: &FaultMask,
    routing: &Routing,
    pairs: &Pairs,
    before: Option<(&Routing, &Pairs)>,
) -> SelectedCheck {
    let mut w = Walker::new(f, mask);
    let undelivered = w.walk_all(routing, pairs, 0);
    if let Some((br, bp)) = before {
        w.walk_all(br, bp, 1 << 30);
    }
    let nv = f.links.len() * 2 * NUM_SLS;
    let mut edges = std::mem::take(&mut w.edges);
    edges.sort_unstable();
    edges.dedup();
    let mut offsets = vec![0usize; nv + 1];
    for &(a, _) in &edges {
        offsets[a as usize + 1] += 1;
    }
    for i in 0..nv {
        offsets[i + 1] += offsets[i];
    }
    let targets: Vec<u32> = edges.iter().map(|&(_, b)| b).collect();
    let cyclic = cyclic_sccs(nv, &offsets, &targets).len();
    SelectedCheck {
        pairs: pairs.len() as u64,
        undelivered,
        vls_used: w.vmax,
        cyclic_sccs: cyclic,
        deadlock_free: cyclic == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{by_name, RouteOptions};
    use fabric::gen::TopoSpec;

    fn all_pairs(f: &Fabric) -> Vec<(u32, u32, Lid)> {
        let n = f.end_ports.len() as u32;
        (0..n)
            .flat_map(|s| (0..n).filter(move |&d| d != s).map(move |d| (s, d)))
            .map(|(s, d)| (s, d, f.port(f.end_ports[d as usize]).lid))
            .collect()
    }

    /// The memoised walker agrees with the channel-dependency checker: minhop on a torus has
    /// credit loops, updn has none, and every pair arrives in both; with a failed link the
    /// broken pairs are counted and the old tables' surviving prefixes still add edges.
    #[test]
    fn memoised_walks_agree_with_the_checker() {
        let f = "torus 4x4 hcas=2"
            .parse::<TopoSpec>()
            .unwrap()
            .generate()
            .unwrap();
        let none = FaultMask::none(&f);
        let pairs = all_pairs(&f);
        for (engine, free) in [("minhop", false), ("updn", true)] {
            let r = by_name(engine)
                .unwrap()
                .route(&f, &none, &RouteOptions::default())
                .unwrap();
            let c = check_tables(&f, &none, &r, &pairs, None);
            assert_eq!(c.undelivered, 0, "{engine}");
            assert_eq!(c.deadlock_free, free, "{engine}");
            assert_eq!(
                crate::cdg::check(&f, &r, None).deadlock_free,
                free,
                "{engine}: checker"
            );
            let mut mask = FaultMask::none(&f);
            mask.fail_link(super::super::sweep::switch_links(&f)[0]);
            let c = check_tables(&f, &mask, &r, &pairs, None);
            assert!(
                c.undelivered > 0,
                "{engine}: a failed link breaks some pairs"
            );
            let u = check_tables(&f, &mask, &r, &pairs, Some((&r, &pairs)));
            assert_eq!(u.undelivered, c.undelivered);
        }
    }
}
