//! Fat-tree routing (`ftree`), restating OpenSM's algorithm with fabroute's rules: balancing
//! counters count **created routes only**, degraded trees are routed instead of refused, LMC is
//! supported, and every LFT entry is filled.
//!
//! **Compute nodes and leaves.** Compute-node (CN) ports: `cn_guids` if given; else every live
//! CA port except those in `io_guids`, routers, and *service CAs* whose node description
//! contains "aggregation node" (case-insensitive; e.g. the "Mellanox Technologies Aggregation
//! Node" SHARP CA that real fat trees carry on every switch, spines included). Leaves are the
//! switches with at least one CN.
//!
//! **Ranks.** Roots: `root_guids`, else `TopoHints::roots`, else detected — the switches
//! farthest (BFS) from the leaf set; rank = BFS distance from the roots (rank 0 = roots). A
//! leaf whose rank differs from the leaf rank (the rank holding most CNs) is an outlier, e.g. a
//! spine carrying a storage node: its CAs are demoted to non-compute and the ranking is
//! redone without it (at most three rounds). So a fabric with one aggregation node per switch,
//! or a few I/O nodes on spines, is ranked correctly without any GUID file.
//! Limitation: a non-aggregation CA on a spine of a 3-level tree sits at the leaf rank by
//! distance and is kept as a leaf (it routes correctly, only that spine carries no transit);
//! give `io_guids` or `root_guids` for such fabrics.
//!
//! **Deadlock freedom and reachability.** The ranking is an [`UpDownRanking`]: every path the
//! fat-tree pass creates is up* then down*, and everything else is completed with up*/down*
//! paths. If, under the fat-tree ranks, a switch carrying CNs has no up*/down* path to some
//! destination switch carrying end ports (a degraded tree, e.g. a leaf left with uplinks only
//! to spines that lost the way down to another leaf), the ranks fall back to a single root
//! (the root of minimum eccentricity), which always connects; a note says so. Entries without
//! any up*/down* path — toward switch LIDs (spine to spine is down→up), or from switches
//! without CNs (e.g. aggregation nodes on two spines) — get a shortest escape path and are
//! counted in a note; traffic between CNs never uses them.
//!
//! **Routing order and balance** (see `ftree-balance.md`): for each LMC offset, leaves in
//! switch-index order, on each leaf its CNs in port order, then dummy targets up to the
//! fullest leaf's CN count (counters only); then the other CAs; then switch LIDs (counters
//! untouched). For one target: walk up from its leaf; at each switch pick the up group (links
//! to one parent) with the fewest routes going down through it, ties by the parent whose
//! least-loaded down group is lighter, then lower switch index; inside the group the
//! least-loaded link; the parent forwards down. Other parents of every main-path switch get
//! secondary down entries (no counter). At each main-path switch, fan down to every other
//! child group (least-loaded link, lighter groups first): the child forwards up; the link's
//! up counter is incremented **only if that fan-down reached a switch with CNs**.
//! Remaining switches are completed per target: first switches with a child that forwards
//! down get a down entry (propagating upward), then the rest go up to a parent that has an
//! entry (top-down). If that still leaves a switch that has an up*/down* path under the
//! ranking, the whole target falls back to the up*/down* BFS (least-loaded legal ports).

use super::common::{transpose_rect, unreached_note, Topo, INF};
use super::ranking::{
    code_is_legal, codes_matrix, count_illegal, escape_note, updown_cands, UpDownRanking,
};
use super::roots::{given_roots, no_legal_path_note};
use super::tree;
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::Routing;
use crate::turn::Base;
use fabric::is_service_ca;
use fabric::{Fabric, FaultMask};
use fabric::{NodeKind, NO_PORT};
use rayon::prelude::*;
use rustc_hash::FxHashSet;

mod complete;
mod state;

use complete::*;
use state::*;

/// The `ftree` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct FatTree;

/// CN flags per end (index into `t.ends`).
fn compute_nodes(t: &Topo, opts: &RouteOptions) -> Vec<bool> {
    let f = t.f;
    let cn: FxHashSet<u64> = opts.cn_guids.iter().copied().collect();
    let io: FxHashSet<u64> = opts.io_guids.iter().copied().collect();
    (0..t.ends.len())
        .map(|i| {
            let e = &t.ends[i];
            let g = f.port(e.port).guid;
            if !cn.is_empty() {
                return cn.contains(&g);
            }
            let node = f.node(t.end_node(i));
            node.kind == NodeKind::Ca && !io.contains(&g) && !is_service_ca(&node.desc)
        })
        .collect()
}

/// The tree shape ftree routes with: from `root_guids`, else the hints' roots, else detected
/// from the compute nodes (`is_cn`); with where the roots came from.
fn tree_shape(
    t: &Topo,
    opts: &RouteOptions,
    is_cn: &[bool],
    notes: &mut Vec<String>,
) -> Result<(tree::TreeShape, &'static str), EngineError> {
    let (roots, mut source) = given_roots(t, opts, notes);
    let shape = if roots.is_empty() {
        source = "the leaves (switches with compute nodes, ranked from all at once)";
        tree::detect(t, is_cn).map_err(EngineError::NotApplicable)?
    } else {
        tree::from_roots(t, &roots, is_cn)
    };
    Ok((shape, source))
}

