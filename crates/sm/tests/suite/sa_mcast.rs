//! Multicast joins and leaves through the SA (MCMemberRecord) on the in-process fake fabric:
//! a join creates a group whose tree the switches then hold and which delivers to every
//! member once (`routing::mcast::check_mcast`); leaves take members and MFT bits out and
//! delete the group with its last full member; the IPoIB broadcast group of `--mcast ipoib`
//! is joinable and keeps its MLID; 100,000 random join/leave cycles through the whole SM
//! (and 20,000 more through the SA's handler alone, under shortest trees) leave the MLID
//! pool, the group table, the trees and the switches' MFTs as they started; malformed
//! MCMemberRecord MADs get an error status, never a panic.

use crate::common;
use common::fabric;
use fabric::{Fabric, FaultMask, PortId};
use mad::records::{join_state as js, mcr_mask, McMemberRecord};
use mad::sa::{decode_response, method, sa_attr, sa_status, Gid, SaRequest, DEFAULT_GID_PREFIX};
use mad::{status, Address, MAD_SIZE};
use routing::engines::{by_name, Engine, RouteOptions};
use routing::fault::RftrConfig;
use routing::mcast::{check_mcast, ipoib_group, Group, Mfts};
use sm::fake::FakeFabric;
use sm::mcast::McastState;
use sm::mlid::MlidPool;
use sm::sa_mcast::{CREATE_MASK, JOIN_MASK};
use sm::{discover, Discovery, Event, Live, Pipe, PipeConfig, RepairMode, SmConfig};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

const IPOIB_MGID: u128 = 0xff12_401b_ffff_0000_0000_0000_ffff_ffff;

fn setup(phys: &Fabric) -> Discovery {
    let mut pipe = Pipe::new(
        FakeFabric::new(phys, phys.end_ports[0]),
        PipeConfig::default(),
    );
    discover(&mut pipe, 0).unwrap()
}

fn bring_up<'f>(
    d: &'f Discovery,
    e: &'f dyn Engine,
    phys: &Fabric,
    groups: Vec<Group>,
) -> Live<'f, FakeFabric> {
    let mut pipe = Pipe::new(
        FakeFabric::new(phys, phys.end_ports[0]),
        PipeConfig::default(),
    );
    let _ = discover(&mut pipe, 0).unwrap();
    let cfg = SmConfig {
        repair: RepairMode::Rftr,
        rftr: RftrConfig {
            vls: 2,
            ..RftrConfig::default()
        },
        opts: RouteOptions::default(),
        sweep_interval: None,
        priority: 0,
        mcast: groups,
    };
    Live::bring_up(d, pipe, e, cfg).unwrap().0
}

fn host(f: &Fabric, p: PortId) -> Address {
    Address {
        lid: f.port(p).lid,
        qpn: 1,
    }
}

fn gid(f: &Fabric, p: PortId) -> Gid {
    Gid {
        prefix: DEFAULT_GID_PREFIX,
        guid: f.port(p).guid,
    }
}

/// An SA request of MCMemberRecord `r` with `method`, transaction id `tid` and `mask`.
fn mcr(method: u8, tid: u64, mask: u64, r: &McMemberRecord) -> SaRequest {
    SaRequest::new(method, sa_attr::MCMEMBER_RECORD, tid, mask, &r.encode())
}

/// A join (`SubnAdmSet`) of `p` to `mgid` (0: a new group, with what creating one needs).
fn join(f: &Fabric, p: PortId, mgid: u128, state: u8) -> SaRequest {
    let mut mask = JOIN_MASK;
    if mgid == 0 {
        mask |= CREATE_MASK;
    }
    let r = McMemberRecord {
        mgid,
        port_gid: gid(f, p),
        qkey: 0x1234_5678,
        pkey: 0xffff,
        join_state: state,
        ..Default::default()
    };
    mcr(method::SET, 7, mask, &r)
}

/// A leave (`SubnAdmDelete`) of `p` from `mgid`, clearing `state`.
fn leave(f: &Fabric, p: PortId, mgid: u128, state: u8) -> SaRequest {
    let r = McMemberRecord {
        mgid,
        port_gid: gid(f, p),
        join_state: state,
        ..Default::default()
    };
    mcr(method::DELETE, 8, JOIN_MASK, &r)
}

/// Sends `m` to the SM from `from`: its answer and the events of that step.
fn ask(
    live: &mut Live<'_, FakeFabric>,
    m: [u8; MAD_SIZE],
    from: Address,
) -> ([u8; MAD_SIZE], Vec<Event>) {
    live.pipe.transport_mut().answers.clear();
    live.pipe.transport_mut().inject(m, from);
    let ev = live.step(Duration::from_millis(1)).unwrap();
    let a = &live.pipe.transport().answers;
    assert_eq!(a.len(), 1, "one answer per request");
    assert_eq!(a[0].1, from, "answered to the requester");
    (a[0].0, ev)
}

