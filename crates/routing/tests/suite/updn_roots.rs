//! Up*/Down* and Down*/Up* root choice without a root file (see `engines::updn`): on fabrics
//! where every switch carries end ports the engines route a few candidate root sets and keep
//! the lowest max link load. Checked here on generated Dragonfly, Slim Fly, torus, mesh and
//! random fabrics: never worse than the former default root, deadlock-free and complete
//! (`cdg::check` on the tables), identical for any thread count, consistent with the ranking
//! RFTR gets, stable under faults that leave the chosen roots valid, and fat trees / root
//! files untouched.

use fabric::gen::{generate, TopoSpec};
use fabric::SwitchIdx;
use fabric::{Fabric, FaultMask, NO_PORT};
use routing::cdg;
use routing::engines::common::Topo;
use routing::engines::roots::{eval_candidates, EVAL_MAX_CANDIDATES, EVAL_MIN_CANDIDATES};
use routing::engines::{by_name, Dir, RouteOptions, Routed, UpDownRanking};
use routing::metrics::route_metrics;
use routing::Routing;
use std::collections::VecDeque;

fn fabric(spec: &str) -> Fabric {
    generate(&spec.parse::<TopoSpec>().unwrap()).unwrap()
}

fn route(f: &Fabric, engine: &str, mask: &FaultMask, opts: &RouteOptions) -> Routed {
    by_name(engine)
        .unwrap()
        .route_detailed(f, mask, opts)
        .unwrap_or_else(|e| panic!("{engine}: {e}"))
}

fn max_load(f: &Fabric, r: &Routing, mask: &FaultMask) -> u64 {
    route_metrics(f, r, Some(mask)).link_load.max
}

/// Switch-level BFS distances from switch index `s` over live links.
fn bfs(t: &Topo, s: usize) -> Vec<u32> {
    let mut d = vec![u32::MAX; t.n];
    d[s] = 0;
    let mut q = VecDeque::from([s]);
    while let Some(u) = q.pop_front() {
        for a in t.links(u) {
            let p = a.peer as usize;
            if d[p] == u32::MAX {
                d[p] = d[u] + 1;
                q.push_back(p);
            }
        }
    }
    d
}

/// The former default updn root: the graph centre (minimum eccentricity, lowest GUID).
fn graph_centre_guid(t: &Topo) -> u64 {
    (0..t.n)
        .filter(|&s| t.alive[s])
        .min_by_key(|&s| {
            (
                bfs(t, s).into_iter().filter(|&x| x != u32::MAX).max(),
                t.guid(s),
            )
        })
        .map(|s| t.guid(s))
        .unwrap()
}

/// The former default dnup reference on fabrics where every switch has end ports: the
/// lowest-GUID switch (dnup from it routed exactly as updn from that single root).
fn lowest_guid(t: &Topo) -> u64 {
    (0..t.n)
        .filter(|&s| t.alive[s])
        .map(|s| t.guid(s))
        .min()
        .unwrap()
}

fn assert_sound(f: &Fabric, r: &Routing, mask: &FaultMask, what: &str) {
    let c = cdg::check(f, r, Some(mask));
    assert!(c.deadlock_free, "{what}: credit loop");
    assert_eq!(c.pairs.ok, c.pairs.checked, "{what}: pairs not delivered");
    assert!(c.pairs.checked > 0, "{what}: nothing checked");
}

const FABRICS: &[&str] = &[
    "dragonfly 4 2 2",
    "slimfly 5",
    "torus 6x6 hcas=2",
    "torus 4x4x4 hcas=2",
    "mesh 4x4 hcas=2",
    "randreg 24 5 hcas=2 seed=3",
    "dragonfly 4 2 2 fail-links=3 fail-seed=7",
    "slimfly 5 fail-links=5 fail-seed=2",
];

