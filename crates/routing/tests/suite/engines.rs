//! Engine tests: reachability of every (end port, destination LID) pair, deadlock freedom of
//! the up/down-based engines (proptest over faults), expected credit loops of MinHop/DOR on
//! tori, fat-tree balance, determinism across thread counts, chaining.
//!
//! Fabrics are built here with `FabricBuilder` (small tori/meshes with coordinate hints,
//! k-ary n-trees with root hints, the 4-level tree of ftree-balance.md, rings, random regular
//! graphs). The walker and CDG check are local to this file.

#![allow(clippy::needless_range_loop)]

use fabric::SwitchIdx;

use fabric::rng::Rng;
use fabric::{
    BuildOptions, Fabric, FabricBuilder, FaultMask, LinkId, NodeId, NodeKind, Speed, Width, NO_PORT,
};
use proptest::prelude::*;
use routing::engines::{
    by_name, engine_names, route_chain, Dir, EngineError, RouteOptions, UpDownRanking,
};
use routing::Routing;
use std::collections::HashMap;

use crate::common;

// ---------------------------------------------------------------------------------------------
// fabric builders

fn guid(i: usize) -> u64 {
    0x0002_c900_0000_0000 + (i as u64) * 0x100
}

/// Torus or mesh with `cas` CAs per switch; coordinates in the hints.
fn torus(dims: &[u32], wrap: bool, cas: u8, lmc: u8) -> Fabric {
    let mut b = FabricBuilder::new();
    let nd = dims.len();
    let total: usize = dims.iter().map(|&d| d as usize).product();
    let nports = (2 * nd) as u8 + cas;
    let coord = |mut i: usize| -> Vec<u32> {
        let mut c = Vec::new();
        for &d in dims {
            c.push((i % d as usize) as u32);
            i /= d as usize;
        }
        c
    };
    let index = |c: &[u32]| -> usize {
        let mut i = 0usize;
        for k in (0..nd).rev() {
            i = i * dims[k] as usize + c[k] as usize;
        }
        i
    };
    let mut sw = Vec::new();
    let mut coords = Vec::new();
    for i in 0..total {
        let c = coord(i);
        sw.push(
            b.add_node(
                NodeKind::Switch,
                nports,
                guid(i),
                format!("S{i}"),
                format!("switch {c:?}"),
            )
            .unwrap(),
        );
        coords.push(c);
    }
    for i in 0..total {
        for k in 0..nd {
            let mut c = coords[i].clone();
            if c[k] + 1 < dims[k] {
                c[k] += 1;
            } else if wrap && dims[k] > 2 {
                c[k] = 0;
            } else if wrap && dims[k] == 2 {
                c[k] = 0; // second parallel link of a radix-2 ring
            } else {
                continue;
            }
            let j = index(&c);
            if j == i {
                continue;
            }
            b.connect(
                sw[i],
                1 + 2 * k as u8,
                sw[j],
                2 + 2 * k as u8,
                Width::X4,
                Speed::Edr,
            )
            .unwrap();
        }
    }
    for i in 0..total {
        for c in 0..cas {
            let g = guid(10_000 + i * 8 + c as usize);
            let ca = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    g,
                    format!("H{i}_{c}"),
                    format!("host {i} {c}"),
                )
                .unwrap();
            b.connect(sw[i], (2 * nd) as u8 + 1 + c, ca, 1, Width::X4, Speed::Edr)
                .unwrap();
        }
    }
    // coords are indexed by NodeId: switches first (0..total), then CAs
    let mut hc = vec![Vec::new(); b.num_nodes()];
    for i in 0..total {
        hc[sw[i].idx()] = coords[i].clone();
    }
    b.hints.coords = hc;
    b.hints.dims = dims.to_vec();
    b.hints.wrap = vec![wrap; nd];
    b.hints.kind = format!("{} {:?}", if wrap { "torus" } else { "mesh" }, dims);
    b.build_with(BuildOptions {
        lmc,
        reassign_lids: false,
    })
    .unwrap()
}

/// k-ary n-tree: n levels of k^(n-1) switches (level 0 = roots), k CAs per leaf.
/// `ans`: add one "Mellanox Technologies Aggregation Node" CA to every switch.
fn kary_ntree(k: usize, n: usize, ans: bool, lmc: u8) -> Fabric {
    let per = k.pow(n as u32 - 1);
    let mut b = FabricBuilder::new();
    let nports = (2 * k + 1) as u8;
    let mut sw = vec![vec![NodeId(0); per]; n];
    let mut levels = Vec::new();
    for (l, row) in sw.iter_mut().enumerate() {
        for (w, slot) in row.iter_mut().enumerate() {
            let i = l * per + w;
            *slot = b
                .add_node(
                    NodeKind::Switch,
                    nports,
                    guid(i),
                    format!("S{l}_{w}"),
                    format!("switch L{l} {w}"),
                )
                .unwrap();
            levels.push(l as u32);
        }
    }
    let digit = |w: usize, i: usize| (w / k.pow(i as u32)) % k;
    for l in 0..n - 1 {
        for w in 0..per {
            for x in 0..k {
                // lower switch: same digits except digit l = x
                let wl = w - digit(w, l) * k.pow(l as u32) + x * k.pow(l as u32);
                let up_port = 1 + digit(w, l) as u8; // at the lower switch
                let down_port = (k + 1 + x) as u8; // at the upper switch
                b.connect(
                    sw[l][w],
                    down_port,
                    sw[l + 1][wl],
                    up_port,
                    Width::X4,
                    Speed::Edr,
                )
                .unwrap();
            }
        }
    }
    let mut ca_i = 0;
    for w in 0..per {
        for c in 0..k {
            let ca = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    guid(100_000 + ca_i),
                    format!("H{ca_i}"),
                    format!("node{ca_i} HCA-1"),
                )
                .unwrap();
            ca_i += 1;
            b.connect(
                sw[n - 1][w],
                (k + 1 + c) as u8,
                ca,
                1,
                Width::X4,
                Speed::Edr,
            )
            .unwrap();
        }
    }
    if ans {
        for l in 0..n {
            for w in 0..per {
                let i = l * per + w;
                let an = b
                    .add_node(
                        NodeKind::Ca,
                        1,
                        guid(200_000 + i),
                        format!("AN{i}"),
                        "Mellanox Technologies Aggregation Node",
                    )
                    .unwrap();
                b.connect(sw[l][w], nports, an, 1, Width::X4, Speed::Edr)
                    .unwrap();
            }
        }
    }
    let mut lv = levels;
    lv.resize(b.num_nodes(), u32::MAX);
    b.hints.level = lv;
    b.hints.roots = sw[0].clone();
    b.hints.kind = format!("{k}-ary {n}-tree");
    b.build_with(BuildOptions {
        lmc,
        reassign_lids: false,
    })
    .unwrap()
}

