//! Shared machinery: the live switch graph under a fault mask, the destination list, hop
//! matrices and OpenSM's generic "least-loaded min-hop port" LFT builder (used by minhop, updn,
//! dnup and dor with different candidate rules).
//!
//! The generic builder's balancing counters are per switch (OpenSM counts paths per output
//! port of each switch), so the builder runs **per switch in parallel**, each switch walking
//! the destinations in the same fixed order: results are independent of the thread count and
//! identical to a sequential run.

use super::RouteOptions;
use crate::tables::Routing;
use fabric::rng::Rng;
use fabric::{Fabric, FaultMask, Lid, NodeId, NodeKind, PortId, NO_PORT};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// "Unreachable" in hop matrices.
pub const INF: u16 = u16::MAX;

/// One live inter-switch out-channel of a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adj {
    /// Channel id (`ChannelId.0`).
    pub ch: u32,
    /// Switch index of the remote switch.
    pub peer: u32,
    /// Output port number on this switch.
    pub port: u8,
}

/// A live end port (CA or router port) cabled to a live switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndDest {
    pub port: PortId,
    /// Switch index it hangs off.
    pub sw: u32,
    /// Port number on that switch facing the end port.
    pub sw_port: u8,
    /// Base LID and number of LIDs (2^LMC).
    pub base: Lid,
    pub nlids: u16,
}

/// The live part of a fabric: switch adjacency (CSR over switch indices) and destinations.
#[derive(Debug)]
pub struct Topo<'a> {
    pub f: &'a Fabric,
    /// Number of switches (live or not; indices are `Fabric::switch_index`).
    pub n: usize,
    pub alive: Vec<bool>,
    pub adj_start: Vec<u32>,
    pub adj: Vec<Adj>,
    /// Live end ports, in `Fabric::end_ports` order.
    pub ends: Vec<EndDest>,
    /// Per switch: indices into `ends` of its end ports (CSR).
    pub ends_start: Vec<u32>,
    pub ends_of: Vec<u32>,
    /// Per switch: its LID (0 = none).
    pub sw_lid: Vec<Lid>,
    /// End-port LIDs that cannot be routed (dead or not cabled to a live switch).
    pub dead_end_lids: usize,
    /// The faults this topology is the live part of.
    pub mask: FaultMask,
}

impl<'a> Topo<'a> {
    /// The live topology, or [`super::EngineError::NoSwitches`] when no switch is alive (every
    /// engine's first step).
    pub fn live(f: &'a Fabric, mask: &FaultMask) -> Result<Self, super::EngineError> {
        let t = Topo::new(f, mask);
        if t.num_alive() == 0 {
            return Err(super::EngineError::NoSwitches);
        }
        Ok(t)
    }

