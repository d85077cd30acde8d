//! `fabroute sweep` (fault scenarios, sharded) and `fabroute merge` (join shard outputs).

use crate::args::RepairArgs;
use crate::cmd::fault::{load_base, session_error};
use crate::util::{progress_bar, write_atomic};
use anyhow::{bail, Context, Result};
use fabric::Fabric;
use routing::engines::RouteOptions;
use routing::fault::sweep::{
    self, ScenarioResult, Scenarios, SweepContext, SweepSpec, SweepSummary,
};
use routing::fault::{CheckMode, RftrConfig, Session, SessionError};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Shards split the scenario space deterministically (scenario i belongs to shard \
i mod N), so they can run as separate jobs and be joined with `fabroute merge`. A Slurm job array:

  #SBATCH --array=0-15
  fabroute sweep torus.net --engine updn --faults 4 --samples 100000 --seed 1 \\
      --shard $SLURM_ARRAY_TASK_ID/16 -o sweep.$SLURM_ARRAY_TASK_ID.jsonl
  # afterwards, once:
  fabroute merge sweep.*.jsonl -o sweep.jsonl"
)]
pub struct Args {
    /// Fabric file.
    pub fabric: PathBuf,
    /// Base routing engine: one that states a turn rule RFTR can build on.
    #[arg(short = 'R', long, default_value = "updn", long_help = crate::cmd::fault::base_engine_help())]
    pub engine: String,
    /// LMC of the end ports (virtual LIDs for new paths).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: u8,
    /// Link faults per scenario, applied in sequence.
    #[arg(long)]
    pub faults: usize,
    /// Every combination of `faults` inter-switch links.
    #[arg(long, conflicts_with = "samples")]
    pub exhaustive: bool,
    /// Number of random scenarios.
    #[arg(long)]
    pub samples: Option<u64>,
    /// Seed of the random scenarios.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// This job's shard: I/N.
    #[arg(long, default_value = "0/1")]
    pub shard: String,
    /// Skip full reconfiguration (faster).
    #[arg(long)]
    pub no_full: bool,
    /// How each fault's repair is checked: `full` walks every selected pair before and
    /// after the fault and checks their union (memory grows with all pairs, 12 bytes a
    /// pair per state); `incremental` walks every pair once at the start, then only the
    /// table columns each fault and repair touch, against the union of every walk of the
    /// scenario (`fault`'s check; for fabrics of 10,000 end ports and more).
    #[arg(long, value_enum, default_value_t = SweepCheck::Full)]
    pub check: SweepCheck,
    #[command(flatten)]
    pub repair: RepairArgs,
    /// Root switch GUID file for updn.
    #[arg(long)]
    pub roots: Option<PathBuf>,
    /// torus-2QoS.conf for the torus-2QoS base (default: FABRIC.t2q.conf when it exists).
    #[arg(long)]
    pub torus_config: Option<PathBuf>,
    /// Output JSON-lines file (a summary goes to FILE.summary.json).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// `--check`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepCheck {
    Full,
    Incremental,
}

fn parse_shard(s: &str) -> Result<(u64, u64)> {
    let (i, n) = s
        .split_once('/')
        .with_context(|| format!("--shard {s:?}: expected I/N, e.g. 0/4"))?;
    let (i, n): (u64, u64) = (
        i.parse()
            .with_context(|| format!("--shard {s:?}: bad index"))?,
        n.parse()
            .with_context(|| format!("--shard {s:?}: bad count"))?,
    );
    if n == 0 || i >= n {
        crate::usage_bail!("--shard {s:?}: need 0 <= I < N");
    }
    Ok((i, n))
}

/// What `sweep` runs, every argument and input checked: the fabric and base engine, RFTR's
/// settings, the scenario space and the output file, opened.
struct Plan {
    a: Args,
    f: Fabric,
    engine: Box<dyn routing::engines::Engine>,
    opts: RouteOptions,
    cfg: RftrConfig,
    vls: u8,
    spec: SweepSpec,
    shard: (u64, u64),
    combos: u64,
    tmp: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    execute(plan(a)?)
}

