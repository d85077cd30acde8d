//! Known-answer tests of the path walker, the CDG deadlock check and the route metrics.

use fabric::SwitchIdx;

use fabric::rng::Rng;
use fabric::{
    BuildOptions, Fabric, FabricBuilder, FaultMask, Lid, LinkId, NodeId, NodeKind, PortId, Speed,
    Width, NO_PORT,
};
use routing::cdg::{build_cdg, check, cyclic_sccs, scc};
use routing::metrics::{
    ebb, ebb_flows, link_load_stats, parse_pattern, route_metrics, EbbOptions, EbbPattern,
};
use routing::walk::{walk_all, walk_all_with, walk_pair, Failure, WalkOptions};
use routing::{PathSl, Routing};
use std::collections::{BTreeMap, BTreeSet};

// ---------------------------------------------------------------------------------------------
// Fabric and table builders
// ---------------------------------------------------------------------------------------------

fn link(b: &mut FabricBuilder, a: NodeId, pa: u8, c: NodeId, pc: u8) {
    b.connect(a, pa, c, pc, Width::X4, Speed::Edr).unwrap();
}

/// `n` switches; switch `i` has port 1 → switch i+1 (port 2 there), `hosts` hosts on ports 3...
/// With `wrap` the last switch links back to the first (a ring), else a line.
fn chain(n: usize, hosts: usize, wrap: bool, lmc: u8) -> Fabric {
    let mut b = FabricBuilder::new();
    let sw: Vec<NodeId> = (0..n)
        .map(|i| {
            b.add_node(NodeKind::Switch, 8, 0x100 + i as u64, format!("S{i}"), "")
                .unwrap()
        })
        .collect();
    let links = if wrap { n } else { n - 1 };
    for i in 0..links {
        link(&mut b, sw[i], 1, sw[(i + 1) % n], 2);
    }
    for (i, &s) in sw.iter().enumerate() {
        for j in 0..hosts {
            let h = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    0x10000 + (i * 16 + j) as u64 * 4,
                    format!("H{i}_{j}"),
                    "",
                )
                .unwrap();
            link(&mut b, h, 1, s, 3 + j as u8);
        }
    }
    b.build_with(BuildOptions {
        lmc,
        reassign_lids: false,
    })
    .unwrap()
}

/// End-port-owned LIDs with their port.
fn ep_lids(f: &Fabric) -> Vec<(Lid, PortId)> {
    (1..f.lid_owner.len())
        .filter_map(|l| {
            let p = f.lid_port(l as Lid)?;
            (!f.is_switch(f.port(p).node)).then_some((l as Lid, p))
        })
        .collect()
}

fn sw_of(f: &Fabric, p: PortId) -> (usize, u8) {
    let r = f.remote(p).unwrap();
    (f.switch_of(f.port(r).node).unwrap().idx(), f.port(r).num)
}

/// Ring routed clockwise (port 1) except at the destination's own switch.
fn clockwise(f: &Fabric) -> Routing {
    let mut r = Routing::empty(f);
    for (lid, p) in ep_lids(f) {
        let (sd, q) = sw_of(f, p);
        for s in 0..f.num_switches() {
            r.lft_of_mut(SwitchIdx(s as u32))[lid as usize] = if s == sd { q } else { 1 };
        }
    }
    r
}

/// A tiny shortest-path builder: BFS from the destination's switch, ties broken by
/// `lid mod #candidates` over the candidate ports in ascending order.
fn bfs_routing(f: &Fabric) -> Routing {
    let mut r = Routing::empty(f);
    let ns = f.num_switches();
    for (lid, p) in ep_lids(f) {
        let (sd, q) = sw_of(f, p);
        let mut dist = vec![u32::MAX; ns];
        dist[sd] = 0;
        let mut queue = std::collections::VecDeque::from([sd]);
        while let Some(s) = queue.pop_front() {
            for &c in f.switch_links(SwitchIdx(s as u32)) {
                let t = f.dst_switch(c).unwrap().idx();
                if dist[t] == u32::MAX {
                    dist[t] = dist[s] + 1;
                    queue.push_back(t);
                }
            }
        }
        for s in 0..ns {
            let port = if s == sd {
                q
            } else if dist[s] == u32::MAX {
                NO_PORT
            } else {
                let cands: Vec<u8> = f
                    .switch_links(SwitchIdx(s as u32))
                    .iter()
                    .filter(|&&c| {
                        let t = f.dst_switch(c).unwrap().idx();
                        dist[t] + 1 == dist[s]
                    })
                    .map(|&c| f.port(f.channel_src(c)).num)
                    .collect();
                cands[lid as usize % cands.len()]
            };
            r.lft_of_mut(SwitchIdx(s as u32))[lid as usize] = port;
        }
    }
    r
}

/// k-ary 3-level fat tree (k even): k pods of k/2 edge and k/2 aggregation switches, (k/2)²
/// cores, k/2 hosts per edge switch. Levels: core 0, aggregation 1, edge 2.
fn fat_tree3(k: usize) -> Fabric {
    let h = k / 2;
    let mut b = FabricBuilder::new();
    let mut level = Vec::new();
    let mut guid = 0x1000u64;
    let mut add = |b: &mut FabricBuilder, kind, np: usize, name: String, lv: u32| {
        guid += 4;
        level.push(lv);
        b.add_node(kind, np as u8, guid, name, "").unwrap()
    };
    let core: Vec<NodeId> = (0..h * h)
        .map(|c| {
            add(
                &mut b,
                NodeKind::Switch,
                k,
                format!("C{}_{}", c / h, c % h),
                0,
            )
        })
        .collect();
    for p in 0..k {
        let aggs: Vec<NodeId> = (0..h)
            .map(|a| add(&mut b, NodeKind::Switch, k, format!("A{p}_{a}"), 1))
            .collect();
        for (a, &ag) in aggs.iter().enumerate() {
            for j in 0..h {
                link(
                    &mut b,
                    ag,
                    (h + 1 + j) as u8,
                    core[a * h + j],
                    (p + 1) as u8,
                );
            }
        }
        for e in 0..h {
            let es = add(&mut b, NodeKind::Switch, k, format!("E{p}_{e}"), 2);
            for (a, &ag) in aggs.iter().enumerate() {
                link(&mut b, es, (h + 1 + a) as u8, ag, (e + 1) as u8);
            }
            for i in 0..h {
                let hn = add(&mut b, NodeKind::Ca, 1, format!("H{p}_{e}_{i}"), u32::MAX);
                link(&mut b, hn, 1, es, (i + 1) as u8);
            }
        }
    }
    b.hints.level = level;
    b.hints.kind = format!("fat tree k={k}");
    b.build().unwrap()
}

