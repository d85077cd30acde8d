//! Helpers shared by the benches (each bench is its own crate and includes this module).

use fabric::gen::TopoSpec;
use fabric::Fabric;

/// Whether `name` is selected by the comma-separated list in environment variable `var`
/// (unset or empty = everything).
pub fn selected(var: &str, name: &str) -> bool {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v.split(',').any(|x| x == name),
        _ => true,
    }
}

/// Generates a fabric from a `fabroute gen` spec; panics with the spec on error.
pub fn gen(spec: &str) -> Fabric {
    spec.parse::<TopoSpec>()
        .and_then(|s| s.generate())
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}
