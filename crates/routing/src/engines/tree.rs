//! Fat-tree shape detection, shared by `ftree`, `updn` and `dnup`: which switches are the
//! leaves, the level of every switch, and the roots — on trees as real clusters build them.
//!
//! **Hosts.** A host port is a live CA port that is not a service CA (a SHARP "Aggregation
//! Node", which real trees carry on every switch, spines and cores included) and not in the
//! caller's exclusion list (OpenSM's `io_guids`); service HCAs on a management leaf are hosts.
//!
//! **Leaves.** The switches with host ports, minus a few: two leaves are never cabled to each
//! other in a fat tree, so where switches with hosts are linked, the one with the most such
//! neighbours (ties: fewer host ports, then higher GUID… see [`detect`]) is taken for an
//! upper switch that carries a few hosts (a spine with three HCAs), until no two leaves are
//! linked. Ranks come from all leaves at once: `level` = BFS distance from the leaf set, so a
//! management leaf hung off a spine is a leaf like any other, and a management spine cabled to
//! cores sits at the spine level. The roots are the switches of the highest level in their
//! component — after *side tops* move down: host-less switches on top that join no leaf a
//! switch below them does not already reach (a management spine over management leaves
//! without hosts, cabled to a few cores), see [`side_tops`].
//!
//! **Not a fat tree.** With hosts on (nearly) every switch — a torus, a Dragonfly, a HyperX —
//! the cover takes more than one switch and a quarter of the hosts off the leaves, or a
//! quarter of the links join switches of one level: [`detect`] then says why, and `ftree` declines so that a chain moves on.

use super::common::Topo;
use super::ranking::{bfs_levels, component_count, components, ranks_from_roots};
use fabric::is_service_ca;
use fabric::NodeKind;

/// A detected (or given) fat-tree shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TreeShape {
    /// Per switch: BFS distance from the leaf set (0 = leaf; `u32::MAX` = dead).
    pub level: Vec<u32>,
    /// Per switch: rank for the up/down machinery (0 = roots): the highest level of its
    /// component minus its level.
    pub rank: Vec<u32>,
    pub roots: Vec<usize>,
    pub leaves: Vec<usize>,
    /// Switches with host ports that are not leaves (hosts on spines).
    pub upper_hosts: Vec<usize>,
    /// Switches without hosts ranked with the leaves ([`hostless_leaves`]).
    pub hostless_leaves: Vec<usize>,
}

/// Host flags per end (index into `t.ends`): see the module documentation.
pub(crate) fn host_ends(t: &Topo, excluded: &[u64]) -> Vec<bool> {
    (0..t.ends.len())
        .map(|i| {
            let node = t.f.node(t.end_node(i));
            node.kind == NodeKind::Ca
                && !is_service_ca(&node.desc)
                && !excluded.contains(&t.f.port(t.ends[i].port).guid)
        })
        .collect()
}

/// Share of the hosts the cover may take off the leaves before the fabric is not a tree.
const MAX_UPPER_HOST_SHARE: f64 = 0.25;
/// Share of the inter-switch links that may join switches of one level.
const MAX_SIBLING_SHARE: f64 = 0.25;

