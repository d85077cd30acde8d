//! `fabroute stats`: route metrics of given tables — hop histograms, per-link loads overall
//! and per link class, the busiest links, effective bisection bandwidth — as text, CSV and
//! SVG pictures.

use crate::args::Tables;
use crate::cmd::check::{load_tables, tables_name};
use crate::util::{spinner, OutputDir, OutputFile};
use anyhow::{Context, Result};
use fabric::Fabric;
use routing::metrics::{self, EbbOptions, EbbPattern};
use routing::Routing;
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Draw the link loads into DIR: `link-loads.svg` (distribution of route counts over the
    /// directed switch links, one curve per link class) and `hottest-links.svg` (the busiest
    /// links by name).
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
}

/// Which effective bisection bandwidth `stats` measures.
enum Ebb {
    None,
    /// The flows of a `--pattern` file, by run.
    Flows(Vec<Vec<metrics::Flow>>),
    Random(EbbOptions),
}

/// What `stats` runs, every input read and checked: the tables, the bandwidth pattern and
/// the prepared outputs.
struct Plan {
    f: Fabric,
    r: Routing,
    ebb: Ebb,
    csv: Option<OutputFile>,
    /// The picture directory as given, and prepared.
    svg: Option<(PathBuf, OutputDir)>,
    name: String,
}

pub fn stats(a: StatsArgs) -> Result<ExitCode> {
    execute(plan(a)?)
}

fn plan(a: StatsArgs) -> Result<Plan> {
    let pattern = match a.ebb_pattern.as_str() {
        "bisect" => EbbPattern::Bisect,
        "bisect_fb_sym" => EbbPattern::BisectFbSym,
        o => crate::usage_bail!("--ebb-pattern {o:?}: expected bisect or bisect_fb_sym"),
    };
    let csv = a.csv.as_deref().map(OutputFile::prepare).transpose()?;
    let svg = match &a.svg {
        Some(d) => Some((d.clone(), OutputDir::prepare(d)?)),
        None => None,
    };
    let text = a
        .pattern
        .as_deref()
        .map(|p| {
            std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))
                .map(|t| (p, t))
        })
        .transpose()?;
    let (f, r) = load_tables(&a.tables)?;
    let ebb = if let Some((p, text)) = text {
        Ebb::Flows(
            metrics::parse_pattern(&f, &text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?,
        )
    } else if a.ebb_runs > 0 && f.end_ports.len() >= 2 {
        Ebb::Random(EbbOptions {
            runs: a.ebb_runs,
            seed: a.seed,
            pattern,
        })
    } else {
        Ebb::None
    };
    Ok(Plan {
        f,
        r,
        ebb,
        csv,
        svg,
        name: tables_name(&a.tables),
    })
}

fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        f,
        r,
        ebb,
        csv,
        svg,
        name,
    } = p;
    let sp = spinner("computing route metrics");
    let m = metrics::route_metrics(&f, &r, None);
    // EBB routes flows through the tables: with pairs they do not deliver it has no meaning
    let complete = m.pairs_ok == m.pairs;
    let ebb = match ebb {
        Ebb::None => None,
        _ if !complete => {
            crate::warn!(
                "effective bisection bandwidth skipped: {} of {} pairs are not delivered (see `fabroute check`)",
                m.pairs - m.pairs_ok,
                m.pairs
            );
            None
        }
        Ebb::Flows(runs) => Some(metrics::ebb_flows(&f, &r, None, &runs)?),
        Ebb::Random(o) => Some(metrics::ebb(&f, &r, None, o)?),
    };
    sp.finish_and_clear();
    if csv.is_some() || svg.is_some() {
        let loads = link_loads(&f, &r);
        if let Some(out) = &csv {
            out.write(link_loads_csv(&f, &loads).as_bytes())?;
        }
        if let Some((dir, out)) = svg {
            let (dist, hot) = load_pictures(&f, &loads, &name);
            out.write("link-loads.svg", dist.as_bytes())?;
            out.write("hottest-links.svg", hot.as_bytes())?;
            out.commit()?;
            crate::out::stderr_line(&format!(
                "wrote {}/link-loads.svg and hottest-links.svg",
                dir.display()
            ));
        }
    }
    if crate::out::json() {
        crate::out::document(&serde_json::json!({ "metrics": m, "ebb": ebb }))?;
        return Ok(crate::out::Status::of(complete).into());
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
            "effective bisection bandwidth ({}, {} hosts, {} runs): mean {:.3}, sd {:.3}, min {:.3}, max {:.3}",
            e.pattern,
            e.hosts,
            e.runs,
            e.mean,
            e.sd,
            e.min,
            e.max
        );
    }
    Ok(crate::out::Status::of(complete).into())
}

