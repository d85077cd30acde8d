//! `fabroute check` (path walk + credit-loop check of given tables) and `fabroute stats`
//! (route metrics of given tables).

use crate::args::Tables;
use crate::util::{input_name, is_stdin, load_fabric_bytes, read_input, spinner, OutputFile};
use anyhow::{Context, Result};
use fabric::{BuildOptions, Fabric};
use routing::cdg::{self, CheckReport};
use routing::opensm::{read_fdbs, read_lfts, read_psl, read_sl2vl};
use routing::Routing;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What a `summary.json` beside the tables says about the set they belong to.
#[derive(Debug, Default)]
pub(crate) struct SetInfo {
    dir: PathBuf,
    /// The LMC the set was routed with.
    pub lmc: Option<u8>,
    files: std::collections::BTreeMap<String, String>,
}

impl SetInfo {
    /// The summary in the directory of `lfts`, when there is one (fabroute's own sets).
    pub fn beside(lfts: &Path) -> Result<Option<SetInfo>> {
        let dir = lfts.parent().map(Path::to_path_buf).unwrap_or_default();
        let p = dir.join("summary.json");
        let Ok(text) = std::fs::read_to_string(&p) else {
            return Ok(None);
        };
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a fabroute summary", p.display()))?;
        let files = v["files"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, d)| Some((k.clone(), d.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(SetInfo {
            dir,
            lmc: v["lmc"].as_u64().and_then(|l| u8::try_from(l).ok()),
            files,
        }))
    }

    /// Refuses a file of the set's directory whose bytes are not those the set wrote.
    pub fn verify(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        if path.parent().map(Path::to_path_buf).unwrap_or_default() != self.dir {
            return Ok(());
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(want) = self.files.get(&name) {
            let got = crate::util::Digest::of(bytes);
            if &got != want {
                anyhow::bail!(
                    "{} does not belong to the table set of {}: its digest {got} is not the {want} that summary.json records (a file from another run?)",
                    path.display(),
                    self.dir.join("summary.json").display()
                );
            }
        }
        Ok(())
    }
}

/// The tables' files with a set directory resolved: FABRIC a directory means its files; the
/// SL2VL and path-SL files a set's summary.json lists beside the LFTs are taken unless
/// given (a note says so: without them VL engines' tables look deadlocked).
pub fn resolve_tables(t: &Tables) -> Result<(Tables, PathBuf)> {
    let mut t = t.clone();
    if !is_stdin(&t.fabric) {
        crate::util::recover_set(&t.fabric);
    }
    if let Some(dir) = t
        .lfts
        .as_deref()
        .filter(|l| !is_stdin(l))
        .and_then(Path::parent)
    {
        crate::util::recover_set(dir);
    }
    let lfts = if t.fabric.is_dir() {
        let dir = t.fabric.clone();
        let need = |name: &str| {
            let p = dir.join(name);
            if !p.exists() {
                anyhow::bail!(
                    "{}: no {name}: a table set's directory (route -o, fault -o, sm -o, OpenSM's dump) has one",
                    dir.display()
                );
            }
            Ok(p)
        };
        t.fabric = need("opensm-subnet.lst")?;
        match t.lfts.take() {
            Some(l) => l,
            None => need("opensm-lfts.dump")?,
        }
    } else {
        match t.lfts.take() {
            Some(l) => l,
            None => crate::usage_bail!(
                "{} is a file: give its tables with --lfts FILE, or a table set's directory instead of the fabric",
                t.fabric.display()
            ),
        }
    };
    if !is_stdin(&lfts) {
        let dir = lfts.parent().map(Path::to_path_buf).unwrap_or_default();
        let listed = SetInfo::beside(&lfts)?.map(|s| s.files).unwrap_or_default();
        let beside = |name: &str| {
            let p = dir.join(name);
            (listed.contains_key(name) || t.fabric.parent() == Some(dir.as_path()))
                .then_some(p)
                .filter(|p| p.exists())
        };
        for (slot, name, what) in [
            (&mut t.sl2vl, "opensm-sl2vl.dump", "--sl2vl"),
            (&mut t.psl, "opensm-path-sl.psl", "--psl"),
        ] {
            if slot.is_none() {
                if let Some(p) = beside(name) {
                    crate::warn!(
                        "reading {} beside the LFTs (the set's own; {what} FILE takes another)",
                        p.display()
                    );
                    *slot = Some(p);
                }
            }
        }
    }
    t.lfts = Some(lfts.clone());
    Ok((t, lfts))
}

/// The name that stands for the tables in titles: the LFT file, else the set directory.
pub(crate) fn tables_name(t: &Tables) -> String {
    input_name(t.lfts.as_deref().unwrap_or(&t.fabric))
}

/// Loads the fabric and the tables, printing reader warnings. Any one of the files may be `-`
/// (standard input).
pub fn load_tables(t: &Tables) -> Result<(Fabric, Routing)> {
    let (t, lfts) = resolve_tables(t)?;
    let t = &t;
    let set = if is_stdin(&lfts) {
        None
    } else {
        SetInfo::beside(&lfts)?
    };
    // The set's own fabric, when the tables belong to a set and another fabric is given.
    let own = set
        .as_ref()
        .map(|s| s.dir.join("opensm-subnet.lst"))
        .filter(|p| p.exists() && !is_stdin(&t.fabric) && !same_file(p, &t.fabric));
    let hint = |e: anyhow::Error| {
        match &own {
        Some(p) => e.context(format!(
            "the tables belong to the set in {}, whose own fabric is {} (`fabroute check {}` reads the whole set)",
            p.parent().unwrap_or(Path::new(".")).display(),
            p.display(),
            p.parent().unwrap_or(Path::new(".")).display()
        )),
        None => e,
    }
    };
    let fabric_bytes = read_input(&t.fabric)?;
    if let Some(s) = &set {
        s.verify(&t.fabric, &fabric_bytes)?;
    }
    let mut f = load_fabric_bytes(&t.fabric, &fabric_bytes, BuildOptions::default())?.fabric;
    drop(fabric_bytes);
    let lmc = t.lmc.or(set.as_ref().and_then(|s| s.lmc)).unwrap_or(0);
    if lmc > 0 {
        f = f
            .with_end_lmc(lmc)
            .map_err(|e| anyhow::anyhow!("{}: LMC {lmc}: {e}", input_name(&t.fabric)))
            .map_err(hint)?;
    }
    let r = read_routing(
        &f,
        &lfts,
        t.sl2vl.as_deref(),
        t.psl.as_deref(),
        set.as_ref(),
        t.strict,
    )
    .map_err(hint)?;
    Ok((f, r))
}

/// True when two paths name the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Reads tables of fabric `f` (LFTs, optional SL2VL and path SLs; any may be `-`), printing
/// reader warnings; files of the set `set` describes are refused unless their digests are the
/// recorded ones.
pub(crate) fn read_routing(
    f: &Fabric,
    lfts: &Path,
    sl2vl: Option<&Path>,
    psl: Option<&Path>,
    set: Option<&SetInfo>,
    strict: bool,
) -> Result<Routing> {
    let sl2vl = sl2vl.map(|p| read_input(p).map(|b| (p, b))).transpose()?;
    let psl = psl.map(|p| read_input(p).map(|b| (p, b))).transpose()?;
    if let Some(s) = set {
        for (p, b) in [&sl2vl, &psl].into_iter().flatten() {
            s.verify(p, b)?;
        }
    }
    let bytes = read_input(lfts)?;
    if let Some(s) = set {
        s.verify(lfts, &bytes)?;
    }
    let name = input_name(lfts);
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    let load = if text.contains("dump_ucast_routes") {
        read_fdbs(&bytes, &name, f)?
    } else {
        read_lfts(&bytes, &name, f)?
    };
    drop(bytes);
    for w in &load.warnings {
        crate::warn!("{w}");
    }
    if let Some(k) = load.dump_lmc {
        crate::warn!(
            "give `--lmc {k}` to check every LID of {name} (OpenSM's opensm-subnet.lst lists base LIDs only)"
        );
    }
    let mut r = load.routing;
    if let Some((p, b)) = &sl2vl {
        let l = read_sl2vl(b, &input_name(p), f)?;
        if strict && l.missing_switches + l.missing_end_ports > 0 {
            anyhow::bail!(
                "{}: no SL2VL block for {} switches and {} end ports (--strict)",
                input_name(p),
                l.missing_switches,
                l.missing_end_ports
            );
        }
        for w in &l.warnings {
            crate::warn!("{w}");
        }
        r.sl2vl = l.sl2vl;
    }
    if let Some((p, b)) = &psl {
        let l = read_psl(b, &input_name(p), f)?;
        if strict && l.missing_pairs > 0 {
            anyhow::bail!(
                "{}: {} (source, DLID) pairs have no path SL (--strict)",
                input_name(p),
                l.missing_pairs
            );
        }
        for w in &l.warnings {
            crate::warn!("{w}");
        }
        r.path_sl = l.path_sl;
    }
    r.validate(f).map_err(anyhow::Error::msg)?;
    Ok(r)
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub tables: Tables,
    /// Draw each credit loop's witness cycle on the switches it crosses into FILE (an SVG;
    /// written only when there are loops, the first 12 drawn).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Multicast forwarding tables (opensm.mcfdbs, ours or OpenSM's). Default: the set's,
    /// when the LFTs belong to one; an empty file means no multicast.
    #[arg(long, value_name = "FILE")]
    pub mcfdbs: Option<PathBuf>,
    /// The multicast groups' members (a group file as `route --mcast` takes, or `ipoib`):
    /// then every member sends and full members must receive. Default: every end port a
    /// mask names is a full member (all an opensm.mcfdbs says).
    #[arg(long, value_name = "FILE|ipoib")]
    pub mcast: Option<PathBuf>,
    /// The SL of the multicast packets (opensm.mcfdbs does not say). Default: the SL the
    /// set's summary.json records for its multicast, else the group file's, else 0.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=15))]
    pub mcast_sl: Option<u8>,
}

/// The witness cycles of a check's credit loops as a picture (the first `max` loops).
pub fn cycle_picture(rep: &CheckReport, title: &str, max: usize) -> String {
    use crate::plot::{CycleDiagram, CyclePanel};
    let panels = rep
        .cycles
        .iter()
        .take(max)
        .enumerate()
        .map(|(i, c)| CyclePanel {
            title: format!(
                "loop {}: witness of {} hops; component of {} channels on {} switches, VLs {:?}",
                i + 1,
                c.witness.len(),
                c.channels,
                c.switches,
                c.vls
            ),
            hops: c
                .witness
                .iter()
                .map(|h| (h.switch.clone(), h.port, h.vl, h.to_port))
                .collect(),
        })
        .collect();
    let n = rep.cycles.len();
    CycleDiagram {
        title: format!("Credit loops in {title}"),
        panels,
        note: Some(if n > max {
            format!("the first {max} of {n} loops (every loop is in the text and --json output)")
        } else {
            format!("{n} loop(s); arrows: output port → next switch's input port, and the VL")
        }),
    }
    .to_svg()
}

/// Prints a check report as text.
pub fn print_report(rep: &CheckReport) {
    crate::say!(
        "pairs: {} checked, {} delivered",
        rep.pairs.checked,
        rep.pairs.ok
    );
    for (what, c) in [
        ("unreachable", &rep.unreachable_pairs),
        ("forwarding loops", &rep.loops),
        ("black holes", &rep.black_holes),
        ("misdelivered", &rep.misdelivered),
    ] {
        if c.count > 0 {
            crate::say!("{what}: {} pairs", c.count);
            for ex in &c.examples {
                crate::say!(
                    "  {}[{}] -> LID {} ({}): {}{}",
                    ex.src,
                    ex.src_port,
                    ex.dlid,
                    ex.dest,
                    ex.reason,
                    match (&ex.at_switch, ex.at_port) {
                        (Some(s), Some(p)) => format!(" at {s} (entry: port {p})"),
                        (Some(s), None) => format!(" at {s}"),
                        _ => String::new(),
                    }
                );
            }
        }
    }
    if rep.dropped_on_vl15 > 0 {
        crate::say!(
            "dropped on VL 15: {} pairs (the LFTs deliver them, but a switch's SL2VL maps their SL to VL 15)",
            rep.dropped_on_vl15
        );
        for ex in &rep.vl15_examples {
            crate::say!(
                "  {}[{}] -> LID {} ({}): SL {} at {} (port {} -> {})",
                ex.src,
                ex.src_port,
                ex.dlid,
                ex.dest,
                ex.sl,
                ex.at_switch,
                ex.in_port,
                ex.out_port
            );
        }
    }
    crate::say!(
        "CDG: {} (channel, VL) vertices, {} dependencies, SLs used {:?}, VLs used {:?}",
        rep.cdg.vertices,
        rep.cdg.edges,
        rep.cdg.sls_used,
        rep.cdg.vls_used
    );
    if rep.drops_on_vl15() {
        crate::say!(
            "DROPPED: some routes are mapped to VL 15 by the SL2VL tables (their SL at some hop), where packets are dropped"
        );
    }
    if rep.deadlock_free {
        crate::say!("no credit loops: the channel dependency graph is acyclic");
    } else {
        crate::say!(
            "CREDIT LOOPS: {} strongly connected component(s) with cycles",
            rep.cycles.len()
        );
        for (i, c) in rep.cycles.iter().enumerate() {
            crate::say!(
                "cycle {} ({} channels on {} switches, VLs {:?}):",
                i + 1,
                c.channels,
                c.switches,
                c.vls
            );
            for h in &c.witness {
                let ex = h
                    .example
                    .as_ref()
                    .map(|e| format!("   e.g. {}[{}] -> LID {}", e.src, e.src_port, e.dlid))
                    .unwrap_or_default();
                crate::say!(
                    "  {} ({}) port {} VL {} -> {} port {}{ex}",
                    h.switch,
                    h.guid,
                    h.port,
                    h.vl,
                    h.to_switch,
                    h.to_port
                );
            }
        }
    }
}

/// What `check` runs, every input read and checked: the tables, the multicast tables and
/// groups with their SL, and the prepared picture file.
struct Plan {
    f: Fabric,
    r: Routing,
    /// The multicast tables' file, when there is one.
    mcfdbs: Option<PathBuf>,
    mfts: Option<routing::mcast::Mfts>,
    /// Members given with `--mcast` (else inferred from the masks).
    groups: Option<Vec<routing::mcast::Group>>,
    svg: Option<OutputFile>,
    name: String,
}

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    execute(plan(a)?)
}

fn plan(a: CheckArgs) -> Result<Plan> {
    let svg = a.svg.as_deref().map(OutputFile::prepare).transpose()?;
    let (f, r) = load_tables(&a.tables)?;
    // Multicast: the given file, else the set's own opensm.mcfdbs.
    let mcfdbs = match &a.mcfdbs {
        Some(p) => Some(p.clone()),
        None => {
            // The set's directory: FABRIC itself, or the LFTs' when a summary.json says
            // they belong to a set.
            let dir = if a.tables.fabric.is_dir() {
                Some(a.tables.fabric.clone())
            } else {
                a.tables
                    .lfts
                    .as_deref()
                    .filter(|l| !is_stdin(l))
                    .and_then(Path::parent)
                    .filter(|d| d.join("summary.json").exists())
                    .map(Path::to_path_buf)
            };
            dir.map(|d| d.join(routing::opensm::MCFDBS_FILE))
                .filter(|p| p.exists())
        }
    };
    let mut mfts = match &mcfdbs {
        Some(p) => crate::mcast::read_set_mfts(p, &f)?.filter(|m| !m.is_empty()),
        None => None,
    };
    let mut groups = a
        .mcast
        .as_deref()
        .map(|p| crate::mcast::load_groups(p, &f))
        .transpose()?;
    let sl = a.mcast_sl.or_else(|| {
        let dir = mcfdbs.as_deref()?.parent()?;
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).ok()?).ok()?;
        v["multicast"]["own_sl_vl"]["sl"].as_u64().map(|s| s as u8)
    });
    if let Some(sl) = sl {
        mfts.iter_mut()
            .flat_map(|m| m.groups.iter_mut())
            .for_each(|g| g.sl = sl);
        groups
            .iter_mut()
            .flat_map(|g| g.iter_mut())
            .for_each(|g| g.sl = sl);
    } else if let (Some(m), Some(gs)) = (&mut mfts, &groups) {
        for g in &mut m.groups {
            if let Some(given) = gs.iter().find(|x| x.mlid == g.mlid) {
                g.sl = given.sl;
            }
        }
    }
    if groups.is_some() && mfts.is_none() {
        crate::usage_bail!(
            "--mcast gives members but there are no multicast tables: give --mcfdbs FILE (or a set with a non-empty opensm.mcfdbs)"
        );
    }
    Ok(Plan {
        f,
        r,
        mcfdbs,
        mfts,
        groups,
        svg,
        name: tables_name(&a.tables),
    })
}

fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        f,
        r,
        mcfdbs,
        mfts,
        groups,
        svg,
        name,
    } = p;
    let sp = spinner("walking all pairs and building the channel dependency graph");
    // The check's CDG serves the multicast check too (built once).
    let checked = cdg::check_keeping(&f, &r, None, false);
    let rep = checked.report;
    drop(checked.walk);
    let mc = mfts.as_ref().map(|m| {
        let c = routing::mcast::check_mcast(&f, None, m, groups.as_deref(), Some(&r));
        let cycles = routing::mcast::mcast_cycles(&f, &checked.cdg, &c);
        (c, cycles)
    });
    sp.finish_and_clear();
    if let Some(out) = &svg {
        if rep.cycles.is_empty() {
            crate::out::stderr_line(&format!(
                "fabroute: no credit loops: {} not written",
                out.path().display()
            ));
        } else {
            out.write(cycle_picture(&rep, &name, 12).as_bytes())?;
            crate::out::stderr_line(&format!("wrote {}", out.path().display()));
        }
    }
    let mc_ok = mc.as_ref().is_none_or(|(c, cy)| c.ok() && cy.is_empty());
    if crate::out::json() {
        let mut v = serde_json::to_value(&rep)?;
        if let Some((c, cycles)) = &mc {
            v["multicast"] = serde_json::json!({
                "file": mcfdbs.as_ref().map(|p| p.display().to_string()),
                "members": if groups.is_some() { "given" } else { "inferred from the masks" },
                "check": crate::mcast::check_json(c),
                "credit_loops_with_unicast": cycles,
            });
        }
        crate::out::document(&v)?;
    } else {
        print_report(&rep);
        if let (Some((c, cycles)), Some(p)) = (&mc, &mcfdbs) {
            crate::say!(
                "multicast ({}, {} group(s), members {}): {}; {}",
                p.display(),
                c.groups,
                if groups.is_some() {
                    "given"
                } else {
                    "inferred from the masks"
                },
                crate::mcast::verdict(c),
                if cycles.is_empty() {
                    "no credit loop with unicast".to_string()
                } else {
                    format!("{} CREDIT LOOP(S) with unicast", cycles.len())
                }
            );
            crate::mcast::print_issue_list(c, cycles);
        }
    }
    Ok(crate::out::Status::of(rep.ok() && mc_ok).into())
}
