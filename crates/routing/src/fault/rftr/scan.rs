//! RFTR's candidate search: the best join for a pair by one scan over join switches in
//! order of the distance bounds, the full candidate list (for the unit test and the
//! fallbacks), the near-failure deviation and the tie that keeps the base LID.

use super::*;

/// Up to this many levels past the turn rule's distance, `best_candidate` reads the distance
/// rows once per level instead of collecting and sorting the switches of every level.
const PASSES_PER_LEVEL: u32 = 4;

thread_local! {
    /// Scratch of `best_candidate`: `level << 16 | join switch` of the switches to scan.
    static SCAN_ORDER: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a scan for (s, e) looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// The best candidate: the first in the specification's order.
    Best,
    /// The best candidate without a transition; when there is none, any candidate within
    /// the VL budget (the scan of every switch stops at the first). Without virtual LIDs no
    /// candidate with a transition can be placed: the repair only reports that one existed.
    BestOrAnyTransition,
    /// Any candidate within the VL budget: there is none without a transition.
    AnyTransition,
    /// The best candidate, knowing there is none without a transition.
    BestWithTransition,
}

/// The suffix tables of one end's LID offsets in use, the first eight looked up once: a scan
/// reads them for hundreds of join switches.
struct SuffixTables<'a> {
    first: [Option<&'a SuffixTable>; 8],
    all: &'a FxHashMap<(u32, u32), SuffixTable>,
    e: u32,
}

impl<'a> SuffixTables<'a> {
    fn get(&self, k: u32) -> &'a SuffixTable {
        match self.first.get(k as usize) {
            Some(&Some(st)) => st,
            _ => &self.all[&(self.e, k)],
        }
    }
}