/// Checks the arguments, reads the fabric and the engine's inputs, and checks what depends
/// on them (the fault count against the fabric's links) and that the output can be
/// written: nothing is routed before all of it holds.
fn plan(a: Args) -> Result<Plan> {
    let shard = parse_shard(&a.shard)?;
    let scenarios = match (a.exhaustive, a.samples) {
        (true, _) => Scenarios::Exhaustive,
        (false, Some(count)) => Scenarios::Samples {
            count,
            seed: a.seed,
        },
        (false, None) => crate::usage_bail!("give --exhaustive or --samples K"),
    };
    let (f, engine, opts) = load_base(
        &a.fabric,
        a.lmc,
        &a.engine,
        a.roots.as_deref(),
        a.torus_config.as_deref(),
    )?;
    let max_sls = RftrConfig::default().max_sls;
    let (vls, opts) = a.repair.plan(&f, engine.as_ref(), &opts, max_sls)?;
    let mut cfg = a.repair.config(vls, max_sls);
    let spec = SweepSpec {
        faults: a.faults,
        scenarios,
        shard,
        full: !a.no_full,
    };
    let links = sweep::switch_links(&f).len();
    if links == 0 {
        anyhow::bail!(
            "{}: the fabric has no inter-switch link to fail: nothing to sweep",
            a.fabric.display()
        );
    }
    if a.faults == 0 || a.faults > links {
        crate::usage_bail!("--faults must be 1..={links} (the fabric's inter-switch links)");
    }
    // As many samples as there are combinations, or more: every one, once.
    let combos = sweep::binomial(links as u64, a.faults as u64);
    let spec = match spec.scenarios {
        Scenarios::Samples { count, .. } if count >= combos => {
            crate::warn!(
                "--samples {count} is at least the {combos} combinations of {} of the {links} inter-switch links: each is evaluated once, as with --exhaustive",
                a.faults
            );
            SweepSpec {
                scenarios: Scenarios::Exhaustive,
                ..spec
            }
        }
        _ => spec,
    };
    cfg.memory_limit = cfg.memory_limit.map(|l| l / states_held(&spec) as u64);
    let tmp = a.output.with_extension("jsonl.partial");
    let out = std::io::BufWriter::new(
        std::fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?,
    );
    Ok(Plan {
        a,
        f,
        engine,
        opts,
        cfg,
        vls,
        spec,
        shard,
        combos,
        tmp,
        out,
    })
}

/// RFTR states a sweep holds at once at most: the start, and per thread the state it repairs
/// and those of the first faults its next scenario shares (scenarios are taken in the order
/// of their fault sequences): up to one per fault level where every sequence is taken
/// (exhaustive), about none beside the current one among random samples.
fn states_held(spec: &SweepSpec) -> usize {
    let per_thread = match spec.scenarios {
        Scenarios::Exhaustive => spec.faults,
        Scenarios::Samples { .. } => 1,
    };
    1 + rayon::current_num_threads() * per_thread
}

