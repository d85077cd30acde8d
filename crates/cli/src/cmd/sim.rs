//! `fabroute sim FABRIC (-R ENGINE | --lfts F [--sl2vl F] [--psl F]) --load X --pattern P
//! --time T [--fail link:SW/PORT --fail-at T --repair rftr,full-static,full-dynamic] -o DIR`:
//! the packet-level simulator (`crates/sim`) on any tables, a load sweep in parallel, a
//! failure with the repair schemes overlaid; `summary.json`, CSV series and SVG pictures.

use crate::cmd::check::{load_tables, Tables};
use crate::cmd::fault::{parse_fault, session_error, RepairArgs};
use crate::out::{self, Status};
use crate::plot::{BarChart, LineChart, Marker, Series};
use crate::util::{load_fabric_for_lmc, read_guid_file, BudgetArgs, GuidList, OutputDir};
use anyhow::{Context, Result};
use fabric::Fabric;
use rayon::prelude::*;
use routing::engines::{engine_names, route_chain, RouteOptions};
use routing::fault::{Fault, Session};
use routing::Routing;
use serde_json::{json, Value};
use sim::{
    Arrival, Config, FaultEvent, LinkRate, Pattern, Repair, Report, Scheme, SizeDist, Unroutable,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  fabroute sim ring.net -R minhop --load 0.8 --time 2ms -o d1a
  fabroute sim t.net -R updn --lmc 2 --load 0.05 --time 3ms --warmup 0.5ms \\
      --fail link:S_3_3/3 --fail-at 1ms --repair rftr,full-static,full-dynamic -o e1
  fabroute sim subnet.lst --lfts opensm-lfts.dump --load 0.1:1.0:0.1 -o sweep

Times take a unit: ps, ns, us, ms, s. Exit status 1 when a run deadlocked.")]
pub struct Args {
    /// Fabric file (OpenSM's opensm-subnet.lst with --lfts from OpenSM: it carries the LIDs).
    pub fabric: PathBuf,
    /// Route with this engine (or a comma-separated chain; a single engine with --repair).
    #[arg(short = 'R', long, conflicts_with = "lfts")]
    pub engine: Option<String>,
    /// LFTs from a file instead: opensm-lfts.dump / -U file / ibroute output, or opensm.fdbs.
    #[arg(long, required_unless_present = "engine")]
    pub lfts: Option<PathBuf>,
    /// SL2VL tables (opensm-sl2vl.dump), with --lfts.
    #[arg(long, requires = "lfts")]
    pub sl2vl: Option<PathBuf>,
    /// Path SLs (ibdmchk's PSL format), with --lfts.
    #[arg(long, requires = "lfts")]
    pub psl: Option<PathBuf>,
    /// LMC: 2^LMC LIDs per end port (reassigns LIDs; RFTR needs LMC >= 1 for virtual LIDs;
    /// default 2 with --repair rftr, else the fabric's; with --lfts, as `check --lmc`).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: Option<u8>,
    /// Root switch GUID file (updn, ftree).
    #[arg(short = 'a', long)]
    pub roots: Option<PathBuf>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Replace the path SLs and SL2VL tables by a dateline on 2 VLs (tori with generator
    /// coordinates, dimension-ordered shortest paths: minhop on a ring, dor on a torus).
    #[arg(long)]
    pub dateline: bool,
    /// Replace the path SLs and SL2VL tables by hop-incremented VLs over the same LFTs (the
    /// k-th switch-to-switch hop on VL k, as `-R hopvl` does over SSSP's paths): needs the
    /// longest path's hop count in VLs (`--max-vls`). Deadlock-free whatever the paths.
    #[arg(long, conflicts_with = "dateline")]
    pub hop_vls: bool,

    /// Offered load per sending host (fraction of link rate): X, a list X,Y,.., or a sweep
    /// FROM:TO:STEP (points run in parallel).
    #[arg(long, default_value = "0.5")]
    pub load: String,
    /// Traffic pattern.
    #[arg(long, value_enum, default_value_t = PatternArg::Uniform)]
    pub pattern: PatternArg,
    /// Hotspot: the hot host (end-port name or index among the hosts; default the first).
    #[arg(long)]
    pub hot: Option<String>,
    /// Hotspot: fraction of every host's packets sent to the hot host.
    #[arg(long, default_value_t = 0.1)]
    pub hot_fraction: f64,
    /// Packet size in bytes: N, MIN:MAX (uniform), or B@W,B@W (weights).
    #[arg(long, default_value = "58")]
    pub size: String,
    /// Packet generation.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Bernoulli)]
    pub arrival: ArrivalArg,
    /// Simulated time.
    #[arg(long, default_value = "2ms")]
    pub time: String,
    /// Statistics start here (the series shows the warmup too).
    #[arg(long, default_value = "0")]
    pub warmup: String,
    /// Width of the time-series bins.
    #[arg(long, default_value = "10us")]
    pub bin: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Link rates: 1x-sdr (4 ns/byte, the RFTR paper's), 1x-sdr-raw, 4x-sdr, 4x-qdr, 4x-edr,
    /// 4x-hdr, 4x-ndr, 4x-xdr, or fabric (each link's width x speed).
    #[arg(long, default_value = "1x-sdr")]
    pub rate: String,
    /// Routing time per packet at a switch.
    #[arg(long, default_value = "100ns")]
    pub t_route: String,
    /// Propagation delay per link.
    #[arg(long, default_value = "0")]
    pub t_prop: String,
    /// Input and output buffer per (port, VL), bytes (multiples of 64).
    #[arg(long, default_value_t = 1024)]
    pub buffer: u32,
    /// Output buffer per (port, VL) when it differs from --buffer.
    #[arg(long)]
    pub out_buffer: Option<u32>,
    /// Crossbar speed-up.
    #[arg(long, default_value_t = 1)]
    pub speedup: u32,
    /// Packets whose LFT entry leads nowhere: dropped, or held until a table update.
    #[arg(long, value_enum, default_value_t = UnroutableArg::Drop)]
    pub unroutable: UnroutableArg,
    /// Deadlock check period.
    #[arg(long, default_value = "50us")]
    pub watchdog: String,

    /// A failure: link:SWITCH/PORT or switch:SWITCH (name, 0x GUID, or a node description
    /// one switch has).
    #[arg(long)]
    pub fail: Option<String>,
    /// When it fails.
    #[arg(long, default_value = "1ms", requires = "fail")]
    pub fail_at: String,
    /// Repair schemes, comma-separated, each run on the same traffic and overlaid: none,
    /// rftr, full-static, full-dynamic.
    #[arg(long, default_value = "none", requires = "fail")]
    pub repair: String,
    /// From the failure to the SM knowing.
    #[arg(long, default_value = "10us")]
    pub t_detect: String,
    /// Round trip of one SMP (an LFT block or an SL2VL row).
    #[arg(long, default_value = "2us")]
    pub t_smp: String,
    /// SMPs outstanding at once.
    #[arg(long, default_value_t = 4)]
    pub smp_parallel: u32,
    /// The SM's routing time: `measured` (this run's RFTR repair or engine time) or a time.
    #[arg(long, default_value = "measured")]
    pub t_compute: String,
    #[command(flatten)]
    pub rftr: RepairArgs,

    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternArg {
    Uniform,
    Permutation,
    /// ORCS bisect: a random perfect matching, one direction per pair.
    Bisect,
    /// ORCS bisect_fb_sym: both directions.
    BisectFb,
    Hotspot,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalArg {
    Bernoulli,
    Poisson,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnroutableArg {
    Drop,
    Hold,
}

/// A time with a unit (`ps`, `ns`, `us`/`µs`, `ms`, `s`; `0` alone is allowed), in ps.
pub fn parse_time(s: &str) -> Result<u64> {
    let t = s.trim();
    if t == "0" {
        return Ok(0);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .with_context(|| format!("{s:?}: a time needs a unit (ps, ns, us, ms, s)"))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .with_context(|| format!("{s:?}: {num:?} is not a number"))?;
    let mul = match unit.trim() {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        u => crate::usage_bail!("{s:?}: unknown time unit {u:?} (ps, ns, us, ms, s)"),
    };
    Ok((v * mul).round() as u64)
}

/// `X`, `X,Y,...` or `FROM:TO:STEP`.
pub fn parse_loads(s: &str) -> Result<Vec<f64>> {
    let num = |x: &str| -> Result<f64> {
        x.trim()
            .parse::<f64>()
            .with_context(|| format!("--load {s:?}: {x:?} is not a number"))
    };
    let v = if let Some((a, rest)) = s.split_once(':') {
        let (b, step) = rest
            .split_once(':')
            .with_context(|| format!("--load {s:?}: expected FROM:TO:STEP"))?;
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step <= 0.0 || b < a {
            crate::usage_bail!("--load {s:?}: need FROM <= TO and STEP > 0");
        }
        let n = ((b - a) / step + 1e-9).floor() as usize;
        (0..=n)
            .map(|i| ((a + i as f64 * step) * 1e9).round() / 1e9)
            .collect()
    } else {
        s.split(',').map(num).collect::<Result<Vec<_>>>()?
    };
    if let Some(x) = v.iter().find(|x| !(0.0..=1.0).contains(*x)) {
        crate::usage_bail!("--load {x} is outside 0..=1 (a fraction of the link rate)");
    }
    Ok(v)
}

/// `N`, `MIN:MAX` or `B@W,B@W,...`.
pub fn parse_size(s: &str) -> Result<SizeDist> {
    let b = |x: &str| -> Result<u16> {
        x.trim()
            .parse::<u16>()
            .with_context(|| format!("--size {s:?}: {x:?} is not a byte count"))
    };
    Ok(if let Some((lo, hi)) = s.split_once(':') {
        let (min, max) = (b(lo)?, b(hi)?);
        if min == 0 || max < min {
            crate::usage_bail!("--size {s:?}: need 1 <= MIN <= MAX");
        }
        SizeDist::Uniform { min, max }
    } else if s.contains('@') {
        let mut v = Vec::new();
        for part in s.split(',') {
            let (x, w) = part
                .split_once('@')
                .with_context(|| format!("--size {s:?}: expected B@W,B@W"))?;
            let w: f64 = w
                .trim()
                .parse()
                .with_context(|| format!("--size {s:?}: weight {w:?}"))?;
            v.push((b(x)?, w));
        }
        SizeDist::Choice(v)
    } else {
        SizeDist::Fixed(b(s)?)
    })
}

/// One simulation to run.
struct Job {
    label: String,
    load: f64,
    scheme: Option<Scheme>,
    tables: Routing,
    fault: Option<FaultEvent>,
}

/// What the fault runs need: the schemes' base tables and repairs.
struct Repairs {
    /// The engine's fault-free tables (full reconfiguration and `none` start from them).
    base: Routing,
    /// RFTR's fault-free tables (the engine's with RFTR's virtual LIDs cleared).
    base_rftr: Option<Routing>,
    rftr: Option<Repair>,
    full: Option<(Routing, u64)>,
    notes: Vec<String>,
}

fn route_opts(a: &Args, f: &fabric::Fabric) -> Result<RouteOptions> {
    let mut opts = a.budget.route_options()?;
    if let Some(p) = &a.roots {
        opts.root_guids = read_guid_file(p, f, GuidList::Roots)?;
    }
    opts.engine.torus.config = crate::util::torus_config(
        &a.fabric,
        a.budget.torus_config.as_deref(),
        a.engine.as_deref().unwrap_or(""),
    )?;
    Ok(opts)
}

fn schemes(s: &str) -> Result<Vec<Option<Scheme>>> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| {
            Ok(match x.trim() {
                "none" => None,
                "rftr" => Some(Scheme::Rftr),
                "full-static" => Some(Scheme::FullStatic),
                "full-dynamic" => Some(Scheme::FullDynamic),
                o => crate::usage_bail!(
                    "--repair {o:?}: expected none, rftr, full-static or full-dynamic"
                ),
            })
        })
        .collect()
}

/// Runs the engine's fault session: RFTR's repair and full reconfiguration, timed.
fn session_repairs(
    a: &Args,
    f: &Fabric,
    engine: &str,
    opts: &RouteOptions,
    fault: Fault,
    want: &[Option<Scheme>],
    t_compute: Option<u64>,
) -> Result<Repairs> {
    let e = crate::names::engine(engine, "engines", &engine_names())?;
    let (vls, opts) = a.rftr.plan(f, e.as_ref(), opts, a.budget.sls)?;
    let (opts, base) = Session::route_base(f, e.as_ref(), &opts).map_err(session_error)?;
    let want_rftr = want.contains(&Some(Scheme::Rftr));
    let want_full = want
        .iter()
        .any(|s| matches!(s, Some(Scheme::FullStatic | Scheme::FullDynamic)));
    let mut notes = Vec::new();
    let (mut base_rftr, mut rftr, mut full) = (None, None, None);
    if want_rftr || want_full {
        let cfg = a.rftr.config(vls, a.budget.sls);
        let mut s =
            Session::from_base(f, e.as_ref(), opts, base.clone(), cfg).map_err(session_error)?;
        if want_rftr {
            base_rftr = Some(s.rftr().routing.clone());
            // The SM's compute time is RFTR's repair alone (the session also verifies it).
            let mut timed = s.rftr().clone();
            let t = Instant::now();
            timed.apply(fault);
            let took = t.elapsed();
            let step = s.apply(fault).clone();
            if !step.ok() {
                notes.push(format!(
                    "RFTR: {} of {} affected pairs unsupported, union CDG {}",
                    step.repair.unsupported_pairs,
                    step.repair.affected_pairs,
                    if step.check.deadlock_free {
                        "acyclic"
                    } else {
                        "CYCLIC"
                    }
                ));
            }
            rftr = Some(Repair {
                scheme: Scheme::Rftr,
                tables: s.rftr().routing.clone(),
                sources: s.rftr().delta.sources.clone(),
                t_compute: t_compute.unwrap_or(took.as_nanos() as u64 * 1000),
            });
        }
        if want_full {
            let mut mask = fabric::FaultMask::none(f);
            match fault {
                Fault::Link(l) => mask.fail_link(l),
                Fault::Switch(n) => mask.fail_node(n),
            }
            // Timed: the engine routing the damaged fabric (what the SM computes).
            let t = Instant::now();
            let _ = e.route(f, &mask, s.options());
            let took = t.elapsed();
            let fr = s
                .full_reconfiguration()
                .map_err(|e| anyhow::anyhow!("full reconfiguration: {e}"))?;
            if !fr.deadlock_free {
                notes.push("full reconfiguration: the new tables have credit loops".into());
            }
            full = Some((
                fr.routing,
                t_compute.unwrap_or(took.as_nanos() as u64 * 1000),
            ));
        }
    }
    Ok(Repairs {
        base,
        base_rftr,
        rftr,
        full,
        notes,
    })
}

fn run_json(r: &Report, job: &Job, wall: f64) -> Value {
    let mut v = serde_json::to_value(r).expect("serialisable");
    let o = v.as_object_mut().expect("an object");
    o.insert("load".into(), json!(job.load));
    o.insert("label".into(), json!(job.label));
    o.insert(
        "scheme".into(),
        json!(job.scheme.map(|s| s.name()).unwrap_or("none")),
    );
    o.insert("wall_seconds".into(), json!(wall));
    o.insert(
        "packets_per_second".into(),
        json!(r.packets_delivered as f64 / wall.max(1e-9)),
    );
    if let Some(fs) = &r.fault {
        o.insert("dip".into(), json!(fs.dip));
        o.insert("recovery_us".into(), json!(fs.recovery_us));
        o.insert("lft_blocks_sent".into(), json!(fs.lft_blocks_sent));
        o.insert("packets_lost".into(), json!(fs.packets_lost));
    }
    v
}

pub fn run(a: Args) -> Result<ExitCode> {
    let loads = parse_loads(&a.load)?;
    let want = schemes(&a.repair)?;
    let repairing = want.iter().any(|s| s.is_some());
    let t_compute = match a.t_compute.as_str() {
        "measured" => None,
        t => Some(parse_time(t)?),
    };
    let out = OutputDir::prepare(&a.output)?;
    // Fabric and tables.
    let (f, tables, source) = if let Some(lfts) = &a.lfts {
        if repairing {
            crate::usage_bail!(
                "--repair needs an engine (-R): tables from files cannot be recomputed"
            );
        }
        let (f, r) = load_tables(&Tables {
            fabric: a.fabric.clone(),
            lfts: Some(lfts.clone()),
            sl2vl: a.sl2vl.clone(),
            psl: a.psl.clone(),
            lmc: a.lmc,
            strict: false,
        })?;
        (f, r, lfts.display().to_string())
    } else {
        let engine = a.engine.clone().expect("clap requires -R or --lfts");
        let lmc = a.lmc.or(want.contains(&Some(Scheme::Rftr)).then_some(2));
        let mut f = load_fabric_for_lmc(&a.fabric, lmc)?.fabric;
        if let Some(l) = lmc {
            f = f
                .with_lmc(l)
                .map_err(|e| anyhow::anyhow!("cannot assign LIDs with LMC {l}: {e}"))?;
        }
        let opts = route_opts(&a, &f)?;
        let names: Vec<&str> = engine.split([',', ' ']).filter(|s| !s.is_empty()).collect();
        crate::names::check_chain(&names)?;
        let chain = route_chain(&names, &f, &fabric::FaultMask::none(&f), &opts)
            .map_err(|e| anyhow::anyhow!("{e} (engines: {})", engine_names().join(", ")))?;
        for (n, e) in &chain.attempts {
            crate::warn!("{n} failed: {e}; trying the next engine");
        }
        (f, chain.routing, format!("-R {}", chain.engine_used))
    };
    let tables = if a.dateline {
        let d = sim::dateline::dateline(&f, &tables).map_err(anyhow::Error::msg)?;
        let rep = routing::cdg::check(&f, &d, None);
        out::stderr_line(&format!(
            "fabroute: dateline on 2 VLs: {}",
            if rep.deadlock_free {
                "no credit loops".to_string()
            } else {
                format!(
                    "{} credit loop(s) remain (paths not dimension ordered)",
                    rep.cycles.len()
                )
            }
        ));
        d
    } else if a.hop_vls {
        let mut h = tables;
        let paths = routing::vl::paths::Paths::of(&f, &h, None);
        let budget = a.budget.route_options()?.budget;
        let notes = routing::engines::hopvl::hop_vls(&f, &mut h, &paths, budget)
            .map_err(|e| anyhow::anyhow!("--hop-vls: {e}"))?;
        for n in notes {
            out::stderr_line(&format!("fabroute: {n}"));
        }
        h
    } else {
        tables
    };
    let static_check = routing::cdg::check(&f, &tables, None);
    let undelivered = static_check.pairs.checked - static_check.pairs.ok;
    if undelivered > 0 {
        crate::warn!(
            "the tables do not deliver {undelivered} of {} pairs: their packets are dropped where the tables lose them (see `fabroute check`)",
            static_check.pairs.checked
        );
    }
    if !static_check.deadlock_free {
        crate::warn!(
            "the tables have {} credit loop(s): the simulation may deadlock (see `fabroute check`)",
            static_check.cycles.len()
        );
    }
    // The fault and its repairs.
    let fault = a.fail.as_deref().map(|s| parse_fault(&f, s)).transpose()?;
    let fail_at = parse_time(&a.fail_at)?;
    let mut notes = Vec::new();
    let repairs = match (fault, repairing) {
        (Some(fl), true) => {
            let engine = a.engine.as_deref().unwrap_or("");
            if engine.contains(',') {
                crate::usage_bail!("--repair needs one engine, not a chain");
            }
            let opts = route_opts(&a, &f)?;
            let r = session_repairs(&a, &f, engine, &opts, fl, &want, t_compute)?;
            notes.extend(r.notes.iter().cloned());
            Some(r)
        }
        _ => None,
    };
    if (a.dateline || a.hop_vls) && repairs.is_some() {
        crate::usage_bail!("--dateline and --hop-vls apply to fault-free tables only");
    }
    // The configuration.
    let rate = LinkRate::preset(&a.rate).with_context(|| {
        format!(
            "--rate {:?}: one of {}",
            a.rate,
            LinkRate::PRESETS.join(", ")
        )
    })?;
    let hosts: Vec<u32> = (0..f.end_ports.len() as u32)
        .filter(|&e| f.attached_switch(f.end_ports[e as usize]).is_some())
        .collect();
    let hot = match &a.hot {
        None => None,
        Some(h) => Some(match h.parse::<u32>() {
            Ok(i) => i,
            Err(_) => hosts
                .iter()
                .position(|&e| f.node(f.port(f.end_ports[e as usize]).node).name == *h)
                .with_context(|| format!("--hot {h:?}: no host of that name"))?
                as u32,
        }),
    };
    let pattern = match a.pattern {
        PatternArg::Uniform => Pattern::Uniform,
        PatternArg::Permutation => Pattern::Permutation,
        PatternArg::Bisect => Pattern::Bisect { both_ways: false },
        PatternArg::BisectFb => Pattern::Bisect { both_ways: true },
        PatternArg::Hotspot => Pattern::Hotspot {
            hot,
            fraction: a.hot_fraction,
        },
    };
    let mut base_cfg = Config {
        t_end: parse_time(&a.time)?,
        t_warmup: parse_time(&a.warmup)?,
        t_bin: parse_time(&a.bin)?,
        t_watchdog: parse_time(&a.watchdog)?,
        seed: a.seed,
        ..Config::default()
    };
    base_cfg.traffic.pattern = pattern;
    base_cfg.traffic.size = parse_size(&a.size)?;
    base_cfg.traffic.arrival = match a.arrival {
        ArrivalArg::Bernoulli => Arrival::Bernoulli,
        ArrivalArg::Poisson => Arrival::Poisson,
    };
    let m = &mut base_cfg.model;
    m.link_rate = rate;
    m.t_route = parse_time(&a.t_route)?;
    m.t_prop = parse_time(&a.t_prop)?;
    m.in_buf_bytes = a.buffer;
    m.out_buf_bytes = a.out_buffer.unwrap_or(a.buffer);
    m.xbar_speedup = a.speedup;
    m.unroutable = match a.unroutable {
        UnroutableArg::Drop => Unroutable::Drop,
        UnroutableArg::Hold => Unroutable::Hold,
    };
    base_cfg.reconf.t_detect = parse_time(&a.t_detect)?;
    base_cfg.reconf.t_smp = parse_time(&a.t_smp)?;
    base_cfg.reconf.smp_parallel = a.smp_parallel;
    if base_cfg.t_warmup >= base_cfg.t_end {
        crate::usage_bail!("--warmup must end before --time");
    }
    if fault.is_some() && fail_at >= base_cfg.t_end {
        crate::usage_bail!("--fail-at must be before --time");
    }
    // The jobs: every load × every scheme.
    let mut jobs = Vec::new();
    for &load in &loads {
        for &scheme in if fault.is_some() {
            &want[..]
        } else {
            &[None][..]
        } {
            let (tables, repair) = match (&repairs, scheme) {
                (Some(r), Some(Scheme::Rftr)) => {
                    (r.base_rftr.clone().expect("routed"), r.rftr.clone())
                }
                (Some(r), Some(s)) => {
                    let (t, tc) = r.full.clone().expect("routed");
                    (
                        r.base.clone(),
                        Some(Repair {
                            scheme: s,
                            tables: t,
                            sources: Default::default(),
                            t_compute: tc,
                        }),
                    )
                }
                (Some(r), None) => (r.base.clone(), None),
                (None, _) => (tables.clone(), None),
            };
            let label = match (scheme, fault) {
                (Some(s), _) => s.name().to_string(),
                (None, Some(_)) => "no repair".to_string(),
                (None, None) => "run".to_string(),
            };
            jobs.push(Job {
                label,
                load,
                scheme,
                tables,
                fault: fault.map(|fl| FaultEvent {
                    at: fail_at,
                    fault: fl,
                    repair,
                }),
            });
        }
    }
    let bar = crate::util::progress_bar(jobs.len() as u64, "simulation runs");
    let results: Vec<(Report, f64)> = jobs
        .par_iter()
        .map(|j| {
            let mut c = base_cfg.clone();
            c.traffic.load = j.load;
            let t = Instant::now();
            let r = sim::simulate(&f, j.tables.clone(), c, j.fault.clone())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            bar.inc(1);
            Ok((r, t.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    // Outputs.
    let multi_load = loads.len() > 1;
    let multi_scheme = jobs.len() > loads.len();
    let tag = |j: &Job| -> String {
        let mut t = String::new();
        if multi_load {
            t.push_str(&format!("-load{}", j.load));
        }
        if multi_scheme {
            t.push_str(&format!("-{}", j.label.replace(' ', "-")));
        }
        t
    };
    for (j, (r, _)) in jobs.iter().zip(&results) {
        out.write(
            &format!("series{}.csv", tag(j)),
            sim::series_csv(r).as_bytes(),
        )?;
    }
    let runs: Vec<Value> = jobs
        .iter()
        .zip(&results)
        .map(|(j, (r, w))| run_json(r, j, *w))
        .collect();
    // the configuration as run: the load is each run's (one value, or the list)
    let mut config_json = serde_json::to_value(&base_cfg)?;
    config_json["traffic"]["load"] = if loads.len() == 1 {
        json!(loads[0])
    } else {
        json!(loads)
    };
    let meta = json!({
        "fabric": a.fabric.display().to_string(),
        "tables": source,
        "dateline": a.dateline,
        "hop_vls": a.hop_vls,
        "static_deadlock_free": static_check.deadlock_free,
        "credit_loops": static_check.cycles.len(),
        "static_pairs_undelivered": undelivered,
        "pattern": format!("{:?}", a.pattern).to_lowercase(),
        "size": a.size,
        "time_us": base_cfg.t_end as f64 / 1e6,
        "warmup_us": base_cfg.t_warmup as f64 / 1e6,
        "seed": a.seed,
        "config": config_json,
        "fail": a.fail,
        "fail_at_us": fault.map(|_| fail_at as f64 / 1e6),
        "notes": notes,
    });
    let summary = if runs.len() == 1 {
        let mut v = runs[0].clone();
        v.as_object_mut()
            .expect("object")
            .insert("meta".into(), meta);
        v
    } else {
        json!({ "meta": meta, "runs": runs })
    };
    out.write(
        "summary.json",
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    // Pictures.
    let fail_us = fault.map(|_| fail_at as f64 / 1e6);
    for &load in &loads {
        let mut ch = LineChart::new(
            format!(
                "Accepted traffic, {} at load {load}{}",
                a.fabric
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                a.fail
                    .as_deref()
                    .map(|x| format!(", {x} fails"))
                    .unwrap_or_default()
            ),
            "time (µs)",
            "accepted traffic per host (fraction of link rate)",
        );
        for (j, (r, _)) in jobs.iter().zip(&results) {
            if j.load != load {
                continue;
            }
            let pts = r.series.iter().map(|b| (b.t_us, b.accepted)).collect();
            let name = match &r.fault {
                Some(fs) => format!(
                    "{}: low point {:.0} % of before, recovery {:.0} µs, {} lost{}",
                    j.label,
                    fs.dip * 100.0,
                    fs.recovery_us,
                    fs.packets_lost,
                    if r.deadlock { ", DEADLOCK" } else { "" }
                ),
                None if r.deadlock => format!(
                    "{}: DEADLOCK at {:.0} µs",
                    j.label,
                    r.deadlock_at_us.unwrap_or(0.0)
                ),
                None => j.label.clone(),
            };
            ch = ch.series(Series::line(name, pts));
            if let Some(t) = r.deadlock_at_us {
                ch = ch.marker(Marker::new(t, "deadlock"));
            }
        }
        ch = ch.series(
            Series::line(
                "offered",
                vec![(0.0, load), (base_cfg.t_end as f64 / 1e6, load)],
            )
            .dashed()
            .color("#888888"),
        );
        if let Some(t) = fail_us {
            ch = ch.marker(Marker::new(t, "link fails"));
        }
        let name = if multi_load {
            format!("accepted-load{load}.svg")
        } else {
            "accepted.svg".to_string()
        };
        out.write(&(name), ch.to_svg().as_bytes())?;
    }
    if jobs.len() == 1 {
        let r = &results[0].0;
        let (edges, counts) = &r.latency_histogram;
        let counts: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
        let h = BarChart::new(
            format!("Latency, load {}", jobs[0].load),
            "latency, generation to delivery (ns, bin start)",
            "packets",
        )
        .histogram(edges, &counts);
        out.write("latency-histogram.svg", h.to_svg().as_bytes())?;
    }
    if fault.is_some() && !multi_load && jobs.len() > 1 {
        let mut lost = BarChart::new(
            format!(
                "Packets lost after {} fails",
                a.fail.as_deref().unwrap_or("")
            ),
            "repair scheme",
            "packets lost",
        );
        for (j, (r, _)) in jobs.iter().zip(&results) {
            lost = lost.bar(
                j.label.clone(),
                r.fault.as_ref().map_or(0, |x| x.packets_lost) as f64,
            );
        }
        out.write("lost.svg", lost.to_svg().as_bytes())?;
    }
    if multi_load {
        let mut thr = LineChart::new(
            "Throughput",
            "offered load (fraction of link rate)",
            "accepted load (fraction of link rate)",
        )
        .x_range(0.0, 1.0)
        .y_range(0.0, 1.0);
        let mut lat = LineChart::new(
            "Latency",
            "offered load (fraction of link rate)",
            "latency, generation to delivery (µs)",
        )
        .x_range(0.0, 1.0);
        let mut labels: Vec<String> = jobs.iter().map(|j| j.label.clone()).collect();
        labels.dedup();
        labels.sort();
        labels.dedup();
        for l in &labels {
            let pts = |g: fn(&Report) -> f64| -> Vec<(f64, f64)> {
                jobs.iter()
                    .zip(&results)
                    .filter(|(j, _)| &j.label == l)
                    .map(|(j, (r, _))| (j.load, g(r)))
                    .collect()
            };
            let (name, pre) = if labels.len() == 1 {
                ("accepted".to_string(), String::new())
            } else {
                (l.clone(), format!("{l} "))
            };
            thr = thr.series(Series::line(name, pts(|r| r.accepted)).with_dots());
            lat = lat
                .series(
                    Series::line(format!("{pre}mean"), pts(|r| r.latency_ns.mean / 1000.0))
                        .with_dots(),
                )
                .series(
                    Series::line(format!("{pre}p99"), pts(|r| r.latency_ns.p99 / 1000.0))
                        .with_dots()
                        .dashed(),
                );
        }
        thr = thr.series(
            Series::line("offered", vec![(0.0, 0.0), (1.0, 1.0)])
                .dashed()
                .color("#888888"),
        );
        out.write("throughput.svg", thr.to_svg().as_bytes())?;
        out.write("latency.svg", lat.to_svg().as_bytes())?;
        let mut csv = String::from("load,scheme,offered,accepted,latency_mean_ns,latency_p50_ns,latency_p99_ns,deadlock,packets_delivered,wall_seconds\n");
        for (j, (r, w)) in jobs.iter().zip(&results) {
            csv.push_str(&format!(
                "{},{},{:.6},{:.6},{:.3},{:.3},{:.3},{},{},{:.3}\n",
                j.load,
                j.label,
                r.offered,
                r.accepted,
                r.latency_ns.mean,
                r.latency_ns.p50,
                r.latency_ns.p99,
                r.deadlock,
                r.packets_delivered,
                w
            ));
        }
        out.write("sweep.csv", csv.as_bytes())?;
    }
    out.commit()?;
    // Text or JSON on stdout.
    for n in &notes {
        out::stderr_line(&format!("fabroute: {n}"));
    }
    if out::json() {
        out::document(&summary)?;
    } else {
        for (j, (r, w)) in jobs.iter().zip(&results) {
            let mut line = format!(
                "{} load {}: offered {:.3} accepted {:.3} | latency mean {:.0} ns p99 {:.0} ns | {} delivered, {} dropped, {} in network | {:.2} s",
                j.label, j.load, r.offered, r.accepted, r.latency_ns.mean, r.latency_ns.p99,
                r.packets_delivered, r.packets_dropped, r.packets_in_network, w
            );
            if let Some(fs) = &r.fault {
                line.push_str(&format!(
                    " | low point {:.0} % of before, recovery {:.0} µs, {} lost, {} LFT blocks",
                    fs.dip * 100.0,
                    fs.recovery_us,
                    fs.packets_lost,
                    fs.lft_blocks_sent
                ));
                if fs.scheme.is_some() {
                    line.push_str(&format!(", compute {:.1} µs", fs.t_compute_us));
                    if fs.sources_switched_us.is_none() && !r.deadlock {
                        line.push_str(" (REPAIR NOT DONE BY THE END: see --t-compute)");
                    }
                }
            }
            crate::say!("{line}");
            if r.deadlock {
                crate::say!(
                    "  DEADLOCK at {:.1} µs, cycle of {} buffers:",
                    r.deadlock_at_us.unwrap_or(0.0),
                    r.deadlock_cycle.len()
                );
                for b in &r.deadlock_cycle {
                    crate::say!("    {} ({}) port {} VL {}", b.switch, b.guid, b.port, b.vl);
                }
            }
        }
        crate::say!("wrote {}", a.output.display());
    }
    Ok(Status::of(!results.iter().any(|(r, _)| r.deadlock)).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_loads_and_sizes_parse() {
        assert_eq!(parse_time("2ms").unwrap(), 2_000_000_000);
        assert_eq!(parse_time("0.5ms").unwrap(), 500_000_000);
        assert_eq!(parse_time("10us").unwrap(), 10_000_000);
        assert_eq!(parse_time("100ns").unwrap(), 100_000);
        assert_eq!(parse_time("0").unwrap(), 0);
        assert!(parse_time("10").is_err());
        assert!(parse_time("3 parsecs").is_err());
        assert_eq!(parse_loads("0.1:1.0:0.1").unwrap().len(), 10);
        assert_eq!(parse_loads("0.1:1.0:0.1").unwrap()[9], 1.0);
        assert_eq!(parse_loads("0.2,0.4").unwrap(), vec![0.2, 0.4]);
        assert!(parse_loads("1.5").is_err());
        assert_eq!(parse_size("58").unwrap(), SizeDist::Fixed(58));
        assert_eq!(
            parse_size("20:300").unwrap(),
            SizeDist::Uniform { min: 20, max: 300 }
        );
        assert_eq!(
            parse_size("58@0.9,2048@0.1").unwrap(),
            SizeDist::Choice(vec![(58, 0.9), (2048, 0.1)])
        );
        assert!(parse_size("0:4").is_err());
        assert_eq!(
            schemes("rftr,none").unwrap(),
            vec![Some(Scheme::Rftr), None]
        );
        assert!(schemes("reboot").is_err());
    }
}
