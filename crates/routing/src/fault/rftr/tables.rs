//! RFTR's flat tables and their helpers: the prefix tries and per-channel prefix maps of
//! the sources, the packed suffix tables and keys, the LID-major copy of the LFTs and the
//! fault-free switch distances. No RFTR state; `Rftr` owns one of each.

use super::super::paths::{roomy, PathId, NONE};
use crate::tables::Routing;
use fabric::SwitchIdx;
use fabric::{ChannelId, Fabric, NO_PORT};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

/// Hop count standing for "127 or more, or unreachable" in `Rftr::sdist`. Below 128, so
/// two distances add up without carrying out of their byte (`range_mask`).
pub(super) const FAR: u8 = 0x7F;
/// Above this many switches the distance matrix (one byte per pair) is not kept.
pub(super) const SDIST_MAX_SWITCHES: usize = 8192;

/// Hops between every two switches over the fault-free fabric's inter-switch links, by one
/// breadth-first search per switch (empty above `SDIST_MAX_SWITCHES`).
pub(super) fn static_distances(f: &Fabric, ch_dst_sw: &[u32]) -> Vec<u8> {
    let ns = f.num_switches();
    if ns > SDIST_MAX_SWITCHES {
        return Vec::new();
    }
    let mut d = written(ns * ns, FAR);
    let mut queue: Vec<u32> = Vec::with_capacity(ns);
    for t in 0..ns {
        let row = &mut d[t * ns..(t + 1) * ns];
        row[t] = 0;
        queue.clear();
        queue.push(t as u32);
        let mut at = 0;
        while at < queue.len() {
            let u = queue[at] as usize;
            at += 1;
            if row[u] >= FAR - 1 {
                continue;
            }
            for &c in f.switch_links(SwitchIdx(u as u32)) {
                let v = ch_dst_sw[c.idx()];
                if v != NONE && row[v as usize] == FAR {
                    row[v as usize] = row[u] + 1;
                    queue.push(v);
                }
            }
        }
    }
    d
}

/// What a search over (switch, class of the channel taken into it) needs: the switch-to-switch
/// channels (`ch_dst_sw`: the far switch, `NONE` for none), their classes, and the turn rule
/// (no turn from class `a` into class `b` with `pen[a * ncls + b] != 0`).
pub(super) struct TurnSearch<'a> {
    pub f: &'a Fabric,
    pub ch_dst_sw: &'a [u32],
    pub ch_class: &'a [u8],
    pub pen: &'a [u8],
    pub ncls: usize,
}

impl TurnSearch<'_> {
    /// Breadth-first from switch `s` over the walks that obey the rule (every first hop is
    /// legal), skipping channels `dead` marks: `dist[v * ncls + k]` becomes the hops of the
    /// shortest such walk into `v` by a channel of class `k` (`FAR`: none). `capped`: states
    /// 126 hops away are not expanded (a distance table's cut-off); else they are, every
    /// state further away counted 126 (enough for reachability). `dist` (`ns * ncls`) and
    /// `queue` are the caller's buffers.
    pub(super) fn forward(
        &self,
        s: usize,
        dead: Option<&[bool]>,
        capped: bool,
        dist: &mut [u8],
        queue: &mut Vec<u32>,
    ) {
        let m = self.ncls;
        dist.fill(FAR);
        queue.clear();
        // Hops into the states out of switch `u`, entered by class `prev` (None: the
        // source, where every first hop is legal), `d` hops from `s`.
        let step = |u: usize, prev: Option<usize>, d: u8, dist: &mut [u8], q: &mut Vec<u32>| {
            for &c in self.f.switch_links(SwitchIdx(u as u32)) {
                let v = self.ch_dst_sw[c.idx()];
                let k = self.ch_class[c.idx()] as usize;
                if v == NONE
                    || dead.is_some_and(|x| x[c.idx()])
                    || prev.is_some_and(|p| self.pen[p * m + k] != 0)
                {
                    continue;
                }
                let st = v as usize * m + k;
                if dist[st] == FAR {
                    dist[st] = (d + 1).min(FAR - 1);
                    q.push(st as u32);
                }
            }
        };
        step(s, None, 0, dist, queue);
        let mut at = 0;
        while at < queue.len() {
            let st = queue[at] as usize;
            at += 1;
            let d = dist[st];
            if d < FAR - 1 || !capped {
                step(st / m, Some(st % m), d, dist, queue);
            }
        }
    }
}

