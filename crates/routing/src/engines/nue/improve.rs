//! Nue's rip-up and reroute on small fabrics: the kept attempt's most loaded pairs routed
//! again, the extra hops it costs, and the moves that lower the busiest channel.

use super::*;

/// The switch-to-switch channel out of switch `s` at `port` (`NONE` for any other port).
pub(super) fn channel_at(net: &LiveGraph, s: usize, port: u8) -> u32 {
    let p = port as usize;
    if p < net.ports {
        net.port_ch[s * net.ports + p]
    } else {
        NONE
    }
}

/// Adds (`add`) or takes away the routes of one scored destination `ds` whose
/// switches forward on `out` (`NONE` at `ds` and outside its component): every channel on
/// the way from a switch gains or loses its end ports.
#[allow(clippy::too_many_arguments)]
pub(super) fn shift(
    net: &LiveGraph,
    members: &[u32],
    ds: usize,
    out: &[u32],
    load: &mut [u64],
    pair_load: &mut [u64],
    add: bool,
) {
    for &s in members {
        let (s, wgt) = (s as usize, net.src_w[s as usize]);
        if s == ds || wgt == 0 {
            continue;
        }
        let mut x = s;
        let mut steps = 0;
        while x != ds && out[x] != NONE && steps < members.len() {
            let ch = out[x] as usize;
            if add {
                load[ch] += wgt;
                pair_load[ch] += wgt;
            } else {
                load[ch] -= wgt;
                pair_load[ch] -= wgt;
            }
            x = net.ch_dst[ch] as usize;
            steps += 1;
        }
    }
}

/// The local search's objective: routes on the busiest channel, how many channels carry
/// that many, and routes over all channels (hops), least first.
pub(super) fn objective(pair_load: &[u64]) -> (u64, usize, u64) {
    pair_load
        .iter()
        .fold((0, 0, 0), |(top, at, sum), &x| match x.cmp(&top) {
            std::cmp::Ordering::Greater => (x, 1, sum + x),
            std::cmp::Ordering::Equal => (top, at + 1, sum + x),
            std::cmp::Ordering::Less => (top, at, sum + x),
        })
}

