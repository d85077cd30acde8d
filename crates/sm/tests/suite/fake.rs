//! The SM against the in-process fake fabric: discovery finds the fabric, the tables in the
//! switches are the engine's, and after each pulled cable the switches hold repaired tables
//! that the checker (walk of every pair, CDG over (channel, VL)) accepts, with only the
//! changed blocks sent.

use crate::common;
use common::fabric;
use fabric::{Fabric, FaultMask, LinkId, NodeId, PortId};
use mad::Transport;
use routing::engines::{by_name, RouteOptions};
use routing::fault::{RftrConfig, Session};
use routing::{cdg, Routing};
use sm::fake::FakeFabric;
use sm::{discover, Event, Live, Pipe, PipeConfig, RepairMode, SmConfig};
use std::time::Duration;

/// The tables the fake's switches hold, as a `Routing` of the discovered fabric, with the
/// path SLs the SM publishes (they live in the sources, not the switches); every switch's
/// LinearFDBTop is the top LID.
fn read_back(fake: &FakeFabric, d: &Fabric, published: &Routing) -> Routing {
    let phys = fake.fabric();
    for &n in &d.switches {
        let pn = phys.node_by_guid(d.node(n).guid).unwrap();
        assert_eq!(
            fake.fdb_top(pn),
            d.max_lid(),
            "LinearFDBTop of {}",
            d.node(n).name
        );
    }
    let mut r = fake.held(d);
    r.path_sl = published.path_sl.clone();
    r
}

/// The link of the discovered fabric that is physical link `l`.
fn same_link(phys: &Fabric, d: &Fabric, l: LinkId) -> LinkId {
    let link = phys.link(l);
    let end = |p: PortId| {
        let port = phys.port(p);
        let n = d.node_by_guid(phys.node(port.node).guid).unwrap();
        d.port_id(n, port.num)
    };
    d.port(end(link.a)).link.unwrap()
}

fn config(engine: &dyn routing::engines::Engine, f: &Fabric, repair: RepairMode) -> SmConfig {
    let mut opts = RouteOptions::default();
    let fresh = matches!(
        engine.rftr_base(f, &opts),
        Ok(routing::turn::Base::FreshVls)
    );
    let vls = if fresh { 8 } else { 2 };
    if fresh {
        opts.budget.vls = 6;
    }
    SmConfig {
        repair,
        // As the SM runs RFTR (it sets keep_sl2vl itself), so that the sessions the tests
        // build for their expectations match.
        rftr: RftrConfig {
            vls,
            keep_sl2vl: true,
            ..RftrConfig::default()
        },
        opts,
        sweep_interval: None,
        priority: 0,
        mcast: Vec::new(),
    }
}

fn run(spec: &str, engine: &str, repair: RepairMode, cuts: &[usize]) {
    run_with(spec, engine, repair, cuts, None)
}

