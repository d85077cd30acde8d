//! Two SMs on the fake fabric: the one that finds a master stands by, answers SMInfo as
//! STANDBY, polls the master, and when the master goes silent takes the subnet over from
//! the tables the switches hold — without writing one LFT block or SL2VL row when they are
//! clean, and rewriting only what differs when they are not.

use crate::common;
use common::fabric;
use fabric::{Fabric, PortId};
use mad::attr::{sm_state, SmInfo};
use mad::{attr_id, Address, Method, Route, Smp};
use routing::cdg;
use routing::engines::{by_name, Engine, RouteOptions};
use routing::fault::RftrConfig;
use sm::fake::{FakeFabric, FakeSm};
use sm::{
    discover, discover_with, find_sms, master_to_follow, Event, Lids, Live, MasterLost, Pipe,
    PipeConfig, RepairMode, SmConfig, Standby,
};
use std::time::Duration;

fn config(repair: RepairMode, priority: u8) -> SmConfig {
    SmConfig {
        repair,
        rftr: RftrConfig {
            vls: 2,
            ..RftrConfig::default()
        },
        opts: RouteOptions::default(),
        sweep_interval: None,
        priority,
        mcast: Vec::new(),
    }
}

/// A master fabroute at `a` brings the fabric up; returns the fake with it gone and the
/// other SM (`FakeSm` at `a`, alive) in its place, and the master's LIDs by port GUID.
fn after_master(
    phys: &Fabric,
    a: PortId,
    engine: &dyn Engine,
    repair: RepairMode,
    lmc: u8,
    mcast: bool,
) -> (FakeFabric, Vec<(u64, u16)>) {
    let mut pipe = Pipe::new(FakeFabric::new(phys, a), PipeConfig::default());
    let d = discover(&mut pipe, lmc).unwrap();
    let mut cfg = config(repair, 5);
    if mcast {
        cfg.mcast = vec![routing::mcast::ipoib_group(&d.fabric)];
    }
    let (live, up) = Live::bring_up(&d, pipe, engine, cfg).unwrap();
    assert!(
        matches!(
            up,
            Event::SubnetUp {
                deadlock_free: true,
                unreachable_pairs: 0,
                ..
            }
        ),
        "{up:?}"
    );
    let lids = d
        .fabric
        .ports
        .iter()
        .filter(|p| p.lid != 0)
        .map(|p| (p.guid, p.lid))
        .collect();
    let mut fake = live.pipe.into_transport();
    fake.add_sm(FakeSm {
        port: a,
        info: SmInfo {
            guid: phys.port(a).guid,
            priority: 5,
            state: sm_state::MASTER,
            ..SmInfo::default()
        },
        alive: true,
    });
    (fake, lids)
}

/// Stands by at `b` until the master at `a` is killed; returns the pipe, the master as
/// found and how it was lost.
fn stand_by(
    mut fake: FakeFabric,
    b: PortId,
    lmc: u8,
) -> (Pipe<FakeFabric>, sm::OtherSm, MasterLost, Duration) {
    fake.attach_sm(b);
    let phys = fake.fabric().clone();
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    let d = discover(&mut pipe, lmc).unwrap();
    let others = find_sms(&mut pipe, &d).unwrap();
    assert_eq!(others.len(), 1, "the master is found: {others:?}");
    let me = (1, phys.port(b).guid);
    let master = master_to_follow(me, &others)
        .expect("a master to follow")
        .clone();
    assert_eq!(master.info.state, sm_state::MASTER);
    let poll = Duration::from_secs(1);
    let info = SmInfo {
        guid: me.1,
        priority: me.0,
        ..SmInfo::default()
    };
    let mut sb = Standby::new(pipe, info, master.clone(), poll);
    // A host (or the master) asks this SM for its SMInfo: it answers as STANDBY.
    let ask = Smp::request(Method::Get, Route::Lid(0), 77, attr_id::SM_INFO, 0).encode();
    sb.pipe_mut()
        .transport_mut()
        .inject(ask, Address { lid: 1, qpn: 0 });
    for _ in 0..20 {
        assert_eq!(sb.step(Duration::from_millis(200)).unwrap(), None);
    }
    assert!(sb.polls_answered >= 3, "polled {}", sb.polls_answered);
    assert_eq!(sb.sm_info_answered, 1);
    let answers = &sb.pipe_mut().transport().answers;
    let a = Smp::decode(&answers.last().expect("an SMInfo answer").0).unwrap();
    assert_eq!(SmInfo::decode(&a.data).state, sm_state::STANDBY);
    // The master dies: lost within one poll and the pipeline's retries.
    let t_kill = sb.pipe_mut().now();
    sb.pipe_mut()
        .transport_mut()
        .other_sm
        .as_mut()
        .unwrap()
        .alive = false;
    let lost = loop {
        if let Some(l) = sb.step(Duration::from_millis(200)).unwrap() {
            break l;
        }
        assert!(sb.pipe_mut().now() - t_kill < Duration::from_secs(5));
    };
    let pc = PipeConfig::default();
    let bound = poll + pc.timeout * (pc.retries + 1) + Duration::from_millis(50);
    assert!(
        sb.pipe_mut().now() - t_kill <= bound,
        "lost after {:?}",
        sb.pipe_mut().now() - t_kill
    );
    assert_eq!(lost, MasterLost::Silent);
    let silent = sb.silent_for();
    assert!(silent >= sb.pipe_mut().now() - t_kill && silent <= bound + poll);
    (sb.into_pipe(), master, lost, silent)
}

