//! Lowering the busiest link of up/down tables (`updn`, `dnup`, `ftree`) after they are built.
//!
//! The builders choose each output port from counters that see part of the fabric (one
//! switch's ports, or the groups of one level), so on irregular trees — a leaf with fewer
//! cables to one spine than to the other, a spine that carries hosts, host-less leaves — one
//! link ends up busier than it must. This pass moves LFT entries, one at a time, to another
//! output port of the same switch:
//!
//! - **Loads** are what [`crate::metrics`] counts: per directed switch-to-switch channel, the
//!   (source end port, destination end port) pairs whose path crosses it. Per destination the
//!   traffic `w(s)` entering each switch is kept, so a move is priced exactly.
//! - **A move** of the entry at switch `s` for destination `d` from the busiest channel `e`
//!   (whose tail is `s`) to a channel `s → q` is allowed when the path from `q` is as long as
//!   the one it replaces (path lengths do not change), `q`'s path is legal under the ranking
//!   (up\* then down\*), and `s`'s own path stays legal with the same "all down" status. The
//!   status of every other switch's path is then unchanged, so every path stays an up*/down*
//!   path and the tables stay deadlock-free.
//! - **Accepted** only if every channel whose load grows stays below `e`'s load before the move.
//!   Channels are taken busiest first; one that cannot be relieved is set aside (no later move
//!   can grow it: grown loads stay below the channel being relieved, and that load never
//!   rises). The sorted vector of loads decreases lexicographically with every move, so the
//!   pass terminates; budgets on moves and on inspected entries bound its time.
//!   Among the allowed moves the one with the lowest new maximum wins (first in destination
//!   and port order on ties): deterministic and independent of the thread count.
//!
//! Paths without an up*/down* path (the transition pairs of [`super::transition`]) keep their
//! entries; their traffic counts in the loads. Fabrics with LMC > 0 are left alone (the LMC
//! LIDs' diversity is the generic builder's), as are those whose per-destination state would
//! exceed [`MAX_STATE`] entries.

use super::common::Topo;
use super::ranking::UpDownRanking;
use crate::tables::Routing;
use fabric::NO_PORT;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Largest (destinations × switches) the pass keeps state for (6 bytes each).
pub const MAX_STATE: usize = 1 << 27;

/// Steps the pass may take in all (an LFT entry inspected, an alternative port or a hop of
/// its path priced): bounds the time (about 0.1 s) on fabrics where few links can be relieved.
pub const WORK_BUDGET: usize = 1 << 24;

/// Moves allowed per live end port (a bound on the pass's time; it usually stops far earlier).
pub const MOVE_BUDGET_PER_END: usize = 8;

/// "No hop known" in the per-destination hop array.
const UNKNOWN: u8 = u8::MAX;
/// Flag bits per (destination, switch): the path from the switch is legal / goes down only.
const LEGAL: u8 = 1;
const DOWN_ONLY: u8 = 2;
/// Resolution state bits of the same array.
const DONE: u8 = 4;
const ON_STACK: u8 = 8;
/// No adjacency (in the (switch, port) → adjacency map).
const NONE: u32 = u32::MAX;

/// What the pass did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebalanced {
    pub moved: usize,
    /// Busiest channel's load (counted traffic) before and after.
    pub before: u64,
    pub after: u64,
}

impl Rebalanced {
    /// The engine note; `what` names the traffic counted ("" = every end port's).
    pub fn note(&self, what: &str) -> String {
        format!(
            "balance pass: {} entries moved to equally short up*/down* ports; max {what}link load {} -> {}",
            self.moved, self.before, self.after
        )
    }
}

/// The pass's state: per (destination, switch), dest-major, the hops of the table's path, its
/// flags and the counted traffic entering the switch; next hops are read from the LFTs.
struct Pass<'t, 'a> {
    t: &'t Topo<'a>,
    n: usize,
    stride: usize,
    /// (switch, port) → index into `t.adj`, at `port_base[switch] + port`.
    port_adj: Vec<u32>,
    port_base: Vec<u32>,
    /// Counted destinations: (LID, switch).
    dests: Vec<(usize, usize)>,
    /// The LFTs destination-major (`col[lid * n + s]`, kept equal to the routing's): the
    /// walks read one destination's column, the busiest-link scan one switch's row.
    col: Vec<u8>,
    h: Vec<u8>,
    fl: Vec<u8>,
    w: Vec<u32>,
}

impl Pass<'_, '_> {
    /// Adjacency index of switch `s`'s entry for destination `i` (`None` at the
    /// destination's switch, for a dead end, or an entry that leaves the switch graph).
    #[inline]
    fn next(&self, i: usize, s: usize) -> Option<usize> {
        let (lid, ds) = self.dests[i];
        if s == ds {
            return None;
        }
        let p = self.col[lid * self.n + s];
        if p == NO_PORT {
            return None;
        }
        let idx = self.port_base[s] as usize + p as usize;
        if idx >= self.port_base[s + 1] as usize {
            return None;
        }
        let a = self.port_adj[idx];
        (a != NONE).then_some(a as usize)
    }

