//! DOR: dimension-order routing for meshes, tori and hypercubes.
//!
//! With generator hints (`TopoHints::coords`/`dims`/`wrap` on every switch) the next hop toward
//! a destination switch corrects the **lowest differing dimension first**; in a ring that
//! dimension is travelled the shorter way, ties (exactly half way round) in the `+` direction.
//! Without hints (fabrics read from files) it follows OpenSM's DOR mode: among the min-hop
//! ports, only those leading to the remote switch of the lowest-numbered min-hop port are
//! candidates (port order stands for dimension order).
//!
//! Either way load is balanced only across parallel links to the chosen next switch, and the
//! LMC start shift is not applied (as in OpenSM). Every chosen hop is a min-hop hop, so the
//! routing always reaches its destination: when a fault removes the dimension-order neighbour
//! (or makes it non-minimal) that hop falls back to the port-order rule and the note says how
//! often. Deadlock-free on meshes and hypercubes without faults; tori have credit loops.

use super::common::{
    generic_lfts, generic_order, hop_matrix, unreached_note, GenericParams, Topo, INF,
};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::turn::{Base, DorRule};
use fabric::{Fabric, FaultMask};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The `dor` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dor;

/// Per-switch coordinates (by switch index), dimensions and wrap flags.
type Coords = (Vec<Vec<u32>>, Vec<u32>, Vec<bool>);

/// Coordinates of every switch: from the generator's hints when they give them consistently,
/// else inferred from the switch graph when it is exactly a mesh ([`infer_mesh`]), so that a
/// mesh read from a file is routed, and given its RFTR turn rule, the same way.
fn switch_coords(f: &Fabric) -> Option<Coords> {
    let h = &f.hints;
    if h.dims.is_empty() || h.coords.len() != f.nodes.len() {
        return infer_mesh(f).map(|(c, d)| {
            let w = vec![false; d.len()];
            (c, d, w)
        });
    }
    let nd = h.dims.len();
    let mut v = Vec::with_capacity(f.switches.len());
    for &s in &f.switches {
        let c = h.coords[s.idx()].as_slice();
        if c.len() != nd {
            return None;
        }
        v.push(c.to_vec());
    }
    let wrap = (0..nd)
        .map(|k| h.wrap.get(k).copied().unwrap_or(false))
        .collect();
    Some((v, h.dims.clone(), wrap))
}

/// Mesh coordinates from the switch graph alone (parallel links and end ports aside), when
/// it is exactly a d-dimensional mesh of sides ≥ 2: a corner `c0` (a switch of least degree
/// d), the d straight lines from it (each next switch shares only the current one with the
/// switch before), their ends `c_k`; then coordinate k of a switch is
/// (dist(c0) + n_k − 1 − dist(c_k)) / 2. The result is checked: distinct coordinates in
/// range, every pair of neighbours one step apart in exactly one dimension, as many
/// neighbour pairs as the mesh has. `None` otherwise (a torus, a damaged mesh, anything else).
pub(crate) fn infer_mesh(f: &Fabric) -> Option<(Vec<Vec<u32>>, Vec<u32>)> {
    let n = f.num_switches();
    if n < 2 {
        return None;
    }
    let t = Topo::new(f, &FaultMask::none(f));
    let peers: Vec<Vec<u32>> = (0..n).map(|s| super::tree::distinct_peers(&t, s)).collect();
    let bfs = |src: usize| super::ranking::bfs_levels(&t, &[src]);
    let deg = |s: usize| peers[s].len();
    let dmin = (0..n).map(deg).min()?;
    if dmin == 0 || dmin > 6 {
        return None;
    }
    let c0 = (0..n).find(|&s| deg(s) == dmin)?;
    let d0 = bfs(c0);
    if d0.contains(&u32::MAX) {
        return None;
    }
    let common = |a: usize, b: usize| {
        peers[a]
            .iter()
            .filter(|x| peers[b].binary_search(x).is_ok())
            .count()
    };
    // the straight lines from c0
    let mut ends = Vec::new();
    let mut dims = Vec::new();
    for &a in &peers[c0] {
        let (mut prev, mut cur, mut len) = (c0, a as usize, 2u32);
        loop {
            let next: Vec<usize> = peers[cur]
                .iter()
                .map(|&w| w as usize)
                .filter(|&w| d0[w] == d0[cur] + 1 && common(prev, w) == 1)
                .collect();
            match next.as_slice() {
                [] => break,
                [w] => {
                    (prev, cur) = (cur, *w);
                    len += 1;
                }
                _ => return None,
            }
        }
        ends.push(cur);
        dims.push(len);
    }
    if dims.iter().map(|&x| x as usize).product::<usize>() != n {
        return None;
    }
    let dk: Vec<Vec<u32>> = ends.iter().map(|&e| bfs(e)).collect();
    let mut coords = vec![vec![0u32; dims.len()]; n];
    for (s, c) in coords.iter_mut().enumerate() {
        for k in 0..dims.len() {
            let twice = (d0[s] + dims[k] - 1).checked_sub(dk[k][s])?;
            if twice % 2 != 0 || twice / 2 >= dims[k] {
                return None;
            }
            c[k] = twice / 2;
        }
    }
    // check: distinct coordinates, neighbours one step apart, the mesh's number of links
    let mut seen = std::collections::HashSet::new();
    if !coords.iter().all(|c| seen.insert(c.clone())) {
        return None;
    }
    let mut pairs = 0usize;
    for s in 0..n {
        for &w in &peers[s] {
            let (a, b) = (&coords[s], &coords[w as usize]);
            let steps: u32 = (0..dims.len()).map(|k| a[k].abs_diff(b[k])).sum();
            if steps != 1 {
                return None;
            }
            pairs += 1;
        }
    }
    let expect: usize = (0..dims.len())
        .map(|k| {
            (dims[k] as usize - 1)
                * (0..dims.len())
                    .filter(|&j| j != k)
                    .map(|j| dims[j] as usize)
                    .product::<usize>()
        })
        .sum();
    (pairs == 2 * expect).then_some((coords, dims))
}

