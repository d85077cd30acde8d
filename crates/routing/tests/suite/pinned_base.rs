//! The base that `fault`, `sweep` and the subnet manager repair is the routing `route` gives:
//! pinning an engine's choices ([`routing::engines::Engine::pin_choices`]) and routing with
//! them yields the same tables, byte for byte, as routing with the options as given — on every
//! vendored fabric (the real dumps included) and on generated SuperPODs, trees, tori and
//! Dragonflies, for every engine RFTR repairs.

use fabric::gen::{generate, TopoSpec};
use fabric::{Fabric, FaultMask};
use routing::engines::{by_name, rftr_bases, RouteOptions};
use routing::fault::Session;

use crate::common;

fn same_base(name: &str, f: &Fabric) -> Vec<String> {
    let mut bad = Vec::new();
    for e in rftr_bases() {
        let engine = by_name(e).unwrap();
        let opts = RouteOptions::default();
        let Ok(plain) = engine.route(f, &FaultMask::none(f), &opts) else {
            continue;
        };
        let (_, pinned) = Session::route_base(f, engine.as_ref(), &opts)
            .unwrap_or_else(|err| panic!("{name} {e}: pinned routing failed: {err}"));
        let diff = plain
            .lft
            .iter()
            .zip(&pinned.lft)
            .filter(|(a, b)| a != b)
            .count();
        if plain.lft.len() != pinned.lft.len() || diff > 0 {
            bad.push(format!("{name} {e}: {diff} LFT entries differ"));
        }
        if format!("{:?}", plain.path_sl) != format!("{:?}", pinned.path_sl) {
            bad.push(format!("{name} {e}: path SLs differ"));
        }
        if format!("{:?}", plain.sl2vl) != format!("{:?}", pinned.sl2vl) {
            bad.push(format!("{name} {e}: SL2VL tables differ"));
        }
    }
    bad
}

#[test]
fn pinned_base_equals_route_on_vendored_fabrics() {
    let mut bad = Vec::new();
    for (name, f) in common::vendored_fabrics() {
        bad.extend(same_base(&name, &f));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn pinned_base_equals_route_on_generated_fabrics() {
    let specs = [
        "superpod su=2",
        "superpod su=3 missing=4",
        "superpod su=2 mgmt=2 mgmt-hcas=0",
        "superpod su=3 mgmt=4 mgmt-hcas=0 sharp=false",
        "ktree 6 3",
        "torus 5x4 hcas=2",
        "mesh 4x3 hcas=1",
        "dragonfly 4 2 2",
        "dragonflyplus groups=5 leaves=4 spines=4 hosts=4 global=1",
        "leafspine leaves=8 spines=4 hosts=8",
    ];
    let mut bad = Vec::new();
    for s in specs {
        let f = generate(&s.parse::<TopoSpec>().unwrap()).unwrap();
        bad.extend(same_base(s, &f));
        // As an operator's ibnetdiscover dump gives it: no generator hints, so every choice
        // (roots, tree levels, coordinates) is the engine's own.
        let text = fabric::io::writers::to_ibnetdiscover(&f);
        let dump = common::parse_fabric(text.as_bytes(), "dump.ibnd");
        assert!(dump.hints.roots.is_empty(), "{s}: a dump has no hints");
        bad.extend(same_base(&format!("{s} (as a dump)"), &dump));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
