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
//!   pair's own broken path up to the switch before the dead hop (or the one before it),
//!   leaves it by a hop one of the source's stored paths takes there, and joins the
//!   base-LID walk is tried: it rewrites the dead entry at that switch, so every other
//!   source behind it finds its walk live again. The lowest-join-switch rule would often
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

mod complete;
mod tables;
pub use complete::{Completion, Programmed};
use tables::*;

use super::delta::Delta;
use super::paths::{PathId, PathStore, NONE};
use crate::forward::{Hop, Plane};
use crate::tables::{PathSl, Routing, NUM_SLS};
use crate::turn::{AllTurns, Base, TurnRule, MAX_CLASSES};
use crate::vl::{Layers, Need, SlColouring};
use fabric::{ChannelId, Fabric, FaultMask, Lid, LinkId, NodeId, NodeKind, NO_PORT};
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

/// A fault to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Fault {
    Link(LinkId),
    Switch(NodeId),
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
    /// Per destination switch: hops from every switch over live links (valid during one
    /// `apply`), and their buffers for reuse.
    dist: FxHashMap<u32, Vec<u32>>,
    dist_pool: Vec<Vec<u32>>,
    bfs_queue: Vec<u32>,
    // scratch
    stamp: Vec<u32>,
    stamp_gen: u32,
    /// Per switch: `group` when a new path of this repair uses its base-LID entry toward the
    /// destination being repaired (`claimed`), or when that entry was rewritten
    /// (`rewritten`).
    claimed: Vec<u32>,
    rewritten: Vec<u32>,
    group: u32,
    /// The end whose pairs are being repaired.
    group_e: u32,
    /// Set when a candidate of the pair being repaired failed only for want of a LID.
    lid_short: bool,
}

