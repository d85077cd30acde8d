//! `fabroute route FABRIC --engine NAME[,NAME...] [options] -o DIR`: route, verify, measure,
//! and write OpenSM's file set plus `summary.json`.

use crate::args::{torus_config, BudgetArgs};
use crate::cmd::check::print_report;
use crate::util::{
    load_fabric_for_lmc, read_guid_file, spinner, write_tables, GuidList, OutputDir,
};
use anyhow::Result;
use routing::engines::{engine_names, route_chain, RouteOptions};
use routing::opensm::SetOptions;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Fabric file.
    pub fabric: PathBuf,
    /// Engine, or a comma-separated chain tried in order (e.g. ftree,updn). Never a silent
    /// fallback: the summary says which engine routed and why earlier ones failed.
    #[arg(short = 'R', long, long_help = engine_help())]
    pub engine: String,
    /// LMC: 2^LMC LIDs per end port. When given, every LID is assigned afresh and the
    /// file's own LIDs are not read (so a dump whose LIDs clash still routes).
    #[arg(long, conflicts_with = "end_lmc", value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: Option<u8>,
    /// LMC of the end ports, keeping the base LIDs the fabric file gives (an
    /// opensm-subnet.lst, such as `fabroute sm -o` writes, lists base LIDs only).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub end_lmc: Option<u8>,
    /// root_guid_file: switch node GUIDs of the roots (updn, ftree).
    #[arg(short = 'a', long)]
    pub roots: Option<PathBuf>,
    /// cn_guid_file: port GUIDs of compute nodes (ftree, sssp).
    #[arg(short = 'u', long)]
    pub cn_guids: Option<PathBuf>,
    /// io_guid_file: port GUIDs of I/O nodes (ftree, sssp).
    #[arg(short = 'G', long)]
    pub io_guids: Option<PathBuf>,
    /// guid_routing_order_file: port GUIDs routed first.
    #[arg(short = 'X', long)]
    pub guid_routing_order: Option<PathBuf>,
    /// port_shifting: rotate where the least-loaded port choice starts (minhop, updn, dnup,
    /// dor, lash); on k-ary fat trees it spreads destinations over the roots (16-ary
    /// 3-tree under updn: busiest link 57,600 -> 4,080 end-port pairs); elsewhere it may
    /// do worse.
    #[arg(long)]
    pub port_shifting: bool,
    /// scatter_ports SEED (0 = off): break ties between equally loaded ports at random.
    #[arg(long, default_value_t = 0)]
    pub scatter_ports: u64,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Print the check report in full (witness cycles, bad pairs).
    #[arg(long)]
    pub verbose: bool,
    /// Write only summary.json (the OpenSM dumps of very large fabrics run to gigabytes).
    #[arg(long)]
    pub summary_only: bool,
    /// Multicast groups to route after the unicast tables: a group file (one group per
    /// line: `MLID [mgid=GID] [sl=SL] MEMBER...`, members by name, description, port GUID
    /// or LID, `send:` for send-only, `all` for every end port), or `ipoib` for the IPoIB
    /// broadcast group (MLID 0xC000, every end port). Written to opensm.mcfdbs and checked.
    #[arg(long, value_name = "FILE|ipoib")]
    pub mcast: Option<PathBuf>,
}

/// `-R`'s long help: the chain rule and every engine of the registry.
fn engine_help() -> String {
    format!(
        "Engine, or a comma-separated chain tried in order (e.g. ftree,updn). Never a silent \
         fallback: the summary says which engine routed and why earlier ones failed.\n\nEngines:\n{}",
        routing::engines::engine_list()
    )
}

/// What `route` runs, every input read and checked: the engine chain, the fabric with its
/// LIDs, the options, the multicast groups and the prepared output directory.
struct Plan {
    a: Args,
    names: Vec<String>,
    out: OutputDir,
    f: fabric::Fabric,
    groups: Option<Vec<routing::mcast::Group>>,
    opts: RouteOptions,
}

