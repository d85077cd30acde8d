//! `nue`: routing inside the complete channel dependency graph (Domke, Hoefler and Matsuoka,
//! HPDC 2016; OpenSM's `nue`). Deadlock-free on every connected fabric within any VL budget,
//! one VL included, and never a fallback to another engine.
//!
//! **Layers.** Destinations are split by their switch into as many layers as there are VLs
//! (`Budget::vls`, at most the SLs from `start_vl`) by recursive bisection of the live switch
//! graph (a ball grown breadth first from a far switch holding its share of destination LIDs,
//! and the rest), so a layer's destinations lie close together. A layer is one VL; the path
//! SL is `start_vl + layer` for every source (it depends on the destination only) and SL2VL
//! is the identity. Each layer keeps its own channel dependency graph ([`Layers`], an
//! incremental topological order), and the invariant is that it stays **acyclic**: every
//! dependency any table of the layer creates is in it, and none is added that closes a cycle.
//! On small fabrics the whole routing is also done with one layer, kept when it balances
//! better (trees), so there more VLs never route worse than one.
//!
//! **Escape paths.** Per layer a spanning tree from the layer's central switch (least
//! eccentricity toward the layer's destination switches, then least total distance) by
//! breadth first, each switch's parent the least-loaded one a level up. The dependencies of
//! tree routing toward the layer's destinations (up→up, up→down turns at ancestors of
//! destinations, down→down toward them) go into the layer's graph first; they are acyclic
//! (up channels by depth, then down channels by depth), and any destination of the layer can
//! always be routed along the tree with nothing new added.
//!
//! **Routing one destination LID.** A Dijkstra from the destination switch over switches, on
//! channel costs that are the routes the channel already carries plus one hop, a hop costing
//! as many routes as there are end ports (so a path takes a hop more only to avoid channels
//! that carry that many more routes; measured over the shared fabrics this balances better
//! than hop count first, with paths still shorter than OpenSM's Nue's).
//! A switch `v` popped with its cheapest hand-over `v → u` needs the dependency
//! `(v → u) → (u → next(u))` in the layer's graph; if it would close a cycle, the next-best
//! hand-over from `v`'s finished neighbours is queued instead. Dependencies are added only
//! for switches that are final (only a backtracking move or an escape takes some out, and a
//! graph minus edges stays acyclic). Where the search leaves a
//! switch of the component unreached (an impasse), local backtracking moves a reached
//! neighbour of it to another way out (its new dependency, its children's on the new channel
//! and the stuck switch's must all fit) and the search goes on; what that does not solve
//! follows the layer's escape tree: the stuck switches, and every searched switch where the
//! hand-over between tree and search would close a cycle (grown until every hand-over fits;
//! at worst the whole destination follows the tree). After each LID every channel on the
//! path from switch `s` gains `s`'s sources (its end ports).
//!
//! **Orders.** Which order of destinations balances best depends on the fabric; four are
//! routed in parallel (small fabrics add seeded random orders, as many as a fixed amount of
//! work allows, and as many again on escape trees from a random destination switch of the
//! layer) and the one with the least loaded busiest channel (then the fewest hops) kept.
//! An order whose busiest channel passes a finished order's gives up, which cannot change
//! the choice, so the result does not depend on timing or thread count.
//! Then the chosen order is routed again with the destination LIDs that took the most hops
//! above shortest first (they meet a layer graph with fewer dependencies), and that is kept
//! when it balances better by the same rule (`HARDEST_ROUNDS`).
//! [`NueSettings::effort`] (`--nue-effort`) multiplies the work the random orders and the
//! rip-up pass below may do, so larger fabrics try random orders too.
//!
//! **Rip-up and reroute.** On small fabrics (a fixed amount of work, `improve`) the kept
//! order is then improved in place: a destination LID crossing the busiest channel is taken
//! out of its layer (its routes and its dependencies) and routed again on the loads without
//! it, kept when the busiest channel (then how many channels are that busy, then all routes)
//! drops, else put back; then LIDs with the most hops above shortest are routed again with
//! hops costing more, kept when the routes drop and the busiest channel does not rise. The
//! layer graphs stay exactly the dependencies of the tables, so they stay acyclic.
//!
//! **Switch LIDs.** A switch with end ports is not searched for: its LID's column is one of
//! its end ports' (but at the switch itself), so its paths are prefixes of that end port's
//! paths, with no dependency of their own, in the same layer and SL. Switches without end
//! ports are routed like every other destination. Switch traffic is deadlock-free either
//! way (OpenSM's Nue routes switch LIDs without the check unless `nue_include_switches`).
//! On a torus with 2 end ports per switch that is a third fewer searches.

use super::common::{transpose_rect, unreached_note, Topo};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::PathSl;
use crate::turn::Base;
use crate::vl::layers::Layers;
use fabric::{Fabric, NO_PORT};
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

/// The `nue` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nue;

/// Nue's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NueSettings {
    /// How much searching the routing may do, as a multiple of the default (1): the random
    /// orders and the rip-up tries each get `effort` times their work budget, so larger
    /// fabrics try random orders too. The result is the best of more attempts; time grows
    /// about linearly. 0 counts as 1.
    pub effort: u32,
}

impl Default for NueSettings {
    fn default() -> Self {
        NueSettings { effort: 1 }
    }
}

/// "No channel".
const NONE: u32 = u32::MAX;

impl Engine for Nue {
    fn info(&self) -> &'static EngineInfo {
        &super::NUE
    }
    /// RFTR keeps Nue's layers and puts repaired paths on VLs above them.
    fn rftr_base<'f>(&self, _f: &'f Fabric, _opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        Ok(Base::FreshVls)
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let b = opts.budget;
        b.validate()?;
        let k = (b.vls as usize)
            .min((b.sls as usize).saturating_sub(b.start_vl as usize))
            .max(1);
        Ok(route(
            t,
            k,
            b.start_vl,
            opts.engine.nue.effort.max(1) as u64,
        ))
    }
}

/// Static facts of the live switch graph the routing reads in its inner loops.
struct Net<'t> {
    t: &'t Topo<'t>,
    /// Per channel: the output port at its source switch, and the switch it leads to.
    ch_port: Vec<u8>,
    ch_dst: Vec<u32>,
    /// Per switch: its component.
    comp: Vec<u32>,
    /// Per component: its switches, ascending.
    members: Vec<Vec<u32>>,
    /// The cost of one hop in route counts: the number of end ports (a path may take one
    /// hop more to avoid channels that carry that many more routes).
    hop: u64,
    /// Per switch: its sources (end ports), the routes a path from it carries.
    src_w: Vec<u64>,
    /// Switch-to-switch channel out of switch `s` at port `p`: `port_ch[s * ports + p]`
    /// (`NONE` for an end port or an unused one; `ports` = the highest port + 1).
    port_ch: Vec<u32>,
    ports: usize,
}

impl<'t> Net<'t> {
    fn new(t: &'t Topo<'t>) -> Self {
        let f = t.f;
        let mut ch_port = vec![NO_PORT; f.links.len() * 2];
        let mut ch_dst = vec![NONE; f.links.len() * 2];
        let ports = t.adj.iter().map(|a| a.port as usize + 1).max().unwrap_or(1);
        let mut port_ch = vec![NONE; t.n * ports];
        for s in 0..t.n {
            for a in t.links(s) {
                ch_port[a.ch as usize] = a.port;
                ch_dst[a.ch as usize] = a.peer;
                port_ch[s * ports + a.port as usize] = a.ch;
            }
        }
        // components by one breadth-first labelling; each component's switches ascending
        let mut comp = vec![u32::MAX; t.n];
        let mut members: Vec<Vec<u32>> = Vec::new();
        for s in 0..t.n {
            if !t.alive[s] || comp[s] != u32::MAX {
                continue;
            }
            let c = members.len() as u32;
            comp[s] = c;
            let mut m = vec![s as u32];
            let mut h = 0;
            while h < m.len() {
                let u = m[h] as usize;
                h += 1;
                for a in t.links(u) {
                    if comp[a.peer as usize] == u32::MAX {
                        comp[a.peer as usize] = c;
                        m.push(a.peer);
                    }
                }
            }
            m.sort_unstable();
            members.push(m);
        }
        Net {
            t,
            ch_port,
            ch_dst,
            comp,
            members,
            hop: t.ends.len().max(1) as u64,
            src_w: (0..t.n).map(|s| t.ends_on(s).len() as u64).collect(),
            port_ch,
            ports,
        }
    }
}