/// The max link load of the tables before the balance pass: its note's "A -> B" (B being
/// `after`), or `after` when the pass moved nothing.
fn before_balance(notes: &[String], after: u64) -> u64 {
    notes
        .iter()
        .find_map(|n| {
            n.split_once("max link load ")
                .filter(|_| n.starts_with("balance pass"))
        })
        .map_or(after, |(_, figs)| {
            let (a, b) = figs.split_once(" -> ").expect("balance note figures");
            assert_eq!(b.parse::<u64>().unwrap(), after, "{figs}");
            a.parse::<u64>().unwrap()
        })
}

#[test]
fn chosen_roots_are_never_worse_than_the_former_default() {
    let mut improved = 0;
    for spec in FABRICS {
        let f = fabric(spec);
        let mask = FaultMask::none(&f);
        let t = Topo::live(&f, &mask).unwrap();
        for (engine, former) in [("updn", graph_centre_guid(&t)), ("dnup", lowest_guid(&t))] {
            let chosen = route(&f, engine, &mask, &RouteOptions::default());
            assert!(
                chosen.notes.iter().any(|n| n.contains("chosen by routing")),
                "{spec} {engine}: {:?}",
                chosen.notes
            );
            let old_opts = RouteOptions {
                root_guids: vec![former],
                ..Default::default()
            };
            let old = route(&f, "updn", &mask, &old_opts);
            let (new_max, old_max) = (
                max_load(&f, &chosen.routing, &mask),
                max_load(&f, &old.routing, &mask),
            );
            // The choice scores the candidates' tables before the balance pass (which then
            // lowers each by its own moves, so the final figures may cross by a few pairs:
            // torus 4x4x4 updn 448 against 444): the guarantee is on the scored tables.
            let (new_scored, old_scored) = (
                before_balance(&chosen.notes, new_max),
                before_balance(&old.notes, old_max),
            );
            assert!(
                new_scored <= old_scored,
                "{spec} {engine}: chosen roots give max load {new_scored}, former default {old_scored} (before the balance pass)"
            );
            if new_scored < old_scored {
                improved += 1;
            }
            eprintln!(
                "{spec} {engine}: max link load {old_scored} -> {new_scored} before the balance pass, {old_max} -> {new_max} after"
            );
            // the note reports the same figure the metrics find (before the balance pass,
            // whose own note then says where it took it: `before_balance` checks that end)
            assert!(
                chosen
                    .notes
                    .iter()
                    .take(2)
                    .any(|n| n.contains(&format!("max link load {new_scored},"))),
                "{spec} {engine}: {:?}",
                chosen.notes
            );
            assert_sound(&f, &chosen.routing, &mask, &format!("{spec} {engine}"));
        }
    }
    // The point of the exercise: most of these fabrics get a strictly better root choice.
    assert!(improved >= FABRICS.len(), "only {improved} improvements");
}

#[test]
fn dnup_and_updn_agree_where_every_switch_has_end_ports() {
    for spec in ["dragonfly 4 2 2", "torus 6x6 hcas=2"] {
        let f = fabric(spec);
        let mask = FaultMask::none(&f);
        let a = route(&f, "updn", &mask, &RouteOptions::default());
        let b = route(&f, "dnup", &mask, &RouteOptions::default());
        assert_eq!(a.routing.lft, b.routing.lft, "{spec}");
    }
}

#[test]
fn the_choice_does_not_depend_on_the_thread_count() {
    for spec in ["slimfly 5", "torus 4x4x4 hcas=2"] {
        let f = fabric(spec);
        let mask = FaultMask::none(&f);
        for engine in ["updn", "dnup"] {
            let lfts: Vec<Vec<u8>> = [1, 2, 5]
                .into_iter()
                .map(|n| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(n)
                        .build()
                        .unwrap()
                        .install(|| route(&f, engine, &mask, &RouteOptions::default()))
                        .routing
                        .lft
                })
                .collect();
            assert_eq!(lfts[0], lfts[1], "{spec} {engine}");
            assert_eq!(lfts[0], lfts[2], "{spec} {engine}");
        }
    }
}

