//! Engine time on small real fabrics (the vendored ibnetdiscover dumps of 6-, 8- and
//! 11-switch clusters), where fixed costs dominate: every engine, warm (the rayon pool built,
//! the fabric loaded). Run with `cargo bench -p fabroute-routing --bench small`; one summary
//! line per (fabric, engine) with the median of 200 routings in µs is printed before
//! criterion's own statistics.

use criterion::{criterion_group, criterion_main, Criterion};
use fabric::io::ibnetdiscover;
use fabric::{BuildOptions, FaultMask};
use routing::engines::{by_name, engine_names, RouteOptions};
use std::time::{Duration, Instant};

fn bench(c: &mut Criterion) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let dumps = [
        "switchib_edr_2level_6sw_96hca",
        "tartu_sx6036_fdr_8sw_144hca",
        "x5_psmn_voltaire4036_qdr_ddr_11sw_89hca",
    ];
    // Build the pool once, as the CLI does before routing.
    rayon::broadcast(|_| ());
    let opts = RouteOptions::default();
    for name in dumps {
        let bytes = std::fs::read(dir.join(format!("{name}.ibnd"))).unwrap();
        let f = ibnetdiscover::read(&bytes, name, BuildOptions::default())
            .unwrap()
            .fabric;
        let mask = FaultMask::none(&f);
        let mut g = c.benchmark_group(name);
        g.sample_size(20);
        g.warm_up_time(Duration::from_millis(200));
        g.measurement_time(Duration::from_secs(1));
        for engine in engine_names() {
            let Some(e) = by_name(engine) else { continue };
            if e.route(&f, &mask, &opts).is_err() {
                eprintln!("SUMMARY {name} engine={engine} declined");
                continue;
            }
            let mut t: Vec<f64> = (0..200)
                .map(|_| {
                    let t0 = Instant::now();
                    let r = e.route(&f, &mask, &opts);
                    let dt = t0.elapsed().as_secs_f64() * 1e6;
                    assert!(r.is_ok());
                    dt
                })
                .collect();
            t.sort_by(f64::total_cmp);
            eprintln!(
                "SUMMARY {name} switches={} engine={engine} median_us={:.0} p90_us={:.0}",
                f.num_switches(),
                t[100],
                t[180]
            );
            g.bench_function(engine, |b| {
                b.iter(|| e.route(&f, &mask, &opts).map(|r| r.lft.len()))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