/// Hops of the shortest paths between switches that obey a turn rule (no turn from class
/// `a` into class `b` with `pen[a * ncls + b] != 0`), over the fault-free fabric's
/// inter-switch links: `from[s * ns + c]` from `s` to `c` and `to[t * ns + c]` from `c` to
/// `t` (`FAR`: 127 or more, or no such path). A transition-free path is one of them, so
/// `from[s][c] + to[t][c]` bounds from below every transition-free path from `s` to `t`
/// through `c`, under any faults.
pub(super) struct LegalDistances {
    pub from: Vec<u8>,
    pub to: Vec<u8>,
    /// The largest finite entry (0 when there is none).
    pub top: u8,
}

impl LegalDistances {
    /// One breadth-first search per source switch over (switch, class of the channel taken
    /// into it), sources in parallel; None above `SDIST_MAX_SWITCHES` switches or when the
    /// states would be too many (`ns * ns * ncls` above 2^28).
    pub(super) fn new(
        f: &Fabric,
        ch_dst_sw: &[u32],
        ch_class: &[u8],
        pen: &[u8],
        ncls: usize,
    ) -> Option<LegalDistances> {
        use rayon::prelude::*;
        let ns = f.num_switches();
        if ns > SDIST_MAX_SWITCHES || ns * ns * ncls > 1 << 28 || ns == 0 {
            return None;
        }
        let mut from = written(ns * ns, FAR);
        from.par_chunks_mut(ns).enumerate().for_each_init(
            || (vec![FAR; ns * ncls], Vec::with_capacity(ns * ncls)),
            |(dist, queue), (s, row)| {
                let rule = TurnSearch {
                    f,
                    ch_dst_sw,
                    ch_class,
                    pen,
                    ncls,
                };
                rule.forward(s, None, true, dist, queue);
                row[s] = 0;
                for (c, d) in row.iter_mut().enumerate() {
                    let best = dist[c * ncls..(c + 1) * ncls]
                        .iter()
                        .copied()
                        .min()
                        .unwrap_or(FAR);
                    *d = (*d).min(best);
                }
            },
        );
        let mut to = written(ns * ns, FAR);
        for (s, row) in from.chunks(ns).enumerate() {
            for (c, &d) in row.iter().enumerate() {
                to[c * ns + s] = d;
            }
        }
        let top = from
            .iter()
            .copied()
            .filter(|&d| d != FAR)
            .max()
            .unwrap_or(0);
        Some(LegalDistances { from, to, top })
    }
}

/// The inter-switch channels into every (switch, class of the channel), for searches that
/// go backwards from a destination: `of(w, b)` lists (switch v, channel v -> w) for the
/// channels of class b into w. Built once from the fabric (dead or alive).
#[derive(Debug, Default)]
pub(super) struct InLinks {
    start: Vec<u32>,
    from: Vec<(u32, ChannelId)>,
    classes: usize,
}

