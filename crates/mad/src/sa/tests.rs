use super::*;

fn pr() -> PathRecord {
    PathRecord {
        service_id: 0x1122_3344_5566_7788,
        dgid: Gid {
            prefix: DEFAULT_GID_PREFIX,
            guid: 0x10_0015,
        },
        sgid: Gid {
            prefix: DEFAULT_GID_PREFIX,
            guid: 0x10_0001,
        },
        dlid: 0x41,
        slid: 4,
        raw_traffic: true,
        flow_label: 0xa_bcde,
        hop_limit: 0xff,
        tclass: 7,
        reversible: true,
        numb_path: 0x7f,
        pkey: 0xffff,
        qos_class: 0xabc,
        sl: 5,
        mtu_selector: 2,
        mtu: 4,
        rate_selector: 2,
        rate: 3,
        pkt_life_selector: 2,
        pkt_life: 0x12,
        preference: 1,
    }
}

/// The bytes of a PathRecord as libibmad's `ib_path_rec_t` lays them out: DLID at 40, SLID
/// at 42, hop/flow/raw at 44, reversible|numb_path at 49, P_Key at 50, QoS class|SL at 52,
/// MTU, rate, packet lifetime at 54..57 with their selectors in the top two bits.
#[test]
fn path_record_has_the_wire_layout_and_round_trips() {
    let r = pr();
    let b = r.encode();
    assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_be_bytes());
    assert_eq!(&b[8..10], &[0xfe, 0x80]);
    assert_eq!(&b[16..24], &0x10_0015u64.to_be_bytes());
    assert_eq!(&b[40..44], &[0, 0x41, 0, 4]);
    assert_eq!(&b[44..48], &[0x8a, 0xbc, 0xde, 0xff]);
    assert_eq!((b[48], b[49]), (7, 0xff));
    assert_eq!(&b[50..54], &[0xff, 0xff, 0xab, 0xc5]);
    assert_eq!(&b[54..58], &[0x84, 0x83, 0x92, 1]);
    assert!(b[58..].iter().all(|&x| x == 0));
    assert_eq!(PathRecord::decode(&b), Some(r));
    assert_eq!(PathRecord::decode(&b[..63]), None);
}

#[test]
fn node_and_port_info_records_round_trip() {
    let n = NodeRecord {
        lid: 0x40,
        info: NodeInfo {
            node_type: crate::attr::NODE_CA,
            nports: 1,
            sys_guid: 0x10_0014,
            node_guid: 0x10_0014,
            port_guid: 0x10_0015,
            partition_cap: 1,
            device_id: 0x1003,
            revision: 0xa1,
            local_port: 1,
            vendor_id: 0x2c9,
        },
        desc: crate::attr::node_desc_encode("H_1_1_0"),
    };
    let b = n.encode();
    // NodeInfo starts at 4 (after LID and 2 reserved bytes) with base and class version 1.
    assert_eq!(&b[0..6], &[0, 0x40, 0, 0, 1, 1]);
    assert_eq!(&b[44..51], b"H_1_1_0");
    assert_eq!(NodeRecord::decode(&b), Some(n));
    assert_eq!(NodeRecord::decode(&b[..100]), None);
    let p = PortInfoRecord {
        lid: 7,
        port_num: 3,
        options: 0,
        port_info: [9; 64],
    };
    let b = p.encode();
    assert_eq!(&b[0..4], &[0, 7, 3, 0]);
    assert_eq!(PortInfoRecord::decode(&b), Some(p));
    assert_eq!(padded(NodeRecord::SIZE), 112);
    assert_eq!(padded(PortInfoRecord::SIZE), 72);
}

/// The request `saquery -p --slid 4 --dlid 65` sends: GetTable of PathRecord, component mask
/// SLID|DLID, the template record at byte 56.
#[test]
fn saquery_path_request_decodes() {
    let t = PathRecord {
        dlid: 65,
        slid: 4,
        ..Default::default()
    };
    let req = SaRequest::new(
        method::GET_TABLE,
        sa_attr::PATH_RECORD,
        0xdead_0000_0001,
        pr_mask::SLID | pr_mask::DLID,
        &t.encode(),
    );
    let m = req.encode();
    assert_eq!(&m[0..4], &[1, 3, 2, 0x12]);
    assert_eq!(&m[16..18], &[0, 0x35]);
    assert_eq!(&m[48..56], &[0, 0, 0, 0, 0, 0, 0, 0x30]);
    assert_eq!(&m[96..100], &[0, 65, 0, 4]);
    let d = SaRequest::decode(&m).unwrap();
    assert_eq!(d, req);
    assert_eq!(PathRecord::decode(&d.data).unwrap(), t);
}

