//! Generator invariants: counts and degrees from formulas, switch-graph diameters (BFS here),
//! determinism, exact equality with gen_topo.py's reference net files, error handling.

use fabric::gen::*;
use fabric::{Fabric, NodeId, NodeKind};
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

fn o() -> GenOptions {
    GenOptions::default()
}

fn spec(s: &str) -> Fabric {
    s.parse::<TopoSpec>()
        .unwrap_or_else(|e| panic!("parse {s:?}: {e}"))
        .generate()
        .unwrap_or_else(|e| panic!("generate {s:?}: {e}"))
}

/// Switch adjacency (switch indices, parallel links merged).
fn sw_adj(f: &Fabric) -> Vec<Vec<usize>> {
    let mut adj = vec![BTreeSet::new(); f.switches.len()];
    for l in &f.links {
        let (a, b) = (f.ports[l.a.idx()].node, f.ports[l.b.idx()].node);
        if f.is_switch(a) && f.is_switch(b) {
            let (x, y) = (f.switch_of(a).unwrap().idx(), f.switch_of(b).unwrap().idx());
            adj[x].insert(y);
            adj[y].insert(x);
        }
    }
    adj.into_iter().map(|s| s.into_iter().collect()).collect()
}

/// Switch-graph diameter, `None` if disconnected.
fn diameter(f: &Fabric) -> Option<usize> {
    let adj = sw_adj(f);
    let n = adj.len();
    let mut best = 0;
    let mut dist = vec![usize::MAX; n];
    let mut queue = std::collections::VecDeque::new();
    for s in 0..n {
        dist.iter_mut().for_each(|d| *d = usize::MAX);
        dist[s] = 0;
        queue.push_back(s);
        while let Some(u) = queue.pop_front() {
            for &v in &adj[u] {
                if dist[v] == usize::MAX {
                    dist[v] = dist[u] + 1;
                    queue.push_back(v);
                }
            }
        }
        if dist.contains(&usize::MAX) {
            return None;
        }
        best = best.max(*dist.iter().max().unwrap());
    }
    Some(best)
}

/// Connected switch graph (one BFS) and every HCA cabled to a switch.
fn connected(f: &Fabric) -> bool {
    let adj = sw_adj(f);
    if adj.is_empty() {
        return false;
    }
    let mut seen = vec![false; adj.len()];
    let mut stack = vec![0];
    seen[0] = true;
    while let Some(u) = stack.pop() {
        for &v in &adj[u] {
            if !seen[v] {
                seen[v] = true;
                stack.push(v);
            }
        }
    }
    seen.iter().all(|&s| s)
        && f.nodes.iter().enumerate().all(|(i, n)| {
            n.kind == NodeKind::Switch
                || f.node_ports(NodeId(i as u32))
                    .any(|p| f.attached_switch(p).is_some())
        })
}

fn sw_links(f: &Fabric) -> usize {
    f.links
        .iter()
        .filter(|l| f.is_switch(f.ports[l.a.idx()].node) && f.is_switch(f.ports[l.b.idx()].node))
        .count()
}

fn hcas(f: &Fabric) -> usize {
    f.count(NodeKind::Ca)
}

/// Switch-to-switch link count of switch index `s` (parallel links counted).
fn sw_degree(f: &Fabric, s: usize) -> usize {
    f.switch_links(fabric::SwitchIdx(s as u32)).len()
}

fn hcas_on(f: &Fabric, s: usize) -> usize {
    f.node_ports(f.switches[s])
        .filter(|&p| {
            f.remote(p)
                .is_some_and(|r| f.nodes[f.ports[r.idx()].node.idx()].kind == NodeKind::Ca)
        })
        .count()
}

/// ibsim's GUID rules, names = descriptions, hints vectors of consistent lengths.
fn check_common(f: &Fabric) {
    let mut nsw = 0u64;
    let mut nca = 0u64;
    let mut seen_ca = false;
    for (i, n) in f.nodes.iter().enumerate() {
        // aggregation nodes share one description; every other node is described by its name
        if n.desc != AGGREGATION_NODE_DESC {
            assert_eq!(n.name, n.desc);
        }
        assert_eq!(n.sys_guid, n.guid);
        let p0 = &f.ports[f.port_id(NodeId(i as u32), 0).idx()];
        match n.kind {
            NodeKind::Switch => {
                assert!(!seen_ca, "switches must come first");
                assert_eq!(n.guid, 0x200000 + nsw, "{}", n.name);
                assert_eq!(p0.guid, n.guid);
                assert_ne!(p0.lid, 0);
                nsw += 1;
            }
            NodeKind::Ca => {
                seen_ca = true;
                assert_eq!(n.nports, 1);
                assert_eq!(n.guid, 0x100000 + 2 * nca, "{}", n.name);
                let p1 = &f.ports[f.port_id(NodeId(i as u32), 1).idx()];
                assert_eq!(p1.guid, n.guid + 1);
                assert_ne!(p1.lid, 0);
                nca += 1;
            }
            NodeKind::Router => panic!("no routers expected"),
        }
    }
    let h = &f.hints;
    assert!(!h.kind.is_empty());
    assert_eq!(h.link_class.len(), f.links.len());
    assert_eq!(h.link_class_names[0], "host");
    for (l, &c) in h.link_class.iter().enumerate() {
        assert!((c as usize) < h.link_class_names.len());
        let link = &f.links[l];
        let host =
            !f.is_switch(f.ports[link.a.idx()].node) || !f.is_switch(f.ports[link.b.idx()].node);
        assert_eq!(c == 0, host, "link {l} class {c}");
    }
    assert!(h.coords.is_empty() || h.coords.len() == f.nodes.len());
    assert!(h.level.is_empty() || h.level.len() == f.nodes.len());
    for r in &h.roots {
        assert!(f.is_switch(*r));
    }
}

// ---------------------------------------------------------------------------------------------
// gen_topo.py reference files
// ---------------------------------------------------------------------------------------------

/// gen_topo.py's reference fabrics, vendored in `tests/data/topologies`.
fn topo_dir() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/topologies").into()
}

fn read_ref(name: &str) -> String {
    let path = format!("{}/{name}", topo_dir());
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the reference file {path} ({e})"))
}

#[derive(Debug)]
struct NetNode {
    kind: String,
    nports: u8,
    name: String,
    /// (port, remote name, remote port)
    ports: BTreeSet<(u8, String, u8)>,
}

/// A minimal ibsim net parser (only what gen_topo.py writes).
fn parse_net(text: &str) -> Vec<NetNode> {
    let mut nodes: Vec<NetNode> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("Switch") || line.starts_with("Hca") {
            let mut it = line.split_whitespace();
            let kind = it.next().unwrap().to_string();
            let nports = it.next().unwrap().parse().unwrap();
            let name = line.split('"').nth(1).unwrap().to_string();
            nodes.push(NetNode {
                kind,
                nports,
                name,
                ports: BTreeSet::new(),
            });
        } else if let Some(rest) = line.strip_prefix('[') {
            let (p, rest) = rest.split_once(']').unwrap();
            let mut q = rest.split('"');
            q.next();
            let rname = q.next().unwrap().to_string();
            let rp = q.next().unwrap().trim_matches(['[', ']']).parse().unwrap();
            nodes
                .last_mut()
                .unwrap()
                .ports
                .insert((p.parse().unwrap(), rname, rp));
        } else {
            panic!("unexpected line {line:?}");
        }
    }
    nodes
}

/// The generated fabric equals the reference net file: same nodes in the same order (so the same
/// ibsim GUIDs), names, port counts and cabling port by port; GUIDs agree with the .meta.json.
fn assert_same_as_net(f: &Fabric, file: &str) {
    let net = parse_net(&read_ref(file));
    assert_eq!(f.nodes.len(), net.len(), "{file}: node count");
    let (mut i_sw, mut i_ca) = (0u64, 0u64);
    for (i, (n, r)) in f.nodes.iter().zip(&net).enumerate() {
        assert_eq!(n.name, r.name, "{file}: node {i}");
        assert_eq!(n.nports, r.nports, "{file}: {} port count", r.name);
        let want_guid = match r.kind.as_str() {
            "Switch" => {
                assert_eq!(n.kind, NodeKind::Switch);
                i_sw += 1;
                0x200000 + i_sw - 1
            }
            _ => {
                assert_eq!(n.kind, NodeKind::Ca);
                i_ca += 1;
                0x100000 + 2 * (i_ca - 1)
            }
        };
        assert_eq!(n.guid, want_guid, "{file}: {} GUID", r.name);
        let mut ports = BTreeSet::new();
        for p in f.node_ports(NodeId(i as u32)) {
            if let Some(rp) = f.remote(p) {
                let rport = &f.ports[rp.idx()];
                ports.insert((
                    f.ports[p.idx()].num,
                    f.nodes[rport.node.idx()].name.clone(),
                    rport.num,
                ));
            }
        }
        assert_eq!(ports, r.ports, "{file}: cabling of {}", r.name);
    }
    let meta: serde_json::Value =
        serde_json::from_str(&read_ref(&format!("{file}.meta.json"))).unwrap();
    let sws = meta["switches"].as_array().unwrap();
    assert_eq!(sws.len(), f.switches.len());
    for (s, m) in f.switches.iter().zip(sws) {
        let n = &f.nodes[s.idx()];
        assert_eq!(m["name"].as_str().unwrap(), n.name);
        assert_eq!(m["guid"].as_str().unwrap(), format!("{:#018x}", n.guid));
    }
    assert_eq!(meta["num_hcas"].as_u64().unwrap() as usize, hcas(f));
    assert_eq!(meta["num_sw_links"].as_u64().unwrap() as usize, sw_links(f));
    assert_eq!(
        meta["switch_diameter"].as_u64().map(|d| d as usize),
        diameter(f),
        "{file}: diameter"
    );
}

fn no_comments(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.to_string())
        .collect()
}

#[test]
fn torus_4x4_h2_equals_reference_file() {
    let f = torus(&TorusSpec::torus(&[4, 4], 2), &o()).unwrap();
    check_common(&f);
    assert_same_as_net(&f, "torus2d_4x4_h2.net");
    assert_eq!(f.hints.kind, "torus 4x4");
    assert_eq!(
        no_comments(&torus2qos_conf(&f).unwrap()),
        no_comments(&read_ref("torus2d_4x4_h2.net.t2q.conf"))
    );
    // The meta's port layout statement, port by port: 1..H hosts; dim d: H+2d+1 '+', H+2d+2 '-'.
    for (s, &n) in f.switches.iter().enumerate() {
        let c = &f.hints.coords[n.idx()];
        for d in 0..2 {
            let mut plus = c.clone();
            plus[d] = (plus[d] + 1) % 4;
            let p = f.port_id(n, 2 + 2 * d as u8 + 1);
            let r = f.remote(p).unwrap();
            assert_eq!(
                f.hints.coords[f.ports[r.idx()].node.idx()],
                plus,
                "switch {s}"
            );
            assert_eq!(f.ports[r.idx()].num, 2 + 2 * d as u8 + 2);
        }
    }
}

