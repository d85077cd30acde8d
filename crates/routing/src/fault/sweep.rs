//! Fault sweeps: many scenarios of N inter-switch link faults, each applied in sequence by
//! RFTR (and, for comparison, handled by full reconfiguration), with verdicts per scenario.
//!
//! The scenario space is indexed so that shards can run on separate machines:
//! - exhaustive: scenario `i` is the `i`-th N-combination of the fabric's inter-switch links in
//!   lexicographic order (combinatorial number system), its faults applied in an order drawn
//!   from a generator seeded with (`EXHAUSTIVE_ORDER_SEED`, i);
//! - sampled: scenario `i` is drawn from a generator seeded with (seed, i): N distinct links in
//!   the drawn order.
//!
//! Each fault's repair is checked as the sweep's [`CheckMode`] says: the full check of the
//! migration union (the walks before the fault and after; it lists every selected pair of
//! both states, 12 bytes a pair), or the incremental tracker of fault sessions (one whole
//! walk at the start, copied for each scenario; the union of every walk of the scenario so
//! far), for fabrics whose pair lists do not fit in memory.
//!
//! Shard `I/N` takes the scenarios whose index is `I mod N`. Only scenarios that keep the
//! switch graph connected count; the others are skipped (and counted as skipped). Results are
//! produced in index order, identical whatever the thread count.

use super::reconf::{full_reconfiguration, Reconfig};
use super::rftr::Rftr;
use super::tracker::Tracker;
use super::verify::{check_tables, Snapshot};
use super::CheckMode;
use crate::cdg;
use crate::engines::{Engine, RouteOptions};
use crate::tables::Routing;
use fabric::link_name;
use fabric::rng::Rng;
use fabric::Fault;
use fabric::{Fabric, FaultMask, LinkId};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How scenarios are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenarios {
    Exhaustive,
    Samples { count: u64, seed: u64 },
}

/// Sweep parameters.
#[derive(Clone, Copy, Debug)]
pub struct SweepSpec {
    pub faults: usize,
    pub scenarios: Scenarios,
    /// (index, count) of this shard.
    pub shard: (u64, u64),
    /// Also evaluate full reconfiguration (slower).
    pub full: bool,
}

/// RFTR's verdict on one scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RftrVerdict {
    /// Every remaining pair routed after every fault.
    pub supported: bool,
    pub unsupported_pairs: u64,
    pub sls: u8,
    pub virtual_lids: u32,
    pub transitions: u8,
    /// The migration-union CDG was acyclic after every fault.
    pub deadlock_free: bool,
}

/// Full reconfiguration's verdict on the same scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullVerdict {
    pub supported: bool,
    pub deadlock_free: bool,
    pub changed_pairs: u64,
    pub lft_blocks: u64,
}

/// One JSON line of a sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub id: u64,
    /// The failed links as `switch/port-switch/port` names, in application order.
    pub faults: Vec<String>,
    pub supported: bool,
    pub sls: u8,
    pub virtual_lids: u32,
    pub transitions: u8,
    pub deadlock_free: bool,
    pub unsupported_pairs: u64,
    /// What RFTR pushes for the whole scenario: sources given a new (DLID, SL) (a repaired
    /// path that keeps its DLID and SL needs none), and the 64-LID LFT blocks it changes
    /// (lines written before these existed read as 0).
    #[serde(default)]
    pub source_updates: u64,
    #[serde(default)]
    pub lft_blocks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<FullVerdict>,
}

/// The inter-switch links of a fabric (the fault candidates), in link order.
pub fn switch_links(f: &Fabric) -> Vec<LinkId> {
    (0..f.links.len() as u32)
        .map(LinkId)
        .filter(|&l| {
            let k = f.link(l);
            let (a, b) = (f.port(k.a).node, f.port(k.b).node);
            a != b && f.is_switch(a) && f.is_switch(b)
        })
        .collect()
}

/// Binomial coefficient, saturating at u64::MAX.
pub fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut r: u128 = 1;
    for i in 0..k {
        r = r * (n - i) as u128 / (i + 1) as u128;
        if r > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    r as u64
}

