//! Path walker: follows the forwarding tables for every (source end port, destination LID) pair.
//!
//! Pairs: sources are the end ports of [`Fabric::end_ports`]; destinations are **every** LID of
//! every end port (base LID and the LMC virtual LIDs). A pair whose source equals the
//! destination's port is not a pair. Under a [`FaultMask`], an end port whose node is dead or
//! whose own cable is dead is neither source nor destination; those pairs are counted in
//! [`WalkReport::pairs_excluded`] (no table can route them).
//!
//! A route runs: source end port → its switch → LFT hops → the destination's end port.
//! `sw_hops` counts switch-to-switch channels, exactly like `lft_stats.py` (`links = sw_hops + 2`).
//!
//! Because the tables are destination-based, all sources on one switch share the rest of the
//! route. Per destination LID the walker resolves every switch once (memoised chain
//! resolution, O(switches)), then charges the switch's status to all its sources. Destinations
//! are processed in blocks of consecutive LIDs (so LFT reads stay contiguous) in parallel with
//! rayon; per-thread accumulators (failure counts, hop histograms, per-channel loads) are summed
//! at the end. Nothing per pair is stored, and every result is independent of the thread count.
//!
//! Channel loads ([`WalkReport::channel_load`]) use **base LIDs only** (one destination per end
//! port), which makes them "number of (source end port, destination end port) pairs routed over
//! the channel" — the definition of `lft_stats.py`. Hop histograms are given both ways.

use crate::forward::{Control, Forward, Hop, Plane, WalkEnd};
use crate::tables::Routing;
use fabric::{ChannelId, Fabric, FaultMask, Lid, NodeId, PortId};
use rayon::prelude::*;
use serde::Serialize;

pub use crate::forward::{Failure, FailureClass, NONE};
pub(crate) use crate::net::{Dest, WalkContext};

/// Status codes of the per-destination resolution.
pub(crate) const ST_UNKNOWN: u32 = u32::MAX;
const ST_ONSTACK: u32 = u32::MAX - 1;
const ST_FAIL: u32 = u32::MAX - 32;

#[inline]
pub(crate) fn st_ok(c: u32) -> bool {
    c < ST_FAIL
}
#[inline]
fn st_fail(k: Failure) -> u32 {
    ST_FAIL + k.code()
}

/// Resolves every switch for one destination: `st[s]` = switch hops to the destination
/// (`st_ok`) or a failure code. `outp[s]` is the LFT entry of switch `s` for the destination.
/// Memoised: each switch is walked through once (the walk stops at the first switch already
/// known, or on the current walk: a loop).
pub(crate) fn resolve(
    net: &WalkContext<'_>,
    outp: &[u8],
    dest: PortId,
    st: &mut [u32],
    stack: &mut Vec<u32>,
) {
    st.fill(ST_UNKNOWN);
    let fw = net.forward();
    for s0 in 0..st.len() {
        if st[s0] != ST_UNKNOWN {
            continue;
        }
        stack.clear();
        st[s0] = ST_ONSTACK;
        stack.push(s0 as u32);
        let mut known = ST_UNKNOWN;
        let end = fw.walk_from(outp, s0 as u32, 0, dest, |step| {
            if let Hop::Switch { sw, .. } = step.to {
                let c = st[sw as usize];
                if c == ST_ONSTACK {
                    known = st_fail(Failure::Loop);
                    return Control::Stop;
                }
                if c != ST_UNKNOWN {
                    known = c;
                    return Control::Stop;
                }
                st[sw as usize] = ST_ONSTACK;
                stack.push(sw);
            }
            Control::Continue
        });
        // The value of the last switch on the stack; each earlier one is one hop farther.
        let mut v = match end {
            WalkEnd::Delivered { .. } => 0,
            WalkEnd::Broken(b) => st_fail(b.failure),
            WalkEnd::Stopped if st_ok(known) => known + 1,
            WalkEnd::Stopped => known,
        };
        for &c in stack.iter().rev() {
            st[c as usize] = v;
            if st_ok(v) {
                v += 1;
            }
        }
    }
}

