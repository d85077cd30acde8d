//! The event queue: a calendar (bucket) queue over integer picoseconds, ordered by
//! (time, sequence).
//!
//! Most delays in the simulator are a few constants (serialization, routing, propagation), so a
//! wheel of `2^k`-ps buckets covers the near future: an event goes into the bucket of its time
//! (`time >> shift`) when that bucket is within the wheel's horizon, else into a binary heap
//! ("far" events: generation times at low load, faults, the end of the run) that feeds the wheel
//! as the horizon advances. Each bucket is a vector (drained front to back, its capacity kept),
//! sorted by time with ties in insertion order; when the bucket width divides every delay in
//! use (the simulator picks it that way), every bucket holds one distinct time and insertion is
//! an append. A bitmap of occupied buckets skips empty ones. (Vectors rather than linked nodes:
//! draining a bucket reads contiguous memory, which matters on large fabrics.)
//!
//! Order: events pop by time; events with equal times pop in the order they entered the wheel.
//! That is the order they were pushed, except that a far event enters the wheel when its bucket
//! comes within the horizon, after near events of the same time pushed before that moment. Every
//! step is deterministic, so a run is too.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// See the module documentation.
#[derive(Debug)]
pub struct EventQueue {
    shift: u32,
    mask: u64,
    nb: u64,
    /// Per bucket: its events as (time, payload), sorted by time (ties in insertion order).
    buckets: Vec<Vec<(u64, u64)>>,
    occupied: Vec<u64>,
    /// Absolute bucket number of the bucket being drained, and how far it is drained.
    cur: u64,
    pos: usize,
    in_wheel: usize,
    far: BinaryHeap<Reverse<(u64, u64, u64)>>,
    seq: u64,
    /// Time of the last event popped.
    now: u64,
}

