//! How `updn` and `dnup` choose their roots (or reference switches): a root file, the
//! generator's hints, the switches farthest from the end ports (a fat tree's spines), or, where
//! nothing is natural (tori, Dragonflies), the best of a few candidate root sets routed and
//! scored (see [`super::updn`]'s module documentation for the rules and their reasons).

use super::common::{eccentricities, hop_matrix, EndDest, Topo, INF};
use super::ranking::{
    code_dist, code_is_legal, codes_matrix, component_count, components, count_illegal,
    dnup_default_reference, dnup_ranks, escape_note, route_updown, single_roots, UpDownRanking,
};
use super::{tree, EngineError, RouteOptions};
use crate::tables::Routing;
use fabric::SwitchIdx;
use fabric::{Fabric, FaultMask};
use rayon::prelude::*;

/// A ranking chosen for `updn` or `dnup`, with its code matrix, its notes, and how many
/// (end-port switch, destination switch) pairs it leaves without an up*/down* path (those
/// are routed with a VL transition, `super::transition`).
pub(crate) struct Ranked {
    pub rk: UpDownRanking,
    pub codes: Vec<u16>,
    pub notes: Vec<String>,
    pub no_legal: usize,
}

impl Ranked {
    /// `notes`, then the notes for the pairs without an up*/down* path (`no_legal`) and the
    /// entries without one (`esc`, switch LIDs included), when there are any.
    pub(crate) fn new(
        rk: UpDownRanking,
        codes: Vec<u16>,
        mut notes: Vec<String>,
        no_legal: usize,
        esc: usize,
    ) -> Ranked {
        if no_legal > 0 {
            notes.push(no_legal_path_note(no_legal));
        }
        if esc > 0 {
            notes.push(escape_note(esc));
        }
        Ranked {
            rk,
            codes,
            notes,
            no_legal,
        }
    }
}

