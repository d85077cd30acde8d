//! Nue's layers and escape paths: destinations split into one layer per VL by their switch,
//! and per layer a spanning tree from its central switch whose channels every search may
//! fall back to.

use super::*;

/// Layer of every switch, by recursive bisection: a set of switches is split into a ball
/// grown breadth first from a far switch of the set (within the set) holding its share of
/// destination LIDs, and the rest; each part is split again for its share of the `k` layers.
/// Balls keep a layer's destinations together, so their routes agree on directions (a band
/// of breadth-first levels would wrap around a torus).
pub(super) fn partition(net: &LiveGraph, k: usize, weight: &[u64]) -> Vec<u8> {
    let t = net.t;
    let mut layer = vec![0u8; t.n];
    let all: Vec<u32> = (0..t.n as u32).filter(|&s| t.alive[s as usize]).collect();
    let mut inset = vec![false; t.n];
    let mut lv = vec![u32::MAX; t.n];
    let mut stack = vec![(all, 0usize, k)];
    while let Some((set, first, count)) = stack.pop() {
        if count == 1 || set.len() <= 1 {
            for &s in &set {
                layer[s as usize] = first as u8;
            }
            continue;
        }
        let (k1, k2) = (count / 2, count - count / 2);
        for &s in &set {
            inset[s as usize] = true;
        }
        // breadth first within the set from `from`, restarting at the lowest switch not yet
        // reached when the set is not connected; the visiting order
        let bfs = |from: u32, lv: &mut Vec<u32>| -> Vec<u32> {
            for &s in &set {
                lv[s as usize] = u32::MAX;
            }
            let mut order = Vec::with_capacity(set.len());
            let mut starts = std::iter::once(from).chain(set.iter().copied());
            while order.len() < set.len() {
                let Some(st) = starts.find(|&x| lv[x as usize] == u32::MAX) else {
                    break;
                };
                lv[st as usize] = 0;
                let mut h = order.len();
                order.push(st);
                while h < order.len() {
                    let u = order[h] as usize;
                    h += 1;
                    for a in t.links(u) {
                        let p = a.peer as usize;
                        if inset[p] && lv[p] == u32::MAX {
                            lv[p] = lv[u] + 1;
                            order.push(p as u32);
                        }
                    }
                }
            }
            order
        };
        let o = bfs(set[0], &mut lv);
        let far = *o.last().unwrap_or(&set[0]);
        let o = bfs(far, &mut lv);
        for &s in &set {
            inset[s as usize] = false;
        }
        let total: u64 = o.iter().map(|&s| weight[s as usize]).sum();
        let want = total * k1 as u64 / count as u64;
        let mut acc = 0u64;
        let mut cut = 0;
        while cut < o.len() && (acc < want || cut == 0) && cut + 1 < o.len() {
            acc += weight[o[cut] as usize];
            cut += 1;
        }
        let (a, b) = o.split_at(cut);
        stack.push((b.to_vec(), first + k1, k2));
        stack.push((a.to_vec(), first, k1));
    }
    layer
}

/// The escape tree of one layer: per switch its parent channel (switch → parent, `NONE` at a
/// root), parent switch and children count.
pub(super) struct Tree {
    pub(super) up: Vec<u32>,
    pub(super) parent: Vec<u32>,
}

/// The layer's central switch per component: least eccentricity toward the layer's
/// destination switches, then least total distance, then index; components without a
/// destination of the layer get their first switch.
pub(super) fn centres(net: &LiveGraph, dests: &[usize]) -> Vec<usize> {
    let t = net.t;
    let n = t.n;
    let (ecc, sum) = dests
        .par_iter()
        .fold(
            || (vec![0u32; n], vec![0u64; n]),
            |(mut e, mut s), &d| {
                let lv = crate::engines::ranking::bfs_levels(t, &[d]);
                for x in 0..n {
                    if lv[x] != u32::MAX {
                        e[x] = e[x].max(lv[x]);
                        s[x] += lv[x] as u64;
                    }
                }
                (e, s)
            },
        )
        .reduce(
            || (vec![0u32; n], vec![0u64; n]),
            |(mut e, mut s), (e2, s2)| {
                for x in 0..n {
                    e[x] = e[x].max(e2[x]);
                    s[x] += s2[x];
                }
                (e, s)
            },
        );
    let mut best: Vec<Option<usize>> = vec![None; net.members.len()];
    for x in (0..n).filter(|&x| t.alive[x]) {
        let c = net.comp[x] as usize;
        let key = |y: usize| (ecc[y], sum[y], y);
        if best[c].is_none_or(|b| key(x) < key(b)) {
            best[c] = Some(x);
        }
    }
    best.into_iter().flatten().collect()
}