/// Detects the tree shape from the hosts (`is_host` per end), or says why the fabric is not a
/// fat tree.
pub(crate) fn detect(t: &Topo, is_host: &[bool]) -> Result<TreeShape, String> {
    let n = t.n;
    let hosts = hosts_per_switch(t, is_host);
    let total: u32 = hosts.iter().sum();
    if total == 0 {
        return Err("no host (compute or I/O) CA port".into());
    }
    let mut leaf: Vec<bool> = (0..n).map(|s| t.alive[s] && hosts[s] > 0).collect();
    let peers: Vec<Vec<u32>> = (0..n).map(|s| distinct_peers(t, s)).collect();
    // Per switch with hosts: its neighbour switches with hosts.
    let mut conflicts: Vec<u32> = (0..n)
        .map(|s| {
            if leaf[s] {
                peers[s].iter().filter(|&&p| leaf[p as usize]).count() as u32
            } else {
                0
            }
        })
        .collect();
    let mut upper_hosts = Vec::new();
    loop {
        // The leaf with the most leaf neighbours; ties: fewer hosts, then higher GUID (the
        // larger GUID is the higher switch in OpenSM's order), then lower index.
        let pick = (0..n)
            .filter(|&s| leaf[s] && conflicts[s] > 0)
            .max_by_key(|&s| {
                (
                    conflicts[s],
                    std::cmp::Reverse(hosts[s]),
                    t.guid(s),
                    std::cmp::Reverse(s),
                )
            });
        let Some(s) = pick else { break };
        leaf[s] = false;
        conflicts[s] = 0;
        upper_hosts.push(s);
        for &p in &peers[s] {
            if leaf[p as usize] {
                conflicts[p as usize] -= 1;
            }
        }
    }
    let moved: u32 = upper_hosts.iter().map(|&s| hosts[s]).sum();
    if upper_hosts.len() > 1 && moved as f64 > MAX_UPPER_HOST_SHARE * total as f64 {
        return Err(format!(
            "not a fat tree: {} of the {} switches with hosts are cabled to other switches with hosts ({moved} of {total} host ports would sit above the leaves)",
            upper_hosts.len(),
            (0..n).filter(|&s| hosts[s] > 0).count()
        ));
    }
    let leaves: Vec<usize> = (0..n).filter(|&s| leaf[s]).collect();
    let mut sources = leaves.clone();
    let mut level = bfs_levels(t, &sources);
    for _round in 0..3 {
        let extra = hostless_leaves(t, &level, &hosts, &peers);
        if extra.is_empty() {
            break;
        }
        sources.extend(extra);
        level = bfs_levels(t, &sources);
    }
    hostless_lower(t, &mut level, &hosts, &peers);
    side_tops(t, &mut level, &sources, &hosts, &peers);
    let mut links = 0usize;
    let mut siblings = 0usize;
    for s in 0..n {
        for a in t.links(s) {
            let p = a.peer as usize;
            if p > s {
                links += 1;
                if level[p] == level[s] {
                    siblings += 1;
                }
            }
        }
    }
    if links > 0 && siblings as f64 > MAX_SIBLING_SHARE * links as f64 {
        return Err(format!(
            "not a fat tree: {siblings} of the {links} switch-to-switch links join switches at the same distance from the leaves"
        ));
    }
    let hostless: Vec<usize> = sources[leaves.len()..].to_vec();
    let mut shape = shape_from_levels(t, level, leaves, upper_hosts);
    shape.hostless_leaves = hostless;
    Ok(shape)
}

/// Switches without hosts that are leaves in all but their hosts (a leaf whose nodes are
/// gone or unplugged): at level ≥ 2, no neighbour above them, and cabled only to switches
/// that one real leaf is cabled to as well — like a leaf, not like a core, which joins the
/// spines of several leaves' subtrees.
fn hostless_leaves(t: &Topo, level: &[u32], hosts: &[u32], peers: &[Vec<u32>]) -> Vec<usize> {
    (0..t.n)
        .filter(|&s| {
            if !t.alive[s] || hosts[s] > 0 || level[s] == u32::MAX || level[s] < 2 {
                return false;
            }
            let mine = &peers[s];
            if mine.iter().any(|&p| level[p as usize] >= level[s]) {
                return false;
            }
            // A real leaf below the first neighbour whose neighbours include all of ours
            // (neighbour lists are sorted).
            mine.first().is_some_and(|&first| {
                peers[first as usize].iter().any(|&l| {
                    let l = l as usize;
                    level[l] == 0 && hosts[l] > 0 && covers(&peers[l], mine)
                })
            })
        })
        .collect()
}

/// Host-less switches that lost their cables down (a spine whose leaf cables are all missing)
/// sit above the switches they still reach, so the distance from the leaves puts them at the
/// top. One that is a local top (no neighbour at its level or above) and whose neighbours are
/// all neighbours of one switch `u` further down as well — like `u`, not like a root, which
/// joins switches no single lower switch reaches — takes `u`'s level (the lowest such).
fn hostless_lower(t: &Topo, level: &mut [u32], hosts: &[u32], peers: &[Vec<u32>]) {
    let moves: Vec<(usize, u32)> = (0..t.n)
        .filter_map(|s| {
            let ls = level[s];
            if !t.alive[s] || hosts[s] > 0 || ls == u32::MAX || ls < 2 {
                return None;
            }
            let mine = &peers[s];
            if mine.is_empty() || mine.iter().any(|&p| level[p as usize] >= ls) {
                return None;
            }
            let first = mine[0] as usize;
            peers[first]
                .iter()
                .map(|&u| u as usize)
                .filter(|&u| u != s && level[u] + 1 < ls && covers(&peers[u], mine))
                .map(|u| level[u])
                .min()
                .map(|l| (s, l))
        })
        .collect();
    for (s, l) in moves {
        level[s] = l;
    }
}