impl UpDownRanking {
    /// The ranking the `updn` engine uses for this fabric, options and mask (with its notes).
    pub fn for_updn(
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<(Self, Vec<String>), EngineError> {
        let t = Topo::live(f, mask)?;
        let r = updn_ranking(&t, mask, opts)?;
        Ok((r.rk, r.notes))
    }
}

/// Chooses the dnup ranking (see [`super::updn`]'s module docs) and returns it with its code
/// matrix and notes; fails when some end-port switch has no down*/up* path.
pub(crate) fn dnup_ranking(
    t: &Topo,
    mask: &FaultMask,
    opts: &RouteOptions,
) -> Result<Ranked, EngineError> {
    let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
    // A fat tree: rank 0 = its leaves (switches with hosts, aggregation nodes aside).
    if let Ok(shape) = tree::detect(t, &tree::host_ends(t, &[])) {
        if shape.leaves.len() < t.num_alive() {
            let default_ref = dnup_default_reference(t, &shape.level);
            let rk = UpDownRanking::dnup_from(t, shape.level, shape.leaves, default_ref.as_slice());
            return Ok(dnup_finish(t, rk, &is_source, "leaves of the fat tree"));
        }
    }
    let (rank, roots) = dnup_ranks(t)
        .ok_or_else(|| EngineError::NotApplicable("no switch has a live end port".into()))?;
    // Every live switch at rank 0 (end ports everywhere) on a connected fabric: the order
    // is an up*/down* order from the reference switches, chosen like updn's root set.
    if let Some(c) = chosen_root_set(t, mask, Kind::DnUp, opts) {
        let notes = vec![
            format!("{} switches with end ports at rank 0", c.rk.roots.len()),
            c.note.clone(),
        ];
        return Ok(c.finish(notes));
    }
    let default_ref = dnup_default_reference(t, &rank);
    let rk = UpDownRanking::dnup_from(t, rank, roots, default_ref.as_slice());
    Ok(dnup_finish(t, rk, &is_source, "switches with end ports"))
}

/// Codes and notes of a dnup ranking whose rank 0 are `what`.
fn dnup_finish(t: &Topo, rk: UpDownRanking, is_source: &[bool], what: &str) -> Ranked {
    let codes = codes_matrix(t, &rk);
    let (bad, esc) = count_illegal(t, &codes, is_source);
    let notes = vec![format!("{} {what} at rank 0", rk.roots.len())];
    Ranked::new(rk, codes, notes, bad, esc)
}

/// Chooses the updn ranking (see the module docs) and returns it with its code matrix.
pub(crate) fn updn_ranking(
    t: &Topo,
    mask: &FaultMask,
    opts: &RouteOptions,
) -> Result<Ranked, EngineError> {
    let mut notes = Vec::new();
    let mut hop: Option<Vec<u16>> = None;
    let (mut roots, mut source) = given_roots(t, opts, &mut notes);
    // The tree's own ranks when its roots are taken: BFS from the roots would put a spine
    // reached only through leaves (its cores hang off it alone) below them.
    let mut tree_rank: Option<Vec<u32>> = None;
    if roots.is_empty() {
        if let Some(shape) = tree_top(t) {
            roots = shape.roots;
            tree_rank = Some(shape.rank);
            source = "top level of the fat tree (ranked from its leaves)";
        }
    }
    if roots.is_empty() {
        // A connected fabric: route a few candidate root sets and keep the best (module docs).
        if let Some(c) = chosen_root_set(t, mask, Kind::UpDn, opts) {
            notes.insert(0, c.note.clone());
            return Ok(c.finish(notes));
        }
        let h = hop_matrix(t);
        let ecc = eccentricities(t, &h);
        let comp = components(t);
        let ncomp = component_count(&comp);
        let mut best = vec![INF; ncomp];
        for s in 0..t.n {
            if t.alive[s] {
                let c = comp[s] as usize;
                best[c] = best[c].min(ecc[s]);
            }
        }
        // one centre per component (lowest GUID among the minimum-eccentricity switches)
        let mut centre: Vec<Option<usize>> = vec![None; ncomp];
        for s in 0..t.n {
            if t.alive[s] && ecc[s] == best[comp[s] as usize] {
                let c = comp[s] as usize;
                if centre[c].is_none_or(|o| (t.guid(s), s) < (t.guid(o), o)) {
                    centre[c] = Some(s);
                }
            }
        }
        roots = centre.into_iter().flatten().collect();
        hop = Some(h);
        source = "graph centre (minimum eccentricity, lowest GUID)";
    }
    let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
    let rk = match tree_rank {
        Some(rank) => UpDownRanking::from_ranks(t, rank, roots),
        None => UpDownRanking::from_roots(t, &roots),
    };
    let codes = codes_matrix(t, &rk);
    let (bad, esc) = count_illegal(t, &codes, &is_source);
    if bad > 0 && opts.budget.vls == 1 {
        // One VL: no transition possible. Rank from a single root per component (the
        // candidate of minimum eccentricity), where every switch reaches every other.
        let h = match hop {
            Some(h) => h,
            None => hop_matrix(t),
        };
        let ecc = eccentricities(t, &h);
        let single = single_roots(t, &rk.roots, &ecc);
        let rk2 = UpDownRanking::from_roots(t, &single);
        let codes2 = codes_matrix(t, &rk2);
        notes.insert(
            0,
            format!(
                "{} roots from the {source} left {bad} (end-port switch, destination) pairs without an up*/down* path and the budget has one VL; ranked from a single root per component instead (switch GUID {:#018x})",
                rk.roots.len(),
                single.first().map_or(0, |&s| t.guid(s))
            ),
        );
        // A single root connects every pair legally.
        return Ok(Ranked::new(rk2, codes2, notes, 0, 0));
    }
    let n = rk.roots.len();
    let roots = if n == 1 { "root" } else { "roots" };
    notes.insert(0, format!("{n} {roots} from the {source}"));
    Ok(Ranked::new(rk, codes, notes, bad, esc))
}

/// updn's roots when none are given and the fabric is a fat tree: the top of its detected
/// shape (leaves = switches with hosts, aggregation nodes aside; see `tree`), ranked from its
/// leaves, unless that top is every switch. A function of the live fabric alone, cheap to
/// derive again: nothing to pin (pinning its roots as a root list would rank from them
/// instead, a different routing).
pub(crate) fn tree_top(t: &Topo) -> Option<tree::TreeShape> {
    let shape = tree::detect(t, &tree::host_ends(t, &[])).ok()?;
    (!shape.roots.is_empty() && shape.roots.len() < t.num_alive()).then_some(shape)
}

/// The roots the caller gives: `root_guids` (live switch node GUIDs; others are ignored with a
/// note), else the topology hints' roots; with where they came from. Empty when neither names
/// a live switch.
pub(crate) fn given_roots(
    t: &Topo,
    opts: &RouteOptions,
    notes: &mut Vec<String>,
) -> (Vec<usize>, &'static str) {
    let (roots, bad) = t.resolve_switch_guids(&opts.root_guids);
    if !bad.is_empty() {
        notes.push(format!(
            "{} root GUIDs are not live switch node GUIDs and were ignored",
            bad.len()
        ));
    }
    if !roots.is_empty() {
        return (roots, "root GUID list");
    }
    let hinted =
        t.f.hints
            .roots
            .iter()
            .filter_map(|&r| t.f.switch_of(r))
            .map(SwitchIdx::idx)
            .filter(|&s| t.alive[s])
            .collect();
    (hinted, "topology hints")
}

/// The note for (end-port switch, destination switch) pairs a ranking leaves without an
/// up*/down* path: they are routed with a VL transition (`transition`), or not at all when
/// the budget has one VL.
pub(crate) fn no_legal_path_note(bad: usize) -> String {
    format!(
        "{bad} (end-port switch, destination switch) pairs have no up*/down* path under this ranking (e.g. aggregation nodes on two roots, missing cables); the ranking is kept and they are routed with a VL transition"
    )
}

// ---- root choice by routing candidates -------------------------------------------------------

/// Candidates are routed and scored only while one candidate's work — live switches × (live
/// end ports + directed live switch-to-switch channels), what filling the base-LID tables and
/// computing the legal distances cost — is at most this; above it the default root is kept
/// without evaluation.
pub const EVAL_MAX_WORK: u64 = 1 << 23;
/// Work budget of the whole evaluation: the number of candidates is this divided by one
/// candidate's work, clamped to [`EVAL_MIN_CANDIDATES`]..=[`EVAL_MAX_CANDIDATES`].
pub const EVAL_BUDGET: u64 = 1 << 25;
/// Fewest candidates routed when candidates are evaluated at all.
pub const EVAL_MIN_CANDIDATES: usize = 8;
/// Most candidates routed.
pub const EVAL_MAX_CANDIDATES: usize = 64;

/// How many candidate root sets to route on this live fabric (1 = no evaluation: the fabric
/// is too big or has fewer than two live switches). Depends on the fabric only, never on the
/// thread count.
pub fn eval_candidates(t: &Topo) -> usize {
    let n = t.num_alive() as u64;
    let work = n * (t.ends.len() as u64 + t.adj.len() as u64);
    if n < 2 || work > EVAL_MAX_WORK {
        return 1;
    }
    ((EVAL_BUDGET / work.max(1)) as usize).clamp(EVAL_MIN_CANDIDATES, EVAL_MAX_CANDIDATES)
}

/// Candidate root sets, at most `k`: first `{f}` for each switch of `firsts` (the engines'
/// former defaults, so the choice is never worse than they were), then families of base
/// switches: `firsts`, then the other live switches by (eccentricity, sum of distances to every
/// switch, GUID, index). Each base `c` contributes, in this order, `{c}`, its *lower star*
/// `{c}` ∪ {neighbours with a smaller GUID than `c`} and the pairs `{c, b}` for its
/// neighbours `b` by GUID (duplicates skipped). Every such set is valid: its members have
/// rank 0 and are all adjacent to the member with the largest GUID (`c` or `b`), the top of
/// the order, so every switch goes up to its nearest root, up to that top root and down from
/// there to any switch.
fn root_candidates(t: &Topo, hop: &[u16], firsts: &[usize], k: usize) -> Vec<Vec<usize>> {
    let n = t.n;
    let key: Vec<(u16, u64)> = (0..n)
        .into_par_iter()
        .map(|u| {
            if !t.alive[u] {
                return (INF, u64::MAX);
            }
            hop[u * n..(u + 1) * n]
                .iter()
                .filter(|&&d| d != INF)
                .fold((0u16, 0u64), |(e, s), &d| (e.max(d), s + d as u64))
        })
        .collect();
    let mut bases: Vec<usize> = (0..n)
        .filter(|&s| t.alive[s] && !firsts.contains(&s))
        .collect();
    bases.sort_by_key(|&s| (key[s], t.guid(s), s));
    let mut out: Vec<Vec<usize>> = Vec::with_capacity(k);
    let mut seen: rustc_hash::FxHashSet<Vec<usize>> = Default::default();
    let mut push = |mut set: Vec<usize>, out: &mut Vec<Vec<usize>>| {
        set.sort_unstable();
        set.dedup();
        if out.len() < k && seen.insert(set.clone()) {
            out.push(set);
        }
    };
    for &c in firsts {
        push(vec![c], &mut out);
    }
    for &c in firsts.iter().chain(&bases) {
        if out.len() >= k {
            break;
        }
        let mut nb: Vec<usize> = t.links(c).iter().map(|a| a.peer as usize).collect();
        nb.sort_unstable_by_key(|&b| (t.guid(b), b));
        nb.dedup();
        push(vec![c], &mut out);
        let mut star: Vec<usize> = nb
            .iter()
            .copied()
            .filter(|&b| t.guid(b) < t.guid(c))
            .collect();
        if !star.is_empty() {
            star.push(c);
            push(star, &mut out);
        }
        for &b in &nb {
            push(vec![c, b], &mut out);
        }
    }
    out
}

/// The lowest-GUID live switch (ties by index).
fn lowest_guid(t: &Topo) -> Option<usize> {
    (0..t.n)
        .filter(|&s| t.alive[s])
        .min_by_key(|&s| (t.guid(s), s))
}

/// Which engine a root set is chosen for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// updn: the set is the roots; the former default is the graph centre.
    UpDn,
    /// dnup on a fabric whose live switches all carry end ports: the set is the tie-breaking
    /// reference; the former default is the lowest-GUID switch.
    DnUp,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::UpDn => "roots",
            Kind::DnUp => "tie-breaking reference switches",
        }
    }
    fn default_name(self) -> &'static str {
        match self {
            Kind::UpDn => "graph centre",
            Kind::DnUp => "lowest-GUID switch",
        }
    }
    /// dnup ranks of `t` when every live switch has rank 0 (`Some(None)` for updn; `None` when
    /// dnup's ranking is not flat there).
    fn flat_ranks(self, t: &Topo) -> Option<Option<(Vec<u32>, Vec<usize>)>> {
        match self {
            Kind::UpDn => Some(None),
            Kind::DnUp => {
                let (rank, roots) = dnup_ranks(t)?;
                (0..t.n)
                    .all(|s| !t.alive[s] || rank[s] == 0)
                    .then_some(Some((rank, roots)))
            }
        }
    }
}

