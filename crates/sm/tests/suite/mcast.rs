//! Multicast on the fake fabric: the IPoIB broadcast group's tree is in the switches' MFTs
//! after subnet up, and after a cable of the tree between two switches is pulled the
//! mended tree is there, with only the changed blocks written; both deliver every packet
//! to every member once from every sender (`routing::mcast::check_mcast`).

use crate::common;
use common::fabric;
use fabric::{Fabric, LinkId};
use routing::engines::{by_name, RouteOptions};
use routing::fault::RftrConfig;
use routing::mcast::{check_mcast, ipoib_group, Group, GroupMft, Mfts};
use sm::fake::FakeFabric;
use sm::{discover, Event, Live, Pipe, PipeConfig, RepairMode, SmConfig};
use std::time::Duration;

/// The switches' MFT rows for every MLID of `model` equal the model's masks.
fn assert_held(fake: &FakeFabric, d: &Fabric, model: &Mfts, what: &str) {
    let phys = fake.fabric();
    for g in &model.groups {
        for (s, &n) in d.switches.iter().enumerate() {
            let pn = phys.node_by_guid(d.node(n).guid).unwrap();
            let want: Vec<u8> = g.mask(s as u32).ports().collect();
            assert_eq!(
                fake.mft_ports(pn, g.mlid),
                want,
                "{what}: switch {}",
                d.node(n).name
            );
        }
    }
}

/// The SM's settings: RFTR over two VLs, these groups.
fn config(groups: Vec<Group>) -> SmConfig {
    SmConfig {
        repair: RepairMode::Rftr,
        rftr: RftrConfig {
            vls: 2,
            ..RftrConfig::default()
        },
        opts: RouteOptions::default(),
        sweep_interval: None,
        priority: 0,
        mcast: groups,
    }
}

/// A cable of `phys` between two switches that tree `g` (over the discovered `f`) uses.
fn tree_cable(phys: &Fabric, f: &Fabric, g: &GroupMft) -> LinkId {
    (0..phys.links.len() as u32)
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
        .expect("a tree cable between switches")
}

#[test]
fn the_broadcast_tree_is_programmed_and_mended() {
    let phys = fabric("torus 4x4 hcas=2");
    let mut pipe = Pipe::new(
        FakeFabric::new(&phys, phys.end_ports[0]),
        PipeConfig::default(),
    );
    let d = discover(&mut pipe, 0).unwrap();
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    let groups = vec![ipoib_group(f)];
    let cfg = config(groups.clone());
    let (mut live, up) = Live::bring_up(&d, pipe, e.as_ref(), cfg).unwrap();
    let Event::SubnetUp { mft_blocks, .. } = up else {
        panic!("{up:?}")
    };
    let model = live.mfts();
    assert_eq!(mft_blocks as usize, model.blocks(f.num_switches()));
    assert_eq!(live.pipe.transport().stats.mft_sets, mft_blocks);
    assert_held(live.pipe.transport(), f, &model, "subnet up");
    let c = check_mcast(f, None, &model, Some(&groups), Some(live.tables()));
    assert!(c.ok(), "subnet up: {c:?}");

    // A cable between two switches that the tree uses.
    let pl = tree_cable(&phys, f, &model.groups[0]);
    let sets0 = live.pipe.transport().stats.mft_sets;
    live.pipe.transport_mut().unlink(pl);
    let mut rep = None;
    for _ in 0..6 {
        for ev in live.step(Duration::from_millis(5)).unwrap() {
            if let Event::Repaired { mft_blocks, .. } = ev {
                rep = Some(mft_blocks);
            }
        }
    }
    let blocks = rep.expect("a repair");
    assert!(blocks > 0, "the cut tree was mended");
    assert_eq!(live.pipe.transport().stats.mft_sets - sets0, blocks);
    let mended = live.mfts();
    assert_ne!(mended, model);
    assert_held(live.pipe.transport(), f, &mended, "after the cut");
    let c = check_mcast(
        f,
        Some(live.mask()),
        &mended,
        Some(&groups),
        Some(live.tables()),
    );
    assert!(c.ok(), "after the cut: {c:?}");
}

/// Every switch's MulticastFDBTop: the last MLID of the highest block it has a port in, or
/// 0xBFFF when it is in no tree (computed here from the model, not from the SM's code).
fn assert_tops(fake: &FakeFabric, d: &Fabric, model: &Mfts, what: &str) {
    let phys = fake.fabric();
    for (s, &n) in d.switches.iter().enumerate() {
        let want = model
            .groups
            .iter()
            .filter(|g| !g.mask(s as u32).is_empty())
            .map(|g| 0xC000 + (g.mlid - 0xC000) / 32 * 32 + 31)
            .max()
            .unwrap_or(0xBFFF);
        let pn = phys.node_by_guid(d.node(n).guid).unwrap();
        assert_eq!(
            fake.mcast_top(pn),
            want,
            "{what}: switch {}",
            d.node(n).name
        );
    }
}

/// On switches that honour MulticastFDBTop (entries above it forward nowhere, and it starts
/// below the multicast range) the SM sets it after the blocks: every group is delivered at
/// subnet up and after a cut, and each switch's top follows the trees it is in.
#[test]
fn switches_that_honour_the_mft_top_get_it() {
    let phys = fabric("torus 4x4 hcas=2");
    let mut fake = FakeFabric::new(&phys, phys.end_ports[0]);
    fake.honour_mcast_top();
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    let d = discover(&mut pipe, 0).unwrap();
    let f = &d.fabric;
    let e = by_name("updn").unwrap();
    // The broadcast group in block 0 and a group of four hosts in block 2.
    let all = ipoib_group(f);
    let mut few = all.clone();
    few.mlid = 0xC041;
    few.mgid = None;
    few.members.truncate(4);
    let groups = vec![all, few];
    let cfg = config(groups.clone());
    let (mut live, _) = Live::bring_up(&d, pipe, e.as_ref(), cfg).unwrap();
    let model = live.mfts();
    assert!(
        model.groups[1].switches.len() < f.num_switches(),
        "some switches are in the broadcast tree only"
    );
    assert_held(live.pipe.transport(), f, &model, "subnet up");
    assert_tops(live.pipe.transport(), f, &model, "subnet up");

    // Cut a cable of the small group's tree between two switches; the mended trees are
    // held and delivered, and the tops follow them.
    let pl = tree_cable(&phys, f, &model.groups[1]);
    live.pipe.transport_mut().unlink(pl);
    for _ in 0..6 {
        live.step(Duration::from_millis(5)).unwrap();
    }
    let mended = live.mfts();
    assert_held(live.pipe.transport(), f, &mended, "after the cut");
    assert_tops(live.pipe.transport(), f, &mended, "after the cut");
    let c = check_mcast(
        f,
        Some(live.mask()),
        &mended,
        Some(&groups),
        Some(live.tables()),
    );
    assert!(c.ok(), "after the cut: {c:?}");
}
