//! The pool of multicast LIDs the SA hands to the groups it creates: 0xC000 up to the last
//! MLID every switch's MFT holds (`SwitchInfo.MulticastFDBCap`), at most 0xFFFE (0xFFFF is
//! the permissive LID). A group gets the MLID it asks for when that one is free and in the
//! pool, else the lowest free one; a deleted group's MLID goes back and is the first handed
//! out again. One bit per MLID (2 KB for the whole range); allocation scans words for the
//! first with a clear bit.

use routing::mcast::{MLID_FIRST, MLID_LAST};

/// Which MLIDs are taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlidPool {
    /// The highest MLID the pool hands out.
    last: u16,
    /// Bit `i`: MLID `MLID_FIRST + i` is taken.
    used: Vec<u64>,
    in_use: usize,
}

impl MlidPool {
    /// A pool of MLIDs 0xC000 ..= `last` (clamped to 0xC000 ..= 0xFFFE), all free.
    pub fn new(last: u16) -> MlidPool {
        let last = last.clamp(MLID_FIRST, MLID_LAST);
        let n = (last - MLID_FIRST) as usize + 1;
        MlidPool {
            last,
            used: vec![0; n.div_ceil(64)],
            in_use: 0,
        }
    }

    /// A pool of MLIDs 0xC000 up to what every switch's MFT holds: `caps` are the switches'
    /// MulticastFDBCap values (0, as a switch that does not say, is no limit).
    pub fn for_caps(caps: impl IntoIterator<Item = u16>) -> MlidPool {
        let cap = caps.into_iter().filter(|&c| c > 0).min();
        let last = match cap {
            Some(c) => MLID_FIRST.saturating_add(c - 1),
            None => MLID_LAST,
        };
        MlidPool::new(last)
    }

    /// The highest MLID of the pool.
    pub fn last(&self) -> u16 {
        self.last
    }

    /// MLIDs the pool holds.
    pub fn capacity(&self) -> usize {
        (self.last - MLID_FIRST) as usize + 1
    }

    /// MLIDs taken.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    fn index(&self, mlid: u16) -> Option<usize> {
        (MLID_FIRST..=self.last)
            .contains(&mlid)
            .then(|| (mlid - MLID_FIRST) as usize)
    }

    /// Whether `mlid` is in the pool and taken.
    pub fn is_used(&self, mlid: u16) -> bool {
        self.index(mlid)
            .is_some_and(|i| self.used[i / 64] >> (i % 64) & 1 == 1)
    }

    /// The MLID [`MlidPool::alloc`] would give, without taking it.
    pub fn peek(&self, requested: Option<u16>) -> Option<u16> {
        if let Some(m) = requested {
            if self.index(m).is_some() && !self.is_used(m) {
                return Some(m);
            }
        }
        let n = self.capacity();
        let (w, word) = self
            .used
            .iter()
            .enumerate()
            .find(|(_, &word)| word != u64::MAX)?;
        let i = w * 64 + (!word).trailing_zeros() as usize;
        (i < n).then(|| MLID_FIRST + i as u16)
    }

    /// Takes `requested` when it is in the pool and free, else the lowest free MLID; `None`
    /// when every MLID is taken.
    pub fn alloc(&mut self, requested: Option<u16>) -> Option<u16> {
        let m = self.peek(requested)?;
        let i = (m - MLID_FIRST) as usize;
        self.used[i / 64] |= 1 << (i % 64);
        self.in_use += 1;
        Some(m)
    }

    /// Gives `mlid` back; `false` when it was not taken (nothing changes).
    pub fn free(&mut self, mlid: u16) -> bool {
        if !self.is_used(mlid) {
            return false;
        }
        let i = (mlid - MLID_FIRST) as usize;
        self.used[i / 64] &= !(1 << (i % 64));
        self.in_use -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_first_and_the_request_when_it_can() {
        let mut p = MlidPool::new(MLID_LAST);
        assert_eq!(p.capacity(), 0x3fff);
        assert_eq!(p.alloc(None), Some(0xc000));
        assert_eq!(p.alloc(None), Some(0xc001));
        assert_eq!(p.alloc(Some(0xc100)), Some(0xc100));
        // Taken, below the range, the permissive LID: the lowest free instead.
        assert_eq!(p.alloc(Some(0xc100)), Some(0xc002));
        assert_eq!(p.alloc(Some(0x0040)), Some(0xc003));
        assert_eq!(p.alloc(Some(0xffff)), Some(0xc004));
        assert_eq!(p.in_use(), 6);
        assert!(p.free(0xc001));
        assert!(!p.free(0xc001), "freed twice");
        assert!(!p.free(0x1234), "not an MLID");
        assert_eq!(p.alloc(None), Some(0xc001), "the freed one first");
        assert_eq!(p.peek(None), Some(0xc005));
        assert_eq!(p.in_use(), 6);
        for m in [0xc000, 0xc001, 0xc002, 0xc003, 0xc004, 0xc100] {
            assert!(p.free(m));
        }
        assert_eq!(p, MlidPool::new(MLID_LAST), "back as it started");
    }

    #[test]
    fn a_full_pool_says_so_and_the_caps_bound_it() {
        let mut p = MlidPool::for_caps([0, 64, 100]);
        assert_eq!((p.last(), p.capacity()), (0xc03f, 64));
        for i in 0..64 {
            assert_eq!(p.alloc(None), Some(0xc000 + i));
        }
        assert_eq!(p.alloc(None), None);
        assert_eq!(p.alloc(Some(0xc040)), None, "beyond the caps");
        assert!(p.free(0xc020));
        assert_eq!(p.alloc(Some(0xc010)), Some(0xc020));
        assert_eq!(MlidPool::for_caps([0, 0]).last(), MLID_LAST);
        assert_eq!(MlidPool::for_caps(std::iter::empty()).last(), MLID_LAST);
        // The last word of the full range is partial: its spare bits are never handed out.
        let mut full = MlidPool::new(MLID_LAST);
        let mut n = 0;
        while full.alloc(None).is_some() {
            n += 1;
        }
        assert_eq!(n, 0x3fff);
        assert!(full.is_used(MLID_LAST));
    }

    /// Seeded random allocations and frees against a model: never a leak, never a double
    /// grant, always the lowest free.
    #[test]
    fn random_use_matches_a_model() {
        let mut p = MlidPool::new(0xc0ff);
        let mut model = std::collections::BTreeSet::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let m = 0xc000 + (x % 0x110) as u16;
            if x >> 60 < 9 {
                let want = if (0xc000..=0xc0ff).contains(&m) && !model.contains(&m) {
                    Some(m)
                } else {
                    (0xc000..=0xc0ffu16).find(|k| !model.contains(k))
                };
                let got = p.alloc(Some(m));
                assert_eq!(got, want);
                if let Some(g) = got {
                    model.insert(g);
                }
            } else {
                assert_eq!(p.free(m), model.remove(&m));
            }
            assert_eq!(p.in_use(), model.len());
        }
        for m in std::mem::take(&mut model) {
            assert!(p.free(m));
        }
        assert_eq!(p, MlidPool::new(0xc0ff));
    }
}
