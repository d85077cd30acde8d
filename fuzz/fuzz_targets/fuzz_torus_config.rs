#![no_main]
//! OpenSM's `torus-2QoS.conf` reader (`--torus-config`) on arbitrary text: it may refuse it,
//! never panic, and its error points at a line that exists.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = fabric::io::text::decode(data);
    if let Err(e) = routing::engines::torus2qos::parse_config(&text) {
        // The reader counts lines as `str::lines` does (an error at the end names the last).
        let n = text.lines().count();
        assert!(e.line <= n.max(1), "error line {} beyond the {n} lines: {e}", e.line);
    }
});