/// One failing pair, for reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairIssue {
    /// Source end port.
    pub src_port_id: PortId,
    pub src: String,
    pub src_port: u8,
    pub dlid: Lid,
    /// Name of the node owning `dlid`.
    pub dest: String,
    pub failure: Failure,
    pub reason: &'static str,
    /// The switch where the route breaks (for loops: the first switch visited twice).
    pub at_switch: Option<String>,
    pub at_guid: Option<String>,
    /// The LFT entry there (`None`: no entry, or the walk broke before any switch).
    pub at_port: Option<u8>,
}

/// Counts and first examples of one failure class.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IssueCount {
    pub count: u64,
    pub examples: Vec<PairIssue>,
}

/// Options of [`walk_all_with`].
#[derive(Clone, Copy, Debug)]
pub struct WalkOptions {
    /// Examples kept per failure class.
    pub max_examples: usize,
    /// Accumulate per-channel loads (base LIDs).
    pub loads: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            max_examples: 10,
            loads: true,
        }
    }
}

/// Result of walking all pairs.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WalkReport {
    pub end_ports: usize,
    /// LIDs owned by live end ports (destinations walked).
    pub dest_lids: usize,
    /// All (source, destination LID) pairs of the fabric.
    pub pairs_total: u64,
    /// Pairs whose source or destination end port is dead under the mask.
    pub pairs_excluded: u64,
    /// Pairs walked (`pairs_total - pairs_excluded`).
    pub pairs_checked: u64,
    pub pairs_ok: u64,
    /// Per failure kind.
    pub failures: Vec<(Failure, u64)>,
    pub unreachable_pairs: IssueCount,
    pub loops: IssueCount,
    pub black_holes: IssueCount,
    pub misdelivered: IssueCount,
    /// `hops_all[h]` = delivered pairs (every LID) with `h` switch-to-switch hops.
    pub hops_all: Vec<u64>,
    /// The same over base LIDs only (one destination per end port, like lft_stats.py).
    pub hops_base: Vec<u64>,
    /// Per directed channel (indexed by `ChannelId`): delivered (source end port, destination
    /// end port) pairs routed over it, base LIDs only. Empty when loads were not asked for.
    #[serde(skip)]
    pub channel_load: Vec<u64>,
}

impl WalkReport {
    /// True when every checked pair is delivered.
    pub fn all_ok(&self) -> bool {
        self.pairs_ok == self.pairs_checked
    }
    pub fn failed(&self, k: Failure) -> u64 {
        self.failures
            .iter()
            .find(|(f, _)| *f == k)
            .map_or(0, |x| x.1)
    }
}

/// Outcome of one walked pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Delivered,
    /// The route breaks at `switch` (None when it breaks at the source), whose LFT entry is
    /// `entry` (None: no entry).
    Failed {
        failure: Failure,
        switch: Option<NodeId>,
        entry: Option<u8>,
    },
}

/// One pair's route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairWalk {
    pub src: PortId,
    pub dlid: Lid,
    /// Channels in order: injection, switch-to-switch channels, ejection (when delivered).
    pub channels: Vec<ChannelId>,
    /// Switch-to-switch channels traversed.
    pub sw_hops: u32,
    pub outcome: Outcome,
}

impl PairWalk {
    pub fn delivered(&self) -> bool {
        self.outcome == Outcome::Delivered
    }
}

/// Follows the tables for one pair (`src` is any port of an end node). A route visiting more
/// switches than the fabric has is a loop. Without a cable (or with a dead one) at the source
/// the route fails with `Unconnected` / `DeadChannel` at `switch: None`.
pub fn walk_pair(
    f: &Fabric,
    r: &Routing,
    mask: Option<&FaultMask>,
    src: PortId,
    dlid: Lid,
) -> PairWalk {
    let Some(ep) = f.out_channel(src).and_then(|_| {
        let plane_ep = f.end_ports.iter().position(|&p| p == src)?;
        Some(plane_ep as u32)
    }) else {
        return PairWalk {
            src,
            dlid,
            channels: Vec::new(),
            sw_hops: 0,
            outcome: Outcome::Failed {
                failure: Failure::Unconnected,
                switch: None,
                entry: None,
            },
        };
    };
    let plane = Plane::new(f, mask);
    trace_pair(f, &Forward::new(f, &plane, r), ep, dlid)
}