    pub fn new(f: &'a Fabric, mask: &FaultMask) -> Self {
        let n = f.num_switches();
        let alive: Vec<bool> = f.switches.iter().map(|&s| !mask.node_dead(s)).collect();
        let mut adj_start = Vec::with_capacity(n + 1);
        let mut adj = Vec::with_capacity(f.sw_adj.len());
        for s in f.switch_ids() {
            adj_start.push(adj.len() as u32);
            if !alive[s.idx()] {
                continue;
            }
            for &c in f.switch_links(s) {
                if !mask.channel_alive(f, c) {
                    continue;
                }
                let src = f.port(f.channel_src(c));
                let Some(peer) = f.dst_switch(c).map(|t| t.0) else {
                    continue;
                };
                if !alive[peer as usize] {
                    continue;
                }
                adj.push(Adj {
                    ch: c.0,
                    peer,
                    port: src.num,
                });
            }
        }
        adj_start.push(adj.len() as u32);
        let mut ends = Vec::new();
        let mut dead_end_lids = 0usize;
        for &p in &f.end_ports {
            let port = f.port(p);
            if port.lid == 0 {
                continue;
            }
            let nlids = 1u16 << port.lmc.min(7);
            let ok = (|| {
                if mask.node_dead(port.node) {
                    return None;
                }
                let c = f.out_channel(p)?;
                if !mask.channel_alive(f, c) {
                    return None;
                }
                let r = f.port(f.channel_dst(c));
                let si = f.switch_of(r.node)?.0;
                if !alive[si as usize] {
                    return None;
                }
                Some((si, r.num))
            })();
            match ok {
                Some((sw, sw_port)) => ends.push(EndDest {
                    port: p,
                    sw,
                    sw_port,
                    base: port.lid,
                    nlids,
                }),
                None => dead_end_lids += nlids as usize,
            }
        }
        let mut cnt = vec![0u32; n + 1];
        for e in &ends {
            cnt[e.sw as usize + 1] += 1;
        }
        for i in 0..n {
            cnt[i + 1] += cnt[i];
        }
        let ends_start = cnt.clone();
        let mut ends_of = vec![0u32; ends.len()];
        for (i, e) in ends.iter().enumerate() {
            let slot = &mut cnt[e.sw as usize];
            ends_of[*slot as usize] = i as u32;
            *slot += 1;
        }
        let sw_lid = f.switches.iter().map(|&s| f.switch_lid(s)).collect();
        Topo {
            f,
            n,
            alive,
            adj_start,
            adj,
            ends,
            ends_start,
            ends_of,
            sw_lid,
            dead_end_lids,
            mask: mask.clone(),
        }
    }

    /// Live inter-switch out-channels of switch `s`.
    #[inline]
    pub fn links(&self, s: usize) -> &[Adj] {
        &self.adj[self.adj_start[s] as usize..self.adj_start[s + 1] as usize]
    }
    /// Indices into `ends` of the end ports on switch `s`.
    #[inline]
    pub fn ends_on(&self, s: usize) -> &[u32] {
        &self.ends_of[self.ends_start[s] as usize..self.ends_start[s + 1] as usize]
    }
    /// Number of live switches.
    pub fn num_alive(&self) -> usize {
        self.alive.iter().filter(|&&a| a).count()
    }
    /// Node GUID of switch index `s`.
    #[inline]
    pub fn guid(&self, s: usize) -> u64 {
        self.f.node(self.f.switches[s]).guid
    }
    /// Number of end LIDs (LMC-expanded) attached to each switch.
    pub fn end_lids_per_switch(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.n];
        for e in &self.ends {
            v[e.sw as usize] += e.nlids as u64;
        }
        v
    }
    /// A routing with the trivial entries filled: every switch's own LID → port 0, every end
    /// port's LIDs on its own switch → the CA-facing port.
    pub fn base_routing(&self) -> Routing {
        let mut r = Routing::empty(self.f);
        let stride = r.stride();
        for s in 0..self.n {
            if !self.alive[s] {
                continue;
            }
            let row = &mut r.lft[s * stride..(s + 1) * stride];
            let l = self.sw_lid[s] as usize;
            if l != 0 && l < stride {
                row[l] = 0;
            }
            for &ei in self.ends_on(s) {
                let e = &self.ends[ei as usize];
                for k in 0..e.nlids as usize {
                    if let Some(x) = row.get_mut(e.base as usize + k) {
                        *x = e.sw_port;
                    }
                }
            }
        }
        r
    }
    /// Map from port GUID to index into `ends`.
    pub fn end_by_guid(&self) -> FxHashMap<u64, u32> {
        let mut m = FxHashMap::default();
        for (i, e) in self.ends.iter().enumerate() {
            let g = self.f.port(e.port).guid;
            if g != 0 {
                m.entry(g).or_insert(i as u32);
            }
        }
        m
    }
    /// Resolves root GUIDs (switch node GUIDs) to live switch indices; returns the ignored
    /// GUIDs too.
    pub fn resolve_switch_guids(&self, guids: &[u64]) -> (Vec<usize>, Vec<u64>) {
        let mut by_guid: FxHashMap<u64, usize> = FxHashMap::default();
        for s in 0..self.n {
            if self.alive[s] {
                by_guid.entry(self.guid(s)).or_insert(s);
            }
        }
        let mut ok = Vec::new();
        let mut bad = Vec::new();
        for &g in guids {
            match by_guid.get(&g) {
                Some(&s) if !ok.contains(&s) => ok.push(s),
                Some(_) => {}
                None => bad.push(g),
            }
        }
        (ok, bad)
    }
    /// True when some live end node exists that is not a switch (routers count).
    pub fn has_ends(&self) -> bool {
        !self.ends.is_empty()
    }
    /// Node of an end destination.
    pub fn end_node(&self, e: usize) -> NodeId {
        self.f.port(self.ends[e].port).node
    }
    /// Kind of an end destination's node.
    pub fn end_kind(&self, e: usize) -> NodeKind {
        self.f.node(self.end_node(e)).kind
    }
}