/// The `idx`-th k-combination of 0..n in lexicographic order.
pub fn unrank_combination(n: u64, k: u64, mut idx: u64, out: &mut Vec<u64>) {
    out.clear();
    let mut start = 0u64;
    for pos in 0..k {
        let rest = k - pos - 1;
        let mut c = start;
        loop {
            let cnt = binomial(n - c - 1, rest);
            if idx < cnt {
                break;
            }
            idx -= cnt;
            c += 1;
        }
        out.push(c);
        start = c + 1;
    }
}

/// Number of scenarios in the space (before the connectivity filter).
pub fn space_size(f: &Fabric, spec: &SweepSpec) -> u64 {
    match spec.scenarios {
        Scenarios::Exhaustive => binomial(switch_links(f).len() as u64, spec.faults as u64),
        Scenarios::Samples { count, .. } => count,
    }
}

/// True when removing the `dead` links splits no component of the switch graph (a fabric
/// read as two subnets stays two; a fault that cuts one in two disconnects it).
fn connected(f: &Fabric, dead: &[LinkId]) -> bool {
    let mut mask = FaultMask::none(f);
    for &l in dead {
        mask.fail_link(l);
    }
    super::switch_components(f, &mask).1 <= super::switch_components(f, &FaultMask::none(f)).1
}

/// Shared inputs of a sweep.
pub struct SweepContext<'f> {
    pub fabric: &'f Fabric,
    /// RFTR state on the fault-free fabric (cloned per scenario).
    pub start: Rftr<'f>,
    /// What the first fault's check starts from (taken once by [`SweepContext::new`]).
    pub start_check: CheckFrom<'f>,
    pub base: Routing,
    pub engine: &'f dyn Engine,
    pub opts: RouteOptions,
}

/// What a scenario's next fault is checked against: the full check's tables and pairs of
/// the state before, or the incremental tracker of the scenario so far.
#[derive(Clone)]
pub enum CheckFrom<'f> {
    Full(Snapshot),
    Incremental(Box<Tracker<'f>>),
}

impl std::fmt::Debug for CheckFrom<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckFrom::Full(s) => write!(f, "CheckFrom::Full({} pairs)", s.pairs.len()),
            CheckFrom::Incremental(t) => write!(f, "CheckFrom::Incremental({t:?})"),
        }
    }
}

impl<'f> SweepContext<'f> {
    /// A sweep from `start`, each fault checked as `mode` says.
    pub fn new(
        fabric: &'f Fabric,
        start: Rftr<'f>,
        base: Routing,
        engine: &'f dyn Engine,
        opts: RouteOptions,
        mode: CheckMode,
    ) -> Self {
        let start_check = match mode {
            CheckMode::Full => CheckFrom::Full(Snapshot::of(&start)),
            CheckMode::Incremental => CheckFrom::Incremental(Box::new(Tracker::start(&start))),
        };
        SweepContext {
            fabric,
            start,
            start_check,
            base,
            engine,
            opts,
        }
    }
}

impl<'f> SweepContext<'f> {
    /// A sweep from a fault session's fault-free state (before its first fault).
    pub fn of(s: &super::Session<'f>, mode: CheckMode) -> Self {
        Self::new(
            s.fabric(),
            s.rftr().clone(),
            s.base().clone(),
            s.engine(),
            s.options().clone(),
            mode,
        )
    }
}

impl std::fmt::Debug for SweepContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweepContext").finish_non_exhaustive()
    }
}

/// Seed of the fault order within exhaustive scenarios.
pub const EXHAUSTIVE_ORDER_SEED: u64 = 0x005E_ED0F_0DE5;

