//! Nue: complete and free of credit loops on every fabric, at any VL count (1, 2 and 8 here),
//! with failed links and switches; judged by the checker (`cdg::check`: every (end port,
//! destination LID) pair walked through LFT + path SL + SL2VL, the CDG over (channel, VL)
//! searched for cycles), with SSSP's tables as the independent count of reachable pairs.

use fabric::rng::Rng;
use fabric::{Fabric, FaultMask};

use crate::common;
use proptest::prelude::*;
use routing::engines::{by_name, Budget, RouteOptions};
use routing::Routing;

fn gen(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .and_then(|s| s.generate())
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn opts(vls: u8) -> RouteOptions {
    RouteOptions {
        budget: Budget {
            vls,
            ..Budget::default()
        },
        ..RouteOptions::default()
    }
}

/// Nue's tables at `vls` VLs, checked: valid, deadlock-free, every pair SSSP delivers
/// delivered, no more VLs than given, the SL of a pair its destination's alone. Returns the
/// tables and the check.
fn nue_verdict(
    f: &Fabric,
    mask: &FaultMask,
    vls: u8,
    what: &str,
) -> (Routing, routing::cdg::CheckReport) {
    let r = by_name("nue")
        .unwrap()
        .route(f, mask, &opts(vls))
        .unwrap_or_else(|e| panic!("nue ({vls} VLs) on {what}: {e}"));
    r.validate(f).unwrap();
    let rep = routing::cdg::check(f, &r, Some(mask));
    assert!(
        rep.deadlock_free,
        "nue ({vls} VLs) on {what}: {} credit loops",
        rep.cycles.len()
    );
    let sssp = by_name("sssp")
        .unwrap()
        .route(f, mask, &RouteOptions::default())
        .unwrap();
    let reach = routing::cdg::check(f, &sssp, Some(mask)).pairs.ok;
    assert_eq!(
        rep.pairs.ok, reach,
        "nue ({vls} VLs) on {what}: delivered pairs against SSSP's"
    );
    assert_eq!(rep.loops.count + rep.black_holes.count, 0, "{what}");
    assert!(
        rep.cdg.vls_used.len() <= vls as usize,
        "nue ({vls} VLs) on {what}: {} VLs",
        rep.cdg.vls_used.len()
    );
    (r, rep)
}

fn fail_random(f: &Fabric, links: usize, switches: usize, seed: u64) -> FaultMask {
    let mut rng = Rng::new(seed);
    let mut mask = FaultMask::none(f);
    let sw_links = common::switch_links(f);
    for _ in 0..links.min(sw_links.len()) {
        mask.fail_link(sw_links[rng.below(sw_links.len() as u64) as usize]);
    }
    for _ in 0..switches.min(f.num_switches().saturating_sub(1)) {
        mask.fail_node(f.switches[rng.below(f.num_switches() as u64) as usize]);
    }
    mask
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    /// Random fabrics of every generator family, random failed links and switches at run
    /// time on top of the generator's (the fabric may fall apart: pairs across the pieces
    /// are SSSP's unreachable ones too), 1, 2 and 8 VLs.
    #[test]
    fn nue_is_complete_and_deadlock_free_on_random_damaged_fabrics(
        kind in 0usize..8, links in 0usize..6, switches in 0usize..3, seed in 0u64..100_000
    ) {
        let spec = match kind {
            0 => format!("torus {}x{} hcas=2", 3 + seed % 4, 3 + (seed / 4) % 4),
            1 => format!("torus {}x3x3 hcas=1 lmc=1", 2 + seed % 3),
            2 => format!("mesh {}x{} hcas=1", 2 + seed % 5, 2 + (seed / 5) % 4),
            3 => format!("randreg {} 4 hcas=2 seed={seed}", 8 + seed % 20),
            4 => format!("dragonfly 4 2 2 fail-links={} fail-seed={seed}", seed % 4),
            5 => "slimfly 5".to_string(),
            6 => format!("hyperx {}x3 hcas=1", 2 + seed % 4),
            _ => format!("ktree {} 3 fail-switches={} fail-seed={seed}", 3 + seed % 2, seed % 2),
        };
        let Ok(f) = spec.parse::<fabric::gen::TopoSpec>().and_then(|s| s.generate()) else {
            return Ok(());
        };
        let mask = fail_random(&f, links, switches, seed ^ 0x5eed);
        for vls in [1u8, 2, 8] {
            nue_verdict(&f, &mask, vls, &format!("{spec} with {links} links and {switches} switches failed (seed {seed})"));
        }
    }
}

/// Every vendored fabric (gen_topo.py's references with their failed-link variants, and the
/// real dumps) at 1, 2 and 8 VLs: routed, complete, deadlock-free.
#[test]
fn nue_routes_every_reference_and_real_fabric() {
    for (name, f) in common::vendored_fabrics() {
        for vls in [1u8, 2, 8] {
            nue_verdict(&f, &FaultMask::none(&f), vls, &name);
        }
    }
}

/// One VL: a single SL (the start VL) for every pair; more VLs: the SL depends on the
/// destination only, and every layer is used on a fabric with enough switches.
#[test]
fn nue_sls_are_layers_of_destinations() {
    let f = gen("torus 6x6 hcas=2");
    let mask = FaultMask::none(&f);
    let mut o = opts(1);
    o.budget.start_vl = 3;
    let r = by_name("nue").unwrap().route(&f, &mask, &o).unwrap();
    let rep = routing::cdg::check(&f, &r, Some(&mask));
    assert!(rep.ok());
    assert_eq!(rep.cdg.sls_used, vec![3]);
    assert_eq!(rep.cdg.vls_used, vec![3]);
    let (r, rep) = nue_verdict(&f, &mask, 4, "torus 6x6");
    assert_eq!(rep.cdg.vls_used.len(), 4);
    let routing::tables::PathSl::PerDest(sl) = &r.path_sl else {
        panic!("per-destination SLs expected, got {:?}", r.path_sl)
    };
    // the end ports of one switch share its layer
    for s in 0..f.num_switches() {
        let node = f.switches[s];
        let lids: Vec<u16> = f
            .end_ports
            .iter()
            .filter(|&&p| routing::tables::end_port_switch(&f, p).map(|x| x.0.idx()) == Some(s))
            .map(|&p| f.port(p).lid)
            .chain(std::iter::once(f.switch_lid(node)))
            .collect();
        assert!(
            lids.windows(2)
                .all(|w| sl[w[0] as usize] == sl[w[1] as usize]),
            "switch {s}: {lids:?}"
        );
    }
}

/// Nue against OpenSM's Nue on the same fabrics (OpenSM 3.3.23 on ibsim, figures recorded in
/// docs/vl-engines.md by scripts/vl-table.sh): lower max link load
/// and no more hops on average at the same VL count where that holds (tori, Slim Fly, the
/// large Dragonfly), within 5 % on the 8-ary 3-tree where OpenSM's is better; and close to
/// SSSP's max link load with 8 VLs.
#[test]
fn nue_beats_opensm_nue_and_nears_sssp() {
    // (fabric, VLs, OpenSM's max link load, OpenSM's average switch hops, allowed ratio)
    let cases: &[(&str, u8, u64, f64, f64)] = &[
        ("torus 8x8 hcas=2", 8, 1056, 5.030, 1.0),
        ("dragonfly 8 4 4", 8, 2164, 2.741, 1.0),
        ("slimfly 7", 8, 918, 1.976, 1.0),
        ("ktree 8 3", 8, 824, 3.726, 1.05),
    ];
    for &(spec, vls, osm_max, osm_hops, ratio) in cases {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let (r, _) = nue_verdict(&f, &mask, vls, spec);
        let m = routing::metrics::route_metrics(&f, &r, Some(&mask));
        let hops = m.sw_hops_avg;
        assert!(
            m.link_load.max as f64 <= ratio * osm_max as f64
                && (ratio > 1.0 || m.link_load.max < osm_max),
            "{spec}: max link load {} against OpenSM's {osm_max}",
            m.link_load.max
        );
        // OpenSM's figure is rounded to three decimals
        assert!(
            hops <= osm_hops + 5e-4,
            "{spec}: {hops:.4} hops against {osm_hops}"
        );
        let sssp = routing::metrics::route_metrics(
            &f,
            &by_name("sssp")
                .unwrap()
                .route(&f, &mask, &RouteOptions::default())
                .unwrap(),
            Some(&mask),
        );
        assert!(
            m.link_load.max as f64 <= 1.25 * sssp.link_load.max as f64,
            "{spec}: {} against SSSP's {}",
            m.link_load.max,
            sssp.link_load.max
        );
    }
}

/// OpenSM's Nue (3.3.23 on ibsim, `scripts/nue-table.sh`, figures in docs/vl-engines.md) on
/// the vendored copies of the shared fabrics: (fabric, VLs, max link load, average switch
/// hops rounded to three decimals). 2.718 is a measured hop count, not Euler's number.
#[allow(clippy::approx_constant)]
const OPENSM_NUE: &[(&str, u8, u64, f64)] = &[
    ("dragonfly_a4_p2_h2", 1, 276, 2.608),
    ("dragonfly_a4_p2_h2", 8, 92, 2.324),
    ("dragonfly_a4_p2_h2_fail3", 1, 204, 2.627),
    ("dragonfly_a4_p2_h2_fail3", 8, 100, 2.379),
    ("dragonfly_a8_p4_h4", 1, 6420, 3.072),
    ("dragonfly_a8_p4_h4", 8, 3084, 2.741),
    ("fattree2_18leaf_9spine_h18", 1, 774, 1.895),
    ("fattree2_18leaf_9spine_h18", 8, 792, 1.895),
    ("ktree_k12_n3", 1, 2892, 3.822),
    ("ktree_k12_n3", 8, 2952, 3.822),
    ("ktree_k4_n3", 1, 88, 3.429),
    ("ktree_k4_n3", 8, 92, 3.429),
    ("ktree_k4_n3_fail4", 1, 112, 3.429),
    ("ktree_k4_n3_fail4", 8, 104, 3.429),
    ("mesh2d_4x4_h2", 1, 108, 2.718),
    ("mesh2d_4x4_h2", 8, 74, 2.581),
    ("randreg_n32_d6_h2", 1, 180, 2.172),
    ("randreg_n32_d6_h2", 8, 58, 2.024),
    ("slimfly_q5", 1, 784, 2.070),
    ("slimfly_q5", 8, 264, 1.855),
    ("slimfly_q5_fail5", 1, 792, 2.138),
    ("slimfly_q5_fail5", 8, 276, 1.920),
    ("slimfly_q7", 1, 3048, 2.118),
    ("slimfly_q7", 8, 906, 1.973),
    ("torus2d_14x14_h2", 1, 9500, 8.632),
    ("torus2d_14x14_h2", 8, 6356, 10.182),
    ("torus2d_4x4_h2", 1, 62, 2.125),
    ("torus2d_4x4_h2", 8, 42, 2.064),
    ("torus2d_8x8_h2", 1, 1674, 4.732),
    ("torus2d_8x8_h2", 8, 1056, 5.030),
    ("torus2d_8x8_h2_fail3", 1, 3830, 5.951),
    ("torus2d_8x8_h2_fail3", 8, 1284, 4.946),
    ("torus3d_4x4x4_h2", 1, 1106, 3.472),
    ("torus3d_4x4x4_h2", 8, 274, 3.053),
    ("torus3d_4x4x4_h2_fail4", 1, 916, 3.404),
    ("torus3d_4x4x4_h2_fail4", 8, 186, 3.089),
    ("torus3d_6x6x6_h2", 1, 35530, 6.794),
    ("torus3d_6x6x6_h2", 8, 3086, 5.736),
];

/// The (end-port routes on the busiest channel, over all channels) before and after the
/// rip-up and reroute pass, from its note.
fn reroute_note(notes: &[String]) -> Option<((u64, u64), (u64, u64))> {
    let n = notes.iter().find(|n| n.contains("rip-up and reroute"))?;
    let nums: Vec<u64> = n
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse().ok())
        .collect();
    let k = nums.len();
    (k >= 4).then(|| ((nums[k - 4], nums[k - 3]), (nums[k - 2], nums[k - 1])))
}