/// Destination-mod-k up/down routing of [`fat_tree3`].
fn dmodk(f: &Fabric, k: usize) -> Routing {
    let h = k / 2;
    let mut r = Routing::empty(f);
    let parse =
        |name: &str| -> Vec<usize> { name[1..].split('_').map(|x| x.parse().unwrap()).collect() };
    let sw: Vec<(char, Vec<usize>)> = f
        .switches
        .iter()
        .map(|&n| {
            let name = &f.node(n).name;
            (name.as_bytes()[0] as char, parse(name))
        })
        .collect();
    for (lid, p) in ep_lids(f) {
        let v = parse(&f.node(f.port(p).node).name);
        let (dp, de, di) = (v[0], v[1], v[2]);
        let g = (dp * h + de) * h + di;
        for (s, (kind, c)) in sw.iter().enumerate() {
            let port = match kind {
                'C' => dp + 1,
                'A' if c[0] == dp => de + 1,
                'A' => h + 1 + (g / h) % h,
                _ if c[0] == dp && c[1] == de => di + 1,
                _ => h + 1 + g % h,
            };
            r.lft_of_mut(SwitchIdx(s as u32))[lid as usize] = port as u8;
        }
    }
    r
}

// ---------------------------------------------------------------------------------------------
// CDG: rings, datelines, trees
// ---------------------------------------------------------------------------------------------

#[test]
fn ring_clockwise_has_one_cycle_with_four_hop_witness() {
    let f = chain(4, 2, true, 0);
    let r = clockwise(&f);
    let rep = check(&f, &r, None);
    assert!(!rep.deadlock_free);
    assert_eq!(rep.cycles.len(), 1);
    let c = &rep.cycles[0];
    assert_eq!(c.witness.len(), 4);
    assert_eq!(c.vertices, 4);
    assert_eq!(c.switches, 4);
    assert_eq!(c.vls, vec![0]);
    let sws: BTreeSet<&str> = c.witness.iter().map(|h| h.switch.as_str()).collect();
    assert_eq!(sws, BTreeSet::from(["S0", "S1", "S2", "S3"]));
    for (i, hop) in c.witness.iter().enumerate() {
        assert_eq!(hop.port, 1, "clockwise port");
        assert_eq!(hop.vl, 0);
        let next = &c.witness[(i + 1) % 4];
        assert_eq!(hop.to_switch, next.switch, "witness hops are consecutive");
        let ex = hop
            .example
            .as_ref()
            .expect("an example pair for every witness edge");
        // The example's route really uses this hop and the next one.
        let src = f.node_by_name(&ex.src).unwrap();
        let w = walk_pair(&f, &r, None, f.port_id(src, ex.src_port), ex.dlid);
        let pos = w.channels.iter().position(|&ch| ch == hop.channel).unwrap();
        assert_eq!(w.channels[pos + 1], next.channel);
    }
    assert!(rep.pairs.ok == rep.pairs.checked && rep.pairs.checked == 8 * 7);
    assert_eq!(rep.hop_histogram, vec![8, 16, 16, 16]);
    // JSON keys promised to the CLI.
    let v = serde_json::to_value(&rep).unwrap();
    for k in ["deadlock_free", "cycles", "unreachable_pairs", "loops"] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    assert_eq!(v["cycles"][0]["witness"].as_array().unwrap().len(), 4);
}

/// Per-destination SL = destination switch k; at switch t the VL is 0 while the route still
/// has to cross the dateline (t > k), 1 afterwards.
fn dateline(f: &Fabric, r: &mut Routing) {
    let mut sl = vec![0u8; r.stride()];
    for (lid, p) in ep_lids(f) {
        sl[lid as usize] = sw_of(f, p).0 as u8;
    }
    r.path_sl = PathSl::PerDest(sl);
    // End ports put every SL on VL 0.
    for &p in &f.end_ports {
        let port = f.port(p);
        for k in 0..4u8 {
            r.sl2vl.set(port.node, 0, port.num, k, 0);
        }
    }
    for (t, &n) in f.switches.iter().enumerate() {
        let np = f.node(n).nports;
        for i in 0..=np {
            for o in 0..=np {
                for k in 0..4u8 {
                    r.sl2vl.set(n, i, o, k, u8::from(t as u8 <= k));
                }
            }
        }
    }
}

#[test]
fn ring_with_dateline_vl_is_deadlock_free() {
    let f = chain(4, 2, true, 0);
    let mut r = clockwise(&f);
    dateline(&f, &mut r);
    let rep = check(&f, &r, None);
    assert!(rep.deadlock_free, "{:?}", rep.cycles);
    assert!(rep.ok());
    assert_eq!(rep.cdg.vls_used, vec![0, 1]);
    assert_eq!(rep.cdg.sls_used, vec![0, 1, 2, 3]);
    // Broken dateline: every VL 1 except one switch → cycle on VL 1 again.
    for (t, &n) in f.switches.iter().enumerate() {
        if t == 0 {
            continue;
        }
        let np = f.node(n).nports;
        for i in 0..=np {
            for o in 0..=np {
                for k in 0..4u8 {
                    r.sl2vl.set(n, i, o, k, 1);
                }
            }
        }
    }
    let rep = check(&f, &r, None);
    assert!(!rep.deadlock_free);
    // Switch 0 still gives VL 1 to routes that do not cross (t <= k always holds for t = 0),
    // so the whole ring is one VL-1 cycle.
    assert_eq!(rep.cycles.len(), 1);
    assert!(rep.cycles[0].witness.iter().all(|h| h.vl == 1));
}