#[test]
fn faulty_fabrics_stay_deadlock_free_and_complete() {
    for spec in ["torus 6x6 hcas=2", "dragonfly 4 2 2", "slimfly 5"] {
        let f = fabric(spec);
        // fail a few switch-to-switch links by hand (keeping the fabric connected)
        let mut mask = FaultMask::none(&f);
        let mut failed = 0;
        for (l, link) in f.links.iter().enumerate() {
            let (a, b) = (f.port(link.a).node, f.port(link.b).node);
            if !(f.is_switch(a) && f.is_switch(b)) || l % 7 != 3 {
                continue;
            }
            let mut m = mask.clone();
            m.fail_link(fabric::LinkId(l as u32));
            let t = Topo::new(&f, &m);
            if bfs(&t, 0).iter().all(|&d| d != u32::MAX) {
                mask = m;
                failed += 1;
            }
            if failed == 4 {
                break;
            }
        }
        assert_eq!(failed, 4, "{spec}");
        for engine in ["updn", "dnup"] {
            let r = route(&f, engine, &mask, &RouteOptions::default());
            assert_sound(&f, &r.routing, &mask, &format!("{spec} {engine} 4 faults"));
        }
    }
}

#[test]
fn faults_keep_the_fault_free_roots_while_they_stay_valid() {
    let f = fabric("torus 6x6 hcas=2");
    let none = FaultMask::none(&f);
    let opts = RouteOptions::default();
    let (rk0, _) = UpDownRanking::for_updn(&f, &none, &opts).unwrap();
    let root_nodes: Vec<fabric::NodeId> = rk0.roots.iter().map(|&s| f.switches[s]).collect();
    // a switch-to-switch link away from every root
    let l = (0..f.links.len())
        .find(|&l| {
            let (a, b) = (f.port(f.links[l].a).node, f.port(f.links[l].b).node);
            f.is_switch(a) && f.is_switch(b) && !root_nodes.contains(&a) && !root_nodes.contains(&b)
        })
        .unwrap();
    let mut mask = FaultMask::none(&f);
    mask.fail_link(fabric::LinkId(l as u32));
    let (rk1, notes) = UpDownRanking::for_updn(&f, &mask, &opts).unwrap();
    assert!(notes[0].contains("fault-free fabric kept"), "{notes:?}");
    assert_eq!(rk1.roots, rk0.roots);
    for engine in ["updn", "dnup"] {
        let r = route(&f, engine, &mask, &opts);
        assert!(r.notes.iter().any(|n| n.contains("fault-free fabric kept")));
        assert_sound(&f, &r.routing, &mask, &format!("{engine} link fault"));
    }
    // a dead root switch: chosen again on the live fabric
    let mut mask = FaultMask::none(&f);
    mask.fail_node(root_nodes[0]);
    let (rk2, notes) = UpDownRanking::for_updn(&f, &mask, &opts).unwrap();
    assert!(notes[0].contains("chosen by routing"), "{notes:?}");
    assert!(!rk2.roots.contains(&rk0.roots[0]));
    for engine in ["updn", "dnup"] {
        let r = route(&f, engine, &mask, &opts);
        assert_sound(
            &f,
            &r.routing,
            &mask,
            &format!("{engine} root switch fault"),
        );
    }
}