/// Rip-up and reroute on the chosen attempt, at most `budget` tries in all. First, while a
/// destination LID crossing one of the busiest channels can be taken out of its layer and
/// routed again so that [`objective`] drops, it is (the busiest channels in channel order,
/// each one's LIDs in the layers' order; every busiest channel is tried before giving up,
/// as moving off any of them lowers the objective).
/// Then LIDs whose paths are longer than shortest, the most extra hops first, are routed
/// again with a hop costing [`SHORTEN`] times more, kept when the routes over all channels
/// drop and the busiest channel does not rise. LIDs that follow an escape tree are never
/// moved (they hold tree dependencies the graph does not count). Returns (moved, tried).
pub(super) fn improve(
    net: &LiveGraph,
    c: &Common,
    a: &mut Attempt,
    budget: usize,
) -> (usize, usize) {
    if budget == 0 {
        return (0, 0);
    }
    let t = net.t;
    let n = t.n;
    let cands: Vec<(usize, Dest)> = c
        .plans
        .iter()
        .enumerate()
        .flat_map(|(l, p)| p.dests.iter().map(move |&d| (l, d)))
        .filter(|(_, d)| c.scored[d.1 as usize] && !a.escaped[d.1 as usize])
        .collect();
    let mut m = Mover {
        w: Work::new(n, net.hop),
        old: vec![NONE; n],
        score: objective(&a.pair_load),
    };
    let (mut moved, mut tried) = (0, 0);
    // the busiest channels (ascending); none when no end-port route crosses a
    // switch-to-switch channel. A move off any of them lowers the objective (the busiest
    // load, or how many channels carry it), so each is tried before giving up.
    let mut hot: Vec<usize> = Vec::new();
    'search: loop {
        let top = a.pair_load.iter().copied().max().unwrap_or(0);
        if top == 0 {
            break;
        }
        hot.clear();
        hot.extend((0..a.pair_load.len()).filter(|&ch| a.pair_load[ch] == top));
        let mut better = false;
        'hot: for &h in &hot {
            // (a loaded channel joins two switches)
            let (hs, hp) = (net.ch_dst[h ^ 1] as usize, net.ch_port[h]);
            for &(l, (ds, lid, _)) in &cands {
                let (ds, lid) = (ds as usize, lid as usize);
                if hs == ds || a.cols[lid * n + hs] != hp {
                    continue;
                }
                if tried >= budget {
                    break 'search;
                }
                tried += 1;
                if m.try_move(net, a, l, ds, lid, |new, old| new < old) {
                    moved += 1;
                    better = true;
                    break 'hot;
                }
            }
        }
        if !better {
            break;
        }
    }
    m.w.hop = net.hop * SHORTEN;
    let mut excess: Vec<(u64, usize)> = Vec::new();
    if tried < budget {
        let dests: Vec<Dest> = cands.iter().map(|c| c.1).collect();
        let extra = extra_hops_per_lid(net, &a.cols, &dests, c.stride);
        for (i, d) in dests.iter().enumerate() {
            if extra[d.1 as usize] > 0 {
                excess.push((extra[d.1 as usize], i));
            }
        }
    }
    excess.sort_by_key(|&(ex, i)| (Reverse(ex), i));
    for &(_, i) in &excess {
        if tried >= budget {
            break;
        }
        tried += 1;
        let (l, (ds, lid, _)) = cands[i];
        if m.try_move(net, a, l, ds as usize, lid as usize, |new, old| {
            new.0 <= old.0 && new.2 < old.2
        }) {
            moved += 1;
        }
    }
    a.score = (m.score.0, m.score.2);
    (moved, tried)
}

/// Hops above shortest (`dist`: each switch's hops to `ds`, by breadth first) of LID `lid`
/// (switch `ds`),
/// summed over its sources. `len` (one entry per switch) and `chain` are scratch: each
/// switch's path length is found once, from the next switch's, so a LID costs O(switches).
pub(super) fn extra_hops(
    net: &LiveGraph,
    cols: &[u8],
    dist: &[u32],
    (ds, lid): (usize, usize),
    len: &mut [u32],
    chain: &mut Vec<usize>,
) -> u64 {
    let n = net.t.n;
    let src_w = &net.src_w;
    let col = &cols[lid * n..(lid + 1) * n];
    let members = &net.members[net.comp[ds] as usize];
    for &s in members {
        len[s as usize] = u32::MAX;
    }
    len[ds] = 0;
    let mut ex = 0u64;
    for &s in members {
        let s = s as usize;
        if src_w[s] == 0 {
            continue;
        }
        // follow the tables until a switch whose length is known, then fill the chain back
        let mut x = s;
        chain.clear();
        while len[x] == u32::MAX {
            // (the tables of a LID without an impasse form a tree on its component; a
            // chain longer than the component is a loop)
            if chain.len() > members.len() {
                return 0;
            }
            chain.push(x);
            let ch = channel_at(net, x, col[x]);
            if ch == NONE {
                return 0; // not a complete tree (never for a LID without an impasse)
            }
            x = net.ch_dst[ch as usize] as usize;
        }
        let mut l = len[x];
        for &y in chain.iter().rev() {
            l += 1;
            len[y] = l;
        }
        ex += len[s].saturating_sub(dist[s]) as u64 * src_w[s];
    }
    ex
}

