//! RFTR's flat tables and their helpers: the prefix tries and per-channel prefix maps of
//! the sources, the packed suffix tables and keys, the LID-major copy of the LFTs (the
//! distances and searches are in `distances.rs`). No RFTR state; `Rftr` owns one of each.

use super::super::paths::{roomy, PathId, NONE};
use super::distances::FAR;
use crate::tables::Routing;
use fabric::SwitchIdx;
use fabric::{ChannelId, NO_PORT};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};

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

/// An empty vector with room for `n` elements, every page of it written once (see
/// `written`): a buffer a repair fills without faulting pages in.
pub(super) fn mapped<T: Copy>(n: usize, v: T) -> Vec<T> {
    let mut out = written(n, v);
    out.clear();
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

    /// The children of indexed node `n`, in index order; `NONE`: the first hops (the
    /// indexed nodes without a parent).
    pub(super) fn children(&self, n: u32) -> impl Iterator<Item = u32> + '_ {
        let (mut m, end) = match n {
            NONE => (0, self.indexed),
            _ => (n + 1, self.subtree_end[n as usize]),
        };
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
///
/// `reset` makes every entry `UNKNOWN` by starting a new generation: an entry set in an
/// older one reads as `UNKNOWN`. A repair resets a table per destination it moves, and
/// clearing all of it each time (16 KB on a 2,048-switch torus, thousands of times per
/// fault) cost more than the few dozen entries it then reads.
#[derive(Debug, Default)]
pub(super) struct SuffixTable {
    packed: Vec<AtomicU64>,
    /// Per entry, the generation it was set in; `generation` is the current one (from 1;
    /// after 255 every entry is cleared and the count starts over).
    set_in: Vec<AtomicU8>,
    generation: u8,
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
            set_in: self
                .set_in
                .iter()
                .map(|v| AtomicU8::new(v.load(Relaxed)))
                .collect(),
            generation: self.generation,
            full: AtomicBool::new(self.full.load(Relaxed)),
            epoch: AtomicU32::new(self.epoch.load(Relaxed)),
        }
    }
}

impl SuffixTable {
    /// Every entry of `n` switches `UNKNOWN`, reusing the buffer.
    pub(super) fn reset(&mut self, n: usize) {
        if self.packed.len() == n && self.generation != 0 && self.generation < u8::MAX {
            self.generation += 1;
        } else {
            self.packed.truncate(n.min(self.packed.len()));
            self.packed.iter_mut().for_each(|v| *v.get_mut() = UNKNOWN);
            self.packed.resize_with(n, || AtomicU64::new(UNKNOWN));
            self.set_in.clear();
            self.set_in.resize_with(n, || AtomicU8::new(0));
            self.generation = 1;
        }
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
        if self.set_in[sw].load(Relaxed) != self.generation {
            return UNKNOWN;
        }
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
        self.set_in[sw].load(Relaxed) == self.generation && v & TAINT != 0 && v < DEAD
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
        self.packed[sw].store(v, Relaxed);
        self.set_in[sw].store(self.generation, Relaxed);
    }
    /// A dead entry of this epoch.
    #[inline]
    pub(super) fn set_dead(&self, sw: usize) {
        self.packed[sw].store(DEAD | self.epoch.load(Relaxed) as u64, Relaxed);
        self.set_in[sw].store(self.generation, Relaxed);
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

    /// After a reset every entry reads as unknown, whatever it held (a packed suffix, none,
    /// dead, tainted), through more resets than the generations count before they start
    /// over, and entries set after it read back as set.
    #[test]
    fn a_reset_forgets_every_entry() {
        let mut t = SuffixTable::default();
        t.reset(8);
        let live = crate::fault::rftr::Rftr::pack_suffix(5, 0, 1);
        for round in 0..600u32 {
            for sw in 0..8 {
                assert_eq!(t.get(sw), UNKNOWN, "round {round}, switch {sw}");
                assert!(!t.tainted(sw));
            }
            t.set(0, live, false);
            t.set(1, NO_SUFFIX, false);
            t.set_dead(2);
            t.set(3, live, true);
            t.set((round % 4 + 4) as usize, live, false);
            assert_eq!(t.get(0), live);
            assert_eq!(t.get(1), NO_SUFFIX);
            assert_eq!(t.get(2), NO_SUFFIX, "a dead entry of this epoch");
            assert_eq!(t.get(3), live);
            assert!(t.tainted(3));
            t.bump();
            assert_eq!(t.get(2), UNKNOWN, "a dead entry of an older epoch");
            assert_eq!(t.get(3), UNKNOWN, "a tainted entry of an older epoch");
            assert_eq!(t.get(0), live, "an untainted entry outlives a bump");
            // Another size now and then clears the buffer instead.
            t.reset(if round % 97 == 96 { 9 } else { 8 });
            if round % 97 == 96 {
                t.reset(8);
            }
        }
    }

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
