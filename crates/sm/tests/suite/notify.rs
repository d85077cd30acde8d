//! Subscriptions and Reports on the fake fabric: hosts subscribe with an SA Set of
//! InformInfo; after a repair every subscribed source whose (DLID, SL) toward a destination
//! changed gets trap 69 about that destination, and nobody else does; a host whose cable is
//! pulled is reported out of service (trap 65) and back in service (trap 64) when the cable
//! returns; a host that unsubscribed gets nothing.

use crate::common;
use common::fabric;
use fabric::{LinkId, PortId};
use mad::inform::{self, trap, InformInfo, INFORM_INFO_LEN};
use mad::sa::{decode_response, method, sa_attr, sa_status, SaRequest, DEFAULT_GID_PREFIX};
use mad::{Address, MAD_SIZE};
use routing::engines::{by_name, RouteOptions};
use routing::fault::RftrConfig;
use sm::fake::FakeFabric;
use sm::{discover, Event, Live, Pipe, PipeConfig, RepairMode, SmConfig};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

fn subscription(subscribe: bool, trap_number: u16) -> [u8; MAD_SIZE] {
    let info = InformInfo::generic(subscribe, trap_number, 1);
    SaRequest::new(method::SET, sa_attr::INFORM_INFO, 7, 0, &info.encode()).encode()
}

/// Runs the SM until the fake is quiet; returns the events.
fn settle(live: &mut Live<'_, FakeFabric>) -> Vec<Event> {
    let mut evs = Vec::new();
    for _ in 0..6 {
        evs.extend(live.step(Duration::from_millis(5)).unwrap());
    }
    evs
}

/// Reports in the fake's outbox: (addressee LID, trap, GUID it is about).
fn reports(live: &mut Live<'_, FakeFabric>) -> Vec<(u16, u16, u64)> {
    let out = std::mem::take(&mut live.pipe.transport_mut().answers);
    out.iter()
        .filter_map(|(m, to)| {
            let n = inform::decode_report(m)?;
            assert_eq!(to.qpn, 1, "to the QP the subscription named");
            assert_eq!(n.about.prefix, DEFAULT_GID_PREFIX);
            Some((to.lid, n.trap_number, n.about.guid))
        })
        .collect()
}

