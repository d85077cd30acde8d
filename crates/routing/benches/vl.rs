//! VL-engine benchmarks: nue at 1, 2 and 8 VLs beside dfsssp and lash on the fabrics OpenSM's
//! Nue was timed on (docs/vl-engines.md): a 6x6x6 torus and a 264-switch Dragonfly, plus a
//! Slim Fly and a 10x10x10 torus. Run with `cargo bench -p fabroute-routing --bench vl`; a
//! summary line per (fabric, engine) with the time of one routing in ms, max link load and
//! average hops is printed before criterion's statistics. `FABROUTE_BENCH_ENGINES` (e.g.
//! `nue1,nue8`) and `FABROUTE_BENCH_FABRICS` restrict the run.

use criterion::{criterion_group, criterion_main, Criterion};
use fabric::FaultMask;
use routing::engines::{by_name, Budget, RouteOptions};
use std::time::{Duration, Instant};

mod common;
use common::{gen, selected};

fn bench(c: &mut Criterion) {
    let fabrics = [
        ("torus6x6x6", "torus 6x6x6 hcas=2"),
        ("dragonfly8", "dragonfly 8 4 4"),
        ("slimfly7", "slimfly 7"),
        ("torus10x10x10", "torus 10x10x10 hcas=2"),
    ];
    // (label, engine, VLs)
    let engines = [
        ("nue1", "nue", 1u8),
        ("nue2", "nue", 2),
        ("nue8", "nue", 8),
        ("dfsssp", "dfsssp", 8),
        ("lash", "lash", 8),
    ];
    for (fname, spec) in fabrics {
        if !selected("FABROUTE_BENCH_FABRICS", fname) {
            continue;
        }
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let mut g = c.benchmark_group(fname);
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(1));
        g.measurement_time(Duration::from_secs(3));
        for (label, name, vls) in engines {
            if !selected("FABROUTE_BENCH_ENGINES", label) {
                continue;
            }
            let e = by_name(name).expect("registered engine");
            let opts = RouteOptions {
                budget: Budget {
                    vls,
                    ..Budget::default()
                },
                ..RouteOptions::default()
            };
            let t0 = Instant::now();
            let res = e.route(&f, &mask, &opts);
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            match &res {
                Ok(r) => {
                    let m = routing::metrics::route_metrics(&f, r, Some(&mask));
                    eprintln!(
                        "SUMMARY {fname} engine={label} ms={ms:.1} max_link_load={} avg_hops={:.3}",
                        m.link_load.max, m.sw_hops_avg
                    );
                }
                Err(err) => {
                    eprintln!("SUMMARY {fname} engine={label} declined: {err}");
                    continue;
                }
            }
            g.bench_function(label, |b| {
                b.iter(|| e.route(&f, &mask, &opts).map(|r| r.lft.len()))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