/// Against OpenSM's Nue on every shared fabric at 1 and 8 VLs: max link load below OpenSM's
/// on every run; average hops no more than OpenSM's except on Slim Fly q=5 at 1 VL, where the
/// busiest channel carries over 15 % less for at most 1 % more hops. Where the rip-up and reroute pass ran, its note tells the truth: the figures
/// it reports after the pass are the path walker's (max link load, hops over all pairs), and
/// the pass never raised the busiest channel.
#[test]
fn nue_against_opensm_nue_on_the_shared_fabrics() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/topologies");
    let trade_hops = [("slimfly_q5", 1)];
    let mut passes = 0;
    for &(name, vls, osm_max, osm_hops) in OPENSM_NUE {
        let f = common::read_fabric(&root.join(format!("{name}.net")));
        let mask = FaultMask::none(&f);
        let routed = by_name("nue")
            .unwrap()
            .route_detailed(&f, &mask, &opts(vls))
            .unwrap();
        let rep = routing::cdg::check(&f, &routed.routing, Some(&mask));
        assert!(rep.ok(), "{name} at {vls} VLs: {rep:?}");
        let m = routing::metrics::route_metrics(&f, &routed.routing, Some(&mask));
        let (max, hops) = (m.link_load.max, m.sw_hops_avg);
        let what = format!("{name} at {vls} VLs: max link load {max} (OpenSM {osm_max}), {hops:.4} hops (OpenSM {osm_hops})");
        assert!(max < osm_max, "{what}");
        if trade_hops.contains(&(name, vls)) {
            assert!(
                hops <= osm_hops * 1.01 && (max as f64) < 0.85 * osm_max as f64,
                "{what}"
            );
        } else {
            // the table's figure: lft_stats.py's four decimals printed with three
            assert!(hops <= osm_hops + 6e-4, "{what}");
        }
        if let Some(((busy0, busy1), (_, total1))) = reroute_note(&routed.notes) {
            passes += 1;
            assert!(busy1 <= busy0, "{what}: {:?}", routed.notes);
            assert_eq!(busy1, max, "{what}: {:?}", routed.notes);
            let walked = hops * m.pairs as f64;
            assert!(
                (total1 as f64 - walked).abs() < 0.5,
                "{what}: {total1} against {walked}"
            );
        }
    }
    assert!(passes >= 20, "the rip-up pass ran on {passes} runs");
}