/// Status and the first record of an answer.
fn answer_of(a: &[u8; MAD_SIZE]) -> (u16, Option<McMemberRecord>) {
    let (h, recs) = decode_response(a).unwrap();
    (
        h.status,
        recs.first().map(|r| McMemberRecord::decode(r).unwrap()),
    )
}

/// The switches' MFT rows for every MLID of `model` (and of `gone`, which must be empty)
/// equal the model's masks.
fn assert_held(fake: &FakeFabric, d: &Fabric, model: &Mfts, gone: &[u16], what: &str) {
    let phys = fake.fabric();
    for (s, &n) in d.switches.iter().enumerate() {
        let pn = phys.node_by_guid(d.node(n).guid).unwrap();
        for g in &model.groups {
            let want: Vec<u8> = g.mask(s as u32).ports().collect();
            assert_eq!(
                fake.mft_ports(pn, g.mlid),
                want,
                "{what}: {}",
                d.node(n).name
            );
        }
        for &m in gone {
            assert!(fake.mft_ports(pn, m).is_empty(), "{what}: MLID {m:#x} left");
        }
    }
}

/// Every group delivers once to every receiver, from every sender, nowhere else.
fn assert_delivers(f: &Fabric, mask: Option<&FaultMask>, mc: &McastState, what: &str) {
    let c = check_mcast(f, mask, mc.mfts(), Some(mc.groups()), None);
    assert!(c.ok(), "{what}: {c:?}");
}

