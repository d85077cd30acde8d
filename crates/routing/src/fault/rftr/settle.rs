//! Bookkeeping a repair leaves for after its delta: the sources' prefix tries and prefix
//! tables (the rows a fault's dead hops spoil, the prefixes its new paths add) and the
//! per-channel index of the new paths.
//!
//! None of it changes what a repair chooses. A source's prefix structures are read only when
//! one of its pairs goes to the candidate scan (`Rftr::prepare`), and they are brought up to
//! date first, in the order the eager updates had (`flush_source`: the fault's dead rows,
//! then each new path's prefixes in commit order); the per-channel index is read only by the
//! next fault's start. On a 16x16x8 torus under Up*/Down* a link's repair keeps the walks of
//! 8,000-32,000 (source switch, destination) pairs from 500-1,900 sources, and scans from
//! 8-21 of them: most of the bookkeeping waits. [`Rftr::settle`] does the rest; a caller runs
//! it once the delta is out (`fabroute sm` after the push, `fault` timing it apart), and
//! [`Rftr::apply`] runs it first if nobody did.

use super::*;

/// What is left to do, per source switch.
#[derive(Clone, Debug, Default)]
pub(super) struct Pending {
    /// Committed paths whose prefixes are not in their source's trie and tables yet: (path,
    /// hops it shares with the path it replaced, the next entry of the same source or NONE).
    commits: Vec<(PathId, u32, u32)>,
    /// Per switch: its first and last entry in `commits` (NONE: none).
    head: Vec<u32>,
    tail: Vec<u32>,
    /// Paths the last fault killed whose source had a prefix table then, by source:
    /// (source, path), sorted; per switch its range in it (empty: none).
    hits: Vec<(u32, PathId)>,
    hit_at: Vec<(u32, u32)>,
    /// Switches that had something pending when they were listed (a switch may be listed
    /// again after a flush).
    sources: Vec<u32>,
}

impl Pending {
    pub(super) fn new(num_switches: usize) -> Self {
        Pending {
            commits: Vec::with_capacity(1 << 16),
            head: vec![NONE; num_switches],
            tail: vec![NONE; num_switches],
            hits: Vec::with_capacity(1 << 16),
            hit_at: vec![(0, 0); num_switches],
            sources: Vec::with_capacity(4096),
        }
    }

    /// Room for `n` commits and killed paths, mapped (`mapped`).
    pub(super) fn map(&mut self, n: usize) {
        if self.commits.is_empty() && self.hits.is_empty() {
            self.commits = mapped(n, (0, 0, 0));
            self.hits = mapped(2 * n, (0, 0));
        }
    }

    /// True when source `s` has nothing pending.
    #[inline]
    pub(super) fn clean(&self, s: u32) -> bool {
        let (a, b) = self.hit_at[s as usize];
        self.head[s as usize] == NONE && a == b
    }
}

impl<'f> Rftr<'f> {
    /// Queues the prefixes of path `id` of source `s` that it does not share with the path
    /// it replaced (`shared` hops), for its source's trie and tables.
    pub(super) fn defer_prefixes(&mut self, s: u32, id: PathId, shared: u32) {
        let q = &mut self.pending;
        if q.clean(s) {
            q.sources.push(s);
        }
        let n = q.commits.len() as u32;
        q.commits.push((id, shared, NONE));
        match q.tail[s as usize] {
            NONE => q.head[s as usize] = n,
            t => q.commits[t as usize].2 = n,
        }
        q.tail[s as usize] = n;
    }

    /// Queues, per source, the killed paths `hit` (ascending) whose source has a prefix
    /// table: its rows behind their dead hops are looked at when the source is flushed (a
    /// table built later is built from live prefixes only).
    pub(super) fn defer_dead_prefixes(&mut self, hit: &[PathId]) {
        debug_assert!(
            self.pending.hits.is_empty(),
            "a fault's start before a settle"
        );
        let mut hits = std::mem::take(&mut self.pending.hits);
        self.paths.sources_of(hit, &mut hits);
        hits.retain(|&(s, _)| !self.pre_tab[s as usize].is_empty());
        // Base paths come by source already; only the repaired ones are out of order.
        hits.sort_unstable();
        let mut i = 0;
        for run in hits.chunk_by(|a, b| a.0 == b.0) {
            let s = run[0].0;
            if self.pending.clean(s) {
                self.pending.sources.push(s);
            }
            self.pending.hit_at[s as usize] = (i as u32, (i + run.len()) as u32);
            i += run.len();
        }
        self.pending.hits = hits;
    }

    /// Brings source `s`'s prefix trie, prefix table and prefix map up to date: the rows the
    /// last fault's dead hops spoiled first, then the prefixes of its new paths in the order
    /// they were committed.
    pub(super) fn flush_source(&mut self, s: u32) {
        let (a, b) = self.pending.hit_at[s as usize];
        if a < b {
            let hits = std::mem::take(&mut self.pending.hits);
            self.drop_dead_prefixes(s, hits[a as usize..b as usize].iter().map(|x| x.1));
            self.pending.hits = hits;
            self.pending.hit_at[s as usize] = (0, 0);
        }
        let mut n = self.pending.head[s as usize];
        self.pending.head[s as usize] = NONE;
        self.pending.tail[s as usize] = NONE;
        while n != NONE {
            let (id, shared, next) = self.pending.commits[n as usize];
            self.add_path_prefixes(s, id, shared as usize);
            n = next;
        }
    }

    /// Adds the prefixes of path `id` of source `s` longer than `shared` hops to its trie,
    /// and all its live ones to its prefix table and prefix map where they exist.
    fn add_path_prefixes(&mut self, s: u32, id: PathId, shared: usize) {
        let (hops, vls) = (self.paths.hops_of(id), self.paths.vls_of(id));
        self.tries[s as usize].add_chain(hops, vls, id, &self.ch_dst_sw, shared);
        let mut t = std::mem::take(&mut self.pre_tab[s as usize]);
        if !t.is_empty() {
            self.add_fast_prefixes(id, &mut t, shared);
        }
        self.pre_tab[s as usize] = t;
        if let Some(mut m) = self.pre_cache.remove(&s) {
            self.add_prefixes(id, &mut m);
            self.pre_cache.insert(s, m);
        }
    }

    /// Whether anything is left for [`Rftr::settle`].
    pub fn settled(&self) -> bool {
        self.pending.sources.is_empty() && self.paths.indexed() && self.walks_forgotten.is_empty()
    }

    /// Does the bookkeeping the last repair left (see the module docs): every source's
    /// prefix structures and the per-channel index. The state is then the one an eager
    /// repair would have left; nothing a repair or a query reports changes.
    pub fn settle(&mut self) {
        let sources = std::mem::take(&mut self.pending.sources);
        for &s in &sources {
            self.flush_source(s);
        }
        let mut sources = sources;
        sources.clear();
        self.pending.sources = sources;
        self.pending.commits.clear();
        self.pending.hits.clear();
        self.paths.index_pending();
        self.settle_walks();
    }
}
