//! The path store behind RFTR's reachability tables.
//!
//! Every switch-level path is stored once, as a run of channels in one flat arena, with the
//! cumulative count of VL transitions at each hop. Two indexes make the reachability
//! questions cheap while memory stays linear in the total length of all paths:
//! - `by_src[s]`: paths starting at switch `s` — the **DRT**: every switch on such a path is
//!   directly reachable from `s` (through the path's prefix);
//! - `by_chan[c]`: paths using channel `c` — the pairs a failure of `c` affects.
//!
//! The base paths (one per switch and end port: tens of millions on fabrics of 10k end
//! ports) are stored first without an index; [`PathStore::index_base`] then builds both
//! indexes in one pass each as compressed rows ([`PathIndex`]), and the paths repairs add
//! later go to short per-key lists beside them. (The IRT, the paths ending at an end port,
//! is not kept as a list: RFTR reads it from the tables, as suffixes.)
//!
//! Paths are never removed; a failure only marks hops dead (`dead_lo`: the first dead hop),
//! which limits the usable prefixes and suffixes.
//!
//! Memory is what bounds the fabrics RFTR can take (a 16x16x16 torus stores 67 million
//! paths of a billion hops), so what is implicit is not stored: the base paths' source
//! index is their id range, and per-hop VLs are kept only for the few paths that change VL
//! (every other path reads a run of zeros).

use fabric::ChannelId;
use rustc_hash::FxHashMap;

pub(crate) const NONE: u32 = u32::MAX;

/// Identifier of a stored path.
pub type PathId = u32;

#[derive(Debug, Default)]
pub struct PathStore {
    /// Source switch index of each path.
    pub src: Vec<u32>,
    /// Destination end-port index (into `Fabric::end_ports`).
    pub dst: Vec<u32>,
    /// LID offset used (0 = base LID).
    pub off: Vec<u8>,
    /// Service level of the path.
    pub sl: Vec<u8>,
    /// `start[p]..start[p + 1]` is the path's range in `hops`.
    pub start: Vec<u32>,
    /// Inter-switch channels, in order.
    pub hops: Vec<ChannelId>,
    /// VL of each hop = VL transitions made up to and including entering this hop, for the
    /// paths with a transition only: `vl[vl_at[p]..]`, as long as the path. The others
    /// (every base path, most repaired ones) read `zeros`.
    vl: Vec<u8>,
    vl_at: FxHashMap<PathId, u32>,
    /// One bit per path: set when `vl_at` holds it (a lookup only for those).
    has_vl: Vec<u64>,
    /// At least as long as the longest path.
    zeros: Vec<u8>,
    /// First dead hop (index within the path), `NONE` when all alive.
    pub dead_lo: Vec<u32>,
    pub by_src: PathIndex,
    pub by_chan: PathIndex,
    /// Paths added since the last [`PathStore::index_pending`], ascending: not yet in
    /// `by_chan`, which only a fault's start reads (`kill_channel` indexes them first).
    unindexed: Vec<PathId>,
    /// The number of base paths ([`PathStore::index_base`]): ids below it have LID offset 0
    /// and SL 0.
    base_len: u32,
}

/// Path lists per key (a source switch, a channel): the base paths' lists as one array of
/// compressed rows, built once, and per key the paths added after it, in id order. Where
/// the base paths are stored key by key (by source switch) the rows are id ranges and
/// `ids` stays empty (`consecutive`).
#[derive(Debug, Default)]
pub struct PathIndex {
    start: Vec<u32>,
    ids: Vec<PathId>,
    /// Beside `ids` (when built with positions): where in the path its key first comes
    /// (`NO_POS` from 255 hops on), so that a fault's start finds a path's dead hop without
    /// reading the path.
    pos: Vec<u8>,
    consecutive: bool,
    extra: Vec<Vec<PathId>>,
}

/// No position kept (a key 255 hops or more into its path).
const NO_POS: u8 = u8::MAX;

impl PathIndex {
    fn new(keys: usize) -> Self {
        PathIndex {
            start: vec![0; keys + 1],
            ids: Vec::new(),
            pos: Vec::new(),
            consecutive: false,
            extra: vec![Vec::new(); keys],
        }
    }

