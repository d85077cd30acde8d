//! Greedy SL colouring under (switch, input port, output port) constraints.
//!
//! A path that needs VL `v` when it leaves switch `s` on port `o`, having entered on port `i`,
//! puts the requirement `SL2VL[s][i][o][SL] = v` on its SL ([`Need`]). Two paths may share an SL
//! only if they agree on every (switch, in, out) they share. [`SlColouring`] keeps the entries
//! fixed so far per SL and answers "does this path fit SL k?" in O(needs); assigning a path
//! fixes its entries. Which order paths come in and which fitting SL they take is the
//! caller's choice (first fit here: the lowest SL).

use rustc_hash::FxHashMap;

/// One requirement of a path on its SL: leaving switch index `sw` on port `out`, having
/// entered on port `inp`, the packet must be on VL `vl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Need {
    pub sw: u32,
    pub inp: u8,
    pub out: u8,
    pub vl: u8,
}

/// SLs `first..` and the SL2VL entries each has fixed. See the module documentation.
#[derive(Clone, Debug)]
pub struct SlColouring {
    /// (switch, in, out, SL) → VL.
    fixed: FxHashMap<u64, u8>,
    first: u8,
    /// One past the highest SL assigned so far (at least `first`).
    end: u8,
    /// One past the highest SL allowed.
    limit: u8,
}

#[inline]
fn key(sw: u32, inp: u8, out: u8, sl: u8) -> u64 {
    ((sw as u64) << 24) | ((inp as u64) << 16) | ((out as u64) << 8) | sl as u64
}

impl SlColouring {
    /// Colours with SLs `first..limit` (e.g. RFTR keeps SL 0 for paths without a VL change
    /// and colours from 1; `limit` is the SL budget, at most 16).
    pub fn new(first: u8, limit: u8) -> Self {
        SlColouring {
            fixed: FxHashMap::default(),
            first,
            end: first,
            limit,
        }
    }

    /// One past the highest SL in use (`first` when none is).
    pub fn end(&self) -> u8 {
        self.end
    }

    /// The VL SL `sl` maps (sw, inp, out) to, if fixed.
    pub fn get(&self, sw: u32, inp: u8, out: u8, sl: u8) -> Option<u8> {
        self.fixed.get(&key(sw, inp, out, sl)).copied()
    }

    /// True when every need of a path agrees with what `sl` has fixed.
    pub fn fits(&self, sl: u8, needs: &[Need]) -> bool {
        needs
            .iter()
            .all(|n| self.get(n.sw, n.inp, n.out, sl).is_none_or(|v| v == n.vl))
    }

    /// The lowest SL in use that a path fits.
    pub fn find(&self, needs: &[Need]) -> Option<u8> {
        (self.first..self.end).find(|&sl| self.fits(sl, needs))
    }

    /// The next unused SL, if the budget has one.
    pub fn fresh(&self) -> Option<u8> {
        (self.end < self.limit).then_some(self.end)
    }

    /// Assigns a path to `sl` (which it must fit): fixes its needs, calling `on_new` for each
    /// entry fixed for the first time.
    pub fn assign(&mut self, sl: u8, needs: &[Need], mut on_new: impl FnMut(&Need)) {
        debug_assert!(self.fits(sl, needs));
        if sl >= self.end {
            self.end = sl + 1;
        }
        for n in needs {
            if self
                .fixed
                .insert(key(n.sw, n.inp, n.out, sl), n.vl)
                .is_none()
            {
                on_new(n);
            }
        }
    }

    /// Every fixed entry as (need, SL), in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = (Need, u8)> + '_ {
        self.fixed.iter().map(|(&k, &vl)| {
            (
                Need {
                    sw: (k >> 24) as u32,
                    inp: (k >> 16) as u8,
                    out: (k >> 8) as u8,
                    vl,
                },
                k as u8,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(sw: u32, inp: u8, out: u8, vl: u8) -> Need {
        Need { sw, inp, out, vl }
    }

    #[test]
    fn conflicting_paths_get_different_sls_and_agreeing_ones_share() {
        let mut c = SlColouring::new(1, 3);
        assert_eq!(c.find(&[need(0, 1, 2, 0)]), None, "no SL in use yet");
        assert_eq!(c.fresh(), Some(1));
        let a = [need(0, 1, 2, 0), need(1, 3, 4, 1)];
        let mut new = Vec::new();
        c.assign(1, &a, |n| new.push(*n));
        assert_eq!(new, a.to_vec());
        // Agrees on the shared (0, 1, 2): fits SL 1, and fixes only its other entry.
        let b = [need(0, 1, 2, 0), need(2, 1, 1, 1)];
        assert_eq!(c.find(&b), Some(1));
        new.clear();
        c.assign(1, &b, |n| new.push(*n));
        assert_eq!(new, vec![b[1]]);
        // Needs VL 1 where SL 1 maps VL 0: conflicts, so a new SL.
        let x = [need(0, 1, 2, 1)];
        assert!(!c.fits(1, &x));
        assert_eq!(c.find(&x), None);
        assert_eq!(c.fresh(), Some(2));
        c.assign(2, &x, |_| {});
        assert_eq!(c.end(), 3);
        assert_eq!(c.fresh(), None, "the budget is SLs 1..3");
        assert_eq!(c.get(0, 1, 2, 2), Some(1));
        assert_eq!(c.get(0, 1, 2, 1), Some(0));
        assert_eq!(c.entries().count(), 4);
    }
}