/// The ranking of `kind` from root (or reference) set `set`.
fn ranking_from(t: &Topo, dn: Option<&(Vec<u32>, Vec<usize>)>, set: &[usize]) -> UpDownRanking {
    match dn {
        None => UpDownRanking::from_roots(t, set),
        Some((rank, roots)) => UpDownRanking::dnup_from(t, rank.clone(), roots.clone(), set),
    }
}

fn is_connected(t: &Topo) -> bool {
    components(t).iter().all(|&c| c == 0 || c == u32::MAX)
}

/// The evaluated root-set choice on `t` (module docs); `None` when it does not apply (too big,
/// disconnected, dnup ranking not flat).
fn evaluate_on(t: &Topo, kind: Kind, opts: &RouteOptions) -> Option<Evaluation> {
    let k = eval_candidates(t);
    if k <= 1 || !is_connected(t) {
        return None;
    }
    let dn = kind.flat_ranks(t)?;
    let h = hop_matrix(t);
    let ecc = eccentricities(t, &h);
    let centre = (0..t.n)
        .filter(|&s| t.alive[s])
        .min_by_key(|&s| (ecc[s], t.guid(s), s))?;
    let low = lowest_guid(t)?;
    let mut firsts = vec![centre];
    if low != centre {
        firsts.push(low);
    }
    let cands = root_candidates(t, &h, &firsts, k);
    let default = match kind {
        Kind::UpDn => centre,
        Kind::DnUp => low,
    };
    let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
    evaluate(t, opts, &is_source, &cands, default, |c| {
        ranking_from(t, dn.as_ref(), c)
    })
}

