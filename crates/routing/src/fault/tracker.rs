//! The incremental check of a fault session: after each repair it walks only the table
//! columns (DLIDs) the fault or the repair can have changed, and keeps the channel
//! dependency graph over (channel, VL) of every walk selected since the start in one
//! incrementally ordered DAG (Pearce–Kelly, [`Layers`]), so a repair costs what it touches
//! instead of every (source, destination) pair.
//!
//! A column is walked again when
//! - one of its LFT entries was written by the repair ([`Rftr::last`]),
//! - a pair moved onto it (a new DLID or SL),
//! - one of its entries, before the repair, sent it over a channel the fault killed (found
//!   from the tables: the failed channel's switch row, and the old value of an entry the
//!   repair rewrote), or
//! - the fault took end ports away while it had pairs that did not arrive (so its count
//!   is exact again).
//!
//! Every other column's walks are those of the step before: the RFTR invariant (live
//! entries are never rewritten; SL2VL entries only set for SLs no other walk uses there)
//! is what makes that true, and the full check ([`super::verify::check_state`]) is the
//! independent judge of it — tests run both on random faults and compare the verdicts.
//!
//! The dependency graph is the union of every walk ever selected, never shrunk: a superset
//! of each step's migration union (the walks in use before the fault, up to the failure,
//! and after). When it stays acyclic the full check's union is acyclic too. RFTR's VL rule
//! (each VL holds only legal turns, VLs only go up; fresh layers kept acyclic) keeps that
//! whole union acyclic, so a refused edge is a defect, counted and reported with the cyclic
//! components of the union.

use super::rftr::Rftr;
use super::verify::{csr, port_free_vls, Gathered, SelectedCheck, Walker};
use crate::cdg::cyclic_sccs;
use crate::forward::{Plane, NONE};
use crate::tables::{PathSl, Routing, NUM_SLS};
use crate::vl::Layers;
use fabric::Fault;
use fabric::SwitchIdx;
use fabric::{Fabric, Lid, NodeKind, NO_PORT};
use rayon::prelude::*;
use rustc_hash::FxHashSet;

/// Memo groups of one step: a key (DLID * 16 + SL) is below 2^20.
const STEP_SALT: u32 = 1 << 20;

/// One chunk of the first whole walk: per column (LID, pairs that do not arrive, end of its
/// edges in `edges`), the edges, and the largest VL met.
#[derive(Default)]
struct ChunkWalk {
    columns: Vec<(Lid, u64, usize)>,
    edges: Vec<(u32, u32)>,
    vmax: u8,
}

impl ChunkWalk {
    /// Keeps the first of equal edges (the columns of one chunk share most of theirs: the
    /// union would only count them again), each column's end moved with them.
    fn dedup(&mut self) {
        let mut seen = FxHashSet::default();
        let (mut from, mut kept) = (0, 0);
        for col in &mut self.columns {
            for i in from..col.2 {
                let (u, v) = self.edges[i];
                if seen.insert((u as u64) << 32 | v as u64) {
                    self.edges[kept] = (u, v);
                    kept += 1;
                }
            }
            from = col.2;
            col.2 = kept;
        }
        self.edges.truncate(kept);
    }
}

/// See the module documentation. A copy is independent: a sweep starts one tracker (the
/// whole walk) and copies it for each scenario.
#[derive(Clone)]
pub struct Tracker<'f> {
    f: &'f Fabric,
    walker: Walker<'f>,
    /// The union of every selected walk's dependencies since the start.
    union: Layers,
    /// Edges the union refused (each closes a cycle with it).
    refused: Vec<(u32, u32)>,
    /// Per LID: the end port owning it (`u32::MAX`: none).
    lid_end: Vec<u32>,
    /// Per LID: pairs of that column whose walk does not arrive, and their sum.
    undelivered: Vec<u64>,
    total_undelivered: u64,
    /// The walkers of a step's columns, one per lane, each with its memo salt; they follow
    /// `walker`'s plane and VLs (`Walker::follow`).
    lanes: Vec<(Walker<'f>, u32)>,
    /// Scratch: the dirty columns (stamped by step).
    dirty_stamp: Vec<u32>,
    step: u32,
    /// The one path SL of every pair at the start, if there was one, and per LID whether
    /// a pair of that column may have another since (a repair moved a pair onto it with a
    /// different SL): the other columns' walks need no path SL read pair by pair.
    sl_base: Option<u8>,
    sl_mixed: Vec<bool>,
}

