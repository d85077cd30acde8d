//! Engine benchmarks on large fabrics from `fabric::gen`: a 28-ary 3-tree (21,952 HCAs, 2,352
//! switches) and a 16x16x16 torus (4,096 switches, 2 HCAs each), plus the fabrics of
//! running-opensm.md section 7 that OpenSM was timed on (22-ary and 18-ary 3-trees, 10x10x10
//! and 32x32 tori with 2 HCAs per switch). Run with
//! `cargo bench -p fabroute-routing --bench engines`; a summary line per (fabric, engine) with
//! the time of one routing in ms is printed before criterion's own statistics.
//! `FABROUTE_BENCH_ENGINES` and `FABROUTE_BENCH_FABRICS` (comma-separated names) restrict the
//! run.

use criterion::{criterion_group, criterion_main, Criterion};
use fabric::FaultMask;
use routing::engines::{by_name, RouteOptions};
use std::time::{Duration, Instant};

mod common;
use common::{gen, selected};

const TREE: &[&str] = &["ftree", "minhop", "updn", "dnup", "sssp"];
const TORUS: &[&str] = &["dor", "minhop", "updn", "dnup", "sssp"];

fn bench(c: &mut Criterion) {
    let fabrics: [(&str, &str, &[&str]); 6] = [
        ("ktree28x3", "ktree 28 3", TREE),
        ("torus16x16x16", "torus 16x16x16 hcas=2", TORUS),
        ("ktree22x3", "ktree 22 3", TREE),
        ("ktree18x3", "ktree 18 3", TREE),
        ("torus10x10x10", "torus 10x10x10 hcas=2", TORUS),
        ("torus32x32", "torus 32x32 hcas=2", TORUS),
    ];
    let opts = RouteOptions::default();
    for (fname, spec, engines) in fabrics {
        if !selected("FABROUTE_BENCH_FABRICS", fname) {
            continue;
        }
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let mut g = c.benchmark_group(fname);
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(1));
        g.measurement_time(Duration::from_secs(5));
        for &name in engines {
            if !selected("FABROUTE_BENCH_ENGINES", name) {
                continue;
            }
            let Some(e) = by_name(name) else { continue };
            let t0 = Instant::now();
            let res = e.route_detailed(&f, &mask, &opts);
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            match &res {
                Ok(r) => eprintln!(
                    "SUMMARY {fname} switches={} hcas={} engine={name} ms={ms:.0} notes={:?}",
                    f.num_switches(),
                    f.end_ports.len(),
                    r.notes
                ),
                Err(err) => {
                    eprintln!("SUMMARY {fname} engine={name} declined: {err}");
                    continue;
                }
            }
            g.bench_function(name, |b| {
                b.iter(|| e.route(&f, &mask, &opts).map(|r| r.lft.len()))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