/// A chosen root (or reference) set with its ranking, codes and note.
struct Chosen {
    rk: UpDownRanking,
    codes: Vec<u16>,
    esc: usize,
    note: String,
}

impl Chosen {
    /// The ranking, codes and `notes` (plus the escape note when some entries need one).
    /// Every candidate set leaves each end-port pair an up*/down* path.
    fn finish(self, notes: Vec<String>) -> Ranked {
        Ranked::new(self.rk, self.codes, notes, 0, self.esc)
    }
}

/// The root set chosen for `kind` (module docs). Under a fault mask the set chosen for the
/// fault-free fabric is kept while it stays valid (members alive, the live fabric connected,
/// every end-port pair with an up*/down* path), so faults do not move the roots and a
/// reconfiguration changes no more paths than it must; otherwise the candidates are routed on
/// the live fabric.
fn chosen_root_set(t: &Topo, mask: &FaultMask, kind: Kind, opts: &RouteOptions) -> Option<Chosen> {
    if !mask.is_empty() && is_connected(t) {
        let t0 = Topo::new(t.f, &FaultMask::none(t.f));
        if let (Some(ev0), Some(dn)) = (evaluate_on(&t0, kind, opts), kind.flat_ranks(t)) {
            let set = &ev0.best.key.3;
            if set.iter().all(|&s| t.alive[s]) {
                let rk = ranking_from(t, dn.as_ref(), set);
                let codes = codes_matrix(t, &rk);
                let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
                let (bad, esc) = count_illegal(t, &codes, &is_source);
                if bad == 0 {
                    let note = format!(
                        "{} of the fault-free fabric kept (still valid under the faults): {}",
                        kind.what(),
                        ev0.note(kind, &t0)
                    );
                    return Some(Chosen {
                        rk,
                        codes,
                        esc,
                        note,
                    });
                }
            }
        }
    }
    let ev = evaluate_on(t, kind, opts)?;
    let note = ev.note(kind, t);
    let b = ev.best;
    Some(Chosen {
        rk: b.rk,
        codes: b.codes,
        esc: b.esc,
        note,
    })
}

