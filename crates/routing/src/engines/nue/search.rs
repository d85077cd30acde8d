//! Routing one destination LID inside one layer's complete channel dependency graph: the
//! Dijkstra over switches, the CDG check of each relaxed channel, the backtracking and the
//! escape paths when the search is stuck.

use super::*;

/// Reusable per-destination state.
pub(super) struct Work {
    /// The cost of one hop in route counts (`LiveGraph::hop`, more when [`improve`] shortens).
    pub(super) hop: u64,
    /// Per switch: the channel it forwards on (`NONE` = unreached or the destination).
    pub(super) out: Vec<u32>,
    /// Per switch: the next switch's channel its dependency leads into (`NONE`: none added).
    pub(super) dep: Vec<u32>,
    /// Per switch: the switch it forwards to.
    pub(super) par: Vec<u32>,
    pub(super) done: Vec<bool>,
    /// Switches reached, each after the one it forwards to.
    pub(super) order: Vec<u32>,
    /// Queued (cost, switch); entries whose cost is no longer the switch's are stale.
    pub(super) heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Per switch: the cost of its cheapest hand-over so far, and that hand-over's channel.
    pub(super) dist: Vec<u64>,
    pub(super) cand: Vec<u32>,
    /// Switches given a cost for this destination (reset when it is done).
    pub(super) touched: Vec<u32>,
    /// Per switch: sources whose routes cross it (the load accumulation).
    pub(super) acc: Vec<u64>,
}

/// What routing one layer's destinations came to.
impl Work {
    pub(super) fn new(n: usize, hop: u64) -> Self {
        Work {
            hop,
            out: vec![NONE; n],
            dep: vec![NONE; n],
            par: vec![NONE; n],
            done: vec![false; n],
            order: Vec::with_capacity(n),
            heap: BinaryHeap::new(),
            dist: vec![u64::MAX; n],
            cand: vec![NONE; n],
            touched: Vec::new(),
            acc: vec![0; n],
        }
    }
}

/// Routes destination switch `ds` (one LID) in layer `l`: fills `w.order` (switches reached,
/// each after the one it forwards to), `w.out` and `w.par`, with every dependency in the
/// layer's graph. Without an escape `tree`, an impasse the backtracking does not solve
/// returns false, with the reached switches in `w.order` holding their dependencies
/// (`w.out[s] → w.dep[s]`); true when every switch of the component is reached.
#[allow(clippy::too_many_arguments)]
pub(super) fn route_one(
    net: &LiveGraph,
    layers: &mut Layers,
    l: usize,
    tree: Option<&Tree>,
    ds: usize,
    load: &[u64],
    w: &mut Work,
    tally: &mut Tally,
) -> bool {
    let t = net.t;
    for &s in &w.order {
        let s = s as usize;
        w.out[s] = NONE;
        w.dep[s] = NONE;
        w.par[s] = NONE;
        w.done[s] = false;
    }
    // every switch changed last time is in `order` (the escape lists the whole component)
    w.order.clear();
    w.heap.clear();
    w.touched.clear();
    // Dijkstra with each switch's cheapest hand-over (`cand`: channel v → u, u finished)
    // checked only when the switch is popped; a refused one is replaced by the cheapest
    // hand-over from its finished neighbours not known to be refused, and the switch goes
    // back in the queue. No dependency is ever added tentatively.
    w.dist[ds] = 0;
    w.cand[ds] = NONE;
    w.heap.push(Reverse((0, ds as u32)));
    w.touched.push(ds as u32);
    let want = net.members[net.comp[ds] as usize].len();
    let mut moved = false;
    loop {
        while let Some(Reverse((d, v))) = w.heap.pop() {
            let v = v as usize;
            if w.done[v] || d != w.dist[v] {
                continue;
            }
            if v != ds {
                let c = w.cand[v];
                let u = net.ch_dst[c as usize] as usize;
                let next = if u == ds { NONE } else { w.out[u] };
                if next != NONE && !layers.try_add_edge(l, c, next) {
                    let mut best = (u64::MAX, NONE);
                    for a in t.links(v) {
                        let u = a.peer as usize;
                        if !w.done[u] {
                            continue;
                        }
                        let next = if u == ds { NONE } else { w.out[u] };
                        if next != NONE && layers.refused(l, a.ch, next) {
                            continue;
                        }
                        best = best.min((w.dist[u] + w.hop + load[a.ch as usize], a.ch));
                    }
                    w.dist[v] = best.0;
                    w.cand[v] = best.1;
                    if best.1 != NONE {
                        w.heap.push(Reverse((best.0, v as u32)));
                    }
                    continue;
                }
                w.out[v] = c;
                w.dep[v] = next;
                w.par[v] = u as u32;
            }
            w.done[v] = true;
            w.order.push(v as u32);
            relax(t, w.hop, w, load, v, d);
        }
        if w.order.len() >= want {
            break;
        }
        // an impasse: re-hang a reached neighbour of an unreached switch, then go on
        match backtrack(net, layers, l, ds, w) {
            Some(v) => {
                moved = true;
                let d = w.dist[v];
                relax(t, w.hop, w, load, v, d);
            }
            None => break,
        }
    }
    for &s in &w.touched {
        w.dist[s as usize] = u64::MAX;
    }
    w.out[ds] = NONE;
    w.par[ds] = NONE;
    // `order` is what the search reached; an impasse it could not get out of by moving
    // switches leaves switches of the component out
    if moved {
        rebuild_order(t, ds, w);
        if w.order.len() >= want {
            tally.backtracked += 1;
        }
    }
    if w.order.len() < want {
        let Some(tree) = tree else { return false };
        tally.impasses += 1;
        tally.escaping += escape(net, layers, l, tree, ds, w);
    }
    true
}

