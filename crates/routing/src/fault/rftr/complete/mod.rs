//! Completing RFTR's tables for checkers that walk every (source, LID).
//!
//! RFTR routes what sources use: a repaired pair's new virtual LID along its repair tree, and
//! leaves alone the entries nobody uses any more (a base LID whose path died for the sources
//! that moved to a virtual LID). A subnet manager does not need more. `fabroute check` and
//! ibdmchk (`-l`) walk every LID from every source, and the path SL file gives each pair one
//! SL, so for them every (source, LID) must arrive, and the pairs no source uses ("phantom"
//! pairs) must not close a credit loop with the real ones.
//!
//! [`Rftr::complete_for_checkers`] does that without touching any entry a path in use
//! crosses (every path in use delivers, so only switches whose entry does not deliver, or
//! that no selected path crosses, ever change).
//!
//! **Over a turn-rule base** (SL 0 is VL 0 everywhere; on each VL every path in use turns
//! only legally, and VLs never decrease along a path):
//! - *Entries.* Per LID column, switches whose entry does not deliver (no entry, a dead port,
//!   a loop) get one, level by level of illegal turns t = 0..=VLs-1: breadth-first by hops
//!   from the switches whose path takes t illegal turns, through legal turns only; a switch
//!   reached only through an illegal turn waits for level t + 1. Switches left over get no
//!   entry, so no walk from them adds a dependency.
//! - *Path SLs of phantom pairs.* A legal path gets SL 0 (VL 0 all the way). Any other
//!   phantom path changes VL at each illegal turn of its own (VL = illegal turns so far, as
//!   RFTR's paths) and gets an SL coloured like RFTR's ([`crate::vl::SlColouring`], starting
//!   from RFTR's colouring so that shared SL2VL entries agree). Within each VL every
//!   dependency is then a legal turn and VLs never decrease, so no cycle can form.
//!
//! **Over a base that keeps its own VLs** (`Base::FreshVls`: RFTR leaves base LIDs alone and
//! puts each repaired path whole on one VL above the base's):
//! - a phantom on a base LID (or a virtual LID nobody uses, which mirrors its base LID) at a
//!   switch whose path delivers takes the base path with its base SL: dependencies the base
//!   already has;
//! - a phantom at a switch on a repaired path takes that path's SL (or another that agrees on
//!   every hop) and its VL from the first hop: it follows the path's channels on its VL and
//!   adds no dependency;
//! - any other phantom path (from filled switches, or switches no selected path crosses)
//!   goes whole on the first VL above the base's whose dependencies stay acyclic with it (the
//!   same layers RFTR keeps), with a coloured SL;
//! - one that fits no such VL goes whole on a base VL whose dependencies stay acyclic with
//!   it, with a base SL that the tables already map to that VL on each of its hops. A base
//!   VL's layer starts from every dependency that the completion without such placements
//!   leaves there (itself acyclic, or nothing goes on base VLs): the base paths in use and
//!   every phantom's walk; repaired paths never use base VLs. The result is checked as a
//!   whole, and the completion without base-VL placements is kept where it has a cycle or
//!   covers no more pairs;
//! - if pairs are still uncovered, a third pass splits a phantom walk at a hop: the part
//!   before it on a base VL whose dependencies stay acyclic, the rest on a VL above the base's
//!   whose dependencies stay acyclic (first where it joins a repaired path, whose channels on
//!   its VL it then takes), with a coloured SL that maps each hop to its VL. The change of VL
//!   goes up, and nothing goes from a VL above the base's down to one of the base's, so no
//!   cycle runs through it. In that pass a switch that does not deliver toward a virtual LID
//!   in use first takes its base LID's entry where the walk then delivers, so the part before
//!   the repaired paths repeats base dependencies. Kept, again, only when the whole result is
//!   deadlock-free and covers more pairs.
//!
//! While RFTR leaves pairs a live path joins unrepaired, no route is added
//! ([`Completion::routes_added`]): the phantom pairs whose walk delivers get their SLs as
//! above, and a switch whose walk does not deliver loses its entry, so the unrepaired pairs
//! stay undelivered and no walk a checker makes closes a credit loop.
//!
//! Phantom paths that fit no VL or SL are counted as uncovered; their switch loses its entry
//! where no selected path crosses it (their walks then stop there, adding no dependency);
//! `check` reports them.

use super::{Rftr, DROPPED, NONE};
use crate::forward::{Failure, Hop};
use crate::tables::{PathSl, Routing};
use crate::vl::{Layers, Need};
use fabric::{ChannelId, Lid, NO_PORT};
use rayon::prelude::*;
use serde::Serialize;

