//! Validation of the data-plane model (specification part 1, section 1.6): exact zero-load
//! latency, accepted = offered below saturation, saturation within the known bounds,
//! conservation and credit invariants, determinism.

use crate::common;

use fabric::{Fabric, Lid};
use routing::forward::{Control, Forward, Plane, WalkEnd};
use routing::Routing;
use sim::*;

fn cfg(load: f64, t_end: u64) -> Config {
    Config {
        t_end,
        t_warmup: t_end / 5,
        check_invariants: true,
        traffic: Traffic {
            load,
            ..Traffic::default()
        },
        ..Config::default()
    }
}

/// Switches on the path from end port `s` to end port `d` (through the forwarding view).
fn switches_on_path(f: &Fabric, r: &Routing, s: u32, d: u32) -> u64 {
    let plane = Plane::new(f, None);
    let dp = f.end_ports[d as usize];
    let lid: Lid = f.port(dp).lid;
    match Forward::new(f, &plane, r).walk_pair(s, lid, dp, |_| Control::Continue) {
        WalkEnd::Delivered { sw_hops } => sw_hops as u64 + 1,
        e => panic!("{s} -> {d}: {e:?}"),
    }
}

/// V1: one packet at a time, every (source, destination) pair: latency = t_ser +
/// H·(t_route + hdr·t_byte) + (H+1)·t_prop, exactly, in ps; with and without propagation
/// delay, 1X SDR and 4X EDR.
#[test]
fn v1_zero_load_latency_is_exact_for_every_pair() {
    for (spec, engine) in [("torus 4x4 hcas=2", "minhop"), ("ktree 4 2", "ftree")] {
        let f = common::fabric(spec);
        let r = common::route(&f, engine);
        let ne = f.end_ports.len() as u32;
        for (rate, t_prop) in [(LinkRate::SDR_1X, 0), (LinkRate::EDR_4X, 5 * NS)] {
            let LinkRate::Uniform { ps_per_byte } = rate else {
                unreachable!()
            };
            let tb = ps_per_byte as u64;
            // One packet per pair, 20 µs apart: never two in the network at once.
            let mut trace = Vec::new();
            let mut expect = Vec::new();
            for s in 0..ne {
                for d in 0..ne {
                    if s != d {
                        let h = switches_on_path(&f, &r, s, d);
                        expect.push(58 * tb + h * (100 * NS + 8 * tb) + (h + 1) * t_prop);
                        trace.push((trace.len() as u64 * 20 * US, s, d, 58));
                    }
                }
            }
            // Run each packet alone to read its latency (min = max = mean).
            for (i, &(_, s, d, b)) in trace.iter().enumerate().step_by(7) {
                let mut c = cfg(0.0, 30 * US);
                c.t_warmup = 0;
                c.model.link_rate = rate;
                c.model.t_prop = t_prop;
                c.traffic.trace = vec![(US, s, d, b)];
                let rep = simulate(&f, r.clone(), c, None).unwrap();
                assert_eq!(rep.packets_delivered, 1, "{spec} {s}->{d}");
                assert_eq!(
                    (rep.latency_ns.max * 1000.0).round() as u64,
                    expect[i],
                    "{spec} {s}->{d} at {ps_per_byte} ps/B, t_prop {t_prop}"
                );
                assert_eq!(rep.latency_ns.mean, rep.latency_ns.max);
            }
            // And the whole trace in one run: the mean equals the mean of the formula.
            let mut c = cfg(0.0, trace.len() as u64 * 20 * US + 10 * US);
            c.t_warmup = 0;
            c.model.link_rate = rate;
            c.model.t_prop = t_prop;
            c.traffic.trace = trace.clone();
            let rep = simulate(&f, r.clone(), c, None).unwrap();
            assert_eq!(rep.packets_delivered, trace.len() as u64);
            let want = expect.iter().sum::<u64>() as f64 / expect.len() as f64 / 1000.0;
            assert!((rep.latency_ns.mean - want).abs() < 1e-6, "{spec}");
            assert_eq!(
                rep.packet_hops,
                trace
                    .iter()
                    .map(|&(_, s, d, _)| switches_on_path(&f, &r, s, d))
                    .sum::<u64>()
            );
        }
    }
}

