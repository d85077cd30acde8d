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

use crate::forward::{Hop, NONE};
use crate::tables::{PathSl, Routing, NUM_SLS};
use crate::walk::{self, Dest, IssueCount, Net, WalkOptions, WalkReport, BLOCK};
use fabric::{ChannelId, Fabric, FaultMask, Lid, NodeId};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
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
                let hs = f.switch_index[f.port(dp).node.idx()];
                if hs == NONE {
                    continue;
                }
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
fn possible_sls(net: &Net<'_>) -> u16 {
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
    fn new(net: &Net<'_>) -> Self {
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
    net: &'n Net<'a>,
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
    let net = Net::new(f, r, mask);
    build_cdg_net(&net)
}

fn make_ctx<'n, 'a>(net: &'n Net<'a>) -> Ctx<'n, 'a> {
    let sls = possible_sls(net);
    let nvl = max_vl(net.f, net.r, sls) as usize + 1;
    Ctx {
        net,
        sw: SwChannels::new(net.f),
        ca: CaPorts::new(net),
        nvl,
    }
}

fn build_cdg_net(net: &Net<'_>) -> Cdg {
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

/// Strongly connected components of a CSR graph: `comp[v]` and the component count.
/// Components are numbered in the order Tarjan's algorithm completes them (reverse
/// topological order of the condensation). Iterative: no recursion.
pub fn scc(n: usize, offsets: &[usize], targets: &[u32]) -> (Vec<u32>, usize) {
    const UNV: u32 = u32::MAX;
    let mut index = vec![UNV; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNV; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    let mut count = 0usize;
    for root in 0..n {
        if index[root] != UNV {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root as u32);
        on_stack[root] = true;
        call.push((root as u32, offsets[root]));
        while let Some(top) = call.last_mut() {
            let v = top.0 as usize;
            if top.1 < offsets[v + 1] {
                let w = targets[top.1] as usize;
                top.1 += 1;
                if index[w] == UNV {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    call.push((w as u32, offsets[w]));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(parent) = call.last() {
                let p = parent.0 as usize;
                low[p] = low[p].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(x) = stack.pop() {
                    on_stack[x as usize] = false;
                    comp[x as usize] = count as u32;
                    if x as usize == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    (comp, count)
}

/// The vertex sets of all SCCs that contain a cycle (size > 1, or a self-loop), each sorted,
/// ordered by their smallest vertex.
pub fn cyclic_sccs(n: usize, offsets: &[usize], targets: &[u32]) -> Vec<Vec<u32>> {
    let (comp, count) = scc(n, offsets, targets);
    let mut size = vec![0u32; count];
    for &c in &comp {
        size[c as usize] += 1;
    }
    let mut cyclic = vec![false; count];
    for v in 0..n {
        let c = comp[v] as usize;
        if size[c] > 1 || targets[offsets[v]..offsets[v + 1]].contains(&(v as u32)) {
            cyclic[c] = true;
        }
    }
    let mut slot = vec![u32::MAX; count];
    let mut out: Vec<Vec<u32>> = Vec::new();
    for (v, &c) in comp.iter().enumerate() {
        let c = c as usize;
        if !cyclic[c] {
            continue;
        }
        if slot[c] == u32::MAX {
            slot[c] = out.len() as u32;
            out.push(Vec::new());
        }
        out[slot[c] as usize].push(v as u32);
    }
    out
}

/// A shortest cycle through `root` inside the vertex set `members` (sorted): BFS from `root`
/// back to itself. Returns the vertices in order, starting with `root`.
pub fn witness_cycle(offsets: &[usize], targets: &[u32], members: &[u32], root: u32) -> Vec<u32> {
    let inside = |v: u32| members.binary_search(&v).is_ok();
    let mut parent: FxHashMap<u32, u32> = FxHashMap::default();
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(root);
    while let Some(x) = queue.pop_front() {
        for &w in &targets[offsets[x as usize]..offsets[x as usize + 1]] {
            if w == root {
                let mut path = vec![x];
                let mut cur = x;
                while cur != root {
                    cur = parent.get(&cur).copied().unwrap_or(root);
                    path.push(cur);
                }
                path.pop();
                path.push(root);
                path.reverse();
                // path = root, ..., x ; the edge x -> root closes the cycle.
                return path;
            }
            if inside(w) && !parent.contains_key(&w) {
                parent.insert(w, x);
                queue.push_back(w);
            }
        }
    }
    vec![root]
}

/// A pair that induces a CDG edge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EdgeExample {
    pub src: String,
    pub src_port: u8,
    pub dlid: Lid,
}

/// One hop of a witness cycle: the packet leaves `switch` on `port` with `vl`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WitnessHop {
    pub switch: String,
    pub guid: String,
    pub port: u8,
    pub vl: u8,
    pub to_switch: String,
    pub to_port: u8,
    #[serde(skip)]
    pub channel: ChannelId,
    /// A (source, destination LID) pair whose route goes from this hop to the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<EdgeExample>,
}

/// One cyclic strongly connected component of the CDG.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CycleReport {
    /// (channel, VL) vertices in the component.
    pub vertices: usize,
    /// Distinct channels and switches involved.
    pub channels: usize,
    pub switches: usize,
    pub vls: Vec<u8>,
    /// A shortest cycle through the component's smallest vertex.
    pub witness: Vec<WitnessHop>,
}

fn guid_str(g: u64) -> String {
    format!("{g:#018x}")
}

/// Every cyclic SCC of `cdg`, each with a witness cycle (no example pairs).
pub fn find_cycles(f: &Fabric, cdg: &Cdg) -> Vec<CycleReport> {
    let sccs = cyclic_sccs(cdg.num_vertices(), &cdg.offsets, &cdg.targets);
    sccs.iter()
        .map(|members| {
            let wit = witness_cycle(&cdg.offsets, &cdg.targets, members, members[0]);
            let mut chans: Vec<ChannelId> = members.iter().map(|&v| cdg.vertex(v).0).collect();
            chans.sort_unstable();
            chans.dedup();
            let mut sws: Vec<NodeId> = chans
                .iter()
                .map(|&c| f.port(f.channel_src(c)).node)
                .collect();
            sws.sort_unstable();
            sws.dedup();
            let mut vls: Vec<u8> = members.iter().map(|&v| cdg.vertex(v).1).collect();
            vls.sort_unstable();
            vls.dedup();
            CycleReport {
                vertices: members.len(),
                channels: chans.len(),
                switches: sws.len(),
                vls,
                witness: wit
                    .iter()
                    .map(|&v| {
                        let (c, vl) = cdg.vertex(v);
                        let sp = f.port(f.channel_src(c));
                        let dp = f.port(f.channel_dst(c));
                        let n = f.node(sp.node);
                        WitnessHop {
                            switch: f.label(sp.node).to_string(),
                            guid: guid_str(n.guid),
                            port: sp.num,
                            vl,
                            to_switch: f.label(dp.node).to_string(),
                            to_port: dp.num,
                            channel: c,
                            example: None,
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Finds, for each witness edge, the smallest (destination LID, source end port) pair whose
/// route induces it (a second traversal; only run when there are cycles).
fn attach_examples(ctx: &Ctx<'_, '_>, cycles: &mut [CycleReport]) {
    let nvl = ctx.nvl;
    let vert =
        |h: &WitnessHop| -> u32 { ctx.sw.of_chan[h.channel.idx()] * nvl as u32 + h.vl as u32 };
    let mut wanted: FxHashMap<(u32, u32), usize> = FxHashMap::default();
    let mut slots: Vec<(usize, usize)> = Vec::new();
    for (ci, c) in cycles.iter().enumerate() {
        let k = c.witness.len();
        for i in 0..k {
            let u = vert(&c.witness[i]);
            let w = vert(&c.witness[(i + 1) % k]);
            if let std::collections::hash_map::Entry::Vacant(e) = wanted.entry((u, w)) {
                e.insert(slots.len());
                slots.push((ci, i));
            }
        }
    }
    if wanted.is_empty() {
        return;
    }
    let net = ctx.net;
    let nv = ctx.sw.chan.len() * nvl;
    let ns = net.num_switches();
    let per_pair = matches!(net.r.path_sl, PathSl::PerPair { .. });
    let best = net
        .dests
        .par_chunks(BLOCK)
        .fold(
            || {
                (
                    Scratch::new(nv, true),
                    vec![None::<(Lid, u32)>; slots.len()],
                )
            },
            |(mut sc, mut best), chunk| {
                let mut outp = std::mem::take(&mut sc.outp);
                net.gather(chunk.iter().map(|d| d.lid), chunk.len(), &mut outp);
                for (b, d) in chunk.iter().enumerate() {
                    let col = &outp[b * ns..(b + 1) * ns];
                    let mut hits: Vec<(usize, u32)> = Vec::new();
                    ctx.traverse(
                        d,
                        col,
                        &mut sc,
                        &mut |e: EdgeEv| {
                            let w = e.c2 * nvl as u32 + e.v2;
                            if let Some(&slot) = wanted.get(&(e.u, w)) {
                                hits.push((slot, e.origin));
                            }
                        },
                        &mut |_| {},
                    );
                    for (slot, origin) in hits {
                        let Some(&(sl, s, q)) = sc.starts.get(origin as usize) else {
                            continue;
                        };
                        let uni = ctx.ca.uniform[s as usize];
                        let src = net.srcs_of(s as usize).iter().copied().find(|&e| {
                            e != d.ep
                                && (uni || net.ep_inport(e) == q)
                                && (!per_pair || net.r.path_sl.get(e as usize, d.lid) & 15 == sl)
                        });
                        if let Some(src) = src {
                            let cand = (d.lid, src);
                            if best[slot].is_none_or(|b| cand < b) {
                                best[slot] = Some(cand);
                            }
                        }
                    }
                }
                sc.outp = outp;
                (sc, best)
            },
        )
        .map(|x| x.1)
        .reduce_with(|mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                if let Some(y) = y {
                    if x.is_none_or(|v| y < v) {
                        *x = Some(y);
                    }
                }
            }
            a
        });
    let f = net.f;
    if let Some(best) = best {
        for (slot, b) in best.into_iter().enumerate() {
            if let Some((lid, src)) = b {
                let (ci, i) = slots[slot];
                let p = f.end_ports[src as usize];
                cycles[ci].witness[i].example = Some(EdgeExample {
                    src: f.node(f.port(p).node).name.clone(),
                    src_port: f.port(p).num,
                    dlid: lid,
                });
            }
        }
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

/// A pair whose route a switch maps to VL 15: where, and on which SL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vl15Drop {
    pub src: String,
    pub src_port: u8,
    pub dlid: Lid,
    pub dest: String,
    pub at_switch: String,
    pub in_port: u8,
    pub out_port: u8,
    pub sl: u8,
}

/// Examples of [`Vl15Drop`] kept.
const VL15_EXAMPLES: usize = 10;

/// A drop as found: (destination LID, source end port, switch, input port, output port, SL).
type DropAt = (Lid, u32, u32, u8, u8, u8);

/// The pairs whose route meets VL 15 at some switch (the SL2VL entry of its input port,
/// output port and SL), walked pair by pair along the LFTs with each pair's path SL; only
/// called when some SL2VL entry is VL 15. Routes the LFTs do not deliver are left to the
/// path walk. Returns the count and the first [`VL15_EXAMPLES`] (in destination order).
fn vl15_drops(net: &Net<'_>) -> (u64, Vec<Vl15Drop>) {
    let f = net.f;
    let ns = net.num_switches();
    let (sl2vl, path_sl) = (&net.r.sl2vl, &net.r.path_sl);
    let drop = DROP_VL;
    let per_chunk = |chunk: &[Dest]| -> (u64, Vec<DropAt>) {
        let mut outp = Vec::new();
        net.gather(chunk.iter().map(|d| d.lid), chunk.len(), &mut outp);
        let (mut n, mut ex) = (0u64, Vec::new());
        for (b, d) in chunk.iter().enumerate() {
            let o = &outp[b * ns..(b + 1) * ns];
            for &s0 in &net.src_switches {
                for &e in net.srcs_of(s0 as usize) {
                    if e == d.ep {
                        continue;
                    }
                    let sl = path_sl.get(e as usize, d.lid) & 15;
                    let (mut s, mut q) = (s0 as usize, net.ep_inport(e));
                    // the first hop that drops, counted only when the LFTs deliver the
                    // pair (the path walk counts the others)
                    let mut first = None;
                    for _ in 0..=ns {
                        let out = o[s];
                        let hop = net.hop(s, out);
                        if matches!(hop, Hop::Fail(_)) {
                            break;
                        }
                        if first.is_none() && sl2vl.vl(f.switches[s], q, out, sl) == drop {
                            first = Some((s as u32, q, out));
                        }
                        match hop {
                            Hop::Switch { sw, inp, .. } => (s, q) = (sw as usize, inp),
                            Hop::End { port, .. } => {
                                if let Some((at, q, out)) =
                                    first.filter(|_| port == f.end_ports[d.ep as usize])
                                {
                                    n += 1;
                                    if ex.len() < VL15_EXAMPLES {
                                        ex.push((d.lid, e, at, q, out, sl));
                                    }
                                }
                                break;
                            }
                            Hop::Fail(_) => break,
                        }
                    }
                }
            }
        }
        (n, ex)
    };
    let (n, mut ex) = net.dests.par_chunks(BLOCK).map(per_chunk).reduce(
        || (0, Vec::new()),
        |(a, mut x), (b, y)| {
            x.extend(y);
            x.truncate(VL15_EXAMPLES);
            (a + b, x)
        },
    );
    ex.truncate(VL15_EXAMPLES);
    let name = |n: NodeId| f.node(n).name.clone();
    let examples = ex
        .into_iter()
        .map(|(dlid, e, s, q, o, sl)| {
            let sp = f.end_ports[e as usize];
            Vl15Drop {
                src: name(f.port(sp).node),
                src_port: f.port(sp).num,
                dlid,
                dest: f
                    .lid_port(dlid)
                    .map(|p| name(f.port(p).node))
                    .unwrap_or_default(),
                at_switch: name(f.switches[s as usize]),
                in_port: q,
                out_port: o,
                sl,
            }
        })
        .collect();
    (n, examples)
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
    let net = Net::new(f, r, mask);
    let walk: WalkReport = walk::walk_net(
        &net,
        WalkOptions {
            loads: false,
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
    CheckReport {
        deadlock_free: cycles.is_empty(),
        cycles,
        unreachable_pairs: walk.unreachable_pairs,
        loops: walk.loops,
        black_holes: walk.black_holes,
        misdelivered: walk.misdelivered,
        pairs: PairCounts {
            total: walk.pairs_total,
            checked: walk.pairs_checked,
            excluded: walk.pairs_excluded,
            ok: walk.pairs_ok - dropped_on_vl15.min(walk.pairs_ok),
        },
        dropped_on_vl15,
        vl15_examples,
        hop_histogram: walk.hops_all,
        cdg: CdgStats {
            vertices: cdg.num_used_vertices(),
            edges: cdg.num_edges(),
            sls_used: bits(cdg.sls_used),
            vls_used: bits(cdg.vls_used),
            max_vls_per_channel: cdg.max_vls_per_channel,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::by_name;
    use crate::engines::RouteOptions;

    fn csr(n: usize, edges: &[(u32, u32)]) -> (Vec<usize>, Vec<u32>) {
        let mut off = vec![0usize; n + 1];
        for &(a, _) in edges {
            off[a as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut fill = off.clone();
        let mut t = vec![0u32; edges.len()];
        for &(a, b) in edges {
            t[fill[a as usize]] = b;
            fill[a as usize] += 1;
        }
        (off, t)
    }

    #[test]
    fn sccs_and_witnesses_on_a_small_graph() {
        // 0 -> 1 -> 2 -> 0 is a cycle, 3 -> 4 is not, 5 has a self-loop.
        let (off, t) = csr(6, &[(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (5, 5)]);
        let sccs = cyclic_sccs(6, &off, &t);
        assert_eq!(sccs, vec![vec![0, 1, 2], vec![5]]);
        assert_eq!(witness_cycle(&off, &t, &sccs[0], 0), vec![0, 1, 2]);
        assert_eq!(witness_cycle(&off, &t, &sccs[1], 5), vec![5]);
        let (comp, count) = scc(6, &off, &t);
        assert_eq!(count, 4);
        assert_eq!(comp[0], comp[2]);
        assert_ne!(comp[3], comp[4]);
    }

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
