//! Lowering the busiest link of up/down tables (`updn`, `dnup`, `ftree`) after they are built.
//!
//! The builders choose each output port from counters that see part of the fabric (one
//! switch's ports, or the groups of one level), so on irregular trees — a leaf with fewer
//! cables to one spine than to the other, a spine that carries hosts, host-less leaves — one
//! link ends up busier than it must. This pass moves LFT entries, one at a time, to another
//! output port of the same switch:
//!
//! - **Loads** are what [`crate::metrics`] counts: per directed switch-to-switch channel, the
//!   (source end port, destination end port) pairs whose path crosses it. Per destination the
//!   traffic `w(s)` entering each switch is kept, so a move is priced exactly.
//! - **A move** of the entry at switch `s` for destination `d` from the busiest channel `e`
//!   (whose tail is `s`) to a channel `s → q` is allowed when the path from `q` is as long as
//!   the one it replaces (path lengths do not change), `q`'s path is legal under the ranking
//!   (up\* then down\*), and `s`'s own path stays legal with the same "all down" status. The
//!   status of every other switch's path is then unchanged, so every path stays an up*/down*
//!   path and the tables stay deadlock-free.
//! - **Accepted** only if every channel whose load grows stays below `e`'s load before the move.
//!   Channels are taken busiest first; one that cannot be relieved is set aside (no later move
//!   can grow it: grown loads stay below the channel being relieved, and that load never
//!   rises). The sorted vector of loads decreases lexicographically with every move, so the
//!   pass terminates; budgets on moves and on inspected entries bound its time.
//!   Among the allowed moves the one with the lowest new maximum wins (first in destination
//!   and port order on ties): deterministic and independent of the thread count.
//!
//! - **Moves further up** (`best_upstream_move`), when no entry of the busiest channel's
//!   own switch can leave it: an entry of a switch up to two hops before it on the
//!   destination's tree, moved under the same rule to a port whose path joins the old one
//!   after the channel. A leaf's up choice decides the load two levels above it, so a spine
//!   that lost a core cable, or a core cable down to a unit, is relieved by the leaves. The
//!   first destination with such a move gives it (cheaper searches, more moves in the
//!   budget); its own budget is [`UPSTREAM_BUDGET`], kept small for the pass's time.
//! - **Chains** (second phase, `host_chains`): single moves stop where a switch's busiest
//!   channel may only hand entries to channels one entry below it. At every switch with
//!   counted hosts its own hosts' entries are unit jobs on its channels; a BFS over the
//!   channels finds a chain of moves from the busiest to one at least an entry lighter (an
//!   augmenting path), which is optimal for the switch when none is left.
//!
//! - **Again on the hosts' channels** (last phase): a channel set aside stays aside, even
//!   where later moves or chains made room for it, and a chain may raise loads up to the
//!   maximum. So the channels out of switches with counted hosts (a leaf's uplinks, where
//!   the bound of what its hosts send is) are taken again with none set aside, in rounds of
//!   single moves, then chains accepted only where every load they raise stays below the
//!   channel they relieve (`host_chains`, `strict`), at most [`HOST_ROUNDS`] times. Every
//!   move of this phase lowers the sorted vector of loads. When it stops because nothing
//!   moved (not by [`HOST_ROUNDS`] or a budget), no single move of an entry off a hosts'
//!   channel is left that would lower it.
//!
//! Paths without an up*/down* path (the transition pairs of `transition`, whose VLs
//! are assigned after this pass from the final tables) move too, under their own rule: same
//! length, same direction of the first hop, no more down->up turns (`may_move`); so no path
//! needs more VLs than before. Fabrics with LMC > 0 are left alone (the LMC LIDs' diversity is
//! the generic builder's), as are those whose per-destination state would exceed
//! [`MAX_STATE`] entries.

use super::common::Topo;
use super::ranking::UpDownRanking;
use crate::forward::{Hop, Plane};
use crate::tables::Routing;
use fabric::ChannelId;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Largest (destinations × switches) the pass keeps state for (6 bytes each).
pub const MAX_STATE: usize = 1 << 27;

/// Steps the pass may take in all (an LFT entry inspected, an alternative port or a hop of
/// its path priced): bounds the time (about 0.1 s) on fabrics where few links can be relieved.
pub const WORK_BUDGET: usize = 1 << 24;