fn run_with(spec: &str, engine: &str, repair: RepairMode, cuts: &[usize], sweep: Option<Duration>) {
    let phys = fabric(spec);
    let sm_port = phys.end_ports[0];
    let fake = FakeFabric::new(&phys, sm_port);
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    let d = discover(&mut pipe, 2).unwrap();
    let df = &d.fabric;
    assert_eq!(d.failed, 0);
    assert_eq!(df.nodes.len(), phys.nodes.len(), "{spec}: every node found");
    assert_eq!(df.links.len(), phys.links.len(), "{spec}: every link found");
    for l in &df.links {
        // Each discovered link joins the same (GUID, port) pairs as a physical one.
        let (a, b) = (df.port(l.a), df.port(l.b));
        let pa = phys.port_id(phys.node_by_guid(df.node(a.node).guid).unwrap(), a.num);
        let pb = phys.remote(pa).unwrap();
        assert_eq!(phys.node(phys.port(pb).node).guid, df.node(b.node).guid);
        assert_eq!(phys.port(pb).num, b.num);
    }
    let e = by_name(engine).unwrap();
    let mut cfg = config(e.as_ref(), df, repair);
    cfg.sweep_interval = sweep;
    let (mut live, up) = Live::bring_up(&d, pipe, e.as_ref(), cfg.clone()).unwrap();
    let Event::SubnetUp {
        failed_smps,
        deadlock_free,
        unreachable_pairs,
        lft_blocks,
        ..
    } = up
    else {
        panic!("{up:?}")
    };
    assert_eq!((failed_smps, unreachable_pairs), (0, 0), "{spec} {engine}");
    assert!(deadlock_free);
    let blocks_per_switch = (df.max_lid() as u64 + 1).div_ceil(64);
    assert_eq!(lft_blocks, blocks_per_switch * df.num_switches() as u64);

    // What the switches hold is what the engine routes on the discovered fabric (with
    // every LMC LID programmed, as `fabroute fault` writes it).
    let expected = match repair {
        RepairMode::Rftr => {
            let s = Session::start(df, e.as_ref(), &cfg.opts, cfg.rftr).unwrap();
            let mut t = s.rftr().routing.clone();
            t.mirror_unrouted_lmc_lids(df);
            s.rftr().complete_for_checkers(&mut t);
            t
        }
        RepairMode::Full => {
            let mut t = e.route(df, &FaultMask::none(df), &cfg.opts).unwrap();
            t.mirror_unrouted_lmc_lids(df);
            t
        }
    };
    let back = read_back(live.pipe.transport(), df, live.tables());
    assert_eq!(
        back.lft, expected.lft,
        "{spec} {engine}: LFTs in the switches"
    );
    for (i, n) in df.nodes.iter().enumerate() {
        for inp in 0..=n.nports {
            for out in 1..=n.nports {
                for sl in 0..16 {
                    let id = NodeId(i as u32);
                    let row = if df.is_switch(id) {
                        inp != out
                    } else {
                        inp == 0
                    };
                    if row {
                        assert_eq!(
                            back.sl2vl.vl(id, inp, out, sl),
                            expected.sl2vl.vl(id, inp, out, sl)
                        );
                    }
                }
            }
        }
    }

    let mut mask = FaultMask::none(df);
    let mut ever_unsupported = false;
    for &c in cuts {
        let pl = LinkId((c % phys.links.len()) as u32);
        let dl = same_link(&phys, df, pl);
        if mask.link_dead(dl) {
            continue;
        }
        // A cable between two switches, so that both ends can send trap 128.
        if !phys.is_switch(phys.port(phys.link(pl).a).node)
            || !phys.is_switch(phys.port(phys.link(pl).b).node)
        {
            continue;
        }
        mask.fail_link(dl);
        let lft_sets0 = live.pipe.transport().stats.lft_sets;
        live.pipe.transport_mut().unlink(pl);
        let mut repaired = None;
        for _ in 0..8 {
            for ev in live.step(Duration::from_millis(5)).unwrap() {
                if let Event::Repaired { .. } = ev {
                    repaired = Some(ev);
                }
            }
            if repaired.is_some() {
                break;
            }
        }
        let Some(Event::Repaired {
            lft_blocks,
            completion_lft_blocks,
            blocks_changed,
            uncovered_phantoms,
            failed_smps,
            deadlock_free,
            unsupported_pairs,
            seconds,
            unsent,
            ..
        }) = repaired
        else {
            panic!("{spec} {engine}: no repair after unlinking {pl:?}")
        };
        assert_eq!(failed_smps, 0);
        assert_eq!(
            live.mask().dead_links().collect::<Vec<_>>(),
            mask.dead_links().collect::<Vec<_>>()
        );
        // Only the changed blocks went out, and they are what the switches now differ in.
        assert_eq!(
            live.pipe.transport().stats.lft_sets - lft_sets0,
            lft_blocks + completion_lft_blocks
        );
        assert!(blocks_changed <= lft_blocks + completion_lft_blocks);
        assert!(seconds > 0.0);
        let back = read_back(live.pipe.transport(), df, live.tables());
        assert_eq!(back.lft, live.tables().lft);
        let chk = cdg::check(df, &back, Some(&mask));
        // Pairs RFTR could not repair stay unrouted through later repairs. Otherwise every
        // pair in use is delivered, and the checker's undelivered pairs are the phantoms
        // (pairs no source uses) that the completion could not cover, as the event says.
        ever_unsupported |= unsupported_pairs > 0;
        if !ever_unsupported {
            if let Some(s) = live.session() {
                let sel = routing::fault::verify::check_state(s.rftr(), None);
                assert_eq!(
                    sel.undelivered, 0,
                    "{spec} {engine}: pairs in use after {pl:?}"
                );
            }
            assert_eq!(
                chk.unreachable_pairs.count, uncovered_phantoms,
                "{spec} {engine}: every pair after {pl:?}"
            );
        }
        // RFTR keeps every base deadlock-free; a full reconfiguration is as deadlock-free
        // as its engine is on a faulty fabric (DOR is not), and the event says which.
        assert!(
            chk.deadlock_free || repair == RepairMode::Full,
            "{spec} {engine}: credit loop after {pl:?}"
        );
        assert_eq!(deadlock_free, chk.deadlock_free);
        // Once the cuts split the switches, the SM reaches only its own part (the blocks of
        // the others stay unsent); traps from the others cannot reach it either, so later
        // cuts there would go unseen.
        let topo = routing::engines::common::Topo::new(df, &mask);
        let split = routing::engines::ranking::bfs_levels(&topo, &[0]).contains(&u32::MAX);
        assert_eq!(
            unsent > 0,
            split,
            "{spec} {engine}: unsent blocks after {pl:?}"
        );
        if split {
            break;
        }
    }
    // The other end's trap finds nothing new.
    for ev in live.step(Duration::from_millis(5)).unwrap() {
        assert!(!matches!(ev, Event::Repaired { .. }), "{ev:?}");
    }
}