mod column;
mod phantom;
use phantom::base_vl_layers;

/// What the completion did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// Whether it ran (not over a base that keeps its own VLs).
    pub applied: bool,
    /// Whether it added routes. Not while RFTR left pairs a live path joins unrepaired
    /// ([`Rftr::programmed`]): then it only sets the path SLs of unused pairs and takes away
    /// the entries of switches whose path does not deliver, so that no walk a checker makes
    /// adds a dependency a credit loop can use, and the unrepaired pairs stay undelivered.
    pub routes_added: bool,
    /// LFT entries set so that every switch's path delivers.
    pub lft_entries: u64,
    /// Phantom (source, LID) pairs whose path SL was set.
    pub phantom_sls: u64,
    /// SL2VL entries set for phantom paths that change VL where they turn against the rule.
    pub sl2vl_entries: u64,
    /// Phantom pairs left as they were: no legal way to their destination from their switch
    /// (`check` reports them).
    pub uncovered: u64,
    /// Virtual LIDs no selected path uses any more that still held an earlier repair's
    /// entries (a later fault moved their sources on): over a base that keeps its VLs they
    /// follow their base LID again, entries and path SLs, as unused ones do.
    pub stale_virtual_lids: u64,
    /// Entries set or taken away in the columns of switch LIDs (management traffic).
    pub switch_lid_entries: u64,
    /// (switch, switch LID) walks left without a legal way (no entry there; `check` walks
    /// the LIDs of end ports only, so these are not among its undelivered pairs).
    pub switch_lid_uncovered: u64,
}

/// A column's destination: an end port (index into the fabric's end ports), or a switch
/// (index) whose own LID the column is. Switch LIDs carry management traffic (`perfquery`,
/// `ibroute`, LID-routed MADs to the switch), not RFTR's pairs: in their columns only the
/// switches whose walk a failed cable (or a loop) broke change, also while pairs are left
/// unrepaired: breadth-first, legal paths first, then up to
/// [`SWITCH_LID_LEVELS`] - 1 illegal turns on the path SL the pair has, as the engines'
/// own routes to switch LIDs turn (a fat tree's spine reaches another spine down and up).
/// A switch with no such way loses its entry. Walks that deliver and path SLs stay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    End(u32),
    Switch(u32),
}

/// Levels of illegal turns (`fill_column`) a switch LID's column may use.
const SWITCH_LID_LEVELS: u8 = 4;

/// The counter of pairs left uncovered: of end-port LIDs, or of switch LIDs.
fn uncovered_of(c: &mut Completion, switch: bool) -> &mut u64 {
    if switch {
        &mut c.switch_lid_uncovered
    } else {
        &mut c.uncovered
    }
}

const UNSEEN: u8 = 0;
const ON_STACK: u8 = 1;
const DONE: u8 = 2;

/// A phantom path from one switch over a base that keeps its VLs: its channels, its hops
/// (switch, input port — 0 on the first hop, where each source's own port counts — output
/// port), and the sources at that switch that take it.
struct FreshPhantom {
    chans: Vec<u32>,
    hops: Vec<(u32, u8, u8)>,
    ends: Vec<(u32, u8)>,
    /// The (SL, VL) of the repaired path it joins at its first switch, if any.
    join: Option<(u8, u8)>,
    /// Otherwise the first hop `k` (≥ 1) whose switch a repaired path crosses, with that
    /// path's (SL, VL): from there on the walk follows the repaired path.
    joins_at: Option<(usize, u8, u8)>,
    sw: u32,
    /// Whether its switch's entry may be removed when the path cannot be placed.
    revertible: bool,
}

/// One LID column's state while it is completed: the entries, which switches deliver (or
/// were filled), whether their path is legal, the channel each leaves on, hops and illegal
/// turns to the destination.
struct Col {
    entry: Vec<u8>,
    deliv: Vec<bool>,
    legal: Vec<bool>,
    filled: Vec<bool>,
    out: Vec<ChannelId>,
    hops: Vec<u32>,
    turns: Vec<u8>,
}

impl Col {
    /// A column whose entries are `entry`, nothing resolved yet.
    fn new(entry: Vec<u8>) -> Col {
        let ns = entry.len();
        Col {
            entry,
            deliv: vec![false; ns],
            legal: vec![false; ns],
            filled: vec![false; ns],
            out: vec![ChannelId(u32::MAX); ns],
            hops: vec![u32::MAX; ns],
            turns: vec![0u8; ns],
        }
    }

