//! `fabroute fault FABRIC --engine updn [--lmc N] [--vls N] --fail link:SW/PORT
//! --fail switch:SW ... -o DIR`: RFTR repairs, with full reconfiguration beside it.

use crate::args::RepairArgs;
use crate::util::{load_fabric_for_lmc, read_guid_file, write_tables, GuidList, OutputDir};
use anyhow::{bail, Context, Result};
use fabric::link_name;
use fabric::{Fabric, NodeId, NodeKind};
use routing::engines::RouteOptions;
use routing::fault::{CheckMode, Fault, Phase, RftrConfig, Session, SessionError};
use routing::opensm::SetOptions;
// (sm names it through this module)
pub(crate) use super::delta::write_delta_json;
use super::delta::write_delta_text;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Fabric file (its LIDs are assigned afresh). Not with `--from`.
    #[arg(required_unless_present = "from", conflicts_with = "from")]
    pub fabric: Option<PathBuf>,
    /// Repair the tables already deployed: DIR is a `fabroute route -o` or `fault -o` set, or
    /// OpenSM's dump directory (opensm-subnet.lst, opensm-lfts.dump, and opensm-sl2vl.dump
    /// and opensm-path-sl.psl when present). Its LIDs and tables are kept; `--engine` (and
    /// `--roots`) give the turn rule RFTR builds on, and a set that breaks it is refused with
    /// the first path that does. The LMC is the set's summary.json's, else `--lmc`, else 0.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Base routing engine: one that states a turn rule RFTR can build on.
    #[arg(short = 'R', long, default_value = "updn", long_help = base_engine_help())]
    pub engine: String,
    /// LMC of the end ports: 2^LMC - 1 virtual LIDs per destination for new paths (default
    /// 2). Every LID is assigned afresh; the file's own LIDs are not read (with `--from`, the
    /// set's LIDs are kept).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: Option<u8>,
    /// Service levels available.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub sls: u8,
    #[command(flatten)]
    pub repair: RepairArgs,
    /// A fault: `link:SWITCH/PORT` or `switch:SWITCH` (name, 0x GUID, or a node description
    /// one switch has). Repeat for a sequence; faults are applied in order.
    #[arg(long = "fail", required = true)]
    pub fail: Vec<String>,
    /// Root switch GUID file for updn.
    #[arg(long)]
    pub roots: Option<PathBuf>,
    /// torus-2QoS.conf for the torus-2QoS base (default: FABRIC.t2q.conf when it exists).
    #[arg(long)]
    pub torus_config: Option<PathBuf>,
    /// Write only what RFTR routes: no entries for the (source, LID) pairs no source uses,
    /// so `fabroute check` and ibdmchk -l report those as unreachable. By default they are
    /// completed (legal paths on VL 0, SLs that add no dependency a credit loop can use);
    /// while RFTR left pairs unrepaired no route is added (it would route those too), only
    /// SLs and the removal of entries whose walks do not deliver.
    #[arg(long)]
    pub minimal: bool,
    /// Check each repair by walking every selected pair and the migration union of the
    /// walks before and after it (cost grows with all pairs). By default only the table
    /// columns the fault or the repair touched are walked again, against the union of every
    /// walk since the start kept as an ordered dependency graph (one whole walk first).
    #[arg(long)]
    pub full_check: bool,
    /// Write only summary.json, delta.json and delta.txt: no table set (on fabrics of
    /// thousands of end ports the tables take longer to write than the repair and its check).
    #[arg(long)]
    pub summary_only: bool,
    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Multicast groups (a group file, or `ipoib`), routed on the fault-free fabric and
    /// mended after each fault; the trees go to opensm.mcfdbs, their check to the summary.
    #[arg(long, value_name = "FILE|ipoib")]
    pub mcast: Option<PathBuf>,
}

/// `--engine`'s long help: the registry's RFTR bases.
pub fn base_engine_help() -> String {
    format!(
        "Base routing engine: one that states a turn rule RFTR can build on ({}).",
        routing::engines::rftr_bases().join(", ")
    )
}

