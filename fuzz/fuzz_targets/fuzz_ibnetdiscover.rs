#![no_main]
use fabric::io::ibnetdiscover;
use fabric::BuildOptions;
use libfuzzer_sys::fuzz_target;

mod common;

fuzz_target!(|data: &[u8]| {
    common::check(
        data,
        ibnetdiscover::read(data, "fuzz", BuildOptions::default()),
    );
});
