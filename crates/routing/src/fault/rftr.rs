//! Reachability-Based Fault-Tolerant Routing (RFTR), as specified in `rftr.md`.
//!
//! Choices this implementation makes where the specification leaves room:
//! - **Unit of a path.** Destination-based tables make every end port on a switch follow the
//!   same switch-level path, so a *pair* is (source switch, destination end port); the delta
//!   lists the new (DLID, SL) for every end port on the source switch.
//! - **Virtual LIDs.** RFTR owns LID offsets 1..2^LMC of every end port: the base routing's
//!   entries for them are cleared at start. A new path takes the lowest offset whose entries
//!   on every switch of the path are unset or already equal (so paths sharing an offset form a
//!   tree); the offset of the suffix is tried like any other.
//! - **VLs.** A path's VL on a hop is the number of illegal turns (base-rule violations) taken
//!   so far, starting at VL 0; so every VL holds only legal turns and dependencies between VLs
//!   only go upwards: the union of all paths is deadlock-free for any mix of old and new paths.
//! - **SLs.** SL 0 maps every (in, out) to VL 0 and carries every path without a transition.
//!   A path with transitions needs an SL whose entries on its inter-switch hops are unset or
//!   equal to the VLs it needs (at the source switch: for every input port that a source end
//!   port uses). Candidates are tried in the order: fits an SL already in use, fewer
//!   transitions, shorter, lower switch index; a new SL is opened only when no candidate fits
//!   an existing one. First and last hops (to and from end ports) cannot be on a cycle and
//!   keep VL 0.
//! - **Loops.** A join that visits a switch twice is rejected (the next candidate is tried).
//! - **Dead base-LID entries are reused** (`RftrConfig::reuse_dead_base`, on by default).
//!   When a fault breaks the base-LID walk of E from a switch, that switch's base-LID entry
//!   for E carries no traffic that can arrive. A new path without a VL transition (SL 0, so
//!   any tail of it is a legal path on VL 0) may keep the base LID if, on every switch of
//!   the path, the base-LID entry already points its way or was dead when the fault came
//!   and no other new path of this repair has claimed it. Affected pairs are repaired
//!   destination by destination, nearest the failure first, and a pair whose own base-LID
//!   walk is live again (through an entry just rewritten) and as short as the best
//!   candidate keeps it, with no change at all. Live entries are never touched, so
//!   unaffected traffic keeps its tables; virtual LIDs are left for paths that need them,
//!   and the delta shrinks to the entries next to the failure. (Off: every new path takes
//!   a virtual LID, as in the paper.)
//! - **Ties keep the base LID** (`RftrConfig::prefer_base_lid`, on by default). The
//!   specification ranks candidates by transitions, then length; among the candidates as
//!   good as the best by that order, one whose prefix only crosses base-LID entries that
//!   point its way or are dead and unclaimed (so that it can keep the base LID) is taken
//!   before the lowest join switch. On a torus most broken walks then get a one-hop local
//!   detour, as a recomputation would: the delta stays at the switches next to the
//!   failure, and the virtual LIDs stay free for later faults, so more fault combinations
//!   are supported (`docs/rftr.md`). Only the best prefix per (join switch, class) is
//!   considered, so a tie whose feasible prefix is not the stored best one is missed.
//! - **Repairs stay next to the failure** (`RftrConfig::deviate_late`, on by default).
//!   Before that tie-break, a transition-free candidate as good as the best that follows the
//!   pair's own broken path up to the switch before the dead hop (or the one before it;
//!   the source itself when its own first hop died), leaves it by a hop one of the
//!   source's stored paths takes there, and joins the base-LID walk is tried: it rewrites
//!   the dead entry at that switch, so every other source behind it finds its walk live
//!   again. The lowest-join-switch rule would often
//!   rewrite each source's own first hop instead: on a 24-ary 3-tree a spine link's repair
//!   wrote 13,225 LFT entries that way and writes 1,058 now.
//! - **Parallel cables** (`add_twins`). When a failed cable has live siblings between the
//!   same two switches, every broken path gets a twin over a sibling in the reachability
//!   tables (a prefix source, in no table), so the same switches over another cable are
//!   always a candidate, as short as before and with the same turns. Real clusters bundle
//!   2-4 cables between switches, and a base that routes over the lowest cable only (LASH,
//!   as OpenSM's) has no stored path over the siblings otherwise.
//! - **Switches that source no traffic.** The reachability tables hold the base walk of every
//!   switch to every end port. Where an up/down base gives a switch without end ports (a
//!   management switch hung off a leaf) a path with a down->up turn, because it has no
//!   up*/down* path, that walk is left out instead of refusing the base: no source's path
//!   runs through it (its walk would be that path's tail, turn included).
//! - **Pairs cut off.** `FaultReport::disconnected_pairs` counts the unsupported pairs whose
//!   switches the faults left in different components: no routing could join them.
//!
//! Files: this one holds the state, `apply` and the queries; `start.rs` takes the base in,
//! `affected.rs` finds the pairs a fault breaks, `repair.rs` repairs one pair (`keep.rs`:
//! the check that lets a pair keep its live walk), `scan.rs` finds its candidates,
//! `prefix.rs` and `suffix.rs` keep the two halves of a join, `tables.rs` holds the flat
//! tables, `complete/` the tables for whole-fabric checkers, and `settle.rs` the
//! bookkeeping a repair leaves for after its delta ([`Rftr::settle`]).