/// Hop matrix of the live switch graph: `hop[u * n + t]` = BFS distance from `u` to `t`
/// (links are bidirectional and masks kill both directions, so it is symmetric). Parallel over
/// sources.
pub fn hop_matrix(t: &Topo) -> Vec<u16> {
    let n = t.n;
    let mut hop = vec![INF; n * n];
    if n == 0 {
        return hop;
    }
    hop.par_chunks_mut(n)
        .enumerate()
        .for_each_init(Vec::new, |queue: &mut Vec<u32>, (u, row)| {
            if !t.alive[u] {
                return;
            }
            queue.clear();
            row[u] = 0;
            queue.push(u as u32);
            let mut head = 0;
            while head < queue.len() {
                let x = queue[head] as usize;
                head += 1;
                let d = row[x];
                for a in t.links(x) {
                    let p = a.peer as usize;
                    if row[p] == INF {
                        row[p] = d.saturating_add(1).min(INF - 1);
                        queue.push(p as u32);
                    }
                }
            }
        });
    hop
}

/// OpenSM's port order for the generic LFT builder: ports from `guid_routing_order` first (in
/// that order), then end ports grouped by switch, switches by descending number of end ports
/// (ties: switch index), ports in fabric order. Returns indices into `topo.ends`.
pub fn generic_order(t: &Topo, opts: &RouteOptions) -> Vec<u32> {
    port_order(t, opts, false)
}

/// [`generic_order`] with OpenSM's exact tie rules, for engines that reproduce OpenSM's tables
/// (minhop): switches with equally many end ports in the order of OpenSM's switch GUID map —
/// its keys are GUIDs in network byte order compared as host integers, i.e. byte-swapped GUIDs
/// on the little-endian hosts OpenSM runs on (a stable sort keeps that order) — and each
/// switch's end ports by its port number (OpenSM scans ports 1..N).
pub fn opensm_order(t: &Topo, opts: &RouteOptions) -> Vec<u32> {
    port_order(t, opts, true)
}

fn port_order(t: &Topo, opts: &RouteOptions, opensm_ties: bool) -> Vec<u32> {
    let mut order = Vec::with_capacity(t.ends.len());
    let mut used = vec![false; t.ends.len()];
    if !opts.guid_routing_order.is_empty() {
        let m = t.end_by_guid();
        for g in &opts.guid_routing_order {
            if let Some(&i) = m.get(g) {
                if !used[i as usize] {
                    used[i as usize] = true;
                    order.push(i);
                }
            }
        }
    }
    let mut sws: Vec<usize> = (0..t.n).filter(|&s| !t.ends_on(s).is_empty()).collect();
    if opensm_ties {
        sws.sort_by_key(|&s| {
            (
                std::cmp::Reverse(t.ends_on(s).len()),
                t.guid(s).swap_bytes(),
                s,
            )
        });
    } else {
        sws.sort_by_key(|&s| (std::cmp::Reverse(t.ends_on(s).len()), s));
    }
    let mut on: Vec<u32> = Vec::new();
    for s in sws {
        on.clear();
        on.extend_from_slice(t.ends_on(s));
        if opensm_ties {
            on.sort_by_key(|&i| (t.ends[i as usize].sw_port, i));
        }
        for &i in &on {
            if !used[i as usize] {
                used[i as usize] = true;
                order.push(i);
            }
        }
    }
    order
}

