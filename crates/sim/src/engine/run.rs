//! The event loop: scheduling the first events, dispatching each event (with its prefetch
//! of what later events read) and turning the final state into the report.

use super::state::{
    ev, Ctrl, Packet, DATA_MASK, EV_ARRIVE, EV_CREDIT, EV_CTRL, EV_END, EV_GEN, EV_LINK, EV_TRACE,
    EV_WATCH, EV_XBAR, EV_XL, KIND_SHIFT, PF,
};
use super::Sim;
use crate::report::{self, Report, RunFacts};
use crate::stats::BinAcc;
use routing::forward::NONE;
use routing::tables::update::{self, Update};

impl Sim<'_> {
    pub(super) fn bin(&mut self, t: u64) -> &mut BinAcc {
        let b = (t / self.cfg.t_bin) as usize;
        if b >= self.bins.len() {
            self.bins.resize(b + 1, BinAcc::default());
        }
        &mut self.bins[b]
    }

    /// Runs to the end (or to a deadlock) and reports.
    pub fn run(mut self) -> Report {
        self.start();
        while let Some((t, p)) = self.q.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.prefetch();
            let data = p & DATA_MASK;
            match p >> KIND_SHIFT {
                EV_ARRIVE => self.on_arrive(data as u32),
                EV_XBAR => self.on_xbar_done(data as u32),
                EV_LINK => self.on_link_free(data as u32),
                EV_XL => {
                    let c = data as u32;
                    let o = self.cs[c as usize].xin_out;
                    self.on_xbar_done(c);
                    self.events += 1;
                    self.on_link_free(o);
                }
                EV_CREDIT => self.on_credit(data),
                EV_GEN => self.on_gen(data as u32),
                EV_WATCH => {
                    if self.on_watchdog() {
                        break;
                    }
                }
                EV_CTRL => self.on_ctrl(data as usize),
                EV_TRACE => self.on_trace(data as usize),
                EV_END => break,
                _ => unreachable!("unknown event kind"),
            }
        }
        if self.deadlock.is_none() {
            self.now = self.end;
        }
        if self.cfg.check_invariants {
            self.check_invariants();
        }
        self.finish()
    }

    /// Prefetches what events a few places ahead in the queue will read, so that their
    /// cache misses overlap with the work of the events before them (the events of one
    /// instant are independent; the run is memory bound on large fabrics). An arrival is
    /// fetched in stages, each reading what the one before brought in: its packet
    /// [`PF`]`[0]` events ahead, the channel it came by at `PF[1]`, its LFT entry and input
    /// ring at `PF[2]`, the hop that entry leads to at `PF[3]`, that output's state at
    /// `PF[4]`; the other events' channel state in two stages. Only a hint: the results do
    /// not depend on it (checked bit for bit on fault, deadlock and multi-VL runs).
    #[inline]
    pub(super) fn prefetch(&self) {
        use prefetch_index::prefetch_index as pf;
        let at = |k: usize| {
            self.q
                .ahead(k)
                .map(|e| (e >> KIND_SHIFT, (e & DATA_MASK) as usize))
        };
        match at(PF[0]) {
            Some((EV_ARRIVE, p)) => pf(&self.pk, p),
            Some((EV_XBAR | EV_XL | EV_LINK, c)) => pf(&self.cs, c),
            Some((EV_CREDIT, d)) => {
                let k = (d >> 24) * self.nvl + ((d >> 16) & 0xff);
                pf(&self.vs, k);
                pf(&self.cred_fly, k);
            }
            _ => {}
        }
        match at(PF[1]) {
            Some((EV_ARRIVE, p)) => {
                if let Some(pk) = self.pk.get(p) {
                    pf(&self.cs, pk.ch as usize);
                }
            }
            Some((kind @ (EV_XBAR | EV_XL), c)) => {
                if let Some(x) = self.cs.get(c) {
                    pf(&self.vs, c * self.nvl + x.xin_vl as usize);
                    let o = x.xin_out as usize;
                    pf(&self.cs, o);
                    if self.rw > 1 {
                        pf(&self.req, o * self.rw);
                    }
                    pf(&self.vs, o * self.nvl);
                    if kind == EV_XL && self.nvl > 1 {
                        pf(&self.vs, (o + 1) * self.nvl - 1);
                    }
                }
            }
            Some((EV_LINK, c)) => {
                pf(&self.vs, c * self.nvl);
            }
            _ => {}
        }
        // an arrival's packet (fetched at `PF[0]`) and the switch it enters
        let arrival = |k: usize| match at(k) {
            Some((EV_ARRIVE, p)) => {
                let pk = self.pk.get(p)?;
                let s = self.cs.get(pk.ch as usize)?.dst_sw;
                (s != NONE).then_some((pk, s as usize))
            }
            _ => None,
        };
        if let Some((pk, s)) = arrival(PF[2]) {
            pf(
                &self.routing.lft,
                s * self.routing.stride() + pk.dlid as usize,
            );
            pf(&self.vs, pk.ch as usize * self.nvl + pk.vl as usize);
        }
        let hop = |pk: &Packet, s: usize| {
            self.plane.hop_ref(
                s,
                self.routing
                    .out_port_checked(fabric::SwitchIdx(s as u32), pk.dlid),
            )
        };
        if let Some(h) = arrival(PF[3]).and_then(|(pk, s)| hop(pk, s)) {
            pf(std::slice::from_ref(h), 0);
        }
        if let Some(o) = arrival(PF[4])
            .and_then(|(pk, s)| hop(pk, s))
            .and_then(|h| h.channel())
        {
            let o = o.idx();
            pf(&self.cs, o);
            if self.rw > 1 {
                pf(&self.req, o * self.rw);
            }
            pf(&self.vs, o * self.nvl);
        }
    }

    pub(super) fn start(&mut self) {
        for h in 0..self.hosts.len() {
            if self.hosts[h].dest.is_some() {
                // A random phase within the first gap, so hosts do not start in lockstep.
                if let Some(g) = self.next_gap(h) {
                    let g = self.hosts[h].rng.below(g) / self.quantum_of(h) * self.quantum_of(h);
                    if g < self.gen_stop {
                        self.q.push(g, ev(EV_GEN, h as u64));
                    }
                }
            }
        }
        for (i, &(t, src, dst, _)) in self.cfg.traffic.trace.iter().enumerate() {
            let host = |e: u32| self.net.ep_host.get(e as usize).copied().unwrap_or(NONE);
            if t < self.end && host(src) != NONE && host(dst) != NONE {
                self.q.push(t, ev(EV_TRACE, i as u64));
            }
        }
        self.q.push(self.cfg.t_watchdog, ev(EV_WATCH, 0));
        self.q.push(self.end, ev(EV_END, 0));
        if let Some(fe) = &self.fault {
            let (at, fault) = (fe.at, fe.fault);
            let repair = fe.repair.as_ref().map(|r| (r.scheme, r.t_compute));
            self.log.at = at;
            self.ctrl.push(Ctrl::Fail(fault));
            self.q.push(at, ev(EV_CTRL, 0));
            if let Some((scheme, t_compute)) = repair {
                self.log.scheme = Some(scheme);
                self.log.t_compute = t_compute;
                let mask = fabric::FaultMask::of(self.f, &[fault]);
                let r = &self
                    .fault
                    .as_ref()
                    .expect("fault")
                    .repair
                    .as_ref()
                    .expect("repair");
                self.plan = update::plan(self.f, &self.routing, &r.tables, |n| !mask.node_dead(n));
                self.log.lft_blocks = self
                    .plan
                    .iter()
                    .filter(|s| matches!(s, Update::Lft { .. }))
                    .count();
                self.log.sl2vl_rows = self.plan.len() - self.log.lft_blocks;
                let det = at + self.cfg.reconf.t_detect;
                self.ctrl.push(Ctrl::Detected);
                self.q.push(det, ev(EV_CTRL, 1));
                self.ctrl.push(Ctrl::Computed);
                self.q.push(det + t_compute, ev(EV_CTRL, 2));
            }
        }
    }

    pub(super) fn finish(self) -> Report {
        let dropped_total: u64 = self.dropped.iter().sum();
        let senders: Vec<usize> = (0..self.hosts.len())
            .filter(|&h| self.hosts[h].dest.is_some())
            .collect();
        // Bytes per ps a sending host's link carries, summed over senders.
        let rate: f64 = senders
            .iter()
            .map(|&h| 1.0 / self.quantum_of(h) as f64)
            .sum();
        let sw_busy: Vec<u64> = (0..self.net.chans.len())
            .filter(|&c| self.cs[c].src_sw != NONE && self.cs[c].dst_sw != NONE)
            .map(|c| self.cs[c].busy_ps)
            .collect();
        let facts = RunFacts {
            cfg: &self.cfg,
            end: self.now,
            hosts: self.hosts.len(),
            senders: senders.len(),
            vls: self.nvl,
            rate,
            generated: self.generated,
            delivered: self.delivered,
            dropped: self.dropped,
            dropped_total,
            in_network: self.live - self.in_sources,
            in_sources: self.in_sources,
            hops: self.hops,
            events: self.events,
            win_gen: self.win_gen_bytes,
            win_inj: self.win_inj_bytes,
            win_del: self.win_del_bytes,
            bins: &self.bins,
            lat: &self.lat,
            net_lat: &self.net_lat,
            deadlock: self.deadlock.clone(),
            fault: self.fault.as_ref().map(|_| &self.log),
            sw_busy: &sw_busy,
            invariant_checks: self.invariant_checks,
        };
        report::build(facts)
    }
}
