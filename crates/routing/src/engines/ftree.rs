//! Fat-tree routing (`ftree`), restating OpenSM's algorithm with fabroute's rules: balancing
//! counters count **created routes only**, degraded trees are routed instead of refused, LMC is
//! supported, and every LFT entry is filled.
//!
//! **Compute nodes and leaves.** Compute-node (CN) ports: `cn_guids` if given; else every live
//! CA port except those in `io_guids`, routers, and *service CAs* whose node description
//! contains "aggregation node" (case-insensitive; e.g. the "Mellanox Technologies Aggregation
//! Node" SHARP CA that real fat trees carry on every switch, spines included). Leaves are the
//! switches with at least one CN.
//!
//! **Ranks.** Roots: `root_guids`, else `TopoHints::roots`, else detected — the switches
//! farthest (BFS) from the leaf set; rank = BFS distance from the roots (rank 0 = roots). A
//! leaf whose rank differs from the leaf rank (the rank holding most CNs) is an outlier, e.g. a
//! spine carrying a storage node: its CAs are demoted to non-compute and the ranking is
//! redone without it (at most three rounds). So a fabric with one aggregation node per switch,
//! or a few I/O nodes on spines, is ranked correctly without any GUID file.
//! Limitation: a non-aggregation CA on a spine of a 3-level tree sits at the leaf rank by
//! distance and is kept as a leaf (it routes correctly, only that spine carries no transit);
//! give `io_guids` or `root_guids` for such fabrics.
//!
//! **Deadlock freedom and reachability.** The ranking is an [`UpDownRanking`]: every path the
//! fat-tree pass creates is up* then down*, and everything else is completed with up*/down*
//! paths. If, under the fat-tree ranks, a switch carrying CNs has no up*/down* path to some
//! destination switch carrying end ports (a degraded tree, e.g. a leaf left with uplinks only
//! to spines that lost the way down to another leaf), the ranks fall back to a single root
//! (the root of minimum eccentricity), which always connects; a note says so. Entries without
//! any up*/down* path — toward switch LIDs (spine to spine is down→up), or from switches
//! without CNs (e.g. aggregation nodes on two spines) — get a shortest escape path and are
//! counted in a note; traffic between CNs never uses them.
//!
//! **Routing order and balance** (see `ftree-balance.md`): for each LMC offset, leaves in
//! switch-index order, on each leaf its CNs in port order, then dummy targets up to the
//! fullest leaf's CN count (counters only); then the other CAs; then switch LIDs (counters
//! untouched). For one target: walk up from its leaf; at each switch pick the up group (links
//! to one parent) with the fewest routes going down through it, ties by the parent whose
//! least-loaded down group is lighter, then lower switch index; inside the group the
//! least-loaded link; the parent forwards down. Other parents of every main-path switch get
//! secondary down entries (no counter). At each main-path switch, fan down to every other
//! child group (least-loaded link, lighter groups first): the child forwards up; the link's
//! up counter is incremented **only if that fan-down reached a switch with CNs**.
//! Remaining switches are completed per target: first switches with a child that forwards
//! down get a down entry (propagating upward), then the rest go up to a parent that has an
//! entry (top-down). If that still leaves a switch that has an up*/down* path under the
//! ranking, the whole target falls back to the up*/down* BFS (least-loaded legal ports).

use super::common::{transpose_rect, unreached_note, Topo, INF};
use super::ranking::{
    code_is_legal, codes_matrix, count_illegal, escape_note, updown_cands, UpDownRanking,
};
use super::roots::{given_roots, no_legal_path_note};
use super::tree;
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::Routing;
use crate::turn::Base;
use fabric::is_service_ca;
use fabric::{Fabric, FaultMask};
use fabric::{NodeKind, NO_PORT};
use rayon::prelude::*;
use rustc_hash::FxHashSet;

/// The `ftree` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct FatTree;

/// Group of parallel links from one switch to one neighbour switch.
#[derive(Clone, Copy, Debug)]
struct Group {
    remote: u32,
    /// Range into `Ft::gch`.
    start: u32,
    end: u32,
    /// The group of the remote switch pointing back.
    mirror: u32,
}

/// One link of a group: channel (this switch → remote) and the port numbers at both ends.
#[derive(Clone, Copy, Debug)]
struct GLink {
    ch: u32,
    port: u8,
    rport: u8,
}

