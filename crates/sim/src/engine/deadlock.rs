//! The watchdog and the exact deadlock check over the wait-for graph of buffers.

use super::state::{ev, EV_WATCH, IN, OUT};
use super::Sim;
use crate::report::BufferRef;
use routing::forward::NONE;

impl Sim<'_> {
    /// Runs the exact check; returns true when the run must stop.
    pub(super) fn on_watchdog(&mut self) -> bool {
        if self.cfg.check_invariants {
            self.check_invariants();
        }
        let in_network = self.live - self.in_sources;
        let stuck = self.progress == self.last_progress;
        self.last_progress = self.progress;
        if in_network > 0 {
            if let Some(cycle) = self.find_deadlock() {
                self.deadlock = Some((self.now, cycle));
                return true;
            }
            if stuck && self.waiting_drain && self.computed {
                // Nothing moves and nothing can drain: upload anyway.
                self.waiting_drain = false;
                self.log.drain_forced = true;
                self.log.drained_at = Some(self.now);
                self.begin_upload();
            }
        }
        let next = self.now + self.cfg.t_watchdog;
        if next < self.end {
            self.q.push(next, ev(EV_WATCH, 0));
        }
        false
    }

    /// What a non-empty buffer's head waits for, when nothing pending can give it (see the
    /// crate documentation): node `2k` is input buffer `k` = (channel, VL), `2k + 1` output
    /// buffer `k`.
    pub(super) fn waits_for(&self, node: usize) -> Option<usize> {
        let nvl = self.nvl;
        let k = node / 2;
        let (c, v) = (k / nvl, k % nvl);
        if node & 1 == 0 {
            if self.q_len(IN, k) == 0 || self.vs[k].hd.out == NONE {
                return None;
            }
            let h = self.vs[k].hd;
            let o = h.out as usize;
            let ko = o * nvl + h.ovl as usize;
            if !self.cs[o].alive || self.vs[ko].out_space >= h.cr as u32 {
                return None;
            }
            if self.cs[o].busy && self.cs[o].send_vl == h.ovl {
                return None;
            }
            Some(2 * ko + 1)
        } else {
            let p = self.q_front(OUT, k)?;
            let ch = self.cs[c];
            if ch.dst_sw == NONE || !self.cs[c].alive {
                return None;
            }
            let mut coming = self.vs[k].credits + self.cred_fly[k];
            if self.cs[c].xin_pkt != NONE && self.cs[c].xin_vl as usize == v {
                coming += self.cs[c].xin_cr as u32;
            }
            if coming >= self.pk[p as usize].cr as u32 || self.q_len(IN, k) == 0 {
                return None;
            }
            Some(2 * k)
        }
    }

    pub(super) fn find_deadlock(&self) -> Option<Vec<BufferRef>> {
        let n = self.net.chans.len() * self.nvl * 2;
        let mut state = vec![0u8; n];
        let mut path = Vec::new();
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            path.clear();
            let mut at = Some(start);
            while let Some(x) = at {
                match state[x] {
                    0 => {
                        state[x] = 1;
                        path.push(x);
                        at = self.waits_for(x);
                    }
                    1 => {
                        let i = path.iter().position(|&y| y == x).expect("on the path");
                        return Some(self.describe_cycle(&path[i..]));
                    }
                    _ => break,
                }
            }
            for &y in &path {
                state[y] = 2;
            }
        }
        None
    }

    /// The output buffers of a wait-for cycle as (switch, port, VL): each is the channel that
    /// leaves the switch on that port on that VL, i.e. a vertex of the channel dependency
    /// graph.
    pub(super) fn describe_cycle(&self, nodes: &[usize]) -> Vec<BufferRef> {
        nodes
            .iter()
            .filter(|&&x| x % 2 == 1)
            .map(|&x| {
                let k = x / 2;
                let c = k / self.nvl;
                let ch = self.cs[c];
                let node = self.f.node(self.f.switches[ch.src_sw as usize]);
                BufferRef {
                    switch: node.name.clone(),
                    guid: format!("{:#018x}", node.guid),
                    port: ch.src_port,
                    vl: (k % self.nvl) as u8,
                    channel: c as u32,
                }
            })
            .collect()
    }
}