#[test]
fn a_join_creates_a_group_whose_tree_delivers_and_leaves_take_it_down() {
    let phys = fabric("torus 4x4 hcas=2");
    let d = setup(&phys);
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys, Vec::new());
    assert!(live.mcast().is_none(), "no multicast before a host asks");
    let ends = f.end_ports.clone();
    let (a, b, c, s) = (ends[3], ends[12], ends[25], ends[30]);

    // Host A creates a group: a fresh SA-assigned MGID, the lowest MLID.
    let sets0 = live.pipe.transport().stats.mft_sets;
    let (ans, ev) = ask(&mut live, join(f, a, 0, js::FULL).encode(), host(f, a));
    assert_eq!(ans[3], method::GET_RESP);
    let (st, rec) = answer_of(&ans);
    assert_eq!(st, 0);
    let rec = rec.unwrap();
    assert_eq!(rec.mgid >> 96, 0xff12_a01b, "SA-assigned, link-local");
    assert_eq!((rec.mgid >> 32) as u64, DEFAULT_GID_PREFIX);
    let (mgid, mlid) = (rec.mgid, rec.mlid);
    assert_eq!(mlid, 0xc000);
    assert_eq!(
        (rec.join_state, rec.qkey, rec.pkey, rec.port_gid),
        (js::FULL, 0x1234_5678, 0xffff, gid(f, a))
    );
    assert_eq!(
        (rec.mtu_selector, rec.rate_selector, rec.pkt_life_selector),
        (2, 2, 2)
    );
    let [Event::McastJoin(j)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert!(j.created && j.rerouted && !j.deleted);
    assert_eq!((j.mlid, j.members, j.join_state), (mlid, 1, js::FULL));
    assert_eq!(live.pipe.transport().stats.mft_sets - sets0, j.mft_blocks);
    assert!(j.mft_blocks > 0, "A's port is in its switch's mask");

    // B joins as full member, C as non-member, S as send-only: each is routed in and the
    // switches hold the tree, which delivers to A, B and C from every sender (S too).
    for (p, state) in [(b, js::FULL), (c, js::NON), (s, js::SEND_ONLY_NON)] {
        let sets0 = live.pipe.transport().stats.mft_sets;
        let (ans, ev) = ask(&mut live, join(f, p, mgid, state).encode(), host(f, p));
        let (st, rec) = answer_of(&ans);
        assert_eq!(st, 0);
        assert_eq!((rec.unwrap().mlid, rec.unwrap().join_state), (mlid, state));
        let [Event::McastJoin(j)] = &ev[..] else {
            panic!("{ev:?}")
        };
        assert!(!j.created);
        assert_eq!(live.pipe.transport().stats.mft_sets - sets0, j.mft_blocks);
        let mc = live.mcast().unwrap();
        assert_held(live.pipe.transport(), f, mc.mfts(), &[], "join");
        assert_delivers(f, None, mc, "join");
    }
    let mc = live.mcast().unwrap();
    let g = &mc.groups()[0];
    let members: Vec<(PortId, bool)> = g.members.iter().map(|m| (m.port, m.full)).collect();
    let mut want = vec![(a, true), (b, true), (c, true), (s, false)];
    want.sort();
    assert_eq!(members, want);
    let c1 = check_mcast(f, None, mc.mfts(), Some(mc.groups()), None);
    assert!(c1.floods >= 3 && c1.deliveries >= 6, "{c1:?}");
    // The send-only member's port receives nothing.
    let ss = f.port(f.remote(s).unwrap());
    let ssw = f.switch_of(ss.node).unwrap().0;
    assert!(!mc.mfts().groups[0].mask(ssw).has(ss.num));

    // A join that repeats bits changes nothing and pushes nothing.
    let (ans, ev) = ask(&mut live, join(f, b, mgid, js::FULL).encode(), host(f, b));
    assert_eq!(answer_of(&ans).0, 0);
    let [Event::McastJoin(j)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!((j.rerouted, j.mft_blocks), (false, 0));

    // Get by MGID: the group (PortGID and JoinState zero, no SM_Key); by PortGID: C's
    // record with its JoinState.
    let q = McMemberRecord {
        mgid,
        ..Default::default()
    };
    let (ans, _) = ask(
        &mut live,
        mcr(method::GET, 9, mcr_mask::MGID, &q).encode(),
        host(f, c),
    );
    let (st, r) = answer_of(&ans);
    assert_eq!(st, 0);
    let r = r.unwrap();
    assert_eq!(
        (r.mlid, r.join_state, r.port_gid),
        (mlid, 0, Gid::default())
    );
    let q = McMemberRecord {
        port_gid: gid(f, c),
        ..Default::default()
    };
    let (ans, _) = ask(
        &mut live,
        mcr(method::GET_TABLE, 9, mcr_mask::PORT_GID, &q).encode(),
        host(f, c),
    );
    let (h, recs) = decode_response(&ans).unwrap();
    assert_eq!((h.status, recs.len()), (0, 1));
    let r = McMemberRecord::decode(recs[0]).unwrap();
    assert_eq!(
        (r.mgid, r.join_state, r.port_gid),
        (mgid, js::NON, gid(f, c))
    );

    // B leaves: a DeleteResp with what B holds now (nothing), B's bit out of the MFTs.
    let (ans, ev) = ask(&mut live, leave(f, b, mgid, js::FULL).encode(), host(f, b));
    assert_eq!(ans[3], method::DELETE_RESP);
    let (st, rec) = answer_of(&ans);
    assert_eq!(
        (st, rec.unwrap().join_state, rec.unwrap().mlid),
        (0, 0, mlid)
    );
    let [Event::McastLeave(l)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert!(!l.deleted && l.rerouted);
    let bp = f.port(f.remote(b).unwrap());
    let pb = phys.node_by_guid(f.node(bp.node).guid).unwrap();
    assert!(!live.pipe.transport().mft_ports(pb, mlid).contains(&bp.num));
    let mc = live.mcast().unwrap();
    assert_held(live.pipe.transport(), f, mc.mfts(), &[], "B left");
    assert_delivers(f, None, mc, "B left");
    assert!(mc.groups()[0].members.iter().all(|m| m.port != b));
    // Leaving again, or with bits not held: refused.
    for (p, bits) in [(b, js::FULL), (c, js::FULL), (c, js::NON | js::FULL)] {
        let (ans, _) = ask(&mut live, leave(f, p, mgid, bits).encode(), host(f, p));
        assert_eq!(answer_of(&ans).0, sa_status::REQ_INVALID, "{bits:#x}");
    }
    // Another port may not take A out (A joined itself).
    let (ans, _) = ask(&mut live, leave(f, a, mgid, js::FULL).encode(), host(f, c));
    assert_eq!(answer_of(&ans).0, sa_status::REQ_INVALID);

    // A, the last full member, leaves: the group goes with its other members, its MFT
    // entries are cleared on every switch, its MLID is free.
    let (ans, ev) = ask(&mut live, leave(f, a, mgid, js::FULL).encode(), host(f, a));
    assert_eq!(answer_of(&ans).0, 0);
    let [Event::McastLeave(l)] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert!(l.deleted && l.mft_blocks > 0);
    let mc = live.mcast().unwrap();
    assert!(mc.groups().is_empty() && mc.mfts().groups.is_empty());
    assert_eq!(mc.table().pool().in_use(), 0);
    assert_held(live.pipe.transport(), f, mc.mfts(), &[mlid], "deleted");
    let (ans, _) = ask(&mut live, join(f, c, mgid, js::NON).encode(), host(f, c));
    assert_eq!(answer_of(&ans).0, sa_status::REQ_INVALID, "no such group");
    // A new group takes the freed MLID again; one asking for an MLID gets it when free.
    let (ans, _) = ask(&mut live, join(f, c, 0, js::FULL).encode(), host(f, c));
    assert_eq!(answer_of(&ans).1.unwrap().mlid, 0xc000);
    let mut r = join(f, b, 0, js::FULL);
    r.comp_mask |= mcr_mask::MLID;
    r.data[36..38].copy_from_slice(&0xc123u16.to_be_bytes());
    let (ans, _) = ask(&mut live, r.encode(), host(f, b));
    assert_eq!(answer_of(&ans).1.unwrap().mlid, 0xc123);
    let (ans, _) = ask(&mut live, r.encode(), host(f, b));
    assert_eq!(
        answer_of(&ans).1.unwrap().mlid,
        0xc001,
        "taken: the lowest free"
    );
    assert_eq!(live.mcast().unwrap().table().pool().in_use(), 3);
    let st = live.sa_stats();
    assert_eq!(st.dropped, 0);
}

#[test]
fn the_ipoib_group_is_joinable_and_keeps_its_mlid() {
    let phys = fabric("torus 3x3 hcas=2");
    let d = setup(&phys);
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys, vec![ipoib_group(f)]);
    let start = live.mfts();
    assert_eq!(start.groups[0].mlid, 0xc000);
    let x = f.end_ports[7];
    // A Get by the broadcast MGID: MLID 0xC000, the IPoIB Q_Key.
    let q = McMemberRecord {
        mgid: IPOIB_MGID,
        ..Default::default()
    };
    let (ans, _) = ask(
        &mut live,
        mcr(method::GET, 3, mcr_mask::MGID, &q).encode(),
        host(f, x),
    );
    let r = answer_of(&ans).1.unwrap();
    assert_eq!(
        (r.mlid, r.qkey, r.pkey, r.scope),
        (0xc000, 0x0b1b, 0xffff, 2)
    );
    // X leaves: its port is out of the tree, the group stays (permanent).
    let (ans, ev) = ask(
        &mut live,
        leave(f, x, IPOIB_MGID, js::FULL).encode(),
        host(f, x),
    );
    assert_eq!(answer_of(&ans).0, 0);
    assert!(matches!(&ev[..], [Event::McastLeave(l)] if !l.deleted && l.mft_blocks > 0));
    let mc = live.mcast().unwrap();
    assert_eq!(mc.groups()[0].members.len(), f.end_ports.len() - 1);
    assert_held(live.pipe.transport(), f, mc.mfts(), &[], "X left");
    assert_delivers(f, None, mc, "X left");
    // X joins again with the broadcast MGID and the kernel's mask: MLID 0xC000, and the
    // tree is the one of subnet up again.
    let mut r = McMemberRecord::decode(&join(f, x, IPOIB_MGID, js::FULL).data).unwrap();
    r.qkey = 0;
    let req = mcr(method::SET, 4, JOIN_MASK, &r);
    let (ans, ev) = ask(&mut live, req.encode(), host(f, x));
    let (st, r) = answer_of(&ans);
    assert_eq!((st, r.unwrap().mlid, r.unwrap().qkey), (0, 0xc000, 0x0b1b));
    assert!(matches!(&ev[..], [Event::McastJoin(j)] if !j.created));
    assert_eq!(live.mfts(), start);
    assert_held(live.pipe.transport(), f, &start, &[], "X back");
    // A Q_Key other than the group's: refused. The last member leaving keeps the group and
    // its MLID; a new group gets 0xC001.
    let wrong = join(f, x, IPOIB_MGID, js::NON);
    let mut wrong_q = wrong.clone();
    wrong_q.comp_mask = JOIN_MASK | mcr_mask::QKEY;
    let (ans, _) = ask(&mut live, wrong_q.encode(), host(f, x));
    assert_eq!(answer_of(&ans).0, sa_status::REQ_INVALID);
    for &p in &f.end_ports {
        let (ans, _) = ask(
            &mut live,
            leave(f, p, IPOIB_MGID, js::FULL).encode(),
            host(f, p),
        );
        assert_eq!(answer_of(&ans).0, 0);
    }
    let mc = live.mcast().unwrap();
    assert_eq!(mc.groups()[0].mlid, 0xc000);
    assert!(mc.groups()[0].members.is_empty() && mc.mfts().is_empty());
    assert_held(live.pipe.transport(), f, mc.mfts(), &[0xc000], "empty");
    let (ans, _) = ask(&mut live, join(f, x, 0, js::FULL).encode(), host(f, x));
    assert_eq!(answer_of(&ans).1.unwrap().mlid, 0xc001);
}

/// A group joined through the SA is mended like the others when a cable of its tree
/// between switches is pulled, and a join after the fault is routed around it.
#[test]
fn an_sa_group_is_mended_after_a_fault_and_joins_route_around_it() {
    use fabric::LinkId;
    let phys = fabric("torus 4x4 hcas=2");
    let d = setup(&phys);
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys, Vec::new());
    let ends = f.end_ports.clone();
    let (ans, _) = ask(
        &mut live,
        join(f, ends[0], 0, js::FULL).encode(),
        host(f, ends[0]),
    );
    let mgid = answer_of(&ans).1.unwrap().mgid;
    for i in [9, 17, 22, 31] {
        let (ans, _) = ask(
            &mut live,
            join(f, ends[i], mgid, js::FULL).encode(),
            host(f, ends[i]),
        );
        assert_eq!(answer_of(&ans).0, 0);
    }
    let model = live.mfts();
    let g = &model.groups[0];
    let pl = (0..phys.links.len() as u32)
        .map(LinkId)
        .find(|&l| {
            let k = phys.link(l);
            let (a, b) = (phys.port(k.a), phys.port(k.b));
            let on_tree = |p: &fabric::Port| {
                let n = f.node_by_guid(phys.node(p.node).guid).unwrap();
                g.mask(f.switch_of(n).unwrap().0).has(p.num)
            };
            phys.is_switch(a.node) && phys.is_switch(b.node) && on_tree(a) && on_tree(b)
        })
        .expect("a tree cable between switches");
    live.pipe.transport_mut().unlink(pl);
    let mut mended = None;
    for _ in 0..6 {
        for ev in live.step(Duration::from_millis(5)).unwrap() {
            if let Event::Repaired { mft_blocks, .. } = ev {
                mended = Some(mft_blocks);
            }
        }
    }
    assert!(mended.expect("a repair") > 0, "the cut tree was mended");
    assert_ne!(live.mfts(), model);
    let mc = live.mcast().unwrap();
    assert_held(live.pipe.transport(), f, mc.mfts(), &[], "mended");
    assert_delivers(f, Some(live.mask()), mc, "mended");
    // Joins and leaves after the fault: trees over live cables only.
    for i in [5, 12, 26] {
        let (ans, _) = ask(
            &mut live,
            join(f, ends[i], mgid, js::FULL).encode(),
            host(f, ends[i]),
        );
        assert_eq!(answer_of(&ans).0, 0);
        let mc = live.mcast().unwrap();
        assert_held(
            live.pipe.transport(),
            f,
            mc.mfts(),
            &[],
            "join after the fault",
        );
        assert_delivers(f, Some(live.mask()), mc, "join after the fault");
    }
    let (ans, _) = ask(
        &mut live,
        leave(f, ends[9], mgid, js::FULL).encode(),
        host(f, ends[9]),
    );
    assert_eq!(answer_of(&ans).0, 0);
    let mc = live.mcast().unwrap();
    assert_held(
        live.pipe.transport(),
        f,
        mc.mfts(),
        &[],
        "leave after the fault",
    );
    assert_delivers(f, Some(live.mask()), mc, "leave after the fault");
}

