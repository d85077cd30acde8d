//! `fabroute sm [-R ENGINE] [--lmc N] [--repair rftr|full] [--sweep-interval S]
//! [--events FILE] [--exit-after EVENT] [-o DIR]`: fabroute as the subnet manager of a
//! running fabric, attached to a umad port (under ibsim: `LD_PRELOAD=libumad2sim.so` with
//! `SIM_HOST` naming the HCA).

use crate::util::{write_tables, OutputDir};
use crate::{say, warn};
use anyhow::{Context, Result};
use routing::engines::RouteOptions;
use routing::opensm::SetOptions;
use sm::{
    discover, discover_with, find_sms, master_to_follow, Event, Lids, Live, Pipe, PipeConfig,
    RepairMode, SmConfig, Standby,
};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepairKind {
    /// RFTR: new paths for the affected pairs only, only the changed blocks pushed.
    Rftr,
    /// Route the whole fabric again (the baseline OpenSM's heavy sweep stands for).
    Full,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Routing engine (with `--repair rftr`: one RFTR can build on).
    #[arg(short = 'R', long, default_value = "updn")]
    pub engine: String,
    /// SMInfo priority (0-15) the SM answers `sminfo` and other SMs with.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=15))]
    pub priority: u8,
    /// Seconds between the SMInfo polls a standby sends its master; the master counts as
    /// gone when one poll gets no answer after `--retries`.
    #[arg(long, default_value_t = 2.0)]
    pub poll_interval: f64,
    /// LMC of the end ports: 2^LMC - 1 virtual LIDs per destination for RFTR's new paths.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: u8,
    /// Service levels available.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub sls: u8,
    #[command(flatten)]
    pub rftr: crate::args::RepairArgs,
    /// How a failure is repaired.
    #[arg(long, value_enum, default_value_t = RepairKind::Rftr)]
    pub repair: RepairKind,
    /// Seconds between light sweeps (SwitchInfo.PortStateChange of every switch), which
    /// catch failures whose trap was lost; 0 = traps only.
    #[arg(long, default_value_t = 10.0)]
    pub sweep_interval: f64,
    /// Write every event as one JSON line to this file.
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Stop after this event: `subnet_up`, `trap`, `sweep`, `link_up`, `repaired`,
    /// `link_restored`, `standby`, `take_over`, `mcast_join`, `mcast_leave`, or `EVENT:N` (the N-th such event, e.g. `repaired:2`). Without it the SM runs until `--max-seconds` or is killed.
    #[arg(long)]
    pub exit_after: Option<String>,
    /// Stop after this many seconds whatever happened (0 = no limit).
    #[arg(long, default_value_t = 0.0)]
    pub max_seconds: f64,
    /// Keep the tables in this directory in OpenSM's formats, rewritten after each repair
    /// (with delta.json: what the last repairs changed and each source's new (DLID, SL));
    /// `opensm.mcfdbs` also after multicast joins and leaves, before their events.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Multicast groups to program and keep mended: `ipoib` (the IPoIB broadcast group of
    /// every end port) or a group file (`fabroute route --mcast`'s format).
    #[arg(long)]
    pub mcast: Option<PathBuf>,
    /// Root switch GUID file for updn / ftree.
    #[arg(long)]
    pub roots: Option<PathBuf>,
    /// umad device of the port to attach to.
    #[arg(long, default_value = "/dev/infiniband/umad0")]
    pub device: String,
    /// issm device of that port (opening it marks the port as the SM's, so traps reach it).
    #[arg(long, default_value = "/dev/infiniband/issm0")]
    pub issm: String,
    /// SMPs in flight at once.
    #[arg(long, default_value_t = 16)]
    pub window: usize,
    /// Milliseconds before an SMP is sent again.
    #[arg(long, default_value_t = 100)]
    pub timeout_ms: u64,
    /// Times an SMP is sent again before it counts as failed.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
}

/// `--exit-after` parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ExitAfter {
    event: String,
    count: u32,
}

