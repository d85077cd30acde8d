//! The Up*/Down* machinery shared by `updn`, `dnup` and `ftree`: a ranking of the live
//! switches into a total order, the direction of every inter-switch channel under it, the turn
//! rule (down → up is the one illegal turn), and per destination the shortest legal distances
//! ("codes") and the candidate ports of a destination-based table. How the roots are chosen
//! lives in [`super::roots`]; the engines in [`super::updn`] and [`super::ftree`].

use super::common::{generic_lfts, generic_order, GenericParams, Topo, INF};
use super::RouteOptions;
use fabric::{ChannelId, Fabric};
use rayon::prelude::*;

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
        let (rank, roots) = ranks_from_roots(t, roots);
        Self::from_ranks(t, rank, roots)
    }

    /// Up*/Down* ranking from given ranks (0 = roots; every live switch ranked): order by
    /// (rank, larger GUID first, index).
    pub(crate) fn from_ranks(t: &Topo, rank: Vec<u32>, roots: Vec<usize>) -> Self {
        let key = |s: usize| (rank[s], std::cmp::Reverse(t.guid(s)), s);
        let pos = positions(t, key);
        UpDownRanking { rank, roots, pos }
    }

    /// Down*/Up* ranking: rank 0 = switches with live end ports. `None` if there are none.
    /// Internally the order is reversed (so "legal = up* then down*" holds for the machinery).
    /// Ties of equal rank are broken by the distance from the default reference switch (the
    /// lowest-GUID switch of maximum rank); [`super::updn::DnUp`] may pick another one (module docs).
    pub fn dnup(t: &Topo) -> Option<Self> {
        let (rank, roots) = dnup_ranks(t)?;
        let reference = dnup_default_reference(t, &rank);
        Some(Self::dnup_from(t, rank, roots, reference.as_slice()))
    }

    /// The Down*/Up* order from dnup ranks with ties broken by the BFS distance from the
    /// `reference` switches (then GUID).
    pub(crate) fn dnup_from(
        t: &Topo,
        rank: Vec<u32>,
        roots: Vec<usize>,
        reference: &[usize],
    ) -> Self {
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
        let (Some(a), Some(b)) = (f.switch_of(f.port(src).node), f.switch_of(f.port(dst).node))
        else {
            return Dir::None;
        };
        let (a, b) = (a.0, b.0);
        if a == b {
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
}

/// BFS distance of every live switch from `roots` (live ones; components without one get
/// their lowest-index switch as an extra root), and the roots used.
pub(crate) fn ranks_from_roots(t: &Topo, roots: &[usize]) -> (Vec<u32>, Vec<usize>) {
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
    (rank, roots)
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
pub(crate) fn dnup_ranks(t: &Topo) -> Option<(Vec<u32>, Vec<usize>)> {
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
pub(crate) fn dnup_default_reference(t: &Topo, rank: &[u32]) -> Option<usize> {
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

/// Number of components in a [`components`] result.
pub fn component_count(comp: &[u32]) -> usize {
    comp.iter()
        .filter(|&&c| c != u32::MAX)
        .max()
        .map_or(0, |&c| c as usize + 1)
}

/// One root per connected component out of `cands`: the candidate of minimum eccentricity
/// (`ecc`), ties by lowest GUID then index.
pub fn single_roots(t: &Topo, cands: &[usize], ecc: &[u16]) -> Vec<usize> {
    let comp = components(t);
    let mut c: Vec<usize> = cands.to_vec();
    c.sort_by_key(|&s| (ecc[s], t.guid(s), s));
    let mut seen = Vec::new();
    let mut single = Vec::new();
    for s in c {
        if !seen.contains(&comp[s]) {
            seen.push(comp[s]);
            single.push(s);
        }
    }
    single
}

// ---- per-destination codes ---------------------------------------------------------------
//
// code (u16) of switch s toward destination switch d:
//   INF                  unreachable (other component)
//   bit 15 clear         legal: (distance << 1) | 1 if labelled D (forwards down), 0 if U
//   bit 15 set           transition: no legal path; the fewest illegal (down -> up) turns T
//                        any path from s needs, 1..=4, in bits 13-14 (as T - 1), the distance
//                        of the shortest such path in bits 1-12 and the label in bit 0.
// Bit 0 is the label in both forms. A switch's choice among its candidates keeps the turns
// of every path through it: going up to n adds none, going down to n adds one when n
// forwards up (label U).

const ESC: u16 = 0x8000;
/// Most turns a transition code holds.
pub(crate) const MAX_TURNS: u8 = 4;
/// Largest distance a transition code holds.
const ESC_MAX_DIST: u16 = 0xFFE;

#[inline]
pub(crate) fn code_is_legal(c: u16) -> bool {
    c & ESC == 0
}
/// Distance to the destination switch (legal or transition code).
#[inline]
pub(crate) fn code_dist(c: u16) -> u16 {
    if code_is_legal(c) {
        c >> 1
    } else {
        (c >> 1) & 0xFFF
    }
}
#[inline]
pub(crate) fn code_down(c: u16) -> bool {
    c & 1 == 1
}
/// Illegal turns the path from a switch with code `c` takes (0 for legal codes).
#[inline]
pub(crate) fn code_turns(c: u16) -> u8 {
    if code_is_legal(c) {
        0
    } else {
        ((c >> 13) & 3) as u8 + 1
    }
}
#[inline]
fn esc_code(turns: u8, dist: u16, down: bool) -> u16 {
    ESC | (((turns - 1) as u16) << 13) | (dist.min(ESC_MAX_DIST) << 1) | down as u16
}
/// (turns, distance, label) of the path of a switch `s` that moves to a neighbour with code
/// `cn`, going up (`up`) or down.
#[inline]
fn via(cn: u16, up: bool) -> (u8, u16, bool) {
    let t = code_turns(cn) + u8::from(!up && !code_down(cn));
    (t, code_dist(cn) + 1, !up)
}

/// Scratch buffers for [`dest_codes`].
#[derive(Debug, Default)]
pub(crate) struct CodeScratch {
    q: Vec<u32>,
    q2: Vec<u32>,
    alt: Vec<u16>,
    queue: BucketQueue,
}

/// Distances a transition-code key tells apart (codes store at most [`ESC_MAX_DIST`]).
const KEY_SPAN: usize = ESC_MAX_DIST as usize + 3;

/// A monotone bucket queue over the transition Dijkstra's keys (turns, distance, up after
/// down): every key pushed is at least the last one popped (each step adds one hop and maybe a
/// turn), so the buckets are scanned once upward. Which switch of one bucket is settled first
/// does not matter: a switch's code depends only on its key.
#[derive(Debug, Default)]
struct BucketQueue {
    buckets: Vec<Vec<u32>>,
    lo: usize,
    hi: usize,
}

impl BucketQueue {
    #[inline]
    fn key(turns: u8, dist: u16, up: bool) -> usize {
        (((turns - 1) as usize) * KEY_SPAN + (dist as usize).min(KEY_SPAN - 1)) * 2 + up as usize
    }
    fn clear(&mut self) {
        for b in self.buckets.iter_mut().take(self.hi + 1).skip(self.lo) {
            b.clear();
        }
        self.lo = usize::MAX;
        self.hi = 0;
    }
    #[inline]
    fn push(&mut self, k: usize, s: u32) {
        if k >= self.buckets.len() {
            self.buckets.resize_with(k + 1, Vec::new);
        }
        self.buckets[k].push(s);
        self.lo = self.lo.min(k);
        self.hi = self.hi.max(k);
    }
    /// The smallest key's next switch, with the key.
    #[inline]
    fn pop(&mut self) -> Option<(usize, u32)> {
        while self.lo <= self.hi && self.lo < self.buckets.len() {
            if let Some(s) = self.buckets[self.lo].pop() {
                return Some((self.lo, s));
            }
            self.lo += 1;
        }
        None
    }
    /// (turns, distance, up) of a key.
    #[inline]
    fn parts(k: usize) -> (u8, u16, bool) {
        let up = k & 1 == 1;
        let r = k >> 1;
        ((r / KEY_SPAN) as u8 + 1, (r % KEY_SPAN) as u16, up)
    }
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
/// labelling; then transition codes for switches without a legal path.
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
    // Transition codes for the switches of the same component without a legal path: a
    // Dijkstra from the legally routed switches by (turns, distance, U after D), so every
    // switch points to one settled before it and the turns of a path never exceed its code's.
    let queue = &mut sc.queue;
    queue.clear();
    let push = |queue: &mut BucketQueue, code: &[u16], u: usize| {
        for a in t.links(u) {
            let s = a.peer as usize;
            if code[s] == INF {
                let (tr, h, down) = via(code[u], rk.is_up_sw(s, u));
                if tr <= MAX_TURNS {
                    queue.push(BucketQueue::key(tr, h, !down), s as u32);
                }
            }
        }
    };
    for u in 0..code.len() {
        if code[u] != INF {
            push(queue, code, u);
        }
    }
    while let Some((k, s)) = queue.pop() {
        let s = s as usize;
        if code[s] != INF {
            continue;
        }
        let (tr, h, up) = BucketQueue::parts(k);
        code[s] = esc_code(tr, h, !up);
        push(queue, code, s);
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
        // Neighbours that keep this switch's turns and distance, in the direction its label
        // says.
        let want = (code_turns(cs), code_dist(cs), code_down(cs));
        if want.1 == 0 {
            return;
        }
        for a in t.links(s) {
            let cp = row[a.peer as usize];
            let up = rk.is_up_sw(s, a.peer as usize);
            if cp != INF && up != want.2 && via(cp, up) == want {
                out.push((a.port, a.peer));
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

/// The note for entries without an up*/down* path.
pub(crate) fn escape_note(esc: usize) -> String {
    format!(
        "{esc} (switch, destination switch) entries have no up*/down* path under the ranking; they take the path with the fewest down->up turns, and traffic between end ports that needs one changes VL there"
    )
}

/// Fills the tables of an up/down ranking: OpenSM's generic builder over the legal
/// min-distance ports of `codes` (balancing, LMC, `port_shifting`, `scatter_ports`).
pub(crate) fn route_updown(
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

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::FaultMask;

    /// A 2-level tree: the spines are rank 0, leaves rank 1; leaf→spine channels go up; a
    /// down→up turn (spine to leaf to spine) is the one illegal turn.
    #[test]
    fn ranks_directions_and_turns_on_a_two_level_tree() {
        let f = crate::fault::test_fabric("leafspine leaves=3 spines=2 hosts=2");
        let t = Topo::new(&f, &FaultMask::none(&f));
        let spines: Vec<usize> = (0..t.n).filter(|&s| t.ends_on(s).is_empty()).collect();
        assert_eq!(spines.len(), 2);
        let rk = UpDownRanking::from_roots(&t, &spines);
        for s in 0..t.n {
            let want = if spines.contains(&s) { 0 } else { 1 };
            assert_eq!(rk.rank[s], want);
        }
        let mut up = None;
        let mut down = None;
        for c in 0..f.links.len() as u32 * 2 {
            let c = ChannelId(c);
            let (Some(_), Some(b)) = (f.src_switch(c), f.dst_switch(c)) else {
                assert_eq!(
                    rk.channel_dir(&f, c),
                    Dir::None,
                    "host links have no direction"
                );
                continue;
            };
            let d = rk.channel_dir(&f, c);
            assert_eq!(d == Dir::Up, spines.contains(&b.idx()));
            if d == Dir::Up {
                up.get_or_insert(c);
            } else {
                down.get_or_insert(c);
            }
        }
        // Down into a leaf, then up out of it: illegal; the reverse is legal.
        let down_c = down.unwrap();
        let leaf = f.port(f.channel_dst(down_c)).node;
        let up_c = (0..f.links.len() as u32 * 2)
            .map(ChannelId)
            .find(|&c| f.port(f.channel_src(c)).node == leaf && rk.channel_dir(&f, c) == Dir::Up)
            .unwrap();
        assert!(!rk.is_legal_turn(&f, down_c, up_c));
        let into_spine = (0..f.links.len() as u32 * 2)
            .map(ChannelId)
            .find(|&c| {
                f.port(f.channel_dst(c)).node == f.port(f.channel_src(down_c)).node
                    && rk.channel_dir(&f, c) == Dir::Up
            })
            .unwrap();
        assert!(rk.is_legal_turn(&f, into_spine, down_c));
        let _ = up;
    }

    /// The legal codes of a ring ranked from one root: every switch reaches every other on an
    /// up*/down* path no longer than the ring allows, and the codes agree with the ranking.
    #[test]
    fn codes_give_legal_distances_on_a_ring() {
        let f = crate::fault::test_fabric("torus 6 hcas=1");
        let t = Topo::new(&f, &FaultMask::none(&f));
        let rk = UpDownRanking::from_roots(&t, &[0]);
        let codes = codes_matrix(&t, &rk);
        let n = t.n;
        for d in 0..n {
            for s in 0..n {
                let c = codes[d * n + s];
                assert!(code_is_legal(c), "{s} -> {d}");
                let dist = code_dist(c) as usize;
                if s == d {
                    assert_eq!(dist, 0);
                } else {
                    // Up*/down* on a ring from root 0: at least the ring distance, at most
                    // the way through the root.
                    let ring = (s + n - d) % n;
                    let ring = ring.min(n - ring);
                    assert!(dist >= ring && dist <= n, "{s} -> {d}: {dist}");
                }
            }
        }
        let (bad, _) = count_illegal(&t, &codes, &vec![true; n]);
        assert_eq!(bad, 0);
    }
}
