//! Deadlock check: the channel dependency graph (CDG) over (channel, VL), built from the
//! tables exactly as packets experience them, and all its cyclic strongly connected components.
//!
//! A packet from source end port `p` to destination LID `d` carries `SL = PathSl.get(p, d)`.
//! At every switch it leaves on `LFT[d]` with `VL = SL2VL[switch][in port][out port][SL]`.
//! Consecutive switch-to-switch channels `(c1, vl1) → (c2, vl2)` form a CDG edge. Channels
//! into and out of end nodes cannot lie on a cycle (an end node never forwards), so the graph's
//! vertices are (switch-to-switch channel, VL) pairs; the VLs used on CA links are still
//! reported in [`Cdg::vls_used`]. This is ibdmchk's credit-loop analysis (every source, every
//! destination LID, all LMC LIDs), except that every cyclic SCC is reported, not the first
//! back edge.
//!
//! Construction is per destination LID: for uniform and per-destination SLs the VL on every
//! hop depends only on (switch, input port), so one traversal of the destination's forwarding
//! tree from all source switches visits every (channel, VL) state once. Per-pair SLs are
//! handled by grouping the sources of each destination by SL. Destinations run in parallel;
//! edges are recorded in a shared atomic bitset indexed by (channel, VL, next output, next VL),
//! so the result is a set union independent of scheduling. The SCC search is an iterative
//! Tarjan (no recursion, millions of vertices are fine).
//!
//! A forwarding loop is a CDG cycle too (it is a real credit loop); the walker reports it
//! separately as a loop. Under a [`FaultMask`], routes stop at dead channels.
//!
//! The cycle search is in `cycles.rs`, the cycles' reports (witness hops, example pairs) in
//! `witness.rs`, the pairs dropped on VL 15 in `vl15.rs`.

mod cycles;
mod vl15;
mod witness;

pub use cycles::{cyclic_sccs, scc, witness_cycle};
use vl15::vl15_drops;
pub use vl15::Vl15Drop;
use witness::attach_examples;
pub use witness::{find_cycles, CycleReport, EdgeExample, WitnessHop};

use crate::forward::{Hop, NONE};
use crate::tables::{PathSl, Routing, NUM_SLS};
use crate::walk::{self, Dest, IssueCount, WalkContext, WalkOptions, WalkReport, BLOCK};
use fabric::{ChannelId, Fabric, FaultMask};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Dense numbering of the switch-to-switch channels.
#[derive(Debug)]
struct SwChannels {
    /// Per switch index: first dense index of its out-channels to switches (ports ascending).
    out_start: Vec<u32>,
    /// Dense index → channel.
    chan: Vec<ChannelId>,
    /// Dense index → head switch index and its input port number.
    head: Vec<u32>,
    inport: Vec<u8>,
    /// ChannelId → dense index (`NONE` for channels touching end nodes).
    of_chan: Vec<u32>,
}

impl SwChannels {
    fn new(f: &Fabric) -> Self {
        let mut s = SwChannels {
            out_start: Vec::with_capacity(f.num_switches() + 1),
            chan: Vec::new(),
            head: Vec::new(),
            inport: Vec::new(),
            of_chan: vec![NONE; f.links.len() * 2],
        };
        for &n in &f.switches {
            s.out_start.push(s.chan.len() as u32);
            for o in 1..=f.node(n).nports {
                let Some(c) = f.out_channel(f.port_id(n, o)) else {
                    continue;
                };
                let dp = f.channel_dst(c);
                let Some(hs) = f.switch_of(f.port(dp).node).map(|h| h.0) else {
                    continue;
                };
                s.of_chan[c.idx()] = s.chan.len() as u32;
                s.chan.push(c);
                s.head.push(hs);
                s.inport.push(f.port(dp).num);
            }
        }
        s.out_start.push(s.chan.len() as u32);
        s
    }
    #[inline]
    fn degree(&self, s: usize) -> u32 {
        self.out_start[s + 1] - self.out_start[s]
    }
}

