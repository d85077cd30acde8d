//! RFTR's suffix side: the lazy suffix tables per (destination, LID offset), filled by
//! walking the LFTs, the group of repairs toward one destination, and the search for the
//! shortest live walks that obey the turn rule toward its switch.

use super::*;
use fabric::SwitchIdx;

/// What a walk finds at the next switch (`Rftr::walk_twice`).
pub(super) enum Ahead {
    /// Not known: the walk goes on through it.
    Unknown,
    /// On this walk already: a loop.
    OnWalk,
    /// Its packed suffix (or `NO_SUFFIX`), and whether that is tainted.
    Known(u64, bool),
}

impl<'f> Rftr<'f> {
    /// Starts repairing pairs toward end `e`, with a lazy base-LID suffix table.
    pub(super) fn start_group(&mut self, e: u32) {
        self.group += 1;
        self.group_e = e;
        if !self.suf_cache.contains_key(&(e, 0)) {
            let v = self.lazy_suffixes();
            self.suf_cache.insert((e, 0), v);
        }
    }

    /// Whether switch `sw`'s base-LID walk toward the group's end was dead when the group
    /// started. Only entries whose walks were dead are rewritten, so a walk was dead then
    /// when it is dead now, or when it passes a rewritten entry: the walk then was the same
    /// up to that entry, and dead from there (the table's taint, `SuffixTable::tainted`).
    pub(super) fn dead_at_start(&self, sw: u32) -> bool {
        let e = self.group_e;
        if sw == self.end_sw[e as usize] {
            return false;
        }
        let st = &self.suf_cache[&(e, 0)];
        self.suffix_in(st, e, 0, sw) == NO_SUFFIX || st.tainted(sw as usize)
    }

    /// Done with end `e` (pairs come destination by destination, and `next` is the next
    /// one): its suffix tables go back to the pool, and so does the search toward its switch
    /// (`no_shorter_legal_walk`) unless the next destination hangs off the same one. A fault that moves
    /// thousands of destinations then needs a handful of tables, not one each of fresh
    /// memory.
    pub(super) fn end_group(&mut self, e: u32, next: Option<u32>) {
        let mut bits = self.lid_used[e as usize];
        while bits != 0 {
            let k = bits.trailing_zeros();
            bits &= bits - 1;
            if let Some(t) = self.suf_cache.remove(&(e, k)) {
                self.suf_pool.push(t);
            }
        }
        let t = self.end_sw[e as usize];
        if next.map(|n| self.end_sw[n as usize]) != Some(t) {
            if let Some(d) = self.dist.remove(&t) {
                self.dist_pool.push(d);
            }
        }
    }

    /// A suffix table with every entry unknown (from the pool), filled as scans ask
    /// (`suffix`, `complete_suffixes`).
    pub(super) fn lazy_suffixes(&mut self) -> SuffixTable {
        let mut st = self.suf_pool.pop().unwrap_or_default();
        st.reset(self.f.num_switches());
        st
    }

    /// The packed suffix of switch `c` toward (`e`, offset `k`), computed now if unknown.
    #[inline]
    pub(super) fn suffix(&self, e: u32, k: u32, c: u32) -> u64 {
        self.suffix_in(&self.suf_cache[&(e, k)], e, k, c)
    }

    /// `suffix` with the table of (`e`, `k`) at hand.
    #[inline]
    pub(super) fn suffix_in(&self, st: &SuffixTable, e: u32, k: u32, c: u32) -> u64 {
        // A base-LID walk live when the fault came is the same through the whole repair
        // (`walks.rs`), and its entry is read from the kept walks directly: a scan reads
        // a few dozen switches per destination, each once, and filling the table first
        // only added a write and a cache line per switch.
        if k == 0 {
            if let Some(v) = self.kept_walk(e, c) {
                debug_assert_eq!(Some(v), self.walked_suffix(e, c), "a stale kept walk");
                return v;
            }
        }
        let v = st.get(c as usize);
        if v != UNKNOWN {
            return v;
        }
        self.fill_suffixes(e, k, st, std::iter::once(c));
        st.get(c as usize)
    }

    /// Computes every unknown entry of the suffix table of (`e`, `k`), for the scans that
    /// read all of it.
    pub(super) fn complete_suffixes(&self, e: u32, k: u32) {
        let st = &self.suf_cache[&(e, k)];
        if !st.is_full() {
            self.fill_suffixes(e, k, st, 0..st.len() as u32);
            st.mark_full();
        }
    }

