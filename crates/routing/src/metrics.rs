//! Route metrics: hop histograms, per-link route counts (overall and per link class), SLs and
//! VLs in use, and effective bisection bandwidth (EBB) with ORCS semantics.
//!
//! **Definitions** (chosen to match `shared/tools/lft_stats.py` and `orcs_ebb.py`):
//! - Pairs for hops and loads: (source end port, destination end port), destination = the
//!   end port's **base LID** only, source ≠ destination. `sw_hops` = switch-to-switch channels.
//! - Link load of a directed switch-to-switch channel = number of such delivered pairs routed
//!   over it. Statistics run over **all** live directed switch-to-switch channels, unused ones
//!   counted as 0 (population standard deviation).
//! - Link classes: the generator's `TopoHints::link_class` when present (split into up/down
//!   when tree levels are known too), else tree level pairs `L{a}->L{b}` from
//!   `TopoHints::level` (0 = roots), else one class `all`.
//! - EBB (ORCS `hist_acc_band`): per run, a random perfect matching of the hosts (the live end
//!   ports; an odd one out is dropped); `bisect` = one flow per matched pair, shuffled[2i+1] →
//!   `shuffled[2i]`; `bisect_fb_sym` = both directions. Route = injection channel, LFT hops to the
//!   destination's base LID, ejection channel. `c(e)` = flows using channel `e`; a flow's
//!   bandwidth is `1 / max c(e)` along its route; the run's value is the mean over flows; EBB
//!   is the mean over runs. Random patterns use [`fabric::rng::Rng`] (one seed per run drawn
//!   from the master seed), so they are reproducible but not the same draws as Python's;
//!   explicit pattern files ([`parse_pattern`]) give identical per-run values.

use crate::cdg;
use crate::forward::{Control, WalkEnd};
use crate::tables::Routing;
use crate::walk::{self, Failure, WalkContext, WalkOptions, WalkReport, NONE};
use fabric::rng::Rng;
use fabric::{Fabric, FaultMask, Lid};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// min / max / mean / population stddev of a set of link loads.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadStats {
    pub links: usize,
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stddev: f64,
    pub unused: usize,
}

impl LoadStats {
    pub fn of(loads: &[u64]) -> LoadStats {
        if loads.is_empty() {
            return LoadStats::default();
        }
        let n = loads.len() as f64;
        let mean = loads.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = loads
            .iter()
            .map(|&x| (x as f64 - mean) * (x as f64 - mean))
            .sum::<f64>()
            / n;
        LoadStats {
            links: loads.len(),
            min: loads.iter().copied().min().unwrap_or(0),
            max: loads.iter().copied().max().unwrap_or(0),
            mean,
            stddev: var.sqrt(),
            unused: loads.iter().filter(|&&x| x == 0).count(),
        }
    }
}

/// Load statistics of one link class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassLoad {
    pub class: String,
    #[serde(flatten)]
    pub stats: LoadStats,
}

/// Static route metrics of a routing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouteMetrics {
    /// (source, destination end port) pairs walked, base LIDs.
    pub pairs: u64,
    pub pairs_ok: u64,
    /// `hop_histogram[h]` = delivered pairs (base LIDs) with `h` switch-to-switch hops.
    pub hop_histogram: Vec<u64>,
    /// The same over every destination LID (LMC virtual LIDs included).
    pub hop_histogram_all_lids: Vec<u64>,
    pub sw_hops_avg: f64,
    pub sw_hops_max: usize,
    /// Over all live directed switch-to-switch channels.
    pub link_load: LoadStats,
    /// Per link class, sorted by class name.
    pub classes: Vec<ClassLoad>,
    pub sls_used: Vec<u8>,
    pub vls_used: Vec<u8>,
    pub max_vls_per_channel: usize,
}

