//! The base-LID walks of every switch toward every end port, kept as packed suffixes
//! (`Rftr::walk_suf`), so that a suffix table need not walk them again.
//!
//! A suffix table of (destination, base LID) starts empty for every destination a fault
//! moves and fills an entry by walking the LFTs from that switch: on a 16x16x8 torus a fifth
//! of a repair went into those walks, ten hops each, for every destination. But a fault
//! changes the walk of a switch only when the walk crossed a channel it killed, and a
//! repair rewrites only entries whose walks were dead when its fault came: a walk that is
//! live at a fault's start stays as it was through the whole repair. So the walks are kept
//! here between faults, and only those of the switches behind a dead channel are forgotten
//! at a fault's start (found backwards from the channel over the LFT entries that lead into
//! it: `forget_dead_walks`), to be walked again once the repair is done (`Rftr::settle`).
//! An entry either holds the walk's packed suffix, exactly, or one of the markers below;
//! a walk that died with an earlier fault may stay marked dead after a repair revived it,
//! which only costs a walk.

use super::suffix::Ahead;
use super::*;
use fabric::SwitchIdx;
use rayon::prelude::*;

/// Not known: the suffix table walks it.
pub(super) const WALK_UNKNOWN: u32 = u32::MAX;
/// Dead or looping when last walked (maybe revived since: read as unknown).
const WALK_DEAD: u32 = u32::MAX - 1;
/// On the walk being computed.
const WALK_ON: u32 = u32::MAX - 2;

/// A packed suffix (`Rftr::pack_suffix`) as a walk entry, or None when it does not fit.
#[inline]
fn narrow(v: u64) -> Option<u32> {
    let (hops, trans, class) = unpack_suffix(v)?;
    // (below 255 transitions, so that no entry reaches the markers)
    (hops < 1 << 16 && trans < u8::MAX).then_some((trans as u32) << 24 | hops << 8 | class as u32)
}

/// A walk entry below `WALK_ON` as a packed suffix.
#[inline]
pub(super) fn widen(w: u32) -> u64 {
    Rftr::pack_suffix((w >> 8) & 0xFFFF, (w >> 24) as u8, w as u8)
}

impl<'f> Rftr<'f> {
    /// The packed suffix of the base-LID walk of switch `sw` toward end `e`, when it is kept
    /// (live and exact; see the module docs).
    #[inline]
    pub(super) fn kept_walk(&self, e: u32, sw: u32) -> Option<u64> {
        let ns = self.f.num_switches();
        let w = *self.walk_suf.get(e as usize * ns + sw as usize)?;
        (w < WALK_ON).then(|| widen(w))
    }

    /// The packed suffix of switch `sw`'s base-LID walk toward end `e`, walked now (None
    /// when it does not arrive): what a kept entry must equal.
    pub(super) fn walked_suffix(&self, e: u32, sw: u32) -> Option<u64> {
        let f = self.f;
        let lid = f.port(f.end_ports[e as usize]).lid;
        let mut hops = Vec::new();
        if !self.walk(sw, e, lid, &mut hops) || hops.is_empty() {
            return None;
        }
        let trans = hops
            .windows(2)
            .map(|w| self.illegal(w[0], w[1]) as u8)
            .sum::<u8>();
        Some(Self::pack_suffix(
            hops.len() as u32,
            trans,
            self.ch_class[hops[0].idx()],
        ))
    }

    /// Walks every switch toward every end port (at the start, on every thread).
    pub(super) fn walk_all(&mut self) {
        let (ns, ne) = (self.f.num_switches(), self.f.end_ports.len());
        let mut table = super::tables::written(ns * ne, WALK_UNKNOWN);
        table
            .par_chunks_mut(ns.max(1))
            .enumerate()
            .for_each(|(e, col)| {
                if self.end_sw[e] != NONE {
                    self.fill_walks(e as u32, col, 0..ns as u32);
                }
            });
        self.walk_suf = table;
    }

    /// Fills the entries of column `col` (end `e`) of the switches `starts` that hold no
    /// live walk, and those of the switches their walks pass, with the walk the suffix tables
    /// make (`Rftr::walk_twice`): until the end's switch, a switch with a live entry, a loop,
    /// or a hop to nowhere. A dead entry is walked again.
    fn fill_walks(&self, e: u32, col: &mut [u32], starts: impl Iterator<Item = u32>) {
        let f = self.f;
        let ns = f.num_switches();
        let lid = f.port(f.end_ports[e as usize]).lid as usize;
        let t = self.end_sw[e as usize];
        let lfts: &[u8] = self.by_lid.get(lid * ns..(lid + 1) * ns).unwrap_or(&[]);
        let cells = std::cell::Cell::from_mut(col).as_slice_of_cells();
        for s0 in starts {
            if s0 == t {
                cells[t as usize].set(WALK_DEAD);
                continue;
            }
            if cells[s0 as usize].get() < WALK_ON {
                continue;
            }
            let look = |next: u32| match cells[next as usize].get() {
                WALK_ON => Ahead::OnWalk,
                WALK_UNKNOWN | WALK_DEAD => Ahead::Unknown,
                w => Ahead::Known(widen(w), false),
            };
            self.walk_twice(
                e,
                s0,
                lfts,
                look,
                |sw| cells[sw as usize].set(WALK_ON),
                &|_| false,
                |sw, v, _| cells[sw as usize].set(v.and_then(narrow).unwrap_or(WALK_DEAD)),
            );
        }
    }

