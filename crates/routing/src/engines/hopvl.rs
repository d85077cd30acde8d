//! `hopvl`: hop-incremented virtual lanes for low-diameter networks (Schneider, Bibartiu and
//! Hoefler, HOTI 2016; `hop-vl.md`).
//!
//! Paths are [`super::sssp`]'s: minimal and globally balanced (the same LFTs, so the same link
//! loads). A packet's `k`-th inter-switch hop travels on VL `start_vl + k`; every dependency
//! then goes from VL `k` to VL `k + 1`, so the channel dependency graph is acyclic whatever the
//! paths. VLs used = the longest path in switch hops (the diameter for minimal routing).
//!
//! A switch cannot see a packet's hop index, only (input port, output port, SL), so the SL must
//! tell it apart: every (source switch, destination LID) path takes an SL such that all paths
//! sharing (switch, input port, output port, SL) are on the same hop there; SL2VL then maps
//! that entry to the hop's VL. Packets entering from an end port are always on hop 0, so
//! those rows map every SL to `start_vl`; on a diameter-2 network every packet entering from a
//! switch is on hop 1 and one SL serves everything (Slim Fly). Finding SLs is a colouring of
//! the paths ([`crate::vl::SlColouring`], first fit); the order matters, so three orders are
//! tried — longest paths first, most conflicting paths first, destination by destination — and
//! the one needing fewest SLs is kept (ties: the earlier order).
//!
//! Fails, naming the shortage, when the longest path needs more VLs than the budget or the
//! colouring needs more SLs than the budget has (so `-R hopvl,dfsssp` moves on).

use super::common::Topo;
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::NUM_SLS;
use crate::turn::Base;
use crate::vl::paths::path_sls;
use crate::vl::{Need, SlColouring};
use fabric::Fabric;
use rustc_hash::FxHashMap;

/// The `hopvl` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct HopVl;

/// The colouring orders tried, by name.
const ORDERS: [&str; 3] = ["longest first", "most conflicts first", "by destination"];

impl Engine for HopVl {
    fn info(&self) -> &'static EngineInfo {
        &super::HOPVL
    }
    /// RFTR keeps the base's VLs and SLs and puts repaired paths on VLs above them.
    fn rftr_base<'f>(&self, _f: &'f Fabric, _opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        Ok(Base::FreshVls)
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let (
            Routed {
                mut routing,
                mut notes,
            },
            paths,
        ) = super::sssp::sssp_paths(t, opts)?;
        notes.extend(hop_vls(t.f, &mut routing, &paths, opts.budget)?);
        Ok(Routed { routing, notes })
    }
}