/// Per node: switch hops from the nearest switch with a live end port (0 for such switches;
/// `u32::MAX` when none is reachable or for non-switches). Breadth-first over live links.
/// Service CAs (SHARP aggregation nodes, on every switch of real trees) do not count unless
/// there is nothing else.
fn distance_from_end_switches(f: &Fabric, mask: Option<&FaultMask>) -> Vec<u32> {
    let mut dist = vec![u32::MAX; f.nodes.len()];
    let mut queue = std::collections::VecDeque::new();
    let service = |p: fabric::PortId| fabric::is_service_ca(&f.node(f.port(p).node).desc);
    let only_service = f.end_ports.iter().all(|&p| service(p));
    for &p in &f.end_ports {
        if !only_service && service(p) {
            continue;
        }
        if let Some(r) = f.remote(p) {
            let n = f.port(r).node;
            let live = f
                .out_channel(p)
                .is_some_and(|c| mask.is_none_or(|m| m.channel_alive(f, c)));
            if f.is_switch(n) && live && dist[n.idx()] != 0 {
                dist[n.idx()] = 0;
                queue.push_back(n);
            }
        }
    }
    while let Some(n) = queue.pop_front() {
        for p in f.node_ports(n) {
            let Some(r) = f.remote(p) else { continue };
            let m = f.port(r).node;
            let live = f
                .out_channel(p)
                .is_some_and(|c| mask.is_none_or(|k| k.channel_alive(f, c)));
            if f.is_switch(m) && live && dist[m.idx()] == u32::MAX {
                dist[m.idx()] = dist[n.idx()] + 1;
                queue.push_back(m);
            }
        }
    }
    dist
}

/// Per directed switch-to-switch channel (live under `mask`): (channel index, class name).
pub fn sw_channel_classes(f: &Fabric, mask: Option<&FaultMask>) -> Vec<(usize, String)> {
    let h = &f.hints;
    let level = |n: fabric::NodeId| h.level.get(n.idx()).copied().unwrap_or(u32::MAX);
    let has_levels = !h.level.is_empty();
    let has_classes = !h.link_class.is_empty();
    let dist = if has_levels || has_classes {
        Vec::new()
    } else {
        distance_from_end_switches(f, mask)
    };
    let mut out = Vec::new();
    for (l, link) in f.links.iter().enumerate() {
        let na = f.port(link.a).node;
        let nb = f.port(link.b).node;
        if !f.is_switch(na) || !f.is_switch(nb) {
            continue;
        }
        for (c, from, to) in [(2 * l, na, nb), (2 * l + 1, nb, na)] {
            if mask.is_some_and(|m| !m.channel_alive(f, fabric::ChannelId(c as u32))) {
                continue;
            }
            let (lf, lt) = (level(from), level(to));
            let name = if has_classes {
                let ci = h.link_class.get(l).copied().unwrap_or(u16::MAX);
                let base = h
                    .link_class_names
                    .get(ci as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("class{ci}"));
                if has_levels && lf != u32::MAX && lt != u32::MAX && lf != lt {
                    format!("{base} {}", if lt < lf { "up" } else { "down" })
                } else {
                    base
                }
            } else if has_levels {
                let s = |x: u32| {
                    if x == u32::MAX {
                        "?".to_string()
                    } else {
                        x.to_string()
                    }
                };
                format!("L{}->L{}", s(lf), s(lt))
            } else {
                // No hints (a fabric read from a file): classes by distance from the switches
                // that carry end ports (0 = such a switch): `up 0->1`, `down 1->0`, `across 0`.
                let (df, dt) = (dist[from.idx()], dist[to.idx()]);
                let s = |x: u32| {
                    if x == u32::MAX {
                        "?".to_string()
                    } else {
                        x.to_string()
                    }
                };
                match df.cmp(&dt) {
                    std::cmp::Ordering::Less => format!("up {}->{}", s(df), s(dt)),
                    std::cmp::Ordering::Greater => format!("down {}->{}", s(df), s(dt)),
                    std::cmp::Ordering::Equal => format!("across {}", s(df)),
                }
            };
            out.push((c, name));
        }
    }
    // Every switch carries end ports (a torus, a Dragonfly): distances from them say nothing,
    // so one class, not `across 0`.
    if !out.is_empty() && out.iter().all(|(_, n)| n == "across 0") {
        for (_, n) in &mut out {
            *n = "switch to switch".to_string();
        }
    }
    out
}

/// Overall and per-class statistics of per-channel loads (indexed by `ChannelId`).
pub fn link_load_stats(
    f: &Fabric,
    mask: Option<&FaultMask>,
    channel_load: &[u64],
) -> (LoadStats, Vec<ClassLoad>) {
    let chans = sw_channel_classes(f, mask);
    let load = |c: usize| channel_load.get(c).copied().unwrap_or(0);
    let all: Vec<u64> = chans.iter().map(|&(c, _)| load(c)).collect();
    let mut by: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (c, name) in &chans {
        by.entry(name.as_str()).or_default().push(load(*c));
    }
    (
        LoadStats::of(&all),
        by.into_iter()
            .map(|(k, v)| ClassLoad {
                class: k.to_string(),
                stats: LoadStats::of(&v),
            })
            .collect(),
    )
}

