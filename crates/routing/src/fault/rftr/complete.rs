//! Completing RFTR's tables for checkers that walk every (source, LID).
//!
//! RFTR routes what sources use: a repaired pair's new virtual LID along its repair tree, and
//! leaves alone the entries nobody uses any more (a base LID whose path died for the sources
//! that moved to a virtual LID). A subnet manager does not need more. `fabroute check` and
//! ibdmchk (`-l`) walk every LID from every source, and the path SL file gives each pair one
//! SL, so for them every (source, LID) must arrive, and the pairs no source uses ("phantom"
//! pairs) must not close a credit loop with the real ones.
//!
//! [`Rftr::complete_for_checkers`] does that without touching any path in use (over a
//! turn-rule base, where SL 0 is VL 0 everywhere and VL 0 carries only paths legal under the
//! base's rule):
//! - **Entries.** Per LID column, switches whose entry does not deliver (no entry, a dead
//!   port, a loop) get one by a breadth-first search from the switches whose path delivers
//!   and is legal under the base rule, taking only legal turns. No real path crosses such a
//!   switch (every real path delivers), so real paths keep every hop.
//! - **Path SLs of phantom pairs.** A source whose switch's path is legal gets SL 0: the
//!   whole path is legal and on VL 0. Switches without any legal way get entries from a
//!   second search that allows every turn; a phantom path that turns against the rule (its
//!   own, or a repaired path's it joins) changes VL at each such turn (VL = illegal turns so
//!   far, as RFTR's own paths) and gets an SL coloured like RFTR's ([`crate::vl::SlColouring`],
//!   starting from RFTR's own colouring so that shared SL2VL entries agree). Within each VL
//!   every dependency is then a legal turn and VLs never decrease along a path, so no cycle
//!   can form; pairs that would need more VLs than the budget, or an SL beyond it, are left as
//!   they are and counted.
//!
//! Over a base that keeps its own VLs (`Base::FreshVls`) there is no single rule to extend
//! the base's columns with, so nothing is done there (reported).

use super::{Rftr, NONE};
use crate::forward::Hop;
use crate::tables::{PathSl, Routing};
use crate::vl::Need;
use fabric::{ChannelId, Lid, NO_PORT};
use rayon::prelude::*;
use serde::Serialize;

/// What the completion did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// Whether it ran (not over a base that keeps its own VLs).
    pub applied: bool,
    /// LFT entries set so that every switch's path delivers.
    pub lft_entries: u64,
    /// Phantom (source, LID) pairs whose path SL was set.
    pub phantom_sls: u64,
    /// SL2VL entries set for phantom paths that change VL where they turn against the rule.
    pub sl2vl_entries: u64,
    /// Phantom pairs left as they were: no legal way to their destination from their switch
    /// (`check` reports them).
    pub uncovered: u64,
}

const UNSEEN: u8 = 0;
const ON_STACK: u8 = 1;
const DONE: u8 = 2;

/// Per-column result, applied after the parallel part.
#[derive(Default)]
struct ColumnFix {
    lid: Lid,
    entries: Vec<(u32, u8)>,
    sls: Vec<(u32, u8)>,
    /// Phantom pairs whose path turns against the rule: (source end, SL2VL needs).
    pending: Vec<(u32, Vec<Need>)>,
    uncovered: u64,
}