mod affected;
mod complete;
mod distances;
mod keep;
mod prefix;
mod repair;
mod scan;
use scan::Want;
mod settle;
use settle::Pending;
mod start;
mod suffix;
mod tables;
mod walks;
pub use complete::{Completion, Programmed};
use distances::*;
use fabric::SwitchIdx;
use tables::*;

use super::delta::Delta;
use super::paths::{PathId, PathStore, NONE};
use crate::forward::{Hop, Plane};
use crate::tables::{PathSl, Routing, NUM_SLS};
use crate::turn::{AllTurns, Base, TurnRule, MAX_CLASSES};
use crate::vl::{Layers, Need, SlColouring};
use fabric::{ChannelId, Fabric, Fault, FaultMask, Lid, LinkId, NodeId, NodeKind, NO_PORT};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::sync::Arc;

/// Marker in the selection table: source and destination share a switch.
const SAME: u32 = NONE - 1;
/// Marker: the pair is dropped (an end port on a failed switch).
const DROPPED: u32 = NONE - 2;

/// RFTR settings.
#[derive(Clone, Copy, Debug)]
pub struct RftrConfig {
    /// Data VLs available (transitions allowed = vls - 1).
    pub vls: u8,
    /// Service levels available (at most 16).
    pub max_sls: u8,
    /// Let a new path without a VL transition keep the destination's base LID where the
    /// base-LID entries it needs are equal already or *dead* (see the module docs). Off: every
    /// new path takes a virtual LID, as in the paper.
    pub reuse_dead_base: bool,
    /// Among the candidates the specification ranks equal (same transitions, same length),
    /// prefer one that can keep the base LID, i.e. whose prefix only crosses base-LID entries
    /// that point its way already or are dead and unclaimed (needs `reuse_dead_base`; on by
    /// default). Off: ties go to the lowest join switch. On, a repair tends to stay next to
    /// the failure: fewer virtual LIDs, fewer entries and switches to push, and virtual LIDs
    /// left for later faults (more fault combinations supported).
    pub prefer_base_lid: bool,
    /// Among equally good transition-free candidates, first try those that follow the pair's
    /// broken path up to the switch before the failure (or one before it) and leave it there
    /// (`Rftr::late_deviation`; needs `reuse_dead_base`, on by default). Off: the
    /// specification's order (lowest join switch, then `prefer_base_lid`).
    pub deviate_late: bool,
    /// Over a turn rule, keep the base's SL2VL entries of SLs above 0 (only SL 0 is mapped
    /// to VL 0 everywhere, and repaired paths set the entries they need): for tables already
    /// deployed, where rewriting what no path uses would only add to what must be pushed.
    /// Off (default): every SL of every table starts at VL 0.
    pub keep_sl2vl: bool,
    /// Most bytes the reachability tables may take (None: no limit). They grow with every
    /// (source switch, end port) path's hops: [`Rftr::new`] projects their size from the
    /// first base paths it walks and refuses ([`RftrError::TooLarge`]) before filling
    /// memory it does not have.
    pub memory_limit: Option<u64>,
}

impl Default for RftrConfig {
    fn default() -> Self {
        RftrConfig {
            vls: 2,
            max_sls: NUM_SLS as u8,
            reuse_dead_base: true,
            prefer_base_lid: true,
            deviate_late: true,
            keep_sl2vl: false,
            memory_limit: None,
        }
    }
}