#[test]
fn other_gen_topo_files_are_reproduced_exactly() {
    let cases: Vec<(Fabric, &str)> = vec![
        (spec("torus 8x8 hcas=2"), "torus2d_8x8_h2.net"),
        (spec("torus 14x14"), "torus2d_14x14_h2.net"),
        (spec("torus 4x4x4 hcas=2"), "torus3d_4x4x4_h2.net"),
        (spec("torus 6x6x6"), "torus3d_6x6x6_h2.net"),
        (spec("mesh 4x4 hcas=2"), "mesh2d_4x4_h2.net"),
        (spec("ktree 4 3"), "ktree_k4_n3.net"),
        (spec("ktree 12 3"), "ktree_k12_n3.net"),
        (
            spec("leafspine leaves=18 spines=9 hosts=18 radix=36"),
            "fattree2_18leaf_9spine_h18.net",
        ),
        (spec("dragonfly 4 2 2"), "dragonfly_a4_p2_h2.net"),
        (spec("dragonfly 8 4 4"), "dragonfly_a8_p4_h4.net"),
        (spec("slimfly 5"), "slimfly_q5.net"),
        (spec("slimfly 7"), "slimfly_q7.net"),
    ];
    for (f, file) in &cases {
        check_common(f);
        assert_same_as_net(f, file);
        let roots = format!("{}/{file}.roots", topo_dir());
        if std::path::Path::new(&roots).exists() {
            assert_eq!(roots_file(f).unwrap(), read_ref(&format!("{file}.roots")));
        } else {
            assert!(f.hints.roots.is_empty(), "{file}");
        }
        let t2q = format!("{}/{file}.t2q.conf", topo_dir());
        if std::path::Path::new(&t2q).exists() {
            assert_eq!(
                no_comments(&torus2qos_conf(f).unwrap()),
                no_comments(&read_ref(&format!("{file}.t2q.conf"))),
                "{file}"
            );
        } else {
            assert!(torus2qos_conf(f).is_none(), "{file}");
        }
    }
}