#[test]
fn malformed_mcmember_mads_get_an_error_never_a_panic() {
    let phys = fabric("torus 3x3 hcas=1");
    let d = setup(&phys);
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let mut live = bring_up(&d, e.as_ref(), &phys, vec![ipoib_group(f)]);
    let p = f.end_ports[4];
    let from = host(f, p);
    let st =
        |live: &mut Live<'_, FakeFabric>, r: SaRequest| answer_of(&ask(live, r.encode(), from).0).0;
    let ok = join(f, p, 0, js::FULL);
    let with = |mask: u64, edit: &dyn Fn(&mut McMemberRecord)| {
        let mut r = McMemberRecord::decode(&ok.data).unwrap();
        edit(&mut r);
        mcr(method::SET, 5, mask, &r)
    };
    let all = JOIN_MASK | CREATE_MASK;
    let cases: Vec<(SaRequest, u16, &str)> = vec![
        (
            with(all & !mcr_mask::PORT_GID, &|_| ()),
            sa_status::INSUFFICIENT_COMPONENTS,
            "no PortGID",
        ),
        (
            with(all & !mcr_mask::QKEY, &|_| ()),
            sa_status::INSUFFICIENT_COMPONENTS,
            "create without Q_Key",
        ),
        (
            with(all, &|r| r.port_gid.prefix = 0x1234),
            sa_status::INVALID_GID,
            "another subnet",
        ),
        (
            with(all, &|r| r.port_gid.guid = 0xdead),
            sa_status::REQ_INVALID,
            "no such port",
        ),
        (
            with(all, &|r| {
                r.port_gid.guid = f.shown_port_guid(f.port_id(f.switches[0], 0))
            }),
            sa_status::REQ_INVALID,
            "a switch port",
        ),
        (
            with(all, &|r| r.join_state = 0),
            sa_status::REQ_INVALID,
            "JoinState 0",
        ),
        (
            with(all, &|r| r.join_state = js::NON),
            sa_status::REQ_INVALID,
            "create, not full",
        ),
        (
            with(all, &|r| r.pkey = 0x8001),
            sa_status::REQ_INVALID,
            "another partition",
        ),
        (
            with(all, &|r| r.pkey = 0),
            sa_status::REQ_INVALID,
            "invalid P_Key",
        ),
        (
            with(all, &|r| r.mgid = 0x1234),
            sa_status::REQ_INVALID,
            "not a multicast GID",
        ),
        (
            with(all, &|r| r.mgid = 0xff12_a01b_0000_0000_0000_0000_0000_0001),
            sa_status::REQ_INVALID,
            "the SA's signature, link-local",
        ),
        (
            with(all | mcr_mask::MTU | mcr_mask::MTU_SELECTOR, &|r| {
                r.mtu = 9;
                r.mtu_selector = 2
            }),
            sa_status::REQ_INVALID,
            "MTU code 9",
        ),
        (
            with(all | mcr_mask::RATE | mcr_mask::RATE_SELECTOR, &|r| {
                r.rate = 1;
                r.rate_selector = 2
            }),
            sa_status::REQ_INVALID,
            "rate code 1",
        ),
        (
            with(all | mcr_mask::MTU | mcr_mask::MTU_SELECTOR, &|r| {
                r.mtu = 5;
                r.mtu_selector = 0
            }),
            sa_status::REQ_INVALID,
            "MTU above 4096",
        ),
        (
            with(all, &|r| r.mgid = 0xff12_601b_ffff_0000_0000_0000_0000_0001),
            0,
            "an IPv6 IPoIB group",
        ),
    ];
    for (r, want, what) in cases {
        assert_eq!(st(&mut live, r), want, "{what}");
    }
    // Leaves of groups that are not, and methods MCMemberRecord does not have.
    assert_eq!(
        st(
            &mut live,
            leave(f, p, 0xff12_401b_ffff_0000_0000_0000_0000_0009, js::FULL)
        ),
        sa_status::REQ_INVALID
    );
    let mut multi = ok.clone();
    multi.hdr.method = method::GET_MULTI;
    assert_eq!(st(&mut live, multi), status::ATTR_UNSUPPORTED);
    let mut get = ok.clone();
    get.hdr.method = method::GET;
    get.comp_mask = mcr_mask::MGID;
    assert_eq!(
        st(&mut live, get),
        sa_status::NO_RECORDS,
        "MGID 0 names no group"
    );
    let mut table = ok.clone();
    table.hdr.method = method::GET_TABLE;
    table.comp_mask = 0;
    assert_eq!(st(&mut live, table), 0, "two groups fit");

    // Noise: MCMemberRecord MADs with random methods, masks and records (some naming real
    // ports), random bytes around them. Always one answer with a status, or none for what
    // gets none; the trees stay what the switches hold and deliver.
    let mut x = 0x0123_4567_89ab_cdefu64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let methods = [
        method::GET,
        method::SET,
        method::DELETE,
        method::GET_TABLE,
        0x14,
        0x81,
        0x42,
    ];
    let mut answered = 0;
    for i in 0..3000 {
        let mut m = [0u8; MAD_SIZE];
        for b in m.iter_mut() {
            *b = next() as u8;
        }
        m[0] = 1;
        m[1] = mad::sa::CLASS_SUBN_ADM;
        m[2] = if i % 50 == 0 { 1 } else { 2 };
        m[3] = methods[(next() % methods.len() as u64) as usize];
        m[16..18].copy_from_slice(&sa_attr::MCMEMBER_RECORD.to_be_bytes());
        if i % 3 == 0 {
            m[24..36].fill(0); // no RMPP
        }
        if i % 2 == 0 {
            // A real port, the subnet prefix, a known or no MGID.
            let q = f.end_ports[(next() % f.end_ports.len() as u64) as usize];
            m[56 + 16..56 + 32].copy_from_slice(&{
                let mut g = [0u8; 16];
                g[..8].copy_from_slice(&DEFAULT_GID_PREFIX.to_be_bytes());
                g[8..].copy_from_slice(&f.port(q).guid.to_be_bytes());
                g
            });
            let mgid = [0u128, IPOIB_MGID][(next() % 2) as usize];
            m[56..72].copy_from_slice(&mgid.to_be_bytes());
            m[56 + 38] = 0x84; // MTU exactly 2048
            m[56 + 42] = 0x83; // rate exactly 10 Gb/s
        }
        live.pipe.transport_mut().answers.clear();
        live.pipe.transport_mut().inject(m, from);
        live.step(Duration::from_millis(1)).unwrap();
        let a = &live.pipe.transport().answers;
        assert!(a.len() <= 1);
        if let Some((r, _)) = a.first() {
            assert_eq!(r[1], mad::sa::CLASS_SUBN_ADM);
            assert!(r[3] & method::RESPONSE != 0);
            answered += 1;
        }
    }
    assert!(answered > 1000, "{answered} answered");
    let mc = live.mcast().unwrap();
    assert_held(live.pipe.transport(), f, mc.mfts(), &[], "after the noise");
    assert_delivers(f, None, mc, "after the noise");
    // The pool holds exactly the groups' MLIDs.
    let pool = mc.table().pool();
    assert_eq!(pool.in_use(), mc.table().groups().count());
    assert!(mc.table().groups().all(|g| pool.is_used(g.mlid)));
}

