//! Building a run: checking the configuration, sizing the state and the event queue, and
//! adding the fault and its repair.

use super::state::{ChanState, Host, VlState};
use super::{Sim, SimError};
use crate::config::{Config, LinkRate};
use crate::net::{FrontRings, SimNet};
use crate::queue::EventQueue;
use crate::reconf::FaultEvent;
use crate::report::{DropReason, FaultLog};
use crate::stats::Histogram;
use crate::traffic;
use fabric::rng::Rng;
use fabric::{ChannelId, Fabric, Lid};
use routing::forward::{Plane, NONE};
use routing::tables::PathSl;
use routing::Routing;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Highest VL any packet can use under `r` (SLs the path SLs use, through every SL2VL table).
/// VL 15, the drop lane, is not one: a packet a switch maps to it is dropped there
/// ([`DropReason::VlOutOfRange`]), as the checker drops it.
fn max_vl(f: &Fabric, r: &Routing, extra_sls: &[u8]) -> u8 {
    let mut sls = [false; 16];
    match &r.path_sl {
        PathSl::Uniform(s) => sls[*s as usize & 15] = true,
        PathSl::PerDest(v) => v.iter().for_each(|&s| sls[s as usize & 15] = true),
        PathSl::PerPair { sl, .. } => sl.iter().for_each(|&s| sls[s as usize & 15] = true),
    }
    for &s in extra_sls {
        sls[s as usize & 15] = true;
    }
    let used: Vec<u8> = (0..16u8).filter(|&s| sls[s as usize]).collect();
    let mut m = 0u8;
    for (i, node) in f.nodes.iter().enumerate() {
        let n = fabric::NodeId(i as u32);
        if r.sl2vl.is_identity(n) {
            for &s in &used {
                m = m.max(data_vl(r.sl2vl.vl(n, 0, 1, s)));
            }
            continue;
        }
        for inp in 0..=node.nports {
            for out in 0..=node.nports {
                for &s in &used {
                    m = m.max(data_vl(r.sl2vl.vl(n, inp, out, s)));
                }
            }
        }
    }
    m
}

