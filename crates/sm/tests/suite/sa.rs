//! The SA on the SM's port against the in-process fake fabric: PathRecords carry the
//! (DLID, SL) of the tables the SM wrote, and after a repair the moved sources' new
//! (DLID, SL); malformed and unsupported queries and MADs of other classes get the proper
//! status (or nothing), never a crash.

use crate::common;
use common::fabric;
use fabric::{Fabric, LinkId, PortId};
use mad::sa::{
    self, decode_response, method, nr_mask, pir_mask, pr_mask, sa_attr, sa_status, Gid, NodeRecord,
    PathRecord, PortInfoRecord, SaRequest, DEFAULT_GID_PREFIX,
};
use mad::{status, Address, MAD_SIZE};
use routing::engines::{by_name, Engine, RouteOptions};
use routing::fault::RftrConfig;
use sm::fake::FakeFabric;
use sm::{discover, Discovery, Live, Pipe, PipeConfig, RepairMode, SmConfig};
use std::time::Duration;

fn setup(phys: &Fabric) -> Discovery {
    let fake = FakeFabric::new(phys, phys.end_ports[0]);
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    discover(&mut pipe, 2).unwrap()
}

fn bring_up<'f>(d: &'f Discovery, e: &'f dyn Engine, phys: &Fabric) -> Live<'f, FakeFabric> {
    let fake = FakeFabric::new(phys, phys.end_ports[0]);
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    // Discovery again on this fake, so that its ports hold the LIDs the SM assigns.
    let _ = discover(&mut pipe, 2).unwrap();
    let cfg = SmConfig {
        repair: RepairMode::Rftr,
        // Every new path on a virtual LID, as in the RFTR paper, so that repairs move
        // sources.
        rftr: RftrConfig {
            reuse_dead_base: false,
            prefer_base_lid: false,
            ..RftrConfig::default()
        },
        opts: RouteOptions::default(),
        sweep_interval: None,
        priority: 0,
        mcast: Vec::new(),
    };
    Live::bring_up(d, pipe, e, cfg).unwrap().0
}

/// Sends `m` to the SM from `from` and returns its answer (`None`: no answer).
fn ask(
    live: &mut Live<'_, FakeFabric>,
    m: [u8; MAD_SIZE],
    from: Address,
) -> Option<[u8; MAD_SIZE]> {
    live.pipe.transport_mut().answers.clear();
    live.pipe.transport_mut().inject(m, from);
    live.step(Duration::from_millis(1)).unwrap();
    let a = &live.pipe.transport_mut().answers;
    assert!(a.len() <= 1, "one answer per request");
    a.first().map(|(m, to)| {
        assert_eq!(*to, from, "answered to the requester");
        *m
    })
}

fn host(f: &Fabric, p: PortId) -> Address {
    Address {
        lid: f.port(p).lid,
        qpn: 1,
    }
}

fn path_query(method: u8, mask: u64, t: PathRecord) -> [u8; MAD_SIZE] {
    SaRequest::new(method, sa_attr::PATH_RECORD, 0x42, mask, &t.encode()).encode()
}

/// The one PathRecord of an answer.
fn one_path(a: &[u8; MAD_SIZE]) -> PathRecord {
    let (h, recs) = decode_response(a).unwrap();
    assert_eq!(h.status, 0, "status {:#06x}", h.status);
    assert_eq!(recs.len(), 1);
    PathRecord::decode(recs[0]).unwrap()
}

fn status_of(a: Option<[u8; MAD_SIZE]>) -> u16 {
    decode_response(&a.expect("an answer")).unwrap().0.status
}

