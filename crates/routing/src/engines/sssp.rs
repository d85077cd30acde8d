//! SSSP: globally balanced shortest paths (OpenSM's `sssp`, the routing half of `dfsssp`).
//!
//! Destinations in dfsssp's order: compute-node ports (`cn_guids`), then I/O ports
//! (`io_guids`), then the other end ports — each class grouped by switch, switches by
//! descending number of attached end LIDs (ties: OpenSM's switch GUID map order), ports by
//! switch port number — then switch LIDs in the same switch order; every LID of an LMC range
//! separately. For each destination LID: Dijkstra from the destination (a CA is a vertex of its
//! own, one cost-1 channel from its switch) on the current channel weights, lexicographically
//! after the hop count (so every path is a shortest path and the weights balance among shortest
//! paths), the chosen next hops written into every switch's LFT, then every channel on the path
//! from switch `s` gains the number of LIDs at `s` (its end LIDs plus its own, as OpenSM
//! counts) — global balancing. The weight update is done in O(switches) by accumulating
//! subtree sums in reverse Dijkstra order. Ties between equal-cost paths are broken exactly as
//! OpenSM breaks them (see `DaryHeap`; relaxations in port order, the first of equal
//! candidates wins), which reproduces its balance. Sequential by nature; one heap and a few
//! arrays are reused for all destinations. Not deadlock-free.

use super::common::{transpose_rect, unreached_note, Topo};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::Routing;
use fabric::NO_PORT;
use rustc_hash::FxHashSet;
use std::cmp::Reverse;

/// The `sssp` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sssp;