#[test]
fn random_regular_matches_reference_counts() {
    // gen_topo.py draws its graph with Python's generator: only the counts can agree.
    let f = spec("randreg 32 6 hcas=2 seed=1");
    check_common(&f);
    let meta: serde_json::Value =
        serde_json::from_str(&read_ref("randreg_n32_d6_h2.net.meta.json")).unwrap();
    assert_eq!(
        meta["num_switches"].as_u64().unwrap() as usize,
        f.switches.len()
    );
    assert_eq!(meta["num_hcas"].as_u64().unwrap() as usize, hcas(&f));
    assert_eq!(
        meta["num_sw_links"].as_u64().unwrap() as usize,
        sw_links(&f)
    );
    assert_eq!(
        meta["max_switch_ports_declared"].as_u64().unwrap(),
        f.nodes.iter().map(|n| n.nports as u64).max().unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// formulas
// ---------------------------------------------------------------------------------------------

fn torus_expect(dims: &[u32], wrap: &[bool], h: u32, single: bool) -> (usize, usize, usize, usize) {
    let n: usize = dims.iter().map(|&k| k as usize).product();
    let mut links = 0;
    let mut diam = 0;
    for (&k, &w) in dims.iter().zip(wrap) {
        let k = k as usize;
        let per_line = match (w, k) {
            (_, 1) => 0,
            (true, 2) if single => 1,
            (true, _) => k,
            (false, _) => k - 1,
        };
        links += n / k * per_line;
        diam += if w { k / 2 } else { k - 1 };
    }
    (n, n * h as usize, links, diam)
}

#[test]
fn tori_and_meshes_follow_the_formulas() {
    let cases: &[(&[u32], &[bool], u32, bool)] = &[
        (&[5], &[true], 1, false),
        (&[6], &[false], 0, false),
        (&[3, 5], &[true, true], 2, false),
        (&[4, 3], &[false, false], 1, false),
        (&[2, 3], &[true, true], 1, false),
        (&[2, 3], &[true, true], 1, true),
        (&[4, 1, 3], &[true, true, false], 3, false),
        (&[3, 3, 3, 3], &[true; 4], 1, false),
        (&[2, 2, 2, 2, 2], &[true; 5], 0, false),
        (
            &[2, 3, 2, 3, 2, 2],
            &[true, false, true, true, false, true],
            1,
            true,
        ),
    ];
    for &(dims, wrap, h, single) in cases {
        let s = TorusSpec {
            dims: dims.to_vec(),
            wrap: wrap.to_vec(),
            hcas: h,
            k2_single_link: single,
        };
        let f = torus(&s, &o()).unwrap();
        check_common(&f);
        let (n, nh, nl, d) = torus_expect(dims, wrap, h, single);
        assert_eq!(f.switches.len(), n, "{s:?}");
        assert_eq!(hcas(&f), nh, "{s:?}");
        assert_eq!(sw_links(&f), nl, "{s:?}");
        assert_eq!(diameter(&f), Some(d), "{s:?}");
        assert_eq!(f.hints.dims, dims);
        assert_eq!(f.hints.wrap, wrap);
        for &sw in &f.switches {
            assert_eq!(f.hints.coords[sw.idx()].len(), dims.len());
        }
        assert_eq!(f.hints.link_class_names.len(), dims.len() + 1);
        // every HCA on ports 1..=h
        for si in 0..f.switches.len() {
            assert_eq!(hcas_on(&f, si), h as usize);
        }
    }
    assert_eq!(diameter(&spec("torus 8x8")), Some(8));
    assert_eq!(diameter(&spec("mesh 4x4x4")), Some(9));
}

#[test]
fn torus_32x32x32_generates_quickly() {
    let t = std::time::Instant::now();
    let f = spec("torus 32x32x32 hcas=0");
    let el = t.elapsed();
    eprintln!("torus 32x32x32 (32768 switches): {el:?}");
    assert_eq!(f.switches.len(), 32768);
    assert_eq!(sw_links(&f), 3 * 32768);
    for s in 0..f.switches.len() {
        assert_eq!(sw_degree(&f, s), 6);
    }
    // With 2 HCAs per switch the LID space (0xBFFF) is exceeded: a clear error, no panic.
    let e = "torus 32x32x32 hcas=2"
        .parse::<TopoSpec>()
        .unwrap()
        .generate()
        .unwrap_err();
    assert!(e.to_string().contains("LIDs"), "{e}");
}

fn xgft_expect(m: &[u32], w: &[u32], links: usize) -> (Vec<usize>, usize, usize) {
    let h = m.len();
    let size = |l: usize| -> usize {
        m[l..].iter().map(|&x| x as usize).product::<usize>()
            * w[..l].iter().map(|&x| x as usize).product::<usize>()
    };
    let levels: Vec<usize> = (1..=h).map(size).collect();
    let links_total: usize = (2..=h).map(|l| size(l) * m[l - 1] as usize * links).sum();
    (levels, size(0), links_total)
}

#[test]
fn k_ary_n_trees_follow_the_formulas() {
    for (k, n) in [
        (2u32, 1u32),
        (2, 2),
        (2, 3),
        (3, 3),
        (4, 2),
        (4, 4),
        (5, 3),
        (3, 4),
    ] {
        let f = xgft(&XgftSpec::ktree(k, n), &o()).unwrap();
        check_common(&f);
        let (k, n) = (k as usize, n as usize);
        assert_eq!(f.switches.len(), n * k.pow(n as u32 - 1), "k={k} n={n}");
        assert_eq!(hcas(&f), k.pow(n as u32));
        assert_eq!(sw_links(&f), (n - 1) * k.pow(n as u32));
        assert_eq!(diameter(&f), Some(2 * (n - 1)), "k={k} n={n}");
        assert_eq!(f.hints.roots.len(), k.pow(n as u32 - 1));
        for (si, &s) in f.switches.iter().enumerate() {
            let lvl = f.hints.level[s.idx()] as usize;
            // leaves: k HCAs + k up; middle: 2k switch links; roots: k down
            let (want_h, want_sw) = if lvl == n - 1 {
                (k, if n > 1 { k } else { 0 })
            } else if lvl == 0 {
                (0, k)
            } else {
                (0, 2 * k)
            };
            assert_eq!(hcas_on(&f, si), want_h);
            assert_eq!(sw_degree(&f, si), want_sw);
            assert_eq!(f.hints.roots.contains(&s), lvl == 0);
        }
    }
}

#[test]
fn xgft_and_leaf_spine_follow_the_formulas() {
    let cases: &[(&[u32], &[u32], u32)] = &[
        (&[3, 4], &[1, 2], 1),
        (&[2, 3, 2], &[1, 2, 3], 2),
        (&[4, 2, 3], &[1, 1, 2], 1),
        (&[18, 18], &[1, 9], 1),
        (&[5, 6], &[1, 3], 3),
    ];
    for &(m, w, links) in cases {
        let mut s = XgftSpec::new(m, w);
        s.links = links;
        let f = xgft(&s, &o()).unwrap();
        check_common(&f);
        let (levels, nh, nl) = xgft_expect(m, w, links as usize);
        assert_eq!(f.switches.len(), levels.iter().sum::<usize>(), "{s:?}");
        assert_eq!(hcas(&f), nh);
        assert_eq!(sw_links(&f), nl);
        assert_eq!(f.hints.roots.len(), *levels.last().unwrap());
        assert!(connected(&f));
        let roots: BTreeSet<_> = roots_file(&f).unwrap().lines().map(String::from).collect();
        assert_eq!(roots.len(), f.hints.roots.len());
    }
    // Oversubscribed leaf-spine: 8 leaves, 2 spines, 12 hosts per leaf, 3 links per pair.
    let f = xgft(&XgftSpec::leaf_spine(8, 2, 12, 3), &o()).unwrap();
    assert_eq!(f.switches.len(), 10);
    assert_eq!(hcas(&f), 96);
    assert_eq!(sw_links(&f), 8 * 2 * 3);
    assert_eq!(diameter(&f), Some(2));
    for si in 0..8 {
        assert_eq!(hcas_on(&f, si), 12);
        assert_eq!(sw_degree(&f, si), 6);
    }
    for si in 8..10 {
        assert_eq!(sw_degree(&f, si), 24);
    }
    assert_eq!(f.hints.link_class_names, vec!["host", "L1-L2"]);
}

#[test]
fn large_fat_tree_over_20000_hcas() {
    let t = std::time::Instant::now();
    let f = spec("ktree 28 3");
    eprintln!("ktree 28 3 ({} HCAs): {:?}", hcas(&f), t.elapsed());
    assert_eq!(hcas(&f), 21952);
    assert_eq!(f.switches.len(), 3 * 784);
    assert_eq!(sw_links(&f), 2 * 21952);
    assert_eq!(f.hints.roots.len(), 784);
    assert!(connected(&f));
}

#[test]
fn non_uniform_leaves() {
    let mut s = XgftSpec::ktree(3, 3);
    s.leaf_hosts = LeafHosts::List(vec![3, 1, 0, 2]);
    let f = xgft(&s, &o()).unwrap();
    check_common(&f);
    let want: Vec<usize> = (0..9).map(|i| [3, 1, 0, 2][i % 4]).collect();
    let got: Vec<usize> = (0..9).map(|si| hcas_on(&f, si)).collect();
    assert_eq!(got, want);
    assert_eq!(hcas(&f), want.iter().sum::<usize>());
    // the up links do not change
    assert_eq!(sw_links(&f), 2 * 27);
    assert!(connected(&f));

    let r = LeafHosts::Random {
        min: 2,
        max: 5,
        seed: 9,
    };
    let mut s = XgftSpec::leaf_spine(20, 4, 0, 1);
    s.leaf_hosts = r.clone();
    let f1 = xgft(&s, &o()).unwrap();
    let f2 = xgft(&s, &o()).unwrap();
    assert_eq!(f1, f2);
    let counts: Vec<usize> = (0..20).map(|si| hcas_on(&f1, si)).collect();
    assert!(counts.iter().all(|&c| (2..=5).contains(&c)), "{counts:?}");
    assert!(
        counts.iter().collect::<BTreeSet<_>>().len() > 1,
        "{counts:?}"
    );
    let g = spec("ktree 4 2 leaf-hosts-random=2..5 leaf-seed=9");
    assert!((8..=20).contains(&hcas(&g)));
    // up ports follow the HCA ports on a leaf
    let leaf0 = f1.switches[0];
    let nh = counts[0] as u8;
    let p = f1.port_id(leaf0, nh + 1);
    assert!(f1.is_switch(f1.ports[f1.remote(p).unwrap().idx()].node));
}

#[test]
fn four_level_tree_structure() {
    let s = FourLevelSpec {
        sets: 3,
        l0: 4,
        l1: 2,
        hcas: 5,
        l3: 2,
    };
    let f = four_level(&s, &o()).unwrap();
    check_common(&f);
    assert_eq!(f.switches.len(), 3 * 4 + 3 * 2 + 2 + 2);
    assert_eq!(hcas(&f), 3 * 4 * 5);
    assert_eq!(sw_links(&f), 3 * 4 * 2 + 3 * 2 + 2 * 2);
    assert_eq!(diameter(&f), Some(4));
    let by_name: HashMap<&str, usize> = f
        .switches
        .iter()
        .enumerate()
        .map(|(i, &n)| (f.nodes[n.idx()].name.as_str(), i))
        .collect();
    let adj = sw_adj(&f);
    let names = |si: usize| -> BTreeSet<String> {
        adj[si]
            .iter()
            .map(|&t| f.nodes[f.switches[t].idx()].name.clone())
            .collect()
    };
    // The N-th L1 of every set reaches only the N-th L2 upward.
    for set in 0..3 {
        for n in 0..2 {
            let nb = names(by_name[format!("L1_s{set}_{n}").as_str()]);
            let l2: Vec<_> = nb.iter().filter(|x| x.starts_with("L2")).collect();
            assert_eq!(l2, vec![&format!("L2_{n}")]);
            assert_eq!(nb.iter().filter(|x| x.starts_with("L0")).count(), 4);
            assert!(nb
                .iter()
                .filter(|x| x.starts_with("L0"))
                .all(|x| x.starts_with(&format!("L0_s{set}_"))));
        }
    }
    for n in 0..2 {
        let nb = names(by_name[format!("L2_{n}").as_str()]);
        let want: BTreeSet<String> = (0..3)
            .map(|s| format!("L1_s{s}_{n}"))
            .chain((0..2).map(|t| format!("L3_{t}")))
            .collect();
        assert_eq!(nb, want);
    }
    // levels: L3 = 0 (roots) .. L0 = 3
    for &sw in &f.switches {
        let n = &f.nodes[sw.idx()].name;
        let want = match &n[..2] {
            "L3" => 0,
            "L2" => 1,
            "L1" => 2,
            _ => 3,
        };
        assert_eq!(f.hints.level[sw.idx()], want, "{n}");
    }
    assert_eq!(f.hints.roots.len(), 2);
    assert_eq!(
        f.hints.link_class_names,
        vec!["host", "L0-L1", "L1-L2", "L2-L3"]
    );
    // without L3: L2 are the roots
    let f = spec("fourlevel sets=2 l0=2 l1=3 hcas=1 l3=0");
    assert_eq!(f.hints.roots.len(), 3);
    assert!(f
        .hints
        .roots
        .iter()
        .all(|r| f.nodes[r.idx()].name.starts_with("L2")));
    assert_eq!(diameter(&f), Some(4));
}

#[test]
fn dragonflies_follow_the_formulas() {
    for arr in [Arrangement::Relative, Arrangement::Absolute] {
        // balanced: a = 2p = 2h, diameter 3
        for h in 1..=4u32 {
            let s = DragonflySpec {
                arrangement: arr,
                ..DragonflySpec::new(2 * h, h, h)
            };
            let f = dragonfly(&s, &o()).unwrap();
            check_common(&f);
            let (a, g) = (2 * h as usize, (2 * h * h + 1) as usize);
            assert_eq!(f.switches.len(), a * g);
            assert_eq!(hcas(&f), a * g * h as usize);
            assert_eq!(sw_links(&f), g * a * (a - 1) / 2 + g * (g - 1) / 2);
            assert_eq!(diameter(&f), Some(3), "{s:?}");
            for si in 0..f.switches.len() {
                assert_eq!(sw_degree(&f, si), a - 1 + h as usize);
            }
            // exactly one global link between every pair of groups
            let mut pairs = BTreeSet::new();
            for (l, link) in f.links.iter().enumerate() {
                if f.hints.link_class_names[f.hints.link_class[l] as usize] == "global" {
                    let ga = f.hints.level[f.ports[link.a.idx()].node.idx()];
                    let gb = f.hints.level[f.ports[link.b.idx()].node.idx()];
                    assert_ne!(ga, gb);
                    assert!(pairs.insert((ga.min(gb), ga.max(gb))));
                }
            }
            assert_eq!(pairs.len(), g * (g - 1) / 2);
        }
        // fewer groups: still every pair joined, degree never above a-1+h
        for (a, h, g) in [
            (4u32, 2u32, 5u32),
            (4, 2, 3),
            (3, 3, 4),
            (2, 1, 2),
            (4, 4, 7),
        ] {
            let s = DragonflySpec {
                a,
                p: 1,
                h,
                g: Some(g),
                arrangement: arr,
            };
            let f = dragonfly(&s, &o()).unwrap();
            check_common(&f);
            assert_eq!(f.switches.len(), (a * g) as usize);
            let d = diameter(&f).unwrap();
            assert!(d <= 3, "{s:?}: {d}");
            let mut pairs: HashMap<(u32, u32), usize> = HashMap::new();
            for (l, link) in f.links.iter().enumerate() {
                if f.hints.link_class[l] == 2 {
                    let ga = f.hints.level[f.ports[link.a.idx()].node.idx()];
                    let gb = f.hints.level[f.ports[link.b.idx()].node.idx()];
                    *pairs.entry((ga.min(gb), ga.max(gb))).or_default() += 1;
                }
            }
            assert_eq!(pairs.len(), (g * (g - 1) / 2) as usize);
            let base = (a * h / (g - 1)) as usize;
            assert!(
                pairs.values().all(|&c| c == base || c == base + 1),
                "{pairs:?}"
            );
            for si in 0..f.switches.len() {
                assert!(sw_degree(&f, si) <= (a - 1 + h) as usize);
            }
        }
    }
    // the two arrangements differ
    let r = spec("dragonfly 4 2 2");
    let a = spec("dragonfly 4 2 2 arrangement=absolute");
    assert_ne!(r.links, a.links);
    assert_eq!(a.hints.kind, "dragonfly(a=4,p=2,h=2,g=9) absolute");
}

/// Everything a [`DragonflyPlusSpec`] promises, checked on the generated fabric: sizes, names
/// and hints, the leaf/spine cabling of every group and its port numbers, every spine's global
/// degree, every pair of groups' cable count (`floor` or `ceil` of the same share), the
/// spread of one pair's cables over the spines, leaf-to-leaf distances of at most 3.
fn check_dragonfly_plus(f: &Fabric, s: &DragonflyPlusSpec) {
    check_common(f);
    let g = s.group_count() as usize;
    let (nl, ns, p, h, w) = (
        s.leaves as usize,
        s.spines as usize,
        s.hosts as usize,
        s.global as usize,
        s.links as usize,
    );
    let gp = ns * h; // global ports per group
    assert_eq!(f.switches.len(), g * (nl + ns));
    assert_eq!(hcas(f), g * nl * p);
    // every global port is cabled, but for one when the port total is odd
    let odd = g > 1 && gp % 2 == 1 && g % 2 == 1;
    let nglobal = if g > 1 {
        (g * gp - odd as usize) / 2
    } else {
        0
    };
    assert_eq!(sw_links(f), g * nl * ns * w + nglobal, "{s:?}");
    let hk = &f.hints;
    assert_eq!(hk.link_class_names, vec!["host", "local", "global"]);
    assert!(hk.roots.is_empty());
    assert!(hk.kind.starts_with(&format!(
        "dragonflyplus groups={g} leaves={nl} spines={ns} hosts={p} global={h}"
    )));
    let name = |n: NodeId| f.nodes[n.idx()].name.as_str();
    // group, spine?, index of a switch from the hints, checked against its name and GUID order
    let at = |n: NodeId| {
        let c = &hk.coords[n.idx()];
        assert_eq!(c.len(), 3);
        assert_eq!(hk.level[n.idx()], c[0]);
        (c[0] as usize, c[1] == 1, c[2] as usize)
    };
    for (si, &n) in f.switches.iter().enumerate() {
        let (gi, spine, k) = at(n);
        let (want, order) = if spine {
            (format!("S_g{gi}_{k}"), gi * (nl + ns) + nl + k)
        } else {
            (format!("L_g{gi}_{k}"), gi * (nl + ns) + k)
        };
        assert_eq!(name(n), want);
        assert_eq!(si, order);
    }
    let mut pair: HashMap<(usize, usize), usize> = HashMap::new();
    // (group, spine, peer group) -> cables
    let mut spread: HashMap<(usize, usize, usize), usize> = HashMap::new();
    let mut short = Vec::new();
    for &n in &f.switches {
        let (gi, spine, k) = at(n);
        let mut to_spine = vec![0usize; ns];
        let mut to_leaf = vec![0usize; nl];
        let (mut ca, mut global) = (0, 0);
        for port in f.node_ports(n) {
            let Some(r) = f.remote(port) else { continue };
            let num = f.ports[port.idx()].num as usize;
            let rn = f.ports[r.idx()].node;
            if !f.is_switch(rn) {
                assert!(!spine && (1..=p).contains(&num), "{} port {num}", name(n));
                assert_eq!(name(rn), format!("H_g{gi}_{k}_{}", num - 1));
                ca += 1;
                continue;
            }
            let (gj, rspine, kj) = at(rn);
            if gj == gi {
                assert_ne!(spine, rspine, "{} - {}", name(n), name(rn));
                if spine {
                    assert_eq!((num - 1) / w, kj, "{} port {num}", name(n));
                    to_leaf[kj] += 1;
                } else {
                    assert!(num > p);
                    assert_eq!((num - p - 1) / w, kj, "{} port {num}", name(n));
                    to_spine[kj] += 1;
                }
            } else {
                assert!(spine && rspine, "global cables join spines");
                assert!(
                    (nl * w + 1..=nl * w + h).contains(&num),
                    "{} port {num}",
                    name(n)
                );
                global += 1;
                *spread.entry((gi, k, gj)).or_default() += 1;
                if gi < gj {
                    *pair.entry((gi, gj)).or_default() += 1;
                }
            }
        }
        if spine {
            assert!(to_leaf.iter().all(|&c| c == w), "{}", name(n));
            if global + 1 == h && odd {
                short.push(name(n).to_string());
            } else if g > 1 {
                assert_eq!(global, h, "{} global degree", name(n));
            } else {
                assert_eq!(global, 0);
            }
        } else {
            assert_eq!(ca, p);
            assert!(to_spine.iter().all(|&c| c == w), "{}", name(n));
        }
    }
    if odd {
        assert_eq!(short, vec![format!("S_g{}_{}", g.div_ceil(2), ns - 1)]);
    }
    if g > 1 {
        // every pair of groups joined, floor or ceil of the same share
        assert_eq!(pair.len(), g * (g - 1) / 2);
        let b = gp / (g - 1);
        assert!(pair.values().all(|&c| c == b || c == b + 1), "{pair:?}");
        let (lo, hi) = (pair.values().min().unwrap(), pair.values().max().unwrap());
        assert!(hi - lo <= 1);
        if g == gp + 1 {
            assert!(pair.values().all(|&c| c == 1));
        }
        // a pair's cables spread over the spines of each group
        for (&(gi, _, gj), &c) in &spread {
            let total = pair[&(gi.min(gj), gi.max(gj))];
            assert!(
                c <= total.div_ceil(ns),
                "{gi}->{gj}: {c} of {total} on one spine"
            );
        }
    }
    // leaves reach every leaf in at most 3 hops: leaf, spine, (spine,) leaf
    let adj = sw_adj(f);
    for a in (0..f.switches.len())
        .filter(|&x| !at(f.switches[x]).1)
        .step_by(7)
    {
        let mut dist = vec![usize::MAX; adj.len()];
        dist[a] = 0;
        let mut queue = std::collections::VecDeque::from([a]);
        while let Some(u) = queue.pop_front() {
            for &v in &adj[u] {
                if dist[v] == usize::MAX {
                    dist[v] = dist[u] + 1;
                    queue.push_back(v);
                }
            }
        }
        for (b, &d) in dist.iter().enumerate() {
            if !at(f.switches[b]).1 {
                assert!(
                    d <= 3,
                    "{} to {}: {d}",
                    name(f.switches[a]),
                    name(f.switches[b])
                );
            }
        }
    }
    assert!(connected(f));
}

#[test]
fn dragonfly_plus_small_instances_are_built_as_specified() {
    // 4 groups of 4 leaves and 4 spines, 3 global ports per spine: 12 ports per group, 4
    // cables between every pair of groups, each pair's cables on 4 different spines
    let text = "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3";
    let f = spec(text);
    let s = DragonflyPlusSpec::new(Some(4), 4, 4, 4, 3);
    assert_eq!(f, dragonfly_plus(&s, &o()).unwrap());
    assert_eq!(
        f,
        spec("dfplus groups=4 leaves=4 spines=4 hosts=4 global=3")
    );
    check_dragonfly_plus(&f, &s);
    assert_eq!(f.switches.len(), 32);
    assert_eq!(hcas(&f), 64);
    assert_eq!(sw_links(&f), 4 * 16 + 6 * 4);
    assert_eq!(
        f.hints.kind,
        "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3"
    );
    // leaves and spines both use 8 ports, spines 4 down + 3 global = 7
    for &n in &f.switches {
        let want = if f.nodes[n.idx()].name.starts_with('L') {
            8
        } else {
            7
        };
        assert_eq!(f.nodes[n.idx()].nports, want, "{}", f.nodes[n.idx()].name);
    }
    // no roots: no companion file
    assert!(roots_file(&f).is_none());
    // Group 0 lists groups 1, 2, 3 at positions 0..4, 4..8, 8..12: S_g0_0 (positions 0, 4, 8)
    // has one cable to each other group, on its global ports 5, 6, 7.
    let s0 = f.node_by_name("S_g0_0").unwrap();
    let peers: Vec<(u8, String)> = f
        .node_ports(s0)
        .filter(|&p| f.ports[p.idx()].num > 4)
        .map(|p| {
            let r = f.remote(p).unwrap();
            (
                f.ports[p.idx()].num,
                f.nodes[f.ports[r.idx()].node.idx()].name.clone(),
            )
        })
        .collect();
    let groups: Vec<(u8, &str)> = peers.iter().map(|(n, s)| (*n, &s[..4])).collect();
    assert_eq!(groups, vec![(5, "S_g1"), (6, "S_g2"), (7, "S_g3")]);

    // the maximum size: spines*global+1 groups, one cable between every pair (the default)
    let s = DragonflyPlusSpec::new(None, 2, 3, 2, 2);
    let f = spec("dragonflyplus leaves=2 spines=3 hosts=2 global=2");
    assert_eq!(f, dragonfly_plus(&s, &o()).unwrap());
    check_dragonfly_plus(&f, &s);
    assert_eq!(s.group_count(), 7);
    assert_eq!(sw_links(&f), 7 * 6 + 21);

    // shares that do not divide, parallel leaf-spine cables, no HCAs, one or two groups
    for s in [
        DragonflyPlusSpec::new(Some(5), 2, 3, 1, 2), // 6 ports over 4 peers: r = 2
        DragonflyPlusSpec::new(Some(4), 1, 7, 1, 1), // 7 over 3: r = 1, g even
        DragonflyPlusSpec::new(Some(3), 2, 1, 2, 3), // 3 over 2: r = 1, g odd: one port free
        DragonflyPlusSpec::new(Some(5), 1, 3, 1, 3), // 9 over 4: r = 1, g odd: one port free
        DragonflyPlusSpec::new(Some(9), 3, 5, 0, 3), // 15 over 8: r = 7, g odd: one port free
        DragonflyPlusSpec::new(Some(8), 3, 5, 2, 3), // 15 over 7: r = 1, g even
        DragonflyPlusSpec::new(Some(2), 2, 3, 1, 2), // 6 cables between the two groups
        DragonflyPlusSpec::new(Some(1), 3, 2, 2, 4), // one leaf/spine tree
        DragonflyPlusSpec {
            links: 3,
            ..DragonflyPlusSpec::new(Some(6), 3, 2, 2, 4)
        },
    ] {
        let f = dragonfly_plus(&s, &o()).unwrap();
        check_dragonfly_plus(&f, &s);
    }
    let f = spec("dragonflyplus groups=3 leaves=2 spines=1 hosts=2 global=3");
    // the free port is the last global port of S_g2_0: it declares one port fewer
    let short = f.node_by_name("S_g2_0").unwrap();
    assert_eq!(f.nodes[short.idx()].nports, 4);
    assert_eq!(f.nodes[f.node_by_name("S_g1_0").unwrap().idx()].nports, 5);
    // unless radix says otherwise
    let f = spec("dragonflyplus groups=3 leaves=2 spines=1 hosts=2 global=3 radix=5");
    assert!(f.switches.iter().all(|&n| f.nodes[n.idx()].nports == 5));
    let f = spec("dragonflyplus groups=2 leaves=2 spines=2 hosts=1 global=2 links=2 lmc=2");
    assert_eq!(sw_links(&f), 2 * 2 * 2 * 2 + 4);
    assert!(f.hints.kind.ends_with(" links=2"));
    for &p in &f.end_ports {
        assert_eq!(f.ports[p.idx()].lmc, 2);
    }
}

/// The JUPITER-like size: 25 groups of 32 leaves and 32 spines, radix-64 switches, 25,600
/// HCAs; 1024 global ports per group over 24 peers: 42 or 43 cables per pair.
#[test]
fn dragonfly_plus_jupiter_size() {
    let t = std::time::Instant::now();
    let text = "dragonflyplus groups=25 leaves=32 spines=32 hosts=32 global=32";
    let f = spec(text);
    eprintln!("{text} ({} HCAs): {:?}", hcas(&f), t.elapsed());
    let s = DragonflyPlusSpec::new(Some(25), 32, 32, 32, 32);
    check_dragonfly_plus(&f, &s);
    assert_eq!(hcas(&f), 25_600);
    assert_eq!(f.switches.len(), 1600);
    assert!(f.switches.iter().all(|&n| f.nodes[n.idx()].nports == 64));
    assert_eq!(sw_links(&f), 25 * 32 * 32 + 25 * 1024 / 2);
    // every spine has 32 global ports for 24 peers, so a cable to every other group: any
    // switch reaches a spine of any group in at most 2 hops, any switch in at most 3
    assert_eq!(diameter(&f), Some(3));
}

#[test]
fn dragonfly_plus_bad_parameters_are_errors_naming_them() {
    for (s, want) in [
        (
            "dragonflyplus leaves=4 spines=4 hosts=4",
            "global=N missing",
        ),
        (
            "dragonflyplus spines=4 hosts=4 global=3",
            "leaves=N missing",
        ),
        (
            "dragonflyplus groups=0 leaves=4 spines=4 hosts=4 global=3",
            "groups must be at least 1",
        ),
        (
            "dragonflyplus groups=4 leaves=0 spines=4 hosts=4 global=3",
            "leaves (per group)",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=0 hosts=4 global=3",
            "spines (per group)",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3 links=0",
            "links (cables",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=0",
            "global = 0 leaves the 4 groups disconnected",
        ),
        (
            "dragonflyplus groups=14 leaves=4 spines=4 hosts=4 global=3",
            "at most spines*global+1 = 13 groups",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=251 global=3",
            "leaf switches need 255 ports (251 HCAs + 4 spines x 1 cables)",
        ),
        (
            "dragonflyplus groups=4 leaves=200 spines=4 hosts=1 global=20 links=2",
            "spine switches need 420 ports (200 leaves x 2 cables + 20 global ports)",
        ),
        (
            "dragonflyplus groups=26 leaves=32 spines=32 hosts=32 global=32 lmc=1",
            "unicast LIDs",
        ),
        (
            "dragonflyplus groups=48 leaves=32 spines=32 hosts=32 global=32",
            "unicast LIDs",
        ),
        (
            "dragonflyplus leaves=32 spines=32 hosts=32 global=32",
            "unicast LIDs",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3 lmc=8",
            "LMC 8",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3 radix=7",
            "radix 7 is too small",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3 radix=255",
            "radix 255",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3 radix=256",
            "radix",
        ),
        (
            "dragonflyplus groups=x leaves=4 spines=4 hosts=4 global=3",
            "groups",
        ),
        (
            "dragonflyplus groups=4 leaves=4 spines=4 hosts=4 global=3 g=4",
            "unknown option",
        ),
        ("dragonflyplus 4 4 4 4 3", "missing"),
    ] {
        match s.parse::<TopoSpec>().and_then(|t| t.generate()) {
            Ok(_) => panic!("{s:?} should be an error"),
            Err(e) => assert!(e.to_string().contains(want), "{s:?}: {e}"),
        }
    }
    // a huge request is refused before anything is allocated
    let s = DragonflyPlusSpec::new(None, 1, u32::MAX, u32::MAX, u32::MAX);
    let t = std::time::Instant::now();
    assert!(dragonfly_plus(&s, &o()).is_err());
    let s = DragonflyPlusSpec::new(Some(60_000), 1, 254, 0, 253);
    assert!(dragonfly_plus(&s, &o()).is_err());
    assert!(t.elapsed().as_secs() < 2);
}

#[test]
fn slim_flies_have_diameter_2_and_the_mms_degree() {
    for q in [3u32, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19] {
        let f = slimfly(&SlimFlySpec { q, p: None }, &o()).unwrap();
        check_common(&f);
        let delta: i64 = match q % 4 {
            1 => 1,
            3 => -1,
            _ => 0,
        };
        let k = ((3 * q as i64 - delta) / 2) as usize;
        let p = k.div_ceil(2);
        let n = 2 * (q * q) as usize;
        assert_eq!(f.switches.len(), n, "q={q}");
        assert_eq!(hcas(&f), n * p, "q={q}");
        assert_eq!(sw_links(&f), n * k / 2, "q={q}");
        for si in 0..n {
            assert_eq!(sw_degree(&f, si), k, "q={q}");
            assert_eq!(hcas_on(&f, si), p);
        }
        assert_eq!(diameter(&f), Some(2), "q={q}");
    }
    let f = spec("slimfly 5 hosts=1");
    assert_eq!(hcas(&f), 50);
}

#[test]
fn hyperx_follows_the_formulas() {
    let cases: &[(&[u32], u32, u32)] = &[
        (&[4], 1, 2),
        (&[3, 4], 1, 1),
        (&[4, 4], 2, 3),
        (&[2, 3, 4], 1, 0),
        (&[3, 3, 3, 2], 3, 1),
    ];
    for &(dims, k, h) in cases {
        let s = HyperXSpec {
            dims: dims.to_vec(),
            links: k,
            hcas: h,
        };
        let f = hyperx(&s, &o()).unwrap();
        check_common(&f);
        let n: usize = dims.iter().map(|&x| x as usize).product();
        let deg: usize = dims.iter().map(|&x| (x as usize - 1) * k as usize).sum();
        assert_eq!(f.switches.len(), n);
        assert_eq!(hcas(&f), n * h as usize);
        assert_eq!(sw_links(&f), n * deg / 2);
        assert_eq!(diameter(&f), Some(dims.len()), "{s:?}");
        // every pair differing in exactly one coordinate is linked, no other pair
        let adj = sw_adj(&f);
        for (a, nb) in adj.iter().enumerate() {
            let ca = &f.hints.coords[f.switches[a].idx()];
            for b in 0..n {
                let cb = &f.hints.coords[f.switches[b].idx()];
                let diff = ca.iter().zip(cb).filter(|(x, y)| x != y).count();
                assert_eq!(nb.contains(&b), diff == 1);
            }
            assert_eq!(sw_degree(&f, a), deg);
        }
    }
}

#[test]
fn random_regular_graphs() {
    for (n, d, seed) in [
        (10u32, 3u32, 1u64),
        (32, 6, 7),
        (7, 2, 3),
        (2, 1, 0),
        (12, 11, 5),
        (50, 4, 99),
        (1, 0, 0),
    ] {
        let s = RandRegSpec {
            n,
            d,
            hcas: 1,
            seed,
        };
        let f = random_regular(&s, &o()).unwrap();
        check_common(&f);
        assert_eq!(f.switches.len(), n as usize);
        assert_eq!(sw_links(&f), (n * d / 2) as usize);
        for si in 0..n as usize {
            assert_eq!(sw_degree(&f, si), d as usize);
            assert_eq!(adj_simple(&f, si), d as usize, "no parallel links");
        }
        assert!(connected(&f), "{s:?}");
        assert_eq!(f, random_regular(&s, &o()).unwrap());
    }
    let a = spec("randreg 40 5 seed=1");
    let b = spec("randreg 40 5 seed=2");
    assert_ne!(a.links, b.links);
}

fn adj_simple(f: &Fabric, si: usize) -> usize {
    sw_adj(f)[si].len()
}

// ---------------------------------------------------------------------------------------------
// degradation, companions, determinism, options, errors
// ---------------------------------------------------------------------------------------------

#[test]
fn degrading_keeps_connectivity_names_and_guids() {
    let f = spec("torus 6x6 hcas=2");
    let g = degrade(&f, 10, 0, 3).unwrap();
    assert_eq!(sw_links(&g), sw_links(&f) - 10);
    assert_eq!(g.nodes, f.nodes);
    assert!(connected(&g));
    assert_eq!(g.hints.coords, f.hints.coords);
    assert_eq!(g.hints.link_class.len(), g.links.len());
    assert!(g.hints.kind.contains("degraded"));
    // first switch untouched, so the torus-2QoS seeds survive
    assert_eq!(sw_degree(&g, 0), 4);
    assert!(torus2qos_conf(&g).is_some());
    assert_eq!(g, degrade(&f, 10, 0, 3).unwrap());
    assert_ne!(g.links, degrade(&f, 10, 0, 4).unwrap().links);
    // LIDs stay where they were
    for (i, n) in g.nodes.iter().enumerate() {
        let j = f.node_by_name(&n.name).unwrap();
        let pg = g.port_id(
            NodeId(i as u32),
            if n.kind == NodeKind::Switch { 0 } else { 1 },
        );
        let pf = f.port_id(j, if n.kind == NodeKind::Switch { 0 } else { 1 });
        assert_eq!(g.ports[pg.idx()].lid, f.ports[pf.idx()].lid);
    }

    // switches: a fat tree losing spines and links
    let f = spec("ktree 4 3");
    let mut d = DegradeSpec::new(5, 3, 11);
    d.keep_hca_switches = true;
    let g = degrade_with(&f, &d).unwrap();
    check_names_guids_subset(&f, &g);
    assert_eq!(g.switches.len(), f.switches.len() - 3);
    assert_eq!(hcas(&g), hcas(&f));
    assert!(connected(&g));
    assert_eq!(g.hints.level.len(), g.nodes.len());
    assert!(g.hints.roots.len() >= 16 - 3);
    assert_eq!(roots_file(&g).unwrap().lines().count(), g.hints.roots.len());

    // removing switches with HCAs drops their HCAs
    let f = spec("torus 4x4 hcas=2");
    let g = degrade(&f, 0, 2, 5).unwrap();
    assert_eq!(g.switches.len(), 14);
    assert_eq!(hcas(&g), 28);
    assert!(connected(&g));
    check_names_guids_subset(&f, &g);

    // via the spec language
    let g = spec("ktree 4 3 fail-links=4 fail-seed=1");
    assert_eq!(sw_links(&g), 128 - 4);
    assert!(connected(&g));

    // impossible requests are errors
    let ring = spec("torus 5 hcas=1");
    assert!(degrade(&ring, 2, 0, 1).is_err());
    assert!(degrade(&ring, 0, 5, 1).is_err());
    assert!(degrade(&spec("ktree 2 2"), 100, 0, 1).is_err());
}

fn check_names_guids_subset(f: &Fabric, g: &Fabric) {
    let mut last = None;
    for n in &g.nodes {
        let j = f.node_by_name(&n.name).unwrap();
        assert_eq!(f.nodes[j.idx()].guid, n.guid);
        assert!(last < Some(j), "order kept");
        last = Some(j);
    }
}

#[test]
fn companions() {
    let f = spec("ktree 2 3");
    let r = roots_file(&f).unwrap();
    assert_eq!(
        r,
        "0x0000000000200008\n0x0000000000200009\n0x000000000020000a\n0x000000000020000b\n"
    );
    assert!(roots_file(&spec("torus 3x3")).is_none());
    assert!(torus2qos_conf(&f).is_none());
    assert!(torus2qos_conf(&spec("torus 5")).is_none());
    assert!(torus2qos_conf(&spec("hyperx 3x3")).is_none());
    let c = torus2qos_conf(&spec("torus 3x4x5 hcas=1")).unwrap();
    let lines = no_comments(&c);
    assert_eq!(lines[0], "torus 3 4 5");
    assert_eq!(lines.len(), 7);
    assert!(lines[1].starts_with("xp_link 0x200000 0x"));
    let c = torus2qos_conf(&spec("torus 4x4m hcas=1")).unwrap();
    assert_eq!(
        no_comments(&c),
        vec![
            "torus 4 4M 1",
            "xp_link 0x200000 0x200004",
            "xm_link 0x200000 0x20000c",
            "yp_link 0x200000 0x200001",
        ]
    );
}

#[test]
fn specs_parse_and_options_apply() {
    let s: TopoSpec = "torus 4x4 hcas=3 lmc=2 radix=12 speed=edr width=4x"
        .parse()
        .unwrap();
    assert_eq!(s.topology, Topology::Torus(TorusSpec::torus(&[4, 4], 3)));
    assert_eq!(s.options.lmc, 2);
    let f = s.generate().unwrap();
    assert!(f
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .all(|n| n.nports == 12));
    for &p in &f.end_ports {
        assert_eq!(f.ports[p.idx()].lmc, 2);
        assert_eq!(f.ports[p.idx()].lid % 4, 0);
    }
    assert!(f.links.iter().all(|l| l.speed == fabric::Speed::Edr));
    let s = TopoSpec::parse(
        "dragonfly",
        &["4", "2", "2", "--g", "5", "--arrangement=palmtree"],
    )
    .unwrap();
    assert_eq!(
        s.topology,
        Topology::Dragonfly(DragonflySpec {
            g: Some(5),
            ..DragonflySpec::new(4, 2, 2)
        })
    );
    let s: TopoSpec = "dfplus --leaves 4 spines=4 hosts=2 --global=3 links=2"
        .parse()
        .unwrap();
    assert_eq!(
        s.topology,
        Topology::DragonflyPlus(DragonflyPlusSpec {
            links: 2,
            ..DragonflyPlusSpec::new(None, 4, 4, 2, 3)
        })
    );
    let s: TopoSpec = "xgft m=4,4 w=1,2 links=2".parse().unwrap();
    assert_eq!(
        s.topology,
        Topology::Xgft(XgftSpec {
            links: 2,
            ..XgftSpec::new(&[4, 4], &[1, 2])
        })
    );
    let s: TopoSpec = "ktree 4 3 fail-links=2 fail-switches=1 fail-seed=5 keep-first=false"
        .parse()
        .unwrap();
    assert_eq!(
        s.degrade,
        Some(DegradeSpec {
            keep_first: false,
            ..DegradeSpec::new(2, 1, 5)
        })
    );
    // spec generation equals the direct call
    assert_eq!(
        spec("hyperx 3x4 links=2 hcas=1"),
        hyperx(
            &HyperXSpec {
                dims: vec![3, 4],
                links: 2,
                hcas: 1
            },
            &o()
        )
        .unwrap()
    );
    assert_eq!(
        spec("slimfly q=7"),
        slimfly(&SlimFlySpec { q: 7, p: None }, &o()).unwrap()
    );
    assert_eq!(
        spec("randreg 10 3 seed=4 hcas=1"),
        random_regular(
            &RandRegSpec {
                n: 10,
                d: 3,
                hcas: 1,
                seed: 4
            },
            &o()
        )
        .unwrap()
    );
    assert_eq!(
        spec("mesh 3x3"),
        torus(&TorusSpec::mesh(&[3, 3], 2), &o()).unwrap()
    );
}

#[test]
fn every_kind_is_deterministic() {
    for s in [
        "torus 3x4 hcas=1",
        "mesh 2x3x2",
        "ktree 3 3",
        "xgft m=2,3,2 w=1,2,2",
        "leafspine leaves=4 spines=2 hosts=3 links=2",
        "fourlevel sets=2 l0=2 l1=2 hcas=2 l3=2",
        "superpod su=2 nodes=3 rails=2 spines=3 uplinks=5 cores=4 missing=4",
        "dragonfly 4 2 2 arrangement=absolute",
        "dragonflyplus groups=5 leaves=2 spines=3 hosts=2 global=3 links=2",
        "slimfly 5",
        "hyperx 3x3",
        "randreg 20 3 seed=5",
        "torus 5x5 fail-links=5 fail-switches=2 fail-seed=3",
    ] {
        let a = spec(s);
        let b = spec(s);
        assert_eq!(a, b, "{s}");
        assert!(connected(&a), "{s}");
        if !s.contains("fail-switches") {
            check_common(&a);
        }
    }
}

#[test]
fn bad_parameters_are_errors() {
    let bad = [
        "",
        "cube 4",
        "torus",
        "torus 0x4",
        "torus 4x4x4x4x4x4x4",
        "torus 4xq",
        "torus 1000x1000x1000",
        "torus 4x4 hcas=251",
        "torus 4x4 lmc=8",
        "torus 4x4 radix=3",
        "torus 4x4 hcas=-1",
        "torus 4x4 bogus=1",
        "torus 4x4 extra",
        "torus 4x4 hcas=1 hcas=2",
        "torus 4x4 k2=triple",
        "torus 4x4 --hcas",
        "ktree 0 3",
        "ktree 3 0",
        "ktree 300 2",
        "ktree 40 3",
        "ktree 4",
        "xgft m=2,2 w=2,2",
        "xgft m=2,2 w=1",
        "xgft m=2,0 w=1,2",
        "xgft m=2,2",
        "xgft m=2,2 w=1,2 links=0",
        "ktree 4 3 leaf-hosts=",
        "ktree 4 3 leaf-hosts-random=5..2",
        "ktree 4 3 leaf-hosts-random=5",
        "ktree 4 3 leaf-hosts=1 leaf-hosts-random=1..2",
        "leafspine leaves=4 spines=2",
        "leafspine leaves=0 spines=2 hosts=2",
        "fourlevel sets=0 l0=2 l1=2 hcas=2 l3=2",
        "fourlevel sets=2 l0=2 l1=0 hcas=2 l3=2",
        "fourlevel sets=2 l0=2 l1=2 hcas=2",
        "dragonfly 4 2",
        "dragonfly 0 2 2",
        "dragonfly 4 2 2 g=10",
        "dragonfly 4 2 0 g=3",
        "dragonfly 4 2 2 g=0",
        "dragonfly 4 2 2 arrangement=spiral",
        "dragonfly 200 100 100",
        "dragonflyplus leaves=4 spines=4 hosts=4",
        "dragonflyplus groups=4 leaves=4 spines=0 hosts=4 global=3",
        "dragonflyplus groups=14 leaves=4 spines=4 hosts=4 global=3",
        "slimfly 2",
        "slimfly 6",
        "slimfly 12",
        "slimfly 157",
        "slimfly 0",
        "slimfly 101",
        "hyperx 0x3",
        "hyperx 3x3 links=0",
        "hyperx 100x100 links=3",
        "randreg 5 3",
        "randreg 4 4",
        "randreg 0 0",
        "randreg 3 0",
        "randreg 4 1",
        "randreg 10 3 seed=x",
        "torus 4x4 fail-links=100",
        "torus 4x4 fail-switches=16",
        "torus 4x4 keep-first=maybe fail-links=1",
        "torus 4x4 speed=warp",
        "torus 4x4 width=3x",
    ];
    for s in bad {
        let r = s.parse::<TopoSpec>().and_then(|t| t.generate());
        match r {
            Ok(_) => panic!("{s:?} should be an error"),
            Err(e) => assert!(!e.to_string().is_empty(), "{s:?}"),
        }
    }
    // mismatched wrap flags, direct API
    let s = TorusSpec {
        wrap: vec![true],
        ..TorusSpec::torus(&[4, 4], 1)
    };
    assert!(torus(&s, &o()).is_err());
    assert!(xgft(&XgftSpec::new(&[], &[]), &o()).is_err());
    assert!(hyperx(
        &HyperXSpec {
            dims: vec![],
            links: 1,
            hcas: 1
        },
        &o()
    )
    .is_err());
}

// ---------------------------------------------------------------------------------------------
// DGX SuperPOD-style fabrics
// ---------------------------------------------------------------------------------------------

/// What a switch of a SuperPOD is, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PodRole {
    Leaf(usize, usize),
    Spine(usize, usize),
    Core(usize, usize),
    MgmtLeaf(usize),
    MgmtSpine,
}

fn pod_role(name: &str) -> PodRole {
    let num = |s: &str| s.parse::<usize>().unwrap_or_else(|_| panic!("{name}"));
    if name == "mgmt-spine" {
        return PodRole::MgmtSpine;
    }
    if let Some(k) = name.strip_prefix("mgmt-leaf") {
        return PodRole::MgmtLeaf(num(k));
    }
    if let Some(rest) = name.strip_prefix("core") {
        let (g, i) = rest.split_once('-').unwrap();
        return PodRole::Core(num(g), num(i));
    }
    let rest = name.strip_prefix("su").unwrap_or_else(|| panic!("{name}"));
    let (u, what) = rest.split_once('-').unwrap();
    if let Some(r) = what.strip_prefix("leaf") {
        PodRole::Leaf(num(u), num(r))
    } else {
        PodRole::Spine(num(u), num(what.strip_prefix("spine").unwrap()))
    }
}

/// Everything a [`SuperPodSpec`] promises, checked on the generated fabric (with or without
/// missing cables).
fn check_superpod(f: &Fabric, s: &SuperPodSpec) {
    check_common(f);
    assert!(connected(f), "{}", f.hints.kind);
    let (su, nodes, rails, spines) = (
        s.su as usize,
        s.nodes as usize,
        s.rails as usize,
        s.spines as usize,
    );
    let (uplinks, core_links) = (s.uplinks as usize, s.core_links as usize);
    let cores = s.core_count() as usize;
    let mgmt = s.mgmt as usize;
    let mgmt_a = mgmt.div_ceil(2);
    let has_mspine = mgmt > mgmt_a;
    let group_size = |g: usize| cores / spines + usize::from(g < cores % spines);
    let nsw = su * (rails + spines) + cores + mgmt + usize::from(has_mspine);
    assert_eq!(f.switches.len(), nsw);

    let name = |n: NodeId| f.nodes[n.idx()].name.as_str();
    let roles: Vec<PodRole> = f.switches.iter().map(|&n| pod_role(name(n))).collect();
    let count = |p: &dyn Fn(&PodRole) -> bool| roles.iter().filter(|r| p(r)).count();
    assert_eq!(count(&|r| matches!(r, PodRole::Leaf(..))), su * rails);
    assert_eq!(count(&|r| matches!(r, PodRole::Spine(..))), su * spines);
    assert_eq!(count(&|r| matches!(r, PodRole::Core(..))), cores);
    assert_eq!(count(&|r| matches!(r, PodRole::MgmtLeaf(_))), mgmt);
    assert_eq!(
        count(&|r| *r == PodRole::MgmtSpine),
        usize::from(has_mspine)
    );
    for g in 0..spines {
        assert_eq!(
            count(&|r| matches!(r, PodRole::Core(x, _) if *x == g)),
            group_size(g)
        );
    }

    // CAs by kind.
    let ans: Vec<usize> = (0..f.nodes.len())
        .filter(|&i| f.nodes[i].desc == AGGREGATION_NODE_DESC)
        .collect();
    assert_eq!(ans.len(), if s.sharp { nsw } else { 0 });
    let service = |d: &str| d.to_ascii_lowercase().contains("aggregation node");
    let compute = f
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Ca && n.name.starts_with("dgx-"))
        .inspect(|n| assert!(!service(&n.desc), "{}", n.desc))
        .count();
    assert_eq!(compute, su * nodes * rails);
    let mgmt_hcas = f
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Ca && n.name.starts_with("mgmt-"))
        .filter(|n| n.desc != AGGREGATION_NODE_DESC)
        .inspect(|n| assert!(!service(&n.desc), "{}", n.desc))
        .count();
    assert_eq!(mgmt_hcas, mgmt * s.mgmt_hcas as usize);
    assert_eq!(hcas(f), compute + mgmt_hcas + ans.len());

    // Per switch: attached CAs, cables to each neighbour switch, ports.
    let mut uplinks_left = 0;
    let mut pod_cables = 0;
    for (si, &sw) in f.switches.iter().enumerate() {
        let node = &f.nodes[sw.idx()];
        let sname = node.name.as_str();
        assert!(node.nports as u32 <= MAX_PORTS);
        let mut cas = Vec::new();
        let mut nb: HashMap<&str, usize> = HashMap::new();
        let mut last_used = 0;
        for p in f.node_ports(sw) {
            let Some(r) = f.remote(p) else { continue };
            let pn = f.ports[p.idx()].num;
            last_used = last_used.max(pn);
            let rn = f.ports[r.idx()].node;
            if f.is_switch(rn) {
                *nb.entry(name(rn)).or_default() += 1;
            } else {
                cas.push((pn, &f.nodes[rn.idx()]));
            }
        }
        assert_eq!(node.nports, last_used.max(1), "{sname}: declared ports");
        let an: Vec<_> = cas
            .iter()
            .filter(|(_, n)| n.desc == AGGREGATION_NODE_DESC)
            .collect();
        if s.sharp {
            assert_eq!(an.len(), 1, "{sname}: one aggregation node");
            assert_eq!(an[0].1.name, format!("{sname} Aggregation Node"));
            assert_eq!(an[0].0, node.nports, "{sname}: the AN takes the last port");
        } else {
            assert!(an.is_empty());
        }
        let other: Vec<_> = cas
            .iter()
            .filter(|(_, n)| n.desc != AGGREGATION_NODE_DESC)
            .collect();
        let cables = |to: &str| nb.get(to).copied().unwrap_or(0);
        match roles[si] {
            PodRole::Leaf(u, r) => {
                // nodes compute HCAs of rail r of SU u on ports 1..=nodes, node i on port i+1
                assert_eq!(other.len(), nodes, "{sname}");
                for (pn, n) in &other {
                    assert_eq!(
                        n.name,
                        format!("dgx-su{u}-n{} HCA-{r}", *pn as usize - 1),
                        "{sname}"
                    );
                }
                let mut total = 0;
                for (to, c) in &nb {
                    match pod_role(to) {
                        PodRole::Spine(v, j) => {
                            assert_eq!(v, u, "{sname} -> {to}");
                            let want = uplinks / spines + usize::from(j < uplinks % spines);
                            assert!(*c <= want && (s.missing > 0 || *c == want), "{sname}");
                            total += c;
                        }
                        _ => panic!("{sname} -> {to}"),
                    }
                }
                if s.missing == 0 {
                    assert_eq!(nb.len(), spines, "{sname} reaches every spine");
                }
                assert!(total >= 1, "{sname} keeps an uplink");
                uplinks_left += total;
            }
            PodRole::Spine(u, j) => {
                assert!(other.is_empty(), "{sname}");
                for (to, c) in &nb {
                    match pod_role(to) {
                        PodRole::Leaf(..) => {}
                        PodRole::Core(g, _) => {
                            assert_eq!(g, j, "{sname} -> {to}: core group");
                            assert!(*c <= core_links && (s.missing > 0 || *c == core_links));
                            pod_cables += c;
                        }
                        PodRole::MgmtLeaf(k) => {
                            assert!((u, j) == (0, 0) && k < mgmt_a && *c == 2, "{sname} -> {to}")
                        }
                        _ => panic!("{sname} -> {to}"),
                    }
                }
                if s.missing == 0 {
                    for i in 0..group_size(j) {
                        assert_eq!(cables(&format!("core{j}-{i}")), core_links);
                    }
                }
            }
            PodRole::Core(..) => {
                assert!(other.is_empty(), "{sname}");
                assert!(nb
                    .keys()
                    .all(|to| matches!(pod_role(to), PodRole::Spine(..) | PodRole::MgmtSpine)));
            }
            PodRole::MgmtLeaf(k) => {
                assert_eq!(other.len(), s.mgmt_hcas as usize, "{sname}");
                for (i, (pn, n)) in other.iter().enumerate() {
                    assert_eq!(n.name, format!("mgmt-{k} HCA-{i}"));
                    assert_eq!(*pn as usize, i + 1);
                }
                let up = if k < mgmt_a {
                    "su0-spine0"
                } else {
                    "mgmt-spine"
                };
                assert_eq!(nb.len(), 1, "{sname}");
                assert_eq!(cables(up), 2, "{sname}");
            }
            PodRole::MgmtSpine => {
                assert!(other.is_empty());
                let to_cores: Vec<(&str, usize)> = nb
                    .iter()
                    .filter(|(to, _)| matches!(pod_role(to), PodRole::Core(..)))
                    .map(|(to, c)| (*to, *c))
                    .collect();
                assert_eq!(to_cores.len(), s.mgmt_cores as usize);
                assert!(to_cores.iter().all(|&(_, c)| c == 1));
                // the first cores of distinct groups
                let groups: BTreeSet<usize> = to_cores
                    .iter()
                    .map(|(to, _)| match pod_role(to) {
                        PodRole::Core(g, _) => g,
                        _ => unreachable!(),
                    })
                    .collect();
                assert_eq!(groups.len(), (s.mgmt_cores as usize).min(spines));
                assert_eq!(nb.len(), to_cores.len() + mgmt - mgmt_a);
            }
        }
    }
    // Exactly `missing` pod cables gone.
    let planned = su * rails * uplinks + su * cores * core_links;
    assert_eq!(uplinks_left + pod_cables + s.missing as usize, planned);
    let mgmt_cables = 2 * mgmt + if has_mspine { s.mgmt_cores as usize } else { 0 };
    assert_eq!(sw_links(f), planned - s.missing as usize + mgmt_cables);

    // Hints: levels, roots = the cores, link classes.
    let h = &f.hints;
    for (si, &sw) in f.switches.iter().enumerate() {
        let want = match roles[si] {
            PodRole::Core(..) => 0,
            PodRole::Spine(..) | PodRole::MgmtSpine => 1,
            PodRole::Leaf(..) | PodRole::MgmtLeaf(_) => 2,
        };
        assert_eq!(h.level[sw.idx()], want, "{}", name(sw));
    }
    assert!(f
        .nodes
        .iter()
        .enumerate()
        .all(|(i, n)| n.kind == NodeKind::Switch || h.level[i] == u32::MAX));
    let roots: BTreeSet<&str> = h.roots.iter().map(|&r| name(r)).collect();
    let core_names: BTreeSet<&str> = f
        .switches
        .iter()
        .map(|&n| name(n))
        .filter(|n| n.starts_with("core"))
        .collect();
    assert_eq!(roots, core_names);
    assert_eq!(
        h.link_class_names,
        vec!["host", "leaf-spine", "spine-core", "mgmt"]
    );
    for (l, link) in f.links.iter().enumerate() {
        let (a, b) = (f.ports[link.a.idx()].node, f.ports[link.b.idx()].node);
        if !f.is_switch(a) || !f.is_switch(b) {
            continue;
        }
        let (ra, rb) = (pod_role(name(a)), pod_role(name(b)));
        let mg = |r: PodRole| matches!(r, PodRole::MgmtLeaf(_) | PodRole::MgmtSpine);
        let want = if mg(ra) || mg(rb) {
            "mgmt"
        } else if matches!(ra, PodRole::Leaf(..)) || matches!(rb, PodRole::Leaf(..)) {
            "leaf-spine"
        } else {
            "spine-core"
        };
        assert_eq!(h.link_class_names[h.link_class[l] as usize], want);
    }
    assert!(h.kind.starts_with(&format!("superpod su={}", s.su)));
}