/// The random stream of scenario `id`: independent of every other scenario, so shards and
/// thread counts see the same faults.
fn scenario_rng(seed: u64, id: u64) -> Rng {
    Rng::new(seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The faults of scenario `id`, in the order they are applied.
pub fn scenario_faults(f: &Fabric, links: &[LinkId], spec: &SweepSpec, id: u64) -> Vec<LinkId> {
    match spec.scenarios {
        Scenarios::Exhaustive => {
            // Every combination once, applied in a seeded random order: RFTR depends on the
            // order of the faults, and ascending link order (clustered in the numbering)
            // would flatter it. Samples are drawn in random order too, so both modes
            // estimate the same thing.
            let mut idx = Vec::new();
            unrank_combination(links.len() as u64, spec.faults as u64, id, &mut idx);
            let mut rng = scenario_rng(EXHAUSTIVE_ORDER_SEED, id);
            rng.shuffle(&mut idx);
            idx.into_iter().map(|i| links[i as usize]).collect()
        }
        Scenarios::Samples { seed, .. } => {
            let mut rng = scenario_rng(seed, id);
            let mut chosen: Vec<LinkId> = Vec::with_capacity(spec.faults);
            let n = spec.faults.min(links.len());
            while chosen.len() < n {
                let l = links[rng.below(links.len() as u64) as usize];
                if !chosen.contains(&l) {
                    chosen.push(l);
                }
            }
            let _ = f;
            chosen
        }
    }
}

/// The state after some of a scenario's faults: RFTR, what the next fault's check starts
/// from (not kept after the last fault), and the verdict so far.
struct Level<'f> {
    rftr: Rftr<'f>,
    kept: Option<CheckFrom<'f>>,
    /// Every remaining pair delivered and the union CDG acyclic after every fault so far.
    supported: bool,
    deadlock_free: bool,
    unsupported_pairs: u64,
}

/// What one fault's check starts from: a state's tables and pairs, shared by the
/// scenarios that continue from it, or a tracker of its own.
enum Before<'a, 'f> {
    Full(&'a Snapshot),
    Incremental(Box<Tracker<'f>>),
}

impl<'a, 'f> Before<'a, 'f> {
    /// What continuing from `k` starts from, leaving `k` intact.
    fn of(k: &'a CheckFrom<'f>) -> Self {
        match k {
            CheckFrom::Full(s) => Before::Full(s),
            CheckFrom::Incremental(t) => Before::Incremental(t.clone()),
        }
    }
}

/// Applies fault `l` to `r` (whose check starts from `before`) and checks the result: the
/// new walks together with the surviving old ones.
fn step<'f>(
    ctx: &SweepContext<'f>,
    mut r: Rftr<'f>,
    before: Before<'_, 'f>,
    (supported, deadlock_free, unsupported): (bool, bool, u64),
    l: LinkId,
    keep: bool,
) -> Level<'f> {
    let rep = r.apply(Fault::Link(l));
    let (undelivered, dl_free, kept) = match before {
        Before::Full(before) => {
            // The selected pairs are listed once: checked now, kept for the next fault's
            // union.
            let pairs = r.selected_pairs();
            let chk = check_tables(
                ctx.fabric,
                &r.mask,
                &r.routing,
                &pairs,
                Some((&before.routing, &before.pairs[..])),
            );
            let kept = keep.then(|| {
                CheckFrom::Full(Snapshot {
                    routing: r.routing.clone(),
                    pairs,
                })
            });
            (chk.undelivered, chk.deadlock_free, kept)
        }
        Before::Incremental(mut t) => {
            let chk = t.step(&r, Fault::Link(l));
            (
                chk.undelivered,
                chk.deadlock_free,
                keep.then_some(CheckFrom::Incremental(t)),
            )
        }
    };
    Level {
        rftr: r,
        kept,
        supported: supported && undelivered == 0,
        deadlock_free: deadlock_free && dl_free,
        unsupported_pairs: unsupported + rep.unsupported_pairs,
    }
}

/// Applies fault `l` after `parent` (None: the fault-free start), leaving `parent` intact.
fn step_after<'f>(
    ctx: &SweepContext<'f>,
    parent: Option<&Level<'f>>,
    l: LinkId,
    keep: bool,
) -> Level<'f> {
    match parent {
        None => step(
            ctx,
            ctx.start.clone(),
            Before::of(&ctx.start_check),
            (true, true, 0),
            l,
            keep,
        ),
        Some(p) => step(
            ctx,
            p.rftr.clone(),
            Before::of(p.kept.as_ref().expect("kept below the last fault")),
            (p.supported, p.deadlock_free, p.unsupported_pairs),
            l,
            keep,
        ),
    }
}

/// Applies fault `l` after `parent`, reusing its state instead of copying it.
fn step_from<'f>(ctx: &SweepContext<'f>, parent: Level<'f>, l: LinkId, keep: bool) -> Level<'f> {
    let acc = (
        parent.supported,
        parent.deadlock_free,
        parent.unsupported_pairs,
    );
    match parent.kept.expect("kept below the last fault") {
        CheckFrom::Full(s) => step(ctx, parent.rftr, Before::Full(&s), acc, l, keep),
        CheckFrom::Incremental(t) => step(ctx, parent.rftr, Before::Incremental(t), acc, l, keep),
    }
}

