//! The incremental check of a fault session (`fault::Tracker`, what `fabroute fault` runs by
//! default) against the full one (every selected pair walked, the migration union searched
//! for cycles): the same verdict after every fault, on generated and real fabrics, every
//! RFTR base, random link and switch faults; and it finds the credit loops of tables that
//! have them.

use fabric::gen::{generate, TopoSpec};
use fabric::{Fabric, FaultMask};
use proptest::prelude::*;
use routing::engines::{by_name, RouteOptions};
use routing::fault::{CheckMode, Fault, Rftr, RftrConfig, Session, Tracker};
use routing::turn::Base;

use crate::common;
use common::{random_faults, switch_links};

fn fabric(spec: &str) -> Fabric {
    generate(&spec.parse::<TopoSpec>().unwrap()).unwrap()
}

/// Runs `faults` over `engine`'s base twice, once per check mode, and compares every step:
/// the same repair, the same verdict (deadlock-free, pairs not delivered). Returns how many
/// steps the incremental check walked fewer pairs than the full one, or None when the
/// engine cannot route the fabric within the budget (`vls` data VLs over a turn rule; over
/// a VL engine 8, one kept for repairs, as `fabroute fault` does).
fn compare(f: &Fabric, engine: &str, vls: u8, faults: &[Fault]) -> Option<usize> {
    let e = by_name(engine).unwrap();
    let mut opts = RouteOptions::default();
    let mut vls = vls;
    if matches!(e.rftr_base(f, &opts), Ok(Base::FreshVls)) {
        vls = 8;
        opts.budget.vls = 7;
        opts.budget.sls = 15;
    }
    let (opts, base) = Session::route_base(f, e.as_ref(), &opts).ok()?;
    let cfg = RftrConfig {
        vls,
        ..Default::default()
    };
    let mut full = Session::from_base(f, e.as_ref(), opts.clone(), base.clone(), cfg)
        .unwrap_or_else(|err| panic!("{engine}: {err}"));
    let mut inc = Session::from_base(f, e.as_ref(), opts, base, cfg).unwrap();
    inc.set_check_mode(CheckMode::Incremental);
    let mut fewer = 0;
    for (i, &fault) in faults.iter().enumerate() {
        let a = full.apply(fault).clone();
        let b = inc.apply(fault).clone();
        let what = format!("{engine} at {vls} VLs, fault {i} {fault:?}");
        assert_eq!(a.repair.affected_pairs, b.repair.affected_pairs, "{what}");
        assert_eq!(
            a.repair.unsupported_pairs, b.repair.unsupported_pairs,
            "{what}"
        );
        assert_eq!(a.check.deadlock_free, b.check.deadlock_free, "{what}");
        assert_eq!(a.check.undelivered, b.check.undelivered, "{what}");
        assert!(b.check.pairs <= a.check.pairs, "{what}");
        fewer += usize::from(b.check.pairs < a.check.pairs);
    }
    assert_eq!(full.rftr().routing.lft, inc.rftr().routing.lft);
    Some(fewer)
}

#[test]
fn incremental_and_full_checks_agree_on_every_base() {
    let cases: &[(&str, &[&str])] = &[
        (
            "torus 4x4 hcas=2 lmc=2",
            &["updn", "dnup", "dfsssp", "lash", "nue", "torus-2QoS"],
        ),
        ("ktree 4 3 lmc=1", &["updn", "ftree", "dfsssp"]),
        ("dragonfly 3 2 1", &["updn", "nue", "dfsssp"]),
        ("mesh 3x3 hcas=1", &["dor", "updn"]),
    ];
    let mut fewer = 0;
    for &(spec, engines) in cases {
        let f = fabric(spec);
        for &engine in engines {
            for seed in 0..3 {
                let faults = random_faults(&f, seed, 3, seed == 2);
                fewer += compare(&f, engine, 4, &faults)
                    .unwrap_or_else(|| panic!("{engine} routes {spec}"));
            }
        }
    }
    assert!(
        fewer > 0,
        "the incremental check walks fewer pairs somewhere"
    );
}

