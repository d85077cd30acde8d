//! Shared checks: a reader may fail, but never panic, and its error must point at a line
//! that exists (0 = the whole file).

use fabric::io::{lines, Loaded, ParseError};

pub fn check(data: &[u8], r: Result<Loaded, ParseError>) {
    match r {
        Ok(l) => assert!(!l.fabric.nodes.is_empty(), "loaded an empty fabric"),
        Err(e) => {
            let n = lines::line_count(&lines::decode(data));
            assert!(
                e.line <= n,
                "error line {} beyond the {n} lines: {e}",
                e.line
            );
        }
    }
}