/// Fabrics where no end-port route crosses a switch-to-switch channel (one switch; two
/// switches with every host on one): nothing for the rip-up pass to relieve, tables complete.
#[test]
fn nue_routes_fabrics_with_no_loaded_switch_link() {
    let one = "Switch 4 \"S0\"\n[1] \"H0\"[1]\n[2] \"H1\"[1]\n\nHca 1 \"H0\"\n[1] \"S0\"[1]\n\nHca 1 \"H1\"\n[1] \"S0\"[2]\n";
    let two = "Switch 4 \"S0\"\n[1] \"H0\"[1]\n[2] \"H1\"[1]\n[3] \"S1\"[3]\n\nSwitch 4 \"S1\"\n[3] \"S0\"[3]\n\nHca 1 \"H0\"\n[1] \"S0\"[1]\n\nHca 1 \"H1\"\n[1] \"S0\"[2]\n";
    for (name, text) in [("one switch", one), ("hosts on one of two switches", two)] {
        let f = common::parse_fabric(text.as_bytes(), name);
        for vls in [1u8, 8] {
            let (_, rep) = nue_verdict(&f, &FaultMask::none(&f), vls, name);
            assert_eq!(rep.pairs.ok, 2, "{name}");
        }
    }
}

/// On small fabrics more VLs never balance worse than one: where one layer beats the layered
/// routing (trees), one layer is kept and a note says so; where layers help (a torus), they
/// stay.
#[test]
fn nue_with_more_vls_balances_no_worse_than_with_one() {
    for spec in [
        "ktree 4 3",
        "torus 4x4 hcas=2",
        "torus 8x8 hcas=2",
        "dragonfly 4 2 2",
    ] {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let load = |vls: u8| {
            let routed = by_name("nue")
                .unwrap()
                .route_detailed(&f, &mask, &opts(vls))
                .unwrap();
            let m = routing::metrics::route_metrics(&f, &routed.routing, Some(&mask));
            (m.link_load.max, m.vls_used.len(), routed.notes)
        };
        let (one, _, _) = load(1);
        let (eight, vls, notes) = load(8);
        assert!(eight <= one, "{spec}: {eight} at 8 VLs against {one} at 1");
        let kept_one = notes.iter().any(|n| n.contains("one layer kept"));
        assert_eq!(kept_one, vls == 1, "{spec}: {vls} VLs used; {notes:?}");
        if spec.starts_with("ktree") {
            assert!(kept_one, "{spec}: {notes:?}");
        }
        if spec.starts_with("torus 8x8") {
            assert!(
                vls > 1 && eight < one,
                "{spec}: {eight} on {vls} VLs against {one}"
            );
        }
    }
}