impl EventQueue {
    /// A queue with buckets of `2^shift` ps and `2^log2_buckets` buckets.
    pub fn new(shift: u32, log2_buckets: u32) -> Self {
        let nb = 1u64 << log2_buckets;
        EventQueue {
            shift,
            mask: nb - 1,
            nb,
            buckets: vec![Vec::new(); nb as usize],
            occupied: vec![0; (nb as usize).div_ceil(64)],
            cur: 0,
            pos: 0,
            in_wheel: 0,
            far: BinaryHeap::new(),
            seq: 0,
            now: 0,
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.in_wheel + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Time of the last event popped (0 before the first).
    pub fn now(&self) -> u64 {
        self.now
    }

    #[inline]
    fn insert_wheel(&mut self, time: u64, payload: u64) {
        let abs = time >> self.shift;
        let b = (abs & self.mask) as usize;
        self.in_wheel += 1;
        let v = &mut self.buckets[b];
        if v.is_empty() {
            self.occupied[b / 64] |= 1u64 << (b % 64);
        }
        let append = match v.last() {
            None => true,
            Some(l) => l.0 <= time,
        };
        if append {
            v.push((time, payload));
        } else {
            // Mixed times in one bucket: after every event with time <= `time` (and after
            // what the bucket being drained has popped already).
            let from = if abs == self.cur { self.pos } else { 0 };
            let at = from + v[from..].partition_point(|e| e.0 <= time);
            v.insert(at, (time, payload));
        }
    }

    /// Schedules `payload` at `time` (not before the last event popped).
    #[inline]
    pub fn push(&mut self, time: u64, payload: u64) {
        debug_assert!(time >= self.now, "event in the past: {time} < {}", self.now);
        let b = time >> self.shift;
        if b < self.cur + self.nb {
            self.insert_wheel(time, payload);
        } else {
            self.seq += 1;
            self.far.push(Reverse((time, self.seq, payload)));
        }
    }

    /// Moves far events whose bucket is now within the horizon into the wheel.
    fn migrate(&mut self) {
        while let Some(&Reverse((t, _, p))) = self.far.peek() {
            if (t >> self.shift) >= self.cur + self.nb {
                break;
            }
            self.far.pop();
            self.insert_wheel(t, p);
        }
    }

    /// The next occupied bucket after `cur` (there is one: `in_wheel > 0`), as an absolute
    /// bucket number.
    fn next_occupied(&self) -> u64 {
        let start = ((self.cur + 1) & self.mask) as usize;
        let words = self.occupied.len();
        let (w0, b0) = (start / 64, start % 64);
        let first = self.occupied[w0] & (!0u64 << b0);
        let found = if first != 0 {
            w0 * 64 + first.trailing_zeros() as usize
        } else {
            let mut i = 1;
            loop {
                let w = (w0 + i) % words;
                let bits = self.occupied[w];
                if bits != 0 {
                    break w * 64 + bits.trailing_zeros() as usize;
                }
                i += 1;
            }
        };
        let found = found as u64;
        let cur_slot = self.cur & self.mask;
        let dist = (found + self.nb - cur_slot) & self.mask;
        self.cur + if dist == 0 { self.nb } else { dist }
    }

    /// The payload of the event `k` places after the next one to pop, when it is in the
    /// bucket being drained (`ahead(0)` is the next event); for prefetching what it reads.
    #[inline]
    pub fn ahead(&self, k: usize) -> Option<u64> {
        self.buckets[(self.cur & self.mask) as usize]
            .get(self.pos + k)
            .map(|e| e.1)
    }

    /// Pops the next event: (time, payload).
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, u64)> {
        loop {
            let slot = (self.cur & self.mask) as usize;
            let v = &mut self.buckets[slot];
            if self.pos < v.len() {
                let e = v[self.pos];
                self.pos += 1;
                self.in_wheel -= 1;
                self.now = e.0;
                return Some(e);
            }
            if !v.is_empty() {
                v.clear();
                self.occupied[slot / 64] &= !(1u64 << (slot % 64));
            }
            self.pos = 0;
            if self.in_wheel == 0 {
                let &Reverse((t, _, _)) = self.far.peek()?;
                self.cur = t >> self.shift;
            } else {
                self.cur = self.next_occupied();
            }
            self.migrate();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::rng::Rng;

    /// Against a reference ordering (sort by time, ties by push order) over random pushes
    /// interleaved with pops, with near, mixed-time and far events.
    #[test]
    fn pops_in_time_then_push_order() {
        for (shift, lb) in [(0u32, 4u32), (3, 6), (11, 10)] {
            let mut q = EventQueue::new(shift, lb);
            let mut rng = Rng::new(5 + shift as u64);
            let mut pending: Vec<(u64, u64, u64)> = Vec::new(); // (time, push index, payload)
            let mut pushed = 0u64;
            let mut now = 0u64;
            let mut popped = 0;
            for step in 0..20_000u64 {
                if rng.below(3) != 0 || pending.is_empty() {
                    let delay = match rng.below(4) {
                        0 => 0,
                        1 => rng.below(50),
                        2 => 2048 * rng.below(4),
                        _ => rng.below(1 << 20),
                    };
                    q.push(now + delay, step);
                    pending.push((now + delay, pushed, step));
                    pushed += 1;
                } else {
                    let (t, p) = q.pop().unwrap();
                    let i = (0..pending.len())
                        .min_by_key(|&i| (pending[i].0, pending[i].1))
                        .unwrap();
                    let want = pending.remove(i);
                    assert_eq!(t, want.0, "time");
                    // Ties: push order, except far events that entered the wheel later.
                    assert!(p == want.2 || pending.iter().any(|e| e.0 == t && e.2 == p));
                    if p != want.2 {
                        let j = pending.iter().position(|e| e.2 == p).unwrap();
                        pending.remove(j);
                        pending.push(want);
                    }
                    assert!(t >= now);
                    now = t;
                    popped += 1;
                }
            }
            while let Some((t, _)) = q.pop() {
                assert!(t >= now);
                now = t;
                popped += 1;
            }
            assert_eq!(popped, pushed);
            assert!(q.is_empty());
        }
    }

    #[test]
    fn equal_times_pop_fifo_within_the_horizon() {
        let mut q = EventQueue::new(4, 8);
        for i in 0..100 {
            q.push(1000, i);
        }
        q.push(10, 999);
        assert_eq!(q.pop(), Some((10, 999)));
        for i in 0..100 {
            assert_eq!(q.pop(), Some((1000, i)));
        }
        assert_eq!(q.pop(), None);
    }
}
