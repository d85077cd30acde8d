//! Shared checks: a reader may fail, but never panic, and its error must point at a line
//! that exists (0 = the whole file).

#![allow(dead_code)]

use fabric::io::{text, Loaded, ParseError};
use fabric::Fabric;
use std::sync::OnceLock;

pub fn check(data: &[u8], r: Result<Loaded, ParseError>) {
    if let Ok(l) = &r {
        assert!(!l.fabric.nodes.is_empty(), "loaded an empty fabric");
    }
    check_line(data, r.map(|_| ()));
}

/// A reader's error must point at a line of the input (0 = the whole file).
pub fn check_line(data: &[u8], r: Result<(), ParseError>) {
    if let Err(e) = r {
        let n = text::line_count(&text::decode(data));
        assert!(
            e.line <= n,
            "error line {} beyond the {n} lines: {e}",
            e.line
        );
    }
}

/// The fabric the table readers are fuzzed against.
pub fn small_fabric() -> &'static Fabric {
    static F: OnceLock<Fabric> = OnceLock::new();
    F.get_or_init(|| {
        "torus 3x3 hcas=2 lmc=1"
            .parse::<fabric::gen::TopoSpec>()
            .expect("spec")
            .generate()
            .expect("fabric")
    })
}
