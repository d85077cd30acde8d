//! Simulator speed: delivered packets and packet-hops per wall-clock second on one core.
//!
//! - `torus8x8_uniform_0.5`: 8x8 torus, 2 hosts per switch, LASH tables (the setup of the
//!   caminos comparison in `docs/benchmarks.md`), uniform traffic at 0.5 for 1 ms;
//! - `ktree4_3_uniform_0.3`: 4-ary 3-tree (64 hosts), ftree, 0.3, 1 ms;
//! - `ktree18_3_uniform_0.5`: 18-ary 3-tree (5,832 hosts), ftree, 0.5, 1 ms of simulated
//!   time (one iteration; set `FABROUTE_BENCH_BIG=0` to skip it).
//!
//! Run: `cargo bench -p fabroute-sim --bench sim` (prints the figures before criterion's).

use criterion::{criterion_group, criterion_main, Criterion};
use fabric::{Fabric, FaultMask};
use routing::engines::{by_name, RouteOptions};
use routing::Routing;
use sim::{simulate, Config, Traffic, MS};
use std::time::{Duration, Instant};

fn setup(spec: &str, engine: &str) -> (Fabric, Routing) {
    let f = spec
        .parse::<fabric::gen::TopoSpec>()
        .expect("spec")
        .generate()
        .expect("fabric");
    let r = by_name(engine)
        .expect("engine")
        .route(&f, &FaultMask::none(&f), &RouteOptions::default())
        .expect("routed");
    (f, r)
}

fn cfg(load: f64, t_end: u64) -> Config {
    Config {
        t_end,
        t_warmup: 0,
        traffic: Traffic {
            load,
            ..Traffic::default()
        },
        ..Config::default()
    }
}

/// One run, timed: (wall seconds, delivered packets, packet-hops).
fn once(f: &Fabric, r: &Routing, c: &Config) -> (f64, u64, u64) {
    let t = Instant::now();
    let rep = simulate(f, r.clone(), c.clone(), None).expect("runs");
    (
        t.elapsed().as_secs_f64(),
        rep.packets_delivered,
        rep.packet_hops,
    )
}

fn report(name: &str, (s, del, hops): (f64, u64, u64)) {
    println!(
        "{name}: {:.3} s wall, {del} packets delivered ({:.2} M/s), {hops} packet-hops ({:.2} M/s)",
        s,
        del as f64 / s / 1e6,
        hops as f64 / s / 1e6
    );
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("torus8x8_uniform_0.5", "torus 8x8 hcas=2", "lash", 0.5),
        ("ktree4_3_uniform_0.3", "ktree 4 3", "ftree", 0.3),
    ];
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    for (name, spec, engine, load) in cases {
        let (f, r) = setup(spec, engine);
        let conf = cfg(load, MS);
        report(name, once(&f, &r, &conf));
        g.bench_function(name, |b| b.iter(|| once(&f, &r, &conf)));
    }
    g.finish();
    if std::env::var("FABROUTE_BENCH_BIG").as_deref() != Ok("0") {
        let (f, r) = setup("ktree 18 3", "ftree");
        report("ktree18_3_uniform_0.5 (1 ms)", once(&f, &r, &cfg(0.5, MS)));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
