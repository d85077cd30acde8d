//! RFTR's prefix side: the sources' prefix tries, built at the start, and the packed
//! table of the best live prefix per (join switch, class of the next channel), kept in step
//! as faults kill paths and repairs add them.

use super::*;
use rayon::prelude::*;

impl<'f> Rftr<'f> {
    /// Builds every source's prefix trie from its stored paths: paths sorted by their hops,
    /// each sharing the nodes of its longest common prefix with the one before.
    pub(super) fn build_tries(&mut self) {
        let ns = self.f.num_switches();
        // Each source's trie and prefix table is its own: built on every thread.
        let tries: Vec<PrefixTrie> = (0..ns)
            .into_par_iter()
            .map(|s| {
                if self.slot_of[s] == NONE {
                    PrefixTrie::default()
                } else {
                    self.trie_of(s)
                }
            })
            .collect();
        self.tries = tries;
        let tabs: Vec<Vec<u64>> = (0..ns as u32)
            .into_par_iter()
            .map_init(Vec::new, |alive, s| {
                if self.slot_of[s as usize] == NONE {
                    Vec::new()
                } else {
                    self.prefix_table(s, alive)
                }
            })
            .collect();
        self.pre_tab = tabs;
    }

    /// Source switch `s`'s prefix trie from its stored paths (the base paths: one VL), in
    /// preorder with children by channel: the paths' ids, ascending, are partitioned hop by
    /// hop (a stable counting pass per trie node over the few channels out of its switch),
    /// so the work is one visit per stored hop, where sorting the paths compared hop runs
    /// O(log n) times each. A node's `minpath` is the first (lowest) id of its range.
    fn trie_of(&self, s: usize) -> PrefixTrie {
        let ns = self.f.num_switches();
        let mut t = PrefixTrie::default();
        let mut ids: Vec<PathId> = self.paths.by_src.get(s).collect();
        let mut tmp: Vec<PathId> = vec![0; ids.len()];
        // Channels out of one switch and their counts, then their ranges' starts.
        let mut chans: Vec<(u32, u32)> = Vec::new();
        // Frames (lo, hi, depth, parent, channel): the paths `ids[lo..hi]` share a prefix of
        // `depth` hops ending with `channel` after node `parent` (channel NONE: the root).
        let mut stack: Vec<(u32, u32, u32, u32, u32)> = vec![(0, ids.len() as u32, 0, NONE, NONE)];
        while let Some((lo, hi, d, parent, ch)) = stack.pop() {
            let (lo, hi) = (lo as usize, hi as usize);
            let node = if ch == NONE {
                NONE
            } else {
                let p = ids[lo];
                let vl = self.paths.vls_of(p)[d as usize - 1];
                t.push(ch, parent, d, vl, p)
            };
            // Partition the paths that go on by their next hop; those that end here go
            // nowhere (a path ends at one node: its last hop).
            chans.clear();
            for &p in &ids[lo..hi] {
                if let Some(c) = self.paths.hops_of(p).get(d as usize) {
                    match chans.iter_mut().find(|x| x.0 == c.0) {
                        Some(x) => x.1 += 1,
                        None => chans.push((c.0, 1)),
                    }
                }
            }
            if chans.is_empty() {
                continue;
            }
            chans.sort_unstable();
            let mut at = lo as u32;
            for x in chans.iter_mut() {
                let n = x.1;
                x.1 = at;
                at += n;
            }
            let end = at as usize;
            for &p in &ids[lo..hi] {
                if let Some(c) = self.paths.hops_of(p).get(d as usize) {
                    let x = chans.iter_mut().find(|x| x.0 == c.0).expect("counted");
                    tmp[x.1 as usize] = p;
                    x.1 += 1;
                }
            }
            ids[lo..end].copy_from_slice(&tmp[lo..end]);
            // Each channel's range ends where the fill stopped; the next one starts there.
            // Children last channel first on the stack, so the lowest comes out first.
            for i in (0..chans.len()).rev() {
                let a = if i == 0 { lo as u32 } else { chans[i - 1].1 };
                stack.push((a, chans[i].1, d + 1, node, chans[i].0));
            }
        }
        t.index_ends(&self.ch_dst_sw, ns);
        t.headroom();
        t
    }