#[test]
fn line_and_tree_are_acyclic_with_known_hops() {
    let f = chain(4, 1, false, 0);
    let r = bfs_routing(&f);
    let rep = check(&f, &r, None);
    assert!(rep.ok(), "{rep:?}");
    assert_eq!(rep.hop_histogram, vec![0, 6, 4, 2]);
    assert_eq!(rep.pairs.checked, 12);

    let f = fat_tree3(4);
    let r = dmodk(&f, 4);
    let rep = check(&f, &r, None);
    assert!(rep.ok());
    assert_eq!(rep.pairs.checked, 16 * 15);
    // same edge switch: 0 hops; same pod: 2; other pod: 4.
    assert_eq!(rep.hop_histogram, vec![16, 0, 32, 0, 192]);
}

#[test]
fn broken_tables_report_unreachable_loops_and_black_holes() {
    // Line S0-S1-S2-S3, one host each (Hi on Si, port 3).
    let f = chain(4, 1, false, 0);
    let mut r = bfs_routing(&f);
    let lid_of = |i: usize| {
        let n = f.node_by_name(&format!("H{i}_0")).unwrap();
        f.port(f.port_id(n, 1)).lid
    };
    let (h0, h1, h2, h3) = (lid_of(0), lid_of(1), lid_of(2), lid_of(3));
    // Unreachable: S1 has no entry for H2 → sources H0 (via S1) and H1.
    r.lft_of_mut(SwitchIdx(1))[h2 as usize] = NO_PORT;
    // Loop: S2 sends H3 back to S1 → sources H0, H1, H2 loop.
    r.lft_of_mut(SwitchIdx(2))[h3 as usize] = 2;
    // Black hole: S3 sends H0 to an unconnected port; S3 sends H1 beyond its port count.
    r.lft_of_mut(SwitchIdx(3))[h0 as usize] = 5;
    r.lft_of_mut(SwitchIdx(3))[h1 as usize] = 9;
    // Misdelivery: S0 sends H1's LID to H0.
    r.lft_of_mut(SwitchIdx(0))[h1 as usize] = 3;

    let w = walk_all(&f, &r, None);
    assert_eq!(w.pairs_checked, 12);
    assert_eq!(w.unreachable_pairs.count, 2);
    assert_eq!(w.loops.count, 3);
    assert_eq!(w.black_holes.count, 2);
    assert_eq!(w.failed(Failure::Unconnected), 1);
    assert_eq!(w.failed(Failure::BeyondPortCount), 1);
    assert_eq!(w.misdelivered.count, 1);
    assert_eq!(w.pairs_ok, 12 - 2 - 3 - 2 - 1);
    let ex: BTreeSet<(String, Lid)> = w
        .unreachable_pairs
        .examples
        .iter()
        .map(|e| (e.src.clone(), e.dlid))
        .collect();
    assert_eq!(
        ex,
        BTreeSet::from([("H0_0".to_string(), h2), ("H1_0".to_string(), h2)])
    );
    assert!(w
        .unreachable_pairs
        .examples
        .iter()
        .all(|e| e.at_switch.as_deref() == Some("S1") && e.at_port.is_none()));
    let lp = &w.loops.examples[0];
    assert_eq!(lp.dlid, h3);
    assert!(matches!(lp.at_switch.as_deref(), Some("S1") | Some("S2")));
    let bh: BTreeSet<(String, Failure, Option<u8>)> = w
        .black_holes
        .examples
        .iter()
        .map(|e| (e.at_switch.clone().unwrap(), e.failure, e.at_port))
        .collect();
    assert_eq!(
        bh,
        BTreeSet::from([
            ("S3".to_string(), Failure::Unconnected, Some(5)),
            ("S3".to_string(), Failure::BeyondPortCount, Some(9))
        ])
    );
    let rep = check(&f, &r, None);
    // The forwarding loop S1 <-> S2 is a credit loop as well.
    assert!(!rep.deadlock_free);
    assert_eq!(rep.cycles.len(), 1);
    let wit: BTreeSet<&str> = rep.cycles[0]
        .witness
        .iter()
        .map(|h| h.switch.as_str())
        .collect();
    assert_eq!(wit, BTreeSet::from(["S1", "S2"]));
    assert_eq!(rep.unreachable_pairs.count, 2);
    assert_eq!(rep.loops.count, 3);
    let v = serde_json::to_value(&rep).unwrap();
    assert_eq!(v["loops"]["count"], 3);
    assert_eq!(v["unreachable_pairs"]["examples"][0]["failure"], "no_route");
}

#[test]
fn fault_mask_turns_dead_links_into_black_holes() {
    let f = chain(4, 2, true, 0);
    let r = clockwise(&f);
    // Kill link S1 -> S2 (link 1 of the ring).
    let mut m = FaultMask::none(&f);
    m.fail_link(LinkId(1));
    let w = walk_all(&f, &r, Some(&m));
    // Routes crossing S1->S2: sources on S1 to S2, S3, S0 (2 hosts x 6 dests); S0 to S2, S3
    // (2 x 4); S3 to S2 (S3,S0,S1,S2: 2 x 2).
    assert_eq!(w.failed(Failure::DeadChannel), 12 + 8 + 4);
    assert_eq!(w.black_holes.count, 24);
    assert_eq!(w.pairs_ok, 56 - 24);
    assert!(w
        .black_holes
        .examples
        .iter()
        .all(|e| e.at_switch.as_deref() == Some("S1") && e.at_port == Some(1)));
    assert_eq!(w.pairs_excluded, 0);
    // Killing a host removes its pairs from the universe.
    let mut m2 = FaultMask::none(&f);
    m2.fail_node(f.node_by_name("H0_0").unwrap());
    let w2 = walk_all(&f, &r, Some(&m2));
    assert_eq!(w2.pairs_total, 56);
    assert_eq!(w2.pairs_checked, 7 * 6);
    assert_eq!(w2.pairs_excluded, 14);
    assert!(w2.all_ok());
    // The dead link also cuts the ring's CDG cycle.
    let rep = check(&f, &r, Some(&m));
    assert!(rep.deadlock_free);
}