/// Why RFTR cannot start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RftrError {
    #[error("VLs must be 1..=15, not {0}")]
    Vls(u8),
    #[error("SLs must be 1..=16, not {0}")]
    Sls(u8),
    #[error("turn rule {rule} uses {classes} channel classes (at most {MAX_CLASSES})")]
    Classes { rule: &'static str, classes: usize },
    #[error(
        "the base uses {base} VLs: none of the {available} available is left for repaired paths"
    )]
    NoFreshVl { base: u8, available: u8 },
    #[error(
        "the base uses {base} SLs: none of the {available} available is left for repaired paths"
    )]
    NoFreshSl { base: u8, available: u8 },
    #[error(
        "RFTR's reachability tables for this fabric would take about {:.1} GB ({:.1} million \
         paths of about {:.0} million hops, one from every switch with end ports to every end \
         port), {}",
        *bytes as f64 / 1e9,
        *paths as f64 / 1e6,
        *hops as f64 / 1e6,
        limit.map_or("more hops than they can index".to_string(),
            |l| format!("more than the {:.1} GB allowed", l as f64 / 1e9))
    )]
    TooLarge {
        paths: u64,
        hops: u64,
        bytes: u64,
        limit: Option<u64>,
    },
    #[error(
        "the base routing breaks the {rule} turn rule at switch {at:?} (path from {from:?} to LID {lid}); \
         RFTR needs a base routing that obeys its rule"
    )]
    BaseBreaksRule {
        rule: &'static str,
        at: String,
        from: String,
        lid: Lid,
    },
}

/// What one fault did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FaultReport {
    /// Pairs (source end port, destination end port) whose path used the failed element.
    pub affected_pairs: u64,
    pub repaired_pairs: u64,
    pub unsupported_pairs: u64,
    /// Of the unsupported pairs, those the faults cut off: source and destination switch are
    /// no longer in one component of the live switch graph, so no routing can join them.
    pub disconnected_pairs: u64,
    /// End ports cut off — on a failed switch, or behind their own failed cable (an HCA
    /// cable) — with every pair to and from them (the field keeps its old name).
    pub dropped_pairs: u64,
    /// Unsupported (source end port, destination end port) pairs, as end-port indices.
    pub unsupported: Vec<(u32, u32)>,
    /// Repaired pairs whose new path changes VL, and the largest number of transitions.
    pub transition_paths: u64,
    pub max_transitions: u8,
    /// Of the unsupported pairs, those with a candidate path that failed only for want of a
    /// LID: every virtual LID of the destination (2^LMC - 1 of them; none at LMC 0) was taken
    /// on the path's switches, and the base LID could not be kept.
    pub no_free_lid_pairs: u64,
}

