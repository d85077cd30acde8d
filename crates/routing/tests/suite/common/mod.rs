//! Helpers shared by the routing integration tests (each test file is its own crate and
//! includes this module; not every file uses every helper).
#![allow(dead_code)]

use fabric::{Fabric, LinkId};
use std::path::Path;

/// Reads a fabric file of the repository's test data (any format `fabric::io` detects).
pub fn read_fabric(path: &Path) -> Fabric {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_fabric(&bytes, &path.display().to_string())
}

/// Parses fabric text (any format `fabric::io` detects) named `name` in errors.
pub fn parse_fabric(bytes: &[u8], name: &str) -> Fabric {
    let mut none = |n: &str| -> Result<(String, Vec<u8>), String> { Err(n.to_string()) };
    fabric::io::read(bytes, name, &mut none, fabric::BuildOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .fabric
}

/// Every vendored fabric: gen_topo.py's references with their failed-link variants
/// (`tests/data/topologies`) and the real dumps (`tests/data/real`), sorted by path, with
/// their paths.
pub fn vendored_fabrics() -> Vec<(String, Fabric)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut files: Vec<std::path::PathBuf> = ["topologies", "real"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "net" || x == "ibnd"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} fabrics", files.len());
    files
        .iter()
        .map(|p| (p.display().to_string(), read_fabric(p)))
        .collect()
}

/// The links between two switches.
pub fn switch_links(f: &Fabric) -> Vec<LinkId> {
    (0..f.links.len() as u32)
        .map(LinkId)
        .filter(|&l| {
            let k = f.link(l);
            f.is_switch(f.port(k.a).node) && f.is_switch(f.port(k.b).node)
        })
        .collect()
}

/// `n` distinct random inter-switch link faults (fewer when the fabric has fewer links), then
/// a random switch fault if `with_switch`, drawn from `seed`.
pub fn random_faults(
    f: &Fabric,
    seed: u64,
    n: usize,
    with_switch: bool,
) -> Vec<routing::fault::Fault> {
    let links = switch_links(f);
    let mut rng = fabric::rng::Rng::new(seed);
    let mut faults = Vec::new();
    let mut used = std::collections::HashSet::new();
    while faults.len() < n.min(links.len()) {
        let l = links[rng.below(links.len() as u64) as usize];
        if used.insert(l) {
            faults.push(routing::fault::Fault::Link(l));
        }
    }
    if with_switch {
        let s = f.switches[rng.below(f.num_switches() as u64) as usize];
        faults.push(routing::fault::Fault::Switch(fabric::NodeId(s.0)));
    }
    faults
}