/// Finds a switch by name, GUID, or (when one switch has it) node description or its short
/// name (`ib5` for `MF0;ib5:SX6036/U1`, [`fabric::short_names`]): names change
/// between formats (`convert` to ibnetdiscover names nodes by GUID), descriptions do not.
pub fn find_switch(f: &Fabric, s: &str) -> Result<NodeId> {
    let n = find_node(f, s, NodeKind::Switch, ("switch", "switches"))?;
    if f.node(n).kind != NodeKind::Switch {
        bail!("{s:?} is not a switch");
    }
    Ok(n)
}

/// A node by GUID or name (any kind), else by description or its short name among the nodes
/// of `kind` (routers counted with CAs as end nodes) when exactly one has it; `what` names
/// that kind in the errors (singular, plural).
fn find_node(f: &Fabric, s: &str, kind: NodeKind, (what, whats): (&str, &str)) -> Result<NodeId> {
    let by_guid = s
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .and_then(|g| f.node_by_guid(g));
    if let Some(n) = by_guid.or_else(|| f.node_by_name(s)) {
        return Ok(n);
    }
    let of_kind = |n: &NodeId| f.node(*n).kind.is_end() == kind.is_end();
    let described: Vec<NodeId> = (0..f.nodes.len() as u32)
        .map(NodeId)
        .filter(|n| of_kind(n) && !f.node(*n).desc.is_empty() && f.node(*n).desc == s)
        .collect();
    let short: Vec<NodeId> = f
        .nodes_by_short_name(s)
        .into_iter()
        .filter(of_kind)
        .collect();
    match (described.as_slice(), short.as_slice()) {
        ([n], _) | ([], [n]) => Ok(*n),
        ([], []) => bail!(
            "no node named {s:?} (or with that GUID, {what} description or short name such as `ib5` for `MF0;ib5:SX6036/U1`) in the fabric"
        ),
        ([], many) => bail!(
            "{} {whats} have the short name {s:?} in their description ({}): name one by its name or GUID",
            many.len(),
            many.iter()
                .take(4)
                .map(|&n| format!("{:?}", f.node(n).desc))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (many, _) => bail!(
            "{} {whats} have the description {s:?}: name one by its name or GUID",
            many.len()
        ),
    }
}

/// Parses a sequence of `--fail` specs. The same link or switch twice (a link may be named
/// from either end), or a link of a switch failed earlier in the list, is an error: the second
/// fault would change nothing and a script that gives it has a mistake.
pub fn parse_faults(f: &Fabric, specs: &[String]) -> Result<Vec<Fault>> {
    let mut out: Vec<Fault> = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        let fault = parse_fault(f, spec)?;
        let earlier = out.iter().position(|&g| {
            g == fault
                || match (g, fault) {
                    (Fault::Switch(n), Fault::Link(l)) => {
                        let k = f.link(l);
                        f.port(k.a).node == n || f.port(k.b).node == n
                    }
                    _ => false,
                }
        });
        if let Some(j) = earlier {
            crate::usage_bail!(
                "--fail {spec:?} (fault {}) repeats --fail {:?} (fault {}): that {} has already failed",
                i + 1,
                specs[j],
                j + 1,
                if matches!(out[j], Fault::Switch(_)) { "switch" } else { "link" }
            );
        }
        out.push(fault);
    }
    Ok(out)
}