    /// After a fault killed the paths `hit` of source `s`: recomputes the rows of its prefix
    /// table whose best prefix ran over a dead hop. Only rows of switches behind a dead hop
    /// of a hit path can hold one (the best prefix of a row is the start of its `minpath`,
    /// which then uses the dead channel), and a row keeps its value when its best survives.
    pub(super) fn drop_dead_prefixes(&mut self, s: u32, hit: impl Iterator<Item = PathId>) {
        let s = s as usize;
        if self.pre_tab[s].is_empty() {
            return;
        }
        let m1 = self.ncls + 1;
        // Rows looked at already (`stamp`): the hit paths of one source run behind the same
        // dead hop to the same switches, and a row's verdict cannot change once looked at
        // (its refresh takes live prefixes only).
        self.stamp_gen += 1;
        let g = self.stamp_gen;
        for p in hit {
            debug_assert_eq!(self.paths.src[p as usize] as usize, s);
            let lo = self.paths.dead_lo[p as usize] as usize;
            let (a, b) = (
                self.paths.start[p as usize] as usize,
                self.paths.start[p as usize + 1] as usize,
            );
            for j in a + lo..b {
                let c = self.ch_dst_sw[self.paths.hops[j].idx()] as usize;
                if self.stamp[c] == g {
                    continue;
                }
                self.stamp[c] = g;
                let row = &self.pre_tab[s][c * m1..(c + 1) * m1];
                if row.iter().any(|&k| !self.prefix_live(k)) {
                    self.refresh_prefix_row(s, c);
                }
            }
        }
    }

    /// Whether packed prefix key `k` (a table entry) still runs over live hops only.
    #[inline]
    pub(super) fn prefix_live(&self, k: u64) -> bool {
        let p = k as u32;
        if k >= NO_PREFIX || p == NONE {
            return true;
        }
        let depth = ((k >> 32) & 0xFFFF) as u32;
        let lo = self.paths.dead_lo[p as usize];
        lo == NONE || lo >= depth
    }

    /// Recomputes row `c` of source `s`'s prefix table from the live trie nodes ending at `c`.
    pub(super) fn refresh_prefix_row(&mut self, s: usize, c: usize) {
        let m1 = self.ncls + 1;
        let mut t = std::mem::take(&mut self.pre_tab[s]);
        let init = if c == s { NONE as u64 } else { NO_PREFIX };
        t[c * m1..(c + 1) * m1].fill(init);
        let tr = &self.tries[s];
        for n in tr.ending_at(c) {
            let nd = tr.node(n);
            let p = nd.minpath;
            let lo = self.paths.dead_lo[p as usize];
            if lo != NONE && lo < nd.depth as u32 {
                continue;
            }
            let key = (nd.vl as u64) << 48 | (nd.depth as u64) << 32 | p as u64;
            self.relax_prefix(&mut t, nd.ch as usize, key);
        }
        self.pre_tab[s] = t;
    }

    /// Adds the live prefixes of path `p` to a prefix map.
    pub(super) fn add_prefixes(&self, p: PathId, m: &mut PrefixMap) {
        let live = self.paths.live_prefix(p);
        let hops = self.paths.hops_of(p);
        let vls = self.paths.vls_of(p);
        for i in 0..live {
            let c = hops[i].idx();
            let cand = (vls[i], i as u32 + 1, p, i as u32 + 1);
            let e = &mut m.best[c];
            if e.1 == 0 {
                *e = cand;
                m.touched.push(c as u32);
            } else if (cand.0, cand.1) < (e.0, e.1) {
                *e = cand;
            }
        }
    }

    /// Adds the live prefixes of path `p` longer than `from` hops to a packed prefix table
    /// (see [`Rftr::fast_prefixes`]; the shorter ones may be left out when an older path of
    /// the source has them with the same VLs: the table holds theirs, with a lower id).
    pub(super) fn add_fast_prefixes(&self, p: PathId, t: &mut [u64], from: usize) {
        let live = self.paths.live_prefix(p);
        let hops = self.paths.hops_of(p);
        let vls = self.paths.vls_of(p);
        for i in from..live {
            let ch = hops[i].idx();
            let key = (vls[i] as u64) << 48 | ((i as u64 + 1) << 32) | p as u64;
            self.relax_prefix(t, ch, key);
        }
    }