/// The ftree ranking of the fault-free fabric under `opts`.
pub(super) fn fault_free_ranking(
    f: &Fabric,
    opts: &RouteOptions,
) -> Result<(UpDownRanking, Vec<usize>), EngineError> {
    let t = Topo::live(f, &FaultMask::none(f))?;
    let is_cn = compute_nodes(&t, opts);
    let (shape, _) = tree_shape(&t, opts, &is_cn, &mut Vec::new())?;
    let roots = shape.roots.clone();
    Ok((
        UpDownRanking::from_ranks(&t, shape.rank, shape.roots),
        roots,
    ))
}

impl Engine for FatTree {
    fn info(&self) -> &'static EngineInfo {
        &super::FTREE
    }
    /// The Up*/Down* rule of the ftree ranking (the same tree shape the engine routes with);
    /// when some pairs have no up*/down* path (the base changes VL for them), fresh VLs above
    /// the base's instead.
    fn rftr_base<'f>(&self, f: &'f Fabric, opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        let (rk, _) = fault_free_ranking(f, opts)?;
        let t = Topo::live(f, &FaultMask::none(f))?;
        let codes = codes_matrix(&t, &rk);
        let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
        let (bad, _) = count_illegal(&t, &codes, &is_source);
        Ok(super::updn::updown_base(f, &rk, bad))
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let f = t.f;
        let n = t.n;
        let mut notes = Vec::new();
        let is_cn = compute_nodes(t, opts);
        if !is_cn.iter().any(|&c| c) {
            return Err(EngineError::NotApplicable("no compute node port".into()));
        }
        let (shape, source) = tree_shape(t, opts, &is_cn, &mut notes)?;
        let rk = UpDownRanking::from_ranks(t, shape.rank.clone(), shape.roots.clone());
        let mut per_level: Vec<usize> = Vec::new();
        for s in 0..n {
            if t.alive[s] {
                let l = rk.rank[s] as usize;
                if per_level.len() <= l {
                    per_level.resize(l + 1, 0);
                }
                per_level[l] += 1;
            }
        }
        notes.push(format!(
            "{} {} from {source} (e.g. {:?}); switches per rank from the roots: {}; {} leaves",
            shape.roots.len(),
            if shape.roots.len() == 1 {
                "root"
            } else {
                "roots"
            },
            shape
                .roots
                .first()
                .map_or("", |&r| f.node(f.switches[r]).name.as_str()),
            per_level
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
            shape.leaves.len()
        ));
        if !shape.hostless_leaves.is_empty() {
            notes.push(format!(
                "{} switches without compute nodes ranked with the leaves (e.g. {:?}): below them the tree joins every leaf they reach",
                shape.hostless_leaves.len(),
                f.node(f.switches[shape.hostless_leaves[0]]).name
            ));
        }
        if !shape.upper_hosts.is_empty() {
            let k: usize = shape
                .upper_hosts
                .iter()
                .map(|&s| t.ends_on(s).iter().filter(|&&e| is_cn[e as usize]).count())
                .sum();
            notes.push(format!(
                "{k} compute-node ports sit on {} switches above the leaves (e.g. {:?}); they are routed like the others",
                shape.upper_hosts.len(),
                f.node(f.switches[shape.upper_hosts[0]]).name
            ));
        }
        let mut has_cn = vec![false; n];
        for (i, e) in t.ends.iter().enumerate() {
            if is_cn[i] {
                has_cn[e.sw as usize] = true;
            }
        }
        let codes = codes_matrix(t, &rk);
        let is_source: Vec<bool> = (0..n).map(|s| !t.ends_on(s).is_empty()).collect();
        let (bad, esc) = count_illegal(t, &codes, &is_source);
        if bad > 0 {
            notes.push(no_legal_path_note(bad));
        }

        // Phase 1 (sequential, counters): the fat-tree pass per target writes its entries.
        let mut r = Routing::empty(f);
        let stride = r.stride();
        let mut cols = vec![NO_PORT; stride * n];
        let mut lid_dest = vec![u32::MAX; stride];
        let mut ft = FtreeState::new(t, &rk, has_cn);
        let max_off = t.ends.iter().map(|e| e.nlids).max().unwrap_or(1) as usize;
        // End-port LIDs are completed right after their fat-tree pass, and the entries the
        // completion adds count in the link loads, so later completions spread over the links
        // (a leaf cabled to only some spines takes its entries for targets routed through
        // the others from its own uplinks, least loaded first).
        let mut done = vec![false; stride];
        let mut sc = CompScratch::default();
        let (mut fallbacks, mut unreached) = (0usize, 0usize);
        let mut route_one = |ft: &mut FtreeState, sw: usize, port: u8, lid: Option<usize>| {
            ft.begin();
            ft.set(sw, port, u32::MAX, 0, true);
            ft.go_up(sw, usize::MAX, true, true);
            let Some(lid) = lid.filter(|&l| l < stride) else {
                return;
            };
            lid_dest[lid] = sw as u32;
            let col = &mut cols[lid * n..(lid + 1) * n];
            for &s in &ft.touched {
                col[s as usize] = ft.next[s as usize];
            }
            // Only columns where a switch with compute nodes is left to the completion (the
            // entries that carry most traffic) are completed here, in order; the others, like
            // the switch LIDs, in parallel below.
            if !(0..n).any(|s| ft.has_cn[s] && t.alive[s] && s != sw && !ft.is_set(s)) {
                return;
            }
            let row = &codes[sw * n..(sw + 1) * n];
            let (fb, un) = complete_column(ft, &rk, row, sw, col, &mut sc);
            fallbacks += fb as usize;
            unreached += un;
            done[lid] = true;
            for (s, &p) in col.iter().enumerate() {
                if p != NO_PORT && s != sw && !ft.is_set(s) {
                    let c = ft.ch_of(s, p) as usize;
                    ft.load[c] += 1;
                }
            }
        };
        for off in 0..max_off {
            // CNs leaf by leaf, with dummies
            for s in 0..n {
                if !t.alive[s] || !ft.has_cn[s] {
                    continue;
                }
                // LMC offset o starts the leaf's CN list at o (mod count), so the LIDs of one
                // port meet different counter states and take different up links.
                let cn_here: Vec<u32> = t
                    .ends_on(s)
                    .iter()
                    .copied()
                    .filter(|&ei| is_cn[ei as usize])
                    .collect();
                let k = cn_here.len();
                for j in 0..k {
                    let ei = cn_here[(j + off) % k];
                    let e = t.ends[ei as usize];
                    let lid = (off < e.nlids as usize).then_some(e.base as usize + off);
                    route_one(&mut ft, s, e.sw_port, lid);
                }
            }
            // other end ports
            for s in 0..n {
                for &ei in t.ends_on(s) {
                    let e = t.ends[ei as usize];
                    if is_cn[ei as usize] || off >= e.nlids as usize {
                        continue;
                    }
                    route_one(&mut ft, s, e.sw_port, Some(e.base as usize + off));
                }
            }
        }
        // switch LIDs: no fat-tree pass (counters untouched); completed below like the rest
        for s in 0..n {
            let l = t.sw_lid[s] as usize;
            if t.alive[s] && l != 0 && l < stride {
                lid_dest[l] = s as u32;
                cols[l * n + s] = 0;
            }
        }
        // Phase 2 (parallel over the other LIDs, read-only counters): completion.
        let ft = &ft;
        let (fb2, un2) = cols
            .par_chunks_mut(n.max(1))
            .enumerate()
            .map_init(CompScratch::default, |sc, (lid, col)| {
                let d = lid_dest.get(lid).copied().unwrap_or(u32::MAX);
                if d == u32::MAX || done[lid] {
                    return (0usize, 0usize);
                }
                // A column the fat-tree pass filled at every live switch has nothing to
                // complete (most end-port columns of an intact tree): every entry it sets
                // points to a switch already set with fewer hops, so every chain ends at the
                // target.
                if col.iter().zip(&t.alive).all(|(&p, &a)| p != NO_PORT || !a) {
                    return (0usize, 0usize);
                }
                let d = d as usize;
                let row = &codes[d * n..(d + 1) * n];
                let (fb, un) = complete_column(ft, &rk, row, d, col, sc);
                (fb as usize, un)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let (fallbacks, unreached) = (fallbacks + fb2, unreached + un2);
        r.lft = transpose_rect(&cols, stride, n);
        // The balance pass, unless the tree is regular (the fat-tree pass balances those
        // itself, and the pass would only spend its time finding nothing to move).
        let regular = bad == 0
            && shape.upper_hosts.is_empty()
            && shape.hostless_leaves.is_empty()
            && ft.is_regular(&rk, &is_cn);
        let moves = super::rebalance::MOVE_BUDGET_PER_END * t.ends.len();
        if !regular {
            match super::rebalance::rebalance(t, &rk, &mut r, Some(&is_cn), moves, true, true) {
                Some(b) if b.moved + b.shortened > 0 => notes.push(b.note("compute-node ")),
                Some(_) => {}
                None => {
                    // (LMC > 0: the pass's first phase still runs, over every LID)
                    if let Some(k) =
                        super::rebalance::shorten_every_lid(t, &rk, &mut r, Some(&is_cn))
                            .filter(|&k| k > 0)
                    {
                        notes.push(format!(
                            "{k} entries given a shorter path under the same rules (the fat-tree pass had made them longer than the ranking needs)"
                        ));
                    }
                    notes.push(super::rebalance::skipped_note(t));
                }
            }
        }
        if bad > 0 {
            super::transition::assign_transitions(t, &rk, &mut r, opts.budget, &mut notes)?;
        }
        if fallbacks > 0 {
            notes.push(format!(
                "{fallbacks} destination LIDs could not be completed from the fat-tree pass and were routed by the up*/down* BFS"
            ));
        }
        if esc > 0 {
            notes.push(escape_note(esc));
        }
        unreached_note(t, unreached, &mut notes);
        Ok(Routed { routing: r, notes })
    }
}