/// V2: one flow at offered 1.0 gets the whole link (16-credit buffers cover the credit round
/// trip); the credit invariant holds all along.
#[test]
fn v2_single_flow_gets_the_link() {
    let f = common::fabric("torus 4x4 hcas=2");
    let r = common::route(&f, "minhop");
    let mut c = cfg(1.0, 500 * US);
    c.traffic.pattern = Pattern::Flows(vec![(0, 17)]);
    let rep = simulate(&f, r, c, None).unwrap();
    assert_eq!(rep.senders, 1);
    assert!((rep.offered - 1.0).abs() < 1e-3, "{}", rep.offered);
    assert!(rep.accepted > 0.995, "accepted {}", rep.accepted);
    assert!(rep.invariant_checks >= 10);
}

/// Below saturation accepted traffic equals offered traffic, for every pattern.
#[test]
fn low_load_accepted_equals_offered() {
    let f = common::fabric("torus 4x4 hcas=2");
    let r = common::route(&f, "updn");
    for pattern in [
        Pattern::Uniform,
        Pattern::Permutation,
        Pattern::Bisect { both_ways: false },
        Pattern::Bisect { both_ways: true },
        Pattern::Hotspot {
            hot: Some(3),
            fraction: 0.02,
        },
    ] {
        for arrival in [Arrival::Bernoulli, Arrival::Poisson] {
            let mut c = cfg(0.1, MS);
            c.traffic.pattern = pattern.clone();
            c.traffic.arrival = arrival;
            let rep = simulate(&f, r.clone(), c, None).unwrap();
            assert!(
                (rep.accepted - rep.offered).abs() < 0.01 && (rep.offered - 0.1).abs() < 0.015,
                "{pattern:?} {arrival:?}: offered {} accepted {}",
                rep.offered,
                rep.accepted
            );
            assert!(!rep.deadlock);
            assert_eq!(rep.packets_dropped, 0);
            assert!(rep.invariant_checks > 0);
        }
    }
}

/// Packet sizes from a distribution: credits per packet vary, the invariants still hold and
/// accepted = offered at low load.
#[test]
fn distributed_sizes_keep_the_invariants() {
    let f = common::fabric("ktree 4 2");
    let r = common::route(&f, "ftree");
    for size in [
        SizeDist::Uniform { min: 20, max: 300 },
        SizeDist::Choice(vec![(58, 0.8), (1000, 0.2)]),
    ] {
        let mut c = cfg(0.2, MS);
        c.traffic.size = size.clone();
        c.model.in_buf_bytes = 2048;
        c.model.out_buf_bytes = 2048;
        let rep = simulate(&f, r.clone(), c, None).unwrap();
        assert!(
            (rep.accepted - rep.offered).abs() < 0.01,
            "{size:?}: {rep:?}"
        );
        assert!((rep.offered - 0.2).abs() < 0.02);
        // Near saturation too.
        let mut c = cfg(0.9, 300 * US);
        c.traffic.size = size;
        c.model.in_buf_bytes = 2048;
        c.model.out_buf_bytes = 2048;
        let rep = simulate(&f, r.clone(), c, None).unwrap();
        assert!(!rep.deadlock && rep.invariant_checks > 0);
    }
}

/// Saturation of uniform traffic: the 4-ary 3-tree (64 hosts, ftree) carries most of the
/// offered load — nearly all of it with a crossbar speed-up of 2 (input and output buffers
/// with speed-up 2 emulate output queueing), about two thirds without (each input sends one
/// packet at a time: head-of-line blocking as in V3); the 8x8 torus (LASH, 5 VLs) saturates
/// below its bisection bound (8/k = 1 for k = 8) and below the bound of its most loaded link
/// (127 / 320 pairs = 0.40), far below the tree, and accepted traffic does not collapse past
/// the knee.
#[test]
fn saturation_within_known_bounds() {
    let f = common::fabric("ktree 4 3");
    let r = common::route(&f, "ftree");
    let mut c = cfg(1.0, 400 * US);
    c.check_invariants = false;
    let tree = simulate(&f, r.clone(), c.clone(), None).unwrap();
    assert!(
        tree.accepted > 0.55 && tree.accepted < 0.8,
        "tree {}",
        tree.accepted
    );
    c.model.xbar_speedup = 2;
    let fast = simulate(&f, r, c, None).unwrap();
    assert!(
        fast.accepted > 0.9 && fast.accepted <= 1.0 + 1e-9,
        "tree with speed-up 2: {}",
        fast.accepted
    );

    let f = common::fabric("torus 8x8 hcas=2");
    let r = common::route(&f, "lash");
    let max_load = routing::metrics::route_metrics(&f, &r, None).link_load.max;
    let mut accepted = Vec::new();
    for load in [0.1, 0.5, 1.0] {
        let mut c = cfg(load, 400 * US);
        c.check_invariants = false;
        let rep = simulate(&f, r.clone(), c, None).unwrap();
        assert!(!rep.deadlock);
        accepted.push(rep.accepted);
    }
    assert!((accepted[0] - 0.1).abs() < 0.01, "{accepted:?}");
    let bound = 127.0 / max_load as f64;
    assert!(
        accepted[1] < bound && accepted[2] < bound,
        "{accepted:?} vs {bound}"
    );
    assert!(accepted[2] > 0.6 * bound, "{accepted:?} vs {bound}");
    assert!(accepted[2] < tree.accepted, "{accepted:?}");
    assert!(accepted[2] > 0.9 * accepted[1], "no collapse: {accepted:?}");
}

