//! RFTR's switch-to-switch searches: the fault-free distances (plain and under the turn
//! rule), the channels into each (switch, class), and the backward search that bounds a
//! kept walk. No RFTR state; `Rftr` owns their results.

use super::super::paths::NONE;
use super::tables::written;
use fabric::SwitchIdx;
use fabric::{ChannelId, Fabric};

/// Hop count standing for "127 or more, or unreachable" in `Rftr::sdist`. Below 128, so
/// two distances add up without carrying out of their byte (`range_mask`).
pub(super) const FAR: u8 = 0x7F;
/// Above this many switches the distance matrix (one byte per pair) is not kept.
pub(super) const SDIST_MAX_SWITCHES: usize = 8192;
/// Most entries (bytes) of `LegalDistances::states`: 64 MB, a 4,096-switch fabric under a
/// two-class rule.
pub(super) const STATES_MAX: usize = 1 << 26;

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
    /// Per (destination switch t, switch v, class k), `states[(t * ns + v) * ncls + k]`:
    /// the hops from `v`, entered by a channel of class `k`, to `t` (`FAR` as above). A walk
    /// entering `v` so may go on only by turns the rule allows, so this bounds what follows
    /// a given hop more closely than `from`, which lets every first hop be taken. Empty
    /// above `STATES_MAX` entries.
    pub states: Vec<u8>,
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
        links: &InLinks,
    ) -> Option<LegalDistances> {
        use rayon::prelude::*;
        let ns = f.num_switches();
        if ns > SDIST_MAX_SWITCHES || ns * ns * ncls > 1 << 28 || ns == 0 {
            return None;
        }
        let mut from = written(ns * ns, FAR);
        let rule = TurnSearch {
            f,
            ch_dst_sw,
            ch_class,
            pen,
            ncls,
        };
        from.par_chunks_mut(ns).enumerate().for_each_init(
            || (vec![FAR; ns * ncls], Vec::with_capacity(ns * ncls)),
            |(dist, queue), (s, row)| {
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
        // One backward search per destination switch, over every link.
        let mut states = Vec::new();
        if ns * ns * ncls <= STATES_MAX {
            let none_dead = vec![false; ch_class.len()];
            states = written(ns * ns * ncls, FAR);
            states.par_chunks_mut(ns * ncls).enumerate().for_each_init(
                BackSearch::default,
                |search, (t, row)| {
                    search.reset(t as u32, ns * ncls, ncls);
                    search.advance(u32::MAX - 1, links, &none_dead, pen, ncls);
                    for (d, &h) in row.iter_mut().zip(&search.d) {
                        *d = h.min(FAR as u32) as u8;
                    }
                },
            );
        }
        let top = from
            .iter()
            .copied()
            .filter(|&d| d != FAR)
            .max()
            .unwrap_or(0);
        Some(LegalDistances {
            from,
            to,
            states,
            top,
        })
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
