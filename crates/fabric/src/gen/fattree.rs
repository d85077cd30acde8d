//! Fat trees: XGFT (with k-ary n-trees and leaf-spine as special cases) and the 4-level tree of
//! `ftree-balance.md`.

use super::{check_size, gerr, join, mul, GenError, GenOptions, Plan};
use crate::model::Fabric;
use crate::rng::Rng;

/// How many HCAs each leaf switch gets.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum LeafHosts {
    /// `m1` HCAs on every leaf (the regular XGFT).
    #[default]
    Uniform,
    /// Leaf `i` gets `list[i % list.len()]` HCAs (a list shorter than the number of leaves is
    /// repeated).
    List(Vec<u32>),
    /// Leaf `i` gets a seeded random count in `min..=max`.
    Random { min: u32, max: u32, seed: u64 },
}

/// XGFT(h; m1..mh; w1..wh): level 0 = HCAs, level h = roots; a level-l switch has `m_l` children
/// and `w_{l+1}` parents; `links` parallel cables between each connected switch pair.
///
/// Follows gen_topo.py exactly (names, switch order, port numbers):
/// - a level-l node is labelled `(x_{l+1..h}; y_{1..l})`; switches are named
///   `L<l>_<x joined by '.', or 'r' if empty>_<y joined by '.'>` (e.g. `L1_0.0_0`, `L3_r_0.0.1`),
///   HCAs `H_<x_1>_.._<x_h>`;
/// - switches level by level from the leaves (level 1) up, labels in lexicographic order;
/// - ports are numbered in order of use: for each level l = 1..h, for each level-l switch, for
///   each child: the child's next free port is cabled to the parent's next free port. So leaves
///   have HCAs on ports `1..=m1`, then up ports; upper switches down ports first, then up ports.
///
/// HCAs are single-homed, so `w1` must be 1. With [`LeafHosts`] other than `Uniform` the leaves
/// get varying HCA counts (non-uniform leaves; `m1` is then ignored); their up ports follow their
/// HCA ports. `m1 = 0` gives leaves without HCAs; `m2..mh` and all `w` must be at least 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XgftSpec {
    pub m: Vec<u32>,
    pub w: Vec<u32>,
    pub links: u32,
    pub leaf_hosts: LeafHosts,
}

impl XgftSpec {
    /// XGFT(h; m; w) with single links and uniform leaves.
    pub fn new(m: &[u32], w: &[u32]) -> XgftSpec {
        XgftSpec {
            m: m.to_vec(),
            w: w.to_vec(),
            links: 1,
            leaf_hosts: LeafHosts::Uniform,
        }
    }
    /// The k-ary n-tree: XGFT(n; k,..,k; 1,k,..,k): `k^(n-1)` switches per level, `k^n` HCAs.
    pub fn ktree(k: u32, n: u32) -> XgftSpec {
        let n = n as usize;
        let mut w = vec![k; n];
        if let Some(w1) = w.first_mut() {
            *w1 = 1;
        }
        XgftSpec::new(&vec![k; n], &w)
    }
    /// A 2-level fat tree: `leaves` leaf switches with `hosts` HCAs each, `spines` spines,
    /// `links` parallel cables per leaf-spine pair (XGFT(2; hosts, leaves; 1, spines)).
    pub fn leaf_spine(leaves: u32, spines: u32, hosts: u32, links: u32) -> XgftSpec {
        XgftSpec {
            links,
            ..XgftSpec::new(&[hosts, leaves], &[1, spines])
        }
    }
}

/// Mixed-radix digits of `i` (first digit slowest).
fn digits(mut i: u64, radix: &[u32]) -> Vec<u32> {
    let mut v = vec![0u32; radix.len()];
    for d in (0..radix.len()).rev() {
        let r = radix[d] as u64;
        v[d] = (i % r) as u32;
        i /= r;
    }
    v
}