struct Ft<'a> {
    t: &'a Topo<'a>,
    groups: Vec<Group>,
    gch: Vec<GLink>,
    /// Per switch: up groups `up[s]..down[s]`, down groups `down[s]..gend[s]`.
    up: Vec<u32>,
    down: Vec<u32>,
    gend: Vec<u32>,
    /// Routes per channel id (forward direction of the channel).
    load: Vec<u32>,
    /// Routes per group (over its links, this switch → remote).
    gload: Vec<u32>,
    /// Per switch: min over its down groups of `gload` (OpenSM's `min_counter_down`).
    min_down: Vec<u32>,
    /// Per switch: counted targets whose main path climbs through it (the load of the links
    /// below it that many leaves share; see `pick_up_group`).
    through: Vec<u32>,
    has_cn: Vec<bool>,
    by_rank: Vec<u32>,
    // per-target scratch
    stamp: Vec<u32>,
    epoch: u32,
    next: Vec<u8>,
    /// Channel id the entry forwards on (u32::MAX for the destination switch itself).
    next_ch: Vec<u32>,
    hops: Vec<u16>,
    is_down: Vec<bool>,
    touched: Vec<u32>,
    sort_bufs: Vec<Vec<(u32, u32)>>,
    /// Per switch and port number: remote switch and channel (`u32::MAX` = none).
    pp_start: Vec<u32>,
    pp_peer: Vec<u32>,
    pp_ch: Vec<u32>,
}

impl<'a> Ft<'a> {
    fn new(t: &'a Topo<'a>, rk: &UpDownRanking, has_cn: Vec<bool>) -> Self {
        let n = t.n;
        let mut groups = Vec::new();
        let mut gch = Vec::new();
        let (mut up, mut down, mut gend) = (vec![0u32; n], vec![0u32; n], vec![0u32; n]);
        let mut tmp: Vec<(u32, GLink)> = Vec::new();
        for s in 0..n {
            up[s] = groups.len() as u32;
            down[s] = up[s];
            gend[s] = up[s];
            if !t.alive[s] {
                continue;
            }
            for want_up in [true, false] {
                tmp.clear();
                for a in t.links(s) {
                    let p = a.peer as usize;
                    if rk.rank[p] == rk.rank[s] {
                        continue; // siblings: left to the completion
                    }
                    if (rk.rank[p] < rk.rank[s]) != want_up {
                        continue;
                    }
                    let rport = t.f.port(t.f.channel_dst(fabric::ChannelId(a.ch))).num;
                    tmp.push((
                        a.peer,
                        GLink {
                            ch: a.ch,
                            port: a.port,
                            rport,
                        },
                    ));
                }
                tmp.sort_by_key(|&(r, l)| (r, l.port));
                if !want_up {
                    down[s] = groups.len() as u32;
                }
                let mut i = 0;
                while i < tmp.len() {
                    let r = tmp[i].0;
                    let start = gch.len() as u32;
                    while i < tmp.len() && tmp[i].0 == r {
                        gch.push(tmp[i].1);
                        i += 1;
                    }
                    groups.push(Group {
                        remote: r,
                        start,
                        end: gch.len() as u32,
                        mirror: u32::MAX,
                    });
                }
            }
            gend[s] = groups.len() as u32;
        }
        // mirrors
        for s in 0..n {
            for g in up[s]..gend[s] {
                let r = groups[g as usize].remote as usize;
                let m = (up[r]..gend[r]).find(|&h| groups[h as usize].remote as usize == s);
                groups[g as usize].mirror = m.unwrap_or(u32::MAX);
            }
        }
        let mut by_rank: Vec<u32> = (0..n as u32).filter(|&s| t.alive[s as usize]).collect();
        by_rank.sort_by_key(|&s| (rk.rank[s as usize], rk.pos[s as usize]));
        let ng = groups.len();
        let mut pp_start = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for s in 0..n {
            pp_start.push(total);
            total += t.f.node(t.f.switches[s]).nports as u32 + 1;
        }
        pp_start.push(total);
        let mut pp_peer = vec![u32::MAX; total as usize];
        let mut pp_ch = vec![u32::MAX; total as usize];
        for (s, &st) in pp_start.iter().enumerate().take(n) {
            for a in t.links(s) {
                let i = (st + a.port as u32) as usize;
                pp_peer[i] = a.peer;
                pp_ch[i] = a.ch;
            }
        }
        Ft {
            t,
            groups,
            gch,
            up,
            down,
            gend,
            load: vec![0; t.f.links.len() * 2],
            gload: vec![0; ng],
            min_down: vec![0; n],
            through: vec![0; n],
            has_cn,
            by_rank,
            stamp: vec![0; n],
            epoch: 0,
            next: vec![NO_PORT; n],
            next_ch: vec![u32::MAX; n],
            hops: vec![0; n],
            is_down: vec![false; n],
            touched: Vec::new(),
            sort_bufs: Vec::new(),
            pp_start,
            pp_peer,
            pp_ch,
        }
    }