/// `vl`, or 0 for the drop lane, which sizes nothing.
fn data_vl(vl: u8) -> u8 {
    if vl == routing::tables::DROP_VL {
        0
    } else {
        vl
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl<'f> Sim<'f> {
    /// A run of `routing` on `f` with `cfg`. Packets are routed through
    /// [`routing::forward::Forward::step`] over a [`Plane`] of `f`: the same forwarding view
    /// the checker reads.
    pub fn new(f: &'f Fabric, routing: Routing, cfg: Config) -> Result<Self, SimError> {
        routing
            .validate(f)
            .map_err(|e| SimError::Tables(e.to_string()))?;
        cfg.check(f).map_err(SimError::Config)?;
        let m = &cfg.model;
        let tr = &cfg.traffic;
        let (min_bytes, max_bytes) = (tr.min_bytes(), tr.max_bytes());
        let plane = Plane::new(f, None);
        let rate = m.link_rate;
        let t_byte = |c: ChannelId| -> u32 {
            match rate {
                LinkRate::Uniform { ps_per_byte } => ps_per_byte,
                LinkRate::FromFabric => {
                    let l = f.link(c.link());
                    let gbps = l.width.lanes() as f64 * l.speed.gbps_per_lane();
                    (8000.0 / gbps).round().max(1.0) as u32
                }
            }
        };
        let net = SimNet::new(f, &plane, &t_byte);
        let cs: Vec<ChanState> = net.chans.iter().map(ChanState::new).collect();
        let host_lid: Vec<Lid> = net
            .host_ep
            .iter()
            .map(|&e| f.port(f.end_ports[e as usize]).lid)
            .collect();
        let nh = net.host_ep.len();
        if nh < 2 {
            return Err(SimError::TooFewHosts);
        }
        let nvl = max_vl(f, &routing, &[]) as usize + 1;
        let in_cap = m.in_buf_bytes / 64;
        let out_cap = m.out_buf_bytes / 64;
        let min_cr = (min_bytes as usize).div_ceil(64);
        let max_ports = f
            .switches
            .iter()
            .map(|&n| f.node(n).nports)
            .max()
            .unwrap_or(0);
        let mean_bytes = tr.size.mean().round().max(1.0) as u64;
        let dests = traffic::destinations(&tr.pattern, nh, cfg.seed, &|e| {
            net.ep_host.get(e as usize).copied().filter(|&h| h != NONE)
        });
        let hosts = (0..nh)
            .map(|h| Host {
                ep: net.host_ep[h],
                ch: net.host_ch[h],
                node: f.port(f.end_ports[net.host_ep[h] as usize]).node,
                num: f.port(f.end_ports[net.host_ep[h] as usize]).num,
                rng: Rng::new(
                    cfg.seed
                        .wrapping_mul(0xD1B5_4A32_D192_ED03)
                        .wrapping_add(h as u64 + 1),
                ),
                dest: dests[h].clone(),
                queue: VecDeque::new(),
                alive: true,
            })
            .collect::<Vec<_>>();
        // Bucket width: a power of two dividing the time quantum when it is coarse.
        let mut quantum = 0u64;
        for c in &net.chans {
            quantum = gcd(quantum, c.t_byte as u64);
        }
        for t in [m.t_route, m.t_prop, m.t_fc] {
            quantum = gcd(quantum, t);
        }
        let min_delay = net
            .chans
            .iter()
            .map(|c| c.t_byte as u64 * tr.size.min() as u64)
            .min()
            .unwrap_or(1)
            .min((m.hdr_bytes as u64 * quantum.max(1) + m.t_route).max(1));
        let q_shift = if quantum >= 64 {
            63 - quantum.leading_zeros()
        } else {
            (63 - (min_delay / 8).max(1).leading_zeros()).min(20)
        };
        // The wheel's horizon: four times the longest constant delay (a packet's
        // serialization on the slowest link, routing, propagation, credit return), so that
        // what is in flight stays in the wheel while the wheel itself stays small: it is
        // swept once per horizon, and a wider one only spreads the same events over more
        // cold memory (measured on the 18-ary 3-tree: 2^14 buckets of 2 ns, ~16 KiB each).
        let q_shift = q_shift.min(24);
        let slowest = net.chans.iter().map(|c| c.t_byte as u64).max().unwrap_or(1);
        let longest = slowest * max_bytes as u64 + m.t_route + m.t_prop + m.t_fc;
        let lb = ((4 * longest) >> q_shift)
            .max(1)
            .next_power_of_two()
            .trailing_zeros();
        let q = EventQueue::new(q_shift, lb.clamp(6, 14));
        let end = cfg.t_end;
        let gen_stop = tr.stop_at.unwrap_or(end).min(end);
        let mut sim = Sim {
            f,
            net,
            plane,
            routing,
            nvl,
            q,
            now: 0,
            end,
            cs,
            // the per-VL state: empty until `size_vls` below
            req: Vec::new(),
            rw: 0,
            xbar_pending: (NONE, NONE, 0),
            max_ports: max_ports as usize,
            vs: Vec::new(),
            bufs: [FrontRings::new(0, 1), FrontRings::new(0, 1)],
            cred_fly: Vec::new(),
            in_cap,
            out_cap,
            inq_min_cr: min_cr,
            sw_alive: vec![true; f.num_switches()],
            held: Vec::new(),
            host_lid,
            hosts,
            pk: Vec::new(),
            free_pk: Vec::new(),
            mean_bytes,
            overrides: FxHashMap::default(),
            inject_stopped: false,
            gen_stop,
            fault: None,
            plan: Vec::new(),
            ctrl: Vec::new(),
            computed: false,
            waiting_drain: false,
            log: FaultLog::default(),
            generated: 0,
            delivered: 0,
            dropped: [0; DropReason::COUNT],
            in_sources: 0,
            live: 0,
            hops: 0,
            events: 0,
            progress: 0,
            last_progress: 0,
            bins: Vec::new(),
            lat: Histogram::default(),
            net_lat: Histogram::default(),
            win_del_bytes: 0,
            win_gen_bytes: 0,
            win_inj_bytes: 0,
            deadlock: None,
            invariant_checks: 0,
            cfg,
        };
        sim.size_vls(nvl);
        Ok(sim)
    }

    /// Adds the run's failure (one per run) and the repair that follows it.
    pub fn with_fault(mut self, fault: FaultEvent) -> Result<Self, SimError> {
        if let Some(r) = &fault.repair {
            if r.tables.max_lid != self.routing.max_lid
                || r.tables.lft.len() != self.routing.lft.len()
            {
                return Err(SimError::Tables(
                    "the repair's tables cover another LID space than the base tables".into(),
                ));
            }
            r.tables
                .validate(self.f)
                .map_err(|e| SimError::Tables(e.to_string()))?;
            let sls: Vec<u8> = r.sources.values().map(|x| x.1).collect();
            let nvl = (max_vl(self.f, &r.tables, &sls) as usize + 1).max(self.nvl);
            if nvl > self.nvl {
                self.size_vls(nvl);
            }
        }
        self.fault = Some(fault);
        Ok(self)
    }

    /// The per-(channel, VL) state for `nvl` VLs, every buffer empty and every credit home
    /// (at the start of a run, or when a repair needs more VLs before it begins).
    pub(super) fn size_vls(&mut self, nvl: usize) {
        let nch = self.net.chans.len();
        let min_cr = self.inq_min_cr;
        self.nvl = nvl;
        self.rw = ((self.max_ports + 1) * nvl).div_ceil(64);
        self.req = if self.rw == 1 {
            Vec::new()
        } else {
            vec![0; nch * self.rw]
        };
        self.cs.iter_mut().for_each(|c| c.req = 0);
        self.vs = vec![VlState::new(self.in_cap, self.out_cap); nch * nvl];
        self.bufs = [
            FrontRings::new(nch * nvl, self.in_cap as usize / min_cr),
            FrontRings::new(nch * nvl, self.out_cap as usize / min_cr),
        ];
        self.cred_fly = vec![0; nch * nvl];
    }

    /// Data VLs simulated.
    pub fn vls(&self) -> usize {
        self.nvl
    }
}
