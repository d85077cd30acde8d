#![no_main]
//! The SA request decoder (`mad::sa::SaRequest::decode`) on arbitrary bytes: it may refuse
//! them, never panic; what it accepts encodes back to the same header, SA header and data,
//! and the answers built from it (an error response, an empty response) are whole MADs of
//! class 0x03 with the response bit set. The record decoders (and InformInfo's and
//! MCMemberRecord's) run on the same bytes.
use libfuzzer_sys::fuzz_target;
use mad::sa::{self, NodeRecord, PathRecord, PortInfoRecord, SaRequest};

fuzz_target!(|data: &[u8]| {
    let _ = PathRecord::decode(data);
    let _ = NodeRecord::decode(data);
    let _ = PortInfoRecord::decode(data);
    if let Some(l) = mad::records::LinkRecord::decode(data) {
        assert_eq!(mad::records::LinkRecord::decode(&l.encode()), Some(l));
    }
    if let Some(s) = mad::records::SwitchInfoRecord::decode(data) {
        assert_eq!(mad::records::SwitchInfoRecord::decode(&s.encode()), Some(s));
    }
    // MCMemberRecord (joins and leaves): every field survives a round trip.
    if let Ok(m) = mad::records::McMemberRecord::decode(data) {
        assert_eq!(mad::records::McMemberRecord::decode(&m.encode()), Ok(m));
    }
    let _ = sa::decode_response(data);
    match SaRequest::decode(data) {
        Ok(req) => {
            let again = SaRequest::decode(&req.encode()).expect("an encoded request decodes");
            assert_eq!(again, req);
            let r = sa::sa_response(&req, sa::sa_status::NO_RECORDS, PathRecord::SIZE, &[])
                .expect("every request decoded gets a response");
            assert_eq!(r[1], sa::CLASS_SUBN_ADM);
            assert!(r[3] & sa::method::RESPONSE != 0);
            // The data as a subscription: every field survives a round trip.
            let mut b = [0u8; mad::inform::INFORM_INFO_LEN];
            b.copy_from_slice(&req.data[..mad::inform::INFORM_INFO_LEN]);
            let i = mad::inform::InformInfo::decode(&b);
            assert_eq!(mad::inform::InformInfo::decode(&i.encode()), i);
            if let Some(p) = PathRecord::decode(&req.data) {
                assert_eq!(PathRecord::decode(&p.encode()), Some(p));
            }
        }
        Err(e) => {
            if let Some(st) = e.status() {
                if let Some(r) = sa::error_response(data, st) {
                    assert_eq!(u16::from_be_bytes([r[4], r[5]]), st);
                    assert!(r[3] & sa::method::RESPONSE != 0);
                }
            }
        }
    }
});
