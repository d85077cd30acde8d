//! The SM against the in-process fake fabric when a whole switch dies (one `switch:` fault,
//! the delta of `Session::apply(Fault::Switch)`) and when a cable comes back (taken in: ports
//! ACTIVE, tables back to the base, the union of old and new walks acyclic, only the
//! differing blocks pushed).

use crate::common;
use common::fabric;
use fabric::{Fabric, FaultMask, LinkId, NodeId, PortId};
use mad::attr::port_state;
use routing::engines::{by_name, Engine, RouteOptions};
use routing::fault::verify::check_tables;
use routing::fault::{Fault, RftrConfig, Session};
use routing::{cdg, Routing};
use sm::fake::FakeFabric;
use sm::{discover, Discovery, Event, Live, Pipe, PipeConfig, RepairMode, SmConfig};
use std::time::Duration;

fn config(engine: &dyn Engine, f: &Fabric, repair: RepairMode) -> SmConfig {
    let mut opts = RouteOptions::default();
    let fresh = matches!(
        engine.rftr_base(f, &opts),
        Ok(routing::turn::Base::FreshVls)
    );
    if fresh {
        opts.budget.vls = 6;
    }
    SmConfig {
        repair,
        // As the SM runs RFTR (it sets keep_sl2vl itself), so that the sessions the tests
        // build for their expectations match.
        rftr: RftrConfig {
            vls: if fresh { 8 } else { 2 },
            keep_sl2vl: true,
            ..RftrConfig::default()
        },
        opts,
        sweep_interval: None,
        priority: 0,
        mcast: Vec::new(),
    }
}

/// The LFTs the fake's switches hold, per switch of the discovered fabric (`None` for the
/// switches in `skip`).
fn lfts_held(fake: &FakeFabric, d: &Fabric, skip: &[NodeId]) -> Vec<Option<Vec<u8>>> {
    let phys = fake.fabric();
    d.switches
        .iter()
        .map(|&n| {
            if skip.contains(&n) {
                return None;
            }
            let pn = phys.node_by_guid(d.node(n).guid).unwrap();
            Some((0..=d.max_lid()).map(|lid| fake.lft(pn, lid)).collect())
        })
        .collect()
}

fn lfts_of(t: &Routing, d: &Fabric, skip: &[NodeId]) -> Vec<Option<Vec<u8>>> {
    d.switches
        .iter()
        .enumerate()
        .map(|(s, &n)| {
            (!skip.contains(&n))
                .then(|| t.lft_of(fabric::SwitchIdx(s as u32))[..=d.max_lid() as usize].to_vec())
        })
        .collect()
}

/// The physical link of discovered link `l`, and the physical node of discovered node `n`.
fn phys_link(phys: &Fabric, d: &Fabric, l: LinkId) -> LinkId {
    let a = d.port(d.link(l).a);
    let pn = phys.node_by_guid(d.node(a.node).guid).unwrap();
    phys.port(phys.port_id(pn, a.num)).link.unwrap()
}
fn phys_node(phys: &Fabric, d: &Fabric, n: NodeId) -> NodeId {
    phys.node_by_guid(d.node(n).guid).unwrap()
}

/// The fake fabric of `spec` (the SM on its first end port), the SM's pipe to it, and what
/// discovery found (LMC 2).
fn discovered(spec: &str) -> (Fabric, Pipe<FakeFabric>, Discovery) {
    let phys = fabric(spec);
    let fake = FakeFabric::new(&phys, phys.end_ports[0]);
    let mut pipe = Pipe::new(fake, PipeConfig::default());
    let d = discover(&mut pipe, 2).unwrap();
    (phys, pipe, d)
}

/// The one `Repaired` event among `events` (`what` names the case when there are others).
fn the_one_repair<'a>(events: &'a [Event], what: &str) -> &'a Event {
    let repaired: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Repaired { .. }))
        .collect();
    assert_eq!(repaired.len(), 1, "{what}: {events:?}");
    repaired[0]
}

fn steps(live: &mut Live<'_, FakeFabric>, n: usize) -> Vec<Event> {
    let mut ev = Vec::new();
    for _ in 0..n {
        ev.extend(live.step(Duration::from_millis(5)).unwrap());
    }
    ev
}