fn index(digits: &[u32], radix: &[u32]) -> u64 {
    digits
        .iter()
        .zip(radix)
        .fold(0u64, |acc, (&d, &r)| acc * r as u64 + d as u64)
}

/// Generates an XGFT; see [`XgftSpec`]. Hints: kind `xgft(h;m..;w..)` (plus `links=P`), level
/// `h - l` for a level-l switch (roots 0), roots = level-h switches, link classes `host`,
/// `L1-L2`, …, `L<h-1>-L<h>`.
pub fn xgft(spec: &XgftSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let h = spec.m.len();
    let mut kind = format!("xgft({h};{};{})", join(&spec.m, ","), join(&spec.w, ","));
    if spec.links != 1 {
        kind.push_str(&format!(" links={}", spec.links));
    }
    if h == 0 {
        return gerr("xgft: at least one level is needed (m and w empty)");
    }
    if spec.w.len() != h {
        return gerr(format!(
            "{kind}: m has {h} entries but w has {}",
            spec.w.len()
        ));
    }
    // m1 = 0 (leaves without HCAs) is allowed; higher levels need children.
    if let Some(i) = spec.m.iter().skip(1).position(|&x| x == 0) {
        return gerr(format!("{kind}: m{} is 0", i + 2));
    }
    if let Some(i) = spec.w.iter().position(|&x| x == 0) {
        return gerr(format!("{kind}: w{} is 0", i + 1));
    }
    if spec.w[0] != 1 {
        return gerr(format!(
            "{kind}: w1 = {} but HCAs are single-homed (w1 must be 1)",
            spec.w[0]
        ));
    }
    if spec.links == 0 {
        return gerr(format!("{kind}: links per switch pair must be at least 1"));
    }
    // Level sizes (checked): level l has prod m[l..h] * prod w[0..l] switches.
    let mut level_size = vec![0u64; h + 1];
    for (l, size) in level_size.iter_mut().enumerate() {
        let mut s = 1u64;
        for &x in &spec.m[l..] {
            s = mul(s, x as u64, &kind)?;
        }
        for &y in &spec.w[..l] {
            s = mul(s, y as u64, &kind)?;
        }
        *size = s;
    }
    let mut nsw = 0u64;
    for &s in &level_size[1..] {
        nsw = nsw
            .checked_add(s)
            .ok_or_else(|| GenError(format!("{kind}: the fabric is far too large")))?;
    }
    let leaves = level_size[1];
    // Leaf HCA counts.
    let leaf_hcas: Vec<u32> = match &spec.leaf_hosts {
        LeafHosts::Uniform => Vec::new(),
        LeafHosts::List(v) => {
            if v.is_empty() {
                return gerr(format!("{kind}: the list of HCAs per leaf is empty"));
            }
            check_size(&kind, nsw, leaves, opts)?;
            (0..leaves as usize).map(|i| v[i % v.len()]).collect()
        }
        LeafHosts::Random { min, max, seed } => {
            if min > max {
                return gerr(format!(
                    "{kind}: random HCAs per leaf: min {min} is above max {max}"
                ));
            }
            check_size(&kind, nsw, leaves, opts)?;
            let mut rng = Rng::new(*seed);
            (0..leaves)
                .map(|_| min + rng.below((max - min) as u64 + 1) as u32)
                .collect()
        }
    };
    let nhca = if leaf_hcas.is_empty() {
        level_size[0]
    } else {
        let mut t = 0u64;
        for &c in &leaf_hcas {
            t += c as u64;
        }
        t
    };
    check_size(&kind, nsw, nhca, opts)?;
    // Quick port check before allocating: leaf uses hcas + w2*links, level l uses
    // m_l*links + w_{l+1}*links.
    for l in 1..=h {
        let down = if l == 1 {
            if leaf_hcas.is_empty() {
                spec.m[0] as u64
            } else {
                leaf_hcas.iter().copied().max().unwrap_or(0) as u64
            }
        } else {
            spec.m[l - 1] as u64 * spec.links as u64
        };
        let up = if l < h {
            spec.w[l] as u64 * spec.links as u64
        } else {
            0
        };
        if down + up > super::MAX_PORTS as u64 {
            return gerr(format!(
                "{kind}: level-{l} switches need {} ports, more than {}",
                down + up,
                super::MAX_PORTS
            ));
        }
    }

    let mut classes = Vec::new();
    for l in 1..h {
        classes.push(format!("L{}-L{}", l, l + 1));
    }
    let class_refs: Vec<&str> = classes.iter().map(|s| s.as_str()).collect();
    let mut plan = Plan::new(kind, &class_refs);
    // Radixes of the x and y digits per level.
    let xr = |l: usize| &spec.m[l..];
    let yr = |l: usize| &spec.w[..l];
    let mut offset = vec![0u64; h + 2];
    for (l, &size) in level_size.iter().enumerate().skip(1) {
        offset[l + 1] = offset[l] + size;
    }
    let name = |l: usize, x: &[u32], y: &[u32]| -> String {
        let xs = if x.is_empty() {
            "r".to_string()
        } else {
            join(x, ".")
        };
        format!("L{l}_{xs}_{}", join(y, "."))
    };
    let ysize = |l: usize| -> u64 { spec.w[..l].iter().map(|&v| v as u64).product() };
    for (l, &size) in level_size.iter().enumerate().skip(1) {
        let ys = ysize(l);
        for i in 0..size {
            let x = digits(i / ys, xr(l));
            let y = digits(i % ys, yr(l));
            plan.add_switch(name(l, &x, &y));
            plan.sw_level.push((h - l) as u32);
        }
    }
    for l in 1..=h {
        let ys = ysize(l);
        let cys = ysize(l - 1);
        for i in 0..level_size[l] {
            let parent = (offset[l] + i) as u32;
            let x = digits(i / ys, xr(l));
            let y = digits(i % ys, yr(l));
            if l == 1 {
                let count = if leaf_hcas.is_empty() {
                    spec.m[0]
                } else {
                    leaf_hcas[i as usize]
                };
                for xl in 0..count {
                    let mut cx = vec![xl];
                    cx.extend_from_slice(&x);
                    plan.add_hca_auto(format!("H_{}", join(&cx, "_")), parent);
                }
            } else {
                for xl in 0..spec.m[l - 1] {
                    let mut cx = vec![xl];
                    cx.extend_from_slice(&x);
                    let cy = &y[..l - 1];
                    let ci = index(&cx, xr(l - 1)) * cys + index(cy, yr(l - 1));
                    let child = (offset[l - 1] + ci) as u32;
                    for _ in 0..spec.links {
                        plan.link_auto(child, parent, (l - 1) as u16);
                    }
                }
            }
        }
    }
    plan.roots = (offset[h]..offset[h + 1]).map(|i| i as u32).collect();
    plan.finish(opts)
}