/// The most leaf-spine and spine-core cables that can go with the switches staying connected:
/// every cable but the fewest that join the components the management cables leave
/// (matroid rank: `candidates - (components without them - 1)`).
fn superpod_max_missing(f: &Fabric) -> usize {
    let ns = f.switches.len();
    let mut parent: Vec<usize> = (0..ns).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        p[x] = r;
        r
    }
    let mut comps = ns;
    let mut cand = 0;
    for (l, link) in f.links.iter().enumerate() {
        let (a, b) = (f.ports[link.a.idx()].node, f.ports[link.b.idx()].node);
        if !f.is_switch(a) || !f.is_switch(b) {
            continue;
        }
        if f.hints.link_class_names[f.hints.link_class[l] as usize] != "mgmt" {
            cand += 1;
            continue;
        }
        let (x, y) = (
            find(&mut parent, f.switch_of(a).unwrap().idx()),
            find(&mut parent, f.switch_of(b).unwrap().idx()),
        );
        if x != y {
            parent[x] = y;
            comps -= 1;
        }
    }
    cand - (comps - 1)
}

#[test]
fn superpod_small_instances_are_built_as_specified() {
    // defaults, 2 SUs
    let f = spec("superpod su=2");
    let s = SuperPodSpec::new(2);
    check_superpod(&f, &s);
    assert_eq!(f.switches.len(), 16 + 20 + 10 + 4 + 1);
    assert_eq!(hcas(&f), 320 + 12 + 51);
    assert_eq!(sw_links(&f), 320 + 20 + 8 + 2);
    // a leaf uses 20 HCA ports, 20 uplinks and the aggregation node
    let leaf = f.node_by_name("su1-leaf7").unwrap();
    assert_eq!(f.nodes[leaf.idx()].nports, 41);
    assert_eq!(
        spec("superpod 2"),
        superpod(&s, &o()).unwrap(),
        "positional su"
    );
    // the companion roots file lists the cores, in GUID order
    let roots = roots_file(&f).unwrap();
    assert_eq!(roots.lines().count(), 10);
    assert_eq!(roots.lines().next().unwrap(), "0x0000000000200024"); // switch 36 = core0-0
    assert_eq!(f.nodes[36].name, "core0-0");
    // the management spine hangs off core0-0 and core1-0
    let ms = f.node_by_name("mgmt-spine").unwrap();
    let mut to: Vec<&str> = f
        .node_ports(ms)
        .filter_map(|p| f.remote(p))
        .map(|r| f.nodes[f.ports[r.idx()].node.idx()].name.as_str())
        .filter(|n| n.starts_with("core"))
        .collect();
    to.sort();
    assert_eq!(to, vec!["core0-0", "core1-0"]);

    // sizes that do not divide evenly: 7 uplinks over 4 spines (2,2,2,1), 10 cores in 4 groups
    // (3,3,2,2), double spine-core cables, 3 management leaves, 5 management cores
    let text = "superpod su=3 nodes=5 rails=3 spines=4 uplinks=7 cores=10 core-links=2 mgmt=3 mgmt-hcas=2 mgmt-cores=5";
    let f = spec(text);
    let s = SuperPodSpec {
        nodes: 5,
        rails: 3,
        spines: 4,
        uplinks: 7,
        cores: Some(10),
        core_links: 2,
        mgmt: 3,
        mgmt_hcas: 2,
        mgmt_cores: 5,
        ..SuperPodSpec::new(3)
    };
    assert_eq!(f, superpod(&s, &o()).unwrap());
    check_superpod(&f, &s);
    let nm: Vec<&str> = f
        .switches
        .iter()
        .map(|&n| f.nodes[n.idx()].name.as_str())
        .collect();
    assert_eq!(
        &nm[21..31],
        &[
            "core0-0", "core0-1", "core0-2", "core1-0", "core1-1", "core1-2", "core2-0", "core2-1",
            "core3-0", "core3-1"
        ]
    );

    // no SHARP, no management network, one SU (default cores = spines)
    let f = spec("superpod su=1 nodes=3 rails=2 spines=3 uplinks=4 sharp=false mgmt=0");
    let s = SuperPodSpec {
        nodes: 3,
        rails: 2,
        spines: 3,
        uplinks: 4,
        sharp: false,
        mgmt: 0,
        ..SuperPodSpec::new(1)
    };
    check_superpod(&f, &s);
    assert_eq!(f.switches.len(), 2 + 3 + 3);
    // one management leaf: it hangs off su0-spine0 and there is no management spine
    let s = SuperPodSpec { mgmt: 1, ..s };
    let f = superpod(&s, &o()).unwrap();
    check_superpod(&f, &s);
    assert!(f.node_by_name("mgmt-spine").is_none());

    // radix: the defaults need 41 ports
    let f = spec("superpod su=1 radix=41");
    assert!(f.switches.iter().all(|&n| f.nodes[n.idx()].nports == 41));
    let e = "superpod su=1 radix=40"
        .parse::<TopoSpec>()
        .unwrap()
        .generate()
        .unwrap_err();
    assert!(e.to_string().contains("leaf switches need 41 ports"), "{e}");
}