/// A candidate output of the generic builder: port number and remote switch index.
pub type Cand = (u8, u32);

/// Parameters of the generic LFT builder.
#[derive(Clone, Copy, Debug)]
pub struct GenericParams {
    pub port_shifting: bool,
    pub scatter_seed: u64,
    /// OpenSM's LMC diversity rules for offsets > 0 (off in DOR mode).
    pub lmc_diversity: bool,
}

impl GenericParams {
    pub fn from_opts(opts: &RouteOptions, lmc_diversity: bool) -> Self {
        GenericParams {
            port_shifting: opts.port_shifting,
            scatter_seed: opts.scatter_ports,
            lmc_diversity,
        }
    }
}

/// OpenSM's generic LFT builder over per-(switch, destination switch) candidate sets.
///
/// `cands(s, t, out)` must push the candidate output ports of switch `s` toward destination
/// switch `t` (`s != t`) in scan order (port order), or nothing when `t` is unreachable.
/// Returns the routing and the number of (switch, LID) entries left unrouted because the
/// destination was unreachable from a live switch.
pub fn generic_lfts<F>(t: &Topo, order: &[u32], params: GenericParams, cands: F) -> (Routing, usize)
where
    F: Fn(usize, usize, &mut Vec<Cand>) + Sync,
{
    let mut r = t.base_routing();
    let stride = r.stride();
    let max_off = t.ends.iter().map(|e| e.nlids).max().unwrap_or(1) as usize;
    let switch_targets: Vec<usize> = (0..t.n)
        .filter(|&s| t.alive[s] && t.sw_lid[s] != 0 && (t.sw_lid[s] as usize) < stride)
        .collect();
    let unreached: usize = r
        .lft
        .par_chunks_mut(stride)
        .enumerate()
        .map(|(s, row)| {
            if !t.alive[s] {
                return 0;
            }
            let node = t.f.node(t.f.switches[s]);
            let mut count = vec![0u32; node.nports as usize + 1];
            // remote switch per port (for LMC diversity)
            let mut port_peer = vec![u32::MAX; node.nports as usize + 1];
            for a in t.links(s) {
                port_peer[a.port as usize] = a.peer;
            }
            let mut rng = Rng::new(params.scatter_seed ^ node.guid.rotate_left(17));
            let mut cand: Vec<Cand> = Vec::with_capacity(t.links(s).len());
            let mut cached_t = usize::MAX;
            let mut unreached = 0usize;
            // Cursor over the cached candidate list for the plain least-loaded rule: every
            // candidate before `pos` has a count above `m`, none has a count below `m` (counts
            // only grow), so the first candidate from `pos` on with count `m` is exactly the
            // first least-loaded one in scan order.
            let mut cursor: Option<(u32, usize)> = None;
            // The cached candidates' summed counts (`load_sum`), for port shifting.
            let mut cand_sum: Option<u64> = None;
            for off in 0..max_off {
                let plain = !params.port_shifting
                    && if off == 0 {
                        params.scatter_seed == 0
                    } else {
                        !params.lmc_diversity
                    };
                for &ei in order {
                    let e = &t.ends[ei as usize];
                    if off >= e.nlids as usize || e.sw as usize == s {
                        continue;
                    }
                    let lid = e.base as usize + off;
                    if lid >= stride {
                        continue;
                    }
                    let tsw = e.sw as usize;
                    if tsw != cached_t {
                        cand.clear();
                        cands(s, tsw, &mut cand);
                        cached_t = tsw;
                        cursor = None;
                        cand_sum = None;
                    }
                    if cand.is_empty() {
                        unreached += 1;
                        continue;
                    }
                    let port = if plain {
                        let (mut m, mut pos) = cursor.unwrap_or_else(|| {
                            let m = cand
                                .iter()
                                .map(|&(q, _)| count[q as usize])
                                .min()
                                .unwrap_or(0);
                            (m, 0)
                        });
                        loop {
                            if let Some(i) =
                                (pos..cand.len()).find(|&i| count[cand[i].0 as usize] == m)
                            {
                                pos = i;
                                break;
                            }
                            m += 1;
                            pos = 0;
                        }
                        cursor = Some((m, pos + 1));
                        cand[pos].0
                    } else if off == 0 || !params.lmc_diversity {
                        let sum = if params.port_shifting {
                            *cand_sum.get_or_insert_with(|| load_sum(&cand, &count))
                        } else {
                            0
                        };
                        pick_base(&cand, &count, params, &mut rng, off == 0, sum)
                    } else {
                        pick_lmc(t, &cand, &count, &port_peer, &row[e.base as usize..lid])
                    };
                    row[lid] = port;
                    count[port as usize] += 1;
                    // (the port is one of the candidates, whose sum grows with it)
                    if let Some(sum) = cand_sum.as_mut() {
                        *sum += 1;
                    }
                }
            }
            // Switch LIDs: not counted (OpenSM's port_profile_switch_nodes FALSE).
            for &tsw in &switch_targets {
                if tsw == s {
                    continue;
                }
                cand.clear();
                cands(s, tsw, &mut cand);
                cached_t = usize::MAX;
                if cand.is_empty() {
                    unreached += 1;
                    continue;
                }
                let sum = if params.port_shifting {
                    load_sum(&cand, &count)
                } else {
                    0
                };
                row[t.sw_lid[tsw] as usize] =
                    pick_base(&cand, &count, params, &mut rng, false, sum);
            }
            let _ = cached_t;
            unreached
        })
        .sum();
    (r, unreached)
}