/// Layer of every switch, by recursive bisection: a set of switches is split into a ball
/// grown breadth first from a far switch of the set (within the set) holding its share of
/// destination LIDs, and the rest; each part is split again for its share of the `k` layers.
/// Balls keep a layer's destinations together, so their routes agree on directions (a band
/// of breadth-first levels would wrap around a torus).
fn partition(net: &Net, k: usize, weight: &[u64]) -> Vec<u8> {
    let t = net.t;
    let mut layer = vec![0u8; t.n];
    let all: Vec<u32> = (0..t.n as u32).filter(|&s| t.alive[s as usize]).collect();
    let mut inset = vec![false; t.n];
    let mut lv = vec![u32::MAX; t.n];
    let mut stack = vec![(all, 0usize, k)];
    while let Some((set, first, count)) = stack.pop() {
        if count == 1 || set.len() <= 1 {
            for &s in &set {
                layer[s as usize] = first as u8;
            }
            continue;
        }
        let (k1, k2) = (count / 2, count - count / 2);
        for &s in &set {
            inset[s as usize] = true;
        }
        // breadth first within the set from `from`, restarting at the lowest switch not yet
        // reached when the set is not connected; the visiting order
        let bfs = |from: u32, lv: &mut Vec<u32>| -> Vec<u32> {
            for &s in &set {
                lv[s as usize] = u32::MAX;
            }
            let mut order = Vec::with_capacity(set.len());
            let mut starts = std::iter::once(from).chain(set.iter().copied());
            while order.len() < set.len() {
                let Some(st) = starts.find(|&x| lv[x as usize] == u32::MAX) else {
                    break;
                };
                lv[st as usize] = 0;
                let mut h = order.len();
                order.push(st);
                while h < order.len() {
                    let u = order[h] as usize;
                    h += 1;
                    for a in t.links(u) {
                        let p = a.peer as usize;
                        if inset[p] && lv[p] == u32::MAX {
                            lv[p] = lv[u] + 1;
                            order.push(p as u32);
                        }
                    }
                }
            }
            order
        };
        let o = bfs(set[0], &mut lv);
        let far = *o.last().unwrap_or(&set[0]);
        let o = bfs(far, &mut lv);
        for &s in &set {
            inset[s as usize] = false;
        }
        let total: u64 = o.iter().map(|&s| weight[s as usize]).sum();
        let want = total * k1 as u64 / count as u64;
        let mut acc = 0u64;
        let mut cut = 0;
        while cut < o.len() && (acc < want || cut == 0) && cut + 1 < o.len() {
            acc += weight[o[cut] as usize];
            cut += 1;
        }
        let (a, b) = o.split_at(cut);
        stack.push((b.to_vec(), first + k1, k2));
        stack.push((a.to_vec(), first, k1));
    }
    layer
}

/// The escape tree of one layer: per switch its parent channel (switch → parent, `NONE` at a
/// root), parent switch and children count.
struct Tree {
    up: Vec<u32>,
    parent: Vec<u32>,
}

/// The layer's central switch per component: least eccentricity toward the layer's
/// destination switches, then least total distance, then index; components without a
/// destination of the layer get their first switch.
fn centres(net: &Net, dests: &[usize]) -> Vec<usize> {
    let t = net.t;
    let n = t.n;
    let (ecc, sum) = dests
        .par_iter()
        .fold(
            || (vec![0u32; n], vec![0u64; n]),
            |(mut e, mut s), &d| {
                let lv = super::ranking::bfs_levels(t, &[d]);
                for x in 0..n {
                    if lv[x] != u32::MAX {
                        e[x] = e[x].max(lv[x]);
                        s[x] += lv[x] as u64;
                    }
                }
                (e, s)
            },
        )
        .reduce(
            || (vec![0u32; n], vec![0u64; n]),
            |(mut e, mut s), (e2, s2)| {
                for x in 0..n {
                    e[x] = e[x].max(e2[x]);
                    s[x] += s2[x];
                }
                (e, s)
            },
        );
    let mut best: Vec<Option<usize>> = vec![None; net.members.len()];
    for x in (0..n).filter(|&x| t.alive[x]) {
        let c = net.comp[x] as usize;
        let key = |y: usize| (ecc[y], sum[y], y);
        if best[c].is_none_or(|b| key(x) < key(b)) {
            best[c] = Some(x);
        }
    }
    best.into_iter().flatten().collect()
}

/// The escape trees' roots for order `o` in layer `l`: the layer's central switches, except
/// for the orders from [`ROOTED`] on: for those, a destination switch of the layer drawn
/// per component with the order's seed (on symmetric fabrics every switch is as central as
/// any other, and which one roots the tree changes the routes as much as the order does).
fn roots_for(net: &Net, plan: &Layer, o: usize, l: usize) -> Vec<usize> {
    if o < ROOTED {
        return plan.roots.clone();
    }
    let mut rng = fabric::rng::Rng::new((o as u64) << 8 | l as u64);
    plan.roots
        .iter()
        .map(|&r| {
            let c = net.comp[r];
            let pool: Vec<usize> = plan
                .switches
                .iter()
                .copied()
                .filter(|&s| net.comp[s] == c)
                .collect();
            if pool.is_empty() {
                r
            } else {
                pool[rng.below(pool.len() as u64) as usize]
            }
        })
        .collect()
}

/// Breadth-first spanning forest from `roots`; each switch's parent is the neighbour one level
/// up whose channel toward it carries the least load (then the lower channel).
fn escape_tree(net: &Net, roots: &[usize], load: &[u64]) -> Tree {
    let t = net.t;
    let lv = super::ranking::bfs_levels(t, roots);
    let mut up = vec![NONE; t.n];
    let mut parent = vec![NONE; t.n];
    for s in 0..t.n {
        if lv[s] == u32::MAX || lv[s] == 0 {
            continue;
        }
        let best = t
            .links(s)
            .iter()
            .filter(|a| lv[a.peer as usize] + 1 == lv[s])
            .min_by_key(|a| (load[a.ch as usize], a.ch));
        if let Some(a) = best {
            up[s] = a.ch;
            parent[s] = a.peer;
        }
    }
    Tree { up, parent }
}

/// Puts the dependencies of tree routing toward `dests` into layer `l`: up→up everywhere;
/// at every switch `y` on the way from a destination to its root, the turn from any child's
/// up channel into the down channel toward a destination-side child, and down→down along
/// those ways. All together acyclic, so every one fits.
fn mark_escape(layers: &mut Layers, l: usize, tree: &Tree, dests: &[usize], n: usize) {
    let mut on_way = vec![false; n];
    for &d in dests {
        let mut x = d;
        while !on_way[x] {
            on_way[x] = true;
            if tree.parent[x] == NONE {
                break;
            }
            x = tree.parent[x] as usize;
        }
    }
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (s, &p) in tree.parent.iter().enumerate() {
        if p != NONE {
            children[p as usize].push(s as u32);
        }
    }
    // the layer's graph is empty here, and these are acyclic: every one fits
    let mut add = |u: u32, v: u32| {
        let ok = layers.try_add_edge(l, u, v);
        debug_assert!(ok, "escape dependencies are acyclic");
    };
    for (s, &p) in tree.parent.iter().enumerate() {
        if p == NONE {
            continue;
        }
        let p = p as usize;
        // up → up
        if tree.up[p] != NONE {
            add(tree.up[s], tree.up[p]);
        }
        if !on_way[s] {
            continue;
        }
        let down = tree.up[s] ^ 1; // p → s
                                   // down → down: arriving at p from its parent, on toward s
        if tree.up[p] != NONE {
            add(tree.up[p] ^ 1, down);
        }
        // turns at p: up from another child, down toward s
        for &c in &children[p] {
            if c as usize != s {
                add(tree.up[c as usize], down);
            }
        }
    }
}

/// Reusable per-destination state.
struct Work {
    /// The cost of one hop in route counts (`Net::hop`, more when [`improve`] shortens).
    hop: u64,
    /// Per switch: the channel it forwards on (`NONE` = unreached or the destination).
    out: Vec<u32>,
    /// Per switch: the next switch's channel its dependency leads into (`NONE`: none added).
    dep: Vec<u32>,
    /// Per switch: the switch it forwards to.
    par: Vec<u32>,
    done: Vec<bool>,
    /// Switches reached, each after the one it forwards to.
    order: Vec<u32>,
    /// Queued (cost, switch); entries whose cost is no longer the switch's are stale.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Per switch: the cost of its cheapest hand-over so far, and that hand-over's channel.
    dist: Vec<u64>,
    cand: Vec<u32>,
    /// Switches given a cost for this destination (reset when it is done).
    touched: Vec<u32>,
    /// Per switch: sources whose routes cross it (the load accumulation).
    acc: Vec<u64>,
}

