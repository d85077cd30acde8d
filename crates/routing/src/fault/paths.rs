//! The path store behind RFTR's reachability tables.
//!
//! Every switch-level path is stored once, as a run of channels in one flat arena, with the
//! cumulative count of VL transitions at each hop. Three indexes make the reachability
//! questions cheap while memory stays linear in the total length of all paths:
//! - `by_src[s]`: paths starting at switch `s` — the **DRT**: every switch on such a path is
//!   directly reachable from `s` (through the path's prefix);
//! - `by_dst[e]`: paths ending at end port `e` — the **IRT**: `e` is indirectly reachable from
//!   every switch on such a path (through its suffix);
//! - `by_chan[c]`: paths using channel `c` — the pairs a failure of `c` affects.
//!
//! Paths are never removed; a failure only marks hops dead (`dead_lo`/`dead_hi`: the first and
//! last dead hop), which limits the usable prefixes and suffixes.

use fabric::ChannelId;

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
    /// `start[p]..start[p + 1]` is the path's range in `hops` / `vl`.
    pub start: Vec<u32>,
    /// Inter-switch channels, in order.
    pub hops: Vec<ChannelId>,
    /// VL of each hop = VL transitions made up to and including entering this hop.
    pub vl: Vec<u8>,
    /// First and last dead hop (index within the path), `NONE` when all alive.
    pub dead_lo: Vec<u32>,
    pub dead_hi: Vec<u32>,
    pub by_src: Vec<Vec<PathId>>,
    pub by_dst: Vec<Vec<PathId>>,
    pub by_chan: Vec<Vec<PathId>>,
}

/// A copy of `v` with a quarter more capacity, for state that is cloned and then grows.
/// The spare capacity is written once now (`written_headroom`).
pub(crate) fn roomy<T: Clone>(v: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len() + v.len() / 4 + 8);
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
    v.reserve(extra);
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
            vl: roomy(&self.vl),
            dead_lo: roomy(&self.dead_lo),
            dead_hi: roomy(&self.dead_hi),
            by_src: self.by_src.iter().map(|v| roomy(v)).collect(),
            by_dst: self.by_dst.iter().map(|v| roomy(v)).collect(),
            by_chan: self.by_chan.iter().map(|v| roomy(v)).collect(),
        }
    }
}

impl PathStore {
    pub fn new(num_switches: usize, num_ends: usize, num_channels: usize) -> Self {
        PathStore {
            start: vec![0],
            by_src: vec![Vec::new(); num_switches],
            by_dst: vec![Vec::new(); num_ends],
            by_chan: vec![Vec::new(); num_channels],
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Room for a quarter more paths and hops in the flat arrays, taken and written now: a
    /// repair that adds the first path beyond an exactly filled arena would otherwise copy
    /// the whole arena (tens of MB on large fabrics), and the first write to fresh capacity
    /// makes the kernel map and clear its pages, both inside the timed repair.
    pub fn reserve_headroom(&mut self) {
        let (p, h) = (self.len() / 4 + 1024, self.hops.len() / 4 + 4096);
        written_headroom(&mut self.src, p);
        written_headroom(&mut self.dst, p);
        written_headroom(&mut self.off, p);
        written_headroom(&mut self.sl, p);
        written_headroom(&mut self.start, p);
        written_headroom(&mut self.dead_lo, p);
        written_headroom(&mut self.dead_hi, p);
        written_headroom(&mut self.hops, h);
        written_headroom(&mut self.vl, h);
        // The indexes too: a repair's path joins one list per hop, and a channel's list on a
        // torus holds 100k paths, so growing a full one inside a repair copies it to fresh
        // pages.
        for v in self
            .by_src
            .iter_mut()
            .chain(&mut self.by_dst)
            .chain(&mut self.by_chan)
        {
            let extra = v.len() / 4 + 8;
            written_headroom(v, extra);
        }
    }
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Capacity for `paths` more paths of `hops` hops in all in the flat arrays.
    pub fn reserve(&mut self, paths: usize, hops: usize) {
        self.src.reserve(paths);
        self.dst.reserve(paths);
        self.off.reserve(paths);
        self.sl.reserve(paths);
        self.start.reserve(paths);
        self.dead_lo.reserve(paths);
        self.dead_hi.reserve(paths);
        self.hops.reserve(hops);
        self.vl.reserve(hops);
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
        let id = self.src.len() as PathId;
        self.src.push(src);
        self.dst.push(dst);
        self.off.push(off);
        self.sl.push(sl);
        self.hops.extend_from_slice(hops);
        self.vl.extend_from_slice(vls);
        self.start.push(self.hops.len() as u32);
        self.dead_lo.push(NONE);
        self.dead_hi.push(NONE);
        self.by_src[src as usize].push(id);
        self.by_dst[dst as usize].push(id);
        for &c in hops {
            let v = &mut self.by_chan[c.idx()];
            if v.last() != Some(&id) {
                v.push(id);
            }
        }
        id
    }

    /// The hops of path `p`.
    #[inline]
    pub fn hops_of(&self, p: PathId) -> &[ChannelId] {
        &self.hops[self.start[p as usize] as usize..self.start[p as usize + 1] as usize]
    }
    /// The per-hop VLs of path `p`.
    #[inline]
    pub fn vls_of(&self, p: PathId) -> &[u8] {
        &self.vl[self.start[p as usize] as usize..self.start[p as usize + 1] as usize]
    }

    /// Marks channel `c` dead in every path using it; returns those paths.
    pub fn kill_channel(&mut self, c: ChannelId) -> Vec<PathId> {
        let ids = self.by_chan[c.idx()].clone();
        for &p in &ids {
            let (s, e) = (
                self.start[p as usize] as usize,
                self.start[p as usize + 1] as usize,
            );
            for (i, &h) in self.hops[s..e].iter().enumerate() {
                if h == c {
                    let i = i as u32;
                    let lo = &mut self.dead_lo[p as usize];
                    if *lo == NONE || i < *lo {
                        *lo = i;
                    }
                    let hi = &mut self.dead_hi[p as usize];
                    if *hi == NONE || i > *hi {
                        *hi = i;
                    }
                }
            }
        }
        ids
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_dead_ranges() {
        let mut s = PathStore::new(3, 2, 8);
        let a = s.push(
            0,
            1,
            0,
            0,
            &[ChannelId(0), ChannelId(2), ChannelId(4)],
            &[0, 0, 0],
        );
        let b = s.push(1, 0, 0, 0, &[ChannelId(2)], &[0]);
        assert_eq!(s.by_src[0], vec![a]);
        assert_eq!(s.by_dst[0], vec![b]);
        assert_eq!(s.by_chan[2], vec![a, b]);
        assert_eq!(s.kill_channel(ChannelId(2)), vec![a, b]);
        assert_eq!(s.live_prefix(a), 1);
        assert_eq!(s.dead_hi[a as usize], 1);
        assert!(!s.alive(b));
        assert_eq!(s.total_hops(), 4);
    }
}