    /// Fills the unknown entries of the switches `starts` (and of the switches their walks
    /// pass) by following the LFT entries over live channels until the destination's switch,
    /// a switch already known, a loop, or a hop to nowhere or to an end port (`walk_twice`).
    pub(super) fn fill_suffixes(
        &self,
        e: u32,
        off: u32,
        st: &SuffixTable,
        starts: impl Iterator<Item = u32>,
    ) {
        let f = self.f;
        let ns = f.num_switches();
        let lid = (f.port(f.end_ports[e as usize]).lid + off as Lid) as usize;
        let t = self.end_sw[e as usize];
        let col: &[u8] = self.by_lid.get(lid * ns..(lid + 1) * ns).unwrap_or(&[]);
        // The base-LID table of the group's end marks walks that pass a rewritten entry.
        let taints = off == 0 && e == self.group_e;
        let rewritten = |sw: u32| taints && self.rewritten[sw as usize] == self.group;
        let kept = off == 0;
        for s0 in starts {
            if s0 == t {
                st.set(t as usize, NO_SUFFIX, false);
                continue;
            }
            if st.get(s0 as usize) != UNKNOWN {
                continue;
            }
            // A base-LID walk live when the fault came is the same now (`walks.rs`).
            if let Some(v) = kept.then(|| self.kept_walk(e, s0)).flatten() {
                debug_assert_eq!(
                    Some(v),
                    self.walked_suffix(e, s0),
                    "a kept walk out of date"
                );
                st.set(s0 as usize, v, false);
                continue;
            }
            let look = |next: u32| {
                if let Some(v) = kept.then(|| self.kept_walk(e, next)).flatten() {
                    return Ahead::Known(v, false);
                }
                match st.get(next as usize) {
                    UNKNOWN => Ahead::Unknown,
                    ON_WALK => Ahead::OnWalk,
                    v => Ahead::Known(v, st.tainted(next as usize)),
                }
            };
            self.walk_twice(
                e,
                s0,
                col,
                look,
                |sw| st.set(sw as usize, ON_WALK, false),
                &rewritten,
                |sw, v, tainted| match v {
                    Some(v) => st.set(sw as usize, v, tainted),
                    None => st.set_dead(sw as usize),
                },
            );
        }
    }