#[test]
fn a_standby_takes_a_clean_fabric_over_without_writing_a_table_entry() {
    for (spec, engine, repair, lmc) in [
        ("torus 4x4 hcas=2", "updn", RepairMode::Rftr, 0),
        ("torus 4x4 hcas=2", "updn", RepairMode::Rftr, 1),
        ("ktree 4 3", "ftree", RepairMode::Rftr, 0),
        ("ktree 4 3", "updn", RepairMode::Full, 2),
        ("mesh 3x3 hcas=1", "dor", RepairMode::Full, 0),
    ] {
        let phys = fabric(spec);
        let e = by_name(engine).unwrap();
        let (a, b) = (phys.end_ports[0], *phys.end_ports.last().unwrap());
        let (fake, lids) = after_master(&phys, a, e.as_ref(), repair, lmc, false);
        let (lft0, sl2vl0) = (fake.stats.lft_sets, fake.stats.sl2vl_sets);
        let (mut pipe, master, lost, silent) = stand_by(fake, b, lmc);
        let d = discover_with(&mut pipe, Lids::Keep).unwrap();
        // The master's LIDs, kept.
        for (guid, lid) in &lids {
            let p = d.fabric.ports.iter().find(|p| p.guid == *guid).unwrap();
            assert_eq!(p.lid, *lid, "{spec}: LID of port {guid:#x}");
        }
        let (mut live, ev) = Live::take_over(
            &d,
            pipe,
            e.as_ref(),
            config(repair, 1),
            &master,
            &lost,
            silent,
        )
        .unwrap();
        let Event::TakeOver {
            adopted,
            lft_blocks,
            sl2vl_entries,
            held_deadlock_free,
            held_unreachable_pairs,
            deadlock_free,
            unreachable_pairs,
            failed_smps,
            ref refused,
            ..
        } = ev
        else {
            panic!("{ev:?}")
        };
        let what = format!("{spec} {engine} {repair:?} LMC {lmc}");
        assert!(adopted, "{what}: {refused:?}");
        assert_eq!(
            (lft_blocks, sl2vl_entries, failed_smps),
            (0, 0, 0),
            "{what}"
        );
        assert!(held_deadlock_free && deadlock_free, "{what}");
        assert_eq!(
            (held_unreachable_pairs, unreachable_pairs),
            (0, 0),
            "{what}"
        );
        let fake = live.pipe.transport();
        assert_eq!((fake.stats.lft_sets, fake.stats.sl2vl_sets), (lft0, sl2vl0));
        // Traps now come to this SM: every port names it as master.
        let smlid = d.fabric.port(d.sm_port).lid;
        for &n in &fake.fabric().switches {
            let p0 = fake.fabric().port_id(n, 0);
            assert_eq!(fake.port_info(p0).master_sm_lid(), smlid, "{what}");
        }
        // The new master repairs a pulled cable between two switches.
        let phys = fake.fabric().clone();
        let l = phys
            .links
            .iter()
            .position(|k| {
                phys.is_switch(phys.port(k.a).node) && phys.is_switch(phys.port(k.b).node)
            })
            .unwrap();
        live.pipe.transport_mut().unlink(fabric::LinkId(l as u32));
        let mut repaired = None;
        for _ in 0..8 {
            for ev in live.step(Duration::from_millis(5)).unwrap() {
                if let Event::Repaired { .. } = ev {
                    repaired = Some(ev);
                }
            }
        }
        let Some(Event::Repaired {
            deadlock_free,
            unreachable_pairs,
            ..
        }) = repaired
        else {
            panic!("{what}: no repair")
        };
        assert!(deadlock_free, "{what}");
        assert_eq!(unreachable_pairs, 0, "{what}");
        let back = live.pipe.transport().held(&d.fabric);
        assert_eq!(
            back.lft,
            live.tables().lft,
            "{what}: the switches hold the repair"
        );
        let rep = cdg::check(&d.fabric, &back, Some(live.mask()));
        assert!(
            rep.deadlock_free && rep.unreachable_pairs.count == 0,
            "{what}"
        );
    }
}