pub fn run(a: Args) -> Result<ExitCode> {
    execute(plan(a)?)
}

/// Checks the arguments (usage errors before any file is read), then reads and checks every
/// input: nothing is routed before all of it holds.
fn plan(a: Args) -> Result<Plan> {
    // Every engine name of the chain first: a typo is a usage error, not a skipped engine.
    let names: Vec<String> = a
        .engine
        .split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    crate::names::check_chain(&names.iter().map(String::as_str).collect::<Vec<_>>())?;
    let budget_opts = a.budget.route_options()?;
    // The output directory next: a bad -o is found before any work.
    let out = OutputDir::prepare(&a.output)?;
    // with --lmc every LID is assigned afresh, so the file's own (absent, clashing) do not count
    let mut f = load_fabric_for_lmc(&a.fabric, a.lmc)?.fabric;
    if let Some(l) = a.lmc {
        f = f
            .with_lmc(l)
            .map_err(|e| anyhow::anyhow!("cannot assign LIDs with LMC {l}: {e}"))?;
    }
    if let Some(l) = a.end_lmc {
        f = f
            .with_end_lmc(l)
            .map_err(|e| anyhow::anyhow!("--end-lmc {l}: {e}"))?;
    }
    // Multicast groups are read before any routing: a bad group file is found first.
    let groups = a
        .mcast
        .as_deref()
        .map(|p| crate::mcast::load_groups(p, &f))
        .transpose()?;
    let mut opts = RouteOptions {
        port_shifting: a.port_shifting,
        scatter_ports: a.scatter_ports,
        ..budget_opts
    };
    if let Some(p) = &a.roots {
        opts.root_guids = read_guid_file(p, &f, GuidList::Roots)?;
    }
    opts.engine.torus.config =
        torus_config(&a.fabric, a.budget.torus_config.as_deref(), &a.engine)?;
    if let Some(p) = &a.cn_guids {
        opts.cn_guids = read_guid_file(p, &f, GuidList::EndNodes)?;
    }
    if let Some(p) = &a.io_guids {
        opts.io_guids = read_guid_file(p, &f, GuidList::EndNodes)?;
    }
    if let Some(p) = &a.guid_routing_order {
        opts.guid_routing_order = read_guid_file(p, &f, GuidList::AnyNode)?;
    }
    Ok(Plan {
        a,
        names,
        out,
        f,
        groups,
        opts,
    })
}

