//! RFTR's repair of one (source switch, destination) pair: the order of attempts, the
//! checks that a candidate may keep the base LID, materialising it with a LID offset and an
//! SL, and the commit of its LFT, SL2VL and path-SL entries.

use super::*;
use fabric::SwitchIdx;

impl<'f> Rftr<'f> {
    /// The fallback scan without virtual LIDs (LMC 0, a turn-rule base): only a candidate
    /// that keeps the base LID can succeed (no transition, a prefix over usable base-LID
    /// entries; its suffix is the base-LID walk itself), and it fails only by revisiting a
    /// switch. So only those are sorted and tried, in the specification's order; every
    /// other candidate can only fail for want of a LID, and whether one would have got that
    /// far (`lid_short`, for the report) does not depend on the order. The same choice and
    /// the same report as trying the whole sorted list, without sorting thousands of
    /// candidates per unsupported pair.
    pub(super) fn fallback_base_lid_only(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        cands: &mut [Cand],
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        let reuse = self.cfg.reuse_dead_base;
        let keeps = |me: &Self, c: &Cand| {
            reuse && c.trans == 0 && me.base_lid_prefix_ok(s, e, c.pre_path, c.pre_len)
        };
        let split = partition_front(cands, |c| keeps(self, c));
        let (viable, rest) = cands.split_at_mut(split);
        Self::sort_candidates(viable);
        for cand in viable.iter() {
            if let Some(tr) = self.try_candidate(slot, s, e, cand, false, hops, vls) {
                return Some(tr);
            }
        }
        for cand in rest.iter() {
            if self.materialise(s, e, cand, hops, vls) {
                self.lid_short = true;
                break;
            }
        }
        None
    }

    pub(super) fn repair(&mut self, slot: u32, e: u32) -> Option<u8> {
        let mut hops = std::mem::take(&mut self.cand_hops);
        let mut vls = std::mem::take(&mut self.cand_vls);
        let r = self.repair_with(slot, e, &mut hops, &mut vls);
        self.cand_hops = hops;
        self.cand_vls = vls;
        r
    }