    /// Switch `x` takes the entry toward `y` (port, channel), reached at level `t` of
    /// illegal turns (legal when `t` = 0).
    fn fill(&mut self, x: usize, y: usize, port: u8, ch: ChannelId, t: u8, fx: &mut ColumnFix) {
        self.filled[x] = true;
        self.entry[x] = port;
        self.out[x] = ch;
        self.hops[x] = self.hops[y] + 1;
        self.turns[x] = t;
        self.legal[x] = t == 0;
        fx.entries.push((x as u32, port));
    }
}

/// How one pass of the completion places phantom paths ([`Rftr::complete`]).
#[derive(Clone, Copy)]
struct Pass<'a> {
    /// The dependency graph of a completion without base-VL placements: with it, phantom
    /// paths that fit no VL above the base's are tried whole on a base VL.
    seed: Option<&'a crate::cdg::Cdg>,
    /// With `seed` and `routes`, over a base that keeps its VLs (the third pass only):
    /// switches that do not deliver toward a virtual LID in use follow their base LID's
    /// path, and a phantom walk that fits no VL whole may go up to a hop on a base VL and
    /// from there on a VL above the base's (at best where it joins a repaired path, whose
    /// channels it then takes on that path's VL).
    joins: bool,
    /// Whether entries may be added ([`Completion::routes_added`]).
    routes: bool,
}

/// Per-column result, applied after the parallel part.
#[derive(Default)]
struct ColumnFix {
    lid: Lid,
    /// A switch LID's column.
    switch: bool,
    entries: Vec<(u32, u8)>,
    sls: Vec<(u32, u8)>,
    /// Phantom pairs whose path turns against the rule: (source end, SL2VL needs, its
    /// switch, whether that switch's entry may go: no selected path crosses it).
    pending: Vec<(u32, Vec<Need>, u32, bool)>,
    /// Over a base that keeps its VLs: phantom paths to place on a fresh VL.
    fresh: Vec<FreshPhantom>,
    uncovered: u64,
}

/// The tables a subnet manager programs for an RFTR state ([`Rftr::programmed`]).
#[derive(Clone, Debug)]
pub struct Programmed {
    pub tables: Routing,
    /// Virtual LIDs no repair uses, filled to follow their base LID.
    pub mirrored: usize,
    /// What the completion for checkers did (`applied` false when it did not run).
    pub completion: Completion,
}

impl<'f> Rftr<'f> {
    /// Pairs a live path still joins that the faults so far left unrepaired (unsupported
    /// and not cut off).
    pub fn unrepaired_joinable(&self) -> u64 {
        self.reports
            .iter()
            .map(|r| r.unsupported_pairs - r.disconnected_pairs)
            .sum()
    }

    /// What a subnet manager programs for this state, the same for `fabroute fault`'s files
    /// and the live SM: this state's routing, every LID of an LMC range (virtual LIDs no
    /// repair uses follow their base LID), and, when `complete`, the completion for checkers
    /// ([`Rftr::complete_for_checkers`]). While pairs a live path joins are left unrepaired
    /// ([`Rftr::unrepaired_joinable`]) the completion adds no route: filling entries wherever
    /// a switch's path does not deliver would route those pairs too, outside the repair and
    /// its delta, and a checker would then see them delivered. It still gives unused pairs
    /// their path SLs and takes the entries away where a walk does not deliver, so that a
    /// checker finds no credit loop in what nobody uses (before, the walks of unused pairs
    /// along repaired paths on a base SL closed loops on a base VL: an 8×8 torus over nue at
    /// 2 VLs with three failed cables).
    pub fn programmed(&self, complete: bool) -> Programmed {
        let mut tables = self.routing.clone();
        let mirrored = tables.mirror_unrouted_lmc_lids(self.f);
        let completion = if complete {
            self.complete(&mut tables, self.unrepaired_joinable() == 0)
        } else {
            Completion::default()
        };
        Programmed {
            tables,
            mirrored,
            completion,
        }
    }

    /// Completes `tables` (this state's routing, possibly with unused virtual LIDs mirrored
    /// from their base LID) so that every (source, LID) arrives and the phantom pairs add no
    /// dependency a credit loop can use (module docs).
    pub fn complete_for_checkers(&self, tables: &mut Routing) -> Completion {
        self.complete(tables, true)
    }

