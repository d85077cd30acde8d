//! The start of a fault in RFTR: the paths it kills, the (destination, source) pairs they
//! carried, and twins over parallel cables.

use super::*;

impl<'f> Rftr<'f> {
    /// Marks the fault's channels dead, drops the pairs of end ports on a failed switch, and
    /// lists the affected (destination end, dead hop index, source slot, selected path),
    /// sorted: destination by destination, nearest the failure first.
    pub(super) fn start_fault(
        &mut self,
        fault: Fault,
        report: &mut FaultReport,
    ) -> Vec<(u32, u32, u32, u32)> {
        let f = self.f;
        let ne = f.end_ports.len();
        let mut dead: Vec<ChannelId> = Vec::new();
        let mut dropped_ends: Vec<u32> = Vec::new();
        // End ports whose own cable failed (an HCA cable): cut off, as destinations and as
        // sources; the other end ports of their switch keep their paths.
        let mut cut_ends: Vec<u32> = Vec::new();
        match fault {
            Fault::Link(l) => {
                self.mask.fail_link(l);
                dead.push(l.forward());
                dead.push(l.forward().reverse());
                let k = f.link(l);
                for p in [k.a, k.b] {
                    if !f.is_switch(f.port(p).node) {
                        if let Some(e) = f.end_ports.iter().position(|&q| q == p) {
                            cut_ends.push(e as u32);
                        }
                    }
                }
            }
            Fault::Switch(n) => {
                self.mask.fail_node(n);
                for p in f.node_ports(n) {
                    if let Some(c) = f.out_channel(p) {
                        dead.push(c);
                        dead.push(c.reverse());
                    }
                }
                let si = f.switch_of(n).map_or(u32::MAX, |s| s.0);
                for e in 0..ne {
                    if self.end_sw[e] == si {
                        dropped_ends.push(e as u32);
                    }
                }
            }
        }
        for &c in &dead {
            self.ch_dead[c.idx()] = true;
            self.plane.fail_channel(f, c);
        }
        for (_, mut m) in self.pre_cache.drain() {
            m.clear();
            self.pre_map_pool.push(m);
        }
        self.suf_pool.extend(self.suf_cache.drain().map(|(_, t)| t));
        self.dist_pool.extend(self.dist.drain().map(|(_, d)| d));
        self.legal_reach_pool
            .extend(self.legal_reach.drain().map(|(_, r)| r));
        // Drop pairs of end ports on a failed switch.
        for &e in &dropped_ends {
            let s = self.end_sw[e as usize];
            for slot in 0..self.slot_switch.len() {
                let v = &mut self.sel[slot * ne + e as usize];
                if *v != DROPPED {
                    *v = DROPPED;
                }
            }
            let slot = self.slot_of[s as usize];
            if slot != NONE {
                for d in 0..ne {
                    self.sel[slot as usize * ne + d] = DROPPED;
                }
            }
        }
        for &e in &cut_ends {
            for slot in 0..self.slot_switch.len() {
                self.sel[slot * ne + e as usize] = DROPPED;
            }
            let s = self.end_sw[e as usize];
            if s != NONE {
                let slot = self.slot_of[s as usize];
                if slot != NONE {
                    self.slot_ends[slot as usize].retain(|&x| x != e);
                }
            }
            self.end_sw[e as usize] = NONE;
        }
        report.dropped_pairs = (dropped_ends.len() + cut_ends.len()) as u64;
        let gone: Vec<u32> = dropped_ends.iter().chain(&cut_ends).copied().collect();
        let mut behind = std::mem::take(&mut self.fault_bufs.behind);
        self.forget_dead_walks(&dead, &gone, &mut behind);
        // Affected pairs.
        let mut hit = std::mem::take(&mut self.fault_bufs.hit);
        for &c in &dead {
            self.paths.kill_channel(c, &mut hit);
        }
        hit.sort_unstable();
        hit.dedup();
        self.defer_dead_prefixes(&hit);
        // Destination by destination; within one, nearest the failure first (hops before the
        // first dead hop of the broken path), so that rewritten dead base-LID entries serve
        // the pairs behind them.
        let mut pairs = std::mem::take(&mut self.fault_bufs.pairs);
        self.broken_pairs(&hit, &behind, &mut pairs);
        behind.clear();
        hit.clear();
        self.fault_bufs.behind = behind;
        self.fault_bufs.hit = hit;
        if let Fault::Link(l) = fault {
            self.add_twins(l, &pairs);
        }
        pairs
    }