/// The scenario's line once all its faults are applied (`last` is the final level).
fn finish(
    ctx: &SweepContext<'_>,
    id: u64,
    faults: &[LinkId],
    last: &Level<'_>,
    full: bool,
) -> ScenarioResult {
    let f = ctx.fabric;
    let full = full.then(|| {
        let mut mask = FaultMask::none(f);
        for &l in faults {
            mask.fail_link(l);
        }
        match full_reconfiguration(f, ctx.engine, &ctx.opts, &mask, &ctx.base) {
            Ok(Reconfig {
                routing,
                report: rep,
            }) => {
                let chk = cdg::check(f, &routing, Some(&mask));
                FullVerdict {
                    // a scenario that splits the fabric is skipped, so pairs cut off here
                    // were apart before any fault (a file holding two subnets)
                    supported: rep.unrouted_pairs == rep.disconnected_pairs,
                    deadlock_free: chk.deadlock_free,
                    changed_pairs: rep.changed_pairs,
                    lft_blocks: rep.delta.lft_blocks as u64,
                }
            }
            Err(_) => FullVerdict::default(),
        }
    });
    let r = &last.rftr;
    ScenarioResult {
        id,
        faults: faults.iter().map(|&l| link_name(f, l)).collect(),
        supported: last.supported && last.unsupported_pairs == 0,
        sls: r.sls_used(),
        virtual_lids: r.max_virtual_lids(),
        transitions: r.max_transitions(),
        deadlock_free: last.deadlock_free,
        unsupported_pairs: last.unsupported_pairs,
        source_updates: r.delta.sources.len() as u64,
        lft_blocks: r.delta.counts().lft_blocks as u64,
        full,
    }
}

/// Evaluates one scenario (at least one fault); None when its faults disconnect the fabric.
pub fn evaluate(
    ctx: &SweepContext<'_>,
    id: u64,
    faults: &[LinkId],
    full: bool,
) -> Option<ScenarioResult> {
    if faults.is_empty() || !connected(ctx.fabric, faults) {
        return None;
    }
    let mut level = step_after(ctx, None, faults[0], faults.len() > 1);
    for (i, &l) in faults.iter().enumerate().skip(1) {
        level = step_from(ctx, level, l, i + 1 < faults.len());
    }
    Some(finish(ctx, id, faults, &level, full))
}

/// Evaluates scenarios whose fault sequences are sorted, so that neighbours share prefixes:
/// the state after a prefix that the next scenario shares is kept and copied for each
/// continuation; a state nobody needs afterwards is moved into the next step, not copied.
/// Each result is what [`evaluate`] gives for the same scenario (the same steps on the same
/// states). `seqs` holds `n` faults per scenario; returns (position in `seqs`, result).
fn evaluate_sorted(
    ctx: &SweepContext<'_>,
    seqs: &[LinkId],
    n: usize,
    items: &[(usize, u64)],
    full: bool,
) -> Vec<(usize, ScenarioResult)> {
    let seq = |i: usize| &seqs[items[i].0 * n..(items[i].0 + 1) * n];
    // `stack[d - 1]` is the state after the first d faults of the current scenario, for
    // d ≤ the prefix it shares with the next one; deeper states are carried in `cur`.
    let mut stack: Vec<Level<'_>> = Vec::with_capacity(n);
    let mut out = Vec::with_capacity(items.len());
    for (i, &(pos, id)) in items.iter().enumerate() {
        let fs = seq(i);
        let need = match items.get(i + 1) {
            Some(_) => fs
                .iter()
                .zip(seq(i + 1))
                .take_while(|(a, b)| a == b)
                .count(),
            None => 0,
        };
        let base = stack.len();
        let mut cur: Option<Level<'_>> = None;
        if base > need {
            cur = stack.pop();
            stack.truncate(need);
        }
        for (k, &l) in fs.iter().enumerate().skip(base) {
            let keep_snapshot = k + 1 < n;
            let level = match cur.take() {
                Some(c) => step_from(ctx, c, l, keep_snapshot),
                None => step_after(ctx, stack.last(), l, keep_snapshot),
            };
            if k < need {
                stack.push(level);
            } else {
                cur = Some(level);
            }
        }
        let last = cur.as_ref().unwrap_or_else(|| &stack[n - 1]);
        out.push((pos, finish(ctx, id, fs, last, full)));
    }
    out
}

