//! Experiment D1 as tests (specification 1.2 and V7): a run deadlocks exactly when the static
//! channel dependency graph has a cycle and the load is enough, and the reported cycle lies
//! in a cyclic strongly connected component of that graph.

use crate::common;

use fabric::Fabric;
use routing::cdg::{build_cdg, cyclic_sccs};
use routing::opensm::{read_lfts, read_psl, read_sl2vl};
use routing::Routing;
use sim::*;
use std::path::PathBuf;

fn run(f: &Fabric, r: &Routing, load: f64, t_end: u64) -> Report {
    let c = Config {
        t_end,
        traffic: Traffic {
            load,
            ..Traffic::default()
        },
        ..Config::default()
    };
    simulate(f, r.clone(), c, None).unwrap()
}

/// Every buffer of the reported cycle is a (channel, VL) vertex of one cyclic SCC of the CDG,
/// and consecutive buffers are joined by CDG edges.
fn assert_cycle_in_cdg(f: &Fabric, r: &Routing, rep: &Report) {
    assert!(rep.deadlock);
    let cyc = &rep.deadlock_cycle;
    assert!(cyc.len() >= 2, "{cyc:?}");
    let cdg = build_cdg(f, r, None);
    let vertex = |b: &BufferRef| {
        let i = cdg
            .channels
            .iter()
            .position(|c| c.0 == b.channel)
            .expect("a switch-to-switch channel");
        (i * cdg.nvl + b.vl as usize) as u32
    };
    let sccs = cyclic_sccs(cdg.num_vertices(), &cdg.offsets, &cdg.targets);
    let first = vertex(&cyc[0]);
    let scc = sccs
        .iter()
        .find(|s| s.contains(&first))
        .expect("the first buffer is on a CDG cycle");
    for (i, b) in cyc.iter().enumerate() {
        let v = vertex(b);
        assert!(scc.contains(&v), "{b:?} outside the SCC");
        let next = vertex(&cyc[(i + 1) % cyc.len()]);
        assert!(
            cdg.successors(v).contains(&next),
            "{b:?} -> {:?}",
            cyc[(i + 1) % cyc.len()]
        );
        // Names and GUIDs are the fabric's.
        let n = f.node_by_name(&b.switch).unwrap();
        assert_eq!(b.guid, format!("{:#018x}", f.node(n).guid));
    }
}

/// D1a: an 8-switch ring, one host each, shortest paths, 1 VL, uniform at 0.8: a deadlock,
/// found quickly, whose cycle is the ring (8 buffers, one per switch).
#[test]
fn d1a_ring_with_shortest_paths_deadlocks() {
    let f = common::fabric("torus 8 hcas=1");
    let r = common::route(&f, "minhop");
    assert!(!routing::cdg::check(&f, &r, None).deadlock_free);
    let t = std::time::Instant::now();
    let rep = run(&f, &r, 0.8, 10 * MS);
    assert!(t.elapsed().as_secs_f64() < 1.0, "{:?}", t.elapsed());
    assert!(
        rep.deadlock && rep.deadlock_at_us.unwrap() < 2000.0,
        "{rep:?}"
    );
    assert_eq!(rep.deadlock_cycle.len(), 8);
    let mut sw: Vec<&str> = rep
        .deadlock_cycle
        .iter()
        .map(|b| b.switch.as_str())
        .collect();
    sw.sort();
    sw.dedup();
    assert_eq!(sw.len(), 8, "one buffer per switch");
    assert_cycle_in_cdg(&f, &r, &rep);
    // What is stuck stays in the network; nothing is lost.
    assert!(rep.packets_in_network > 0);
    assert_eq!(rep.packets_dropped, 0);
}

/// D1b: the same ring and LFTs with a dateline on 2 VLs never deadlocks (10 ms at 1.0).
#[test]
fn d1b_ring_with_a_dateline_never_deadlocks() {
    let f = common::fabric("torus 8 hcas=1");
    let r = sim::dateline::dateline(&f, &common::route(&f, "minhop")).unwrap();
    assert!(routing::cdg::check(&f, &r, None).deadlock_free);
    let rep = run(&f, &r, 1.0, 10 * MS);
    assert!(!rep.deadlock, "{:?}", rep.deadlock_cycle);
    assert_eq!(rep.vls, 2);
    assert!(rep.accepted > 0.3, "{}", rep.accepted);
}