#[test]
fn path_records_follow_the_tables_and_the_repairs() {
    let phys = fabric("torus 4x4 hcas=1");
    let d = setup(&phys);
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys);
    let f = &d.fabric;
    let ends = f.end_ports.clone();
    let from = host(f, ends[3]);
    // Every pair by LIDs: the base LID and the path SL of the tables.
    for (si, &s) in ends.iter().enumerate() {
        for &t in ends.iter().skip(si % 3).step_by(3) {
            let q = PathRecord {
                slid: f.port(s).lid,
                dlid: f.port(t).lid,
                ..Default::default()
            };
            let a = ask(
                &mut live,
                path_query(method::GET_TABLE, pr_mask::SLID | pr_mask::DLID, q),
                from,
            )
            .unwrap();
            assert_eq!(a[3], method::GET_TABLE_RESP);
            let r = one_path(&a);
            assert_eq!((r.slid, r.dlid), (q.slid, q.dlid));
            assert_eq!(r.sl, live.tables().path_sl.get(si, r.dlid));
            assert_eq!((r.sgid.guid, r.dgid.guid), (f.port(s).guid, f.port(t).guid));
            assert_eq!(
                (r.pkey, r.reversible, r.mtu_selector, r.rate_selector),
                (0xffff, true, 2, 2)
            );
            assert_eq!(r.pkt_life, if s == t { 0 } else { 0x12 });
        }
    }
    // Pull a cable between switches; RFTR moves some sources to virtual LIDs.
    let pl = (0..phys.links.len() as u32)
        .map(LinkId)
        .find(|&l| {
            phys.is_switch(phys.port(phys.link(l).a).node)
                && phys.is_switch(phys.port(phys.link(l).b).node)
        })
        .unwrap();
    live.pipe.transport_mut().unlink(pl);
    for _ in 0..4 {
        live.step(Duration::from_millis(5)).unwrap();
    }
    let moved: Vec<((u32, u32), (u16, u8))> = live
        .session()
        .unwrap()
        .rftr()
        .delta
        .sources
        .iter()
        .map(|(&k, &v)| (k, v))
        .collect();
    assert!(!moved.is_empty(), "the repair moved sources");
    for &((s, t), (dlid, sl)) in &moved {
        let (sp, tp) = (ends[s as usize], ends[t as usize]);
        assert_ne!(dlid, f.port(tp).lid, "a virtual LID");
        // By LIDs, asking for the base LID: told the virtual one.
        let q = PathRecord {
            slid: f.port(sp).lid,
            dlid: f.port(tp).lid,
            ..Default::default()
        };
        let r = one_path(
            &ask(
                &mut live,
                path_query(method::GET, pr_mask::SLID | pr_mask::DLID, q),
                from,
            )
            .unwrap(),
        );
        assert_eq!((r.dlid, r.sl), (dlid, sl));
        // By GIDs: the same, with the hop limit OpenSM gives to queries by DGID.
        let q = PathRecord {
            sgid: Gid {
                prefix: DEFAULT_GID_PREFIX,
                guid: f.port(sp).guid,
            },
            dgid: Gid {
                prefix: DEFAULT_GID_PREFIX,
                guid: f.port(tp).guid,
            },
            ..Default::default()
        };
        let r = one_path(
            &ask(
                &mut live,
                path_query(method::GET, pr_mask::SGID | pr_mask::DGID, q),
                from,
            )
            .unwrap(),
        );
        assert_eq!(
            (r.dlid, r.sl, r.slid, r.hop_limit),
            (dlid, sl, f.port(sp).lid, 0xff)
        );
    }
    // A pair RFTR did not move keeps its base LID.
    let kept = (0..ends.len() as u32)
        .flat_map(|s| (0..ends.len() as u32).map(move |t| (s, t)))
        .find(|&(s, t)| s != t && !moved.iter().any(|m| m.0 == (s, t)))
        .unwrap();
    let q = PathRecord {
        slid: f.port(ends[kept.0 as usize]).lid,
        dlid: f.port(ends[kept.1 as usize]).lid,
        ..Default::default()
    };
    let r = one_path(
        &ask(
            &mut live,
            path_query(method::GET, pr_mask::SLID | pr_mask::DLID, q),
            from,
        )
        .unwrap(),
    );
    assert_eq!(r.dlid, q.dlid);
    let st = live.sa_stats();
    assert_eq!((st.errors, st.dropped, st.other_classes), (0, 0, 0));
}