/// A switch whose every cable is pulled (ibsim's `Unlink "node"`) is repaired as one
/// `switch:` fault: one `repaired` event, RFTR's delta that of `Session::apply(Fault::Switch)`
/// on the same fabric, and the switches hold its tables.
#[test]
fn a_dead_switch_is_one_fault() {
    for (spec, engine, repair) in [
        ("torus 4x4 hcas=1", "updn", RepairMode::Rftr),
        ("torus 4x4 hcas=2", "dfsssp", RepairMode::Rftr),
        ("ktree 4 3", "ftree", RepairMode::Rftr),
        ("torus 4x4 hcas=1", "updn", RepairMode::Full),
    ] {
        let (phys, pipe, d) = discovered(spec);
        let df = &d.fabric;
        let e = by_name(engine).unwrap();
        let cfg = config(e.as_ref(), df, repair);
        let (mut live, _) = Live::bring_up(&d, pipe, e.as_ref(), cfg.clone()).unwrap();
        // A switch away from the SM's own, with other switches on every side.
        let sm_sw = df.port(df.remote(d.sm_port).unwrap()).node;
        let dead = *df
            .switches
            .iter()
            .rev()
            .find(|&&n| n != sm_sw && df.node_ports(n).skip(1).any(|p| df.port(p).link.is_some()))
            .unwrap();
        let lft_sets0 = live.pipe.transport().stats.lft_sets;
        live.pipe
            .transport_mut()
            .unlink_node(phys_node(&phys, df, dead));
        let events = steps(&mut live, 12);
        let Event::Repaired {
            faults,
            lft_blocks,
            completion_lft_blocks,
            failed_smps,
            deadlock_free,
            unsupported_pairs,
            ..
        } = the_one_repair(&events, &format!("{spec} {engine}"))
        else {
            unreachable!()
        };
        assert_eq!(
            faults,
            &[format!("switch:{}", df.node(dead).name)],
            "{spec} {engine}"
        );
        assert_eq!(*failed_smps, 0);
        assert!(*deadlock_free, "{spec} {engine}");
        assert!(live.mask().node_dead(dead));
        let pushed = live.pipe.transport().stats.lft_sets - lft_sets0;
        assert_eq!(
            pushed,
            lft_blocks + completion_lft_blocks,
            "{spec} {engine}"
        );
        // The switches that live hold what the SM says they hold.
        assert_eq!(
            lfts_held(live.pipe.transport(), df, &[dead]),
            lfts_of(live.tables(), df, &[dead]),
            "{spec} {engine}"
        );
        match repair {
            RepairMode::Rftr => {
                let mut s = Session::start(df, e.as_ref(), &cfg.opts, cfg.rftr).unwrap();
                let step = s.apply(Fault::Switch(dead)).clone();
                assert_eq!(*unsupported_pairs, step.repair.unsupported_pairs);
                let got = live.session().unwrap().rftr();
                assert_eq!(got.delta.lft, s.rftr().delta.lft, "{spec} {engine}: delta");
                assert_eq!(got.delta.sl2vl, s.rftr().delta.sl2vl);
                assert_eq!(got.delta.sources, s.rftr().delta.sources);
                let want = s.rftr().programmed(true).tables;
                assert_eq!(
                    lfts_of(live.tables(), df, &[dead]),
                    lfts_of(&want, df, &[dead]),
                    "{spec} {engine}: tables"
                );
            }
            RepairMode::Full => {
                let mut mask = FaultMask::none(df);
                mask.fail_node(dead);
                for p in df.node_ports(dead) {
                    if let Some(l) = df.port(p).link {
                        mask.fail_link(l);
                    }
                }
                // The engine's choices pinned on the fault-free fabric, as the SM routes.
                let (pinned, _) = Session::route_base(df, e.as_ref(), &cfg.opts).unwrap();
                let mut want = e.route(df, &mask, &pinned).unwrap();
                want.mirror_unrouted_lmc_lids(df);
                assert_eq!(
                    lfts_of(live.tables(), df, &[dead]),
                    lfts_of(&want, df, &[dead])
                );
            }
        }
        // The other traps find nothing new.
        assert!(steps(&mut live, 4)
            .iter()
            .all(|e| !matches!(e, Event::Repaired { .. })));
    }
}