/// Steps the search for moves above the busiest channel's switch may take in all
/// (`best_upstream_move`; on top of [`WORK_BUDGET`]). Small: every move it finds lets the
/// first phase go on (up to its own budget), so it sets the pass's time on mid-size trees
/// (selene storage, 160 switches: 0.07 s without it, 0.07–0.1 s with 2^20 steps, 0.3 s with
/// 2^24, for ftree max link loads 2,578 / 2,381 / 2,054).
pub const UPSTREAM_BUDGET: usize = 1 << 20;

/// Rounds of the last phase (single moves on the hosts' channels, then chains) at most.
pub const HOST_ROUNDS: usize = 4;

/// Moves allowed per live end port (a bound on the pass's time; it usually stops far earlier).
pub const MOVE_BUDGET_PER_END: usize = 8;

/// "No hop known" in the per-destination hop array.
const UNKNOWN: u8 = u8::MAX;
/// Flag bits per (destination, switch): the path from the switch is legal / goes down only.
const LEGAL: u8 = 1;
const DOWN_ONLY: u8 = 2;
/// Resolution state bits of the same array.
const DONE: u8 = 4;
const ON_STACK: u8 = 8;
/// The path's first hop goes up; its down->up turns (at most 7) in the top three bits.
const FIRST_UP: u8 = 16;
const TURN_SHIFT: u8 = 5;

/// Down->up turns of the path whose flags are `f`.
#[inline]
fn turns(f: u8) -> u8 {
    f >> TURN_SHIFT
}

/// Turns of the path that leaves a switch to `q` (flags `fq`), up or down.
#[inline]
fn turns_via(up: bool, fq: u8) -> u8 {
    turns(fq) + u8::from(!up && fq & FIRST_UP != 0)
}

/// Flags (resolved) of the path that leaves a switch up or down to a switch with flags `fq`.
#[inline]
fn flags_via(up: bool, fq: u8) -> u8 {
    let legal = fq & LEGAL != 0 && (up || fq & DOWN_ONLY != 0);
    let down_only = !up && fq & DOWN_ONLY != 0;
    DONE | ((legal as u8) * LEGAL)
        | ((down_only as u8) * DOWN_ONLY)
        | ((up as u8) * FIRST_UP)
        | (turns_via(up, fq).min(7) << TURN_SHIFT)
}

/// May the entry of a switch with flags `fs` move to a neighbour `q` (flags `fq`, reached up
/// or down) whose path is as long? A legal path stays legal with the same down-only status;
/// a path without an up*/down* path (its VL changes after each down->up turn, assigned after
/// this pass) keeps its first hop's direction and gains no turn. Either way no path through
/// the switch gets longer, illegal or more turns.
#[inline]
fn may_move(up: bool, fs: u8, fq: u8) -> bool {
    if fq & DONE == 0 {
        return false;
    }
    if fs & LEGAL == 0 {
        return up == (fs & FIRST_UP != 0) && turns_via(up, fq) <= turns(fs);
    }
    let legal = fq & LEGAL != 0 && (up || fq & DOWN_ONLY != 0);
    let down_only = !up && fq & DOWN_ONLY != 0;
    legal && down_only == (fs & DOWN_ONLY != 0)
}

/// What the pass did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebalanced {
    pub moved: usize,
    /// Busiest channel's load (counted traffic) before and after.
    pub before: u64,
    pub after: u64,
}

impl Rebalanced {
    /// The engine note; `what` names the traffic counted ("" = every end port's).
    pub fn note(&self, what: &str) -> String {
        format!(
            "balance pass: {} entries moved to equally short up*/down* ports; max {what}link load {} -> {}",
            self.moved, self.before, self.after
        )
    }
}

/// The pass's state: per (destination, switch), dest-major, the hops of the table's path, its
/// flags and the counted traffic entering the switch; next hops are read from the LFTs.
struct Pass<'t, 'a> {
    t: &'t Topo<'a>,
    n: usize,
    stride: usize,
    /// What leaving a switch on a port leads to, under the topology's faults.
    plane: Plane,
    /// Counted destinations: (LID, switch).
    dests: Vec<(usize, usize)>,
    /// The LFTs destination-major (`col[lid * n + s]`, kept equal to the routing's): the
    /// walks read one destination's column, the busiest-link scan one switch's row.
    col: Vec<u8>,
    h: Vec<u8>,
    fl: Vec<u8>,
    w: Vec<u32>,
}

