//! Hosts and the packet slab: generating packets, injecting them from the source queue,
//! ejecting them at their destination, and dropping them.

use super::state::{ev, Packet, EV_GEN, P_FREE, P_SOURCE};
use super::Sim;
use crate::report::DropReason;
use crate::traffic;

impl Sim<'_> {
    pub(super) fn quantum_of(&self, h: usize) -> u64 {
        self.cs[self.hosts[h].ch as usize].t_byte as u64
    }

    pub(super) fn next_gap(&mut self, h: usize) -> Option<u64> {
        let tb = self.quantum_of(h);
        traffic::gap(
            &self.cfg.traffic,
            tb,
            self.mean_bytes,
            &mut self.hosts[h].rng,
        )
    }

    pub(super) fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        if let Some(i) = self.free_pk.pop() {
            self.pk[i as usize] = p;
            i
        } else {
            self.pk.push(p);
            (self.pk.len() - 1) as u32
        }
    }

    pub(super) fn free(&mut self, p: u32) {
        self.pk[p as usize].state = P_FREE;
        self.free_pk.push(p);
        self.live -= 1;
    }

    pub(super) fn drop_pkt(&mut self, p: u32, why: DropReason) {
        self.dropped[why as usize] += 1;
        let now = self.now;
        self.bin(now).drop_pkts += 1;
        if self.fault.is_some() && now >= self.log.at {
            self.log.dropped_after += 1;
        }
        if self.pk[p as usize].state == P_SOURCE {
            self.in_sources -= 1;
            self.bin(now).drop_src_pkts += 1;
        }
        self.free(p);
        self.check_drained();
    }

    pub(super) fn on_gen(&mut self, h: u32) {
        let hi = h as usize;
        let now = self.now;
        if let Some(g) = self.next_gap(hi) {
            let t = now + g;
            if t < self.gen_stop {
                self.q.push(t, ev(EV_GEN, h as u64));
            }
        }
        if !self.hosts[hi].alive {
            return;
        }
        let n = self.hosts.len() as u32;
        let host = &mut self.hosts[hi];
        let Some(dest) = &host.dest else { return };
        let dst = traffic::pick(dest, h, n, &mut host.rng);
        let bytes = traffic::size(&self.cfg.traffic.size, &mut host.rng);
        self.make_packet(h, dst, bytes);
    }

    pub(super) fn on_trace(&mut self, i: usize) {
        let (_, src, dst, bytes) = self.cfg.traffic.trace[i];
        let (h, d) = (
            self.net.ep_host[src as usize],
            self.net.ep_host[dst as usize],
        );
        if self.hosts[h as usize].alive && h != d {
            self.make_packet(h, d, bytes.max(1));
        }
    }

    pub(super) fn make_packet(&mut self, h: u32, dst: u32, bytes: u16) {
        let hi = h as usize;
        let now = self.now;
        let src = &self.hosts[hi];
        let (src_ep, node, num) = (src.ep, src.node, src.num);
        let over = if self.overrides.is_empty() {
            None
        } else {
            self.overrides
                .get(&(src_ep, self.net.host_ep[dst as usize]))
                .copied()
        };
        let (dlid, sl) = over.unwrap_or_else(|| {
            let lid = self.host_lid[dst as usize];
            (lid, self.routing.path_sl.get(src_ep as usize, lid))
        });
        let vl = self.routing.sl2vl.vl(node, 0, num, sl);
        let vl = if (vl as usize) < self.nvl { vl } else { 0 };
        let p = self.alloc(Packet {
            gen: now,
            inj: 0,
            tail: now,
            dst,
            ch: self.hosts[hi].ch,
            dlid,
            bytes,
            sl,
            vl,
            cr: (bytes as u32).div_ceil(64) as u8,
            hops: 0,
            state: P_SOURCE,
        });
        self.generated += 1;
        self.in_sources += 1;
        if now >= self.cfg.t_warmup {
            self.win_gen_bytes += bytes as u64;
        }
        let b = self.bin(now);
        b.gen_bytes += bytes as u64;
        b.gen_pkts += 1;
        self.hosts[hi].queue.push_back(p);
        self.cs[self.hosts[hi].ch as usize].src_queued = true;
        if self.hosts[hi].queue.len() == 1 {
            self.try_inject(h);
        }
    }

    pub(super) fn try_inject(&mut self, h: u32) {
        let host = &self.hosts[h as usize];
        let c = host.ch as usize;
        if self.cs[c].busy || self.inject_stopped || !self.cs[c].alive {
            return;
        }
        let Some(&p) = host.queue.front() else { return };
        let (vl, cr) = {
            let pk = &self.pk[p as usize];
            (pk.vl as usize, pk.cr as u32)
        };
        if self.vs[c * self.nvl + vl].credits < cr {
            return;
        }
        self.hosts[h as usize].queue.pop_front();
        self.cs[c].src_queued = !self.hosts[h as usize].queue.is_empty();
        self.in_sources -= 1;
        let now = self.now;
        let bytes = self.pk[p as usize].bytes as u64;
        self.pk[p as usize].inj = now;
        if now >= self.cfg.t_warmup {
            self.win_inj_bytes += bytes;
        }
        let b = self.bin(now);
        b.inj_bytes += bytes;
        b.inj_pkts += 1;
        self.start_tx(c as u32, p, vl as u8);
    }

    pub(super) fn deliver(&mut self, p: u32, host: u32) {
        let pk = self.pk[p as usize];
        if host != pk.dst {
            self.drop_pkt(p, DropReason::Misdelivered);
            return;
        }
        let now = self.now;
        let lat = now - pk.gen;
        self.delivered += 1;
        self.progress += 1;
        let warm = self.cfg.t_warmup;
        if now >= warm {
            self.win_del_bytes += pk.bytes as u64;
            if pk.gen >= warm {
                self.lat.add(lat);
                self.net_lat.add(now - pk.inj);
            }
        }
        if self.fault.is_some() && pk.gen >= self.log.at && now < self.log.at + 200 * crate::US {
            self.log.lat_after.add(lat);
        }
        let b = self.bin(now);
        b.del_bytes += pk.bytes as u64;
        b.del_pkts += 1;
        b.lat_sum += lat as u128;
        self.free(p);
        self.check_drained();
    }
}
