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

mod improve;
mod layers;
mod search;

use improve::*;
use layers::*;
use search::*;

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
struct LiveGraph<'t> {
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

impl<'t> LiveGraph<'t> {
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
        LiveGraph {
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
/// While [`improve`] shortens paths, a hop costs this many times [`LiveGraph::hop`].
const SHORTEN: u64 = 8;

/// Puts a layer's destinations (in the fabric's order: end-port LIDs, then switch LIDs) in
/// order `o` of [`ORDERS`]; stable, so ties keep the fabric's order.
fn order_destinations(t: &Topo, roots: &[usize], o: usize, mine: &mut Vec<Dest>) {
    match o {
        0 | 1 => {
            let lv = crate::engines::ranking::bfs_levels(t, roots);
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
    let net = LiveGraph::new(t);
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
    net: &LiveGraph,
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
    net: &LiveGraph,
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

#[cfg(test)]
mod tests;
