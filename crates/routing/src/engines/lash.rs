//! `lash`: LAyered SHortest path routing (Skeie, Lysne and Theiss; OpenSM's `lash`).
//!
//! Shortest paths, and one layer (VL) per pair of switches: every path between switches `i`
//! and `j`, both ways and to every LID there, shares the layer of `{i, j}`, so the SL of a
//! packet depends only on its source and destination switches (symmetric, as in OpenSM: SL =
//! `start_vl` + layer; SL2VL the identity). Switch pairs are taken in OpenSM's order
//! (`i < j`, lexicographic); each goes, whole, into the first layer whose channel dependency
//! graph stays acyclic with its paths (an on-line cycle check: an incremental topological
//! order per layer, [`crate::vl::layers`], instead of OpenSM's depth-first search over the
//! whole layer for every pair, which is what makes OpenSM's LASH take minutes on mid-size
//! fabrics). Then layers are balanced as in OpenSM: switch pairs move from the fullest layer to
//! the emptiest while they fit there and the two differ by at least 6 paths (OpenSM's balance
//! limit), in pair order instead of OpenSM's random probing.
//!
//! Paths: OpenSM's (`lash_lfts` below): minimal, one next hop per (switch, destination switch)
//! from breadth-first trees rooted at the switches in OpenSM's order, so every LID of a
//! switch follows the same route and the tables are OpenSM's (not balanced: on a two-level
//! fat tree a leaf's routes to the other leaves all leave by one uplink, 1,728 routes on the
//! busiest link of the 6-switch SwitchIB dump against 144 for ftree, as with OpenSM). With
//! `do_mesh_analysis` (OpenSM's option of that name) the search visits links by dimension
//! where the fabric has coordinates, which on meshes and tori needs fewer layers. Fails
//! with "needed N, available M" when the layers do not fit the VL (or SL) budget.

use super::common::{generic_lfts, generic_order, GenericParams, Topo};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::turn::Base;
use crate::vl::layers::{place, Layers, Placement};
use crate::vl::paths::{path_sls, Paths};
use fabric::Fabric;
use rayon::prelude::*;

/// The `lash` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lash;

/// LASH's settings (OpenSM's option names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LashSettings {
    /// `do_mesh_analysis`: dimension-ordered shortest paths on meshes and tori.
    pub do_mesh_analysis: bool,
}

/// OpenSM's balance limit: layers are evened out until they differ by fewer paths.
const BALANCE_LIMIT: u64 = 6;