/// The 4-level fat tree of `ftree-balance.md`.
///
/// - `sets` sets, each with `l0` L0 switches (leaves, `hcas` HCAs each) and `l1` L1 switches;
///   every L0 of a set is linked to every L1 of that set;
/// - `l1` L2 switches: the n-th L1 of every set is linked only to the n-th L2;
/// - `l3` L3 switches, each linked to every L2 (0 is allowed).
///
/// Switch order (GUIDs): all L0 (set by set), all L1 (set by set), L2, L3; then the HCAs.
/// Names: `L0_s<set>_<i>`, `L1_s<set>_<n>`, `L2_<n>`, `L3_<t>`, HCAs `H_s<set>_<i>_<k>`.
/// Ports: L0 `1..=hcas` HCAs, `hcas+1+n` to L1 n; L1 `1+i` to L0 i, `l0+1` to its L2;
/// L2 `1+s` to the L1 of set s, `sets+1+t` to L3 t; L3 `1+n` to L2 n.
///
/// Hints: the roots are the L3 switches (the L2 switches when `l3 = 0`), so `level` is
/// L3 → 0, L2 → 1, L1 → 2, L0 → 3 (with `l3 = 0`: L2 → 0, L1 → 1, L0 → 2); link classes `host`,
/// `L0-L1`, `L1-L2`, `L2-L3` (named after the switch names, not after `level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FourLevelSpec {
    pub sets: u32,
    pub l0: u32,
    pub l1: u32,
    pub hcas: u32,
    pub l3: u32,
}

