#![no_main]
//! The SMP decoder (`mad::Smp::decode`, what the subnet manager runs on every MAD it
//! receives) on arbitrary bytes: it may refuse them, never panic; what it accepts encodes
//! to bytes that decode to the same SMP, its response does too, and the attribute decoders
//! run on its data (SMInfo round-trips).
use libfuzzer_sys::fuzz_target;
use mad::attr::{NodeInfo, Notice, SmInfo};
use mad::{Method, Smp};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = Smp::decode(data) {
        let again = Smp::decode(&s.encode()).expect("an encoded SMP decodes");
        assert_eq!(again, s);
        let r = s.response(0, s.data);
        let back = Smp::decode(&r.encode()).expect("a response decodes");
        assert_eq!(back.method, Method::GetResp);
        let _ = NodeInfo::decode(&s.data);
        let _ = Notice::decode(&s.data);
        let i = SmInfo::decode(&s.data);
        assert_eq!(SmInfo::decode(&i.encode()), i);
    }
});