/// The route of one pair (source end-port index `ep`) through a forwarding view.
pub(crate) fn trace_pair(f: &Fabric, fw: &Forward<'_>, ep: u32, dlid: Lid) -> PairWalk {
    let src = f.end_ports[ep as usize];
    // A LID nobody owns: no end port is the target, so the walk ends misdelivered.
    let target = f.lid_port(dlid).unwrap_or(PortId(u32::MAX));
    let mut w = PairWalk {
        src,
        dlid,
        channels: Vec::new(),
        sw_hops: 0,
        outcome: Outcome::Delivered,
    };
    let a = fw.plane.attach(ep);
    if a.live {
        w.channels.push(a.ch);
    }
    let end = fw.walk_pair(ep, dlid, target, |step| {
        w.channels.push(step.ch);
        if matches!(step.to, Hop::Switch { .. }) {
            w.sw_hops += 1;
        }
        Control::Continue
    });
    match end {
        WalkEnd::Delivered { .. } => {}
        WalkEnd::Broken(b) => {
            w.outcome = Outcome::Failed {
                failure: b.failure,
                switch: b.at.map(|s| f.switches[s as usize]),
                entry: b.entry,
            };
        }
        WalkEnd::Stopped => unreachable!("the visitor never stops"),
    }
    w
}

/// Walks every pair. See the module documentation.
pub fn walk_all(f: &Fabric, r: &Routing, mask: Option<&FaultMask>) -> WalkReport {
    walk_all_with(f, r, mask, WalkOptions::default())
}

/// Destinations per block (LFT reads of one switch stay within a few cache lines).
pub(crate) const BLOCK: usize = 64;

struct Acc {
    fails: [u64; 7],
    ok: u64,
    hops_all: Vec<u64>,
    hops_base: Vec<u64>,
    load: Vec<u64>,
    /// Per switch: base destinations delivered from it.
    okb: Vec<u64>,
    /// End ports whose own base LID is delivered from their switch.
    self_ok: Vec<u32>,
    /// (class, dlid, source end-port index, failure)
    examples: Vec<(FailureClass, Lid, u32, Failure)>,
    class_seen: [usize; 4],
    /// Per class: the LID of the last example taken (examples of one LID are never cut, so
    /// that keeping the smallest (dlid, source) examples is independent of the thread split).
    class_lid: [Lid; 4],
    // scratch
    outp: Vec<u8>,
    st: Vec<u32>,
    stack: Vec<u32>,
    flow: Vec<u64>,
    bucket: Vec<u32>,
    order: Vec<u32>,
}

fn class_idx(c: FailureClass) -> usize {
    match c {
        FailureClass::Unreachable => 0,
        FailureClass::Loop => 1,
        FailureClass::BlackHole => 2,
        FailureClass::Misdelivered => 3,
    }
}

fn add_hist(h: &mut Vec<u64>, i: usize, w: u64) {
    if h.len() <= i {
        h.resize(i + 1, 0);
    }
    h[i] += w;
}