/// The model of the workload: what the table must hold and what each request must get.
#[derive(Default)]
struct Model {
    /// MGID → (MLID, permanent, members by end-port index with their JoinState).
    groups: HashMap<u128, (u16, bool, BTreeMap<usize, u8>)>,
    /// Changes to undo: (end-port index, MGID, bits, whether the bits were left rather
    /// than joined).
    pending: Vec<(usize, u128, u8, bool)>,
    cycles: u64,
    ops: u64,
}

/// Random joins and leaves, each later undone, `cycles` times, against `send` (a request
/// from a port → status and record), checked against the model; `check` runs now and
/// then. At the end nothing is pending.
fn workload(
    f: &Fabric,
    cycles: u64,
    seed: u64,
    mut send: impl FnMut(&SaRequest, PortId) -> (u16, Option<McMemberRecord>),
    mut check: impl FnMut(u64),
) -> Model {
    let ends = &f.end_ports;
    let mut m = Model::default();
    let members: BTreeMap<usize, u8> = (0..ends.len()).map(|i| (i, js::FULL)).collect();
    m.groups.insert(IPOIB_MGID, (0xc000, true, members));
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let states = [js::FULL, js::NON, js::SEND_ONLY_NON, js::FULL | js::NON];
    while m.cycles < cycles || !m.pending.is_empty() {
        let r = next();
        let start = m.cycles + (m.pending.len() as u64) < cycles
            && (m.pending.is_empty() || (m.pending.len() < 12 && r % 100 < 55));
        let pi = (next() % ends.len() as u64) as usize;
        let p = ends[pi];
        m.ops += 1;
        if start {
            match (r >> 8) % 10 {
                // A new group.
                0..=2 => {
                    let (st, rec) = send(&join(f, p, 0, js::FULL), p);
                    assert_eq!(st, 0, "create");
                    let rec = rec.unwrap();
                    let used: Vec<u16> = m.groups.values().map(|g| g.0).collect();
                    let lowest = (0xc000u16..).find(|l| !used.contains(l)).unwrap();
                    assert_eq!(rec.mlid, lowest, "the lowest free MLID");
                    assert!(!m.groups.contains_key(&rec.mgid));
                    m.groups.insert(
                        rec.mgid,
                        (rec.mlid, false, BTreeMap::from([(pi, js::FULL)])),
                    );
                    m.pending.push((pi, rec.mgid, js::FULL, false));
                }
                // Into an SA group the port is not in.
                3..=6 => {
                    let sa: Vec<u128> = m
                        .groups
                        .iter()
                        .filter(|g| !g.1 .1 && !g.1 .2.contains_key(&pi))
                        .map(|g| *g.0)
                        .collect();
                    if sa.is_empty() {
                        continue;
                    }
                    let mut sa = sa;
                    sa.sort_unstable();
                    let mgid = sa[(next() % sa.len() as u64) as usize];
                    let bits = states[(next() % 4) as usize];
                    let (st, rec) = send(&join(f, p, mgid, bits), p);
                    assert_eq!(st, 0, "join");
                    assert_eq!(rec.unwrap().join_state, bits);
                    m.groups.get_mut(&mgid).unwrap().2.insert(pi, bits);
                    m.pending.push((pi, mgid, bits, false));
                }
                // The broadcast group: more bits, or out and back later.
                _ => {
                    if m.groups[&IPOIB_MGID].2.get(&pi) != Some(&js::FULL)
                        || m.pending.iter().any(|q| q.0 == pi && q.1 == IPOIB_MGID)
                    {
                        continue;
                    }
                    let out = next() % 2 == 0;
                    let (req, bits) = if out {
                        (leave(f, p, IPOIB_MGID, js::FULL), js::FULL)
                    } else {
                        let bits = [js::NON, js::SEND_ONLY_NON][(next() % 2) as usize];
                        (join(f, p, IPOIB_MGID, bits), bits)
                    };
                    let (st, rec) = send(&req, p);
                    assert_eq!((st, rec.unwrap().mlid), (0, 0xc000), "broadcast");
                    let g = &mut m.groups.get_mut(&IPOIB_MGID).unwrap().2;
                    if out {
                        g.remove(&pi);
                    } else {
                        g.insert(pi, js::FULL | bits);
                    }
                    m.pending.push((pi, IPOIB_MGID, bits, out));
                }
            }
        } else {
            let k = (next() % m.pending.len() as u64) as usize;
            let (qi, mgid, bits, was_left) = m.pending.swap_remove(k);
            let q = ends[qi];
            m.cycles += 1;
            if was_left {
                let (st, _) = send(&join(f, q, mgid, bits), q);
                assert_eq!(st, 0, "back into the broadcast group");
                m.groups.get_mut(&mgid).unwrap().2.insert(qi, js::FULL);
                continue;
            }
            let alive = m.groups.get(&mgid).is_some_and(|g| g.2.contains_key(&qi));
            let (st, rec) = send(&leave(f, q, mgid, bits), q);
            if !alive {
                // Its group went with its last full member.
                assert_eq!(st, sa_status::REQ_INVALID, "leave of a deleted group");
                continue;
            }
            assert_eq!(st, 0, "leave");
            let g = m.groups.get_mut(&mgid).unwrap();
            let left = g.2[&qi] & !bits;
            assert_eq!(rec.unwrap().join_state, left);
            if left == 0 {
                g.2.remove(&qi);
            } else {
                g.2.insert(qi, left);
            }
            if !g.1 && !g.2.values().any(|s| s & js::FULL != 0) {
                m.groups.remove(&mgid);
            }
        }
        check(m.ops);
    }
    m
}