impl Pass<'_, '_> {
    /// Tail switch, head switch and output port of switch-to-switch channel `e`.
    fn ends(&self, e: u32) -> (usize, usize, u8) {
        let f = self.t.f;
        let (src, dst) = (
            f.port(f.channel_src(ChannelId(e))),
            f.port(f.channel_dst(ChannelId(e))),
        );
        (
            f.switch_index[src.node.idx()] as usize,
            f.switch_index[dst.node.idx()] as usize,
            src.num,
        )
    }

    /// The next switch and the channel to it of switch `s`'s entry for destination `i`
    /// (`None` at the destination's switch, for a dead end, or an entry that leaves the
    /// switch graph).
    #[inline]
    fn next(&self, i: usize, s: usize) -> Option<(usize, u32)> {
        let (lid, ds) = self.dests[i];
        if s == ds {
            return None;
        }
        match self.plane.hop(s, self.col[lid * self.n + s]) {
            Hop::Switch { sw, ch, .. } => Some((sw as usize, ch.0)),
            _ => None,
        }
    }
}

/// Move entries of `r` (built on the ranking `rk`) off the busiest channels. `counted` (per
/// index of `t.ends`; `None` = all) says which end ports' traffic the loads count, as sources
/// and as destinations (`ftree` balances its compute nodes' traffic). Returns `None` when the
/// pass does not apply (LMC > 0, too large, no inter-switch traffic).
/// Why [`rebalance`] left a fabric alone (it returned `None`), as a routing note.
pub fn skipped_note(t: &Topo) -> String {
    if t.ends.iter().any(|e| e.nlids != 1) {
        "balance pass skipped: the end ports have LMC > 0 (each LID of a range keeps the path the engine gave it, so the LIDs of one port stay spread over different links)".to_string()
    } else if t.ends.len().saturating_mul(t.n) > MAX_STATE {
        format!(
            "balance pass skipped: {} destinations x {} switches is above the {MAX_STATE} entries of state it keeps",
            t.ends.len(),
            t.n
        )
    } else {
        "balance pass skipped: no route crosses a link between switches (every end port on one switch, or none), so there is no load to balance".to_string()
    }
}

