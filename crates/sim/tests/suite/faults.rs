//! Faults and reconfiguration (experiment E1 in small, V8): a link fails under traffic, and
//! RFTR's delta, static full reconfiguration and dynamic full reconfiguration repair it.

use crate::common;

use fabric::{Fabric, LinkId};
use routing::engines::{by_name, RouteOptions};
use routing::fault::{Fault, RftrConfig, Session};
use routing::tables::update::{self, Update};
use routing::Routing;
use sim::*;

struct Setup {
    f: Fabric,
    /// The engine's fault-free tables (what full reconfiguration starts from).
    base: Routing,
    /// RFTR's fault-free tables: the engine's with the virtual LIDs it owns cleared (what a
    /// subnet manager running RFTR programs before any fault).
    base_rftr: Routing,
    rftr: Routing,
    rftr_blocks: usize,
    sources: std::collections::BTreeMap<(u32, u32), (fabric::Lid, u8)>,
    full: Routing,
    full_blocks: usize,
    fault: Fault,
}

/// Up*/Down* on `spec` with LMC 2; the switch-to-switch link whose failure affects the most
/// pairs (or a whole switch).
fn setup(spec: &str, switch: bool) -> Setup {
    let f = common::fabric(spec);
    let engine = by_name("updn").unwrap();
    let opts = RouteOptions::default();
    let start = || Session::start(&f, engine.as_ref(), &opts, RftrConfig::default()).unwrap();
    let fault = if switch {
        Fault::Switch(f.switches[5])
    } else {
        let links = routing::fault::sweep::switch_links(&f);
        let best: LinkId = *links
            .iter()
            .max_by_key(|&&l| start().apply(Fault::Link(l)).repair.affected_pairs)
            .unwrap();
        Fault::Link(best)
    };
    let mut s = start();
    let base_rftr = s.rftr().routing.clone();
    let step = s.apply(fault).clone();
    assert!(step.ok(), "RFTR repairs it: {:?}", step.repair);
    let full = s.full_reconfiguration().unwrap();
    assert!(full.deadlock_free);
    let (base, rftr) = (s.base().clone(), s.rftr().routing.clone());
    let (rftr_blocks, sources) = (s.rftr().delta.lft_blocks(), s.rftr().delta.sources.clone());
    drop(s);
    Setup {
        base,
        base_rftr,
        rftr,
        rftr_blocks,
        sources,
        full_blocks: full.report.delta.lft_blocks,
        full: full.routing,
        fault,
        f,
    }
}

fn cfg(load: f64) -> Config {
    Config {
        t_end: 1500 * US,
        t_warmup: 200 * US,
        check_invariants: true,
        traffic: Traffic {
            load,
            ..Traffic::default()
        },
        ..Config::default()
    }
}

fn run(s: &Setup, scheme: Option<Scheme>, load: f64, t_compute: u64) -> Report {
    let repair = scheme.map(|scheme| {
        let (tables, sources) = match scheme {
            Scheme::Rftr => (s.rftr.clone(), s.sources.clone()),
            _ => (s.full.clone(), Default::default()),
        };
        RepairTables {
            scheme,
            tables,
            sources,
            t_compute,
        }
    });
    let fe = FaultEvent {
        at: 600 * US,
        fault: s.fault,
        repair,
    };
    let base = match scheme {
        Some(Scheme::Rftr) | None => &s.base_rftr,
        _ => &s.base,
    };
    simulate(&s.f, base.clone(), cfg(load), Some(fe)).unwrap()
}

/// The plan sends what the delta says: RFTR's changed blocks, full reconfiguration's.
#[test]
fn plans_send_the_changed_blocks() {
    let s = setup("torus 4x4 hcas=2 lmc=2", false);
    let Fault::Link(l) = s.fault else { panic!() };
    let mut mask = fabric::FaultMask::none(&s.f);
    mask.fail_link(l);
    let lft = |p: &[Update]| p.iter().filter(|x| matches!(x, Update::Lft { .. })).count();
    let plan = |a: &Routing, b: &Routing| update::plan(&s.f, a, b, |n| !mask.node_dead(n));
    let p = plan(&s.base_rftr, &s.rftr);
    assert_eq!(lft(&p), s.rftr_blocks);
    assert_eq!(lft(&plan(&s.base, &s.full)), s.full_blocks);
    assert!(s.rftr_blocks > 0 && s.full_blocks > 0);
    assert!(plan(&s.base, &s.base).is_empty());
}

