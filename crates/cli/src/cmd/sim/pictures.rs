//! `fabroute sim`'s SVG pictures: accepted traffic over time, the latency histogram, packets
//! lost per repair scheme, and a sweep's throughput and latency against the load.

use super::report::Runs;
use crate::plot::{BarChart, LineChart, Marker, Series};
use crate::util::OutputDir;
use anyhow::Result;
use sim::Report;

impl Runs<'_> {
    /// Writes the pictures the runs call for.
    pub fn write_pictures(&self, out: &OutputDir) -> Result<()> {
        let (a, loads, jobs, results, base_cfg) =
            (self.a, self.loads, self.jobs, self.results, self.cfg);
        let multi_load = self.multi_load();
        let fail_us = self.fail_at.map(|t| t as f64 / 1e6);
        for &load in loads {
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
            for (j, (r, _)) in jobs.iter().zip(results) {
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
        if self.fail_at.is_some() && !multi_load && jobs.len() > 1 {
            let mut lost = BarChart::new(
                format!(
                    "Packets lost after {} fails",
                    a.fail.as_deref().unwrap_or("")
                ),
                "repair scheme",
                "packets lost",
            );
            for (j, (r, _)) in jobs.iter().zip(results) {
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
                        .zip(results)
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
            for (j, (r, w)) in jobs.iter().zip(results) {
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
        Ok(())
    }
}