/// What one [`Rftr::apply`] changed, in the order it changed it: every LFT entry written
/// (switch index, LID, the port before) and every (source end port, destination end port)
/// given a new (DLID, SL). An incremental checker re-walks what these touch
/// (`verify::Tracker`); [`Rftr::delta`] keeps the sum since the start.
#[derive(Clone, Debug, Default)]
pub struct StepLog {
    pub lft: Vec<(u32, Lid, u8)>,
    pub sources: Vec<(u32, u32)>,
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

/// The VLs (one past the highest on an inter-switch hop of any SL in use) and SLs (one past
/// the highest path SL) a routing uses.
fn vls_and_sls(f: &Fabric, r: &Routing) -> (u8, u8) {
    let sls = match &r.path_sl {
        PathSl::Uniform(s) => *s + 1,
        PathSl::PerDest(v) => v.iter().copied().max().unwrap_or(0) + 1,
        PathSl::PerPair { sl, .. } => sl.iter().copied().max().unwrap_or(0) + 1,
    };
    let mut vls = 0u8;
    for &n in &f.switches {
        let np = f.node(n).nports;
        for i in 0..=np {
            for o in 1..=np {
                for sl in 0..sls {
                    vls = vls.max(r.sl2vl.vl(n, i, o, sl) + 1);
                }
            }
        }
    }
    (vls.max(1), sls)
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

thread_local! {
    /// Scratch of `best_candidate`: `level << 16 | join switch` of the switches to scan.
    static SCAN_ORDER: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
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
    /// Starts RFTR from a base routing. The routing's virtual LIDs (offsets ≥ 1) are cleared.
    /// With a turn rule (`Base::Turns`, or an `Arc` of a rule) the base paths must obey it (an
    /// error names the first path that does not), and RFTR owns every SL and VL; with
    /// `Base::FreshVls` the base keeps its path SLs and SL2VL tables and repaired paths go on
    /// VLs and SLs above the ones it uses (module documentation).
    pub fn new(
        f: &'f Fabric,
        base: &Routing,
        how: impl Into<Base<'f>>,
        cfg: RftrConfig,
    ) -> Result<Self, RftrError> {
        let how = how.into();
        let (rule, fresh, cfg): (Arc<dyn TurnRule + 'f>, _, _) = match how {
            Base::Turns(r) => (r, None, cfg),
            Base::FreshVls => {
                let (vls, sls) = vls_and_sls(f, base);
                if vls >= cfg.vls {
                    return Err(RftrError::NoFreshVl {
                        base: vls,
                        available: cfg.vls,
                    });
                }
                if sls >= cfg.max_sls {
                    return Err(RftrError::NoFreshSl {
                        base: sls,
                        available: cfg.max_sls,
                    });
                }
                let fresh = Fresh {
                    base_vls: vls,
                    base_sls: sls,
                    layers: Layers::new(f.links.len() * 2, (cfg.vls - vls) as usize),
                };
                // Every repaired path takes a virtual LID: base-LID entries carry the base's
                // SLs, which know nothing of the fresh VLs.
                let cfg = RftrConfig {
                    reuse_dead_base: false,
                    prefer_base_lid: false,
                    ..cfg
                };
                (Arc::new(AllTurns), Some(fresh), cfg)
            }
        };
        if cfg.vls == 0 || cfg.vls > crate::tables::NUM_DATA_VLS {
            return Err(RftrError::Vls(cfg.vls));
        }
        if cfg.max_sls == 0 || cfg.max_sls as usize > NUM_SLS {
            return Err(RftrError::Sls(cfg.max_sls));
        }
        let ns = f.num_switches();
        let ne = f.end_ports.len();
        let mut routing = base.clone();
        let lmc = f.end_lmc();
        // Clear virtual LIDs.
        for &p in &f.end_ports {
            let base_lid = f.port(p).lid;
            for k in 1..(1u32 << f.port(p).lmc) {
                let lid = base_lid as u32 + k;
                if lid <= routing.max_lid as u32 {
                    for s in 0..ns {
                        routing.lft_of_mut(s)[lid as usize] = NO_PORT;
                    }
                }
            }
        }
        if fresh.is_none() {
            // SL2VL: every SL to VL 0 everywhere (SL 0 only when keeping the base's), then
            // RFTR sets entries for SLs ≥ 1.
            for n in 0..f.nodes.len() {
                let node = NodeId(n as u32);
                if cfg.keep_sl2vl {
                    let np = f.node(node).nports;
                    for i in 0..=np {
                        for o in 0..=np {
                            if routing.sl2vl.vl(node, i, o, 0) != 0 {
                                routing.sl2vl.set(node, i, o, 0, 0);
                            }
                        }
                    }
                } else {
                    routing.sl2vl.table_mut(node).fill(0);
                }
            }
            routing.path_sl = PathSl::PerPair {
                stride: routing.stride(),
                sl: written(ne * routing.stride(), 0),
            };
        } else {
            // The base's own SLs, per pair, for RFTR to overwrite pair by pair.
            let stride = routing.stride();
            let mut sl = written(ne * stride, 0);
            for e in 0..ne {
                for lid in 0..stride {
                    sl[e * stride + lid] = base.path_sl.get(e, lid as Lid);
                }
            }
            routing.path_sl = PathSl::PerPair { stride, sl };
        }
        let mut end_sw = vec![NONE; ne];
        let mut end_swport = vec![NO_PORT; ne];
        let mut slot_of = vec![NONE; ns];
        let mut slot_switch = Vec::new();
        let mut slot_ends: Vec<Vec<u32>> = Vec::new();
        for (e, &p) in f.end_ports.iter().enumerate() {
            if let Some(r) = f.attached_switch(p) {
                let s = f.switch_index[f.port(r).node.idx()];
                end_sw[e] = s;
                end_swport[e] = f.port(r).num;
                if slot_of[s as usize] == NONE {
                    slot_of[s as usize] = slot_switch.len() as u32;
                    slot_switch.push(s);
                    slot_ends.push(Vec::new());
                }
                slot_ends[slot_of[s as usize] as usize].push(e as u32);
            }
        }
        let nch = f.links.len() * 2;
        let ch_class: Vec<u8> = (0..nch as u32).map(|c| rule.class(ChannelId(c))).collect();
        let ncls = ch_class.iter().map(|&c| c as usize + 1).max().unwrap_or(1);
        if ncls > MAX_CLASSES {
            return Err(RftrError::Classes {
                rule: rule.name(),
                classes: ncls,
            });
        }
        // One representative channel per class gives the penalty table (legality depends
        // only on the classes: the TurnRule invariant).
        let mut rep_ch = vec![NONE; ncls];
        for (c, &k) in ch_class.iter().enumerate() {
            if rep_ch[k as usize] == NONE {
                rep_ch[k as usize] = c as u32;
            }
        }
        let mut pen = vec![0u8; ncls * ncls];
        for a in 0..ncls {
            for b in 0..ncls {
                if rep_ch[a] != NONE && rep_ch[b] != NONE {
                    pen[a * ncls + b] =
                        u8::from(!rule.legal(f, ChannelId(rep_ch[a]), ChannelId(rep_ch[b])));
                }
            }
        }
        let ch_dst_sw: Vec<u32> = (0..nch as u32)
            .map(|c| f.switch_index[f.port(f.channel_dst(ChannelId(c))).node.idx()])
            .collect();
        let mut me = Rftr {
            f,
            rule,
            cfg,
            mask: FaultMask::none(f),
            by_lid: lid_major(&routing, ns),
            routing,
            paths: PathStore::new(ns, ne, f.links.len() * 2),
            slot_of,
            slot_switch,
            slot_ends,
            end_sw,
            end_swport,
            sel: Vec::new(),
            colours: SlColouring::new(fresh.as_ref().map_or(1, |x| x.base_sls), cfg.max_sls),
            fresh,
            lid_used: vec![1; ne],
            lmc,
            delta: Delta::default(),
            last: StepLog::default(),
            reports: Vec::new(),
            ch_class,
            ncls,
            pen,
            ch_dst_sw,
            plane: Plane::new(f, None),
            ch_dead: vec![false; nch],
            pre_tab: Vec::new(),
            tries: Vec::new(),
            pre_cache: FxHashMap::default(),
            pre_map_pool: Vec::new(),
            suf_cache: FxHashMap::default(),
            suf_pool: Vec::new(),
            alive_buf: Vec::new(),
            sdist: Arc::new(Vec::new()),
            sdist_top: 0,
            legal: Arc::default(),
            deviation_scratch: (Vec::new(), Vec::new()),
            dist: FxHashMap::default(),
            dist_pool: Vec::new(),
            bfs_queue: Vec::new(),
            stamp: vec![0; ns],
            stamp_gen: 0,
            rewritten: vec![0; ns],
            group_e: NONE,
            claimed: vec![0; ns],
            group: 0,
            lid_short: false,
        };
        me.sel = vec![NONE; me.slot_switch.len() * ne];
        me.sdist = Arc::new(static_distances(f, &me.ch_dst_sw));
        me.sdist_top = me
            .sdist
            .iter()
            .copied()
            .filter(|&d| d != FAR)
            .max()
            .unwrap_or(0);
        let legal = LegalDistances::new(f, &me.ch_dst_sw, &me.ch_class, &me.pen, me.ncls);
        me.legal = Arc::new(legal);
        me.reserve_base_paths();
        // Base paths from every switch to every end port (the IRT needs all switches).
        let mut buf = Vec::new();
        let zeros = vec![0u8; ns + 1];
        for s in 0..ns as u32 {
            for e in 0..ne as u32 {
                let t = me.end_sw[e as usize];
                if t == NONE {
                    continue;
                }
                let slot = me.slot_of[s as usize];
                if t == s {
                    if slot != NONE {
                        me.sel[slot as usize * ne + e as usize] = SAME;
                    }
                    continue;
                }
                let lid = f.port(f.end_ports[e as usize]).lid;
                buf.clear();
                if !me.walk_switch_major(s, e, lid, &mut buf) {
                    continue;
                }
                for w in buf.windows(2) {
                    if !me.rule.legal(f, w[0], w[1]) {
                        // A switch without end ports sources no traffic, and no source's
                        // path runs through it to `e` (its walk would be that path's tail,
                        // rule break included). Up/down engines give such a switch the path
                        // with the fewest down->up turns where it has no up*/down* path
                        // (a management switch hung off a leaf): it is simply no suffix
                        // for RFTR.
                        if slot == NONE {
                            buf.clear();
                            break;
                        }
                        let at = f.port(f.channel_dst(w[0])).node;
                        return Err(RftrError::BaseBreaksRule {
                            rule: me.rule.name(),
                            at: f.node(at).name.clone(),
                            from: f.node(f.switches[s as usize]).name.clone(),
                            lid,
                        });
                    }
                }
                if buf.is_empty() {
                    continue;
                }
                let id = me.paths.push(s, e, 0, 0, &buf, &zeros[..buf.len()]);
                if slot != NONE {
                    me.sel[slot as usize * ne + e as usize] = id;
                }
            }
        }
        me.build_tries();
        me.paths.reserve_headroom();
        me.warm_pools();
        Ok(me)
    }

    /// Reserves the path store for the base paths (one per switch and end port, about as
    /// long as the fault-free distance), so that filling it does not grow and copy arrays
    /// of hundreds of MB on large fabrics. Capacity only: pages are mapped when written.
    fn reserve_base_paths(&mut self) {
        let ns = self.f.num_switches();
        let mut ends_on = vec![0u64; ns];
        for &t in &self.end_sw {
            if t != NONE {
                ends_on[t as usize] += 1;
            }
        }
        let paths = ns * self.end_sw.iter().filter(|&&t| t != NONE).count();
        // Hops: the fault-free distances when known (a base path may be longer: the
        // arrays grow as usual then).
        let hops = if self.sdist.is_empty() {
            0
        } else {
            let d: u64 = self
                .sdist
                .chunks(ns)
                .map(|row| {
                    row.iter()
                        .zip(&ends_on)
                        .filter(|(&d, _)| d != FAR)
                        .map(|(&d, &n)| d as u64 * n)
                        .sum::<u64>()
                })
                .sum();
            (d + d / 8) as usize
        };
        self.paths.reserve(paths, hops);
    }

    /// Builds every source's prefix trie from its stored paths: paths sorted by their hops,
    /// each sharing the nodes of its longest common prefix with the one before.
    fn build_tries(&mut self) {
        let ns = self.f.num_switches();
        let mut tries = Vec::with_capacity(ns);
        let mut chain: Vec<u32> = Vec::new();
        for s in 0..ns {
            let mut t = PrefixTrie::default();
            if self.slot_of[s] == NONE {
                tries.push(t);
                continue;
            }
            let mut ids = self.paths.by_src[s].clone();
            ids.sort_by(|&a, &b| {
                self.paths
                    .hops_of(a)
                    .cmp(self.paths.hops_of(b))
                    .then(a.cmp(&b))
            });
            chain.clear();
            let mut prev: &[ChannelId] = &[];
            for &p in &ids {
                let hops = self.paths.hops_of(p);
                let vls = self.paths.vls_of(p);
                let lcp = hops.iter().zip(prev).take_while(|(a, b)| a == b).count();
                chain.truncate(lcp);
                for &n in &chain {
                    let m = &mut t.minpath[n as usize];
                    *m = (*m).min(p);
                }
                for i in lcp..hops.len() {
                    let parent = chain.last().copied().unwrap_or(NONE);
                    let n = t.push(hops[i].0, parent, i as u32 + 1, vls[i], p);
                    chain.push(n);
                }
                prev = hops;
            }
            t.index_ends(&self.ch_dst_sw, ns);
            t.headroom();
            tries.push(t);
        }
        self.tries = tries;
        self.pre_tab = (0..ns as u32)
            .map(|s| {
                if self.slot_of[s as usize] == NONE {
                    Vec::new()
                } else {
                    self.fast_prefixes(s)
                }
            })
            .collect();
    }

    /// After a fault killed the paths `hit`: recomputes, in every source's prefix table, the
    /// rows whose best prefix ran over a dead hop. Only rows of switches behind a dead hop of
    /// a hit path can hold one (the best prefix of a row is the start of its `minpath`, which
    /// then uses the dead channel), and a row keeps its value when its best survives.
    fn drop_dead_prefixes(&mut self, hit: &[PathId]) {
        let m1 = self.ncls + 1;
        for &p in hit {
            let s = self.paths.src[p as usize] as usize;
            if self.pre_tab[s].is_empty() {
                continue;
            }
            let lo = self.paths.dead_lo[p as usize] as usize;
            let (a, b) = (
                self.paths.start[p as usize] as usize,
                self.paths.start[p as usize + 1] as usize,
            );
            for j in a + lo..b {
                let c = self.ch_dst_sw[self.paths.hops[j].idx()] as usize;
                let row = &self.pre_tab[s][c * m1..(c + 1) * m1];
                if row.iter().any(|&k| !self.prefix_live(k)) {
                    self.refresh_prefix_row(s, c);
                }
            }
        }
    }

    /// Whether packed prefix key `k` (a table entry) still runs over live hops only.
    #[inline]
    fn prefix_live(&self, k: u64) -> bool {
        let p = k as u32;
        if k >= NO_PREFIX || p == NONE {
            return true;
        }
        let depth = ((k >> 32) & 0xFFFF) as u32;
        let lo = self.paths.dead_lo[p as usize];
        lo == NONE || lo >= depth
    }

    /// Recomputes row `c` of source `s`'s prefix table from the live trie nodes ending at `c`.
    fn refresh_prefix_row(&mut self, s: usize, c: usize) {
        let m1 = self.ncls + 1;
        let mut t = std::mem::take(&mut self.pre_tab[s]);
        let init = if c == s { NONE as u64 } else { NO_PREFIX };
        t[c * m1..(c + 1) * m1].fill(init);
        let tr = &self.tries[s];
        for n in tr.ending_at(c, &self.ch_dst_sw) {
            let n = n as usize;
            let p = tr.minpath[n];
            let lo = self.paths.dead_lo[p as usize];
            if lo != NONE && lo < tr.depth[n] {
                continue;
            }
            let key = (tr.vl[n] as u64) << 48 | (tr.depth[n] as u64) << 32 | p as u64;
            self.relax_prefix(&mut t, tr.ch[n] as usize, key);
        }
        self.pre_tab[s] = t;
    }

    /// Fills the suffix tables' pool with written buffers for a repair (a few per LID
    /// offset: tables go back to the pool after each destination, `end_group`), so that the first repair finds its memory mapped instead of
    /// faulting fresh pages in. (Prefix tables are kept, not pooled: `pre_tab`.)
    fn warm_pools(&mut self) {
        let ns = self.f.num_switches();
        let dests = self.f.end_ports.len().min(4 << self.lmc);
        self.suf_pool = (0..dests)
            .map(|_| {
                let mut st = SuffixTable::default();
                st.reset(ns);
                st
            })
            .collect();
    }

    /// Number of stored paths and hops (the reachability tables' size).
    pub fn table_size(&self) -> (usize, usize) {
        (self.paths.len(), self.paths.total_hops())
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
                .lft_of(sw as usize)
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

    /// Marks the fault's channels dead, drops the pairs of end ports on a failed switch, and
    /// lists the affected (destination end, dead hop index, source slot), sorted: destination
    /// by destination, nearest the failure first.
    fn start_fault(&mut self, fault: Fault, report: &mut FaultReport) -> Vec<(u32, u32, u32)> {
        let f = self.f;
        let ne = f.end_ports.len();
        let mut dead: Vec<ChannelId> = Vec::new();
        let mut dropped_ends: Vec<u32> = Vec::new();
        // End ports whose own cable failed (an HCA cable): cut off, as destinations and as
        // sources; the other end ports of their switch keep their paths.
        let mut cut_ends: Vec<u32> = Vec::new();
        match fault {
            Fault::Link(l) => {
                self.mask.fail_link(l);
                dead.push(l.forward());
                dead.push(l.forward().reverse());
                let k = f.link(l);
                for p in [k.a, k.b] {
                    if !f.is_switch(f.port(p).node) {
                        if let Some(e) = f.end_ports.iter().position(|&q| q == p) {
                            cut_ends.push(e as u32);
                        }
                    }
                }
            }
            Fault::Switch(n) => {
                self.mask.fail_node(n);
                for p in f.node_ports(n) {
                    if let Some(c) = f.out_channel(p) {
                        dead.push(c);
                        dead.push(c.reverse());
                    }
                }
                let si = f.switch_index[n.idx()];
                for e in 0..ne {
                    if self.end_sw[e] == si {
                        dropped_ends.push(e as u32);
                    }
                }
            }
        }
        for &c in &dead {
            self.ch_dead[c.idx()] = true;
            self.plane.fail_channel(f, c);
        }
        for (_, mut m) in self.pre_cache.drain() {
            m.clear();
            self.pre_map_pool.push(m);
        }
        self.suf_pool.extend(self.suf_cache.drain().map(|(_, t)| t));
        self.dist_pool.extend(self.dist.drain().map(|(_, d)| d));
        // Drop pairs of end ports on a failed switch.
        for &e in &dropped_ends {
            let s = self.end_sw[e as usize];
            for slot in 0..self.slot_switch.len() {
                let v = &mut self.sel[slot * ne + e as usize];
                if *v != DROPPED {
                    *v = DROPPED;
                }
            }
            let slot = self.slot_of[s as usize];
            if slot != NONE {
                for d in 0..ne {
                    self.sel[slot as usize * ne + d] = DROPPED;
                }
            }
        }
        for &e in &cut_ends {
            for slot in 0..self.slot_switch.len() {
                self.sel[slot * ne + e as usize] = DROPPED;
            }
            let s = self.end_sw[e as usize];
            if s != NONE {
                let slot = self.slot_of[s as usize];
                if slot != NONE {
                    self.slot_ends[slot as usize].retain(|&x| x != e);
                }
            }
            self.end_sw[e as usize] = NONE;
        }
        report.dropped_pairs = (dropped_ends.len() + cut_ends.len()) as u64;
        // Affected pairs.
        let mut hit: Vec<PathId> = Vec::new();
        for &c in &dead {
            hit.extend(self.paths.kill_channel(c));
        }
        hit.sort_unstable();
        hit.dedup();
        self.drop_dead_prefixes(&hit);
        // Destination by destination; within one, nearest the failure first (hops before the
        // first dead hop of the broken path), so that rewritten dead base-LID entries serve
        // the pairs behind them.
        let mut pairs: Vec<(u32, u32, u32)> = Vec::new();
        for &p in &hit {
            let s = self.paths.src[p as usize];
            let e = self.paths.dst[p as usize];
            let slot = self.slot_of[s as usize];
            if slot != NONE && self.sel[slot as usize * ne + e as usize] == p {
                pairs.push((e, self.paths.dead_lo[p as usize], slot));
            }
        }
        pairs.sort_unstable();
        if let Fault::Link(l) = fault {
            self.add_twins(l, &pairs);
        }
        pairs
    }

    /// Parallel cables: when failed link `l` has live siblings between the same two
    /// switches, every broken selected path gets a twin over a sibling (the destination picks
    /// which, so the pairs spread), stored as a reachability entry of its source only: no
    /// table holds it, but its prefixes join suffixes like any stored path's. So the repair a
    /// person would make, the same switches over the other cable, is a candidate even where
    /// no path used the sibling before (LASH, like OpenSM's, routes over the lowest-numbered
    /// cable only). The twin takes the same turns between the same switches, so under a turn
    /// rule its VLs are the original's (a rule decides by channel class, and siblings share
    /// theirs: [`TurnRule`]); over fresh VLs the path is checked like any other.
    fn add_twins(&mut self, l: LinkId, pairs: &[(u32, u32, u32)]) {
        let f = self.f;
        let ne = f.end_ports.len();
        let fwd = l.forward();
        let (a, b) = (
            f.port(f.channel_src(fwd)).node,
            f.port(f.channel_dst(fwd)).node,
        );
        let sibs: Vec<ChannelId> = f
            .node_ports(a)
            .filter_map(|p| f.out_channel(p))
            .filter(|&c| c != fwd && f.port(f.channel_dst(c)).node == b && !self.ch_dead[c.idx()])
            .collect();
        if sibs.is_empty() {
            return;
        }
        let (mut hops, mut vls): (Vec<ChannelId>, Vec<u8>) = (Vec::new(), Vec::new());
        for &(e, _, slot) in pairs {
            let p = self.sel[slot as usize * ne + e as usize];
            let pick = sibs[e as usize % sibs.len()];
            hops.clear();
            hops.extend(self.paths.hops_of(p).iter().map(|&c| {
                if c == fwd {
                    pick
                } else if c == fwd.reverse() {
                    pick.reverse()
                } else {
                    c
                }
            }));
            if hops.iter().any(|c| self.ch_dead[c.idx()]) {
                continue;
            }
            vls.clear();
            vls.extend_from_slice(self.paths.vls_of(p));
            let s = self.slot_switch[slot as usize];
            let id = self.paths.push(
                s,
                e,
                self.paths.off[p as usize],
                self.paths.sl[p as usize],
                &hops,
                &vls,
            );
            self.tries[s as usize].add_chain(&hops, &vls, id);
            let mut t = std::mem::take(&mut self.pre_tab[s as usize]);
            if !t.is_empty() {
                self.add_fast_prefixes(id, &mut t);
            }
            self.pre_tab[s as usize] = t;
        }
    }

    /// Applies one fault and repairs every affected pair.
    pub fn apply(&mut self, fault: Fault) -> FaultReport {
        let ne = self.f.end_ports.len();
        let mut report = FaultReport::default();
        self.last.lft.clear();
        self.last.sources.clear();
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
            let mut pending: Vec<u32> = pairs[at..end].iter().map(|p| p.2).collect();
            at = end;
            loop {
                let mut failed = Vec::new();
                let before = pending.len();
                for slot in pending {
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
                        None => failed.push((slot, self.lid_short)),
                    }
                }
                if failed.is_empty() || failed.len() == before {
                    for (slot, lid_short) in failed {
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
                pending = failed.into_iter().map(|(slot, _)| slot).collect();
            }
            self.end_group(e, pairs.get(at).map(|p| p.0));
        }
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

    /// Starts repairing pairs toward end `e`, with a lazy base-LID suffix table.
    fn start_group(&mut self, e: u32) {
        self.group += 1;
        self.group_e = e;
        if !self.suf_cache.contains_key(&(e, 0)) {
            let v = self.lazy_suffixes();
            self.suf_cache.insert((e, 0), v);
        }
    }

    /// Whether switch `sw`'s base-LID walk toward the group's end was dead when the group
    /// started. Only entries whose walks were dead are rewritten, so a walk was dead then
    /// when it is dead now, or when it passes a rewritten entry: the walk then was the same
    /// up to that entry, and dead from there (the table's taint, `SuffixTable::tainted`).
    fn dead_at_start(&self, sw: u32) -> bool {
        let e = self.group_e;
        if sw == self.end_sw[e as usize] {
            return false;
        }
        let st = &self.suf_cache[&(e, 0)];
        self.suffix_in(st, e, 0, sw) == NO_SUFFIX || st.tainted(sw as usize)
    }

    /// Done with end `e` (pairs come destination by destination, and `next` is the next
    /// one): its suffix tables go back to the pool, and so do the live distances toward its
    /// switch unless the next destination hangs off the same one. A fault that moves
    /// thousands of destinations then needs a handful of tables, not one each of fresh
    /// memory.
    fn end_group(&mut self, e: u32, next: Option<u32>) {
        let mut bits = self.lid_used[e as usize];
        while bits != 0 {
            let k = bits.trailing_zeros();
            bits &= bits - 1;
            if let Some(t) = self.suf_cache.remove(&(e, k)) {
                self.suf_pool.push(t);
            }
        }
        let t = self.end_sw[e as usize];
        if next.map(|n| self.end_sw[n as usize]) != Some(t) {
            if let Some(d) = self.dist.remove(&t) {
                self.dist_pool.push(d);
            }
        }
    }

    /// Adds the live prefixes of path `p` to a prefix map.
    fn add_prefixes(&self, p: PathId, m: &mut PrefixMap) {
        let live = self.paths.live_prefix(p);
        let hops = self.paths.hops_of(p);
        let vls = self.paths.vls_of(p);
        for i in 0..live {
            let c = hops[i].idx();
            let cand = (vls[i], i as u32 + 1, p, i as u32 + 1);
            let e = &mut m.best[c];
            if e.1 == 0 {
                *e = cand;
                m.touched.push(c as u32);
            } else if (cand.0, cand.1) < (e.0, e.1) {
                *e = cand;
            }
        }
    }

    /// Adds the live prefixes of path `p` to a packed prefix table (see [`Rftr::fast_prefixes`]).
    fn add_fast_prefixes(&self, p: PathId, t: &mut [u64]) {
        let live = self.paths.live_prefix(p);
        let hops = self.paths.hops_of(p);
        let vls = self.paths.vls_of(p);
        for i in 0..live {
            let ch = hops[i].idx();
            let key = (vls[i] as u64) << 48 | ((i as u64 + 1) << 32) | p as u64;
            self.relax_prefix(t, ch, key);
        }
    }

    /// Offers the prefix `key` ending with channel `ch` to a packed prefix table: per suffix
    /// class with the turn's transition added, and unpenalised in the last column.
    #[inline]
    fn relax_prefix(&self, t: &mut [u64], ch: usize, key: u64) {
        let m = self.ncls;
        let c = self.ch_dst_sw[ch] as usize;
        let a = self.ch_class[ch] as usize;
        let row = &mut t[c * (m + 1)..(c + 1) * (m + 1)];
        let pen = &self.pen[a * m..a * m + m];
        for b in 0..m {
            let k = key + ((pen[b] as u64) << 48);
            if k < row[b] {
                row[b] = k;
            }
        }
        if key < row[m] {
            row[m] = key;
        }
    }

    /// Best prefixes from switch `s`, packed: entry `c * (ncls + 1) + b` is the best prefix
    /// ending at switch `c` for a suffix whose first channel has class `b`, with the VL
    /// transition of the turn at `c` already counted; column `ncls` ignores the turn (the
    /// destination's own switch). The empty prefix at `s` itself is (0, 0, NONE).
    fn fast_prefixes(&mut self, s: u32) -> Vec<u64> {
        let m1 = self.ncls + 1;
        let mut t = written(self.f.num_switches() * m1, NO_PREFIX);
        t[s as usize * m1..s as usize * m1 + m1].fill(NONE as u64);
        let mut alive = std::mem::take(&mut self.alive_buf);
        let tr = &self.tries[s as usize];
        alive.clear();
        alive.resize(tr.ch.len(), false);
        for i in 0..tr.ch.len() {
            let ch = tr.ch[i] as usize;
            let p = tr.parent[i];
            if self.ch_dead[ch] || (p != NONE && !alive[p as usize]) {
                continue;
            }
            alive[i] = true;
            let key = (tr.vl[i] as u64) << 48 | (tr.depth[i] as u64) << 32 | tr.minpath[i] as u64;
            self.relax_prefix(&mut t, ch, key);
        }
        self.alive_buf = alive;
        t
    }

    /// Best prefixes from switch `s`: per input channel of the join switch the fewest
    /// transitions, then fewest hops.
    fn prefixes(&mut self, s: u32) -> PrefixMap {
        let mut m = self
            .pre_map_pool
            .pop()
            .unwrap_or_else(|| PrefixMap::new(self.f.links.len() * 2));
        for &p in &self.paths.by_src[s as usize] {
            self.add_prefixes(p, &mut m);
        }
        m
    }

    /// A suffix table with every entry unknown (from the pool), filled as scans ask
    /// (`suffix`, `complete_suffixes`).
    fn lazy_suffixes(&mut self) -> SuffixTable {
        let mut st = self.suf_pool.pop().unwrap_or_default();
        st.reset(self.f.num_switches());
        st
    }

    /// The packed suffix of switch `c` toward (`e`, offset `k`), computed now if unknown.
    #[inline]
    fn suffix(&self, e: u32, k: u32, c: u32) -> u64 {
        self.suffix_in(&self.suf_cache[&(e, k)], e, k, c)
    }

    /// `suffix` with the table of (`e`, `k`) at hand.
    #[inline]
    fn suffix_in(&self, st: &SuffixTable, e: u32, k: u32, c: u32) -> u64 {
        let v = st.get(c as usize);
        if v != UNKNOWN {
            return v;
        }
        self.fill_suffixes(e, k, st, std::iter::once(c));
        st.get(c as usize)
    }

    /// Computes every unknown entry of the suffix table of (`e`, `k`), for the scans that
    /// read all of it.
    fn complete_suffixes(&self, e: u32, k: u32) {
        let st = &self.suf_cache[&(e, k)];
        if !st.is_full() {
            self.fill_suffixes(e, k, st, 0..st.len() as u32);
            st.mark_full();
        }
    }

    /// Fills the unknown entries of the switches `starts` (and of the switches their walks
    /// pass) by following the LFT entries over live channels until the destination's switch,
    /// a switch already known, a loop, or a hop to nowhere or to an end port. Two passes
    /// over each walk, so nothing is allocated: the first counts its hops, sums its
    /// transitions and finds what follows it, the second writes its entries.
    fn fill_suffixes(&self, e: u32, off: u32, st: &SuffixTable, starts: impl Iterator<Item = u32>) {
        let f = self.f;
        let ns = f.num_switches();
        let lid = (f.port(f.end_ports[e as usize]).lid + off as Lid) as usize;
        let t = self.end_sw[e as usize];
        let col: &[u8] = self.by_lid.get(lid * ns..(lid + 1) * ns).unwrap_or(&[]);
        let entry = |sw: u32| col.get(sw as usize).copied().unwrap_or(NO_PORT);
        let arrives = entry(t) == self.end_swport[e as usize];
        // The base-LID table of the group's end marks walks that pass a rewritten entry.
        let taints = off == 0 && e == self.group_e;
        let rewritten = |sw: u32| taints && self.rewritten[sw as usize] == self.group;
        for s0 in starts {
            if s0 == t {
                st.set(t as usize, NO_SUFFIX, false);
                continue;
            }
            if st.get(s0 as usize) != UNKNOWN {
                continue;
            }
            st.set(s0 as usize, ON_WALK, false);
            // Pass 1: hops, transitions between them, and what follows the last one as
            // (hops, transitions, class of its first channel) from the switch it leads to,
            // or None when that switch's walk does not arrive.
            let mut n = 0u32;
            let mut ill = 0u8;
            let mut last_cls = None;
            let mut tail: Option<(u32, u8, Option<u8>)> = None;
            // Hops before the last rewritten switch of the walk (+1), and whether what
            // follows it is tainted.
            let mut rewritten_upto = 0u32;
            let mut tail_tainted = false;
            let mut sw = s0;
            // True while the walk ends at `sw` for want of a hop to a switch.
            let mut stuck = true;
            while let Hop::Switch { sw: next, ch, .. } = self.plane.hop(sw as usize, entry(sw)) {
                let cls = self.ch_class[ch.idx()];
                if let Some(p) = last_cls {
                    ill += self.pen_class(p, cls);
                }
                last_cls = Some(cls);
                if rewritten(sw) {
                    rewritten_upto = n + 1;
                }
                n += 1;
                if next == t {
                    if arrives {
                        tail = Some((0, 0, None));
                    }
                    stuck = false;
                    break;
                }
                match st.get(next as usize) {
                    UNKNOWN => {
                        st.set(next as usize, ON_WALK, false);
                        sw = next;
                    }
                    ON_WALK => {
                        stuck = false;
                        break;
                    }
                    v => {
                        tail = unpack_suffix(v).map(|(h, tr, cls)| (h, tr, Some(cls)));
                        tail_tainted = st.tainted(next as usize);
                        stuck = false;
                        break;
                    }
                }
            }
            if stuck {
                st.set_dead(sw as usize);
            }
            // Pass 2: the same hops again, each switch's entry.
            let total = tail.map(|(h, tr, tc)| {
                let join = match (last_cls, tc) {
                    (Some(l), Some(c)) => self.pen_class(l, c),
                    _ => 0,
                };
                (h, tr + ill + join)
            });
            let mut run = 0u8;
            let mut prev = None;
            let mut sw = s0;
            for i in 0..n {
                let Hop::Switch { sw: next, ch, .. } = self.plane.hop(sw as usize, entry(sw))
                else {
                    debug_assert!(false, "pass 1 walked this hop");
                    break;
                };
                let cls = self.ch_class[ch.idx()];
                if let Some(p) = prev {
                    run += self.pen_class(p, cls);
                }
                prev = Some(cls);
                match total {
                    Some((h, tr)) => st.set(
                        sw as usize,
                        Self::pack_suffix(n - i + h, tr - run, cls),
                        tail_tainted || i < rewritten_upto,
                    ),
                    None => st.set_dead(sw as usize),
                }
                sw = next;
            }
        }
    }

    fn pack_suffix(hops: u32, trans: u8, class: u8) -> u64 {
        (trans as u64) << 48 | (hops as u64) << 32 | class as u64
    }

    /// The best candidate for (s, t = switch of e) by one scan over join switches per LID
    /// offset in use, or None when none fits the VL budget. Same choice as sorting every
    /// candidate by (transitions, hops, join switch, offset, prefix path). `bound`: a lower
    /// bound on the hops of every candidate, when known, to stop early.
    fn best_candidate(&self, s: u32, e: u32, bound: Option<u32>) -> Option<Cand> {
        let m = self.ncls;
        let m1 = m + 1;
        let t = self.end_sw[e as usize] as usize;
        let pre = &self.pre_tab[s as usize];
        // Joining at the destination's switch itself (no suffix; no other candidate joins
        // there, so no tie with one).
        let mut best_rank = (pre[t * m1 + m] & HI) | t as u64;
        let mut best_k = NONE;
        let mut best_b = m;
        // A candidate joining at `c` has at least sdist(s, c) + sdist(c, t) hops (its prefix
        // and suffix are paths of the fabric), and a transition-free one at least lb(c) =
        // legal(s, c) + legal(c, t) (it obeys the turn rule: `LegalDistances`). So the scan
        // goes level by level, ascending within each: first the switches on fault-free
        // shortest routes (`bound`, from `sdist`), then by lb from the turn rule's distance
        // up to the best's hops. Before a level, a transition-free best of fewer hops ends
        // the scan; within one, once the best is transition-free with the level's hops, only
        // a lower join switch can beat it. Every switch is scanned when the best needs a
        // transition or there is no bound.
        let mut visit = |c: usize, best_rank: &mut u64| {
            let mut bits = self.lid_used[e as usize];
            while bits != 0 {
                let k = bits.trailing_zeros();
                bits &= bits - 1;
                let sv = self.suffix_in(&self.suf_cache[&(e, k)], e, k, c as u32);
                if sv == NO_SUFFIX {
                    continue;
                }
                let b = (sv & 0xFF) as usize;
                let key = pre[c * m1 + b] + (sv & !0xFF);
                let rank = (key & HI) | c as u64;
                if rank < *best_rank {
                    *best_rank = rank;
                    best_k = k;
                    best_b = b;
                }
            }
        };
        let mut done = false;
        if let Some(d0) = bound {
            let floor = (d0 as u64) << 32;
            within(
                self.rows(s, t as u32, false),
                d0,
                d0,
                usize::MAX,
                &mut |c, _| {
                    if best_rank & HI == floor && c as u64 >= best_rank & 0xFFFF_FFFF {
                        return true;
                    }
                    visit(c, &mut best_rank);
                    false
                },
            );
            done = best_rank & HI <= floor;
            if let (false, Some(l)) = (done, self.legal_distances()) {
                let last = 2 * l.top as u32;
                let first = self
                    .legal_distance(s, t as u32)
                    .map_or(d0 + 1, |x| x.max(d0 + 1));
                let cap = if best_rank >> 48 == 0 {
                    (((best_rank >> 32) & 0xFFFF) as u32).min(last)
                } else {
                    last
                };
                SCAN_ORDER.with(|order| {
                    let mut order = order.borrow_mut();
                    order.clear();
                    within(
                        self.rows(s, t as u32, true),
                        first,
                        cap,
                        usize::MAX,
                        &mut |c, lb| {
                            order.push(lb << 16 | c as u32);
                            false
                        },
                    );
                    order.sort_unstable();
                    for &x in order.iter() {
                        let (level, c) = ((x >> 16) as u64, (x & 0xFFFF) as u64);
                        if best_rank & HI < level << 32 {
                            break;
                        }
                        if best_rank & HI == level << 32 && c >= best_rank & 0xFFFF_FFFF {
                            continue;
                        }
                        visit(c as usize, &mut best_rank);
                    }
                });
                // Transition-free and no longer than every level seen, or every level seen.
                done = best_rank & HI <= (cap as u64) << 32
                    || best_rank >> 48 == 0 && cap == last && l.top < FAR - 1;
            }
        }
        let full = !done;
        if full {
            let mut bits = self.lid_used[e as usize];
            while bits != 0 {
                let k = bits.trailing_zeros();
                bits &= bits - 1;
                let sp = &self.suf_cache[&(e, k)];
                self.complete_suffixes(e, k);
                for c in 0..sp.len() {
                    let sv = sp.get(c);
                    if sv == NO_SUFFIX {
                        continue;
                    }
                    let b = (sv & 0xFF) as usize;
                    let key = pre[c * m1 + b] + (sv & !0xFF);
                    let rank = (key & HI) | c as u64;
                    if rank < best_rank {
                        best_rank = rank;
                        best_k = k;
                        best_b = b;
                    }
                }
            }
        }
        let trans = best_rank >> 48;
        if best_rank == u64::MAX || trans >= self.cfg.vls as u64 {
            return None;
        }
        let c = (best_rank & 0xFFFF_FFFF) as u32;
        let pk = pre[c as usize * m1 + best_b];
        Some(Cand {
            trans: trans as u8,
            hops: ((best_rank >> 32) & 0xFFFF) as u32,
            c,
            pre_path: pk as u32,
            pre_len: ((pk >> 32) & 0xFFFF) as u32,
            suf_off: best_k,
        })
    }

    /// The turn-rule distances (None where they are not kept).
    fn legal_distances(&self) -> Option<&LegalDistances> {
        self.legal.as_ref().as_ref()
    }

    /// Hops of the shortest path from switch `a` to switch `b` that obeys the turn rule,
    /// when kept and finite.
    fn legal_distance(&self, a: u32, b: u32) -> Option<u32> {
        let ns = self.f.num_switches();
        match self.legal_distances()?.from[a as usize * ns + b as usize] {
            FAR => None,
            d => Some(d as u32),
        }
    }

    /// The rows of the distance matrices from `s` and to `t`: the turn rule's with `legal`
    /// (when kept), else the fault-free fabric's (empty when not kept).
    fn rows(&self, s: u32, t: u32, legal: bool) -> (&[u8], &[u8]) {
        let ns = self.f.num_switches();
        let (from, to) = match self.legal_distances() {
            Some(l) if legal => (&l.from[..], &l.to[..]),
            _ => (&self.sdist[..], &self.sdist[..]),
        };
        if from.is_empty() {
            return (&[], &[]);
        }
        (
            &from[s as usize * ns..(s as usize + 1) * ns],
            &to[t as usize * ns..(t as usize + 1) * ns],
        )
    }

    /// Fault-free hops between switches `a` and `b`, when known.
    #[inline]
    fn static_distance(&self, a: u32, b: u32) -> Option<u32> {
        let ns = self.f.num_switches();
        match self.sdist.get(a as usize * ns + b as usize) {
            Some(&d) if d != FAR => Some(d as u32),
            _ => None,
        }
    }

    /// The best candidate for (s, e) (`best_candidate`), bounded below by the fault-free
    /// distance (a candidate's prefix and suffix are at least the fault-free distances to and
    /// from its join switch), so the scan ends at the first transition-free candidate that
    /// reaches it.
    fn scan_best(&self, s: u32, e: u32) -> Option<Cand> {
        let d0 = self.static_distance(s, self.end_sw[e as usize]);
        self.best_candidate(s, e, d0)
    }

    /// Hops from every switch to switch `t` over the live links (`u32::MAX`: none), by one
    /// breadth-first search per destination switch and fault.
    fn live_distances(&mut self, t: u32) -> &[u32] {
        if !self.dist.contains_key(&t) {
            let ns = self.f.num_switches();
            let mut d = self.dist_pool.pop().unwrap_or_default();
            d.clear();
            d.resize(ns, u32::MAX);
            d[t as usize] = 0;
            let mut queue = std::mem::take(&mut self.bfs_queue);
            queue.clear();
            queue.push(t);
            let mut at = 0;
            while at < queue.len() {
                let u = queue[at];
                at += 1;
                // Channels out of u, reversed: into u (links are symmetric, and a failure
                // kills both directions).
                for &c in self.f.switch_links(u as usize) {
                    if self.ch_dead[c.idx()] {
                        continue;
                    }
                    let v = self.ch_dst_sw[c.idx()];
                    if v != NONE && d[v as usize] == u32::MAX {
                        d[v as usize] = d[u as usize] + 1;
                        queue.push(v);
                    }
                }
            }
            self.bfs_queue = queue;
            self.dist.insert(t, d);
        }
        &self.dist[&t]
    }

    /// Repairs pair (slot, e); returns the new path's transitions, or None if unsupported.
    /// Fills the caches the candidate scan of (source switch `s`, end `e`) reads: the best
    /// prefixes of `s` and the suffix tables of `e` for every LID offset in use.
    fn prepare(&mut self, s: u32, e: u32) {
        if self.pre_tab[s as usize].is_empty() {
            self.pre_tab[s as usize] = self.fast_prefixes(s);
        }
        let mut bits = self.lid_used[e as usize];
        while bits != 0 {
            let k = bits.trailing_zeros();
            bits &= bits - 1;
            if !self.suf_cache.contains_key(&(e, k)) {
                let v = self.lazy_suffixes();
                self.suf_cache.insert((e, k), v);
            }
        }
    }

    /// Every candidate join for (source switch `s`, end `e`) within the VL budget, from the
    /// per-input-channel prefix table, sorted by (transitions, hops, join switch, offset,
    /// prefix path, prefix length): the order the specification ranks them in. The fast scan
    /// ([`Rftr::best_candidate`]) must find the first of them.
    fn candidates(&mut self, s: u32, e: u32) -> Vec<Cand> {
        let f = self.f;
        let t = self.end_sw[e as usize];
        let max_trans = self.cfg.vls - 1;
        if !self.pre_cache.contains_key(&s) {
            let m = self.prefixes(s);
            self.pre_cache.insert(s, m);
        }
        let pre = &self.pre_cache[&s];
        let offs: Vec<u32> = (0..128u32)
            .filter(|&k| self.lid_used[e as usize] >> k & 1 == 1)
            .collect();
        let sufs: Vec<(u32, &SuffixTable)> = offs
            .iter()
            .map(|&k| {
                self.complete_suffixes(e, k);
                (k, &self.suf_cache[&(e, k)])
            })
            .collect();
        let mut cands: Vec<Cand> = Vec::new();
        // The empty prefix at the source, then the best prefix per input channel.
        let entries = std::iter::once((s, NONE, (0u8, 0u32, NONE, 0u32))).chain(
            pre.touched.iter().map(|&ch| {
                let c = f.switch_index[f.port(f.channel_dst(ChannelId(ch))).node.idx()];
                (c, ch, pre.best[ch as usize])
            }),
        );
        for (c, inch, (vl, h, p, len)) in entries {
            if c == t {
                cands.push(Cand {
                    trans: vl,
                    hops: h,
                    c,
                    pre_path: p,
                    pre_len: len,
                    suf_off: NONE,
                });
                continue;
            }
            for &(k, suf) in &sufs {
                let Some((sh, st, first)) = unpack_suffix(suf.get(c as usize)) else {
                    continue;
                };
                // Legality depends only on the classes (the `TurnRule` invariant).
                let ill = if inch != NONE {
                    self.pen_class(self.ch_class[inch as usize], first)
                } else {
                    0
                };
                let trans = vl + ill + st;
                if trans > max_trans {
                    continue;
                }
                cands.push(Cand {
                    trans,
                    hops: h + sh,
                    c,
                    pre_path: p,
                    pre_len: len,
                    suf_off: k,
                });
            }
        }
        cands
    }

    /// Sorts candidates in the order the specification ranks them.
    fn sort_candidates(cands: &mut [Cand]) {
        let key = |c: &Cand| (c.trans, c.hops, c.c, c.suf_off, c.pre_path, c.pre_len);
        cands.sort_unstable_by_key(key);
    }

    /// The fallback scan without virtual LIDs (LMC 0, a turn-rule base): only a candidate
    /// that keeps the base LID can succeed (no transition, a prefix over usable base-LID
    /// entries; its suffix is the base-LID walk itself), and it fails only by revisiting a
    /// switch. So only those are sorted and tried, in the specification's order; every
    /// other candidate can only fail for want of a LID, and whether one would have got that
    /// far (`lid_short`, for the report) does not depend on the order. The same choice and
    /// the same report as trying the whole sorted list, without sorting thousands of
    /// candidates per unsupported pair.
    fn fallback_base_lid_only(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        cands: &mut [Cand],
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        let reuse = self.cfg.reuse_dead_base;
        let keeps = |me: &Self, c: &Cand| {
            reuse && c.trans == 0 && me.base_lid_prefix_ok(s, e, c.pre_path, c.pre_len)
        };
        let split = partition_front(cands, |c| keeps(self, c));
        let (viable, rest) = cands.split_at_mut(split);
        Self::sort_candidates(viable);
        for cand in viable.iter() {
            if let Some(tr) = self.try_candidate(slot, s, e, cand, false, hops, vls) {
                return Some(tr);
            }
        }
        for cand in rest.iter() {
            if self.materialise(s, e, cand, hops, vls) {
                self.lid_short = true;
                break;
            }
        }
        None
    }

    fn repair(&mut self, slot: u32, e: u32) -> Option<u8> {
        self.lid_short = false;
        let s = self.slot_switch[slot as usize];
        let mut hops: Vec<ChannelId> = Vec::new();
        let mut vls: Vec<u8> = Vec::new();
        // A pair whose base-LID walk is live again (through entries an earlier repair of
        // this destination rewrote), legal, and as short as the live fabric or the turn rule
        // allows keeps it: no transition-free candidate is shorter, and the walk is itself
        // one, so the scan below would choose it too. Most pairs behind a repaired switch end here, without the
        // scan or their source's prefix table.
        if self.cfg.reuse_dead_base {
            if let Some((h, 0, _)) = unpack_suffix(self.suffix(e, 0, s)) {
                let t = self.end_sw[e as usize];
                if self.static_distance(s, t) == Some(h)
                    || self.legal_distance(s, t) == Some(h)
                    || self.live_distances(t)[s as usize] == h
                {
                    let keep = Cand::base_walk(s, h);
                    if let Some(tr) =
                        self.try_candidate(slot, s, e, &keep, false, &mut hops, &mut vls)
                    {
                        return Some(tr);
                    }
                }
            }
        }
        self.prepare(s, e);
        // The near-failure tie-break at the least length first: a transition-free candidate
        // as short as the fault-free distance and the turn rule's distance is the best there
        // is (the two bound every transition-free candidate from below, and every candidate
        // with a transition ranks after it), so when the pair's own walk is not one, the
        // late deviation the steps below would try is this one, and the scan for the best
        // is not needed.
        let t = self.end_sw[e as usize];
        let d0 = self
            .static_distance(s, t)
            .map(|d| self.legal_distance(s, t).map_or(d, |l| l.max(d)));
        let own0 = unpack_suffix(self.suffix(e, 0, s));
        let mut tried_late = None;
        if let (true, true, Some(d0)) = (self.cfg.reuse_dead_base, self.cfg.deviate_late, d0) {
            if !matches!(own0, Some((h, 0, _)) if h == d0) {
                tried_late = Some(d0);
                if let Some(tr) = self.late_deviation(slot, s, e, d0, &mut hops, &mut vls) {
                    return Some(tr);
                }
            }
        }
        // Otherwise the best candidate, found by one scan, usually works.
        let mut best = self.scan_best(s, e)?;
        // A pair whose own base-LID walk is live, legal and as short as the best keeps it.
        if self.cfg.reuse_dead_base && best.trans == 0 {
            if let Some((h, 0, _)) = own0 {
                if h == best.hops {
                    best = Cand::base_walk(s, h);
                }
            }
        }
        let own_walk = best.pre_path == NONE && best.c == s && best.suf_off == 0;
        if self.cfg.reuse_dead_base
            && self.cfg.deviate_late
            && best.trans == 0
            && !own_walk
            && tried_late != Some(best.hops)
        {
            if let Some(tr) = self.late_deviation(slot, s, e, best.hops, &mut hops, &mut vls) {
                return Some(tr);
            }
        }
        if self.cfg.reuse_dead_base && self.cfg.prefer_base_lid && best.trans == 0 {
            if let Some(b) = self.base_lid_tie(s, e, &best) {
                if let Some(tr) = self.try_candidate(slot, s, e, &b, false, &mut hops, &mut vls) {
                    return Some(tr);
                }
            }
        }
        if let Some(tr) = self.try_candidate(slot, s, e, &best, false, &mut hops, &mut vls) {
            return Some(tr);
        }
        // Otherwise every candidate in order.
        let mut cands = self.candidates(s, e);
        if self.lmc == 0 && self.fresh.is_none() {
            return self.fallback_base_lid_only(slot, s, e, &mut cands, &mut hops, &mut vls);
        }
        Self::sort_candidates(&mut cands);
        // Pass 0: an SL already in use; pass 1: open a new SL.
        for pass in 0..2 {
            for cand in &cands {
                if self.doomed(s, e, cand, pass == 1) {
                    continue;
                }
                if let Some(tr) =
                    self.try_candidate(slot, s, e, cand, pass == 1, &mut hops, &mut vls)
                {
                    return Some(tr);
                }
            }
        }
        None
    }

    /// A transition-free candidate of `hops` hops that follows the pair's own broken path as
    /// far as it can: its first `k` hops (k = the live hops before the dead one, then one
    /// fewer), then a hop out of the switch reached that one of the source's stored paths
    /// takes after the same `k` hops, then the base-LID walk from there (or the
    /// destination's switch itself). Tried, lowest next switch first, before the
    /// specification's tie-break (lowest join switch), which on a tree often rewrites the
    /// source's own first hop: the entry rewritten here is the one next to the failure, the
    /// other sources behind that switch find their walk live again, and the repair writes
    /// one entry where it would write one per source.
    fn late_deviation(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        hops: u32,
        buf: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        let ne = self.f.end_ports.len();
        let p = self.sel[slot as usize * ne + e as usize];
        if p >= DROPPED {
            return None;
        }
        let live = self.paths.live_prefix(p);
        // Scratch kept across calls (this runs once per pair the keep check did not settle).
        let (mut own, mut cands) = std::mem::take(&mut self.deviation_scratch);
        own.clear();
        own.extend_from_slice(&self.paths.hops_of(p)[..live]);
        let t = self.end_sw[e as usize];
        let mut done = None;
        for k in (live.saturating_sub(1).max(1)..=live).rev() {
            let k32 = k as u32;
            if k32 + 1 > hops {
                continue;
            }
            let x = self.ch_dst_sw[own[k - 1].idx()] as usize;
            // Every path deviating at `x` after `k` hops is at least `k` plus the fault-free
            // distance from `x` to `t` long (the next switch is one hop nearer at best).
            if self
                .static_distance(x as u32, t)
                .is_some_and(|d| k32 + d > hops)
            {
                continue;
            }
            let tr = &self.tries[s as usize];
            let Some(n) = tr.ending_at(x, &self.ch_dst_sw).find(|&n| {
                let m = tr.minpath[n as usize];
                tr.depth[n as usize] == k32
                    && (n as usize) < tr.indexed as usize
                    && self.paths.hops_of(m).get(..k) == Some(&own[..k])
            }) else {
                continue;
            };
            cands.clear();
            let mut m = n as usize + 1;
            while m < tr.indexed as usize && tr.depth[m] > k32 {
                if tr.parent[m] == n && tr.vl[m] == 0 && !self.ch_dead[tr.ch[m] as usize] {
                    let ch = tr.ch[m] as usize;
                    let y = self.ch_dst_sw[ch];
                    let path = tr.minpath[m];
                    let fits = if y == t {
                        k32 + 1 == hops
                    } else {
                        matches!(
                            unpack_suffix(self.suffix(e, 0, y)),
                            Some((h, 0, cls)) if k32 + 1 + h == hops
                                && self.pen_class(self.ch_class[ch], cls) == 0
                        )
                    };
                    if fits {
                        cands.push(Cand {
                            trans: 0,
                            hops,
                            c: y,
                            pre_path: path,
                            pre_len: k32 + 1,
                            suf_off: if y == t { NONE } else { 0 },
                        });
                    }
                }
                m += 1;
            }
            cands.sort_by_key(|c| (c.c, c.pre_path));
            done = cands
                .iter()
                .find_map(|cand| self.try_candidate(slot, s, e, cand, false, buf, vls));
            if done.is_some() {
                break;
            }
        }
        self.deviation_scratch = (own, cands);
        done
    }

    /// True when trying `cand` for (s, e) now could neither succeed nor change what the
    /// failed attempts of this pair record, so the fallback scan may skip it:
    /// - in the second pass (a new SL), a candidate that needs no SL of its own (no
    ///   transition, no fresh VL) fails exactly as it did in the first;
    /// - without virtual LIDs (LMC 0), a candidate that cannot keep the base LID (it makes a
    ///   transition, or its prefix crosses a live base-LID entry pointing elsewhere) can only
    ///   fail for want of a LID, and once one candidate of this pair has (`lid_short`), more
    ///   of them add nothing.
    ///
    /// On a torus under Up*/Down* at LMC 0 a pair that cannot be repaired otherwise tries
    /// every candidate twice, thousands each.
    fn doomed(&self, s: u32, e: u32, cand: &Cand, second_pass: bool) -> bool {
        let sl0 = cand.trans == 0 && self.fresh.is_none();
        if second_pass && sl0 {
            return true;
        }
        self.lmc == 0
            && self.lid_short
            && (cand.trans > 0
                || !self.cfg.reuse_dead_base
                || !self.base_lid_prefix_ok(s, e, cand.pre_path, cand.pre_len))
    }

    /// True when a new path may send base LID `base` out of `port` at switch `sw`: the entry
    /// points there already, or its walk was dead when the fault came and no other new path
    /// of this repair has claimed it.
    fn base_entry_usable(&self, sw: u32, base: Lid, port: u8) -> bool {
        let g = self.group;
        self.entry(sw, base) == port || (self.claimed[sw as usize] != g && self.dead_at_start(sw))
    }

    /// True when the base-LID entries a path from `s` needs along the first `len` hops of
    /// stored path `p` (NONE: the empty prefix) are usable (`base_entry_usable`).
    fn base_lid_prefix_ok(&self, s: u32, e: u32, p: PathId, len: u32) -> bool {
        if p == NONE {
            return true;
        }
        let f = self.f;
        let base = f.port(f.end_ports[e as usize]).lid;
        let mut cur = s;
        self.paths.hops_of(p)[..len as usize].iter().all(|&c| {
            let ok = self.base_entry_usable(cur, base, f.port(f.channel_src(c)).num);
            cur = self.ch_dst_sw[c.idx()];
            ok
        })
    }

    /// A transition-free candidate as short as `best` that can keep the base LID: a join into
    /// the base-LID walk (offset 0) of `e`, or at `e`'s own switch, whose prefix passes
    /// `base_lid_prefix_ok`; lowest join switch first. None when `best` is such a candidate
    /// already or there is none.
    fn base_lid_tie(&self, s: u32, e: u32, best: &Cand) -> Option<Cand> {
        if matches!(best.suf_off, 0 | NONE)
            && self.base_lid_prefix_ok(s, e, best.pre_path, best.pre_len)
        {
            return None;
        }
        let m = self.ncls;
        let m1 = m + 1;
        let t = self.end_sw[e as usize] as usize;
        let pre = &self.pre_tab[s as usize];
        let n = self.f.num_switches();
        let sp = &self.suf_cache[&(e, 0)];
        let want = (best.hops as u64) << 32;
        let tie = |c: usize, col: usize, sv: u64| -> Option<Cand> {
            let pk = pre[c * m1 + col];
            if (pk + (sv & !0xFF)) & HI != want {
                return None;
            }
            let (p, len) = (pk as u32, ((pk >> 32) & 0xFFFF) as u32);
            self.base_lid_prefix_ok(s, e, p, len).then_some(Cand {
                trans: 0,
                hops: best.hops,
                c: c as u32,
                pre_path: p,
                pre_len: len,
                suf_off: if c == t { NONE } else { 0 },
            })
        };
        let look = |c: usize| {
            if c == t {
                return tie(t, m, 0);
            }
            match self.suffix_in(sp, e, 0, c as u32) {
                NO_SUFFIX => None,
                sv => tie(c, (sv & 0xFF) as usize, sv),
            }
        };
        // Every tie joins at a switch whose fault-free distances from the source and to
        // the destination add up to at most the best's hops (`best_candidate`).
        let d0 = self.static_distance(s, t as u32).unwrap_or(u32::MAX);
        let legal = best.hops > d0;
        let (top, first) = match self.legal_distances() {
            Some(l) if legal => (l.top, self.legal_distance(s, t as u32).unwrap_or(0)),
            _ => (self.sdist_top, d0),
        };
        let rows = self.rows(s, t as u32, legal);
        if rows.0.is_empty() || top >= FAR - 1 {
            return (0..n).find_map(look);
        }
        let mut found = None;
        within(rows, first, best.hops, n, &mut |c, _| {
            found = look(c);
            found.is_some()
        });
        found
    }

    /// Materialises a candidate, finds a LID offset and an SL for it and commits it.
    #[allow(clippy::too_many_arguments)]
    fn try_candidate(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        cand: &Cand,
        new_sl: bool,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        if !self.materialise(s, e, cand, hops, vls) {
            return None;
        }
        let trans = vls.last().copied().unwrap_or(0);
        let req = self.required_ports(s, e, hops);
        let Some(off) = self.free_offset(e, &req, trans) else {
            self.lid_short = true;
            return None;
        };
        let (sl, cons) = if let Some(fr) = &mut self.fresh {
            // The whole path on the first fresh VL whose dependencies stay acyclic with it.
            let chans: Vec<u32> = hops.iter().map(|c| c.0).collect();
            let layer = (0..fr.layers.len()).find(|&l| fr.layers.try_add(l, &chans))?;
            let vl = fr.base_vls + layer as u8;
            let real: Vec<u8> = vec![vl; hops.len()];
            let cons = self.sl_constraints(s, hops, &real);
            match self.pick_sl(&cons, new_sl) {
                Some(sl) => (sl, cons),
                None => {
                    if let Some(fr) = &mut self.fresh {
                        fr.layers.remove(layer, &chans);
                    }
                    return None;
                }
            }
        } else if trans == 0 {
            (0, Vec::new())
        } else {
            let cons = self.sl_constraints(s, hops, vls);
            (self.pick_sl(&cons, new_sl)?, cons)
        };
        let (h, v) = (std::mem::take(hops), std::mem::take(vls));
        self.commit(slot, s, e, off, sl, &h, &v, &req, &cons);
        *hops = h;
        *vls = v;
        Some(trans)
    }

    /// Builds the joined path of `cand` into `hops`/`vls`; false when it revisits a switch.
    fn materialise(
        &mut self,
        s: u32,
        e: u32,
        cand: &Cand,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> bool {
        let f = self.f;
        hops.clear();
        vls.clear();
        if cand.pre_path != NONE {
            hops.extend_from_slice(&self.paths.hops_of(cand.pre_path)[..cand.pre_len as usize]);
        }
        if cand.suf_off != NONE {
            let lid = f.port(f.end_ports[e as usize]).lid + cand.suf_off as Lid;
            if !self.walk(cand.c, e, lid, hops) {
                return false;
            }
        }
        // No switch twice.
        self.stamp_gen += 1;
        let g = self.stamp_gen;
        self.stamp[s as usize] = g;
        for &c in hops.iter() {
            let v = self.ch_dst_sw[c.idx()] as usize;
            if self.stamp[v] == g {
                return false;
            }
            self.stamp[v] = g;
        }
        let mut vl = 0u8;
        for i in 0..hops.len() {
            if i > 0 && self.illegal(hops[i - 1], hops[i]) {
                vl += 1;
            }
            vls.push(vl);
        }
        vl < self.cfg.vls
    }

    /// The switches of a path with the output port each needs for the destination.
    fn required_ports(&self, s: u32, e: u32, hops: &[ChannelId]) -> Vec<(u32, u8)> {
        let f = self.f;
        let mut v = Vec::with_capacity(hops.len() + 1);
        let mut cur = s;
        for &c in hops {
            v.push((cur, f.port(f.channel_src(c)).num));
            cur = self.ch_dst_sw[c.idx()];
        }
        v.push((cur, self.end_swport[e as usize]));
        v
    }

    /// The LID offset for a new path: the base LID (0) when `reuse_dead_base` allows it (no
    /// transition; every entry equal, or dead and unclaimed), else the lowest offset ≥ 1 whose
    /// entries along the path are unset or equal.
    fn free_offset(&self, e: u32, req: &[(u32, u8)], trans: u8) -> Option<u32> {
        let base = self.f.port(self.f.end_ports[e as usize]).lid as u32;
        if self.cfg.reuse_dead_base
            && trans == 0
            && req
                .iter()
                .all(|&(sw, port)| self.base_entry_usable(sw, base as Lid, port))
        {
            return Some(0);
        }
        (1..(1u32 << self.lmc)).find(|&k| {
            let lid = (base + k) as Lid;
            req.iter().all(|&(sw, port)| {
                let cur = self.entry(sw, lid);
                cur == NO_PORT || cur == port
            })
        })
    }

    /// The (switch, in port, out port, VL) needs a path puts on its SL (at the source switch,
    /// for every input port a source end port uses).
    fn sl_constraints(&self, s: u32, hops: &[ChannelId], vls: &[u8]) -> Vec<Need> {
        let f = self.f;
        let mut v = Vec::new();
        for (i, &c) in hops.iter().enumerate() {
            let sw = f.switch_index[f.port(f.channel_src(c)).node.idx()];
            let out = f.port(f.channel_src(c)).num;
            if i == 0 {
                for &e in &self.slot_ends[self.slot_of[s as usize] as usize] {
                    v.push(Need {
                        sw,
                        inp: self.end_swport[e as usize],
                        out,
                        vl: vls[0],
                    });
                }
            } else {
                let inp = f.port(f.channel_dst(hops[i - 1])).num;
                v.push(Need {
                    sw,
                    inp,
                    out,
                    vl: vls[i],
                });
            }
        }
        v
    }

    /// An SL ≥ 1 compatible with a path's needs; a new one only when `allow_new`.
    fn pick_sl(&self, cons: &[Need], allow_new: bool) -> Option<u8> {
        if allow_new {
            self.colours.fresh()
        } else {
            self.colours.find(cons)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn commit(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        off: u32,
        sl: u8,
        hops: &[ChannelId],
        vls: &[u8],
        req: &[(u32, u8)],
        cons: &[Need],
    ) {
        let f = self.f;
        let ne = f.end_ports.len();
        let base = f.port(f.end_ports[e as usize]).lid as u32;
        let lid = (base + off) as Lid;
        let mut rewrote = false;
        for &(sw, port) in req {
            let old = self.entry(sw, lid);
            if old != port {
                self.routing.lft_of_mut(sw as usize)[lid as usize] = port;
                self.by_lid[lid as usize * f.num_switches() + sw as usize] = port;
                self.delta.lft_change(sw, lid, old, port);
                self.last.lft.push((sw, lid, old));
                rewrote = true;
                if off == 0 {
                    self.rewritten[sw as usize] = self.group;
                }
            }
            if off == 0 {
                self.claimed[sw as usize] = self.group;
            }
        }
        if sl != 0 {
            let (sl2vl, delta) = (&mut self.routing.sl2vl, &mut self.delta);
            self.colours.assign(sl, cons, |n| {
                let node = f.switches[n.sw as usize];
                let old = sl2vl.vl(node, n.inp, n.out, sl);
                if old != n.vl {
                    sl2vl.set(node, n.inp, n.out, sl, n.vl);
                    delta.sl2vl_change(n.sw, n.inp, n.out, sl, old, n.vl);
                }
            });
        }
        self.lid_used[e as usize] |= 1u128 << off;
        let prev = self.sel[slot as usize * ne + e as usize];
        let prev_lid_sl = (prev < DROPPED).then(|| {
            (
                self.paths.off[prev as usize] as u32,
                self.paths.sl[prev as usize],
            )
        });
        let id = self.paths.push(s, e, off as u8, sl, hops, vls);
        // Base-LID rewrites change only walks that were dead when the group started (live
        // entries are never rewritten): those dead now, and the live ones that pass a
        // rewritten entry. The table forgets them, for the scans to walk again.
        if off == 0 {
            if rewrote {
                if let Some(st) = self.suf_cache.get(&(e, 0)) {
                    st.bump();
                }
            }
        } else if let Some(st) = self.suf_cache.get(&(e, off)) {
            // The suffix table of (e, off) changes only on the new path's switches: every set
            // entry of a virtual LID belongs to a committed path that reaches e, so walks from
            // elsewhere end where they ended before.
            let last = vls.last().copied().unwrap_or(0);
            let mut sw = s;
            for (i, &c) in hops.iter().enumerate() {
                let (h, tr) = ((hops.len() - i) as u32, last - vls[i]);
                st.set(
                    sw as usize,
                    Self::pack_suffix(h, tr, self.ch_class[c.idx()]),
                    false,
                );
                sw = self.ch_dst_sw[c.idx()];
            }
        }
        self.tries[s as usize].add_chain(hops, vls, id);
        let mut t = std::mem::take(&mut self.pre_tab[s as usize]);
        if !t.is_empty() {
            self.add_fast_prefixes(id, &mut t);
        }
        self.pre_tab[s as usize] = t;
        if let Some(mut m) = self.pre_cache.remove(&s) {
            self.add_prefixes(id, &mut m);
            self.pre_cache.insert(s, m);
        }
        self.sel[slot as usize * ne + e as usize] = id;
        if let PathSl::PerPair { stride, sl: table } = &mut self.routing.path_sl {
            // A pair that keeps its (DLID, SL) has its entries already: skip the writes, a
            // cache miss each in a table of every (source, LID).
            let same = prev_lid_sl == Some((off, sl));
            for &src in &self.slot_ends[slot as usize] {
                let at = src as usize * *stride + lid as usize;
                debug_assert!(!same || table[at] == sl, "path SL table out of step");
                if !same {
                    table[at] = sl;
                    self.delta.source_change(src, e, lid, sl);
                    self.last.sources.push((src, e));
                }
            }
        }
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
                out.extend(ends.iter().filter(|&&s| s != e).map(|&s| (s, e, lid)));
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
mod tests {
    use super::*;
    use crate::engines::by_name;
    use crate::engines::RouteOptions;

    fn start<'f>(f: &'f Fabric, vls: u8) -> Rftr<'f> {
        let e = by_name("updn").unwrap();
        let opts = e.pin_choices(f, &RouteOptions::default()).unwrap();
        let base = e.route(f, &FaultMask::none(f), &opts).unwrap();
        let rule = e.rftr_base(f, &opts).unwrap();
        Rftr::new(
            f,
            &base,
            rule,
            RftrConfig {
                vls,
                ..RftrConfig::default()
            },
        )
        .unwrap()
    }

    /// The one-scan candidate search finds what sorting every candidate finds: for every pair
    /// a fault breaks, the best (transitions, hops, join switch) of both agree, and none of
    /// either exceeds the VL budget. Pairs are repaired as they come, so later scans see
    /// rewritten base-LID entries, and with two end ports per switch the join at the
    /// destination's switch is often already as short as the fault-free distance.
    #[test]
    fn candidate_scan_equals_the_sorted_candidate_list() {
        let mut checked = 0;
        for (spec, vls) in [
            ("torus 4x4 hcas=1 lmc=2", 2),
            ("torus 3x3x3 hcas=1 lmc=2", 2),
            ("mesh 4x3 hcas=1 lmc=2", 3),
            ("ktree 4 2 lmc=2", 2),
            ("torus 5x4 hcas=2", 2),
            ("torus 4x4 hcas=2 lmc=1", 2),
        ] {
            let f = super::super::test_fabric(spec);
            let links = super::super::sweep::switch_links(&f);
            for &l in links.iter().step_by(3) {
                let mut r = start(&f, vls);
                let mut rep = FaultReport::default();
                let pairs = r.start_fault(Fault::Link(l), &mut rep);
                let mut last_e = NONE;
                for &(e, _, slot) in &pairs {
                    if e != last_e {
                        r.start_group(e);
                        last_e = e;
                    }
                    let s = r.slot_switch[slot as usize];
                    r.prepare(s, e);
                    let fast = r.best_candidate(s, e, None).map(|c| (c.trans, c.hops, c.c));
                    let scan = r.scan_best(s, e).map(|c| (c.trans, c.hops, c.c));
                    assert_eq!(fast, scan, "{spec}: link {l:?}, switch {s} to end {e}");
                    let mut all = r.candidates(s, e);
                    Rftr::sort_candidates(&mut all);
                    assert!(all.iter().all(|c| c.trans < vls), "{spec}");
                    let slow = all.first().map(|c| (c.trans, c.hops, c.c));
                    assert_eq!(fast, slow, "{spec}: link {l:?}, switch {s} to end {e}");
                    checked += 1;
                    r.repair(slot, e);
                }
            }
        }
        assert!(checked > 100, "only {checked} pairs compared");
    }

    /// A repaired state's new paths change VL only upwards and only at turns the base rule
    /// forbids, and no switch is visited twice.
    #[test]
    fn repaired_paths_change_vl_only_at_illegal_turns() {
        let f = super::super::test_fabric("torus 4x4 hcas=2 lmc=2");
        let links = super::super::sweep::switch_links(&f);
        let mut r = start(&f, 3);
        let mut with_transition = 0;
        // Faults one after another (every third link) until some repair needed a transition.
        for &l in links.iter().step_by(3) {
            r.apply(Fault::Link(l));
            for (hops, vls) in r.selected_paths() {
                let mut seen = vec![false; f.num_switches()];
                if let Some(&c0) = hops.first() {
                    seen[f.switch_index[f.port(f.channel_src(c0)).node.idx()] as usize] = true;
                }
                for (i, &c) in hops.iter().enumerate() {
                    let to = r.ch_dst_sw[c.idx()] as usize;
                    assert!(!seen[to], "a switch visited twice");
                    seen[to] = true;
                    if i > 0 {
                        let step = vls[i] - vls[i - 1];
                        assert_eq!(step, u8::from(r.illegal(hops[i - 1], c)));
                    }
                }
                if vls.last().is_some_and(|&v| v > 0) {
                    with_transition += 1;
                }
            }
            if with_transition > 0 {
                break;
            }
        }
        assert!(with_transition > 0, "no fault sequence needed a transition");
    }
}