/// A single cable pulled is still a link fault: its far switch lives.
#[test]
fn a_cable_is_not_a_switch() {
    let (phys, pipe, d) = discovered("torus 4x4 hcas=1");
    let df = &d.fabric;
    let e = by_name("updn").unwrap();
    let (mut live, _) = Live::bring_up(
        &d,
        pipe,
        e.as_ref(),
        config(e.as_ref(), df, RepairMode::Rftr),
    )
    .unwrap();
    let l = routing::fault::sweep::switch_links(df)[7];
    live.pipe.transport_mut().unlink(phys_link(&phys, df, l));
    let events = steps(&mut live, 4);
    let faults: Vec<&Vec<String>> = events
        .iter()
        .filter_map(|e| match e {
            Event::Repaired { faults, .. } => Some(faults),
            _ => None,
        })
        .collect();
    assert_eq!(faults, vec![&vec![fabric::link_name(df, l)]], "{events:?}");
    assert_eq!(live.mask().dead_nodes().count(), 0);
}

/// A cable pulled and put back (ibsim's `ReLink`): its ports go ACTIVE again, the tables
/// return to the base, the union of the walks before and after is acyclic, and the blocks
/// pushed are exactly those that differ. With two cables pulled and one put back, the
/// tables are those of a session that saw only the other.
#[test]
fn a_cable_put_back_is_taken_in() {
    for (spec, engine, repair) in [
        ("torus 4x4 hcas=1", "updn", RepairMode::Rftr),
        ("torus 4x4 hcas=2", "dfsssp", RepairMode::Rftr),
        ("ktree 4 3", "ftree", RepairMode::Rftr),
        ("torus 4x4 hcas=1", "updn", RepairMode::Full),
    ] {
        let (phys, pipe, d) = discovered(spec);
        let df = &d.fabric;
        let e = by_name(engine).unwrap();
        let cfg = config(e.as_ref(), df, repair);
        let (mut live, _) = Live::bring_up(&d, pipe, e.as_ref(), cfg.clone()).unwrap();
        let base = live.tables().clone();
        let links = routing::fault::sweep::switch_links(df);
        let (a, b) = (links[3], links[links.len() - 2]);
        for l in [a, b] {
            live.pipe.transport_mut().unlink(phys_link(&phys, df, l));
            let ev = steps(&mut live, 4);
            assert!(
                ev.iter().any(|e| matches!(e, Event::Repaired { .. })),
                "{spec} {engine}: {ev:?}"
            );
        }
        assert_ne!(
            live.tables().lft,
            base.lft,
            "{spec} {engine}: the faults moved pairs"
        );
        // Cables up again whose return was refused, tried again with the next one.
        let mut deferred: Vec<LinkId> = Vec::new();
        let mut refused = 0;
        for (l, left) in [(a, vec![b]), (b, vec![])] {
            let before = live.tables().clone();
            let dead_before: Vec<LinkId> = live.mask().dead_links().collect();
            let old_pairs = live.session().map(|s| s.rftr().selected_pairs());
            let lft_sets0 = live.pipe.transport().stats.lft_sets;
            live.pipe.transport_mut().relink(phys_link(&phys, df, l));
            let events = steps(&mut live, 4);
            let restored: Vec<&Event> = events
                .iter()
                .filter(|e| matches!(e, Event::LinkRestored { .. }))
                .collect();
            assert_eq!(restored.len(), 1, "{spec} {engine}: {events:?}");
            assert!(
                !events
                    .iter()
                    .any(|e| matches!(e, Event::LinkUp { .. } | Event::Repaired { .. })),
                "{events:?}"
            );
            let Event::LinkRestored {
                links: names,
                taken_in,
                lft_blocks,
                blocks_changed,
                failed_smps,
                union_deadlock_free,
                deadlock_free,
                pairs_off_base,
                faults_left,
                seconds,
                ..
            } = restored[0]
            else {
                unreachable!()
            };
            let mut tried = vec![l];
            tried.extend(&deferred);
            let tried_names: Vec<String> =
                tried.iter().map(|&x| fabric::link_name(df, x)).collect();
            assert_eq!(names, &tried_names);
            assert_eq!(*failed_smps, 0);
            assert!(*seconds > 0.0);
            // The ports are ACTIVE again either way.
            let pk = phys.link(phys_link(&phys, df, l));
            for p in [pk.a, pk.b] {
                assert_eq!(
                    live.pipe.transport().port_info(p).port_state(),
                    port_state::ACTIVE
                );
            }
            // The tables to return to: the base, or a session that saw only what is left.
            let target = |left: &[LinkId]| match repair {
                RepairMode::Rftr => {
                    let mut s = Session::start(df, e.as_ref(), &cfg.opts, cfg.rftr).unwrap();
                    for &x in left {
                        s.apply_unchecked(Fault::Link(x));
                    }
                    let pairs = s.rftr().selected_pairs();
                    (s.rftr().programmed(true).tables, pairs)
                }
                RepairMode::Full => {
                    let mut mask = FaultMask::none(df);
                    for &x in left {
                        mask.fail_link(x);
                    }
                    let (pinned, _) = Session::route_base(df, e.as_ref(), &cfg.opts).unwrap();
                    let mut t = e.route(df, &mask, &pinned).unwrap();
                    t.mirror_unrouted_lmc_lids(df);
                    (t, Vec::new())
                }
            };
            let (want, want_pairs) = target(&left);
            if !*taken_in {
                // Refused: the union of the walks in use and those of the return has a
                // cycle (checked here on its own), and nothing was pushed.
                assert_eq!(repair, RepairMode::Rftr);
                assert!(!*union_deadlock_free);
                let mut mask = FaultMask::none(df);
                for &x in &left {
                    mask.fail_link(x);
                }
                let u = check_tables(
                    df,
                    &mask,
                    &want,
                    &want_pairs,
                    Some((&before, old_pairs.as_ref().unwrap())),
                );
                assert!(!u.deadlock_free, "{spec} {engine}: the union has a cycle");
                assert_eq!(live.tables().lft, before.lft);
                assert_eq!(live.pipe.transport().stats.lft_sets, lft_sets0);
                assert_eq!(live.mask().dead_links().collect::<Vec<_>>(), dead_before);
                deferred = tried;
                refused += 1;
                continue;
            }
            deferred.clear();
            assert!(
                *union_deadlock_free && *deadlock_free,
                "{spec} {engine}: {:?}",
                restored[0]
            );
            assert_eq!(*faults_left, left.len());
            assert_eq!(
                live.mask().dead_links().collect::<Vec<_>>(),
                left,
                "{spec} {engine}"
            );
            assert_eq!(live.tables().lft, want.lft, "{spec} {engine}: tables back");
            assert_eq!(live.tables().path_sl, want.path_sl);
            if left.is_empty() {
                assert_eq!(live.tables().lft, base.lft);
                assert_eq!(*pairs_off_base, 0);
            }
            // What the switches hold, and only the differing blocks sent.
            assert_eq!(
                lfts_held(live.pipe.transport(), df, &[]),
                lfts_of(live.tables(), df, &[])
            );
            let diff = diff_blocks(df, &before, live.tables());
            assert_eq!(*blocks_changed, diff);
            assert_eq!(*lft_blocks, diff, "{spec} {engine}: blocks pushed = diff");
            assert_eq!(live.pipe.transport().stats.lft_sets - lft_sets0, diff);
            // The union of the walks before and after, checked here on its own.
            if let (Some(old), Some(s)) = (old_pairs, live.session()) {
                let r = s.rftr();
                let u = check_tables(
                    df,
                    &r.mask,
                    &r.routing,
                    &r.selected_pairs(),
                    Some((&before, &old)),
                );
                assert!(
                    u.deadlock_free && u.undelivered == 0,
                    "{spec} {engine}: {u:?}"
                );
                // Every pair is back on its base LID once no fault is left.
                if left.is_empty() {
                    for (_, dst, dlid) in r.selected_pairs() {
                        assert_eq!(dlid, df.port(df.end_ports[dst as usize]).lid);
                    }
                }
            }
            let chk = cdg::check(df, live.tables(), Some(live.mask()));
            assert!(chk.deadlock_free || repair == RepairMode::Full);
        }
        // The last cable back always returns to the base.
        assert!(deferred.is_empty(), "{spec} {engine}");
        eprintln!("{spec} {engine} {repair:?}: {refused} return(s) deferred");
        // A fault after the returns: the repair pushes only the blocks its entries touch,
        // over the tables the returns left, and the switches end up holding the SM's tables.
        live.pipe.transport_mut().unlink(phys_link(&phys, df, a));
        let ev = steps(&mut live, 4);
        assert!(
            ev.iter().any(|e| matches!(e, Event::Repaired { .. })),
            "{spec} {engine}: {ev:?}"
        );
        assert_eq!(
            lfts_held(live.pipe.transport(), df, &[]),
            lfts_of(live.tables(), df, &[]),
            "{spec} {engine}: a repair after the returns"
        );
    }
}