fn parse_exit_after(s: &str) -> Result<ExitAfter> {
    let (event, count) = match s.split_once(':') {
        Some((e, n)) => (
            e,
            n.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                crate::out::UsageError(format!(
                    "--exit-after {s}: the count must be a positive number"
                ))
            })?,
        ),
        None => (s, 1),
    };
    if ![
        "subnet_up",
        "trap",
        "sweep",
        "link_up",
        "repaired",
        "link_restored",
        "standby",
        "take_over",
        "mcast_join",
        "mcast_leave",
    ]
    .contains(&event)
    {
        crate::usage_bail!(
            "--exit-after {s}: expected subnet_up, trap, sweep, link_up, repaired, link_restored, standby, take_over, mcast_join, mcast_leave, or one of them with :N"
        );
    }
    Ok(ExitAfter {
        event: event.to_string(),
        count,
    })
}

fn event_name(e: &Event) -> &'static str {
    match e {
        Event::SubnetUp { .. } => "subnet_up",
        Event::Trap { .. } => "trap",
        Event::Sweep { .. } => "sweep",
        Event::LinkUp { .. } => "link_up",
        Event::Repaired { .. } => "repaired",
        Event::LinkRestored { .. } => "link_restored",
        Event::Standby { .. } => "standby",
        Event::TakeOver { .. } => "take_over",
        Event::McastJoin(_) => "mcast_join",
        Event::McastLeave(_) => "mcast_leave",
    }
}

/// The sentence an event adds when RFTR was asked for and not started.
fn rftr_note(refused: &Option<String>) -> String {
    refused
        .as_ref()
        .map_or(String::new(), |why| format!("; RFTR not started: {why}"))
}