/// The channel dependency graph.
#[derive(Debug)]
pub struct Cdg {
    /// VL slots per channel: vertex `v` is channel `channels[v / nvl]` on VL `v % nvl`.
    pub nvl: usize,
    /// Switch-to-switch channels in dense order.
    pub channels: Vec<ChannelId>,
    /// CSR adjacency over all `channels.len() * nvl` vertices, deduplicated.
    pub offsets: Vec<usize>,
    pub targets: Vec<u32>,
    /// Vertices that some route uses.
    pub used: Vec<bool>,
    /// SLs carried by the walked pairs (bit i = SL i).
    pub sls_used: u16,
    /// VLs used on any channel, CA links included (bit i = VL i).
    pub vls_used: u16,
    /// Highest number of distinct VLs on one switch-to-switch channel.
    pub max_vls_per_channel: usize,
}

impl Cdg {
    pub fn num_vertices(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn num_used_vertices(&self) -> usize {
        self.used.iter().filter(|&&u| u).count()
    }
    pub fn num_edges(&self) -> usize {
        self.targets.len()
    }
    #[inline]
    pub fn successors(&self, v: u32) -> &[u32] {
        &self.targets[self.offsets[v as usize]..self.offsets[v as usize + 1]]
    }
    /// (channel, VL) of a vertex.
    pub fn vertex(&self, v: u32) -> (ChannelId, u8) {
        let v = v as usize;
        (self.channels[v / self.nvl], (v % self.nvl) as u8)
    }
}

fn bits(mask: u16) -> Vec<u8> {
    (0..16u8).filter(|&i| mask >> i & 1 == 1).collect()
}

/// SLs any walked pair might carry (a superset for per-pair SLs).
fn possible_sls(net: &WalkContext<'_>) -> u16 {
    match &net.r.path_sl {
        PathSl::Uniform(s) => 1u16 << (s & 15),
        PathSl::PerDest(_) => net
            .dests
            .iter()
            .fold(0u16, |m, d| m | 1 << (net.r.path_sl.get(0, d.lid) & 15)),
        PathSl::PerPair { sl, .. } => sl.iter().fold(0u16, |m, &s| m | 1 << (s & 15)),
    }
}

/// A packet that meets [`DROP_VL`] goes no further and adds no dependency;
/// [`CheckReport::ok`] is false when a route does.
pub use crate::tables::DROP_VL;

/// Highest data VL any switch maps one of `sls` to (the identity map gives SL mod 15).
fn max_vl(f: &Fabric, r: &Routing, sls: u16) -> u8 {
    let sl_list = bits(sls);
    let mut m = 0u8;
    let mut identity_seen = false;
    for &n in &f.switches {
        if r.sl2vl.is_identity(n) {
            identity_seen = true;
            continue;
        }
        let np = f.node(n).nports;
        for i in 0..=np {
            for o in 0..=np {
                for &sl in &sl_list {
                    let v = r.sl2vl.vl(n, i, o, sl);
                    if v != DROP_VL {
                        m = m.max(v);
                    }
                }
            }
        }
    }
    if identity_seen {
        for &sl in &sl_list {
            m = m.max(sl % crate::tables::NUM_DATA_VLS);
        }
    }
    m
}

/// Per-switch facts about its CA input ports.
#[derive(Debug)]
struct CaPorts {
    /// All CA input ports of the switch give the same SL2VL rows: one start per SL suffices.
    uniform: Vec<bool>,
    /// A representative CA input port (valid when the switch has sources).
    rep: Vec<u8>,
}

impl CaPorts {
    fn new(net: &WalkContext<'_>) -> Self {
        let f = net.f;
        let ns = net.num_switches();
        let mut uniform = vec![true; ns];
        let mut rep = vec![0u8; ns];
        for &s in &net.src_switches {
            let s = s as usize;
            let n = f.switches[s];
            let srcs = net.srcs_of(s);
            let q0 = net.ep_inport(srcs[0]);
            rep[s] = q0;
            if net.r.sl2vl.is_identity(n) {
                continue;
            }
            let np = f.node(n).nports;
            'q: for &e in &srcs[1..] {
                let q = net.ep_inport(e);
                for o in 0..=np {
                    for sl in 0..NUM_SLS as u8 {
                        if net.r.sl2vl.vl(n, q, o, sl) != net.r.sl2vl.vl(n, q0, o, sl) {
                            uniform[s] = false;
                            break 'q;
                        }
                    }
                }
            }
        }
        CaPorts { uniform, rep }
    }
}