/// Host-less switches hung off the side of the tree at its top — a management spine cabled
/// to a few cores, a management switch without hosts above it — sit above the cores in the
/// distance from the leaves and would be the single root. A switch at its component's top
/// level is such a *side top* when it has no hosts and
/// - it reaches no leaf going down level by level, while some other top switch does, or
/// - one neighbour below it reaches every leaf it reaches (it joins nothing a root joins),
///   and it is alone at the top, or not every top switch is like it, or some switch below
///   the top has no neighbour above it at all (a core the side top is not cabled to). A whole
///   top level of such switches, more than one, over every switch below it stays: the cores
///   of a single scalable unit, each above one spine, are its real top.
///
/// A side top moves one level below its highest neighbour below it (level 0 without one) and
/// the top is looked at again, a few rounds at most; never so far that its component is left
/// without a switch above level 0.
fn side_tops(t: &Topo, level: &mut [u32], sources: &[usize], hosts: &[u32], peers: &[Vec<u32>]) {
    let n = t.n;
    let words = sources.len().div_ceil(64).max(1);
    let mut reach = vec![0u64; n * words];
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for _round in 0..8 {
        // The leaves each switch reaches going down one level at a time.
        reach.iter_mut().for_each(|w| *w = 0);
        for (i, &s) in sources.iter().enumerate() {
            reach[s * words + i / 64] |= 1 << (i % 64);
        }
        order.clear();
        order.extend((0..n).filter(|&s| t.alive[s] && level[s] != u32::MAX));
        order.sort_by_key(|&s| level[s]);
        for &s in &order {
            for &p in &peers[s] {
                let p = p as usize;
                if level[p] != u32::MAX && level[p] + 1 == level[s] {
                    for w in 0..words {
                        reach[s * words + w] |= reach[p * words + w];
                    }
                }
            }
        }
        let r = |s: usize| &reach[s * words..(s + 1) * words];
        let (top, comp) = component_max(t, level);
        let at_top = |s: usize| level[s] == top[comp[s] as usize];
        // Per component: a top switch reaching a leaf; a switch below the top without a
        // neighbour above it.
        let ncomp = top.len();
        let mut top_reaches = vec![false; ncomp];
        let mut lone_below = vec![false; ncomp];
        for &s in &order {
            let c = comp[s] as usize;
            if at_top(s) {
                top_reaches[c] |= r(s).iter().any(|&w| w != 0);
            } else if !peers[s].iter().any(|&p| {
                let l = level[p as usize];
                l != u32::MAX && l > level[s]
            }) {
                lone_below[c] = true;
            }
        }
        // Top switches that join no leaf one neighbour below them does not reach (`covered`),
        // and how many switches (and how many such) each component has at its top.
        let covered = |s: usize| {
            let mine = r(s);
            peers[s].iter().any(|&p| {
                let p = p as usize;
                level[p] + 1 == level[s]
                    && r(p).iter().zip(mine).all(|(&theirs, &m)| m & !theirs == 0)
            })
        };
        let mut tops = vec![(0u32, 0u32); ncomp];
        for &s in order.iter().filter(|&&s| at_top(s)) {
            let c = comp[s] as usize;
            tops[c].0 += 1;
            tops[c].1 += (hosts[s] == 0 && covered(s)) as u32;
        }
        let mut moves: Vec<(usize, u32)> = order
            .iter()
            .copied()
            .filter(|&s| at_top(s) && hosts[s] == 0 && level[s] >= 1)
            .filter(|&s| {
                let c = comp[s] as usize;
                if r(s).iter().all(|&w| w == 0) {
                    return top_reaches[c];
                }
                let (all, like) = tops[c];
                covered(s) && (all == 1 || like < all || lone_below[c])
            })
            .map(|s| {
                let below = peers[s]
                    .iter()
                    .map(|&p| level[p as usize])
                    .filter(|&l| l < level[s])
                    .max();
                (s, below.map_or(0, |l| l.saturating_sub(1)))
            })
            .collect();
        // Keep a switch above level 0 in every component.
        let mut keeps = vec![false; ncomp];
        let moving: std::collections::HashSet<usize> = moves.iter().map(|m| m.0).collect();
        for &s in &order {
            if level[s] >= 1 && !moving.contains(&s) {
                keeps[comp[s] as usize] = true;
            }
        }
        for &(s, l) in &moves {
            keeps[comp[s] as usize] |= l >= 1;
        }
        moves.retain(|&(s, _)| keeps[comp[s] as usize]);
        if moves.is_empty() {
            break;
        }
        for (s, l) in moves {
            level[s] = l;
        }
    }
}

/// Whether the sorted neighbour list `theirs` contains every switch of `mine`.
fn covers(theirs: &[u32], mine: &[u32]) -> bool {
    mine.iter().all(|q| theirs.binary_search(q).is_ok())
}

/// Host ports per switch (`is_host` per end of `t`).
fn hosts_per_switch(t: &Topo, is_host: &[bool]) -> Vec<u32> {
    let mut hosts = vec![0u32; t.n];
    for (i, e) in t.ends.iter().enumerate() {
        if is_host[i] && t.alive[e.sw as usize] {
            hosts[e.sw as usize] += 1;
        }
    }
    hosts
}

