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
use fabric::Fabric;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The `dor` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dor;

/// Coordinates of every switch (by switch index), when the hints give them consistently.
/// Per-switch coordinates, dimensions and wrap flags.
type Coords<'a> = (Vec<&'a [u32]>, &'a [u32], Vec<bool>);

fn switch_coords(f: &Fabric) -> Option<Coords<'_>> {
    let h = &f.hints;
    if h.dims.is_empty() || h.coords.len() != f.nodes.len() {
        return None;
    }
    let nd = h.dims.len();
    let mut v = Vec::with_capacity(f.switches.len());
    for &s in &f.switches {
        let c = h.coords[s.idx()].as_slice();
        if c.len() != nd {
            return None;
        }
        v.push(c);
    }
    let wrap = (0..nd)
        .map(|k| h.wrap.get(k).copied().unwrap_or(false))
        .collect();
    Some((v, h.dims.as_slice(), wrap))
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
        DorRule::from_hints(f)
            .map(|r| Base::Turns(Arc::new(r)))
            .ok_or_else(|| {
                EngineError::NotApplicable(
                    "dor as an RFTR base needs mesh coordinates (a generated mesh)".into(),
                )
            })
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
                    let (a, b) = (cs[s], cs[d]);
                    if let Some(k) = (0..dims.len()).find(|&k| a[k] != b[k]) {
                        let size = dims[k].max(1);
                        let mut best = u32::MAX;
                        for l in t.links(s) {
                            if row_d[l.peer as usize] != hs - 1 {
                                continue;
                            }
                            let c = cs[l.peer as usize];
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
            notes.push("no coordinates in the topology hints: dimension order = port order (OpenSM's DOR mode)".into());
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
