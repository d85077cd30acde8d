//! SuperPOD-style trees read as dumps (no generator hints) with a management network on the
//! side — management leaves under a spine and under a management spine cabled to a few cores,
//! with or without service HCAs — keep the cores on top: updn's and ftree's roots are the
//! cores, and every compute pair takes at most 4 switch hops with no VL transition (SL 0).
//! (A management spine whose leaves have no hosts used to sit above the cores in the distance
//! from the leaves and become the single root: thousands of pairs changed VL.)

use fabric::{Fabric, FaultMask};
use proptest::prelude::*;
use routing::engines::{by_name, RouteOptions, UpDownRanking};
use routing::vl::paths::Paths;

fn dump(spec: &str) -> Fabric {
    let mut f = spec
        .parse::<fabric::gen::TopoSpec>()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .generate()
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    f.hints = Default::default();
    f
}

fn is_compute(f: &Fabric, e: usize) -> bool {
    f.node(f.port(f.end_ports[e]).node).desc.starts_with("dgx")
}

fn cores_on_top(spec: &str) {
    let f = dump(spec);
    let name = |s: usize| f.node(f.switches[s]).name.clone();
    let cores: Vec<usize> = (0..f.num_switches())
        .filter(|&s| name(s).starts_with("core"))
        .collect();
    let (rk, notes) =
        UpDownRanking::for_updn(&f, &FaultMask::none(&f), &RouteOptions::default()).unwrap();
    let mut roots = rk.roots.clone();
    roots.sort_unstable();
    assert_eq!(
        roots,
        cores,
        "{spec}: updn's roots are {:?}; notes {notes:?}",
        roots.iter().map(|&s| name(s)).collect::<Vec<_>>()
    );
    for engine in ["updn", "ftree"] {
        let r = by_name(engine)
            .unwrap()
            .route_detailed(&f, &FaultMask::none(&f), &RouteOptions::default())
            .unwrap_or_else(|e| panic!("{spec} {engine}: {e}"));
        let r = r.routing;
        let paths = Paths::of(&f, &r, None);
        assert_eq!(paths.broken, 0, "{spec} {engine}");
        let mut compute_paths = 0;
        for i in 0..paths.src.len() {
            let src = paths.src[i] as usize;
            if !name(src).contains("-leaf") || name(src).starts_with("mgmt") {
                continue;
            }
            if !is_compute(&f, paths.dst[i] as usize) {
                continue;
            }
            compute_paths += 1;
            assert!(
                paths.hops(i) <= 4,
                "{spec} {engine}: {} -> LID {} takes {} switch hops",
                name(src),
                paths.dlid[i],
                paths.hops(i)
            );
        }
        assert!(compute_paths > 0);
        // No VL transition between compute end ports: SL 0 on every such pair.
        for a in (0..f.end_ports.len()).filter(|&a| is_compute(&f, a)) {
            for b in (0..f.end_ports.len()).filter(|&b| b != a && is_compute(&f, b)) {
                let lid = f.port(f.end_ports[b]).lid;
                assert_eq!(
                    r.path_sl.get(a, lid),
                    0,
                    "{spec} {engine}: compute pair {a} -> LID {lid} changes VL"
                );
            }
        }
    }
}

#[test]
fn a_management_spine_without_hosts_below_does_not_top_the_tree() {
    cores_on_top("superpod su=2 mgmt=2 mgmt-hcas=0 sharp=false");
    cores_on_top("superpod su=3 mgmt=4 mgmt-hcas=0");
    cores_on_top("superpod su=4 mgmt=6 mgmt-hcas=0 mgmt-cores=3");
    // With service HCAs below it the management spine sits at the spine level already.
    cores_on_top("superpod su=3 mgmt=4");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    #[test]
    fn superpod_management_networks_keep_the_cores_on_top(
        su in 2u32..=4, mgmt in 0u32..=6, mgmt_hcas in 0u32..=3, mgmt_cores in 1u32..=4,
        sharp in any::<bool>(),
    ) {
        cores_on_top(&format!(
            "superpod su={su} nodes=4 rails=4 spines=4 uplinks=4 mgmt={mgmt} mgmt-hcas={mgmt_hcas} mgmt-cores={mgmt_cores} sharp={sharp}"
        ));
    }
}