#[test]
fn rftr_gets_the_ranking_the_engine_routed_with() {
    for spec in ["dragonfly 4 2 2", "slimfly 5", "torus 6x6 hcas=2"] {
        let f = fabric(spec);
        let mask = FaultMask::none(&f);
        let opts = RouteOptions::default();
        let r = route(&f, "updn", &mask, &opts).routing;
        let (rk, notes) = UpDownRanking::for_updn(&f, &mask, &opts).unwrap();
        assert!(notes[0].contains("chosen by routing"), "{notes:?}");
        // every CA -> CA path follows the ranking's turn rule (no down -> up turn)
        let mut turns = 0u64;
        for &src in &f.end_ports {
            let sp = f.attached_switch(src).unwrap();
            for &dst in &f.end_ports {
                if dst == src {
                    continue;
                }
                let lid = f.port(dst).lid;
                let mut node = f.port(sp).node;
                let mut prev: Option<fabric::ChannelId> = None;
                for _ in 0..=f.num_switches() {
                    let s = f.switch_of(node).unwrap().idx();
                    let out = r.out_port(SwitchIdx(s as u32), lid);
                    assert_ne!(out, NO_PORT, "{spec}: no route");
                    let c = f.out_channel(f.port_id(node, out)).unwrap();
                    if let Some(p) = prev {
                        assert!(rk.is_legal_turn(&f, p, c), "{spec}: down -> up turn");
                        turns += 1;
                    }
                    let next = f.port(f.channel_dst(c)).node;
                    if !f.is_switch(next) {
                        assert_eq!(f.channel_dst(c), dst, "{spec}: misdelivered");
                        break;
                    }
                    prev = Some(c);
                    node = next;
                }
            }
        }
        assert!(turns > 0);
        // and the ranking has up channels at all
        let ups = (0..2 * f.links.len() as u32)
            .filter(|&c| rk.channel_dir(&f, fabric::ChannelId(c)) == Dir::Up)
            .count();
        assert!(ups > 0);
    }
}

#[test]
fn fat_trees_and_root_files_skip_the_evaluation() {
    // fat tree: roots from the hints, as before
    let f = fabric("ktree 4 3");
    let mask = FaultMask::none(&f);
    let t = Topo::live(&f, &mask).unwrap();
    let hinted: Vec<u64> = f.hints.roots.iter().map(|&n| f.node(n).guid).collect();
    assert!(!hinted.is_empty());
    for engine in ["updn", "dnup"] {
        let r = route(&f, engine, &mask, &RouteOptions::default());
        assert!(
            r.notes.iter().all(|n| !n.contains("chosen by routing")),
            "{engine}: {:?}",
            r.notes
        );
    }
    let by_hints = route(&f, "updn", &mask, &RouteOptions::default());
    let by_file = route(
        &f,
        "updn",
        &mask,
        &RouteOptions {
            root_guids: hinted,
            ..Default::default()
        },
    );
    assert_eq!(by_hints.routing.lft, by_file.routing.lft);
    assert!(eval_candidates(&t) > 1); // small enough: only the tree rule kept it out
                                      // a root file on a torus: used as given, no evaluation
    let f = fabric("torus 4x4 hcas=2");
    let mask = FaultMask::none(&f);
    let t = Topo::live(&f, &mask).unwrap();
    let r = route(
        &f,
        "updn",
        &mask,
        &RouteOptions {
            root_guids: vec![t.guid(5)],
            ..Default::default()
        },
    );
    assert!(r.notes[0].contains("root GUID list"), "{:?}", r.notes);
}

#[test]
fn big_fabrics_keep_the_graph_centre() {
    // 1,600 switches, 3,200 HCAs: one candidate's work is above the limit
    let f = fabric("torus 40x40 hcas=2");
    let mask = FaultMask::none(&f);
    let t = Topo::live(&f, &mask).unwrap();
    assert_eq!(eval_candidates(&t), 1);
    let (_, notes) = UpDownRanking::for_updn(&f, &mask, &RouteOptions::default()).unwrap();
    assert!(notes[0].contains("graph centre"), "{notes:?}");
    // a small one gets between 8 and 64 candidates
    let f = fabric("torus 6x6 hcas=2");
    let t = Topo::live(&f, &FaultMask::none(&f)).unwrap();
    let k = eval_candidates(&t);
    assert!(
        (EVAL_MIN_CANDIDATES..=EVAL_MAX_CANDIDATES).contains(&k),
        "{k}"
    );
}