#[test]
fn bad_and_unsupported_queries_get_their_status() {
    let phys = fabric("torus 3x3 hcas=1");
    let d = setup(&phys);
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys);
    let f = &d.fabric;
    let (a, b) = (f.end_ports[1], f.end_ports[2]);
    let from = host(f, a);
    let lids = PathRecord {
        slid: f.port(a).lid,
        dlid: f.port(b).lid,
        ..Default::default()
    };
    let both = pr_mask::SLID | pr_mask::DLID;
    let mut q = |m: [u8; MAD_SIZE]| status_of(ask(&mut live, m, from));
    // No such LID; one end missing (Get; GetTable would need more than one MAD).
    let nowhere = PathRecord { dlid: 4000, ..lids };
    assert_eq!(
        q(path_query(method::GET_TABLE, both, nowhere)),
        sa_status::NO_RECORDS
    );
    assert_eq!(
        q(path_query(method::GET, pr_mask::SLID, lids)),
        sa_status::INSUFFICIENT_COMPONENTS
    );
    assert_eq!(
        q(path_query(method::GET_TABLE, pr_mask::SLID, lids)),
        sa_status::NO_RESOURCES
    );
    // A GID outside the subnet, or of no port.
    let mut g = PathRecord {
        sgid: Gid {
            prefix: 0x1234,
            guid: f.port(a).guid,
        },
        dgid: Gid {
            prefix: DEFAULT_GID_PREFIX,
            guid: f.port(b).guid,
        },
        ..Default::default()
    };
    assert_eq!(
        q(path_query(method::GET, pr_mask::SGID | pr_mask::DGID, g)),
        sa_status::INVALID_GID
    );
    g.sgid = Gid {
        prefix: DEFAULT_GID_PREFIX,
        guid: 0xdead,
    };
    assert_eq!(
        q(path_query(method::GET, pr_mask::SGID | pr_mask::DGID, g)),
        sa_status::INVALID_GID
    );
    // An SL the path does not have, a P_Key other than the default.
    let sl9 = PathRecord { sl: 9, ..lids };
    assert_eq!(
        q(path_query(method::GET, both | pr_mask::SL, sl9)),
        sa_status::NO_RECORDS
    );
    let pk = PathRecord {
        pkey: 0x8001,
        ..lids
    };
    assert_eq!(
        q(path_query(method::GET, both | pr_mask::PKEY, pk)),
        sa_status::NO_RECORDS
    );
    // Methods and attributes this SA does not serve.
    assert_eq!(q(path_query(0x04, both, lids)), status::METHOD_UNSUPPORTED);
    assert_eq!(
        q(path_query(method::SET, both, lids)),
        status::ATTR_UNSUPPORTED
    );
    // ServiceRecord.
    let service = SaRequest::new(method::GET_TABLE, 0x0031, 9, 0, &[]).encode();
    assert_eq!(q(service), status::ATTR_UNSUPPORTED);
    // Every LinkRecord needs RMPP.
    let links = SaRequest::new(method::GET_TABLE, sa_attr::LINK_RECORD, 9, 0, &[]).encode();
    assert_eq!(q(links), sa_status::NO_RESOURCES);
    let mut v1 = path_query(method::GET, both, lids);
    v1[2] = 1;
    assert_eq!(q(v1), status::BAD_VERSION);
    // All NodeRecords need RMPP; one by LID fits.
    let all = SaRequest::new(method::GET_TABLE, sa_attr::NODE_RECORD, 9, 0, &[]).encode();
    assert_eq!(q(all), sa_status::NO_RESOURCES);
    let mut t = [0u8; NodeRecord::SIZE];
    t[0..2].copy_from_slice(&f.port(b).lid.to_be_bytes());
    let by_lid =
        SaRequest::new(method::GET_TABLE, sa_attr::NODE_RECORD, 9, nr_mask::LID, &t).encode();
    let ans = ask(&mut live, by_lid, from).unwrap();
    let (h, recs) = decode_response(&ans).unwrap();
    assert_eq!((h.status, recs.len()), (0, 1));
    let nr = NodeRecord::decode(recs[0]).unwrap();
    assert_eq!(
        (nr.lid, nr.info.port_guid, nr.info.node_guid),
        (f.port(b).lid, f.port(b).guid, f.node(f.port(b).node).guid)
    );
    assert_eq!(
        mad::attr::node_desc_decode(&{
            let mut x = [0u8; 64];
            x.copy_from_slice(&nr.desc);
            x
        }),
        f.node(f.port(b).node).desc
    );
    // A PortInfoRecord of a CA port; all ports of a switch do not fit.
    let pir = PortInfoRecord {
        lid: f.port(b).lid,
        port_num: 0,
        options: 0,
        port_info: [0; 64],
    };
    let ans = ask(
        &mut live,
        SaRequest::new(
            method::GET_TABLE,
            sa_attr::PORT_INFO_RECORD,
            9,
            pir_mask::LID,
            &pir.encode(),
        )
        .encode(),
        from,
    )
    .unwrap();
    let (h, recs) = decode_response(&ans).unwrap();
    assert_eq!((h.status, recs.len()), (0, 1));
    assert_eq!(
        mad::attr::PortInfo(PortInfoRecord::decode(recs[0]).unwrap().port_info).lid(),
        f.port(b).lid
    );
    let sw = PortInfoRecord {
        lid: f.switch_lid(f.switches[0]),
        ..pir
    };
    let mut q = |m: [u8; MAD_SIZE]| status_of(ask(&mut live, m, from));
    assert_eq!(
        q(SaRequest::new(
            method::GET_TABLE,
            sa_attr::PORT_INFO_RECORD,
            9,
            pir_mask::LID,
            &sw.encode()
        )
        .encode()),
        sa_status::NO_RESOURCES
    );
    // ClassPortInfo.
    let cpi = SaRequest::new(method::GET, sa::sa_attr::CLASS_PORT_INFO, 9, 0, &[]).encode();
    assert_eq!(q(cpi), 0);
    // Other classes: "unsupported class" as a kernel answers; an SMInfo Get to the SM: its
    // SMInfo; another SMP attribute: unsupported attribute; responses and traps: nothing.
    let mut cc = [0u8; MAD_SIZE];
    cc[..4].copy_from_slice(&[1, 0x21, 2, method::GET]);
    assert_eq!(q(cc), status::BAD_VERSION);
    let mut sminfo = [0u8; MAD_SIZE];
    sminfo[..4].copy_from_slice(&[1, mad::CLASS_SUBN_LID, 1, method::GET]);
    sminfo[16..18].copy_from_slice(&0x20u16.to_be_bytes());
    assert_eq!(q(sminfo), 0);
    let mut node_info = sminfo;
    node_info[16..18].copy_from_slice(&0x11u16.to_be_bytes());
    assert_eq!(q(node_info), status::ATTR_UNSUPPORTED);
    for m in [0x81, 0x92, method::TRAP, method::SEND] {
        cc[3] = m;
        assert_eq!(ask(&mut live, cc, from), None, "method {m:#x}");
        let mut r = path_query(method::GET, both, lids);
        r[3] = m;
        assert_eq!(ask(&mut live, r, from), None, "SA method {m:#x}");
    }
    // Noise: any bytes, never a panic, and the SA still answers afterwards.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        let mut m = [0u8; MAD_SIZE];
        for b in m.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        // Mostly SA MADs with random fields.
        if !x.is_multiple_of(4) {
            m[0] = 1;
            m[1] = sa::CLASS_SUBN_ADM;
            m[2] = 2;
        }
        let _ = ask(&mut live, m, from);
    }
    let r = one_path(&ask(&mut live, path_query(method::GET, both, lids), from).unwrap());
    assert_eq!(r.slid, lids.slid);
}