fn hist_avg_max(h: &[u64]) -> (f64, usize) {
    let n: u64 = h.iter().sum();
    let s: u64 = h.iter().enumerate().map(|(i, &c)| i as u64 * c).sum();
    let max = h.iter().rposition(|&c| c > 0).unwrap_or(0);
    (if n > 0 { s as f64 / n as f64 } else { 0.0 }, max)
}

/// Walks all pairs and builds the CDG to report hops, link loads and SL/VL usage.
pub fn route_metrics(f: &Fabric, r: &Routing, mask: Option<&FaultMask>) -> RouteMetrics {
    let w = walk::walk_all_with(
        f,
        r,
        mask,
        WalkOptions {
            max_examples: 0,
            loads: true,
        },
    );
    let g = cdg::build_cdg(f, r, mask);
    metrics_from(f, mask, &w, &g)
}

/// Metrics from an existing walk (with loads) and CDG.
pub fn metrics_from(
    f: &Fabric,
    mask: Option<&FaultMask>,
    w: &WalkReport,
    g: &cdg::Cdg,
) -> RouteMetrics {
    let (overall, classes) = link_load_stats(f, mask, &w.channel_load);
    let (avg, max) = hist_avg_max(&w.hops_base);
    let base_ok: u64 = w.hops_base.iter().sum();
    let bits = |m: u16| (0..16u8).filter(|&i| m >> i & 1 == 1).collect::<Vec<_>>();
    RouteMetrics {
        pairs: base_pairs(f, mask),
        pairs_ok: base_ok,
        hop_histogram: w.hops_base.clone(),
        hop_histogram_all_lids: w.hops_all.clone(),
        sw_hops_avg: avg,
        sw_hops_max: max,
        link_load: overall,
        classes,
        sls_used: bits(g.sls_used),
        vls_used: bits(g.vls_used),
        max_vls_per_channel: g.max_vls_per_channel,
    }
}

/// Ordered pairs of distinct live end ports.
fn base_pairs(f: &Fabric, mask: Option<&FaultMask>) -> u64 {
    let n = f
        .end_ports
        .iter()
        .filter(|&&p| {
            let node = f.port(p).node;
            match (mask, f.out_channel(p)) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(m), Some(c)) => !m.node_dead(node) && m.channel_alive(f, c),
            }
        })
        .count() as u64;
    n * n.saturating_sub(1)
}

/// Errors of the EBB computation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricsError {
    /// A flow of the pattern cannot be routed.
    Unroutable {
        src: String,
        dest: String,
        dlid: Lid,
        failure: Failure,
    },
    /// A pattern-file line could not be understood.
    Pattern { line: usize, msg: String },
    /// Fewer than two hosts.
    TooFewHosts,
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricsError::Unroutable {
                src,
                dest,
                dlid,
                failure,
            } => write!(
                f,
                "flow {src} -> {dest} (LID {dlid}) cannot be routed: {}",
                failure.describe()
            ),
            MetricsError::Pattern { line, msg } => write!(f, "pattern line {line}: {msg}"),
            MetricsError::TooFewHosts => f.write_str("fewer than two live end ports"),
        }
    }
}
impl std::error::Error for MetricsError {}

/// ORCS pattern kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EbbPattern {
    /// Random perfect matching, one direction per pair (ORCS `bisect` as GCC compiles it).
    Bisect,
    /// Random perfect matching, both directions.
    BisectFbSym,
}

impl EbbPattern {
    pub fn name(self) -> &'static str {
        match self {
            EbbPattern::Bisect => "bisect",
            EbbPattern::BisectFbSym => "bisect_fb_sym",
        }
    }
}

/// Options of [`ebb`].
#[derive(Clone, Copy, Debug)]
pub struct EbbOptions {
    pub pattern: EbbPattern,
    pub runs: usize,
    pub seed: u64,
}

/// Effective bisection bandwidth over a set of runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EbbReport {
    pub pattern: String,
    pub hosts: usize,
    pub runs: usize,
    pub mean: f64,
    /// Population standard deviation of the per-run values.
    pub sd: f64,
    pub min: f64,
    pub max: f64,
    pub per_run: Vec<f64>,
    /// (max congestion w, flows), over all runs.
    pub maxcong_hist: Vec<(u32, u64)>,
}

/// A flow between two end ports (indices into `Fabric::end_ports`).
pub type Flow = (u32, u32);