    /// [`Rftr::repair`] with the candidate buffers in hand.
    fn repair_with(
        &mut self,
        slot: u32,
        e: u32,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        self.lid_short = false;
        let s = self.slot_switch[slot as usize];
        // A pair whose base-LID walk is live again (through entries an earlier repair of
        // this destination rewrote), legal, and as short as a walk obeying the turn rule
        // over the live links can be keeps it: no transition-free candidate is shorter, and
        // the walk is itself one, so the scan below would choose it too. Most pairs behind a
        // repaired switch end here, without the scan or their source's prefix table. (The
        // fault-free distances bound that walk from below and need no search.)
        if self.cfg.reuse_dead_base && self.fresh.is_none() {
            // The walk itself, not its suffix table entry: most pairs end here, and the
            // walk's hops are what the commit needs.
            let t = self.end_sw[e as usize];
            let lid = self.f.port(self.f.end_ports[e as usize]).lid;
            hops.clear();
            let (kept, copied) = self.walk_reusing(s, e, lid, hops);
            debug_assert_eq!(
                kept.then_some(hops.len() as u32),
                unpack_suffix(self.suffix(e, 0, s)).and_then(|(h, tr, _)| (tr == 0).then_some(h)),
                "the walk and its suffix table entry disagree"
            );
            if kept && self.as_short_as_any(s, t, hops.len() as u32) {
                self.shortest[s as usize] = (self.group, hops.len() as u32);
                self.keep_own_walk(slot, s, e, hops, vls, copied);
                return Some(0);
            }
        } else if self.cfg.reuse_dead_base {
            if let Some((h, 0, _)) = unpack_suffix(self.suffix(e, 0, s)) {
                let t = self.end_sw[e as usize];
                if self.as_short_as_any(s, t, h) {
                    let keep = Cand::base_walk(s, h);
                    if let Some(tr) = self.try_candidate(slot, s, e, &keep, false, hops, vls) {
                        return Some(tr);
                    }
                }
            }
        }
        // The near-failure tie-break at the least length first: a transition-free candidate
        // as short as the fault-free distance and the turn rule's distance is the best there
        // is (the two bound every transition-free candidate from below, and every candidate
        // with a transition ranks after it), so when the pair's own walk is not one, the
        // late deviation the steps below would try is this one, and the scan for the best
        // is not needed.
        let t = self.end_sw[e as usize];
        let d0 = self
            .static_distance(s, t)
            .map(|d| self.legal_distance(s, t).map_or(d, |l| l.max(d)));
        let own0 = unpack_suffix(self.suffix(e, 0, s));
        // There is no candidate without a transition where no path obeying the turn rule
        // leads to t (known for sources where a pair found only candidates with one), and
        // without virtual LIDs only a candidate without a transition can be placed.
        let lid0 = self.lmc == 0 && self.fresh.is_none();
        let want = match (lid0, self.legal_reach(s, t)) {
            (false, Some(false)) => Want::BestWithTransition,
            (false, _) => Want::Best,
            (true, Some(false)) => Want::AnyTransition,
            (true, _) => Want::BestOrAnyTransition,
        };
        let unreachable = matches!(want, Want::AnyTransition | Want::BestWithTransition);
        let mut tried_late = None;
        if let (true, true, Some(d0), false) = (
            self.cfg.reuse_dead_base,
            self.cfg.deviate_late,
            d0,
            unreachable,
        ) {
            if !matches!(own0, Some((h, 0, _)) if h == d0) && self.early_deviation_pays() {
                tried_late = Some(d0);
                self.early_deviation.tried += 1;
                if let Some(tr) = self.late_deviation(slot, s, e, d0, hops, vls) {
                    self.early_deviation.found += 1;
                    // As short as the distances allow: no walk is shorter.
                    self.shortest[s as usize] = (self.group, d0);
                    return Some(tr);
                }
            }
        }
        // Otherwise the best candidate, found by one scan, usually works. (The deviation
        // reads only the source's indexed trie nodes; the scan reads its prefix rows.)
        self.prepare(s, e);
        let mut best = self.scan_best(s, e, want)?;
        if best.trans > 0 {
            self.learn_legal_reach(s);
        }
        // A pair whose own base-LID walk is live, legal and as short as the best keeps it.
        if self.cfg.reuse_dead_base && best.trans == 0 {
            if let Some((h, 0, _)) = own0 {
                if h == best.hops {
                    best = Cand::base_walk(s, h);
                }
            }
        }
        let own_walk = best.pre_path == NONE && best.c == s && best.suf_off == 0;
        if self.cfg.reuse_dead_base
            && self.cfg.deviate_late
            && best.trans == 0
            && !own_walk
            && tried_late != Some(best.hops)
        {
            if let Some(tr) = self.late_deviation(slot, s, e, best.hops, hops, vls) {
                if self.neighbours_settle(s, t, best.hops) == Some(true) {
                    self.shortest[s as usize] = (self.group, best.hops);
                }
                return Some(tr);
            }
        }
        if self.cfg.reuse_dead_base && self.cfg.prefer_base_lid && best.trans == 0 {
            if let Some(b) = self.base_lid_tie(s, e, &best) {
                if let Some(tr) = self.try_candidate(slot, s, e, &b, false, hops, vls) {
                    return Some(tr);
                }
            }
        }
        if let Some(tr) = self.try_candidate(slot, s, e, &best, false, hops, vls) {
            return Some(tr);
        }
        // Without virtual LIDs only a transition-free candidate can keep the base LID; when
        // the best needs a transition none is one, and all the fallback below would find out
        // is whether some candidate materialises (a virtual LID was missing): the first that
        // does answers it.
        if lid0 && best.trans > 0 {
            if !self.lid_short {
                self.lid_short =
                    self.each_candidate(s, e, |me, c| me.materialise(s, e, c, hops, vls));
            }
            return None;
        }
        // Otherwise every candidate in order.
        if self.lmc == 0 && self.fresh.is_none() {
            let mut cands = self.take_cands();
            self.candidates_into(s, e, &mut cands);
            let r = self.fallback_base_lid_only(slot, s, e, &mut cands, hops, vls);
            self.give_cands(cands);
            return r;
        }
        // Pass 0: an SL already in use; pass 1: open a new SL. The first pass builds the
        // list only as far as it reads it (a few candidates usually settle the pair); the
        // second reads what the first saw, the whole list.
        let mut seen = self.take_cands();
        let mut found = None;
        self.each_candidate_in_order(s, e, best.trans, |me, cand| {
            seen.push(*cand);
            if me.doomed(s, e, cand, false) {
                return false;
            }
            found = me.try_candidate(slot, s, e, cand, false, hops, vls);
            found.is_some()
        });
        if found.is_none() {
            for cand in &seen {
                if self.doomed(s, e, cand, true) {
                    continue;
                }
                found = self.try_candidate(slot, s, e, cand, true, hops, vls);
                if found.is_some() {
                    break;
                }
            }
        }
        self.give_cands(seen);
        found
    }