/// [`extra_hops`] of every LID of `dests` (by LID, `stride` entries), with one breadth-first
/// search per destination switch.
pub(super) fn extra_hops_per_lid(
    net: &LiveGraph,
    cols: &[u8],
    dests: &[Dest],
    stride: usize,
) -> Vec<u64> {
    let t = net.t;
    let n = t.n;
    let mut by_switch: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &(ds, lid, _) in dests {
        by_switch[ds as usize].push(lid);
    }
    let found: Vec<(u32, u64)> = by_switch
        .par_iter()
        .enumerate()
        .filter(|(_, lids)| !lids.is_empty())
        .map_init(
            || (vec![0u32; n], Vec::new()),
            |(len, chain), (ds, lids)| {
                let dist = crate::engines::ranking::bfs_levels(t, &[ds]);
                lids.iter()
                    .map(|&lid| {
                        (
                            lid,
                            extra_hops(net, cols, &dist, (ds, lid as usize), len, chain),
                        )
                    })
                    .collect::<Vec<_>>()
            },
        )
        .flatten()
        .collect();
    let mut extra = vec![0u64; stride];
    for (lid, e) in found {
        extra[lid as usize] = e;
    }
    extra
}

/// What [`improve`]'s moves share: the search's buffers, a LID's old channels, and the
/// objective of the tables as they stand.
pub(super) struct Mover {
    pub(super) w: Work,
    pub(super) old: Vec<u32>,
    pub(super) score: (u64, usize, u64),
}

impl Mover {
    /// Takes LID `lid` (switch `ds`, layer `l`) out of the attempt, its routes and its
    /// dependencies, routes it again on the loads without it, and keeps the new tables when
    /// `keep(new objective, objective)`. Otherwise, or when the search meets an impasse,
    /// the old routes and dependencies go back: they fitted with everything else before, so
    /// they fit again. Returns whether the LID moved.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn try_move(
        &mut self,
        net: &LiveGraph,
        a: &mut Attempt,
        l: usize,
        ds: usize,
        lid: usize,
        keep: impl Fn((u64, usize, u64), (u64, usize, u64)) -> bool,
    ) -> bool {
        let t = net.t;
        let n = t.n;
        let members = &net.members[net.comp[ds] as usize];
        let (w, old) = (&mut self.w, &mut self.old);
        let col = &a.cols[lid * n..(lid + 1) * n];
        for &s in members {
            let s = s as usize;
            old[s] = if s == ds || col[s] == NO_PORT {
                NONE
            } else {
                channel_at(net, s, col[s])
            };
        }
        let (load, pair) = (&mut a.load, &mut a.pair_load);
        shift(net, members, ds, old, load, pair, false);
        let held = |s: u32| {
            let ch = old[s as usize];
            let u = if ch == NONE {
                ds
            } else {
                net.ch_dst[ch as usize] as usize
            };
            (u != ds).then(|| (ch, old[u]))
        };
        for (u, v) in members.iter().filter_map(|&s| held(s)) {
            a.layers.remove_edge(l, u, v);
        }
        a.layers.forget_refusals(l);
        let mut tally = Tally::default();
        if route_one(net, &mut a.layers, l, None, ds, load, w, &mut tally) {
            shift(net, members, ds, &w.out, load, pair, true);
            let new = objective(pair);
            if keep(new, self.score) {
                let col = &mut a.cols[lid * n..(lid + 1) * n];
                for &s in members.iter().filter(|&&s| s as usize != ds) {
                    col[s as usize] = net.ch_port[w.out[s as usize] as usize];
                }
                self.score = new;
                return true;
            }
            shift(net, members, ds, &w.out, load, pair, false);
        }
        for &s in &w.order {
            let s = s as usize;
            if s != ds && w.dep[s] != NONE {
                a.layers.remove_edge(l, w.out[s], w.dep[s]);
            }
        }
        // refusals met while the new routes were in may not hold without them
        a.layers.forget_refusals(l);
        for (u, v) in members.iter().filter_map(|&s| held(s)) {
            let back = a.layers.try_add_edge(l, u, v);
            assert!(back, "a LID's old dependencies fit again");
        }
        shift(net, members, ds, old, load, pair, true);
        false
    }
}