struct Ctx<'n, 'a> {
    net: &'n WalkContext<'a>,
    sw: SwChannels,
    ca: CaPorts,
    nvl: usize,
}

/// Per-worker scratch.
struct Scratch {
    outp: Vec<u8>,
    stamp: Vec<u32>,
    origin: Vec<u32>,
    gen: u32,
    queue: Vec<u32>,
    /// (sl, switch, CA input port)
    starts: Vec<(u8, u32, u8)>,
    sls: u16,
    vls: u16,
}

impl Scratch {
    fn new(nv: usize, track_origin: bool) -> Self {
        Scratch {
            outp: Vec::new(),
            stamp: vec![0; nv],
            origin: if track_origin {
                vec![0; nv]
            } else {
                Vec::new()
            },
            gen: 0,
            queue: Vec::new(),
            starts: Vec::new(),
            sls: 0,
            vls: 0,
        }
    }
    fn next_gen(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.fill(0);
            self.gen = 1;
        }
    }
}

/// An edge seen during traversal: from vertex `u` to the `j`-th out-channel of the head
/// switch of `u`'s channel (dense `c2`), on VL `v2`; `origin` indexes `Scratch::starts`.
#[derive(Clone, Copy)]
struct EdgeEv {
    u: u32,
    c2: u32,
    j: u32,
    v2: u32,
    origin: u32,
}

impl Ctx<'_, '_> {
    /// Start states of one destination: one per (SL, switch, CA input port class).
    fn collect_starts(&self, d: &Dest, sc: &mut Scratch) {
        let net = self.net;
        sc.starts.clear();
        let sd = net.ep_sw(d.ep);
        let per_pair = matches!(net.r.path_sl, PathSl::PerPair { .. });
        for &s in &net.src_switches {
            let srcs = net.srcs_of(s as usize);
            let w = srcs.len() - usize::from(s == sd);
            if w == 0 {
                continue;
            }
            let uni = self.ca.uniform[s as usize];
            if !per_pair {
                let sl = net.r.path_sl.get(0, d.lid);
                if uni {
                    sc.starts.push((sl, s, self.ca.rep[s as usize]));
                } else {
                    for &e in srcs.iter().filter(|&&e| e != d.ep) {
                        sc.starts.push((sl, s, net.ep_inport(e)));
                    }
                }
            } else {
                let mut m = 0u16;
                for &e in srcs.iter().filter(|&&e| e != d.ep) {
                    let sl = net.r.path_sl.get(e as usize, d.lid) & 15;
                    if uni {
                        m |= 1 << sl;
                    } else {
                        sc.starts.push((sl, s, net.ep_inport(e)));
                    }
                }
                for sl in bits(m) {
                    sc.starts.push((sl, s, self.ca.rep[s as usize]));
                }
            }
        }
        sc.starts.sort_unstable();
        sc.starts.dedup();
    }

