//! The invariants (credits, buffer space, packet conservation, request bits), checked
//! from the packets themselves.

use super::state::{IN, OUT, P_FREE, P_SOURCE, P_WIRE};
use super::Sim;
use routing::forward::NONE;

impl Sim<'_> {
    /// Credits + in flight + buffered = capacity on every live (channel, VL) into a switch;
    /// free space + queued + being sent = capacity on every switch output; every generated
    /// packet is delivered, dropped, or somewhere. Recomputed from the packets themselves.
    /// Panics on a violation.
    pub fn check_invariants(&mut self) {
        self.invariant_checks += 1;
        self.check_requests();
        let nvl = self.nvl;
        let nch = self.net.chans.len();
        let mut wire = vec![0u32; nch * nvl];
        let (mut in_src, mut in_net) = (0u64, 0u64);
        for pk in &self.pk {
            match pk.state {
                P_FREE => {}
                P_SOURCE => in_src += 1,
                P_WIRE => {
                    wire[pk.ch as usize * nvl + pk.vl as usize] += pk.cr as u32;
                    in_net += 1;
                }
                _ => in_net += 1,
            }
        }
        let dropped: u64 = self.dropped.iter().sum();
        assert_eq!(
            self.generated,
            self.delivered + dropped + in_src + in_net,
            "generated = delivered + dropped + in network + in source queues"
        );
        assert_eq!(in_src, self.in_sources);
        assert_eq!(
            in_src,
            self.hosts.iter().map(|h| h.queue.len() as u64).sum::<u64>()
        );
        for (i, h) in self.hosts.iter().enumerate() {
            assert_eq!(
                self.cs[h.ch as usize].src_queued,
                !h.queue.is_empty(),
                "host {i}: the queued flag of its channel"
            );
        }
        for c in 0..nch {
            let ch = self.cs[c];
            if !self.cs[c].alive {
                continue;
            }
            for v in 0..nvl {
                let k = c * nvl + v;
                if ch.dst_sw != NONE {
                    let mut buffered: u32 = self
                        .q_iter(IN, k)
                        .map(|p| self.pk[p as usize].cr as u32)
                        .sum();
                    if self.cs[c].xin_pkt != NONE && self.cs[c].xin_vl as usize == v {
                        buffered += self.cs[c].xin_cr as u32;
                    }
                    assert_eq!(
                        self.vs[k].credits + wire[k] + buffered + self.cred_fly[k],
                        self.in_cap,
                        "credits + in flight + buffered = capacity on channel {c} VL {v}"
                    );
                }
                if ch.src_sw != NONE {
                    assert_eq!(
                        self.cs[c].oq_mask >> v & 1 == 1,
                        self.q_len(OUT, k) > 0,
                        "non-empty VL mask of channel {c}"
                    );
                    let queued: u32 = self
                        .q_iter(OUT, k)
                        .map(|p| self.pk[p as usize].cr as u32)
                        .sum();
                    let sending = if self.cs[c].busy && self.cs[c].send_vl as usize == v {
                        self.cs[c].send_cr as u32
                    } else {
                        0
                    };
                    assert_eq!(
                        self.vs[k].out_space + queued + sending,
                        self.out_cap,
                        "output space on channel {c} VL {v}"
                    );
                }
            }
        }
    }

    /// The request bits are exactly the routed heads (checked with the invariants).
    pub(super) fn check_requests(&self) {
        let nvl = self.nvl;
        for (o, ch) in self.net.chans.iter().enumerate() {
            if ch.src_sw == NONE || !self.cs[o].alive || !self.sw_alive[ch.src_sw as usize] {
                continue;
            }
            for port in 1..self.net.ports(ch.src_sw) as usize {
                let c = self.net.in_channel(ch.src_sw, port as u8);
                for v in 0..nvl {
                    let bit = port * nvl + v;
                    let set = self.req_word(o, bit / 64) >> (bit % 64) & 1 == 1;
                    let head = (c != NONE)
                        .then(|| self.q_front(IN, c as usize * nvl + v))
                        .flatten();
                    let h = (c != NONE).then(|| self.vs[c as usize * nvl + v].hd);
                    let routed = head.is_some() && h.is_some_and(|h| h.out == o as u32);
                    if let (Some(p), Some(h)) = (head, h) {
                        assert!(
                            h.out == NONE
                                || h.cr == self.pk[p as usize].cr && (h.ovl as usize) < nvl,
                            "the head record of port {port} VL {v} at switch {}: {h:?}",
                            ch.src_sw
                        );
                    }
                    assert_eq!(
                        set, routed,
                        "request bit of port {port} VL {v} at channel {o}"
                    );
                }
            }
        }
    }

    /// How many times [`Sim::check_invariants`] ran (tests check that it did).
    pub fn invariant_checks(&self) -> u64 {
        self.invariant_checks
    }
}