// ---------------------------------------------------------------------------------------------
// Cross-checks against brute force per pair
// ---------------------------------------------------------------------------------------------

/// A random irregular fabric with random (often broken) tables, LMC 1.
fn random_case(seed: u64) -> (Fabric, Routing) {
    let mut rng = Rng::new(seed);
    let ns = 3 + rng.below(6) as usize;
    let mut b = FabricBuilder::new();
    let sw: Vec<NodeId> = (0..ns)
        .map(|i| {
            b.add_node(NodeKind::Switch, 8, 0x100 + i as u64, format!("S{i}"), "")
                .unwrap()
        })
        .collect();
    let mut next_port = vec![1u8; ns];
    for i in 1..ns {
        let j = rng.below(i as u64) as usize;
        link(&mut b, sw[i], next_port[i], sw[j], next_port[j]);
        next_port[i] += 1;
        next_port[j] += 1;
    }
    for _ in 0..ns {
        let (i, j) = (rng.below(ns as u64) as usize, rng.below(ns as u64) as usize);
        if i != j && next_port[i] < 7 && next_port[j] < 7 {
            link(&mut b, sw[i], next_port[i], sw[j], next_port[j]);
            next_port[i] += 1;
            next_port[j] += 1;
        }
    }
    let mut hid = 0;
    for i in 0..ns {
        while next_port[i] <= 8 && rng.below(3) > 0 {
            let h = b
                .add_node(NodeKind::Ca, 1, 0x10000 + hid * 4, format!("H{hid}"), "")
                .unwrap();
            hid += 1;
            link(&mut b, h, 1, sw[i], next_port[i]);
            next_port[i] += 1;
        }
    }
    let f = b
        .build_with(BuildOptions {
            lmc: 1,
            reassign_lids: false,
        })
        .unwrap();
    let mut r = bfs_routing(&f);
    for e in r.lft.iter_mut() {
        match rng.below(12) {
            0 => *e = NO_PORT,
            1 => *e = 1 + rng.below(9) as u8,
            2 => *e = 0,
            _ => {}
        }
    }
    (f, r)
}

#[test]
fn walk_all_agrees_with_per_pair_walks() {
    for seed in 0..40 {
        let (f, r) = random_case(seed);
        let mut m = FaultMask::none(&f);
        if seed % 3 == 0 && !f.links.is_empty() {
            m.fail_link(LinkId((seed as u32) % f.links.len() as u32));
        }
        let mask = (seed % 2 == 0).then_some(&m);
        let w = walk_all_with(
            &f,
            &r,
            mask,
            WalkOptions {
                max_examples: 3,
                loads: true,
            },
        );
        let mut fails: BTreeMap<Failure, u64> = BTreeMap::new();
        let mut hops_all: Vec<u64> = Vec::new();
        let mut load = vec![0u64; f.links.len() * 2];
        let mut checked = 0;
        let live = |p: PortId| {
            let c = f.out_channel(p).unwrap();
            mask.is_none_or(|m| m.channel_alive(&f, c) && !m.node_dead(f.port(p).node))
        };
        for &src in &f.end_ports {
            for (lid, dp) in ep_lids(&f) {
                if dp == src || !live(src) || !live(dp) {
                    continue;
                }
                checked += 1;
                let pw = walk_pair(&f, &r, mask, src, lid);
                match pw.outcome {
                    routing::walk::Outcome::Delivered => {
                        let h = pw.sw_hops as usize;
                        if hops_all.len() <= h {
                            hops_all.resize(h + 1, 0);
                        }
                        hops_all[h] += 1;
                        if f.port(dp).lid == lid {
                            for c in &pw.channels {
                                load[c.idx()] += 1;
                            }
                        }
                    }
                    routing::walk::Outcome::Failed { failure, .. } => {
                        *fails.entry(failure).or_default() += 1
                    }
                }
            }
        }
        assert_eq!(w.pairs_checked, checked, "seed {seed}");
        let got: BTreeMap<Failure, u64> = w.failures.iter().copied().collect();
        assert_eq!(got, fails, "seed {seed}");
        assert_eq!(w.hops_all, hops_all, "seed {seed}");
        assert_eq!(w.channel_load, load, "seed {seed}");
        for ex in w.loops.examples.iter().chain(&w.black_holes.examples) {
            let pw = walk_pair(&f, &r, mask, ex.src_port_id, ex.dlid);
            assert!(!pw.delivered());
        }
    }
}

/// Brute-force CDG: walk every pair, apply SL2VL at every switch.
fn naive_cdg_edges(f: &Fabric, r: &Routing) -> BTreeSet<((u32, u8), (u32, u8))> {
    let mut edges = BTreeSet::new();
    for (si, &src) in f.end_ports.iter().enumerate() {
        for (lid, dp) in ep_lids(f) {
            if dp == src {
                continue;
            }
            let sl = r.path_sl.get(si, lid);
            let pw = walk_pair(f, r, None, src, lid);
            let mut prev: Option<(u32, u8)> = None;
            for w in pw.channels.windows(2) {
                // w[1] leaves the switch that w[0] enters.
                let inp = f.port(f.channel_dst(w[0]));
                let out = f.port(f.channel_src(w[1]));
                let vl = r.sl2vl.vl(inp.node, inp.num, out.num, sl);
                let to_sw = f.is_switch(f.port(f.channel_dst(w[1])).node);
                let cur = to_sw.then_some((w[1].0, vl));
                if let (Some(p), Some(c)) = (prev, cur) {
                    edges.insert((p, c));
                }
                prev = cur;
            }
        }
    }
    edges
}

fn cdg_edges(f: &Fabric, r: &Routing) -> BTreeSet<((u32, u8), (u32, u8))> {
    let g = build_cdg(f, r, None);
    let mut out = BTreeSet::new();
    for u in 0..g.num_vertices() as u32 {
        for &v in g.successors(u) {
            let (cu, lu) = g.vertex(u);
            let (cv, lv) = g.vertex(v);
            out.insert(((cu.0, lu), (cv.0, lv)));
        }
    }
    let _ = f;
    out
}

