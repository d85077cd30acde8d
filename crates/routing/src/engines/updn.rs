//! Up*/Down* (`updn`) and Down*/Up* (`dnup`), plus the up/down machinery shared with `ftree`
//! and (later) RFTR: a ranking, the direction of every inter-switch channel and the turn rule.
//!
//! **Direction.** Switches are totally ordered by a position (`pos`, smaller = "higher"): for
//! `updn` by (rank, larger GUID first, switch index), rank = BFS distance from the roots (when
//! the roots are a detected fat tree's top, the tree's own rank: its highest level minus the
//! switch's level above the leaves, so a spine whose cores hang off it alone is not ranked
//! below the leaves it serves) — so a channel is *up* when it leads to a lower rank, or to the
//! larger GUID on equal rank, as in OpenSM. A legal path is up* then down*: the only illegal turn is down → up. Because the
//! order is total, the up relation is acyclic and routing on legal paths is deadlock-free.
//!
//! **Shortest legal paths, consistent in a destination-based table.** Per destination switch
//! `d`, a BFS backward from `d` over (switch, label) gives each switch its legal distance and a
//! label: `D` if it forwards down (its whole remaining path is down*, so packets may arrive at
//! it going down) or `U` if it forwards up. A switch may forward down only to a `D` switch;
//! at equal distance `D` is preferred (it serves more upstream neighbours). Every switch's
//! choice is legal whatever way packets arrive, which per-(switch, LID) tables need.
//! Balancing is OpenSM's generic builder (least-loaded port among the legal min-distance ones,
//! LMC diversity, `port_shifting`, `scatter_ports`, `guid_routing_order`).
//!
//! **Roots (updn).** Unlike OpenSM the choice always works on a connected fabric:
//! 1. `root_guids` from the options (switch node GUIDs; other GUIDs are ignored with a note),
//!    else `TopoHints::roots`, else the switches farthest (BFS) from the switches carrying end
//!    ports other than aggregation nodes — a fat tree's spines — unless that is every switch,
//!    else the **chosen root set** (below; on a disconnected fabric, or one too big to
//!    evaluate, the graph centre: minimum eccentricity, lowest GUID, one per component);
//! 2. a multi-root ranking can leave a switch without any legal path to a destination (roots
//!    of a fat tree with failed links, or a torus where every switch is a centre). If a switch
//!    carrying end ports lacks a legal path to a switch carrying end ports, the ranking falls
//!    back to a **single root** — the candidate root of minimum eccentricity, ties by lowest
//!    GUID — where every switch reaches every other (up the BFS tree to the root, then down),
//!    and a note says so;
//! 3. the remaining entries without a legal path — toward switch LIDs (e.g. a fat tree's
//!    spine LIDs from other spines) or on switches no end-port traffic reaches — get a
//!    shortest escape path toward the nearest legally routed switch, and a note counts them.
//!    End-port to end-port traffic never uses them, so the routing between end ports stays
//!    deadlock-free.
//!
//! Components of a disconnected fabric without a root get their own (lowest switch index).
//!
//! **Chosen root set (no root file, no hints, no tree detected).** Where every switch carries
//! end ports (tori, meshes, Dragonflies, Slim Flies, random graphs) no root is natural, and
//! which one is picked changes the max link load a lot (up to 2× on the reference fabrics),
//! in a way no cheap graph measure predicts. So on a connected fabric the engine *routes* a
//! small deterministic list of candidate root sets and keeps the best:
//! - candidates: `{graph centre}` (the former default), `{lowest-GUID switch}` (dnup's former
//!   default), then for each base switch — those two first, then the others by (eccentricity,
//!   sum of distances, GUID, index) — the single root `{c}`, the *lower star* `{c}` ∪ {its
//!   neighbours with a smaller GUID} and the adjacent pairs `{c, b}` (neighbours by GUID),
//!   duplicates skipped, until `k` sets. Every such set is valid: its members have rank 0 and
//!   are adjacent to the member with the largest GUID, the top of the order, so every switch
//!   reaches every other by up*/down*; the legality check still runs and would drop an
//!   invalid one. (Over all single roots and adjacent pairs of the reference fabrics, pairs
//!   and stars often beat the best single root, e.g. 204 vs 268 on dragonfly_a4_p2_h2.)
//! - how many: one candidate costs about `W` = live switches × (live end ports + directed
//!   switch-to-switch channels); `k` = `EVAL_BUDGET` / `W` clamped to
//!   `EVAL_MIN_CANDIDATES`..=`EVAL_MAX_CANDIDATES` (8..=64), and no evaluation at all
//!   (graph centre kept) when `W` > `EVAL_MAX_WORK` (2^23: a 1,000-switch torus with 2 HCAs
//!   per switch is evaluated with 8 candidates, a 1,600-switch one is not);
//! - score: each candidate's base-LID tables are built with the given options (balancing
//!   included; the generic builder routes all base LIDs before any LMC LID and does not count
//!   switch LIDs, so these entries are exactly those of the full tables) and scored by
//!   (CA→CA pairs not delivered, max link load, total switch hops), max link load = most
//!   (source end port, destination base LID) routes on one directed switch-to-switch channel,
//!   as in [`crate::metrics`]; ties by the sorted list of root switch indices. The lowest
//!   wins, so the result is never worse than the former default (it is a candidate).
//!   Candidates are routed in parallel, each independently of the thread count, so the tables
//!   are identical for any thread count; the winner is then routed in full, and a note names
//!   it with the former default's figures;
//! - under a fault mask, the set chosen for the fault-free fabric is kept while it stays valid
//!   (members alive, live fabric connected, every end-port pair with an up*/down* path), so a
//!   fault does not move the roots and a full reconfiguration changes no more paths than it
//!   must; otherwise the candidates are routed on the live fabric.
//!
//! Fat trees (roots from a root file, hints or the farthest-switch rule) never reach this step
//! and are routed exactly as before. A root file (`-a`) skips the evaluation entirely.
//!
//! **dnup.** Rank 0 = switches with live end ports, rank grows away from them; legal paths are
//! down* then up* in those ranks (the mirror). Ties of equal rank are broken by BFS distance
//! from reference switches, then GUID, so a fabric whose switches all carry end ports (a
//! torus) still gets connected routes. The reference is the lowest-GUID switch of maximum
//! rank, except when every live switch has rank 0 on a connected fabric: the order is then an
//! up*/down* order from the reference switches (distance from them, larger GUID first), and
//! they are chosen exactly like updn's root set (same candidates, same score; so dnup and updn
//! give the same tables there). If some switch with end ports has no legal path to a
//! destination, `dnup` fails (use a chain).

