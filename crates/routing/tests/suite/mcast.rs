//! Multicast, checked from the MFTs alone: over the generator families with random groups
//! (full and send-only members) and random faults, every group delivers exactly once to every
//! live receiver from every live sender, nowhere else; with up*/down* trees the channel
//! dependency graph of unicast and multicast together is acyclic. The checker itself is
//! shown to find loops, duplicates, leaks, cut members and a credit loop that needs both
//! kinds of traffic. `opensm.mcfdbs` round-trips.

use fabric::gen::{generate, TopoSpec};
use fabric::{Fabric, FaultMask, PortId};
use proptest::prelude::*;
use routing::cdg::build_cdg;
use routing::engines::{by_name, RouteOptions};
use routing::fault::Fault;
use routing::mcast::{
    check_mcast, ipoib_group, mcast_cycles, parse_groups, route_groups, Group, Member, PortMask,
    TreeRule,
};
use routing::opensm::{read_mcfdbs, write_mcfdbs};
use routing::turn::Base;

use crate::common;

fn fabric(spec: &str) -> Fabric {
    generate(&spec.parse::<TopoSpec>().unwrap()).unwrap()
}

/// `n` random groups (the IPoIB broadcast group first), members drawn from `seed`.
fn random_groups(f: &Fabric, seed: u64, n: usize) -> Vec<Group> {
    let mut rng = fabric::rng::Rng::new(seed);
    let mut v = vec![ipoib_group(f)];
    for k in 1..n {
        let mut members: Vec<Member> = Vec::new();
        for &p in &f.end_ports {
            if f.remote(p).is_some() && rng.below(3) == 0 {
                members.push(Member {
                    port: p,
                    full: rng.below(4) != 0,
                });
            }
        }
        if members.is_empty() {
            members.push(Member {
                port: f.end_ports[0],
                full: true,
            });
        }
        v.push(Group {
            mlid: 0xC000 + k as u16,
            mgid: None,
            sl: 0,
            members,
        });
    }
    v
}

fn mask_of(f: &Fabric, faults: &[Fault]) -> FaultMask {
    let mut m = FaultMask::none(f);
    for fault in faults {
        m.fail(*fault);
    }
    m
}

/// Routes unicast with updn and the groups with up*/down* trees, and checks both.
fn case(spec: &str, seed: u64, groups: usize, faults: usize) {
    let f = fabric(spec);
    let gs = random_groups(&f, seed, groups);
    let fl = common::random_faults(&f, seed, faults, false);
    let mask = mask_of(&f, &fl);
    let engine = by_name("updn").unwrap();
    let Ok(r) = engine.route(&f, &mask, &RouteOptions::default()) else {
        return; // a fault set that disconnects the fabric
    };
    // The trees follow the live ranking's up*/down* rule when the base keeps to one (no VL
    // change); otherwise they are shortest trees, checked for delivery only.
    let turns = matches!(
        engine.rftr_base(&f, &RouteOptions::default()),
        Ok(Base::Turns(_))
    );
    let rule = routing::engines::UpDownRanking::for_updn(&f, &mask, &RouteOptions::default())
        .map(|(rk, _)| {
            routing::turn::UpDownRule::from_fn(&f, |c| {
                rk.channel_dir(&f, c) == routing::engines::Dir::Up
            })
        })
        .unwrap();
    let tree_rule = if turns {
        TreeRule::UpDown(&rule)
    } else {
        TreeRule::Shortest
    };
    let mc = route_groups(&f, &mask, &gs, tree_rule).unwrap();
    eprintln!(
        "{spec}: {} groups, up/down {turns}, depth {}, max link load {}, not up/down {}, unreached {}",
        gs.len(),
        mc.max_depth(),
        mc.max_link_load(),
        mc.not_up_down,
        mc.unreached()
    );
    let chk = check_mcast(&f, Some(&mask), &mc.mfts, Some(&gs), Some(&r));
    assert!(
        chk.ok(),
        "{spec} seed {seed} faults {fl:?}: {:?}",
        chk.examples
    );
    assert!(chk.deliveries > 0);
    if turns && mc.not_up_down == 0 && mc.unreached() == 0 {
        let cdg = build_cdg(&f, &r, Some(&mask));
        let cycles = mcast_cycles(&f, &cdg, &chk);
        assert!(cycles.is_empty(), "{spec} seed {seed}: {:?}", cycles[0]);
    }
    // The file says the same.
    let text = write_mcfdbs(&f, Some(&mc.mfts), None);
    let (back, warnings) = read_mcfdbs(text.as_bytes(), "mcfdbs", &f).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(
        back.groups.len(),
        mc.mfts
            .groups
            .iter()
            .filter(|g| !g.switches.is_empty())
            .count()
    );
    for g in &back.groups {
        assert_eq!(g.switches, mc.mfts.group(g.mlid).unwrap().switches);
    }
}