fn opensm_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/opensm")
}

/// OpenSM's own tables for the 4x4 torus, read by fabroute's readers.
fn opensm(engine: &str) -> (Fabric, Routing) {
    let dir = opensm_dir();
    let lst = std::fs::read(dir.join("torus2d_4x4_h2.subnet.lst")).unwrap();
    let f = fabric::io::subnet_lst::read(&lst, "subnet.lst", Default::default())
        .unwrap()
        .fabric;
    let d = dir.join(format!("torus2d_4x4_h2.{engine}"));
    let mut r = read_lfts(
        &std::fs::read(d.join("opensm-lfts.dump")).unwrap(),
        "lfts",
        &f,
    )
    .unwrap()
    .routing;
    if d.join("opensm-sl2vl.dump").exists() {
        let b = std::fs::read(d.join("opensm-sl2vl.dump")).unwrap();
        r.sl2vl = read_sl2vl(&b, "sl2vl", &f).unwrap().sl2vl;
        let b = std::fs::read(d.join("opensm-path-sl.psl")).unwrap();
        r.path_sl = read_psl(&b, "psl", &f).unwrap().path_sl;
    }
    (f, r)
}

/// D1c: minhop (fabroute's and OpenSM's) and OpenSM's dor on the 4x4 torus with 1 VL have
/// credit loops and deadlock under uniform load at saturation; the cycles lie on CDG cycles.
#[test]
fn d1c_torus_minhop_and_dor_tables_deadlock() {
    let ours = common::fabric("torus 4x4 hcas=2");
    let ours_r = common::route(&ours, "minhop");
    let (fm, rm) = opensm("minhop");
    let (fd, rd) = opensm("dor");
    for (what, f, r) in [
        ("fabroute minhop", &ours, &ours_r),
        ("OpenSM minhop", &fm, &rm),
        ("OpenSM dor", &fd, &rd),
    ] {
        assert!(!routing::cdg::check(f, r, None).deadlock_free, "{what}");
        let rep = run(f, r, 1.0, 5 * MS);
        assert!(rep.deadlock, "{what} did not deadlock");
        assert_cycle_in_cdg(f, r, &rep);
    }
}

/// D1d: tables with an acyclic CDG (fabroute's updn, dfsssp, lash; OpenSM's LASH, DFSSSP,
/// torus-2QoS with their SL2VL and path SLs) never deadlock, even at offered 1.0.
#[test]
fn d1d_deadlock_free_tables_never_deadlock() {
    let ours = common::fabric("torus 4x4 hcas=2");
    let mut cases: Vec<(String, Fabric, Routing)> = ["updn", "dfsssp", "lash"]
        .iter()
        .map(|e| {
            (
                format!("fabroute {e}"),
                ours.clone(),
                common::route(&ours, e),
            )
        })
        .collect();
    for e in ["lash", "dfsssp", "torus-2QoS"] {
        let (f, r) = opensm(e);
        cases.push((format!("OpenSM {e}"), f, r));
    }
    for (what, f, r) in &cases {
        assert!(routing::cdg::check(f, r, None).deadlock_free, "{what}");
        for load in [0.6, 1.0] {
            let rep = run(f, r, load, 2 * MS);
            assert!(!rep.deadlock, "{what} at {load}: {:?}", rep.deadlock_cycle);
            assert!(rep.accepted > 0.1, "{what} at {load}: {}", rep.accepted);
        }
    }
    // The VL engines' tables use their VLs in the simulator too (OpenSM's LASH: case 3).
    let (what, f, r) = &cases[3];
    assert_eq!(what, "OpenSM lash");
    assert!(run(f, r, 0.1, 100 * US).vls > 1);
}

/// At low load the minhop ring does not deadlock: deadlock needs a CDG cycle *and* enough
/// load (V7).
#[test]
fn cyclic_tables_at_low_load_run_on() {
    let f = common::fabric("torus 8 hcas=1");
    let r = common::route(&f, "minhop");
    let rep = run(&f, &r, 0.05, 2 * MS);
    assert!(!rep.deadlock);
    assert!((rep.accepted - rep.offered).abs() < 0.01);
}
