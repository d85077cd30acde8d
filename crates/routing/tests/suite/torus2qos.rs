//! torus-2QoS: complete and free of credit loops on the vendored tori and meshes (with their
//! `torus-2QoS.conf` companions), as balanced as DOR on intact tori, around every single
//! failed switch and every double failed link of the 4x4x4 torus with unchanged path SLs
//! (or refused by OpenSM's rules, with the reason), and refused clearly where the fabric is
//! not a torus.

use fabric::SwitchIdx;
use fabric::{Fabric, FaultMask};
use routing::engines::torus2qos::{parse_config, TorusConfig};
use routing::engines::{by_name, EngineError, RouteOptions};
use routing::Routing;
use std::path::{Path, PathBuf};

use crate::common;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/topologies")
        .join(name)
}

fn read(name: &str) -> (Fabric, TorusConfig) {
    let f = common::read_fabric(&data(name));
    let conf = std::fs::read_to_string(data(&format!("{name}.t2q.conf"))).unwrap();
    (f, parse_config(&conf).unwrap())
}

fn opts(c: &TorusConfig) -> RouteOptions {
    let mut o = RouteOptions::default();
    o.engine.torus.config = Some(c.clone());
    o
}

/// Routes and checks: valid, deadlock-free, every pair between live end ports delivered.
fn routed(
    f: &Fabric,
    mask: &FaultMask,
    o: &RouteOptions,
    what: &str,
) -> Result<Routing, EngineError> {
    let r = by_name("torus-2QoS").unwrap().route(f, mask, o)?;
    r.validate(f).unwrap();
    let rep = routing::cdg::check(f, &r, Some(mask));
    assert!(
        rep.deadlock_free,
        "{what}: {} credit loops",
        rep.cycles.len()
    );
    assert_eq!(rep.pairs.ok, rep.pairs.checked, "{what}: undelivered pairs");
    Ok(r)
}

const TORI: [&str; 7] = [
    "torus2d_4x4_h2.net",
    "torus2d_8x8_h2.net",
    "torus2d_14x14_h2.net",
    "torus3d_4x4x4_h2.net",
    "mesh2d_4x4_h2.net",
    "torus2d_8x8_h2_fail3.net",
    "torus3d_4x4x4_h2_fail4.net",
];