    /// The completion; without `routes`, no entry is added where a switch's path does not
    /// deliver ([`Completion::routes_added`]).
    fn complete(&self, tables: &mut Routing, routes: bool) -> Completion {
        let pass = |seed, joins| Pass {
            seed,
            joins,
            routes,
        };
        let used = self.used_lids();
        if self.fresh.is_none() {
            return self.complete_with(tables, &used, pass(None, false)).0;
        }
        let stale = self.restore_stale_virtual_lids(tables, &used);
        // Over a base that keeps its VLs, phantoms that fit no fresh VL may go on a base VL
        // (module docs), checked against a layer per base VL that holds every dependency the
        // completion without such placements leaves there; then, in a third pass, also the
        // part of a walk before a repaired path (`Pass::joins`). Each result is checked as a
        // whole all the same, and kept only when it has no cycle and covers more pairs.
        // `tables` holds the best so far.
        let before = tables.clone();
        let (mut best, _) = self.complete_with(tables, &used, pass(None, false));
        best.stale_virtual_lids = stale;
        if best.uncovered == 0 {
            return best;
        }
        let seed = crate::cdg::build_cdg(self.f, tables, Some(&self.mask));
        if !crate::cdg::cyclic_sccs(seed.num_vertices(), &seed.offsets, &seed.targets).is_empty() {
            return best;
        }
        // (the third pass adds entries: not without `routes`)
        for joins in [false, true].into_iter().filter(|&j| routes || !j) {
            let mut t = before.clone();
            let (c, on_base) = self.complete_with(&mut t, &used, pass(Some(&seed), joins));
            if on_base > 0
                && c.uncovered < best.uncovered
                && crate::cdg::check(self.f, &t, Some(&self.mask)).deadlock_free
            {
                best = Completion {
                    stale_virtual_lids: stale,
                    ..c
                };
                *tables = t;
                if best.uncovered == 0 {
                    break;
                }
            }
        }
        best
    }

    /// (destination, LID) pairs some selected path uses.
    fn used_lids(&self) -> rustc_hash::FxHashSet<(u32, Lid)> {
        let f = self.f;
        let ne = f.end_ports.len();
        let mut used: rustc_hash::FxHashSet<(u32, Lid)> = Default::default();
        for slot in 0..self.slot_switch.len() {
            for d in 0..ne {
                let p = self.sel[slot * ne + d];
                if p < DROPPED {
                    let base = f.port(f.end_ports[d]).lid;
                    used.insert((d as u32, base + self.paths.off[p as usize] as Lid));
                }
            }
        }
        used
    }

    /// Over a base that keeps its VLs, a phantom on a virtual LID no selected path uses is
    /// taken to follow its base LID (base path, base SL). That holds for the LIDs
    /// [`Routing::mirror_unrouted_lmc_lids`] filled, not for one an earlier repair used and a
    /// later fault moved its sources off: its old repair tree stays in the tables, and its
    /// phantoms walked it on a base SL, so on a base VL, closing credit loops with the base
    /// paths (4×4 torus over dfsssp, three cables and a switch failed). Such a LID follows its
    /// base LID again: no path in use crosses its entries. Returns how many.
    fn restore_stale_virtual_lids(
        &self,
        tables: &mut Routing,
        used: &rustc_hash::FxHashSet<(u32, Lid)>,
    ) -> u64 {
        let f = self.f;
        let ns = f.num_switches();
        let stride = tables.stride();
        let base_of = |e: usize| f.port(f.end_ports[e]).lid as usize;
        tables.mirror_lmc_lids_unless(f, |t, e, lid| {
            let base = base_of(e);
            used.contains(&(e as u32, lid as Lid))
                || (0..ns).all(|s| t.lft[s * stride + lid] == t.lft[s * stride + base])
        }) as u64
    }

