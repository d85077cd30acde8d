//! Random regular switch graphs.

use super::{check_size, gerr, mul, GenError, GenOptions, Plan};
use crate::model::Fabric;
use crate::rng::Rng;
use rustc_hash::FxHashSet;

/// A random connected simple `d`-regular graph on `n` switches, `hcas` HCAs per switch, drawn
/// from `seed`.
///
/// Method: start from a connected circulant d-regular graph, randomise it with `10·|E|` random
/// degree-preserving double-edge swaps (rejecting loops and parallel edges), then, while it is
/// disconnected, swap an edge of the first component with an edge of another one (which never
/// creates loops or parallel edges and keeps the degrees). `d = 2` is a random Hamiltonian cycle.
/// Requirements: `d < n`, `n·d` even, `d ≥ 1` unless `n = 1`, and `d = 1` only for `n = 2`
/// (otherwise no connected graph exists).
///
/// Names `S_<i>`, HCAs `H_<i>_<t>`. Ports: `1..=hcas` HCAs, then network ports in order of use,
/// the edges taken in increasing (lower, higher) switch order (gen_topo.py's layout; the graph
/// itself differs from gen_topo's, which uses Python's random generator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandRegSpec {
    pub n: u32,
    pub d: u32,
    pub hcas: u32,
    pub seed: u64,
}

fn components(n: usize, edges: &[(u32, u32)]) -> Vec<u32> {
    let mut adj_start = vec![0u32; n + 1];
    for &(a, b) in edges {
        adj_start[a as usize + 1] += 1;
        adj_start[b as usize + 1] += 1;
    }
    for i in 0..n {
        adj_start[i + 1] += adj_start[i];
    }
    let mut fill = adj_start.clone();
    let mut adj = vec![0u32; 2 * edges.len()];
    for &(a, b) in edges {
        adj[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
        adj[fill[b as usize] as usize] = a;
        fill[b as usize] += 1;
    }
    let mut comp = vec![u32::MAX; n];
    let mut next = 0u32;
    let mut stack = Vec::new();
    for s in 0..n {
        if comp[s] != u32::MAX {
            continue;
        }
        comp[s] = next;
        stack.push(s as u32);
        while let Some(u) = stack.pop() {
            for &v in &adj[adj_start[u as usize] as usize..adj_start[u as usize + 1] as usize] {
                if comp[v as usize] == u32::MAX {
                    comp[v as usize] = next;
                    stack.push(v);
                }
            }
        }
        next += 1;
    }
    comp
}

fn key(a: u32, b: u32) -> (u32, u32) {
    (a.min(b), a.max(b))
}

/// The edge list (sorted, `a < b`) of a random connected d-regular graph.
pub(crate) fn regular_graph(
    n: u32,
    d: u32,
    rng: &mut Rng,
    what: &str,
) -> Result<Vec<(u32, u32)>, GenError> {
    if n == 0 {
        return gerr(format!("{what}: n (switches) must be at least 1"));
    }
    if d >= n && !(n == 1 && d == 0) {
        return gerr(format!("{what}: degree d = {d} must be below n = {n}"));
    }
    if (n as u64 * d as u64) % 2 == 1 {
        return gerr(format!(
            "{what}: n·d = {} must be even",
            n as u64 * d as u64
        ));
    }
    if d == 0 && n > 1 {
        return gerr(format!("{what}: degree 0 leaves {n} switches disconnected"));
    }
    if d == 1 && n > 2 {
        return gerr(format!(
            "{what}: a 1-regular graph on {n} switches is disconnected (d = 1 needs n = 2)"
        ));
    }
    let mut edges: Vec<(u32, u32)> = Vec::new();
    if d == 1 {
        edges.push((0, 1));
    } else if d == 2 {
        let mut perm: Vec<u32> = (0..n).collect();
        rng.shuffle(&mut perm);
        for i in 0..n as usize {
            edges.push(key(perm[i], perm[(i + 1) % n as usize]));
        }
    } else if d >= 3 {
        for i in 0..n {
            for j in 1..=d / 2 {
                edges.push(key(i, (i + j) % n));
            }
        }
        if d % 2 == 1 {
            for i in 0..n / 2 {
                edges.push((i, i + n / 2));
            }
        }
        let mut set: FxHashSet<(u32, u32)> = edges.iter().copied().collect();
        let m = edges.len();
        let swaps = 10 * m;
        for _ in 0..swaps {
            let i = rng.below(m as u64) as usize;
            let j = rng.below(m as u64) as usize;
            if i == j {
                continue;
            }
            let (a, b) = edges[i];
            let (mut c, mut e) = edges[j];
            if rng.below(2) == 1 {
                std::mem::swap(&mut c, &mut e);
            }
            // (a,b),(c,e) -> (a,c),(b,e)
            if a == c || b == e || set.contains(&key(a, c)) || set.contains(&key(b, e)) {
                continue;
            }
            set.remove(&edges[i]);
            set.remove(&edges[j]);
            edges[i] = key(a, c);
            edges[j] = key(b, e);
            set.insert(edges[i]);
            set.insert(edges[j]);
        }
        // Join components.
        let limit = 100 + 10 * n as usize;
        let mut tries = 0;
        loop {
            let comp = components(n as usize, &edges);
            if comp.iter().all(|&c| c == 0) {
                break;
            }
            tries += 1;
            if tries > limit {
                return gerr(format!("{what}: could not make the random graph connected"));
            }
            let first: Vec<usize> = (0..m).filter(|&k| comp[edges[k].0 as usize] == 0).collect();
            let other: Vec<usize> = (0..m).filter(|&k| comp[edges[k].0 as usize] != 0).collect();
            let i = first[rng.below(first.len() as u64) as usize];
            let j = other[rng.below(other.len() as u64) as usize];
            let (a, b) = edges[i];
            let (c, e) = edges[j];
            edges[i] = key(a, c);
            edges[j] = key(b, e);
        }
    }
    edges.sort_unstable();
    Ok(edges)
}

/// Generates a random regular fabric; see [`RandRegSpec`]. Hints: kind
/// `randreg(n=..,d=..,seed=..)`, link classes `host`, `net`.
pub fn random_regular(spec: &RandRegSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let RandRegSpec { n, d, hcas, seed } = *spec;
    let kind = format!("randreg(n={n},d={d},seed={seed})");
    let nh = mul(n as u64, hcas as u64, &kind)?;
    check_size(&kind, n as u64, nh, opts)?;
    if hcas as u64 + d as u64 > super::MAX_PORTS as u64 {
        return gerr(format!(
            "{kind}: switches need {} ports, more than {}",
            hcas as u64 + d as u64,
            super::MAX_PORTS
        ));
    }
    let mut rng = Rng::new(seed);
    let edges = regular_graph(n, d, &mut rng, &kind)?;
    let mut plan = Plan::new(kind, &["net"]);
    for i in 0..n {
        plan.add_switch(format!("S_{i}"));
    }
    for np in plan.next_port.iter_mut() {
        *np = hcas + 1;
    }
    for &(a, b) in &edges {
        plan.link_auto(a, b, 1);
    }
    for i in 0..n {
        for t in 0..hcas {
            plan.add_hca(format!("H_{i}_{t}"), i, t + 1);
        }
    }
    plan.finish(opts)
}