#[test]
fn superpod_missing_cables() {
    let full = spec("superpod su=2");
    let f = spec("superpod su=2 missing=3");
    let s = SuperPodSpec {
        missing: 3,
        ..SuperPodSpec::new(2)
    };
    check_superpod(&f, &s);
    assert_eq!(sw_links(&f), sw_links(&full) - 3);
    assert_eq!(f.switches.len(), full.switches.len());
    assert_eq!(hcas(&f), hcas(&full));
    assert!(f.hints.kind.contains("missing=3 missing-seed=1"));
    // deterministic, and the seed matters
    assert_eq!(f, spec("superpod su=2 missing=3"));
    assert_eq!(f, spec("superpod su=2 missing=3 missing-seed=1"));
    assert_ne!(
        f.links,
        spec("superpod su=2 missing=3 missing-seed=2").links
    );
    // ports are not renumbered: every remaining cable sits where it was planned
    let key = |g: &Fabric, l: &fabric::Link| {
        let (a, b) = (&g.ports[l.a.idx()], &g.ports[l.b.idx()]);
        let mut k = [
            (g.nodes[a.node.idx()].name.clone(), a.num),
            (g.nodes[b.node.idx()].name.clone(), b.num),
        ];
        k.sort();
        k
    };
    let planned: BTreeSet<_> = full.links.iter().map(|l| key(&full, l)).collect();
    assert!(f.links.iter().all(|l| planned.contains(&key(&f, l))));

    // A small tree with spare cables: 2 leaves x 2 spines (4 cables) and 2 cores on bridges:
    // 6 switches, 6 cables, so exactly one can go.
    let base = "superpod su=1 nodes=1 rails=2 spines=2 uplinks=2 cores=2 mgmt=0";
    let f = spec(&format!("{base} missing=1"));
    assert_eq!(sw_links(&f), 5);
    assert!(connected(&f));
    assert_eq!(superpod_max_missing(&spec(base)), 1);
    let e = format!("{base} missing=2")
        .parse::<TopoSpec>()
        .unwrap()
        .generate()
        .unwrap_err();
    assert!(e.to_string().contains("at most 1"), "{e}");
    // parallel cables: one leaf, one spine, 3 uplinks: two of them can go, the last stays
    let base = "superpod su=1 nodes=1 rails=1 spines=1 uplinks=3 cores=1 mgmt=0";
    let f = spec(&format!("{base} missing=2"));
    assert_eq!(sw_links(&f), 2);
    for k in [3, 5, 1000] {
        assert!(format!("{base} missing={k}")
            .parse::<TopoSpec>()
            .unwrap()
            .generate()
            .is_err());
    }
}