/// Progress of a sweep, reported after each chunk.
#[derive(Clone, Copy, Debug, Default)]
pub struct SweepProgress {
    pub done: u64,
    pub total: u64,
    pub skipped_disconnected: u64,
}

/// Runs this shard's scenarios; `emit` receives each connected scenario's result in index
/// order and `progress` is called as the work advances. Returns the final progress.
///
/// Scenarios are evaluated in the order of their fault sequences so that a state shared by
/// several scenarios (the same first faults in the same order) is computed once; results are
/// then emitted by index, identical to evaluating each scenario on its own, whatever the
/// thread count.
pub fn run(
    ctx: &SweepContext<'_>,
    spec: &SweepSpec,
    emit: impl FnMut(&ScenarioResult),
    progress: impl FnMut(SweepProgress),
) -> SweepProgress {
    run_in_blocks(ctx, spec, SCENARIO_BLOCK, emit, progress)
}

/// Scenarios sorted and shared per block: bounds the memory of the held results and lets
/// lines reach the output as each block completes.
const SCENARIO_BLOCK: u64 = 1 << 19;

fn run_in_blocks(
    ctx: &SweepContext<'_>,
    spec: &SweepSpec,
    block: u64,
    mut emit: impl FnMut(&ScenarioResult),
    mut progress: impl FnMut(SweepProgress),
) -> SweepProgress {
    let f = ctx.fabric;
    let links = switch_links(f);
    let size = space_size(f, spec);
    let (shard, shards) = spec.shard;
    let shards = shards.max(1);
    let mine: u64 = if size > shard {
        (size - shard).div_ceil(shards)
    } else {
        0
    };
    let mut p = SweepProgress {
        total: mine,
        ..Default::default()
    };
    let n = spec.faults.min(links.len());
    if n == 0 {
        return p;
    }
    let threads = rayon::current_num_threads().max(1);
    let mut lo = 0u64;
    while lo < mine {
        let hi = (lo + block.max(1)).min(mine);
        // This block's scenarios: faults (flat, n each) and whether they stay connected.
        let per: Vec<(Vec<LinkId>, bool)> = (lo..hi)
            .into_par_iter()
            .map(|j| {
                let fs = scenario_faults(f, &links, spec, shard + j * shards);
                let ok = connected(f, &fs);
                (fs, ok)
            })
            .collect();
        let mut seqs: Vec<LinkId> = Vec::with_capacity(per.len() * n);
        let mut items: Vec<(usize, u64)> = Vec::new();
        for (k, (fs, ok)) in per.into_iter().enumerate() {
            seqs.extend_from_slice(&fs);
            if ok {
                items.push((k, shard + (lo + k as u64) * shards));
            } else {
                p.skipped_disconnected += 1;
            }
        }
        items.par_sort_unstable_by(|a, b| {
            let sa = &seqs[a.0 * n..(a.0 + 1) * n];
            let sb = &seqs[b.0 * n..(b.0 + 1) * n];
            sa.cmp(sb).then(a.0.cmp(&b.0))
        });
        // Contiguous runs of the sorted order, a few per thread per wave, for progress.
        let run_len = (items.len() / (threads * 64)).clamp(64, 4096);
        let runs: Vec<&[(usize, u64)]> = items.chunks(run_len).collect();
        let mut results: Vec<Option<ScenarioResult>> = vec![None; (hi - lo) as usize];
        let mut done = 0u64;
        let skipped_before = p.skipped_disconnected;
        for wave in runs.chunks(threads * 4) {
            let got: Vec<Vec<(usize, ScenarioResult)>> = wave
                .par_iter()
                .map(|items| evaluate_sorted(ctx, &seqs, n, items, spec.full))
                .collect();
            for (k, r) in got.into_iter().flatten() {
                results[k] = Some(r);
                done += 1;
            }
            p.done = lo + done + (p.skipped_disconnected - skipped_before);
            progress(p);
        }
        for r in results.iter().flatten() {
            emit(r);
        }
        p.done = hi;
        progress(p);
        lo = hi;
    }
    p
}