#[test]
fn every_family_delivers_once_without_credit_loops() {
    for spec in [
        "torus 4x4 hcas=2",
        "mesh 4x3 hcas=1",
        "ktree 4 3",
        "dragonfly 4 2 2",
        "slimfly 5",
        "hyperx 3x3 hcas=2",
        "superpod su=1 nodes=4 rails=2 spines=2 uplinks=4 cores=2",
        "dragonflyplus groups=4 leaves=3 spines=3 hosts=2 global=1",
    ] {
        case(spec, 1, 12, 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_groups_and_faults(
        fam in 0usize..5, seed in 0u64..1000, groups in 1usize..20, faults in 0usize..4,
    ) {
        let spec = ["torus 4x4 hcas=2", "ktree 4 3", "dragonfly 4 2 2", "slimfly 5",
                    "hyperx 3x4 hcas=1"][fam];
        case(spec, seed, groups, faults);
    }
}

/// The checker finds what is wrong, independently of how the tables were made.
#[test]
fn the_checker_finds_loops_leaks_and_cut_members() {
    let f = fabric("torus 4x1 hcas=1");
    // A ring of 4 switches: every ring port in every mask closes a loop.
    let g = ipoib_group(&f);
    let mut mc = route_groups(
        &f,
        &FaultMask::none(&f),
        std::slice::from_ref(&g),
        TreeRule::Shortest,
    )
    .unwrap();
    assert!(check_mcast(&f, None, &mc.mfts, Some(std::slice::from_ref(&g)), None).ok());
    let ring: Vec<(u32, PortMask)> = (0..f.num_switches() as u32)
        .map(|s| {
            let n = f.switches[s as usize];
            let mut m = PortMask::default();
            for p in f.node_ports(n).skip(1) {
                if f.remote(p).is_some() {
                    m.set(f.port(p).num);
                }
            }
            (s, m)
        })
        .collect();
    let mut looped = mc.mfts.clone();
    looped.groups[0].switches = ring;
    let c = check_mcast(&f, None, &looped, Some(std::slice::from_ref(&g)), None);
    assert!(c.duplicates > 0, "{c:?}");
    // A send-only member that gets the packets is a leak; a receiver left out is cut.
    let mut g2 = g.clone();
    g2.members[0].full = false;
    let c = check_mcast(&f, None, &mc.mfts, Some(std::slice::from_ref(&g2)), None);
    assert!(c.leaks > 0, "{c:?}");
    let last = mc.mfts.groups[0].switches.len() - 1;
    mc.mfts.groups[0].switches.remove(last);
    let c = check_mcast(&f, None, &mc.mfts, Some(std::slice::from_ref(&g)), None);
    assert!(c.unreached > 0, "{c:?}");
    // Inferred members (OpenSM's file carries none): the same verdict on the good tables.
    let good = route_groups(
        &f,
        &FaultMask::none(&f),
        std::slice::from_ref(&g),
        TreeRule::Shortest,
    )
    .unwrap();
    assert!(check_mcast(&f, None, &good.mfts, None, None).ok());
}

/// On a ring, unicast that is deadlock-free alone (up*/down*) and a multicast tree that is
/// not up*/down* close a credit loop together; the combined CDG finds it, the up*/down*
/// tree does not have it.
#[test]
fn a_credit_loop_of_unicast_and_multicast_together_is_found() {
    let f = fabric("torus 6x1 hcas=1");
    let engine = by_name("updn").unwrap();
    let r = engine
        .route(&f, &FaultMask::none(&f), &RouteOptions::default())
        .unwrap();
    let cdg = build_cdg(&f, &r, None);
    assert!(
        routing::cdg::find_cycles(&f, &cdg).is_empty(),
        "updn alone is clean"
    );
    let Ok(Base::Turns(rule)) = engine.rftr_base(&f, &RouteOptions::default()) else {
        panic!("updn has a turn rule");
    };
    let rule = rule.as_up_down().unwrap().clone();
    let mut found = false;
    for seed in 0..40 {
        let gs = random_groups(&f, seed, 6);
        let short = route_groups(&f, &FaultMask::none(&f), &gs, TreeRule::Shortest).unwrap();
        let c = check_mcast(&f, None, &short.mfts, Some(&gs), Some(&r));
        assert!(c.ok());
        found |= !mcast_cycles(&f, &cdg, &c).is_empty();
        let up = route_groups(&f, &FaultMask::none(&f), &gs, TreeRule::UpDown(&rule)).unwrap();
        let c = check_mcast(&f, None, &up.mfts, Some(&gs), Some(&r));
        assert!(c.ok());
        assert_eq!(up.not_up_down, 0);
        assert!(mcast_cycles(&f, &cdg, &c).is_empty(), "seed {seed}");
    }
    assert!(
        found,
        "some shortest trees close a loop with unicast on a ring"
    );
}

#[test]
fn group_files_parse_with_located_errors() {
    let f = fabric("torus 2x2 hcas=2");
    let names: Vec<String> = f
        .end_ports
        .iter()
        .map(|&p| f.node(f.port(p).node).name.clone())
        .collect();
    let text = format!(
        "# groups\n0xC000 all\n0xC001 sl=1 mgid=ff12:401b:ffff::1 {} send:{}\n49154 {}/1 # by port\n",
        names[0], names[1], names[2]
    );
    let gs = parse_groups(&f, &text, "g.txt").unwrap();
    assert_eq!(gs.len(), 3);
    assert_eq!(gs[0].members.len(), f.end_ports.len());
    assert_eq!(gs[1].sl, 1);
    assert_eq!(gs[1].mgid, Some(0xff12_401b_ffff_0000_0000_0000_0000_0001));
    assert_eq!(gs[1].members.iter().filter(|m| m.full).count(), 1);
    assert_eq!(gs[2].mlid, 0xC002);
    for (bad, what) in [
        ("0xBFFF all", "not a multicast LID"),
        ("0xC000 all\n0xC000 all", "already a group"),
        ("0xC001 sl=16 all", "SL 0-15"),
        ("0xC001 nosuchnode", "no end node name"),
        ("0xC001 mgid=zz all", "mgid"),
        ("0xC001 sl=1", "no member"),
    ] {
        let e = parse_groups(&f, bad, "g.txt").unwrap_err().to_string();
        assert!(e.starts_with("g.txt:"), "{e}");
        assert!(e.contains(what), "{bad}: {e}");
    }
    let _: Vec<PortId> = gs[0].receivers().collect();
}

#[test]
fn mcfdbs_reader_errors_name_the_line() {
    let f = fabric("torus 2x2 hcas=1");
    let g = f.node(f.switches[0]).guid;
    for (text, what) in [
        ("0xC000 : 0x001\n".to_string(), "before the first entry"),
        (
            format!("Switch 0x{g:016x}\n0x0001 : 0x001\n"),
            "not a multicast LID",
        ),
        (
            format!("Switch 0x{g:016x}\n0xC000 : 0x0FF\n"),
            "the switch has ports",
        ),
        (
            format!("Switch 0x{g:016x}\n0xC000 : port1\n"),
            "expected a port",
        ),
    ] {
        let e = read_mcfdbs(text.as_bytes(), "m", &f)
            .unwrap_err()
            .to_string();
        assert!(e.contains(what), "{text}: {e}");
        assert!(e.starts_with("m:"), "{e}");
    }
}

/// Whether every live end port's switch is in one live component.
fn connected(f: &Fabric, mask: &FaultMask) -> bool {
    let t = routing::engines::common::Topo::new(f, mask);
    let start = (0..t.n).find(|&s| t.alive[s]);
    let Some(s0) = start else { return true };
    let mut seen = vec![false; t.n];
    let mut q = vec![s0];
    seen[s0] = true;
    while let Some(u) = q.pop() {
        for a in t.links(u) {
            if !seen[a.peer as usize] {
                seen[a.peer as usize] = true;
                q.push(a.peer as usize);
            }
        }
    }
    t.ends.iter().all(|e| seen[e.sw as usize])
}

/// Trees routed on the fault-free fabric, then mended fault by fault beside RFTR's unicast
/// repair: every live receiver still gets each packet once from every live sender, only cut
/// trees change, and with up*/down* trees the repaired unicast and multicast together have
/// no credit loop.
fn repair_case(spec: &str, seed: u64, groups: usize, faults: usize, with_switch: bool) {
    use routing::fault::{RftrConfig, Session};
    use routing::mcast::repair_trees;
    let f = fabric(spec);
    let engine = by_name("updn").unwrap();
    let opts = engine.pin_choices(&f, &RouteOptions::default()).unwrap();
    let Ok(mut session) = Session::start(&f, engine.as_ref(), &opts, RftrConfig::default()) else {
        return;
    };
    let base = engine.rftr_base(&f, &opts).unwrap();
    let up = match &base {
        Base::Turns(t) => t.as_up_down().cloned(),
        Base::FreshVls => None,
    };
    let rule = TreeRule::of(up.as_ref());
    let gs = random_groups(&f, seed, groups);
    let mut mc = route_groups(&f, &FaultMask::none(&f), &gs, rule).unwrap();
    let mut mask = FaultMask::none(&f);
    let mut rebuilt_not_up_down = mc.not_up_down;
    for fault in common::random_faults(&f, seed, faults, with_switch) {
        session.apply(fault);
        mask.fail(fault);
        let before = mc.mfts.clone();
        let rep = repair_trees(&f, &mask, &mut mc, &gs, rule).unwrap();
        rebuilt_not_up_down += rep.not_up_down;
        // Untouched trees keep every entry.
        let changed = before
            .groups
            .iter()
            .zip(&mc.mfts.groups)
            .filter(|(a, b)| a != b)
            .count();
        assert!(changed <= rep.groups_cut, "{spec} seed {seed}: {rep:?}");
        if !connected(&f, &mask) {
            return;
        }
        let tables = session.rftr().programmed(true).tables;
        let chk = check_mcast(&f, Some(&mask), &mc.mfts, Some(&gs), Some(&tables));
        assert!(
            chk.ok(),
            "{spec} seed {seed} after {fault:?}: {rep:?} {:?}",
            chk.examples
        );
        if up.is_some() && rebuilt_not_up_down == 0 && session.checked() {
            let cdg = build_cdg(&f, &tables, Some(&mask));
            let cycles = mcast_cycles(&f, &cdg, &chk);
            assert!(cycles.is_empty(), "{spec} seed {seed}: {:?}", cycles[0]);
        }
    }
}

#[test]
fn repaired_trees_deliver_once_without_credit_loops() {
    for spec in [
        "torus 4x4 hcas=2",
        "ktree 4 3",
        "dragonfly 4 2 2",
        "slimfly 5",
        "hyperx 3x4 hcas=1",
    ] {
        for seed in 0..6 {
            repair_case(spec, seed, 10, 3, seed % 2 == 1);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn random_trees_survive_random_faults(
        fam in 0usize..4, seed in 0u64..1000, groups in 1usize..12, faults in 1usize..5,
        with_switch in any::<bool>(),
    ) {
        let spec = ["torus 4x4 hcas=2", "ktree 4 3", "dragonfly 4 2 2", "mesh 4x3 hcas=1"][fam];
        repair_case(spec, seed, groups, faults, with_switch);
    }
}

/// A cut tree changes only around the cut: failing a leaf's tree cable in the IPoIB tree of
/// a ktree re-attaches the leaf through another switch of its pod (a few entries), not the
/// whole tree. An up*/down* tree cannot always be mended so (the leaf would have to climb to
/// the one top through switches outside the tree, and in a k-ary n-tree only the cut switch
/// leads there): that group is routed again, and still delivers.
#[test]
fn a_cut_changes_few_entries() {
    use routing::mcast::repair_trees;
    let f = fabric("ktree 4 3");
    let gs = vec![ipoib_group(&f)];
    let has_hosts = |s: u32| {
        let n = f.switches[s as usize];
        f.node_ports(n)
            .any(|p| f.remote(p).is_some_and(|q| !f.is_switch(f.port(q).node)))
    };
    let engine = by_name("updn").unwrap();
    let Ok(Base::Turns(t)) = engine.rftr_base(&f, &RouteOptions::default()) else {
        panic!("updn on a ktree has a turn rule");
    };
    let rule = t.as_up_down().unwrap().clone();
    for tree_rule in [TreeRule::Shortest, TreeRule::UpDown(&rule)] {
        let mut mc = route_groups(&f, &FaultMask::none(&f), &gs, tree_rule).unwrap();
        let total = mc.mfts.groups[0].switches.len();
        // A leaf's cable into the tree.
        let e = &mc.mfts.groups[0];
        let (s, p) = e
            .switches
            .iter()
            .filter(|(s, _)| has_hosts(*s))
            .find_map(|&(s, m)| {
                m.ports()
                    .find(|&p| {
                        f.remote(f.port_id(f.switches[s as usize], p))
                            .is_some_and(|q| f.is_switch(f.port(q).node))
                    })
                    .map(|p| (s, p))
            })
            .unwrap();
        let link = f.port(f.port_id(f.switches[s as usize], p)).link.unwrap();
        let mut mask = FaultMask::none(&f);
        mask.fail_link(link);
        let rep = repair_trees(&f, &mask, &mut mc, &gs, tree_rule).unwrap();
        assert_eq!(rep.groups_cut, 1);
        assert!(check_mcast(&f, Some(&mask), &mc.mfts, Some(&gs), None).ok());
        if let TreeRule::Shortest = tree_rule {
            assert_eq!(rep.groups_rebuilt, 0, "{rep:?}");
            assert!(
                rep.entries_changed >= 2 && rep.entries_changed < total,
                "{rep:?} of {total}"
            );
        }
    }
}

/// A group routed alone with the trees in place counted (`route_groups_with`, what the SM
/// does on a join) gets the tree it gets when routed after them in one call, and so spreads
/// around them; routed alone without them it piles onto the first group's root and links.
/// The distance cache gives the same trees as a fresh computation, also after the faults
/// change under it.
#[test]
fn a_group_routed_alone_spreads_around_the_trees_in_place() {
    use routing::mcast::{route_groups_with, OtherTrees, TreeCache};
    for (spec, engine) in [("ktree 4 3", "updn"), ("torus 4x4 hcas=2", "minhop")] {
        let f = fabric(spec);
        let e = by_name(engine).unwrap();
        let opts = e.pin_choices(&f, &RouteOptions::default()).unwrap();
        let up = match e.rftr_base(&f, &opts) {
            Ok(Base::Turns(t)) => t.as_up_down().cloned(),
            _ => None,
        };
        let rule = TreeRule::of(up.as_ref());
        let mask = FaultMask::none(&f);
        let g = |mlid| Group {
            mlid,
            ..ipoib_group(&f)
        };
        let together = route_groups(&f, &mask, &[g(0xC000), g(0xC001)], rule).unwrap();
        let mut cache = TreeCache::default();
        let a = route_groups_with(&f, &mask, &[g(0xC000)], rule, &mut cache, None).unwrap();
        let mut rooted = vec![0u32; f.num_switches()];
        rooted[a.groups[0].root.unwrap() as usize] += 1;
        let others = OtherTrees {
            link_load: &a.link_load,
            rooted: &rooted,
        };
        let b = route_groups_with(&f, &mask, &[g(0xC001)], rule, &mut cache, Some(others)).unwrap();
        assert_eq!(
            b.mfts.groups[0], together.mfts.groups[1],
            "{spec}: alone with the others counted = routed after them"
        );
        assert_ne!(b.groups[0].root, a.groups[0].root, "{spec}: another root");
        let alone = route_groups(&f, &mask, &[g(0xC001)], rule).unwrap();
        assert_eq!(
            alone.mfts.groups[0].switches, a.mfts.groups[0].switches,
            "{spec}: without the others it repeats the first tree"
        );
        let shared =
            |x: &[u32], y: &[u32]| x.iter().zip(y).filter(|(p, q)| **p > 0 && **q > 0).count();
        let max_sum = |x: &[u32], y: &[u32]| x.iter().zip(y).map(|(p, q)| p + q).max().unwrap();
        assert!(
            shared(&a.link_load, &b.link_load) < shared(&a.link_load, &alone.link_load),
            "{spec}: fewer cables shared with the first tree"
        );
        assert!(
            max_sum(&a.link_load, &b.link_load) <= max_sum(&a.link_load, &alone.link_load),
            "{spec}: no busier link"
        );
        // The cache follows the faults: a dead cable of the first tree.
        let mut cut = FaultMask::none(&f);
        let l = (0..f.links.len())
            .find(|&l| a.link_load[l] > 0)
            .map(|l| fabric::LinkId(l as u32))
            .unwrap();
        cut.fail_link(l);
        let cached = route_groups_with(&f, &cut, &[g(0xC000)], rule, &mut cache, None).unwrap();
        let fresh = route_groups(&f, &cut, &[g(0xC000)], rule).unwrap();
        assert_eq!(
            cached.mfts.groups, fresh.mfts.groups,
            "{spec}: after the fault"
        );
        assert_eq!(
            cached.link_load[l.idx()],
            0,
            "{spec}: the dead cable is left out"
        );
    }
}