/// What routing one layer's destinations came to.
impl Work {
    fn new(n: usize, hop: u64) -> Self {
        Work {
            hop,
            out: vec![NONE; n],
            dep: vec![NONE; n],
            par: vec![NONE; n],
            done: vec![false; n],
            order: Vec::with_capacity(n),
            heap: BinaryHeap::new(),
            dist: vec![u64::MAX; n],
            cand: vec![NONE; n],
            touched: Vec::new(),
            acc: vec![0; n],
        }
    }
}

#[derive(Default)]
struct Tally {
    /// Destination LIDs whose search left switches unreached.
    impasses: usize,
    /// (switch, destination LID) pairs routed along the escape tree.
    escaping: usize,
    /// Destination LIDs whose impasse moving switches solved.
    backtracked: usize,
    unreached: usize,
}

/// Orders of a layer's destinations tried, by name. Which one balances best depends on the
/// fabric and the VL count (measured over the shared fabrics at 1, 2 and 8 VLs: each of the
/// four is the best somewhere); all are tried, in parallel, and the best kept. Four cost
/// the time of three on two cores.
const ORDERS: [&str; 4] = [
    "nearest the centre first",
    "farthest from the centre first",
    "one LID of every switch in turn",
    "OpenSM's order (port GUIDs, byte-swapped)",
];

/// Random orders tried beside [`ORDERS`] (order `4 + i` is the fabric's order shuffled with
/// seed `4 + i`): as many as fit `EXTRA_WORK` (destination LIDs × switches per order), at most
/// `MAX_EXTRA`. On the shared fabrics that is none from about 200 switches up and up to 60 on
/// the smallest, where each order costs well under a millisecond, and it lowers the busiest
/// channel of some of them (measured: a 36-switch Dragonfly with failed links at 1 VL, 218
/// with the four named orders, 160 with 60 more).
const EXTRA_WORK: u64 = 1 << 17;
const MAX_EXTRA: usize = 60;

/// Beside the random orders [`EXTRA_WORK`] allows, as many again from `ROOTED` on: order
/// `ROOTED + i` is the fabric's order shuffled with that seed, routed on escape trees rooted at
/// a random destination switch of each layer ([`roots_for`]) instead of the central one. The
/// root changes the routes as much as the order does (on the 264-switch Dragonfly at 1 VL in
/// OpenSM's order, the 264 possible roots give 3.058 to 3.159 hops and a busiest channel of
/// 3,808 to 15,928). Measured over the shared fabrics at 1 and 8 VLs (2026-12-02), the
/// busiest channel after the rip-up pass: the 36-switch Dragonflies at 1 VL 158 → 122 and
/// 164 → 134, Slim Fly q=5 688 → 608, the damaged one 672 → 592, the 8×8 torus 604 → 492,
/// the damaged one 696 → 556; one higher, the damaged 4×4×4 torus at 8 VLs 166 → 170. Small
/// fabrics only, at up to 1.7 times their time (a `sweep --engine nue` of the 4×4 and 8×8
/// tori, which routes every scenario again with nue, took 2–3 times as long).
const ROOTED: usize = 1 << 16;

/// The orders of [`ORDERS`] by how often each was the best over the shared fabrics at 1 and
/// 8 VLs (2026-12-01), which is the order they are started in.
const FIRST: [usize; 4] = [3, 2, 1, 0];

/// Rip-up and reroute after the choice of order: at most this many units of work (tries ×
/// destination LIDs × switches), so only small fabrics do it, and at most
/// `IMPROVE_PER_DEST` tries per destination LID.
const IMPROVE_WORK: u64 = 1 << 22;
const IMPROVE_PER_DEST: u64 = 8;
/// After the choice of order, the best order is routed again with its destination LIDs that
/// took the most hops above shortest first (they then meet a layer graph with fewer
/// dependencies in it), kept when it balances better (the same rule as between orders), at
/// most this many times. Detours at one VL come from dependencies that earlier destinations
/// put in; routed early, the LIDs that suffered them take shorter paths. Measured on the
/// shared fabrics (docs/vl-engines.md, seventh session).
const HARDEST_ROUNDS: usize = 2;
/// While [`improve`] shortens paths, a hop costs this many times [`Net::hop`].
const SHORTEN: u64 = 8;

/// Puts a layer's destinations (in the fabric's order: end-port LIDs, then switch LIDs) in
/// order `o` of [`ORDERS`]; stable, so ties keep the fabric's order.
fn order_destinations(t: &Topo, roots: &[usize], o: usize, mine: &mut Vec<Dest>) {
    match o {
        0 | 1 => {
            let lv = super::ranking::bfs_levels(t, roots);
            if o == 0 {
                mine.sort_by_key(|d| lv[d.0 as usize]);
            } else {
                mine.sort_by_key(|d| Reverse(lv[d.0 as usize]));
            }
        }
        2 => {
            // the k-th LID of each switch, for k = 0, 1, ...
            let mut seen = vec![0u32; t.n];
            let mut keyed: Vec<(u32, Dest)> = mine
                .iter()
                .map(|&d| {
                    let k = seen[d.0 as usize];
                    seen[d.0 as usize] += 1;
                    (k, d)
                })
                .collect();
            keyed.sort_by_key(|x| x.0);
            *mine = keyed.into_iter().map(|x| x.1).collect();
        }
        3 => {
            // end-port LIDs by their port GUID as OpenSM's map orders it, switch LIDs after
            let guid = |d: &Dest| {
                t.f.lid_port(d.1 as u16)
                    .map_or(0, |p| t.f.port(p).guid.swap_bytes())
            };
            let is_switch = |d: &Dest| d.2 == 0 && t.sw_lid[d.0 as usize] as u32 == d.1;
            mine.sort_by_key(|d| (is_switch(d), guid(d)));
        }
        _ => fabric::rng::Rng::new(o as u64).shuffle(mine),
    }
}

/// One destination LID: its switch, the LID, the port it leaves its switch by.
type Dest = (u32, u32, u8);

/// The tables of one order of destinations and how good they are.
struct Attempt {
    /// LID-major output ports (`cols[lid * n + s]`).
    cols: Vec<u8>,
    tally: Tally,
    /// Routes of end-port pairs on the busiest channel, and over all channels (base LIDs).
    score: (u64, u64),
    /// What [`improve`] works on: the layers' graphs, the routes per channel (all LIDs, and
    /// the scored ones), and per LID whether it follows an escape tree (never moved).
    layers: Layers,
    load: Vec<u64>,
    pair_load: Vec<u64>,
    escaped: Vec<bool>,
}

/// Routes with `k` layers; on a small fabric (one that tries random orders) with `k > 1` also
/// with one layer, and keeps the one layer when it balances better (then its busiest channel
/// is lower, or as low with fewer hops): on trees the layers' escape trees and split
/// destinations can cost more than the cycles they avoid, and more VLs should never route
/// worse than one.
fn route(t: &Topo, k: usize, start_vl: u8, effort: u64) -> Routed {
    let net = Net::new(t);
    let dests = Dests::new(t);
    let (layered, score, small) = route_layers(&net, &dests, k, start_vl, effort);
    if k == 1 || !small {
        return layered;
    }
    let (mut one, one_score, _) = route_layers(&net, &dests, 1, start_vl, effort);
    if one_score < score {
        one.notes.push(format!(
            "one layer balances better than {k} here (end-port routes on the busiest channel {} against {}, over all channels {} against {}): one layer kept, on VL {start_vl}",
            one_score.0, score.0, one_score.1, score.1
        ));
        one
    } else {
        layered
    }
}

/// The destination LIDs, the same whatever the layers.
struct Dests {
    /// Every LID of every end port, then every switch LID (within the LFT).
    all: Vec<Dest>,
    /// What the search routes: `all` but the switch LIDs of [`Dests::copies`].
    routed: Vec<Dest>,
    /// (switch, its LID, an end-port LID of the switch): the switch LID's column is the end
    /// port's, but at the switch itself. Its paths are prefixes of the end port's, so they
    /// add no dependency, and it is in the same layer (layers split switches).
    copies: Vec<(usize, u32, u32)>,
    /// Per LID: an end port's base LID (what the score counts).
    scored: Vec<bool>,
    /// Per switch: its destination LIDs.
    weight: Vec<u64>,
}

