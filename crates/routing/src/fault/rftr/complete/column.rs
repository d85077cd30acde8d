//! The completion's per-column work: entries for switches whose walk does not deliver,
//! breadth-first by illegal turns, and the base LID's path followed where it delivers.

use super::*;
use fabric::SwitchIdx;

impl Rftr<'_> {
    /// One LID column of destination end `d`; without `routes`, no entry is added; with
    /// `follow` (and `in_use`), switches that do not deliver follow their base LID's path
    /// where it delivers ([`Rftr::follow_base`]).
    pub(super) fn complete_column(
        &self,
        tables: &Routing,
        dest: Dest,
        lid: Lid,
        in_use: bool,
        routes: bool,
        follow: bool,
    ) -> ColumnFix {
        let f = self.f;
        let ns = f.num_switches();
        let stride = tables.stride();
        let (target, ds) = match dest {
            Dest::End(d) => (
                Some(f.end_ports[d as usize]),
                self.end_sw[d as usize] as usize,
            ),
            Dest::Switch(t) => (None, t as usize),
        };
        let mut fx = ColumnFix {
            lid,
            switch: target.is_none(),
            ..ColumnFix::default()
        };
        let entry: Vec<u8> = (0..ns)
            .map(|s| tables.lft[s * stride + lid as usize])
            .collect();
        let mut col = Col::new(entry);
        // The destination's own switch hands the packet to it.
        if let (Some(target), Dest::End(d)) = (target, dest) {
            if routes
                && !matches!(self.plane.hop(ds, col.entry[ds]), Hop::End { port, .. } if port == target)
            {
                col.entry[ds] = self.end_swport[d as usize];
                fx.entries.push((ds as u32, col.entry[ds]));
            }
        }
        self.resolve_column(&mut col, ds, target);
        if let Some(target) = target {
            let base = f.port(target).lid;
            if follow && in_use && lid != base {
                self.follow_base(tables, &mut col, ds, target, base, &mut fx);
            }
        }
        if target.is_none() {
            // A switch LID: the switches whose walk no longer delivers get paths, legal ones
            // first (also while pairs are left unrepaired); walks that deliver, and path SLs,
            // stay.
            // Only walks a failed cable (or a loop) broke: a switch the tables give no
            // entry toward this LID (an engine's choice) is left so.
            // Per switch: 0 unknown, 1 on the walk being followed, 2 broken, 3 left so.
            let mut fate = vec![0u8; ns];
            let mut walk: Vec<usize> = Vec::new();
            for x in 0..ns {
                if col.deliv[x] || fate[x] != 0 || self.mask.node_dead(f.switches[x]) {
                    continue;
                }
                walk.clear();
                let mut y = x;
                let end = loop {
                    if fate[y] == 1 {
                        break 2; // a loop
                    }
                    if fate[y] != 0 {
                        break fate[y];
                    }
                    if col.deliv[y] {
                        break 3;
                    }
                    fate[y] = 1;
                    walk.push(y);
                    match self.plane.hop(y, col.entry[y]) {
                        Hop::Switch { sw, .. } => y = sw as usize,
                        Hop::Fail(Failure::DeadChannel) => break 2,
                        _ => break 3,
                    }
                };
                for &w in &walk {
                    fate[w] = end;
                    if end == 3 && !col.deliv[w] {
                        col.filled[w] = true;
                    }
                }
            }
            self.fill_column(&mut col, ds, SWITCH_LID_LEVELS, &mut fx);
            fx.uncovered = (0..ns)
                .filter(|&x| !col.deliv[x] && !col.filled[x] && !self.mask.node_dead(f.switches[x]))
                .count() as u64;
            return fx;
        }
        let levels = if routes { self.cfg.vls.max(1) } else { 0 };
        self.fill_column(&mut col, ds, levels, &mut fx);
        let hint = match dest {
            Dest::End(d) => self.selected_hints(tables, d, lid, in_use),
            Dest::Switch(_) => unreachable!("switch LIDs' columns end above"),
        };
        self.phantom_pairs(tables, dest, lid, in_use, &mut col, &hint, &mut fx);
        fx
    }

    /// Which switches deliver to `target` (on `ds`), on which channel they leave, how many
    /// hops and illegal turns their path takes, and whether it is legal.
    pub(super) fn resolve_column(&self, col: &mut Col, ds: usize, target: Option<fabric::PortId>) {
        let f = self.f;
        let ns = f.num_switches();
        let Col {
            entry,
            deliv,
            legal,
            out,
            hops,
            turns,
            ..
        } = col;
        let mut state = vec![UNSEEN; ns];
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
                if target.is_none() && s == ds {
                    // The destination is the switch itself (its LID, port 0).
                    state[s] = DONE;
                    deliv[s] = true;
                    legal[s] = true;
                    hops[s] = 0;
                    break;
                }
                match self.plane.hop(s, entry[s]) {
                    Hop::End { port, ch } if Some(port) == target => {
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
    }

    /// Over a base that keeps its VLs, on a virtual LID in use: a switch that does not
    /// deliver takes its base LID's entry where the walk from it then delivers (the base
    /// path up to where it meets the repaired paths, then theirs). Its phantom walk then
    /// repeats dependencies the base paths in use already have on their VL, up to the join.
    pub(super) fn follow_base(
        &self,
        tables: &Routing,
        col: &mut Col,
        ds: usize,
        target: fabric::PortId,
        base: Lid,
        fx: &mut ColumnFix,
    ) {
        let f = self.f;
        let stride = tables.stride();
        let mut tried: Vec<(usize, u8)> = Vec::new();
        for x in 0..f.num_switches() {
            let e = tables.lft[x * stride + base as usize];
            if !col.deliv[x] && !self.mask.node_dead(f.switches[x]) && e != NO_PORT {
                tried.push((x, col.entry[x]));
                col.entry[x] = e;
            }
        }
        if tried.is_empty() {
            return;
        }
        self.resolve_column(col, ds, Some(target));
        // A switch that delivers now walks only through switches that deliver, so putting
        // the others back changes no walk that delivers.
        for (x, old) in tried {
            if col.deliv[x] {
                col.filled[x] = true;
                fx.entries.push((x as u32, col.entry[x]));
            } else {
                col.entry[x] = old;
            }
        }
    }

    /// Entries for the switches that do not deliver (module docs: level by level of illegal
    /// turns, legal turns within a level; none left, or not `routes`: no entry).
    pub(super) fn fill_column(&self, col: &mut Col, ds: usize, levels: u8, fx: &mut ColumnFix) {
        let f = self.f;
        let ns = f.num_switches();
        // Fill, level by level of illegal turns t = 0..levels (at most VLs): breadth-first
        // by hops from the switches whose path takes t illegal turns, through legal turns; a
        // switch reached only through an illegal turn waits for level t + 1. (Level 0 gives
        // legal paths on VL 0.)
        // candidates for the next level: (switch, its next hop, entry port, channel)
        let mut next_level: Vec<(usize, usize, u8, ChannelId)> = Vec::new();
        for t in 0..levels {
            let mut seeds: Vec<usize> = Vec::new();
            next_level.sort_by_key(|&(x, y, _, _)| (x, col.hops[y], y));
            for &(x, y, port, ch) in &next_level {
                if col.deliv[x] || col.filled[x] {
                    continue;
                }
                col.fill(x, y, port, ch, t, fx);
                seeds.push(x);
            }
            next_level.clear();
            seeds.extend((0..ns).filter(|&s| col.deliv[s] && col.turns[s] == t));
            seeds.sort_by_key(|&s| (col.hops[s], s));
            seeds.dedup();
            let mut queue: Vec<usize> = Vec::new();
            let (mut ia, mut ib) = (0, 0);
            loop {
                let y = match (seeds.get(ia), queue.get(ib)) {
                    (Some(&a), Some(&b)) if col.hops[a] <= col.hops[b] => {
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
                for &c in f.switch_links(SwitchIdx(y as u32)) {
                    // c leaves y toward x; x would enter y on c ^ 1.
                    let Hop::Switch { sw, .. } = self.plane.hop(y, f.port(f.channel_src(c)).num)
                    else {
                        continue;
                    };
                    let x = sw as usize;
                    if col.deliv[x] || col.filled[x] || self.mask.node_dead(f.switches[x]) {
                        continue;
                    }
                    let into = ChannelId(c.0 ^ 1);
                    let xport = f.port(f.channel_src(into)).num;
                    if !matches!(self.plane.hop(x, xport), Hop::Switch { sw, .. } if sw as usize == y)
                    {
                        continue;
                    }
                    if y != ds && !self.rule.legal(f, into, col.out[y]) {
                        next_level.push((x, y, xport, into));
                        continue;
                    }
                    col.fill(x, y, xport, into, t, fx);
                    queue.push(x);
                }
            }
        }
        // Switches left without a way within the VL budget: no entry, so that no walk from
        // them adds a dependency (no path in use crosses them: they did not deliver).
        for x in 0..ns {
            if !col.deliv[x]
                && !col.filled[x]
                && !self.mask.node_dead(f.switches[x])
                && col.entry[x] != NO_PORT
            {
                col.entry[x] = NO_PORT;
                fx.entries.push((x as u32, NO_PORT));
            }
        }
    }
}