/// 100,000 cycles through the whole SM: MADs into the fake fabric, the SA's handler, trees
/// routed again, MFT blocks out to its switches and confirmed, answers back; checked
/// against the model. At the end the MLID pool, the group table and the trees are those of
/// subnet up, and so is what the switches hold.
#[test]
fn a_hundred_thousand_join_leave_cycles_leave_no_trace() {
    let phys = fabric("torus 3x3 hcas=2");
    let d = setup(&phys);
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let live = bring_up(&d, e.as_ref(), &phys, vec![ipoib_group(f)]);
    let start = live.mfts();
    let mc = live.mcast().unwrap();
    let (groups0, pool0) = (
        mc.table().groups().cloned().collect::<Vec<_>>(),
        mc.table().pool().clone(),
    );
    let live = std::cell::RefCell::new(live);
    let (mut events, mut blocks) = (0u64, 0u64);
    let t = Instant::now();
    let m = workload(
        f,
        100_000,
        0x5851_f42d_4c95_7f2d,
        |req, p| {
            let (a, ev) = ask(&mut live.borrow_mut(), req.encode(), host(f, p));
            for e in &ev {
                if let Event::McastJoin(c) | Event::McastLeave(c) = e {
                    events += 1;
                    blocks += c.mft_blocks;
                }
            }
            answer_of(&a)
        },
        |ops| {
            if ops % 4096 == 0 {
                let live = live.borrow();
                let mc = live.mcast().unwrap();
                assert_held(live.pipe.transport(), f, mc.mfts(), &[], "midway");
                assert_delivers(f, None, mc, "midway");
            }
        },
    );
    let live = live.into_inner();
    eprintln!(
        "{} cycles, {} requests, {events} events, {blocks} MFT blocks in {:.2} s",
        m.cycles,
        m.ops,
        t.elapsed().as_secs_f64()
    );
    assert!(m.cycles >= 100_000 && blocks > 0);
    let mc = live.mcast().unwrap();
    assert_eq!(mc.table().groups().cloned().collect::<Vec<_>>(), groups0);
    assert_eq!(mc.table().pool(), &pool0);
    assert_eq!(mc.groups(), &[ipoib_group(f)][..]);
    assert_eq!(live.mfts(), start);
    // Every MLID an SA group had is empty again on every switch.
    let gone: Vec<u16> = (0xc001..0xc040).collect();
    assert_held(live.pipe.transport(), f, &start, &gone, "at the end");
    assert_eq!(live.mcast().unwrap().table().pool().in_use(), 1);
    assert_eq!(live.sa_stats().dropped, 0);
}