    /// The selected paths among the killed ones `hit` (ascending), as (destination end,
    /// first dead hop, source slot, path), sorted. A selected path on the base LID is its source
    /// switch's base-LID walk (its entries were written as it was committed, and an entry is
    /// rewritten only where its walk was dead, when every path through it is repaired), so
    /// those pairs are the (end, switch) `behind` the dead channels whose selected path keeps
    /// the base LID, and need no read of the killed path; only the killed paths with a
    /// virtual LID, all added by repairs, are read.
    fn broken_pairs(
        &self,
        hit: &[PathId],
        behind: &[(u32, u32)],
        pairs: &mut Vec<(u32, u32, u32, u32)>,
    ) {
        let ne = self.f.end_ports.len();
        pairs.clear();
        for &(e, x) in behind {
            let slot = self.slot_of[x as usize];
            let p = self.sel[slot as usize * ne + e as usize];
            if p < DROPPED && self.paths.off_sl(p).0 == 0 {
                debug_assert!(
                    !self.paths.alive(p),
                    "a base-LID walk behind a dead channel is alive"
                );
                pairs.push((e, self.paths.dead_lo[p as usize], slot, p));
            }
        }
        let first_added = hit.partition_point(|&p| p < self.paths.base_len());
        pairs.extend(
            hit[first_added..]
                .iter()
                .filter(|&&p| self.paths.off[p as usize] != 0)
                .filter_map(|&p| self.selected_pair(p)),
        );
        // (A walk crossing two dead channels is found behind each.)
        pairs.sort_unstable();
        pairs.dedup();
        #[cfg(debug_assertions)]
        {
            let mut want: Vec<_> = hit.iter().filter_map(|&p| self.selected_pair(p)).collect();
            want.sort_unstable();
            assert_eq!(*pairs, want, "the pairs behind the dead channels");
        }
    }

    /// Killed path `p` as (destination end, first dead hop, source slot, `p`) when it is
    /// its pair's selected path, read from the path.
    fn selected_pair(&self, p: PathId) -> Option<(u32, u32, u32, u32)> {
        let ne = self.f.end_ports.len();
        let e = self.paths.dst[p as usize];
        let slot = self.slot_of[self.paths.src[p as usize] as usize];
        (slot != NONE && self.sel[slot as usize * ne + e as usize] == p)
            .then(|| (e, self.paths.dead_lo[p as usize], slot, p))
    }

    /// Parallel cables: when failed link `l` has live siblings between the same two
    /// switches, every broken selected path gets a twin over a sibling (the destination picks
    /// which, so the pairs spread), stored as a reachability entry of its source only: no
    /// table holds it, but its prefixes join suffixes like any stored path's. So the repair a
    /// person would make, the same switches over the other cable, is a candidate even where
    /// no path used the sibling before (LASH, like OpenSM's, routes over the lowest-numbered
    /// cable only). The twin takes the same turns between the same switches, so under a turn
    /// rule its VLs are the original's (a rule decides by channel class, and siblings share
    /// theirs: [`TurnRule`]); over fresh VLs the path is checked like any other.
    pub(super) fn add_twins(&mut self, l: LinkId, pairs: &[(u32, u32, u32, u32)]) {
        let f = self.f;
        let fwd = l.forward();
        let (a, b) = (
            f.port(f.channel_src(fwd)).node,
            f.port(f.channel_dst(fwd)).node,
        );
        let sibs: Vec<ChannelId> = f
            .node_ports(a)
            .filter_map(|p| f.out_channel(p))
            .filter(|&c| c != fwd && f.port(f.channel_dst(c)).node == b && !self.ch_dead[c.idx()])
            .collect();
        if sibs.is_empty() {
            return;
        }
        let (mut hops, mut vls): (Vec<ChannelId>, Vec<u8>) = (Vec::new(), Vec::new());
        for &(e, _, slot, p) in pairs {
            let pick = sibs[e as usize % sibs.len()];
            hops.clear();
            hops.extend(self.paths.hops_of(p).iter().map(|&c| {
                if c == fwd {
                    pick
                } else if c == fwd.reverse() {
                    pick.reverse()
                } else {
                    c
                }
            }));
            if hops.iter().any(|c| self.ch_dead[c.idx()]) {
                continue;
            }
            vls.clear();
            vls.extend_from_slice(self.paths.vls_of(p));
            let s = self.slot_switch[slot as usize];
            let id = self.paths.push(
                s,
                e,
                self.paths.off[p as usize],
                self.paths.sl[p as usize],
                &hops,
                &vls,
            );
            self.defer_prefixes(s, id, 0);
        }
    }
}