impl Dests {
    fn new(t: &Topo) -> Self {
        let stride = t.base_routing().stride();
        let mut all: Vec<Dest> = Vec::new();
        let mut scored = vec![false; stride];
        for e in &t.ends {
            if let Some(x) = scored.get_mut(e.base as usize) {
                *x = true;
            }
            for off in 0..e.nlids as u32 {
                all.push((e.sw, e.base as u32 + off, e.sw_port));
            }
        }
        all.retain(|d| (d.1 as usize) < stride);
        // the first end-port LID of each switch
        let mut first = vec![NONE; t.n];
        for d in &all {
            if first[d.0 as usize] == NONE {
                first[d.0 as usize] = d.1;
            }
        }
        let mut routed = all.clone();
        let mut copies = Vec::new();
        for (s, &e) in first.iter().enumerate() {
            let lid = t.sw_lid[s] as u32;
            if t.alive[s] && lid != 0 && (lid as usize) < stride {
                all.push((s as u32, lid, 0));
                if e == NONE {
                    routed.push((s as u32, lid, 0));
                } else {
                    copies.push((s, lid, e));
                }
            }
        }
        let mut weight = vec![0u64; t.n];
        for d in &all {
            weight[d.0 as usize] += 1;
        }
        Dests {
            all,
            routed,
            copies,
            scored,
            weight,
        }
    }
}

/// Routes with `k` layers. Returns the tables, their score (end-port routes on the busiest
/// channel, over all channels) and whether the fabric is small (tries random orders).
fn route_layers(
    net: &Net,
    d: &Dests,
    k: usize,
    start_vl: u8,
    effort: u64,
) -> (Routed, (u64, u64), bool) {
    let t = net.t;
    let n = t.n;
    let mut r = t.base_routing();
    let stride = r.stride();
    let (dests, scored) = (&d.all, &d.scored);
    let layer_of = partition(net, k, &d.weight);
    // per layer: its destinations (fabric order), destination switches and central switches,
    // the same for every order
    let mut plans: Vec<Layer> = (0..k)
        .map(|_| Layer {
            dests: Vec::new(),
            switches: Vec::new(),
            roots: Vec::new(),
        })
        .collect();
    for &d in &d.routed {
        plans[layer_of[d.0 as usize] as usize].dests.push(d);
    }
    for p in &mut plans {
        p.switches = p.dests.iter().map(|d| d.0 as usize).collect();
        p.switches.sort_unstable();
        p.switches.dedup();
        if !p.switches.is_empty() {
            p.roots = centres(net, &p.switches);
        }
    }
    let per_layer: Vec<usize> = plans.iter().map(|p| p.dests.len()).collect();
    // An order whose busiest channel already carries more than a finished order's gives
    // up: it could only end worse, so the choice does not depend on timing.
    let bound = AtomicU64::new(u64::MAX);
    // Workers take the next order from `FIRST` as they become free, so the orders most often
    // best run first and the bound is tight when the others run.
    // small fabrics also try random orders, as many as a fixed amount of work allows
    let work = (dests.len() as u64 * t.num_alive() as u64).max(1);
    let extra = (EXTRA_WORK * effort / work).min(MAX_EXTRA as u64 * effort) as usize;
    let first: Vec<usize> = FIRST
        .iter()
        .copied()
        .chain(4..4 + extra)
        .chain(ROOTED..ROOTED + extra)
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let c = Common {
        plans: &plans,
        scored,
        stride,
    };
    // each worker keeps its best attempt (least score, then least order index)
    let worker = || {
        let mut mine: Option<(usize, Attempt)> = None;
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&o) = first.get(i) else { break };
            if let Some(a) = route_order(net, &c, o, None, &bound) {
                if mine
                    .as_ref()
                    .is_none_or(|(bo, b)| (a.score, o) < (b.score, *bo))
                {
                    mine = Some((o, a));
                }
            }
        }
        mine
    };
    let (a, b) = rayon::join(worker, worker);
    let (best, mut a) = a
        .into_iter()
        .chain(b)
        .min_by_key(|(o, a)| (a.score, *o))
        .expect("the first order to finish is kept");
    // hardest first: the best order again, its LIDs with the most hops above shortest first
    let mut hardest = 0;
    while hardest < HARDEST_ROUNDS {
        let extra = extra_hops_per_lid(net, &a.cols, &d.routed, stride);
        if extra.iter().all(|&e| e == 0) {
            break;
        }
        match route_order(net, &c, best, Some(&extra), &bound) {
            Some(b) if b.score < a.score => a = b,
            _ => break,
        }
        hardest += 1;
    }
    // small fabrics: rip-up and reroute what crosses the busiest channel
    let trials =
        (IMPROVE_WORK * effort / work).min(IMPROVE_PER_DEST * effort * dests.len() as u64) as usize;
    let before = a.score;
    let (moved, tried) = improve(net, &c, &mut a, trials);
    // switch LIDs that follow an end port of their switch
    for &(own, slid, elid) in &d.copies {
        let (slid, elid) = (slid as usize, elid as usize);
        for s in 0..n {
            if s != own {
                let p = a.cols[elid * n + s];
                a.cols[slid * n + s] = p;
                a.tally.unreached += (p == NO_PORT && t.alive[s]) as usize;
            }
        }
    }
    // trivial entries (own switch LID, own end ports) are already in `r`; copy the rest
    let lft = transpose_rect(&a.cols, stride, n);
    for (i, &p) in lft.iter().enumerate() {
        if p != NO_PORT {
            r.lft[i] = p;
        }
    }
    r.path_sl = if k == 1 {
        PathSl::Uniform(start_vl)
    } else {
        let mut sl = vec![start_vl; stride];
        for d in dests {
            sl[d.1 as usize] = start_vl + layer_of[d.0 as usize];
        }
        PathSl::PerDest(sl)
    };
    let used = per_layer.iter().filter(|&&c| c > 0).count();
    let mut notes = vec![format!(
        "{used} of {k} layers hold destinations (VLs {start_vl}..{}, SL = VL); destination LIDs per layer {per_layer:?}; destinations in {} (the best of {} orders)",
        start_vl as usize + k - 1,
        ORDERS.get(best).copied().unwrap_or(if best >= ROOTED {
            "a random order, escape tree from a random destination switch"
        } else {
            "a random order"
        }),
        first.len()
    )];
    if hardest > 0 {
        notes.push(format!(
            "then routed {hardest} time(s) more in that order with the destination LIDs that took the most hops above shortest first, which balanced better"
        ));
    }
    if !d.copies.is_empty() {
        notes.push(format!(
            "{} switch LIDs follow the routes of an end port on their switch (no search, no dependency of their own)",
            d.copies.len()
        ));
    }
    if a.tally.backtracked > 0 {
        notes.push(format!(
            "{} destination LIDs met an impasse that moving switches solved",
            a.tally.backtracked
        ));
    }
    if a.tally.impasses > 0 {
        notes.push(format!(
            "{} destination LIDs met an impasse; {} (switch, destination LID) entries follow the layer's escape tree",
            a.tally.impasses, a.tally.escaping
        ));
    }
    if tried > 0 {
        notes.push(format!(
            "then rip-up and reroute moved {moved} of {tried} destination LIDs tried: end-port routes on the busiest channel {} -> {}, over all channels {} -> {}",
            before.0, a.score.0, before.1, a.score.1
        ));
    }
    unreached_note(t, a.tally.unreached, &mut notes);
    (Routed { routing: r, notes }, a.score, extra > 0)
}

/// The switch-to-switch channel out of switch `s` at `port` (`NONE` for any other port).
fn channel_at(net: &Net, s: usize, port: u8) -> u32 {
    let p = port as usize;
    if p < net.ports {
        net.port_ch[s * net.ports + p]
    } else {
        NONE
    }
}

/// Adds (`add`) or takes away the routes of one scored destination `ds` whose
/// switches forward on `out` (`NONE` at `ds` and outside its component): every channel on
/// the way from a switch gains or loses its end ports.
#[allow(clippy::too_many_arguments)]
fn shift(
    net: &Net,
    members: &[u32],
    ds: usize,
    out: &[u32],
    load: &mut [u64],
    pair_load: &mut [u64],
    add: bool,
) {
    for &s in members {
        let (s, wgt) = (s as usize, net.src_w[s as usize]);
        if s == ds || wgt == 0 {
            continue;
        }
        let mut x = s;
        let mut steps = 0;
        while x != ds && out[x] != NONE && steps < members.len() {
            let ch = out[x] as usize;
            if add {
                load[ch] += wgt;
                pair_load[ch] += wgt;
            } else {
                load[ch] -= wgt;
                pair_load[ch] -= wgt;
            }
            x = net.ch_dst[ch] as usize;
            steps += 1;
        }
    }
}