#[test]
fn torus2qos_routes_every_vendored_torus_and_mesh() {
    for name in TORI {
        let (f, c) = read(name);
        let mask = FaultMask::none(&f);
        let r = routed(&f, &mask, &opts(&c), name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rep = routing::cdg::check(&f, &r, Some(&mask));
        assert_eq!(rep.cdg.vls_used, vec![0, 1], "{name}: the two loop VLs");
        // OpenSM's torus-2QoS on the same file (OpenSM 3.3.23 on ibsim, 2026-12-01, recorded in
        // docs/vl-engines.md):
        // max link load and average switch hops
        let (osm_max, osm_hops) = match name {
            "torus2d_4x4_h2.net" => (48, 2.0645),
            "torus2d_8x8_h2.net" => (320, 4.0315),
            "torus2d_14x14_h2.net" => (1568, 7.0179),
            "torus3d_4x4x4_h2.net" => (192, 3.0236),
            "mesh2d_4x4_h2.net" => (64, 2.5806),
            "torus2d_8x8_h2_fail3.net" => (512, 4.2677),
            _ => (256, 3.0866),
        };
        let m = routing::metrics::route_metrics(&f, &r, Some(&mask));
        assert!(
            m.link_load.max <= osm_max,
            "{name}: {} against {osm_max}",
            m.link_load.max
        );
        assert!(
            (m.sw_hops_avg - osm_hops).abs() < 5e-4,
            "{name}: {} hops",
            m.sw_hops_avg
        );
    }
}

/// Routing OpenSM's own subnet.lst (its LIDs) with the same torus-2QoS.conf gives OpenSM's
/// files byte for byte: LFTs, SL2VL tables, path SLs (vendored from its runs).
#[test]
fn torus2qos_writes_what_opensm_writes() {
    for name in ["torus2d_4x4_h2", "torus2d_8x8_h2_fail3", "mesh2d_4x4_h2"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/opensm")
            .join(format!("{name}.torus-2QoS"));
        let file = |x: &str| std::fs::read_to_string(dir.join(x)).unwrap();
        let f = common::read_fabric(&dir.join("opensm-subnet.lst"));
        let conf = std::fs::read_to_string(data(&format!("{name}.net.t2q.conf"))).unwrap();
        let o = opts(&parse_config(&conf).unwrap());
        let r = routed(&f, &FaultMask::none(&f), &o, name).unwrap();
        assert!(
            routing::opensm::write_lfts(&f, &r) == file("opensm-lfts.dump"),
            "{name}: LFTs"
        );
        assert!(
            routing::opensm::write_sl2vl(&f, &r.sl2vl) == file("opensm-sl2vl.dump"),
            "{name}: SL2VL"
        );
        assert!(
            routing::opensm::write_psl(&f, &r.path_sl) == file("opensm-path-sl.psl"),
            "{name}: path SLs"
        );
    }
}

/// Without a config the engine finds tori whose radices are all 5 or more, and meshes, by
/// itself, with the same tables as with the config.
#[test]
fn torus2qos_finds_tori_and_meshes_without_a_config() {
    for name in [
        "torus2d_8x8_h2.net",
        "torus2d_14x14_h2.net",
        "mesh2d_4x4_h2.net",
    ] {
        let (f, c) = read(name);
        let mask = FaultMask::none(&f);
        let a = routed(&f, &mask, &opts(&c), name).unwrap();
        let b = routed(&f, &mask, &RouteOptions::default(), name).unwrap();
        let la = routing::metrics::route_metrics(&f, &a, None);
        let lb = routing::metrics::route_metrics(&f, &b, None);
        assert_eq!(la.link_load.max, lb.link_load.max, "{name}");
        assert_eq!(la.sw_hops_avg, lb.sw_hops_avg, "{name}");
    }
    // radix 4 needs the seed links: a clear refusal without them
    let (f, _) = read("torus2d_4x4_h2.net");
    let e = by_name("torus-2QoS")
        .unwrap()
        .route(&f, &FaultMask::none(&f), &RouteOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("torus-2QoS.conf"), "{e}");
}

/// Path SLs of every pair whose end ports both live, under `mask`, equal the fault-free ones.
fn same_sls(f: &Fabric, a: &Routing, b: &Routing, mask: &FaultMask) -> bool {
    let live = |p: fabric::PortId| {
        let n = f.port(p).node;
        !mask.node_dead(n)
            && routing::tables::end_port_switch(f, p)
                .is_some_and(|(s, _)| !mask.node_dead(f.switch_node(s)))
    };
    for (i, &src) in f.end_ports.iter().enumerate() {
        if !live(src) {
            continue;
        }
        for &dst in &f.end_ports {
            if live(dst) {
                let l = f.port(dst).lid;
                if a.path_sl.get(i, l) != b.path_sl.get(i, l) {
                    return false;
                }
            }
        }
    }
    true
}

/// Every single failed switch of the 4x4x4 torus is routed around, deadlock-free, with the
/// fault-free path SLs.
#[test]
fn torus2qos_routes_around_every_failed_switch_with_the_same_sls() {
    let (f, c) = read("torus3d_4x4x4_h2.net");
    let o = opts(&c);
    let base = routed(&f, &FaultMask::none(&f), &o, "intact").unwrap();
    for &s in &f.switches {
        let mut mask = FaultMask::none(&f);
        mask.fail_node(s);
        let what = format!("switch {} failed", f.node(s).name);
        let r = routed(&f, &mask, &o, &what).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(same_sls(&f, &base, &r, &mask), "{what}: path SLs changed");
    }
}

/// Every double failed link of the 4x4x4 torus: routed deadlock-free with the fault-free
/// path SLs, unless both links break one ring (OpenSM's torus-2QoS refuses a ring broken in
/// two places, and so does this one, saying so). Both outcomes counted.
#[test]
fn torus2qos_routes_every_double_link_failure_or_says_which_ring_broke() {
    let (f, c) = read("torus3d_4x4x4_h2.net");
    let o = opts(&c);
    let base = routed(&f, &FaultMask::none(&f), &o, "intact").unwrap();
    let sw = common::switch_links(&f);
    assert_eq!(sw.len(), 192);
    use rayon::prelude::*;
    let (ok, refused) = (0..sw.len())
        .into_par_iter()
        .map(|i| {
            let (mut ok, mut refused) = (0, 0);
            for j in i + 1..sw.len() {
                let mut mask = FaultMask::none(&f);
                mask.fail_link(sw[i]);
                mask.fail_link(sw[j]);
                let what = format!("links {} and {} failed", sw[i].0, sw[j].0);
                match routed(&f, &mask, &o, &what) {
                    Ok(r) => {
                        assert!(same_sls(&f, &base, &r, &mask), "{what}: path SLs changed");
                        ok += 1;
                    }
                    Err(EngineError::NotApplicable(why)) if why.contains("broken in 2 places") => {
                        refused += 1
                    }
                    Err(e) => panic!("{what}: {e}"),
                }
            }
            (ok, refused)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    // two links of one ring: 48 rings of 4 links, C(4,2) pairs each
    assert_eq!(refused, 48 * 6, "{ok} routed");
    assert_eq!(ok + refused, 192 * 191 / 2);
}

/// Not a torus, too damaged, too few VLs: clear refusals.
#[test]
fn torus2qos_refuses_clearly() {
    let e = |spec: &str, o: &RouteOptions| {
        let f: Fabric = spec
            .parse::<fabric::gen::TopoSpec>()
            .unwrap()
            .generate()
            .unwrap();
        by_name("torus-2QoS")
            .unwrap()
            .route(&f, &FaultMask::none(&f), o)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let d = RouteOptions::default();
    assert!(e("randreg 16 4", &d).contains("neither a mesh nor a torus"));
    assert!(e("ktree 4 3", &d).contains("torus"));
    let mut two = RouteOptions::default();
    two.budget.vls = 1;
    assert!(e("torus 6x6", &two).contains("at least 2 data VLs"));
    // a mesh whose middle link failed: its row is broken in two places
    let (f, c) = read("mesh2d_4x4_h2.net");
    let mut mask = FaultMask::none(&f);
    let mid = common::switch_links(&f)
        .into_iter()
        .find(|&l| {
            let k = f.link(l);
            let (a, b) = (f.port(k.a).node, f.port(k.b).node);
            [a, b].iter().all(|&n| {
                let s = f.switch_of(n).unwrap().idx();
                f.switch_links(SwitchIdx(s as u32)).len() == 4
            })
        })
        .expect("a link between two inner switches");
    mask.fail_link(mid);
    let err = by_name("torus-2QoS")
        .unwrap()
        .route(&f, &mask, &opts(&c))
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken in 2 places"), "{err}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Random 2D/3D tori and meshes (radices 2..=6, so radix 2, 3 and 4 too), with the
    /// generator's config or its coordinates, and up to one failed switch and two failed links
    /// at run time: either routed (complete, deadlock-free, fault-free path SLs) or refused by
    /// one of the stated rules; never another error.
    #[test]
    fn torus2qos_routes_random_tori_or_refuses_by_rule(
        x in 2u32..=6, y in 2u32..=6, z in 1u32..=4, mesh in proptest::prelude::any::<bool>(),
        use_conf in proptest::prelude::any::<bool>(), sw in 0usize..2, links in 0usize..3,
        seed in 0u64..100_000,
    ) {
        let dims = if z == 1 { format!("{x}x{y}") } else { format!("{x}x{y}x{z}") };
        let spec = format!("{} {dims} hcas=1", if mesh { "mesh" } else { "torus" });
        let f: Fabric = spec.parse::<fabric::gen::TopoSpec>().unwrap().generate().unwrap();
        let mut o = RouteOptions::default();
        if use_conf {
            let conf = fabric::gen::torus2qos_conf(&f).expect("the generator's config");
            o.engine.torus.config = Some(parse_config(&conf).unwrap());
        }
        let base = routed(&f, &FaultMask::none(&f), &o, &spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let mut rng = fabric::rng::Rng::new(seed);
        let mut mask = FaultMask::none(&f);
        let sw_links = common::switch_links(&f);
        for _ in 0..links {
            mask.fail_link(sw_links[rng.below(sw_links.len() as u64) as usize]);
        }
        for _ in 0..sw {
            mask.fail_node(f.switches[rng.below(f.num_switches() as u64) as usize]);
        }
        let what = format!("{spec} ({} config), {links} links and {sw} switches failed, seed {seed}", if use_conf { "with" } else { "no" });
        match routed(&f, &mask, &o, &what) {
            Ok(r) => proptest::prop_assert!(same_sls(&f, &base, &r, &mask), "{}: path SLs changed", what),
            Err(EngineError::NotApplicable(why)) => proptest::prop_assert!(
                ["broken in", "strange failures", "missing switch", "no route", "turns early", "not next to"]
                    .iter()
                    .any(|k| why.contains(k)),
                "{}: {}", what, why
            ),
            Err(e) => proptest::prop_assert!(false, "{}: {}", what, e),
        }
    }
}