/// A LID-routed SMInfo Get (what `sminfo` sends) gets the SM's port GUID, its priority, the
/// MASTER state and an ActCount that grows with the SMPs sent; a Set of SMInfo (another SM's
/// handover) and a directed-route SMInfo get "unsupported attribute" or nothing.
#[test]
fn sm_info_says_who_the_master_is() {
    use mad::attr::{sm_state, SmInfo};
    use mad::{attr_id, Method, Route, Smp};
    let phys = fabric("torus 4x4 hcas=1");
    let d = setup(&phys);
    let e = by_name("updn").unwrap();
    let fake = FakeFabric::new(&phys, phys.end_ports[0]);
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    let _ = discover(&mut pipe, 2).unwrap();
    let cfg = SmConfig {
        repair: RepairMode::Full,
        rftr: RftrConfig::default(),
        opts: RouteOptions::default(),
        sweep_interval: None,
        priority: 11,
        mcast: Vec::new(),
    };
    let mut live = Live::bring_up(&d, pipe, e.as_ref(), cfg).unwrap().0;
    let f = &d.fabric;
    let from = host(f, f.end_ports[5]);
    let get = Smp::request(Method::Get, Route::Lid(0), 7, attr_id::SM_INFO, 0).encode();
    let a = ask(&mut live, get, from).expect("an answer");
    let r = Smp::decode(&a).unwrap();
    assert_eq!((r.method, r.status, r.tid), (Method::GetResp, 0, 7));
    assert_eq!(r.attr, attr_id::SM_INFO);
    let i = SmInfo::decode(&r.data);
    assert_eq!(i.guid, f.port(f.end_ports[0]).guid, "the SM's port");
    assert_eq!((i.priority, i.state), (11, sm_state::MASTER));
    let sent = live.pipe.stats.sent;
    assert!(sent > 0);
    assert_eq!(i.act_count as u64, sent);
    // Set (a handover): not served.
    let set = Smp::request(Method::Set, Route::Lid(0), 8, attr_id::SM_INFO, 1).encode();
    assert_eq!(
        u16::from_be_bytes(ask(&mut live, set, from).unwrap()[4..6].try_into().unwrap()),
        status::ATTR_UNSUPPORTED
    );
    // Directed route: the SM answers no DR SMP (it is not the port's SMA).
    let dr = Smp::request(Method::Get, Route::Direct(vec![1]), 9, attr_id::SM_INFO, 0).encode();
    assert_eq!(ask(&mut live, dr, from), None);
    assert_eq!(live.sa_stats().sm_info, 1);
}