/// The candidates' counts summed (port shifting's rotation).
fn load_sum(cand: &[Cand], count: &[u32]) -> u64 {
    cand.iter().map(|&(q, _)| count[q as usize] as u64).sum()
}

/// Least-loaded candidate (first in scan order on ties), with OpenSM's port_shifting rotation
/// (from `sum`, the candidates' counts summed, `load_sum`; read only with port shifting) and
/// scatter_ports random tie-break (base LIDs only).
fn pick_base(
    cand: &[Cand],
    count: &[u32],
    p: GenericParams,
    rng: &mut Rng,
    base: bool,
    sum: u64,
) -> u8 {
    let n = cand.len();
    let start = if p.port_shifting && n > 1 {
        debug_assert_eq!(sum, load_sum(cand, count), "port shifting's running sum");
        ((sum / n as u64) % n as u64) as usize
    } else {
        0
    };
    let mut best = cand[start].0;
    let mut bc = count[best as usize];
    // From `start` round to it (a chained scan: a modulo per candidate cost more than the
    // rest of the choice, on every entry of every switch).
    for &(q, _) in cand[start + 1..].iter().chain(&cand[..start]) {
        if count[q as usize] < bc {
            bc = count[q as usize];
            best = q;
        }
    }
    if base && p.scatter_seed != 0 && n > 1 {
        let ties = cand
            .iter()
            .filter(|&&(q, _)| count[q as usize] == bc)
            .count();
        if ties > 1 {
            let k = rng.below(ties as u64) as usize;
            if let Some(&(q, _)) = cand
                .iter()
                .filter(|&&(q, _)| count[q as usize] == bc)
                .nth(k)
            {
                best = q;
            }
        }
    }
    best
}