/// Parses `link:SW/PORT` (SW a switch, or an end node for its own cable) or `switch:SW`.
pub fn parse_fault(f: &Fabric, spec: &str) -> Result<Fault> {
    if let Some(rest) = spec.strip_prefix("link:") {
        let (sw, port) = rest
            .rsplit_once('/')
            .with_context(|| format!("{spec:?}: expected link:SWITCH/PORT"))?;
        // A switch, or an end node (its HCA cable: the end port is cut off).
        let n = match find_switch(f, sw) {
            Ok(n) => n,
            Err(e) => match find_node(f, sw, NodeKind::Ca, ("end node", "end nodes")) {
                Ok(n) if f.node(n).kind.is_end() => n,
                _ => return Err(e),
            },
        };
        let port: u8 = port
            .parse()
            .with_context(|| format!("{spec:?}: port {port:?} is not a number"))?;
        if port == 0 || port > f.node(n).nports {
            crate::usage_bail!("{spec:?}: {sw} has ports 1..={}", f.node(n).nports);
        }
        let p = f.port_id(n, port);
        let l = f
            .port(p)
            .link
            .with_context(|| format!("{spec:?}: port {port} of {sw} is not cabled"))?;
        let far = f.port(f.remote(p).unwrap_or(p)).node;
        if far == n {
            bail!(
                "{spec:?}: port {port} of {sw} is a loopback cable (both ends on {:?}); it carries no route, so only links between two switches can fail",
                f.node(n).name
            );
        }
        if !f.is_switch(far) && !f.is_switch(n) {
            bail!(
                "{spec:?}: the cable joins two end nodes ({:?} and {:?}); only cables with a switch at one end carry routes",
                f.node(n).name,
                f.node(far).name
            );
        }
        Ok(Fault::Link(l))
    } else if let Some(sw) = spec.strip_prefix("switch:") {
        Ok(Fault::Switch(find_switch(f, sw)?))
    } else {
        crate::usage_bail!("{spec:?}: expected link:SWITCH/PORT or switch:SWITCH")
    }
}

/// What `fault` and `sweep` share: the fabric with LIDs for LMC `lmc`, the base engine and its
/// options (roots from the file when given).
pub fn load_base(
    fabric: &std::path::Path,
    lmc: u8,
    engine: &str,
    roots: Option<&std::path::Path>,
    torus: Option<&std::path::Path>,
) -> Result<(Fabric, Box<dyn routing::engines::Engine>, RouteOptions)> {
    let loaded = load_fabric_for_lmc(fabric, Some(lmc))?;
    let f = loaded
        .fabric
        .with_lmc(lmc)
        .map_err(|e| anyhow::anyhow!("cannot assign LIDs with LMC {lmc}: {e}"))?;
    let (engine, opts) = base_engine(&f, fabric, engine, roots, torus)?;
    Ok((f, engine, opts))
}

/// The base engine by name and its options for fabric `f` (read from `fabric`): roots from
/// the file when given, the torus-2QoS configuration.
pub fn base_engine(
    f: &Fabric,
    fabric: &std::path::Path,
    engine: &str,
    roots: Option<&std::path::Path>,
    torus: Option<&std::path::Path>,
) -> Result<(Box<dyn routing::engines::Engine>, RouteOptions)> {
    let engine = crate::names::engine(engine, "RFTR bases", &routing::engines::rftr_bases())?;
    let mut opts = RouteOptions::default();
    if let Some(r) = roots {
        opts.root_guids = read_guid_file(r, f, GuidList::Roots)?;
    }
    opts.engine.torus.config = crate::args::torus_config(fabric, torus, engine.name())?;
    Ok((engine, opts))
}

/// The engine's reason when it cannot be RFTR's base, else the error.
pub fn session_error(e: SessionError) -> anyhow::Error {
    anyhow::Error::msg(e.reason())
}

/// The deployed set of `--from DIR`: the fabric with the set's LIDs and its tables.
fn load_deployed(dir: &std::path::Path, lmc: Option<u8>) -> Result<(Fabric, routing::Routing)> {
    if !dir.is_dir() {
        bail!("--from {}: not a directory", dir.display());
    }
    let file = |name: &str| {
        let p = dir.join(name);
        p.exists().then_some(p)
    };
    let need = |name: &str| {
        file(name).with_context(|| {
            format!(
                "--from {}: no {name} (a `fabroute route -o` set or OpenSM's dump directory has one)",
                dir.display()
            )
        })
    };
    let t = crate::args::Tables {
        fabric: need("opensm-subnet.lst")?,
        lfts: Some(need("opensm-lfts.dump")?),
        sl2vl: file("opensm-sl2vl.dump"),
        psl: file("opensm-path-sl.psl"),
        lmc,
        strict: false,
    };
    crate::cmd::check::load_tables(&t)
}