impl std::fmt::Debug for Tracker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("steps", &self.step)
            .field("undelivered", &self.total_undelivered)
            .field("refused", &self.refused.len())
            .finish_non_exhaustive()
    }
}

impl<'f> Tracker<'f> {
    /// Walks every selected pair of `r` (the one whole-fabric walk) and builds the union.
    pub fn start(r: &Rftr<'f>) -> Self {
        let f: &'f Fabric = r.fabric();
        let nv = f.links.len() * 2 * NUM_SLS;
        let max_lid = r.routing.max_lid as usize;
        let mut lid_end = vec![u32::MAX; max_lid + 1];
        for (e, &p) in f.end_ports.iter().enumerate() {
            let port = f.port(p);
            for k in 0..(1usize << port.lmc) {
                let lid = port.lid as usize + k;
                if lid <= max_lid {
                    lid_end[lid] = e as u32;
                }
            }
        }
        let mut t = Tracker {
            f,
            walker: Walker::new(f, &r.mask),
            union: Layers::new(nv, 1),
            refused: Vec::new(),
            lid_end,
            undelivered: vec![0; max_lid + 1],
            total_undelivered: 0,
            lanes: Vec::new(),
            dirty_stamp: vec![0; max_lid + 1],
            step: 0,
            sl_base: one_sl_everywhere(&r.routing.path_sl),
            sl_mixed: vec![false; max_lid + 1],
        };
        t.walk_every_column(r);
        t
    }

