#![no_main]
use fabric::io::subnet_lst;
use fabric::BuildOptions;
use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    common::check(
        data,
        subnet_lst::read(data, "fuzz", BuildOptions::default()),
    );
});