    /// Traverses the destination tree of `d` (LFT column `outp`) from every start state,
    /// calling `on_edge` for every dependency and `on_vertex` for every vertex reached.
    fn traverse(
        &self,
        d: &Dest,
        outp: &[u8],
        sc: &mut Scratch,
        on_edge: &mut dyn FnMut(EdgeEv),
        on_vertex: &mut dyn FnMut(u32),
    ) {
        self.collect_starts(d, sc);
        let net = self.net;
        let f = net.f;
        let sl2vl = &net.r.sl2vl;
        let nvl = self.nvl;
        let track = !sc.origin.is_empty();
        let mut i = 0;
        while i < sc.starts.len() {
            let sl = sc.starts[i].0;
            sc.sls |= 1 << sl;
            sc.next_gen();
            sc.queue.clear();
            let mut j = i;
            while j < sc.starts.len() && sc.starts[j].0 == sl {
                let (_, s, q) = sc.starts[j];
                let o = outp[s as usize];
                let node = f.switches[s as usize];
                match net.hop(s as usize, o) {
                    Hop::Switch { ch, .. } => {
                        let v = sl2vl.vl(node, q, o, sl) as usize;
                        sc.vls |= 1 << (v & 15);
                        if v == DROP_VL as usize {
                            j += 1;
                            continue;
                        }
                        let c = self.sw.of_chan[ch.idx()] as usize;
                        let vert = c * nvl + v.min(nvl - 1);
                        if sc.stamp[vert] != sc.gen {
                            sc.stamp[vert] = sc.gen;
                            if track {
                                sc.origin[vert] = j as u32;
                            }
                            on_vertex(vert as u32);
                            sc.queue.push(vert as u32);
                        }
                    }
                    Hop::End { .. } => sc.vls |= 1 << (sl2vl.vl(node, q, o, sl) & 15),
                    Hop::Fail(_) => {}
                }
                j += 1;
            }
            while let Some(u) = sc.queue.pop() {
                let c1 = u as usize / nvl;
                let t = self.sw.head[c1] as usize;
                let q = self.sw.inport[c1];
                let o = outp[t];
                let node = f.switches[t];
                match net.hop(t, o) {
                    Hop::Switch { ch, .. } => {
                        let v2 = sl2vl.vl(node, q, o, sl) as usize;
                        sc.vls |= 1 << (v2 & 15);
                        if v2 == DROP_VL as usize {
                            continue;
                        }
                        let v2 = v2.min(nvl - 1);
                        let c2 = self.sw.of_chan[ch.idx()];
                        let w = c2 as usize * nvl + v2;
                        let origin = if track { sc.origin[u as usize] } else { 0 };
                        on_edge(EdgeEv {
                            u,
                            c2,
                            j: c2 - self.sw.out_start[t],
                            v2: v2 as u32,
                            origin,
                        });
                        if sc.stamp[w] != sc.gen {
                            sc.stamp[w] = sc.gen;
                            if track {
                                sc.origin[w] = origin;
                            }
                            on_vertex(w as u32);
                            sc.queue.push(w as u32);
                        }
                    }
                    Hop::End { .. } => sc.vls |= 1 << (sl2vl.vl(node, q, o, sl) & 15),
                    Hop::Fail(_) => {}
                }
            }
            i = j;
        }
    }
}

/// Builds the CDG of the tables (see the module documentation).
pub fn build_cdg(f: &Fabric, r: &Routing, mask: Option<&FaultMask>) -> Cdg {
    let net = WalkContext::new(f, r, mask);
    build_cdg_net(&net)
}

fn make_ctx<'n, 'a>(net: &'n WalkContext<'a>) -> Ctx<'n, 'a> {
    let sls = possible_sls(net);
    let nvl = max_vl(net.f, net.r, sls) as usize + 1;
    Ctx {
        net,
        sw: SwChannels::new(net.f),
        ca: CaPorts::new(net),
        nvl,
    }
}

fn build_cdg_net(net: &WalkContext<'_>) -> Cdg {
    let ctx = make_ctx(net);
    build_with_ctx(&ctx)
}