/// The 4-level tree of ftree-balance.md. Returns the fabric and per-switch level (0 = L0 leaves).
fn four_level(sets: usize, l0: usize, l1: usize, hcas: usize, l3: usize) -> (Fabric, Vec<u32>) {
    let mut b = FabricBuilder::new();
    let mut lvl = Vec::new();
    let mut i = 0;
    let mut add = |b: &mut FabricBuilder, l: u32, np: u8, lvl: &mut Vec<u32>| {
        i += 1;
        lvl.push(l);
        b.add_node(
            NodeKind::Switch,
            np,
            guid(i),
            format!("S{i}"),
            format!("L{l} switch"),
        )
        .unwrap()
    };
    let mut s0 = Vec::new();
    let mut s1 = Vec::new();
    for _ in 0..sets {
        s0.push(
            (0..l0)
                .map(|_| add(&mut b, 0, (l1 + hcas) as u8, &mut lvl))
                .collect::<Vec<_>>(),
        );
        s1.push(
            (0..l1)
                .map(|_| add(&mut b, 1, (l0 + 1) as u8, &mut lvl))
                .collect::<Vec<_>>(),
        );
    }
    let s2: Vec<NodeId> = (0..l1)
        .map(|_| add(&mut b, 2, (sets + l3) as u8, &mut lvl))
        .collect();
    let s3: Vec<NodeId> = (0..l3)
        .map(|_| add(&mut b, 3, l1 as u8, &mut lvl))
        .collect();
    for s in 0..sets {
        for (a, &x) in s0[s].iter().enumerate() {
            for (c, &y) in s1[s].iter().enumerate() {
                b.connect(x, 1 + c as u8, y, 1 + a as u8, Width::X4, Speed::Edr)
                    .unwrap();
            }
        }
        for (c, &y) in s1[s].iter().enumerate() {
            b.connect(y, (l0 + 1) as u8, s2[c], 1 + s as u8, Width::X4, Speed::Edr)
                .unwrap();
        }
    }
    for (c, &y) in s2.iter().enumerate() {
        for (d, &z) in s3.iter().enumerate() {
            b.connect(
                y,
                (sets + 1 + d) as u8,
                z,
                1 + c as u8,
                Width::X4,
                Speed::Edr,
            )
            .unwrap();
        }
    }
    let mut h = 0;
    for set in &s0 {
        for &x in set {
            for c in 0..hcas {
                let ca = b
                    .add_node(
                        NodeKind::Ca,
                        1,
                        guid(50_000 + h),
                        format!("H{h}"),
                        format!("cn{h}"),
                    )
                    .unwrap();
                h += 1;
                b.connect(x, (l1 + 1 + c) as u8, ca, 1, Width::X4, Speed::Edr)
                    .unwrap();
            }
        }
    }
    let f = b.build().unwrap();
    (f, lvl)
}

/// Random graph: union of `d/2` random Hamiltonian cycles on `n` switches, `cas` CAs each.
fn random_regular(n: usize, d: usize, cas: u8, seed: u64) -> Fabric {
    let mut rng = Rng::new(seed);
    let mut b = FabricBuilder::new();
    let np = d as u8 + cas;
    let sw: Vec<NodeId> = (0..n)
        .map(|i| {
            b.add_node(NodeKind::Switch, np, guid(i), format!("S{i}"), "rr")
                .unwrap()
        })
        .collect();
    let mut next_port = vec![1u8; n];
    for _ in 0..d / 2 {
        let mut perm: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut perm);
        for i in 0..n {
            let (x, y) = (perm[i], perm[(i + 1) % n]);
            let (px, py) = (next_port[x], next_port[y]);
            next_port[x] += 1;
            next_port[y] += 1;
            b.connect(sw[x], px, sw[y], py, Width::X4, Speed::Edr)
                .unwrap();
        }
    }
    for i in 0..n {
        for c in 0..cas {
            let ca = b
                .add_node(
                    NodeKind::Ca,
                    1,
                    guid(10_000 + i * 8 + c as usize),
                    format!("H{i}_{c}"),
                    "h",
                )
                .unwrap();
            b.connect(sw[i], d as u8 + 1 + c, ca, 1, Width::X4, Speed::Edr)
                .unwrap();
        }
    }
    b.build().unwrap()
}

fn ring(n: usize) -> Fabric {
    torus(&[n as u32], true, 1, 0)
}

// ---------------------------------------------------------------------------------------------
// walker and CDG check

/// Follows the LFTs from end port `src` to `dlid`; returns the channels used or an error.
fn walk(
    f: &Fabric,
    r: &Routing,
    mask: &FaultMask,
    src: fabric::PortId,
    dlid: u16,
) -> Result<Vec<u32>, String> {
    let mut path = Vec::new();
    let c0 = f.out_channel(src).ok_or("source not cabled")?;
    if !mask.channel_alive(f, c0) {
        return Err("source link dead".into());
    }
    path.push(c0.0);
    let mut at = f.channel_dst(c0);
    for _ in 0..=f.num_switches() + 1 {
        let node = f.port(at).node;
        if !f.is_switch(node) {
            return if f.lid_port(dlid) == Some(at) {
                Ok(path)
            } else {
                Err(format!(
                    "delivered to the wrong end port {:?}",
                    f.node(node).name
                ))
            };
        }
        let si = f.switch_of(node).unwrap().idx();
        let p = r.out_port(SwitchIdx(si as u32), dlid);
        if p == NO_PORT {
            return Err(format!("no route at {}", f.node(node).name));
        }
        if p == 0 {
            return if f.switch_lid(node) == dlid {
                Ok(path)
            } else {
                Err("port 0 for a foreign LID".into())
            };
        }
        let c = f
            .out_channel(f.port_id(node, p))
            .ok_or("uncabled output port")?;
        if !mask.channel_alive(f, c) {
            return Err(format!(
                "dead channel out of {} port {p}",
                f.node(node).name
            ));
        }
        path.push(c.0);
        at = f.channel_dst(c);
    }
    Err("loop".into())
}

/// Live end ports (source candidates) and all destination LIDs routable under the mask.
fn pairs(f: &Fabric, mask: &FaultMask) -> (Vec<fabric::PortId>, Vec<u16>) {
    let live_end = |p: fabric::PortId| {
        let port = f.port(p);
        if mask.node_dead(port.node) {
            return false;
        }
        let Some(c) = f.out_channel(p) else {
            return false;
        };
        mask.channel_alive(f, c) && !mask.node_dead(f.port(f.channel_dst(c)).node)
    };
    let srcs: Vec<_> = f
        .end_ports
        .iter()
        .copied()
        .filter(|&p| live_end(p))
        .collect();
    let mut lids = Vec::new();
    for lid in 1..=f.max_lid() {
        let Some(p) = f.lid_port(lid) else { continue };
        let port = f.port(p);
        if f.is_switch(port.node) {
            if !mask.node_dead(port.node) {
                lids.push(lid);
            }
        } else if live_end(p) {
            lids.push(lid);
        }
    }
    (srcs, lids)
}

