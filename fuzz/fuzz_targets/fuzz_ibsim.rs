#![no_main]
use fabric::io::ibsim;
use fabric::BuildOptions;
use libfuzzer_sys::fuzz_target;

mod common;

// Included files are the input itself under the requested name, so include cycles and
// errors inside included files are exercised too. Errors in an included file carry that
// file's name; their lines still index the same bytes.
fuzz_target!(|data: &[u8]| {
    let mut resolve = |name: &str| -> Result<(String, Vec<u8>), String> {
        if name.len() > 8 {
            return Err("not found".into());
        }
        Ok((name.to_string(), data.to_vec()))
    };
    common::check(
        data,
        ibsim::read(data, "fuzz", &mut resolve, BuildOptions::default()),
    );
});