/// Running state of RFTR over one fabric and one base routing. Cloning it is cheap enough to
/// branch fault scenarios from a common state.
#[derive(Clone)]
pub struct Rftr<'f> {
    f: &'f Fabric,
    rule: Arc<dyn TurnRule + 'f>,
    cfg: RftrConfig,
    pub mask: FaultMask,
    pub routing: Routing,
    /// `routing`'s LFTs LID-major, `by_lid[lid * num_switches + sw]`, kept equal to them: a
    /// suffix table follows one LID from every switch, which reads one contiguous column
    /// here and a cache line per switch in the switch-major tables.
    by_lid: Vec<u8>,
    paths: PathStore,
    /// Per switch index: source slot (switches with end ports) or NONE.
    slot_of: Vec<u32>,
    slot_switch: Vec<u32>,
    /// Per source slot: the end ports on that switch, ascending.
    slot_ends: Vec<Vec<u32>>,
    /// Per end-port index: switch index and switch port it hangs off (NONE if not on a switch).
    end_sw: Vec<u32>,
    end_swport: Vec<u8>,
    /// Selected path per (slot, end): path id, NONE (unrouted), SAME or DROPPED.
    sel: Vec<u32>,
    /// SL → VL assignments for SLs ≥ 1 on inter-switch hops (SL 0 carries every path
    /// without a transition and maps everything to VL 0), or for the SLs above the base's.
    colours: SlColouring,
    /// Over a base that keeps its VLs (`Base::FreshVls`): the VLs and SLs it uses and the
    /// layers of the VLs above them.
    fresh: Option<Fresh>,
    /// Per end port: bit k set when LID offset k is in use.
    lid_used: Vec<u128>,
    lmc: u8,
    /// Everything pushed since the start.
    pub delta: Delta,
    /// What the last [`Rftr::apply`] changed (for incremental checkers).
    pub last: StepLog,
    pub reports: Vec<FaultReport>,
    /// Channel classes of the turn rule (`rule.class`), their count, and the penalty table:
    /// `pen[a * ncls + b]` is 1 when a turn from class a into class b is illegal.
    ch_class: Vec<u8>,
    ncls: usize,
    pen: Vec<u8>,
    /// Per channel: switch index at its far end (NONE for end ports).
    ch_dst_sw: Vec<u32>,
    /// Per channel: its port number at the near end (the LFT entry that sends a packet
    /// into it).
    ch_port: Vec<u8>,
    /// The forwarding plane under the faults so far (every walk of the tables goes through
    /// it), and the channels failed so far (for the stored paths).
    plane: Plane,
    ch_dead: Vec<bool>,
    /// Per source switch (empty for switches without end ports): its best prefixes per join
    /// switch and suffix class (`fast_prefixes`), computed once at the start and kept up to
    /// date: a commit adds its path, a fault recomputes only the rows whose best prefix it
    /// killed (`drop_dead_prefixes`).
    pre_tab: Vec<Vec<u64>>,
    /// Per source switch: the trie of the prefixes of its stored paths (empty for switches
    /// without end ports, which source no pair).
    tries: Vec<PrefixTrie>,
    // Caches valid during one `apply` (dead hops do not change inside it): best prefixes per
    // input channel (`pre_cache`, built only when the best candidate fails), and suffix
    // tables per (end, LID offset).
    pre_cache: FxHashMap<u32, PrefixMap>,
    /// What the last repair left for [`Rftr::settle`] (`settle.rs`).
    pending: Pending,
    /// Per (end, switch), `walk_suf[e * ns + sw]`: the packed suffix of the switch's
    /// base-LID walk toward the end, or a marker (`walks.rs`), and the entries the last
    /// fault forgot, to walk again when it is settled.
    walk_suf: Vec<u32>,
    walks_forgotten: Vec<(u32, u32)>,
    /// The switch-to-switch channels into each switch (shared by clones).
    in_switch: Arc<walks::InSwitch>,
    /// `pre_cache`'s maps from earlier faults, cleared, for reuse.
    pre_map_pool: Vec<PrefixMap>,
    suf_cache: FxHashMap<(u32, u32), SuffixTable>,
    /// The caches' buffers from earlier faults, reused: a fresh allocation per table would
    /// make the allocator map (and the kernel clear) new pages inside every repair.
    suf_pool: Vec<SuffixTable>,
    alive_buf: Vec<bool>,
    /// Hops between every two switches of the fault-free fabric, `sdist[a * ns + b]`
    /// (`FAR`: 127 or more, or unreachable; empty above `SDIST_MAX_SWITCHES` switches). A lower bound on
    /// every path under faults, so a candidate as short as it is a shortest one: the keep
    /// check needs no search, and the candidate scan stops at the first transition-free one
    /// (`best_candidate`).
    sdist: Arc<Vec<u8>>,
    /// The largest finite entry of `sdist` (0 when it is empty): the candidate scan's levels
    /// end at twice it.
    sdist_top: u8,
    /// Turn-rule distances (`LegalDistances`; None where not kept), shared by every clone:
    /// the levels of a scan past the fault-free distance.
    legal: Arc<Option<LegalDistances>>,
    /// Scratch of `late_deviation`: the pair's live hops and its candidates.
    deviation_scratch: (Vec<ChannelId>, Vec<Cand>),
    /// The near-failure deviation tried before the scan, at the least length: how often it
    /// was considered, tried, and found the path (`Rftr::early_deviation_pays`).
    early_deviation: EarlyDeviation,
    /// The channels into every (switch, class), for the search below (shared by clones).
    in_links: Arc<InLinks>,
    /// Per destination switch: the search for the hops to it from every (switch, class of
    /// the channel in) over the live links, obeying the turn rule, as far as it has gone
    /// (`Rftr::no_shorter_legal_walk`; valid during one `apply`), and their buffers for
    /// reuse.
    dist: FxHashMap<u32, BackSearch>,
    dist_pool: Vec<BackSearch>,
    /// Per source switch, once a pair from it found only candidates with a transition: the
    /// switches a path obeying the turn rule reaches from it over the live links (valid
    /// during one `apply`), and their buffers for reuse.
    legal_reach: FxHashMap<u32, Vec<bool>>,
    legal_reach_pool: Vec<Vec<bool>>,
    bfs_queue: Vec<u32>,
    /// `learn_legal_reach`'s distances per (switch, class), kept for the next source.
    reach_dist: Vec<u8>,
    // scratch
    stamp: Vec<u32>,
    stamp_gen: u32,
    /// A candidate's hops and per-hop VLs while it is tried, and the (switch, output port)
    /// entries it needs: reused from pair to pair (a repair allocates nothing per pair).
    cand_hops: Vec<ChannelId>,
    cand_vls: Vec<u8>,
    cand_req: Vec<(u32, u8)>,
    /// The fallback's candidate lists and the ordered reading's buffers (pools: a list is
    /// taken while another is held).
    cand_bufs: Vec<Vec<Cand>>,
    order_scratch: Vec<scan::OrderScratch>,
    /// Per switch: `group` when a new path of this repair uses its base-LID entry toward the
    /// destination being repaired (`claimed`), or when that entry was rewritten
    /// (`rewritten`).
    claimed: Vec<u32>,
    rewritten: Vec<u32>,
    group: u32,
    /// The end whose pairs are being repaired.
    group_e: u32,
    /// The selected path of the pair being repaired, as the fault's start read it (only
    /// that pair's commit changes it): `sel` is read a cache miss apart per pair.
    cur_prev: u32,
    /// Set when a candidate of the pair being repaired failed only for want of a LID.
    lid_short: bool,
    /// A fault's start's lists, kept from fault to fault (`FaultBufs`).
    fault_bufs: FaultBufs,
    /// Per switch: (`group`, path) when this group committed the switch's own base-LID walk
    /// toward the group's end as its path (`Rftr::walk_reusing`).
    own_path: Vec<(u32, PathId)>,
    /// Per switch: (`group`, hops) when the path this group committed for it (`own_path`)
    /// is as short as any walk obeying the turn rule over the live links (proven by the
    /// keep check or by the distances): no such walk from that switch is shorter, which
    /// bounds the walks of its neighbours through it without a search.
    shortest: Vec<(u32, u32)>,
}

