//! SSSP: globally balanced shortest paths (OpenSM's `sssp`, the routing half of `dfsssp`).
//!
//! Destinations in dfsssp's order: compute-node ports (`cn_guids`), then I/O ports
//! (`io_guids`), then the other end ports — each class grouped by switch, switches by
//! descending number of attached end LIDs (ties: switch index) — then switch LIDs; every LID of
//! an LMC range separately. For each destination LID: Dijkstra from the destination's switch on
//! the current channel weights (initially 1), the chosen next hops written into every switch's
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
use std::collections::BinaryHeap;

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
        // in-adjacency: for each switch u, entries (s, channel s->u, port at s)
        let mut in_start = vec![0u32; n + 1];
        let mut in_adj: Vec<(u32, u32, u8)> = Vec::with_capacity(t.adj.len());
        for (u, st) in in_start.iter_mut().enumerate().take(n) {
            *st = in_adj.len() as u32;
            for a in t.links(u) {
                let rc = a.ch ^ 1;
                let rport = f.port(f.channel_src(fabric::ChannelId(rc))).num;
                in_adj.push((a.peer, rc, rport));
            }
        }
        in_start[n] = in_adj.len() as u32;
        let mut w = vec![1u64; f.links.len() * 2];
        let mut dist = vec![u64::MAX; n];
        let mut next_ch = vec![u32::MAX; n];
        let mut next_sw = vec![u32::MAX; n];
        let mut next_port = vec![NO_PORT; n];
        let mut done = vec![false; n];
        let mut acc = vec![0u64; n];
        let mut popped: Vec<u32> = Vec::with_capacity(n);
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::with_capacity(n);
        let mut r = Routing::empty(f);
        let stride = r.stride();
        let mut cols = vec![NO_PORT; stride * n];
        let mut unreached = 0usize;
        let mut route = |d: usize, lid: usize, local_port: u8, cols: &mut [u8]| {
            dist.fill(u64::MAX);
            done.fill(false);
            popped.clear();
            heap.clear();
            dist[d] = 0;
            next_ch[d] = u32::MAX;
            heap.push(Reverse((0, d as u32)));
            while let Some(Reverse((du, u))) = heap.pop() {
                let u = u as usize;
                if done[u] || du != dist[u] {
                    continue;
                }
                done[u] = true;
                popped.push(u as u32);
                for &(s, c, p) in &in_adj[in_start[u] as usize..in_start[u + 1] as usize] {
                    let s = s as usize;
                    if done[s] {
                        continue;
                    }
                    let nd = du.saturating_add(w[c as usize]);
                    if nd < dist[s] {
                        dist[s] = nd;
                        next_ch[s] = c;
                        next_sw[s] = u as u32;
                        next_port[s] = p;
                        heap.push(Reverse((nd, s as u32)));
                    }
                }
            }
            if lid < stride {
                let col = &mut cols[lid * n..(lid + 1) * n];
                for s in 0..n {
                    if !t.alive[s] {
                        continue;
                    }
                    if s == d {
                        col[s] = local_port;
                    } else if done[s] {
                        col[s] = next_port[s];
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
                    w[next_ch[s] as usize] += a;
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
