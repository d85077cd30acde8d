//! `fabroute sim FABRIC (-R ENGINE | --lfts F [--sl2vl F] [--psl F]) --load X --pattern P
//! --time T [--fail link:SW/PORT --fail-at T --repair rftr,full-static,full-dynamic] -o DIR`:
//! the packet-level simulator (`crates/sim`) on any tables, a load sweep in parallel, a
//! failure with the repair schemes overlaid; `summary.json`, CSV series and SVG pictures.
//!
//! `args.rs` holds the arguments and the configuration they give, `scenario.rs` the tables,
//! repairs and jobs, `report.rs` and `pictures.rs` what the runs write and say.

mod args;
mod pictures;
mod report;
mod scenario;

pub use args::Args;

use crate::cmd::fault::parse_fault;
use crate::out::Status;
use crate::util::OutputDir;
use anyhow::Result;
use args::{parse_loads, parse_time, schemes};
use fabric::Fabric;
use rayon::prelude::*;
use report::Runs;
use routing::fault::Fault;
use scenario::{session_repairs, Job, Read, Scenario};
use sim::{Config, Report, Scheme};
use std::process::ExitCode;
use std::time::Instant;

/// What `sim` runs, every argument parsed and checked against the fabric and the output
/// prepared: nothing is routed yet.
struct Plan {
    a: Args,
    loads: Vec<f64>,
    /// The repair schemes asked for (`None`: the tables as they are).
    want: Vec<Option<Scheme>>,
    repairing: bool,
    t_compute: Option<u64>,
    fail_at: u64,
    read: Read,
    fault: Option<Fault>,
    base_cfg: Config,
    out: OutputDir,
}

pub fn run(a: Args) -> Result<ExitCode> {
    execute(plan(a)?)
}

fn plan(a: Args) -> Result<Plan> {
    let loads = parse_loads(&a.load)?;
    let want = schemes(&a.repair)?;
    let repairing = want.iter().any(|s| s.is_some());
    let t_compute = match a.t_compute.as_str() {
        "measured" => None,
        t => Some(parse_time(t)?),
    };
    let fail_at = parse_time(&a.fail_at)?;
    let read = Scenario::read(&a, &want, repairing)?;
    let fault = a
        .fail
        .as_deref()
        .map(|s| parse_fault(&read.f, s))
        .transpose()?;
    let repaired = fault.is_some() && repairing;
    if repaired && a.engine.as_deref().unwrap_or("").contains(',') {
        crate::usage_bail!("--repair needs one engine, not a chain");
    }
    if (a.dateline || a.hop_vls) && repaired {
        crate::usage_bail!("--dateline and --hop-vls apply to fault-free tables only");
    }
    // Every load is in 0..=1 already (`parse_loads`): one check covers every run.
    let base_cfg = args::config(&a, &read.f, fault.is_some(), fail_at)?;
    if let Err(e) = base_cfg.check(&read.f) {
        crate::usage_bail!("{e}");
    }
    let out = OutputDir::prepare(&a.output)?;
    Ok(Plan {
        a,
        loads,
        want,
        repairing,
        t_compute,
        fail_at,
        read,
        fault,
        base_cfg,
        out,
    })
}

fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        a,
        loads,
        want,
        repairing,
        t_compute,
        fail_at,
        read,
        fault,
        base_cfg,
        out,
    } = p;
    // Tables, then the fault's repairs.
    let sc = Scenario::build(&a, read)?;
    let f = &sc.f;
    let mut notes = Vec::new();
    let repairs = match (fault, repairing) {
        (Some(fl), true) => {
            let engine = a.engine.as_deref().unwrap_or("");
            let opts = scenario::route_opts(&a, f)?;
            let r = session_repairs(&a, f, engine, &opts, fl, &want, t_compute)?;
            notes.extend(r.notes.iter().cloned());
            Some(r)
        }
        _ => None,
    };
    let jobs = scenario::jobs(&loads, &want, fault, fail_at, &repairs, &sc.tables);
    let results = simulate(f, &jobs, &base_cfg)?;
    // Outputs.
    let runs = Runs {
        a: &a,
        loads: &loads,
        jobs: &jobs,
        results: &results,
        cfg: &base_cfg,
        fail_at: fault.map(|_| fail_at),
    };
    let summary = runs.write_data(&out, &sc, &notes)?;
    runs.write_pictures(&out)?;
    out.commit()?;
    // Text or JSON on stdout.
    runs.print(&notes, &summary)?;
    Ok(Status::of(!results.iter().any(|(r, _)| r.deadlock)).into())
}

/// Runs the jobs in parallel; each result with its wall time in seconds.
fn simulate(f: &Fabric, jobs: &[Job], base_cfg: &Config) -> Result<Vec<(Report, f64)>> {
    let bar = crate::util::progress_bar(jobs.len() as u64, "simulation runs");
    let results: Vec<(Report, f64)> = jobs
        .par_iter()
        .map(|j| {
            let mut c = base_cfg.clone();
            c.traffic.load = j.load;
            let t = Instant::now();
            let r = sim::simulate(f, j.tables.clone(), c, j.fault.clone())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            bar.inc(1);
            Ok((r, t.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    Ok(results)
}