pub fn rebalance(
    t: &Topo,
    rk: &UpDownRanking,
    r: &mut Routing,
    counted: Option<&[bool]>,
    max_moves: usize,
) -> Option<Rebalanced> {
    let counts = |i: usize| counted.is_none_or(|c| c[i]);
    let n = t.n;
    if t.ends.iter().any(|e| e.nlids != 1) || t.ends.len().saturating_mul(n) > MAX_STATE {
        return None;
    }
    let stride = r.stride();
    let hosts: Vec<u32> = (0..n)
        .map(|s| t.ends_on(s).iter().filter(|&&i| counts(i as usize)).count() as u32)
        .collect();
    let dests: Vec<(usize, usize)> = t
        .ends
        .iter()
        .enumerate()
        .filter(|&(i, e)| (e.base as usize) < stride && counts(i))
        .map(|(_, e)| (e.base as usize, e.sw as usize))
        .collect();
    let d_n = dests.len();
    let mut ps = Pass {
        t,
        n,
        stride,
        plane: Plane::new(t.f, Some(&t.mask)),
        dests,
        col: super::common::transpose_rect(&r.lft, n, stride),
        h: vec![UNKNOWN; d_n * n],
        fl: vec![0; d_n * n],
        w: vec![0; d_n * n],
    };
    let nch = t.f.links.len() * 2;
    let load = {
        let (mut h, mut fl, mut w) = (
            std::mem::take(&mut ps.h),
            std::mem::take(&mut ps.fl),
            std::mem::take(&mut ps.w),
        );
        let psr = &ps;
        // Per destination: its next hops once, the table paths' hops and flags, then the
        // traffic by decreasing hops (each switch's traffic is final when it is reached, so
        // it is charged to its channel right there); per-thread loads, summed.
        let load = h
            .par_chunks_mut(n)
            .zip(fl.par_chunks_mut(n))
            .zip(w.par_chunks_mut(n))
            .enumerate()
            .fold(
                || (DestScratch::default(), vec![0u64; nch]),
                |(mut sc, mut load), (i, ((h, fl), w))| {
                    let ps = psr;
                    sc.nxt.clear();
                    sc.nxt.extend(
                        (0..n).map(|s| ps.next(i, s).map_or(NO_NEXT, |(q, c)| (q as u32, c))),
                    );
                    resolve(ps, rk, i, &sc.nxt, h, fl, &mut sc.stack);
                    // traffic: switches by decreasing hop count (a counting sort by hops)
                    let ds = ps.dests[i].1;
                    let count = &mut sc.count;
                    count.clear();
                    for s in 0..n {
                        let hs = h[s] as usize;
                        if hs != UNKNOWN as usize && s != ds {
                            if count.len() <= hs {
                                count.resize(hs + 1, 0u32);
                            }
                            count[hs] += 1;
                            w[s] = hosts[s];
                        }
                    }
                    // start of each hop count's run, largest hop count first
                    let mut at = 0u32;
                    for c in count.iter_mut().rev() {
                        let k = *c;
                        *c = at;
                        at += k;
                    }
                    let order = &mut sc.order;
                    order.clear();
                    order.resize(at as usize, 0u32);
                    for (s, &hs) in h.iter().enumerate() {
                        let hs = hs as usize;
                        if hs != UNKNOWN as usize && s != ds {
                            order[count[hs] as usize] = s as u32;
                            count[hs] += 1;
                        }
                    }
                    for &s in order.iter() {
                        let (q, c) = sc.nxt[s as usize];
                        if q != NO_NEXT.0 {
                            let ws = w[s as usize];
                            w[q as usize] += ws;
                            load[c as usize] += ws as u64;
                        }
                    }
                    (sc, load)
                },
            )
            .map(|(_, l)| l)
            .reduce(
                || vec![0u64; nch],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(&b) {
                        *x += y;
                    }
                    a
                },
            );
        ps.h = h;
        ps.fl = fl;
        ps.w = w;
        load
    };
    let heap: BinaryHeap<(u64, Reverse<u32>)> = load
        .iter()
        .enumerate()
        .filter(|&(_, &l)| l > 0)
        .map(|(c, &l)| (l, Reverse(c as u32)))
        .collect();
    let before = heap.peek().map(|x| x.0)?;
    let sc = Scratch {
        stamp: vec![0; n],
        epoch: 0,
        alts: Vec::new(),
        ups: Vec::new(),
        prefix: Vec::new(),
    };
    let mut st = Singles {
        load,
        heap,
        sc,
        frozen: vec![false; nch],
        work: 0,
        up_work: 0,
        left: max_moves,
    };
    // First the busiest channels, anywhere; then chains at the hosts' switches.
    let mut moved = single_moves(&mut ps, rk, r, &mut st, None);
    moved += host_chains(&mut ps, rk, r, &mut st, &hosts, false);
    // Then the hosts' own channels (out of switches with counted hosts) again: a channel set
    // aside may be relieved once later moves or chains made room for it. Rounds of single
    // moves on them with none set aside, then chains that only lower the sorted loads (every
    // load they raise stays below the channel they relieve), until neither moves anything.
    // Every move of these rounds lowers the sorted vector of loads, so they cannot undo one
    // another.
    let mut host_side = vec![false; nch];
    for (s, _) in hosts.iter().enumerate().filter(|&(_, &h)| h > 0) {
        for b in t.adj_start[s] as usize..t.adj_start[s + 1] as usize {
            host_side[t.adj[b].ch as usize] = true;
        }
    }
    for _ in 0..HOST_ROUNDS {
        let start = moved;
        loop {
            st.frozen.fill(false);
            refill(&mut st.heap, &st.load, &host_side);
            let m = single_moves(&mut ps, rk, r, &mut st, Some(&host_side));
            moved += m;
            if m == 0 || st.left == 0 || st.work >= WORK_BUDGET {
                break;
            }
        }
        moved += host_chains(&mut ps, rk, r, &mut st, &hosts, true);
        if moved == start || st.left == 0 || st.work >= WORK_BUDGET {
            break;
        }
    }
    let after = st.load.iter().copied().max().unwrap_or(0);
    Some(Rebalanced {
        moved,
        before,
        after,
    })
}

/// What the phases share: the loads and the queue of channels to relieve, the search
/// buffers, channels set aside (by single moves), the steps taken (all moves, and the
/// searches above the channel's switch), and the moves still allowed.
struct Singles {
    load: Vec<u64>,
    heap: BinaryHeap<(u64, Reverse<u32>)>,
    sc: Scratch,
    frozen: Vec<bool>,
    work: usize,
    up_work: usize,
    left: usize,
}