/// The local search's objective: routes on the busiest channel, how many channels carry
/// that many, and routes over all channels (hops), least first.
fn objective(pair_load: &[u64]) -> (u64, usize, u64) {
    pair_load
        .iter()
        .fold((0, 0, 0), |(top, at, sum), &x| match x.cmp(&top) {
            std::cmp::Ordering::Greater => (x, 1, sum + x),
            std::cmp::Ordering::Equal => (top, at + 1, sum + x),
            std::cmp::Ordering::Less => (top, at, sum + x),
        })
}

/// Rip-up and reroute on the chosen attempt, at most `budget` tries in all. First, while a
/// destination LID crossing one of the busiest channels can be taken out of its layer and
/// routed again so that [`objective`] drops, it is (the busiest channels in channel order,
/// each one's LIDs in the layers' order; every busiest channel is tried before giving up,
/// as moving off any of them lowers the objective).
/// Then LIDs whose paths are longer than shortest, the most extra hops first, are routed
/// again with a hop costing [`SHORTEN`] times more, kept when the routes over all channels
/// drop and the busiest channel does not rise. LIDs that follow an escape tree are never
/// moved (they hold tree dependencies the graph does not count). Returns (moved, tried).
fn improve(net: &Net, c: &Common, a: &mut Attempt, budget: usize) -> (usize, usize) {
    if budget == 0 {
        return (0, 0);
    }
    let t = net.t;
    let n = t.n;
    let cands: Vec<(usize, Dest)> = c
        .plans
        .iter()
        .enumerate()
        .flat_map(|(l, p)| p.dests.iter().map(move |&d| (l, d)))
        .filter(|(_, d)| c.scored[d.1 as usize] && !a.escaped[d.1 as usize])
        .collect();
    let mut m = Mover {
        w: Work::new(n, net.hop),
        old: vec![NONE; n],
        score: objective(&a.pair_load),
    };
    let (mut moved, mut tried) = (0, 0);
    // the busiest channels (ascending); none when no end-port route crosses a
    // switch-to-switch channel. A move off any of them lowers the objective (the busiest
    // load, or how many channels carry it), so each is tried before giving up.
    let mut hot: Vec<usize> = Vec::new();
    'search: loop {
        let top = a.pair_load.iter().copied().max().unwrap_or(0);
        if top == 0 {
            break;
        }
        hot.clear();
        hot.extend((0..a.pair_load.len()).filter(|&ch| a.pair_load[ch] == top));
        let mut better = false;
        'hot: for &h in &hot {
            // (a loaded channel joins two switches)
            let (hs, hp) = (net.ch_dst[h ^ 1] as usize, net.ch_port[h]);
            for &(l, (ds, lid, _)) in &cands {
                let (ds, lid) = (ds as usize, lid as usize);
                if hs == ds || a.cols[lid * n + hs] != hp {
                    continue;
                }
                if tried >= budget {
                    break 'search;
                }
                tried += 1;
                if m.try_move(net, a, l, ds, lid, |new, old| new < old) {
                    moved += 1;
                    better = true;
                    break 'hot;
                }
            }
        }
        if !better {
            break;
        }
    }
    m.w.hop = net.hop * SHORTEN;
    let mut excess: Vec<(u64, usize)> = Vec::new();
    if tried < budget {
        let dests: Vec<Dest> = cands.iter().map(|c| c.1).collect();
        let extra = extra_hops_per_lid(net, &a.cols, &dests, c.stride);
        for (i, d) in dests.iter().enumerate() {
            if extra[d.1 as usize] > 0 {
                excess.push((extra[d.1 as usize], i));
            }
        }
    }
    excess.sort_by_key(|&(ex, i)| (Reverse(ex), i));
    for &(_, i) in &excess {
        if tried >= budget {
            break;
        }
        tried += 1;
        let (l, (ds, lid, _)) = cands[i];
        if m.try_move(net, a, l, ds as usize, lid as usize, |new, old| {
            new.0 <= old.0 && new.2 < old.2
        }) {
            moved += 1;
        }
    }
    a.score = (m.score.0, m.score.2);
    (moved, tried)
}

/// Hops above shortest (`dist`: each switch's hops to `ds`, by breadth first) of LID `lid`
/// (switch `ds`),
/// summed over its sources. `len` (one entry per switch) and `chain` are scratch: each
/// switch's path length is found once, from the next switch's, so a LID costs O(switches).
fn extra_hops(
    net: &Net,
    cols: &[u8],
    dist: &[u32],
    (ds, lid): (usize, usize),
    len: &mut [u32],
    chain: &mut Vec<usize>,
) -> u64 {
    let n = net.t.n;
    let src_w = &net.src_w;
    let col = &cols[lid * n..(lid + 1) * n];
    let members = &net.members[net.comp[ds] as usize];
    for &s in members {
        len[s as usize] = u32::MAX;
    }
    len[ds] = 0;
    let mut ex = 0u64;
    for &s in members {
        let s = s as usize;
        if src_w[s] == 0 {
            continue;
        }
        // follow the tables until a switch whose length is known, then fill the chain back
        let mut x = s;
        chain.clear();
        while len[x] == u32::MAX {
            // (the tables of a LID without an impasse form a tree on its component; a
            // chain longer than the component is a loop)
            if chain.len() > members.len() {
                return 0;
            }
            chain.push(x);
            let ch = channel_at(net, x, col[x]);
            if ch == NONE {
                return 0; // not a complete tree (never for a LID without an impasse)
            }
            x = net.ch_dst[ch as usize] as usize;
        }
        let mut l = len[x];
        for &y in chain.iter().rev() {
            l += 1;
            len[y] = l;
        }
        ex += len[s].saturating_sub(dist[s]) as u64 * src_w[s];
    }
    ex
}

/// [`extra_hops`] of every LID of `dests` (by LID, `stride` entries), with one breadth-first
/// search per destination switch.
fn extra_hops_per_lid(net: &Net, cols: &[u8], dests: &[Dest], stride: usize) -> Vec<u64> {
    let t = net.t;
    let n = t.n;
    let mut by_switch: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(ds, lid, _) in dests {
        by_switch[ds as usize].push(lid);
    }
    let found: Vec<(u32, u64)> = by_switch
        .par_iter()
        .enumerate()
        .filter(|(_, lids)| !lids.is_empty())
        .map_init(
            || (vec![0u32; n], Vec::new()),
            |(len, chain), (ds, lids)| {
                let dist = super::ranking::bfs_levels(t, &[ds]);
                lids.iter()
                    .map(|&lid| {
                        (
                            lid,
                            extra_hops(net, cols, &dist, (ds, lid as usize), len, chain),
                        )
                    })
                    .collect::<Vec<_>>()
            },
        )
        .flatten()
        .collect();
    let mut extra = vec![0u64; stride];
    for (lid, e) in found {
        extra[lid as usize] = e;
    }
    extra
}

/// What [`improve`]'s moves share: the search's buffers, a LID's old channels, and the
/// objective of the tables as they stand.
struct Mover {
    w: Work,
    old: Vec<u32>,
    score: (u64, usize, u64),
}