    /// At a fault's start, with its channels `dead` failed in the plane: forgets the kept
    /// walks that crossed one of them (and every walk toward an end port in `gone`, cut off
    /// or on a failed switch), listing them for `settle_walks`. The walks crossing channel
    /// u -> v toward a LID are those of the switches whose entries lead into u and of u
    /// itself, when u's entry takes the channel: found backwards from u.
    ///
    /// Appends to `behind` the (end, switch with end ports) found so: every pair whose
    /// selected path keeps the base LID and crossed a dead channel is among them (such a
    /// path is its switch's base-LID walk: `Rftr::start_fault`).
    pub(super) fn forget_dead_walks(
        &mut self,
        dead: &[ChannelId],
        gone: &[u32],
        behind: &mut Vec<(u32, u32)>,
    ) {
        let f = self.f;
        let (ns, ne) = (f.num_switches(), f.end_ports.len());
        let mut forgot = std::mem::take(&mut self.walks_forgotten);
        let mut queue = std::mem::take(&mut self.bfs_queue);
        for &e in gone {
            self.walk_suf[e as usize * ns..(e as usize + 1) * ns].fill(WALK_DEAD);
        }
        for &c in dead {
            let Some(u) = f.src_switch(c) else {
                continue;
            };
            let u = u.0;
            let port = self.ch_port[c.idx()];
            for e in 0..ne {
                if self.end_sw[e] == NONE {
                    continue;
                }
                let lid = f.port(f.end_ports[e]).lid as usize;
                // u's row of the switch-major tables: contiguous, where `by_lid` is a column
                // apart per LID.
                if self.routing.lft_of(SwitchIdx(u)).get(lid) != Some(&port) {
                    continue;
                }
                let col = &self.by_lid[lid * ns..(lid + 1) * ns];
                self.stamp_gen += 1;
                let g = self.stamp_gen;
                queue.clear();
                queue.push(u);
                self.stamp[u as usize] = g;
                let mut at = 0;
                while at < queue.len() {
                    let y = queue[at];
                    at += 1;
                    let w = &mut self.walk_suf[e * ns + y as usize];
                    if *w != WALK_UNKNOWN {
                        *w = WALK_UNKNOWN;
                        forgot.push((e as u32, y));
                    }
                    if self.slot_of[y as usize] != NONE {
                        behind.push((e as u32, y));
                    }
                    for &(x, px) in self.in_switch.of(y) {
                        if self.stamp[x as usize] != g && col[x as usize] == px {
                            self.stamp[x as usize] = g;
                            queue.push(x);
                        }
                    }
                }
            }
        }
        self.bfs_queue = queue;
        self.walks_forgotten = forgot;
    }

    /// Walks again the entries the last fault forgot, over the tables its repair left (the
    /// rest of `settle`).
    pub(super) fn settle_walks(&mut self) {
        let ns = self.f.num_switches();
        let mut forgot = std::mem::take(&mut self.walks_forgotten);
        forgot.sort_unstable();
        let mut table = std::mem::take(&mut self.walk_suf);
        for run in forgot.chunk_by(|a, b| a.0 == b.0) {
            let e = run[0].0;
            if self.end_sw[e as usize] != NONE {
                let col = &mut table[e as usize * ns..(e as usize + 1) * ns];
                self.fill_walks(e, col, run.iter().map(|x| x.1));
            }
        }
        self.walk_suf = table;
        forgot.clear();
        self.walks_forgotten = forgot;
    }
}

/// The switch-to-switch channels into each switch: (switch at the near end, its port).
#[derive(Clone, Debug, Default)]
pub(super) struct InSwitch {
    start: Vec<u32>,
    from: Vec<(u32, u8)>,
}

impl InSwitch {
    pub(super) fn new(f: &Fabric, ch_dst_sw: &[u32], ch_port: &[u8]) -> Self {
        let ns = f.num_switches();
        let mut start = vec![0u32; ns + 1];
        let chans = || {
            (0..ch_dst_sw.len()).filter_map(|c| {
                let y = ch_dst_sw[c];
                let x = f.src_switch(ChannelId(c as u32))?;
                (y != NONE).then_some((y, x.0, ch_port[c]))
            })
        };
        for (y, _, _) in chans() {
            start[y as usize + 1] += 1;
        }
        for i in 0..ns {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut from = vec![(0, 0); start[ns] as usize];
        for (y, x, p) in chans() {
            from[fill[y as usize] as usize] = (x, p);
            fill[y as usize] += 1;
        }
        InSwitch { start, from }
    }

    /// The channels into switch `y`.
    pub(super) fn of(&self, y: u32) -> &[(u32, u8)] {
        &self.from[self.start[y as usize] as usize..self.start[y as usize + 1] as usize]
    }
}