impl InLinks {
    pub(super) fn new(f: &Fabric, ch_dst_sw: &[u32], ch_class: &[u8], classes: usize) -> Self {
        let ns = f.num_switches();
        let key = |w: usize, c: ChannelId| w * classes + ch_class[c.reverse().idx()] as usize;
        let mut start = vec![0u32; ns * classes + 1];
        for w in 0..ns {
            for &c in f.switch_links(SwitchIdx(w as u32)) {
                if ch_dst_sw[c.idx()] != NONE {
                    start[key(w, c) + 1] += 1;
                }
            }
        }
        for k in 0..ns * classes {
            start[k + 1] += start[k];
        }
        let mut at = start.clone();
        let mut from = vec![(0, ChannelId(0)); start[ns * classes] as usize];
        for w in 0..ns {
            for &c in f.switch_links(SwitchIdx(w as u32)) {
                let v = ch_dst_sw[c.idx()];
                if v != NONE {
                    let k = key(w, c);
                    from[at[k] as usize] = (v, c.reverse());
                    at[k] += 1;
                }
            }
        }
        InLinks {
            start,
            from,
            classes,
        }
    }

    /// (switch v, channel v -> w) for the channels of class `b` into switch `w`.
    #[inline]
    pub(super) fn of(&self, w: usize, b: usize) -> &[(u32, ChannelId)] {
        let k = w * self.classes + b;
        &self.from[self.start[k] as usize..self.start[k + 1] as usize]
    }
}

/// A breadth-first search backwards from one destination switch over (switch v, class a
/// of the channel v was entered by), on the live links and obeying the turn rule: `d[v *
/// classes + a]` is the hops from there to the destination, `u32::MAX` until reached. It
/// runs only as deep as the questions asked so far need (`advance`), and goes on from there.
#[derive(Clone, Debug, Default)]
pub(super) struct BackSearch {
    pub(super) d: Vec<u32>,
    queue: Vec<u32>,
    at: usize,
}

impl BackSearch {
    /// Starts over from switch `t`, with `states` (switches times classes) entries.
    pub(super) fn reset(&mut self, t: u32, states: usize, classes: usize) {
        self.d.clear();
        self.d.resize(states, u32::MAX);
        self.queue.clear();
        self.at = 0;
        for a in 0..classes {
            let st = t as usize * classes + a;
            self.d[st] = 0;
            self.queue.push(st as u32);
        }
    }

    /// Expands every state at most `limit` hops from the destination, so that every state
    /// at most `limit + 1` hops away holds its distance. From the far end v of each live
    /// channel of class b into a state's switch, entered by any class a that may turn into
    /// b (`pen[a * classes + b] == 0`).
    pub(super) fn advance(
        &mut self,
        limit: u32,
        links: &InLinks,
        ch_dead: &[bool],
        pen: &[u8],
        classes: usize,
    ) {
        while let Some(&st) = self.queue.get(self.at) {
            let st = st as usize;
            let dw = self.d[st];
            if dw > limit {
                break;
            }
            self.at += 1;
            let (w, b) = (st / classes, st % classes);
            for &(v, c) in links.of(w, b) {
                if ch_dead[c.idx()] {
                    continue;
                }
                for a in 0..classes {
                    let sv = v as usize * classes + a;
                    if pen[a * classes + b] == 0 && self.d[sv] == u32::MAX {
                        self.d[sv] = dw + 1;
                        self.queue.push(sv as u32);
                    }
                }
            }
        }
    }
}

/// Bit `i` set when `lo <= a[i] + b[i] <= lo + span` (at most 64 entries, each at most
/// `FAR`, so the sum fits a byte; below `lo` it wraps above `lo + span`).
pub(super) fn range_mask(a: &[u8], b: &[u8], lo: u8, span: u8) -> u64 {
    // Bit 0 of byte i moves to bit 56 + i (no two partial products meet, so no carries).
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let n = a.len().min(b.len()).min(64);
    // One byte (0 or 1) per switch first: a loop the compiler turns into vector compares.
    let mut lanes = [0u8; 64];
    for ((l, &x), &y) in lanes.iter_mut().zip(&a[..n]).zip(&b[..n]) {
        *l = u8::from(x.wrapping_add(y).wrapping_sub(lo) <= span);
    }
    let mut mask = 0;
    for (i, w) in lanes.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        mask |= (w.wrapping_mul(GATHER) >> 56) << (8 * i);
    }
    mask
}