/// Switch graph connectivity under the mask.
fn connected(f: &Fabric, mask: &FaultMask) -> bool {
    let n = f.num_switches();
    let alive: Vec<bool> = f.switches.iter().map(|&s| !mask.node_dead(s)).collect();
    let Some(start) = (0..n).find(|&s| alive[s]) else {
        return true;
    };
    let mut seen = vec![false; n];
    seen[start] = true;
    let mut st = vec![start];
    while let Some(s) = st.pop() {
        for &c in f.switch_links(SwitchIdx(s as u32)) {
            if !mask.channel_alive(f, c) {
                continue;
            }
            let p = f.dst_switch(c).unwrap().idx();
            if alive[p] && !seen[p] {
                seen[p] = true;
                st.push(p);
            }
        }
    }
    (0..n).all(|s| !alive[s] || seen[s])
}

struct Check {
    paths: usize,
    cyclic: bool,
    /// routes per channel (from end-port sources to end-port destinations only)
    load: Vec<u64>,
}

/// Walks every (live end port, destination LID) pair; panics on a failed walk; builds the CDG.
fn check_all(f: &Fabric, r: &Routing, mask: &FaultMask, engine: &str) -> Check {
    check_filtered(f, r, mask, engine, &|_| true)
}

/// As [`check_all`], with CDG edges and loads only from pairs whose source and destination end
/// ports satisfy `keep` (every pair is still walked).
fn check_filtered(
    f: &Fabric,
    r: &Routing,
    mask: &FaultMask,
    engine: &str,
    keep: &dyn Fn(fabric::PortId) -> bool,
) -> Check {
    r.validate(f).unwrap();
    let (srcs, lids) = pairs(f, mask);
    let nch = f.links.len() * 2;
    let end_index: HashMap<fabric::PortId, usize> = f
        .end_ports
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i))
        .collect();
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut load = vec![0u64; nch];
    let mut paths = 0;
    for &s in &srcs {
        for &d in &lids {
            if f.lid_port(d) == Some(s) {
                continue;
            }
            let p = walk(f, r, mask, s, d).unwrap_or_else(|e| {
                panic!("{engine}: {} -> LID {d}: {e}", f.node(f.port(s).node).name)
            });
            paths += 1;
            // switch LIDs are checked for delivery only: like ibdmchk and routing::cdg, the
            // credit-loop check covers traffic between end ports
            let dp = f.lid_port(d).unwrap();
            if !f.is_switch(f.port(dp).node) && keep(s) && keep(dp) {
                for &c in &p {
                    load[c as usize] += 1;
                }
                // vertices are (channel, VL): the VL a hop leaves on is the SL2VL entry of
                // the node it leaves, for the pair's path SL
                let e = end_index[&s];
                let sl = r.path_sl.get(e, d);
                let vls: Vec<u32> = (0..p.len())
                    .map(|k| {
                        let c = fabric::ChannelId(p[k]);
                        let out = f.port(f.channel_src(c));
                        let inp = if k == 0 {
                            0
                        } else {
                            f.port(f.channel_dst(fabric::ChannelId(p[k - 1]))).num
                        };
                        r.sl2vl.vl(out.node, inp, out.num, sl) as u32
                    })
                    .collect();
                for k in 1..p.len() {
                    edges.push((p[k - 1] * 16 + vls[k - 1], p[k] * 16 + vls[k]));
                }
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    // Kahn's algorithm over (channel, VL)
    let nch = nch * 16;
    let mut indeg = vec![0u32; nch];
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); nch];
    for &(a, b) in &edges {
        out[a as usize].push(b);
        indeg[b as usize] += 1;
    }
    let mut st: Vec<u32> = (0..nch as u32)
        .filter(|&c| indeg[c as usize] == 0)
        .collect();
    let mut removed = 0;
    while let Some(c) = st.pop() {
        removed += 1;
        for &b in &out[c as usize] {
            indeg[b as usize] -= 1;
            if indeg[b as usize] == 0 {
                st.push(b);
            }
        }
    }
    Check {
        paths,
        cyclic: removed < nch,
        load,
    }
}

/// Engines may decline a fabric: `dnup` where some pair has no down*/up* path, `ftree` where
/// the fabric is not a fat tree (a torus, a random graph).
fn declines(name: &str, err: &EngineError) -> bool {
    match err {
        EngineError::NotApplicable(why) => {
            name == "dnup"
                || (name == "ftree" && why.starts_with("not a fat tree"))
                || (name == "torus-2QoS" && why.contains("torus"))
        }
        _ => false,
    }
}

fn route(name: &str, f: &Fabric, mask: &FaultMask) -> Routing {
    let e = by_name(name).unwrap();
    e.route(f, mask, &RouteOptions::default())
        .unwrap_or_else(|err| panic!("{name}: {err}"))
}

// ---------------------------------------------------------------------------------------------
// reachability

#[test]
fn every_engine_reaches_every_destination() {
    let fabrics: Vec<(&str, Fabric)> = vec![
        ("torus 4x4", torus(&[4, 4], true, 2, 0)),
        ("torus 3x3x2", torus(&[3, 3, 2], true, 1, 0)),
        ("mesh 3x4", torus(&[3, 4], false, 1, 0)),
        ("ring 7", ring(7)),
        ("4-ary 3-tree", kary_ntree(4, 3, false, 0)),
        ("2-ary 4-tree", kary_ntree(2, 4, false, 0)),
        ("3-ary 2-tree + ANs", kary_ntree(3, 2, true, 0)),
        ("4-level", four_level(3, 2, 2, 2, 2).0),
        ("random 16x4", random_regular(16, 4, 1, 7)),
        ("torus 3x3 lmc 2", torus(&[3, 3], true, 1, 2)),
        ("2-ary 3-tree lmc 1", kary_ntree(2, 3, false, 1)),
    ];
    for (fname, f) in &fabrics {
        let mask = FaultMask::none(f);
        for name in engine_names() {
            let e = by_name(name).unwrap();
            match e.route(f, &mask, &RouteOptions::default()) {
                Ok(r) => {
                    let c = check_all(f, &r, &mask, &format!("{name} on {fname}"));
                    assert!(c.paths > 0);
                }
                Err(err) if declines(name, &err) => {
                    eprintln!("{name} declined {fname}: {err}");
                }
                Err(err) => panic!("{name} on {fname}: {err}"),
            }
        }
    }
}