/// Routes, checks and measures, writes the set and says how it went.
fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        a,
        names,
        out,
        f,
        groups,
        opts,
    } = p;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mask = fabric::FaultMask::none(&f);
    let sp = spinner(&format!("routing with {}", a.engine));
    let t0 = Instant::now();
    let res = route_chain(&names, &f, &mask, &opts);
    let route_s = t0.elapsed().as_secs_f64();
    sp.finish_and_clear();
    let mut chain =
        res.map_err(|e| anyhow::anyhow!("{e} (engines: {})", engine_names().join(", ")))?;
    for (n, e) in &chain.attempts {
        eprintln!("fabroute: {n} failed: {e}; trying the next engine");
    }
    for n in &chain.notes {
        eprintln!("fabroute: {}: {n}", chain.engine_used);
    }
    let sp = spinner("checking: all pairs and the channel dependency graph");
    let t1 = Instant::now();
    // One walk and one CDG for the check and the metrics.
    let checked = routing::cdg::check_keeping(&f, &chain.routing, None, true);
    let m = routing::metrics::metrics_from(&f, None, &checked.walk, &checked.cdg);
    let rep = checked.report;
    let check_s = t1.elapsed().as_secs_f64();
    sp.finish_and_clear();
    let mc = match &groups {
        Some(gs) => {
            let sp = spinner("routing and checking multicast");
            let engine = routing::engines::by_name(chain.engine_used)
                .ok_or_else(|| anyhow::anyhow!("no engine {}", chain.engine_used))?;
            let m = crate::mcast::route_and_check(
                &f,
                &mask,
                engine.as_ref(),
                &opts,
                &mut chain.routing,
                &checked.cdg,
                gs,
            )?;
            sp.finish_and_clear();
            Some(m)
        }
        None => None,
    };
    let set_opts = SetOptions {
        mcast: mc.as_ref().map(|m| m.routing.mfts.clone()),
        ..SetOptions::default()
    };
    let files = if a.summary_only {
        Default::default()
    } else {
        write_tables(&out, &f, &chain.routing, &set_opts)?
    };
    let unreachable = rep.pairs.checked - rep.pairs.ok;
    let summary = json!({
        "fabric": a.fabric.display().to_string(),
        "engine_requested": a.engine,
        "engine_used": chain.engine_used,
        "failed_engines": chain.attempts.iter().map(|(n, e)| json!({"engine": n, "error": e.to_string()})).collect::<Vec<_>>(),
        "notes": chain.notes,
        "switches": f.num_switches(),
        "end_ports": f.end_ports.len(),
        "pairs": rep.pairs.checked,
        "unreachable_pairs": unreachable,
        "loops": rep.loops.count,
        "max_link_load": m.link_load.max,
        "mean_link_load": m.link_load.mean,
        "link_load_stddev": m.link_load.stddev,
        "link_classes": m.classes,
        "avg_hops": m.sw_hops_avg,
        "max_hops": m.sw_hops_max,
        "hop_histogram": m.hop_histogram,
        // `pairs` and `unreachable_pairs` count every destination LID (LMC ranges included);
        // the hop figures and link loads count end-port pairs on base LIDs
        "base_lid_pairs": m.pairs,
        "base_lid_pairs_delivered": m.pairs_ok,
        "hop_histogram_all_lids": m.hop_histogram_all_lids,
        "vls": m.vls_used.len(),
        "sls": m.sls_used.len(),
        "vls_used": m.vls_used,
        "sls_used": m.sls_used,
        "vl_budget": opts.budget.vls,
        "sl_budget": opts.budget.sls,
        "start_vl": opts.budget.start_vl,
        "lmc": f.end_ports.iter().map(|&p| f.port(p).lmc).max().unwrap_or(0),
        "lid_range": [1, f.max_lid()],
        "files": files,
        "deadlock_free": rep.deadlock_free,
        "credit_loops": rep.cycles.len(),
        "route_seconds": route_s,
        "check_seconds": check_s,
    });
    let mut summary = summary;
    if let Some(m) = &mc {
        summary["multicast"] = crate::mcast::summary(&f, m);
    }
    out.write(
        "summary.json",
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    out.commit()?;
    crate::say!(
        "{} routed {} switches / {} end ports in {:.3} s: {} pairs, {} unreachable, avg {:.2} hops, link load max {} mean {:.1}, {} VL(s), {}",
        chain.engine_used,
        f.num_switches(),
        f.end_ports.len(),
        route_s,
        rep.pairs.checked,
        unreachable,
        m.sw_hops_avg,
        m.link_load.max,
        m.link_load.mean,
        m.vls_used.len().max(1),
        if rep.deadlock_free { "deadlock-free".to_string() } else { format!("{} CREDIT LOOP(S)", rep.cycles.len()) }
    );
    if a.verbose || !rep.ok() {
        print_report(&rep);
    }
    if let Some(m) = &mc {
        crate::say!("{}", crate::mcast::say_line(&f, m));
        if a.verbose || !m.ok() {
            crate::mcast::print_issues(m);
        }
    }
    crate::say!("wrote {}", a.output.display());
    if crate::out::json() {
        crate::out::document(&summary)?;
    }
    // Tables that loop or leave pairs undelivered are written (to be inspected), but the
    // status says so.
    Ok(crate::out::Status::of(rep.ok() && mc.as_ref().is_none_or(|m| m.ok())).into())
}