/// The 7x7 torus (98 hosts), dimension-order routing with hop-incremented VLs (6 VLs, no
/// credit loop), uniform traffic: with speed-up 2 it saturates within 10 % of the bound of its
/// most loaded link (97 / 168 pairs = 0.577; caminos, every VC of an input crossing at once,
/// reaches 0.558 on the same setup: docs/benchmarks.md, S4); with speed-up 1 lower, as an
/// input's VLs take turns.
#[test]
fn hop_vl_torus_saturates_near_its_link_bound() {
    let f = common::fabric("torus 7x7 hcas=2");
    let mut r = common::route(&f, "dor");
    let paths = routing::vl::paths::Paths::of(&f, &r, None);
    routing::engines::hopvl::hop_vls(&f, &mut r, &paths, routing::engines::Budget::default())
        .unwrap();
    assert!(routing::cdg::check(&f, &r, None).deadlock_free);
    let max_load = routing::metrics::route_metrics(&f, &r, None).link_load.max;
    let bound = 97.0 / max_load as f64;
    let run = |speedup: u32| {
        let mut c = cfg(0.7, 400 * US);
        c.check_invariants = false;
        c.model.xbar_speedup = speedup;
        let rep = simulate(&f, r.clone(), c, None).unwrap();
        assert!(!rep.deadlock);
        rep.accepted
    };
    let (one, two) = (run(1), run(2));
    assert!(two < bound && two > 0.9 * bound, "{two} vs {bound}");
    assert!(one < two, "{one} vs {two}");
}

/// V9: the same seed gives the same report, series included; another seed another one.
#[test]
fn v9_deterministic() {
    let f = common::fabric("torus 4x4 hcas=2");
    let r = common::route(&f, "minhop");
    let run = |seed| {
        let mut c = cfg(0.7, 300 * US);
        c.seed = seed;
        c.check_invariants = false;
        simulate(&f, r.clone(), c, None).unwrap()
    };
    let (a, b, other) = (run(7), run(7), run(8));
    assert_eq!(a, b);
    assert_eq!(series_csv(&a), series_csv(&b));
    assert_ne!(series_csv(&a), series_csv(&other));
}

/// The series adds up: per-bin counts sum to the totals, and what is outstanding at the end
/// of the last bin is what the run reports as in the network and in source queues.
#[test]
fn series_add_up_to_the_totals() {
    let f = common::fabric("torus 4x4 hcas=2");
    let r = common::route(&f, "updn");
    let rep = simulate(&f, r, cfg(0.95, 200 * US), None).unwrap();
    let sum = |g: fn(&Bin) -> u64| rep.series.iter().map(g).sum::<u64>();
    assert_eq!(sum(|b| b.generated_packets), rep.packets_generated);
    assert_eq!(sum(|b| b.delivered_packets), rep.packets_delivered);
    let last = rep.series.last().unwrap();
    assert_eq!(last.in_network, rep.packets_in_network);
    assert_eq!(last.in_source_queues, rep.packets_in_source_queues);
    assert_eq!(
        rep.packets_generated,
        rep.packets_delivered
            + rep.packets_dropped
            + rep.packets_in_network
            + rep.packets_in_source_queues
    );
    assert_eq!(rep.series.len(), 20);
}