/// Calls `visit(c, level)` on the switches `c` below `limit` whose distances in `rows`
/// (from a source, to a destination: rows of `Rftr::sdist` or of `LegalDistances`) add up
/// to a `level` from `lo` to `hi`, ascending, until it returns true. At the one level of
/// the fault-free distance between the two these are the switches on its shortest routes.
/// 64 switches at a time: a mask of the chunk's members (`range_mask`), then its set bits.
pub(super) fn within(
    rows: (&[u8], &[u8]),
    lo: u32,
    hi: u32,
    limit: usize,
    visit: &mut impl FnMut(usize, u32) -> bool,
) {
    // Two distances below FAR add up to at most 2 * (FAR - 1).
    let hi = hi.min(2 * (FAR as u32 - 1));
    if lo > hi {
        return;
    }
    let (lo, span) = (lo as u8, (hi - lo) as u8);
    let n = limit.min(rows.0.len()).min(rows.1.len());
    for (i, (a, b)) in rows.0[..n]
        .chunks(64)
        .zip(rows.1[..n].chunks(64))
        .enumerate()
    {
        let mut mask = range_mask(a, b, lo, span);
        while mask != 0 {
            let j = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if visit(i * 64 + j, (a[j] + b[j]) as u32) {
                return;
            }
        }
    }
}

/// The LFTs of `r` LID-major (see `Rftr::by_lid`), every page written.
pub(super) fn lid_major(r: &Routing, ns: usize) -> Vec<u8> {
    let stride = r.stride();
    let mut t = written(stride * ns, NO_PORT);
    // In blocks of LIDs, so that both sides stay in cache.
    pub(super) const B: usize = 64;
    for lo in (0..stride).step_by(B) {
        let hi = (lo + B).min(stride);
        for s in 0..ns {
            for (lid, &port) in r.lft_of(SwitchIdx(s as u32))[lo..hi].iter().enumerate() {
                t[(lo + lid) * ns + s] = port;
            }
        }
    }
    t
}

/// Moves the elements satisfying `keep` to the front (order not kept); returns their count.
pub(super) fn partition_front<T>(v: &mut [T], mut keep: impl FnMut(&T) -> bool) -> usize {
    let mut n = 0;
    for i in 0..v.len() {
        if keep(&v[i]) {
            v.swap(n, i);
            n += 1;
        }
    }
    n
}

/// `n` copies of `v`, every page written now: `vec![0; n]` takes fresh zero pages that the
/// kernel maps (and clears) only at the first write, which would then land inside a timed
/// repair.
pub(super) fn written<T: Copy>(n: usize, v: T) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    out.resize(n, v);
    out
}

/// Best prefix per input channel of the join switch (the channel determines the switch):
/// (VL at the join, hops, path, hops taken). A dense array over channels, so building it costs
/// one array access per stored hop; `touched` lists the channels set. The empty prefix at the
/// source itself is implicit.
#[derive(Clone, Debug)]
pub(super) struct PrefixMap {
    pub(super) best: Vec<(u8, u32, PathId, u32)>,
    pub(super) touched: Vec<u32>,
}

impl PrefixMap {
    pub(super) fn new(num_channels: usize) -> Self {
        PrefixMap {
            best: vec![(0, 0, NONE, 0); num_channels],
            touched: Vec::new(),
        }
    }
    /// Back to empty, for reuse: only the entries set are reset.
    pub(super) fn clear(&mut self) {
        for &c in &self.touched {
            self.best[c as usize] = (0, 0, NONE, 0);
        }
        self.touched.clear();
    }
}

/// One node of a `PrefixTrie`: the prefix ending with hop `ch` after node `parent` (NONE =
/// the source), `depth` hops long, with VL `vl` on that hop; `minpath` is the oldest stored
/// path that starts with it. One 16-byte record, so that appending a node or reading one
/// touches one cache line.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TrieNode {
    pub(super) ch: u32,
    pub(super) parent: u32,
    pub(super) minpath: u32,
    pub(super) depth: u16,
    pub(super) vl: u8,
}