fn merge_hist(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl Acc {
    fn new(net: &WalkContext<'_>, opts: &WalkOptions) -> Acc {
        let ns = net.num_switches();
        Acc {
            fails: [0; 7],
            ok: 0,
            hops_all: Vec::new(),
            hops_base: Vec::new(),
            load: if opts.loads {
                vec![0; net.f.links.len() * 2]
            } else {
                Vec::new()
            },
            okb: if opts.loads { vec![0; ns] } else { Vec::new() },
            self_ok: Vec::new(),
            examples: Vec::new(),
            class_seen: [0; 4],
            class_lid: [0; 4],
            outp: Vec::new(),
            st: vec![ST_UNKNOWN; ns],
            stack: Vec::new(),
            flow: vec![0; ns],
            bucket: Vec::new(),
            order: Vec::new(),
        }
    }

    fn merge(mut self, o: Acc, max_ex: usize) -> Acc {
        for (a, b) in self.fails.iter_mut().zip(o.fails) {
            *a += b;
        }
        self.ok += o.ok;
        merge_hist(&mut self.hops_all, &o.hops_all);
        merge_hist(&mut self.hops_base, &o.hops_base);
        for (a, b) in self.load.iter_mut().zip(&o.load) {
            *a += b;
        }
        for (a, b) in self.okb.iter_mut().zip(&o.okb) {
            *a += b;
        }
        self.self_ok.extend_from_slice(&o.self_ok);
        self.examples.extend_from_slice(&o.examples);
        self.trim_examples(max_ex);
        self
    }

    /// Keeps the `max_ex` smallest (dlid, source) examples of each class.
    fn trim_examples(&mut self, max_ex: usize) {
        self.examples.sort_unstable();
        let mut kept = [0usize; 4];
        self.examples.retain(|e| {
            let k = &mut kept[class_idx(e.0)];
            *k += 1;
            *k <= max_ex
        });
        self.class_seen = kept.map(|k| k.min(max_ex));
    }

    fn example(&mut self, max_ex: usize, k: Failure, lid: Lid, src: u32) {
        let c = k.class();
        let i = class_idx(c);
        if self.class_seen[i] < max_ex || self.class_lid[i] == lid {
            self.class_seen[i] += 1;
            self.class_lid[i] = lid;
            self.examples.push((c, lid, src, k));
        }
    }

    /// Charges one resolved destination.
    fn account(&mut self, net: &WalkContext<'_>, d: &Dest, outp: &[u8], opts: &WalkOptions) {
        let dport = net.dest_port(d);
        let sd = net.ep_sw(d.ep);
        for &s in &net.src_switches {
            let s = s as usize;
            let srcs = net.srcs_of(s);
            let w = srcs.len() as u64 - u64::from(s as u32 == sd);
            let c = self.st[s];
            if st_ok(c) {
                if d.base && opts.loads {
                    self.okb[s] += 1;
                }
                if w == 0 {
                    continue;
                }
                self.ok += w;
                add_hist(&mut self.hops_all, c as usize, w);
                if d.base {
                    add_hist(&mut self.hops_base, c as usize, w);
                }
            } else {
                if w == 0 {
                    continue;
                }
                let k = Failure::from_code(c - ST_FAIL);
                self.fails[k.code() as usize] += w;
                if let Some(&src) = srcs.iter().find(|&&e| e != d.ep) {
                    self.example(opts.max_examples, k, d.lid, src);
                }
            }
        }
        if d.base && opts.loads && sd != NONE && st_ok(self.st[sd as usize]) {
            self.self_ok.push(d.ep);
        }
        // End ports cabled straight to another end node.
        for &e in &net.direct_srcs {
            if e == d.ep {
                continue;
            }
            let c = net.ep_chan(e);
            if net.f.channel_dst(c) == dport {
                self.ok += 1;
                add_hist(&mut self.hops_all, 0, 1);
                if d.base {
                    add_hist(&mut self.hops_base, 0, 1);
                    if opts.loads {
                        self.load[c.idx()] += 1;
                    }
                }
            } else {
                self.fails[Failure::Misdelivered.code() as usize] += 1;
                self.example(opts.max_examples, Failure::Misdelivered, d.lid, e);
            }
        }
        if d.base && opts.loads {
            self.charge_loads(net, d, outp);
        }
    }

    /// Sums flows down the destination tree, farthest switches first.
    fn charge_loads(&mut self, net: &WalkContext<'_>, d: &Dest, outp: &[u8]) {
        let ns = net.num_switches();
        let sd = net.ep_sw(d.ep);
        let mut maxh = 0usize;
        self.bucket.clear();
        for s in 0..ns {
            let c = self.st[s];
            if st_ok(c) {
                let h = c as usize;
                if self.bucket.len() <= h + 1 {
                    self.bucket.resize(h + 2, 0);
                }
                self.bucket[h + 1] += 1;
                maxh = maxh.max(h);
                let w = (net.sw_src_start[s + 1] - net.sw_src_start[s]) as u64
                    - u64::from(s as u32 == sd);
                self.flow[s] = w;
            }
        }
        if self.bucket.is_empty() {
            return;
        }
        for h in 0..=maxh {
            self.bucket[h + 1] += self.bucket[h];
        }
        let total = self.bucket[maxh + 1] as usize;
        self.order.clear();
        self.order.resize(total, 0);
        for s in 0..ns {
            let c = self.st[s];
            if st_ok(c) {
                let slot = &mut self.bucket[c as usize];
                self.order[*slot as usize] = s as u32;
                *slot += 1;
            }
        }
        for i in (0..total).rev() {
            let s = self.order[i] as usize;
            let fl = self.flow[s];
            self.flow[s] = 0;
            if fl == 0 {
                continue;
            }
            match net.hop(s, outp[s]) {
                Hop::Switch { sw, ch, .. } => {
                    self.load[ch.idx()] += fl;
                    self.flow[sw as usize] += fl;
                }
                Hop::End { ch, .. } => self.load[ch.idx()] += fl,
                Hop::Fail(_) => {}
            }
        }
    }
}

/// [`walk_all`] with options.
pub fn walk_all_with(
    f: &Fabric,
    r: &Routing,
    mask: Option<&FaultMask>,
    opts: WalkOptions,
) -> WalkReport {
    let net = WalkContext::new(f, r, mask);
    walk_net(&net, opts)
}

pub(crate) fn walk_net(net: &WalkContext<'_>, opts: WalkOptions) -> WalkReport {
    let f = net.f;
    let ns = net.num_switches();
    let max_ex = opts.max_examples;
    let acc = net
        .dests
        .par_chunks(BLOCK)
        .fold(
            || Acc::new(net, &opts),
            |mut acc, chunk| {
                let mut outp = std::mem::take(&mut acc.outp);
                net.gather(chunk.iter().map(|d| d.lid), chunk.len(), &mut outp);
                for (b, d) in chunk.iter().enumerate() {
                    let o = &outp[b * ns..(b + 1) * ns];
                    let mut st = std::mem::take(&mut acc.st);
                    resolve(net, o, net.dest_port(d), &mut st, &mut acc.stack);
                    acc.st = st;
                    acc.account(net, d, o, &opts);
                }
                acc.outp = outp;
                acc
            },
        )
        .reduce_with(|a, b| a.merge(b, max_ex));
    let mut acc = acc.unwrap_or_else(|| Acc::new(net, &opts));
    acc.trim_examples(max_ex);
    if opts.loads {
        // Injection channels: base destinations delivered from the source's switch, minus
        // the source's own LID.
        let ne = net.plane.num_end_ports();
        let mut own = vec![false; ne];
        for &e in &acc.self_ok {
            own[e as usize] = true;
        }
        for e in 0..ne as u32 {
            let s = net.ep_sw(e);
            if s != NONE {
                let c = net.ep_chan(e);
                acc.load[c.idx()] += acc.okb[s as usize] - u64::from(own[e as usize]);
            }
        }
    }

    let live = net.live_sources();
    let nd = net.dests.len() as u64;
    let ne = f.end_ports.len() as u64;
    let pairs_total = ne * net.all_ep_lids - net.all_ep_lids;
    let pairs_checked = nd * live.saturating_sub(1);
    let mut rep = WalkReport {
        end_ports: f.end_ports.len(),
        dest_lids: net.dests.len(),
        pairs_total,
        pairs_excluded: pairs_total - pairs_checked,
        pairs_checked,
        pairs_ok: acc.ok,
        failures: Failure::ALL
            .iter()
            .map(|&k| (k, acc.fails[k.code() as usize]))
            .filter(|x| x.1 > 0)
            .collect(),
        hops_all: acc.hops_all,
        hops_base: acc.hops_base,
        channel_load: acc.load,
        ..Default::default()
    };
    for k in Failure::ALL {
        let n = acc.fails[k.code() as usize];
        match k.class() {
            FailureClass::Unreachable => rep.unreachable_pairs.count += n,
            FailureClass::Loop => rep.loops.count += n,
            FailureClass::BlackHole => rep.black_holes.count += n,
            FailureClass::Misdelivered => rep.misdelivered.count += n,
        }
    }
    for &(c, lid, src, _) in &acc.examples {
        let issue = describe_issue(net, src, lid);
        match c {
            FailureClass::Unreachable => rep.unreachable_pairs.examples.push(issue),
            FailureClass::Loop => rep.loops.examples.push(issue),
            FailureClass::BlackHole => rep.black_holes.examples.push(issue),
            FailureClass::Misdelivered => rep.misdelivered.examples.push(issue),
        }
    }
    rep
}

fn guid_str(g: u64) -> String {
    format!("{g:#018x}")
}

fn describe_issue(net: &WalkContext<'_>, src_ep: u32, lid: Lid) -> PairIssue {
    let f = net.f;
    let sp = f.end_ports[src_ep as usize];
    // Re-walk with the same hop table (the mask is folded into it).
    let w = trace_pair(f, &net.forward(), src_ep, lid);
    let (failure, sw, port) = match w.outcome {
        Outcome::Failed {
            failure,
            switch,
            entry,
        } => (failure, switch, entry),
        Outcome::Delivered => (Failure::NoRoute, None, None),
    };
    let dest = f
        .lid_port(lid)
        .map(|p| f.node(f.port(p).node).name.clone())
        .unwrap_or_default();
    PairIssue {
        src_port_id: sp,
        src: f.node(f.port(sp).node).name.clone(),
        src_port: f.port(sp).num,
        dlid: lid,
        dest,
        failure,
        reason: failure.describe(),
        at_switch: sw.map(|n| f.node(n).name.clone()),
        at_guid: sw.map(|n| guid_str(f.node(n).guid)),
        at_port: port,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::rng::Rng;
    use fabric::{LinkId, SwitchIdx, NO_PORT};

    /// Every pair walked alone: the counts `walk_all` must give.
    fn one_by_one(f: &Fabric, r: &Routing, mask: Option<&FaultMask>) -> (u64, Vec<u64>, Vec<u64>) {
        let (mut ok, mut fails, mut hops) = (0u64, vec![0u64; 7], Vec::new());
        for &src in &f.end_ports {
            for &dst in &f.end_ports {
                if src == dst {
                    continue;
                }
                let p = f.port(dst);
                for lid in p.lid..p.lid + (1 << p.lmc) {
                    let w = walk_pair(f, r, mask, src, lid);
                    match w.outcome {
                        Outcome::Delivered => {
                            ok += 1;
                            add_hist(&mut hops, w.sw_hops as usize, 1);
                        }
                        Outcome::Failed { failure, .. } => fails[failure.code() as usize] += 1,
                    }
                }
            }
        }
        (ok, fails, hops)
    }

    /// `walk_all` settles each destination once for every switch (memoised verdicts,
    /// blocks of columns, both cores); walking each pair alone must count the same pairs
    /// delivered, the same failures of each kind and the same hop histogram, on tables with
    /// random broken entries (no route, port 0, ports beyond the count, uncabled ports,
    /// loops, misdeliveries) and under a dead link.
    #[test]
    fn walk_all_counts_what_single_walks_find() {
        for (spec, lmc, seed) in [("torus 3x3 hcas=2", 0u8, 1u64), ("ktree 4 2", 1, 2)] {
            let f = spec
                .parse::<fabric::gen::TopoSpec>()
                .unwrap()
                .generate()
                .unwrap()
                .with_lmc(lmc)
                .unwrap();
            let base = crate::engines::by_name("minhop")
                .unwrap()
                .route(&f, &FaultMask::none(&f), &Default::default())
                .unwrap();
            let mut rng = Rng::new(seed);
            for round in 0..4 {
                let mut r = base.clone();
                let bad = 2 + 6 * round;
                for _ in 0..bad {
                    let s = SwitchIdx(rng.below(f.num_switches() as u64) as u32);
                    let lid = 1 + rng.below(r.max_lid as u64) as usize;
                    let np = f.node(f.switch_node(s)).nports as u64;
                    let port = match rng.below(4) {
                        0 => NO_PORT,
                        1 => (np + 1 + rng.below(3)) as u8,
                        _ => rng.below(np + 1) as u8,
                    };
                    r.lft_of_mut(s)[lid] = port;
                }
                let mut mask = FaultMask::none(&f);
                let inter: Vec<usize> = (0..f.links.len())
                    .filter(|&l| {
                        let k = &f.links[l];
                        f.is_switch(f.port(k.a).node) && f.is_switch(f.port(k.b).node)
                    })
                    .collect();
                mask.fail_link(LinkId(inter[rng.below(inter.len() as u64) as usize] as u32));
                for m in [None, Some(&mask)] {
                    let rep = walk_all(&f, &r, m);
                    let (ok, fails, hops) = one_by_one(&f, &r, m);
                    let what = format!("{spec} round {round} mask {}", m.is_some());
                    assert_eq!(rep.pairs_ok, ok, "{what}");
                    for k in Failure::ALL {
                        assert_eq!(rep.failed(k), fails[k.code() as usize], "{what}: {k:?}");
                    }
                    assert_eq!(rep.pairs_checked, ok + fails.iter().sum::<u64>(), "{what}");
                    assert_eq!(rep.hops_all, hops, "{what}");
                    if round > 0 {
                        assert!(!rep.all_ok(), "{what}: broken entries break pairs");
                    }
                }
            }
        }
    }
}
