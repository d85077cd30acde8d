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

use super::delta::Delta;
use super::paths::{PathId, PathStore, NONE};
use super::turn::TurnRule;
use crate::tables::{PathSl, Routing, NUM_SLS};
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
}

impl Default for RftrConfig {
    fn default() -> Self {
        RftrConfig {
            vls: 2,
            max_sls: NUM_SLS as u8,
        }
    }
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
    /// Pairs dropped because an end port sits on a failed switch.
    pub dropped_pairs: u64,
    /// Unsupported (source end port, destination end port) pairs, as end-port indices.
    pub unsupported: Vec<(u32, u32)>,
    /// Repaired pairs whose new path changes VL, and the largest number of transitions.
    pub transition_paths: u64,
    pub max_transitions: u8,
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
    /// SL → VL assignments for SLs ≥ 1 on inter-switch hops: key (switch, in, out, sl).
    slvl: FxHashMap<u64, u8>,
    sls_used: u8,
    /// Per end port: bit k set when LID offset k is in use.
    lid_used: Vec<u128>,
    lmc: u8,
    /// Everything pushed since the start.
    pub delta: Delta,
    pub reports: Vec<FaultReport>,
    // Caches valid during one `apply` (dead hops do not change inside it): best prefixes per
    // source switch, and suffix tables per (end, LID offset).
    pre_cache: FxHashMap<u32, PrefixMap>,
    suf_cache: FxHashMap<(u32, u32), Vec<Option<Suffix>>>,
    // scratch
    stamp: Vec<u32>,
    stamp_gen: u32,
}

/// Best prefix per input channel of the join switch (the channel determines the switch):
/// (VL at the join, hops, path, hops taken). A dense array over channels, so building it costs
/// one array access per stored hop; `touched` lists the channels set. The empty prefix at the
/// source itself is implicit.
#[derive(Clone, Debug)]
struct PrefixMap {
    best: Vec<(u8, u32, PathId, u32)>,
    touched: Vec<u32>,
}

impl PrefixMap {
    fn new(num_channels: usize) -> Self {
        PrefixMap {
            best: vec![(0, 0, NONE, 0); num_channels],
            touched: Vec::new(),
        }
    }
}
/// From a switch toward an end: (hops, transitions inside, first channel).
type Suffix = (u32, u8, ChannelId);

impl std::fmt::Debug for Rftr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rftr")
            .field("rule", &self.rule.name())
            .field("paths", &self.paths.len())
            .field("sls_used", &self.sls_used)
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