fn build_with_ctx(ctx: &Ctx<'_, '_>) -> Cdg {
    let f = ctx.net.f;
    let nvl = ctx.nvl;
    let nc = ctx.sw.chan.len();
    let nv = nc * nvl;
    // Edge bit offsets: channel c1 gets nvl * deg(head) * nvl bits.
    let mut eoff = Vec::with_capacity(nc + 1);
    let mut total = 0u64;
    for c in 0..nc {
        eoff.push(total);
        total += (nvl * nvl) as u64 * ctx.sw.degree(ctx.sw.head[c] as usize) as u64;
    }
    eoff.push(total);
    let edge_bits: Vec<AtomicU64> = (0..total.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    let used_bits: Vec<AtomicU64> = (0..(nv as u64).div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let set = |v: &[AtomicU64], bit: u64| {
        let w = &v[(bit / 64) as usize];
        let m = 1u64 << (bit % 64);
        if w.load(Relaxed) & m == 0 {
            w.fetch_or(m, Relaxed);
        }
    };

    let sw = &ctx.sw;
    let eoff_ref = &eoff;
    let edge_ref = &edge_bits;
    let used_ref = &used_bits;
    let ns = ctx.net.num_switches();
    let (sls, vls) = ctx
        .net
        .dests
        .par_chunks(BLOCK)
        .fold(
            || Scratch::new(nv, false),
            |mut sc, chunk| {
                let mut outp = std::mem::take(&mut sc.outp);
                ctx.net
                    .gather(chunk.iter().map(|d| d.lid), chunk.len(), &mut outp);
                for (b, d) in chunk.iter().enumerate() {
                    let col = &outp[b * ns..(b + 1) * ns];
                    ctx.traverse(
                        d,
                        col,
                        &mut sc,
                        &mut |e: EdgeEv| {
                            let c1 = e.u as usize / nvl;
                            let v1 = e.u as usize % nvl;
                            let deg = sw.degree(sw.head[c1] as usize) as usize;
                            let bit = eoff_ref[c1]
                                + ((v1 * deg + e.j as usize) * nvl + e.v2 as usize) as u64;
                            set(edge_ref, bit);
                        },
                        &mut |v| set(used_ref, v as u64),
                    );
                }
                sc.outp = outp;
                sc
            },
        )
        .map(|sc| (sc.sls, sc.vls))
        .reduce(|| (0, 0), |a, b| (a.0 | b.0, a.1 | b.1));

    // CA injection VLs: every live source's own SL2VL row for the SLs in use.
    let mut vls = vls;
    for (e, &p) in f.end_ports.iter().enumerate() {
        if !ctx.net.ep_live(e as u32) {
            continue;
        }
        let port = f.port(p);
        for sl in bits(sls) {
            vls |= 1 << (ctx.net.r.sl2vl.vl(port.node, 0, port.num, sl) & 15);
        }
    }

    // CSR: set bits in ascending order are grouped by source vertex already.
    let mut offsets = vec![0usize; nv + 1];
    let mut targets = Vec::new();
    let mut c1 = 0usize;
    for (wi, w) in edge_bits.iter().enumerate() {
        let mut x = w.load(Relaxed);
        while x != 0 {
            let bit = wi as u64 * 64 + x.trailing_zeros() as u64;
            x &= x - 1;
            while eoff[c1 + 1] <= bit {
                c1 += 1;
            }
            let t = sw.head[c1] as usize;
            let deg = sw.degree(t) as usize;
            let rel = (bit - eoff[c1]) as usize;
            let v2 = rel % nvl;
            let j = (rel / nvl) % deg;
            let v1 = rel / nvl / deg;
            let u = c1 * nvl + v1;
            let c2 = sw.out_start[t] as usize + j;
            offsets[u + 1] += 1;
            targets.push((c2 * nvl + v2) as u32);
        }
    }
    for i in 0..nv {
        offsets[i + 1] += offsets[i];
    }
    let used: Vec<bool> = (0..nv)
        .map(|v| used_bits[v / 64].load(Relaxed) >> (v % 64) & 1 == 1)
        .collect();
    let max_vls_per_channel = used
        .chunks(nvl.max(1))
        .map(|c| c.iter().filter(|&&u| u).count())
        .max()
        .unwrap_or(0);
    Cdg {
        nvl,
        channels: sw.chan.clone(),
        offsets,
        targets,
        used,
        sls_used: sls,
        vls_used: vls,
        max_vls_per_channel,
    }
}

/// Size of the CDG, for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CdgStats {
    /// (channel, VL) vertices used by some route.
    pub vertices: usize,
    pub edges: usize,
    pub sls_used: Vec<u8>,
    pub vls_used: Vec<u8>,
    pub max_vls_per_channel: usize,
}

/// Pair counts of a check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PairCounts {
    pub total: u64,
    pub checked: u64,
    pub excluded: u64,
    pub ok: u64,
}

/// The full verification: path walk plus deadlock check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// The CDG over (channel, VL) is acyclic.
    pub deadlock_free: bool,
    /// Every cyclic SCC, with a witness cycle.
    pub cycles: Vec<CycleReport>,
    pub unreachable_pairs: IssueCount,
    pub loops: IssueCount,
    pub black_holes: IssueCount,
    pub misdelivered: IssueCount,
    pub pairs: PairCounts,
    /// Pairs the LFTs deliver but some switch on the way maps to VL 15, where their packets
    /// are dropped (not counted in `pairs.ok`), with the first few.
    pub dropped_on_vl15: u64,
    pub vl15_examples: Vec<Vl15Drop>,
    /// Delivered pairs by switch-to-switch hops, every destination LID.
    pub hop_histogram: Vec<u64>,
    pub cdg: CdgStats,
}