fn describe(e: &Event) -> String {
    match e {
        Event::SubnetUp {
            switches,
            cas,
            links,
            engine,
            seconds,
            discovery_seconds,
            check_seconds,
            smps,
            lft_blocks,
            sl2vl_entries,
            mft_blocks,
            failed_smps,
            deadlock_free,
            unreachable_pairs,
            rftr_refused,
            ..
        } => format!(
            "subnet up: {switches} switches, {cas} end nodes, {links} links; discovered in {:.1} ms, routed with {engine} and programmed in {:.1} ms in all ({smps} SMPs: {lft_blocks} LFT blocks, {sl2vl_entries} SL2VL rows, {mft_blocks} MFT blocks, {failed_smps} failed); checked in {:.1} ms: {}, {unreachable_pairs} pairs undelivered{}",
            discovery_seconds * 1e3,
            seconds * 1e3,
            check_seconds * 1e3,
            if *deadlock_free { "deadlock-free" } else { "CREDIT LOOPS" },
            rftr_note(rftr_refused)
        ),
        Event::Standby {
            master_guid,
            master_node,
            master_lid,
            master_priority,
            priority,
            ..
        } => format!(
            "standby: {master_node} (port GUID {master_guid}, LID {master_lid}, priority {master_priority}) is master; this SM (priority {priority}) polls it"
        ),
        Event::TakeOver {
            master_node,
            lost,
            seconds,
            readback_seconds,
            readback_smps,
            adopted,
            refused,
            lft_blocks,
            sl2vl_entries,
            smps,
            failed_smps,
            deadlock_free,
            unreachable_pairs,
            rftr_refused,
            ..
        } => format!(
            "took over from {master_node} ({lost}) in {:.1} ms: tables read back in {:.1} ms ({readback_smps} SMPs), {}; {lft_blocks} LFT blocks and {sl2vl_entries} SL2VL rows written ({smps} SMPs, {failed_smps} failed); {}, {unreachable_pairs} pairs undelivered{}",
            seconds * 1e3,
            readback_seconds * 1e3,
            if *adopted {
                "adopted as they are".to_string()
            } else {
                format!("not adopted ({})", refused.as_deref().unwrap_or("?"))
            },
            if *deadlock_free { "deadlock-free" } else { "CREDIT LOOPS" },
            rftr_note(rftr_refused)
        ),
        Event::Trap { lid, node, ports_down, .. } => format!(
            "trap 128 from {node} (LID {lid}): {}",
            if ports_down.is_empty() {
                "no port newly down".to_string()
            } else {
                format!("port(s) {ports_down:?} down")
            }
        ),
        Event::Sweep { switches_read, changed, links_down } => format!(
            "light sweep: {switches_read} switches read, {} with a port state change, {links_down} links down",
            changed.len()
        ),
        Event::LinkUp { links } => format!(
            "link(s) {} physically up again: not taken in (a failed switch's, or a return refused), they stay failed until fabroute sm is restarted",
            links.join(", ")
        ),
        Event::LinkRestored {
            links,
            taken_in,
            seconds,
            activate_seconds,
            lft_blocks,
            sl2vl_entries,
            smps,
            failed_smps,
            returned_pairs,
            pairs_off_base,
            faults_left,
            deadlock_free,
            unreachable_pairs,
            repair,
            ..
        } => {
            if *taken_in {
                format!(
                    "link(s) {} back ({repair:?}) in {:.3} ms (ports ACTIVE in {:.3} ms): {lft_blocks} LFT blocks and {sl2vl_entries} SL2VL rows pushed in {smps} SMPs ({failed_smps} failed); {returned_pairs} pairs moved back, {pairs_off_base} still off their base path, {faults_left} fault(s) left; {}, {unreachable_pairs} pairs undelivered",
                    links.join(", "),
                    seconds * 1e3,
                    activate_seconds * 1e3,
                    if *deadlock_free { "deadlock-free" } else { "CREDIT LOOPS" }
                )
            } else {
                format!(
                    "link(s) {} physically up again, ports ACTIVE, but not taken in: the return would close a credit loop with the paths in use; they stay failed",
                    links.join(", ")
                )
            }
        }
        Event::Repaired {
            repair,
            faults,
            seconds,
            compute_seconds,
            lft_blocks,
            sl2vl_entries,
            smps,
            failed_smps,
            affected_pairs,
            unsupported_pairs,
            deadlock_free,
            unreachable_pairs,
            completion_seconds,
            completion_lft_blocks,
            completion_sl2vl_entries,
            reports,
            mft_blocks,
            ..
        } => {
            let mut t = format!(
                "repaired {} ({:?}) in {:.3} ms (compute {:.3} ms): {lft_blocks} LFT blocks and {sl2vl_entries} SL2VL rows pushed in {smps} SMPs ({failed_smps} failed); {affected_pairs} pairs affected, {unsupported_pairs} unsupported; {}, {unreachable_pairs} pairs undelivered",
                faults.join(", "),
                repair,
                seconds * 1e3,
                compute_seconds * 1e3,
                if *deadlock_free { "deadlock-free" } else { "CREDIT LOOPS" }
            );
            if *reports > 0 {
                t += &format!("; {reports} Reports to subscribed hosts");
            }
            if *mft_blocks > 0 {
                t += &format!("; multicast trees mended: {mft_blocks} MFT blocks");
            }
            if *repair == sm::RepairMode::Rftr {
                t += &format!(
                    "; then completed for checkers in {:.3} ms ({completion_lft_blocks} blocks, {completion_sl2vl_entries} SL2VL rows)",
                    completion_seconds * 1e3
                );
            }
            t
        }
        Event::McastJoin(c) | Event::McastLeave(c) => {
            let what = match (c.join, c.created, c.deleted) {
                (true, true, _) => "created and joined",
                (true, false, _) => "joined",
                (false, _, true) => "left and deleted",
                (false, _, false) => "left",
            };
            format!(
                "multicast: {} {what} {} (MLID {:#06x}), JoinState {:#x}, {} members; {} MFT blocks pushed in {:.3} ms ({} failed)",
                c.port,
                c.mgid,
                c.mlid,
                c.join_state,
                c.members,
                c.mft_blocks,
                c.seconds * 1e3,
                c.failed_smps
            )
        }
    }
}

/// Whether an event leaves the fabric in a clean state (exit status 0).
fn clean(e: &Event) -> bool {
    match e {
        Event::TakeOver {
            failed_smps,
            deadlock_free,
            unreachable_pairs,
            ..
        }
        | Event::SubnetUp {
            failed_smps,
            deadlock_free,
            unreachable_pairs,
            ..
        } => *failed_smps == 0 && *deadlock_free && *unreachable_pairs == 0,
        Event::Repaired {
            failed_smps,
            deadlock_free,
            unsupported_pairs,
            ..
        } => *failed_smps == 0 && *deadlock_free && *unsupported_pairs == 0,
        Event::LinkRestored {
            failed_smps,
            deadlock_free,
            union_deadlock_free,
            ..
        } => *failed_smps == 0 && *deadlock_free && *union_deadlock_free,
        _ => true,
    }
}

/// How often `sm -o` rewrites `opensm.mcfdbs` at most while joins and leaves keep coming.
const MCFDBS_EVERY: Duration = Duration::from_secs(1);