    /// One walk from `s0` toward end `e` over the LFT column `col`, in two passes so that
    /// nothing is allocated: the first follows the entries until the end's switch, a switch
    /// whose suffix `look` knows, a loop (a switch `look` finds on this walk) or a hop to
    /// nowhere, marking each switch it enters (`mark_on`) and counting hops and
    /// transitions; the second walks the same hops again and `write`s each switch's packed
    /// suffix (None: the walk does not arrive), tainted when the walk passes a switch
    /// `rewritten` says was rewritten, or joins a tainted one. Shared by the suffix tables
    /// and the kept walks (`walks.rs`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_twice(
        &self,
        e: u32,
        s0: u32,
        col: &[u8],
        mut look: impl FnMut(u32) -> Ahead,
        mut mark_on: impl FnMut(u32),
        rewritten: &impl Fn(u32) -> bool,
        mut write: impl FnMut(u32, Option<u64>, bool),
    ) {
        let t = self.end_sw[e as usize];
        let entry = |sw: u32| col.get(sw as usize).copied().unwrap_or(NO_PORT);
        let arrives = entry(t) == self.end_swport[e as usize];
        mark_on(s0);
        // Pass 1: hops, transitions between them, and what follows the last one as
        // (hops, transitions, class of its first channel) from the switch it leads to, or
        // None when that switch's walk does not arrive.
        let mut n = 0u32;
        let mut ill = 0u8;
        let mut last_cls = None;
        let mut tail: Option<(u32, u8, Option<u8>)> = None;
        // Hops before the last rewritten switch of the walk (+1), and whether what follows
        // it is tainted.
        let mut rewritten_upto = 0u32;
        let mut tail_tainted = false;
        let mut sw = s0;
        // True while the walk ends at `sw` for want of a hop to a switch.
        let mut stuck = true;
        while let Hop::Switch { sw: next, ch, .. } = self.plane.hop(sw as usize, entry(sw)) {
            let cls = self.ch_class[ch.idx()];
            if let Some(p) = last_cls {
                ill += self.pen_class(p, cls);
            }
            last_cls = Some(cls);
            if rewritten(sw) {
                rewritten_upto = n + 1;
            }
            n += 1;
            if next == t {
                if arrives {
                    tail = Some((0, 0, None));
                }
                stuck = false;
                break;
            }
            match look(next) {
                Ahead::Unknown => {
                    mark_on(next);
                    sw = next;
                }
                Ahead::OnWalk => {
                    stuck = false;
                    break;
                }
                Ahead::Known(v, tainted) => {
                    tail = unpack_suffix(v).map(|(h, tr, cls)| (h, tr, Some(cls)));
                    tail_tainted = tainted;
                    stuck = false;
                    break;
                }
            }
        }
        if stuck {
            write(sw, None, false);
        }
        // Pass 2: the same hops again, each switch's entry.
        let total = tail.map(|(h, tr, tc)| {
            let join = match (last_cls, tc) {
                (Some(l), Some(c)) => self.pen_class(l, c),
                _ => 0,
            };
            (h, tr + ill + join)
        });
        let mut run = 0u8;
        let mut prev = None;
        let mut sw = s0;
        for i in 0..n {
            let Hop::Switch { sw: next, ch, .. } = self.plane.hop(sw as usize, entry(sw)) else {
                debug_assert!(false, "pass 1 walked this hop");
                break;
            };
            let cls = self.ch_class[ch.idx()];
            if let Some(p) = prev {
                run += self.pen_class(p, cls);
            }
            prev = Some(cls);
            let v = total.map(|(h, tr)| Self::pack_suffix(n - i + h, tr - run, cls));
            write(sw, v, tail_tainted || i < rewritten_upto);
            sw = next;
        }
    }

    pub(super) fn pack_suffix(hops: u32, trans: u8, class: u8) -> u64 {
        (trans as u64) << 48 | (hops as u64) << 32 | class as u64
    }

    /// Whether a path obeying the turn rule leads from switch `s` to `t` over the live
    /// links, once known for `s` ([`Rftr::learn_legal_reach`]). A candidate without a
    /// transition is such a path, so where none leads there is none.
    pub(super) fn legal_reach(&self, s: u32, t: u32) -> Option<bool> {
        self.legal_reach.get(&s).map(|r| r[t as usize])
    }

    /// One breadth-first search from switch `s` over (switch, class of the channel taken
    /// into it) on the live links, remembered for the rest of this `apply`.
    pub(super) fn learn_legal_reach(&mut self, s: u32) {
        if self.legal_reach.contains_key(&s) {
            return;
        }
        let (ns, m) = (self.f.num_switches(), self.ncls);
        let (mut dist, mut queue) = (
            std::mem::take(&mut self.reach_dist),
            std::mem::take(&mut self.bfs_queue),
        );
        dist.resize(ns * m, FAR);
        let rule = TurnSearch {
            f: self.f,
            ch_dst_sw: &self.ch_dst_sw,
            ch_class: &self.ch_class,
            pen: &self.pen,
            ncls: m,
        };
        rule.forward(
            s as usize,
            Some(&self.ch_dead),
            false,
            &mut dist,
            &mut queue,
        );
        // Per switch: reached in any class (the source itself too).
        let mut seen = self.legal_reach_pool.pop().unwrap_or_default();
        seen.clear();
        seen.extend(
            (0..ns).map(|v| v == s as usize || dist[v * m..(v + 1) * m].iter().any(|&d| d != FAR)),
        );
        (self.reach_dist, self.bfs_queue) = (dist, queue);
        self.legal_reach.insert(s, seen);
    }

    /// True when no walk over the live links that obeys the turn rule leads from switch `s`
    /// to switch `t` in fewer than `h` hops. Every transition-free candidate is such a walk,
    /// so a live legal walk of `h` hops is then as short as any. The search behind it goes
    /// backwards from `t` (`BackSearch`), once per destination switch and fault, only as
    /// deep as the questions need: for `h` hops, the states up to `h - 2` hops from `t`.
    pub(super) fn no_shorter_legal_walk(&mut self, s: u32, t: u32, h: u32) -> bool {
        if s == t {
            return h == 0;
        }
        let (ns, m) = (self.f.num_switches(), self.ncls);
        let pool = &mut self.dist_pool;
        let search = self.dist.entry(t).or_insert_with(|| {
            let mut b = pool.pop().unwrap_or_default();
            b.reset(t, ns * m, m);
            b
        });
        if h >= 3 {
            search.advance(h - 3, &self.in_links, &self.ch_dead, &self.pen, m);
        }
        // From a source every first hop is legal: a shorter walk starts with a live channel
        // into a state at most h - 2 hops from t (every such state holds its distance now).
        !self.f.switch_links(SwitchIdx(s)).iter().any(|&c| {
            let v = self.ch_dst_sw[c.idx()];
            v != NONE
                && !self.ch_dead[c.idx()]
                && search.d[v as usize * m + self.ch_class[c.idx()] as usize]
                    .checked_add(1)
                    .is_some_and(|x| x < h)
        })
    }
}
