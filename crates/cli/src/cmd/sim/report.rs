//! What `fabroute sim` writes and says: the series CSVs, `summary.json` (with the sweep's
//! CSV), and the text or JSON on stdout.

use super::args::Args;
use super::scenario::{Job, Scenario};
use crate::out;
use crate::util::OutputDir;
use anyhow::Result;
use serde_json::{json, Value};
use sim::{Config, Report};

/// The runs done, with what they were asked to be: everything the outputs read.
pub(super) struct Runs<'a> {
    pub a: &'a Args,
    pub loads: &'a [f64],
    pub jobs: &'a [Job],
    pub results: &'a [(Report, f64)],
    /// The configuration every run shares (each has its own load).
    pub cfg: &'a Config,
    /// When the fault happens, with one.
    pub fail_at: Option<u64>,
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

impl Runs<'_> {
    /// Several loads (a sweep): the outputs carry the load in their names.
    pub fn multi_load(&self) -> bool {
        self.loads.len() > 1
    }

    /// Writes each run's series and `summary.json`; returns the summary.
    pub fn write_data(&self, out: &OutputDir, sc: &Scenario, notes: &[String]) -> Result<Value> {
        let (a, loads, jobs, results, base_cfg) =
            (self.a, self.loads, self.jobs, self.results, self.cfg);
        let multi_load = self.multi_load();
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
        for (j, (r, _)) in jobs.iter().zip(results) {
            out.write(
                &format!("series{}.csv", tag(j)),
                sim::series_csv(r).as_bytes(),
            )?;
        }
        let runs: Vec<Value> = jobs
            .iter()
            .zip(results)
            .map(|(j, (r, w))| run_json(r, j, *w))
            .collect();
        // the configuration as run: the load is each run's (one value, or the list)
        let mut config_json = serde_json::to_value(base_cfg)?;
        config_json["traffic"]["load"] = if loads.len() == 1 {
            json!(loads[0])
        } else {
            json!(loads)
        };
        let meta = json!({
            "fabric": a.fabric.display().to_string(),
            "tables": sc.source,
            "dateline": a.dateline,
            "hop_vls": a.hop_vls,
            "static_deadlock_free": sc.static_check.deadlock_free,
            "credit_loops": sc.static_check.cycles.len(),
            "static_pairs_undelivered": sc.undelivered,
            "pattern": format!("{:?}", a.pattern).to_lowercase(),
            "size": a.size,
            "time_us": base_cfg.t_end as f64 / 1e6,
            "warmup_us": base_cfg.t_warmup as f64 / 1e6,
            "seed": a.seed,
            "config": config_json,
            "fail": a.fail,
            "fail_at_us": self.fail_at.map(|t| t as f64 / 1e6),
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
        Ok(summary)
    }

    /// The notes on stderr, then the summary as JSON or a line per run on stdout.
    pub fn print(&self, notes: &[String], summary: &Value) -> Result<()> {
        let (a, jobs, results) = (self.a, self.jobs, self.results);
        for n in notes {
            out::stderr_line(&format!("fabroute: {n}"));
        }
        if out::json() {
            out::document(summary)?;
        } else {
            for (j, (r, w)) in jobs.iter().zip(results) {
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
        Ok(())
    }
}