use super::common::{unreached_note, Topo};
use super::ranking::{route_updown, Dir, UpDownRanking};
use super::rebalance::{rebalance, MOVE_BUDGET_PER_END};
use super::roots::{dnup_ranking, given_roots, tree_top, updn_ranking, Ranked};
use super::transition::assign_transitions;
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::turn::{Base, UpDownRule};
use fabric::{Fabric, FaultMask};
use std::sync::Arc;

/// The `updn` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpDn;

impl Engine for UpDn {
    fn info(&self) -> &'static EngineInfo {
        &super::UPDN
    }
    /// The Up*/Down* rule of the ranking the engine routes with (the same roots), or fresh VLs
    /// when the base changes VL for pairs without an up*/down* path.
    fn rftr_base<'f>(&self, f: &'f Fabric, opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        let t = Topo::live(f, &FaultMask::none(f))?;
        let r = updn_ranking(&t, &t.mask, opts)?;
        Ok(updown_base(f, &r.rk, r.no_legal))
    }
    /// The root set chosen on the fault-free fabric (the evaluated candidates or the graph
    /// centre), written into `root_guids` when none are given: the base routing, RFTR's turn
    /// rule and every full reconfiguration after faults then rank the fabric from the same
    /// roots, and the costly choice is paid once. Ranked from them (BFS), the pinned set
    /// routes to the same tables. A fat tree's top (`roots::tree_top`) is not pinned: it is ranked
    /// from the leaves, which a root list cannot say, and is derived again exactly and cheaply.
    fn pin_choices(&self, f: &Fabric, opts: &RouteOptions) -> Result<RouteOptions, EngineError> {
        let mut o = opts.clone();
        let t = Topo::live(f, &FaultMask::none(f))?;
        if given_roots(&t, opts, &mut Vec::new()).0.is_empty() && tree_top(&t).is_none() {
            let (rk, _) = UpDownRanking::for_updn(f, &FaultMask::none(f), opts)?;
            o.root_guids = rk
                .roots
                .iter()
                .map(|&s| f.node(f.switches[s]).guid)
                .collect();
        }
        Ok(o)
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        route_ranked(t, updn_ranking(t, &t.mask, opts)?, opts)
    }
}

