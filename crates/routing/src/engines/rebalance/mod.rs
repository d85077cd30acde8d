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
//! - **Shorter paths first** (`shorten`, which `ftree` asks for): per destination, a switch
//!   whose table path is longer than the shortest walk the move rules below allow (a
//!   fan-down from far above on a degraded tree) takes that walk's first hop.
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
//! - **Again on the hosts' channels**: a channel set aside stays aside, even
//!   where later moves or chains made room for it, and a chain may raise loads up to the
//!   maximum. So the channels out of switches with counted hosts (a leaf's uplinks, where
//!   the bound of what its hosts send is) are taken again with none set aside, in rounds of
//!   single moves, then chains accepted only where every load they raise stays below the
//!   channel they relieve (`host_chains`, `strict`), at most [`HOST_ROUNDS`] times. Every
//!   move of this phase lowers the sorted vector of loads. When it stops because nothing
//!   moved (not by [`HOST_ROUNDS`] or a budget), no single move of an entry off a hosts'
//!   channel is left that would lower it.
//! - **Every host entry** (last phase, `spread`; `ftree` asks for it on the trees it does
//!   not balance itself, `updn` and `dnup` on two-level trees), in rounds until one moves
//!   nothing, where the busiest channel is still above the bound the hosts' switches set
//!   (their traffic over their links): each entry of a switch with counted hosts moves to
//!   the equally short port whose path has the lowest maximum load, if below the old
//!   path's over the same stretch. A spine's cable down to a
//!   leaf is relieved by every source leaf at once, where the phases above would take one
//!   upstream move per search (a leaf of 32 hosts under 31 spines).
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
use fabric::SwitchIdx;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

mod moves;
mod shorten;
mod singles;
mod spread;

use moves::*;
use shorten::*;
use singles::*;
use spread::*;

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
    /// Entries given a shorter path first (`shorten`; counted apart from `moved`).
    pub shortened: usize,
    /// Busiest channel's load (counted traffic) before and after.
    pub before: u64,
    pub after: u64,
}

impl Rebalanced {
    /// The engine note; `what` names the traffic counted ("" = every end port's).
    pub fn note(&self, what: &str) -> String {
        let (shorter, after_them) = if self.shortened > 0 {
            (
                format!(
                    "{} entries given a shorter path under the same rules first, then ",
                    self.shortened
                ),
                " (the first figure after the shorter paths)",
            )
        } else {
            (String::new(), "")
        };
        format!(
            "balance pass: {shorter}{} entries moved to equally short up*/down* ports; max {what}link load {} -> {}{after_them}",
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

impl<'t, 'a> Pass<'t, 'a> {
    /// The pass over destinations `dests` of tables `r`; `state`: with the per (destination,
    /// switch) hops, flags and traffic (the shortening alone needs none).
    fn new(t: &'t Topo<'a>, r: &Routing, dests: Vec<(usize, usize)>, state: bool) -> Self {
        let (n, stride) = (t.n, r.stride());
        let cells = if state { dests.len() * n } else { 0 };
        Pass {
            t,
            n,
            stride,
            plane: Plane::new(t.f, Some(&t.mask)),
            dests,
            col: super::common::transpose_rect(&r.lft, n, stride),
            h: vec![UNKNOWN; cells],
            fl: vec![0; cells],
            w: vec![0; cells],
        }
    }

    /// Tail switch, head switch and output port of switch-to-switch channel `e`.
    fn ends(&self, e: u32) -> (usize, usize, u8) {
        let f = self.t.f;
        let (src, dst) = (
            f.port(f.channel_src(ChannelId(e))),
            f.port(f.channel_dst(ChannelId(e))),
        );
        (
            f.switch_of(src.node).map_or(usize::MAX, SwitchIdx::idx),
            f.switch_of(dst.node).map_or(usize::MAX, SwitchIdx::idx),
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

/// The pass's first phase alone (`shorten`) where the rest does not run because the end
/// ports have LMC > 0: every LID of every counted end port is a destination (each keeps the
/// port the engine chose unless that path is longer than the rules need). Returns the
/// entries changed; `None` when the state would be above [`MAX_STATE`].
pub fn shorten_every_lid(
    t: &Topo,
    rk: &UpDownRanking,
    r: &mut Routing,
    counted: Option<&[bool]>,
) -> Option<usize> {
    let dests = counted_dests(t, r.stride(), counted);
    if dests.len().saturating_mul(t.n) > MAX_STATE {
        return None;
    }
    let mut ps = Pass::new(t, r, dests, false);
    Some(shorten_paths(&mut ps, rk, r))
}

/// (LID, switch) of every LID of every counted end port (`counted`: per index of `t.ends`,
/// `None` = all) that the tables have a column for.
fn counted_dests(t: &Topo, stride: usize, counted: Option<&[bool]>) -> Vec<(usize, usize)> {
    t.ends
        .iter()
        .enumerate()
        .filter(|&(i, _)| counted.is_none_or(|c| c[i]))
        .flat_map(|(_, e)| (0..e.nlids as usize).map(move |o| (e.base as usize + o, e.sw as usize)))
        .filter(|&(lid, _)| lid < stride)
        .collect()
}

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

/// Move entries of `r` (built on the ranking `rk`) off the busiest channels. `counted` (per
/// index of `t.ends`; `None` = all) says which end ports' traffic the loads count, as sources
/// and as destinations (`ftree` balances its compute nodes' traffic); `shorten` adds the
/// first phase (`shorten`: paths longer than the rules need are shortened; the loads given as
/// `before` are those after it), `spread` the last (`spread`). Returns `None` when the pass does not apply (LMC > 0, too
/// large, no inter-switch traffic).
pub fn rebalance(
    t: &Topo,
    rk: &UpDownRanking,
    r: &mut Routing,
    counted: Option<&[bool]>,
    max_moves: usize,
    shorten: bool,
    spread: bool,
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
    // (every end port has one LID here)
    let dests = counted_dests(t, stride, counted);
    let mut ps = Pass::new(t, r, dests, true);
    let shortened = if shorten {
        shorten_paths(&mut ps, rk, r)
    } else {
        0
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
    // Last, where the busiest channel is still above what the hosts' switches force: every
    // entry of theirs offered its equally short ports (`spread`).
    let bound = host_bound(t, &hosts, ps.dests.len());
    if spread && st.load.iter().any(|&l| l > bound) {
        moved += spread_host_entries(&mut ps, rk, r, &mut st, &hosts, bound);
    }
    let after = st.load.iter().copied().max().unwrap_or(0);
    Some(Rebalanced {
        moved,
        shortened,
        before,
        after,
    })
}