/// Score of an up/down routing built from `codes`: (end-port pairs not delivered, max link
/// load, total switch hops), over (source end port, destination end port base LID) pairs as in
/// [`crate::metrics`]: the load of a directed switch-to-switch channel is the number of such
/// pairs routed over it, and the total hops are the sum of the loads.
///
/// Per destination end port the routes form a tree whose legally routed switches forward to
/// a switch one legal hop closer (the engine's candidate rule), so the flows are accumulated
/// in one pass over the switches by decreasing legal distance. End-port switches without a
/// legal path count as not delivered (the engine never leaves any when it is used).
fn route_score(t: &Topo, codes: &[u16], r: &Routing) -> (u64, u64, u64) {
    let n = t.n;
    // per switch: output port -> (channel, peer switch)
    let mut off = vec![0usize; n + 1];
    for s in 0..n {
        off[s + 1] = off[s] + t.f.node(t.f.switches[s]).nports as usize + 1;
    }
    let mut next = vec![(u32::MAX, u32::MAX); off[n]];
    for s in 0..n {
        for a in t.links(s) {
            next[off[s] + a.port as usize] = (a.ch, a.peer);
        }
    }
    let src: Vec<u64> = (0..n)
        .map(|s| {
            if t.alive[s] {
                t.ends_on(s).len() as u64
            } else {
                0
            }
        })
        .collect();
    let nch = 2 * t.f.links.len();
    let stride = r.stride();
    struct Acc {
        load: Vec<u64>,
        lost: u64,
        order: Vec<u32>,
        cnt: Vec<u32>,
        flow: Vec<u64>,
    }
    let init = || Acc {
        load: vec![0u64; nch],
        lost: 0,
        order: Vec::new(),
        cnt: Vec::new(),
        flow: vec![0u64; n],
    };
    let acc = (0..n)
        .into_par_iter()
        .fold(init, |mut acc, d| {
            let ends = t.ends_on(d);
            if !t.alive[d] || ends.is_empty() {
                return acc;
            }
            let row = &codes[d * n..(d + 1) * n];
            // legally routed switches by decreasing legal distance (counting sort)
            let mut maxd = 0usize;
            for s in 0..n {
                let c = row[s];
                if c != INF && code_is_legal(c) {
                    maxd = maxd.max(code_dist(c) as usize);
                } else if s != d {
                    acc.lost += src[s] * ends.len() as u64;
                }
            }
            acc.cnt.clear();
            acc.cnt.resize(maxd + 2, 0);
            for &c in row {
                if c != INF && code_is_legal(c) {
                    acc.cnt[maxd - code_dist(c) as usize + 1] += 1;
                }
            }
            for i in 1..acc.cnt.len() {
                acc.cnt[i] += acc.cnt[i - 1];
            }
            let total = acc.cnt[maxd + 1] as usize;
            acc.order.clear();
            acc.order.resize(total, 0);
            for (s, &c) in row.iter().enumerate() {
                if c != INF && code_is_legal(c) {
                    let k = &mut acc.cnt[maxd - code_dist(c) as usize];
                    acc.order[*k as usize] = s as u32;
                    *k += 1;
                }
            }
            for &ei in ends {
                let lid = t.ends[ei as usize].base as usize;
                if lid >= stride {
                    acc.lost += acc.order.iter().map(|&s| src[s as usize]).sum::<u64>() - src[d];
                    continue;
                }
                for &s in &acc.order {
                    acc.flow[s as usize] = 0;
                }
                for &s in &acc.order {
                    let s = s as usize;
                    if s == d {
                        continue;
                    }
                    let fl = acc.flow[s] + src[s];
                    if fl == 0 {
                        continue;
                    }
                    let p = r.lft[s * stride + lid] as usize;
                    match (off[s] + p < off[s + 1]).then(|| next[off[s] + p]) {
                        Some((ch, peer)) if ch != u32::MAX && code_is_legal(row[peer as usize]) => {
                            acc.load[ch as usize] += fl;
                            acc.flow[peer as usize] += fl;
                        }
                        _ => acc.lost += fl,
                    }
                }
            }
            acc
        })
        .map(|a| (a.load, a.lost))
        .reduce(
            || (vec![0u64; nch], 0),
            |(mut a, la), (b, lb)| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += y;
                }
                (a, la + lb)
            },
        );
    let (load, lost) = acc;
    let max = load.iter().copied().max().unwrap_or(0);
    (lost, max, load.iter().sum())
}

