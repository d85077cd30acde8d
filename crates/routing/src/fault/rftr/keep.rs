//! RFTR's keep check: a pair whose base-LID walk is live again (through entries an earlier
//! repair of the same destination rewrote) keeps it when no walk obeying the turn rule is
//! shorter, with no change at all. Most pairs of a fault end here: the walk is read (or
//! copied from the next switch's path), its length bounded from below without a search
//! where the distances or the neighbours allow, and committed as it is.

use super::*;
use fabric::SwitchIdx;

impl<'f> Rftr<'f> {
    /// True when no transition-free walk from switch `s` to switch `t` over the live links
    /// is shorter than `h` hops: `h` is a fault-free distance (which bounds every walk from
    /// below), the neighbours settle it (`neighbours_settle`), or the turn rule's search
    /// finds none shorter. (On a 16x16x8 torus the neighbours settle all but a handful of
    /// the thousands of questions a fault asks, and the searches, a fifth of a repair
    /// before, are rare.)
    pub(super) fn as_short_as_any(&mut self, s: u32, t: u32, h: u32) -> bool {
        let known = if self.static_distance(s, t) == Some(h) || self.legal_distance(s, t) == Some(h)
        {
            Some(true)
        } else {
            self.neighbours_settle(s, t, h)
        };
        match known {
            Some(k) => {
                debug_assert_eq!(
                    k,
                    self.no_shorter_legal_walk(s, t, h),
                    "a bound that the search contradicts"
                );
                k
            }
            None => self.no_shorter_legal_walk(s, t, h),
        }
    }

    /// What the neighbours of switch `s` tell, without a search, about walks that obey the
    /// turn rule over the live links from `s` to `t` in fewer than `h` hops: `Some(true)`
    /// when there is none, `Some(false)` when there is one, `None` when they cannot tell.
    ///
    /// Per live first hop, into switch `y`, two lower bounds on the walks that go on from
    /// `y` entered so: the fault-free distance of that state (under any faults a walk is no
    /// shorter), and the hops of a path this group committed for `y` that no walk from `y`
    /// is shorter than (`shortest`; pairs come nearest the failure first, so the switches a
    /// source's walk passes usually carry it already). Where neither reaches `h - 1`, a
    /// walk from `y` may show a shorter one: `y` is `t`, or `y`'s path committed in this
    /// group (`own_path`, on SL 0: no transition) or its kept base-LID walk (live and
    /// unchanged by this repair: `kept_walk`) may follow the hop and is short enough.
    pub(super) fn neighbours_settle(&self, s: u32, t: u32, h: u32) -> Option<bool> {
        let (e, g) = (self.group_e, self.group);
        let (ns, m) = (self.f.num_switches(), self.ncls);
        let row = self
            .legal_distances()
            .and_then(|l| l.states.get(t as usize * ns * m..(t as usize + 1) * ns * m));
        let mut bounded = true;
        for &c in self.f.switch_links(SwitchIdx(s)) {
            let y = self.ch_dst_sw[c.idx()];
            if y == NONE || self.ch_dead[c.idx()] {
                continue;
            }
            let k = self.ch_class[c.idx()];
            // (`FAR` stands for 127 hops or more: a bound all the same.)
            let fault_free = row.map_or(0, |r| r[y as usize * m + k as usize] as u32);
            let proven = match self.shortest[y as usize] {
                (gy, l) if gy == g => l,
                _ => 0,
            };
            if fault_free.max(proven) + 1 >= h {
                continue;
            }
            let shorter = if y == t {
                Some(0)
            } else {
                match self.own_path[y as usize] {
                    (gy, p) if gy == g => {
                        let rest = self.paths.hops_of(p);
                        (self.pen_class(k, self.ch_class[rest[0].idx()]) == 0)
                            .then_some(rest.len() as u32)
                    }
                    _ => match self.kept_walk(e, y).and_then(unpack_suffix) {
                        Some((hy, 0, cls)) if self.pen_class(k, cls) == 0 => Some(hy),
                        _ => None,
                    },
                }
            };
            if shorter.is_some_and(|w| w + 1 < h) {
                return Some(false);
            }
            bounded = false;
        }
        bounded.then_some(true)
    }

    /// Walks switch `s`'s base-LID walk toward end `e` (LID `lid`) into `hops`; true when
    /// it arrives, has a hop, and takes no illegal turn. Where the first hop leads to a
    /// switch whose own walk this group committed (`own_path`), the walk is that hop and
    /// that path: its entries are claimed, so no later pair of the group rewrites them, and
    /// it arrives without a loop or an illegal turn (it cannot pass `s`, whose entry leads
    /// back to it). Pairs come nearest the failure first, so most pairs behind a repaired
    /// switch find the next switch's path committed and copy it instead of walking it.
    /// The second value: the walk was copied so.
    pub(super) fn walk_reusing(
        &self,
        s: u32,
        e: u32,
        lid: Lid,
        hops: &mut Vec<ChannelId>,
    ) -> (bool, bool) {
        let t = self.end_sw[e as usize];
        if s != t {
            if let Hop::Switch { sw: next, ch, .. } = self.plane.hop(s as usize, self.entry(s, lid))
            {
                let (g, p) = self.own_path[next as usize];
                if g == self.group && next != t {
                    let rest = self.paths.hops_of(p);
                    hops.push(ch);
                    hops.extend_from_slice(rest);
                    let kept = !self.illegal(ch, rest[0]);
                    debug_assert!(
                        {
                            let mut w = Vec::new();
                            self.walk(s, e, lid, &mut w) && w == *hops
                        },
                        "a committed path that is not its switch's walk"
                    );
                    return (kept, true);
                }
            }
        }
        let kept = self.walk(s, e, lid, hops)
            && !hops.is_empty()
            && !hops.windows(2).any(|w| self.illegal(w[0], w[1]));
        (kept, false)
    }

    /// Commits the pair's own base-LID walk `hops`, live again and transition-free (the keep
    /// check), as its path on SL 0 (no fresh VLs). What `try_candidate` would check cannot
    /// fail here, and is not checked again: a walk that arrives visits no switch twice (a
    /// walk that did would loop), its VLs are all 0, and it follows the base-LID entries,
    /// so every entry it needs points its way already (`free_offset` gives 0). A walk
    /// `copied` from the path the next switch committed in this group needs only `s`'s own
    /// entry committed: the rest are that path's, equal and claimed for the group already.
    pub(super) fn keep_own_walk(
        &mut self,
        slot: u32,
        s: u32,
        e: u32,
        hops: &mut Vec<ChannelId>,
        vls: &mut Vec<u8>,
        copied: bool,
    ) {
        vls.clear();
        vls.resize(hops.len(), 0);
        let mut req = std::mem::take(&mut self.cand_req);
        if copied {
            req.clear();
            req.push((s, self.ch_port[hops[0].idx()]));
            debug_assert!({
                let mut all = Vec::new();
                self.required_ports(s, e, hops, &mut all);
                let lid = self.f.port(self.f.end_ports[e as usize]).lid;
                all[1..].iter().all(|&(sw, port)| {
                    self.claimed[sw as usize] == self.group && self.entry(sw, lid) == port
                })
            });
        } else {
            self.required_ports(s, e, hops, &mut req);
        }
        debug_assert_eq!(self.free_offset(e, &req, 0), Some(0));
        let (h, v) = (std::mem::take(hops), std::mem::take(vls));
        self.commit(slot, s, e, 0, 0, &h, &v, &req, &[]);
        *hops = h;
        *vls = v;
        self.cand_req = req;
    }
}