impl<'f> Rftr<'f> {
    /// The suffix tables of end `e` ([`SuffixTables`]).
    fn suffix_tables(&self, e: u32) -> SuffixTables<'_> {
        let mut first = [None; 8];
        for (k, slot) in first.iter_mut().enumerate() {
            if self.lid_used[e as usize] >> k & 1 == 1 {
                *slot = self.suf_cache.get(&(e, k as u32));
            }
        }
        SuffixTables {
            first,
            all: &self.suf_cache,
            e,
        }
    }

    /// The best candidate for (s, t = switch of e) by one scan over join switches per LID
    /// offset in use, or None when none fits the VL budget. Same choice as sorting every
    /// candidate by (transitions, hops, join switch, offset, prefix path). `bound`: a lower
    /// bound on the hops of every candidate, when known, to stop early. `want`: see [`Want`].
    pub(super) fn best_candidate(
        &self,
        s: u32,
        e: u32,
        bound: Option<u32>,
        want: Want,
    ) -> Option<Cand> {
        debug_assert!(
            self.pending.clean(s),
            "a source's prefixes read before its flush"
        );
        let m = self.ncls;
        let m1 = m + 1;
        let t = self.end_sw[e as usize] as usize;
        let pre = &self.pre_tab[s as usize];
        // Joining at the destination's switch itself (no suffix; no other candidate joins
        // there, so no tie with one).
        let mut best_rank = (pre[t * m1 + m] & HI) | t as u64;
        let mut best_k = NONE;
        let mut best_b = m;
        // A candidate joining at `c` has at least sdist(s, c) + sdist(c, t) hops (its prefix
        // and suffix are paths of the fabric), and a transition-free one at least lb(c) =
        // legal(s, c) + legal(c, t) and at least legal(s, t) (it obeys the turn rule:
        // `LegalDistances`; lb alone can be lower, where the two shortest legal paths meet
        // in a forbidden turn). So the scan goes level by level, ascending within each:
        // first the switches on fault-free shortest routes (`bound`, from `sdist`), then by
        // max(lb, legal(s, t)) up to the best's hops. Before a level, a transition-free best
        // of fewer hops ends the scan; within one, once the best is transition-free with the
        // level's hops, only a lower join switch can beat it. Every switch is scanned when
        // the best needs a transition or there is no bound.
        let tables = self.suffix_tables(e);
        let table = |k: u32| tables.get(k);
        let mut visit = |c: usize, best_rank: &mut u64| {
            let mut bits = self.lid_used[e as usize];
            while bits != 0 {
                let k = bits.trailing_zeros();
                bits &= bits - 1;
                let sv = self.suffix_in(table(k), e, k, c as u32);
                if sv == NO_SUFFIX {
                    continue;
                }
                let b = (sv & 0xFF) as usize;
                let key = pre[c * m1 + b] + (sv & !0xFF);
                let rank = (key & HI) | c as u64;
                if rank < *best_rank {
                    *best_rank = rank;
                    best_k = k;
                    best_b = b;
                }
            }
        };
        let mut done = false;
        // Every transition-free candidate was among the levels scanned (or there is none).
        let mut levels_complete = matches!(want, Want::AnyTransition | Want::BestWithTransition);
        let any_transition = matches!(want, Want::BestOrAnyTransition | Want::AnyTransition);
        if let (Some(d0), false) = (bound, levels_complete) {
            let floor = (d0 as u64) << 32;
            within(
                self.rows(s, t as u32, false),
                d0,
                d0,
                usize::MAX,
                &mut |c, _| {
                    if best_rank & HI == floor && c as u64 >= best_rank & 0xFFFF_FFFF {
                        return true;
                    }
                    visit(c, &mut best_rank);
                    false
                },
            );
            done = best_rank & HI <= floor;
            if let (false, Some(l)) = (done, self.legal_distances()) {
                let last = 2 * l.top as u32;
                let first = self
                    .legal_distance(s, t as u32)
                    .map_or(d0 + 1, |x| x.max(d0 + 1));
                let cap = if best_rank >> 48 == 0 {
                    (((best_rank >> 32) & 0xFFFF) as u32).min(last)
                } else {
                    last
                };
                if cap.saturating_sub(first) < PASSES_PER_LEVEL {
                    // A few levels: one pass over the two rows per level, switches ascending
                    // within each (the order the sort below gives), nothing collected.
                    let rows = self.rows(s, t as u32, true);
                    for level in first..=cap {
                        let floor = (level as u64) << 32;
                        if best_rank & HI < floor {
                            break;
                        }
                        // A transition-free candidate obeys the turn rule, so it is at least
                        // the turn rule's distance long, wherever it joins: a switch whose
                        // bound is lower belongs to the first level.
                        let lo = if level == first { 0 } else { level };
                        within(rows, lo, level, usize::MAX, &mut |c, _| {
                            if best_rank & HI == floor && c as u64 >= best_rank & 0xFFFF_FFFF {
                                return true;
                            }
                            visit(c, &mut best_rank);
                            false
                        });
                    }
                } else {
                    SCAN_ORDER.with(|order| {
                        let mut order = order.borrow_mut();
                        order.clear();
                        within(
                            self.rows(s, t as u32, true),
                            0,
                            cap,
                            usize::MAX,
                            &mut |c, lb| {
                                order.push(lb.max(first) << 16 | c as u32);
                                false
                            },
                        );
                        order.sort_unstable();
                        for &x in order.iter() {
                            let (level, c) = ((x >> 16) as u64, (x & 0xFFFF) as u64);
                            if best_rank & HI < level << 32 {
                                break;
                            }
                            if best_rank & HI == level << 32 && c >= best_rank & 0xFFFF_FFFF {
                                continue;
                            }
                            visit(c as usize, &mut best_rank);
                        }
                    });
                }
                // Transition-free and no longer than every level seen, or every level seen.
                done = best_rank & HI <= (cap as u64) << 32
                    || best_rank >> 48 == 0 && cap == last && l.top < FAR - 1;
                levels_complete = cap == last && l.top < FAR - 1;
            }
        }
        let vls = self.cfg.vls as u64;
        if !done && any_transition && levels_complete && best_rank >> 48 < vls {
            // A candidate with a transition is at hand already.
            done = true;
        }
        if !done && any_transition && levels_complete {
            // Suffixes computed as read: the scan usually stops after a few switches.
            for c in 0..self.f.num_switches() {
                visit(c, &mut best_rank);
                if best_rank >> 48 < vls {
                    break;
                }
            }
            done = true;
        }
        let best_wanted = matches!(want, Want::Best | Want::BestWithTransition);
        if let (false, true, true, Some(d0)) = (done, levels_complete, best_wanted, bound) {
            // No candidate is transition-free, so one with a single transition is the best
            // there can be, and a candidate joining at `c` is at least sdist(s, c) + sdist(c,
            // t) long: the switches go by that sum, ascending, until the best has one
            // transition and fewer hops than the level (at the level's hops only a lower
            // join switch can beat it).
            let rows = self.rows(s, t as u32, false);
            for level in d0..=2 * self.sdist_top as u32 {
                let floor = 1u64 << 48 | (level as u64) << 32;
                if best_rank & HI < floor {
                    break;
                }
                within(rows, level, level, usize::MAX, &mut |c, _| {
                    if best_rank & HI == floor && c as u64 >= best_rank & 0xFFFF_FFFF {
                        return true;
                    }
                    visit(c, &mut best_rank);
                    false
                });
            }
            done = true;
        }
        if !done {
            // Every switch, with every table walked in one go first (the candidates of one
            // switch tie only among themselves, offsets ascending, in any order of switches).
            let mut bits = self.lid_used[e as usize];
            while bits != 0 {
                let k = bits.trailing_zeros();
                bits &= bits - 1;
                self.complete_suffixes(e, k);
            }
            for c in 0..self.f.num_switches() {
                visit(c, &mut best_rank);
            }
        }
        let trans = best_rank >> 48;
        if best_rank == u64::MAX || trans >= self.cfg.vls as u64 {
            return None;
        }
        let c = (best_rank & 0xFFFF_FFFF) as u32;
        let pk = pre[c as usize * m1 + best_b];
        Some(Cand {
            trans: trans as u8,
            hops: ((best_rank >> 32) & 0xFFFF) as u32,
            c,
            pre_path: pk as u32,
            pre_len: ((pk >> 32) & 0xFFFF) as u32,
            suf_off: best_k,
        })
    }

    /// The turn-rule distances (None where they are not kept).
    pub(super) fn legal_distances(&self) -> Option<&LegalDistances> {
        self.legal.as_ref().as_ref()
    }

    /// Hops of the shortest path from switch `a` to switch `b` that obeys the turn rule,
    /// when kept and finite. Read from `b`'s row of `to`: callers ask for one destination
    /// switch from many sources, and a row is contiguous where `from`'s column is not.
    #[inline]
    pub(super) fn legal_distance(&self, a: u32, b: u32) -> Option<u32> {
        let ns = self.f.num_switches();
        let l = self.legal_distances()?;
        let d = l.to[b as usize * ns + a as usize];
        debug_assert_eq!(d, l.from[a as usize * ns + b as usize]);
        match d {
            FAR => None,
            d => Some(d as u32),
        }
    }

    /// The rows of the distance matrices from `s` and to `t`: the turn rule's with `legal`
    /// (when kept), else the fault-free fabric's (empty when not kept).
    pub(super) fn rows(&self, s: u32, t: u32, legal: bool) -> (&[u8], &[u8]) {
        let ns = self.f.num_switches();
        let (from, to) = match self.legal_distances() {
            Some(l) if legal => (&l.from[..], &l.to[..]),
            _ => (&self.sdist[..], &self.sdist[..]),
        };
        if from.is_empty() {
            return (&[], &[]);
        }
        (
            &from[s as usize * ns..(s as usize + 1) * ns],
            &to[t as usize * ns..(t as usize + 1) * ns],
        )
    }

    /// Fault-free hops between switches `a` and `b`, when known. Read from `b`'s row (the
    /// links are full duplex, so the matrix is symmetric): callers ask for one destination
    /// switch from many sources.
    #[inline]
    pub(super) fn static_distance(&self, a: u32, b: u32) -> Option<u32> {
        let ns = self.f.num_switches();
        debug_assert_eq!(
            self.sdist.get(b as usize * ns + a as usize),
            self.sdist.get(a as usize * ns + b as usize)
        );
        match self.sdist.get(b as usize * ns + a as usize) {
            Some(&d) if d != FAR => Some(d as u32),
            _ => None,
        }
    }

    /// The best candidate for (s, e) (`best_candidate`), bounded below by the fault-free
    /// distance (a candidate's prefix and suffix are at least the fault-free distances to and
    /// from its join switch), so the scan ends at the first transition-free candidate that
    /// reaches it.
    pub(super) fn scan_best(&self, s: u32, e: u32, want: Want) -> Option<Cand> {
        let d0 = self.static_distance(s, self.end_sw[e as usize]);
        self.best_candidate(s, e, d0, want)
    }

    /// Every candidate join for (source switch `s`, end `e`) within the VL budget, from the
    /// per-input-channel prefix table, unsorted ([`Rftr::sort_candidates`] puts them in the
    /// order the specification ranks them in). The fast scan ([`Rftr::best_candidate`])
    /// must find the first of them.
    #[cfg(test)]
    pub(super) fn candidates(&mut self, s: u32, e: u32) -> Vec<Cand> {
        let mut cands = Vec::new();
        self.candidates_into(s, e, &mut cands);
        cands
    }

    /// [`Rftr::candidates`] into `out` (cleared first).
    pub(super) fn candidates_into(&mut self, s: u32, e: u32, out: &mut Vec<Cand>) {
        out.clear();
        self.each_candidate(s, e, |_, c| {
            out.push(*c);
            false
        });
    }

    /// A candidate buffer from the pool (empty): the fallback's lists are reused from pair
    /// to pair. Give it back with [`Rftr::give_cands`].
    pub(super) fn take_cands(&mut self) -> Vec<Cand> {
        let mut v = self.cand_bufs.pop().unwrap_or_default();
        v.clear();
        v
    }

    pub(super) fn give_cands(&mut self, v: Vec<Cand>) {
        self.cand_bufs.push(v);
    }

    /// Calls `visit` on the candidates of [`Rftr::candidates`] in the order
    /// [`Rftr::sort_candidates`] gives them, until it returns true; whether it did. The list
    /// is built only as far as it is read: a candidate joining at `c` has at least sdist(s,
    /// c) + sdist(c, t) hops, so per number of transitions the join switches go by that sum,
    /// and a candidate found is read once no switch of a later sum can rank before it.
    /// Without the fault-free distances, the whole list, sorted. `min_tier`: no candidate
    /// has fewer transitions. The caches stay in place while `visit` runs (it may commit a
    /// path).
    pub(super) fn each_candidate_in_order(
        &mut self,
        s: u32,
        e: u32,
        min_tier: u8,
        mut visit: impl FnMut(&mut Self, &Cand) -> bool,
    ) -> bool {
        let t = self.end_sw[e as usize];
        // Distances of 126 hops or more may be cut off (`FAR`): the whole list then.
        let d0 = self
            .static_distance(s, t)
            .filter(|_| self.sdist_top < FAR - 1);
        let Some(d0) = d0 else {
            let mut all = self.take_cands();
            self.candidates_into(s, e, &mut all);
            Self::sort_candidates(&mut all);
            let found = all.iter().any(|c| visit(self, c));
            self.give_cands(all);
            return found;
        };
        self.fill_prefix_map(s);
        let mut sc = self.order_scratch.pop().unwrap_or_default();
        sc.members.clear();
        sc.pool.clear();
        sc.more.clear();
        sc.heap.clear();
        let found = self.read_in_order(s, e, t, d0, min_tier, &mut sc, &mut visit);
        self.order_scratch.push(sc);
        found
    }

    /// The levels of [`Rftr::each_candidate_in_order`] from `d0` on, in buffers `sc`.
    #[allow(clippy::too_many_arguments)]
    fn read_in_order(
        &mut self,
        s: u32,
        e: u32,
        t: u32,
        d0: u32,
        min_tier: u8,
        sc: &mut OrderScratch,
        visit: &mut impl FnMut(&mut Self, &Cand) -> bool,
    ) -> bool {
        use std::cmp::Reverse;
        let last = 2 * self.sdist_top as u32;
        // Candidates of the fewest transitions go through the heap as the levels come;
        // the others wait, and are read sorted once every level is seen.
        let OrderScratch {
            members,
            pool,
            more,
            heap,
        } = sc;
        for level in d0..=last + 1 {
            if level <= last {
                members.clear();
                within(
                    self.rows(s, t, false),
                    level,
                    level,
                    usize::MAX,
                    &mut |c, _| {
                        members.push(c as u32);
                        false
                    },
                );
                let from = pool.len();
                self.candidates_at(s, e, members, min_tier, pool);
                let mut i = from;
                while i < pool.len() {
                    if pool[i].trans == min_tier {
                        heap.push(Reverse((Self::rank_key(&pool[i]), i as u32)));
                        i += 1;
                    } else {
                        more.push(pool.swap_remove(i));
                    }
                }
            }
            while let Some(&Reverse((key, i))) = heap.peek() {
                if level <= last && key.1 > level {
                    break;
                }
                heap.pop();
                let cand = pool[i as usize];
                if visit(self, &cand) {
                    return true;
                }
            }
        }
        Self::sort_candidates(more);
        more.iter().any(|c| visit(self, c))
    }

    /// Appends to `out` the candidates for (s, e) joining at the switches `at` with at least
    /// `min_tier` transitions: the empty prefix where `c` is the source, else the best prefix
    /// per input channel into `c`, joined to the suffix of every LID offset in use (or none
    /// at the destination's switch). Needs the prefix map (`fill_prefix_map`).
    fn candidates_at(&self, s: u32, e: u32, at: &[u32], min_tier: u8, out: &mut Vec<Cand>) {
        debug_assert!(
            self.pending.clean(s),
            "a source's prefixes read before its flush"
        );
        let t = self.end_sw[e as usize];
        let max_trans = self.cfg.vls - 1;
        let pre = &self.pre_cache[&s];
        let tables = self.suffix_tables(e);
        let table = |k: u32| tables.get(k);
        for &c in at {
            let here = (c == s).then_some((NONE, (0u8, 0u32, NONE, 0u32)));
            let into = self.f.switch_links(SwitchIdx(c)).iter().filter_map(|o| {
                let ch = o.reverse().0;
                let b = pre.best[ch as usize];
                (b.1 != 0).then_some((ch, b))
            });
            for (inch, (vl, h, p, len)) in here.into_iter().chain(into) {
                if c == t {
                    if vl >= min_tier {
                        out.push(Cand {
                            trans: vl,
                            hops: h,
                            c,
                            pre_path: p,
                            pre_len: len,
                            suf_off: NONE,
                        });
                    }
                    continue;
                }
                let mut bits = self.lid_used[e as usize];
                while bits != 0 {
                    let k = bits.trailing_zeros();
                    bits &= bits - 1;
                    let Some((sh, st, first)) = unpack_suffix(self.suffix_in(table(k), e, k, c))
                    else {
                        continue;
                    };
                    let ill = if inch != NONE {
                        self.pen_class(self.ch_class[inch as usize], first)
                    } else {
                        0
                    };
                    let trans = vl + ill + st;
                    if trans > max_trans || trans < min_tier {
                        continue;
                    }
                    out.push(Cand {
                        trans,
                        hops: h + sh,
                        c,
                        pre_path: p,
                        pre_len: len,
                        suf_off: k,
                    });
                }
            }
        }
    }

    /// Calls `visit` on the candidates of [`Rftr::candidates`] (join switches ascending,
    /// built 64 switches at a time), until it returns true; whether it did. Suffixes are
    /// computed as they are read.
    pub(super) fn each_candidate(
        &mut self,
        s: u32,
        e: u32,
        mut visit: impl FnMut(&mut Self, &Cand) -> bool,
    ) -> bool {
        self.fill_prefix_map(s);
        let ns = self.f.num_switches() as u32;
        let mut buf = Vec::new();
        let mut at = [0u32; 64];
        for lo in (0..ns).step_by(64) {
            let n = (ns - lo).min(64) as usize;
            for (i, c) in at[..n].iter_mut().enumerate() {
                *c = lo + i as u32;
            }
            buf.clear();
            self.candidates_at(s, e, &at[..n], 0, &mut buf);
            if buf.iter().any(|c| visit(self, c)) {
                return true;
            }
        }
        false
    }

    /// Builds source `s`'s per-input-channel prefix map for this fault, unless there.
    fn fill_prefix_map(&mut self, s: u32) {
        debug_assert!(
            self.pending.clean(s),
            "a source's prefixes read before its flush"
        );
        if !self.pre_cache.contains_key(&s) {
            let m = self.prefixes(s);
            self.pre_cache.insert(s, m);
        }
    }

    /// Sorts candidates in the order the specification ranks them.
    pub(super) fn sort_candidates(cands: &mut [Cand]) {
        cands.sort_unstable_by_key(Self::rank_key);
    }

    /// The order of [`Rftr::sort_candidates`] (no two candidates of a list share a key: the
    /// last hop of a prefix is its input channel).
    pub(super) fn rank_key(c: &Cand) -> RankKey {
        (c.trans, c.hops, c.c, c.suf_off, c.pre_path, c.pre_len)
    }

    /// A transition-free candidate of `hops` hops that follows the pair's own broken path as
    /// far as it can: its first `k` hops (k = the live hops before the dead one, then one
    /// fewer), then a hop out of the switch reached that one of the source's stored paths
    /// takes after the same `k` hops, then the base-LID walk from there (or the
    /// destination's switch itself). Tried, lowest next switch first, before the
    /// specification's tie-break (lowest join switch), which on a tree often rewrites the
    /// source's own first hop: the entry rewritten here is the one next to the failure, the
    /// other sources behind that switch find their walk live again, and the repair writes
    /// one entry where it would write one per source.
    pub(super) fn late_deviation(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        hops: u32,
        buf: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
    ) -> Option<u8> {
        let ne = self.f.end_ports.len();
        let p = self.cur_prev;
        debug_assert_eq!(p, self.sel[slot as usize * ne + e as usize]);
        if p >= DROPPED {
            return None;
        }
        let live = self.paths.live_prefix(p);
        // Scratch kept across calls (this runs once per pair the keep check did not settle).
        let (mut own, mut cands) = std::mem::take(&mut self.deviation_scratch);
        own.clear();
        own.extend_from_slice(&self.paths.hops_of(p)[..live]);
        let t = self.end_sw[e as usize];
        let mut done = None;
        for k in (live.saturating_sub(1)..=live).rev() {
            let k32 = k as u32;
            if k32 + 1 > hops {
                continue;
            }
            let x = match k {
                0 => s as usize,
                _ => self.ch_dst_sw[own[k - 1].idx()] as usize,
            };
            // Every path deviating at `x` after `k` hops is at least `k` plus the fault-free
            // distance from `x` to `t` long (the next switch is one hop nearer at best).
            if self
                .static_distance(x as u32, t)
                .is_some_and(|d| k32 + d > hops)
            {
                continue;
            }
            let tr = &self.tries[s as usize];
            // The node of the first `k` hops (none at the source: the trie's first hops).
            let n = if k == 0 {
                NONE
            } else {
                let Some(&n) = tr.indexed_ending_at(x).iter().find(|&&n| {
                    let m = tr.nodes[n as usize].minpath;
                    tr.nodes[n as usize].depth as u32 == k32
                        && self.paths.hops_of(m).get(..k) == Some(&own[..k])
                }) else {
                    continue;
                };
                n
            };
            cands.clear();
            for m in tr.children(n) {
                let nd = tr.nodes[m as usize];
                debug_assert_eq!(nd.parent, n, "subtree_end skips to a child");
                if nd.vl == 0 && !self.ch_dead[nd.ch as usize] {
                    let ch = nd.ch as usize;
                    let y = self.ch_dst_sw[ch];
                    let path = nd.minpath;
                    let fits = if y == t {
                        k32 + 1 == hops
                    } else {
                        matches!(
                            unpack_suffix(self.suffix(e, 0, y)),
                            Some((h, 0, cls)) if k32 + 1 + h == hops
                                && self.pen_class(self.ch_class[ch], cls) == 0
                        )
                    };
                    if fits {
                        cands.push(Cand {
                            trans: 0,
                            hops,
                            c: y,
                            pre_path: path,
                            pre_len: k32 + 1,
                            suf_off: if y == t { NONE } else { 0 },
                        });
                    }
                }
            }
            cands.sort_by_key(|c| (c.c, c.pre_path));
            done = cands
                .iter()
                .find_map(|cand| self.try_candidate(slot, s, e, cand, false, buf, vls));
            if done.is_some() {
                break;
            }
        }
        self.deviation_scratch = (own, cands);
        done
    }

    /// A transition-free candidate as short as `best` that can keep the base LID: a join into
    /// the base-LID walk (offset 0) of `e`, or at `e`'s own switch, whose prefix passes
    /// `base_lid_prefix_ok`; lowest join switch first. None when `best` is such a candidate
    /// already or there is none.
    pub(super) fn base_lid_tie(&self, s: u32, e: u32, best: &Cand) -> Option<Cand> {
        debug_assert!(
            self.pending.clean(s),
            "a source's prefixes read before its flush"
        );
        if matches!(best.suf_off, 0 | NONE)
            && self.base_lid_prefix_ok(s, e, best.pre_path, best.pre_len)
        {
            return None;
        }
        let m = self.ncls;
        let m1 = m + 1;
        let t = self.end_sw[e as usize] as usize;
        let pre = &self.pre_tab[s as usize];
        let n = self.f.num_switches();
        let sp = &self.suf_cache[&(e, 0)];
        let want = (best.hops as u64) << 32;
        let tie = |c: usize, col: usize, sv: u64| -> Option<Cand> {
            let pk = pre[c * m1 + col];
            if (pk + (sv & !0xFF)) & HI != want {
                return None;
            }
            let (p, len) = (pk as u32, ((pk >> 32) & 0xFFFF) as u32);
            self.base_lid_prefix_ok(s, e, p, len).then_some(Cand {
                trans: 0,
                hops: best.hops,
                c: c as u32,
                pre_path: p,
                pre_len: len,
                suf_off: if c == t { NONE } else { 0 },
            })
        };
        let look = |c: usize| {
            if c == t {
                return tie(t, m, 0);
            }
            match self.suffix_in(sp, e, 0, c as u32) {
                NO_SUFFIX => None,
                sv => tie(c, (sv & 0xFF) as usize, sv),
            }
        };
        // Every tie joins at a switch whose fault-free distances from the source and to
        // the destination add up to at most the best's hops (`best_candidate`).
        let d0 = self.static_distance(s, t as u32).unwrap_or(u32::MAX);
        let legal = best.hops > d0;
        let (top, first) = match self.legal_distances() {
            Some(l) if legal => (l.top, self.legal_distance(s, t as u32).unwrap_or(0)),
            _ => (self.sdist_top, d0),
        };
        let rows = self.rows(s, t as u32, legal);
        if rows.0.is_empty() || top >= FAR - 1 {
            return (0..n).find_map(look);
        }
        let mut found = None;
        within(rows, first, best.hops, n, &mut |c, _| {
            found = look(c);
            found.is_some()
        });
        found
    }
}

/// Buffers of the ordered reading ([`Rftr::each_candidate_in_order`]), reused from pair to
/// pair: the join switches of one level, the candidates read so far (those of the fewest
/// transitions ranked in the heap), and the others.
#[derive(Clone, Default)]
pub(super) struct OrderScratch {
    members: Vec<u32>,
    pool: Vec<Cand>,
    more: Vec<Cand>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(RankKey, u32)>>,
}

/// A candidate's place in the specification's order ([`Rftr::rank_key`]).
pub(super) type RankKey = (u8, u32, u32, u32, u32, u32);