/// Without a repair the broken paths lose packets for the rest of the run; with RFTR traffic
/// recovers to the pre-fault level with a short dip, no deadlock, everything accounted for.
#[test]
fn rftr_keeps_traffic_flowing() {
    let s = setup("torus 4x4 hcas=2 lmc=2", false);
    let load = 0.04;
    let none = run(&s, None, load, 0);
    let rftr = run(&s, Some(Scheme::Rftr), load, 50 * US);
    for r in [&none, &rftr] {
        assert!(!r.deadlock);
        assert!(r.invariant_checks > 10);
        assert_eq!(
            r.packets_generated,
            r.packets_delivered
                + r.packets_dropped
                + r.packets_in_network
                + r.packets_in_source_queues
        );
    }
    let fs = rftr.fault.as_ref().unwrap();
    let fn_ = none.fault.as_ref().unwrap();
    assert!(
        fn_.packets_lost > 2 * fs.packets_lost.max(1),
        "{fn_:?} vs {fs:?}"
    );
    assert!(
        fn_.steady_accepted < 0.95 * fn_.pre_fault_accepted,
        "{fn_:?}"
    );
    assert!(
        (fs.steady_accepted / fs.pre_fault_accepted - 1.0).abs() < 0.1,
        "{fs:?}"
    );
    assert_eq!(fs.lft_blocks_sent, s.rftr_blocks);
    // Reconfiguration after detection and compute, in rounds of 4 SMPs of 2 µs.
    let start = fs.reconf_start_us.unwrap();
    assert!(
        (start - (600.0 + 10.0 + 50.0 + 1.0)).abs() < 1e-9,
        "{start}"
    );
    let rounds = (fs.lft_blocks_sent + fs.sl2vl_blocks_sent).div_ceil(4) as f64;
    assert!(fs.sl2vl_blocks_sent > 0, "RFTR's SL2VL rows are sent too");
    assert!((fs.sources_switched_us.unwrap() - (660.0 + 2.0 * rounds)).abs() < 1e-9);
    assert!(fs.recovery_us < 200.0, "{fs:?}");
    assert!(rftr
        .dropped_by_reason
        .keys()
        .all(|k| { ["link_down", "dead_port", "unroutable"].contains(k) }));
}

/// Static full reconfiguration stops injection when the failure is detected, drains, uploads,
/// resumes: accepted traffic falls to zero meanwhile and the backlog shows after.
#[test]
fn full_static_stops_drains_and_resumes() {
    let s = setup("torus 4x4 hcas=2 lmc=2", false);
    let r = run(&s, Some(Scheme::FullStatic), 0.04, 100 * US);
    assert!(!r.deadlock);
    let fs = r.fault.as_ref().unwrap();
    let stop = fs.injection_stopped_us.unwrap();
    let drained = fs.drained_us.unwrap();
    let resumed = fs.sources_switched_us.unwrap();
    assert!((stop - 610.0).abs() < 1e-9);
    assert!(drained >= stop && !fs.drain_forced);
    assert!(resumed >= 710.0 && resumed > drained, "{fs:?}");
    assert!(fs.dip < 0.05, "{fs:?}");
    assert_eq!(fs.lft_blocks_sent, s.full_blocks);
    // Bins fully between the drain and the resumption deliver nothing.
    for b in &r.series {
        if b.t_us >= drained + 1.0 && b.t_us + 10.0 <= resumed {
            assert_eq!(b.delivered_packets, 0, "{b:?}");
            assert_eq!(b.injected, 0.0);
        }
    }
    // The backlog: some bin after the resumption accepts more than offered.
    let pre = fs.pre_fault_accepted;
    assert!(r
        .series
        .iter()
        .any(|b| b.t_us > resumed && b.accepted > 1.3 * pre));
    assert!((fs.steady_accepted / pre - 1.0).abs() < 0.15, "{fs:?}");
}

/// Dynamic full reconfiguration uploads while traffic flows; whatever happens is accounted
/// for, and a deadlock, if any, is reported with a cycle of the mixed tables.
#[test]
fn full_dynamic_runs_and_accounts_for_everything() {
    let s = setup("torus 4x4 hcas=2 lmc=2", false);
    let r = run(&s, Some(Scheme::FullDynamic), 0.04, 100 * US);
    let fs = r.fault.as_ref().unwrap();
    assert_eq!(fs.lft_blocks_sent, s.full_blocks);
    assert!(fs.injection_stopped_us.is_none());
    if r.deadlock {
        assert!(!r.deadlock_cycle.is_empty());
    } else {
        assert!(fs.sources_switched_us.is_some());
    }
    assert_eq!(
        r.packets_generated,
        r.packets_delivered + r.packets_dropped + r.packets_in_network + r.packets_in_source_queues
    );
}

