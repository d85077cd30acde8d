//! `fabroute check` (path walk + credit-loop check of given tables) and `fabroute stats`
//! (route metrics of given tables).

use crate::util::{load_fabric, spinner, write_atomic};
use anyhow::{Context, Result};
use fabric::{BuildOptions, Fabric};
use routing::cdg::{self, CheckReport};
use routing::metrics::{self, EbbOptions, EbbPattern};
use routing::opensm::{read_fdbs, read_lfts, read_psl, read_sl2vl};
use routing::Routing;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the tables come from.
#[derive(clap::Args, Debug)]
pub struct Tables {
    /// Fabric (use OpenSM's opensm-subnet.lst to check OpenSM's tables: it carries its LIDs).
    pub fabric: PathBuf,
    /// LFTs: opensm-lfts.dump / -U file / ibroute output, or opensm.fdbs.
    #[arg(long)]
    pub lfts: PathBuf,
    /// SL2VL tables (opensm-sl2vl.dump). Default: identity.
    #[arg(long)]
    pub sl2vl: Option<PathBuf>,
    /// Path SLs in ibdmchk's PSL format. Default: SL 0 everywhere.
    #[arg(long)]
    pub psl: Option<PathBuf>,
    /// LMC of the end ports (opensm-subnet.lst lists base LIDs only). Default: the LMC that
    /// the summary.json beside the LFT file records, else 0.
    #[arg(long)]
    pub lmc: Option<u8>,
}

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

pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Loads the fabric and the tables, printing reader warnings.
pub fn load_tables(t: &Tables) -> Result<(Fabric, Routing)> {
    let set = SetInfo::beside(&t.lfts)?;
    if let Some(s) = &set {
        s.verify(&t.fabric, &read(&t.fabric)?)?;
    }
    let mut f = load_fabric(&t.fabric, BuildOptions::default())?.fabric;
    let lmc = t.lmc.or(set.as_ref().and_then(|s| s.lmc)).unwrap_or(0);
    if lmc > 0 {
        f = f
            .with_end_lmc(lmc)
            .map_err(|e| anyhow::anyhow!("{}: LMC {lmc}: {e}", t.fabric.display()))?;
    }
    let r = read_routing(
        &f,
        &t.lfts,
        t.sl2vl.as_deref(),
        t.psl.as_deref(),
        set.as_ref(),
    )?;
    Ok((f, r))
}

/// Reads tables of fabric `f` (LFTs, optional SL2VL and path SLs), printing reader warnings;
/// files of the set `set` describes are refused unless their digests are the recorded ones.
pub(crate) fn read_routing(
    f: &Fabric,
    lfts: &Path,
    sl2vl: Option<&Path>,
    psl: Option<&Path>,
    set: Option<&SetInfo>,
) -> Result<Routing> {
    if let Some(s) = set {
        for p in [sl2vl, psl].into_iter().flatten() {
            s.verify(p, &read(p)?)?;
        }
    }
    let bytes = read(lfts)?;
    if let Some(s) = set {
        s.verify(lfts, &bytes)?;
    }
    let name = lfts.display().to_string();
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    let load = if text.contains("dump_ucast_routes") {
        read_fdbs(&bytes, &name, f)?
    } else {
        read_lfts(&bytes, &name, f)?
    };
    for w in &load.warnings {
        crate::warn!("{w}");
    }
    let mut r = load.routing;
    if let Some(p) = sl2vl {
        let l = read_sl2vl(&read(p)?, &p.display().to_string(), f)?;
        for w in &l.warnings {
            crate::warn!("{w}");
        }
        r.sl2vl = l.sl2vl;
    }
    if let Some(p) = psl {
        let l = read_psl(&read(p)?, &p.display().to_string(), f)?;
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
    crate::say!(
        "CDG: {} (channel, VL) vertices, {} dependencies, SLs used {:?}, VLs used {:?}",
        rep.cdg.vertices,
        rep.cdg.edges,
        rep.cdg.sls_used,
        rep.cdg.vls_used
    );
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

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    let (f, r) = load_tables(&a.tables)?;
    let sp = spinner("walking all pairs and building the channel dependency graph");
    let rep = cdg::check(&f, &r, None);
    sp.finish_and_clear();
    if crate::out::json() {
        crate::out::document(&rep)?;
    } else {
        print_report(&rep);
    }
    Ok(crate::out::Status::of(rep.ok()).into())
}

#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub tables: Tables,
    /// Write per-directed-link route counts as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Effective bisection bandwidth over this many random bisections (0 = skip).
    #[arg(long, default_value_t = 100)]
    pub ebb_runs: usize,
    /// EBB pattern: bisect or bisect_fb_sym.
    #[arg(long, default_value = "bisect")]
    pub ebb_pattern: String,
    /// EBB seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Explicit EBB pattern file (flows `SRC DST`, runs separated by blank lines).
    #[arg(long)]
    pub pattern: Option<PathBuf>,
}