impl<'f> Rftr<'f> {
    /// Starts RFTR from a base routing. The routing's virtual LIDs (offsets ≥ 1) are cleared;
    /// its base paths must obey `rule` (an error names the first path that does not).
    pub fn new(
        f: &'f Fabric,
        base: &Routing,
        rule: Arc<dyn TurnRule + 'f>,
        cfg: RftrConfig,
    ) -> Result<Self, String> {
        if cfg.vls == 0 || cfg.vls > crate::tables::NUM_DATA_VLS {
            return Err(format!("VLs must be 1..=15, not {}", cfg.vls));
        }
        if cfg.max_sls == 0 || cfg.max_sls as usize > NUM_SLS {
            return Err(format!("SLs must be 1..=16, not {}", cfg.max_sls));
        }
        let ns = f.num_switches();
        let ne = f.end_ports.len();
        let mut routing = base.clone();
        let lmc = f
            .end_ports
            .iter()
            .map(|&p| f.port(p).lmc)
            .min()
            .unwrap_or(0);
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
        // SL2VL: every SL to VL 0 everywhere, then RFTR sets entries for SLs ≥ 1.
        for n in 0..f.nodes.len() {
            routing.sl2vl.table_mut(NodeId(n as u32)).fill(0);
        }
        routing.path_sl = PathSl::PerPair {
            stride: routing.stride(),
            sl: vec![0; ne * routing.stride()],
        };
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
        let mut me = Rftr {
            f,
            rule,
            cfg,
            mask: FaultMask::none(f),
            routing,
            paths: PathStore::new(ns, ne, f.links.len() * 2),
            slot_of,
            slot_switch,
            slot_ends,
            end_sw,
            end_swport,
            sel: Vec::new(),
            slvl: FxHashMap::default(),
            sls_used: 1,
            lid_used: vec![1; ne],
            lmc,
            delta: Delta::default(),
            reports: Vec::new(),
            pre_cache: FxHashMap::default(),
            suf_cache: FxHashMap::default(),
            stamp: vec![0; ns],
            stamp_gen: 0,
        };
        me.sel = vec![NONE; me.slot_switch.len() * ne];
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
                if !me.walk(s, e, lid, &mut buf) {
                    continue;
                }
                for w in buf.windows(2) {
                    if !me.rule.legal(f, w[0], w[1]) {
                        let at = f.port(f.channel_dst(w[0])).node;
                        return Err(format!(
                            "the base routing breaks the {} turn rule at switch {:?} (path from {:?} to LID {lid}); \
                             RFTR needs a base routing that obeys its rule",
                            me.rule.name(),
                            f.node(at).name,
                            f.node(f.switches[s as usize]).name
                        ));
                    }
                }
                let id = me.paths.push(s, e, 0, 0, &buf, &zeros[..buf.len()]);
                if slot != NONE {
                    me.sel[slot as usize * ne + e as usize] = id;
                }
            }
        }
        Ok(me)
    }

    /// Number of stored paths and hops (the reachability tables' size).
    pub fn table_size(&self) -> (usize, usize) {
        (self.paths.len(), self.paths.total_hops())
    }
    pub fn sls_used(&self) -> u8 {
        self.sls_used
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

    /// Walks LFTs from switch `s` toward `lid` (owned by end `e`) into `buf`; true when it
    /// reaches the end port over live channels without a loop.
    fn walk(&self, s: u32, e: u32, lid: Lid, buf: &mut Vec<ChannelId>) -> bool {
        buf.clear();
        let f = self.f;
        let t = self.end_sw[e as usize];
        let mut cur = s;
        for _ in 0..=f.num_switches() {
            let port = self.routing.out_port(cur as usize, lid);
            if cur == t {
                return port == self.end_swport[e as usize];
            }
            let n = f.switches[cur as usize];
            if port == NO_PORT || port == 0 || port > f.node(n).nports {
                return false;
            }
            let Some(c) = f.out_channel(f.port_id(n, port)) else {
                return false;
            };
            if !self.mask.channel_alive(f, c) {
                return false;
            }
            let next = f.port(f.channel_dst(c)).node;
            let si = f.switch_index[next.idx()];
            if si == NONE {
                return false;
            }
            buf.push(c);
            cur = si;
        }
        false
    }

    /// Applies one fault and repairs every affected pair.
    pub fn apply(&mut self, fault: Fault) -> FaultReport {
        let f = self.f;
        let ne = f.end_ports.len();
        let mut dead: Vec<ChannelId> = Vec::new();
        let mut dropped_ends: Vec<u32> = Vec::new();
        match fault {
            Fault::Link(l) => {
                self.mask.fail_link(l);
                dead.push(l.forward());
                dead.push(l.forward().reverse());
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
        self.pre_cache.clear();
        self.suf_cache.clear();
        let mut report = FaultReport::default();
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
        report.dropped_pairs = dropped_ends.len() as u64;
        // Affected pairs.
        let mut hit: Vec<PathId> = Vec::new();
        for &c in &dead {
            hit.extend(self.paths.kill_channel(c));
        }
        hit.sort_unstable();
        hit.dedup();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for &p in &hit {
            let s = self.paths.src[p as usize];
            let e = self.paths.dst[p as usize];
            let slot = self.slot_of[s as usize];
            if slot != NONE && self.sel[slot as usize * ne + e as usize] == p {
                pairs.push((slot, e));
            }
        }
        pairs.sort_unstable();
        for (slot, e) in pairs {
            let n_src = self.slot_ends[slot as usize].len() as u64;
            report.affected_pairs += n_src;
            match self.repair(slot, e) {
                Some(trans) => {
                    report.repaired_pairs += n_src;
                    if trans > 0 {
                        report.transition_paths += n_src;
                    }
                    report.max_transitions = report.max_transitions.max(trans);
                }
                None => {
                    self.sel[slot as usize * ne + e as usize] = NONE;
                    report.unsupported_pairs += n_src;
                    for &src in &self.slot_ends[slot as usize] {
                        report.unsupported.push((src, e));
                    }
                }
            }
        }
        self.reports.push(report.clone());
        report
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

    /// Best prefixes from switch `s`: per input channel of the join switch the fewest
    /// transitions, then fewest hops.
    fn prefixes(&self, s: u32) -> PrefixMap {
        let mut m = PrefixMap::new(self.f.links.len() * 2);
        for &p in &self.paths.by_src[s as usize] {
            self.add_prefixes(p, &mut m);
        }
        m
    }

    /// For LID offset `off` of end `e`: per switch, (hops to e, transitions inside the
    /// suffix, first channel) or None when the walk from there fails.
    fn suffixes(&self, e: u32, off: u32) -> Vec<Option<(u32, u8, ChannelId)>> {
        let f = self.f;
        let ns = f.num_switches();
        let lid = f.port(f.end_ports[e as usize]).lid + off as Lid;
        let t = self.end_sw[e as usize];
        // state: 0 unknown, 1 in progress, 2 done
        let mut state = vec![0u8; ns];
        let mut out: Vec<Option<(u32, u8, ChannelId)>> = vec![None; ns];
        let mut stack: Vec<(u32, ChannelId)> = Vec::new();
        for s0 in 0..ns as u32 {
            if state[s0 as usize] != 0 || s0 == t {
                continue;
            }
            // Follow until a known switch, t, or failure.
            let mut cur = s0;
            stack.clear();
            let tail: Option<(u32, u8, Option<ChannelId>)>;
            loop {
                if cur == t {
                    tail = if self.routing.out_port(t as usize, lid) == self.end_swport[e as usize]
                    {
                        Some((0, 0, None))
                    } else {
                        None
                    };
                    break;
                }
                match state[cur as usize] {
                    2 => {
                        tail = out[cur as usize].map(|(h, tr, c)| (h, tr, Some(c)));
                        break;
                    }
                    1 => {
                        tail = None;
                        break;
                    }
                    _ => {}
                }
                state[cur as usize] = 1;
                let n = f.switches[cur as usize];
                let port = self.routing.out_port(cur as usize, lid);
                let ch = if port == NO_PORT || port == 0 || port > f.node(n).nports {
                    None
                } else {
                    f.out_channel(f.port_id(n, port))
                        .filter(|&c| self.mask.channel_alive(f, c))
                };
                let Some(c) = ch else {
                    tail = None;
                    break;
                };
                let next = f.switch_index[f.port(f.channel_dst(c)).node.idx()];
                if next == NONE {
                    tail = None;
                    break;
                }
                stack.push((cur, c));
                cur = next;
            }
            // Unwind.
            let mut acc = tail;
            while let Some((sw, c)) = stack.pop() {
                state[sw as usize] = 2;
                acc = acc.map(|(h, tr, next_c)| {
                    let ill = match next_c {
                        Some(nc) => u8::from(!self.rule.legal(f, c, nc)),
                        None => 0,
                    };
                    (h + 1, tr + ill, Some(c))
                });
                out[sw as usize] = acc.map(|(h, tr, c)| (h, tr, c.unwrap_or(ChannelId(0))));
                if out[sw as usize].is_none() {
                    acc = None;
                }
            }
        }
        out
    }

    /// Repairs pair (slot, e); returns the new path's transitions, or None if unsupported.
    fn repair(&mut self, slot: u32, e: u32) -> Option<u8> {
        let f = self.f;
        let s = self.slot_switch[slot as usize];
        let t = self.end_sw[e as usize];
        let max_trans = self.cfg.vls - 1;
        if !self.pre_cache.contains_key(&s) {
            let m = self.prefixes(s);
            self.pre_cache.insert(s, m);
        }
        let offs: Vec<u32> = (0..128u32)
            .filter(|&k| self.lid_used[e as usize] >> k & 1 == 1)
            .collect();
        for &k in &offs {
            if !self.suf_cache.contains_key(&(e, k)) {
                let v = self.suffixes(e, k);
                self.suf_cache.insert((e, k), v);
            }
        }
        let pre = &self.pre_cache[&s];
        let sufs: Vec<(u32, &Vec<Option<Suffix>>)> = offs
            .iter()
            .map(|&k| (k, &self.suf_cache[&(e, k)]))
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
                let Some((sh, st, first)) = suf[c as usize] else {
                    continue;
                };
                let ill = if inch != NONE {
                    u8::from(!self.rule.legal(f, ChannelId(inch), first))
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
        let key = |c: &Cand| (c.trans, c.hops, c.c, c.suf_off, c.pre_path, c.pre_len);
        let mut hops: Vec<ChannelId> = Vec::new();
        let mut vls: Vec<u8> = Vec::new();
        // Fast path: the best candidate usually works.
        if let Some(best) = cands.iter().min_by_key(|c| key(c)).copied() {
            if let Some(tr) = self.try_candidate(slot, s, e, &best, false, &mut hops, &mut vls) {
                return Some(tr);
            }
        }
        cands.sort_unstable_by_key(key);
        // Pass 0: an SL already in use; pass 1: open a new SL.
        for pass in 0..2 {
            for cand in &cands {
                if let Some(tr) =
                    self.try_candidate(slot, s, e, cand, pass == 1, &mut hops, &mut vls)
                {
                    return Some(tr);
                }
            }
        }
        None
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
        let off = self.free_offset(e, s, hops)?;
        let trans = vls.last().copied().unwrap_or(0);
        let sl = if trans == 0 {
            0
        } else {
            self.pick_sl(s, hops, vls, new_sl)?
        };
        let (h, v) = (std::mem::take(hops), std::mem::take(vls));
        self.commit(slot, s, e, off, sl, &h, &v);
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
            let mut tail = Vec::new();
            if !self.walk(cand.c, e, lid, &mut tail) {
                return false;
            }
            hops.extend_from_slice(&tail);
        }
        // No switch twice.
        self.stamp_gen += 1;
        let g = self.stamp_gen;
        self.stamp[s as usize] = g;
        for &c in hops.iter() {
            let v = f.switch_index[f.port(f.channel_dst(c)).node.idx()] as usize;
            if self.stamp[v] == g {
                return false;
            }
            self.stamp[v] = g;
        }
        let mut vl = 0u8;
        for i in 0..hops.len() {
            if i > 0 && !self.rule.legal(f, hops[i - 1], hops[i]) {
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
            cur = f.switch_index[f.port(f.channel_dst(c)).node.idx()];
        }
        v.push((cur, self.end_swport[e as usize]));
        v
    }

    /// Lowest LID offset ≥ 1 of `e` whose entries along the path are unset or equal.
    fn free_offset(&self, e: u32, s: u32, hops: &[ChannelId]) -> Option<u32> {
        let base = self.f.port(self.f.end_ports[e as usize]).lid as u32;
        let req = self.required_ports(s, e, hops);
        (1..(1u32 << self.lmc)).find(|&k| {
            let lid = (base + k) as Lid;
            req.iter().all(|&(sw, port)| {
                let cur = self.routing.out_port(sw as usize, lid);
                cur == NO_PORT || cur == port
            })
        })
    }

    fn key(sw: u32, inp: u8, out: u8, sl: u8) -> u64 {
        ((sw as u64) << 24) | ((inp as u64) << 16) | ((out as u64) << 8) | sl as u64
    }

    /// The (switch, in port, out port, VL) constraints a path puts on its SL.
    fn sl_constraints(&self, s: u32, hops: &[ChannelId], vls: &[u8]) -> Vec<(u32, u8, u8, u8)> {
        let f = self.f;
        let mut v = Vec::new();
        for (i, &c) in hops.iter().enumerate() {
            let sw = f.switch_index[f.port(f.channel_src(c)).node.idx()];
            let out = f.port(f.channel_src(c)).num;
            if i == 0 {
                for &e in &self.slot_ends[self.slot_of[s as usize] as usize] {
                    v.push((sw, self.end_swport[e as usize], out, vls[0]));
                }
            } else {
                let inp = f.port(f.channel_dst(hops[i - 1])).num;
                v.push((sw, inp, out, vls[i]));
            }
        }
        v
    }

    /// An SL ≥ 1 compatible with the path's VLs; a new one only when `allow_new`.
    fn pick_sl(&self, s: u32, hops: &[ChannelId], vls: &[u8], allow_new: bool) -> Option<u8> {
        let cons = self.sl_constraints(s, hops, vls);
        if !allow_new {
            return (1..self.sls_used).find(|&sl| {
                cons.iter().all(|&(sw, i, o, vl)| {
                    self.slvl
                        .get(&Self::key(sw, i, o, sl))
                        .is_none_or(|&x| x == vl)
                })
            });
        }
        if self.sls_used < self.cfg.max_sls {
            Some(self.sls_used)
        } else {
            None
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
    ) {
        let f = self.f;
        let ne = f.end_ports.len();
        let base = f.port(f.end_ports[e as usize]).lid as u32;
        let lid = (base + off) as Lid;
        for (sw, port) in self.required_ports(s, e, hops) {
            let old = self.routing.out_port(sw as usize, lid);
            if old != port {
                self.routing.lft_of_mut(sw as usize)[lid as usize] = port;
                self.delta.lft_change(sw, lid, old, port);
            }
        }
        if sl != 0 {
            if sl >= self.sls_used {
                self.sls_used = sl + 1;
            }
            for (sw, i, o, vl) in self.sl_constraints(s, hops, vls) {
                let k = Self::key(sw, i, o, sl);
                if self.slvl.insert(k, vl).is_none() {
                    let node = f.switches[sw as usize];
                    let old = self.routing.sl2vl.vl(node, i, o, sl);
                    if old != vl {
                        self.routing.sl2vl.set(node, i, o, sl, vl);
                        self.delta.sl2vl_change(sw, i, o, sl, old, vl);
                    }
                }
            }
        }
        self.lid_used[e as usize] |= 1u128 << off;
        let id = self.paths.push(s, e, off as u8, sl, hops, vls);
        self.suf_cache.remove(&(e, off));
        if let Some(mut m) = self.pre_cache.remove(&s) {
            self.add_prefixes(id, &mut m);
            self.pre_cache.insert(s, m);
        }
        self.sel[slot as usize * ne + e as usize] = id;
        if let PathSl::PerPair { stride, sl: table } = &mut self.routing.path_sl {
            for &src in &self.slot_ends[slot as usize] {
                table[src as usize * *stride + lid as usize] = sl;
                self.delta.source_change(src, e, lid, sl);
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
    pub fn fabric(&self) -> &Fabric {
        self.f
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