/// The neighbour switches of `s`, each once, sorted.
pub(crate) fn distinct_peers(t: &Topo, s: usize) -> Vec<u32> {
    let mut v: Vec<u32> = t
        .links(s)
        .iter()
        .map(|a| a.peer)
        .filter(|&p| p as usize != s)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The largest of `value` over the live switches of each component (indexed by the component
/// ids of [`components`]), and those ids.
fn component_max(t: &Topo, value: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let comp = components(t);
    let mut top = vec![0u32; component_count(&comp)];
    for s in 0..t.n {
        if t.alive[s] {
            let c = comp[s] as usize;
            top[c] = top[c].max(value[s]);
        }
    }
    (top, comp)
}

/// The shape ranked from given roots: rank = BFS distance from the roots (components without
/// a root get their switch of lowest index), level = the component's highest rank minus rank;
/// leaves are the switches with hosts at the lowest level.
pub(crate) fn from_roots(t: &Topo, roots: &[usize], is_host: &[bool]) -> TreeShape {
    let (rank, roots) = ranks_from_roots(t, roots);
    let (top, comp) = component_max(t, &rank);
    let level: Vec<u32> = (0..t.n)
        .map(|s| {
            if t.alive[s] {
                top[comp[s] as usize] - rank[s]
            } else {
                u32::MAX
            }
        })
        .collect();
    let hosts = hosts_per_switch(t, is_host);
    let with_hosts = |s: &usize| t.alive[*s] && hosts[*s] > 0;
    let leaves: Vec<usize> = (0..t.n)
        .filter(with_hosts)
        .filter(|&s| level[s] == 0)
        .collect();
    let upper_hosts: Vec<usize> = (0..t.n)
        .filter(with_hosts)
        .filter(|&s| level[s] > 0)
        .collect();
    TreeShape {
        level,
        rank,
        roots,
        leaves,
        upper_hosts,
        hostless_leaves: Vec::new(),
    }
}

/// Ranks and roots from levels: per component, rank = highest level − level; switches the
/// leaves do not reach (components without hosts) are ranked from their lowest-index switch.
fn shape_from_levels(
    t: &Topo,
    mut level: Vec<u32>,
    leaves: Vec<usize>,
    upper_hosts: Vec<usize>,
) -> TreeShape {
    let n = t.n;
    // Components without a leaf: levels from their own lowest-index switch, upside down so
    // that it is the root.
    while let Some(s0) = (0..n).find(|&s| t.alive[s] && level[s] == u32::MAX) {
        let l = bfs_levels(t, &[s0]);
        let h = (0..n)
            .filter(|&s| l[s] != u32::MAX)
            .map(|s| l[s])
            .max()
            .unwrap_or(0);
        for s in 0..n {
            if l[s] != u32::MAX && level[s] == u32::MAX {
                level[s] = h - l[s];
            }
        }
    }
    let (top, comp) = component_max(t, &level);
    let mut rank = vec![u32::MAX; n];
    let mut roots = Vec::new();
    for s in 0..n {
        if t.alive[s] {
            rank[s] = top[comp[s] as usize] - level[s];
            if rank[s] == 0 {
                roots.push(s);
            }
        }
    }
    TreeShape {
        level,
        rank,
        roots,
        leaves,
        upper_hosts,
        hostless_leaves: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::FaultMask;

    fn shape(spec: &str) -> Result<TreeShape, String> {
        let f = crate::fault::test_fabric(spec);
        let t = Topo::new(&f, &FaultMask::none(&f));
        let h = host_ends(&t, &[]);
        detect(&t, &h)
    }

    #[test]
    fn generated_trees_are_ranked_from_their_leaves() {
        let s = shape("ktree 4 3").unwrap();
        let f = crate::fault::test_fabric("ktree 4 3");
        // Hints give level 0 = roots; the detection must agree.
        for (i, &n) in f.switches.iter().enumerate() {
            assert_eq!(s.rank[i], f.hints.level[n.idx()], "switch {i}");
        }
        let s = shape("fourlevel sets=3 l0=2 l1=2 hcas=2 l3=2").unwrap();
        assert_eq!(s.leaves.len(), 6);
        assert!(s.upper_hosts.is_empty());
    }

    #[test]
    fn tori_and_dragonflies_are_not_fat_trees() {
        for spec in ["torus 4x4", "dragonfly 4 2 2", "hyperx 3x3", "randreg 16 4"] {
            let e = shape(spec).unwrap_err();
            assert!(e.starts_with("not a fat tree"), "{spec}: {e}");
        }
    }
}