/// 20,000 cycles through the SA's handler alone (`McastState::serve`, trees routed on every
/// change) under an engine without an up*/down* rule (shortest trees), checked against the
/// model; at the end the table, the pool and the trees are those of the start.
#[test]
fn join_leave_cycles_through_the_handler_leave_no_trace() {
    let phys = fabric("torus 3x3 hcas=2");
    let d = setup(&phys);
    let f = &d.fabric;
    let e = by_name("minhop").unwrap();
    let opts = e.pin_choices(f, &RouteOptions::default()).unwrap();
    let mc = McastState::start(
        f,
        e.as_ref(),
        &opts,
        vec![ipoib_group(f)],
        MlidPool::new(0xfffe),
        &d.port_info,
    )
    .unwrap();
    let (groups0, pool0, mfts0) = (
        mc.table().groups().cloned().collect::<Vec<_>>(),
        mc.table().pool().clone(),
        mc.mfts().clone(),
    );
    let mask = FaultMask::none(f);
    let t = Instant::now();
    let mc = std::cell::RefCell::new(mc);
    let mut rerouted = 0u64;
    let m = workload(
        f,
        20_000,
        0x9e37_79b9_7f4a_7c15,
        |req, p| {
            let a = mc.borrow_mut().serve(f, &mask, &d.port_info, req, Some(p));
            rerouted += a.change.as_ref().is_some_and(|c| c.rerouted) as u64;
            (a.status, a.records.first().copied())
        },
        |ops| {
            if ops % 4096 == 0 {
                let mc = mc.borrow();
                assert_delivers(f, None, &mc, "midway");
                let pool = mc.table().pool();
                assert_eq!(pool.in_use(), mc.table().groups().count());
            }
        },
    );
    let mc = mc.into_inner();
    eprintln!(
        "{} cycles, {} requests, {rerouted} trees routed in {:.2} s",
        m.cycles,
        m.ops,
        t.elapsed().as_secs_f64()
    );
    assert!(m.cycles >= 20_000);
    assert_eq!(mc.table().groups().cloned().collect::<Vec<_>>(), groups0);
    assert_eq!(mc.table().pool(), &pool0);
    assert_eq!(mc.mfts(), &mfts0);
    assert_eq!(mc.groups(), &[ipoib_group(f)][..]);
}
