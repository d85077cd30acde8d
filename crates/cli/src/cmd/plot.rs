//! `fabroute plot sweep FILES… -o FIG.svg`: the fault-tolerance figure (% of scenarios
//! supported against the number of faults, one curve per fabric, RFTR solid and full
//! reconfiguration dashed) from the JSON lines of `fabroute sweep` runs.

use crate::plot::{LineChart, Series, PALETTE};
use crate::util::{read_input, write_atomic};
use anyhow::{Context, Result};
use routing::fault::sweep::ScenarioResult;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(clap::Subcommand, Debug)]
pub enum What {
    /// % of fault scenarios supported against the number of faults, per fabric, from sweep
    /// outputs (one `fabroute sweep --faults N` run per point; shards may be given as they are).
    Sweep(SweepArgs),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Example (a 4x4 and an 8x8 torus, 1 to 4 faults):

  for t in 4x4 8x8; do fabroute gen torus $t hcas=2 -o t$t.net
    for k in 1 2 3 4; do
      fabroute sweep t$t.net --faults $k --samples 2000 -o t$t.k$k.jsonl; done; done
  fabroute plot sweep t*.k*.jsonl -o tolerance.svg

Curves are labelled by the fabric each sweep's FILE.summary.json names (its file stem and the
engine), else by the file's name up to its first dot.")]
pub struct SweepArgs {
    /// Sweep outputs (JSON lines).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The picture (SVG).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// One point of the figure.
#[derive(Debug, Default, Serialize)]
struct Point {
    fabric: String,
    faults: usize,
    scenarios: u64,
    rftr_supported: u64,
    rftr_supported_pct: f64,
    full_scenarios: u64,
    full_supported: u64,
    full_supported_pct: Option<f64>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a.what {
        What::Sweep(s) => sweep(s),
    }
}

/// The curve label of a sweep file: fabric stem and engine from its summary, else the file
/// name up to its first dot.
fn label_of(p: &Path) -> String {
    let mut sp = p.as_os_str().to_owned();
    sp.push(".summary.json");
    if let Ok(text) = std::fs::read_to_string(PathBuf::from(sp)) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
            if let Some(fab) = v["fabric"].as_str() {
                let stem = Path::new(fab)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| fab.to_string());
                return match v["engine"].as_str() {
                    Some(e) => format!("{stem} ({e})"),
                    None => stem,
                };
            }
        }
    }
    let name = p
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.split('.').next().unwrap_or(&name).to_string()
}

fn sweep(a: SweepArgs) -> Result<ExitCode> {
    // (label, faults) -> point; shards of one sweep add up.
    let mut points: BTreeMap<(String, usize), Point> = BTreeMap::new();
    // a scenario given twice (overlapping shards, a merged file beside its shards) counts once
    let mut counted: std::collections::HashSet<(String, usize, u64)> = Default::default();
    let mut repeated = 0u64;
    for p in &a.inputs {
        let bytes = read_input(p)?;
        let text = String::from_utf8_lossy(&bytes);
        let label = label_of(p);
        let mut seen = 0;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let r: ScenarioResult = serde_json::from_str(line).with_context(|| {
                format!(
                    "{}:{}: not a line of `fabroute sweep` output",
                    p.display(),
                    i + 1
                )
            })?;
            seen += 1;
            if !counted.insert((label.clone(), r.faults.len(), r.id)) {
                repeated += 1;
                continue;
            }
            let pt = points
                .entry((label.clone(), r.faults.len()))
                .or_insert_with(|| Point {
                    fabric: label.clone(),
                    faults: r.faults.len(),
                    ..Point::default()
                });
            pt.scenarios += 1;
            pt.rftr_supported += u64::from(r.supported && r.deadlock_free);
            if let Some(full) = &r.full {
                pt.full_scenarios += 1;
                pt.full_supported += u64::from(full.supported && full.deadlock_free);
            }
        }
        if seen == 0 {
            anyhow::bail!("{}: no sweep scenarios in the file", p.display());
        }
    }
    if repeated > 0 {
        crate::warn!("{repeated} scenarios were given more than once (overlapping inputs): each counted once");
    }
    for pt in points.values_mut() {
        pt.rftr_supported_pct = 100.0 * pt.rftr_supported as f64 / pt.scenarios as f64;
        pt.full_supported_pct = (pt.full_scenarios > 0)
            .then(|| 100.0 * pt.full_supported as f64 / pt.full_scenarios as f64);
    }
    let mut labels: Vec<&str> = points.keys().map(|(l, _)| l.as_str()).collect();
    labels.dedup();
    let max_faults = points.keys().map(|k| k.1).max().unwrap_or(1);
    let mut chart = LineChart::new(
        "Fault tolerance: scenarios fully repaired",
        "failed links (applied one after another)",
        "scenarios supported (%)",
    )
    .x_range(0.5, max_faults as f64 + 0.5);
    // Zoom in on the top when every point is high (curves at 99 % are flat on 0..100).
    let lowest = points
        .values()
        .flat_map(|p| [Some(p.rftr_supported_pct), p.full_supported_pct])
        .flatten()
        .fold(100.0f64, f64::min);
    let floor = if lowest >= 90.0 {
        (lowest - 0.5).floor().max(0.0)
    } else {
        0.0
    };
    chart = chart.y_range(floor, 100.0 + (100.0 - floor) * 0.03);
    chart.integer_x = true;
    // Curves often coincide (every fabric at 100 % for few faults): each series is nudged
    // sideways by a little, so that every one's dots stay visible (the x axis counts faults,
    // whole numbers, so a nudge of a few hundredths cannot be misread).
    let series_count = labels.len() * 2;
    let nudge = |k: usize| (k as f64 - (series_count as f64 - 1.0) / 2.0) * 0.035;
    for (i, label) in labels.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mine: Vec<&Point> = points.values().filter(|p| p.fabric == *label).collect();
        let rftr = mine
            .iter()
            .map(|p| (p.faults as f64 + nudge(2 * i), p.rftr_supported_pct))
            .collect();
        chart = chart.series(
            Series::line(format!("{label}: RFTR"), rftr)
                .with_dots()
                .color(color),
        );
        let full: Vec<(f64, f64)> = mine
            .iter()
            .filter_map(|p| Some((p.faults as f64 + nudge(2 * i + 1), p.full_supported_pct?)))
            .collect();
        if !full.is_empty() {
            chart = chart.series(
                Series::line(format!("{label}: full reconfiguration"), full)
                    .with_dots()
                    .dashed()
                    .color(color),
            );
        }
    }
    write_atomic(&a.output, chart.to_svg().as_bytes())?;
    let rows: Vec<&Point> = points.values().collect();
    if crate::out::json() {
        crate::out::document(&serde_json::json!({
            "output": a.output.display().to_string(),
            "points": rows,
        }))?;
    } else {
        crate::say!(
            "fabric                         faults  scenarios  RFTR supported  full supported"
        );
        for p in &rows {
            crate::say!(
                "{:<30} {:>6} {:>10} {:>14.2}% {:>15}",
                p.fabric,
                p.faults,
                p.scenarios,
                p.rftr_supported_pct,
                p.full_supported_pct
                    .map_or("-".to_string(), |v| format!("{v:.2}%"))
            );
        }
        crate::say!("wrote {}", a.output.display());
    }
    Ok(crate::out::Status::Clean.into())
}
