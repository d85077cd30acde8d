//! The fat-tree engine's state: its ranks, port groups and counters, and the routing of
//! every destination down and up the tree with OpenSM's balancing counters.

use super::*;

/// Group of parallel links from one switch to one neighbour switch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Group {
    pub(super) remote: u32,
    /// Range into `FtreeState::gch`.
    pub(super) start: u32,
    pub(super) end: u32,
    /// The group of the remote switch pointing back.
    pub(super) mirror: u32,
}

/// One link of a group: channel (this switch → remote) and the port numbers at both ends.
#[derive(Clone, Copy, Debug)]
pub(super) struct GLink {
    pub(super) ch: u32,
    pub(super) port: u8,
    pub(super) rport: u8,
}

pub(super) struct FtreeState<'a> {
    pub(super) t: &'a Topo<'a>,
    pub(super) groups: Vec<Group>,
    pub(super) gch: Vec<GLink>,
    /// Per switch: up groups `up[s]..down[s]`, down groups `down[s]..gend[s]`.
    pub(super) up: Vec<u32>,
    pub(super) down: Vec<u32>,
    pub(super) gend: Vec<u32>,
    /// Routes per channel id (forward direction of the channel).
    pub(super) load: Vec<u32>,
    /// Routes per group (over its links, this switch → remote).
    pub(super) gload: Vec<u32>,
    /// Per switch: min over its down groups of `gload` (OpenSM's `min_counter_down`).
    pub(super) min_down: Vec<u32>,
    /// Per switch: counted targets whose main path climbs through it (the load of the links
    /// below it that many leaves share; see `pick_up_group`).
    pub(super) through: Vec<u32>,
    pub(super) has_cn: Vec<bool>,
    pub(super) by_rank: Vec<u32>,
    // per-target scratch
    pub(super) stamp: Vec<u32>,
    pub(super) epoch: u32,
    pub(super) next: Vec<u8>,
    /// Channel id the entry forwards on (u32::MAX for the destination switch itself).
    pub(super) next_ch: Vec<u32>,
    pub(super) hops: Vec<u16>,
    pub(super) is_down: Vec<bool>,
    pub(super) touched: Vec<u32>,
    pub(super) sort_bufs: Vec<Vec<(u32, u32)>>,
    /// Per switch and port number: remote switch and channel (`u32::MAX` = none).
    pub(super) pp_start: Vec<u32>,
    pub(super) pp_peer: Vec<u32>,
    pub(super) pp_ch: Vec<u32>,
}

impl<'a> FtreeState<'a> {
    pub(super) fn new(t: &'a Topo<'a>, rk: &UpDownRanking, has_cn: Vec<bool>) -> Self {
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
        FtreeState {
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
    pub(super) fn peer_of(&self, s: usize, p: u8) -> u32 {
        let i = self.pp_start[s] as usize + p as usize;
        if i >= self.pp_start[s + 1] as usize {
            return u32::MAX;
        }
        self.pp_peer[i]
    }

    /// Channel out of port `p` of switch `s` (0 if none: only used for load look-ups).
    #[inline]
    pub(super) fn ch_of(&self, s: usize, p: u8) -> u32 {
        let i = self.pp_start[s] as usize + p as usize;
        match self.pp_ch.get(i) {
            Some(&c) if c != u32::MAX && i < self.pp_start[s + 1] as usize => c,
            _ => 0,
        }
    }

    #[inline]
    pub(super) fn is_set(&self, s: usize) -> bool {
        self.stamp[s] == self.epoch
    }

    pub(super) fn begin(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.touched.clear();
    }

    pub(super) fn set(&mut self, s: usize, port: u8, ch: u32, hops: u16, down: bool) {
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
    /// as the others and sits at the lowest rank, and the destinations below every switch
    /// divide evenly over its up links: a tree the fat-tree pass balances itself.
    pub(super) fn is_regular(&self, rk: &UpDownRanking, is_cn: &[bool]) -> bool {
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
        let (Some(leaf), Some(cn)) = (leaf_rank, cn_per_leaf) else {
            return false;
        };
        if leaf as usize + 1 != shape.len() {
            return false;
        }
        // The round robin gives every up link of a switch the same number of destinations
        // only where they divide: a leaf with 3 compute nodes under 5 up links puts two of a
        // set's 6 on one L1 of a 4-level tree (24 on its L2 -> L1 link where 18 will do).
        // Going up, a switch's destinations are those of its down groups' subtrees, which
        // are disjoint in a regular tree.
        let mut below = cn as u64;
        for r in (0..shape.len()).rev() {
            let Some((ups, _, uw, _)) = shape[r] else {
                return false;
            };
            let links = ups as u64 * uw as u64;
            if links > 0 && !below.is_multiple_of(links) {
                return false;
            }
            if r > 0 {
                let Some((_, downs, _, _)) = shape[r - 1] else {
                    return false;
                };
                below = below.saturating_mul(downs as u64);
            }
        }
        true
    }

    /// May `s` take a new entry with `hops`, labelled `down`? Never turns a down entry into an
    /// up entry (switches above may rely on it going down).
    #[inline]
    pub(super) fn can_set(&self, s: usize, hops: u16, down: bool) -> bool {
        if !self.is_set(s) {
            return true;
        }
        hops < self.hops[s] && (down || !self.is_down[s])
    }

    /// Least-loaded link of group `g` by the load of the *reverse* channels (traffic coming
    /// from the remote switch), first on ties.
    #[inline]
    pub(super) fn best_link_rev(&self, g: usize) -> GLink {
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

    pub(super) fn bump_group(&mut self, g: usize, ch: u32) {
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
    pub(super) fn pick_up_group(&self, s: usize) -> Option<usize> {
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
    pub(super) fn go_up(&mut self, s: usize, came_from: usize, main: bool, count: bool) {
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
    pub(super) fn fan_down(&mut self, p: usize, exclude: usize, count: bool, depth: usize) -> bool {
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