/// A cable of a failed switch that comes back is reported once and not taken in.
#[test]
fn a_dead_switch_cable_back_is_reported_and_left_failed() {
    let (phys, pipe, d) = discovered("torus 4x4 hcas=1");
    let df = &d.fabric;
    let e = by_name("updn").unwrap();
    let (mut live, _) = Live::bring_up(
        &d,
        pipe,
        e.as_ref(),
        config(e.as_ref(), df, RepairMode::Rftr),
    )
    .unwrap();
    let dead = *df.switches.last().unwrap();
    live.pipe
        .transport_mut()
        .unlink_node(phys_node(&phys, df, dead));
    steps(&mut live, 12);
    assert!(live.mask().node_dead(dead));
    let tables = live.tables().lft.clone();
    let pn = phys_node(&phys, df, dead);
    let pl = phys
        .node_ports(pn)
        .skip(1)
        .find_map(|p: PortId| {
            let l = phys.port(p).link?;
            phys.is_switch(phys.port(phys.remote(p)?).node).then_some(l)
        })
        .unwrap();
    live.pipe.transport_mut().relink(pl);
    let events = steps(&mut live, 4);
    let ups: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::LinkUp { .. }))
        .collect();
    assert_eq!(ups.len(), 1, "reported once: {events:?}");
    assert!(!events
        .iter()
        .any(|e| matches!(e, Event::Repaired { .. } | Event::LinkRestored { .. })));
    assert_eq!(live.tables().lft, tables);
    assert!(live.mask().node_dead(dead));
}

