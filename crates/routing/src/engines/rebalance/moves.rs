//! One move of the balancing pass: a destination's next hops resolved, the best legal
//! move of an entry at a channel's switch or further up, and applying it to the tables.

use super::*;

/// "No next hop" in a destination's next-hop array.
pub(super) const NO_NEXT: (u32, u32) = (u32::MAX, u32::MAX);

/// Per-thread buffers of the first scan: one destination's next hops (switch, channel), the
/// resolution stack, the counting sort by hops.
#[derive(Default)]
pub(super) struct DestScratch {
    pub(super) nxt: Vec<(u32, u32)>,
    pub(super) stack: Vec<u32>,
    pub(super) count: Vec<u32>,
    pub(super) order: Vec<u32>,
}

/// Reused buffers: switches of one path (stamped), candidate channels.
pub(super) struct Scratch {
    pub(super) stamp: Vec<u32>,
    pub(super) epoch: u32,
    /// Candidate channels of the switch being relieved: (load, adjacency index).
    pub(super) alts: Vec<(u64, usize)>,
    /// [`best_upstream_move`]'s switches above the channel and one old path's prefix.
    pub(super) ups: Vec<(u32, u32)>,
    pub(super) prefix: Vec<u32>,
}

impl Scratch {
    pub(super) fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.epoch
    }
}

/// Hop counts and legality flags of every switch's table path for destination `i`.
pub(super) fn resolve(
    ps: &Pass,
    rk: &UpDownRanking,
    i: usize,
    nxt: &[(u32, u32)],
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
            let q = nxt[s].0;
            if q == NO_NEXT.0 {
                fl[s] = DONE; // a dead end (or the destination): h stays UNKNOWN
                break;
            }
            fl[s] = ON_STACK;
            stack.push(s as u32);
            s = q as usize;
        }
        // back along the walk: each switch from its next hop (resolved just before it)
        while let Some(x) = stack.pop() {
            let x = x as usize;
            let q = nxt[x].0 as usize; // (pushed switches have a next hop)
            if fl[q] & DONE == 0 || h[q] >= UNKNOWN - 1 {
                fl[x] = DONE; // a loop, a dead end or a path too long to count
                continue;
            }
            h[x] = h[q] + 1;
            fl[x] = flags_via(rk.is_up_sw(x, q), fl[q]);
        }
    }
}

/// A chosen move: destination index, switch, and the new adjacency index.
#[derive(Clone, Copy, Debug)]
pub(super) struct Move {
    pub(super) i: usize,
    pub(super) s: usize,
    pub(super) to: usize,
    /// The switch's path flags after the move.
    pub(super) fl: u8,
}

/// The best move off adjacency `ea` (load `le`), if any keeps every grown load below `le`.
#[allow(clippy::too_many_arguments)]
pub(super) fn best_move(
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
    let (s, p, port) = ps.ends(e);
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
        if ps.h[row + s] == UNKNOWN {
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
            if !may_move(rk.is_up_sw(s, q), fs, ps.fl[row + q]) {
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
            let (m, _) = joined_max(ps, load, &sc.stamp, ep, (i, q), l + ws, ws, bound, work);
            if m < bound {
                let fl = flags_via(rk.is_up_sw(s, q), ps.fl[row + q]);
                best = Some((m, Move { i, s, to: b, fl }));
            }
        }
    }
    best.map(|b| b.1)
}

/// Prices a new path: destination `i`'s table path from switch `q` (`(i, q)`), walked until
/// a switch stamped `ep` (where it joins the old path, stamped before) or its end, each
/// channel's load raised by `ws`; `first` is the raised load of the channel into `q`. Stops
/// once the maximum reaches `bound`. Returns the maximum and the switch the walk stopped at.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn joined_max(
    ps: &Pass,
    load: &[u64],
    stamp: &[u32],
    ep: u32,
    (i, q): (usize, usize),
    first: u64,
    ws: u64,
    bound: u64,
    work: &mut usize,
) -> (u64, usize) {
    let (mut m, mut y) = (first, q);
    *work += 1;
    while stamp[y] != ep && m < bound {
        *work += 1;
        let Some((ny, ch)) = ps.next(i, y) else {
            break;
        };
        m = m.max(load[ch as usize] + ws);
        y = ny;
    }
    (m, y)
}

/// How many levels above a channel's tail [`best_upstream_move`] looks for entries to move.
pub(super) const UPSTREAM_DEPTH: usize = 2;

