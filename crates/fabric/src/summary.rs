//! Fabric figures for `fabroute info`: counts, port and degree statistics, parallel-link
//! groups, connectivity and the switch-graph diameter.

use crate::model::*;
use rayon::prelude::*;
use serde::Serialize;

/// Min / max / mean of a per-node quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub min: u32,
    pub max: u32,
    pub mean: f64,
}

impl Spread {
    fn of(values: impl Iterator<Item = u32>) -> Spread {
        let (mut min, mut max, mut sum, mut n) = (u32::MAX, 0u32, 0u64, 0u64);
        for v in values {
            min = min.min(v);
            max = max.max(v);
            sum += v as u64;
            n += 1;
        }
        if n == 0 {
            return Spread::default();
        }
        Spread {
            min,
            max,
            mean: sum as f64 / n as f64,
        }
    }
}

/// What `fabroute info` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub kind: String,
    pub switches: usize,
    pub cas: usize,
    pub routers: usize,
    /// End ports (cabled CA and router ports).
    pub end_ports: usize,
    /// All cables.
    pub links: usize,
    /// Cables between two different switches.
    pub switch_links: usize,
    /// Cables from a switch into itself.
    pub loopback_links: usize,
    /// Switch pairs joined by more than one cable, and the cables in those groups.
    pub parallel_groups: usize,
    pub parallel_links: usize,
    /// Declared ports per switch.
    pub switch_ports: Spread,
    /// Cabled ports per switch.
    pub switch_ports_used: Spread,
    /// Distinct neighbour switches per switch.
    pub switch_degree: Spread,
    /// End ports per switch.
    pub end_ports_per_switch: Spread,
    /// Connected components of the switch graph (0 when there are no switches).
    pub components: usize,
    /// Longest shortest path between two switches, in switch-to-switch hops; `None` when the
    /// switch graph is disconnected.
    pub diameter: Option<u32>,
    pub max_lid: u32,
    pub lmc: u8,
}

impl Summary {
    pub fn of(f: &Fabric) -> Summary {
        let ns = f.num_switches();
        let mut loopback = 0usize;
        let mut switch_links = 0usize;
        for l in &f.links {
            let (na, nb) = (f.ports[l.a.idx()].node, f.ports[l.b.idx()].node);
            if f.is_switch(na) && f.is_switch(nb) {
                if na == nb {
                    loopback += 1;
                } else {
                    switch_links += 1;
                }
            }
        }
        // Neighbours per switch (sorted), for degree and parallel groups.
        let mut parallel_groups = 0usize;
        let mut parallel_links = 0usize;
        let mut degree = Vec::with_capacity(ns);
        let mut nbrs: Vec<u32> = Vec::new();
        for s in 0..ns {
            nbrs.clear();
            nbrs.extend(
                f.switch_links(SwitchIdx(s as u32))
                    .iter()
                    .filter_map(|&c| f.dst_switch(c).map(|t| t.0)),
            );
            nbrs.sort_unstable();
            let mut distinct = 0u32;
            let mut i = 0;
            while i < nbrs.len() {
                let mut j = i;
                while j < nbrs.len() && nbrs[j] == nbrs[i] {
                    j += 1;
                }
                distinct += 1;
                // Count each group once, from its lower-indexed end.
                if j - i > 1 && (s as u32) < nbrs[i] {
                    parallel_groups += 1;
                    parallel_links += j - i;
                }
                i = j;
            }
            degree.push(distinct);
        }
        let mut ends_per_switch = vec![0u32; ns];
        for &p in &f.end_ports {
            if let Some(r) = f.attached_switch(p) {
                if let Some(s) = f.switch_of(f.port(r).node) {
                    ends_per_switch[s.idx()] += 1;
                }
            }
        }
        let (components, diameter) = diameter(f);
        Summary {
            kind: f.hints.kind.clone(),
            switches: ns,
            cas: f.count(NodeKind::Ca),
            routers: f.count(NodeKind::Router),
            end_ports: f.end_ports.len(),
            links: f.links.len(),
            switch_links,
            loopback_links: loopback,
            parallel_groups,
            parallel_links,
            switch_ports: Spread::of(f.switches.iter().map(|&n| f.node(n).nports as u32)),
            switch_ports_used: Spread::of(f.switches.iter().map(|&n| {
                f.node_ports(n)
                    .filter(|&p| f.ports[p.idx()].link.is_some())
                    .count() as u32
            })),
            switch_degree: Spread::of(degree.into_iter()),
            end_ports_per_switch: Spread::of(ends_per_switch.into_iter()),
            components,
            diameter,
            max_lid: f.max_lid() as u32,
            lmc: f
                .end_ports
                .iter()
                .map(|&p| f.ports[p.idx()].lmc)
                .max()
                .unwrap_or(0),
        }
    }
}

