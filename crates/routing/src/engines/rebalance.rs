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
use crate::forward::{Hop, Plane};
use crate::tables::Routing;
use fabric::ChannelId;
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
    /// What leaving a switch on a port leads to, under the topology's faults.
    plane: Plane,
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
    /// The next switch and the channel to it of switch `s`'s entry for destination `i`
    /// (`None` at the destination's switch, for a dead end, or an entry that leaves the
    /// switch graph).
    #[inline]
    fn next(&self, i: usize, s: usize) -> Option<(usize, u32)> {
        let (lid, ds) = self.dests[i];
        if s == ds {
            return None;
        }
        match self.plane.hop(s, self.col[lid * self.n + s]) {
            Hop::Switch { sw, ch, .. } => Some((sw as usize, ch.0)),
            _ => None,
        }
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
        plane: Plane::new(t.f, Some(&t.mask)),
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
                        if let Some((q, _)) = ps.next(i, s as usize) {
                            w[q] += w[s as usize];
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
            if let Some((_, ch)) = ps.next(i, s) {
                load[ch as usize] += ps.w[i * n + s] as u64;
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
    let mut sc = Scratch {
        stamp: vec![0; n],
        epoch: 0,
        alts: Vec::new(),
    };
    let mut moved = 0usize;
    let mut frozen = vec![false; nch];
    let mut work = 0usize;
    while moved < max_moves && work < WORK_BUDGET {
        let Some((le, Reverse(e))) = heap.pop() else {
            break;
        };
        // (only channels between live switches carry load)
        if load[e as usize] != le || frozen[e as usize] {
            continue; // stale, or known not to be relieved
        }
        match best_move(&ps, rk, &r.lft, &load, &mut sc, e, le, &mut work) {
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

/// Reused buffers: switches of one path (stamped), candidate channels.
struct Scratch {
    stamp: Vec<u32>,
    epoch: u32,
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
            let Some((q, _)) = ps.next(i, s) else {
                fl[s] = DONE; // a dead end: h stays UNKNOWN
                break;
            };
            fl[s] = ON_STACK;
            stack.push(s as u32);
            s = q;
        }
        // back along the walk: each switch from its next hop (resolved just before it)
        while let Some(x) = stack.pop() {
            let x = x as usize;
            let q = ps.next(i, x).map_or(x, |(q, _)| q);
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
    e: u32,
    le: u64,
    work: &mut usize,
) -> Option<Move> {
    let (t, n) = (ps.t, ps.n);
    let f = t.f;
    let (src, dst) = (
        f.port(f.channel_src(ChannelId(e))),
        f.port(f.channel_dst(ChannelId(e))),
    );
    let s = f.switch_index[src.node.idx()] as usize;
    let p = f.switch_index[dst.node.idx()] as usize;
    let port = src.num;
    *work += 1;
    // Only channels of the switch that can take at least one more pair are candidates.
    sc.alts.clear();
    for b in t.adj_start[s] as usize..t.adj_start[s + 1] as usize {
        let l = load[t.adj[b].ch as usize];
        if t.adj[b].ch != e && l + 1 < le {
            sc.alts.push((l, b));
        }
    }
    if sc.alts.is_empty() {
        return None;
    }
    let min_alt = sc.alts.iter().map(|a| a.0).min().unwrap_or(u64::MAX);
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
            let q = t.adj[b].peer as usize;
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
                        Some((q, _)) => x = q,
                        None => break,
                    }
                }
            }
            let mut m = l + ws;
            let mut y = q;
            *work += 1;
            while sc.stamp[y] != ep && m < bound {
                *work += 1;
                let Some((ny, ch)) = ps.next(i, y) else {
                    break;
                };
                m = m.max(load[ch as usize] + ws);
                y = ny;
            }
            if m < bound {
                best = Some((m, Move { i, s, to: b }));
            }
        }
    }
    best.map(|b| b.1)
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
    // stamp the switches of the new path, to find where the paths meet
    let ep = sc.next_epoch();
    let first = t.adj[mv.to].peer as usize;
    let mut y = first;
    loop {
        sc.stamp[y] = ep;
        match ps.next(mv.i, y) {
            Some((q, _)) => y = q,
            None => break,
        }
    }
    // the old path loses the traffic until it meets the new one
    let mut hop = ps.next(mv.i, mv.s).expect("a move leaves a routed entry");
    let meet = loop {
        let (x, c) = (hop.0, hop.1 as usize);
        load[c] -= ws as u64;
        heap.push((load[c], Reverse(c as u32)));
        if sc.stamp[x] == ep {
            break x;
        }
        ps.w[row + x] -= ws;
        match ps.next(mv.i, x) {
            Some(h) => hop = h,
            None => break x,
        }
    };
    // the new path gains it until the same switch
    let mut hop = (first, t.adj[mv.to].ch);
    loop {
        let (x, c) = (hop.0, hop.1 as usize);
        load[c] += ws as u64;
        heap.push((load[c], Reverse(c as u32)));
        if x == meet {
            break;
        }
        ps.w[row + x] += ws;
        match ps.next(mv.i, x) {
            Some(h) => hop = h,
            None => break,
        }
    }
    let (lid, _) = ps.dests[mv.i];
    r.lft[mv.s * ps.stride + lid] = t.adj[mv.to].port;
    ps.col[lid * n + mv.s] = t.adj[mv.to].port;
}
