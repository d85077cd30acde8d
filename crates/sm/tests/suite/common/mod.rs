//! What the subnet manager's test files share.

use fabric::Fabric;

/// The fabric of a generator spec (`"torus 3x3"`, `"ktree 4 3"`, …).
pub fn fabric(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .unwrap()
        .generate()
        .unwrap()
}