    /// Offers the prefix `key` ending with channel `ch` to a packed prefix table: per suffix
    /// class with the turn's transition added, and unpenalised in the last column.
    #[inline]
    pub(super) fn relax_prefix(&self, t: &mut [u64], ch: usize, key: u64) {
        let m = self.ncls;
        let c = self.ch_dst_sw[ch] as usize;
        let a = self.ch_class[ch] as usize;
        let row = &mut t[c * (m + 1)..(c + 1) * (m + 1)];
        let pen = &self.pen[a * m..a * m + m];
        for b in 0..m {
            let k = key + ((pen[b] as u64) << 48);
            if k < row[b] {
                row[b] = k;
            }
        }
        if key < row[m] {
            row[m] = key;
        }
    }

    /// Best prefixes from switch `s`, packed: entry `c * (ncls + 1) + b` is the best prefix
    /// ending at switch `c` for a suffix whose first channel has class `b`, with the VL
    /// transition of the turn at `c` already counted; column `ncls` ignores the turn (the
    /// destination's own switch). The empty prefix at `s` itself is (0, 0, NONE).
    pub(super) fn fast_prefixes(&mut self, s: u32) -> Vec<u64> {
        let mut alive = std::mem::take(&mut self.alive_buf);
        let t = self.prefix_table(s, &mut alive);
        self.alive_buf = alive;
        t
    }

    /// [`Rftr::fast_prefixes`] with the caller's scratch.
    pub(super) fn prefix_table(&self, s: u32, alive: &mut Vec<bool>) -> Vec<u64> {
        let m1 = self.ncls + 1;
        let mut t = written(self.f.num_switches() * m1, NO_PREFIX);
        t[s as usize * m1..s as usize * m1 + m1].fill(NONE as u64);
        let tr = &self.tries[s as usize];
        alive.clear();
        alive.resize(tr.len(), false);
        for (i, nd) in tr.iter().enumerate() {
            let ch = nd.ch as usize;
            let p = nd.parent;
            // A base node is live when its hop and its parent are; a node added by a repair
            // when its path's first dead hop lies beyond it (its chain may start below the
            // root: `PrefixTrie::add_chain`).
            let live = if (i as u32) < tr.indexed {
                !self.ch_dead[ch] && (p == NONE || alive[p as usize])
            } else {
                let lo = self.paths.dead_lo[nd.minpath as usize];
                lo == NONE || lo >= nd.depth as u32
            };
            if !live {
                continue;
            }
            alive[i] = true;
            let key = (nd.vl as u64) << 48 | (nd.depth as u64) << 32 | nd.minpath as u64;
            self.relax_prefix(&mut t, ch, key);
        }
        t
    }

    /// Best prefixes from switch `s`: per input channel of the join switch the fewest
    /// transitions, then fewest hops.
    pub(super) fn prefixes(&mut self, s: u32) -> PrefixMap {
        let mut m = self
            .pre_map_pool
            .pop()
            .unwrap_or_else(|| PrefixMap::new(self.f.links.len() * 2));
        for p in self.paths.by_src.get(s as usize) {
            self.add_prefixes(p, &mut m);
        }
        m
    }

    /// Repairs pair (slot, e); returns the new path's transitions, or None if unsupported.
    /// Fills the caches the candidate scan of (source switch `s`, end `e`) reads: the best
    /// prefixes of `s` and the suffix tables of `e` for every LID offset in use.
    pub(super) fn prepare(&mut self, s: u32, e: u32) {
        self.flush_source(s);
        if self.pre_tab[s as usize].is_empty() {
            self.pre_tab[s as usize] = self.fast_prefixes(s);
        }
        let mut bits = self.lid_used[e as usize];
        while bits != 0 {
            let k = bits.trailing_zeros();
            bits &= bits - 1;
            if !self.suf_cache.contains_key(&(e, k)) {
                let v = self.lazy_suffixes();
                self.suf_cache.insert((e, k), v);
            }
        }
    }
}