    /// The paths of key `k`, in id order.
    #[inline]
    pub fn get(&self, k: usize) -> impl Iterator<Item = PathId> + Clone + '_ {
        let (lo, hi) = (self.start[k], self.start[k + 1]);
        let (range, listed) = if self.consecutive {
            (lo..hi, &self.ids[..0])
        } else {
            (0..0, &self.ids[lo as usize..hi as usize])
        };
        range
            .chain(listed.iter().copied())
            .chain(self.extra[k].iter().copied())
    }

    /// Adds path `id` (above every path indexed so far) to key `k`, once.
    fn add(&mut self, k: usize, id: PathId) {
        let v = &mut self.extra[k];
        if v.last() != Some(&id) {
            v.push(id);
        }
    }

    /// Compressed rows of `keys` keys: `keys_of(p)` lists path `p`'s keys, for every path
    /// `0..paths` (a key repeated within one path is counted once). Counting first, then
    /// filling: two passes, no list grows.
    fn build<'a>(keys: usize, paths: u32, keys_of: impl Fn(u32) -> &'a [ChannelId]) -> Self {
        let mut start = vec![0u32; keys + 1];
        let mut last = vec![NONE; keys];
        for p in 0..paths {
            for c in keys_of(p) {
                let k = c.idx();
                if last[k] != p {
                    last[k] = p;
                    start[k + 1] += 1;
                }
            }
        }
        for k in 0..keys {
            start[k + 1] += start[k];
        }
        let mut at = start[..keys].to_vec();
        let mut ids = vec![0 as PathId; start[keys] as usize];
        let mut pos = vec![NO_POS; start[keys] as usize];
        last.fill(NONE);
        for p in 0..paths {
            for (i, c) in keys_of(p).iter().enumerate() {
                let k = c.idx();
                if last[k] != p {
                    last[k] = p;
                    ids[at[k] as usize] = p;
                    pos[at[k] as usize] = i.min(NO_POS as usize) as u8;
                    at[k] += 1;
                }
            }
        }
        PathIndex {
            start,
            ids,
            pos,
            consecutive: false,
            extra: lists_with_room(keys),
        }
    }
}

/// Most paths and hops the written headroom holds (`PathStore::reserve_headroom`).
pub(crate) const HEADROOM_PATHS: usize = 2 << 20;
pub(crate) const HEADROOM_HOPS: usize = 16 << 20;

/// Per key an empty list with room for a few paths: a repair's new path joins one list per
/// hop, and a first push into a list without room would allocate inside the repair.
fn lists_with_room(keys: usize) -> Vec<Vec<PathId>> {
    (0..keys).map(|_| Vec::with_capacity(4)).collect()
}

impl Clone for PathIndex {
    fn clone(&self) -> Self {
        PathIndex {
            start: self.start.clone(),
            ids: self.ids.clone(),
            pos: self.pos.clone(),
            consecutive: self.consecutive,
            extra: self.extra.iter().map(|v| roomy(v)).collect(),
        }
    }
}

/// A copy of `v` with a quarter more capacity (at most `HEADROOM_HOPS` more elements, many
/// faults' worth: a sweep clones states of gigabytes), for state that is cloned and then
/// grows. The spare capacity is written once now (`written_headroom`).
pub(crate) fn roomy<T: Clone>(v: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len() + (v.len() / 4).min(HEADROOM_HOPS) + 8);
    out.extend_from_slice(v);
    written_headroom(&mut out, 0);
    out
}

/// Makes room for `extra` more elements (or more) and writes all of the spare capacity
/// once, with copies of the first element: the first write to fresh capacity makes the
/// kernel map and clear its pages, and that should happen here, not inside a timed repair.
/// Nothing is written to an empty vector.
pub(crate) fn written_headroom<T: Clone>(v: &mut Vec<T>, extra: usize) {
    let Some(x) = v.first().cloned() else {
        return;
    };
    // Exactly: `reserve` would double a full arena of hundreds of MB.
    v.reserve_exact(extra);
    let n = v.len();
    v.resize(v.capacity(), x);
    v.truncate(n);
}

/// A copy with room to grow: RFTR states are cloned to branch fault scenarios, and the
/// first path added to an exactly-sized copy would reallocate (and copy) the whole arena.
impl Clone for PathStore {
    fn clone(&self) -> Self {
        PathStore {
            src: roomy(&self.src),
            dst: roomy(&self.dst),
            off: roomy(&self.off),
            sl: roomy(&self.sl),
            start: roomy(&self.start),
            hops: roomy(&self.hops),
            vl: self.vl.clone(),
            vl_at: self.vl_at.clone(),
            has_vl: roomy(&self.has_vl),
            zeros: self.zeros.clone(),
            dead_lo: roomy(&self.dead_lo),
            by_src: self.by_src.clone(),
            by_chan: self.by_chan.clone(),
            unindexed: self.unindexed.clone(),
            base_len: self.base_len,
        }
    }
}