/// The lists a fault's start fills, proportional to the pairs it moves: kept between
/// faults and mapped when the state is built (`Rftr::warm_pools`), so that a repair
/// neither allocates them nor faults their pages in.
#[derive(Clone, Debug, Default)]
struct FaultBufs {
    /// (end, switch with end ports) behind a dead channel (`forget_dead_walks`).
    behind: Vec<(u32, u32)>,
    /// The paths the fault killed.
    hit: Vec<PathId>,
    /// The broken pairs, as `start_fault` gives them.
    pairs: Vec<(u32, u32, u32, u32)>,
}

/// What one [`Rftr::apply`] changed, in the order it changed it: every LFT entry written
/// (switch index, LID, the port before) and every (source end port, destination end port)
/// given a new (DLID, SL), and the switches whose SL2VL tables changed. An incremental checker re-walks what these touch
/// (`verify::Tracker`); [`Rftr::delta`] keeps the sum since the start.
#[derive(Clone, Debug, Default)]
pub struct StepLog {
    pub lft: Vec<(u32, Lid, u8)>,
    pub sources: Vec<(u32, u32)>,
    /// Switch indices whose SL2VL tables the repair changed (once or more each).
    pub sl2vl: Vec<u32>,
}

/// Counts behind `Rftr::early_deviation_pays`.
#[derive(Clone, Copy, Debug, Default)]
struct EarlyDeviation {
    considered: u32,
    tried: u32,
    found: u32,
}

/// The VLs above a base that keeps its own (`Base::FreshVls`).
#[derive(Clone, Debug)]
struct Fresh {
    /// VLs `0..base_vls` and SLs `0..base_sls` are the base's.
    base_vls: u8,
    base_sls: u8,
    /// VL `base_vls + k` is layer `k`: every repaired path lies whole in one, and each
    /// layer's channel dependencies stay acyclic.
    layers: Layers,
}

impl std::fmt::Debug for Rftr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rftr")
            .field("rule", &self.rule.name())
            .field("paths", &self.paths.len())
            .field("sls_used", &self.colours.end())
            .finish()
    }
}

