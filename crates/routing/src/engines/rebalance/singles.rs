//! The balancing pass's phases: single moves of the busiest channels first, and the
//! chains of moves per end-port switch (host rounds), with the queue and budgets they share.

use super::*;

/// What the phases share: the loads and the queue of channels to relieve, the search
/// buffers, channels set aside (by single moves), the steps taken (all moves, and the
/// searches above the channel's switch), and the moves still allowed.
pub(super) struct Singles {
    pub(super) load: Vec<u64>,
    pub(super) heap: BinaryHeap<(u64, Reverse<u32>)>,
    pub(super) sc: Scratch,
    pub(super) frozen: Vec<bool>,
    pub(super) work: usize,
    pub(super) up_work: usize,
    pub(super) left: usize,
}

/// Single moves, the busiest channel in `heap` first (only channels marked in `only`, when
/// given): each is relieved by the best move of an entry at its own switch, else further up
/// ([`best_upstream_move`]), or set aside; until the queue is empty or a budget is spent.
/// Returns the moves made.
pub(super) fn single_moves(
    ps: &mut Pass,
    rk: &UpDownRanking,
    r: &mut Routing,
    st: &mut Singles,
    only: Option<&[bool]>,
) -> usize {
    let Singles {
        load,
        heap,
        sc,
        frozen,
        work,
        up_work,
        left,
    } = st;
    let mut moved = 0;
    while *left > 0 && *work < WORK_BUDGET {
        let Some((le, Reverse(e))) = heap.pop() else {
            break;
        };
        let ei = e as usize;
        // (only channels between live switches carry load)
        if load[ei] != le || frozen[ei] || only.is_some_and(|o| !o[ei]) {
            continue; // stale, known not to be relieved, or not asked for
        }
        let mv = best_move(ps, rk, &r.lft, load, sc, e, le, work).or_else(|| {
            (*up_work < UPSTREAM_BUDGET)
                .then(|| best_upstream_move(ps, rk, &r.lft, load, sc, e, le, up_work))?
        });
        match mv {
            Some(mv) => {
                apply(ps, load, Some(&mut *heap), r, sc, mv);
                moved += 1;
                *left -= 1;
            }
            None => frozen[ei] = true,
        }
    }
    moved
}

/// The queue of channels to relieve, from scratch: every loaded one marked in `only`,
/// busiest first.
pub(super) fn refill(heap: &mut BinaryHeap<(u64, Reverse<u32>)>, load: &[u64], only: &[bool]) {
    heap.clear();
    heap.extend(
        load.iter()
            .enumerate()
            .filter(|&(c, &l)| l > 0 && only[c])
            .map(|(c, &l)| (l, Reverse(c as u32))),
    );
}