/// Switch neighbour lists in CSR form over switch indices (parallel links collapsed).
fn switch_csr(f: &Fabric) -> (Vec<u32>, Vec<u32>) {
    let ns = f.num_switches();
    let mut start = Vec::with_capacity(ns + 1);
    let mut adj = Vec::with_capacity(f.sw_adj.len());
    for s in f.switch_ids() {
        start.push(adj.len() as u32);
        let from = adj.len();
        adj.extend(
            f.switch_links(s)
                .iter()
                .filter_map(|&c| f.dst_switch(c).map(|t| t.0)),
        );
        adj[from..].sort_unstable();
        let mut w = from;
        for r in from..adj.len() {
            if w == from || adj[w - 1] != adj[r] {
                adj[w] = adj[r];
                w += 1;
            }
        }
        adj.truncate(w);
    }
    start.push(adj.len() as u32);
    (start, adj)
}

/// Number of connected components of the switch graph and its diameter (`None` if
/// disconnected). Exact: bit-parallel BFS from 64 sources at a time, batches in parallel.
pub fn diameter(f: &Fabric) -> (usize, Option<u32>) {
    let ns = f.num_switches();
    if ns == 0 {
        return (0, None);
    }
    let (start, adj) = switch_csr(f);
    // Components by union-find-free BFS.
    let mut comp = vec![u32::MAX; ns];
    let mut ncomp = 0usize;
    let mut queue = Vec::with_capacity(ns);
    for s in 0..ns {
        if comp[s] != u32::MAX {
            continue;
        }
        comp[s] = ncomp as u32;
        queue.clear();
        queue.push(s as u32);
        let mut head = 0;
        while head < queue.len() {
            let u = queue[head] as usize;
            head += 1;
            for &v in &adj[start[u] as usize..start[u + 1] as usize] {
                if comp[v as usize] == u32::MAX {
                    comp[v as usize] = ncomp as u32;
                    queue.push(v);
                }
            }
        }
        ncomp += 1;
    }
    if ncomp > 1 {
        return (ncomp, None);
    }
    let batches = ns.div_ceil(64);
    let d = (0..batches)
        .into_par_iter()
        .map(|b| {
            let lo = b * 64;
            let hi = (lo + 64).min(ns);
            let mut seen = vec![0u64; ns];
            let mut frontier = vec![0u64; ns];
            let mut next = vec![0u64; ns];
            for s in lo..hi {
                seen[s] |= 1u64 << (s - lo);
                frontier[s] |= 1u64 << (s - lo);
            }
            let full: u64 = if hi - lo == 64 {
                u64::MAX
            } else {
                (1u64 << (hi - lo)) - 1
            };
            let mut level = 0u32;
            loop {
                let mut any = false;
                for v in 0..ns {
                    let mut acc = 0u64;
                    for &u in &adj[start[v] as usize..start[v + 1] as usize] {
                        acc |= frontier[u as usize];
                    }
                    acc &= !seen[v];
                    next[v] = acc;
                    if acc != 0 {
                        any = true;
                        seen[v] |= acc;
                    }
                }
                if !any {
                    break;
                }
                level += 1;
                std::mem::swap(&mut frontier, &mut next);
                if seen.iter().all(|&w| w & full == full) {
                    break;
                }
            }
            level
        })
        .max()
        .unwrap_or(0);
    (1, Some(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FabricBuilder;

    fn ring(n: usize, parallel: bool) -> Fabric {
        let mut b = FabricBuilder::new();
        let ids: Vec<_> = (0..n)
            .map(|i| {
                b.add_node(
                    NodeKind::Switch,
                    8,
                    0x200000 + i as u64,
                    format!("S{i}"),
                    "",
                )
                .unwrap()
            })
            .collect();
        for i in 0..n {
            let j = (i + 1) % n;
            b.connect(ids[i], 1, ids[j], 2, Width::X4, Speed::Sdr)
                .unwrap();
            if parallel {
                b.connect(ids[i], 3, ids[j], 4, Width::X4, Speed::Sdr)
                    .unwrap();
            }
        }
        let h = b.add_node(NodeKind::Ca, 1, 0x100000, "H0", "").unwrap();
        b.connect(h, 1, ids[0], 5, Width::X4, Speed::Sdr).unwrap();
        b.build().unwrap()
    }

    #[test]
    fn ring_figures() {
        for n in [3usize, 7, 10, 130] {
            let f = ring(n, false);
            let s = Summary::of(&f);
            assert_eq!(s.switches, n);
            assert_eq!(s.cas, 1);
            assert_eq!(s.switch_links, n);
            assert_eq!(s.diameter, Some((n / 2) as u32), "ring of {n}");
            assert_eq!(s.switch_degree.max, 2);
            assert_eq!(s.parallel_groups, 0);
        }
        let f = ring(5, true);
        let s = Summary::of(&f);
        assert_eq!(s.parallel_groups, 5);
        assert_eq!(s.parallel_links, 10);
        assert_eq!(s.switch_degree.max, 2);
        assert_eq!(s.diameter, Some(2));
    }

    #[test]
    fn disconnected_has_no_diameter() {
        let mut b = FabricBuilder::new();
        b.add_node(NodeKind::Switch, 4, 1, "a", "").unwrap();
        b.add_node(NodeKind::Switch, 4, 2, "b", "").unwrap();
        let f = b.build().unwrap();
        assert_eq!(diameter(&f), (2, None));
    }
}