/// A candidate join.
#[derive(Clone, Copy, Debug)]
struct Cand {
    trans: u8,
    hops: u32,
    /// Join switch.
    c: u32,
    /// Prefix: path and number of hops taken from it (path NONE = empty prefix at the source).
    pre_path: PathId,
    pre_len: u32,
    /// Suffix: LID offset walked from `c`, or NONE when `c` is the destination's switch.
    suf_off: u32,
}

impl Cand {
    /// The source's own base-LID walk of `hops` hops, taken as it is.
    fn base_walk(s: u32, hops: u32) -> Cand {
        Cand {
            trans: 0,
            hops,
            c: s,
            pre_path: NONE,
            pre_len: 0,
            suf_off: 0,
        }
    }
}

impl<'f> Rftr<'f> {
    /// Number of stored paths and hops (the reachability tables' size).
    pub fn table_size(&self) -> (usize, usize) {
        (self.paths.len(), self.paths.total_hops())
    }

    /// Bytes the state holds, by part (capacities counted; the fabric and the turn rule
    /// not), largest first: what a fabric's reachability tables cost.
    pub fn memory(&self) -> Vec<(&'static str, usize)> {
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let (per_path, per_hop, index) = self.paths.bytes();
        let tries: usize = self
            .tries
            .iter()
            .map(|t| {
                cap(&t.nodes)
                    + cap(&t.later)
                    + cap(&t.at_start)
                    + cap(&t.at)
                    + cap(&t.later_head)
                    + cap(&t.later_next)
                    + cap(&t.subtree_end)
            })
            .sum();
        let path_sl = match &self.routing.path_sl {
            PathSl::PerPair { sl, .. } => cap(sl),
            PathSl::PerDest(v) => cap(v),
            PathSl::Uniform(_) => 0,
        };
        let mut v = vec![
            ("paths: hops", per_hop),
            ("paths: per path", per_path),
            ("paths: indexes", index),
            ("prefix tries", tries),
            (
                "prefix rows",
                self.pre_tab.iter().map(cap).sum::<usize>() + cap(&self.pre_tab),
            ),
            ("selection", cap(&self.sel)),
            ("path SLs", path_sl),
            ("LFTs (two copies)", 2 * cap(&self.by_lid)),
            ("base-LID walks", cap(&self.walk_suf)),
            (
                "a fault's lists",
                cap(&self.fault_bufs.behind)
                    + cap(&self.fault_bufs.hit)
                    + cap(&self.fault_bufs.pairs)
                    + cap(&self.walks_forgotten),
            ),
            (
                "distances",
                self.sdist.len()
                    + self
                        .legal
                        .as_ref()
                        .as_ref()
                        .map_or(0, |l| l.from.len() + l.to.len() + l.states.len()),
            ),
        ];
        v.sort_by_key(|&(_, b)| std::cmp::Reverse(b));
        v
    }

    pub fn sls_used(&self) -> u8 {
        self.colours.end()
    }

    /// Largest number of virtual LIDs (offsets ≥ 1) in use for one destination.
    pub fn max_virtual_lids(&self) -> u32 {
        self.lid_used
            .iter()
            .map(|m| (m >> 1).count_ones())
            .max()
            .unwrap_or(0)
    }

    /// Largest number of VL transitions on any selected path.
    pub fn max_transitions(&self) -> u8 {
        self.sel
            .iter()
            .filter(|&&p| p < DROPPED)
            .map(|&p| self.paths.vls_of(p).last().copied().unwrap_or(0))
            .max()
            .unwrap_or(0)
    }

    /// 1 when a turn from a channel of class `a` into one of class `b` breaks the base rule.
    #[inline]
    fn pen_class(&self, a: u8, b: u8) -> u8 {
        self.pen[a as usize * self.ncls + b as usize]
    }

    /// Whether the turn from channel `a` into channel `b` breaks the base rule (by class).
    #[inline]
    fn illegal(&self, a: ChannelId, b: ChannelId) -> bool {
        self.pen[self.ch_class[a.idx()] as usize * self.ncls + self.ch_class[b.idx()] as usize] != 0
    }

    /// The LFT entry of switch index `sw` for `lid` (`NO_PORT` when none), from `by_lid`.
    #[inline]
    fn entry(&self, sw: u32, lid: Lid) -> u8 {
        let ns = self.f.num_switches();
        self.by_lid
            .get(lid as usize * ns + sw as usize)
            .copied()
            .unwrap_or(NO_PORT)
    }