#[test]
fn incremental_and_full_checks_agree_on_the_real_dumps() {
    let mut compared = 0;
    for (name, f) in common::vendored_fabrics() {
        if switch_links(&f).is_empty() || f.end_ports.len() > 2000 {
            continue;
        }
        for engine in ["updn", "dfsssp"] {
            let faults = random_faults(&f, 7, 3, true);
            if compare(&f, engine, 4, &faults).is_some() {
                compared += 1;
            } else {
                eprintln!("{name}: {engine} does not route it; skipped");
            }
        }
    }
    assert!(compared >= 6, "{compared} dumps and engines compared");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]
    /// Random fault sequences (links and a switch) on tori and trees: the two checks agree
    /// after every fault.
    #[test]
    fn prop_incremental_check_agrees(seed in 0u64..1_000_000, n in 1usize..5, sw in any::<bool>(),
                                     which in 0usize..4) {
        let (spec, engine) = [
            ("torus 5x4 hcas=1 lmc=1", "updn"),
            ("torus 4x4 hcas=1 lmc=1", "nue"),
            ("ktree 4 2 lmc=1", "ftree"),
            ("mesh 4x3 hcas=1 lmc=2", "dor"),
        ][which];
        let f = fabric(spec);
        let faults = random_faults(&f, seed, n, sw);
        prop_assert!(compare(&f, engine, 3, &faults).is_some());
    }
}

/// Tables with credit loops (minhop on a torus, taken as a base that keeps its VLs): the
/// tracker's union refuses the closing dependencies and the step says so, as the full check
/// does. A check that cannot fail would pass here.
#[test]
fn the_tracker_finds_credit_loops() {
    let f = fabric("torus 4x4 hcas=1 lmc=1");
    let none = FaultMask::none(&f);
    let base = by_name("minhop")
        .unwrap()
        .route(&f, &none, &RouteOptions::default())
        .unwrap();
    assert!(!routing::cdg::check(&f, &base, None).deadlock_free);
    let cfg = RftrConfig {
        vls: 4,
        ..Default::default()
    };
    let mut r = Rftr::new(&f, &base, Base::FreshVls, cfg).unwrap();
    let mut t = Tracker::start(&r);
    let fault = Fault::Link(switch_links(&f)[0]);
    r.apply(fault);
    let inc = t.step(&r, fault);
    let full = routing::fault::verify::check_state(&r, None);
    assert!(!full.deadlock_free);
    assert!(!inc.deadlock_free);
    assert!(inc.cyclic_sccs > 0);
}

/// HCA cables fail too: mixed with switch-to-switch link faults, on every base, both checks
/// agree, nothing is left undelivered, and the cut end port has no DLID to or from anyone
/// while the other end ports of its switch keep theirs.
#[test]
fn hca_cable_faults_cut_off_one_end_port() {
    for (spec, engines) in [
        ("ktree 4 3", &["updn", "ftree", "dfsssp"][..]),
        ("torus 4x4 hcas=2", &["updn", "lash", "nue"][..]),
    ] {
        let f = fabric(spec);
        let hca_links: Vec<fabric::LinkId> = (0..f.links.len() as u32)
            .map(fabric::LinkId)
            .filter(|&l| {
                let k = f.link(l);
                !f.is_switch(f.port(k.a).node) || !f.is_switch(f.port(k.b).node)
            })
            .collect();
        for engine in engines {
            for seed in 0..3u64 {
                let mut faults = random_faults(&f, seed, 2, false);
                let cut = hca_links[(seed as usize * 7 + 3) % hca_links.len()];
                faults.insert(1, Fault::Link(cut));
                compare(&f, engine, 2, &faults);
                // The cut end port and a neighbour on its switch.
                let e = by_name(engine).unwrap();
                let mut opts = RouteOptions::default();
                if matches!(e.rftr_base(&f, &opts), Ok(Base::FreshVls)) {
                    opts.budget.vls = 7;
                    opts.budget.sls = 15;
                }
                let cfg = RftrConfig {
                    vls: if opts.budget.vls == 7 { 8 } else { 2 },
                    ..Default::default()
                };
                let mut s = Session::start(&f, e.as_ref(), &opts, cfg).unwrap();
                for &fault in &faults {
                    let step = s.apply(fault);
                    assert_eq!(step.check.undelivered, 0, "{spec} {engine} {fault:?}");
                }
                let k = f.link(cut);
                let p = if f.is_switch(f.port(k.a).node) {
                    k.b
                } else {
                    k.a
                };
                let ce = f.end_ports.iter().position(|&q| q == p).unwrap() as u32;
                let r = s.rftr();
                for x in 0..f.end_ports.len() as u32 {
                    if x != ce {
                        assert_eq!(r.dlid(ce, x), None);
                        assert_eq!(r.dlid(x, ce), None);
                    }
                }
                // Its switch's other end ports are still routed to and from.
                let sw = f.port(f.remote(p).unwrap()).node;
                let neighbour = f
                    .end_ports
                    .iter()
                    .position(|&q| q != p && f.remote(q).is_some_and(|r| f.port(r).node == sw))
                    .unwrap() as u32;
                let other = (0..f.end_ports.len() as u32)
                    .find(|&x| x != ce && x != neighbour && r.dlid(neighbour, x).is_some());
                assert!(
                    other.is_some(),
                    "{spec} {engine}: the neighbour lost every route"
                );
            }
        }
    }
}