/// Appends the route's channel indices; destination = the base LID of `dst`.
fn route_into(
    net: &WalkContext<'_>,
    src: u32,
    dst: u32,
    buf: &mut Vec<u32>,
) -> Result<(), Failure> {
    let f = net.f;
    let dp = f.end_ports[dst as usize];
    if !net.ep_live(src) || !net.ep_live(dst) {
        return Err(Failure::DeadChannel);
    }
    buf.push(net.ep_chan(src).0);
    let end = net.forward().walk_pair(src, f.port(dp).lid, dp, |step| {
        buf.push(step.ch.0);
        Control::Continue
    });
    match end {
        WalkEnd::Delivered { .. } => Ok(()),
        WalkEnd::Broken(b) => Err(b.failure),
        WalkEnd::Stopped => unreachable!("the visitor never stops"),
    }
}

struct RunScratch {
    cnt: Vec<u32>,
    buf: Vec<u32>,
    ends: Vec<usize>,
}

impl RunScratch {
    fn new(f: &Fabric) -> Self {
        RunScratch {
            cnt: vec![0; f.links.len() * 2],
            buf: Vec::new(),
            ends: Vec::new(),
        }
    }
}

/// One run: per-flow max congestion, returns (value, histogram of w).
fn run_value(
    net: &WalkContext<'_>,
    flows: &[Flow],
    sc: &mut RunScratch,
) -> Result<(f64, Vec<(u32, u64)>), MetricsError> {
    sc.buf.clear();
    sc.ends.clear();
    for &(s, d) in flows {
        if let Err(k) = route_into(net, s, d, &mut sc.buf) {
            let f = net.f;
            let name = |e: u32| {
                let p = f.end_ports[e as usize];
                f.node(f.port(p).node).name.clone()
            };
            return Err(MetricsError::Unroutable {
                src: name(s),
                dest: name(d),
                dlid: f.port(f.end_ports[d as usize]).lid,
                failure: k,
            });
        }
        sc.ends.push(sc.buf.len());
    }
    for &c in &sc.buf {
        sc.cnt[c as usize] += 1;
    }
    let mut tot = 0.0f64;
    let mut hist: BTreeMap<u32, u64> = BTreeMap::new();
    let mut start = 0;
    for &end in &sc.ends {
        let w = sc.buf[start..end]
            .iter()
            .map(|&c| sc.cnt[c as usize])
            .max()
            .unwrap_or(1)
            .max(1);
        *hist.entry(w).or_default() += 1;
        tot += 1.0 / w as f64;
        start = end;
    }
    for &c in &sc.buf {
        sc.cnt[c as usize] = 0;
    }
    let v = if flows.is_empty() {
        0.0
    } else {
        tot / flows.len() as f64
    };
    Ok((v, hist.into_iter().collect()))
}

fn summarize(pattern: &str, hosts: usize, res: Vec<(f64, Vec<(u32, u64)>)>) -> EbbReport {
    let per_run: Vec<f64> = res.iter().map(|x| x.0).collect();
    let n = per_run.len().max(1) as f64;
    let mut sum = 0.0;
    for &v in &per_run {
        sum += v;
    }
    let mean = sum / n;
    let mut ss = 0.0;
    for &v in &per_run {
        ss += (v - mean) * (v - mean);
    }
    let mut hist: BTreeMap<u32, u64> = BTreeMap::new();
    for (_, h) in &res {
        for &(w, c) in h {
            *hist.entry(w).or_default() += c;
        }
    }
    EbbReport {
        pattern: pattern.to_string(),
        hosts,
        runs: per_run.len(),
        mean,
        sd: (ss / n).sqrt(),
        min: per_run.iter().copied().reduce(f64::min).unwrap_or(0.0),
        max: per_run.iter().copied().reduce(f64::max).unwrap_or(0.0),
        per_run,
        maxcong_hist: hist.into_iter().collect(),
    }
}

/// The flows of one random bisection of `hosts` (see the module documentation).
pub fn bisect_flows(hosts: &[u32], rng: &mut Rng, pattern: EbbPattern) -> Vec<Flow> {
    let mut order = hosts.to_vec();
    rng.shuffle(&mut order);
    let n = order.len() - order.len() % 2;
    let mut flows = Vec::with_capacity(n);
    for i in (0..n).step_by(2) {
        let (a, b) = (order[i], order[i + 1]);
        flows.push((b, a));
        if pattern == EbbPattern::BisectFbSym {
            flows.push((a, b));
        }
    }
    flows
}