impl Mover {
    /// Takes LID `lid` (switch `ds`, layer `l`) out of the attempt, its routes and its
    /// dependencies, routes it again on the loads without it, and keeps the new tables when
    /// `keep(new objective, objective)`. Otherwise, or when the search meets an impasse,
    /// the old routes and dependencies go back: they fitted with everything else before, so
    /// they fit again. Returns whether the LID moved.
    #[allow(clippy::too_many_arguments)]
    fn try_move(
        &mut self,
        net: &Net,
        a: &mut Attempt,
        l: usize,
        ds: usize,
        lid: usize,
        keep: impl Fn((u64, usize, u64), (u64, usize, u64)) -> bool,
    ) -> bool {
        let t = net.t;
        let n = t.n;
        let members = &net.members[net.comp[ds] as usize];
        let (w, old) = (&mut self.w, &mut self.old);
        let col = &a.cols[lid * n..(lid + 1) * n];
        for &s in members {
            let s = s as usize;
            old[s] = if s == ds || col[s] == NO_PORT {
                NONE
            } else {
                channel_at(net, s, col[s])
            };
        }
        let (load, pair) = (&mut a.load, &mut a.pair_load);
        shift(net, members, ds, old, load, pair, false);
        let held = |s: u32| {
            let ch = old[s as usize];
            let u = if ch == NONE {
                ds
            } else {
                net.ch_dst[ch as usize] as usize
            };
            (u != ds).then(|| (ch, old[u]))
        };
        for (u, v) in members.iter().filter_map(|&s| held(s)) {
            a.layers.remove_edge(l, u, v);
        }
        a.layers.forget_refusals(l);
        let mut tally = Tally::default();
        if route_one(net, &mut a.layers, l, None, ds, load, w, &mut tally) {
            shift(net, members, ds, &w.out, load, pair, true);
            let new = objective(pair);
            if keep(new, self.score) {
                let col = &mut a.cols[lid * n..(lid + 1) * n];
                for &s in members.iter().filter(|&&s| s as usize != ds) {
                    col[s as usize] = net.ch_port[w.out[s as usize] as usize];
                }
                self.score = new;
                return true;
            }
            shift(net, members, ds, &w.out, load, pair, false);
        }
        for &s in &w.order {
            let s = s as usize;
            if s != ds && w.dep[s] != NONE {
                a.layers.remove_edge(l, w.out[s], w.dep[s]);
            }
        }
        // refusals met while the new routes were in may not hold without them
        a.layers.forget_refusals(l);
        for (u, v) in members.iter().filter_map(|&s| held(s)) {
            let back = a.layers.try_add_edge(l, u, v);
            assert!(back, "a LID's old dependencies fit again");
        }
        shift(net, members, ds, old, load, pair, true);
        false
    }
}

/// One layer's destinations (in the fabric's order), their switches (ascending) and the
/// layer's central switches.
struct Layer {
    dests: Vec<Dest>,
    switches: Vec<usize>,
    roots: Vec<usize>,
}

/// What every order shares: the layers, which LIDs the score counts, the LFT stride.
struct Common<'a> {
    plans: &'a [Layer],
    scored: &'a [bool],
    stride: usize,
}

/// Routes every layer with its destinations in order `o` of [`ORDERS`] (with `first`, per
/// LID: those with the larger value first, ties in order `o`); `None` when its busiest
/// channel passes `bound` (the busiest of a finished order), which it lowers to its own
/// when it finishes.
fn route_order(
    net: &Net,
    c: &Common,
    o: usize,
    first: Option<&[u64]>,
    bound: &AtomicU64,
) -> Option<Attempt> {
    let Common {
        plans,
        scored,
        stride,
    } = *c;
    let t = net.t;
    let n = t.n;
    let nch = t.f.links.len() * 2;
    let mut load = vec![0u64; nch];
    let mut pair_load = vec![0u64; nch];
    let mut layers = Layers::new(nch, plans.len());
    let mut cols = vec![NO_PORT; stride * n];
    let mut w = Work::new(n, net.hop);
    let mut tally = Tally::default();
    let mut escaped = vec![false; stride];
    let alive = t.num_alive();
    let mut busiest = 0u64;
    for (l, plan) in plans.iter().enumerate() {
        if plan.dests.is_empty() {
            continue;
        }
        let mut mine = plan.dests.clone();
        let roots = roots_for(net, plan, o, l);
        let tree = escape_tree(net, &roots, &load);
        order_destinations(t, &roots, o, &mut mine);
        if let Some(first) = first {
            mine.sort_by_key(|d| Reverse(first[d.1 as usize]));
        }
        mark_escape(&mut layers, l, &tree, &plan.switches, n);
        for &(ds, lid, port) in &mine {
            let before = tally.impasses;
            route_one(
                net,
                &mut layers,
                l,
                Some(&tree),
                ds as usize,
                &load,
                &mut w,
                &mut tally,
            );
            escaped[lid as usize] = tally.impasses > before;
            tally.unreached += alive - w.order.len();
            // tables
            let col = &mut cols[lid as usize * n..(lid as usize + 1) * n];
            for &s in &w.order {
                let s = s as usize;
                col[s] = if s == ds as usize {
                    port
                } else {
                    net.ch_port[w.out[s] as usize]
                };
            }
            // loads: every channel on s's path gains s's sources
            for &s in &w.order {
                w.acc[s as usize] = net.src_w[s as usize];
            }
            let count = scored[lid as usize];
            for &s in w.order.iter().rev() {
                let s = s as usize;
                if s == ds as usize {
                    continue;
                }
                let a = w.acc[s];
                load[w.out[s] as usize] += a;
                if count {
                    let x = &mut pair_load[w.out[s] as usize];
                    *x += a;
                    busiest = busiest.max(*x);
                }
                w.acc[w.par[s] as usize] += a;
            }
            if busiest > bound.load(Ordering::Relaxed) {
                return None;
            }
        }
    }
    bound.fetch_min(busiest, Ordering::Relaxed);
    let score = (busiest, pair_load.iter().sum());
    Some(Attempt {
        cols,
        tally,
        score,
        layers,
        load,
        pair_load,
        escaped,
    })
}

/// Routes destination switch `ds` (one LID) in layer `l`: fills `w.order` (switches reached,
/// each after the one it forwards to), `w.out` and `w.par`, with every dependency in the
/// layer's graph. Without an escape `tree`, an impasse the backtracking does not solve
/// returns false, with the reached switches in `w.order` holding their dependencies
/// (`w.out[s] → w.dep[s]`); true when every switch of the component is reached.
#[allow(clippy::too_many_arguments)]
fn route_one(
    net: &Net,
    layers: &mut Layers,
    l: usize,
    tree: Option<&Tree>,
    ds: usize,
    load: &[u64],
    w: &mut Work,
    tally: &mut Tally,
) -> bool {
    let t = net.t;
    for &s in &w.order {
        let s = s as usize;
        w.out[s] = NONE;
        w.dep[s] = NONE;
        w.par[s] = NONE;
        w.done[s] = false;
    }
    // every switch changed last time is in `order` (the escape lists the whole component)
    w.order.clear();
    w.heap.clear();
    w.touched.clear();
    // Dijkstra with each switch's cheapest hand-over (`cand`: channel v → u, u finished)
    // checked only when the switch is popped; a refused one is replaced by the cheapest
    // hand-over from its finished neighbours not known to be refused, and the switch goes
    // back in the queue. No dependency is ever added tentatively.
    w.dist[ds] = 0;
    w.cand[ds] = NONE;
    w.heap.push(Reverse((0, ds as u32)));
    w.touched.push(ds as u32);
    let want = net.members[net.comp[ds] as usize].len();
    let mut moved = false;
    loop {
        while let Some(Reverse((d, v))) = w.heap.pop() {
            let v = v as usize;
            if w.done[v] || d != w.dist[v] {
                continue;
            }
            if v != ds {
                let c = w.cand[v];
                let u = net.ch_dst[c as usize] as usize;
                let next = if u == ds { NONE } else { w.out[u] };
                if next != NONE && !layers.try_add_edge(l, c, next) {
                    let mut best = (u64::MAX, NONE);
                    for a in t.links(v) {
                        let u = a.peer as usize;
                        if !w.done[u] {
                            continue;
                        }
                        let next = if u == ds { NONE } else { w.out[u] };
                        if next != NONE && layers.refused(l, a.ch, next) {
                            continue;
                        }
                        best = best.min((w.dist[u] + w.hop + load[a.ch as usize], a.ch));
                    }
                    w.dist[v] = best.0;
                    w.cand[v] = best.1;
                    if best.1 != NONE {
                        w.heap.push(Reverse((best.0, v as u32)));
                    }
                    continue;
                }
                w.out[v] = c;
                w.dep[v] = next;
                w.par[v] = u as u32;
            }
            w.done[v] = true;
            w.order.push(v as u32);
            relax(t, w.hop, w, load, v, d);
        }
        if w.order.len() >= want {
            break;
        }
        // an impasse: re-hang a reached neighbour of an unreached switch, then go on
        match backtrack(net, layers, l, ds, w) {
            Some(v) => {
                moved = true;
                let d = w.dist[v];
                relax(t, w.hop, w, load, v, d);
            }
            None => break,
        }
    }
    for &s in &w.touched {
        w.dist[s as usize] = u64::MAX;
    }
    w.out[ds] = NONE;
    w.par[ds] = NONE;
    // `order` is what the search reached; an impasse it could not get out of by moving
    // switches leaves switches of the component out
    if moved {
        rebuild_order(t, ds, w);
        if w.order.len() >= want {
            tally.backtracked += 1;
        }
    }
    if w.order.len() < want {
        let Some(tree) = tree else { return false };
        tally.impasses += 1;
        tally.escaping += escape(net, layers, l, tree, ds, w);
    }
    true
}