#[test]
fn superpod_20_scalable_units() {
    let t = std::time::Instant::now();
    let f = spec("superpod su=20");
    eprintln!("superpod su=20: {:?}", t.elapsed());
    check_superpod(&f, &SuperPodSpec::new(20));
    // 160 leaves, 200 spines, 100 cores, 4 management leaves, 1 management spine
    assert_eq!(f.switches.len(), 465);
    // 3200 compute HCAs, 12 management HCAs, 465 aggregation nodes
    assert_eq!(hcas(&f), 3677);
    // leaf to leaf 4 hops; the farthest pair is a core of group 2..9 and a management leaf
    // behind the management spine (core, spine, leaf, spine, core of group 0, mgmt-spine, leaf)
    assert_eq!(diameter(&f), Some(6));
    let f = spec("superpod su=20 missing=50 missing-seed=7");
    check_superpod(
        &f,
        &SuperPodSpec {
            missing: 50,
            missing_seed: 7,
            ..SuperPodSpec::new(20)
        },
    );
}

#[test]
fn superpod_bad_parameters_are_errors_naming_them() {
    for (s, want) in [
        ("superpod", "SU missing"),
        ("superpod su=0", "su (scalable units)"),
        ("superpod su=2 nodes=0", "nodes"),
        ("superpod su=2 rails=0", "rails"),
        ("superpod su=2 spines=0", "spines"),
        ("superpod su=2 core-links=0", "core-links"),
        ("superpod su=2 cores=9", "cores=9 is below spines=10"),
        ("superpod su=2 cores=0", "cores=0"),
        ("superpod su=2 uplinks=9", "uplinks=9 is below spines=10"),
        ("superpod su=2 mgmt-cores=0", "mgmt-cores=0"),
        ("superpod su=2 mgmt-cores=11", "mgmt-cores=11"),
        ("superpod su=2 sharp=maybe", "sharp"),
        ("superpod su=2 missing=x", "missing"),
        ("superpod su=2 spine=3", "unknown option"),
        ("superpod su=1 nodes=240", "leaf switches need 261 ports (240 HCAs + 20 uplinks + 1 aggregation node)"),
        ("superpod su=1 nodes=234 sharp=false radix=253", "leaf switches need 254 ports (234 HCAs + 20 uplinks), more than radix=253"),
        ("superpod su=1 nodes=235 sharp=false", "leaf switches need 255"),
        ("superpod su=300 spines=1 uplinks=1 nodes=1 rails=1", "core switches need 302 ports"),
        ("superpod su=1 rails=32 uplinks=80", "spine switches need 258 ports"),
        ("superpod su=1 spines=1 uplinks=1 rails=1 cores=1 mgmt=300 mgmt-hcas=0 mgmt-cores=1", "su0-spine0 (the spine with the management leaves) needs 303 ports"),
        ("superpod su=1 nodes=1 rails=1 spines=3 uplinks=3 cores=3 mgmt=2 mgmt-hcas=1 mgmt-cores=3 sharp=false radix=4", "the management spine needs 5 ports (1 management leaves x 2 cables + 3 cores), more than radix=4"),
        ("superpod su=1 mgmt-hcas=260", "management leaf switches need 263 ports"),
        ("superpod su=1 mgmt=600 mgmt-hcas=0", "ports"),
        ("superpod su=250", "unicast LIDs"),
        ("superpod su=4000000000 spines=1 uplinks=1 nodes=200 rails=200 core-links=1 cores=1 mgmt=0", "core switches need 4000000001 ports"),
        ("superpod su=2 missing=100000", "missing=100000"),
    ] {
        match s.parse::<TopoSpec>().and_then(|t| t.generate()) {
            Ok(_) => panic!("{s:?} should be an error"),
            Err(e) => assert!(e.to_string().contains(want), "{s:?}: {e}"),
        }
    }
    // mgmt-cores does not matter without a management spine
    assert!(spec("superpod su=1 mgmt=1 mgmt-cores=0")
        .node_by_name("mgmt-leaf0")
        .is_some());
    // and a huge fabric is refused before anything is allocated
    let s = SuperPodSpec {
        nodes: 1,
        rails: 1,
        spines: 1,
        uplinks: 1,
        cores: Some(1),
        mgmt: 0,
        ..SuperPodSpec::new(u32::MAX)
    };
    let t = std::time::Instant::now();
    assert!(superpod(&s, &o()).is_err());
    assert!(t.elapsed().as_secs() < 2);
}

