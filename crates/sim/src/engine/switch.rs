//! Switches: arrivals, routing a buffer's head, crossbar arbitration and transfers.

use super::state::{ev, Head, EV_XBAR, IN, OUT, P_IN, P_OUT};
use super::Sim;
use crate::config::Unroutable;
use crate::report::DropReason;
use routing::forward::{Failure, Forward, Hop, NONE};

impl Sim<'_> {
    pub(super) fn on_arrive(&mut self, p: u32) {
        let pk = self.pk[p as usize];
        let c = pk.ch as usize;
        if !self.cs[c].alive {
            let why = if self.cs[c].dst_sw != NONE && !self.sw_alive[self.cs[c].dst_sw as usize]
                || self.cs[c].src_sw != NONE && !self.sw_alive[self.cs[c].src_sw as usize]
            {
                DropReason::SwitchDown
            } else {
                DropReason::LinkDown
            };
            self.drop_pkt(p, why);
            return;
        }
        let ch = self.cs[c];
        if ch.dst_sw == NONE {
            self.deliver(p, ch.dst_host);
            return;
        }
        let k = c * self.nvl + pk.vl as usize;
        {
            let pm = &mut self.pk[p as usize];
            pm.state = P_IN;
            pm.hops += 1;
        }
        self.hops += 1;
        self.q_push(IN, k, p);
        if self.q_len(IN, k) == 1 {
            if let Some(o) = self.route_head(c as u32, pk.vl) {
                self.arbitrate(o);
            }
        }
    }

    /// Routes the head of input buffer (`c`, `vl`) through the forwarding view; drops heads
    /// that cannot go on (or holds them). Returns the output channel of a routed head.
    pub(super) fn route_head(&mut self, c: u32, vl: u8) -> Option<u32> {
        let k = c as usize * self.nvl + vl as usize;
        let ch = self.cs[c as usize];
        let loop_limit = (2 * self.net.sw_base.len() + 4).min(255) as u8;
        loop {
            let p = self.q_front(IN, k)?;
            let pk = self.pk[p as usize];
            let fw = Forward::new(self.f, &self.plane, &self.routing);
            let (_, hop, ovl) = fw.step(ch.dst_sw, ch.dst_port, pk.dlid, pk.sl);
            let why = match hop {
                Hop::Switch { ch: o, .. } | Hop::End { ch: o, .. } => {
                    if (ovl as usize) >= self.nvl {
                        Some(DropReason::VlOutOfRange)
                    } else if pk.hops > loop_limit {
                        Some(DropReason::Loop)
                    } else {
                        self.vs[k].hd = Head {
                            out: o.0,
                            ovl,
                            cr: pk.cr,
                        };
                        let bit = ch.dst_port as usize * self.nvl + vl as usize;
                        *self.req_mut(o.idx(), bit / 64) |= 1u64 << (bit % 64);
                        return Some(o.0);
                    }
                }
                Hop::Fail(Failure::DeadChannel) if !self.cfg.model.drop_on_dead_port => {
                    // Kept: it waits for a table update.
                    self.vs[k].hd.out = NONE;
                    self.held.push((c, vl));
                    return None;
                }
                Hop::Fail(_) if self.cfg.model.unroutable == Unroutable::Hold => {
                    self.vs[k].hd.out = NONE;
                    self.held.push((c, vl));
                    return None;
                }
                Hop::Fail(Failure::DeadChannel) => Some(DropReason::DeadPort),
                Hop::Fail(_) => Some(DropReason::Unroutable),
            };
            self.q_pop(IN, k);
            let at = self.now.max(pk.tail);
            self.return_credits(c, vl, pk.cr, at);
            self.drop_pkt(p, why.expect("a reason"));
        }
    }

    /// Crossbar arbitration for output `o`: round robin over the (input port, VL) heads
    /// routed to `o` (an input sends one packet at a time); a head needs room for the whole
    /// packet in the output buffer of its VL (virtual cut-through).
    #[inline]
    pub(super) fn arbitrate(&mut self, o: u32) {
        let oi = o as usize;
        if self.cs[oi].xout_busy || !self.cs[oi].alive {
            return;
        }
        // Most calls find no request: answer those without the scan's set-up.
        if self.rw == 1 && self.cs[oi].req == 0 {
            return;
        }
        self.arbitrate_scan(o);
    }

    /// [`Sim::arbitrate`] past its quick checks: scans the request bits round robin.
    #[inline(never)]
    pub(super) fn arbitrate_scan(&mut self, o: u32) {
        let oi = o as usize;
        let s = self.cs[oi].src_sw;
        let nvl = self.nvl;
        let nbits = self.net.ports(s) as usize * nvl;
        let words = nbits.div_ceil(64);
        let mut start = self.cs[oi].xout_rr as usize + 1;
        if start >= nbits {
            start = 0;
        }
        // Words from the one holding `start`, wrapping; the first word masked below `start`
        // and visited again at the end for the bits below it.
        let (w0, b0) = (start / 64, start % 64);
        let mut wi = w0;
        for step in 0..=words {
            let mut bits = self.req_word(oi, wi);
            if step == 0 {
                bits &= !0u64 << b0;
            } else if step == words {
                bits &= !(!0u64 << b0);
            }
            while bits != 0 {
                let b = wi * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (port, v) = if nvl == 1 { (b, 0) } else { (b / nvl, b % nvl) };
                let c = self.net.in_channel(s, port as u8);
                let ci = c as usize;
                if self.cs[ci].xin_pkt != NONE {
                    continue;
                }
                let h = self.vs[ci * nvl + v].hd;
                debug_assert_eq!(h.out, o, "a request has a routed head");
                if self.vs[oi * nvl + h.ovl as usize].out_space >= h.cr as u32 {
                    self.cs[oi].xout_rr = b as u32;
                    self.grant(c, v as u8, o, h);
                    return;
                }
            }
            wi += 1;
            if wi == words {
                wi = 0;
            }
        }
    }

    /// Moves head `h` of input buffer (`c`, `vl`) across the crossbar to output `o`.
    pub(super) fn grant(&mut self, c: u32, vl: u8, o: u32, h: Head) {
        let (ci, oi) = (c as usize, o as usize);
        let nvl = self.nvl;
        let p = self
            .q_pop(IN, ci * nvl + vl as usize)
            .expect("a routed head is in its buffer");
        self.vs[ci * nvl + vl as usize].hd.out = NONE;
        self.clear_req(c, vl, o);
        let pk = &mut self.pk[p as usize];
        let ko = oi * nvl + h.ovl as usize;
        self.cs[oi].oq_mask |= 1 << h.ovl;
        self.vs[ko].out_space -= pk.cr as u32;
        let tx = pk.bytes as u64 * self.cs[oi].t_byte as u64;
        let tx = match self.cfg.model.xbar_speedup {
            1 => tx,
            k => tx / k as u64,
        };
        let done = (self.now + tx).max(pk.tail);
        pk.tail = done;
        pk.state = P_OUT;
        self.cs[ci].xin_pkt = p;
        self.cs[ci].xin_out = o;
        self.cs[ci].xin_vl = vl;
        self.cs[ci].xin_cr = pk.cr;
        self.cs[oi].xout_busy = true;
        self.q_push(OUT, ko, p);
        // The crossbar event is pushed where it always was, before what `try_link` pushes;
        // when `try_link` starts this packet on the link and the two end at the same time,
        // they are adjacent in the queue and go in as one event ([`EV_XL`]).
        self.xbar_pending = (c, p, done);
        self.try_link(o);
        if self.xbar_pending.0 != NONE {
            self.xbar_pending.0 = NONE;
            self.q.push(done, ev(EV_XBAR, c as u64));
        }
        // The next packet of this input buffer is routed now (its request waits for the
        // input to be free).
        self.route_head(c, vl);
    }

    pub(super) fn on_xbar_done(&mut self, c: u32) {
        let ci = c as usize;
        let o = self.cs[ci].xin_out;
        let (vl, cr) = (self.cs[ci].xin_vl, self.cs[ci].xin_cr);
        self.cs[ci].xin_pkt = NONE;
        self.cs[o as usize].xout_busy = false;
        let s = self.cs[ci].dst_sw;
        if !self.sw_alive[s as usize] {
            return;
        }
        self.return_credits(c, vl, cr, self.now);
        self.arbitrate(o);
        // The input is free: every output its heads wait for may take it.
        let nvl = self.nvl;
        for v in 0..nvl {
            if self.cs[ci].xin_pkt != NONE {
                break;
            }
            let k = ci * nvl + v;
            if self.q_len(IN, k) > 0 {
                let out = self.vs[k].hd.out;
                if out != NONE && out != o {
                    self.arbitrate(out);
                }
            }
        }
    }
}