impl PathStore {
    pub fn new(num_switches: usize, num_channels: usize) -> Self {
        PathStore {
            start: vec![0],
            by_src: PathIndex::new(num_switches),
            by_chan: PathIndex::new(num_channels),
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Room for a quarter more paths and hops in the flat arrays (at most 2 million paths and
    /// 16 million hops, many faults' worth), taken and written now: a repair that adds the
    /// first path beyond an exactly filled arena would otherwise copy the whole arena (tens
    /// of MB on large fabrics), and the first write to fresh capacity makes the kernel map
    /// and clear its pages, both inside the timed repair.
    pub fn reserve_headroom(&mut self) {
        let p = (self.len() / 4).min(HEADROOM_PATHS) + 1024;
        let h = (self.hops.len() / 4).min(HEADROOM_HOPS) + 4096;
        written_headroom(&mut self.src, p);
        written_headroom(&mut self.dst, p);
        written_headroom(&mut self.off, p);
        written_headroom(&mut self.sl, p);
        written_headroom(&mut self.start, p);
        written_headroom(&mut self.dead_lo, p);
        written_headroom(&mut self.hops, h);
        written_headroom(&mut self.has_vl, p / 64 + 1);
        // (The indexes' lists of added paths start empty and stay short.)
    }
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Capacity for `paths` more paths of `hops` hops in all in the flat arrays, exactly
    /// (`Vec::reserve` would double an arena of gigabytes).
    pub fn reserve(&mut self, paths: usize, hops: usize) {
        self.src.reserve_exact(paths);
        self.dst.reserve_exact(paths);
        self.off.reserve_exact(paths);
        self.sl.reserve_exact(paths);
        self.start.reserve_exact(paths);
        self.dead_lo.reserve_exact(paths);
        self.hops.reserve_exact(hops);
        self.has_vl.reserve_exact(paths / 64 + 1);
    }

    /// Room for `hops` hops in all (stored and to come), taken now when the arena has less:
    /// the base paths' hops are estimated from the fault-free distances before they are
    /// walked and projected again as they are, and each growth copies the arena.
    pub fn reserve_hops_total(&mut self, hops: usize) {
        if hops > self.hops.capacity() {
            self.hops.reserve_exact(hops - self.hops.len());
        }
    }

    /// Adds a base path (LID offset 0, SL 0, VL 0 on every hop) without indexing it: the
    /// base paths are indexed together by [`PathStore::index_base`].
    pub fn push_base(&mut self, src: u32, dst: u32, hops: &[ChannelId]) -> PathId {
        let id = self.push_common(src, dst, 0, 0, hops);
        self.mark_vl(id, false);
        id
    }

    /// The per-path arrays and the hops of a new path.
    fn push_common(&mut self, src: u32, dst: u32, off: u8, sl: u8, hops: &[ChannelId]) -> PathId {
        let id = self.src.len() as PathId;
        self.src.push(src);
        self.dst.push(dst);
        self.off.push(off);
        self.sl.push(sl);
        self.hops.extend_from_slice(hops);
        self.start.push(self.hops.len() as u32);
        self.dead_lo.push(NONE);
        if self.zeros.len() < hops.len() {
            self.zeros.resize(hops.len().next_power_of_two(), 0);
        }
        id
    }

    /// Records whether path `id` (the newest) has a VL above 0.
    fn mark_vl(&mut self, id: PathId, set: bool) {
        let (w, b) = (id as usize / 64, id % 64);
        if self.has_vl.len() <= w {
            self.has_vl.push(0);
        }
        if set {
            self.has_vl[w] |= 1 << b;
        }
    }

    /// Indexes every path stored so far (the base paths of [`PathStore::push_base`]), before
    /// any [`PathStore::push`].
    pub fn index_base(&mut self) {
        let (ns, nch) = (self.by_src.extra.len(), self.by_chan.extra.len());
        debug_assert!(self.by_chan.extra.iter().all(Vec::is_empty));
        let n = self.len();
        self.base_len = n as u32;
        // Base paths are stored by source switch: one row each.
        let mut start = vec![0u32; ns + 1];
        for &s in &self.src {
            start[s as usize + 1] += 1;
        }
        for k in 0..ns {
            start[k + 1] += start[k];
        }
        debug_assert!(self.src.windows(2).all(|w| w[0] <= w[1]));
        self.by_src = PathIndex {
            start,
            ids: Vec::new(),
            pos: Vec::new(),
            consecutive: true,
            extra: lists_with_room(ns),
        };
        let (start, hops) = (&self.start, &self.hops);
        self.by_chan = PathIndex::build(nch, n as u32, |p| {
            &hops[start[p as usize] as usize..start[p as usize + 1] as usize]
        });
    }

    /// Adds a path; `vls[i]` is the VL of hop `i`.
    pub fn push(
        &mut self,
        src: u32,
        dst: u32,
        off: u8,
        sl: u8,
        hops: &[ChannelId],
        vls: &[u8],
    ) -> PathId {
        debug_assert_eq!(hops.len(), vls.len());
        let id = self.push_common(src, dst, off, sl, hops);
        let changes_vl = vls.iter().any(|&v| v != 0);
        self.mark_vl(id, changes_vl);
        if changes_vl {
            self.vl_at.insert(id, self.vl.len() as u32);
            self.vl.extend_from_slice(vls);
        }
        self.by_src.add(src as usize, id);
        self.unindexed.push(id);
        id
    }

    /// Adds the paths pushed since the last call to the per-channel index (`by_chan`), in
    /// id order. A repair leaves this for after its delta ([`crate::fault::Rftr::settle`]);
    /// a fault's start does it first if nobody did.
    pub fn index_pending(&mut self) {
        let mut ids = std::mem::take(&mut self.unindexed);
        for &id in &ids {
            let (a, b) = (
                self.start[id as usize] as usize,
                self.start[id as usize + 1] as usize,
            );
            for &c in &self.hops[a..b] {
                self.by_chan.add(c.idx(), id);
            }
        }
        ids.clear();
        self.unindexed = ids;
    }

    /// True when every path is in the per-channel index.
    pub fn indexed(&self) -> bool {
        self.unindexed.is_empty()
    }

    /// The LID offset and SL of path `p`, without a read for a base path (a cache miss
    /// each in arrays of every path).
    #[inline]
    pub fn off_sl(&self, p: PathId) -> (u8, u8) {
        if p < self.base_len {
            (0, 0)
        } else {
            (self.off[p as usize], self.sl[p as usize])
        }
    }

    /// The hops of path `p`.
    #[inline]
    pub fn hops_of(&self, p: PathId) -> &[ChannelId] {
        &self.hops[self.start[p as usize] as usize..self.start[p as usize + 1] as usize]
    }
    /// The per-hop VLs of path `p`.
    #[inline]
    pub fn vls_of(&self, p: PathId) -> &[u8] {
        let len = (self.start[p as usize + 1] - self.start[p as usize]) as usize;
        if self.has_vl[p as usize / 64] & (1 << (p % 64)) == 0 {
            return &self.zeros[..len];
        }
        let at = self.vl_at[&p] as usize;
        &self.vl[at..at + len]
    }

    /// Marks channel `c` dead in every path using it, appending those paths to `ids` (a
    /// fault's start keeps that list from fault to fault).
    pub fn kill_channel(&mut self, c: ChannelId, ids: &mut Vec<PathId>) {
        self.index_pending();
        let k = c.idx();
        let ix = &self.by_chan;
        let (lo, hi) = (ix.start[k] as usize, ix.start[k + 1] as usize);
        ids.reserve(hi - lo + ix.extra[k].len());
        // The base paths' rows say where the channel comes; the paths added later are read.
        for (&p, &at) in ix.ids[lo..hi].iter().zip(&ix.pos[lo..hi]) {
            ids.push(p);
            let i = if at == NO_POS {
                self.first_use(p, c)
            } else {
                debug_assert_eq!(self.first_use(p, c), at as u32, "a stale position");
                at as u32
            };
            let d = &mut self.dead_lo[p as usize];
            *d = (*d).min(i);
        }
        for &p in &self.by_chan.extra[k] {
            ids.push(p);
            let i = self.first_use(p, c);
            let d = &mut self.dead_lo[p as usize];
            *d = (*d).min(i);
        }
    }

    /// Where channel `c` first comes in path `p` (`NONE` when it does not).
    fn first_use(&self, p: PathId, c: ChannelId) -> u32 {
        // The first use of `c` is the path's lowest hop it kills.
        self.hops_of(p)
            .iter()
            .position(|&h| h == c)
            .map_or(NONE, |i| i as u32)
    }

    /// The number of base paths ([`PathStore::index_base`]): ids below it are base paths,
    /// stored source by source.
    pub fn base_len(&self) -> u32 {
        self.base_len
    }

    /// The source switch of each of `ids` (ascending), into `out` as (source, id): the base
    /// paths' from their source rows, without a read of each path.
    pub fn sources_of(&self, ids: &[PathId], out: &mut Vec<(u32, PathId)>) {
        let rows = &self.by_src.start;
        let mut s = 0usize;
        for &p in ids {
            if p < self.base_len && self.by_src.consecutive {
                while rows[s + 1] <= p {
                    s += 1;
                }
                debug_assert_eq!(self.src[p as usize] as usize, s);
                out.push((s as u32, p));
            } else {
                out.push((self.src[p as usize], p));
            }
        }
    }

    /// True when path `p` has no dead hop.
    #[inline]
    pub fn alive(&self, p: PathId) -> bool {
        self.dead_lo[p as usize] == NONE
    }

    /// Number of usable prefix hops of `p` (hops before the first dead one).
    #[inline]
    pub fn live_prefix(&self, p: PathId) -> usize {
        let lo = self.dead_lo[p as usize];
        if lo == NONE {
            self.hops_of(p).len()
        } else {
            lo as usize
        }
    }

    /// Total stored hops (the reachability tables' size).
    pub fn total_hops(&self) -> usize {
        self.hops.len()
    }

    /// Bytes held, by part: (per-path arrays, per-hop arrays, indexes), capacities counted.
    pub fn bytes(&self) -> (usize, usize, usize) {
        fn cap<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let per_path = cap(&self.src)
            + cap(&self.dst)
            + cap(&self.off)
            + cap(&self.sl)
            + cap(&self.start)
            + cap(&self.dead_lo)
            + cap(&self.has_vl);
        let per_hop = cap(&self.hops) + cap(&self.vl) + self.vl_at.capacity() * 8;
        let index = |i: &PathIndex| {
            cap(&i.start)
                + cap(&i.ids)
                + cap(&i.pos)
                + cap(&i.extra)
                + i.extra.iter().map(cap).sum::<usize>()
        };
        (
            per_path,
            per_hop,
            index(&self.by_src) + index(&self.by_chan),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_dead_ranges() {
        let mut s = PathStore::new(3, 8);
        let a = s.push(
            0,
            1,
            0,
            0,
            &[ChannelId(0), ChannelId(2), ChannelId(4)],
            &[0, 0, 0],
        );
        let b = s.push(1, 0, 0, 0, &[ChannelId(2)], &[0]);
        assert_eq!(s.by_src.get(0).collect::<Vec<_>>(), vec![a]);
        // the per-channel index waits for `index_pending` (or a fault's start)
        assert!(!s.indexed() && s.by_chan.get(2).next().is_none());
        s.index_pending();
        assert!(s.indexed());
        assert_eq!(s.by_chan.get(2).collect::<Vec<_>>(), vec![a, b]);
        let mut killed = Vec::new();
        s.kill_channel(ChannelId(2), &mut killed);
        assert_eq!(killed, vec![a, b]);
        assert_eq!(s.live_prefix(a), 1);
        assert!(!s.alive(b));
        assert_eq!(s.total_hops(), 4);
    }

    #[test]
    fn base_paths_indexed_in_one_pass_then_added_ones_after() {
        let mut s = PathStore::new(2, 6);
        let ch = |v: &[u32]| v.iter().map(|&c| ChannelId(c)).collect::<Vec<_>>();
        let a = s.push_base(0, 0, &ch(&[1, 3]));
        let b = s.push_base(0, 1, &ch(&[1]));
        // a channel met twice on one path is listed once
        let c = s.push_base(1, 0, &ch(&[3, 5, 3]));
        s.index_base();
        let d = s.push(1, 1, 0, 2, &ch(&[5, 1]), &[0, 1]);
        s.index_pending();
        let get = |i: &PathIndex, k| i.get(k).collect::<Vec<_>>();
        assert_eq!(get(&s.by_src, 0), vec![a, b]);
        assert_eq!(get(&s.by_src, 1), vec![c, d]);
        assert_eq!(get(&s.by_chan, 1), vec![a, b, d]);
        assert_eq!(get(&s.by_chan, 3), vec![a, c]);
        assert_eq!(get(&s.by_chan, 5), vec![c, d]);
        assert!(get(&s.by_chan, 0).is_empty());
        assert_eq!(s.vls_of(c), &[0, 0, 0]);
        assert_eq!(s.vls_of(d), &[0, 1]);
        // a copy keeps both parts of each list
        let t = s.clone();
        assert_eq!(get(&t.by_chan, 1), vec![a, b, d]);
        let mut killed = Vec::new();
        s.kill_channel(ChannelId(3), &mut killed);
        assert_eq!(killed, vec![a, c]);
        assert_eq!(s.dead_lo[c as usize], 0);
        // a later fault further along keeps the first dead hop
        s.kill_channel(ChannelId(5), &mut killed);
        assert_eq!(s.dead_lo[c as usize], 0);
        assert_eq!(s.live_prefix(d), 0);
    }
}