fn hosts_of(net: &WalkContext<'_>) -> Vec<u32> {
    (0..net.f.end_ports.len() as u32)
        .filter(|&e| net.ep_live(e))
        .collect()
}

/// EBB over random bisections.
pub fn ebb(
    f: &Fabric,
    r: &Routing,
    mask: Option<&FaultMask>,
    opts: EbbOptions,
) -> Result<EbbReport, MetricsError> {
    let net = WalkContext::new(f, r, mask);
    let hosts = hosts_of(&net);
    if hosts.len() < 2 {
        return Err(MetricsError::TooFewHosts);
    }
    let mut master = Rng::new(opts.seed);
    let seeds: Vec<u64> = (0..opts.runs).map(|_| master.next_u64()).collect();
    let res: Result<Vec<_>, _> = seeds
        .par_iter()
        .map_init(
            || RunScratch::new(f),
            |sc, &seed| {
                let flows = bisect_flows(&hosts, &mut Rng::new(seed), opts.pattern);
                run_value(&net, &flows, sc)
            },
        )
        .collect();
    Ok(summarize(opts.pattern.name(), hosts.len(), res?))
}

/// EBB over explicit runs of flows (e.g. from [`parse_pattern`]).
pub fn ebb_flows(
    f: &Fabric,
    r: &Routing,
    mask: Option<&FaultMask>,
    runs: &[Vec<Flow>],
) -> Result<EbbReport, MetricsError> {
    let net = WalkContext::new(f, r, mask);
    let hosts = hosts_of(&net).len();
    let res: Result<Vec<_>, _> = runs
        .par_iter()
        .map_init(
            || RunScratch::new(f),
            |sc, flows| run_value(&net, flows, sc),
        )
        .collect();
    Ok(summarize("file", hosts, res?))
}

/// Parses a pattern file: one flow `SRC DST` per line; runs are separated by blank lines or
/// lines reading `run`; `#` starts a comment. An endpoint is a LID (decimal or `0x` hex; any
/// LID of the end port), `@N` (index into `Fabric::end_ports`), or a node name (its
/// lowest-numbered end port). Empty runs are dropped.
pub fn parse_pattern(f: &Fabric, text: &str) -> Result<Vec<Vec<Flow>>, MetricsError> {
    let mut by_name: rustc_hash::FxHashMap<&str, u32> = rustc_hash::FxHashMap::default();
    for (i, &p) in f.end_ports.iter().enumerate() {
        by_name
            .entry(f.node(f.port(p).node).name.as_str())
            .or_insert(i as u32);
    }
    let mut ep_of_port = vec![NONE; f.ports.len()];
    for (i, &p) in f.end_ports.iter().enumerate() {
        ep_of_port[p.idx()] = i as u32;
    }
    let endpoint = |tok: &str, line: usize| -> Result<u32, MetricsError> {
        let err = |msg: String| MetricsError::Pattern { line, msg };
        if let Some(ix) = tok.strip_prefix('@') {
            let i: u32 = ix
                .parse()
                .map_err(|_| err(format!("bad end-port index {tok:?}")))?;
            if (i as usize) < f.end_ports.len() {
                return Ok(i);
            }
            return Err(err(format!("end-port index {i} out of range")));
        }
        let lid = if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
            u32::from_str_radix(h, 16).ok()
        } else if tok.bytes().all(|b| b.is_ascii_digit()) {
            tok.parse().ok()
        } else {
            None
        };
        if let Some(lid) = lid {
            let p = u16::try_from(lid)
                .ok()
                .and_then(|l| f.lid_port(l))
                .ok_or_else(|| err(format!("LID {tok} is not assigned")))?;
            let e = ep_of_port[p.idx()];
            if e == NONE {
                return Err(err(format!("LID {tok} is not an end port's")));
            }
            return Ok(e);
        }
        by_name
            .get(tok)
            .copied()
            .ok_or_else(|| err(format!("unknown end node {tok:?}")))
    };
    let mut runs: Vec<Vec<Flow>> = vec![Vec::new()];
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line == "run" {
            if raw.trim_start().starts_with('#') {
                continue;
            }
            if runs.last().is_some_and(|r| !r.is_empty()) {
                runs.push(Vec::new());
            }
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
            return Err(MetricsError::Pattern {
                line: i + 1,
                msg: "expected two endpoints".into(),
            });
        };
        let flow = (endpoint(a, i + 1)?, endpoint(b, i + 1)?);
        if let Some(r) = runs.last_mut() {
            r.push(flow);
        }
    }
    runs.retain(|r| !r.is_empty());
    Ok(runs)
}
