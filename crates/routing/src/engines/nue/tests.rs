//! Nue's unit tests.

use super::*;
use fabric::{FaultMask, SwitchIdx};

fn generated(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .and_then(|s| s.generate())
        .unwrap()
}

/// Every pair delivered and no credit loop, by the independent checker.
fn assert_sound(f: &Fabric, mask: &FaultMask, r: &crate::tables::Routing, what: &str) {
    let rep = crate::cdg::check(f, r, Some(mask));
    assert_eq!(rep.pairs.ok, rep.pairs.checked, "{what}");
    assert!(rep.deadlock_free, "{what}");
}

/// The named orders keep the central root; the random-root orders draw, per layer and
/// per component, a destination switch of the layer in that component, the same one for
/// the same order and layer, and not always the same one across orders.
#[test]
fn random_root_orders_root_their_trees_at_a_destination_switch_of_the_layer() {
    // a 4x2 mesh cut between its second and third columns: two components
    let f = generated("mesh 4x2 hcas=1");
    let mut mask = FaultMask::none(&f);
    let column = |p: fabric::PortId| f.node(f.port(p).node).name.clone();
    for (i, k) in f.links.iter().enumerate() {
        let (a, b) = (column(k.a), column(k.b));
        if (a.starts_with("S_1_") && b.starts_with("S_2_"))
            || (a.starts_with("S_2_") && b.starts_with("S_1_"))
        {
            mask.fail_link(fabric::LinkId(i as u32));
        }
    }
    let t = Topo::new(&f, &mask);
    let net = LiveGraph::new(&t);
    assert_eq!(net.members.len(), 2);
    // a layer holding the even switches of both components
    let switches: Vec<usize> = (0..t.n).filter(|s| s % 2 == 0).collect();
    let plan = Layer {
        dests: Vec::new(),
        roots: centres(&net, &switches),
        switches: switches.clone(),
    };
    assert_eq!(plan.roots.len(), 2);
    for o in 0..ORDERS.len() {
        assert_eq!(roots_for(&net, &plan, o, 0), plan.roots);
    }
    let mut seen = std::collections::BTreeSet::new();
    for o in ROOTED..ROOTED + 16 {
        let r = roots_for(&net, &plan, o, 0);
        assert_eq!(r, roots_for(&net, &plan, o, 0), "order {o}");
        assert_eq!(r.len(), plan.roots.len());
        for (x, c) in r.iter().zip(&plan.roots) {
            assert!(switches.contains(x), "order {o}: root {x}");
            assert_eq!(net.comp[*x], net.comp[*c], "order {o}: root {x}");
        }
        seen.insert(r);
    }
    // two candidates per component: all four pairs come up
    assert_eq!(seen.len(), 4, "{seen:?}");
}

/// A switch with end ports routes its own LID as its first end port's LID (but at
/// itself, port 0): prefixes of that end port's paths. Switches without end ports (the
/// upper levels of a k-ary n-tree) are searched for. Either way every pair arrives and
/// the tables have no credit loop, at 1 and 2 VLs.
#[test]
fn switch_lids_follow_an_end_port_of_their_switch() {
    for spec in ["torus 4x4 hcas=2", "ktree 4 3"] {
        let f = generated(spec);
        let mask = FaultMask::none(&f);
        let t = Topo::new(&f, &mask);
        for vls in [1u8, 2] {
            let r = route(&t, vls as usize, 0, 1).routing;
            let mut followed = 0;
            for s in 0..t.n {
                let Some(e) = t.ends.iter().find(|e| e.sw as usize == s) else {
                    continue;
                };
                let (slid, elid) = (t.sw_lid[s], e.base);
                for x in 0..t.n {
                    let want = if x == s {
                        0
                    } else {
                        r.out_port(SwitchIdx(x as u32), elid)
                    };
                    assert_eq!(
                        r.out_port(SwitchIdx(x as u32), slid),
                        want,
                        "{spec}: switch {x} to {slid}"
                    );
                }
                followed += 1;
            }
            // every torus switch has end ports; a 4-ary 3-tree's 16 leaves of 48
            let leaves = if spec.starts_with("torus") { t.n } else { 16 };
            assert_eq!(followed, leaves, "{spec}");
            assert_sound(&f, &mask, &r, &format!("{spec} at {vls} VLs"));
        }
    }
}

/// `extra_hops_per_lid` against a walk of the tables: for every end-port LID, the hops
/// of every source switch's path above its breadth-first distance, times its end ports.
#[test]
fn extra_hops_per_lid_matches_a_walk_of_the_tables() {
    let f = generated("torus 8x8 hcas=1");
    let mask = FaultMask::none(&f);
    let t = Topo::new(&f, &mask);
    let net = LiveGraph::new(&t);
    let d = Dests::new(&t);
    let r = route(&t, 1, 0, 1).routing;
    let (n, stride) = (t.n, r.stride());
    let mut cols = vec![NO_PORT; stride * n];
    for &(_, lid, _) in &d.routed {
        for s in 0..n {
            cols[lid as usize * n + s] = r.out_port(SwitchIdx(s as u32), lid as u16);
        }
    }
    let got = extra_hops_per_lid(&net, &cols, &d.routed, stride);
    let mut some = 0;
    for &(ds, lid, _) in &d.routed {
        let dist = crate::engines::ranking::bfs_levels(&t, &[ds as usize]);
        let mut want = 0u64;
        for s in (0..n).filter(|&s| net.src_w[s] > 0) {
            let (mut x, mut hops) = (s, 0u32);
            while x != ds as usize {
                let a = t
                    .links(x)
                    .iter()
                    .find(|a| a.port == r.out_port(SwitchIdx(x as u32), lid as u16));
                x = a.expect("a switch-to-switch port").peer as usize;
                hops += 1;
            }
            want += (hops - dist[s]) as u64 * net.src_w[s];
        }
        assert_eq!(got[lid as usize], want, "LID {lid}");
        some += (want > 0) as usize;
    }
    // nue at 1 VL on an 8x8 torus takes detours, so the check is not all zeros
    assert!(some > 0);
}

/// How many orders a routing tried, from its first note ("... (the best of N orders)").
fn orders_tried(r: &Routed) -> usize {
    let note = &r.notes[0];
    let tail = &note[note.rfind("the best of ").expect("the order note") + 12..];
    tail.split(' ').next().unwrap().parse().unwrap()
}

/// `effort` multiplies the search: a fabric too large for random orders at effort 1
/// tries them at effort 4, a small one tries more of them; the tables stay complete,
/// free of credit loops and the same from run to run.
#[test]
fn more_effort_tries_more_orders_with_tables_as_sound() {
    for (spec, vls) in [("torus 16x16 hcas=2", 1usize), ("torus 4x4 hcas=2", 2)] {
        let f = generated(spec);
        let mask = FaultMask::none(&f);
        let t = Topo::new(&f, &mask);
        let one = route(&t, vls, 0, 1);
        let four = route(&t, vls, 0, 4);
        let (n1, n4) = (orders_tried(&one), orders_tried(&four));
        if spec.starts_with("torus 16") {
            // 768 LIDs x 256 switches is past EXTRA_WORK: the four named orders only
            assert_eq!(n1, ORDERS.len(), "{spec}");
        }
        assert!(n4 > n1, "{spec}: {n4} orders at effort 4, {n1} at effort 1");
        for r in [&one, &four] {
            assert_sound(&f, &mask, &r.routing, spec);
        }
        let again = route(&t, vls, 0, 4);
        assert_eq!(again.routing.lft, four.routing.lft, "{spec}: deterministic");
    }
}