/// OpenSM's LMC rule for offsets > 0: scan starting after the port chosen for the previous LID;
/// prefer a remote system image not used by this port's earlier LIDs, then a remote node not
/// used, then the fewest paths, then the fewest earlier LIDs of this port via that node.
fn pick_lmc(t: &Topo, cand: &[Cand], count: &[u32], port_peer: &[u32], prev: &[u8]) -> u8 {
    let n = cand.len();
    let last = prev.last().copied().unwrap_or(NO_PORT);
    let start = cand
        .iter()
        .position(|&(q, _)| q == last)
        .map(|i| (i + 1) % n)
        .unwrap_or(0);
    let sys_of = |sw: u32| -> u64 {
        let node = t.f.node(t.f.switches[sw as usize]);
        if node.sys_guid != 0 {
            node.sys_guid
        } else {
            node.guid
        }
    };
    let mut best = cand[start].0;
    let mut best_key = (true, true, u32::MAX, u32::MAX);
    for k in 0..n {
        let (q, peer) = cand[(start + k) % n];
        let mut sys_used = false;
        let mut node_used = false;
        let mut same = 0u32;
        for &pp in prev {
            let Some(&ps) = port_peer.get(pp as usize) else {
                continue;
            };
            if ps == u32::MAX {
                continue;
            }
            if ps == peer {
                node_used = true;
                same += 1;
            }
            if sys_of(ps) == sys_of(peer) {
                sys_used = true;
            }
        }
        let key = (sys_used, node_used, count[q as usize], same);
        if key < best_key {
            best_key = key;
            best = q;
        }
    }
    best
}

/// Transposes an `n × n` row-major matrix (blocked, for cache friendliness).
pub fn transpose<T: Copy + Send + Sync>(m: &[T], n: usize) -> Vec<T> {
    if n == 0 {
        return Vec::new();
    }
    let mut out = m.to_vec();
    const B: usize = 64;
    out.par_chunks_mut(n * B)
        .enumerate()
        .for_each(|(bi, chunk)| {
            let r0 = bi * B;
            let rows = chunk.len() / n;
            for c0 in (0..n).step_by(B) {
                let c1 = (c0 + B).min(n);
                for i in 0..rows {
                    let orow = r0 + i;
                    for j in c0..c1 {
                        chunk[i * n + j] = m[j * n + orow];
                    }
                }
            }
        });
    out
}

/// Notes for unrouted entries.
pub fn unreached_note(t: &Topo, unreached: usize, notes: &mut Vec<String>) {
    if unreached > 0 {
        notes.push(format!(
            "{unreached} (switch, LID) entries have no route: the live fabric is disconnected"
        ));
    }
    if t.dead_end_lids > 0 {
        notes.push(format!(
            "{} end-port LIDs are not routed: their node or cable is dead or they hang off no live switch",
            t.dead_end_lids
        ));
    }
}

/// Eccentricity of every live switch from a hop matrix (`INF` for dead switches; unreachable
/// pairs are ignored, so each component is measured on its own).
pub fn eccentricities(t: &Topo, hop: &[u16]) -> Vec<u16> {
    (0..t.n)
        .into_par_iter()
        .map(|u| {
            if !t.alive[u] {
                return INF;
            }
            hop[u * t.n..(u + 1) * t.n]
                .iter()
                .copied()
                .filter(|&d| d != INF)
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Rectangular transpose of a byte matrix: `m` is `rows × cols` row-major; returns
/// `cols × rows`. Engines that work destination by destination fill LID-major columns and
/// transpose once into the switch-major LFT array.
pub fn transpose_rect(m: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    let mut out = vec![NO_PORT; rows * cols];
    if rows == 0 || cols == 0 {
        return out;
    }
    const B: usize = 64;
    out.par_chunks_mut(rows * B)
        .enumerate()
        .for_each(|(bi, chunk)| {
            let c0 = bi * B;
            let nc = chunk.len() / rows;
            for r0 in (0..rows).step_by(B) {
                let r1 = (r0 + B).min(rows);
                for i in 0..nc {
                    let col = c0 + i;
                    let orow = &mut chunk[i * rows..(i + 1) * rows];
                    for (r, o) in orow.iter_mut().enumerate().take(r1).skip(r0) {
                        *o = m[r * cols + col];
                    }
                }
            }
        });
    out
}
