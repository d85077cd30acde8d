//! Repair cost of RFTR against full reconfiguration, per single inter-switch link fault, on
//! an 8x8 torus, a 16x16 torus (2 HCAs per switch) and a 3-level 8-ary fat tree, with the
//! Up*/Down* base, LMC 2 and 2 VLs. Run with `cargo bench -p fabroute-routing --bench rftr`.
//!
//! For each fabric, `FAULTS` links spread over the fabric fail one at a time on the
//! fault-free state. Each repair is timed as the median of `REPS` runs of `Rftr::apply` on a
//! fresh clone of the start state (cloning not timed), and full reconfiguration as the
//! median of `REPS` runs of the engine on the faulty fabric (the comparison that counts the
//! pairs and entries it changed is not timed: a subnet manager only needs the LFT diff), in
//! the same process and run. A markdown row per fabric is printed
//! (means over the faults; the ratio is of the means); criterion then times one fault per
//! fabric for its own statistics. `FABROUTE_BENCH_FABRICS` restricts the fabrics. The updn
//! roots are pinned (`pin_roots`) as `fabroute fault` and `fabroute sweep` do.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use fabric::{Fabric, FaultMask, LinkId};
use routing::engines::{by_name, RouteOptions};
use routing::fault::reconf::full_reconfiguration;
use routing::fault::sweep::switch_links;
use routing::fault::{base_rule, Fault, Rftr, RftrConfig};
use std::time::{Duration, Instant};

const FAULTS: usize = 8;
const REPS: usize = 7;

mod common;
use common::selected;

/// The fabric of `spec` with LMC 2 (3 virtual LIDs per end port).
fn gen(spec: &str) -> Fabric {
    common::gen(spec)
        .with_lmc(2)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Row {
    repair_ms: f64,
    full_ms: f64,
    pairs: (u64, u64),
    entries: (usize, usize),
    blocks: (usize, usize),
    sl2vl: usize,
}

fn bench(c: &mut Criterion) {
    let fabrics = [
        ("torus8x8", "torus 8x8 hcas=2"),
        ("torus16x16", "torus 16x16 hcas=2"),
        ("ktree8x3", "ktree 8 3"),
    ];
    let engine = by_name("updn").expect("updn engine");
    let opts = RouteOptions::default();
    println!(
        "| fabric | faults | RFTR repair ms | full reconf. ms | full / RFTR time | pairs changed RFTR / full | LFT entries RFTR / full | LFT blocks RFTR / full | SL2VL entries RFTR / full |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, spec) in fabrics {
        if !selected("FABROUTE_BENCH_FABRICS", name) {
            continue;
        }
        let f = gen(spec);
        let opts = engine.pin_choices(&f, &opts).expect("updn roots");
        let none = FaultMask::none(&f);
        let base = engine.route(&f, &none, &opts).expect("base routing");
        let rule = base_rule(&f, engine.as_ref(), &opts).expect("turn rule");
        let start = Rftr::new(&f, &base, rule, RftrConfig::default()).expect("rftr");
        let links = switch_links(&f);
        let step = (links.len() / FAULTS).max(1);
        let faults: Vec<LinkId> = links.iter().step_by(step).take(FAULTS).copied().collect();
        let mut rows = Vec::new();
        for &l in &faults {
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..REPS {
                let mut r = start.clone();
                let t = Instant::now();
                let rep = r.apply(Fault::Link(l));
                times.push(t.elapsed().as_secs_f64());
                last = Some((r, rep));
            }
            let (r, rep) = last.expect("REPS > 0");
            assert_eq!(rep.unsupported_pairs, 0, "{name}: single fault unsupported");
            let d = r.delta.counts();
            let mut full_times = Vec::new();
            for _ in 0..REPS {
                let t = Instant::now();
                let routed = engine
                    .route(&f, &r.mask, &opts)
                    .expect("full reconfiguration");
                full_times.push(t.elapsed().as_secs_f64());
                std::hint::black_box(routed);
            }
            let fr = full_reconfiguration(&f, engine.as_ref(), &opts, &r.mask, &base)
                .expect("full reconfiguration")
                .report;
            if std::env::var_os("FABROUTE_BENCH_DETAIL").is_some() {
                eprintln!(
                    "{name} {}: RFTR {:.3} ms ({} pairs), full {:.3} ms",
                    fabric::link_name(&f, l),
                    median(times.clone()) * 1e3,
                    rep.affected_pairs,
                    median(full_times.clone()) * 1e3
                );
            }
            rows.push(Row {
                repair_ms: median(times) * 1e3,
                full_ms: median(full_times) * 1e3,
                pairs: (rep.affected_pairs, fr.changed_pairs),
                entries: (d.lft_entries, fr.delta.lft_entries),
                blocks: (d.lft_blocks, fr.delta.lft_blocks),
                sl2vl: d.sl2vl_entries,
            });
        }
        let n = rows.len() as f64;
        let mean = |g: &dyn Fn(&Row) -> f64| rows.iter().map(g).sum::<f64>() / n;
        let pair = |a: f64, b: f64| {
            if a > 0.0 {
                format!("{a:.0} / {b:.0} ({:.1}x fewer)", b / a)
            } else {
                format!("{a:.0} / {b:.0}")
            }
        };
        let (rt, ft) = (mean(&|r| r.repair_ms), mean(&|r| r.full_ms));
        println!(
            "| {name} | {} | {rt:.3} | {ft:.3} | {:.1}x | {} | {} | {} | {:.0} / 0 |",
            rows.len(),
            ft / rt,
            pair(mean(&|r| r.pairs.0 as f64), mean(&|r| r.pairs.1 as f64)),
            pair(mean(&|r| r.entries.0 as f64), mean(&|r| r.entries.1 as f64)),
            pair(mean(&|r| r.blocks.0 as f64), mean(&|r| r.blocks.1 as f64)),
            mean(&|r| r.sl2vl as f64),
        );
        let mut g = c.benchmark_group(name);
        g.sample_size(20);
        g.warm_up_time(Duration::from_millis(200));
        g.measurement_time(Duration::from_secs(2));
        let l = faults[0];
        g.bench_function("rftr_repair", |b| {
            b.iter_batched(
                || start.clone(),
                |mut r| r.apply(Fault::Link(l)),
                BatchSize::LargeInput,
            )
        });
        let mut mask = FaultMask::none(&f);
        mask.fail_link(l);
        g.bench_function("full_reconfiguration", |b| {
            b.iter(|| engine.route(&f, &mask, &opts))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