    #[inline]
    fn peer(&self, a: usize) -> usize {
        self.t.adj[a].peer as usize
    }
}

/// Move entries of `r` (built on the ranking `rk`) off the busiest channels. `counted` (per
/// index of `t.ends`; `None` = all) says which end ports' traffic the loads count, as sources
/// and as destinations (`ftree` balances its compute nodes' traffic). Returns `None` when the
/// pass does not apply (LMC > 0, too large, no inter-switch traffic).
pub fn rebalance(
    t: &Topo,
    rk: &UpDownRanking,
    r: &mut Routing,
    counted: Option<&[bool]>,
    max_moves: usize,
) -> Option<Rebalanced> {
    let counts = |i: usize| counted.is_none_or(|c| c[i]);
    let n = t.n;
    if t.ends.iter().any(|e| e.nlids != 1) || t.ends.len().saturating_mul(n) > MAX_STATE {
        return None;
    }
    let stride = r.stride();
    // (switch, port) -> adjacency index, each switch's ports 0..=nports in one flat array
    let mut port_base = Vec::with_capacity(n + 1);
    let mut total = 0u32;
    for s in 0..n {
        port_base.push(total);
        total += t.f.node(t.f.switches[s]).nports as u32 + 1;
    }
    port_base.push(total);
    let mut port_adj = vec![NONE; total as usize];
    for (s, &base) in port_base.iter().take(n).enumerate() {
        for a in t.adj_start[s]..t.adj_start[s + 1] {
            let p = base as usize + t.adj[a as usize].port as usize;
            if port_adj[p] == NONE {
                port_adj[p] = a;
            }
        }
    }
    let hosts: Vec<u32> = (0..n)
        .map(|s| t.ends_on(s).iter().filter(|&&i| counts(i as usize)).count() as u32)
        .collect();
    let dests: Vec<(usize, usize)> = t
        .ends
        .iter()
        .enumerate()
        .filter(|&(i, e)| (e.base as usize) < stride && counts(i))
        .map(|(_, e)| (e.base as usize, e.sw as usize))
        .collect();
    let d_n = dests.len();
    let mut ps = Pass {
        t,
        n,
        stride,
        port_adj,
        port_base,
        dests,
        col: super::common::transpose_rect(&r.lft, n, stride),
        h: vec![UNKNOWN; d_n * n],
        fl: vec![0; d_n * n],
        w: vec![0; d_n * n],
    };
    {
        let (mut h, mut fl, mut w) = (
            std::mem::take(&mut ps.h),
            std::mem::take(&mut ps.fl),
            std::mem::take(&mut ps.w),
        );
        let psr = &ps;
        h.par_chunks_mut(n)
            .zip(fl.par_chunks_mut(n))
            .zip(w.par_chunks_mut(n))
            .enumerate()
            .for_each_init(
                || (Vec::new(), Vec::new(), Vec::new()),
                |(stack, order, count), (i, ((h, fl), w))| {
                    let ps = psr;
                    resolve(ps, rk, i, h, fl, stack);
                    // traffic: switches by decreasing hop count (a counting sort by hops)
                    let ds = ps.dests[i].1;
                    count.clear();
                    for s in 0..n {
                        let hs = h[s] as usize;
                        if hs != UNKNOWN as usize && s != ds {
                            if count.len() <= hs {
                                count.resize(hs + 1, 0u32);
                            }
                            count[hs] += 1;
                            w[s] = hosts[s];
                        }
                    }
                    // start of each hop count's run, largest hop count first
                    let mut at = 0u32;
                    for c in count.iter_mut().rev() {
                        let k = *c;
                        *c = at;
                        at += k;
                    }
                    order.clear();
                    order.resize(at as usize, 0u32);
                    for (s, &hs) in h.iter().enumerate() {
                        let hs = hs as usize;
                        if hs != UNKNOWN as usize && s != ds {
                            order[count[hs] as usize] = s as u32;
                            count[hs] += 1;
                        }
                    }
                    for &s in order.iter() {
                        if let Some(a) = ps.next(i, s as usize) {
                            w[ps.peer(a)] += w[s as usize];
                        }
                    }
                },
            );
        ps.h = h;
        ps.fl = fl;
        ps.w = w;
    }
    let nch = t.f.links.len() * 2;
    let mut load = vec![0u64; nch];
    for i in 0..d_n {
        for s in 0..n {
            if ps.h[i * n + s] == UNKNOWN {
                continue;
            }
            if let Some(a) = ps.next(i, s) {
                load[t.adj[a].ch as usize] += ps.w[i * n + s] as u64;
            }
        }
    }
    let mut heap: BinaryHeap<(u64, Reverse<u32>)> = load
        .iter()
        .enumerate()
        .filter(|&(_, &l)| l > 0)
        .map(|(c, &l)| (l, Reverse(c as u32)))
        .collect();
    let before = heap.peek().map(|x| x.0)?;
    let mut ch_adj = vec![NONE; nch];
    for (a, adj) in t.adj.iter().enumerate() {
        ch_adj[adj.ch as usize] = a as u32;
    }
    let mut sc = Scratch {
        stamp: vec![0; n],
        epoch: 0,
        on_new: Vec::new(),
        alts: Vec::new(),
    };
    let mut moved = 0usize;
    let mut frozen = vec![false; nch];
    let mut work = 0usize;
    while moved < max_moves && work < WORK_BUDGET {
        let Some((le, Reverse(e))) = heap.pop() else {
            break;
        };
        if load[e as usize] != le || frozen[e as usize] || ch_adj[e as usize] == NONE {
            continue; // stale, known not to be relieved, or not between live switches
        }
        let ea = ch_adj[e as usize] as usize;
        match best_move(&ps, rk, &r.lft, &load, &mut sc, ea, le, &mut work) {
            Some(mv) => {
                apply(&mut ps, &mut load, &mut heap, r, &mut sc, mv);
                moved += 1;
            }
            None => frozen[e as usize] = true,
        }
    }
    let after = load.iter().copied().max().unwrap_or(0);
    Some(Rebalanced {
        moved,
        before,
        after,
    })
}