/// The distinct prefixes of the paths from one source switch, as a trie in one flat array
/// of nodes. Parents come before children, so one forward pass sees every live prefix once,
/// however many paths share it.
#[derive(Debug, Default)]
pub(super) struct PrefixTrie {
    /// The nodes of the base paths, fixed once indexed (`index_ends`).
    pub(super) nodes: Vec<TrieNode>,
    /// The nodes added after those (node `indexed + i` is `later[i]`): kept apart so that
    /// growing them never copies the base nodes.
    pub(super) later: Vec<TrieNode>,
    /// The first `indexed` nodes grouped by the switch they end at: those ending at switch
    /// `c` are `at[at_start[c]..at_start[c + 1]]`.
    pub(super) at_start: Vec<u32>,
    pub(super) at: Vec<u32>,
    pub(super) indexed: u32,
    /// Nodes added after those (the chains of repaired paths), by the switch they end at:
    /// `later_head[c]` is the newest ending at `c` and `later_next[n - indexed]` the one
    /// added before `n` (NONE ends a list). A later fault's prefix rows read them per
    /// switch, not by a pass over every node the repairs added.
    pub(super) later_head: Vec<u32>,
    pub(super) later_next: Vec<u32>,
    /// Per indexed node: the index just past its subtree (the nodes are in preorder, so a
    /// subtree is a contiguous run). A node's children are `n + 1`, then each one past the
    /// subtree of the one before (`children`), without reading their descendants.
    pub(super) subtree_end: Vec<u32>,
}

/// Copies keep room to grow (see `PathStore`'s `Clone`).
impl Clone for PrefixTrie {
    fn clone(&self) -> Self {
        let mut t = PrefixTrie {
            nodes: self.nodes.clone(),
            later: roomy(&self.later),
            at_start: self.at_start.clone(),
            at: self.at.clone(),
            indexed: self.indexed,
            subtree_end: self.subtree_end.clone(),
            later_head: self.later_head.clone(),
            later_next: roomy(&self.later_next),
        };
        if self.later.is_empty() {
            t.headroom();
        }
        t
    }
}

impl PrefixTrie {
    /// Appends a node of the base paths (before `index_ends`).
    pub(super) fn push(&mut self, ch: u32, parent: u32, depth: u32, vl: u8, path: u32) -> u32 {
        debug_assert!(self.later.is_empty(), "a base node after the index");
        self.nodes.push(Self::make(ch, parent, depth, vl, path));
        (self.nodes.len() - 1) as u32
    }

    fn make(ch: u32, parent: u32, depth: u32, vl: u8, path: u32) -> TrieNode {
        debug_assert!(depth <= u16::MAX as u32, "a path longer than 65,535 hops");
        TrieNode {
            ch,
            parent,
            minpath: path,
            depth: depth as u16,
            vl,
        }
    }

    /// Node `n`.
    #[inline]
    pub(super) fn node(&self, n: u32) -> TrieNode {
        match n.checked_sub(self.indexed) {
            Some(i) => self.later[i as usize],
            None => self.nodes[n as usize],
        }
    }

    /// How many nodes there are.
    pub(super) fn len(&self) -> usize {
        self.indexed as usize + self.later.len()
    }