    /// Walks LFTs from switch `s` toward `lid` (owned by end `e`), appending the hops to
    /// `buf`; true when it reaches the end port over live channels without a loop (a walk
    /// longer than the number of switches has one).
    fn walk(&self, s: u32, e: u32, lid: Lid, buf: &mut Vec<ChannelId>) -> bool {
        self.walk_by(s, e, |sw| self.entry(sw, lid), buf)
    }

    /// `walk` reading the switch-major LFTs: building the base paths switch by switch, each
    /// switch's row is read in LID order there, where `by_lid` would be read a column apart
    /// per LID.
    fn walk_switch_major(&self, s: u32, e: u32, lid: Lid, buf: &mut Vec<ChannelId>) -> bool {
        let entry = |sw: u32| {
            self.routing
                .lft_of(SwitchIdx(sw))
                .get(lid as usize)
                .copied()
                .unwrap_or(NO_PORT)
        };
        self.walk_by(s, e, entry, buf)
    }

    /// `walk` with the LFT entry of each switch for the LID given by `entry`.
    #[inline]
    fn walk_by(&self, s: u32, e: u32, entry: impl Fn(u32) -> u8, buf: &mut Vec<ChannelId>) -> bool {
        let t = self.end_sw[e as usize];
        let arrives = entry(t) == self.end_swport[e as usize];
        let mut sw = s;
        for _ in 0..self.f.num_switches() {
            if sw == t {
                return arrives;
            }
            let Hop::Switch { sw: next, ch, .. } = self.plane.hop(sw as usize, entry(sw)) else {
                return false;
            };
            buf.push(ch);
            sw = next;
        }
        false
    }

    /// Applies one fault and repairs every affected pair.
    pub fn apply(&mut self, fault: Fault) -> FaultReport {
        let ne = self.f.end_ports.len();
        let mut report = FaultReport::default();
        self.last.lft.clear();
        self.last.sources.clear();
        self.last.sl2vl.clear();
        self.settle();
        let pairs = self.start_fault(fault, &mut report);
        // A pair left without a candidate is tried again after the other pairs toward the
        // same destination, whose new paths add suffixes, until a round repairs nothing.
        let mut at = 0;
        while at < pairs.len() {
            let e = pairs[at].0;
            let mut end = at;
            while end < pairs.len() && pairs[end].0 == e {
                end += 1;
            }
            self.start_group(e);
            let mut pending: Vec<(u32, u32)> = pairs[at..end].iter().map(|p| (p.2, p.3)).collect();
            at = end;
            loop {
                let mut failed = Vec::new();
                let before = pending.len();
                for (slot, prev) in pending {
                    self.cur_prev = prev;
                    match self.repair(slot, e) {
                        Some(trans) => {
                            let n_src = self.slot_ends[slot as usize].len() as u64;
                            report.affected_pairs += n_src;
                            report.repaired_pairs += n_src;
                            if trans > 0 {
                                report.transition_paths += n_src;
                            }
                            report.max_transitions = report.max_transitions.max(trans);
                        }
                        None => failed.push((slot, prev, self.lid_short)),
                    }
                }
                if failed.is_empty() || failed.len() == before {
                    for (slot, _, lid_short) in failed {
                        let n_src = self.slot_ends[slot as usize].len() as u64;
                        if lid_short {
                            report.no_free_lid_pairs += n_src;
                        }
                        report.affected_pairs += n_src;
                        self.sel[slot as usize * ne + e as usize] = NONE;
                        report.unsupported_pairs += n_src;
                        for &src in &self.slot_ends[slot as usize] {
                            report.unsupported.push((src, e));
                        }
                    }
                    break;
                }
                pending = failed
                    .into_iter()
                    .map(|(slot, prev, _)| (slot, prev))
                    .collect();
            }
            self.end_group(e, pairs.get(at).map(|p| p.0));
        }
        let mut pairs = pairs;
        pairs.clear();
        self.fault_bufs.pairs = pairs;
        if !report.unsupported.is_empty() {
            let (comp, _) = super::switch_components(self.f, &self.mask);
            let c = |e: u32| comp[self.end_sw[e as usize] as usize];
            report.disconnected_pairs = report
                .unsupported
                .iter()
                .filter(|&&(s, d)| c(s) != c(d))
                .count() as u64;
        }
        self.reports.push(report.clone());
        report
    }