/// A switch fails: its hosts stop, what was inside it is lost, RFTR repairs the rest.
#[test]
fn switch_failure_with_rftr() {
    let s = setup("torus 4x4 hcas=2 lmc=2", true);
    let r = run(&s, Some(Scheme::Rftr), 0.04, 20 * US);
    assert!(!r.deadlock);
    assert!(
        r.dropped_by_reason.contains_key("unroutable")
            || r.dropped_by_reason.contains_key("dead_port")
    );
    let fs = r.fault.as_ref().unwrap();
    assert!(fs.packets_lost > 0);
    // Two of 32 hosts are gone, and traffic to them is lost: about 2/32 of it.
    assert!(fs.steady_accepted < fs.pre_fault_accepted);
    assert!(fs.steady_accepted > 0.8 * fs.pre_fault_accepted, "{fs:?}");
}

/// The same seed and tables give the same fault run (the schemes see the same traffic).
#[test]
fn fault_runs_are_deterministic() {
    let s = setup("torus 4x4 hcas=2 lmc=2", false);
    let a = run(&s, Some(Scheme::Rftr), 0.04, 50 * US);
    let b = run(&s, Some(Scheme::Rftr), 0.04, 50 * US);
    assert_eq!(a, b);
    let c = run(&s, Some(Scheme::FullStatic), 0.04, 50 * US);
    // Same generated traffic whatever the scheme.
    assert_eq!(a.packets_generated, c.packets_generated);
}

/// Experiment E1 on the 8x8 torus with equal compute times: the dynamic full reconfiguration
/// mixes old and new Up*/Down* entries and deadlocks, although each table alone is free of
/// credit loops; the cycle is a chain of neighbouring buffers. RFTR and the static scheme on
/// the same traffic do not deadlock.
#[test]
fn full_dynamic_can_deadlock_where_neither_table_does() {
    let f = common::fabric("torus 8x8 hcas=2 lmc=2");
    let sw = f.node_by_name("S_0_2").unwrap();
    let l = f.port(f.port_id(sw, 3)).link.unwrap();
    let engine = by_name("updn").unwrap();
    // One VL for the engine: under the fault, updn re-ranks from a single root (with more
    // VLs it would keep its roots and move the pairs left without an up*/down* path to a
    // second VL, and the mix of old and new entries does not deadlock here).
    let mut opts = RouteOptions::default();
    opts.budget.vls = 1;
    let mut s = Session::start(&f, engine.as_ref(), &opts, RftrConfig::default()).unwrap();
    let base = s.base().clone();
    let base_rftr = s.rftr().routing.clone();
    s.apply(Fault::Link(l));
    let full = s.full_reconfiguration().unwrap();
    let mut mask = fabric::FaultMask::none(&f);
    mask.fail_link(l);
    assert!(routing::cdg::check(&f, &base, None).deadlock_free);
    assert!(routing::cdg::check(&f, &full.routing, Some(&mask)).deadlock_free);
    let c = Config {
        t_end: 2 * MS,
        t_warmup: 500 * US,
        traffic: Traffic {
            load: 0.04,
            ..Traffic::default()
        },
        ..Config::default()
    };
    let run = |scheme, base: &Routing, tables: &Routing, sources| {
        let fe = FaultEvent {
            at: MS,
            fault: Fault::Link(l),
            repair: Some(RepairTables {
                scheme,
                tables: tables.clone(),
                sources,
                t_compute: 100 * US,
            }),
        };
        simulate(&f, base.clone(), c.clone(), Some(fe)).unwrap()
    };
    let dynamic = run(
        Scheme::FullDynamic,
        &base,
        &full.routing,
        Default::default(),
    );
    assert!(dynamic.deadlock, "{:?}", dynamic.fault);
    let cyc = &dynamic.deadlock_cycle;
    assert!(cyc.len() >= 2);
    for (i, b) in cyc.iter().enumerate() {
        // Each buffer's channel leads to the switch of the next one.
        let ch = fabric::ChannelId(b.channel);
        let next = &cyc[(i + 1) % cyc.len()];
        assert_eq!(f.node(f.port(f.channel_dst(ch)).node).name, next.switch);
    }
    let stat = run(Scheme::FullStatic, &base, &full.routing, Default::default());
    assert!(!stat.deadlock);
    let rftr = run(
        Scheme::Rftr,
        &base_rftr,
        &s.rftr().routing,
        s.rftr().delta.sources.clone(),
    );
    assert!(!rftr.deadlock);
}