/// The `dnup` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct DnUp;

impl Engine for DnUp {
    fn info(&self) -> &'static EngineInfo {
        &super::DNUP
    }
    /// The Down*/Up* rule of the ranking the engine routes with (no choice to pin: the ranking
    /// is a function of the fabric), or fresh VLs when the base changes VL for some pairs.
    fn rftr_base<'f>(&self, f: &'f Fabric, opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        let t = Topo::live(f, &FaultMask::none(f))?;
        let r = dnup_ranking(&t, &t.mask, opts)?;
        Ok(updown_base(f, &r.rk, r.no_legal))
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        route_ranked(t, dnup_ranking(t, &t.mask, opts)?, opts)
    }
}

/// RFTR's base for up/down tables on ranking `rk`: its turn rule when every pair has an
/// up*/down* path (`no_legal == 0`), else fresh VLs above the ones the base's transitions use.
pub(crate) fn updown_base<'f>(f: &'f Fabric, rk: &UpDownRanking, no_legal: usize) -> Base<'f> {
    if no_legal > 0 {
        return Base::FreshVls;
    }
    Base::Turns(Arc::new(UpDownRule::from_fn(f, |c| {
        rk.channel_dir(f, c) == Dir::Up
    })))
}

/// The tables of a chosen ranking: the up/down builder, then VL transitions for the pairs it
/// leaves without an up*/down* path.
fn route_ranked(t: &Topo, r: Ranked, opts: &RouteOptions) -> Result<Routed, EngineError> {
    let Ranked {
        rk,
        codes,
        mut notes,
        no_legal,
    } = r;
    let (mut routing, unreached) = route_updown(t, &rk, &codes, opts);
    unreached_note(t, unreached, &mut notes);
    // Balance the hosts' traffic: aggregation nodes are not hosts (as in the tree ranking).
    let hosts = super::tree::host_ends(t, &[]);
    let all = hosts.iter().all(|&h| h) || !hosts.iter().any(|&h| h);
    let counted = (!all).then_some(hosts.as_slice());
    let budget = MOVE_BUDGET_PER_END * t.ends.len();
    // The pass's last phase only on two-level trees (leaves under spines, as `tree.rs`
    // detects them, whatever the ranking), where the hosts' switches' entries decide every
    // path and the fabrics are small (at most a few thousand hosts); on deeper trees, tori
    // and Dragonflies it added seconds for little.
    let two_levels = super::tree::detect(t, &hosts)
        .is_ok_and(|shape| shape.level.iter().all(|&l| l <= 1 || l == u32::MAX));
    match rebalance(t, &rk, &mut routing, counted, budget, false, two_levels) {
        Some(b) if b.moved > 0 => notes.push(b.note(if all { "" } else { "host " })),
        Some(_) => {}
        None => notes.push(super::rebalance::skipped_note(t)),
    }
    if no_legal > 0 {
        assign_transitions(t, &rk, &mut routing, opts.budget, &mut notes)?;
    }
    Ok(Routed { routing, notes })
}
