//! Faults and reconfiguration: the timed control actions, failing a link or switch, and
//! uploading the repair's SMPs.

use super::state::{ev, Ctrl, EV_CTRL, IN, OUT};
use super::Sim;
use crate::reconf::Scheme;
use crate::report::DropReason;
use fabric::Fault;
use routing::forward::NONE;
use routing::tables::update;

impl Sim<'_> {
    pub(super) fn on_ctrl(&mut self, i: usize) {
        match self.ctrl[i] {
            Ctrl::Fail(fault) => self.fail(fault),
            Ctrl::Detected => {
                if self.log.scheme == Some(Scheme::FullStatic) {
                    self.inject_stopped = true;
                    self.log.stopped_at = Some(self.now);
                    self.waiting_drain = true;
                    self.check_drained();
                }
            }
            Ctrl::Computed => {
                self.computed = true;
                if self.log.scheme == Some(Scheme::FullStatic) {
                    self.check_drained();
                } else {
                    self.begin_upload();
                }
            }
            Ctrl::Smp(j) => {
                let smp = self.plan[j];
                let new = &self
                    .fault
                    .as_ref()
                    .expect("fault")
                    .repair
                    .as_ref()
                    .expect("repair")
                    .tables;
                update::apply(&mut self.routing, new, smp);
                self.log.first_smp.get_or_insert(self.now);
                self.log.last_smp = Some(self.now);
                self.retry_held();
            }
            Ctrl::Sources => {
                let r = self
                    .fault
                    .as_ref()
                    .expect("fault")
                    .repair
                    .as_ref()
                    .expect("repair");
                self.routing.path_sl = r.tables.path_sl.clone();
                self.routing.sl2vl = r.tables.sl2vl.clone();
                self.overrides = r.sources.iter().map(|(&k, &v)| (k, v)).collect();
                self.log.sources_at = Some(self.now);
                self.retry_held();
                if self.inject_stopped {
                    self.inject_stopped = false;
                    for h in 0..self.hosts.len() as u32 {
                        self.try_inject(h);
                    }
                }
            }
        }
    }

    pub(super) fn check_drained(&mut self) {
        if self.waiting_drain && self.computed && self.live == self.in_sources {
            self.waiting_drain = false;
            self.log.drained_at = Some(self.now);
            self.begin_upload();
        }
    }

    /// Schedules every SMP of the plan from now: `smp_parallel` outstanding, each applied at
    /// the switch half a round trip after it is sent; sources switch when the last returns.
    pub(super) fn begin_upload(&mut self) {
        let t = self.cfg.reconf;
        let par = t.smp_parallel.max(1) as usize;
        let base = self.ctrl.len();
        for j in 0..self.plan.len() {
            self.ctrl.push(Ctrl::Smp(j));
            let sent = self.now + (j / par) as u64 * t.t_smp;
            self.q
                .push(sent + t.t_smp / 2, ev(EV_CTRL, (base + j) as u64));
        }
        let rounds = self.plan.len().div_ceil(par) as u64;
        self.ctrl.push(Ctrl::Sources);
        self.q.push(
            self.now + rounds * t.t_smp,
            ev(EV_CTRL, (base + self.plan.len()) as u64),
        );
    }

    pub(super) fn retry_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        for (c, vl) in held {
            let k = c as usize * self.nvl + vl as usize;
            if self.q_len(IN, k) > 0 && self.vs[k].hd.out == NONE {
                if let Some(o) = self.route_head(c, vl) {
                    self.arbitrate(o);
                }
            }
        }
    }

    pub(super) fn fail(&mut self, fault: Fault) {
        let f = self.f;
        let mut chans = Vec::new();
        match fault {
            Fault::Link(l) => {
                chans.push(l.forward().0);
                chans.push(l.forward().reverse().0);
                self.plane.fail_channel(f, l.forward());
                self.plane.fail_channel(f, l.forward().reverse());
            }
            Fault::Switch(n) => {
                self.plane.fail_node(f, n);
                for p in f.node_ports(n) {
                    if let Some(c) = f.out_channel(p) {
                        chans.push(c.0);
                        chans.push(c.reverse().0);
                    }
                }
                if let Some(s) = f.switch_of(n) {
                    self.sw_alive[s.idx()] = false;
                }
            }
        }
        for &c in &chans {
            self.cs[c as usize].alive = false;
        }
        let nvl = self.nvl;
        // Hosts whose link died: their queues are lost, they stop sending.
        for h in 0..self.hosts.len() {
            if !self.cs[self.hosts[h].ch as usize].alive && self.hosts[h].alive {
                self.hosts[h].alive = false;
                let q = std::mem::take(&mut self.hosts[h].queue);
                self.cs[self.hosts[h].ch as usize].src_queued = false;
                for p in q {
                    self.drop_pkt(p, DropReason::SourceDown);
                }
            }
        }
        // A dead switch loses everything in its buffers.
        if let Fault::Switch(n) = fault {
            for p in f.node_ports(n) {
                let Some(oc) = f.out_channel(p) else { continue };
                let ic = oc.reverse().0 as usize;
                for v in 0..nvl {
                    let k = ic * nvl + v;
                    if self.q_len(IN, k) > 0 && self.vs[k].hd.out != NONE {
                        self.clear_req(ic as u32, v as u8, self.vs[k].hd.out);
                    }
                    self.cs[oc.idx()].oq_mask = 0;
                    for q in [
                        self.q_drain(IN, ic * nvl + v),
                        self.q_drain(OUT, oc.idx() * nvl + v),
                    ] {
                        for pkt in q {
                            self.drop_pkt(pkt, DropReason::SwitchDown);
                        }
                    }
                }
            }
        }
        // Outputs that died: their queues are dropped (or kept), heads routed to them too.
        for &c in &chans {
            let ci = c as usize;
            let src = self.cs[ci].src_sw;
            if src == NONE || !self.sw_alive[src as usize] || !self.cfg.model.drop_on_dead_port {
                continue;
            }
            self.cs[ci].oq_mask = 0;
            for v in 0..nvl {
                let k = ci * nvl + v;
                for pkt in self.q_drain(OUT, k) {
                    self.vs[k].out_space += self.pk[pkt as usize].cr as u32;
                    self.drop_pkt(pkt, DropReason::DeadPort);
                }
            }
            // Heads of the switch's inputs routed here.
            let nports = self.net.ports(src);
            for port in 1..nports {
                let ic = self.net.in_channel(src, port as u8);
                if ic == NONE || !self.cs[ic as usize].alive {
                    continue;
                }
                for v in 0..nvl {
                    let k = ic as usize * nvl + v;
                    if let Some(p) = self.q_front(IN, k) {
                        if self.vs[k].hd.out == c {
                            let pk = self.pk[p as usize];
                            self.q_pop(IN, k);
                            self.clear_req(ic, v as u8, c);
                            let at = self.now.max(pk.tail);
                            self.return_credits(ic, v as u8, pk.cr, at);
                            self.drop_pkt(p, DropReason::DeadPort);
                            if let Some(o) = self.route_head(ic, v as u8) {
                                self.arbitrate(o);
                            }
                        }
                    }
                }
            }
        }
    }
}
