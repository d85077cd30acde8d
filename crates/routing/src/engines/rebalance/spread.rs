//! The balancing pass's last phase: every entry of the hosts' switches looked at once.
//!
//! The phases before it start from the busiest channel, and where that is a spine's cable
//! down to a leaf they can only relieve it from above (`best_upstream_move`, on a small
//! budget), one source leaf's entry at a time. On a tree where a leaf's hosts do not divide
//! over the spines (32 hosts under 31 spines: every leaf gets two of its destinations down
//! one spine cable) that is thousands of moves the budgets do not reach. Here each
//! (host switch, destination) entry is offered every equally short port the rules of
//! [`may_move`] allow, and moves to the one whose path (until it joins the old one) has the
//! lowest maximum load with the entry's traffic added, if that is below the maximum of the
//! old path over the same stretch. Every load it raises stays below the one it relieves, so
//! the sorted vector of loads falls with each move, as in the other phases.

use super::*;

/// Steps the phase may take in all (a hop of a path walked or priced): its bound on time
/// (0.2-0.5 s on trees of a few thousand hosts), instead of the other phases' budget of
/// moves (each of its moves lowers the sorted loads; a tree that needs it may need more
/// moves than that budget has left).
pub const SPREAD_BUDGET: usize = 1 << 24;

/// A bound the hosts' switches set on the busiest channel: a switch with `h` counted hosts
/// sends `h * (N - h)` pairs (and receives as many) over its links to other switches, so one
/// of them carries at least that over their number.
pub(super) fn host_bound(t: &Topo, hosts: &[u32], dests: usize) -> u64 {
    (0..t.n)
        .filter(|&s| hosts[s] > 0 && t.alive[s])
        .map(|s| {
            let links = (t.adj_start[s + 1] - t.adj_start[s]) as u64;
            let h = hosts[s] as u64;
            (h * (dests as u64).saturating_sub(h)).div_ceil(links.max(1))
        })
        .max()
        .unwrap_or(0)
}

/// Moves entries of the switches with counted hosts (`hosts`) to less loaded equally short
/// ports, in rounds over every (switch, destination) whose path carries a load above `bound`
/// ([`host_bound`]) until a round moves nothing or the budget is spent (most moves are in
/// the first round; a move can open another that only a later round sees, and each lowers
/// the sorted loads, so the rounds end); returns the moves made.
pub(super) fn spread_host_entries(
    ps: &mut Pass,
    rk: &UpDownRanking,
    r: &mut Routing,
    st: &mut Singles,
    hosts: &[u32],
    bound: u64,
) -> usize {
    let (n, d_n) = (ps.n, ps.dests.len());
    let host_switches: Vec<usize> = (0..n).filter(|&s| hosts[s] > 0).collect();
    // Per switch of the old path: the largest load on it from the entry's switch up to there.
    let mut upto = vec![0u64; n];
    // Per switch: the largest load on its path for the destination at hand (as loads were
    // when first asked; moves of the same destination may leave it stale, which only
    // decides which entries are looked at).
    let (mut far, mut far_at, mut walk) = (vec![0u64; n], vec![u32::MAX; n], Vec::new());
    let mut work = 0usize;
    let mut moved = 0;
    loop {
        let start = moved;
        far_at.fill(u32::MAX);
        // Destination by destination (its column of the per-destination state is contiguous),
        // then the hosts' switches in index order.
        for i in 0..d_n {
            let t = ps.t;
            let row = i * n;
            for &s in &host_switches {
                if work >= SPREAD_BUDGET {
                    return moved;
                }
                let ws = ps.w[row + s] as u64;
                let fs = ps.fl[row + s];
                if ws == 0 || ps.h[row + s] == UNKNOWN {
                    continue;
                }
                let Some((p, e)) = ps.next(i, s) else {
                    continue;
                };
                // (the path's largest load, memoised along the destination's tree)
                walk.clear();
                let mut x = s;
                while far_at[x] != i as u32 {
                    walk.push(x);
                    work += 1;
                    match ps.next(i, x) {
                        Some((q, _)) => x = q,
                        None => break,
                    }
                }
                while let Some(y) = walk.pop() {
                    let m = match ps.next(i, y) {
                        Some((q, c)) if far_at[q] == i as u32 => far[q].max(st.load[c as usize]),
                        Some((_, c)) => st.load[c as usize],
                        None => 0,
                    };
                    far[y] = m;
                    far_at[y] = i as u32;
                }
                if far[s] <= bound {
                    continue;
                }
                // the old path, stamped, with its running maximum
                let ep = st.sc.next_epoch();
                let (mut x, mut m) = (p, st.load[e as usize]);
                loop {
                    work += 1;
                    st.sc.stamp[x] = ep;
                    upto[x] = m;
                    match ps.next(i, x) {
                        Some((q, c)) => {
                            m = m.max(st.load[c as usize]);
                            x = q;
                        }
                        None => break,
                    }
                }
                let hp = ps.h[row + p];
                let mut best: Option<(u64, usize, usize)> = None; // (new max, adjacency, switch)
                for b in t.adj_start[s] as usize..t.adj_start[s + 1] as usize {
                    let (q, ch) = (t.adj[b].peer as usize, t.adj[b].ch);
                    if ch == e || ps.h[row + q] != hp {
                        continue;
                    }
                    if !may_move(rk.is_up_sw(s, q), fs, ps.fl[row + q]) {
                        continue;
                    }
                    let first = st.load[ch as usize] + ws;
                    let (mn, y) = joined_max(
                        ps,
                        &st.load,
                        &st.sc.stamp,
                        ep,
                        (i, q),
                        first,
                        ws,
                        u64::MAX,
                        &mut work,
                    );
                    // (`y` is where the new path joins the old one: the destination's
                    // switch at the latest, the end of both)
                    if st.sc.stamp[y] == ep && mn < upto[y] && best.is_none_or(|(bm, _, _)| mn < bm)
                    {
                        best = Some((mn, b, q));
                    }
                }
                if let Some((_, b, q)) = best {
                    let fl = flags_via(rk.is_up_sw(s, q), ps.fl[row + q]);
                    let mv = Move { i, s, to: b, fl };
                    apply(ps, &mut st.load, None, r, &mut st.sc, mv);
                    moved += 1;
                }
            }
        }
        if moved == start {
            break;
        }
    }
    moved
}