/// Reused buffers: switches of the old path (stamped), switches of the new one.
struct Scratch {
    stamp: Vec<u32>,
    epoch: u32,
    on_new: Vec<usize>,
    /// Candidate channels of the switch being relieved: (load, adjacency index).
    alts: Vec<(u64, usize)>,
}

impl Scratch {
    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.epoch
    }
}

/// Hop counts and legality flags of every switch's table path for destination `i`.
fn resolve(
    ps: &Pass,
    rk: &UpDownRanking,
    i: usize,
    h: &mut [u8],
    fl: &mut [u8],
    stack: &mut Vec<u32>,
) {
    let t = ps.t;
    let ds = ps.dests[i].1;
    if !t.alive[ds] {
        return;
    }
    h[ds] = 0;
    fl[ds] = DONE | LEGAL | DOWN_ONLY;
    for s0 in 0..t.n {
        if !t.alive[s0] || fl[s0] & DONE != 0 {
            continue;
        }
        // follow the table until a resolved switch, a dead end or a loop
        stack.clear();
        let mut s = s0;
        while fl[s] & (DONE | ON_STACK) == 0 {
            let Some(a) = ps.next(i, s) else {
                fl[s] = DONE; // a dead end: h stays UNKNOWN
                break;
            };
            fl[s] = ON_STACK;
            stack.push(s as u32);
            s = ps.peer(a);
        }
        // back along the walk: each switch from its next hop (resolved just before it)
        while let Some(x) = stack.pop() {
            let x = x as usize;
            let q = ps.next(i, x).map(|a| ps.peer(a)).unwrap_or(x);
            if fl[q] & DONE == 0 || h[q] >= UNKNOWN - 1 {
                fl[x] = DONE; // a loop, a dead end or a path too long to count
                continue;
            }
            h[x] = h[q] + 1;
            let up = rk.is_up_sw(x, q);
            let fq = fl[q];
            let legal = fq & LEGAL != 0 && (up || fq & DOWN_ONLY != 0);
            let down_only = !up && fq & DOWN_ONLY != 0;
            fl[x] = DONE | ((legal as u8) * LEGAL) | ((down_only as u8) * DOWN_ONLY);
        }
    }
}

/// A chosen move: destination index, switch, and the new adjacency index.
#[derive(Clone, Copy, Debug)]
struct Move {
    i: usize,
    s: usize,
    to: usize,
}