    /// The DLID every (source end port, destination end port) pair uses now: `None` when the
    /// pair is unrouted, unsupported or dropped. Pairs on the same switch use the base LID.
    pub fn dlid(&self, src: u32, dst: u32) -> Option<Lid> {
        let ne = self.f.end_ports.len();
        let s = self.end_sw[src as usize];
        if s == NONE || self.end_sw[dst as usize] == NONE {
            return None;
        }
        let slot = self.slot_of[s as usize];
        let v = self.sel[slot as usize * ne + dst as usize];
        let base = self.f.port(self.f.end_ports[dst as usize]).lid;
        match v {
            SAME => Some(base),
            NONE | DROPPED => None,
            p => Some(base + self.paths.off[p as usize] as Lid),
        }
    }

    /// Appends the selected pairs whose DLID is `lid`, a LID of end `e`: (source end, `e`,
    /// `lid`), sources ascending by switch. The pairs one column of the tables carries.
    pub fn pairs_to(&self, e: u32, lid: Lid, out: &mut Vec<(u32, u32, Lid)>) {
        self.sources_to(e, lid, |ends| {
            out.extend(ends.iter().filter(|&&s| s != e).map(|&s| (s, e, lid)));
        });
    }

    /// Calls `each` with the end ports of each switch whose selected paths toward end `e`
    /// use `lid` (switches in order; `e` itself may be among them and is no source).
    pub fn sources_to(&self, e: u32, lid: Lid, mut each: impl FnMut(&[u32])) {
        let ne = self.f.end_ports.len();
        if self.end_sw[e as usize] == NONE {
            return;
        }
        let base = self.f.port(self.f.end_ports[e as usize]).lid;
        for (slot, ends) in self.slot_ends.iter().enumerate() {
            let used = match self.sel[slot * ne + e as usize] {
                SAME => base,
                NONE | DROPPED => continue,
                p => base + self.paths.off[p as usize] as Lid,
            };
            if used == lid {
                each(ends);
            }
        }
    }

    /// All pairs (source end, destination end, DLID) in use, for checkers.
    pub fn selected_pairs(&self) -> Vec<(u32, u32, Lid)> {
        let ne = self.f.end_ports.len() as u32;
        let mut v = Vec::new();
        for src in 0..ne {
            for dst in 0..ne {
                if src == dst {
                    continue;
                }
                if let Some(l) = self.dlid(src, dst) {
                    v.push((src, dst, l));
                }
            }
        }
        v
    }

    /// Switch-level paths in use with their per-hop VLs (for the union CDG check).
    pub fn selected_paths(&self) -> impl Iterator<Item = (&[ChannelId], &[u8])> + '_ {
        self.sel
            .iter()
            .filter(|&&p| p < DROPPED)
            .map(|&p| (self.paths.hops_of(p), self.paths.vls_of(p)))
    }

    /// The fabric this state routes.
    pub fn fabric(&self) -> &'f Fabric {
        self.f
    }

    /// Pairs (source end, destination end) left without a path and not dropped: those the
    /// faults so far left unsupported or cut off whose end ports are both still alive (a pair
    /// whose end port a later fault took away is dropped, and a checker no longer sees it).
    pub fn unrouted_pairs(&self) -> u64 {
        let ne = self.f.end_ports.len();
        let mut n = 0u64;
        for slot in 0..self.slot_switch.len() {
            let srcs = self.slot_ends[slot].len() as u64;
            n += srcs * (0..ne).filter(|&d| self.sel[slot * ne + d] == NONE).count() as u64;
        }
        n
    }

    /// Pairs (source end, destination end) that are routed: not unsupported, not dropped.
    pub fn routed_pairs(&self) -> u64 {
        let ne = self.f.end_ports.len();
        let mut n = 0u64;
        for slot in 0..self.slot_switch.len() {
            let srcs = self.slot_ends[slot].len() as u64;
            for d in 0..ne {
                let v = self.sel[slot * ne + d];
                if v == SAME {
                    // Every other end port on the same switch is a source for d.
                    n += srcs - 1;
                } else if v < DROPPED {
                    n += srcs;
                }
            }
        }
        n
    }
}

/// Convenience for callers: the kind check used by `Fault::Switch`.
pub fn is_switch(f: &Fabric, n: NodeId) -> bool {
    f.node(n).kind == NodeKind::Switch
}

#[cfg(test)]
mod tests;