/// Offers every unreached neighbour of `v` (finished at cost `d`) the hand-over to `v`.
pub(super) fn relax(t: &Topo, hop: u64, w: &mut Work, load: &[u64], v: usize, d: u64) {
    for a in t.links(v) {
        let x = a.peer as usize;
        if w.done[x] {
            continue;
        }
        let c = a.ch ^ 1; // x → v
        let cost = d + hop + load[c as usize];
        if cost < w.dist[x] {
            if w.dist[x] == u64::MAX {
                w.touched.push(x as u32);
            }
            w.dist[x] = cost;
            w.cand[x] = c;
            w.heap.push(Reverse((cost, x as u32)));
        }
    }
}

/// Local backtracking after an impasse: for an unreached switch `x` and a reached neighbour
/// `a`, another way out of `a` (to a reached switch `b` not below `a`) such that `a`'s new
/// dependency, its children's dependencies on the new channel and `x`'s on it all fit the
/// graph; then `a` is moved there (its old dependencies leave the graph) and `x` hangs off
/// `a`. Returns `x`, or `None` when no move helps.
pub(super) fn backtrack(
    net: &LiveGraph,
    layers: &mut Layers,
    l: usize,
    ds: usize,
    w: &mut Work,
) -> Option<usize> {
    let t = net.t;
    let members = &net.members[net.comp[ds] as usize];
    let mut added: Vec<(u32, u32)> = Vec::new();
    for &x in members {
        let x = x as usize;
        if w.done[x] {
            continue;
        }
        for xa in t.links(x) {
            let a = xa.peer as usize;
            if !w.done[a] || a == ds {
                continue;
            }
            let children: Vec<usize> = t
                .links(a)
                .iter()
                .filter(|c| w.done[c.peer as usize] && w.out[c.peer as usize] == c.ch ^ 1)
                .map(|c| c.peer as usize)
                .collect();
            for ab in t.links(a) {
                let b = ab.peer as usize;
                if !w.done[b] || ab.ch == w.out[a] || below(w, b, a, ds) {
                    continue;
                }
                let lch = ab.ch;
                let need = if b == ds { NONE } else { w.out[b] };
                added.clear();
                let mut ok = need == NONE || layers.try_add_edge(l, lch, need);
                if ok && need != NONE {
                    added.push((lch, need));
                }
                for &c in children.iter().chain(std::iter::once(&x)) {
                    if !ok {
                        break;
                    }
                    let cin = if c == x { xa.ch } else { w.out[c] };
                    ok = layers.try_add_edge(l, cin, lch);
                    if ok {
                        added.push((cin, lch));
                    }
                }
                if !ok {
                    for &(u, v) in &added {
                        layers.remove_edge(l, u, v);
                    }
                    continue;
                }
                // move a: its old dependency and its children's on its old channel go
                if w.dep[a] != NONE {
                    layers.remove_edge(l, w.out[a], w.dep[a]);
                }
                for &c in &children {
                    if w.dep[c] != NONE {
                        layers.remove_edge(l, w.out[c], w.dep[c]);
                    }
                    w.dep[c] = lch;
                }
                w.out[a] = lch;
                w.par[a] = b as u32;
                w.dep[a] = need;
                w.done[x] = true;
                w.out[x] = xa.ch;
                w.par[x] = a as u32;
                w.dep[x] = lch;
                w.dist[x] = w.dist[a] + w.hop;
                w.order.push(x as u32);
                return Some(x);
            }
        }
    }
    None
}

/// True when `b`'s way to `ds` passes `a` (so `a` may not forward to `b`).
pub(super) fn below(w: &Work, b: usize, a: usize, ds: usize) -> bool {
    let mut y = b;
    let mut steps = 0;
    while y != ds && steps <= w.par.len() {
        if y == a {
            return true;
        }
        y = w.par[y] as usize;
        steps += 1;
    }
    y == a
}

/// `order` again after switches moved: breadth first from `ds` against the forwarding
/// direction, so every switch comes after the one it forwards to.
pub(super) fn rebuild_order(t: &Topo, ds: usize, w: &mut Work) {
    for &s in &w.order {
        w.done[s as usize] = false;
    }
    w.order.clear();
    w.order.push(ds as u32);
    w.done[ds] = true;
    let mut h = 0;
    while h < w.order.len() {
        let u = w.order[h] as usize;
        h += 1;
        for a in t.links(u) {
            let v = a.peer as usize;
            if !w.done[v] && w.out[v] == a.ch ^ 1 {
                w.done[v] = true;
                w.order.push(v as u32);
            }
        }
    }
}