/// Rewrites only `opensm.mcfdbs` of the directory `write_dir` wrote (and its digest in
/// `summary.json`), each file replaced atomically: what a join or leave changes, without
/// writing the unicast tables again (the whole set when the directory is not there yet).
fn update_mcfdbs<T: mad::Transport>(
    dir: &std::path::Path,
    live: &Live<'_, T>,
    engine: &str,
) -> Result<()> {
    let summary_path = dir.join("summary.json");
    let summary: Option<serde_json::Value> = std::fs::read(&summary_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let Some(mut summary) = summary else {
        return write_dir(dir, live, engine);
    };
    let f = live.fabric();
    let text = routing::opensm::write_mcfdbs(f, Some(&live.mfts()), Some(live.mask()));
    crate::util::write_atomic(&dir.join(routing::opensm::MCFDBS_FILE), text.as_bytes())?;
    summary["files"][routing::opensm::MCFDBS_FILE] =
        crate::util::Digest::of(text.as_bytes()).into();
    crate::util::write_atomic(
        &summary_path,
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )
}

fn write_dir<T: mad::Transport>(
    dir: &std::path::Path,
    live: &Live<'_, T>,
    engine: &str,
) -> Result<()> {
    let out = OutputDir::prepare(dir)?;
    let f = live.fabric();
    let set_opts = SetOptions {
        subnet_lst: routing::opensm::SubnetLstOptions {
            dead: Some(live.mask().clone()),
            ..Default::default()
        },
        sl2vl: routing::opensm::Emit::Always,
        psl: routing::opensm::Emit::Always,
        mcast: Some(live.mfts()),
    };
    let mut files = write_tables(&out, f, live.tables(), &set_opts)?;
    // The discovered fabric itself, in node order and with the LIDs the SM assigned, so
    // that `fabroute route DIR/fabric.json` routes exactly what the SM routed.
    let digest = out.write("fabric.json", fabric::io::writers::to_json(f).as_bytes())?;
    files.insert("fabric.json".into(), digest);
    if let Some(s) = live.session() {
        let digest = out.stream("delta.json", |w| {
            crate::cmd::fault::write_delta_json(f, s.rftr(), w)
        })?;
        files.insert("delta.json".into(), digest);
    }
    let dead: Vec<String> = live
        .mask()
        .dead_links()
        .map(|l| fabric::link_name(f, l))
        .collect();
    let summary = serde_json::json!({
        "command": "sm",
        "engine": engine,
        "lmc": f.end_ports.iter().map(|&p| f.port(p).lmc).max().unwrap_or(0),
        "switches": f.num_switches(),
        "end_ports": f.end_ports.len(),
        "dead_links": dead,
        "dead_switches": live
            .mask()
            .dead_nodes()
            .map(|n| f.node(n).name.clone())
            .collect::<Vec<_>>(),
        "files": files,
    });
    out.write(
        "summary.json",
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )?;
    out.commit()
}

/// Under libumad2sim (named in LD_PRELOAD), ibsim's control socket must exist: the
/// abstract Unix socket `@NAME:ctl`, NAME from IBSIM_SOCKNAME (default `sim`), listed in
/// /proc/net/unix (as `@NAME:ctl@`). Remote ibsim (IBSIM_SERVER_NAME) is not checked.
fn check_ibsim_socket() -> Result<()> {
    let preload = std::env::var("LD_PRELOAD").unwrap_or_default();
    if !preload.contains("umad2sim") || std::env::var_os("IBSIM_SERVER_NAME").is_some() {
        return Ok(());
    }
    let name = std::env::var("IBSIM_SOCKNAME").unwrap_or_else(|_| "sim".into());
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
        return Ok(());
    };
    // The name is bound with its trailing NUL, which the table shows as a second `@`.
    let want = format!("@{name}:ctl");
    let listed = |l: &str| {
        l.split_whitespace()
            .last()
            .is_some_and(|p| p.strip_suffix('@').unwrap_or(p) == want)
    };
    if !table.lines().any(listed) {
        anyhow::bail!(
            "ibsim is not running: there is no socket {want} (start ibsim with IBSIM_SOCKNAME={name}, or set IBSIM_SOCKNAME to the name it runs with)"
        );
    }
    Ok(())
}