#[test]
fn masks_make_dead_parts_absent() {
    let f = torus(&[4, 4], true, 1, 0);
    let mut mask = FaultMask::none(&f);
    mask.fail_node(f.switches[5]);
    mask.fail_link(LinkId(0));
    for name in engine_names() {
        let e = by_name(name).unwrap();
        let r = match e.route(&f, &mask, &RouteOptions::default()) {
            Ok(r) => r,
            Err(err) => {
                assert!(declines(name, &err), "{name}: {err}");
                continue;
            }
        };
        check_all(&f, &r, &mask, name);
        // the dead switch has an empty LFT
        assert!(
            r.lft_of(SwitchIdx(5)).iter().all(|&p| p == NO_PORT),
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// deadlock freedom

#[test]
fn minhop_and_dor_have_credit_loops_on_a_torus() {
    let f = torus(&[4, 4], true, 1, 0);
    let mask = FaultMask::none(&f);
    for name in ["minhop", "dor"] {
        let r = route(name, &f, &mask);
        assert!(
            check_all(&f, &r, &mask, name).cyclic,
            "{name} should close a credit loop on a torus"
        );
    }
}

#[test]
fn dor_is_deadlock_free_on_meshes_and_hypercubes() {
    for f in [
        torus(&[4, 4], false, 1, 0),
        torus(&[3, 4, 2], false, 1, 0),
        torus(&[2, 2, 2, 2], false, 1, 0),
    ] {
        let mask = FaultMask::none(&f);
        let r = route("dor", &f, &mask);
        assert!(!check_all(&f, &r, &mask, "dor").cyclic);
    }
}

#[test]
fn updown_engines_are_deadlock_free_on_tori_and_trees() {
    let fabrics = vec![
        torus(&[4, 4], true, 1, 0),
        torus(&[3, 3, 3], true, 1, 0),
        kary_ntree(3, 3, false, 0),
        kary_ntree(2, 3, true, 0),
        four_level(2, 2, 2, 2, 2).0,
    ];
    for f in &fabrics {
        let mask = FaultMask::none(f);
        for name in ["updn", "dnup", "ftree"] {
            let r = match by_name(name)
                .unwrap()
                .route(f, &mask, &RouteOptions::default())
            {
                Ok(r) => r,
                Err(err) => {
                    assert!(declines(name, &err), "{name}: {err}");
                    continue;
                }
            };
            let c = check_all(f, &r, &mask, name);
            // Aggregation nodes on every switch: spine-to-spine AN traffic has no up*/down*
            // path in a fat-tree ranking; it changes VL after its down->up turn, and the
            // (channel, VL) dependencies stay acyclic for all traffic.
            assert!(!c.cyclic, "{name} on {} has a credit loop", f.hints.kind);
            if f.nodes.iter().any(|n| n.desc.contains("Aggregation")) {
                let res = by_name(name)
                    .unwrap()
                    .route_detailed(f, &mask, &RouteOptions::default())
                    .unwrap();
                assert!(
                    res.notes.iter().any(|n| n.contains("change VL")),
                    "{name}: {:?}",
                    res.notes
                );
            }
        }
    }
}

fn fail_random_links(f: &Fabric, k: usize, seed: u64) -> FaultMask {
    let mut rng = Rng::new(seed);
    let mut mask = FaultMask::none(f);
    let sw_links = common::switch_links(f);
    for _ in 0..k {
        let l = sw_links[rng.below(sw_links.len() as u64) as usize];
        mask.fail_link(l);
    }
    mask
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn updown_engines_survive_random_faults(kind in 0usize..3, k in 0usize..6, seed in any::<u64>()) {
        let f = match kind {
            0 => torus(&[4, 4], true, 1, 0),
            1 => random_regular(12, 4, 1, seed ^ 0x55),
            _ => kary_ntree(3, 3, false, 0),
        };
        let mask = fail_random_links(&f, k, seed);
        prop_assume!(connected(&f, &mask));
        for name in ["updn", "dnup", "ftree"] {
            let res = by_name(name).unwrap().route(&f, &mask, &RouteOptions::default());
            let r = match res {
                Ok(r) => r,
                Err(e) if declines(name, &e) => continue,
                Err(e) => panic!("{name}: {e}"),
            };
            let c = check_all(&f, &r, &mask, name);
            prop_assert!(!c.cyclic, "{} closes a credit loop (kind {}, {} faults)", name, kind, k);
        }
    }
}

#[test]
fn updn_paths_respect_the_exposed_turn_rule() {
    let f = torus(&[4, 4], true, 1, 0);
    let mask = FaultMask::none(&f);
    let opts = RouteOptions::default();
    let (rk, notes) = UpDownRanking::for_updn(&f, &mask, &opts).unwrap();
    assert!(!notes.is_empty());
    let r = route("updn", &f, &mask);
    let (srcs, lids) = pairs(&f, &mask);
    let mut ups = 0;
    for &s in &srcs {
        for &d in &lids {
            if f.lid_port(d) == Some(s) {
                continue;
            }
            let p = walk(&f, &r, &mask, s, d).unwrap();
            for w in p.windows(2) {
                let (a, b) = (fabric::ChannelId(w[0]), fabric::ChannelId(w[1]));
                assert!(rk.is_legal_turn(&f, a, b));
                if rk.channel_dir(&f, b) == Dir::Up {
                    ups += 1;
                }
            }
        }
    }
    assert!(ups > 0);
}

// ---------------------------------------------------------------------------------------------
// fat-tree balance

/// Per (src level, dst level) of switch-to-switch channels: (min, max, count) of CN→CN route
/// counts.
fn level_loads(
    f: &Fabric,
    load: &[u64],
    level: &dyn Fn(NodeId) -> u32,
) -> HashMap<(u32, u32), (u64, u64, usize)> {
    let mut m: HashMap<(u32, u32), (u64, u64, usize)> = HashMap::new();
    for (c, &l) in load.iter().enumerate() {
        let ch = fabric::ChannelId(c as u32);
        let a = f.port(f.channel_src(ch)).node;
        let b = f.port(f.channel_dst(ch)).node;
        if !f.is_switch(a) || !f.is_switch(b) {
            continue;
        }
        let e = m.entry((level(a), level(b))).or_insert((u64::MAX, 0, 0));
        e.0 = e.0.min(l);
        e.1 = e.1.max(l);
        e.2 += 1;
    }
    m
}

#[test]
fn ftree_balances_kary_ntrees_perfectly() {
    for (k, n) in [(4, 3), (2, 4), (3, 3), (6, 2)] {
        for ans in [false, true] {
            let f = kary_ntree(k, n, ans, 0);
            let mask = FaultMask::none(&f);
            let res = by_name("ftree")
                .unwrap()
                .route_detailed(&f, &mask, &RouteOptions::default())
                .unwrap();
            let c = check_all(&f, &res.routing, &mask, "ftree");
            // count only CN -> CN routes
            let mut load = vec![0u64; f.links.len() * 2];
            let cns: Vec<_> = f
                .end_ports
                .iter()
                .copied()
                .filter(|&p| !f.node(f.port(p).node).desc.contains("Aggregation"))
                .collect();
            for &s in &cns {
                for &d in &cns {
                    if s == d {
                        continue;
                    }
                    for ch in walk(&f, &res.routing, &mask, s, f.port(d).lid).unwrap() {
                        load[ch as usize] += 1;
                    }
                }
            }
            let _ = c;
            let lv = |x: NodeId| f.hints.level[x.idx()];
            for ((a, b), (lo, hi, cnt)) in level_loads(&f, &load, &lv) {
                assert_eq!(lo, hi, "{k}-ary {n}-tree (ANs {ans}): links L{a}->L{b} ({cnt}) carry {lo}..{hi} routes; notes {:?}", res.notes);
            }
            assert!(
                res.notes[0].starts_with(&format!("{} roots", k.pow(n as u32 - 1))),
                "{:?}",
                res.notes
            );
        }
    }
}

#[test]
fn ftree_ranks_detected_without_hints_with_aggregation_nodes() {
    let mut f = kary_ntree(4, 3, true, 0);
    f.hints = Default::default();
    let mask = FaultMask::none(&f);
    let res = by_name("ftree")
        .unwrap()
        .route_detailed(&f, &mask, &RouteOptions::default())
        .unwrap();
    assert!(
        res.notes[0].starts_with("16 roots from the leaves"),
        "{:?}",
        res.notes
    );
    check_all(&f, &res.routing, &mask, "ftree");
}

#[test]
fn ftree_four_level_tree_is_balanced_and_skips_l3() {
    let (f, lvl) = four_level(4, 4, 4, 4, 2);
    let mask = FaultMask::none(&f);
    let res = by_name("ftree")
        .unwrap()
        .route_detailed(&f, &mask, &RouteOptions::default())
        .unwrap();
    let c = check_all(&f, &res.routing, &mask, "ftree");
    let level = |x: NodeId| {
        if f.is_switch(x) {
            lvl[f.switch_of(x).unwrap().idx()]
        } else {
            u32::MAX
        }
    };
    let m = level_loads(&f, &c.load, &level);
    let (lo, hi, cnt) = m[&(2, 1)];
    assert!(cnt > 0);
    assert_eq!(lo, hi, "L2->L1 loads {lo}..{hi}; notes {:?}", res.notes);
    assert_eq!(m[&(2, 3)].1, 0, "L2->L3 carries routes");
    assert_eq!(m[&(3, 2)].1, 0, "L3->L2 carries routes");
}

#[test]
fn ftree_routes_degraded_trees() {
    // uneven leaves and a missing switch
    let f = kary_ntree(3, 3, false, 0);
    let mut mask = FaultMask::none(&f);
    mask.fail_node(f.switches[10]); // a middle switch
    let r = by_name("ftree")
        .unwrap()
        .route(&f, &mask, &RouteOptions::default())
        .unwrap();
    let c = check_all(&f, &r, &mask, "ftree");
    assert!(!c.cyclic);
}

// ---------------------------------------------------------------------------------------------
// determinism, options, chaining

#[test]
fn results_do_not_depend_on_thread_count() {
    let f = kary_ntree(4, 3, false, 1);
    let t = torus(&[4, 4], true, 2, 0);
    for fab in [&f, &t] {
        let mask = FaultMask::none(fab);
        for name in engine_names() {
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            let three = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap();
            let a = one.install(|| {
                by_name(name)
                    .unwrap()
                    .route(fab, &mask, &RouteOptions::default())
            });
            let b = three.install(|| {
                by_name(name)
                    .unwrap()
                    .route(fab, &mask, &RouteOptions::default())
            });
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a.lft, b.lft, "{name}"),
                (Err(a), Err(b)) => assert_eq!(a, b),
                _ => panic!("{name}: different outcomes"),
            }
        }
    }
}

#[test]
fn lmc_lids_take_different_ports_where_possible() {
    let f = kary_ntree(2, 3, false, 2);
    let mask = FaultMask::none(&f);
    for name in ["minhop", "updn", "ftree", "sssp"] {
        let r = route(name, &f, &mask);
        check_all(&f, &r, &mask, name);
        // a leaf switch with two up ports: the 4 LIDs of a remote CA should use both
        let leaf = f
            .switches
            .iter()
            .position(|&s| f.hints.level[s.idx()] == 2)
            .unwrap();
        let remote = f
            .end_ports
            .iter()
            .copied()
            .find(|&p| {
                f.attached_switch(p)
                    .map(|x| f.switch_of(f.port(x).node).unwrap().idx())
                    != Some(leaf)
            })
            .unwrap();
        let base = f.port(remote).lid;
        let ports: std::collections::BTreeSet<u8> = (0..4)
            .map(|o| r.out_port(SwitchIdx(leaf as u32), base + o))
            .collect();
        assert!(ports.len() >= 2, "{name}: LMC LIDs all on {ports:?}");
    }
}

#[test]
fn options_are_honoured() {
    let f = kary_ntree(2, 3, false, 0);
    let mask = FaultMask::none(&f);
    // explicit roots: all level-0 switches
    let roots: Vec<u64> = f.hints.roots.iter().map(|&n| f.node(n).guid).collect();
    let opts = RouteOptions {
        root_guids: roots.clone(),
        port_shifting: true,
        scatter_ports: 42,
        guid_routing_order: vec![f.port(f.end_ports[3]).guid],
        ..Default::default()
    };
    for name in engine_names() {
        let e = by_name(name).unwrap();
        let r = match e.route_detailed(&f, &mask, &opts) {
            Ok(r) => r,
            Err(e) if declines(name, &e) => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        check_all(&f, &r.routing, &mask, name);
        if name == "updn" || name == "ftree" {
            assert!(
                r.notes[0].contains("root GUID list"),
                "{name}: {:?}",
                r.notes
            );
        }
    }
    // scatter is reproducible
    let a = by_name("minhop").unwrap().route(&f, &mask, &opts).unwrap();
    let b = by_name("minhop").unwrap().route(&f, &mask, &opts).unwrap();
    assert_eq!(a.lft, b.lft);
    // bad roots are reported, not fatal
    let opts = RouteOptions {
        root_guids: vec![0xdead],
        ..Default::default()
    };
    let r = by_name("updn")
        .unwrap()
        .route_detailed(&f, &mask, &opts)
        .unwrap();
    assert!(r.notes.iter().any(|n| n.contains("ignored")));
}

#[test]
fn chain_reports_every_attempt() {
    // a fabric of switches only: dnup and ftree decline, minhop routes
    let mut b = FabricBuilder::new();
    let s0 = b.add_node(NodeKind::Switch, 4, 1, "a", "").unwrap();
    let s1 = b.add_node(NodeKind::Switch, 4, 2, "b", "").unwrap();
    b.connect(s0, 1, s1, 1, Width::X4, Speed::Edr).unwrap();
    let f = b.build().unwrap();
    let mask = FaultMask::none(&f);
    let res = route_chain(
        &["bogus", "dnup", "ftree", "minhop", "updn"],
        &f,
        &mask,
        &RouteOptions::default(),
    )
    .unwrap();
    assert_eq!(res.engine_used, "minhop");
    let names: Vec<&str> = res.attempts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["bogus", "dnup", "ftree"]);
    assert!(matches!(res.attempts[0].1, EngineError::Unknown(_)));
    check_all(&f, &res.routing, &mask, "minhop");
    let err = route_chain(&["dnup"], &f, &mask, &RouteOptions::default()).unwrap_err();
    assert_eq!(err.attempts.len(), 1);
    assert!(err.to_string().contains("dnup"));
    assert!(route_chain(&[], &f, &mask, &RouteOptions::default()).is_err());
}

#[test]
fn updn_picks_working_roots_on_any_connected_fabric() {
    for f in [
        ring(9),
        torus(&[5, 3], true, 1, 0),
        random_regular(20, 4, 1, 3),
        kary_ntree(3, 3, false, 0),
    ] {
        let mut f2 = f.clone();
        f2.hints.roots.clear();
        let mask = FaultMask::none(&f2);
        let r = by_name("updn")
            .unwrap()
            .route_detailed(&f2, &mask, &RouteOptions::default())
            .unwrap();
        let c = check_all(&f2, &r.routing, &mask, "updn");
        assert!(!c.cyclic);
    }
    // the graph centre of a fat tree without hints is the spine layer
    let mut f = kary_ntree(3, 3, false, 0);
    f.hints.roots.clear();
    let mask = FaultMask::none(&f);
    let r = by_name("updn")
        .unwrap()
        .route_detailed(&f, &mask, &RouteOptions::default())
        .unwrap();
    assert!(
        r.notes[0].starts_with("9 roots from the top level of the fat tree"),
        "{:?}",
        r.notes
    );
}

#[test]
fn sssp_spreads_load_better_than_minhop_on_a_fat_tree() {
    let f = kary_ntree(4, 3, false, 0);
    let mask = FaultMask::none(&f);
    let max_load = |name: &str| {
        let r = route(name, &f, &mask);
        check_all(&f, &r, &mask, name)
            .load
            .iter()
            .copied()
            .max()
            .unwrap()
    };
    assert!(max_load("sssp") < max_load("minhop"));
    assert!(max_load("ftree") <= max_load("sssp"));
}

// ---------------------------------------------------------------------------------------------
// generated fabrics (fabric::gen) and the project's checker (routing::cdg::check)

fn gen(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .generate()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// Engines that guarantee deadlock freedom by construction (on fabrics without service CAs).
const UPDOWN: [&str; 3] = ["updn", "dnup", "ftree"];

#[test]
fn generated_fabrics_are_routed_and_checked() {
    let specs = [
        "ktree 4 3",
        "ktree 3 3 lmc=1",
        "ktree 4 3 leaf-hosts-random=1..4 leaf-seed=2",
        "ktree 3 3 fail-links=5 fail-seed=3",
        "leafspine leaves=4 spines=2 hosts=4 links=2",
        "xgft m=3,3 w=1,2",
        "fourlevel sets=3 l0=2 l1=2 hcas=2 l3=2",
        "torus 4x4 hcas=2",
        "torus 3x3x3 hcas=1",
        "mesh 4x3",
        "hyperx 3x3 hcas=1",
        "dragonfly 4 2 2",
        "slimfly 5",
        "randreg 16 4 seed=3",
    ];
    for spec in specs {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        for name in engine_names() {
            let res = by_name(name)
                .unwrap()
                .route_detailed(&f, &mask, &RouteOptions::default());
            let r = match res {
                Ok(r) => r,
                Err(e) if declines(name, &e) => continue,
                Err(e) => panic!("{name} on {spec}: {e}"),
            };
            let rep = routing::cdg::check(&f, &r.routing, Some(&mask));
            assert_eq!(
                rep.pairs.ok, rep.pairs.checked,
                "{name} on {spec}: {} unreachable, {} loops; notes {:?}",
                rep.unreachable_pairs.count, rep.loops.count, r.notes
            );
            if UPDOWN.contains(&name) {
                assert!(
                    rep.deadlock_free,
                    "{name} on {spec}: credit loop; notes {:?}",
                    r.notes
                );
            }
            // the local walker also checks switch LIDs
            check_all(&f, &r.routing, &mask, &format!("{name} on {spec}"));
        }
    }
}

#[test]
fn checker_finds_credit_loops_of_minhop_and_dor_on_tori() {
    // (radix 3 rings never take two hops in one dimension, so DOR is clean there: radix 4)
    for spec in ["torus 4x4 hcas=1", "torus 4x4x4 hcas=1"] {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        for name in ["minhop", "dor"] {
            let r = route(name, &f, &mask);
            let rep = routing::cdg::check(&f, &r, Some(&mask));
            assert_eq!(rep.pairs.ok, rep.pairs.checked, "{name} on {spec}");
            assert!(
                !rep.deadlock_free && !rep.cycles.is_empty(),
                "{name} on {spec}: expected a credit loop"
            );
        }
        // while the up/down engines are clean on the same torus
        let r = route("updn", &f, &mask);
        assert!(routing::cdg::check(&f, &r, Some(&mask)).ok());
    }
    for spec in ["mesh 4x4", "mesh 3x3x3", "hyperx 2x2x2x2 hcas=1"] {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let r = route("dor", &f, &mask);
        let rep = routing::cdg::check(&f, &r, Some(&mask));
        assert!(rep.ok(), "dor on {spec}: {} cycles", rep.cycles.len());
    }
}

#[test]
fn ftree_balance_on_generated_trees() {
    // k-ary n-trees: every link of a level (per direction) carries the same CN->CN pair count
    for spec in ["ktree 4 3", "ktree 2 4", "ktree 6 2", "ktree 3 3"] {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let r = route("ftree", &f, &mask);
        let w = routing::walk::walk_all(&f, &r, Some(&mask));
        assert!(w.all_ok());
        let lv = |x: NodeId| f.hints.level[x.idx()];
        for ((a, b), (lo, hi, cnt)) in level_loads(&f, &w.channel_load, &lv) {
            assert_eq!(lo, hi, "{spec}: links L{a}->L{b} ({cnt}) carry {lo}..{hi}");
        }
    }
    // the 4-level tree of ftree-balance.md (levels from the hints: 0 = L3 ... 3 = L0 leaves)
    let f = gen("fourlevel sets=4 l0=4 l1=4 hcas=4 l3=2");
    let mask = FaultMask::none(&f);
    let r = route("ftree", &f, &mask);
    let w = routing::walk::walk_all(&f, &r, Some(&mask));
    assert!(w.all_ok());
    let lv = |x: NodeId| f.hints.level[x.idx()];
    let m = level_loads(&f, &w.channel_load, &lv);
    let (lo, hi, cnt) = m[&(1, 2)];
    assert!(cnt > 0 && lo > 0);
    assert_eq!(lo, hi, "L2->L1 loads {lo}..{hi}");
    assert_eq!(m[&(1, 0)].1, 0, "L2->L3 carries routes");
    assert_eq!(m[&(0, 1)].1, 0, "L3->L2 carries routes");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn generated_degraded_fabrics_stay_deadlock_free(kind in 0usize..4, k in 1usize..8, seed in 0u64..1000) {
        let spec = match kind {
            0 => format!("ktree 4 3 fail-links={k} fail-seed={seed}"),
            1 => format!("torus 4x4 hcas=1 fail-links={k} fail-seed={seed}"),
            2 => format!("randreg 16 4 seed={seed} fail-links={k} fail-seed={seed}"),
            _ => format!("ktree 3 3 fail-switches=1 fail-links={k} fail-seed={seed}"),
        };
        let Ok(f) = spec.parse::<fabric::gen::TopoSpec>().and_then(|s| s.generate()) else {
            return Ok(());
        };
        let mask = FaultMask::none(&f);
        prop_assume!(connected(&f, &mask));
        for name in UPDOWN {
            let r = match by_name(name).unwrap().route(&f, &mask, &RouteOptions::default()) {
                Ok(r) => r,
                Err(e) if declines(name, &e) => continue,
                Err(e) => panic!("{name} on {spec}: {e}"),
            };
            let rep = routing::cdg::check(&f, &r, Some(&mask));
            prop_assert!(rep.ok(), "{} on {}: ok pairs {}/{}, {} cycles", name, spec, rep.pairs.ok, rep.pairs.checked, rep.cycles.len());
        }
    }
}

#[test]
fn ftree_max_link_load_matches_the_optimum_and_opensm() {
    // running-opensm.md section 7: OpenSM's ftree on ktree_k16_n3 gives max link load 4080,
    // mean 3960 (lft_stats.py: pairs per switch-to-switch channel); 4080 is the optimum.
    let f = gen("ktree 16 3");
    let mask = FaultMask::none(&f);
    let r = route("ftree", &f, &mask);
    let w = routing::walk::walk_all(&f, &r, Some(&mask));
    assert!(w.all_ok());
    let (mut max, mut sum, mut cnt) = (0u64, 0u64, 0u64);
    for (c, &l) in w.channel_load.iter().enumerate() {
        let ch = fabric::ChannelId(c as u32);
        if f.is_switch(f.port(f.channel_src(ch)).node)
            && f.is_switch(f.port(f.channel_dst(ch)).node)
        {
            max = max.max(l);
            sum += l;
            cnt += 1;
        }
    }
    assert_eq!(sum / cnt, 3960);
    assert_eq!(max, 4080);
}

#[test]
fn ftree_honours_compute_and_io_lists_and_lmc_on_degraded_trees() {
    let f = gen("ktree 3 3 lmc=1 fail-links=3 fail-seed=5");
    let mask = FaultMask::none(&f);
    // the CAs of the first leaf are I/O nodes: routed after the compute nodes, still reachable
    let first_leaf = f.end_ports[0];
    let leaf_sw = f.attached_switch(first_leaf).map(|p| f.port(p).node);
    let io: Vec<u64> = f
        .end_ports
        .iter()
        .filter(|&&p| f.attached_switch(p).map(|x| f.port(x).node) == leaf_sw)
        .map(|&p| f.port(p).guid)
        .collect();
    assert!(!io.is_empty());
    for opts in [
        RouteOptions {
            io_guids: io.clone(),
            ..Default::default()
        },
        RouteOptions {
            cn_guids: f
                .end_ports
                .iter()
                .map(|&p| f.port(p).guid)
                .filter(|g| !io.contains(g))
                .collect(),
            ..Default::default()
        },
    ] {
        let r = by_name("ftree")
            .unwrap()
            .route_detailed(&f, &mask, &opts)
            .unwrap();
        let rep = routing::cdg::check(&f, &r.routing, Some(&mask));
        assert!(rep.ok(), "notes {:?}", r.notes);
        check_all(&f, &r.routing, &mask, "ftree");
    }
}

#[test]
fn sssp_paths_are_shortest_paths_on_low_diameter_fabrics() {
    // Balanced *shortest* paths: the same hop histogram as minhop, never a detour.
    for spec in ["dragonfly 4 2 2", "slimfly 5", "randreg 32 6 seed=3"] {
        let f = gen(spec);
        let mask = FaultMask::none(&f);
        let opts = RouteOptions::default();
        let m = |name: &str| {
            let r = by_name(name).unwrap().route(&f, &mask, &opts).unwrap();
            routing::metrics::route_metrics(&f, &r, None)
        };
        let (s, h) = (m("sssp"), m("minhop"));
        assert_eq!(s.pairs_ok, s.pairs, "{spec}");
        assert_eq!(
            s.hop_histogram, h.hop_histogram,
            "{spec}: sssp took a detour"
        );
    }
}

/// OpenSM's generic builder walks leaf switches with equally many end ports in the order of its
/// switch GUID map, whose keys are network-order GUIDs compared as host integers (byte-swapped
/// on little-endian hosts): neither switch index nor numeric GUID order. MinHop reproduces it.
#[test]
fn minhop_orders_equal_leaves_like_opensm_guid_map() {
    // X (ports 1, 2) -> M1, M2; M1 and M2 -> leaves La, Lb; one CA per leaf. X has two
    // equal-hop ports toward both leaves: the first leaf in OpenSM's order gets port 1.
    let base = 0x0002_c900_0000_0000u64;
    let mut b = FabricBuilder::new();
    let x = b
        .add_node(NodeKind::Switch, 2, base + 0x10_0000, "X", "x")
        .unwrap();
    let m1 = b
        .add_node(NodeKind::Switch, 3, base + 0x20_0000, "M1", "m")
        .unwrap();
    let m2 = b
        .add_node(NodeKind::Switch, 3, base + 0x30_0000, "M2", "m")
        .unwrap();
    // La: lower index and lower numeric GUID, but its byte-swapped GUID is the larger one.
    let la = b
        .add_node(NodeKind::Switch, 3, base + 0x01, "La", "l")
        .unwrap();
    let lb = b
        .add_node(NodeKind::Switch, 3, base + 0x0100, "Lb", "l")
        .unwrap();
    b.connect(x, 1, m1, 1, Width::X4, Speed::Edr).unwrap();
    b.connect(x, 2, m2, 1, Width::X4, Speed::Edr).unwrap();
    for (lp, m) in [(1u8, m1), (2u8, m2)] {
        b.connect(m, 2, la, lp, Width::X4, Speed::Edr).unwrap();
        b.connect(m, 3, lb, lp, Width::X4, Speed::Edr).unwrap();
    }
    let mut cas = Vec::new();
    for (i, l) in [la, lb].into_iter().enumerate() {
        let ca = b
            .add_node(
                NodeKind::Ca,
                1,
                base + 0x4000_0000 + i as u64,
                format!("H{i}"),
                "h",
            )
            .unwrap();
        b.connect(l, 3, ca, 1, Width::X4, Speed::Edr).unwrap();
        cas.push(ca);
    }
    let f = b.build().unwrap();
    let mask = FaultMask::none(&f);
    let r = route("minhop", &f, &mask);
    check_all(&f, &r, &mask, "minhop");
    let xs = f.switch_of(x).unwrap().idx();
    let lid = |ca: NodeId| f.port(f.port_id(ca, 1)).lid;
    assert_eq!(
        r.out_port(SwitchIdx(xs as u32), lid(cas[1])),
        1,
        "Lb comes first in OpenSM's map"
    );
    assert_eq!(r.out_port(SwitchIdx(xs as u32), lid(cas[0])), 2);
}

// ---------------------------------------------------------------------------------------------
// VL engines: deadlock freedom through SLs and SL2VL, on random and damaged fabrics

/// What a VL engine must give on any fabric: tables the checker finds complete and free of
/// credit loops over (channel, VL), within the budget, or a refusal that names the shortage.
fn vl_engine_verdict(name: &str, f: &Fabric, mask: &FaultMask, what: &str) -> Option<usize> {
    let opts = RouteOptions::default();
    match by_name(name).unwrap().route(f, mask, &opts) {
        Ok(r) => {
            r.validate(f).unwrap();
            let rep = routing::cdg::check(f, &r, Some(mask));
            assert!(
                rep.deadlock_free,
                "{name} on {what}: {} credit loops",
                rep.cycles.len()
            );
            assert_eq!(
                rep.pairs.ok, rep.pairs.checked,
                "{name} on {what}: undelivered pairs"
            );
            let vls = rep.cdg.vls_used.len();
            assert!(
                vls <= opts.budget.vls as usize,
                "{name} on {what}: {vls} VLs"
            );
            assert!(rep.cdg.sls_used.len() <= opts.budget.sls as usize);
            Some(vls)
        }
        Err(EngineError::NotApplicable(why)) => {
            assert!(
                why.contains("need"),
                "{name} on {what}: refusal without the count: {why}"
            );
            None
        }
        Err(e) => panic!("{name} on {what}: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn vl_engines_are_deadlock_free_on_random_damaged_fabrics(kind in 0usize..6, k in 0usize..6, seed in 0u64..10_000) {
        let spec = match kind {
            0 => format!("torus 4x4 hcas=2 fail-links={k} fail-seed={seed}"),
            1 => format!("randreg {} 4 seed={seed} fail-links={k} fail-seed={seed}", 10 + seed % 20),
            2 => format!("dragonfly 4 2 2 fail-links={k} fail-seed={seed}"),
            3 => format!("slimfly 5 fail-links={k} fail-seed={seed}"),
            4 => format!("hyperx {}x3 hcas=1 fail-links={k} fail-seed={seed}", 2 + seed % 4),
            _ => format!("ktree 4 3 fail-links={k} fail-seed={seed}"),
        };
        let Ok(f) = spec.parse::<fabric::gen::TopoSpec>().and_then(|s| s.generate()) else {
            return Ok(());
        };
        // A failed link at run time too, on top of the generator's.
        let mask = fail_random_links(&f, usize::from(seed % 2 == 0), seed ^ 0xabc);
        prop_assume!(connected(&f, &mask));
        for name in ["hopvl", "dfsssp", "lash"] {
            vl_engine_verdict(name, &f, &mask, &spec);
        }
    }
}

/// The figures the VL engines are built for: hop-incremented VLs use exactly the diameter
/// (and SSSP's link loads), layered engines fit tori where OpenSM's run out of VLs.
#[test]
fn vl_engines_fit_where_they_should() {
    let cases: &[(&str, &str, Option<usize>)] = &[
        ("slimfly 5", "hopvl", Some(2)),
        ("dragonfly 4 2 2", "hopvl", Some(3)),
        ("hyperx 4x4x4 hcas=1", "hopvl", Some(3)),
        ("ktree 4 3", "hopvl", Some(4)),
        ("torus 4x4 hcas=2", "lash", Some(2)),
        ("torus 8x8 hcas=2", "dfsssp", Some(8)),
        ("torus 8x8 hcas=2", "lash", Some(5)),
        ("torus 4x4x4 hcas=2", "lash", Some(4)),
        ("torus 8x8 hcas=2", "hopvl", None),
    ];
    for &(spec, name, want) in cases {
        let f = gen(spec);
        let got = vl_engine_verdict(name, &f, &FaultMask::none(&f), spec);
        assert_eq!(got, want, "{name} on {spec}: VLs used");
        if name == "hopvl" && got.is_some() {
            let mask = FaultMask::none(&f);
            let a = routing::metrics::route_metrics(&f, &route("hopvl", &f, &mask), None);
            let b = routing::metrics::route_metrics(&f, &route("sssp", &f, &mask), None);
            assert_eq!(
                a.link_load.max, b.link_load.max,
                "hopvl keeps SSSP's paths on {spec}"
            );
        }
    }
}

/// Every vendored reference fabric (gen_topo.py's, with their failed-link variants) and every
/// real dump: each VL engine routes it completely and free of credit loops within the budget,
/// or declines with the count.
#[test]
fn vl_engines_on_every_reference_and_real_fabric() {
    let files = common::vendored_fabrics();
    let mut routed = 0;
    for (name, f) in &files {
        for name_e in ["hopvl", "dfsssp", "lash"] {
            if vl_engine_verdict(name_e, f, &FaultMask::none(f), name).is_some() {
                routed += 1;
            }
        }
    }
    assert!(
        routed >= 2 * files.len(),
        "only {routed} of {} runs routed",
        3 * files.len()
    );
}