/// Routes the base, runs the scenarios of the shard with their checks, and writes the
/// results and their summary.
fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        a,
        f,
        engine,
        opts,
        cfg,
        vls,
        spec,
        shard,
        combos,
        tmp,
        mut out,
    } = p;
    let started = Session::start(&f, engine.as_ref(), &opts, cfg);
    if let Some(e) = started.as_ref().err().and_then(SessionError::too_large) {
        let copies = states_held(&spec);
        anyhow::bail!(
            "cannot start the sweep: {e}; this sweep on {} threads holds up to {copies} RFTR states at once (the start, and per thread the state it repairs and, exhaustive, the states of the faults its next scenario shares), so each gets 1/{copies} of --memory-limit; raise it if the machine has the memory, or give fewer --threads",
            rayon::current_num_threads()
        );
    }
    let session = started.map_err(session_error)?;
    let mode = match a.check {
        SweepCheck::Full => CheckMode::Full,
        SweepCheck::Incremental => CheckMode::Incremental,
    };
    let sp = crate::util::spinner("preparing the check of the fault-free state");
    let ctx = SweepContext::of(&session, mode);
    sp.finish_and_clear();
    let space = sweep::space_size(&f, &spec);
    eprintln!(
        "{} scenarios in the space, shard {}/{}",
        space, shard.0, shard.1
    );
    let mut results: Vec<ScenarioResult> = Vec::new();
    let mut werr: Option<std::io::Error> = None;
    let bar = progress_bar(0, "scenarios");
    let p = sweep::run(
        &ctx,
        &spec,
        |r| {
            if werr.is_none() {
                if let Err(e) = serde_json::to_writer(&mut out, r)
                    .map_err(std::io::Error::from)
                    .and_then(|_| out.write_all(b"\n"))
                {
                    werr = Some(e);
                }
            }
            results.push(r.clone());
        },
        |p| {
            bar.set_length(p.total);
            bar.set_position(p.done);
        },
    );
    bar.finish_and_clear();
    if let Some(e) = werr {
        return Err(e).context("cannot write the sweep output");
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, &a.output)?;
    let summary = SweepSummary::of(results.iter());
    if let Scenarios::Samples { count, .. } = spec.scenarios {
        // Random draws may repeat a combination: say how many were distinct.
        let distinct: std::collections::HashSet<Vec<String>> = results
            .iter()
            .map(|r| {
                let mut v = r.faults.clone();
                v.sort();
                v
            })
            .collect();
        if distinct.len() < results.len() {
            crate::warn!(
                "{} of the {} scenarios evaluated here ({count} drawn in all) repeat a combination drawn before: {} distinct, of {combos} possible",
                results.len() - distinct.len(),
                results.len(),
                distinct.len()
            );
        }
    }
    let sj = serde_json::json!({
        "fabric": a.fabric.display().to_string(), "engine": a.engine, "vls": vls, "lmc": a.lmc,
        "tie_break": a.repair.tie_break_name(), "virtual_lids_only": a.repair.virtual_lids_only,
        "faults": a.faults, "space": space, "shard": a.shard,
        "check": match a.check { SweepCheck::Full => "full", SweepCheck::Incremental => "incremental" },
        "skipped_disconnected": p.skipped_disconnected, "summary": summary,
    });
    let mut sp = a.output.as_os_str().to_owned();
    sp.push(".summary.json");
    write_atomic(
        &PathBuf::from(sp),
        serde_json::to_string_pretty(&sj)?.as_bytes(),
    )?;
    if crate::out::json() {
        crate::out::document(&sj)?;
    }
    say_summary(&summary, Some(p.skipped_disconnected));
    Ok(crate::out::Status::Clean.into())
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// Shard outputs (JSON lines).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Merged output: scenarios sorted by id, duplicates dropped.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// The keys of a shard's summary that all shards of one sweep share.
const SWEEP_KEYS: [&str; 8] = [
    "engine",
    "vls",
    "lmc",
    "tie_break",
    "virtual_lids_only",
    "faults",
    "space",
    "fabric",
];

