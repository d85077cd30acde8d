#![no_main]
//! The GUID-list reader (`--roots`, `--cn-guids`, `--io-guids`, `--guid-routing-order`) on
//! arbitrary bytes: it may refuse them, never panic; its error points at a line that exists,
//! and every GUID it returns comes with a line of the input.
use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    let r = fabric::io::guids::parse_guid_list(data, "fuzz");
    if let Ok(v) = &r {
        let n = fabric::io::text::line_count(&fabric::io::text::decode(data));
        assert!(v.iter().all(|&(_, line)| line >= 1 && line <= n));
    }
    common::check_line(data, r.map(|_| ()));
});