/// Offers every unreached neighbour of `v` (finished at cost `d`) the hand-over to `v`.
fn relax(t: &Topo, hop: u64, w: &mut Work, load: &[u64], v: usize, d: u64) {
    for a in t.links(v) {
        let x = a.peer as usize;
        if w.done[x] {
            continue;
        }
        let c = a.ch ^ 1; // x → v
        let cost = d + hop + load[c as usize];
        if cost < w.dist[x] {
            if w.dist[x] == u64::MAX {
                w.touched.push(x as u32);
            }
            w.dist[x] = cost;
            w.cand[x] = c;
            w.heap.push(Reverse((cost, x as u32)));
        }
    }
}

/// Local backtracking after an impasse: for an unreached switch `x` and a reached neighbour
/// `a`, another way out of `a` (to a reached switch `b` not below `a`) such that `a`'s new
/// dependency, its children's dependencies on the new channel and `x`'s on it all fit the
/// graph; then `a` is moved there (its old dependencies leave the graph) and `x` hangs off
/// `a`. Returns `x`, or `None` when no move helps.
fn backtrack(net: &Net, layers: &mut Layers, l: usize, ds: usize, w: &mut Work) -> Option<usize> {
    let t = net.t;
    let members = &net.members[net.comp[ds] as usize];
    let mut added: Vec<(u32, u32)> = Vec::new();
    for &x in members {
        let x = x as usize;
        if w.done[x] {
            continue;
        }
        for xa in t.links(x) {
            let a = xa.peer as usize;
            if !w.done[a] || a == ds {
                continue;
            }
            let children: Vec<usize> = t
                .links(a)
                .iter()
                .filter(|c| w.done[c.peer as usize] && w.out[c.peer as usize] == c.ch ^ 1)
                .map(|c| c.peer as usize)
                .collect();
            for ab in t.links(a) {
                let b = ab.peer as usize;
                if !w.done[b] || ab.ch == w.out[a] || below(w, b, a, ds) {
                    continue;
                }
                let lch = ab.ch;
                let need = if b == ds { NONE } else { w.out[b] };
                added.clear();
                let mut ok = need == NONE || layers.try_add_edge(l, lch, need);
                if ok && need != NONE {
                    added.push((lch, need));
                }
                for &c in children.iter().chain(std::iter::once(&x)) {
                    if !ok {
                        break;
                    }
                    let cin = if c == x { xa.ch } else { w.out[c] };
                    ok = layers.try_add_edge(l, cin, lch);
                    if ok {
                        added.push((cin, lch));
                    }
                }
                if !ok {
                    for &(u, v) in &added {
                        layers.remove_edge(l, u, v);
                    }
                    continue;
                }
                // move a: its old dependency and its children's on its old channel go
                if w.dep[a] != NONE {
                    layers.remove_edge(l, w.out[a], w.dep[a]);
                }
                for &c in &children {
                    if w.dep[c] != NONE {
                        layers.remove_edge(l, w.out[c], w.dep[c]);
                    }
                    w.dep[c] = lch;
                }
                w.out[a] = lch;
                w.par[a] = b as u32;
                w.dep[a] = need;
                w.done[x] = true;
                w.out[x] = xa.ch;
                w.par[x] = a as u32;
                w.dep[x] = lch;
                w.dist[x] = w.dist[a] + w.hop;
                w.order.push(x as u32);
                return Some(x);
            }
        }
    }
    None
}

/// True when `b`'s way to `ds` passes `a` (so `a` may not forward to `b`).
fn below(w: &Work, b: usize, a: usize, ds: usize) -> bool {
    let mut y = b;
    let mut steps = 0;
    while y != ds && steps <= w.par.len() {
        if y == a {
            return true;
        }
        y = w.par[y] as usize;
        steps += 1;
    }
    y == a
}

/// `order` again after switches moved: breadth first from `ds` against the forwarding
/// direction, so every switch comes after the one it forwards to.
fn rebuild_order(t: &Topo, ds: usize, w: &mut Work) {
    for &s in &w.order {
        w.done[s as usize] = false;
    }
    w.order.clear();
    w.order.push(ds as u32);
    w.done[ds] = true;
    let mut h = 0;
    while h < w.order.len() {
        let u = w.order[h] as usize;
        h += 1;
        for a in t.links(u) {
            let v = a.peer as usize;
            if !w.done[v] && w.out[v] == a.ch ^ 1 {
                w.done[v] = true;
                w.order.push(v as u32);
            }
        }
    }
}