/// What `fault` runs, every input read and checked: the fabric and the base engine with its
/// options, the deployed tables when repairing a set, the faults, the multicast groups and
/// the prepared output directory.
struct Plan {
    a: Args,
    out: OutputDir,
    f: Fabric,
    engine: Box<dyn routing::engines::Engine>,
    opts: RouteOptions,
    deployed: Option<routing::Routing>,
    lmc: u8,
    faults: Vec<Fault>,
    groups: Option<Vec<routing::mcast::Group>>,
    /// Data VLs in all (RFTR's and the base's).
    vls: u8,
    /// Seconds spent reading the fabric (or the set) and the engine's inputs.
    read_s: f64,
    t0: Instant,
}

pub fn run(a: Args) -> Result<ExitCode> {
    execute(plan(a)?)
}

/// Reads and checks every input (the fabric or the deployed set, the engine and its files,
/// the faults, the groups, the VL and SL budget): nothing is routed or repaired before all
/// of it holds.
fn plan(a: Args) -> Result<Plan> {
    let out = OutputDir::prepare(&a.output)?;
    let t0 = Instant::now();
    let (f, engine, opts, deployed, lmc) = if let Some(dir) = &a.from {
        let (f, r) = load_deployed(dir, a.lmc)?;
        let lmc = f.end_lmc();
        let (engine, opts) = base_engine(
            &f,
            &dir.join("opensm-subnet.lst"),
            &a.engine,
            a.roots.as_deref(),
            a.torus_config.as_deref(),
        )?;
        (f, engine, opts, Some(r), lmc)
    } else {
        let fabric = a.fabric.as_deref().expect("clap: FABRIC unless --from");
        let lmc = a.lmc.unwrap_or(2);
        let (f, engine, opts) = load_base(
            fabric,
            lmc,
            &a.engine,
            a.roots.as_deref(),
            a.torus_config.as_deref(),
        )?;
        (f, engine, opts, None, lmc)
    };
    let read_s = t0.elapsed().as_secs_f64();
    let faults = parse_faults(&f, &a.fail)?;
    let groups = a
        .mcast
        .as_deref()
        .map(|p| crate::mcast::load_groups(p, &f))
        .transpose()?;
    let (vls, opts) = a.repair.plan(&f, engine.as_ref(), &opts, a.sls)?;
    Ok(Plan {
        a,
        out,
        f,
        engine,
        opts,
        deployed,
        lmc,
        faults,
        groups,
        vls,
        read_s,
        t0,
    })
}