/// A routed candidate.
struct Evaluated {
    /// (pairs not delivered, max link load, total switch hops, candidate root set as sorted
    /// switch indices).
    key: (u64, u64, u64, Vec<usize>),
    rk: UpDownRanking,
    codes: Vec<u16>,
    esc: usize,
}

/// The topology candidates are routed on: base LIDs only (LMC 0) and no switch LIDs. The
/// generic builder routes every end port's base LID before any other LID and does not count
/// switch LIDs in its balancing, so the base-LID entries — all the score looks at — are
/// exactly those of the full tables; the winner is routed in full afterwards.
fn eval_topo<'a>(t: &Topo<'a>) -> Topo<'a> {
    Topo {
        f: t.f,
        n: t.n,
        alive: t.alive.clone(),
        adj_start: t.adj_start.clone(),
        adj: t.adj.clone(),
        ends: t.ends.iter().map(|e| EndDest { nlids: 1, ..*e }).collect(),
        ends_start: t.ends_start.clone(),
        ends_of: t.ends_of.clone(),
        sw_lid: vec![0; t.n],
        dead_end_lids: t.dead_end_lids,
        mask: t.mask.clone(),
    }
}

/// The outcome of [`evaluate`]: the best candidate, plus the score of the engine's former
/// default root and how many candidates were routed.
struct Evaluation {
    best: Evaluated,
    default: (Vec<usize>, (u64, u64, u64)),
    routed: usize,
}