impl<'f> Rftr<'f> {
    /// Completes `tables` (this state's routing, possibly with unused virtual LIDs mirrored
    /// from their base LID) so that every (source, LID) arrives and the phantom pairs add no
    /// dependency a credit loop can use (module docs).
    pub fn complete_for_checkers(&self, tables: &mut Routing) -> Completion {
        if self.fresh.is_some() {
            return Completion::default();
        }
        let f = self.f;
        let ne = f.end_ports.len();
        let stride = tables.stride();
        let columns: Vec<(u32, Lid)> = (0..ne as u32)
            .filter(|&d| self.end_sw[d as usize] != NONE && self.plane.attach(d).live)
            .flat_map(|d| {
                let port = f.port(f.end_ports[d as usize]);
                let base = port.lid as u32;
                (0..1u32 << port.lmc.min(7))
                    .map(move |o| base + o)
                    .filter(move |&l| l > 0 && (l as usize) < stride)
                    .map(move |l| (d, l as Lid))
            })
            .collect();
        let fixes: Vec<ColumnFix> = {
            let tables = &*tables;
            columns
                .par_iter()
                .map(|&(d, lid)| self.complete_column(tables, d, lid))
                .collect()
        };
        let mut c = Completion {
            applied: true,
            ..Completion::default()
        };
        let mut colours = self.colours.clone();
        for fx in fixes {
            for (e, needs) in &fx.pending {
                let Some(sl) = colours.find(needs).or_else(|| colours.fresh()) else {
                    c.uncovered += 1;
                    continue;
                };
                colours.assign(sl, needs, |n| {
                    tables
                        .sl2vl
                        .set(f.switches[n.sw as usize], n.inp, n.out, sl, n.vl);
                    c.sl2vl_entries += 1;
                });
                if let PathSl::PerPair { stride: st, sl: v } = &mut tables.path_sl {
                    v[*e as usize * *st + fx.lid as usize] = sl;
                }
                c.phantom_sls += 1;
            }
            for &(s, port) in &fx.entries {
                tables.lft[s as usize * stride + fx.lid as usize] = port;
            }
            if let PathSl::PerPair { stride: st, sl } = &mut tables.path_sl {
                for &(e, v) in &fx.sls {
                    sl[e as usize * *st + fx.lid as usize] = v;
                }
            }
            c.lft_entries += fx.entries.len() as u64;
            c.phantom_sls += fx.sls.len() as u64;
            c.uncovered += fx.uncovered;
        }
        c
    }

