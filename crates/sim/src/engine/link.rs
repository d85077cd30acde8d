//! Links: transmissions, VL arbitration on an output link, and credits going back upstream.

use super::state::{ev, EV_ARRIVE, EV_CREDIT, EV_LINK, EV_XBAR, EV_XL, OUT, P_WIRE};
use super::Sim;
use routing::forward::NONE;

impl Sim<'_> {
    /// Starts sending packet `p` on channel `c` on VL `vl`.
    #[inline]
    pub(super) fn start_tx(&mut self, c: u32, p: u32, vl: u8) {
        let ci = c as usize;
        let ch = self.cs[ci];
        let m = &self.cfg.model;
        let pk = &mut self.pk[p as usize];
        let tb = ch.t_byte as u64;
        let ser = pk.bytes as u64 * tb;
        let s = self.now.max(pk.tail.saturating_sub(ser));
        let end = s + ser;
        self.cs[ci].busy = true;
        self.cs[ci].send_vl = vl;
        self.cs[ci].send_cr = pk.cr;
        self.cs[ci].busy_ps += ser;
        pk.ch = c;
        pk.vl = vl;
        pk.state = P_WIRE;
        pk.tail = end + m.t_prop;
        let arrive = if ch.dst_sw != NONE {
            self.vs[ci * self.nvl + vl as usize].credits -= pk.cr as u32;
            s + m.t_prop + m.hdr_bytes as u64 * tb + m.t_route
        } else {
            end + m.t_prop
        };
        let (xc, xp, xdone) = self.xbar_pending;
        if xc == NONE {
            self.q.push(end, ev(EV_LINK, c as u64));
        } else {
            // Called from `grant` for its output: the crossbar event it holds back goes in
            // first, as one event with this one when the two end together.
            self.xbar_pending.0 = NONE;
            if xp == p && xdone == end {
                self.q.push(end, ev(EV_XL, xc as u64));
            } else {
                self.q.push(xdone, ev(EV_XBAR, xc as u64));
                self.q.push(end, ev(EV_LINK, c as u64));
            }
        }
        self.q.push(arrive, ev(EV_ARRIVE, p as u64));
        self.progress += 1;
    }

    /// Starts a transmission on switch output `c` if the link is idle: VLs round robin, a VL
    /// eligible when its head has the credits downstream.
    pub(super) fn try_link(&mut self, c: u32) {
        let ci = c as usize;
        let mask = self.cs[ci].oq_mask as u32;
        if mask == 0 || self.cs[ci].busy || !self.cs[ci].alive {
            return;
        }
        let nvl = self.nvl as u32;
        let to_switch = self.cs[ci].dst_sw != NONE;
        // Rotate so that bit 0 is the VL after the last one served.
        let first = if nvl == 1 {
            0
        } else {
            (self.cs[ci].vlarb as u32 + 1) % nvl
        };
        let rot = ((mask >> first) | (mask << (nvl - first))) & ((1u32 << nvl) - 1);
        let mut bits = rot;
        while bits != 0 {
            let v = bits.trailing_zeros() + first;
            let v = (if v >= nvl { v - nvl } else { v }) as usize;
            bits &= bits - 1;
            let k = ci * self.nvl + v;
            let p = self.q_front(OUT, k).expect("non-empty by the mask");
            if to_switch && self.vs[k].credits < self.pk[p as usize].cr as u32 {
                continue;
            }
            self.q_pop(OUT, k);
            if self.q_len(OUT, k) == 0 {
                self.cs[ci].oq_mask &= !(1 << v);
            }
            self.cs[ci].vlarb = v as u8;
            self.start_tx(c, p, v as u8);
            return;
        }
    }

    pub(super) fn on_link_free(&mut self, c: u32) {
        let ci = c as usize;
        self.cs[ci].busy = false;
        let ch = self.cs[ci];
        if ch.src_sw != NONE {
            self.vs[ci * self.nvl + self.cs[ci].send_vl as usize].out_space +=
                self.cs[ci].send_cr as u32;
            if !self.cs[ci].alive {
                return;
            }
            self.try_link(c);
            self.arbitrate(c);
        } else if self.cs[ci].alive && self.cs[ci].src_queued {
            self.try_inject(ch.src_host);
        }
    }

    pub(super) fn on_credit(&mut self, data: u64) {
        let c = (data >> 24) as u32;
        let vl = ((data >> 16) & 0xff) as usize;
        let cr = (data & 0xffff) as u32;
        let k = c as usize * self.nvl + vl;
        self.cred_fly[k] -= cr;
        self.credit_arrived(c, k, cr);
    }

    pub(super) fn credit_arrived(&mut self, c: u32, k: usize, cr: u32) {
        if !self.cs[c as usize].alive {
            return;
        }
        self.vs[k].credits += cr;
        let src_host = self.cs[c as usize].src_host;
        if src_host != NONE {
            if self.cs[c as usize].src_queued {
                self.try_inject(src_host);
            }
        } else {
            self.try_link(c);
        }
    }

    /// The tail of a packet has left input buffer (`c`, `vl`) at `at`: its credits go back
    /// upstream.
    pub(super) fn return_credits(&mut self, c: u32, vl: u8, cr: u8, at: u64) {
        let m = &self.cfg.model;
        let t = at + m.t_prop + m.t_fc;
        let k = c as usize * self.nvl + vl as usize;
        if t <= self.now {
            self.credit_arrived(c, k, cr as u32);
        } else {
            self.cred_fly[k] += cr as u32;
            self.q.push(
                t,
                ev(
                    EV_CREDIT,
                    ((c as u64) << 24) | ((vl as u64) << 16) | cr as u64,
                ),
            );
        }
    }
}