impl Evaluation {
    fn note(&self, kind: Kind, t: &Topo) -> String {
        let (what, default_name) = (kind.what(), kind.default_name());
        let b = &self.best.key;
        let (ds, d) = &self.default;
        let guids = |set: &[usize]| {
            set.iter()
                .map(|&s| format!("{:#x}", t.guid(s)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        format!(
            "{what} chosen by routing {} candidate root sets and keeping the lowest (max link load, total hops): switch GUIDs {}, max link load {}, avg hops {:.3} (former default, the {default_name} {}: {}, {:.3})",
            self.routed,
            guids(&b.3),
            b.1,
            avg(b.2, t),
            guids(ds),
            d.1,
            avg(d.2, t),
        )
    }
}

fn avg(hops: u64, t: &Topo) -> f64 {
    let e = t.ends.len() as f64;
    let pairs = e * (e - 1.0);
    if pairs > 0.0 {
        hops as f64 / pairs
    } else {
        0.0
    }
}

/// Routes every candidate root set (in parallel; each result is independent of the thread
/// count) with the ranking `make` builds from it, drops those that leave end-port pairs without
/// an up*/down* path, and keeps the lowest (not delivered, max link load, total hops, root
/// set). `None` when no candidate is valid.
fn evaluate<F>(
    t: &Topo,
    opts: &RouteOptions,
    is_source: &[bool],
    cands: &[Vec<usize>],
    default: usize,
    make: F,
) -> Option<Evaluation>
where
    F: Fn(&[usize]) -> UpDownRanking + Sync,
{
    let first = vec![default];
    let te = eval_topo(t);
    let one = |c: &Vec<usize>| -> Option<Evaluated> {
        let rk = make(c);
        let codes = codes_matrix(&te, &rk);
        let (bad, esc) = count_illegal(&te, &codes, is_source);
        if bad > 0 {
            return None;
        }
        let (routing, _) = route_updown(&te, &rk, &codes, opts);
        let (lost, max, hops) = route_score(&te, &codes, &routing);
        Some(Evaluated {
            key: (lost, max, hops, c.clone()),
            rk,
            codes,
            esc,
        })
    };
    type Acc = (Option<Evaluated>, Option<(u64, u64, u64)>, usize);
    let (best, default, routed): Acc = cands
        .par_iter()
        .map(|c| {
            let e = one(c);
            let d = e
                .as_ref()
                .filter(|_| *c == first)
                .map(|e| (e.key.0, e.key.1, e.key.2));
            let n = e.is_some() as usize;
            (e, d, n)
        })
        .reduce(
            || (None, None, 0),
            |a: Acc, b: Acc| {
                let best = match (a.0, b.0) {
                    (Some(x), Some(y)) => Some(if y.key < x.key { y } else { x }),
                    (x, y) => x.or(y),
                };
                (best, a.1.or(b.1), a.2 + b.2)
            },
        );
    let best = best?;
    let default = default.unwrap_or((best.key.0, best.key.1, best.key.2));
    Some(Evaluation {
        best,
        default: (first, default),
        routed,
    })
}