/// Routes the base (or pins the deployed set's), repairs each fault in turn with its check,
/// runs full reconfiguration beside it, writes the set and says how it went.
fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        a,
        out,
        f,
        engine,
        opts,
        deployed,
        lmc,
        faults,
        groups,
        vls,
        read_s,
        t0,
    } = p;
    let (opts, base) = match deployed {
        // The deployed tables are the base; the engine's choices are pinned on the
        // fault-free fabric as for a routed base, so full reconfiguration ranks alike.
        Some(r) => (
            engine
                .pin_choices(&f, &opts)
                .map_err(|e| anyhow::anyhow!("{}: {e}", engine.name()))?,
            r,
        ),
        None => {
            let sp = crate::util::spinner(&format!("routing the base with {}", engine.name()));
            let r = Session::route_base(&f, engine.as_ref(), &opts).map_err(session_error)?;
            sp.finish_and_clear();
            r
        }
    };
    let base_s = t0.elapsed().as_secs_f64() - read_s;
    let t_start = Instant::now();
    let deployed_base = a.from.as_ref().map(|_| base.clone());
    let cfg = RftrConfig {
        keep_sl2vl: a.from.is_some(),
        ..a.repair.config(vls, a.sls)
    };
    let started = Session::from_base(&f, engine.as_ref(), opts.clone(), base, cfg);
    if let Some(e) = started.as_ref().err().and_then(SessionError::too_large) {
        anyhow::bail!(
            "cannot start RFTR over {}: {e}; raise --memory-limit GB if the machine has it, or repair a smaller fabric (full reconfiguration alone: `fabroute route`)",
            engine.name()
        );
    }
    let mut session = started
        .map_err(session_error)
        .with_context(|| match &a.from {
            Some(dir) => format!(
                "cannot repair the tables of {} over {}: where a ranking decides the rule (updn, dnup, ftree), give the roots the set was routed from with --roots FILE",
                dir.display(),
                engine.name()
            ),
            None => format!("cannot start RFTR over {}", engine.name()),
        })?;
    session.set_check_mode(if a.full_check {
        CheckMode::Full
    } else {
        CheckMode::Incremental
    });
    let mut mcast = groups
        .map(|g| crate::mcast::FaultMcast::start(&f, engine.as_ref(), &opts, g))
        .transpose()?;
    let start_s = t_start.elapsed().as_secs_f64();
    let mut steps = Vec::new();
    let (mut repair_s, mut prepare_total_s, mut check_total_s) = (0.0, 0.0, 0.0);
    let mut settle_total_s = 0.0;
    for (fault, text) in faults.iter().zip(&a.fail) {
        // Before the repair the check prepares (the full check's snapshot, the incremental
        // check's one whole walk at the first fault): timed apart from both.
        let t = Instant::now();
        let (mut t1, mut t2, mut t3) = (t, t, t);
        let sp = crate::util::spinner(&format!("{text}: repairing and checking"));
        let step = session.apply_then(*fault, |phase| match phase {
            Phase::Repairing => t1 = Instant::now(),
            Phase::Settling => t2 = Instant::now(),
            Phase::Checking => t3 = Instant::now(),
        });
        sp.finish_and_clear();
        let prepare_s = (t1 - t).as_secs_f64();
        // The repair ends with its delta; the bookkeeping it leaves for the next fault
        // (`Rftr::settle`) is timed apart.
        let dt = (t2 - t1).as_secs_f64();
        let settle_s = (t3 - t2).as_secs_f64();
        let check_s = t3.elapsed().as_secs_f64();
        repair_s += dt;
        settle_total_s += settle_s;
        prepare_total_s += prepare_s;
        check_total_s += check_s;
        let (rep, chk) = (&step.repair, &step.check);
        let unsupported: Vec<_> = rep
            .unsupported
            .iter()
            .take(100)
            .map(|&(s, d)| {
                // names for people, port GUIDs for `trace` on any format of the fabric
                // (names differ between formats: ibnetdiscover's are descriptions)
                let p = |e: u32| f.port(f.end_ports[e as usize]);
                let n = |e: u32| f.node(p(e).node).name.clone();
                let g = |e: u32| format!("0x{:016x}", p(e).guid);
                json!({"src": n(s), "src_port_guid": g(s), "dst": n(d), "dst_port_guid": g(d)})
            })
            .collect();
        let what = match fault {
            Fault::Link(l) => link_name(&f, *l),
            Fault::Switch(n) => f.node(*n).name.clone(),
        };
        let no_lid = match rep.no_free_lid_pairs {
            0 => String::new(),
            n => format!(" ({n} of them for want of a free LID: LMC {lmc})"),
        };
        let cut = match rep.disconnected_pairs {
            0 => String::new(),
            n if n == rep.unsupported_pairs => " (all cut off: no live path is left)".to_string(),
            n => format!(" ({n} of them cut off: no live path is left)"),
        };
        eprintln!(
            "{text}: {} pairs affected, {} repaired, {} unsupported{cut}{no_lid}, {} end port(s) cut off with their pairs; {} with a VL transition; {:.3} ms (then {:.3} ms of bookkeeping for the next fault, {:.3} ms to check it{}); union CDG {}",
            rep.affected_pairs,
            rep.repaired_pairs,
            rep.unsupported_pairs,
            rep.dropped_pairs,
            rep.transition_paths,
            dt * 1e3,
            settle_s * 1e3,
            check_s * 1e3,
            if prepare_s >= 0.0005 {
                format!(", {:.3} ms before the repair", prepare_s * 1e3)
            } else {
                String::new()
            },
            if chk.deadlock_free { "acyclic" } else { "HAS CYCLES" }
        );
        steps.push(json!({
            "fault": text, "element": what,
            "affected_pairs": rep.affected_pairs, "repaired_pairs": rep.repaired_pairs,
            "unsupported_pairs": rep.unsupported_pairs,
            "disconnected_pairs": rep.disconnected_pairs, "dropped_pairs": rep.dropped_pairs,
            "transition_paths": rep.transition_paths, "max_transitions": rep.max_transitions,
            "no_free_lid_pairs": rep.no_free_lid_pairs,
            "repair_seconds": dt, "settle_seconds": settle_s, "check_seconds": check_s, "check_prepare_seconds": prepare_s, "union_deadlock_free": chk.deadlock_free,
            "undelivered_selected_pairs": chk.undelivered,
            "unsupported_examples": unsupported,
        }));
        if let Some(m) = &mut mcast {
            eprintln!("{text}: {}", m.apply(&f, &session.rftr().mask)?);
        }
    }
    // The tables are clean when every check passed and no pair of live end ports is left
    // without a path: pairs that a fault cut off or left unsupported no longer count once a
    // later fault took one of their end ports away (`check` no longer sees them either).
    let unrouted = session.rftr().unrouted_pairs();
    let all_ok = session.checked() && unrouted == 0;
    // Full reconfiguration of the same faults.
    let t = Instant::now();
    let sp = crate::util::spinner("full reconfiguration beside it: route, compare, check");
    let full = session.full_reconfiguration();
    sp.finish_and_clear();
    let full_s = t.elapsed().as_secs_f64();
    let full_json = match &full {
        Ok(fr) => json!({
            "supported": fr.report.unrouted_pairs == fr.report.disconnected_pairs,
            "routed_pairs": fr.report.routed_pairs,
            "unrouted_pairs": fr.report.unrouted_pairs,
            "disconnected_pairs": fr.report.disconnected_pairs,
            "changed_pairs": fr.report.changed_pairs,
            "lft_entries": fr.report.delta.lft_entries,
            "lft_blocks": fr.report.delta.lft_blocks,
            "switches_touched": fr.report.delta.switches,
            "sl2vl_entries": 0,
            "deadlock_free": fr.deadlock_free,
            "seconds": full_s,
        }),
        Err(e) => json!({ "error": e.to_string(), "seconds": full_s }),
    };
    let r = session.rftr();
    let t_out = Instant::now();
    // Outputs.
    let set_opts = SetOptions {
        subnet_lst: routing::opensm::SubnetLstOptions {
            dead: Some(r.mask.clone()),
            ..Default::default()
        },
        sl2vl: routing::opensm::Emit::Always,
        // Only when a pair uses an SL other than 0: one line per (source, LID), 5 GB on a
        // fabric of 14k end ports at LMC 0.
        psl: routing::opensm::Emit::SlsUsed,
        mcast: mcast.as_ref().map(|m| m.routing.mfts.clone()),
    };
    // What a subnet manager programs (`Rftr::programmed`, as the live SM does): every LID of
    // an LMC range (virtual LIDs no repair uses follow their base LID, so `check` and
    // ibdmchk -l see every pair) and every (source, LID) no source uses on a legal path
    // (fault::rftr::complete), unless a check of the repair failed. While RFTR left pairs a
    // live path joins unrepaired, the completion adds no route (`check` then reports them,
    // as `fault` does) and only keeps the unused pairs' walks out of credit loops.
    let (mut files, mirrored, completion, to_deployed) =
        if a.summary_only && deployed_base.is_none() {
            Default::default()
        } else {
            let routing::fault::Programmed {
                tables,
                mirrored,
                completion,
            } = r.programmed(!a.minimal && session.checked());
            // With --from: what differs between the deployed tables and these, counted as
            // `fabroute diff DIR OUT` counts it.
            let to_deployed = deployed_base.as_ref().map(|old| {
                let d = routing::diff::TableDiff::between(&f, old, &tables);
                json!({
                    "lft_entries": d.lft.len(),
                    "lft_blocks": d.lft_blocks().len(),
                    "switches_touched": d.switches_touched(),
                    "sl2vl_entries": d.sl2vl.len(),
                    "path_sls": d.path_sl.len(),
                })
            });
            let files = if a.summary_only {
                Default::default()
            } else {
                write_tables(&out, &f, &tables, &set_opts)?
            };
            (files, mirrored, completion, to_deployed)
        };
    let delta = r.delta.counts();
    files.insert(
        "delta.json".into(),
        out.stream("delta.json", |w| write_delta_json(&f, r, w))?,
    );
    files.insert(
        "delta.txt".into(),
        out.stream("delta.txt", |w| write_delta_text(&f, r, w))?,
    );
    let pairs_changed: u64 = r.delta.sources.len() as u64;
    let total = |pick: fn(&routing::fault::FaultReport) -> u64| -> u64 {
        session.steps().iter().map(|s| pick(&s.repair)).sum()
    };
    let (unsupported, disconnected) = (
        total(|r| r.unsupported_pairs),
        total(|r| r.disconnected_pairs),
    );
    let summary = json!({
        "fabric": a.fabric.as_ref().map(|p| p.display().to_string()),
        "from": a.from.as_ref().map(|p| p.display().to_string()),
        "engine": a.engine, "lmc": lmc, "vls": vls, "sls_available": a.sls,
        "lid_range": [1, f.max_lid()], "files": files,
        "tie_break": a.repair.tie_break_name(), "virtual_lids_only": a.repair.virtual_lids_only,
        "faults": a.fail,
        "rftr": {
            "supported": session.ok_but_cut(),
            "affected_pairs": total(|r| r.affected_pairs),
            "repaired_pairs": total(|r| r.repaired_pairs),
            "unsupported_pairs": unsupported,
            "disconnected_pairs": disconnected,
            "unrouted_pairs": unrouted,
            "sls_used": r.sls_used(),
            "max_virtual_lids_per_destination": r.max_virtual_lids(),
            "max_transitions": r.max_transitions(),
            "changed_pairs": pairs_changed,
            "lft_entries": delta.lft_entries,
            "lft_blocks": delta.lft_blocks,
            "switches_touched": delta.switches,
            "sl2vl_entries": delta.sl2vl_entries,
            "source_updates": delta.source_updates,
            "repair_seconds": repair_s,
            "settle_seconds": settle_total_s,
            "reachability_paths": r.table_size().0,
            "reachability_hops": r.table_size().1,
            "virtual_lids_mirroring_base": mirrored,
            "completion_for_checkers": completion,
            "steps": steps,
        },
        "full_reconfiguration": full_json,
        "base_route_seconds": base_s,
        "delta_to_deployed": to_deployed,
    });
    let mut summary = summary;
    // Where the command's time went (the outputs' share is measured up to summary.json).
    let phases = [
        ("read", read_s),
        ("base route", base_s),
        ("RFTR start", start_s),
        ("check prepare", prepare_total_s),
        ("repair", repair_s),
        ("settle", settle_total_s),
        ("check", check_total_s),
        ("full reconfiguration", full_s),
        ("outputs", t_out.elapsed().as_secs_f64()),
    ];
    summary["seconds"] = json!(phases
        .iter()
        .map(|(k, v)| (k.replace(' ', "_"), json!(v)))
        .chain([("total".to_string(), json!(t0.elapsed().as_secs_f64()))])
        .collect::<serde_json::Map<_, _>>());
    // Multicast: the mended trees checked against the tables written.
    let mut mcast_ok = true;
    let mut mcast_line = None;
    if let Some(m) = &mcast {
        let tables = r.programmed(!a.minimal && session.checked()).tables;
        let (v, ok, line) = m.finish(&f, &r.mask, &tables);
        summary["multicast"] = v;
        mcast_ok = ok;
        mcast_line = Some(line);
    }
    out.write(
        "summary.json",
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    out.commit()?;
    crate::say!(
        "RFTR: {} | SLs {} | virtual LIDs/dest ≤ {} | transitions ≤ {} | LFT entries {} in {} blocks, SL2VL entries {} | {:.3} ms",
        if session.ok() {
            "all pairs repaired, deadlock-free".to_string()
        } else if session.ok_but_cut() && unrouted == 0 {
            format!("every pair a live path joins repaired, deadlock-free; the {disconnected} pairs the faults cut off lost an end port to a later fault")
        } else if session.ok_but_cut() {
            format!("every pair a live path joins repaired, deadlock-free; {disconnected} pairs cut off by the faults are not delivered ({unrouted} with both end ports alive)")
        } else if all_ok {
            "every pair with both end ports alive is routed, deadlock-free (pairs left unsupported lost an end port to a later fault; see summary.json)".to_string()
        } else {
            "NOT fully supported (see summary.json)".to_string()
        },
        r.sls_used(),
        r.max_virtual_lids(),
        r.max_transitions(),
        delta.lft_entries,
        delta.lft_blocks,
        delta.sl2vl_entries,
        repair_s * 1e3
    );
    if let Ok(fr) = &full {
        crate::say!(
            "full reconfiguration: {} pairs changed | LFT entries {} in {} blocks | {:.3} ms (route, compare and check)",
            fr.report.changed_pairs,
            fr.report.delta.lft_entries,
            fr.report.delta.lft_blocks,
            full_s * 1e3
        );
    }
    if completion.applied && !completion.routes_added {
        crate::say!(
            "for checkers that walk every (source, LID): no route added, as RFTR left pairs unrepaired (a completion would route them outside the repair and delta.txt; `check` reports them, and the unused (source, LID) pairs without a route); {} path SLs of unused pairs set and {} entries taken away where a walk does not deliver, so that unused pairs close no credit loop",
            completion.phantom_sls,
            completion.lft_entries,
        );
    } else if completion.applied {
        crate::say!(
            "for checkers that walk every (source, LID): {} LFT entries added where no source's path runs, {} path SLs of unused pairs set{}",
            completion.lft_entries,
            completion.phantom_sls,
            if completion.uncovered > 0 {
                format!(
                    ", {} unused pairs left without a legal path (`check` reports them undelivered; exit status 1)",
                    completion.uncovered
                )
            } else {
                String::new()
            }
        );
    } else if !a.minimal && !a.summary_only {
        // (the completion runs unless `--minimal` or a check failed)
        crate::say!("the tables are not completed for checkers: a check of the repair failed (see summary.json)");
    }
    if let Some(line) = mcast_line {
        crate::say!("{line}");
    }
    crate::say!(
        "time: {} | total {:.1} s",
        phases
            .iter()
            .map(|(k, v)| format!("{k} {v:.1} s"))
            .collect::<Vec<_>>()
            .join(", "),
        t0.elapsed().as_secs_f64()
    );
    crate::say!("wrote {}", a.output.display());
    if crate::out::json() {
        crate::out::document(&summary)?;
    }
    // the tables written must deliver what `check` walks: pairs the completion could not
    // cover make them unclean, as they make `check` fail
    Ok(crate::out::Status::of(all_ok && completion.uncovered == 0 && mcast_ok).into())
}