/// The best move off adjacency `ea` (load `le`), if any keeps every grown load below `le`.
#[allow(clippy::too_many_arguments)]
fn best_move(
    ps: &Pass,
    rk: &UpDownRanking,
    lft: &[u8],
    load: &[u64],
    sc: &mut Scratch,
    ea: usize,
    le: u64,
    work: &mut usize,
) -> Option<Move> {
    let (t, n) = (ps.t, ps.n);
    let s = tail_of(t, ea);
    *work += 1;
    // Only channels of the switch that can take at least one more pair are candidates.
    sc.alts.clear();
    for b in t.adj_start[s] as usize..t.adj_start[s + 1] as usize {
        let l = load[t.adj[b].ch as usize];
        if b != ea && l + 1 < le {
            sc.alts.push((l, b));
        }
    }
    if sc.alts.is_empty() {
        return None;
    }
    let min_alt = sc.alts.iter().map(|a| a.0).min().unwrap_or(u64::MAX);
    let p = ps.peer(ea);
    let port = t.adj[ea].port;
    let row_s = &lft[s * ps.stride..(s + 1) * ps.stride];
    let mut best: Option<(u64, Move)> = None;
    *work += ps.dests.len();
    for (i, &(lid, ds)) in ps.dests.iter().enumerate() {
        // (the switch's own LFT row is contiguous; the per-destination state is not)
        if row_s[lid] != port || s == ds {
            continue;
        }
        let row = i * n;
        let ws = ps.w[row + s] as u64;
        // the cheapest alternative cannot take this entry's traffic, or cannot beat the best
        if ws == 0 || min_alt + ws >= best.map_or(le, |b| b.0) {
            continue;
        }
        let fs = ps.fl[row + s];
        if ps.h[row + s] == UNKNOWN || fs & LEGAL == 0 {
            continue;
        }
        let hp = ps.h[row + p];
        let mut ep = 0; // the old path is stamped on the first candidate that needs it
        for k in 0..sc.alts.len() {
            let (l, b) = sc.alts[k];
            let bound = best.map_or(le, |x| x.0);
            if l + ws >= bound {
                continue;
            }
            let q = ps.peer(b);
            if ps.h[row + q] != hp {
                continue;
            }
            let fq = ps.fl[row + q];
            let up = rk.is_up_sw(s, q);
            let legal = fq & LEGAL != 0 && (up || fq & DOWN_ONLY != 0);
            let down_only = !up && fq & DOWN_ONLY != 0;
            if !legal || down_only != (fs & DOWN_ONLY != 0) {
                continue;
            }
            if ep == 0 {
                ep = sc.next_epoch();
                let mut x = p;
                loop {
                    sc.stamp[x] = ep;
                    *work += 1;
                    match ps.next(i, x) {
                        Some(a) => x = ps.peer(a),
                        None => break,
                    }
                }
            }
            let mut m = l + ws;
            let mut y = q;
            *work += 1;
            while sc.stamp[y] != ep && m < bound {
                *work += 1;
                let Some(a) = ps.next(i, y) else {
                    break;
                };
                m = m.max(load[t.adj[a].ch as usize] + ws);
                y = ps.peer(a);
            }
            if m < bound {
                best = Some((m, Move { i, s, to: b }));
            }
        }
    }
    best.map(|b| b.1)
}

/// The switch an adjacency entry leaves from.
fn tail_of(t: &Topo, a: usize) -> usize {
    // adj_start is sorted: the last switch whose start is <= a
    t.adj_start.partition_point(|&x| x as usize <= a) - 1
}

/// Apply a move: the traffic on both paths up to where they meet, the loads, the LFT entry.
fn apply(
    ps: &mut Pass,
    load: &mut [u64],
    heap: &mut BinaryHeap<(u64, Reverse<u32>)>,
    r: &mut Routing,
    sc: &mut Scratch,
    mv: Move,
) {
    let (t, n) = (ps.t, ps.n);
    let row = mv.i * n;
    let ws = ps.w[row + mv.s];
    let old = ps.next(mv.i, mv.s).expect("a move leaves a routed entry");
    // switches of the new path, to find where the paths meet
    sc.on_new.clear();
    let mut y = ps.peer(mv.to);
    loop {
        sc.on_new.push(y);
        match ps.next(mv.i, y) {
            Some(a) => y = ps.peer(a),
            None => break,
        }
    }
    // the old path loses the traffic until it meets the new one
    let mut a = old;
    let meet = loop {
        let c = t.adj[a].ch as usize;
        load[c] -= ws as u64;
        heap.push((load[c], Reverse(c as u32)));
        let x = ps.peer(a);
        if sc.on_new.contains(&x) {
            break x;
        }
        ps.w[row + x] -= ws;
        match ps.next(mv.i, x) {
            Some(na) => a = na,
            None => break x,
        }
    };
    // the new path gains it until the same switch
    let mut a = mv.to;
    loop {
        let c = t.adj[a].ch as usize;
        load[c] += ws as u64;
        heap.push((load[c], Reverse(c as u32)));
        let x = ps.peer(a);
        if x == meet {
            break;
        }
        ps.w[row + x] += ws;
        match ps.next(mv.i, x) {
            Some(na) => a = na,
            None => break,
        }
    }
    let (lid, _) = ps.dests[mv.i];
    r.lft[mv.s * ps.stride + lid] = t.adj[mv.to].port;
    ps.col[lid * n + mv.s] = t.adj[mv.to].port;
}
