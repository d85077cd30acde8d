//! Up*/Down* (`updn`) and Down*/Up* (`dnup`), plus the up/down machinery shared with `ftree`
//! and (later) RFTR: a ranking, the direction of every inter-switch channel and the turn rule.
//!
//! **Direction.** Switches are totally ordered by a position (`pos`, smaller = "higher"): for
//! `updn` by (rank, larger GUID first, switch index), rank = BFS distance from the roots — so a
//! channel is *up* when it leads to a lower rank, or to the larger GUID on equal rank, as in
//! OpenSM. A legal path is up* then down*: the only illegal turn is down → up. Because the
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
//!   switch-to-switch channels); `k` = [`EVAL_BUDGET`] / `W` clamped to
//!   [`EVAL_MIN_CANDIDATES`]..=[`EVAL_MAX_CANDIDATES`] (8..=64), and no evaluation at all
//!   (graph centre kept) when `W` > [`EVAL_MAX_WORK`] (2^23: a 1,000-switch torus with 2 HCAs
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

use super::common::{
    eccentricities, generic_lfts, generic_order, hop_matrix, unreached_note, EndDest,
    GenericParams, Topo, INF,
};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::Routing;
use crate::turn::{TurnRule, UpDownRule};
use fabric::{ChannelId, Fabric, FaultMask};
use rayon::prelude::*;
use std::sync::Arc;

/// Direction of a channel under an up/down ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Up,
    Down,
    /// Not a live inter-switch channel (end-port links, channels of dead or unranked switches).
    None,
}

/// An up/down ranking of the live switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpDownRanking {
    /// Per switch index: rank (BFS distance from the roots; `u32::MAX` = dead).
    pub rank: Vec<u32>,
    /// Roots (switch indices) the ranks were computed from.
    pub roots: Vec<usize>,
    /// Per switch index: position in the total order (smaller = higher; `u32::MAX` = dead).
    pub pos: Vec<u32>,
}

impl UpDownRanking {
    /// Up*/Down* ranking from `roots` (switch indices): rank = BFS distance, order by (rank,
    /// larger GUID first, index). Live switches the roots do not reach get extra roots (lowest
    /// switch index of each such component).
    pub fn from_roots(t: &Topo, roots: &[usize]) -> Self {
        let mut roots: Vec<usize> = roots
            .iter()
            .copied()
            .filter(|&r| r < t.n && t.alive[r])
            .collect();
        let mut rank = bfs_levels(t, &roots);
        while let Some(extra) = (0..t.n).find(|&s| t.alive[s] && rank[s] == u32::MAX) {
            roots.push(extra);
            rank = bfs_levels(t, &roots);
        }
        let key = |s: usize| (rank[s], std::cmp::Reverse(t.guid(s)), s);
        let pos = positions(t, key);
        UpDownRanking { rank, roots, pos }
    }

    /// Down*/Up* ranking: rank 0 = switches with live end ports. `None` if there are none.
    /// Internally the order is reversed (so "legal = up* then down*" holds for the machinery).
    /// Ties of equal rank are broken by the distance from the default reference switch (the
    /// lowest-GUID switch of maximum rank); [`DnUp`] may pick another one (module docs).
    pub fn dnup(t: &Topo) -> Option<Self> {
        let (rank, roots) = dnup_ranks(t)?;
        let reference = dnup_default_reference(t, &rank);
        Some(Self::dnup_from(t, rank, roots, reference.as_slice()))
    }

    /// The Down*/Up* order from dnup ranks with ties broken by the BFS distance from the
    /// `reference` switches (then GUID).
    fn dnup_from(t: &Topo, rank: Vec<u32>, roots: Vec<usize>, reference: &[usize]) -> Self {
        let second = if reference.is_empty() {
            vec![0; t.n]
        } else {
            bfs_levels(t, reference)
        };
        // Machinery order: higher dnup rank = "higher" (smaller pos); ties by distance from the
        // reference switch, then GUID.
        let key = |s: usize| {
            (
                std::cmp::Reverse(rank[s]),
                second[s],
                std::cmp::Reverse(t.guid(s)),
                s,
            )
        };
        let pos = positions(t, key);
        UpDownRanking { rank, roots, pos }
    }