    /// Whether to try the near-failure deviation at the least length before the scan. It
    /// saves the scan when it finds the path (most pairs of a fat tree, whose base paths are
    /// shortest), and finds none where the base's paths are longer than the fabric's
    /// distances (Up*/Down* on a torus), where each attempt still reads the source's trie.
    /// Skipping it changes no result: when it would have found a path, that path is as
    /// short as the distances allow, so the scan's best has its length and the same
    /// deviation is tried after the scan (with nothing changed in between); when it would
    /// have found none, it had no effect. So it is tried while it finds a path for at
    /// least one pair in eight, after a first 32 attempts, and otherwise for every 64th
    /// pair, to notice when that changes.
    pub(super) fn early_deviation_pays(&mut self) -> bool {
        let d = &mut self.early_deviation;
        d.considered = d.considered.wrapping_add(1);
        d.found.saturating_mul(8).saturating_add(32) >= d.tried || d.considered.is_multiple_of(64)
    }

    /// True when trying `cand` for (s, e) now could neither succeed nor change what the
    /// failed attempts of this pair record, so the fallback scan may skip it:
    /// - in the second pass (a new SL), a candidate that needs no SL of its own (no
    ///   transition, no fresh VL) fails exactly as it did in the first;
    /// - without virtual LIDs (LMC 0), a candidate that cannot keep the base LID (it makes a
    ///   transition, or its prefix crosses a live base-LID entry pointing elsewhere) can only
    ///   fail for want of a LID, and once one candidate of this pair has (`lid_short`), more
    ///   of them add nothing.
    ///
    /// On a torus under Up*/Down* at LMC 0 a pair that cannot be repaired otherwise tries
    /// every candidate twice, thousands each.
    pub(super) fn doomed(&self, s: u32, e: u32, cand: &Cand, second_pass: bool) -> bool {
        let sl0 = cand.trans == 0 && self.fresh.is_none();
        if second_pass && sl0 {
            return true;
        }
        self.lmc == 0
            && self.lid_short
            && (cand.trans > 0
                || !self.cfg.reuse_dead_base
                || !self.base_lid_prefix_ok(s, e, cand.pre_path, cand.pre_len))
    }

    /// True when a new path may send base LID `base` out of `port` at switch `sw`: the entry
    /// points there already, or its walk was dead when the fault came and no other new path
    /// of this repair has claimed it.
    pub(super) fn base_entry_usable(&self, sw: u32, base: Lid, port: u8) -> bool {
        let g = self.group;
        self.entry(sw, base) == port || (self.claimed[sw as usize] != g && self.dead_at_start(sw))
    }

    /// True when the base-LID entries a path from `s` needs along the first `len` hops of
    /// stored path `p` (NONE: the empty prefix) are usable (`base_entry_usable`).
    pub(super) fn base_lid_prefix_ok(&self, s: u32, e: u32, p: PathId, len: u32) -> bool {
        if p == NONE {
            return true;
        }
        let f = self.f;
        let base = f.port(f.end_ports[e as usize]).lid;
        let mut cur = s;
        self.paths.hops_of(p)[..len as usize].iter().all(|&c| {
            let ok = self.base_entry_usable(cur, base, self.ch_port[c.idx()]);
            cur = self.ch_dst_sw[c.idx()];
            ok
        })
    }