    /// Remote switch behind port `p` of switch `s` (`u32::MAX` = none).
    #[inline]
    fn peer_of(&self, s: usize, p: u8) -> u32 {
        let i = self.pp_start[s] as usize + p as usize;
        if i >= self.pp_start[s + 1] as usize {
            return u32::MAX;
        }
        self.pp_peer[i]
    }

    /// Channel out of port `p` of switch `s` (0 if none: only used for load look-ups).
    #[inline]
    fn ch_of(&self, s: usize, p: u8) -> u32 {
        let i = self.pp_start[s] as usize + p as usize;
        match self.pp_ch.get(i) {
            Some(&c) if c != u32::MAX && i < self.pp_start[s + 1] as usize => c,
            _ => 0,
        }
    }

    #[inline]
    fn is_set(&self, s: usize) -> bool {
        self.stamp[s] == self.epoch
    }

    fn begin(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.touched.clear();
    }

    fn set(&mut self, s: usize, port: u8, ch: u32, hops: u16, down: bool) {
        if !self.is_set(s) {
            self.touched.push(s as u32);
        }
        self.stamp[s] = self.epoch;
        self.next[s] = port;
        self.next_ch[s] = ch;
        self.hops[s] = hops;
        self.is_down[s] = down;
    }

    /// True when every switch of a rank has the same number of up and of down groups, all
    /// of one width per rank and direction, and every switch with compute nodes has as many
    /// as the others and sits at the lowest rank: a tree the fat-tree pass balances itself.
    fn is_regular(&self, rk: &UpDownRanking, is_cn: &[bool]) -> bool {
        let t = self.t;
        // per rank: (up groups, down groups, up width, down width)
        let mut shape: Vec<Option<(u32, u32, u32, u32)>> = Vec::new();
        let mut cn_per_leaf: Option<usize> = None;
        let mut leaf_rank: Option<u32> = None;
        for s in 0..t.n {
            if !t.alive[s] {
                continue;
            }
            let width = |g0: u32, g1: u32| -> Option<u32> {
                let mut w = None;
                for g in g0..g1 {
                    let gr = self.groups[g as usize];
                    let x = gr.end - gr.start;
                    if w.is_some_and(|v| v != x) {
                        return None;
                    }
                    w = Some(x);
                }
                Some(w.unwrap_or(0))
            };
            let (Some(uw), Some(dw)) = (
                width(self.up[s], self.down[s]),
                width(self.down[s], self.gend[s]),
            ) else {
                return false;
            };
            let me = (
                self.down[s] - self.up[s],
                self.gend[s] - self.down[s],
                uw,
                dw,
            );
            let r = rk.rank[s] as usize;
            if shape.len() <= r {
                shape.resize(r + 1, None);
            }
            match shape[r] {
                None => shape[r] = Some(me),
                Some(x) if x != me => return false,
                Some(_) => {}
            }
            let cn = t.ends_on(s).iter().filter(|&&e| is_cn[e as usize]).count();
            if cn > 0 {
                if cn_per_leaf.is_some_and(|c| c != cn)
                    || leaf_rank.is_some_and(|l| l != rk.rank[s])
                {
                    return false;
                }
                cn_per_leaf = Some(cn);
                leaf_rank = Some(rk.rank[s]);
            }
        }
        leaf_rank.is_some_and(|l| l as usize + 1 == shape.len())
    }

    /// May `s` take a new entry with `hops`, labelled `down`? Never turns a down entry into an
    /// up entry (switches above may rely on it going down).
    #[inline]
    fn can_set(&self, s: usize, hops: u16, down: bool) -> bool {
        if !self.is_set(s) {
            return true;
        }
        hops < self.hops[s] && (down || !self.is_down[s])
    }

    /// Least-loaded link of group `g` by the load of the *reverse* channels (traffic coming
    /// from the remote switch), first on ties.
    #[inline]
    fn best_link_rev(&self, g: usize) -> GLink {
        let gr = self.groups[g];
        let mut best = self.gch[gr.start as usize];
        let mut bl = self.load[(best.ch ^ 1) as usize];
        for i in gr.start + 1..gr.end {
            let l = self.gch[i as usize];
            let x = self.load[(l.ch ^ 1) as usize];
            if x < bl {
                bl = x;
                best = l;
            }
        }
        best
    }

