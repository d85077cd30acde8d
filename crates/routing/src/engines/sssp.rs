//! SSSP: globally balanced shortest paths (OpenSM's `sssp`, the routing half of `dfsssp`).
//!
//! Destinations in dfsssp's order: compute-node ports (`cn_guids`), then I/O ports
//! (`io_guids`), then the other end ports — each class grouped by switch, switches by
//! descending number of attached end LIDs (ties: switch index) — then switch LIDs; every LID of
//! an LMC range separately. For each destination LID: Dijkstra from the destination's switch on
//! the current channel weights (initially 1), lexicographically after the hop count (so every
//! path is a shortest path and the weights balance among shortest paths), the chosen next hops
//! written into every switch's
//! LFT, then every channel on the path from switch `s` gains the number of end LIDs attached
//! to `s` (the routes the destination just received from there) — global balancing. The
//! weight update is done in O(switches) by accumulating subtree sums in reverse Dijkstra order.
//! Sequential by nature; one heap and a few arrays are reused for all destinations. Ties in
//! Dijkstra are broken by switch index (deterministic). Not deadlock-free.

use super::common::{transpose_rect, unreached_note, Topo};
use super::{Engine, EngineError, RouteOptions, Routed};
use crate::tables::Routing;
use fabric::{Fabric, FaultMask, NO_PORT};
use rustc_hash::FxHashSet;
use std::cmp::Reverse;

/// The `sssp` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sssp;

impl Engine for Sssp {
    fn name(&self) -> &'static str {
        "sssp"
    }
    fn route_detailed(
        &self,
        f: &Fabric,
        mask: &FaultMask,
        opts: &RouteOptions,
    ) -> Result<Routed, EngineError> {
        let t = Topo::new(f, mask);
        if t.num_alive() == 0 {
            return Err(EngineError::NoSwitches);
        }
        let n = t.n;
        let num_hca = t.end_lids_per_switch();
        // destination order
        let cn: FxHashSet<u64> = opts.cn_guids.iter().copied().collect();
        let io: FxHashSet<u64> = opts.io_guids.iter().copied().collect();
        let class = |i: usize| {
            let g = f.port(t.ends[i].port).guid;
            if cn.contains(&g) {
                0
            } else if io.contains(&g) {
                1
            } else {
                2
            }
        };
        let mut order: Vec<usize> = (0..t.ends.len()).collect();
        order.sort_by_key(|&i| {
            let s = t.ends[i].sw as usize;
            (class(i), Reverse(num_hca[s]), s, i)
        });
        // in-adjacency of each switch u as parallel arrays (source switch, weight of the
        // channel source -> u, output port at the source), so relaxations stream through
        // memory; a channel's weight lives at its in-edge index.
        let mut in_start = vec![0u32; n + 1];
        let mut in_src: Vec<u32> = Vec::with_capacity(t.adj.len());
        let mut in_port: Vec<u8> = Vec::with_capacity(t.adj.len());
        for (u, st) in in_start.iter_mut().enumerate().take(n) {
            *st = in_src.len() as u32;
            for a in t.links(u) {
                let rport = f.port(f.channel_dst(fabric::ChannelId(a.ch))).num;
                in_src.push(a.peer);
                in_port.push(rport);
            }
        }
        in_start[n] = in_src.len() as u32;
        let mut in_w = vec![1u64; in_src.len()];
        let mut dist = vec![u64::MAX; n];
        // per switch: in-edge index of its next hop
        let mut via = vec![u32::MAX; n];
        let mut next_sw = vec![u32::MAX; n];
        let mut acc = vec![0u64; n];
        let mut popped: Vec<u32> = Vec::with_capacity(n);
        let mut heap = RadixHeap::default();
        let mut r = Routing::empty(f);
        let stride = r.stride();
        let mut cols = vec![NO_PORT; stride * n];
        let mut unreached = 0usize;
        let mut route = |d: usize, lid: usize, local_port: u8, cols: &mut [u8]| {
            dist.fill(u64::MAX);
            popped.clear();
            heap.clear();
            dist[d] = 0;
            via[d] = u32::MAX;
            heap.push(0, d as u32);
            while let Some((du, u)) = heap.pop() {
                let u = u as usize;
                // stale entry (a switch is pushed once per strict improvement, so it is
                // popped exactly once with its final distance)
                if du != dist[u] {
                    continue;
                }
                popped.push(u as u32);
                let (i0, i1) = (in_start[u] as usize, in_start[u + 1] as usize);
                for (k, (&s, &w)) in in_src[i0..i1].iter().zip(&in_w[i0..i1]).enumerate() {
                    let s = s as usize;
                    // positive weights: a finished switch never improves. Hop count first,
                    // load second: paths stay shortest, balanced among the shortest.
                    let nd = du.saturating_add(HOP + w);
                    if nd < dist[s] {
                        dist[s] = nd;
                        via[s] = (i0 + k) as u32;
                        next_sw[s] = u as u32;
                        heap.push(nd, s as u32);
                    }
                }
            }
            if lid < stride {
                let col = &mut cols[lid * n..(lid + 1) * n];
                for (s, slot) in col.iter_mut().enumerate() {
                    if !t.alive[s] {
                        continue;
                    }
                    if s == d {
                        *slot = local_port;
                    } else if dist[s] != u64::MAX {
                        *slot = in_port[via[s] as usize];
                    } else {
                        unreached += 1;
                    }
                }
            }
            // weights: every channel on s's path gains num_hca[s]
            for &s in &popped {
                acc[s as usize] = num_hca[s as usize];
            }
            for &s in popped.iter().rev() {
                let s = s as usize;
                if s == d {
                    continue;
                }
                let a = acc[s];
                if a > 0 {
                    in_w[via[s] as usize] += a;
                    acc[next_sw[s] as usize] += a;
                }
            }
        };
        for &i in &order {
            let e = t.ends[i];
            for off in 0..e.nlids as usize {
                route(e.sw as usize, e.base as usize + off, e.sw_port, &mut cols);
            }
        }
        for s in 0..n {
            if t.alive[s] && t.sw_lid[s] != 0 {
                route(s, t.sw_lid[s] as usize, 0, &mut cols);
            }
        }
        r.lft = transpose_rect(&cols, stride, n);
        let mut notes = Vec::new();
        unreached_note(&t, unreached, &mut notes);
        Ok(Routed { routing: r, notes })
    }
}