// ---------------------------------------------------------------------------------------------
// property tests
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn prop_torus(dims in prop::collection::vec(1u32..6, 1..4), wraps in prop::collection::vec(any::<bool>(), 3), h in 0u32..3, single in any::<bool>()) {
        let wrap: Vec<bool> = wraps[..dims.len()].to_vec();
        let s = TorusSpec { dims: dims.clone(), wrap: wrap.clone(), hcas: h, k2_single_link: single };
        let f = torus(&s, &o()).unwrap();
        let (n, nh, nl, d) = torus_expect(&dims, &wrap, h, single);
        prop_assert_eq!(f.switches.len(), n);
        prop_assert_eq!(hcas(&f), nh);
        prop_assert_eq!(sw_links(&f), nl);
        prop_assert_eq!(diameter(&f), Some(d));
        prop_assert!(connected(&f));
    }

    #[test]
    fn prop_xgft(m in prop::collection::vec(1u32..4, 1..4), w in prop::collection::vec(1u32..4, 4), links in 1u32..3) {
        let mut w: Vec<u32> = w[..m.len()].to_vec();
        w[0] = 1;
        let mut s = XgftSpec::new(&m, &w);
        s.links = links;
        let f = xgft(&s, &o()).unwrap();
        let (levels, nh, nl) = xgft_expect(&m, &w, links as usize);
        prop_assert_eq!(f.switches.len(), levels.iter().sum::<usize>());
        prop_assert_eq!(hcas(&f), nh);
        prop_assert_eq!(sw_links(&f), nl);
        prop_assert_eq!(f.hints.roots.len(), *levels.last().unwrap());
        prop_assert!(connected(&f));
    }

    #[test]
    fn prop_four_level(sets in 1u32..4, l0 in 1u32..4, l1 in 1u32..4, h in 0u32..3, l3 in 0u32..3) {
        let f = four_level(&FourLevelSpec { sets, l0, l1, hcas: h, l3 }, &o()).unwrap();
        prop_assert_eq!(f.switches.len() as u32, sets * (l0 + l1) + l1 + l3);
        prop_assert_eq!(hcas(&f) as u32, sets * l0 * h);
        prop_assert_eq!(sw_links(&f) as u32, sets * l0 * l1 + sets * l1 + l1 * l3);
        prop_assert!(connected(&f));
    }

    /// Every parameter small, sizes that do not divide evenly included (uplinks over spines,
    /// cores over core groups, odd management leaf counts); `missing` succeeds exactly when it
    /// is at most what can go while the switches stay connected.
    #[test]
    fn prop_superpod(su in 1u32..4, nodes in 1u32..4, rails in 1u32..4, spines in 1u32..5,
                     extra_uplinks in 0u32..5, extra_cores in prop::option::of(0u32..6),
                     core_links in 1u32..3, sharp in any::<bool>(), mgmt in 0u32..5,
                     mgmt_hcas in 0u32..3, mgmt_cores in 1u32..5, missing in 0u32..12,
                     seed in any::<u64>()) {
        let mut s = SuperPodSpec {
            nodes,
            rails,
            spines,
            uplinks: spines + extra_uplinks,
            cores: extra_cores.map(|c| spines + c),
            core_links,
            sharp,
            mgmt,
            mgmt_hcas,
            mgmt_cores,
            missing: 0,
            missing_seed: seed,
            ..SuperPodSpec::new(su)
        };
        s.mgmt_cores = s.mgmt_cores.min(s.core_count() as u32);
        let full = superpod(&s, &o()).unwrap();
        check_superpod(&full, &s);
        let most = superpod_max_missing(&full);
        s.missing = missing;
        match superpod(&s, &o()) {
            Ok(f) => {
                prop_assert!(missing as usize <= most);
                check_superpod(&f, &s);
                prop_assert_eq!(sw_links(&f), sw_links(&full) - missing as usize);
                prop_assert_eq!(&f, &superpod(&s, &o()).unwrap());
            }
            Err(e) => {
                prop_assert!(missing as usize > most, "{}", e);
                prop_assert!(e.to_string().contains("missing="), "{}", e);
            }
        }
    }

    #[test]
    fn prop_dragonfly(a in 1u32..5, p in 0u32..3, h in 1u32..4, shrink in 0u32..6, absolute in any::<bool>()) {
        let gmax = a * h + 1;
        let g = gmax.saturating_sub(shrink).max(2);
        let s = DragonflySpec { a, p, h, g: Some(g), arrangement: if absolute { Arrangement::Absolute } else { Arrangement::Relative } };
        let f = dragonfly(&s, &o()).unwrap();
        prop_assert_eq!(f.switches.len() as u32, a * g);
        prop_assert_eq!(hcas(&f) as u32, a * g * p);
        prop_assert!(connected(&f));
        prop_assert!(diameter(&f).unwrap() <= 3);
        if g == gmax {
            prop_assert_eq!(sw_links(&f) as u32, g * a * (a - 1) / 2 + g * (g - 1) / 2);
        }
    }

    /// Every group count from the maximum down to 1, shares that do not divide included.
    #[test]
    fn prop_dragonfly_plus(leaves in 1u32..4, spines in 1u32..5, hosts in 0u32..3, global in 1u32..5,
                           shrink in 0u32..12, links in 1u32..3) {
        let g = (spines * global + 1).saturating_sub(shrink).max(1);
        let s = DragonflyPlusSpec { links, ..DragonflyPlusSpec::new(Some(g), leaves, spines, hosts, global) };
        let f = dragonfly_plus(&s, &o()).unwrap();
        check_dragonfly_plus(&f, &s);
        prop_assert_eq!(&f, &dragonfly_plus(&s, &o()).unwrap());
    }

    #[test]
    fn prop_hyperx(dims in prop::collection::vec(1u32..5, 1..4), k in 1u32..3, h in 0u32..3) {
        let f = hyperx(&HyperXSpec { dims: dims.clone(), links: k, hcas: h }, &o()).unwrap();
        let n: usize = dims.iter().map(|&x| x as usize).product();
        let deg: usize = dims.iter().map(|&x| (x as usize - 1) * k as usize).sum();
        prop_assert_eq!(f.switches.len(), n);
        prop_assert_eq!(sw_links(&f), n * deg / 2);
        prop_assert_eq!(diameter(&f), Some(dims.iter().filter(|&&x| x > 1).count()));
    }

    #[test]
    fn prop_random_regular(n in 1u32..40, d in 0u32..8, h in 0u32..3, seed in any::<u64>()) {
        let s = RandRegSpec { n, d, hcas: h, seed };
        let valid = (d < n || (n == 1 && d == 0)) && (n * d) & 1 == 0 && (d >= 1 || n == 1) && (d != 1 || n == 2);
        match random_regular(&s, &o()) {
            Ok(f) => {
                prop_assert!(valid);
                prop_assert_eq!(sw_links(&f) as u32, n * d / 2);
                prop_assert!(connected(&f));
                for si in 0..n as usize {
                    prop_assert_eq!(sw_degree(&f, si), d as usize);
                }
            }
            Err(_) => prop_assert!(!valid),
        }
    }

    #[test]
    fn prop_degrade(dims in prop::collection::vec(2u32..6, 2..3), links in 0usize..6, sws in 0usize..3, seed in any::<u64>()) {
        let f = torus(&TorusSpec::torus(&dims, 1), &o()).unwrap();
        match degrade(&f, links, sws, seed) {
            Ok(g) => {
                prop_assert!(connected(&g));
                prop_assert_eq!(g.switches.len(), f.switches.len() - sws);
                prop_assert_eq!(g.hints.link_class.len(), g.links.len());
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn prop_any_spec_string_never_panics(kind in prop::sample::select(vec!["torus", "mesh", "ktree", "xgft", "leafspine", "fourlevel", "superpod", "dragonfly", "dragonflyplus", "slimfly", "hyperx", "randreg", "x"]),
                                         args in prop::collection::vec(prop::sample::select(vec!["0", "1", "2", "3", "5", "7", "300", "4x4", "2x0", "hcas=1", "m=2,2", "w=1,2", "leaves=3", "spines=2", "hosts=2", "sets=2", "l0=1", "l1=2", "l3=1", "g=3", "links=2", "lmc=1", "radix=1", "seed=3", "fail-links=1", "fail-switches=1", "leaf-hosts=1,0", "su=1", "nodes=2", "rails=2", "uplinks=3", "cores=3", "core-links=2", "mgmt=3", "mgmt-cores=3", "sharp=false", "missing=2", "missing=40", "groups=3", "global=2"]), 0..6)) {
        if let Ok(s) = TopoSpec::parse(kind, &args) {
            if let Ok(f) = s.generate() {
                prop_assert!(connected(&f));
            }
        }
    }
}