/// After an impasse: the switches `E` that follow the layer's escape tree toward `ds`,
/// starting with the unreached ones; the others keep their search result. Where an escape
/// switch hands over to a searched one, or the other way round, the dependency between the
/// two must fit the layer's graph; where it does not, the searched switch joins `E` (the one
/// handed over to, or the one handing over). `E` only grows, and with every switch in `E`
/// only tree dependencies remain, which are in the graph from the start, so this ends.
/// Work list: a switch joining `E` re-examines itself and the switches handing over to it.
/// Returns how many switches follow the tree.
pub(super) fn escape(
    net: &LiveGraph,
    layers: &mut Layers,
    l: usize,
    tree: &Tree,
    ds: usize,
    w: &mut Work,
) -> usize {
    let t = net.t;
    let members = &net.members[net.comp[ds] as usize];
    let m = members.len();
    let pos = |s: usize| members.binary_search(&(s as u32)).unwrap_or(0);
    // the tree's next hop toward ds: up, except on the way from ds to its root (down)
    let mut esc: Vec<(u32, u32)> = members
        .iter()
        .map(|&s| (tree.up[s as usize], tree.parent[s as usize]))
        .collect();
    let d = pos(ds);
    esc[d] = (NONE, NONE);
    let mut x = ds;
    while tree.parent[x] != NONE {
        let p = tree.parent[x] as usize;
        esc[pos(p)] = (tree.up[x] ^ 1, x as u32);
        x = p;
    }
    let mut in_e: Vec<bool> = members.iter().map(|&s| !w.done[s as usize]).collect();
    // per member, the members handing over to it by search and by tree (CSR)
    let csr = |next: &dyn Fn(usize) -> u32| -> (Vec<u32>, Vec<u32>) {
        let mut start = vec![0u32; m + 1];
        for i in 0..m {
            let nx = next(i);
            if nx != NONE {
                start[pos(nx as usize) + 1] += 1;
            }
        }
        for i in 0..m {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[m] as usize];
        for i in 0..m {
            let nx = next(i);
            if nx != NONE {
                let j = pos(nx as usize);
                list[fill[j] as usize] = i as u32;
                fill[j] += 1;
            }
        }
        (start, list)
    };
    let (s_start, s_from) = csr(&|i| {
        let s = members[i] as usize;
        if in_e[i] || s == ds {
            NONE
        } else {
            w.par[s]
        }
    });
    let (e_start, e_from) = csr(&|i| esc[i].1);
    // the edge each member holds in the graph for the hand-over at its next switch
    let mut held: Vec<(u32, u32)> = members
        .iter()
        .map(|&s| (w.out[s as usize], w.dep[s as usize]))
        .map(|(o, dp)| if dp == NONE { (NONE, NONE) } else { (o, dp) })
        .collect();
    let chan = |in_e: &[bool], i: usize| -> (u32, u32) {
        if in_e[i] {
            esc[i]
        } else {
            let s = members[i] as usize;
            (w.out[s], w.par[s])
        }
    };
    let mut joins: Vec<usize> = (0..m).filter(|&i| in_e[i]).collect();
    let mut recheck: Vec<usize> = joins.clone();
    loop {
        // re-examine: release what is held, add what the hand-over needs now
        while let Some(i) = recheck.pop() {
            if held[i].0 != NONE {
                layers.remove_edge(l, held[i].0, held[i].1);
                held[i] = (NONE, NONE);
            }
            if i == d {
                continue;
            }
            let (ch, nx) = chan(&in_e, i);
            if nx == NONE || nx as usize == ds {
                continue;
            }
            let j = pos(nx as usize);
            if in_e[i] && in_e[j] {
                continue; // tree → tree: in the graph from the start
            }
            let need = chan(&in_e, j).0;
            if layers.try_add_edge(l, ch, need) {
                held[i] = (ch, need);
            } else {
                let culprit = if in_e[i] { j } else { i };
                if !in_e[culprit] {
                    in_e[culprit] = true;
                    joins.push(culprit);
                }
            }
        }
        let Some(g) = joins.pop() else { break };
        // g now follows the tree: it and everyone handing over to it look again
        recheck.push(g);
        for &k in &s_from[s_start[g] as usize..s_start[g + 1] as usize] {
            if !in_e[k as usize] {
                recheck.push(k as usize);
            }
        }
        for &k in &e_from[e_start[g] as usize..e_start[g + 1] as usize] {
            if in_e[k as usize] {
                recheck.push(k as usize);
            }
        }
    }
    let mut count = 0;
    for (i, &s) in members.iter().enumerate() {
        let s = s as usize;
        w.done[s] = false;
        if in_e[i] && s != ds {
            (w.out[s], w.par[s]) = esc[i];
            count += 1;
        }
        // the held edges are this destination's now; nothing takes them out later
        w.dep[s] = NONE;
    }
    rebuild_order(t, ds, w);
    debug_assert_eq!(w.order.len(), members.len());
    count
}