    /// True when going from switch index `from` to `to` is an up move.
    #[inline]
    pub fn is_up_sw(&self, from: usize, to: usize) -> bool {
        self.pos[to] < self.pos[from]
    }

    /// Direction of channel `c` (for `dnup` rankings, in the mirrored sense used internally:
    /// a legal path is always `Up* Down*` under this function).
    pub fn channel_dir(&self, f: &Fabric, c: ChannelId) -> Dir {
        let Some(l) = f.links.get(c.link().idx()) else {
            return Dir::None;
        };
        let (src, dst) = if c.0 & 1 == 0 { (l.a, l.b) } else { (l.b, l.a) };
        let a = f.switch_index[f.port(src).node.idx()];
        let b = f.switch_index[f.port(dst).node.idx()];
        if a == u32::MAX || b == u32::MAX || a == b {
            return Dir::None;
        }
        let (pa, pb) = (self.pos[a as usize], self.pos[b as usize]);
        if pa == u32::MAX || pb == u32::MAX {
            return Dir::None;
        }
        if pb < pa {
            Dir::Up
        } else {
            Dir::Down
        }
    }

    /// The turn rule: entering a switch on `in_c` and leaving on `out_c` is legal unless `in_c`
    /// goes down and `out_c` goes up. Injection from / ejection to end ports is always legal.
    pub fn is_legal_turn(&self, f: &Fabric, in_c: ChannelId, out_c: ChannelId) -> bool {
        !(self.channel_dir(f, in_c) == Dir::Down && self.channel_dir(f, out_c) == Dir::Up)
    }

