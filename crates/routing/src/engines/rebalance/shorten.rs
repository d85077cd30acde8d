//! The balancing pass's first phase (`ftree` asks for it): no table path longer than the
//! ranking's rules need.
//!
//! On a degraded tree the fat-tree pass can give a switch a path longer than a legal one it
//! has: a target's way up from its leaf takes one parent, and a leaf whose spine is not on
//! that way is reached by the fan-down from whatever switch above it is (a management leaf
//! behind a spine that lost its core cables: six hops where a neighbouring spine offers
//! four). The other phases keep every path's length, so such a path would stay, and load
//! links the shorter one avoids.
//!
//! Per destination: the moves [`may_move`] allows (a legal path stays legal with the same
//! down-only status; a path without an up*/down* path keeps its first hop's direction and
//! gains no down->up turn) are edges of a graph on which the table's own paths are walks; a
//! breadth-first search from the destination over them gives each switch the shortest walk
//! it may take. A switch whose table path is longer takes the first hop of such a walk (the
//! LID picks among the neighbours one hop nearer), unless its next hop's path got that short
//! itself. Every switch then follows hops of
//! decreasing distance (no loop), and no switch's status gets worse, so the tables stay
//! within the ranking's rules (the transitions' VLs are assigned after the pass from the
//! final tables).

use super::moves::{resolve, DestScratch, NO_NEXT};
use super::*;
use crate::engines::common::Adj;

/// One destination's buffers: the resolution's and the search's.
#[derive(Default)]
struct ShortScratch {
    dest: DestScratch,
    h: Vec<u8>,
    fl: Vec<u8>,
    dist: Vec<u8>,
    queue: Vec<u32>,
}

/// Entries changed to shorter walks: `(LID, switch, port)`, in destination order.
fn shorter_entries(
    ps: &Pass,
    rk: &UpDownRanking,
    i: usize,
    raw: &[u32],
    sc: &mut ShortScratch,
) -> Vec<(usize, u32, u8)> {
    let (t, n) = (ps.t, ps.n);
    let (lid, ds) = ps.dests[i];
    let mut out = Vec::new();
    if !t.alive[ds] {
        return out;
    }
    let nxt = &mut sc.dest.nxt;
    nxt.clear();
    nxt.extend((0..n).map(|s| ps.next(i, s).map_or(NO_NEXT, |(q, c)| (q as u32, c))));
    sc.h.clear();
    sc.h.resize(n, UNKNOWN);
    sc.fl.clear();
    sc.fl.resize(n, 0);
    resolve(ps, rk, i, nxt, &mut sc.h, &mut sc.fl, &mut sc.dest.stack);
    let (h, fl) = (&sc.h, &sc.fl);
    let known = |s: usize| t.alive[s] && fl[s] & DONE != 0 && h[s] != UNKNOWN;
    let allowed = |s: usize, q: usize| may_move(rk.is_up_sw(s, q), fl[s], fl[q]);
    // Most destinations stop here: no table path is longer than the switch graph's
    // distance (`raw`, the destination switch's row), so none has a shorter walk.
    if (0..n).all(|s| !known(s) || h[s] as u32 <= raw[s]) {
        return out;
    }
    let dist = &mut sc.dist;
    dist.clear();
    dist.resize(n, UNKNOWN);
    sc.queue.clear();
    dist[ds] = 0;
    sc.queue.push(ds as u32);
    let mut head = 0;
    while let Some(&q) = sc.queue.get(head) {
        head += 1;
        let q = q as usize;
        for a in t.links(q) {
            let s = a.peer as usize;
            if dist[s] != UNKNOWN || !known(s) || !allowed(s, q) {
                continue;
            }
            dist[s] = dist[q] + 1;
            sc.queue.push(s as u32);
        }
    }
    for s in 0..n {
        if s == ds || !known(s) || dist[s] >= h[s] {
            continue;
        }
        let cur = nxt[s].0;
        if cur != NO_NEXT.0 && dist[cur as usize].wrapping_add(1) == dist[s] {
            continue; // its next hop got that short
        }
        // Among the links to switches one hop nearer (the search found one), the LID picks
        // which: the LIDs of one port, and destinations in turn, spread over them (with
        // LMC above 0 nothing after this phase balances them).
        let adj = t.links(s);
        let nearer = |a: &&Adj| {
            let q = a.peer as usize;
            dist[q] != UNKNOWN && dist[q] + 1 == dist[s] && allowed(s, q)
        };
        let k = adj.iter().filter(nearer).count();
        debug_assert!(
            k > 0,
            "the search reached the switch over a link of its own"
        );
        let Some(a) = adj.iter().filter(nearer).nth(lid % k.max(1)) else {
            continue;
        };
        out.push((lid, s as u32, a.port));
    }
    out
}

/// Shortens every counted destination's table paths that are longer than the ranking's
/// rules need (see the module's text), in `r` and the pass's columns. Returns the number of
/// entries changed. Run before the pass's state is built from the tables.
pub(super) fn shorten_paths(ps: &mut Pass, rk: &UpDownRanking, r: &mut Routing) -> usize {
    let (t, n) = (ps.t, ps.n);
    // the switch graph's distances to each destination switch (one row per such switch)
    let mut row_of = vec![u32::MAX; n];
    let mut sws: Vec<usize> = Vec::new();
    for &(_, ds) in &ps.dests {
        if row_of[ds] == u32::MAX {
            row_of[ds] = sws.len() as u32;
            sws.push(ds);
        }
    }
    let raw: Vec<Vec<u32>> = sws
        .par_iter()
        .map(|&ds| super::super::ranking::bfs_levels(t, &[ds]))
        .collect();
    let psr = &*ps;
    let changes: Vec<Vec<(usize, u32, u8)>> = (0..psr.dests.len())
        .into_par_iter()
        .map_init(ShortScratch::default, |sc, i| {
            let row = row_of[psr.dests[i].1] as usize;
            shorter_entries(psr, rk, i, &raw[row], sc)
        })
        .collect();
    let mut moved = 0;
    for (lid, s, port) in changes.into_iter().flatten() {
        let s = s as usize;
        r.lft[s * ps.stride + lid] = port;
        ps.col[lid * ps.n + s] = port;
        moved += 1;
    }
    moved
}