/// Single moves, the busiest channel in `heap` first (only channels marked in `only`, when
/// given): each is relieved by the best move of an entry at its own switch, else further up
/// ([`best_upstream_move`]), or set aside; until the queue is empty or a budget is spent.
/// Returns the moves made.
fn single_moves(
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
                apply(ps, load, heap, r, sc, mv);
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
fn refill(heap: &mut BinaryHeap<(u64, Reverse<u32>)>, load: &[u64], only: &[bool]) {
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
fn host_chains(
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
                    heap,
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
                        heap,
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

/// "No next hop" in a destination's next-hop array.
const NO_NEXT: (u32, u32) = (u32::MAX, u32::MAX);

/// Per-thread buffers of the first scan: one destination's next hops (switch, channel), the
/// resolution stack, the counting sort by hops.
#[derive(Default)]
struct DestScratch {
    nxt: Vec<(u32, u32)>,
    stack: Vec<u32>,
    count: Vec<u32>,
    order: Vec<u32>,
}

/// Reused buffers: switches of one path (stamped), candidate channels.
struct Scratch {
    stamp: Vec<u32>,
    epoch: u32,
    /// Candidate channels of the switch being relieved: (load, adjacency index).
    alts: Vec<(u64, usize)>,
    /// [`best_upstream_move`]'s switches above the channel and one old path's prefix.
    ups: Vec<(u32, u32)>,
    prefix: Vec<u32>,
}

impl Scratch {
    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.epoch
    }
}

/// Hop counts and legality flags of every switch's table path for destination `i`.
fn resolve(
    ps: &Pass,
    rk: &UpDownRanking,
    i: usize,
    nxt: &[(u32, u32)],
    h: &mut [u8],
    fl: &mut [u8],
    stack: &mut Vec<u32>,
) {
    let t = ps.t;
    let ds = ps.dests[i].1;
    if !t.alive[ds] {
        return;
    }
    h[ds] = 0;
    fl[ds] = DONE | LEGAL | DOWN_ONLY;
    for s0 in 0..t.n {
        if !t.alive[s0] || fl[s0] & DONE != 0 {
            continue;
        }
        // follow the table until a resolved switch, a dead end or a loop
        stack.clear();
        let mut s = s0;
        while fl[s] & (DONE | ON_STACK) == 0 {
            let q = nxt[s].0;
            if q == NO_NEXT.0 {
                fl[s] = DONE; // a dead end (or the destination): h stays UNKNOWN
                break;
            }
            fl[s] = ON_STACK;
            stack.push(s as u32);
            s = q as usize;
        }
        // back along the walk: each switch from its next hop (resolved just before it)
        while let Some(x) = stack.pop() {
            let x = x as usize;
            let q = nxt[x].0 as usize; // (pushed switches have a next hop)
            if fl[q] & DONE == 0 || h[q] >= UNKNOWN - 1 {
                fl[x] = DONE; // a loop, a dead end or a path too long to count
                continue;
            }
            h[x] = h[q] + 1;
            fl[x] = flags_via(rk.is_up_sw(x, q), fl[q]);
        }
    }
}

/// A chosen move: destination index, switch, and the new adjacency index.
#[derive(Clone, Copy, Debug)]
struct Move {
    i: usize,
    s: usize,
    to: usize,
    /// The switch's path flags after the move.
    fl: u8,
}

/// The best move off adjacency `ea` (load `le`), if any keeps every grown load below `le`.
#[allow(clippy::too_many_arguments)]
fn best_move(
    ps: &Pass,
    rk: &UpDownRanking,
    lft: &[u8],
    load: &[u64],
    sc: &mut Scratch,
    e: u32,
    le: u64,
    work: &mut usize,
) -> Option<Move> {
    let (t, n) = (ps.t, ps.n);
    let (s, p, port) = ps.ends(e);
    *work += 1;
    // Only channels of the switch that can take at least one more pair are candidates.
    sc.alts.clear();
    for b in t.adj_start[s] as usize..t.adj_start[s + 1] as usize {
        let l = load[t.adj[b].ch as usize];
        if t.adj[b].ch != e && l + 1 < le {
            sc.alts.push((l, b));
        }
    }
    if sc.alts.is_empty() {
        return None;
    }
    let min_alt = sc.alts.iter().map(|a| a.0).min().unwrap_or(u64::MAX);
    let row_s = &lft[s * ps.stride..(s + 1) * ps.stride];
    let mut best: Option<(u64, Move)> = None;
    *work += ps.dests.len();
    for (i, &(lid, ds)) in ps.dests.iter().enumerate() {
        // (the switch's own LFT row is contiguous; the per-destination state is not)
        if row_s[lid] != port || s == ds {
            continue;
        }
        let row = i * n;
        let ws = ps.w[row + s] as u64;
        // the cheapest alternative cannot take this entry's traffic, or cannot beat the best
        if ws == 0 || min_alt + ws >= best.map_or(le, |b| b.0) {
            continue;
        }
        let fs = ps.fl[row + s];
        if ps.h[row + s] == UNKNOWN {
            continue;
        }
        let hp = ps.h[row + p];
        let mut ep = 0; // the old path is stamped on the first candidate that needs it
        for k in 0..sc.alts.len() {
            let (l, b) = sc.alts[k];
            let bound = best.map_or(le, |x| x.0);
            if l + ws >= bound {
                continue;
            }
            let q = t.adj[b].peer as usize;
            if ps.h[row + q] != hp {
                continue;
            }
            if !may_move(rk.is_up_sw(s, q), fs, ps.fl[row + q]) {
                continue;
            }
            if ep == 0 {
                ep = sc.next_epoch();
                let mut x = p;
                loop {
                    sc.stamp[x] = ep;
                    *work += 1;
                    match ps.next(i, x) {
                        Some((q, _)) => x = q,
                        None => break,
                    }
                }
            }
            let mut m = l + ws;
            let mut y = q;
            *work += 1;
            while sc.stamp[y] != ep && m < bound {
                *work += 1;
                let Some((ny, ch)) = ps.next(i, y) else {
                    break;
                };
                m = m.max(load[ch as usize] + ws);
                y = ny;
            }
            if m < bound {
                let fl = flags_via(rk.is_up_sw(s, q), ps.fl[row + q]);
                best = Some((m, Move { i, s, to: b, fl }));
            }
        }
    }
    best.map(|b| b.1)
}

/// How many levels above a channel's tail [`best_upstream_move`] looks for entries to move.
const UPSTREAM_DEPTH: usize = 2;

/// When no entry of the busiest channel `e`'s own switch can leave it: an entry further up,
/// at a switch whose traffic for a destination crosses `e` (at most [`UPSTREAM_DEPTH`] hops
/// before it), moved to an equally short port under the same rule as [`best_move`] whose
/// path joins the old one only after `e` — so `e` loses that switch's traffic. A leaf's up
/// choice decides the load two levels above it: a spine that lost a core cable is relieved by
/// the leaves below it sending fewer destinations its way, and a core's cable down to a spine
/// by the leaves of other units choosing another spine. Accepted, as every move, only if
/// every grown load stays below `le`.
#[allow(clippy::too_many_arguments)]
fn best_upstream_move(
    ps: &Pass,
    rk: &UpDownRanking,
    lft: &[u8],
    load: &[u64],
    sc: &mut Scratch,
    e: u32,
    le: u64,
    work: &mut usize,
) -> Option<Move> {
    let (t, n) = (ps.t, ps.n);
    let (s, p, port) = ps.ends(e);
    let row_s = &lft[s * ps.stride..(s + 1) * ps.stride];
    let mut best: Option<(u64, Move)> = None;
    // (switch, its next hop toward s): the switches above s on this destination's tree
    let mut ups = std::mem::take(&mut sc.ups);
    let mut prefix = std::mem::take(&mut sc.prefix);
    for (i, &(lid, ds)) in ps.dests.iter().enumerate() {
        if *work >= UPSTREAM_BUDGET {
            break;
        }
        if row_s[lid] != port || s == ds {
            continue;
        }
        let row = i * n;
        *work += 1;
        if ps.w[row + s] == 0 || ps.h[row + s] == UNKNOWN {
            continue;
        }
        // the switches whose path for `i` reaches s within UPSTREAM_DEPTH hops
        // (level by level: the entries pushed for one level are the next level's frontier)
        ups.clear();
        ups.push((s as u32, u32::MAX));
        let mut lo = 0;
        for _ in 0..UPSTREAM_DEPTH {
            let hi = ups.len();
            for k in lo..hi {
                let x = ups[k].0 as usize;
                for a in t.links(x) {
                    let y = a.peer as usize;
                    *work += 1;
                    if ps.w[row + y] != 0 && ps.next(i, y).is_some_and(|(q, _)| q == x) {
                        ups.push((y as u32, x as u32));
                    }
                }
            }
            lo = hi;
        }
        ups.remove(0); // s itself
        if ups.is_empty() {
            continue;
        }
        // the old path after e, stamped
        let ea = sc.next_epoch();
        let mut x = p;
        loop {
            sc.stamp[x] = ea;
            *work += 1;
            match ps.next(i, x) {
                Some((q, _)) => x = q,
                None => break,
            }
        }
        for &(y, via) in ups.iter() {
            let (y, via) = (y as usize, via as usize);
            let ws = ps.w[row + y] as u64;
            let bound = best.map_or(le, |b| b.0);
            let fy = ps.fl[row + y];
            // the old path from y up to s: the new one must not rejoin it there
            prefix.clear();
            let mut z = y;
            while z != s {
                prefix.push(z as u32);
                match ps.next(i, z) {
                    Some((q, _)) => z = q,
                    None => break,
                }
            }
            prefix.push(s as u32);
            let hv = ps.h[row + via];
            for b in t.adj_start[y] as usize..t.adj_start[y + 1] as usize {
                let a = t.adj[b];
                let q = a.peer as usize;
                *work += 1;
                if q == via || ps.h[row + q] != hv || load[a.ch as usize] + ws >= bound {
                    continue;
                }
                if !may_move(rk.is_up_sw(y, q), fy, ps.fl[row + q]) {
                    continue;
                }
                let mut m = load[a.ch as usize] + ws;
                let mut z = q;
                let ok = loop {
                    *work += 1;
                    if sc.stamp[z] == ea {
                        break true; // joins the old path after e
                    }
                    if prefix.contains(&(z as u32)) {
                        break false; // would cross e again
                    }
                    let Some((nz, ch)) = ps.next(i, z) else {
                        break false;
                    };
                    m = m.max(load[ch as usize] + ws);
                    if m >= bound {
                        break false;
                    }
                    z = nz;
                };
                if ok && m < best.map_or(le, |x| x.0) {
                    let fl = flags_via(rk.is_up_sw(y, q), ps.fl[row + q]);
                    best = Some((m, Move { i, s: y, to: b, fl }));
                }
            }
        }
        if best.is_some() {
            break; // the best move for the first destination that has one
        }
    }
    sc.ups = ups;
    sc.prefix = prefix;
    best.map(|b| b.1)
}

/// Apply a move: the traffic on both paths up to where they meet, the loads, the LFT entry.
fn apply(
    ps: &mut Pass,
    load: &mut [u64],
    heap: &mut BinaryHeap<(u64, Reverse<u32>)>,
    r: &mut Routing,
    sc: &mut Scratch,
    mv: Move,
) -> u64 {
    let (t, n) = (ps.t, ps.n);
    let mut grown = 0u64;
    let row = mv.i * n;
    let ws = ps.w[row + mv.s];
    // stamp the switches of the new path, to find where the paths meet
    let ep = sc.next_epoch();
    let first = t.adj[mv.to].peer as usize;
    let mut y = first;
    loop {
        sc.stamp[y] = ep;
        match ps.next(mv.i, y) {
            Some((q, _)) => y = q,
            None => break,
        }
    }
    // the old path loses the traffic until it meets the new one
    let mut hop = ps.next(mv.i, mv.s).expect("a move leaves a routed entry");
    let meet = loop {
        let (x, c) = (hop.0, hop.1 as usize);
        load[c] -= ws as u64;
        heap.push((load[c], Reverse(c as u32)));
        if sc.stamp[x] == ep {
            break x;
        }
        ps.w[row + x] -= ws;
        match ps.next(mv.i, x) {
            Some(h) => hop = h,
            None => break x,
        }
    };
    // the new path gains it until the same switch
    let mut hop = (first, t.adj[mv.to].ch);
    loop {
        let (x, c) = (hop.0, hop.1 as usize);
        load[c] += ws as u64;
        grown = grown.max(load[c]);
        heap.push((load[c], Reverse(c as u32)));
        if x == meet {
            break;
        }
        ps.w[row + x] += ws;
        match ps.next(mv.i, x) {
            Some(h) => hop = h,
            None => break,
        }
    }
    let (lid, _) = ps.dests[mv.i];
    r.lft[mv.s * ps.stride + lid] = t.adj[mv.to].port;
    ps.col[lid * n + mv.s] = t.adj[mv.to].port;
    ps.fl[row + mv.s] = mv.fl;
    grown
}