    /// Materialises a candidate, finds a LID offset and an SL for it and commits it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn try_candidate(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        cand: &Cand,
        new_sl: bool,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        if !self.materialise(s, e, cand, hops, vls) {
            return None;
        }
        let trans = vls.last().copied().unwrap_or(0);
        let mut req = std::mem::take(&mut self.cand_req);
        self.required_ports(s, e, hops, &mut req);
        let r = self.place(slot, s, e, trans, new_sl, hops, vls, &req);
        self.cand_req = req;
        r
    }

    /// Finds a LID offset and an SL for a materialised candidate that needs entries `req`,
    /// and commits it.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        trans: u8,
        new_sl: bool,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
        req: &[(u32, u8)],
    ) -> Option<u8> {
        let Some(off) = self.free_offset(e, req, trans) else {
            self.lid_short = true;
            return None;
        };
        let (sl, cons) = if let Some(fr) = &mut self.fresh {
            // The whole path on the first fresh VL whose dependencies stay acyclic with it.
            let chans: Vec<u32> = hops.iter().map(|c| c.0).collect();
            let layer = (0..fr.layers.len()).find(|&l| fr.layers.try_add(l, &chans))?;
            let vl = fr.base_vls + layer as u8;
            let real: Vec<u8> = vec![vl; hops.len()];
            let cons = self.sl_constraints(s, hops, &real);
            match self.pick_sl(&cons, new_sl) {
                Some(sl) => (sl, cons),
                None => {
                    if let Some(fr) = &mut self.fresh {
                        fr.layers.remove(layer, &chans);
                    }
                    return None;
                }
            }
        } else if trans == 0 {
            (0, Vec::new())
        } else {
            let cons = self.sl_constraints(s, hops, vls);
            (self.pick_sl(&cons, new_sl)?, cons)
        };
        let (h, v) = (std::mem::take(hops), std::mem::take(vls));
        self.commit(slot, s, e, off, sl, &h, &v, req, &cons);
        *hops = h;
        *vls = v;
        Some(trans)
    }

    /// Builds the joined path of `cand` into `hops`/`vls`; false when it revisits a switch.
    pub(super) fn materialise(
        &mut self,
        s: u32,
        e: u32,
        cand: &Cand,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> bool {
        let f = self.f;
        hops.clear();
        vls.clear();
        if cand.pre_path != NONE {
            hops.extend_from_slice(&self.paths.hops_of(cand.pre_path)[..cand.pre_len as usize]);
        }
        if cand.suf_off != NONE {
            let lid = f.port(f.end_ports[e as usize]).lid + cand.suf_off as Lid;
            if !self.walk(cand.c, e, lid, hops) {
                return false;
            }
        }
        // No switch twice.
        self.stamp_gen += 1;
        let g = self.stamp_gen;
        self.stamp[s as usize] = g;
        for &c in hops.iter() {
            let v = self.ch_dst_sw[c.idx()] as usize;
            if self.stamp[v] == g {
                return false;
            }
            self.stamp[v] = g;
        }
        let mut vl = 0u8;
        for i in 0..hops.len() {
            if i > 0 && self.illegal(hops[i - 1], hops[i]) {
                vl += 1;
            }
            vls.push(vl);
        }
        vl < self.cfg.vls
    }

    /// The switches of a path with the output port each needs for the destination, into `v`.
    pub(super) fn required_ports(
        &self,
        s: u32,
        e: u32,
        hops: &[ChannelId],
        v: &mut Vec<(u32, u8)>,
    ) {
        v.clear();
        let mut cur = s;
        for &c in hops {
            v.push((cur, self.ch_port[c.idx()]));
            cur = self.ch_dst_sw[c.idx()];
        }
        v.push((cur, self.end_swport[e as usize]));
    }

    /// The LID offset for a new path: the base LID (0) when `reuse_dead_base` allows it (no
    /// transition; every entry equal, or dead and unclaimed), else the lowest offset ≥ 1 whose
    /// entries along the path are unset or equal.
    pub(super) fn free_offset(&self, e: u32, req: &[(u32, u8)], trans: u8) -> Option<u32> {
        let base = self.f.port(self.f.end_ports[e as usize]).lid as u32;
        if self.cfg.reuse_dead_base
            && trans == 0
            && req
                .iter()
                .all(|&(sw, port)| self.base_entry_usable(sw, base as Lid, port))
        {
            return Some(0);
        }
        (1..(1u32 << self.lmc)).find(|&k| {
            let lid = (base + k) as Lid;
            req.iter().all(|&(sw, port)| {
                let cur = self.entry(sw, lid);
                cur == NO_PORT || cur == port
            })
        })
    }

    /// The (switch, in port, out port, VL) needs a path puts on its SL (at the source switch,
    /// for every input port a source end port uses).
    pub(super) fn sl_constraints(&self, s: u32, hops: &[ChannelId], vls: &[u8]) -> Vec<Need> {
        let f = self.f;
        let mut v = Vec::new();
        for (i, &c) in hops.iter().enumerate() {
            let sw = f.src_switch(c).map_or(NONE, |s| s.0);
            let out = self.ch_port[c.idx()];
            if i == 0 {
                for &e in &self.slot_ends[self.slot_of[s as usize] as usize] {
                    v.push(Need {
                        sw,
                        inp: self.end_swport[e as usize],
                        out,
                        vl: vls[0],
                    });
                }
            } else {
                let inp = f.port(f.channel_dst(hops[i - 1])).num;
                v.push(Need {
                    sw,
                    inp,
                    out,
                    vl: vls[i],
                });
            }
        }
        v
    }

    /// An SL ≥ 1 compatible with a path's needs; a new one only when `allow_new`.
    pub(super) fn pick_sl(&self, cons: &[Need], allow_new: bool) -> Option<u8> {
        if allow_new {
            self.colours.fresh()
        } else {
            self.colours.find(cons)
        }
    }

    /// How many first hops (with their VLs) a new path of source `s` shares with `prev`,
    /// the path it replaces (0 when there is none).
    ///
    /// Both on the base LID without a VL (SL 0, no fresh VLs), this needs no read of the old
    /// path (a cache miss for every repaired pair): a selected base-LID path follows the
    /// base-LID entries of its switches (live entries are never rewritten, and a dead one
    /// only for the pairs being repaired, whose new paths follow them again), so the old
    /// path is the walk the entries gave when this destination's repair began, and the new
    /// one the walk they give now; the two part at the first switch whose entry this repair
    /// rewrote (`rewritten`), the current pair's rewrites included.
    #[allow(clippy::too_many_arguments)]
    fn shared_with_old(
        &self,
        s: u32,
        prev: PathId,
        prev_lid_sl: Option<(u32, u8)>,
        off: u32,
        sl: u8,
        hops: &[ChannelId],
        vls: &[u8],
    ) -> usize {
        if prev >= DROPPED {
            return 0;
        }
        let explicit = || {
            let (ph, pv) = (self.paths.hops_of(prev), self.paths.vls_of(prev));
            hops.iter()
                .zip(vls)
                .zip(ph.iter().zip(pv))
                .take_while(|((a, x), (b, y))| a == b && x == y)
                .count()
        };
        if off != 0 || sl != 0 || prev_lid_sl != Some((0, 0)) || self.fresh.is_some() {
            return explicit();
        }
        let mut cur = s;
        let mut n = 0;
        for &c in hops {
            if self.rewritten[cur as usize] == self.group {
                break;
            }
            n += 1;
            cur = self.ch_dst_sw[c.idx()];
        }
        debug_assert_eq!(n, explicit(), "a base-LID path that left its walk");
        n
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn commit(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        off: u32,
        sl: u8,
        hops: &[ChannelId],
        vls: &[u8],
        req: &[(u32, u8)],
        cons: &[Need],
    ) {
        let f = self.f;
        let ne = f.end_ports.len();
        let base = f.port(f.end_ports[e as usize]).lid as u32;
        let lid = (base + off) as Lid;
        let mut rewrote = false;
        for &(sw, port) in req {
            let old = self.entry(sw, lid);
            if old != port {
                self.routing.lft_of_mut(SwitchIdx(sw))[lid as usize] = port;
                self.by_lid[lid as usize * f.num_switches() + sw as usize] = port;
                self.delta.lft_change(SwitchIdx(sw), lid, old, port);
                self.last.lft.push((sw, lid, old));
                rewrote = true;
                if off == 0 {
                    self.rewritten[sw as usize] = self.group;
                }
            }
            if off == 0 {
                self.claimed[sw as usize] = self.group;
            }
        }
        if sl != 0 {
            let (sl2vl, delta, log) = (
                &mut self.routing.sl2vl,
                &mut self.delta,
                &mut self.last.sl2vl,
            );
            self.colours.assign(sl, cons, |n| {
                let node = f.switches[n.sw as usize];
                let old = sl2vl.vl(node, n.inp, n.out, sl);
                if old != n.vl {
                    sl2vl.set(node, n.inp, n.out, sl, n.vl);
                    delta.sl2vl_change(SwitchIdx(n.sw), n.inp, n.out, sl, old, n.vl);
                    if log.last() != Some(&n.sw) {
                        log.push(n.sw);
                    }
                }
            });
        }
        self.lid_used[e as usize] |= 1u128 << off;
        let prev = self.cur_prev;
        debug_assert_eq!(prev, self.sel[slot as usize * ne + e as usize]);
        let prev_lid_sl = (prev < DROPPED).then(|| {
            let (o, l) = self.paths.off_sl(prev);
            (o as u32, l)
        });
        // The hops (and VLs) it shares with the path it replaces: that path's nodes and
        // prefix rows stand for those prefixes already.
        let shared = self.shared_with_old(s, prev, prev_lid_sl, off, sl, hops, vls);
        let id = self.paths.push(s, e, off as u8, sl, hops, vls);
        if off == 0 && sl == 0 && self.fresh.is_none() && !hops.is_empty() {
            self.own_path[s as usize] = (self.group, id);
        }
        // Base-LID rewrites change only walks that were dead when the group started (live
        // entries are never rewritten): those dead now, and the live ones that pass a
        // rewritten entry. The table forgets them, for the scans to walk again.
        if off == 0 {
            if rewrote {
                if let Some(st) = self.suf_cache.get(&(e, 0)) {
                    st.bump();
                }
            }
        } else if let Some(st) = self.suf_cache.get(&(e, off)) {
            // The suffix table of (e, off) changes only on the new path's switches: every set
            // entry of a virtual LID belongs to a committed path that reaches e, so walks from
            // elsewhere end where they ended before.
            let last = vls.last().copied().unwrap_or(0);
            let mut sw = s;
            for (i, &c) in hops.iter().enumerate() {
                let (h, tr) = ((hops.len() - i) as u32, last - vls[i]);
                st.set(
                    sw as usize,
                    Self::pack_suffix(h, tr, self.ch_class[c.idx()]),
                    false,
                );
                sw = self.ch_dst_sw[c.idx()];
            }
        }
        // Its prefixes go to the source's trie and tables before anything reads them
        // (`settle.rs`).
        self.defer_prefixes(s, id, shared as u32);
        self.sel[slot as usize * ne + e as usize] = id;
        if let PathSl::PerPair { stride, sl: table } = &mut self.routing.path_sl {
            // A pair that keeps its (DLID, SL) has its entries already: skip the writes, a
            // cache miss each in a table of every (source, LID).
            let same = prev_lid_sl == Some((off, sl));
            for &src in &self.slot_ends[slot as usize] {
                let at = src as usize * *stride + lid as usize;
                debug_assert!(!same || table[at] == sl, "path SL table out of step");
                if !same {
                    table[at] = sl;
                    self.delta.source_change(src, e, lid, sl);
                    self.last.sources.push((src, e));
                }
            }
        }
    }
}