/// LinkRecords: both directions of the cables alive, in LID and port order, matched on
/// the fields asked; a pulled cable's records are gone. SwitchInfoRecord: the switch's
/// SwitchInfo as the SM set it (LinearFDBTop = the top LID). Unknown components: refused.
#[test]
fn link_and_switch_info_records_describe_the_live_fabric() {
    use mad::records::{lr_mask, swir_mask, LinkRecord, SwitchInfoRecord};
    let phys = fabric("torus 4x4 hcas=1");
    let d = setup(&phys);
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys);
    let f = &d.fabric;
    let from = host(f, f.end_ports[5]);
    let sw = f.switches[5];
    let sw_lid = f.switch_lid(sw);
    let q = LinkRecord {
        from_lid: sw_lid,
        ..Default::default()
    };
    let lr = |live: &mut Live<'_, FakeFabric>, mask: u64, q: LinkRecord| {
        let a = ask(
            live,
            SaRequest::new(
                method::GET_TABLE,
                sa_attr::LINK_RECORD,
                3,
                mask,
                &q.encode(),
            )
            .encode(),
            from,
        )
        .unwrap();
        let (h, recs) = decode_response(&a).unwrap();
        (
            h.status,
            recs.iter()
                .map(|r| LinkRecord::decode(r).unwrap())
                .collect::<Vec<_>>(),
        )
    };
    let (st, recs) = lr(&mut live, lr_mask::FROM_LID, q);
    assert_eq!(st, 0);
    // Every cabled port of the switch, in port order, to the LID at the far end.
    let want: Vec<LinkRecord> = f
        .node_ports(sw)
        .filter_map(|p| {
            let r = f.remote(p)?;
            let far = f.port(r);
            Some(LinkRecord {
                from_lid: sw_lid,
                from_port: f.port(p).num,
                to_port: far.num,
                to_lid: if f.is_switch(far.node) {
                    f.switch_lid(far.node)
                } else {
                    far.lid
                },
            })
        })
        .collect();
    assert_eq!(recs, want);
    // One direction of one cable: by both ends.
    let one = want[1];
    let (_, back) = lr(
        &mut live,
        lr_mask::FROM_LID | lr_mask::FROM_PORT | lr_mask::TO_LID,
        LinkRecord {
            from_lid: one.to_lid,
            from_port: one.to_port,
            to_lid: one.from_lid,
            ..Default::default()
        },
    );
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].to_port, one.from_port);
    assert_eq!(lr(&mut live, 1 << 4, q).0, sa_status::REQ_INVALID);
    // SwitchInfoRecord of that switch.
    let a = ask(
        &mut live,
        SaRequest::new(
            method::GET,
            sa_attr::SWITCH_INFO_RECORD,
            4,
            swir_mask::LID,
            &SwitchInfoRecord {
                lid: sw_lid,
                ..Default::default()
            }
            .encode(),
        )
        .encode(),
        from,
    )
    .unwrap();
    let (h, recs) = decode_response(&a).unwrap();
    assert_eq!(h.status, 0);
    let r = SwitchInfoRecord::decode(recs[0]).unwrap();
    assert_eq!(r.lid, sw_lid);
    assert_eq!(
        u16::from_be_bytes([r.info[6], r.info[7]]),
        f.max_lid(),
        "LinearFDBTop"
    );
    // A pulled cable between switches: its records are gone.
    let pl = (0..phys.links.len() as u32)
        .map(LinkId)
        .find(|&l| {
            let k = phys.link(l);
            phys.is_switch(phys.port(k.a).node)
                && phys.is_switch(phys.port(k.b).node)
                && phys.node(phys.port(k.a).node).guid == f.node(sw).guid
        })
        .unwrap();
    live.pipe.transport_mut().unlink(pl);
    for _ in 0..4 {
        live.step(Duration::from_millis(5)).unwrap();
    }
    let (_, after) = lr(&mut live, lr_mask::FROM_LID, q);
    assert_eq!(after.len(), want.len() - 1, "{after:?}");
}