/// The second phase: at every switch with counted hosts, chains of moves between its own
/// channels. Single moves stop where the busiest channel's entries may only go to channels
/// one step below it; the hosts' entries at their switch all carry the same traffic `W` (the
/// switch's hosts), so this is the restricted assignment of unit jobs (entries) to machines
/// (channels), where a load vector is optimal when no chain of moves leads from a busiest
/// channel to one at least `W` below it (an augmenting path). Each chain is found by a BFS
/// over the switch's channels, every step a single move as [`best_move`] allows it (equally
/// short, legal, same down-only status), and applied from its end; a chain that would raise
/// a channel beyond the phase's starting maximum `gmax` (the loads' maximum when it starts)
/// anywhere (on the paths after the switch) is undone and ends the switch's turn. Every
/// accepted chain lowers the switch's vector of channel loads lexicographically and leaves
/// every other load at most `gmax`.
/// `strict`: a chain is also undone when a load it raises reaches the load of the channel it
/// relieves, so every accepted chain lowers the sorted vector of all loads (as single moves
/// do) and the last phase's moves and chains cannot undo one another.
pub(super) fn host_chains(
    ps: &mut Pass,
    rk: &UpDownRanking,
    r: &mut Routing,
    st: &mut Singles,
    hosts: &[u32],
    strict: bool,
) -> usize {
    let Singles {
        load,
        heap,
        sc,
        work,
        left,
        ..
    } = st;
    let gmax = load.iter().copied().max().unwrap_or(0);
    let (t, n) = (ps.t, ps.n);
    let mut moved = 0usize;
    // per local channel: its entries (destination indices); BFS parent (job, channel)
    let mut jobs: Vec<Vec<u32>> = Vec::new();
    let mut parent: Vec<(u32, u32)> = Vec::new();
    let mut queue: Vec<u32> = Vec::new();
    let mut done: Vec<(usize, usize, usize)> = Vec::new();
    let mut local_of_port = [u32::MAX; 256];
    for (s, &wv) in hosts.iter().enumerate().take(n) {
        if wv == 0 || !t.alive[s] || *work >= 2 * WORK_BUDGET {
            continue;
        }
        let w = wv as u64;
        let (a0, a1) = (t.adj_start[s] as usize, t.adj_start[s + 1] as usize);
        let k = a1 - a0;
        if k < 2 {
            continue;
        }
        let lmax = (a0..a1)
            .map(|b| load[t.adj[b].ch as usize])
            .max()
            .unwrap_or(0);
        let lmin = (a0..a1)
            .map(|b| load[t.adj[b].ch as usize])
            .min()
            .unwrap_or(0);
        if lmax <= lmin + w {
            continue; // no move can lower the busiest channel
        }
        for (j, b) in (a0..a1).enumerate() {
            local_of_port[t.adj[b].port as usize] = j as u32;
        }
        jobs.resize_with(k, Vec::new);
        for v in jobs.iter_mut() {
            v.clear();
        }
        let row_s = &r.lft[s * ps.stride..(s + 1) * ps.stride];
        *work += ps.dests.len();
        for (i, &(lid, ds)) in ps.dests.iter().enumerate() {
            let x = i * n + s;
            if ds == s || ps.h[x] == UNKNOWN || ps.fl[x] & DONE == 0 || ps.w[x] != wv {
                continue;
            }
            let j = local_of_port[row_s[lid] as usize];
            if j != u32::MAX {
                jobs[j as usize].push(i as u32);
            }
        }
        // may job `i` (now on local channel `from`) move to local channel `to`?
        let allowed = |ps: &Pass, i: usize, from: usize, to: usize| -> bool {
            let row = i * n;
            let p = t.adj[a0 + from].peer as usize;
            let q = t.adj[a0 + to].peer as usize;
            if ps.h[row + q] != ps.h[row + p] {
                return false;
            }
            may_move(rk.is_up_sw(s, q), ps.fl[row + s], ps.fl[row + q])
        };
        loop {
            if *work >= 2 * WORK_BUDGET {
                break;
            }
            let (jmax, lm) = (0..k)
                .map(|j| (j, load[t.adj[a0 + j].ch as usize]))
                .fold((0, 0), |acc, x| if x.1 > acc.1 { x } else { acc });
            // BFS over the switch's channels from the busiest
            parent.clear();
            parent.resize(k, (u32::MAX, u32::MAX));
            parent[jmax] = (u32::MAX, jmax as u32);
            queue.clear();
            queue.push(jmax as u32);
            let mut head = 0;
            let mut end = None;
            'bfs: while head < queue.len() {
                let b = queue[head] as usize;
                head += 1;
                for &i in &jobs[b] {
                    *work += k;
                    for to in 0..k {
                        if parent[to].1 != u32::MAX || !allowed(ps, i as usize, b, to) {
                            continue;
                        }
                        parent[to] = (i, b as u32);
                        if load[t.adj[a0 + to].ch as usize] + w < lm {
                            end = Some(to);
                            break 'bfs;
                        }
                        queue.push(to as u32);
                    }
                }
            }
            let Some(mut to) = end else {
                break;
            };
            // apply the chain from its end; undo it if a grown load passes gmax
            done.clear(); // (job, from, to)
            let mut over = false;
            while to != jmax {
                let (i, from) = (parent[to].0 as usize, parent[to].1 as usize);
                let fl = flags_via(
                    rk.is_up_sw(s, t.adj[a0 + to].peer as usize),
                    ps.fl[i * n + t.adj[a0 + to].peer as usize],
                );
                let grown = apply(
                    ps,
                    load,
                    Some(&mut *heap),
                    r,
                    sc,
                    Move {
                        i,
                        s,
                        to: a0 + to,
                        fl,
                    },
                );
                over |= grown > gmax || (strict && grown >= lm);
                done.push((i, from, to));
                to = from;
            }
            if over {
                for &(i, from, _) in done.iter().rev() {
                    let q = t.adj[a0 + from].peer as usize;
                    let fl = flags_via(rk.is_up_sw(s, q), ps.fl[i * n + q]);
                    apply(
                        ps,
                        load,
                        Some(&mut *heap),
                        r,
                        sc,
                        Move {
                            i,
                            s,
                            to: a0 + from,
                            fl,
                        },
                    );
                }
                break;
            }
            for &(i, from, to) in &done {
                let v = &mut jobs[from];
                let at = v
                    .iter()
                    .position(|&x| x as usize == i)
                    .expect("a job on its channel");
                v.swap_remove(at);
                jobs[to].push(i as u32);
            }
            moved += done.len();
        }
    }
    *left = left.saturating_sub(moved);
    moved
}