    fn bump_group(&mut self, g: usize, ch: u32) {
        self.load[ch as usize] += 1;
        self.gload[g] += 1;
        // g belongs to some switch s; if g is a down group of s, refresh min_down[s]
        let s = self.groups[self.groups[g].mirror as usize].remote as usize;
        if (self.down[s]..self.gend[s]).contains(&(g as u32)) {
            let m = (self.down[s]..self.gend[s])
                .map(|h| self.gload[h as usize])
                .min()
                .unwrap_or(0);
            self.min_down[s] = m;
        }
    }

    /// Up group of `s` to use: fewest routes coming down from the parent to `s`; then the
    /// parent that fewest counted targets climb through (the global key: a parent's down
    /// links from above carry the traffic of every target routed through it, whichever leaf
    /// chose it, so balancing only the links of `s` would leave the parents of a level that
    /// many leaves share unbalanced); then the parent whose least-loaded down group is
    /// lighter, then lower switch index.
    fn pick_up_group(&self, s: usize) -> Option<usize> {
        let mut best: Option<(u32, u32, u32, u32, usize)> = None;
        for g in self.up[s]..self.down[s] {
            let gr = self.groups[g as usize];
            if gr.mirror == u32::MAX {
                continue;
            }
            let key = (
                self.gload[gr.mirror as usize],
                self.through[gr.remote as usize],
                self.min_down[gr.remote as usize],
                gr.remote,
                g as usize,
            );
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        best.map(|b| b.4)
    }

    /// Walk up from `s` (which has an entry) and route the target downward from above.
    fn go_up(&mut self, s: usize, came_from: usize, main: bool, count: bool) {
        if main {
            self.fan_down(s, came_from, count, 0);
        }
        let Some(g) = self.pick_up_group(s) else {
            return;
        };
        let gr = self.groups[g];
        let p = gr.remote as usize;
        let l = self.best_link_rev(g);
        let nh = self.hops[s].saturating_add(1);
        if main && count {
            self.bump_group(gr.mirror as usize, l.ch ^ 1);
            self.through[p] += 1;
        }
        // (A parent that already has an entry is not climbed through: its entry may go up,
        // and routing down to it from above would then turn down->up. With rank-decreasing up
        // groups the main path never meets such a parent.)
        if self.can_set(p, nh, true) {
            self.set(p, l.rport, l.ch ^ 1, nh, true);
            self.go_up(p, s, main, count);
        }
        if !main {
            return;
        }
        for g2 in self.up[s]..self.down[s] {
            let g2 = g2 as usize;
            if g2 == g || self.groups[g2].mirror == u32::MAX {
                continue;
            }
            let p2 = self.groups[g2].remote as usize;
            if !self.can_set(p2, nh, true) {
                continue;
            }
            let l2 = self.best_link_rev(g2);
            self.set(p2, l2.rport, l2.ch ^ 1, nh, true);
            self.go_up(p2, s, false, count);
        }
    }

    /// Fan down from `p` (which has an entry) to every child group except `exclude`; returns
    /// whether a route to a switch with CNs was created.
    fn fan_down(&mut self, p: usize, exclude: usize, count: bool, depth: usize) -> bool {
        let mut created = false;
        let (d0, d1) = (self.down[p] as usize, self.gend[p] as usize);
        if d0 == d1 {
            return false;
        }
        if self.sort_bufs.len() <= depth {
            self.sort_bufs.resize_with(depth + 1, Vec::new);
        }
        let mut buf = std::mem::take(&mut self.sort_bufs[depth]);
        buf.clear();
        for g in d0..d1 {
            let gr = self.groups[g];
            if gr.remote as usize == exclude || gr.mirror == u32::MAX {
                continue;
            }
            // load of routes going up from the child into p over this group
            buf.push((self.gload[gr.mirror as usize], g as u32));
        }
        buf.sort_unstable_by_key(|&(l, g)| (l, self.groups[g as usize].remote));
        let nh = self.hops[p].saturating_add(1);
        for &(_, g) in buf.iter() {
            let g = g as usize;
            let gr = self.groups[g];
            let q = gr.remote as usize;
            if !self.can_set(q, nh, false) {
                continue;
            }
            // the child's link up to p with the fewest routes going up
            let l = {
                let mut best = self.gch[gr.start as usize];
                let mut bl = self.load[(best.ch ^ 1) as usize];
                for i in gr.start + 1..gr.end {
                    let x = self.gch[i as usize];
                    let v = self.load[(x.ch ^ 1) as usize];
                    if v < bl {
                        bl = v;
                        best = x;
                    }
                }
                best
            };
            self.set(q, l.rport, l.ch ^ 1, nh, false);
            let c = self.fan_down(q, usize::MAX, count, depth + 1) || self.has_cn[q];
            if c {
                if count {
                    self.bump_group(gr.mirror as usize, l.ch ^ 1);
                }
                created = true;
            }
        }
        self.sort_bufs[depth] = buf;
        created
    }
}

/// Per-thread scratch for [`complete_column`].
#[derive(Debug, Default)]
struct CompScratch {
    /// 0 = no entry, 1 = being resolved, 2 = entry with known hops/label
    state: Vec<u8>,
    hops: Vec<u16>,
    down: Vec<bool>,
    stack: Vec<u32>,
    a: Vec<u32>,
    b: Vec<u32>,
    cand: Vec<(u8, u32)>,
}

/// Completes one destination column (`col[s]` = output port of switch `s`, `NO_PORT` = none
/// yet; `col[d]` set) with up*/down*-consistent entries, using the final link loads for
/// tie-breaking. Returns (fell back to the up*/down* BFS, entries left unreachable).
fn complete_column(
    ft: &Ft,
    rk: &UpDownRanking,
    codes_row: &[u16],
    d: usize,
    col: &mut [u8],
    sc: &mut CompScratch,
) -> (bool, usize) {
    let t = ft.t;
    let n = t.n;
    sc.state.clear();
    sc.state.resize(n, 0);
    sc.hops.resize(n, 0);
    sc.down.resize(n, false);
    sc.state[d] = 2;
    sc.hops[d] = 0;
    sc.down[d] = true;
    // Hops and labels of the entries the fat-tree pass made (follow the next pointers).
    for s0 in 0..n {
        if !t.alive[s0] || sc.state[s0] != 0 || col[s0] == NO_PORT {
            continue;
        }
        sc.stack.clear();
        let mut x = s0;
        let ok = loop {
            match sc.state[x] {
                2 => break true,
                1 => break false,
                _ => {}
            }
            if col[x] == NO_PORT {
                break false;
            }
            sc.state[x] = 1;
            sc.stack.push(x as u32);
            let nx = ft.peer_of(x, col[x]);
            if nx == u32::MAX {
                break false;
            }
            x = nx as usize;
        };
        while let Some(y) = sc.stack.pop() {
            let y = y as usize;
            if ok {
                let ny = ft.peer_of(y, col[y]) as usize;
                sc.hops[y] = sc.hops[ny].saturating_add(1);
                sc.down[y] = !rk.is_up_sw(y, ny) && sc.down[ny];
                sc.state[y] = 2;
            } else {
                sc.state[y] = 0;
                col[y] = NO_PORT;
            }
        }
    }
    // Pass 1: down entries propagate upward from down-labelled switches, by hops.
    sc.a.clear();
    sc.b.clear();
    for s in 0..n {
        if sc.state[s] == 2 && sc.down[s] {
            sc.a.push(s as u32);
        }
    }
    {
        let hops = &sc.hops;
        sc.a.sort_unstable_by_key(|&s| (hops[s as usize], s));
    }
    let (mut ia, mut ib) = (0, 0);
    loop {
        let take_a = match (sc.a.get(ia), sc.b.get(ib)) {
            (Some(&x), Some(&y)) => sc.hops[x as usize] <= sc.hops[y as usize],
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let u = if take_a {
            ia += 1;
            sc.a[ia - 1]
        } else {
            ib += 1;
            sc.b[ib - 1]
        } as usize;
        let nh = sc.hops[u].saturating_add(1);
        for g in ft.up[u]..ft.down[u] {
            let gr = ft.groups[g as usize];
            let p = gr.remote as usize;
            if sc.state[p] != 0 || gr.mirror == u32::MAX {
                continue;
            }
            // p forwards down to u on its least-loaded link toward u
            let pgr = ft.groups[gr.mirror as usize];
            let mut best = ft.gch[pgr.start as usize];
            for i in pgr.start + 1..pgr.end {
                let x = ft.gch[i as usize];
                if ft.load[x.ch as usize] < ft.load[best.ch as usize] {
                    best = x;
                }
            }
            col[p] = best.port;
            sc.state[p] = 2;
            sc.hops[p] = nh;
            sc.down[p] = true;
            sc.b.push(p as u32);
        }
    }
    // Pass 2: top-down, switches without an entry go up to a parent with one.
    let mut missing = false;
    for &s in &ft.by_rank {
        let s = s as usize;
        if sc.state[s] == 2 {
            continue;
        }
        let (u0, u1) = (ft.up[s] as usize, ft.down[s] as usize);
        // Among the parents with an entry and the fewest hops, the least-loaded link.
        let mut best: Option<(u16, u32, GLink)> = None;
        for g in u0..u1 {
            let gr = ft.groups[g];
            let p = gr.remote as usize;
            if sc.state[p] != 2 {
                continue;
            }
            for j in gr.start..gr.end {
                let l = ft.gch[j as usize];
                let key = (sc.hops[p], ft.load[l.ch as usize]);
                if best.is_none_or(|(h, ld, _)| key < (h, ld)) {
                    best = Some((key.0, key.1, l));
                }
            }
        }
        match best {
            Some((h, _, l)) => {
                col[s] = l.port;
                sc.state[s] = 2;
                sc.hops[s] = h.saturating_add(1);
                sc.down[s] = false;
            }
            None => missing = true,
        }
    }
    if !missing {
        return (false, 0);
    }
    // Switches still without an entry: if one of them has an up*/down* path under the ranking,
    // route the whole column by the up*/down* BFS; otherwise only those get BFS entries
    // (escapes, as they have no legal path).
    let fallback = (0..n).any(|s| {
        t.alive[s] && sc.state[s] != 2 && codes_row[s] != INF && code_is_legal(codes_row[s])
    });
    let mut unreached = 0;
    #[allow(clippy::needless_range_loop)] // s indexes several arrays besides col
    for s in 0..n {
        if !t.alive[s] || s == d || (sc.state[s] == 2 && !fallback) {
            continue;
        }
        sc.cand.clear();
        updown_cands(t, rk, codes_row, s, &mut sc.cand);
        if sc.cand.is_empty() {
            col[s] = NO_PORT;
            unreached += 1;
            continue;
        }
        let mut best = sc.cand[0].0;
        let mut bl = u32::MAX;
        for &(p, _) in sc.cand.iter() {
            let l = ft.load[ft.ch_of(s, p) as usize];
            if l < bl {
                bl = l;
                best = p;
            }
        }
        col[s] = best;
    }
    (fallback, unreached)
}

/// CN flags per end (index into `t.ends`).
fn compute_nodes(t: &Topo, opts: &RouteOptions) -> Vec<bool> {
    let f = t.f;
    let cn: FxHashSet<u64> = opts.cn_guids.iter().copied().collect();
    let io: FxHashSet<u64> = opts.io_guids.iter().copied().collect();
    (0..t.ends.len())
        .map(|i| {
            let e = &t.ends[i];
            let g = f.port(e.port).guid;
            if !cn.is_empty() {
                return cn.contains(&g);
            }
            let node = f.node(t.end_node(i));
            node.kind == NodeKind::Ca && !io.contains(&g) && !is_service_ca(&node.desc)
        })
        .collect()
}

/// The tree shape ftree routes with: from `root_guids`, else the hints' roots, else detected
/// from the compute nodes (`is_cn`); with where the roots came from.
fn tree_shape(
    t: &Topo,
    opts: &RouteOptions,
    is_cn: &[bool],
    notes: &mut Vec<String>,
) -> Result<(tree::TreeShape, &'static str), EngineError> {
    let (roots, mut source) = given_roots(t, opts, notes);
    let shape = if roots.is_empty() {
        source = "the leaves (switches with compute nodes, ranked from all at once)";
        tree::detect(t, is_cn).map_err(EngineError::NotApplicable)?
    } else {
        tree::from_roots(t, &roots, is_cn)
    };
    Ok((shape, source))
}

/// The ftree ranking of the fault-free fabric under `opts`.
fn fault_free_ranking(
    f: &Fabric,
    opts: &RouteOptions,
) -> Result<(UpDownRanking, Vec<usize>), EngineError> {
    let t = Topo::live(f, &FaultMask::none(f))?;
    let is_cn = compute_nodes(&t, opts);
    let (shape, _) = tree_shape(&t, opts, &is_cn, &mut Vec::new())?;
    let roots = shape.roots.clone();
    Ok((
        UpDownRanking::from_ranks(&t, shape.rank, shape.roots),
        roots,
    ))
}

impl Engine for FatTree {
    fn info(&self) -> &'static EngineInfo {
        &super::FTREE
    }
    /// The Up*/Down* rule of the ftree ranking (the same tree shape the engine routes with);
    /// when some pairs have no up*/down* path (the base changes VL for them), fresh VLs above
    /// the base's instead.
    fn rftr_base<'f>(&self, f: &'f Fabric, opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        let (rk, _) = fault_free_ranking(f, opts)?;
        let t = Topo::live(f, &FaultMask::none(f))?;
        let codes = codes_matrix(&t, &rk);
        let is_source: Vec<bool> = (0..t.n).map(|s| !t.ends_on(s).is_empty()).collect();
        let (bad, _) = count_illegal(&t, &codes, &is_source);
        Ok(super::updn::updown_base(f, &rk, bad))
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let f = t.f;
        let n = t.n;
        let mut notes = Vec::new();
        let is_cn = compute_nodes(t, opts);
        if !is_cn.iter().any(|&c| c) {
            return Err(EngineError::NotApplicable("no compute node port".into()));
        }
        let (shape, source) = tree_shape(t, opts, &is_cn, &mut notes)?;
        let rk = UpDownRanking::from_ranks(t, shape.rank.clone(), shape.roots.clone());
        let mut per_level: Vec<usize> = Vec::new();
        for s in 0..n {
            if t.alive[s] {
                let l = rk.rank[s] as usize;
                if per_level.len() <= l {
                    per_level.resize(l + 1, 0);
                }
                per_level[l] += 1;
            }
        }
        notes.push(format!(
            "{} {} from {source} (e.g. {:?}); switches per rank from the roots: {}; {} leaves",
            shape.roots.len(),
            if shape.roots.len() == 1 {
                "root"
            } else {
                "roots"
            },
            shape
                .roots
                .first()
                .map_or("", |&r| f.node(f.switches[r]).name.as_str()),
            per_level
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
            shape.leaves.len()
        ));
        if !shape.hostless_leaves.is_empty() {
            notes.push(format!(
                "{} switches without compute nodes ranked with the leaves (e.g. {:?}): below them the tree joins every leaf they reach",
                shape.hostless_leaves.len(),
                f.node(f.switches[shape.hostless_leaves[0]]).name
            ));
        }
        if !shape.upper_hosts.is_empty() {
            let k: usize = shape
                .upper_hosts
                .iter()
                .map(|&s| t.ends_on(s).iter().filter(|&&e| is_cn[e as usize]).count())
                .sum();
            notes.push(format!(
                "{k} compute-node ports sit on {} switches above the leaves (e.g. {:?}); they are routed like the others",
                shape.upper_hosts.len(),
                f.node(f.switches[shape.upper_hosts[0]]).name
            ));
        }
        let mut has_cn = vec![false; n];
        for (i, e) in t.ends.iter().enumerate() {
            if is_cn[i] {
                has_cn[e.sw as usize] = true;
            }
        }
        let codes = codes_matrix(t, &rk);
        let is_source: Vec<bool> = (0..n).map(|s| !t.ends_on(s).is_empty()).collect();
        let (bad, esc) = count_illegal(t, &codes, &is_source);
        if bad > 0 {
            notes.push(no_legal_path_note(bad));
        }

        // Phase 1 (sequential, counters): the fat-tree pass per target writes its entries.
        let mut r = Routing::empty(f);
        let stride = r.stride();
        let mut cols = vec![NO_PORT; stride * n];
        let mut lid_dest = vec![u32::MAX; stride];
        let mut ft = Ft::new(t, &rk, has_cn);
        let max_off = t.ends.iter().map(|e| e.nlids).max().unwrap_or(1) as usize;
        // End-port LIDs are completed right after their fat-tree pass, and the entries the
        // completion adds count in the link loads, so later completions spread over the links
        // (a leaf cabled to only some spines takes its entries for targets routed through
        // the others from its own uplinks, least loaded first).
        let mut done = vec![false; stride];
        let mut sc = CompScratch::default();
        let (mut fallbacks, mut unreached) = (0usize, 0usize);
        let mut route_one = |ft: &mut Ft, sw: usize, port: u8, lid: Option<usize>| {
            ft.begin();
            ft.set(sw, port, u32::MAX, 0, true);
            ft.go_up(sw, usize::MAX, true, true);
            let Some(lid) = lid.filter(|&l| l < stride) else {
                return;
            };
            lid_dest[lid] = sw as u32;
            let col = &mut cols[lid * n..(lid + 1) * n];
            for &s in &ft.touched {
                col[s as usize] = ft.next[s as usize];
            }
            // Only columns where a switch with compute nodes is left to the completion (the
            // entries that carry most traffic) are completed here, in order; the others, like
            // the switch LIDs, in parallel below.
            if !(0..n).any(|s| ft.has_cn[s] && t.alive[s] && s != sw && !ft.is_set(s)) {
                return;
            }
            let row = &codes[sw * n..(sw + 1) * n];
            let (fb, un) = complete_column(ft, &rk, row, sw, col, &mut sc);
            fallbacks += fb as usize;
            unreached += un;
            done[lid] = true;
            for (s, &p) in col.iter().enumerate() {
                if p != NO_PORT && s != sw && !ft.is_set(s) {
                    let c = ft.ch_of(s, p) as usize;
                    ft.load[c] += 1;
                }
            }
        };
        for off in 0..max_off {
            // CNs leaf by leaf, with dummies
            for s in 0..n {
                if !t.alive[s] || !ft.has_cn[s] {
                    continue;
                }
                // LMC offset o starts the leaf's CN list at o (mod count), so the LIDs of one
                // port meet different counter states and take different up links.
                let cn_here: Vec<u32> = t
                    .ends_on(s)
                    .iter()
                    .copied()
                    .filter(|&ei| is_cn[ei as usize])
                    .collect();
                let k = cn_here.len();
                for j in 0..k {
                    let ei = cn_here[(j + off) % k];
                    let e = t.ends[ei as usize];
                    let lid = (off < e.nlids as usize).then_some(e.base as usize + off);
                    route_one(&mut ft, s, e.sw_port, lid);
                }
            }
            // other end ports
            for s in 0..n {
                for &ei in t.ends_on(s) {
                    let e = t.ends[ei as usize];
                    if is_cn[ei as usize] || off >= e.nlids as usize {
                        continue;
                    }
                    route_one(&mut ft, s, e.sw_port, Some(e.base as usize + off));
                }
            }
        }
        // switch LIDs: no fat-tree pass (counters untouched); completed below like the rest
        for s in 0..n {
            let l = t.sw_lid[s] as usize;
            if t.alive[s] && l != 0 && l < stride {
                lid_dest[l] = s as u32;
                cols[l * n + s] = 0;
            }
        }
        // Phase 2 (parallel over the other LIDs, read-only counters): completion.
        let ft = &ft;
        let (fb2, un2) = cols
            .par_chunks_mut(n.max(1))
            .enumerate()
            .map_init(CompScratch::default, |sc, (lid, col)| {
                let d = lid_dest.get(lid).copied().unwrap_or(u32::MAX);
                if d == u32::MAX || done[lid] {
                    return (0usize, 0usize);
                }
                // A column the fat-tree pass filled at every live switch has nothing to
                // complete (most end-port columns of an intact tree): every entry it sets
                // points to a switch already set with fewer hops, so every chain ends at the
                // target.
                if col.iter().zip(&t.alive).all(|(&p, &a)| p != NO_PORT || !a) {
                    return (0usize, 0usize);
                }
                let d = d as usize;
                let row = &codes[d * n..(d + 1) * n];
                let (fb, un) = complete_column(ft, &rk, row, d, col, sc);
                (fb as usize, un)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let (fallbacks, unreached) = (fallbacks + fb2, unreached + un2);
        r.lft = transpose_rect(&cols, stride, n);
        // The balance pass, unless the tree is regular (the fat-tree pass balances those
        // itself, and the pass would only spend its time finding nothing to move).
        let regular = bad == 0
            && shape.upper_hosts.is_empty()
            && shape.hostless_leaves.is_empty()
            && ft.is_regular(&rk, &is_cn);
        let moves = super::rebalance::MOVE_BUDGET_PER_END * t.ends.len();
        if !regular {
            match super::rebalance::rebalance(t, &rk, &mut r, Some(&is_cn), moves) {
                Some(b) if b.moved > 0 => notes.push(b.note("compute-node ")),
                Some(_) => {}
                None => notes.push(super::rebalance::skipped_note(t)),
            }
        }
        if bad > 0 {
            super::transition::assign_transitions(t, &rk, &mut r, opts.budget, &mut notes)?;
        }
        if fallbacks > 0 {
            notes.push(format!(
                "{fallbacks} destination LIDs could not be completed from the fat-tree pass and were routed by the up*/down* BFS"
            ));
        }
        if esc > 0 {
            notes.push(escape_note(esc));
        }
        unreached_note(t, unreached, &mut notes);
        Ok(Routed { routing: r, notes })
    }
}