    /// Every node, parents before children.
    pub(super) fn iter(&self) -> impl Iterator<Item = &TrieNode> + '_ {
        self.nodes.iter().chain(&self.later)
    }
    /// Groups the nodes so far by the switch they end at (`ch_dst_sw`: a channel's far switch).
    pub(super) fn index_ends(&mut self, ch_dst_sw: &[u32], ns: usize) {
        let mut start = vec![0u32; ns + 1];
        for nd in &self.nodes {
            start[ch_dst_sw[nd.ch as usize] as usize + 1] += 1;
        }
        for i in 0..ns {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut at = vec![0u32; self.nodes.len()];
        for (n, nd) in self.nodes.iter().enumerate() {
            let k = &mut fill[ch_dst_sw[nd.ch as usize] as usize];
            at[*k as usize] = n as u32;
            *k += 1;
        }
        self.at_start = start;
        self.at = at;
        self.indexed = self.nodes.len() as u32;
        self.later.clear();
        self.later_head = vec![NONE; ns];
        self.later_next.clear();
        // A subtree ends at the next node no deeper than its root.
        let mut end = vec![self.indexed; self.nodes.len()];
        let mut open: Vec<u32> = Vec::new();
        for (n, nd) in self.nodes.iter().enumerate() {
            while let Some(&o) = open.last() {
                if self.nodes[o as usize].depth < nd.depth {
                    break;
                }
                end[o as usize] = n as u32;
                open.pop();
            }
            open.push(n as u32);
        }
        self.subtree_end = end;
    }

    /// The children of indexed node `n`, in index order.
    pub(super) fn children(&self, n: u32) -> impl Iterator<Item = u32> + '_ {
        let end = self.subtree_end[n as usize];
        let mut m = n + 1;
        std::iter::from_fn(move || {
            (m < end).then(|| {
                let c = m;
                m = self.subtree_end[c as usize];
                c
            })
        })
    }

    /// The indexed nodes ending at switch `c`, in index order.
    pub(super) fn indexed_ending_at(&self, c: usize) -> &[u32] {
        match self.at_start.get(c..c + 2) {
            Some(r) => &self.at[r[0] as usize..r[1] as usize],
            None => &[],
        }
    }

    /// The nodes ending at switch `c`: the indexed ones in index order, then those added
    /// later, newest first.
    pub(super) fn ending_at(&self, c: usize) -> impl Iterator<Item = u32> + '_ {
        let mut n = self.later_head.get(c).copied().unwrap_or(NONE);
        let later = std::iter::from_fn(move || {
            (n != NONE).then(|| {
                let m = n;
                n = self.later_next[(m - self.indexed) as usize];
                m
            })
        });
        self.indexed_ending_at(c).iter().copied().chain(later)
    }

    /// Room for a quarter more nodes (at most 4,096), written now (see `written_headroom`):
    /// repairs append a chain per new path.
    pub(super) fn headroom(&mut self) {
        let extra = (self.nodes.len() / 4).min(4096) + 64;
        let n = self.later.len();
        self.later.reserve_exact(extra);
        self.later
            .resize(self.later.capacity(), TrieNode::default());
        self.later.truncate(n);
        let n = self.later_next.len();
        self.later_next.reserve_exact(extra);
        self.later_next.resize(self.later_next.capacity(), NONE);
        self.later_next.truncate(n);
    }

    /// Appends the nodes of a path's prefixes longer than `from` hops as a chain, listed by
    /// the switch each ends at (`later_head`). Needs `index_ends` first (`ch_dst_sw`: a
    /// channel's far switch). The first `from` hops must be those of an older stored path
    /// of the same source (with the same VLs), whose nodes stand for the shorter prefixes
    /// (their `minpath` is lower, so every prefix table keeps theirs anyway); the chain's
    /// first node then has no parent (NONE), and its liveness is read from its path's dead
    /// hops (`Rftr::prefix_table`).
    pub(super) fn add_chain(
        &mut self,
        hops: &[ChannelId],
        vls: &[u8],
        path: u32,
        ch_dst_sw: &[u32],
        from: usize,
    ) {
        debug_assert_eq!(
            self.later_next.len(),
            self.later.len(),
            "a chain added to a trie not indexed"
        );
        let mut parent = NONE;
        for (i, (&c, &v)) in hops.iter().zip(vls).enumerate().skip(from) {
            self.later
                .push(Self::make(c.0, parent, i as u32 + 1, v, path));
            parent = self.len() as u32 - 1;
            let head = &mut self.later_head[ch_dst_sw[c.idx()] as usize];
            self.later_next.push(*head);
            *head = parent;
        }
    }
}