/// Cost of one hop, above any sum of channel weights along a path (weights count routes:
/// at most LIDs × end ports per channel, < 2^32 × 255 hops), so distances compare hop
/// counts first and accumulated load second.
const HOP: u64 = 1 << 42;

/// Monotone priority queue for Dijkstra (radix heap): keys popped never decrease, so an
/// entry only moves to lower buckets, each at most 64 times; pops are amortised O(1).
/// Deterministic (no hashing, fixed bucket order).
#[derive(Debug, Default)]
struct RadixHeap {
    last: u64,
    len: usize,
    buckets: Vec<Vec<(u64, u32)>>,
}

impl RadixHeap {
    fn clear(&mut self) {
        if self.buckets.len() != 65 {
            self.buckets = (0..65).map(|_| Vec::new()).collect();
        }
        for b in &mut self.buckets {
            b.clear();
        }
        self.last = 0;
        self.len = 0;
    }
    #[inline]
    fn bucket(x: u64) -> usize {
        if x == 0 {
            0
        } else {
            64 - x.leading_zeros() as usize
        }
    }
    #[inline]
    fn push(&mut self, key: u64, v: u32) {
        let b = Self::bucket(key ^ self.last);
        self.buckets[b].push((key, v));
        self.len += 1;
    }
    fn pop(&mut self) -> Option<(u64, u32)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = (1..65).find(|&i| !self.buckets[i].is_empty())?;
            let mut moved = std::mem::take(&mut self.buckets[i]);
            self.last = moved.iter().map(|&(k, _)| k).min().unwrap_or(self.last);
            for &(k, v) in &moved {
                let b = Self::bucket(k ^ self.last);
                self.buckets[b].push((k, v));
            }
            moved.clear();
            self.buckets[i] = moved;
        }
        self.len -= 1;
        self.buckets[0].pop()
    }
}