#[test]
fn get_table_response_is_one_whole_rmpp_segment() {
    let req = SaRequest::new(method::GET_TABLE, sa_attr::PATH_RECORD, 77, 0x30, &[]);
    let rec = pr().encode();
    let m = sa_response(&req, 0, PathRecord::SIZE, &rec).unwrap();
    assert_eq!(&m[0..4], &[1, 3, 2, 0x92]);
    assert_eq!(&m[8..16], &77u64.to_be_bytes());
    assert_eq!(&m[24..28], &[1, RMPP_DATA, 7, 0]);
    assert_eq!(&m[28..36], &[0, 0, 0, 1, 0, 0, 0, 20 + 64]);
    assert_eq!(&m[44..46], &[0, 8]);
    let (h, recs) = decode_response(&m).unwrap();
    assert_eq!((h.method, h.status, recs.len()), (0x92, 0, 1));
    assert_eq!(PathRecord::decode(recs[0]), Some(pr()));
    // A Get answers GetResp without RMPP; an error carries no records.
    let get = SaRequest::new(method::GET, sa_attr::PATH_RECORD, 78, 0x30, &[]);
    let m = sa_response(&get, sa_status::NO_RECORDS, PathRecord::SIZE, &[]).unwrap();
    assert_eq!((m[3], &m[4..6], m[26]), (0x81, &[3u8, 0][..], 0));
    assert_eq!(decode_response(&m).unwrap().1.len(), 0);
    // Two node records do not fit in one MAD.
    assert!(sa_response(&req, 0, 112, &[0; 224]).is_none());
}

#[test]
fn malformed_requests_are_errors_with_the_status_to_answer() {
    let ok = SaRequest::new(method::GET, sa_attr::NODE_RECORD, 1, 1, &[]).encode();
    assert_eq!(SaRequest::decode(&ok[..255]), Err(SaError::Size(255)));
    assert_eq!(SaRequest::decode(&[]), Err(SaError::Size(0)));
    let mut m = ok;
    m[0] = 2;
    assert_eq!(SaRequest::decode(&m), Err(SaError::BaseVersion(2)));
    assert_eq!(
        SaRequest::decode(&m).unwrap_err().status(),
        Some(status::BAD_VERSION)
    );
    let mut m = ok;
    m[2] = 1;
    assert_eq!(SaRequest::decode(&m), Err(SaError::ClassVersion(1)));
    let mut m = ok;
    m[1] = 0x04;
    assert_eq!(SaRequest::decode(&m), Err(SaError::Class(4)));
    let mut m = ok;
    m[3] = 0x81;
    assert_eq!(SaRequest::decode(&m).unwrap_err().status(), None);
    let mut m = ok;
    m[3] = method::TRAP_REPRESS;
    assert_eq!(SaRequest::decode(&m).unwrap_err().status(), None);
    // RMPP: an ACK is dropped, one segment of several is refused.
    let mut m = ok;
    m[25] = 2;
    m[26] = RMPP_ACTIVE;
    assert_eq!(SaRequest::decode(&m).unwrap_err().status(), None);
    let mut m = ok;
    m[25] = RMPP_DATA;
    m[26] = RMPP_ACTIVE | RMPP_FIRST;
    assert_eq!(
        SaRequest::decode(&m).unwrap_err().status(),
        Some(sa_status::NO_RESOURCES)
    );
    m[26] = RMPP_ACTIVE | RMPP_FIRST | RMPP_LAST;
    assert!(SaRequest::decode(&m).is_ok());
}

#[test]
fn unserved_classes_get_an_error_response_and_responses_none() {
    let mut m = [0u8; MAD_SIZE];
    m[..4].copy_from_slice(&[1, 0x07, 2, method::GET]);
    m[8..16].copy_from_slice(&5u64.to_be_bytes());
    m[100] = 0x5a;
    let r = error_response(&m, status::BAD_VERSION).unwrap();
    assert_eq!(&r[..6], &[1, 0x07, 2, 0x81, 0, 4]);
    assert_eq!(&r[8..16], &5u64.to_be_bytes());
    assert_eq!(r[100], 0x5a);
    m[3] = method::SET;
    assert_eq!(error_response(&m, 8).unwrap()[3], 0x81);
    m[3] = method::GET_TABLE;
    assert_eq!(error_response(&m, 8).unwrap()[3], 0x92);
    for no in [0x81, 0x92, method::SEND, method::TRAP, method::TRAP_REPRESS] {
        m[3] = no;
        assert_eq!(error_response(&m, 8), None, "method {no:#x}");
    }
    m[3] = method::GET;
    m[1] = crate::CLASS_SUBN_DR;
    assert_eq!(error_response(&m, 8), None);
    assert_eq!(error_response(&m[..20], 8), None);
}

#[test]
fn rates_and_mtus() {
    assert_eq!(rate_code(4, 5), Some(3)); // 4x SDR: 10 Gb/s
    assert_eq!(rate_code(4, 20), Some(7)); // 4x QDR: 40 Gb/s
    assert_eq!(rate_code(4, 28), Some(12)); // 4x FDR: 56 Gb/s
    assert_eq!(rate_code(4, 50), Some(16)); // 4x EDR: 100 Gb/s
    assert_eq!(rate_code(4, 100), Some(17)); // 4x HDR: 200 Gb/s
    assert_eq!(rate_code(1, 5), Some(2));
    assert_eq!(rate_code(0, 5), None);
    assert_eq!(mtu_bytes(4), Some(2048));
    assert_eq!(mtu_bytes(0), None);
    assert_eq!(mtu_bytes(6), None);
}

/// Every byte pattern decodes to a value or an error (a cheap stand-in for the fuzz target).
#[test]
fn decoders_never_panic_on_noise() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for len in [0usize, 1, 23, 24, 64, 200, 255, 256, 257] {
        for _ in 0..200 {
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = SaRequest::decode(&b);
            let _ = MadHeader::decode(&b);
            let _ = error_response(&b, 4);
            let _ = decode_response(&b);
            let _ = PathRecord::decode(&b);
            let _ = NodeRecord::decode(&b);
            let _ = PortInfoRecord::decode(&b);
        }
    }
}