/// Suffixes of one (end, LID offset) from every switch, packed for the candidate scan
/// (`transitions << 48 | hops << 32 | class of the first channel`, or `NO_SUFFIX`;
/// `unpack_suffix` gives them back).
///
/// Filled lazily: an entry is `UNKNOWN` until a scan asks for it, and a repair usually asks
/// for a few dozen of thousands. The entries are atomics only so that `&self` scans can fill
/// them in; they are read and written with relaxed ordering (plain loads and stores) and only
/// from the thread that runs `Rftr::apply`.
///
/// Entries that a rewrite of the LFT entries may change carry the table's epoch, and
/// `bump` starts a new one: a dead entry (`set_dead`), and a live one whose walk passes a
/// rewritten entry (`set` with `tainted`). An entry of an older epoch reads as `UNKNOWN`.
#[derive(Debug, Default)]
pub(super) struct SuffixTable {
    packed: Vec<AtomicU64>,
    /// Set when no entry is `UNKNOWN` (`Rftr::complete_suffixes`), cleared by `bump`.
    full: AtomicBool,
    epoch: AtomicU32,
}

/// A dead entry: `DEAD | epoch` (above every packed suffix, below the sentinels).
const DEAD: u64 = 0xFFFE << 48;
/// A live entry whose walk passes a rewritten entry: `packed | TAINT | epoch << 8` (bits
/// 8-30 hold the epoch's low 23 bits; packed suffixes leave bits 8-31 clear).
const TAINT: u64 = 1 << 31;
const EPOCH_BITS: u64 = 0x7F_FFFF << 8;

impl Clone for SuffixTable {
    fn clone(&self) -> Self {
        SuffixTable {
            packed: self
                .packed
                .iter()
                .map(|v| AtomicU64::new(v.load(Relaxed)))
                .collect(),
            full: AtomicBool::new(self.full.load(Relaxed)),
            epoch: AtomicU32::new(self.epoch.load(Relaxed)),
        }
    }
}

impl SuffixTable {
    /// Every entry of `n` switches `UNKNOWN`, reusing the buffer.
    pub(super) fn reset(&mut self, n: usize) {
        self.packed.truncate(n.min(self.packed.len()));
        self.packed.iter_mut().for_each(|v| *v.get_mut() = UNKNOWN);
        self.packed.resize_with(n, || AtomicU64::new(UNKNOWN));
        *self.full.get_mut() = false;
        *self.epoch.get_mut() = 0;
    }
    /// Makes every dead entry, and every live one set as tainted, unknown again: an entry
    /// was rewritten, and only their walks can pass it.
    pub(super) fn bump(&self) {
        self.epoch.fetch_add(1, Relaxed);
        self.full.store(false, Relaxed);
    }
    pub(super) fn is_full(&self) -> bool {
        self.full.load(Relaxed)
    }
    pub(super) fn mark_full(&self) {
        self.full.store(true, Relaxed);
    }
    /// The packed suffix of `sw`, `NO_SUFFIX`, or a sentinel (`UNKNOWN`, `ON_WALK`).
    #[inline]
    pub(super) fn get(&self, sw: usize) -> u64 {
        let v = self.packed[sw].load(Relaxed);
        // A live entry set untainted, the common case: top byte and taint bit clear.
        if v & (0xFF << 56 | TAINT) == 0 || v >= ON_WALK {
            return v;
        }
        let epoch = self.epoch.load(Relaxed);
        if v >> 48 == DEAD >> 48 {
            return if v as u32 == epoch {
                NO_SUFFIX
            } else {
                UNKNOWN
            };
        }
        if (v & EPOCH_BITS) >> 8 == epoch as u64 & 0x7F_FFFF {
            v & !(TAINT | EPOCH_BITS)
        } else {
            UNKNOWN
        }
    }
    /// Whether the entry of `sw` was set live and tainted (meaningful once `get` gave it).
    #[inline]
    pub(super) fn tainted(&self, sw: usize) -> bool {
        let v = self.packed[sw].load(Relaxed);
        v & TAINT != 0 && v < DEAD
    }
    /// Sets a packed suffix, a sentinel (`NO_SUFFIX` stays across epochs), or with
    /// `tainted` a live entry of this epoch only.
    #[inline]
    pub(super) fn set(&self, sw: usize, v: u64, tainted: bool) {
        let v = if tainted && v < DEAD {
            v | TAINT | (self.epoch.load(Relaxed) as u64 & 0x7F_FFFF) << 8
        } else {
            v
        };
        self.packed[sw].store(v, Relaxed)
    }
    /// A dead entry of this epoch.
    #[inline]
    pub(super) fn set_dead(&self, sw: usize) {
        self.packed[sw].store(DEAD | self.epoch.load(Relaxed) as u64, Relaxed)
    }
    pub(super) fn len(&self) -> usize {
        self.packed.len()
    }
}