/// One directed switch-to-switch link and the routes (base-LID pairs) it carries.
struct LinkLoad {
    channel: fabric::ChannelId,
    class: String,
    routes: u64,
}

/// Route counts of every directed switch-to-switch link, with its class.
fn link_loads(f: &Fabric, r: &Routing) -> Vec<LinkLoad> {
    let w = routing::walk::walk_all_with(
        f,
        r,
        None,
        routing::walk::WalkOptions {
            max_examples: 0,
            loads: true,
        },
    );
    metrics::sw_channel_classes(f, None)
        .into_iter()
        .map(|(c, class)| LinkLoad {
            channel: fabric::ChannelId(c as u32),
            class,
            routes: w.channel_load.get(c).copied().unwrap_or(0),
        })
        .collect()
}

/// `S_0_0[3] -> S_1_0[4]`
fn channel_name(f: &Fabric, ch: fabric::ChannelId) -> String {
    let (a, b) = (f.port(f.channel_src(ch)), f.port(f.channel_dst(ch)));
    format!(
        "{}[{}] -> {}[{}]",
        f.label(a.node),
        a.num,
        f.label(b.node),
        b.num
    )
}

/// The two link-load pictures: the distribution of route counts per link class (links per
/// bin, one curve per class) and the 25 busiest links by name, coloured by class.
fn load_pictures(f: &Fabric, loads: &[LinkLoad], title: &str) -> (String, String) {
    use crate::plot::{BarChart, HBarChart};
    let mut classes: Vec<&str> = loads.iter().map(|l| l.class.as_str()).collect();
    classes.sort_unstable();
    classes.dedup();
    // Integer bins over [min, max]: at most 30 of them.
    let min = loads.iter().map(|l| l.routes).min().unwrap_or(0);
    let max = loads.iter().map(|l| l.routes).max().unwrap_or(0);
    let span = max - min + 1;
    let bins = 30u64.min(span).max(1);
    let width = span.div_ceil(bins).max(1);
    let x_label = if width == 1 {
        "routes through the link (base-LID pairs)".to_string()
    } else {
        format!("routes through the link (base-LID pairs; bins of {width})")
    };
    let edges: Vec<f64> = (0..bins).map(|i| (min + i * width) as f64).collect();
    let mut panels = Vec::new();
    for class in &classes {
        let mut counts = vec![0f64; bins as usize];
        let mut n = 0;
        for l in loads.iter().filter(|l| l.class == *class) {
            counts[(((l.routes - min) / width) as usize).min(bins as usize - 1)] += 1.0;
            n += 1;
        }
        let mut chart = BarChart::new(format!("{class}: {n} links"), x_label.as_str(), "links")
            .histogram(&edges, &counts);
        chart.height = 230.0;
        chart.color = crate::plot::PALETTE[panels.len() % crate::plot::PALETTE.len()].into();
        panels.push(chart.to_svg());
    }
    let dist = crate::plot::stack(&format!("Link loads per link class, {title}"), &panels);
    let mut hot: Vec<&LinkLoad> = loads.iter().collect();
    hot.sort_by(|a, b| b.routes.cmp(&a.routes).then(a.channel.0.cmp(&b.channel.0)));
    let mut bars = HBarChart::new(
        format!(
            "Busiest {} of {} directed switch links, {title}",
            hot.len().min(25),
            loads.len()
        ),
        "routes through the link (base-LID pairs)",
    );
    for l in hot.iter().take(25) {
        let ci = classes.iter().position(|c| *c == l.class).unwrap_or(0);
        let name = if classes.len() > 1 {
            format!("{} ({})", channel_name(f, l.channel), l.class)
        } else {
            channel_name(f, l.channel)
        };
        bars = bars.bar(name, l.routes as f64, ci);
    }
    if classes.len() > 1 {
        for (i, c) in classes.iter().enumerate() {
            bars = bars.legend_entry(i, *c);
        }
    }
    (dist, bars.to_svg())
}

/// Per directed switch-to-switch link: route count (base LIDs) and class, as CSV.
fn link_loads_csv(f: &Fabric, loads: &[LinkLoad]) -> String {
    use std::fmt::Write;
    let mut out = String::from("from_switch,from_guid,from_port,to_switch,to_port,class,routes\n");
    for l in loads {
        let (a, b) = (
            f.port(f.channel_src(l.channel)),
            f.port(f.channel_dst(l.channel)),
        );
        let _ = writeln!(
            out,
            "{},{:#018x},{},{},{},{},{}",
            f.node(a.node).name,
            f.node(a.node).guid,
            a.num,
            f.node(b.node).name,
            b.num,
            l.class,
            l.routes
        );
    }
    out
}
