//! Engine benchmarks on large fabrics: a 28-ary 3-tree (21,952 HCAs, 2,352 switches) and a
//! 16x16x16 torus (4,096 switches, 2 HCAs each). Run with
//! `cargo bench -p fabroute-routing --bench engines`; a summary line per (fabric, engine)
//! with the time of one routing in ms is printed before criterion's own statistics.
//! `FABROUTE_BENCH_ENGINES` and `FABROUTE_BENCH_FABRICS` (comma-separated) restrict the run.

use criterion::{criterion_group, criterion_main, Criterion};
use fabric::{Fabric, FabricBuilder, FaultMask, NodeId, NodeKind, Speed, Width};
use routing::engines::{by_name, RouteOptions};
use std::time::{Duration, Instant};

fn guid(i: usize) -> u64 {
    0x0002_c900_0000_0000 + (i as u64) * 0x100
}

/// k-ary n-tree, level 0 = roots (in the hints), k HCAs per leaf.
fn kary_ntree(k: usize, n: usize) -> Fabric {
    let per = k.pow(n as u32 - 1);
    let mut b = FabricBuilder::new();
    let mut sw = vec![vec![NodeId(0); per]; n];
    for (l, row) in sw.iter_mut().enumerate() {
        for (w, slot) in row.iter_mut().enumerate() {
            let i = l * per + w;
            *slot = b
                .add_node(
                    NodeKind::Switch,
                    (2 * k) as u8,
                    guid(i),
                    format!("S{l}_{w}"),
                    "switch",
                )
                .unwrap();
        }
    }
    let digit = |w: usize, i: usize| (w / k.pow(i as u32)) % k;
    for l in 0..n - 1 {
        for w in 0..per {
            for x in 0..k {
                let wl = w - digit(w, l) * k.pow(l as u32) + x * k.pow(l as u32);
                b.connect(
                    sw[l][w],
                    (k + 1 + x) as u8,
                    sw[l + 1][wl],
                    1 + digit(w, l) as u8,
                    Width::X4,
                    Speed::Edr,
                )
                .unwrap();
            }
        }
    }
    let mut h = 0;
    for &leaf in &sw[n - 1] {
        for c in 0..k {
            let ca = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    guid(1_000_000 + h),
                    format!("H{h}"),
                    format!("node{h} HCA-1"),
                )
                .unwrap();
            h += 1;
            b.connect(leaf, (k + 1 + c) as u8, ca, 1, Width::X4, Speed::Edr)
                .unwrap();
        }
    }
    b.hints.roots = sw[0].clone();
    b.hints.kind = format!("{k}-ary {n}-tree");
    b.build().unwrap()
}

/// 3D torus with `cas` HCAs per switch, coordinates in the hints.
fn torus3(d: u32, cas: u8) -> Fabric {
    let mut b = FabricBuilder::new();
    let total = (d * d * d) as usize;
    let idx = |x: u32, y: u32, z: u32| (x + d * (y + d * z)) as usize;
    let mut sw = Vec::with_capacity(total);
    let mut coords = Vec::with_capacity(total);
    for i in 0..total as u32 {
        let c = vec![i % d, (i / d) % d, i / (d * d)];
        sw.push(
            b.add_node(
                NodeKind::Switch,
                6 + cas,
                guid(i as usize),
                format!("S{i}"),
                "torus",
            )
            .unwrap(),
        );
        coords.push(c);
    }
    for i in 0..total {
        let c = &coords[i];
        for k in 0..3 {
            let mut nc = c.clone();
            nc[k] = (nc[k] + 1) % d;
            let j = idx(nc[0], nc[1], nc[2]);
            b.connect(
                sw[i],
                1 + 2 * k as u8,
                sw[j],
                2 + 2 * k as u8,
                Width::X4,
                Speed::Edr,
            )
            .unwrap();
        }
    }
    for (i, &s) in sw.iter().enumerate() {
        for c in 0..cas {
            let ca = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    guid(1_000_000 + i * 4 + c as usize),
                    format!("H{i}_{c}"),
                    "host",
                )
                .unwrap();
            b.connect(s, 7 + c, ca, 1, Width::X4, Speed::Edr).unwrap();
        }
    }
    let mut hc = vec![Vec::new(); b.num_nodes()];
    for (i, &s) in sw.iter().enumerate() {
        hc[s.idx()] = coords[i].clone();
    }
    b.hints.coords = hc;
    b.hints.dims = vec![d; 3];
    b.hints.wrap = vec![true; 3];
    b.hints.kind = format!("torus {d}x{d}x{d}");
    b.build().unwrap()
}

/// `FABROUTE_BENCH_ENGINES=ftree,sssp` / `FABROUTE_BENCH_FABRICS=torus16x16x16` restrict the
/// run (unset = everything).
fn selected(var: &str, name: &str) -> bool {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v.split(',').any(|x| x == name),
        _ => true,
    }
}

fn bench(c: &mut Criterion) {
    let fabrics: Vec<(&str, Fabric, &[&str])> = vec![
        (
            "ktree28x3",
            kary_ntree(28, 3),
            &["ftree", "minhop", "updn", "dnup", "sssp"],
        ),
        (
            "torus16x16x16",
            torus3(16, 2),
            &["dor", "minhop", "updn", "dnup", "sssp"],
        ),
    ];
    let opts = RouteOptions::default();
    for (fname, f, engines) in &fabrics {
        let mask = FaultMask::none(f);
        let mut g = c.benchmark_group(*fname);
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(1));
        g.measurement_time(Duration::from_secs(5));
        for &name in engines.iter() {
            if !selected("FABROUTE_BENCH_ENGINES", name)
                || !selected("FABROUTE_BENCH_FABRICS", fname)
            {
                continue;
            }
            let e = by_name(name).unwrap();
            let t0 = Instant::now();
            let res = e.route_detailed(f, &mask, &opts);
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
                b.iter(|| e.route(f, &mask, &opts).map(|r| r.lft.len()))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