impl CheckReport {
    /// Deadlock-free, every checked pair delivered, and no route meets VL 15 (dropped).
    pub fn ok(&self) -> bool {
        self.deadlock_free && self.pairs.ok == self.pairs.checked && !self.drops_on_vl15()
    }

    /// Some route is mapped to VL 15 at some hop (SL2VL), where its packets are dropped.
    pub fn drops_on_vl15(&self) -> bool {
        self.cdg.vls_used.contains(&DROP_VL)
    }
}

/// Walks all pairs and checks the CDG for cycles (with witnesses and example pairs).
pub fn check(f: &Fabric, r: &Routing, mask: Option<&FaultMask>) -> CheckReport {
    check_keeping(f, r, mask, false).report
}

/// What [`check_keeping`] built: the report, and the walk and CDG behind it, for the metrics
/// (`metrics::metrics_from`) to use instead of walking and building again.
#[derive(Debug)]
pub struct Checked {
    pub report: CheckReport,
    /// Every pair's walk; with per-channel loads when asked for.
    pub walk: WalkReport,
    pub cdg: Cdg,
}

/// [`check`], keeping its walk (with per-channel route counts when `loads`) and its CDG.
pub fn check_keeping(f: &Fabric, r: &Routing, mask: Option<&FaultMask>, loads: bool) -> Checked {
    let net = WalkContext::new(f, r, mask);
    let walk: WalkReport = walk::walk_net(
        &net,
        WalkOptions {
            loads,
            ..WalkOptions::default()
        },
    );
    let ctx = make_ctx(&net);
    let cdg = build_with_ctx(&ctx);
    let mut cycles = find_cycles(f, &cdg);
    attach_examples(&ctx, &mut cycles);
    let (dropped_on_vl15, vl15_examples) = if r.sl2vl.maps_to_drop_vl() {
        vl15_drops(&net)
    } else {
        (0, Vec::new())
    };
    let report = CheckReport {
        deadlock_free: cycles.is_empty(),
        cycles,
        unreachable_pairs: walk.unreachable_pairs.clone(),
        loops: walk.loops.clone(),
        black_holes: walk.black_holes.clone(),
        misdelivered: walk.misdelivered.clone(),
        pairs: PairCounts {
            total: walk.pairs_total,
            checked: walk.pairs_checked,
            excluded: walk.pairs_excluded,
            ok: walk.pairs_ok - dropped_on_vl15.min(walk.pairs_ok),
        },
        dropped_on_vl15,
        vl15_examples,
        hop_histogram: walk.hops_all.clone(),
        cdg: CdgStats {
            vertices: cdg.num_used_vertices(),
            edges: cdg.num_edges(),
            sls_used: bits(cdg.sls_used),
            vls_used: bits(cdg.vls_used),
            max_vls_per_channel: cdg.max_vls_per_channel,
        },
    };
    Checked { report, walk, cdg }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::by_name;
    use crate::engines::RouteOptions;

    /// The deadlock verdicts the engines promise, on one fabric: minhop on a torus has a credit
    /// loop with a witness that is a real cycle of (channel, VL) vertices, updn has none.
    #[test]
    fn torus_minhop_loops_updn_does_not() {
        let f = crate::fault::test_fabric("torus 4x4 hcas=1");
        let none = FaultMask::none(&f);
        let route = |e: &str| {
            by_name(e)
                .unwrap()
                .route(&f, &none, &RouteOptions::default())
                .unwrap()
        };
        let rep = check(&f, &route("minhop"), None);
        assert!(!rep.deadlock_free);
        let cdg = build_cdg(&f, &route("minhop"), None);
        for c in &rep.cycles {
            let w = &c.witness;
            assert!(!w.is_empty());
            for (i, h) in w.iter().enumerate() {
                // Consecutive witness hops meet at a switch: one's far end is the next's start.
                let next = &w[(i + 1) % w.len()];
                assert_eq!(h.to_switch, next.switch);
                assert!(h.example.is_some(), "every witness edge names a pair");
            }
        }
        assert!(cdg.num_used_vertices() > 0);
        let up = check(&f, &route("updn"), None);
        assert!(up.deadlock_free && up.cycles.is_empty());
        assert_eq!(up.pairs.ok, up.pairs.checked);
    }
}