#[test]
fn torus_updn_rftr_over_three_cuts() {
    run("torus 4x4 hcas=1", "updn", RepairMode::Rftr, &[0, 7, 19]);
}

#[test]
fn fat_tree_ftree_rftr_and_full() {
    run("ktree 4 3", "ftree", RepairMode::Rftr, &[40, 45, 60]);
    run("ktree 4 3", "ftree", RepairMode::Full, &[40, 45]);
}

#[test]
fn dragonfly_and_vl_bases() {
    run("dragonfly 4 2 2", "updn", RepairMode::Rftr, &[30, 31, 50]);
    run("torus 4x4 hcas=1", "dfsssp", RepairMode::Rftr, &[3, 11]);
    run("torus 4x4x4 hcas=1", "dor", RepairMode::Full, &[100, 150]);
}

/// One SMP in seven lost on the way: the pipeline resends them, discovery finds the whole
/// fabric, bring-up and a repair program it completely, and the retries are counted.
#[test]
fn lost_smps_are_sent_again() {
    let phys = fabric("torus 4x4 hcas=1");
    let mut fake = FakeFabric::new(&phys, phys.end_ports[0]);
    fake.drop_every = 7;
    let cfg = PipeConfig {
        timeout: Duration::from_millis(5),
        ..PipeConfig::default()
    };
    let mut pipe = Pipe::new(fake, cfg);
    let d = discover(&mut pipe, 2).unwrap();
    assert_eq!(
        (d.failed, d.fabric.nodes.len(), d.fabric.links.len()),
        (0, 32, 48)
    );
    assert!(pipe.stats.retries > 0);
    let e = by_name("updn").unwrap();
    let (mut live, up) = Live::bring_up(
        &d,
        pipe,
        e.as_ref(),
        config(e.as_ref(), &d.fabric, RepairMode::Rftr),
    )
    .unwrap();
    let Event::SubnetUp {
        failed_smps: 0,
        deadlock_free: true,
        unreachable_pairs: 0,
        ..
    } = up
    else {
        panic!("{up:?}")
    };
    let l = same_link(&phys, &d.fabric, LinkId(20));
    let pl = (0..phys.links.len() as u32)
        .map(LinkId)
        .find(|&x| same_link(&phys, &d.fabric, x) == l)
        .unwrap();
    live.pipe.transport_mut().unlink(pl);
    let mut events = Vec::new();
    for _ in 0..6 {
        events.extend(live.step(Duration::from_millis(10)).unwrap());
    }
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Repaired {
                failed_smps: 0,
                deadlock_free: true,
                ..
            }
        )),
        "{events:?}"
    );
    let back = read_back(live.pipe.transport(), &d.fabric, live.tables());
    assert_eq!(back.lft, live.tables().lft);
    assert!(live.pipe.transport().stats.dropped > 0);
}