    /// One pass of the completion ([`Pass`]) with `used` ([`Rftr::used_lids`]). Also returns
    /// how many phantom paths went (wholly or up to a repaired path) on a base VL.
    fn complete_with(
        &self,
        tables: &mut Routing,
        used: &rustc_hash::FxHashSet<(u32, Lid)>,
        pass: Pass<'_>,
    ) -> (Completion, u64) {
        let Pass {
            seed,
            joins,
            routes,
        } = pass;
        let f = self.f;
        let ne = f.end_ports.len();
        let stride = tables.stride();
        let mut columns: Vec<(Dest, Lid)> = (0..ne as u32)
            .filter(|&d| self.end_sw[d as usize] != NONE && self.plane.attach(d).live)
            .flat_map(|d| {
                let port = f.port(f.end_ports[d as usize]);
                let base = port.lid as u32;
                (0..1u32 << port.lmc.min(7))
                    .map(move |o| base + o)
                    .filter(move |&l| l > 0 && (l as usize) < stride)
                    .map(move |l| (Dest::End(d), l as Lid))
            })
            .collect();
        columns.extend(
            (0..f.num_switches())
                .filter(|&t| !self.mask.node_dead(f.switches[t]))
                .map(|t| (Dest::Switch(t as u32), f.switch_lid(f.switches[t])))
                .filter(|&(_, l)| l > 0 && (l as usize) < stride),
        );
        let fixes: Vec<ColumnFix> = {
            let tables = &*tables;
            columns
                .par_iter()
                .map(|&(dest, lid)| {
                    let in_use = matches!(dest, Dest::End(d) if used.contains(&(d, lid)));
                    self.complete_column(tables, dest, lid, in_use, routes, joins)
                })
                .collect()
        };
        let mut c = Completion {
            applied: true,
            routes_added: routes,
            ..Completion::default()
        };
        let mut colours = self.colours.clone();
        let mut layers = self
            .fresh
            .as_ref()
            .map(|fr| (fr.base_vls, fr.layers.clone()));
        // Over a base that keeps its VLs, built when a phantom first fits no fresh VL: per
        // base VL, the fault-free base's dependencies (a superset of what its surviving
        // paths and the phantoms that follow them use there).
        let mut base_layers: Option<Layers> = None;
        let mut on_base = 0u64;
        for fx in fixes {
            let mut reverted: Vec<u32> = Vec::new();
            for (e, needs, sw, revertible) in &fx.pending {
                let Some(sl) = colours.find(needs).or_else(|| colours.fresh()) else {
                    // No SL left: a filled switch loses its entry (walks stop there).
                    if *revertible {
                        reverted.push(*sw);
                    }
                    *uncovered_of(&mut c, fx.switch) += 1;
                    continue;
                };
                colours.assign(sl, needs, |n| {
                    tables
                        .sl2vl
                        .set(f.switches[n.sw as usize], n.inp, n.out, sl, n.vl);
                    c.sl2vl_entries += 1;
                });
                if let PathSl::PerPair { stride: st, sl: v } = &mut tables.path_sl {
                    v[*e as usize * *st + fx.lid as usize] = sl;
                }
                c.phantom_sls += 1;
            }
            if let Some((base_vls, layers)) = &mut layers {
                for ph in &fx.fresh {
                    let needs_at = |vl: u8| {
                        let mut needs: Vec<Need> = ph
                            .ends
                            .iter()
                            .map(|&(_, port)| Need {
                                sw: ph.hops[0].0,
                                inp: port,
                                out: ph.hops[0].2,
                                vl,
                            })
                            .collect();
                        needs.extend(ph.hops[1..].iter().map(|&(sw, inp, out)| Need {
                            sw,
                            inp,
                            out,
                            vl,
                        }));
                        needs
                    };
                    // A join: the repaired path's own VL (its SL first, then any that fits).
                    let mut placed: Option<(u8, Vec<Need>)> = None;
                    if let Some((jsl, jvl)) = ph.join {
                        let needs = needs_at(jvl);
                        let sl = if colours.fits(jsl, &needs) {
                            Some(jsl)
                        } else {
                            colours.find(&needs).or_else(|| colours.fresh())
                        };
                        placed = sl.map(|sl| (sl, needs));
                    }
                    // Otherwise the whole path on the first fresh VL it keeps acyclic.
                    if placed.is_none() {
                        if let Some(layer) = layers.first_fit(0, &ph.chans) {
                            let needs = needs_at(*base_vls + layer as u8);
                            match colours.find(&needs).or_else(|| colours.fresh()) {
                                Some(sl) => placed = Some((sl, needs)),
                                None => layers.remove(layer, &ph.chans),
                            }
                        }
                    }
                    // Otherwise the whole path on a base VL it keeps acyclic, with a base
                    // SL that the tables map to that VL on every hop (nothing to set).
                    if let (None, Some(seed)) = (&placed, seed) {
                        let fr = self.fresh.as_ref().expect("a base that keeps its VLs");
                        let bl =
                            base_layers.get_or_insert_with(|| base_vl_layers(f, fr.base_vls, seed));
                        let mut from = 0;
                        let mut base_sl = None;
                        while let Some(layer) = bl.first_fit(from, &ph.chans) {
                            let vl = layer as u8;
                            let needs = needs_at(vl);
                            base_sl = (0..fr.base_sls).find(|&s| {
                                needs.iter().all(|n| {
                                    tables.sl2vl.vl(f.switches[n.sw as usize], n.inp, n.out, s)
                                        == vl
                                })
                            });
                            if base_sl.is_some() {
                                break;
                            }
                            bl.remove(layer, &ph.chans);
                            from = layer + 1;
                        }
                        if let Some(sl) = base_sl {
                            if let PathSl::PerPair { stride: st, sl: v } = &mut tables.path_sl {
                                for &(e, _) in &ph.ends {
                                    v[e as usize * *st + fx.lid as usize] = sl;
                                }
                            }
                            c.phantom_sls += ph.ends.len() as u64;
                            on_base += 1;
                            continue;
                        }
                    }
                    // Otherwise split the walk at a hop k: the part before it on a base VL
                    // it keeps acyclic, the rest on a VL above the base's it keeps acyclic
                    // (where it joins a repaired path at k, the rest takes that path's
                    // channels and adds no dependency on its VL). The change of VL at hop k
                    // goes up, and nothing ever goes from a VL above the base's down to one
                    // of the base's, so no cycle runs through it. Tried at the join first,
                    // then from the shortest part on a base VL up.
                    if let (None, Some(seed), true) = (&placed, seed, joins) {
                        let fr = self.fresh.as_ref().expect("a base that keeps its VLs");
                        let bl =
                            base_layers.get_or_insert_with(|| base_vl_layers(f, fr.base_vls, seed));
                        // (a base path in use is no repaired path: its VL is a base VL)
                        let join = ph.joins_at.filter(|j| j.2 >= fr.base_vls);
                        let at = join.map(|j| j.0);
                        let splits = at
                            .into_iter()
                            .chain((1..ph.chans.len()).filter(|&k| Some(k) != at));
                        for k in splits {
                            let (before, after) = ph.chans.split_at(k);
                            let Some(low) = bl.first_fit(0, before) else {
                                continue;
                            };
                            let Some(up) = layers.first_fit(0, after) else {
                                bl.remove(low, before);
                                continue;
                            };
                            let vl = *base_vls + up as u8;
                            let mut needs = needs_at(low as u8);
                            for n in &mut needs[ph.ends.len() + k - 1..] {
                                n.vl = vl;
                            }
                            let sl = join
                                .filter(|j| j.0 == k && j.2 == vl && colours.fits(j.1, &needs))
                                .map(|j| j.1)
                                .or_else(|| colours.find(&needs))
                                .or_else(|| colours.fresh());
                            if let Some(sl) = sl {
                                placed = Some((sl, needs));
                                on_base += 1;
                                break;
                            }
                            bl.remove(low, before);
                            layers.remove(up, after);
                        }
                    }
                    let Some((sl, needs)) = placed else {
                        // No way without risk: a switch no selected path crosses loses its
                        // entry (its walks stop there); others are only counted.
                        if ph.revertible {
                            reverted.push(ph.sw);
                        }
                        *uncovered_of(&mut c, fx.switch) += ph.ends.len() as u64;
                        continue;
                    };
                    colours.assign(sl, &needs, |n| {
                        tables
                            .sl2vl
                            .set(f.switches[n.sw as usize], n.inp, n.out, sl, n.vl);
                        c.sl2vl_entries += 1;
                    });
                    if let PathSl::PerPair { stride: st, sl: v } = &mut tables.path_sl {
                        for &(e, _) in &ph.ends {
                            v[e as usize * *st + fx.lid as usize] = sl;
                        }
                    }
                    c.phantom_sls += ph.ends.len() as u64;
                }
            }
            for &(s, port) in &fx.entries {
                tables.lft[s as usize * stride + fx.lid as usize] = port;
            }
            for &s in &reverted {
                tables.lft[s as usize * stride + fx.lid as usize] = fabric::NO_PORT;
                c.lft_entries += 1;
            }
            if let PathSl::PerPair { stride: st, sl } = &mut tables.path_sl {
                for &(e, v) in &fx.sls {
                    sl[e as usize * *st + fx.lid as usize] = v;
                }
            }
            c.lft_entries += fx.entries.len() as u64;
            if fx.switch {
                c.switch_lid_entries += fx.entries.len() as u64;
            }
            c.phantom_sls += fx.sls.len() as u64;
            *uncovered_of(&mut c, fx.switch) += fx.uncovered;
        }
        (c, on_base)
    }
}