#[test]
fn a_wrong_table_is_found_and_rewritten_where_it_differs() {
    let phys = fabric("ktree 4 3");
    let e = by_name("ftree").unwrap();
    let (a, b) = (phys.end_ports[0], *phys.end_ports.last().unwrap());
    let (mut fake, _) = after_master(&phys, a, e.as_ref(), RepairMode::Rftr, 0, false);
    // One entry of one leaf switch drops a destination it used to reach (the LID the
    // master gave the last end port, as the fake holds it).
    let leaf = phys.port(phys.remote(phys.end_ports[5]).unwrap()).node;
    let lid = fake.port_info(*phys.end_ports.last().unwrap()).lid();
    assert_ne!(lid, 0);
    fake.set_lft(leaf, lid, 0xff);
    let lft0 = fake.stats.lft_sets;
    let (mut pipe, master, lost, silent) = stand_by(fake, b, 0);
    let d = discover_with(&mut pipe, Lids::Keep).unwrap();
    let (live, ev) = Live::take_over(
        &d,
        pipe,
        e.as_ref(),
        config(RepairMode::Rftr, 1),
        &master,
        &lost,
        silent,
    )
    .unwrap();
    let Event::TakeOver {
        adopted,
        lft_blocks,
        held_unreachable_pairs,
        deadlock_free,
        unreachable_pairs,
        ref refused,
        ..
    } = ev
    else {
        panic!("{ev:?}")
    };
    assert!(!adopted);
    assert!(
        refused.as_deref().unwrap().contains("not clean"),
        "{refused:?}"
    );
    assert!(held_unreachable_pairs > 0);
    // ftree ranks by the tree, not by discovery order: the fresh tables equal the master's
    // but for the one wrong entry, so one block is written.
    assert_eq!(lft_blocks, 1);
    assert_eq!(live.pipe.transport().stats.lft_sets, lft0 + 1);
    assert!(deadlock_free);
    assert_eq!(unreachable_pairs, 0);
    let back = live.pipe.transport().held(&d.fabric);
    assert_eq!(back.lft, live.tables().lft);
}

#[test]
fn an_sm_alone_finds_no_master() {
    let phys = fabric("torus 3x3 hcas=1");
    let mut pipe = Pipe::new(
        FakeFabric::new(&phys, phys.end_ports[0]),
        PipeConfig::default(),
    );
    let d = discover(&mut pipe, 0).unwrap();
    let others = find_sms(&mut pipe, &d).unwrap();
    assert!(others.is_empty());
    assert!(master_to_follow((0, 1), &others).is_none());
    assert_eq!(pipe.transport().stats.lft_sets, 0);
}

/// With the IPoIB group configured on both SMs, the take-over reads the MFT blocks back and
/// writes none: the master's trees are the ones it would build.
#[test]
fn a_take_over_keeps_the_multicast_trees_the_switches_hold() {
    let phys = fabric("torus 4x4 hcas=2");
    let e = by_name("updn").unwrap();
    let (a, b) = (phys.end_ports[0], *phys.end_ports.last().unwrap());
    let (fake, _) = after_master(&phys, a, e.as_ref(), RepairMode::Rftr, 0, true);
    let mft0 = fake.stats.mft_sets;
    assert!(mft0 > 0, "the master programmed the tree");
    let (mut pipe, master, lost, silent) = stand_by(fake, b, 0);
    let d = discover_with(&mut pipe, Lids::Keep).unwrap();
    let mut cfg = config(RepairMode::Rftr, 1);
    cfg.mcast = vec![routing::mcast::ipoib_group(&d.fabric)];
    let (live, ev) = Live::take_over(&d, pipe, e.as_ref(), cfg, &master, &lost, silent).unwrap();
    let Event::TakeOver {
        adopted,
        lft_blocks,
        mft_blocks,
        failed_smps,
        client_reregister,
        ..
    } = ev
    else {
        panic!("{ev:?}")
    };
    assert!(adopted);
    assert_eq!((lft_blocks, mft_blocks, failed_smps), (0, 0, 0));
    assert_eq!(live.pipe.transport().stats.mft_sets, mft0);
    // Both masters asked every host to register again (its joins were with the old SA):
    // once at the first master's bring-up, once at the take-over.
    let cabled: Vec<_> = phys
        .end_ports
        .iter()
        .filter(|&&p| phys.remote(p).is_some())
        .collect();
    assert_eq!(client_reregister, cabled.len() as u64);
    let rereg = &live.pipe.transport().stats.rereg;
    for &&p in &cabled {
        assert_eq!(rereg[p.idx()], 2, "{}", phys.node(phys.port(p).node).name);
    }
    let model = live.mfts();
    assert!(!model.is_empty());
    let phys = live.pipe.transport().fabric().clone();
    for g in &model.groups {
        for (s, &n) in d.fabric.switches.iter().enumerate() {
            let pn = phys.node_by_guid(d.fabric.node(n).guid).unwrap();
            let want: Vec<u8> = g.mask(s as u32).ports().collect();
            assert_eq!(live.pipe.transport().mft_ports(pn, g.mlid), want);
        }
    }
}