#[test]
fn a_lost_trap_is_caught_by_the_light_sweep() {
    let phys = fabric("torus 3x3 hcas=1");
    let fake = FakeFabric::new(&phys, phys.end_ports[0]);
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    let d = discover(&mut pipe, 1).unwrap();
    let e = by_name("updn").unwrap();
    let mut cfg = config(e.as_ref(), &d.fabric, RepairMode::Rftr);
    cfg.sweep_interval = Some(Duration::from_millis(50));
    let (mut live, _) = Live::bring_up(&d, pipe, e.as_ref(), cfg).unwrap();
    // Pull a cable and throw both traps away, as ibsim does when the route is broken.
    let l = (0..phys.links.len())
        .map(|i| LinkId(i as u32))
        .find(|&l| {
            phys.is_switch(phys.port(phys.link(l).a).node)
                && phys.is_switch(phys.port(phys.link(l).b).node)
        })
        .unwrap();
    live.pipe.transport_mut().unlink(l);
    while live
        .pipe
        .transport_mut()
        .recv(Duration::ZERO)
        .unwrap()
        .is_some()
    {}
    let mut events = Vec::new();
    for _ in 0..10 {
        events.extend(live.step(Duration::from_millis(20)).unwrap());
        if events.iter().any(|e| matches!(e, Event::Repaired { .. })) {
            break;
        }
    }
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Sweep { links_down: 1, changed, .. } if changed.len() == 2)
        ),
        "{events:?}"
    );
    let Some(Event::Repaired {
        deadlock_free: true,
        unsupported_pairs: 0,
        ..
    }) = events.iter().find(|e| matches!(e, Event::Repaired { .. }))
    else {
        panic!("{events:?}")
    };
    let chk = cdg::check(live.fabric(), live.tables(), Some(live.mask()));
    assert_eq!(chk.unreachable_pairs.count, 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Random fabrics of several families and sizes (uneven ones included), random cables
    /// pulled one after another, RFTR or full repair: discovery finds the fabric, and after
    /// every cut the switches hold tables the checker finds free of credit loops and
    /// complete wherever the repair supported every pair; a lost trap is left to the light
    /// sweep.
    #[test]
    fn random_fabrics_random_cuts(
        kind in 0usize..6,
        a in 3usize..6,
        b in 3usize..5,
        cuts in proptest::collection::vec(0usize..10_000, 1..4),
        full in proptest::bool::ANY,
    ) {
        let (spec, engine) = match kind {
            0 => (format!("torus {a}x{b} hcas=1"), "updn"),
            1 => (format!("mesh {a}x{b} hcas=1"), "dor"),
            2 => (format!("ktree {} 3", 2 + a % 3), "ftree"),
            3 => (format!("dragonfly {} 2 {}", b, 1 + a % 2), "updn"),
            4 => (format!("hyperx {a}x{b} hcas=1"), "updn"),
            _ => (format!("randreg {} 4 hcas=1 seed={}", 2 * a + 4, a * b), "updn"),
        };
        let repair = if full { RepairMode::Full } else { RepairMode::Rftr };
        run_with(&spec, engine, repair, &cuts, Some(Duration::from_millis(20)));
    }
}