impl Engine for Dor {
    fn info(&self) -> &'static EngineInfo {
        &super::DOR
    }
    /// Dimension order on a mesh (coordinates from the topology hints); a torus has no
    /// deadlock-free dimension order.
    fn rftr_base<'f>(&self, f: &'f Fabric, _opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        if f.hints.wrap.iter().any(|&w| w) {
            return Err(EngineError::NotApplicable(
                "dor is deadlock-free only on meshes; this fabric has wrap-around links (use updn as the base engine)".into(),
            ));
        }
        match switch_coords(f) {
            Some((coords, _, wrap)) if !wrap.iter().any(|&w| w) => Ok(Base::Turns(Arc::new(
                DorRule::from_switch_coords(f, &coords),
            ))),
            _ => Err(EngineError::NotApplicable(
                "dor as an RFTR base needs a mesh: no coordinates in the topology hints, and the switch graph is not a mesh".into(),
            )),
        }
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        Ok(dor_lfts(t, opts, true))
    }
}

/// DOR's tables: with `coords` and the fabric's coordinates, the lowest differing dimension
/// first; otherwise (or where that is impossible) OpenSM's port-order rule.
pub(crate) fn dor_lfts(t: &Topo, opts: &RouteOptions, coords: bool) -> Routed {
    {
        let f = t.f;
        let hop = hop_matrix(t);
        let n = t.n;
        let coords = if coords { switch_coords(f) } else { None };
        let fallbacks = AtomicUsize::new(0);
        let order = generic_order(t, opts);
        let (routing, unreached) = generic_lfts(
            t,
            &order,
            GenericParams::from_opts(opts, false),
            |s, d, out| {
                let row_d = &hop[d * n..(d + 1) * n];
                let hs = row_d[s];
                if hs == INF || hs == 0 {
                    return;
                }
                let mut next = u32::MAX;
                if let Some((cs, dims, wrap)) = &coords {
                    let (a, b) = (&cs[s], &cs[d]);
                    if let Some(k) = (0..dims.len()).find(|&k| a[k] != b[k]) {
                        let size = dims[k].max(1);
                        let mut best = u32::MAX;
                        for l in t.links(s) {
                            if row_d[l.peer as usize] != hs - 1 {
                                continue;
                            }
                            let c = &cs[l.peer as usize];
                            if (0..dims.len()).any(|j| j != k && c[j] != a[j]) || c[k] == a[k] {
                                continue;
                            }
                            // step in dimension k: + direction first (mod size in a ring)
                            let delta = if wrap[k] {
                                (c[k] + size - a[k] % size) % size
                            } else if c[k] > a[k] {
                                c[k] - a[k]
                            } else {
                                size + (a[k] - c[k])
                            };
                            if delta < best {
                                best = delta;
                                next = l.peer;
                            }
                        }
                        if next == u32::MAX {
                            fallbacks.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                if next == u32::MAX {
                    // OpenSM DOR mode: the remote switch of the first min-hop port in port order.
                    let mut first_port = u8::MAX;
                    for l in t.links(s) {
                        if row_d[l.peer as usize] == hs - 1 && l.port < first_port {
                            first_port = l.port;
                            next = l.peer;
                        }
                    }
                }
                if next == u32::MAX {
                    return;
                }
                let start = out.len();
                for l in t.links(s) {
                    if l.peer == next {
                        out.push((l.port, l.peer));
                    }
                }
                out[start..].sort_unstable();
            },
        );
        let mut notes = Vec::new();
        if coords.is_none() {
            notes.push("no coordinates in the topology hints and the switch graph is not a mesh: dimension order = port order (OpenSM's DOR mode)".into());
        } else if f.hints.dims.is_empty() {
            if let Some((_, dims, _)) = &coords {
                let d: Vec<String> = dims.iter().map(|x| x.to_string()).collect();
                notes.push(format!(
                    "coordinates inferred from the switch graph: a {} mesh",
                    d.join("x")
                ));
            }
        }
        let fb = fallbacks.load(Ordering::Relaxed);
        if fb > 0 {
            notes.push(format!(
                "{fb} (switch, destination switch) hops could not follow dimension order (dead or non-minimal neighbour) and used port order"
            ));
        }
        unreached_note(t, unreached, &mut notes);
        Routed { routing, notes }
    }
}