/// Puts the paths of `routing` (`paths`, from its LFTs) on hop-incremented VLs: SL2VL tables
/// and path SLs from the colouring described in the module docs, replacing the routing's.
/// Any LFTs will do (the engine's are SSSP's; `fabroute sim --hop-vls` uses any engine's).
/// Returns the notes; fails when the longest path needs more VLs, or the colouring more SLs,
/// than the budget has.
pub fn hop_vls(
    f: &Fabric,
    routing: &mut crate::tables::Routing,
    paths: &crate::vl::paths::Paths,
    budget: super::Budget,
) -> Result<Vec<String>, EngineError> {
    let mut notes = Vec::new();
    let diameter = paths.max_hops();
    if diameter > budget.vls as usize {
        return Err(EngineError::NotApplicable(format!(
                "hop-incremented VLs need {diameter} VLs (the longest path has {diameter} switch hops), the budget has {}",
                budget.vls
            )));
    }
    let needs = |i: usize, out: &mut Vec<Need>| {
        out.clear();
        for k in 1..paths.hops(i) {
            let (sw, inp, o) = paths.hop_ports(f, i, k);
            out.push(Need {
                sw,
                inp,
                out: o,
                vl: budget.start_vl + k as u8,
            });
        }
    };
    // Conflicts per (switch, in, out): how many distinct hop indices meet there.
    let mut seen: FxHashMap<(u32, u8, u8), u16> = FxHashMap::default();
    let mut buf = Vec::new();
    for i in 0..paths.len() {
        needs(i, &mut buf);
        for n in &buf {
            *seen.entry((n.sw, n.inp, n.out)).or_default() |= 1 << (n.vl - budget.start_vl);
        }
    }
    let conflicts = |i: usize, buf: &mut Vec<Need>| -> u32 {
        needs(i, buf);
        buf.iter()
            .map(|n| seen[&(n.sw, n.inp, n.out)].count_ones() - 1)
            .sum()
    };
    let mut best: Option<(usize, SlColouring, Vec<u8>)> = None;
    let mut shortfall = Vec::new();
    for (oi, name) in ORDERS.iter().enumerate() {
        let mut order: Vec<usize> = (0..paths.len()).collect();
        match oi {
            0 => order.sort_by_key(|&i| std::cmp::Reverse(paths.hops(i))),
            1 => {
                let c: Vec<u32> = (0..paths.len()).map(|i| conflicts(i, &mut buf)).collect();
                order.sort_by_key(|&i| std::cmp::Reverse(c[i]));
            }
            _ => {}
        }
        match colour(&order, budget.sls, &needs) {
            Ok((c, sl)) => {
                if best.as_ref().is_none_or(|b| c.end() < b.1.end()) {
                    best = Some((oi, c, sl));
                }
            }
            Err(at) => shortfall.push(format!("{name}: ran out at path {at} of {}", paths.len())),
        }
    }
    let Some((oi, colours, sl_of)) = best else {
        return Err(EngineError::NotApplicable(format!(
            "hop-incremented VLs need more than the {} SLs of the budget ({})",
            budget.sls,
            shortfall.join("; ")
        )));
    };
    // SL2VL: end-port input rows and unused entries stay on start_vl; the colouring's
    // entries give the hop VLs.
    for &n in &f.switches {
        routing.sl2vl.table_mut(n).fill(budget.start_vl);
    }
    for (n, sl) in colours.entries() {
        let node = f.switches[n.sw as usize];
        routing.sl2vl.set(node, n.inp, n.out, sl, n.vl);
    }
    for (i, node) in f.nodes.iter().enumerate() {
        if node.kind != fabric::NodeKind::Switch {
            routing
                .sl2vl
                .table_mut(fabric::NodeId(i as u32))
                .fill(budget.start_vl);
        }
    }
    routing.path_sl = path_sls(f, routing, paths, |i| sl_of[i], 0);
    let sls = colours.end().max(1);
    notes.push(format!(
            "hop-incremented VLs: {diameter} VLs from VL {} (longest path {diameter} switch hops), {sls} SLs of {} ({} order; {} paths)",
            budget.start_vl,
            budget.sls,
            ORDERS[oi],
            paths.len()
        ));
    if !shortfall.is_empty() {
        notes.push(format!("orders that did not fit: {}", shortfall.join("; ")));
    }
    debug_assert!((sls as usize) <= NUM_SLS);
    Ok(notes)
}

/// First-fit colouring of the paths in `order`: each takes the lowest SL it fits, or a fresh
/// one. Returns the colouring and the SL of every path, or the position in `order` where the
/// SLs ran out.
fn colour(
    order: &[usize],
    sls: u8,
    needs: &impl Fn(usize, &mut Vec<Need>),
) -> Result<(SlColouring, Vec<u8>), usize> {
    let mut c = SlColouring::new(0, sls);
    let mut sl_of = vec![0u8; order.len()];
    let mut buf = Vec::new();
    for (at, &i) in order.iter().enumerate() {
        needs(i, &mut buf);
        let sl = c.find(&buf).or_else(|| c.fresh()).ok_or(at)?;
        c.assign(sl, &buf, |_| {});
        sl_of[i] = sl;
    }
    Ok((c, sl_of))
}