/// Opens the umad port `dev` (and `issm` when given), checking first that ibsim runs when
/// libumad2sim is preloaded: libumad2sim's `open` retries its connection to ibsim forever,
/// so the port is opened in a thread and given up on after 20 s.
pub(crate) fn attach(dev: &str, issm: Option<&str>) -> Result<umad::UmadPort> {
    check_ibsim_socket()?;
    let (tx, rx) = std::sync::mpsc::channel();
    let (d, i) = (dev.to_string(), issm.map(str::to_string));
    std::thread::spawn(move || {
        let _ = tx.send(umad::UmadPort::open(&d, i.as_deref()));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(r) => r.with_context(|| {
            "cannot attach to the fabric (under ibsim: LD_PRELOAD=libumad2sim.so, SIM_HOST=<HCA name>, IBSIM_SOCKNAME as ibsim's)"
        }),
        Err(_) => anyhow::bail!(
            "cannot attach to the fabric: opening {dev} did not finish in 20 s (is ibsim running with this IBSIM_SOCKNAME?)"
        ),
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let exit_after = a.exit_after.as_deref().map(parse_exit_after).transpose()?;
    if a.window == 0 || a.timeout_ms == 0 {
        crate::usage_bail!("--window and --timeout-ms must be at least 1");
    }
    if !(a.sweep_interval >= 0.0 && a.max_seconds >= 0.0) {
        crate::usage_bail!("--sweep-interval and --max-seconds must be 0 or more");
    }
    if !(a.poll_interval > 0.0 && a.poll_interval <= 3600.0) {
        crate::usage_bail!("--poll-interval must be more than 0 and at most 3600 seconds");
    }
    let engine = crate::names::engine(&a.engine, "engines", &routing::engines::engine_names())?;
    if let Some(o) = &a.output {
        // A bad -o is found before the fabric is touched.
        drop(OutputDir::prepare(o)?);
    }
    // The roots and group files name parts of the fabric and are resolved after discovery;
    // one that cannot be read is found before the fabric is touched.
    for p in [a.roots.as_deref(), a.mcast.as_deref()]
        .into_iter()
        .flatten()
    {
        let ipoib = p.as_os_str() == "ipoib" && !p.exists();
        if !ipoib && !crate::util::is_stdin(p) {
            std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()))?;
        }
    }
    let mut events_file = match &a.events {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => None,
    };
    let start = Instant::now();
    let port = attach(&a.device, Some(&a.issm))?;
    let mut pipe = Pipe::new(
        port,
        PipeConfig {
            window: a.window,
            timeout: Duration::from_millis(a.timeout_ms),
            retries: a.retries,
        },
    );
    let d = discover(&mut pipe, a.lmc).context("discovery failed")?;
    if d.failed > 0 {
        warn!(
            "{} directed routes did not answer during discovery",
            d.failed
        );
    }
    let config = |f: &fabric::Fabric| -> Result<SmConfig> {
        let mut opts = RouteOptions::default();
        if let Some(r) = &a.roots {
            opts.root_guids = crate::util::read_guid_file(r, f, crate::util::GuidList::Roots)?;
        }
        let (vls, opts) = a.rftr.plan(f, engine.as_ref(), &opts, a.sls)?;
        Ok(SmConfig {
            repair: match a.repair {
                RepairKind::Rftr => RepairMode::Rftr,
                RepairKind::Full => RepairMode::Full,
            },
            rftr: a.rftr.config(vls, a.sls),
            opts,
            sweep_interval: (a.sweep_interval > 0.0)
                .then(|| Duration::from_secs_f64(a.sweep_interval)),
            priority: a.priority,
            mcast: a
                .mcast
                .as_deref()
                .map(|p| crate::mcast::load_groups(p, f))
                .transpose()?
                .unwrap_or_default(),
        })
    };
    let mut all_clean = true;
    let mut seen: std::collections::BTreeMap<&'static str, u32> = Default::default();
    let mut log = Vec::new();
    let mut emit = |e: &Event, live: Option<&Live<'_, umad::UmadPort>>| -> Result<bool> {
        say!("{}", describe(e));
        all_clean &= clean(e);
        // The tables first, so that whoever reads the event finds them in place.
        if matches!(
            e,
            Event::SubnetUp { .. }
                | Event::TakeOver { .. }
                | Event::Repaired { .. }
                | Event::LinkRestored { .. }
        ) {
            if let (Some(o), Some(live)) = (&a.output, live) {
                write_dir(o, live, &a.engine)?;
            }
        }
        let line = serde_json::to_string(e)?;
        if let Some(w) = events_file.as_mut() {
            writeln!(w, "{line}")?;
            w.flush()?;
        }
        log.push(serde_json::to_value(e)?);
        let n = seen.entry(event_name(e)).or_default();
        *n += 1;
        Ok(exit_after
            .as_ref()
            .is_some_and(|x| x.event == event_name(e) && *n >= x.count))
    };
    // Another SM that is master (or outranks this one): stand by until it goes silent.
    let t_find = pipe.now();
    let sent_find = pipe.stats.sent;
    let others = find_sms(&mut pipe, &d).context("asking the other SMs for SMInfo")?;
    let me = (a.priority, d.fabric.port(d.sm_port).guid);
    let follow = master_to_follow(me, &others).cloned();
    let d_now;
    let (mut live, up) = match follow {
        None => Live::bring_up(&d, pipe, engine.as_ref(), config(&d.fabric)?)
            .context("bring-up failed")?,
        Some(master) => {
            let ev = Event::Standby {
                master_guid: format!("{:#018x}", master.info.guid),
                master_node: master.node.clone(),
                master_lid: master.lid,
                master_priority: master.info.priority,
                priority: a.priority,
                seconds: (pipe.now() - t_find + d.time).as_secs_f64(),
                smps: pipe.stats.sent - sent_find + d.smps,
            };
            if emit(&ev, None)? {
                return finish(log, all_clean);
            }
            let info = mad::attr::SmInfo {
                guid: me.1,
                priority: a.priority,
                ..Default::default()
            };
            let poll = Duration::from_secs_f64(a.poll_interval);
            let mut sb = Standby::new(pipe, info, master.clone(), poll);
            let lost = loop {
                if a.max_seconds > 0.0 && start.elapsed().as_secs_f64() >= a.max_seconds {
                    say!(
                        "stopping after --max-seconds {} (still standing by)",
                        a.max_seconds
                    );
                    return finish(log, all_clean);
                }
                if let Some(l) = sb.step(Duration::from_millis(200))? {
                    break l;
                }
            };
            let silent = sb.silent_for();
            let mut pipe = sb.into_pipe();
            d_now = discover_with(&mut pipe, Lids::Keep).context("discovery failed")?;
            Live::take_over(
                &d_now,
                pipe,
                engine.as_ref(),
                config(&d_now.fabric)?,
                &master,
                &lost,
                silent,
            )
            .context("take-over failed")?
        }
    };
    let mut stop = emit(&up, Some(&live))?;
    let limit = (a.max_seconds > 0.0).then(|| Duration::from_secs_f64(a.max_seconds));
    // Joins and leaves change only opensm.mcfdbs. While they keep coming it is rewritten at
    // most every MCFDBS_EVERY (at once after a quiet step), and the events wait for it, so
    // that whoever reads a join's event finds the file in place. Rewriting the whole file
    // after each join was most of the SM's time when hosts joined one after another.
    let mcast = |e: &Event| matches!(e, Event::McastJoin(_) | Event::McastLeave(_));
    let mut waiting: Vec<Event> = Vec::new();
    let mut written_at: Option<Instant> = None;
    while !stop {
        if limit.is_some_and(|l| start.elapsed() >= l) {
            say!("stopping after --max-seconds {}", a.max_seconds);
            break;
        }
        let events = live.step(Duration::from_millis(200))?;
        let Some(o) = &a.output else {
            for e in &events {
                stop |= emit(e, Some(&live))?;
            }
            continue;
        };
        let quiet = !events.iter().any(mcast);
        waiting.extend(events);
        if !quiet && written_at.is_some_and(|t| t.elapsed() < MCFDBS_EVERY) {
            continue;
        }
        if waiting.iter().any(mcast) {
            update_mcfdbs(o, &live, &a.engine)?;
            written_at = Some(Instant::now());
        }
        for e in waiting.drain(..) {
            stop |= emit(&e, Some(&live))?;
        }
    }
    if let (Some(o), true) = (&a.output, waiting.iter().any(mcast)) {
        update_mcfdbs(o, &live, &a.engine)?;
    }
    for e in waiting.drain(..) {
        emit(&e, Some(&live))?;
    }
    finish(log, all_clean)
}

/// The `--json` document of every event, and the exit status.
fn finish(log: Vec<serde_json::Value>, all_clean: bool) -> Result<ExitCode> {
    if crate::out::json() {
        crate::out::document(&serde_json::json!({ "events": log, "clean": all_clean }))?;
    }
    Ok(crate::out::Status::of(all_clean).into())
}