/// Generates the 4-level fat tree; see [`FourLevelSpec`].
pub fn four_level(spec: &FourLevelSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let FourLevelSpec {
        sets,
        l0,
        l1,
        hcas,
        l3,
    } = *spec;
    let kind = format!("fourlevel sets={sets} l0={l0} l1={l1} hcas={hcas} l3={l3}");
    if sets == 0 || l0 == 0 || l1 == 0 {
        return gerr(format!(
            "{kind}: sets, l0 and l1 must be at least 1 (the fabric would be empty or disconnected)"
        ));
    }
    let n0 = mul(sets as u64, l0 as u64, &kind)?;
    let n1 = mul(sets as u64, l1 as u64, &kind)?;
    let nsw = n0 + n1 + l1 as u64 + l3 as u64;
    let nh = mul(n0, hcas as u64, &kind)?;
    check_size(&kind, nsw, nh, opts)?;
    let mp = super::MAX_PORTS as u64;
    for (what, need) in [
        ("L0", hcas as u64 + l1 as u64),
        ("L1", l0 as u64 + 1),
        ("L2", sets as u64 + l3 as u64),
        ("L3", l1 as u64),
    ] {
        if need > mp {
            return gerr(format!(
                "{kind}: {what} switches need {need} ports, more than {mp}"
            ));
        }
    }
    let mut plan = Plan::new(kind, &["L0-L1", "L1-L2", "L2-L3"]);
    let top = if l3 > 0 { 3 } else { 2 };
    let sw0 = |s: u32, i: u32| s * l0 + i;
    let sw1 = |s: u32, n: u32| (n0 as u32) + s * l1 + n;
    let sw2 = |n: u32| (n0 + n1) as u32 + n;
    let sw3 = |t: u32| (n0 + n1) as u32 + l1 + t;
    for s in 0..sets {
        for i in 0..l0 {
            plan.add_switch(format!("L0_s{s}_{i}"));
            plan.sw_level.push(top);
        }
    }
    for s in 0..sets {
        for n in 0..l1 {
            plan.add_switch(format!("L1_s{s}_{n}"));
            plan.sw_level.push(top - 1);
        }
    }
    for n in 0..l1 {
        plan.add_switch(format!("L2_{n}"));
        plan.sw_level.push(top - 2);
    }
    for t in 0..l3 {
        plan.add_switch(format!("L3_{t}"));
        plan.sw_level.push(0);
    }
    for s in 0..sets {
        for i in 0..l0 {
            for n in 0..l1 {
                plan.link(sw0(s, i), hcas + 1 + n, sw1(s, n), 1 + i, 1);
            }
        }
    }
    for s in 0..sets {
        for n in 0..l1 {
            plan.link(sw1(s, n), l0 + 1, sw2(n), 1 + s, 2);
        }
    }
    for n in 0..l1 {
        for t in 0..l3 {
            plan.link(sw2(n), sets + 1 + t, sw3(t), 1 + n, 3);
        }
    }
    for s in 0..sets {
        for i in 0..l0 {
            for k in 0..hcas {
                plan.add_hca(format!("H_s{s}_{i}_{k}"), sw0(s, i), k + 1);
            }
        }
    }
    plan.roots = if l3 > 0 {
        (0..l3).map(sw3).collect()
    } else {
        (0..l1).map(sw2).collect()
    };
    plan.finish(opts)
}
