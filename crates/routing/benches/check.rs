//! Walk + CDG on a large 3-level fat tree (k-ary, k = 44 by default: 21,296 HCAs, 2,420
//! switches) routed destination-mod-k up/down. `FABROUTE_BENCH_K` picks another (even) k.
//!
//! Run: `cargo bench -p fabroute-routing --bench check`

use criterion::{criterion_group, criterion_main, Criterion};
use fabric::{Fabric, FabricBuilder, Lid, NodeId, NodeKind, Speed, Width};
use routing::Routing;
use std::hint::black_box;
use std::time::Instant;

fn fat_tree3(k: usize) -> Fabric {
    let h = k / 2;
    let mut b = FabricBuilder::new();
    let mut level = Vec::new();
    let mut guid = 0x1000u64;
    let mut add = |b: &mut FabricBuilder, kind, name: String, lv: u32, np: usize| {
        guid += 4;
        level.push(lv);
        b.add_node(kind, np as u8, guid, name, "").expect("node")
    };
    let link = |b: &mut FabricBuilder, x: NodeId, px: usize, y: NodeId, py: usize| {
        b.connect(x, px as u8, y, py as u8, Width::X4, Speed::Edr)
            .expect("link");
    };
    let core: Vec<NodeId> = (0..h * h)
        .map(|c| {
            add(
                &mut b,
                NodeKind::Switch,
                format!("C{}_{}", c / h, c % h),
                0,
                k,
            )
        })
        .collect();
    for p in 0..k {
        let aggs: Vec<NodeId> = (0..h)
            .map(|a| add(&mut b, NodeKind::Switch, format!("A{p}_{a}"), 1, k))
            .collect();
        for (a, &ag) in aggs.iter().enumerate() {
            for j in 0..h {
                link(&mut b, ag, h + 1 + j, core[a * h + j], p + 1);
            }
        }
        for e in 0..h {
            let es = add(&mut b, NodeKind::Switch, format!("E{p}_{e}"), 2, k);
            for (a, &ag) in aggs.iter().enumerate() {
                link(&mut b, es, h + 1 + a, ag, e + 1);
            }
            for i in 0..h {
                let hn = add(&mut b, NodeKind::Ca, format!("H{p}_{e}_{i}"), u32::MAX, 1);
                link(&mut b, hn, 1, es, i + 1);
            }
        }
    }
    b.hints.level = level;
    b.build().expect("fabric")
}

/// Destination-mod-k up/down tables (every end-port LID).
fn dmodk(f: &Fabric, k: usize) -> Routing {
    let h = k / 2;
    let mut r = Routing::empty(f);
    let parse = |name: &str| -> Vec<usize> {
        name[1..]
            .split('_')
            .map(|x| x.parse().unwrap_or(0))
            .collect()
    };
    let sw: Vec<(u8, Vec<usize>)> = f
        .switches
        .iter()
        .map(|&n| {
            let name = &f.node(n).name;
            (name.as_bytes()[0], parse(name))
        })
        .collect();
    for lid in 1..f.lid_owner.len() {
        let Some(p) = f.lid_port(lid as Lid) else {
            continue;
        };
        if f.is_switch(f.port(p).node) {
            continue;
        }
        let v = parse(&f.node(f.port(p).node).name);
        let (dp, de, di) = (v[0], v[1], v[2]);
        let g = (dp * h + de) * h + di;
        for (s, (kind, c)) in sw.iter().enumerate() {
            let port = match kind {
                b'C' => dp + 1,
                b'A' if c[0] == dp => de + 1,
                b'A' => h + 1 + (g / h) % h,
                _ if c[0] == dp && c[1] == de => di + 1,
                _ => h + 1 + g % h,
            };
            r.lft_of_mut(fabric::SwitchIdx(s as u32))[lid] = port as u8;
        }
    }
    r
}

fn bench(c: &mut Criterion) {
    let k: usize = std::env::var("FABROUTE_BENCH_K")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(44);
    let t = Instant::now();
    let f = fat_tree3(k);
    let r = dmodk(&f, k);
    eprintln!(
        "fat tree k={k}: {} HCAs, {} switches, {} links, {} LIDs; built in {:.2?}",
        f.end_ports.len(),
        f.num_switches(),
        f.links.len(),
        f.max_lid(),
        t.elapsed()
    );
    let w = routing::walk::walk_all(&f, &r, None);
    let rep = routing::cdg::check(&f, &r, None);
    eprintln!(
        "pairs {} ok {}; CDG {} vertices {} edges; deadlock-free {}",
        w.pairs_checked, w.pairs_ok, rep.cdg.vertices, rep.cdg.edges, rep.deadlock_free
    );
    let mut g = c.benchmark_group(format!("fat_tree_k{k}"));
    g.sample_size(10);
    g.bench_function("walk_all", |b| {
        b.iter(|| black_box(routing::walk::walk_all(&f, &r, None)))
    });
    g.bench_function("build_cdg", |b| {
        b.iter(|| black_box(routing::cdg::build_cdg(&f, &r, None)))
    });
    g.bench_function("check", |b| {
        b.iter(|| black_box(routing::cdg::check(&f, &r, None)))
    });
    g.bench_function("ebb_bisect_100_runs", |b| {
        b.iter(|| {
            black_box(routing::metrics::ebb(
                &f,
                &r,
                None,
                routing::metrics::EbbOptions {
                    pattern: routing::metrics::EbbPattern::Bisect,
                    runs: 100,
                    seed: 1,
                },
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
