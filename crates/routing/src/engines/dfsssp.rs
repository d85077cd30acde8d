//! `dfsssp`: deadlock-free SSSP (Domke, Hoefler and Nagel; OpenSM's `dfsssp`).
//!
//! Paths are [`super::sssp`]'s: minimal and globally balanced. Each (source switch,
//! destination LID) path is then given a layer — a VL — so that every layer's channel
//! dependency graph is acyclic; the path SL is the VL (`start_vl + layer`) and SL2VL is the
//! identity, as OpenSM's dfsssp requires (`-Q` with an identity `qos_sl2vl`).
//!
//! **Layers.** OpenSM puts every path in layer 0, then repeatedly finds a cycle and moves all
//! paths through its least-used edge one layer up; on the 8×8 torus that needs 9 layers. Here
//! paths are placed one at a time, whole, in the lowest layer whose graph stays acyclic with
//! them ([`crate::vl::layers::place`], an incremental topological order per layer): a path only
//! moves up when it really closes a cycle below. The order matters: destination by
//! destination (the paths toward one destination form a tree, acyclic on its own) works best;
//! when it does not fit the budget, the destinations reversed and then grouped by switch with
//! the longest paths first are tried, and the first order that fits is kept.
//! Then, like OpenSM, spare VLs are shared out: the layer with the most paths per VL gets the
//! next one, and its paths are spread over its VLs round robin (a subset of an acyclic layer is
//! acyclic), deterministically instead of OpenSM's random pick.
//!
//! Fails with "needed N, available M" when the best order still needs more layers than the VL
//! (or SL) budget has — never a silent fallback.

use super::common::Topo;
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::turn::Base;
use crate::vl::layers::{place, split_layers, Placement};
use crate::vl::paths::{path_sls, Paths};
use fabric::Fabric;

/// The `dfsssp` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dfsssp;

/// Path orders tried, by name: whole destinations together work best (the paths toward one
/// destination form a tree, acyclic on their own), and which destinations come first matters.
const ORDERS: [&str; 3] = [
    "by destination",
    "destinations reversed",
    "by destination switch, longest first",
];

/// The order `k` of [`ORDERS`] over `paths`.
pub(crate) fn path_order(paths: &Paths, k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..paths.len()).collect();
    match k {
        1 => order.reverse(),
        2 => order.sort_by_key(|&i| {
            (
                paths.dst_sw[i],
                std::cmp::Reverse(paths.hops(i)),
                paths.dlid[i],
            )
        }),
        _ => {}
    }
    order
}

/// First fit of single paths in order `k`, at most `limit` layers: the placement by path
/// index, or how many paths were placed before one fit nowhere.
fn placement(n: usize, paths: &Paths, k: usize, limit: usize) -> Result<Placement, usize> {
    let order = path_order(paths, k);
    let (p, _) = place(n, order.len(), limit, |g, out| {
        out.push(paths.chans(order[g]))
    })?;
    let mut layer = vec![0u8; paths.len()];
    for (g, &i) in order.iter().enumerate() {
        layer[i] = p.layer[g];
    }
    Ok(Placement { layer, ..p })
}

/// Above this many hops in all paths together, a failed placement is not repeated without a
/// limit just to count the layers it would need.
const COUNT_WORK: usize = 1 << 24;

impl Engine for Dfsssp {
    fn info(&self) -> &'static EngineInfo {
        &super::DFSSSP
    }
    /// RFTR keeps the base's VLs and SLs and puts repaired paths on VLs above them.
    fn rftr_base<'f>(&self, _f: &'f Fabric, _opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        Ok(Base::FreshVls)
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let f = t.f;
        let budget = opts.budget;
        let (
            Routed {
                mut routing,
                mut notes,
            },
            paths,
        ) = super::sssp::sssp_paths(t, opts)?;
        // VLs usable: the budget, and SLs start_vl.. (SL = VL).
        let (avail, by_sls) = budget.sl_vl_layers();
        let n = f.links.len() * 2;
        // The orders in turn, each within the budget, until one fits.
        let mut best: Option<(usize, Placement)> = None;
        let mut placed = Vec::new();
        for k in 0..ORDERS.len() {
            match placement(n, &paths, k, avail) {
                Ok(p) => {
                    best = Some((k, p));
                    break;
                }
                Err(at) => placed.push(at),
            }
        }
        let Some((k, p)) = best else {
            let total: usize = (0..paths.len()).map(|i| paths.hops(i)).sum();
            let needed = if total <= COUNT_WORK {
                placement(n, &paths, 0, usize::MAX)
                    .map(|p| p.used.to_string())
                    .unwrap_or_else(|_| "?".into())
            } else {
                format!("more than {avail}")
            };
            let most = placed.iter().max().copied().unwrap_or(0);
            return Err(EngineError::NotApplicable(format!(
                "not enough VLs: needed {needed}, available {avail}{by_sls} ({} path orders tried; at best {most} of {} paths fit in {avail} layers)",
                ORDERS.len(),
                paths.len()
            )));
        };
        let needed = p.used.max(1);
        let split = split_layers(&p.paths, avail);
        // Spread each layer's paths over its VLs, round robin in path order.
        let mut next = vec![0u32; split.len()];
        let vl_of: Vec<u8> = p
            .layer
            .iter()
            .map(|&l| {
                let (first, count) = split[l as usize];
                let k = next[l as usize];
                next[l as usize] += 1;
                budget.start_vl + first + (k % count as u32) as u8
            })
            .collect();
        routing.path_sl = path_sls(f, &routing, &paths, |i| vl_of[i], budget.start_vl);
        let vls_used = split.iter().map(|&(_, c)| c as usize).sum::<usize>();
        notes.push(format!(
            "dfsssp: {needed} layers needed ({} order), spread over {vls_used} VLs from VL {} (SL = VL); paths per layer {:?}",
            ORDERS[k],
            budget.start_vl,
            p.paths
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