/// Aggregate of many scenario lines (what the fault-tolerance table shows).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SweepSummary {
    pub scenarios: u64,
    pub supported: u64,
    pub supported_pct: f64,
    pub deadlock_free: u64,
    pub max_sls: u8,
    pub max_virtual_lids: u32,
    pub max_transitions: u8,
    pub full_scenarios: u64,
    pub full_supported: u64,
    pub full_deadlock_free: u64,
    pub full_mean_changed_pairs: f64,
    /// RFTR's mean over the scenarios: sources given a new (DLID, SL), LFT blocks changed.
    pub mean_source_updates: f64,
    pub mean_lft_blocks: f64,
    /// Full reconfiguration's mean LFT blocks changed.
    pub full_mean_lft_blocks: f64,
}

impl SweepSummary {
    pub fn of<'a>(results: impl Iterator<Item = &'a ScenarioResult>) -> SweepSummary {
        let mut s = SweepSummary::default();
        let mut changed = 0u64;
        let (mut rchanged, mut rblocks, mut fblocks) = (0u64, 0u64, 0u64);
        for r in results {
            s.scenarios += 1;
            rchanged += r.source_updates;
            rblocks += r.lft_blocks;
            s.supported += u64::from(r.supported);
            s.deadlock_free += u64::from(r.deadlock_free);
            s.max_sls = s.max_sls.max(r.sls);
            s.max_virtual_lids = s.max_virtual_lids.max(r.virtual_lids);
            s.max_transitions = s.max_transitions.max(r.transitions);
            if let Some(fv) = &r.full {
                s.full_scenarios += 1;
                s.full_supported += u64::from(fv.supported);
                s.full_deadlock_free += u64::from(fv.deadlock_free);
                changed += fv.changed_pairs;
                fblocks += fv.lft_blocks;
            }
        }
        if s.scenarios > 0 {
            s.supported_pct = 100.0 * s.supported as f64 / s.scenarios as f64;
            s.mean_source_updates = rchanged as f64 / s.scenarios as f64;
            s.mean_lft_blocks = rblocks as f64 / s.scenarios as f64;
        }
        if s.full_scenarios > 0 {
            s.full_mean_changed_pairs = changed as f64 / s.full_scenarios as f64;
            s.full_mean_lft_blocks = fblocks as f64 / s.full_scenarios as f64;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks only bound what is held at once: any block size gives the same lines, in
    /// index order, with the same progress totals.
    #[test]
    fn block_size_does_not_change_results() {
        use crate::engines::by_name;
        let f = super::super::test_fabric("torus 3x3 hcas=1 lmc=1");
        let engine = by_name("updn").unwrap();
        let opts = RouteOptions::default();
        let base = engine.route(&f, &FaultMask::none(&f), &opts).unwrap();
        let rule = super::super::base_rule(&f, engine.as_ref(), &opts).unwrap();
        let start = Rftr::new(&f, &base, rule, super::super::RftrConfig::default()).unwrap();
        let ctx = SweepContext::new(&f, start, base, engine.as_ref(), opts, CheckMode::Full);
        let spec = SweepSpec {
            faults: 2,
            scenarios: Scenarios::Exhaustive,
            shard: (1, 2),
            full: false,
        };
        let lines = |block| {
            let mut v = Vec::new();
            let p = run_in_blocks(&ctx, &spec, block, |r| v.push(r.clone()), |_| {});
            (v, p.done, p.skipped_disconnected)
        };
        let whole = lines(1 << 20);
        assert_eq!(whole.1, (binomial(18, 2) - 1).div_ceil(2));
        assert!(!whole.0.is_empty());
        assert!(whole.0.windows(2).all(|w| w[0].id < w[1].id));
        for block in [1, 7, 40] {
            assert_eq!(lines(block), whole, "block {block}");
        }
    }

    #[test]
    fn unranking_enumerates_all_combinations_in_order() {
        let (n, k) = (7u64, 3u64);
        let total = binomial(n, k);
        assert_eq!(total, 35);
        let mut prev: Option<Vec<u64>> = None;
        let mut v = Vec::new();
        for i in 0..total {
            unrank_combination(n, k, i, &mut v);
            assert_eq!(v.len(), 3);
            assert!(v.windows(2).all(|w| w[0] < w[1]) && v[2] < n);
            if let Some(p) = &prev {
                assert!(p < &v, "lexicographic order");
            }
            prev = Some(v.clone());
        }
        assert_eq!(prev.unwrap(), vec![4, 5, 6]);
        assert_eq!(binomial(128, 4), 10_668_000);
        assert_eq!(binomial(200, 100), u64::MAX);
    }
}