/// (hops, transitions, class of the first channel) of a packed suffix; None for `NO_SUFFIX`.
#[inline]
pub(super) fn unpack_suffix(v: u64) -> Option<(u32, u8, u8)> {
    (v != NO_SUFFIX).then_some((
        ((v >> 32) & 0xFFFF) as u32,
        (v >> 48) as u8,
        (v & 0xFF) as u8,
    ))
}

/// Packed prefix and candidate keys: `transitions << 48 | hops << 32 | path id`, so the
/// smallest key is the best (fewest transitions, then fewest hops, then oldest path), and
/// adding a packed suffix gives the joined path's transitions and hops.
pub(super) const NO_SUFFIX: u64 = u64::MAX;
/// A suffix table entry not computed yet.
pub(super) const UNKNOWN: u64 = u64::MAX - 1;
/// A suffix table entry whose switch is on the walk being computed (a loop if met again).
pub(super) const ON_WALK: u64 = u64::MAX - 2;
/// No prefix: transitions far above any budget, so it never wins.
pub(super) const NO_PREFIX: u64 = 0x4000 << 48;
pub(super) const HI: u64 = 0xFFFF_FFFF_0000_0000;

#[cfg(test)]
mod tests {
    use super::*;

    /// The mask equals the definition on every length up to 64, with sums below, at, inside
    /// and above the range and entries at `FAR`; `within` visits its members ascending.
    #[test]
    fn range_mask_equals_the_bytewise_sum() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut set = 0;
        for len in 0..=64usize {
            for d in [0u8, 1, 3, 7, FAR - 1] {
                for span in [0u8, 1, 4] {
                    let pick = |r: u64| match r % 5 {
                        0 => FAR,
                        1 => d,
                        _ => (r >> 8) as u8 % (d.max(1) + 1),
                    };
                    let a: Vec<u8> = (0..len).map(|_| pick(next())).collect();
                    let b: Vec<u8> = a
                        .iter()
                        .map(|&v| if v > d { pick(next()) } else { d - v })
                        .collect();
                    let b: Vec<u8> = b
                        .iter()
                        .map(|&v| if next() % 3 == 0 { pick(next()) } else { v })
                        .collect();
                    let sum = |i: usize| a[i] as u16 + b[i] as u16;
                    let inside = |i: usize| (d as u16..=d as u16 + span as u16).contains(&sum(i));
                    let want = (0..len).fold(0u64, |m, i| m | u64::from(inside(i)) << i);
                    assert_eq!(range_mask(&a, &b, d, span), want, "len {len}, d {d}");
                    let mut seen = Vec::new();
                    within((&a, &b), d as u32, (d + span) as u32, len, &mut |c, l| {
                        assert_eq!(l as u16, sum(c));
                        seen.push(c);
                        false
                    });
                    let all: Vec<usize> = (0..len).filter(|&i| inside(i)).collect();
                    assert_eq!(seen, all);
                    set += want.count_ones();
                }
            }
        }
        assert!(set > 1000, "only {set} members in the samples");
    }
}
