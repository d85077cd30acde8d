#![no_main]
//! OpenSM's `opensm.fdbs` reader on arbitrary bytes, against a small generated fabric (a 3x3 torus with
//! two hosts per switch and LMC 1): it may refuse the bytes, never panic, and its error must
//! point at a line that exists.
use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    let f = common::small_fabric();
    common::check_line(data, routing::opensm::read_fdbs(data, "fuzz", f).map(|_| ()));
});