    /// The ranking the `updn` engine uses for this fabric, options and mask (with its notes).
    pub fn for_updn(
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<(Self, Vec<String>), EngineError> {
        let t = Topo::live(f, mask)?;
        let (rk, _codes, notes) = updn_ranking(&t, mask, opts)?;
        Ok((rk, notes))
    }
}

/// Multi-source BFS levels over live switches (`u32::MAX` = not reached).
pub fn bfs_levels(t: &Topo, sources: &[usize]) -> Vec<u32> {
    let mut lvl = vec![u32::MAX; t.n];
    let mut q: Vec<u32> = Vec::with_capacity(t.n);
    for &s in sources {
        if s < t.n && t.alive[s] && lvl[s] == u32::MAX {
            lvl[s] = 0;
            q.push(s as u32);
        }
    }
    let mut h = 0;
    while h < q.len() {
        let u = q[h] as usize;
        h += 1;
        for a in t.links(u) {
            let p = a.peer as usize;
            if lvl[p] == u32::MAX {
                lvl[p] = lvl[u] + 1;
                q.push(p as u32);
            }
        }
    }
    lvl
}

/// dnup ranks (BFS distance from the switches with live end ports; components without any
/// get an extra root) and the rank-0 switches. `None` if no switch has a live end port.
fn dnup_ranks(t: &Topo) -> Option<(Vec<u32>, Vec<usize>)> {
    let mut roots: Vec<usize> = (0..t.n)
        .filter(|&s| t.alive[s] && !t.ends_on(s).is_empty())
        .collect();
    if roots.is_empty() {
        return None;
    }
    let mut rank = bfs_levels(t, &roots);
    while let Some(extra) = (0..t.n).find(|&s| t.alive[s] && rank[s] == u32::MAX) {
        roots.push(extra);
        rank = bfs_levels(t, &roots);
    }
    Some((rank, roots))
}

/// The default dnup reference switch: the lowest-GUID live switch of maximum rank.
fn dnup_default_reference(t: &Topo, rank: &[u32]) -> Option<usize> {
    let maxr = (0..t.n)
        .filter(|&s| t.alive[s])
        .map(|s| rank[s])
        .max()
        .unwrap_or(0);
    (0..t.n)
        .filter(|&s| t.alive[s] && rank[s] == maxr)
        .min_by_key(|&s| (t.guid(s), s))
}

fn positions<K: Ord>(t: &Topo, key: impl Fn(usize) -> K) -> Vec<u32> {
    let mut order: Vec<usize> = (0..t.n).filter(|&s| t.alive[s]).collect();
    order.sort_by_key(|&s| key(s));
    let mut pos = vec![u32::MAX; t.n];
    for (i, &s) in order.iter().enumerate() {
        pos[s] = i as u32;
    }
    pos
}

/// Connected-component id of every live switch (`u32::MAX` = dead).
pub fn components(t: &Topo) -> Vec<u32> {
    let mut comp = vec![u32::MAX; t.n];
    let mut q = Vec::new();
    let mut next = 0u32;
    for s in 0..t.n {
        if !t.alive[s] || comp[s] != u32::MAX {
            continue;
        }
        comp[s] = next;
        q.clear();
        q.push(s);
        let mut h = 0;
        while h < q.len() {
            let u = q[h];
            h += 1;
            for a in t.links(u) {
                let p = a.peer as usize;
                if comp[p] == u32::MAX {
                    comp[p] = next;
                    q.push(p);
                }
            }
        }
        next += 1;
    }
    comp
}

// ---- per-destination codes ---------------------------------------------------------------
//
// code (u16) of switch s toward destination switch d:
//   INF                  unreachable (other component)
//   bit 15 clear         legal: (distance << 1) | 1 if labelled D (forwards down), 0 if U
//   bit 15 set           escape: no legal path; (0x8000 | k) = k hops to a legally routed switch

const ESC: u16 = 0x8000;

#[inline]
pub(crate) fn code_is_legal(c: u16) -> bool {
    c & ESC == 0
}
#[inline]
pub(crate) fn code_dist(c: u16) -> u16 {
    c >> 1
}
#[inline]
pub(crate) fn code_down(c: u16) -> bool {
    c & 1 == 1
}

/// Scratch buffers for [`dest_codes`].
#[derive(Debug, Default)]
pub(crate) struct CodeScratch {
    q: Vec<u32>,
    q2: Vec<u32>,
    alt: Vec<u16>,
}

/// Greedy labelled BFS: each switch takes its shortest legal distance, `D` preferred at equal
/// distance. Returns the number of switches with a legal path.
fn greedy_codes(
    t: &Topo,
    rk: &UpDownRanking,
    d: usize,
    code: &mut [u16],
    q: &mut Vec<u32>,
) -> usize {
    code.fill(INF);
    q.clear();
    code[d] = 1; // distance 0, D
    q.push(d as u32);
    let mut h = 0;
    while h < q.len() {
        let u = q[h] as usize;
        h += 1;
        let cu = code[u];
        let nd = (code_dist(cu) + 1).min(0x3FFE);
        for a in t.links(u) {
            let s = a.peer as usize;
            let up = rk.is_up_sw(s, u); // the packet moves s -> u
            if !up && !code_down(cu) {
                continue; // would be down -> up at u
            }
            let nc = (nd << 1) | (!up as u16);
            let cs = code[s];
            if cs == INF {
                code[s] = nc;
                q.push(s as u32);
            } else if code_dist(cs) == nd && !up {
                code[s] = cs | 1;
            }
        }
    }
    q.len()
}

/// Complete labelled BFS: every switch with an all-down path is labelled `D` (shortest
/// all-down distance), the others go up toward the nearest switch with a path. Reaches every
/// switch that has any legal path. Returns that number.
fn complete_codes(
    t: &Topo,
    rk: &UpDownRanking,
    d: usize,
    code: &mut [u16],
    a: &mut Vec<u32>,
    b: &mut Vec<u32>,
) -> usize {
    code.fill(INF);
    a.clear();
    b.clear();
    code[d] = 1;
    a.push(d as u32);
    let mut h = 0;
    while h < a.len() {
        let u = a[h] as usize;
        h += 1;
        let nd = (code_dist(code[u]) + 1).min(0x3FFE);
        for l in t.links(u) {
            let s = l.peer as usize;
            if code[s] == INF && !rk.is_up_sw(s, u) {
                code[s] = (nd << 1) | 1;
                a.push(s as u32);
            }
        }
    }
    // U switches: merge the D list (non-decreasing distance) with the U queue.
    let (mut ia, mut ib) = (0, 0);
    loop {
        let take_a = match (a.get(ia), b.get(ib)) {
            (Some(&x), Some(&y)) => code_dist(code[x as usize]) <= code_dist(code[y as usize]),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let u = if take_a {
            ia += 1;
            a[ia - 1]
        } else {
            ib += 1;
            b[ib - 1]
        } as usize;
        let nd = (code_dist(code[u]) + 1).min(0x3FFE);
        for l in t.links(u) {
            let s = l.peer as usize;
            if code[s] == INF && rk.is_up_sw(s, u) {
                code[s] = nd << 1;
                b.push(s as u32);
            }
        }
    }
    a.len() + b.len()
}

/// Fills `code` (length n) for destination switch `d` under ranking `rk`: the greedy
/// (shortest) labelling when it reaches every switch that has a legal path, else the complete
/// labelling; then escape distances for switches without a legal path.
pub(crate) fn dest_codes(
    t: &Topo,
    rk: &UpDownRanking,
    d: usize,
    full: usize,
    code: &mut [u16],
    sc: &mut CodeScratch,
) {
    if !t.alive[d] {
        code.fill(INF);
        return;
    }
    let ng = greedy_codes(t, rk, d, code, &mut sc.q);
    if ng < full {
        sc.alt.resize(code.len(), INF);
        let nc = complete_codes(t, rk, d, &mut sc.alt, &mut sc.q2, &mut sc.q);
        if nc > ng {
            code.copy_from_slice(&sc.alt);
        }
        if nc == full {
            return;
        }
    } else {
        return;
    }
    // Escape distances for switches of the same component without a legal path: BFS layers
    // from the legally routed switches (which count as distance 0).
    let q = &mut sc.q;
    q.clear();
    q.extend((0..code.len() as u32).filter(|&s| code[s as usize] != INF));
    let (mut lo, mut hi, mut k) = (0usize, q.len(), 1u16);
    while lo < hi {
        for i in lo..hi {
            let u = q[i] as usize;
            for a in t.links(u) {
                let s = a.peer as usize;
                if code[s] == INF {
                    code[s] = ESC | k;
                    q.push(s as u32);
                }
            }
        }
        lo = hi;
        hi = q.len();
        k = (k + 1).min(0x7FFE);
    }
}

/// Candidate output ports of switch `s` toward destination switch `d` from the code row of `d`.
#[inline]
pub(crate) fn updown_cands(
    t: &Topo,
    rk: &UpDownRanking,
    row: &[u16],
    s: usize,
    out: &mut Vec<(u8, u32)>,
) {
    let cs = row[s];
    if cs == INF {
        return;
    }
    if code_is_legal(cs) {
        let ds = code_dist(cs);
        if ds == 0 {
            return;
        }
        if code_down(cs) {
            let want = ((ds - 1) << 1) | 1;
            for a in t.links(s) {
                let p = a.peer as usize;
                if row[p] == want && !rk.is_up_sw(s, p) {
                    out.push((a.port, a.peer));
                }
            }
        } else {
            for a in t.links(s) {
                let p = a.peer as usize;
                let cp = row[p];
                if cp != INF && code_is_legal(cp) && code_dist(cp) == ds - 1 && rk.is_up_sw(s, p) {
                    out.push((a.port, a.peer));
                }
            }
        }
    } else {
        let k = cs & !ESC;
        if k <= 1 {
            // nearest legal neighbours with the smallest legal distance
            let mut best = u16::MAX;
            for a in t.links(s) {
                let cp = row[a.peer as usize];
                if cp != INF && code_is_legal(cp) {
                    best = best.min(code_dist(cp));
                }
            }
            for a in t.links(s) {
                let cp = row[a.peer as usize];
                if cp != INF && code_is_legal(cp) && code_dist(cp) == best {
                    out.push((a.port, a.peer));
                }
            }
        } else {
            for a in t.links(s) {
                if row[a.peer as usize] == ESC | (k - 1) {
                    out.push((a.port, a.peer));
                }
            }
        }
    }
}

/// Code rows for every destination switch: `codes[d * n + s]`. Parallel over destinations.
pub(crate) fn codes_matrix(t: &Topo, rk: &UpDownRanking) -> Vec<u16> {
    let n = t.n;
    let mut codes = vec![INF; n * n];
    if n == 0 {
        return codes;
    }
    let comp = components(t);
    let mut size = vec![0usize; n];
    for &c in &comp {
        if c != u32::MAX {
            size[c as usize] += 1;
        }
    }
    codes
        .par_chunks_mut(n)
        .enumerate()
        .for_each_init(CodeScratch::default, |sc, (d, row)| {
            let full = if comp[d] == u32::MAX {
                0
            } else {
                size[comp[d] as usize]
            };
            dest_codes(t, rk, d, full, row, sc)
        });
    codes
}

/// Counts entries without an up*/down* path: `.0` = (source, destination) switch pairs where
/// `is_source[s]` and the destination carries end ports — pairs that end-port traffic needs;
/// `.1` = all escape entries (any switch toward any destination switch, switch LIDs included).
pub(crate) fn count_illegal(t: &Topo, codes: &[u16], is_source: &[bool]) -> (usize, usize) {
    let n = t.n;
    (0..n)
        .into_par_iter()
        .map(|d| {
            let row = &codes[d * n..(d + 1) * n];
            let dest_has_ends = !t.ends_on(d).is_empty();
            let mut bad = 0;
            let mut esc = 0;
            for s in 0..n {
                let c = row[s];
                if c != INF && !code_is_legal(c) {
                    esc += 1;
                    if is_source[s] && dest_has_ends {
                        bad += 1;
                    }
                }
            }
            (bad, esc)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// The note for escape entries.
pub(crate) fn escape_note(esc: usize) -> String {
    format!(
        "{esc} (switch, destination switch) entries have no up*/down* path under the ranking and use a shortest escape path; traffic between end ports never uses them, traffic from end ports to switch LIDs may"
    )
}

/// Chooses the updn ranking (see the module docs) and returns it with its code matrix.
pub(crate) fn updn_ranking(
    t: &Topo,
    mask: &FaultMask,
    opts: &RouteOptions,
) -> Result<(UpDownRanking, Vec<u16>, Vec<String>), EngineError> {
    let mut notes = Vec::new();
    let mut hop: Option<Vec<u16>> = None;
    let (mut roots, bad) = t.resolve_switch_guids(&opts.root_guids);
    if !bad.is_empty() {
        notes.push(format!(
            "{} root GUIDs are not live switch node GUIDs and were ignored",
            bad.len()
        ));
    }
    let mut source = "root GUID list";
    if roots.is_empty() {
        roots =
            t.f.hints
                .roots
                .iter()
                .filter_map(|r| t.f.switch_index.get(r.idx()).copied())
                .filter(|&s| s != u32::MAX && t.alive[s as usize])
                .map(|s| s as usize)
                .collect();
        source = "topology hints";
    }
    if roots.is_empty() {
        // Switches farthest from the end-port switches (a fat tree's spines), per component,
        // unless that is every switch (e.g. end ports everywhere, as on a torus).
        // Service CAs (SHARP aggregation nodes, one per switch on real trees) do not count.
        let with_ends: Vec<usize> = (0..t.n)
            .filter(|&s| {
                t.alive[s]
                    && t.ends_on(s).iter().any(|&e| {
                        let node = t.f.node(t.end_node(e as usize));
                        !super::ftree::is_service_ca(&node.desc)
                    })
            })
            .collect();
        let h = bfs_levels(t, &with_ends);
        let comp = components(t);
        let ncomp = comp
            .iter()
            .filter(|&&c| c != u32::MAX)
            .max()
            .map_or(0, |&c| c as usize + 1);
        let mut hmax = vec![0u32; ncomp];
        for s in 0..t.n {
            if t.alive[s] && h[s] != u32::MAX {
                hmax[comp[s] as usize] = hmax[comp[s] as usize].max(h[s]);
            }
        }
        let far: Vec<usize> = (0..t.n)
            .filter(|&s| {
                t.alive[s] && h[s] != u32::MAX && h[s] == hmax[comp[s] as usize] && h[s] > 0
            })
            .collect();
        if !far.is_empty() && far.len() < t.num_alive() {
            roots = far;
            source = "switches farthest from the end ports";
        }
    }
    if roots.is_empty() {
        // A connected fabric: route a few candidate root sets and keep the best (module docs).
        if let Some(c) = chosen_root_set(t, mask, Kind::UpDn, opts) {
            notes.insert(0, c.note);
            if c.esc > 0 {
                notes.push(escape_note(c.esc));
            }
            return Ok((c.rk, c.codes, notes));
        }
        let h = hop_matrix(t);
        let ecc = eccentricities(t, &h);
        let comp = components(t);
        let ncomp = comp
            .iter()
            .filter(|&&c| c != u32::MAX)
            .max()
            .map_or(0, |&c| c as usize + 1);
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
    let rk = UpDownRanking::from_roots(t, &roots);
    let codes = codes_matrix(t, &rk);
    let (bad, esc) = count_illegal(t, &codes, &is_source);
    if bad == 0 {
        notes.insert(0, format!("{} roots from the {source}", rk.roots.len()));
        if esc > 0 {
            notes.push(escape_note(esc));
        }
        return Ok((rk, codes, notes));
    }
    // Fall back to one root per component: the candidate of minimum eccentricity.
    let h = match hop {
        Some(h) => h,
        None => hop_matrix(t),
    };
    let ecc = eccentricities(t, &h);
    let comp = components(t);
    let mut single: Vec<usize> = Vec::new();
    let mut seen_comp: Vec<u32> = Vec::new();
    let mut cands: Vec<usize> = rk.roots.clone();
    cands.sort_by_key(|&s| (ecc[s], t.guid(s), s));
    for s in cands {
        if !seen_comp.contains(&comp[s]) {
            seen_comp.push(comp[s]);
            single.push(s);
        }
    }
    let rk2 = UpDownRanking::from_roots(t, &single);
    let codes2 = codes_matrix(t, &rk2);
    notes.insert(
        0,
        format!(
            "{} roots from the {source} left {bad} (end-port switch, destination) pairs without an up*/down* path; ranked from a single root per component instead (switch GUID {:#018x})",
            rk.roots.len(),
            single.first().map_or(0, |&s| t.guid(s))
        ),
    );
    Ok((rk2, codes2, notes))
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

fn route_updown(
    t: &Topo,
    rk: &UpDownRanking,
    codes: &[u16],
    opts: &RouteOptions,
) -> (crate::tables::Routing, usize) {
    let n = t.n;
    let order = generic_order(t, opts);
    generic_lfts(
        t,
        &order,
        GenericParams::from_opts(opts, true),
        |s, d, out| {
            let row = &codes[d * n..(d + 1) * n];
            updown_cands(t, rk, row, s, out);
        },
    )
}

/// The `updn` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpDn;

/// The `updn` entry of the engine registry.
pub const UPDN: EngineInfo = EngineInfo {
    name: "updn",
    aliases: &[],
    summary: "Up*/Down*: ranks from roots, always picks working roots",
    deadlock_free: true,
    rftr_base: true,
    new: || Box::new(UpDn),
};

impl Engine for UpDn {
    fn info(&self) -> &'static EngineInfo {
        &UPDN
    }
    /// The Up*/Down* rule of the ranking the engine routes with (the same roots).
    fn turn_rule<'f>(
        &self,
        f: &'f Fabric,
        opts: &RouteOptions,
    ) -> Result<Arc<dyn TurnRule + 'f>, EngineError> {
        let (rk, _) = UpDownRanking::for_updn(f, &FaultMask::none(f), opts)?;
        Ok(Arc::new(UpDownRule::from_fn(f, |c| {
            rk.channel_dir(f, c) == Dir::Up
        })))
    }
    /// The roots chosen on the fault-free fabric, written into `root_guids` when none are
    /// given: the base routing, RFTR's turn rule and every full reconfiguration after faults
    /// then rank the fabric from the same roots, and the root choice is paid once.
    fn pin_choices(&self, f: &Fabric, opts: &RouteOptions) -> Result<RouteOptions, EngineError> {
        let mut o = opts.clone();
        if o.root_guids.is_empty() {
            let (rk, _) = UpDownRanking::for_updn(f, &FaultMask::none(f), opts)?;
            o.root_guids = rk
                .roots
                .iter()
                .map(|&s| f.node(f.switches[s]).guid)
                .collect();
        }
        Ok(o)
    }
    fn route_detailed(
        &self,
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<Routed, EngineError> {
        let t = Topo::live(f, mask)?;
        let (rk, codes, mut notes) = updn_ranking(&t, mask, opts)?;
        let (routing, unreached) = route_updown(&t, &rk, &codes, opts);
        unreached_note(&t, unreached, &mut notes);
        Ok(Routed { routing, notes })
    }
}

/// The `dnup` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct DnUp;

/// The `dnup` entry of the engine registry.
pub const DNUP: EngineInfo = EngineInfo {
    name: "dnup",
    aliases: &[],
    summary: "Down*/Up*: rank 0 = switches with end ports",
    deadlock_free: true,
    rftr_base: false,
    new: || Box::new(DnUp),
};

impl Engine for DnUp {
    fn info(&self) -> &'static EngineInfo {
        &DNUP
    }
    fn route_detailed(
        &self,
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<Routed, EngineError> {
        let t = Topo::live(f, mask)?;
        let (rank, roots) = dnup_ranks(&t)
            .ok_or_else(|| EngineError::NotApplicable("no switch has a live end port".into()))?;
        let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
        // Every live switch at rank 0 (end ports everywhere) on a connected fabric: the order
        // is an up*/down* order from the reference switches, chosen like updn's root set.
        if let Some(c) = chosen_root_set(&t, mask, Kind::DnUp, opts) {
            let mut notes = vec![
                format!("{} switches with end ports at rank 0", c.rk.roots.len()),
                c.note,
            ];
            if c.esc > 0 {
                notes.push(escape_note(c.esc));
            }
            let (routing, unreached) = route_updown(&t, &c.rk, &c.codes, opts);
            unreached_note(&t, unreached, &mut notes);
            return Ok(Routed { routing, notes });
        }
        let default_ref = dnup_default_reference(&t, &rank);
        let rk = UpDownRanking::dnup_from(&t, rank, roots, default_ref.as_slice());
        let codes = codes_matrix(&t, &rk);
        let (bad, esc) = count_illegal(&t, &codes, &is_source);
        if bad > 0 {
            return Err(EngineError::NotApplicable(format!(
                "{bad} (end-port switch, destination switch) pairs have no down*/up* path"
            )));
        }
        let mut notes = vec![format!(
            "{} switches with end ports at rank 0",
            rk.roots.len()
        )];
        if esc > 0 {
            notes.push(escape_note(esc));
        }
        let (routing, unreached) = route_updown(&t, &rk, &codes, opts);
        unreached_note(&t, unreached, &mut notes);
        Ok(Routed { routing, notes })
    }
}