impl Engine for Lash {
    fn info(&self) -> &'static EngineInfo {
        &super::LASH
    }
    /// RFTR keeps the base's VLs and SLs and puts repaired paths on VLs above them.
    fn rftr_base<'f>(&self, _f: &'f Fabric, _opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        Ok(Base::FreshVls)
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let f = t.f;
        let budget = opts.budget;
        budget.validate()?;
        let mesh = opts.engine.lash.do_mesh_analysis;
        let (mut routing, unreached) = lash_lfts(t, opts, mesh);
        let mut notes = Vec::new();
        if mesh && f.hints.coords.len() != f.nodes.len() {
            notes.push(
                "do_mesh_analysis: no coordinates in this fabric; links in port order".into(),
            );
        }
        super::common::unreached_note(t, unreached, &mut notes);
        let paths = Paths::of(f, &routing, Some(&t.mask));
        // Group paths by unordered switch pair {i, j} of OpenSM's switch numbering.
        let mut id = vec![u32::MAX; t.n];
        let mut by_guid: Vec<usize> = (0..t.n).filter(|&s| t.alive[s]).collect();
        by_guid.sort_by_key(|&s| (t.guid(s).swap_bytes(), s));
        for (k, &s) in by_guid.iter().enumerate() {
            id[s] = k as u32;
        }
        let dst_sw = &paths.dst_sw;
        let mut keyed: Vec<(u64, usize)> = (0..paths.len())
            .map(|i| {
                let (a, b) = (id[paths.src[i] as usize], id[dst_sw[i] as usize]);
                ((a.min(b) as u64) << 32 | a.max(b) as u64, i)
            })
            .collect();
        keyed.sort_unstable();
        let mut group_start = Vec::new();
        for (k, w) in keyed.iter().enumerate() {
            if k == 0 || keyed[k - 1].0 != w.0 {
                group_start.push(k);
            }
        }
        group_start.push(keyed.len());
        let groups = group_start.len() - 1;
        // The distinct paths of each group (every LID of a switch follows the same route, so
        // a pair's paths repeat): what the layers see.
        let mut uniq_start = Vec::with_capacity(groups + 1);
        let mut uniq: Vec<usize> = Vec::new();
        for g in 0..groups {
            uniq_start.push(uniq.len());
            let from = uniq.len();
            for &(_, i) in &keyed[group_start[g]..group_start[g + 1]] {
                if !uniq[from..]
                    .iter()
                    .any(|&j| paths.chans(j) == paths.chans(i))
                {
                    uniq.push(i);
                }
            }
        }
        uniq_start.push(uniq.len());
        let members = |g: usize| &uniq[uniq_start[g]..uniq_start[g + 1]];
        let (avail, by_sls) = budget.sl_vl_layers();
        // Pair orders: longest pairs first (their paths carry the most dependencies; on tori
        // this often fits in fewer layers than OpenSM's order), OpenSM's (i < j, row by row),
        // column by column.
        let hops_of = |g: usize| paths.hops(keyed[group_start[g]].1);
        let orders: [Vec<usize>; 3] = {
            let base: Vec<usize> = (0..groups).collect();
            let mut longest = base.clone();
            longest.sort_by_key(|&g| std::cmp::Reverse(hops_of(g)));
            let mut cols = base.clone();
            cols.sort_by_key(|&g| {
                (
                    keyed[group_start[g]].0 & 0xFFFF_FFFF,
                    keyed[group_start[g]].0 >> 32,
                )
            });
            [longest, base, cols]
        };
        // The orders side by side (in parallel, each independent of the others); the fewest
        // layers win, ties by order.
        let attempts: Vec<Result<(Placement, Layers), usize>> = orders
            .par_iter()
            .map(|order| {
                let group = |g: usize, out: &mut Vec<_>| {
                    for &i in members(order[g]) {
                        out.push(paths.chans(i));
                    }
                };
                place(f.links.len() * 2, groups, avail, group).map(|(p, l)| {
                    // Back to group indices.
                    let mut layer = vec![0u8; groups];
                    for (x, &g) in order.iter().enumerate() {
                        layer[g] = p.layer[x];
                    }
                    (Placement { layer, ..p }, l)
                })
            })
            .collect();
        let mut best: Option<(usize, Placement, Layers)> = None;
        let mut fitted = Vec::new();
        for (k, a) in attempts.into_iter().enumerate() {
            match a {
                Ok((p, l)) => {
                    if best.as_ref().is_none_or(|b| p.used < b.1.used) {
                        best = Some((k, p, l));
                    }
                }
                Err(at) => fitted.push(at),
            }
        }
        let Some((ord, mut p, mut layers)) = best else {
            let group = |g: usize, out: &mut Vec<_>| {
                for &i in members(g) {
                    out.push(paths.chans(i));
                }
            };
            let needed = place(f.links.len() * 2, groups, usize::MAX, group)
                .map_or("?".to_string(), |(p, _)| p.used.to_string());
            let most = fitted.iter().max().copied().unwrap_or(0);
            return Err(EngineError::NotApplicable(format!(
                "not enough VLs: needed {needed}, available {avail}{by_sls} (one layer per switch pair; at best {most} of {groups} pairs fit in {avail} layers, 3 pair orders tried)"
            )));
        };
        let needed = p.used.max(1);
        // Balance: move pairs from the fullest layer to the emptiest while they fit.
        let size = |g: usize| (group_start[g + 1] - group_start[g]) as u64;
        let mut counts = vec![0u64; p.used];
        for g in 0..groups {
            counts[p.layer[g] as usize] += size(g);
        }
        let group_paths =
            |g: usize| -> Vec<&[u32]> { members(g).iter().map(|&i| paths.chans(i)).collect() };
        let mut moved = 0u64;
        if p.used > 1 {
            // Per layer: its groups in pair order, and how far they have been tried.
            let mut of_layer: Vec<Vec<usize>> = vec![Vec::new(); p.used];
            for g in 0..groups {
                of_layer[p.layer[g] as usize].push(g);
            }
            let mut cursor = vec![0usize; p.used];
            loop {
                let hi = (0..p.used)
                    .max_by_key(|&l| (counts[l], std::cmp::Reverse(l)))
                    .unwrap_or(0);
                let lo = (0..p.used).min_by_key(|&l| (counts[l], l)).unwrap_or(0);
                if counts[hi] < counts[lo] + BALANCE_LIMIT {
                    break;
                }
                let Some(&g) = of_layer[hi].get(cursor[hi]) else {
                    break;
                };
                cursor[hi] += 1;
                if p.layer[g] as usize != hi {
                    continue;
                }
                let gp = group_paths(g);
                if layers.try_add_all(lo, &gp) {
                    for q in &gp {
                        layers.remove(hi, q);
                    }
                    p.layer[g] = lo as u8;
                    let n = size(g);
                    counts[hi] -= n;
                    counts[lo] += n;
                    moved += 1;
                }
            }
        }
        let mut layer_of_path = vec![0u8; paths.len()];
        for g in 0..groups {
            for &(_, i) in &keyed[group_start[g]..group_start[g + 1]] {
                layer_of_path[i] = p.layer[g];
            }
        }
        routing.path_sl = path_sls(
            f,
            &routing,
            &paths,
            |i| budget.start_vl + layer_of_path[i],
            budget.start_vl,
        );
        notes.push(format!(
            "lash: {needed} layers from VL {} for {groups} switch pairs ({} paths, {} pair order); balanced by moving {moved} pairs: paths per layer {:?}",
            budget.start_vl,
            paths.len(),
            ["longest first", "OpenSM's", "column"][ord],
            counts
        ));
        if paths.broken > 0 {
            notes.push(format!(
                "{} (source switch, destination LID) walks do not arrive and are in no layer",
                paths.broken
            ));
        }
        Ok(Routed { routing, notes })
    }
}