/// After an impasse: the switches `E` that follow the layer's escape tree toward `ds`,
/// starting with the unreached ones; the others keep their search result. Where an escape
/// switch hands over to a searched one, or the other way round, the dependency between the
/// two must fit the layer's graph; where it does not, the searched switch joins `E` (the one
/// handed over to, or the one handing over). `E` only grows, and with every switch in `E`
/// only tree dependencies remain, which are in the graph from the start, so this ends.
/// Work list: a switch joining `E` re-examines itself and the switches handing over to it.
/// Returns how many switches follow the tree.
fn escape(net: &Net, layers: &mut Layers, l: usize, tree: &Tree, ds: usize, w: &mut Work) -> usize {
    let t = net.t;
    let members = &net.members[net.comp[ds] as usize];
    let m = members.len();
    let pos = |s: usize| members.binary_search(&(s as u32)).unwrap_or(0);
    // the tree's next hop toward ds: up, except on the way from ds to its root (down)
    let mut esc: Vec<(u32, u32)> = members
        .iter()
        .map(|&s| (tree.up[s as usize], tree.parent[s as usize]))
        .collect();
    let d = pos(ds);
    esc[d] = (NONE, NONE);
    let mut x = ds;
    while tree.parent[x] != NONE {
        let p = tree.parent[x] as usize;
        esc[pos(p)] = (tree.up[x] ^ 1, x as u32);
        x = p;
    }
    let mut in_e: Vec<bool> = members.iter().map(|&s| !w.done[s as usize]).collect();
    // per member, the members handing over to it by search and by tree (CSR)
    let csr = |next: &dyn Fn(usize) -> u32| -> (Vec<u32>, Vec<u32>) {
        let mut start = vec![0u32; m + 1];
        for i in 0..m {
            let nx = next(i);
            if nx != NONE {
                start[pos(nx as usize) + 1] += 1;
            }
        }
        for i in 0..m {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[m] as usize];
        for i in 0..m {
            let nx = next(i);
            if nx != NONE {
                let j = pos(nx as usize);
                list[fill[j] as usize] = i as u32;
                fill[j] += 1;
            }
        }
        (start, list)
    };
    let (s_start, s_from) = csr(&|i| {
        let s = members[i] as usize;
        if in_e[i] || s == ds {
            NONE
        } else {
            w.par[s]
        }
    });
    let (e_start, e_from) = csr(&|i| esc[i].1);
    // the edge each member holds in the graph for the hand-over at its next switch
    let mut held: Vec<(u32, u32)> = members
        .iter()
        .map(|&s| (w.out[s as usize], w.dep[s as usize]))
        .map(|(o, dp)| if dp == NONE { (NONE, NONE) } else { (o, dp) })
        .collect();
    let chan = |in_e: &[bool], i: usize| -> (u32, u32) {
        if in_e[i] {
            esc[i]
        } else {
            let s = members[i] as usize;
            (w.out[s], w.par[s])
        }
    };
    let mut joins: Vec<usize> = (0..m).filter(|&i| in_e[i]).collect();
    let mut recheck: Vec<usize> = joins.clone();
    loop {
        // re-examine: release what is held, add what the hand-over needs now
        while let Some(i) = recheck.pop() {
            if held[i].0 != NONE {
                layers.remove_edge(l, held[i].0, held[i].1);
                held[i] = (NONE, NONE);
            }
            if i == d {
                continue;
            }
            let (ch, nx) = chan(&in_e, i);
            if nx == NONE || nx as usize == ds {
                continue;
            }
            let j = pos(nx as usize);
            if in_e[i] && in_e[j] {
                continue; // tree → tree: in the graph from the start
            }
            let need = chan(&in_e, j).0;
            if layers.try_add_edge(l, ch, need) {
                held[i] = (ch, need);
            } else {
                let culprit = if in_e[i] { j } else { i };
                if !in_e[culprit] {
                    in_e[culprit] = true;
                    joins.push(culprit);
                }
            }
        }
        let Some(g) = joins.pop() else { break };
        // g now follows the tree: it and everyone handing over to it look again
        recheck.push(g);
        for &k in &s_from[s_start[g] as usize..s_start[g + 1] as usize] {
            if !in_e[k as usize] {
                recheck.push(k as usize);
            }
        }
        for &k in &e_from[e_start[g] as usize..e_start[g + 1] as usize] {
            if in_e[k as usize] {
                recheck.push(k as usize);
            }
        }
    }
    let mut count = 0;
    for (i, &s) in members.iter().enumerate() {
        let s = s as usize;
        w.done[s] = false;
        if in_e[i] && s != ds {
            (w.out[s], w.par[s]) = esc[i];
            count += 1;
        }
        // the held edges are this destination's now; nothing takes them out later
        w.dep[s] = NONE;
    }
    rebuild_order(t, ds, w);
    debug_assert_eq!(w.order.len(), members.len());
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::FaultMask;

    fn generated(spec: &str) -> Fabric {
        spec.parse::<fabric::gen::TopoSpec>()
            .and_then(|s| s.generate())
            .unwrap()
    }

    /// Every pair delivered and no credit loop, by the independent checker.
    fn assert_sound(f: &Fabric, mask: &FaultMask, r: &crate::tables::Routing, what: &str) {
        let rep = crate::cdg::check(f, r, Some(mask));
        assert_eq!(rep.pairs.ok, rep.pairs.checked, "{what}");
        assert!(rep.deadlock_free, "{what}");
    }

    /// The named orders keep the central root; the random-root orders draw, per layer and
    /// per component, a destination switch of the layer in that component, the same one for
    /// the same order and layer, and not always the same one across orders.
    #[test]
    fn random_root_orders_root_their_trees_at_a_destination_switch_of_the_layer() {
        // a 4x2 mesh cut between its second and third columns: two components
        let f = generated("mesh 4x2 hcas=1");
        let mut mask = FaultMask::none(&f);
        let column = |p: fabric::PortId| f.node(f.port(p).node).name.clone();
        for (i, k) in f.links.iter().enumerate() {
            let (a, b) = (column(k.a), column(k.b));
            if (a.starts_with("S_1_") && b.starts_with("S_2_"))
                || (a.starts_with("S_2_") && b.starts_with("S_1_"))
            {
                mask.fail_link(fabric::LinkId(i as u32));
            }
        }
        let t = Topo::new(&f, &mask);
        let net = Net::new(&t);
        assert_eq!(net.members.len(), 2);
        // a layer holding the even switches of both components
        let switches: Vec<usize> = (0..t.n).filter(|s| s % 2 == 0).collect();
        let plan = Layer {
            dests: Vec::new(),
            roots: centres(&net, &switches),
            switches: switches.clone(),
        };
        assert_eq!(plan.roots.len(), 2);
        for o in 0..ORDERS.len() {
            assert_eq!(roots_for(&net, &plan, o, 0), plan.roots);
        }
        let mut seen = std::collections::BTreeSet::new();
        for o in ROOTED..ROOTED + 16 {
            let r = roots_for(&net, &plan, o, 0);
            assert_eq!(r, roots_for(&net, &plan, o, 0), "order {o}");
            assert_eq!(r.len(), plan.roots.len());
            for (x, c) in r.iter().zip(&plan.roots) {
                assert!(switches.contains(x), "order {o}: root {x}");
                assert_eq!(net.comp[*x], net.comp[*c], "order {o}: root {x}");
            }
            seen.insert(r);
        }
        // two candidates per component: all four pairs come up
        assert_eq!(seen.len(), 4, "{seen:?}");
    }

    /// A switch with end ports routes its own LID as its first end port's LID (but at
    /// itself, port 0): prefixes of that end port's paths. Switches without end ports (the
    /// upper levels of a k-ary n-tree) are searched for. Either way every pair arrives and
    /// the tables have no credit loop, at 1 and 2 VLs.
    #[test]
    fn switch_lids_follow_an_end_port_of_their_switch() {
        for spec in ["torus 4x4 hcas=2", "ktree 4 3"] {
            let f = generated(spec);
            let mask = FaultMask::none(&f);
            let t = Topo::new(&f, &mask);
            for vls in [1u8, 2] {
                let r = route(&t, vls as usize, 0, 1).routing;
                let mut followed = 0;
                for s in 0..t.n {
                    let Some(e) = t.ends.iter().find(|e| e.sw as usize == s) else {
                        continue;
                    };
                    let (slid, elid) = (t.sw_lid[s], e.base);
                    for x in 0..t.n {
                        let want = if x == s { 0 } else { r.out_port(x, elid) };
                        assert_eq!(r.out_port(x, slid), want, "{spec}: switch {x} to {slid}");
                    }
                    followed += 1;
                }
                // every torus switch has end ports; a 4-ary 3-tree's 16 leaves of 48
                let leaves = if spec.starts_with("torus") { t.n } else { 16 };
                assert_eq!(followed, leaves, "{spec}");
                assert_sound(&f, &mask, &r, &format!("{spec} at {vls} VLs"));
            }
        }
    }

    /// `extra_hops_per_lid` against a walk of the tables: for every end-port LID, the hops
    /// of every source switch's path above its breadth-first distance, times its end ports.
    #[test]
    fn extra_hops_per_lid_matches_a_walk_of_the_tables() {
        let f = generated("torus 8x8 hcas=1");
        let mask = FaultMask::none(&f);
        let t = Topo::new(&f, &mask);
        let net = Net::new(&t);
        let d = Dests::new(&t);
        let r = route(&t, 1, 0, 1).routing;
        let (n, stride) = (t.n, r.stride());
        let mut cols = vec![NO_PORT; stride * n];
        for &(_, lid, _) in &d.routed {
            for s in 0..n {
                cols[lid as usize * n + s] = r.out_port(s, lid as u16);
            }
        }
        let got = extra_hops_per_lid(&net, &cols, &d.routed, stride);
        let mut some = 0;
        for &(ds, lid, _) in &d.routed {
            let dist = super::super::ranking::bfs_levels(&t, &[ds as usize]);
            let mut want = 0u64;
            for s in (0..n).filter(|&s| net.src_w[s] > 0) {
                let (mut x, mut hops) = (s, 0u32);
                while x != ds as usize {
                    let a = t
                        .links(x)
                        .iter()
                        .find(|a| a.port == r.out_port(x, lid as u16));
                    x = a.expect("a switch-to-switch port").peer as usize;
                    hops += 1;
                }
                want += (hops - dist[s]) as u64 * net.src_w[s];
            }
            assert_eq!(got[lid as usize], want, "LID {lid}");
            some += (want > 0) as usize;
        }
        // nue at 1 VL on an 8x8 torus takes detours, so the check is not all zeros
        assert!(some > 0);
    }

    /// How many orders a routing tried, from its first note ("... (the best of N orders)").
    fn orders_tried(r: &Routed) -> usize {
        let note = &r.notes[0];
        let tail = &note[note.rfind("the best of ").expect("the order note") + 12..];
        tail.split(' ').next().unwrap().parse().unwrap()
    }

    /// `effort` multiplies the search: a fabric too large for random orders at effort 1
    /// tries them at effort 4, a small one tries more of them; the tables stay complete,
    /// free of credit loops and the same from run to run.
    #[test]
    fn more_effort_tries_more_orders_with_tables_as_sound() {
        for (spec, vls) in [("torus 16x16 hcas=2", 1usize), ("torus 4x4 hcas=2", 2)] {
            let f = generated(spec);
            let mask = FaultMask::none(&f);
            let t = Topo::new(&f, &mask);
            let one = route(&t, vls, 0, 1);
            let four = route(&t, vls, 0, 4);
            let (n1, n4) = (orders_tried(&one), orders_tried(&four));
            if spec.starts_with("torus 16") {
                // 768 LIDs x 256 switches is past EXTRA_WORK: the four named orders only
                assert_eq!(n1, ORDERS.len(), "{spec}");
            }
            assert!(n4 > n1, "{spec}: {n4} orders at effort 4, {n1} at effort 1");
            for r in [&one, &four] {
                assert_sound(&f, &mask, &r.routing, spec);
            }
            let again = route(&t, vls, 0, 4);
            assert_eq!(again.routing.lft, four.routing.lft, "{spec}: deterministic");
        }
    }
}