    /// One LID column of destination end `d`.
    fn complete_column(&self, tables: &Routing, d: u32, lid: Lid) -> ColumnFix {
        let f = self.f;
        let ns = f.num_switches();
        let stride = tables.stride();
        let target = f.end_ports[d as usize];
        let ds = self.end_sw[d as usize] as usize;
        let mut fx = ColumnFix {
            lid,
            ..ColumnFix::default()
        };
        let mut entry: Vec<u8> = (0..ns)
            .map(|s| tables.lft[s * stride + lid as usize])
            .collect();
        // The destination's own switch hands the packet to it.
        if !matches!(self.plane.hop(ds, entry[ds]), Hop::End { port, .. } if port == target) {
            entry[ds] = self.end_swport[d as usize];
            fx.entries.push((ds as u32, entry[ds]));
        }
        // Which switches deliver, on which channel they leave, whether their path is legal.
        let mut state = vec![UNSEEN; ns];
        let mut deliv = vec![false; ns];
        let mut legal = vec![false; ns];
        let mut out: Vec<ChannelId> = vec![ChannelId(u32::MAX); ns];
        let mut hops = vec![u32::MAX; ns];
        // illegal turns along the path from the switch (packets injected there)
        let mut turns = vec![0u8; ns];
        let mut stack: Vec<usize> = Vec::new();
        for s0 in 0..ns {
            if state[s0] != UNSEEN || self.mask.node_dead(f.switches[s0]) {
                continue;
            }
            stack.clear();
            let mut s = s0;
            loop {
                if state[s] != UNSEEN {
                    break;
                }
                match self.plane.hop(s, entry[s]) {
                    Hop::End { port, ch } if port == target => {
                        state[s] = DONE;
                        deliv[s] = true;
                        legal[s] = true;
                        out[s] = ch;
                        hops[s] = 0;
                        break;
                    }
                    Hop::Switch { sw, ch, .. } => {
                        state[s] = ON_STACK;
                        out[s] = ch;
                        stack.push(s);
                        s = sw as usize;
                    }
                    _ => {
                        state[s] = DONE;
                        break;
                    }
                }
            }
            while let Some(x) = stack.pop() {
                let Hop::Switch { sw, ch, .. } = self.plane.hop(x, entry[x]) else {
                    unreachable!("pushed switches forward to a switch");
                };
                let y = sw as usize;
                state[x] = DONE;
                if state[y] == DONE && deliv[y] {
                    deliv[x] = true;
                    hops[x] = hops[y] + 1;
                    let turn_ok = y == ds || self.rule.legal(f, ch, out[y]);
                    legal[x] = legal[y] && turn_ok;
                    turns[x] = turns[y].saturating_add(u8::from(!turn_ok));
                }
            }
        }
        // Fill, level by level of illegal turns t = 0..=max (VLs - 1): breadth-first by hops
        // from the switches whose path takes t illegal turns, through legal turns; a switch
        // reached only through an illegal turn waits for level t + 1. (Level 0 gives legal
        // paths on VL 0.)
        let max_vl = self.cfg.vls.saturating_sub(1);
        let mut filled = vec![false; ns];
        // candidates for the next level: (switch, its next hop, entry port, channel)
        let mut next_level: Vec<(usize, usize, u8, ChannelId)> = Vec::new();
        for t in 0..=max_vl {
            let mut seeds: Vec<usize> = Vec::new();
            next_level.sort_by_key(|&(x, y, _, _)| (x, hops[y], y));
            for &(x, y, port, ch) in &next_level {
                if deliv[x] || filled[x] {
                    continue;
                }
                filled[x] = true;
                entry[x] = port;
                out[x] = ch;
                hops[x] = hops[y] + 1;
                turns[x] = t;
                fx.entries.push((x as u32, port));
                seeds.push(x);
            }
            next_level.clear();
            seeds.extend((0..ns).filter(|&s| deliv[s] && turns[s] == t));
            seeds.sort_by_key(|&s| (hops[s], s));
            seeds.dedup();
            let mut queue: Vec<usize> = Vec::new();
            let (mut ia, mut ib) = (0, 0);
            loop {
                let y = match (seeds.get(ia), queue.get(ib)) {
                    (Some(&a), Some(&b)) if hops[a] <= hops[b] => {
                        ia += 1;
                        a
                    }
                    (Some(_), Some(&b)) | (None, Some(&b)) => {
                        ib += 1;
                        b
                    }
                    (Some(&a), None) => {
                        ia += 1;
                        a
                    }
                    (None, None) => break,
                };
                for &c in f.switch_links(y) {
                    // c leaves y toward x; x would enter y on c ^ 1.
                    let Hop::Switch { sw, .. } = self.plane.hop(y, f.port(f.channel_src(c)).num)
                    else {
                        continue;
                    };
                    let x = sw as usize;
                    if deliv[x] || filled[x] || self.mask.node_dead(f.switches[x]) {
                        continue;
                    }
                    let into = ChannelId(c.0 ^ 1);
                    let xport = f.port(f.channel_src(into)).num;
                    if !matches!(self.plane.hop(x, xport), Hop::Switch { sw, .. } if sw as usize == y)
                    {
                        continue;
                    }
                    if y != ds && !self.rule.legal(f, into, out[y]) {
                        next_level.push((x, y, xport, into));
                        continue;
                    }
                    filled[x] = true;
                    entry[x] = xport;
                    out[x] = into;
                    hops[x] = hops[y] + 1;
                    turns[x] = t;
                    legal[x] = t == 0;
                    fx.entries.push((x as u32, xport));
                    queue.push(x);
                }
            }
        }
        // Switches left without a way within the VL budget: no entry, so that no walk from
        // them adds a dependency (no path in use crosses them: they did not deliver).
        for x in 0..ns {
            if !deliv[x] && !filled[x] && !self.mask.node_dead(f.switches[x]) && entry[x] != NO_PORT
            {
                entry[x] = NO_PORT;
                fx.entries.push((x as u32, NO_PORT));
            }
        }
        // Phantom pairs: sources that do not use this LID toward d.
        for e in 0..f.end_ports.len() as u32 {
            let s = self.end_sw[e as usize];
            if e == d || s == NONE || !self.plane.attach(e).live {
                continue;
            }
            if self.dlid(e, d) == Some(lid) {
                continue;
            }
            let s = s as usize;
            if s == ds || (legal[s] && (deliv[s] || filled[s])) {
                // a legal path: SL 0, VL 0 all the way
                if tables.path_sl.get(e as usize, lid) != 0 {
                    fx.sls.push((e, 0));
                }
                continue;
            }
            if !(deliv[s] || filled[s]) {
                fx.uncovered += 1;
                continue;
            }
            // Walk the path; VL = illegal turns so far; the SL is coloured afterwards.
            let mut needs = Vec::new();
            let (mut x, mut inp, mut prev, mut vl) = (s, self.end_swport[e as usize], None, 0u8);
            let mut ok = true;
            while x != ds {
                let Hop::Switch { sw, inp: nin, ch } = self.plane.hop(x, entry[x]) else {
                    ok = false;
                    break;
                };
                if let Some(pc) = prev {
                    if !self.rule.legal(f, pc, ch) {
                        vl += 1;
                    }
                }
                if vl > max_vl || needs.len() > ns {
                    ok = false;
                    break;
                }
                needs.push(Need {
                    sw: x as u32,
                    inp,
                    out: entry[x],
                    vl,
                });
                prev = Some(ch);
                inp = nin;
                x = sw as usize;
            }
            if ok {
                fx.pending.push((e, needs));
            } else {
                fx.uncovered += 1;
            }
        }
        fx
    }
}