/// Distinct 64-LID blocks that differ between two tables.
fn diff_blocks(f: &Fabric, a: &Routing, b: &Routing) -> u64 {
    let stride = a.stride();
    (0..f.num_switches())
        .map(|s| {
            (0..stride.div_ceil(64))
                .filter(|&k| {
                    let r = k * 64..((k + 1) * 64).min(stride);
                    a.lft_of(fabric::SwitchIdx(s as u32))[r.clone()]
                        != b.lft_of(fabric::SwitchIdx(s as u32))[r]
                })
                .count() as u64
        })
        .sum()
}

/// An SM asked for RFTR on a fabric whose reachability tables would pass the memory limit
/// still brings the fabric up, says why RFTR was not started, and repairs a pulled cable by
/// full reconfiguration: every pair delivered, no credit loop.
#[test]
fn rftr_over_the_memory_limit_falls_back_to_full_reconfiguration() {
    let (phys, pipe, d) = discovered("torus 4x4 hcas=1");
    let df = &d.fabric;
    let e = by_name("updn").unwrap();
    let mut cfg = config(e.as_ref(), df, RepairMode::Rftr);
    cfg.rftr.memory_limit = Some(1000);
    let (mut live, up) = Live::bring_up(&d, pipe, e.as_ref(), cfg).unwrap();
    let Event::SubnetUp {
        rftr_refused,
        deadlock_free,
        unreachable_pairs,
        ..
    } = &up
    else {
        panic!("{up:?}");
    };
    let why = rftr_refused.as_deref().expect("RFTR refused");
    assert!(
        why.contains("reachability tables") && why.contains("full reconfiguration"),
        "{why}"
    );
    assert!(*deadlock_free && *unreachable_pairs == 0, "{up:?}");
    // A cable between two switches, away from the SM's.
    let sm_sw = df.port(df.remote(d.sm_port).unwrap()).node;
    let l = df
        .links
        .iter()
        .enumerate()
        .map(|(i, _)| LinkId(i as u32))
        .rev()
        .find(|&l| {
            let k = df.link(l);
            let (a, b) = (df.port(k.a).node, df.port(k.b).node);
            df.switch_of(a).is_some() && df.switch_of(b).is_some() && a != sm_sw && b != sm_sw
        })
        .unwrap();
    live.pipe.transport_mut().unlink(phys_link(&phys, df, l));
    let events = steps(&mut live, 12);
    let rep = the_one_repair(&events, "over the limit");
    let Event::Repaired {
        repair,
        deadlock_free,
        unreachable_pairs,
        failed_smps,
        ..
    } = rep
    else {
        unreachable!()
    };
    assert_eq!(*repair, RepairMode::Full);
    assert!(
        *deadlock_free && *unreachable_pairs == 0 && *failed_smps == 0,
        "{rep:?}"
    );
}