    /// The first whole walk, every column of `r`, on every thread: waves of column chunks
    /// walked in parallel (a column's walks and edges do not depend on any other column's;
    /// each lane keeps its walker from wave to wave, with fresh memo groups), then taken in
    /// LID order, so the union and the counts are those of walking the columns one by one
    /// (an edge a chunk met before is offered to the union once: a refused one is listed
    /// once, which changes no cycle).
    fn walk_every_column(&mut self, r: &Rftr<'f>) {
        const CHUNK: usize = 256;
        let max_lid = self.lid_end.len() - 1;
        let lids: Vec<Lid> = (1..=max_lid as Lid).collect();
        let lanes = 2 * rayon::current_num_threads().max(1);
        let f = self.f;
        // The tables do not change during this walk.
        let port_free = port_free_vls(f, &r.routing);
        let all_sl = self.sl_base;
        let template = Walker::new(f, &r.mask);
        let mut walkers: Vec<(Walker<'_>, u32)> = (0..lanes)
            .map(|_| (template.clone().with_port_free_vls(port_free.clone()), 0))
            .collect();
        let (ne, ns) = (f.end_ports.len(), f.num_switches());
        for lids in lids.chunks(CHUNK * lanes) {
            let lid_end = &self.lid_end;
            let done: Vec<ChunkWalk> = walkers
                .par_iter_mut()
                .zip(lids.par_chunks(CHUNK))
                .map(|((w, salt), chunk)| {
                    let mut out = ChunkWalk::default();
                    let mut scratch = Scratch::default();
                    let lo = chunk[0];
                    let sls = match all_sl {
                        Some(_) => None,
                        None => sl_block(&r.routing, lo, chunk.len(), ne),
                    };
                    let lfts = lft_block(&r.routing, ns, lo, chunk.len());
                    w.edges.clear();
                    for &lid in chunk {
                        let j = (lid - lo) as usize;
                        let col = Gathered {
                            lft: &lfts[j * ns..(j + 1) * ns],
                            sls: sls.as_ref().map(|b| &b[j * ne..(j + 1) * ne]),
                        };
                        let sl = all_sl.or_else(|| one_sl(r, lid, col));
                        let target = (lid_end[lid as usize], lid, sl);
                        let (bad, _) =
                            walk_lane_column(w, salt, r, target, Some(col), &mut scratch);
                        out.columns.push((lid, bad, w.edges.len()));
                    }
                    out.edges = std::mem::take(&mut w.edges);
                    out.vmax = w.vmax;
                    out.dedup();
                    out
                })
                .collect();
            for c in done {
                self.walker.vmax = self.walker.vmax.max(c.vmax);
                let mut from = 0;
                for (lid, bad, to) in c.columns {
                    self.record(lid, bad, &c.edges[from..to]);
                    from = to;
                }
            }
        }
        // The step's walks read them too, kept in step with the SL2VL tables; the lanes
        // go on walking the steps' columns.
        self.walker = self.walker.clone().with_port_free_vls(port_free);
        self.lanes = walkers;
    }

    /// The verdict on the state after `fault`, just applied to `r` by [`Rftr::apply`]:
    /// `pairs` counts the pairs walked again, `undelivered` every selected pair that does not
    /// arrive, `vls_used` the VLs of every walk since the start.
    pub fn step(&mut self, r: &Rftr<'f>, fault: Fault) -> SelectedCheck {
        let f = self.f;
        self.step += 1;
        self.walker.plane = Plane::new(f, Some(&r.mask));
        let mut dirty: Vec<Lid> = Vec::new();
        let stamp = self.step;
        let mark = |lid: Lid, d: &mut Vec<Lid>, st: &mut Vec<u32>| {
            if (lid as usize) < st.len() && st[lid as usize] != stamp {
                st[lid as usize] = stamp;
                d.push(lid);
            }
        };
        for &s in &r.last.sl2vl {
            self.walker.refresh_port_free(&r.routing, s);
        }
        let st = &mut self.dirty_stamp;
        for &(_, lid, _) in &r.last.lft {
            mark(lid, &mut dirty, st);
        }
        for &(src, dst) in &r.last.sources {
            if let Some(lid) = r.dlid(src, dst) {
                mark(lid, &mut dirty, st);
                // the pair's SL as the table holds it
                if self.sl_base != Some(r.routing.path_sl.get(src as usize, lid)) {
                    if let Some(m) = self.sl_mixed.get_mut(lid as usize) {
                        *m = true;
                    }
                }
            }
        }
        // Columns whose walks crossed a channel the fault killed: the channel's switch sent
        // them out of its port, now or before the repair rewrote the entry.
        let mut killed: Vec<(SwitchIdx, u8)> = Vec::new();
        let mut kill = |c: fabric::ChannelId| {
            let p = f.channel_src(c);
            let n = f.port(p).node;
            if let (Some(s), false) = (f.switch_of(n), r.mask.node_dead(n)) {
                killed.push((s, f.port(p).num));
            }
        };
        let mut dropped_ends = false;
        match fault {
            Fault::Link(l) => {
                kill(l.forward());
                kill(l.forward().reverse());
            }
            Fault::Switch(n) => {
                for p in f.node_ports(n) {
                    if let Some(c) = f.out_channel(p) {
                        let far = f.port(f.channel_dst(c)).node;
                        if f.node(far).kind == NodeKind::Switch {
                            kill(c.reverse());
                        } else {
                            dropped_ends = true;
                            // The dropped destination's columns: no pair is left in them.
                            let port = f.port(f.channel_dst(c));
                            for k in 0..(1 as Lid) << port.lmc {
                                mark(port.lid + k, &mut dirty, st);
                            }
                        }
                    }
                }
            }
        }
        for &(sw, port) in &killed {
            let row = r.routing.lft_of(sw);
            for (lid, &q) in row.iter().enumerate().skip(1) {
                if q == port && q != NO_PORT {
                    mark(lid as Lid, &mut dirty, st);
                }
            }
        }
        for &(sw, lid, old) in &r.last.lft {
            if killed.contains(&(SwitchIdx(sw), old)) {
                mark(lid, &mut dirty, st);
            }
        }
        if dropped_ends {
            // Sources taken away leave their columns' counts stale where they did not arrive.
            for (lid, &u) in self.undelivered.iter().enumerate() {
                if u > 0 {
                    mark(lid as Lid, &mut dirty, st);
                }
            }
        }
        dirty.sort_unstable();
        let walked = self.walk_columns(r, &dirty);
        let cyclic = if self.refused.is_empty() {
            0
        } else {
            let nv = f.links.len() * 2 * NUM_SLS;
            let mut edges = self.union.edge_list(0);
            edges.extend_from_slice(&self.refused);
            let (offsets, targets) = csr(nv, &edges);
            cyclic_sccs(nv, &offsets, &targets).len()
        };
        SelectedCheck {
            pairs: walked,
            undelivered: self.total_undelivered,
            vls_used: self.walker.vmax,
            cyclic_sccs: cyclic,
            deadlock_free: cyclic == 0,
        }
    }

    /// Walks columns `lids` (ascending) again, on every thread: one run of them per lane,
    /// each lane's walker following this step's plane and VLs, then taken in LID order, so
    /// the union and the counts are those of walking them one by one (as in
    /// `walk_every_column`). Returns the pairs walked.
    fn walk_columns(&mut self, r: &Rftr<'f>, lids: &[Lid]) -> u64 {
        if lids.is_empty() {
            return 0;
        }
        let lanes = (2 * rayon::current_num_threads().max(1)).min(lids.len());
        while self.lanes.len() < lanes {
            self.lanes.push((self.walker.clone(), 0));
        }
        for (w, _) in &mut self.lanes[..lanes] {
            w.follow(&self.walker);
        }
        let (lid_end, sl_mixed, sl_base) = (&self.lid_end, &self.sl_mixed, self.sl_base);
        let done: Vec<(ChunkWalk, u64)> = self.lanes[..lanes]
            .par_iter_mut()
            .zip(lids.par_chunks(lids.len().div_ceil(lanes)))
            .map(|((w, salt), chunk)| {
                let mut out = ChunkWalk::default();
                let mut walked = 0u64;
                let mut scratch = Scratch::default();
                w.edges.clear();
                for &lid in chunk {
                    let sl = sl_base.filter(|_| !sl_mixed[lid as usize]);
                    let target = (lid_end[lid as usize], lid, sl);
                    let (bad, n) = walk_lane_column(w, salt, r, target, None, &mut scratch);
                    walked += n;
                    out.columns.push((lid, bad, w.edges.len()));
                }
                out.edges = std::mem::take(&mut w.edges);
                out.vmax = w.vmax;
                out.dedup();
                (out, walked)
            })
            .collect();
        let mut walked = 0;
        for (c, n) in done {
            walked += n;
            self.walker.vmax = self.walker.vmax.max(c.vmax);
            let mut from = 0;
            for (lid, bad, to) in c.columns {
                self.record(lid, bad, &c.edges[from..to]);
                from = to;
            }
        }
        walked
    }

    /// Column `lid`'s walk results: its undelivered count replaced, `edges` added to the
    /// union (refused ones kept).
    fn record(&mut self, lid: Lid, bad: u64, edges: &[(u32, u32)]) {
        let old = std::mem::replace(&mut self.undelivered[lid as usize], bad);
        self.total_undelivered = self.total_undelivered - old + bad;
        for &(u, v) in edges {
            if !self.union.try_add_edge(0, u, v) {
                self.refused.push((u, v));
            }
        }
    }
}

/// A lane's scratch for its column walks.
#[derive(Default)]
struct Scratch {
    pairs: Vec<(u32, u32, Lid)>,
    order: Vec<(u32, u32, u32)>,
    weights: Vec<u32>,
}

/// Walks column `lid` (owned by end `e`) with lane walker `w` under a fresh memo group of
/// its `salt`: source by source, or one source per switch when `sl`, the one path SL of
/// the column's pairs, is known. `col`: the column copied out by the caller. Returns the
/// pairs that do not arrive and the pairs walked.
fn walk_lane_column(
    w: &mut Walker<'_>,
    salt: &mut u32,
    r: &Rftr<'_>,
    (e, lid, sl): (u32, Lid, Option<u8>),
    col: Option<Gathered<'_>>,
    s: &mut Scratch,
) -> (u64, u64) {
    if *salt >= u32::MAX - 2 * STEP_SALT {
        w.forget();
        *salt = 0;
    }
    *salt += STEP_SALT;
    match sl {
        Some(sl) => {
            let scratch = (&mut s.order, &mut s.weights);
            let bad = walk_switches_to(w, r, (e, lid, sl), *salt, scratch, col.map(|c| c.lft));
            (bad, s.weights.iter().map(|&n| n as u64).sum())
        }
        None => {
            let bad = walk_pairs_to(w, r, e, lid, *salt, &mut s.pairs, &mut s.order, col);
            (bad, s.pairs.len() as u64)
        }
    }
}

/// Walks the pairs of column `lid` (owned by end `e`, `u32::MAX`: none) with walker `w` under
/// `salt`, listing them in `pairs` (`order` is scratch; `gathered`: the column copied out
/// by the caller); returns those that do not arrive.
#[allow(clippy::too_many_arguments)]
fn walk_pairs_to(
    w: &mut Walker<'_>,
    r: &Rftr<'_>,
    e: u32,
    lid: Lid,
    salt: u32,
    pairs: &mut Vec<(u32, u32, Lid)>,
    order: &mut Vec<(u32, u32, u32)>,
    gathered: Option<Gathered<'_>>,
) -> u64 {
    pairs.clear();
    if e != u32::MAX {
        r.pairs_to(e, lid, pairs);
    }
    if pairs.is_empty() {
        return 0;
    }
    w.walk_column(&r.routing, pairs, salt, order, gathered)
}

/// The one path SL of every pair, when the table has one.
fn one_sl_everywhere(p: &PathSl) -> Option<u8> {
    let all = |v: &[u8]| {
        let first = v.first().copied().unwrap_or(0);
        v.iter().all(|&x| x == first).then_some(first)
    };
    match p {
        PathSl::Uniform(s) => Some(*s),
        PathSl::PerDest(v) => all(v),
        PathSl::PerPair { sl, .. } => all(sl),
    }
}

/// The path SL of every pair of column `lid` when they all have the same one.
fn one_sl(r: &Rftr<'_>, lid: Lid, g: Gathered<'_>) -> Option<u8> {
    match g.sls {
        Some(col) => {
            let first = *col.first()?;
            col.iter().all(|&x| x == first).then_some(first)
        }
        None => match &r.routing.path_sl {
            PathSl::Uniform(s) => Some(*s),
            PathSl::PerDest(v) => Some(v.get(lid as usize).copied().unwrap_or(0)),
            PathSl::PerPair { .. } => None,
        },
    }
}

/// [`walk_pairs_to`] for a column whose pairs all have SL `sl`: a switch whose VLs no port
/// changes sends every source on it the same way, so one of them is walked for all (the
/// others would stop at its first, stamped, vertex with its verdict). `lft`: the column's
/// LFT entries when the caller copied them out. The pairs stand in `order`, `weights`.
fn walk_switches_to(
    w: &mut Walker<'_>,
    r: &Rftr<'_>,
    (e, lid, sl): (u32, Lid, u8),
    salt: u32,
    (order, weights): (&mut Vec<(u32, u32, u32)>, &mut Vec<u32>),
    lft: Option<&[u8]>,
) -> u64 {
    order.clear();
    weights.clear();
    if e == u32::MAX {
        return 0;
    }
    order.clear();
    weights.clear();
    let key = lid as u32 * NUM_SLS as u32 + sl as u32;
    r.sources_to(e, lid, |ends| {
        let mut srcs = ends.iter().copied().filter(|&s| s != e);
        let Some(first) = srcs.next() else {
            return;
        };
        let sw = w.plane.attach(first).sw;
        if sw != NONE && w.port_free_at(sw, sl) {
            order.push((key, first, e));
            weights.push(1 + srcs.count() as u32);
        } else {
            for s in std::iter::once(first).chain(srcs) {
                order.push((key, s, e));
                weights.push(1);
            }
        }
    });
    w.walk_weighted(&r.routing, order, weights, salt, lft)
}

/// The LFT entries of LIDs `lo..lo + n` by column (`block[(lid - lo) * switches + s]`):
/// the tables are stored by switch, and a walk of one column reads one entry per switch.
fn lft_block(r: &Routing, switches: usize, lo: Lid, n: usize) -> Vec<u8> {
    let mut block = vec![NO_PORT; n * switches];
    for s in 0..switches {
        let row = r.lft_of(SwitchIdx(s as u32));
        for j in 0..n {
            if let Some(&v) = row.get(lo as usize + j) {
                block[j * switches + s] = v;
            }
        }
    }
    block
}

/// The path SLs toward LIDs `lo..lo + n` by column (`block[(lid - lo) * ends + src]`) when
/// they are stored per pair, by source: a walk of one column would otherwise read one byte
/// of a different cache line per source. Reading a few hundred LIDs of each source's row in
/// turn keeps the lines written in cache.
fn sl_block(r: &Routing, lo: Lid, n: usize, ends: usize) -> Option<Vec<u8>> {
    let PathSl::PerPair { stride, sl } = &r.path_sl else {
        return None;
    };
    let mut block = vec![0u8; n * ends];
    for src in 0..ends {
        let row = &sl[src * stride..(src + 1) * stride];
        for j in 0..n {
            if let Some(&v) = row.get(lo as usize + j) {
                block[j * ends + src] = v;
            }
        }
    }
    Some(block)
}