/// Checks the summaries beside the inputs (`FILE.summary.json`, where `sweep` wrote them):
/// one sweep (same fabric file name, engine, options, fault count and space), one shard count;
/// returns the shard indices missing from the inputs, with the shard count and the space.
fn check_shard_summaries(inputs: &[PathBuf]) -> Result<Option<(Vec<u64>, u64, u64)>> {
    let mut first: Option<(PathBuf, serde_json::Value)> = None;
    let mut have: Vec<u64> = Vec::new();
    let mut count = 0u64;
    for p in inputs {
        let mut sp = p.as_os_str().to_owned();
        sp.push(".summary.json");
        let sp = PathBuf::from(sp);
        let Ok(text) = std::fs::read_to_string(&sp) else {
            return Ok(None); // a summary missing: nothing to compare
        };
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a sweep summary (JSON)", sp.display()))?;
        let key = |v: &serde_json::Value, k: &str| -> serde_json::Value {
            if k == "fabric" {
                // shards may run where the fabric file has another directory
                let f = v[k].as_str().unwrap_or("");
                serde_json::json!(Path::new(f)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string()))
            } else {
                v[k].clone()
            }
        };
        let (i, n) = v["shard"]
            .as_str()
            .and_then(|s| parse_shard(s).ok())
            .with_context(|| format!("{}: no shard I/N", sp.display()))?;
        match &first {
            None => {
                first = Some((sp.clone(), v.clone()));
                count = n;
            }
            Some((fp, fv)) => {
                for k in SWEEP_KEYS {
                    if key(fv, k) != key(&v, k) {
                        bail!(
                            "{} and {} are shards of different sweeps: {k} {} against {}",
                            fp.display(),
                            sp.display(),
                            key(fv, k),
                            key(&v, k)
                        );
                    }
                }
                if n != count {
                    bail!(
                        "{} and {} split the sweep into {count} and {n} shards",
                        fp.display(),
                        sp.display()
                    );
                }
            }
        }
        have.push(i);
    }
    let Some((_, fv)) = first else {
        return Ok(None);
    };
    let missing: Vec<u64> = (0..count).filter(|i| !have.contains(i)).collect();
    Ok(Some((missing, count, fv["space"].as_u64().unwrap_or(0))))
}

pub fn merge(a: MergeArgs) -> Result<ExitCode> {
    let shards = check_shard_summaries(&a.inputs)?;
    let mut all: BTreeMap<u64, ScenarioResult> = BTreeMap::new();
    let mut faults: Option<(usize, String)> = None;
    for p in &a.inputs {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let r: ScenarioResult = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a sweep line", p.display(), i + 1))?;
            let at = format!("{}:{}", p.display(), i + 1);
            match &faults {
                None => faults = Some((r.faults.len(), at)),
                Some((k, first)) if *k != r.faults.len() => bail!(
                    "{at}: a scenario of {} faults, but {first} has {k}: lines of different sweeps",
                    r.faults.len()
                ),
                _ => {}
            }
            if let Some(prev) = all.get(&r.id) {
                if prev != &r {
                    bail!(
                        "{}:{}: scenario {} differs from an earlier copy (shards of different sweeps?)",
                        p.display(),
                        i + 1,
                        r.id
                    );
                }
            }
            all.insert(r.id, r);
        }
    }
    let mut text = String::new();
    for r in all.values() {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    write_atomic(&a.output, text.as_bytes())?;
    if let Some((missing, count, space)) = &shards {
        if !missing.is_empty() {
            crate::warn!(
                "shards {missing:?} of {count} are not among the inputs: {} of the {space} scenarios merged",
                all.len()
            );
        }
    }
    let s = SweepSummary::of(all.values());
    if crate::out::json() {
        crate::out::document(&s)?;
    } else {
        say_summary(&s, None);
    }
    Ok(crate::out::Status::Clean.into())
}

/// A sweep's (or a merge's) summary for people: the scenarios, RFTR's support, and the means
/// per scenario.
fn say_summary(summary: &SweepSummary, skipped: Option<u64>) {
    crate::say!(
        "{} scenarios{}: RFTR supported {:.2}%, deadlock-free {}, max SLs {}, max virtual LIDs {}, max transitions {}; full reconfiguration supported {}/{}",
        summary.scenarios,
        skipped
            .map(|k| format!(" ({k} disconnected skipped)"))
            .unwrap_or_default(),
        summary.supported_pct,
        summary.deadlock_free,
        summary.max_sls,
        summary.max_virtual_lids,
        summary.max_transitions,
        summary.full_supported,
        summary.full_scenarios
    );
    if summary.scenarios > 0 {
        let full = if summary.full_scenarios > 0 {
            format!(
                "; full reconfiguration {:.1} blocks, {:.1} pairs changed",
                summary.full_mean_lft_blocks, summary.full_mean_changed_pairs
            )
        } else {
            String::new()
        };
        crate::say!(
            "mean per scenario: RFTR {:.1} LFT blocks, {:.1} source updates{full}",
            summary.mean_lft_blocks,
            summary.mean_source_updates
        );
    }
}