#[test]
fn cdg_matches_brute_force_for_every_sl_kind() {
    for seed in 0..24 {
        let (f, r0) = random_case(seed + 100);
        let mut rng = Rng::new(seed);
        // Loop-free tables so the brute force terminates in the same way.
        let mut r = bfs_routing(&f);
        if seed % 4 == 3 {
            r = r0;
        }
        r.path_sl = match seed % 3 {
            0 => PathSl::Uniform(rng.below(3) as u8),
            1 => PathSl::PerDest((0..r.stride()).map(|_| rng.below(4) as u8).collect()),
            _ => PathSl::PerPair {
                stride: r.stride(),
                sl: (0..r.stride() * f.end_ports.len())
                    .map(|_| rng.below(4) as u8)
                    .collect(),
            },
        };
        for &n in f.switches.iter() {
            if rng.below(2) == 0 {
                continue;
            }
            let np = f.node(n).nports;
            for i in 0..=np {
                for o in 0..=np {
                    for sl in 0..4 {
                        r.sl2vl.set(n, i, o, sl, rng.below(3) as u8);
                    }
                }
            }
        }
        assert_eq!(cdg_edges(&f, &r), naive_cdg_edges(&f, &r), "seed {seed}");
    }
}

// ---------------------------------------------------------------------------------------------
// SCC finder vs petgraph
// ---------------------------------------------------------------------------------------------

mod scc_prop {
    use super::*;
    use proptest::prelude::*;

