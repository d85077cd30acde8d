//! Repairing multicast trees after faults: only the trees a fault cuts change, and in them only
//! what the cut needs.
//!
//! Per group whose tree lost a switch or a cable (its own or a member's): the surviving tree
//! cables (both ends' masks name them, the cable and both switches alive) fall into pieces.
//! The piece holding the root stays; every other piece that still serves a member is joined
//! to it again by the shortest live branch through switches outside the tree, so no loop can
//! form — under an up*/down* rule only from the piece's top and only up, so the tree stays one
//! whose every path is up*/down*. Pieces that serve no member, and branches left leading
//! nowhere, are pruned. A group whose root died, or a piece that cannot be joined, gets a new
//! tree routed from scratch. The masks are then rebuilt and compared with the old ones.

use super::tree::{route_groups, McastRouting, TreeRule};
use super::{Group, GroupMft, PortMask};
use crate::engines::EngineError;
use crate::tables::Update;
use fabric::{Fabric, FaultMask};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What [`repair_trees`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TreeRepair {
    /// Groups whose tree a fault cut.
    pub groups_cut: usize,
    /// Of those, groups routed again from scratch (root lost, or a piece no branch joins).
    pub groups_rebuilt: usize,
    /// (switch, MLID) masks that changed.
    pub entries_changed: usize,
    /// MFT blocks to push: (switch, block of 32 MLIDs, position of 16 ports) with a change.
    pub mft_blocks: usize,
    /// Rebuilt groups that got a shortest tree for want of an up*/down* one.
    pub not_up_down: usize,
}

/// A tree cable: (switch, port) — (switch, port).
type Edge = (u32, u8, u32, u8);

/// Repairs the trees of `mc` for the faults in `mask` (cumulative), in place.
pub fn repair_trees(
    f: &Fabric,
    mask: &FaultMask,
    mc: &mut McastRouting,
    groups: &[Group],
    rule: TreeRule<'_>,
) -> Result<TreeRepair, EngineError> {
    let mut out = TreeRepair::default();
    let mut blocks: BTreeSet<Update> = BTreeSet::new();
    let sw_alive = |s: u32| !mask.node_dead(f.switches[s as usize]);
    for g in groups {
        let Some(gi) = mc.mfts.groups.iter().position(|e| e.mlid == g.mlid) else {
            continue;
        };
        let old = mc.mfts.groups[gi].clone();
        let root = mc
            .groups
            .iter()
            .find(|s| s.mlid == g.mlid)
            .and_then(|s| s.root);
        let edges = tree_edges(f, &old);
        let cut = old.switches.iter().any(|&(s, m)| {
            !sw_alive(s)
                || m.ports()
                    .filter(|&p| p != 0)
                    .any(|p| !mask.port_link_alive(f, f.port_id(f.switches[s as usize], p)))
        });
        if !cut {
            continue;
        }
        out.groups_cut += 1;
        // Members still up: switch -> (receiving ports, whether some member sends there).
        let mut need: BTreeMap<u32, (Vec<u8>, bool)> = BTreeMap::new();
        for m in &g.members {
            let p = m.port;
            if !mask.port_link_alive(f, p) {
                continue;
            }
            let Some(q) = f.remote(p) else { continue };
            let n = f.port(q).node;
            let (Some(s), false) = (f.switch_of(n), mask.node_dead(n)) else {
                continue;
            };
            let e = need.entry(s.0).or_default();
            e.1 = true;
            if m.full {
                e.0.push(f.port(q).num);
            }
        }
        let live: Vec<Edge> = edges
            .into_iter()
            .filter(|&(s, p, t, _)| {
                sw_alive(s)
                    && sw_alive(t)
                    && mask.port_link_alive(f, f.port_id(f.switches[s as usize], p))
            })
            .collect();
        let joined = match root.filter(|&r| sw_alive(r)) {
            Some(r) => rejoin(f, mask, r, live, &need, rule),
            None => None,
        };
        let new_entry = match joined {
            Some(edges) => masks_of(g, &old, &edges, &need),
            None => {
                out.groups_rebuilt += 1;
                let one = route_groups(f, mask, std::slice::from_ref(g), rule)?;
                out.not_up_down += one.not_up_down;
                if let Some(st) = mc.groups.iter_mut().find(|s| s.mlid == g.mlid) {
                    *st = one.groups[0].clone();
                }
                one.mfts.groups.into_iter().next().unwrap_or_default()
            }
        };
        out.entries_changed += changes(&old, &new_entry, &mut blocks);
        // Link loads follow the trees.
        for (s, p, _, _) in tree_edges(f, &old) {
            if let Some(c) = f.out_channel(f.port_id(f.switches[s as usize], p)) {
                let l = &mut mc.link_load[c.link().idx()];
                *l = l.saturating_sub(1);
            }
        }
        for (s, p, _, _) in tree_edges(f, &new_entry) {
            if let Some(c) = f.out_channel(f.port_id(f.switches[s as usize], p)) {
                mc.link_load[c.link().idx()] += 1;
            }
        }
        mc.mfts.groups[gi] = new_entry;
    }
    out.mft_blocks = blocks.len();
    Ok(out)
}

/// The tree cables of an entry, each once (from its lower switch index).
fn tree_edges(f: &Fabric, e: &GroupMft) -> Vec<Edge> {
    let mut v = Vec::new();
    for &(s, m) in &e.switches {
        let node = f.switches[s as usize];
        for p in m.ports().filter(|&p| p != 0 && p <= f.node(node).nports) {
            let Some(q) = f.remote(f.port_id(node, p)) else {
                continue;
            };
            let qn = f.port(q).node;
            let Some(t) = f.switch_of(qn).map(|t| t.0) else {
                continue;
            };
            if s < t && e.mask(t).has(f.port(q).num) {
                v.push((s, p, t, f.port(q).num));
            }
        }
    }
    v
}

/// The surviving cables plus branches joining every piece that serves a member to the
/// root's piece; `None` when some piece cannot be joined.
fn rejoin(
    f: &Fabric,
    mask: &FaultMask,
    root: u32,
    mut edges: Vec<Edge>,
    need: &BTreeMap<u32, (Vec<u8>, bool)>,
    rule: TreeRule<'_>,
) -> Option<Vec<Edge>> {
    let n = f.num_switches();
    loop {
        // Pieces: component id per switch in the tree; the root's is `main`. Join the piece
        // of the lowest-index member switch outside it, until there is none.
        let comp = components(n, root, &edges, need);
        let main = comp[root as usize];
        let Some(&outside) = need.keys().find(|&&s| comp[s as usize] != main) else {
            return Some(edges);
        };
        let piece = comp[outside as usize];
        let in_piece: Vec<u32> = (0..n as u32)
            .filter(|&s| comp[s as usize] == piece)
            .collect();
        let starts: Vec<u32> = match rule {
            TreeRule::Shortest => in_piece,
            // Only its top climbs: the switch of the piece with no piece cable going up.
            TreeRule::UpDown(r) => {
                let top = in_piece.iter().copied().find(|&s| {
                    !edges.iter().any(|&(a, pa, b, pb)| {
                        let port = if a == s {
                            pa
                        } else if b == s {
                            pb
                        } else {
                            return false;
                        };
                        f.out_channel(f.port_id(f.switches[s as usize], port))
                            .is_some_and(|c| r.is_up(c))
                    })
                })?;
                vec![top]
            }
        };
        edges.extend(branch(f, mask, &starts, &comp, main, rule)?);
    }
}

/// Component ids over the tree cables (`u32::MAX`: not in the tree); the root and every
/// member switch are in the tree.
fn components(
    n: usize,
    root: u32,
    edges: &[Edge],
    need: &BTreeMap<u32, (Vec<u8>, bool)>,
) -> Vec<u32> {
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut inside = vec![false; n];
    inside[root as usize] = true;
    for &s in need.keys() {
        inside[s as usize] = true;
    }
    for &(a, _, b, _) in edges {
        adj[a as usize].push(b);
        adj[b as usize].push(a);
        inside[a as usize] = true;
        inside[b as usize] = true;
    }
    let mut comp = vec![u32::MAX; n];
    let mut next = 0;
    for s in 0..n {
        if !inside[s] || comp[s] != u32::MAX {
            continue;
        }
        let mut q = VecDeque::from([s]);
        comp[s] = next;
        while let Some(u) = q.pop_front() {
            for &v in &adj[u] {
                if comp[v as usize] == u32::MAX {
                    comp[v as usize] = next;
                    q.push_back(v as usize);
                }
            }
        }
        next += 1;
    }
    comp
}

/// The shortest live branch from `starts` to a switch of piece `main`, through switches in
/// no piece (under an up*/down* rule: up channels only).
fn branch(
    f: &Fabric,
    mask: &FaultMask,
    starts: &[u32],
    comp: &[u32],
    main: u32,
    rule: TreeRule<'_>,
) -> Option<Vec<Edge>> {
    let n = f.num_switches();
    let mut prev: Vec<Option<(u32, u8, u8)>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut q = VecDeque::new();
    for &s in starts {
        seen[s as usize] = true;
        q.push_back(s);
    }
    while let Some(u) = q.pop_front() {
        let node = f.switches[u as usize];
        for p in 1..=f.node(node).nports {
            let port = f.port_id(node, p);
            let Some(c) = f.out_channel(port) else {
                continue;
            };
            if !mask.channel_alive(f, c) {
                continue;
            }
            if let TreeRule::UpDown(r) = rule {
                if !r.is_up(c) {
                    continue;
                }
            }
            let qp = f.channel_dst(c);
            let qn = f.port(qp).node;
            let Some(v) = f.switch_of(qn).map(|v| v.0) else {
                continue;
            };
            if seen[v as usize] {
                continue;
            }
            let cv = comp[v as usize];
            if cv != u32::MAX && cv != main {
                continue; // another piece: joined later, never crossed
            }
            seen[v as usize] = true;
            prev[v as usize] = Some((u, p, f.port(qp).num));
            if cv == main {
                // Walk back to a start.
                let mut path = Vec::new();
                let mut w = v;
                while let Some((u, pu, pw)) = prev[w as usize] {
                    path.push(if u < w {
                        (u, pu, w, pw)
                    } else {
                        (w, pw, u, pu)
                    });
                    w = u;
                }
                return Some(path);
            }
            q.push_back(v);
        }
    }
    None
}

/// Masks from the tree cables and the members' ports, with branches that serve nothing
/// pruned (a switch with one cable, no member, not the root).
fn masks_of(
    g: &Group,
    old: &GroupMft,
    edges: &[Edge],
    need: &BTreeMap<u32, (Vec<u8>, bool)>,
) -> GroupMft {
    let mut deg: BTreeMap<u32, Vec<(u8, u32)>> = BTreeMap::new();
    for &(a, pa, b, pb) in edges {
        deg.entry(a).or_default().push((pa, b));
        deg.entry(b).or_default().push((pb, a));
    }
    let mut gone: BTreeSet<u32> = BTreeSet::new();
    loop {
        let leaf = deg.iter().find(|(s, ns)| {
            !gone.contains(s)
                && !need.contains_key(s)
                && ns.iter().filter(|(_, t)| !gone.contains(t)).count() <= 1
        });
        let Some((&s, _)) = leaf else { break };
        gone.insert(s);
    }
    let mut masks: BTreeMap<u32, PortMask> = BTreeMap::new();
    for (&s, ns) in &deg {
        if gone.contains(&s) {
            continue;
        }
        for &(p, t) in ns {
            if !gone.contains(&t) {
                masks.entry(s).or_default().set(p);
            }
        }
    }
    for (&s, (ports, _)) in need {
        for &p in ports {
            masks.entry(s).or_default().set(p);
        }
    }
    GroupMft {
        mlid: g.mlid,
        sl: old.sl,
        switches: masks.into_iter().filter(|(_, m)| !m.is_empty()).collect(),
    }
}

/// The (switch, MLID) entries that differ between two entries of one MLID; the MFT blocks
/// they touch go into `blocks`.
fn changes(a: &GroupMft, b: &GroupMft, blocks: &mut BTreeSet<Update>) -> usize {
    let one = |g: &GroupMft| super::Mfts {
        groups: vec![g.clone()],
    };
    let d = one(a).diff(&one(b));
    blocks.extend(d.iter().flat_map(|c| c.blocks()));
    d.len()
}