/// The escape trees' roots for order `o` in layer `l`: the layer's central switches, except
/// for the orders from [`ROOTED`] on: for those, a destination switch of the layer drawn
/// per component with the order's seed (on symmetric fabrics every switch is as central as
/// any other, and which one roots the tree changes the routes as much as the order does).
pub(super) fn roots_for(net: &LiveGraph, plan: &Layer, o: usize, l: usize) -> Vec<usize> {
    if o < ROOTED {
        return plan.roots.clone();
    }
    let mut rng = fabric::rng::Rng::new((o as u64) << 8 | l as u64);
    plan.roots
        .iter()
        .map(|&r| {
            let c = net.comp[r];
            let pool: Vec<usize> = plan
                .switches
                .iter()
                .copied()
                .filter(|&s| net.comp[s] == c)
                .collect();
            if pool.is_empty() {
                r
            } else {
                pool[rng.below(pool.len() as u64) as usize]
            }
        })
        .collect()
}

/// Breadth-first spanning forest from `roots`; each switch's parent is the neighbour one level
/// up whose channel toward it carries the least load (then the lower channel).
pub(super) fn escape_tree(net: &LiveGraph, roots: &[usize], load: &[u64]) -> Tree {
    let t = net.t;
    let lv = crate::engines::ranking::bfs_levels(t, roots);
    let mut up = vec![NONE; t.n];
    let mut parent = vec![NONE; t.n];
    for s in 0..t.n {
        if lv[s] == u32::MAX || lv[s] == 0 {
            continue;
        }
        let best = t
            .links(s)
            .iter()
            .filter(|a| lv[a.peer as usize] + 1 == lv[s])
            .min_by_key(|a| (load[a.ch as usize], a.ch));
        if let Some(a) = best {
            up[s] = a.ch;
            parent[s] = a.peer;
        }
    }
    Tree { up, parent }
}

/// Puts the dependencies of tree routing toward `dests` into layer `l`: up→up everywhere;
/// at every switch `y` on the way from a destination to its root, the turn from any child's
/// up channel into the down channel toward a destination-side child, and down→down along
/// those ways. All together acyclic, so every one fits.
pub(super) fn mark_escape(layers: &mut Layers, l: usize, tree: &Tree, dests: &[usize], n: usize) {
    let mut on_way = vec![false; n];
    for &d in dests {
        let mut x = d;
        while !on_way[x] {
            on_way[x] = true;
            if tree.parent[x] == NONE {
                break;
            }
            x = tree.parent[x] as usize;
        }
    }
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (s, &p) in tree.parent.iter().enumerate() {
        if p != NONE {
            children[p as usize].push(s as u32);
        }
    }
    // the layer's graph is empty here, and these are acyclic: every one fits
    let mut add = |u: u32, v: u32| {
        let ok = layers.try_add_edge(l, u, v);
        debug_assert!(ok, "escape dependencies are acyclic");
    };
    for (s, &p) in tree.parent.iter().enumerate() {
        if p == NONE {
            continue;
        }
        let p = p as usize;
        // up → up
        if tree.up[p] != NONE {
            add(tree.up[s], tree.up[p]);
        }
        if !on_way[s] {
            continue;
        }
        let down = tree.up[s] ^ 1; // p → s
                                   // down → down: arriving at p from its parent, on toward s
        if tree.up[p] != NONE {
            add(tree.up[p] ^ 1, down);
        }
        // turns at p: up from another child, down toward s
        for &c in &children[p] {
            if c as usize != s {
                add(tree.up[c as usize], down);
            }
        }
    }
}