#[test]
fn subscribed_sources_are_told_of_their_new_paths() {
    let phys = fabric("torus 4x4 hcas=2");
    let mut pipe = Pipe::new(
        FakeFabric::new(&phys, phys.end_ports[0]),
        PipeConfig::default(),
    );
    let d = discover(&mut pipe, 1).unwrap();
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let cfg = SmConfig {
        repair: RepairMode::Rftr,
        // New paths on virtual LIDs, so that repairs move sources.
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
    let (mut live, _) = Live::bring_up(&d, pipe, e.as_ref(), cfg).unwrap();
    let host = |p: PortId| Address {
        lid: f.port(p).lid,
        qpn: 1,
    };
    // Every host but the SM's subscribes to everything; then one takes it back.
    let hosts: Vec<PortId> = f
        .end_ports
        .iter()
        .copied()
        .filter(|&p| p != d.sm_port)
        .collect();
    for &p in &hosts {
        live.pipe
            .transport_mut()
            .inject(subscription(true, trap::ALL), host(p));
    }
    settle(&mut live);
    let answers = std::mem::take(&mut live.pipe.transport_mut().answers);
    assert_eq!(answers.len(), hosts.len());
    for (m, _) in &answers {
        let (h, recs) = decode_response(m).unwrap();
        assert_eq!((h.method, h.status), (method::GET_RESP, 0));
        let mut b = [0u8; INFORM_INFO_LEN];
        b.copy_from_slice(&recs[0][..INFORM_INFO_LEN]);
        assert!(InformInfo::decode(&b).subscribe, "the subscription echoed");
    }
    let quiet = hosts[3];
    live.pipe
        .transport_mut()
        .inject(subscription(false, trap::ALL), host(quiet));
    // Unsubscribing twice: nothing to take back.
    live.pipe
        .transport_mut()
        .inject(subscription(false, trap::ALL), host(quiet));
    // Vendor notices are not produced: refused.
    let mut vendor = subscription(true, trap::ALL);
    vendor[56 + 22] = 0;
    live.pipe.transport_mut().inject(vendor, host(hosts[4]));
    settle(&mut live);
    let st: Vec<u16> = std::mem::take(&mut live.pipe.transport_mut().answers)
        .iter()
        .map(|(m, _)| decode_response(m).unwrap().0.status)
        .collect();
    assert_eq!(st, [0, sa_status::NO_RECORDS, sa_status::REQ_INVALID]);
    assert_eq!(live.sa_stats().errors, 2);

    // A cable between switches: RFTR moves sources to virtual LIDs.
    let pl = (0..phys.links.len() as u32)
        .map(LinkId)
        .find(|&l| {
            phys.is_switch(phys.port(phys.link(l).a).node)
                && phys.is_switch(phys.port(phys.link(l).b).node)
        })
        .unwrap();
    live.pipe.transport_mut().unlink(pl);
    let evs = settle(&mut live);
    let sent = evs
        .iter()
        .find_map(|e| match e {
            Event::Repaired { reports, .. } => Some(*reports),
            _ => None,
        })
        .expect("a repair");
    let got = reports(&mut live);
    assert_eq!(got.len() as u64, sent);
    // Exactly the moved pairs whose source subscribed, each once, about the destination.
    let s = live.session().unwrap().rftr();
    let ends = &f.end_ports;
    let want: BTreeSet<(u16, u16, u64)> = s
        .delta
        .sources
        .keys()
        .filter(|&&(src, _)| ends[src as usize] != d.sm_port && ends[src as usize] != quiet)
        .map(|&(src, dst)| {
            (
                f.port(ends[src as usize]).lid,
                trap::REPATH,
                f.port(ends[dst as usize]).guid,
            )
        })
        .collect();
    assert!(!want.is_empty(), "the repair moved subscribed sources");
    let got_set: BTreeSet<(u16, u16, u64)> = got.iter().copied().collect();
    assert_eq!(
        got_set.len(),
        got.len(),
        "one Report per (source, destination)"
    );
    assert_eq!(got_set, want);

    // A host's own cable: out of service for every subscriber (but itself), back in service
    // when it returns.
    let victim = hosts[7];
    let phys_hl = {
        let port = f.port(victim);
        let pn = phys.node_by_guid(f.node(port.node).guid).unwrap();
        phys.port(phys.port_id(pn, port.num)).link.unwrap()
    };
    live.pipe.transport_mut().unlink(phys_hl);
    settle(&mut live);
    let got = reports(&mut live);
    let by_trap: BTreeMap<u16, BTreeSet<u16>> = got.iter().fold(BTreeMap::new(), |mut m, r| {
        if r.2 == f.port(victim).guid {
            m.entry(r.1).or_default().insert(r.0);
        }
        m
    });
    let others: BTreeSet<u16> = hosts
        .iter()
        .filter(|&&p| p != quiet && p != victim)
        .map(|&p| f.port(p).lid)
        .collect();
    assert_eq!(
        by_trap.get(&trap::GID_OUT_OF_SERVICE),
        Some(&others),
        "{got:?}"
    );
    live.pipe.transport_mut().relink(phys_hl);
    let evs = settle(&mut live);
    assert!(
        evs.iter()
            .any(|e| matches!(e, Event::LinkRestored { taken_in: true, .. })),
        "{evs:?}"
    );
    let got = reports(&mut live);
    let back: BTreeSet<u16> = got
        .iter()
        .filter(|r| r.1 == trap::GID_IN_SERVICE && r.2 == f.port(victim).guid)
        .map(|r| r.0)
        .collect();
    let mut with_victim = others.clone();
    with_victim.insert(f.port(victim).lid);
    assert_eq!(back, with_victim, "{got:?}");
    assert!(got.iter().all(|r| r.0 != f.port(quiet).lid));
}