impl Engine for Sssp {
    fn info(&self) -> &'static EngineInfo {
        &super::SSSP
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let f = t.f;
        let n = t.n;
        let num_hca = t.end_lids_per_switch();
        // OpenSM's switch order: its switch GUID map, keyed by the GUID in network byte order
        // compared as a host integer (byte-swapped on little-endian hosts).
        let mut rank_order: Vec<usize> = (0..n).filter(|&s| t.alive[s]).collect();
        rank_order.sort_by_key(|&s| (t.guid(s).swap_bytes(), s));
        let mut rank = vec![u32::MAX; n];
        for (r, &s) in rank_order.iter().enumerate() {
            rank[s] = r as u32;
        }
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
            let e = t.ends[i];
            let s = e.sw as usize;
            (class(i), Reverse(num_hca[s]), rank[s], e.sw_port, i)
        });
        let mut sw_order = rank_order.clone();
        sw_order.sort_by_key(|&s| (Reverse(num_hca[s]), rank[s]));
        // in-adjacency of each switch u as parallel arrays (source switch, weight of the
        // channel source -> u, output port at the source), in u's port order, so relaxations
        // stream through memory; a channel's weight lives at its in-edge index.
        let mut in_start = vec![0u32; n + 1];
        let mut in_src: Vec<u32> = Vec::with_capacity(t.adj.len());
        let mut in_port: Vec<u8> = Vec::with_capacity(t.adj.len());
        let mut links: Vec<(u8, u32, u8)> = Vec::new();
        for (u, st) in in_start.iter_mut().enumerate().take(n) {
            *st = in_src.len() as u32;
            links.clear();
            links.extend(t.links(u).iter().map(|a| {
                let rport = f.port(f.channel_dst(fabric::ChannelId(a.ch))).num;
                (a.port, a.peer, rport)
            }));
            links.sort_by_key(|&(p, _, _)| p);
            for &(_, peer, rport) in &links {
                in_src.push(peer);
                in_port.push(rport);
            }
        }
        in_start[n] = in_src.len() as u32;
        // the switch each in-edge enters (the next hop of a switch using it)
        let mut in_dst = vec![0u32; in_src.len()];
        for u in 0..n {
            in_dst[in_start[u] as usize..in_start[u + 1] as usize].fill(u as u32);
        }
        // cost of each channel: one hop plus its weight (initially 1)
        let mut in_cost = vec![HOP + 1; in_src.len()];
        // distances of the switches plus one extra vertex `n`: the destination CA, linked to
        // its switch by a channel of cost 1 (as in OpenSM, whose heap tie order we mirror)
        let mut dist = vec![u64::MAX; n + 1];
        // per switch: in-edge index of its next hop
        let mut via = vec![u32::MAX; n];
        let mut acc = vec![0u64; n];
        let mut popped: Vec<u32> = Vec::with_capacity(n);
        let mut heap = DaryHeap::new(n + 1);
        let heap_tpl: Vec<u32> = rank_order.iter().map(|&s| s as u32).collect();
        let mut pos_tpl = vec![u32::MAX; n + 1];
        for (i, &s) in rank_order.iter().enumerate() {
            pos_tpl[s] = i as u32;
        }
        let mut r = Routing::empty(f);
        let stride = r.stride();
        let mut cols = vec![NO_PORT; stride * n];
        let mut unreached = 0usize;
        let alive = rank_order.len();
        let ca = n as u32;
        let mut route = |d: usize, lid: usize, local_port: u8, from_ca: bool, cols: &mut [u8]| {
            popped.clear();
            // every switch queued at infinity in switch order: equal keys never sift, so
            // the heap is exactly the switch order (restored by copying a template)
            heap.reset(&heap_tpl, &pos_tpl);
            dist.fill(u64::MAX);
            let src = if from_ca {
                heap.insert(u64::MAX, ca);
                ca
            } else {
                d as u32
            };
            dist[src as usize] = 0;
            heap.decrease(src, 0);
            via[d] = u32::MAX;
            // switches with a finite distance, and the largest hop count among them
            let mut reached = usize::from(!from_ca);
            let mut max_hop = 0u64;
            while let Some((du, u)) = heap.pop() {
                if du == u64::MAX {
                    break; // the rest is unreachable
                }
                if u == ca {
                    if 1 < dist[d] {
                        reached += usize::from(dist[d] == u64::MAX);
                        dist[d] = 1;
                        heap.decrease(d as u32, 1);
                    }
                    continue;
                }
                let u = u as usize;
                popped.push(u as u32);
                if reached == alive && du >> HOP_BITS == max_hop {
                    // every switch is reached and the queue holds only the farthest hop
                    // level: relaxing from it cannot improve anything (one more hop), so
                    // the remaining pops change nothing but their order in `popped`. They
                    // are leaves of the path tree, so any order accumulates the same sums.
                    popped.extend_from_slice(heap.queued());
                    break;
                }
                let (i0, i1) = (in_start[u] as usize, in_start[u + 1] as usize);
                for (k, (&s, &c)) in in_src[i0..i1].iter().zip(&in_cost[i0..i1]).enumerate() {
                    let s = s as usize;
                    // positive weights: a finished switch never improves. Hop count first,
                    // load second: paths stay shortest, balanced among the shortest. No
                    // overflow: du < 256 hops, c < 2 hops.
                    let nd = du + c;
                    if nd < dist[s] {
                        // queued (finished switches never improve): the heap key is dist[s]
                        reached += usize::from(dist[s] == u64::MAX);
                        max_hop = max_hop.max(nd >> HOP_BITS);
                        dist[s] = nd;
                        via[s] = (i0 + k) as u32;
                        heap.lower(s as u32, nd);
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
            // weights: every channel on s's path gains num_hca[s] (its end LIDs plus its own
            // LID, like OpenSM's count)
            for &s in &popped {
                acc[s as usize] = num_hca[s as usize] + 1;
            }
            for &s in popped.iter().rev() {
                let s = s as usize;
                if s == d {
                    continue;
                }
                let a = acc[s];
                if a > 0 {
                    in_cost[via[s] as usize] += a;
                    acc[in_dst[via[s] as usize] as usize] += a;
                }
            }
        };
        for &i in &order {
            let e = t.ends[i];
            for off in 0..e.nlids as usize {
                route(
                    e.sw as usize,
                    e.base as usize + off,
                    e.sw_port,
                    true,
                    &mut cols,
                );
            }
        }
        for &s in &sw_order {
            if t.sw_lid[s] != 0 {
                route(s, t.sw_lid[s] as usize, 0, false, &mut cols);
            }
        }
        r.lft = transpose_rect(&cols, stride, n);
        let mut notes = Vec::new();
        unreached_note(t, unreached, &mut notes);
        Ok(Routed { routing: r, notes })
    }
}

/// Cost of one hop, above any sum of channel weights along a path (weights count routes:
/// at most LIDs × end ports per channel, < 2^32 × 255 hops), so distances compare hop
/// counts first and accumulated load second.
const HOP: u64 = 1 << HOP_BITS;
const HOP_BITS: u32 = 42;

/// Indexed 4-ary min-heap with OpenSM's `cl_heap` tie behaviour: every vertex is inserted
/// (at infinity) in switch order, keys only decrease while queued, a sift-up moves past
/// strictly larger parents, a sift-down follows the last of the smallest children, and the
/// root is replaced by the last element on extraction. Equal-cost Dijkstra ties are thus
/// resolved the way OpenSM resolves them.
#[derive(Debug)]
struct DaryHeap {
    keys: Vec<u64>,
    verts: Vec<u32>,
    pos: Vec<u32>,
}

const ARITY: usize = 4;

impl DaryHeap {
    fn new(vertices: usize) -> Self {
        DaryHeap {
            keys: Vec::with_capacity(vertices),
            verts: Vec::with_capacity(vertices),
            pos: vec![u32::MAX; vertices],
        }
    }
    /// Equivalent to clearing and inserting `verts` at infinity in order (equal keys never
    /// move); `pos` must hold each listed vertex's index in `verts`.
    fn reset(&mut self, verts: &[u32], pos: &[u32]) {
        self.keys.clear();
        self.keys.resize(verts.len(), u64::MAX);
        self.verts.clear();
        self.verts.extend_from_slice(verts);
        self.pos.copy_from_slice(pos);
    }
    fn insert(&mut self, key: u64, v: u32) {
        self.keys.push(key);
        self.verts.push(v);
        let i = self.keys.len() - 1;
        self.pos[v as usize] = i as u32;
        self.up(i, key, v);
    }
    /// Lowers the key of queued vertex `v`.
    #[inline]
    fn decrease(&mut self, v: u32, key: u64) {
        let i = self.pos[v as usize] as usize;
        let old = self.keys[i];
        if key < old {
            self.up(i, key, v);
        } else if key > old {
            self.keys[i] = key;
            self.down(i, key, v);
        }
    }
    /// Lowers the key of queued vertex `v` to `key` (strictly below its current key).
    #[inline]
    fn lower(&mut self, v: u32, key: u64) {
        let i = self.pos[v as usize] as usize;
        self.up(i, key, v);
    }
    #[inline]
    fn up(&mut self, mut i: usize, key: u64, v: u32) {
        while i > 0 {
            let p = (i - 1) / ARITY;
            let pk = self.keys[p];
            if key < pk {
                self.place(i, pk, self.verts[p]);
                i = p;
            } else {
                break;
            }
        }
        self.place(i, key, v);
    }
    /// Puts vertex `v` with `key` in heap slot `i`.
    #[inline]
    fn place(&mut self, i: usize, key: u64, v: u32) {
        self.keys[i] = key;
        self.verts[i] = v;
        self.pos[v as usize] = i as u32;
    }
    #[inline]
    fn down(&mut self, mut i: usize, key: u64, v: u32) {
        let len = self.keys.len();
        loop {
            let first = i * ARITY + 1;
            if first >= len {
                break;
            }
            let (best, bk) = if first + ARITY <= len {
                let c: &[u64; ARITY] = self.keys[first..first + ARITY].try_into().unwrap();
                let (mut b, mut bk) = (0, c[0]);
                if c[1] <= bk {
                    b = 1;
                    bk = c[1];
                }
                if c[2] <= bk {
                    b = 2;
                    bk = c[2];
                }
                if c[3] <= bk {
                    b = 3;
                    bk = c[3];
                }
                (first + b, bk)
            } else {
                let mut b = first;
                let mut bk = self.keys[first];
                for (c, &k) in self.keys[first..len].iter().enumerate().skip(1) {
                    if k <= bk {
                        b = first + c;
                        bk = k;
                    }
                }
                (b, bk)
            };
            if key > bk {
                self.place(i, bk, self.verts[best]);
                i = best;
            } else {
                break;
            }
        }
        self.place(i, key, v);
    }
    /// The queued vertices, in heap order.
    fn queued(&self) -> &[u32] {
        &self.verts
    }
    fn pop(&mut self) -> Option<(u64, u32)> {
        let lk = self.keys.pop()?;
        let lv = self.verts.pop()?;
        if self.keys.is_empty() {
            return Some((lk, lv));
        }
        let root = (self.keys[0], self.verts[0]);
        self.down(0, lk, lv);
        Some(root)
    }
}

/// SSSP's tables for `t` and their (source switch, destination LID) paths, after checking the
/// VL budget: the start of the VL engines that layer or colour SSSP's paths (`dfsssp`,
/// `hopvl`).
pub(crate) fn sssp_paths(
    t: &Topo,
    opts: &RouteOptions,
) -> Result<(Routed, crate::vl::paths::Paths), EngineError> {
    opts.budget.validate()?;
    let routed = Sssp.route_topo(t, opts)?;
    let paths = crate::vl::paths::Paths::of(t.f, &routed.routing, Some(&t.mask));
    Ok((routed, paths))
}

#[cfg(test)]
mod tests {
    use super::DaryHeap;

    fn drain(h: &mut DaryHeap) -> Vec<(u64, u32)> {
        std::iter::from_fn(|| h.pop()).collect()
    }

    #[test]
    fn heap_breaks_ties_like_opensm_cl_heap() {
        // six vertices queued at infinity, three lowered to the same key: worked by hand
        // through cl_heap's rules (sift-up past strictly larger parents only, sift-down to
        // the last of the smallest children, root replaced by the last element)
        let mut h = DaryHeap::new(6);
        for v in 0..6 {
            h.insert(u64::MAX, v);
        }
        h.decrease(5, 10);
        h.decrease(3, 10);
        h.decrease(4, 10);
        let order: Vec<u32> = drain(&mut h).into_iter().map(|(_, v)| v).collect();
        assert_eq!(order, vec![5, 4, 3, 1, 2, 0]);
    }

    #[test]
    fn heap_pops_in_key_order_after_decreases() {
        let n = 200u32;
        let mut h = DaryHeap::new(n as usize);
        for v in 0..n {
            h.insert(u64::MAX, v);
        }
        let mut x = 12345u64;
        let mut keys = vec![u64::MAX; n as usize];
        for _ in 0..600 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((x >> 33) % n as u64) as usize;
            let k = (x >> 40) % 50;
            if k < keys[v] {
                keys[v] = k;
                h.decrease(v as u32, k);
            }
        }
        let got = drain(&mut h);
        assert_eq!(got.len(), n as usize);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(got.iter().all(|&(k, v)| keys[v as usize] == k));
    }
}