/// LASH's routes, as OpenSM builds them: switches numbered in OpenSM's GUID order; for every
/// root in that order a breadth-first search over the live switches, visiting each switch's
/// links in port order (`do_mesh_analysis`: by dimension, `+` before `-`, where the fabric has
/// coordinates), a switch's parent being the first to reach it. Walking a root's tree, every
/// switch `s` on the way down to a switch `d` takes, for `d`, the link toward `d`'s branch
/// unless an earlier root's tree set it already. Every hop brings the packet one hop closer,
/// so the routes are minimal and destination based; most come from the first roots' trees,
/// which is why few layers suffice. Parallel cables: the lowest port (all of them with
/// `do_mesh_analysis`, balanced by the generic builder). Returns the tables and the
/// unreachable count of the builder.
pub(crate) fn lash_lfts(t: &Topo, opts: &RouteOptions, mesh: bool) -> (crate::Routing, usize) {
    let f = t.f;
    let n = t.n;
    let mut ids: Vec<usize> = (0..n).filter(|&s| t.alive[s]).collect();
    ids.sort_by_key(|&s| (t.guid(s).swap_bytes(), s));
    let coords = &f.hints.coords;
    let has_coords = mesh && coords.len() == f.nodes.len();
    // Per switch: its neighbours in visiting order (distinct, parallel cables once).
    let key = |s: usize, peer: u32, port: u8| -> (u32, u8) {
        if has_coords {
            let (a, b) = (
                &coords[f.switches[s].idx()],
                &coords[f.switches[peer as usize].idx()],
            );
            if let Some(k) = (0..a.len().min(b.len())).find(|&k| a[k] != b[k]) {
                return (2 * k as u32 + u32::from(b[k] < a[k]), port);
            }
        }
        (u32::MAX, port)
    };
    let nbrs: Vec<Vec<u32>> = (0..n)
        .map(|s| {
            let mut l: Vec<((u32, u8), u32)> = t
                .links(s)
                .iter()
                .map(|a| (key(s, a.peer, a.port), a.peer))
                .collect();
            l.sort_unstable();
            let mut out: Vec<u32> = Vec::new();
            for (_, p) in l {
                if !out.contains(&p) && p as usize != s {
                    out.push(p);
                }
            }
            out
        })
        .collect();
    const UNSET: u32 = u32::MAX;
    let mut next = vec![UNSET; n * n];
    let mut left: usize = ids.len() * ids.len().saturating_sub(1);
    let mut parent = vec![UNSET; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    for &r in &ids {
        if left == 0 {
            break;
        }
        parent.fill(UNSET);
        order.clear();
        parent[r] = r as u32;
        order.push(r as u32);
        let mut h = 0;
        while h < order.len() {
            let u = order[h] as usize;
            h += 1;
            for &v in &nbrs[u] {
                if parent[v as usize] == UNSET {
                    parent[v as usize] = u as u32;
                    order.push(v);
                }
            }
        }
        for &d in &order {
            let d = d as usize;
            let (mut prev, mut a) = (d as u32, parent[d]);
            while prev as usize != r {
                let slot = &mut next[a as usize * n + d];
                if *slot == UNSET {
                    *slot = prev;
                    left -= 1;
                }
                prev = a;
                a = parent[a as usize];
            }
        }
    }
    generic_lfts(
        t,
        &generic_order(t, opts),
        GenericParams::from_opts(opts, false),
        |s, d, out| {
            let Some(&nx) = next.get(s * n + d) else {
                return;
            };
            if nx == UNSET {
                return;
            }
            let start = out.len();
            for a in t.links(s) {
                if a.peer == nx {
                    out.push((a.port, a.peer));
                }
            }
            out[start..].sort_unstable();
            if !has_coords {
                // OpenSM without mesh analysis: only the lowest-numbered cable.
                out.truncate(start + 1);
            }
        },
    )
}
