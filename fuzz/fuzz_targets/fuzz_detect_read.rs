#![no_main]
use fabric::io;
use fabric::BuildOptions;
use libfuzzer_sys::fuzz_target;

mod common;

// The first byte picks the build options; the rest goes through detect() and read().
fuzz_target!(|data: &[u8]| {
    let (opts, data) = match data.split_first() {
        Some((&b, rest)) => (
            BuildOptions {
                lmc: b & 7,
                reassign_lids: b & 8 != 0,
            },
            rest,
        ),
        None => (BuildOptions::default(), data),
    };
    let _ = io::detect(data);
    let mut no_include =
        |_: &str| -> Result<(String, Vec<u8>), String> { Err("no includes".into()) };
    common::check(data, io::read(data, "fuzz", &mut no_include, opts));
});