    fn csr(n: usize, edges: &[(u32, u32)]) -> (Vec<usize>, Vec<u32>) {
        let mut e: Vec<(u32, u32)> = edges
            .iter()
            .map(|&(a, b)| (a % n as u32, b % n as u32))
            .collect();
        e.sort_unstable();
        let mut off = vec![0usize; n + 1];
        for &(a, _) in &e {
            off[a as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        (off, e.into_iter().map(|x| x.1).collect())
    }

    proptest! {
        #[test]
        fn same_components_as_petgraph(n in 1usize..60, edges in prop::collection::vec((0u32..60, 0u32..60), 0..200)) {
            let (off, tgt) = csr(n, &edges);
            let (comp, count) = scc(n, &off, &tgt);
            let mut g = petgraph::graph::DiGraph::<(), ()>::new();
            let nodes: Vec<_> = (0..n).map(|_| g.add_node(())).collect();
            for a in 0..n {
                for &b in &tgt[off[a]..off[a + 1]] {
                    g.add_edge(nodes[a], nodes[b as usize], ());
                }
            }
            let mut theirs: Vec<Vec<u32>> = petgraph::algo::tarjan_scc(&g)
                .into_iter()
                .map(|c| { let mut v: Vec<u32> = c.iter().map(|x| x.index() as u32).collect(); v.sort_unstable(); v })
                .collect();
            theirs.sort();
            let mut ours: Vec<Vec<u32>> = vec![Vec::new(); count];
            for (v, &c) in comp.iter().enumerate() {
                ours[c as usize].push(v as u32);
            }
            ours.sort();
            prop_assert_eq!(&ours, &theirs);
            // Cyclic components: size > 1 or a self-loop.
            let cyc = cyclic_sccs(n, &off, &tgt);
            let expect: Vec<Vec<u32>> = theirs.into_iter().filter(|c| c.len() > 1 || tgt[off[c[0] as usize]..off[c[0] as usize + 1]].contains(&c[0])).collect();
            let mut cyc_sorted = cyc.clone();
            cyc_sorted.sort();
            prop_assert_eq!(cyc_sorted, expect);
            // Witness cycles are real cycles inside their component.
            for c in &cyc {
                let w = routing::cdg::witness_cycle(&off, &tgt, c, c[0]);
                for i in 0..w.len() {
                    let (a, b) = (w[i], w[(i + 1) % w.len()]);
                    prop_assert!(tgt[off[a as usize]..off[a as usize + 1]].contains(&b));
                    prop_assert!(c.binary_search(&a).is_ok());
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

#[test]
fn full_fat_tree_with_dmodk_has_equal_loads_per_level() {
    for k in [4usize, 6] {
        let f = fat_tree3(k);
        let r = dmodk(&f, k);
        let m = route_metrics(&f, &r, None);
        let n = (k * k * k / 4) as u64;
        assert_eq!(m.pairs, n * (n - 1));
        assert_eq!(m.pairs_ok, m.pairs);
        let classes: BTreeMap<&str, _> = m.classes.iter().map(|c| (c.class.as_str(), c)).collect();
        assert_eq!(
            classes.keys().copied().collect::<Vec<_>>(),
            vec!["L0->L1", "L1->L0", "L1->L2", "L2->L1"]
        );
        for c in classes.values() {
            assert_eq!(
                c.stats.min, c.stats.max,
                "k={k} class {} unbalanced",
                c.class
            );
            assert!(c.stats.min > 0);
        }
        // Up-links from an edge switch: h hosts to every other host with g mod h = a, not on
        // the same edge switch.
        let h = (k / 2) as u64;
        assert_eq!(classes["L2->L1"].stats.max, h * (n / h - 1));
        // Every directed link carries as much up as down.
        assert_eq!(classes["L2->L1"].stats.max, classes["L1->L2"].stats.max);
        assert_eq!(classes["L1->L0"].stats.max, classes["L0->L1"].stats.max);
        // Total load = sum over pairs of their switch hops.
        let total: u64 = m
            .hop_histogram
            .iter()
            .enumerate()
            .map(|(i, &c)| i as u64 * c)
            .sum();
        let loads = routing::walk::walk_all(&f, &r, None).channel_load;
        let (all, _) = link_load_stats(&f, None, &loads);
        assert_eq!((all.mean * all.links as f64).round() as u64, total);
        assert_eq!(m.vls_used, vec![0]);
        assert_eq!(m.sls_used, vec![0]);
    }
}

#[test]
fn ebb_of_a_single_switch_is_one() {
    let mut b = FabricBuilder::new();
    let s = b.add_node(NodeKind::Switch, 8, 0x100, "S", "").unwrap();
    for i in 0..8u8 {
        let h = b
            .add_node(NodeKind::Ca, 1, 0x1000 + i as u64 * 4, format!("H{i}"), "")
            .unwrap();
        link(&mut b, h, 1, s, i + 1);
    }
    let f = b.build().unwrap();
    let r = bfs_routing(&f);
    for pattern in [EbbPattern::Bisect, EbbPattern::BisectFbSym] {
        let e = ebb(
            &f,
            &r,
            None,
            EbbOptions {
                pattern,
                runs: 50,
                seed: 7,
            },
        )
        .unwrap();
        assert_eq!(e.mean, 1.0);
        assert_eq!(e.min, 1.0);
        assert_eq!(e.runs, 50);
        assert_eq!(
            e.maxcong_hist,
            vec![(
                1,
                if pattern == EbbPattern::Bisect {
                    200
                } else {
                    400
                }
            )]
        );
    }
}

#[test]
fn ebb_hand_computed_on_a_ring() {
    // Ring of 4 routed clockwise, 1 host per switch. Flows H0->H2 and H1->H3 share S1->S2.
    let f = chain(4, 1, true, 0);
    let r = clockwise(&f);
    let text = "H0_0 H2_0\nH1_0 H3_0\n\nrun\n@0 @1\n";
    let runs = parse_pattern(&f, text).unwrap();
    assert_eq!(runs.len(), 2);
    let e = ebb_flows(&f, &r, None, &runs).unwrap();
    assert_eq!(e.per_run, vec![0.5, 1.0]);
    assert_eq!(e.mean, 0.75);
    // LIDs work too and give the same flows.
    let lids = format!(
        "{} {}\n",
        f.port(f.end_ports[0]).lid,
        f.port(f.end_ports[2]).lid
    );
    assert_eq!(parse_pattern(&f, &lids).unwrap(), vec![vec![(0, 2)]]);
    assert!(parse_pattern(&f, "H0_0 nobody\n").is_err());
    // A broken table makes the flow unroutable.
    let mut r2 = r.clone();
    r2.lft_of_mut(SwitchIdx(1))[f.port(f.end_ports[2]).lid as usize] = NO_PORT;
    assert!(ebb_flows(&f, &r2, None, &runs).is_err());
}

#[test]
fn hops_and_loads_match_lft_stats_definitions() {
    // Line of 3 switches, 2 hosts each: loads on S0->S1 = pairs from S0's hosts to the 4
    // hosts beyond = 2 * 4 = 8; S1->S2: from S0 and S1 hosts to S2's = 4 * 2 = 8.
    let f = chain(3, 2, false, 2);
    let r = bfs_routing(&f);
    let m = route_metrics(&f, &r, None);
    assert_eq!(m.pairs, 30);
    assert_eq!(m.hop_histogram, vec![6, 16, 8]);
    // LMC 2: 4 LIDs per port, same paths here.
    assert_eq!(m.hop_histogram_all_lids, vec![24, 64, 32]);
    assert_eq!(m.link_load.links, 4);
    assert_eq!(m.link_load.min, 8);
    assert_eq!(m.link_load.max, 8);
    assert_eq!(m.classes.len(), 1);
    // Every switch carries hosts: one class, not `across 0`.
    assert_eq!(m.classes[0].class, "switch to switch");
    assert!((m.sw_hops_avg - 32.0 / 30.0).abs() < 1e-12);
}

// ---------------------------------------------------------------------------------------------
// EBB equality with shared/tools/orcs_ebb.py on fixed pattern files
// ---------------------------------------------------------------------------------------------

/// 2-level tree: 4 leaves x 4 hosts, 2 spines, one link leaf-spine (2:1 oversubscribed).
fn ebb_fixture_fabric() -> (Fabric, Routing) {
    let mut b = FabricBuilder::new();
    let spines: Vec<NodeId> = (0..2)
        .map(|i| {
            b.add_node(NodeKind::Switch, 8, 0x200000 + i, format!("S_1_{i}"), "")
                .unwrap()
        })
        .collect();
    for l in 0..4u64 {
        let leaf = b
            .add_node(NodeKind::Switch, 8, 0x210000 + l, format!("S_0_{l}"), "")
            .unwrap();
        for (i, &sp) in spines.iter().enumerate() {
            link(&mut b, leaf, 5 + i as u8, sp, 1 + l as u8);
        }
        for h in 0..4u64 {
            let n = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    0x100000 + (l * 4 + h) * 4,
                    format!("H_{l}_{h}"),
                    "",
                )
                .unwrap();
            link(&mut b, n, 1, leaf, 1 + h as u8);
        }
    }
    let f = b.build().unwrap();
    let r = bfs_routing(&f);
    (f, r)
}

/// `opensm-subnet.lst` lines (both ends of every link), as OpenSM writes them.
fn subnet_lst(f: &Fabric) -> String {
    let mut s = String::new();
    let end = |p: PortId| {
        let port = f.port(p);
        let n = f.node(port.node);
        let (kind, lid) = if f.is_switch(port.node) {
            ("SW", f.switch_lid(port.node))
        } else {
            ("CA", port.lid)
        };
        let pg = if f.is_switch(port.node) {
            n.guid
        } else {
            port.guid
        };
        format!(
            "{{ {kind} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{pg:016x} VenID:000000 DevID:0000 Rev:00000000 {{{}}} LID:{lid:04X} PN:{:02X} }}",
            n.nports, n.guid, n.guid, n.name, port.num
        )
    };
    for l in &f.links {
        for (a, b) in [(l.a, l.b), (l.b, l.a)] {
            s.push_str(&format!("{} {} PHY=4x LOG=ACT SPD=10\n", end(a), end(b)));
        }
    }
    s
}

/// `opensm-lfts.dump` (entries without a route omitted).
fn lfts_dump(f: &Fabric, r: &Routing) -> String {
    let mut s = String::new();
    for (si, &n) in f.switches.iter().enumerate() {
        let node = f.node(n);
        s.push_str(&format!(
            "Unicast lids [0-{}] of switch Lid {} guid 0x{:016x} ('{}'):\n",
            r.max_lid,
            f.switch_lid(n),
            node.guid,
            node.name
        ));
        for (lid, &p) in r.lft_of(SwitchIdx(si as u32)).iter().enumerate() {
            if p != NO_PORT && lid > 0 {
                s.push_str(&format!("0x{lid:04x} {p:03}\n"));
            }
        }
        s.push_str(&format!("{} lids dumped\n", r.max_lid));
    }
    s
}

fn fixture_pattern(f: &Fabric) -> String {
    let hosts: Vec<u32> = (0..f.end_ports.len() as u32).collect();
    let mut rng = Rng::new(2024);
    let mut s =
        String::from("# fabroute EBB fixture: 12 bisect runs, then 12 bisect_fb_sym runs\n");
    for (i, pat) in [EbbPattern::Bisect, EbbPattern::BisectFbSym]
        .iter()
        .flat_map(|&p| std::iter::repeat_n(p, 12))
        .enumerate()
    {
        if i > 0 {
            s.push_str("run\n");
        }
        for (a, b) in routing::metrics::bisect_flows(&hosts, &mut rng, pat) {
            let nm = |e: u32| f.node(f.port(f.end_ports[e as usize]).node).name.clone();
            s.push_str(&format!("{} {}\n", nm(a), nm(b)));
        }
    }
    s
}

/// A reference script from the folder named by `FABROUTE_REFERENCE_TOOLS` (the team's
/// `shared/tools`), for live comparisons beside the committed reference values. None (and a
/// note) when the variable is unset: the committed values are still compared.
fn reference_tool(name: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("FABROUTE_REFERENCE_TOOLS")?;
    let p = std::path::Path::new(&dir).join(name);
    assert!(
        p.exists(),
        "FABROUTE_REFERENCE_TOOLS is set but {} is missing",
        p.display()
    );
    Some(p)
}

fn ebb_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/ebb")
}

#[test]
fn ebb_equals_orcs_reference_on_fixed_patterns() {
    let (f, r) = ebb_fixture_fabric();
    let dir = ebb_dir();
    let files = [
        ("subnet.lst", subnet_lst(&f)),
        ("lfts.dump", lfts_dump(&f, &r)),
        ("pattern.txt", fixture_pattern(&f)),
    ];
    if std::env::var_os("FABROUTE_BLESS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (n, text) in &files {
            std::fs::write(dir.join(n), text).unwrap();
        }
    }
    for (n, text) in &files {
        let committed = std::fs::read_to_string(dir.join(n)).unwrap();
        assert_eq!(
            &committed, text,
            "fixture {n} is stale (rerun with FABROUTE_BLESS=1)"
        );
    }
    let runs = parse_pattern(&f, &files[2].1).unwrap();
    assert_eq!(runs.len(), 24);
    let ours = ebb_flows(&f, &r, None, &runs).unwrap();
    let parse = |text: &str| -> Vec<f64> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.trim().parse().unwrap())
            .collect()
    };
    // Values computed by orcs_ebb.py (via tests/data/ebb/ebb_fixed.py), committed.
    let expected = parse(&std::fs::read_to_string(dir.join("expected.txt")).unwrap());
    assert_eq!(ours.per_run, expected);
    assert!(
        ours.per_run.iter().any(|&v| v < 1.0),
        "the fixture must congest"
    );

    // And live, when python3 and the reference script are present.
    let Some(script) = reference_tool("orcs_ebb.py") else {
        return;
    };
    let out = std::process::Command::new("python3")
        .arg(dir.join("ebb_fixed.py"))
        .arg(&script)
        .arg(dir.join("subnet.lst"))
        .arg(dir.join("lfts.dump"))
        .arg(dir.join("pattern.txt"))
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let py = parse(&String::from_utf8_lossy(&o.stdout));
            assert_eq!(ours.per_run, py, "per-run EBB differs from orcs_ebb.py");
        }
        Ok(o) => panic!(
            "ebb_fixed.py failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("python3 not runnable ({e}); compared with committed values only"),
    }
}

// ---------------------------------------------------------------------------------------------
// Generated fabrics, real engines, and the shared lft_stats.py reference
// ---------------------------------------------------------------------------------------------

fn generated(spec: &str, engine: &str) -> (Fabric, Routing) {
    let f = spec
        .parse::<fabric::gen::TopoSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let e = routing::engines::by_name(engine).unwrap();
    let r = e
        .route(
            &f,
            &FaultMask::none(&f),
            &routing::engines::RouteOptions::default(),
        )
        .unwrap();
    (f, r)
}

#[test]
fn generated_fabrics_with_engines() {
    // Up*/Down* is deadlock-free by construction; DOR on a torus without datelines is not.
    let (f, r) = generated("torus 4x4 hcas=2", "updn");
    let rep = check(&f, &r, None);
    assert!(rep.ok(), "updn on a torus: {:?}", rep.cycles.first());
    let (f, r) = generated("torus 4x4 hcas=2", "dor");
    let rep = check(&f, &r, None);
    assert!(rep.pairs.ok == rep.pairs.checked);
    assert!(!rep.deadlock_free, "DOR on a 4x4 torus has credit loops");
    // One loop per ring direction at least: 4 rows + 4 columns, 2 directions each.
    assert!(!rep.cycles.is_empty());
    for c in &rep.cycles {
        assert!(c.witness.len() >= 2);
        assert!(c.witness.iter().all(|h| h.example.is_some()));
    }
    // DOR on a mesh is deadlock-free.
    let (f, r) = generated("mesh 4x4 hcas=2", "dor");
    assert!(check(&f, &r, None).ok());
    // ftree on a k-ary n-tree: deadlock-free and every link of a level equally loaded.
    let (f, r) = generated("ktree 4 3", "ftree");
    assert!(check(&f, &r, None).ok());
    let m = route_metrics(&f, &r, None);
    assert!(m.classes.len() >= 4, "{:?}", m.classes);
    for c in &m.classes {
        assert_eq!(
            c.stats.min, c.stats.max,
            "ftree class {} unbalanced",
            c.class
        );
    }
}

/// `lft_stats.py --cdg --json` on our dumps of one case. Its output is committed in
/// `tests/data/lft_stats/<tag>/` beside the dumps it was computed from (so the test needs
/// nothing outside the repository); with `FABROUTE_REFERENCE_TOOLS` naming the folder of the
/// reference scripts the script is also run live and must agree, and `FABROUTE_BLESS=1` rewrites
/// the committed files.
fn lft_stats(f: &Fabric, r: &Routing, tag: &str) -> serde_json::Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/lft_stats")
        .join(tag);
    let script = reference_tool("lft_stats.py");
    let inputs = [
        ("subnet.lst", subnet_lst(f)),
        ("lfts.dump", lfts_dump(f, r)),
    ];
    let run_live = |script: &std::path::Path, d: &std::path::Path| -> serde_json::Value {
        let out = std::process::Command::new("python3")
            .arg(script)
            .arg("--lfts")
            .arg(d.join("lfts.dump"))
            .arg("--subnet")
            .arg(d.join("subnet.lst"))
            .arg("--cdg")
            .arg("--json")
            .arg(d.join("out.json"))
            .output()
            .expect("python3 runs");
        let text = std::fs::read_to_string(d.join("out.json")).unwrap_or_else(|_| {
            panic!(
                "lft_stats.py failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        serde_json::from_str(&text).unwrap()
    };
    if let (Some(script), true) = (&script, std::env::var_os("FABROUTE_BLESS").is_some()) {
        std::fs::create_dir_all(&dir).unwrap();
        for (n, text) in &inputs {
            std::fs::write(dir.join(n), text).unwrap();
        }
        let v = run_live(script, &dir);
        std::fs::write(
            dir.join("out.json"),
            serde_json::to_string_pretty(&v).unwrap() + "\n",
        )
        .unwrap();
    }
    for (n, text) in &inputs {
        let committed = std::fs::read_to_string(dir.join(n))
            .unwrap_or_else(|e| panic!("{}/{n}: {e}", dir.display()));
        assert!(
            &committed == text,
            "{}/{n} is stale: the tables changed; rerun with FABROUTE_BLESS=1 and FABROUTE_REFERENCE_TOOLS set",
            dir.display()
        );
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out.json")).unwrap()).unwrap();
    if let Some(script) = &script {
        let tmp = std::env::temp_dir().join(format!("fabroute-check-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        for (n, text) in &inputs {
            std::fs::write(tmp.join(n), text).unwrap();
        }
        let live = run_live(script, &tmp);
        let _ = std::fs::remove_dir_all(&tmp);
        assert_eq!(
            live, committed,
            "lft_stats.py now disagrees with its committed output"
        );
    }
    committed
}

#[test]
fn agrees_with_lft_stats_reference() {
    let cases = [
        ("torus 4x4 hcas=2", "dor"),
        ("torus 4x4 hcas=2", "updn"),
        ("ktree 4 3", "ftree"),
        ("dragonfly 4 2 2", "minhop"),
        ("leafspine leaves=6 spines=3 hosts=4", "minhop"),
    ];
    for (i, (spec, engine)) in cases.iter().enumerate() {
        let (f, r) = generated(spec, engine);
        let py = lft_stats(&f, &r, &i.to_string());
        let m = route_metrics(&f, &r, None);
        let rep = check(&f, &r, None);
        let what = format!("{spec} / {engine}");
        assert_eq!(py["pairs_total"].as_u64(), Some(m.pairs), "{what}");
        assert_eq!(py["pairs_ok"].as_u64(), Some(m.pairs_ok), "{what}");
        let hist: BTreeMap<String, u64> = m
            .hop_histogram
            .iter()
            .enumerate()
            .filter(|x| *x.1 > 0)
            .map(|(h, &c)| (h.to_string(), c))
            .collect();
        let py_hist: BTreeMap<String, u64> =
            serde_json::from_value(py["sw_hops_hist"].clone()).unwrap();
        assert_eq!(py_hist, hist, "{what}");
        assert_eq!(
            py["directed_sw_links"].as_u64(),
            Some(m.link_load.links as u64),
            "{what}"
        );
        assert_eq!(
            py["link_load_max"].as_u64(),
            Some(m.link_load.max),
            "{what}"
        );
        assert_eq!(
            py["link_load_min"].as_u64(),
            Some(m.link_load.min),
            "{what}"
        );
        assert_eq!(
            py["links_unused"].as_u64(),
            Some(m.link_load.unused as u64),
            "{what}"
        );
        let close = |k: &str, v: f64| {
            let p = py[k].as_f64().unwrap();
            assert!((p - v).abs() <= 5e-4, "{what}: {k} python {p} ours {v}");
        };
        close("link_load_mean", m.link_load.mean);
        close("link_load_stddev", m.link_load.stddev);
        // Single-VL CDG (no path SLs given to the script): same verdict and size.
        assert_eq!(
            py["cdg_acyclic"].as_bool(),
            Some(rep.deadlock_free),
            "{what}"
        );
        assert_eq!(
            py["cdg_nodes"].as_u64(),
            Some(rep.cdg.vertices as u64),
            "{what}"
        );
        assert_eq!(
            py["cdg_edges"].as_u64(),
            Some(rep.cdg.edges as u64),
            "{what}"
        );
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let (f, r) = generated("torus 4x4 hcas=2 lmc=1", "dor");
    let (mut f2, mut r2) = random_case(7);
    r2.path_sl = PathSl::PerPair {
        stride: r2.stride(),
        sl: (0..r2.stride() * f2.end_ports.len())
            .map(|i| (i % 3) as u8)
            .collect(),
    };
    f2.hints.level.clear();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let opts = WalkOptions {
                max_examples: 2,
                loads: true,
            };
            (
                walk_all_with(&f, &r, None, opts),
                check(&f, &r, None),
                walk_all_with(&f2, &r2, None, opts),
                check(&f2, &r2, None),
                ebb(
                    &f,
                    &r,
                    None,
                    EbbOptions {
                        pattern: EbbPattern::BisectFbSym,
                        runs: 20,
                        seed: 3,
                    },
                )
                .unwrap(),
            )
        })
    };
    let one = run(1);
    let two = run(2);
    let four = run(4);
    assert_eq!(one, two);
    assert_eq!(one, four);
    assert!(!one.1.deadlock_free);
    assert!(one.2.unreachable_pairs.count + one.2.loops.count + one.2.black_holes.count > 0);
}