/// When no entry of the busiest channel `e`'s own switch can leave it: an entry further up,
/// at a switch whose traffic for a destination crosses `e` (at most [`UPSTREAM_DEPTH`] hops
/// before it), moved to an equally short port under the same rule as [`best_move`] whose
/// path joins the old one only after `e` — so `e` loses that switch's traffic. A leaf's up
/// choice decides the load two levels above it: a spine that lost a core cable is relieved by
/// the leaves below it sending fewer destinations its way, and a core's cable down to a spine
/// by the leaves of other units choosing another spine. Accepted, as every move, only if
/// every grown load stays below `le`.
#[allow(clippy::too_many_arguments)]
pub(super) fn best_upstream_move(
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
    let (s, p, port) = ps.ends(e);
    let row_s = &lft[s * ps.stride..(s + 1) * ps.stride];
    let mut best: Option<(u64, Move)> = None;
    // (switch, its next hop toward s): the switches above s on this destination's tree
    let mut ups = std::mem::take(&mut sc.ups);
    let mut prefix = std::mem::take(&mut sc.prefix);
    for (i, &(lid, ds)) in ps.dests.iter().enumerate() {
        if *work >= UPSTREAM_BUDGET {
            break;
        }
        if row_s[lid] != port || s == ds {
            continue;
        }
        let row = i * n;
        *work += 1;
        if ps.w[row + s] == 0 || ps.h[row + s] == UNKNOWN {
            continue;
        }
        // the switches whose path for `i` reaches s within UPSTREAM_DEPTH hops
        // (level by level: the entries pushed for one level are the next level's frontier)
        ups.clear();
        ups.push((s as u32, u32::MAX));
        let mut lo = 0;
        for _ in 0..UPSTREAM_DEPTH {
            let hi = ups.len();
            for k in lo..hi {
                let x = ups[k].0 as usize;
                for a in t.links(x) {
                    let y = a.peer as usize;
                    *work += 1;
                    if ps.w[row + y] != 0 && ps.next(i, y).is_some_and(|(q, _)| q == x) {
                        ups.push((y as u32, x as u32));
                    }
                }
            }
            lo = hi;
        }
        ups.remove(0); // s itself
        if ups.is_empty() {
            continue;
        }
        // the old path after e, stamped
        let ea = sc.next_epoch();
        let mut x = p;
        loop {
            sc.stamp[x] = ea;
            *work += 1;
            match ps.next(i, x) {
                Some((q, _)) => x = q,
                None => break,
            }
        }
        for &(y, via) in ups.iter() {
            let (y, via) = (y as usize, via as usize);
            let ws = ps.w[row + y] as u64;
            let bound = best.map_or(le, |b| b.0);
            let fy = ps.fl[row + y];
            // the old path from y up to s: the new one must not rejoin it there
            prefix.clear();
            let mut z = y;
            while z != s {
                prefix.push(z as u32);
                match ps.next(i, z) {
                    Some((q, _)) => z = q,
                    None => break,
                }
            }
            prefix.push(s as u32);
            let hv = ps.h[row + via];
            for b in t.adj_start[y] as usize..t.adj_start[y + 1] as usize {
                let a = t.adj[b];
                let q = a.peer as usize;
                *work += 1;
                if q == via || ps.h[row + q] != hv || load[a.ch as usize] + ws >= bound {
                    continue;
                }
                if !may_move(rk.is_up_sw(y, q), fy, ps.fl[row + q]) {
                    continue;
                }
                let mut m = load[a.ch as usize] + ws;
                let mut z = q;
                let ok = loop {
                    *work += 1;
                    if sc.stamp[z] == ea {
                        break true; // joins the old path after e
                    }
                    if prefix.contains(&(z as u32)) {
                        break false; // would cross e again
                    }
                    let Some((nz, ch)) = ps.next(i, z) else {
                        break false;
                    };
                    m = m.max(load[ch as usize] + ws);
                    if m >= bound {
                        break false;
                    }
                    z = nz;
                };
                if ok && m < best.map_or(le, |x| x.0) {
                    let fl = flags_via(rk.is_up_sw(y, q), ps.fl[row + q]);
                    best = Some((m, Move { i, s: y, to: b, fl }));
                }
            }
        }
        if best.is_some() {
            break; // the best move for the first destination that has one
        }
    }
    sc.ups = ups;
    sc.prefix = prefix;
    best.map(|b| b.1)
}

/// Apply a move: the traffic on both paths up to where they meet, the loads, the LFT entry;
/// every changed load is queued on `heap` when there is one.
pub(super) fn apply(
    ps: &mut Pass,
    load: &mut [u64],
    mut heap: Option<&mut BinaryHeap<(u64, Reverse<u32>)>>,
    r: &mut Routing,
    sc: &mut Scratch,
    mv: Move,
) -> u64 {
    let (t, n) = (ps.t, ps.n);
    let mut grown = 0u64;
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
        if let Some(h) = heap.as_deref_mut() {
            h.push((load[c], Reverse(c as u32)));
        }
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
        grown = grown.max(load[c]);
        if let Some(h) = heap.as_deref_mut() {
            h.push((load[c], Reverse(c as u32)));
        }
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
    ps.fl[row + mv.s] = mv.fl;
    grown
}