pub fn stats(a: StatsArgs) -> Result<ExitCode> {
    let (f, r) = load_tables(&a.tables)?;
    let sp = spinner("computing route metrics");
    let m = metrics::route_metrics(&f, &r, None);
    let ebb = if let Some(p) = &a.pattern {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        let runs = metrics::parse_pattern(&f, &text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        Some(metrics::ebb_flows(&f, &r, None, &runs)?)
    } else if a.ebb_runs > 0 && f.end_ports.len() >= 2 {
        let pattern = match a.ebb_pattern.as_str() {
            "bisect" => EbbPattern::Bisect,
            "bisect_fb_sym" => EbbPattern::BisectFbSym,
            o => crate::usage_bail!("--ebb-pattern {o:?}: expected bisect or bisect_fb_sym"),
        };
        Some(metrics::ebb(
            &f,
            &r,
            None,
            EbbOptions {
                runs: a.ebb_runs,
                seed: a.seed,
                pattern,
            },
        )?)
    } else {
        None
    };
    sp.finish_and_clear();
    if let Some(p) = &a.csv {
        write_atomic(p, link_loads_csv(&f, &r).as_bytes())?;
    }
    if crate::out::json() {
        crate::out::document(&serde_json::json!({ "metrics": m, "ebb": ebb }))?;
        return Ok(ExitCode::SUCCESS);
    }
    crate::say!(
        "pairs {} ({} delivered), average {:.3} switch hops, max {}",
        m.pairs,
        m.pairs_ok,
        m.sw_hops_avg,
        m.sw_hops_max
    );
    crate::say!("hop histogram (base LIDs): {:?}", m.hop_histogram);
    let l = &m.link_load;
    crate::say!(
        "link load over {} directed switch links: min {} max {} mean {:.1} stddev {:.1} ({} unused)",
        l.links, l.min, l.max, l.mean, l.stddev, l.unused
    );
    for c in &m.classes {
        let s = &c.stats;
        crate::say!(
            "  {:<12} {:>6} links  min {:>8} max {:>8} mean {:>10.1} stddev {:>9.1}",
            c.class,
            s.links,
            s.min,
            s.max,
            s.mean,
            s.stddev
        );
    }
    crate::say!("SLs used {:?}, VLs used {:?}", m.sls_used, m.vls_used);
    if let Some(e) = &ebb {
        crate::say!(
            "effective bisection bandwidth: {}",
            serde_json::to_string(e)?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Per directed switch-to-switch link: route count (base LIDs) and class, as CSV.
fn link_loads_csv(f: &Fabric, r: &Routing) -> String {
    use std::fmt::Write;
    let w = routing::walk::walk_all_with(
        f,
        r,
        None,
        routing::walk::WalkOptions {
            max_examples: 0,
            loads: true,
        },
    );
    let mut out = String::from("from_switch,from_guid,from_port,to_switch,to_port,class,routes\n");
    for (c, class) in metrics::sw_channel_classes(f, None) {
        let ch = fabric::ChannelId(c as u32);
        let (a, b) = (f.port(f.channel_src(ch)), f.port(f.channel_dst(ch)));
        let _ = writeln!(
            out,
            "{},{:#018x},{},{},{},{},{}",
            f.node(a.node).name,
            f.node(a.node).guid,
            a.num,
            f.node(b.node).name,
            b.num,
            class,
            w.channel_load.get(c).copied().unwrap_or(0)
        );
    }
    out
}
