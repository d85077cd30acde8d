//! Programming the switches: LIDs and port states, SwitchInfo, and the push of LFT blocks
//! and SL2VL rows that differ from what the switches hold, confirmed SMP by SMP.

use crate::live::Live;
use crate::pipe::{Req, ReqError};
use crate::SmError;
use fabric::{NodeId, NodeKind, PortId};
use mad::attr::{self, port_state, PortInfo, SwitchInfo};
use mad::{attr_id, Route, Smp, Transport};
use routing::tables::update::{self, lft_block_count, lft_block_lids, Update};
use routing::Routing;

/// Counts of one push.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pushed {
    pub(crate) lft_blocks: u64,
    pub(crate) sl2vl_entries: u64,
    /// MulticastForwardingTable blocks.
    pub(crate) mft_blocks: u64,
    pub(crate) failed: u64,
    /// Blocks and rows that differ but are not in the switches: no live route to them
    /// (a switch cut off from the SM) or no good answer.
    pub(crate) unsent: u64,
}

/// Which LFT blocks and SL2VL tables a push compares.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope<'a> {
    /// Everything, sent whether it differs or not (bring-up).
    First,
    /// Everything, sent where it differs.
    All,
    /// Only these (switch index, LFT block)s and these nodes' SL2VL tables, sent where
    /// they differ (a repair that knows what it wrote).
    Only(&'a [(usize, usize)], &'a [NodeId]),
}

impl<T: Transport> Live<'_, T> {
    pub(crate) fn program_lids(&mut self) -> Result<u64, SmError> {
        let f = self.f;
        let mut reqs = Vec::new();
        let mut ports = Vec::new();
        for &n in &f.switches {
            let Some(r) = self.routes[n.idx()].clone() else {
                continue;
            };
            let p0 = f.port_id(n, 0);
            let mut pi = self.port_info[p0.idx()].for_set();
            pi.set_lid(f.port(p0).lid);
            pi.set_lmc(0);
            pi.set_master_sm_lid(self.sm_lid);
            reqs.push(Req::set(Route::Direct(r), attr_id::PORT_INFO, 0, pi.0));
            ports.push(p0);
        }
        for &p in &f.end_ports {
            let Some(r) = self.port_route(p) else {
                continue;
            };
            let mut pi = self.port_info[p.idx()].for_set();
            pi.set_lid(f.port(p).lid);
            pi.set_lmc(f.port(p).lmc);
            pi.set_master_sm_lid(self.sm_lid);
            // A new master (bring-up, take-over) asks the hosts to register again: their
            // multicast joins and subscriptions were with the SA before it, as OpenSM does
            // on its first sweep as master.
            if self.port_info[p.idx()].cap_mask() & attr::cap::IS_CLIENT_REREG != 0 {
                pi.set_client_reregister(1);
                self.rereg_asked += 1;
            }
            let num = f.port(p).num as u32;
            reqs.push(Req::set(Route::Direct(r), attr_id::PORT_INFO, num, pi.0));
            ports.push(p);
        }
        let got = self.pipe.run(&reqs)?;
        Ok(self.absorb_port_info(&ports, &got))
    }

    /// Keeps the PortInfo that the Set responses for `ports` return; counts failures.
    pub(crate) fn absorb_port_info(
        &mut self,
        ports: &[PortId],
        got: &[Result<Smp, ReqError>],
    ) -> u64 {
        let mut failed = 0;
        for (&p, g) in ports.iter().zip(got) {
            match g {
                Ok(s) => self.port_info[p.idx()] = PortInfo(s.data),
                Err(_) => failed += 1,
            }
        }
        failed
    }

    /// Ports ARMED, then ACTIVE (ibsim and the spec allow one step at a time, with the peer
    /// within one step).
    pub(crate) fn activate(&mut self) -> Result<u64, SmError> {
        let mut failed = 0;
        for (from, to) in [
            (port_state::INIT, port_state::ARMED),
            (port_state::ARMED, port_state::ACTIVE),
        ] {
            let f = self.f;
            let mut reqs = Vec::new();
            let mut ports = Vec::new();
            for (i, p) in f.ports.iter().enumerate() {
                if p.num == 0 || p.link.is_none() || self.port_info[i].port_state() != from {
                    continue;
                }
                let pid = PortId(i as u32);
                let route = if f.is_switch(p.node) {
                    self.routes[p.node.idx()].clone()
                } else {
                    self.port_route(pid)
                };
                let Some(r) = route else { continue };
                let mut pi = self.port_info[i].for_set();
                pi.set_port_state(to);
                reqs.push(Req::set(
                    Route::Direct(r),
                    attr_id::PORT_INFO,
                    p.num as u32,
                    pi.0,
                ));
                ports.push(pid);
            }
            let got = self.pipe.run(&reqs)?;
            failed += self.absorb_port_info(&ports, &got);
        }
        Ok(failed)
    }

    /// SwitchInfo Set on `only` (or every switch): LinearFDBTop = the highest LID, and
    /// PortStateChange cleared.
    pub(crate) fn set_switch_info(&mut self, only: Option<&[NodeId]>) -> Result<u64, SmError> {
        let f = self.f;
        let list: Vec<NodeId> = only.map_or_else(|| f.switches.clone(), |s| s.to_vec());
        let sets = list
            .into_iter()
            .map(|n| {
                let mut si = self.switch_info[n.idx()];
                si.set_linear_fdb_top(f.max_lid());
                si.set_port_state_change(1);
                (n, si)
            })
            .collect();
        self.send_switch_info(sets)
    }

    /// Sends each SwitchInfo Set of `sets` to its switch (those without a directed route are
    /// skipped), keeps what each switch answers as what it holds, and returns the Sets that
    /// failed.
    pub(crate) fn send_switch_info(
        &mut self,
        sets: Vec<(NodeId, SwitchInfo)>,
    ) -> Result<u64, SmError> {
        let mut reqs = Vec::with_capacity(sets.len());
        let mut who = Vec::with_capacity(sets.len());
        for (n, si) in sets {
            let Some(r) = self.routes[n.idx()].clone() else {
                continue;
            };
            reqs.push(Req::set(Route::Direct(r), attr_id::SWITCH_INFO, 0, si.0));
            who.push(n);
        }
        let got = self.pipe.run(&reqs)?;
        let mut failed = 0;
        for (n, g) in who.into_iter().zip(got) {
            match g {
                Ok(s) => self.switch_info[n.idx()] = SwitchInfo(s.data),
                Err(_) => failed += 1,
            }
        }
        Ok(failed)
    }

    /// Sends the LFT blocks and SL2VL rows of `new` that differ from what the switches
    /// hold, within `scope`, by directed route over live links, and waits for every answer.
    pub(crate) fn push(&mut self, new: &mut Routing, scope: Scope) -> Result<Pushed, SmError> {
        let f = self.f;
        let first = matches!(scope, Scope::First);
        let mut reqs = Vec::new();
        // What each request writes, and what could not be sent (no live route).
        let mut what: Vec<Update> = Vec::new();
        let mut unsent: Vec<Update> = Vec::new();
        let stride = new.stride();
        let blocks = lft_block_count(stride);
        let mut pushed = Pushed::default();
        // What the scope covers, walked without listing every block of the fabric.
        let lft_blocks: Box<dyn Iterator<Item = (usize, usize)>> = match scope {
            Scope::Only(b, _) => Box::new(b.iter().copied()),
            Scope::First | Scope::All => {
                Box::new((0..f.num_switches()).flat_map(move |s| (0..blocks).map(move |b| (s, b))))
            }
        };
        let nodes: Box<dyn Iterator<Item = NodeId>> = match scope {
            Scope::Only(_, n) => Box::new(n.iter().copied()),
            Scope::First | Scope::All => Box::new((0..f.nodes.len() as u32).map(NodeId)),
        };
        for (s, b) in lft_blocks {
            let si = fabric::SwitchIdx(s as u32);
            if !first && !update::lft_block_differs(&self.current, new, si, b) {
                continue;
            }
            let u = Update::Lft {
                sw: s as u32,
                block: b as u16,
            };
            let Some(r) = self.routes[f.switches[s].idx()].clone() else {
                unsent.push(u);
                continue;
            };
            let range = lft_block_lids(b, stride);
            let mut d = [fabric::NO_PORT; mad::SMP_DATA];
            d[..range.len()].copy_from_slice(&new.lft_of(si)[range]);
            reqs.push(Req::set(Route::Direct(r), attr_id::LFT, b as u32, d));
            what.push(u);
            pushed.lft_blocks += 1;
        }
        for n in nodes {
            let (i, node) = (n.idx(), &f.nodes[n.idx()]);
            if first && new.sl2vl.is_identity(n) {
                continue;
            }
            if !first && new.sl2vl.table(n) == self.current.sl2vl.table(n) {
                continue;
            }
            for (inp, out) in update::sl2vl_rows(f, n) {
                if !first && !update::sl2vl_row_differs(&self.current, new, n, inp, out) {
                    continue;
                }
                let u = Update::Sl2Vl { node: n, inp, out };
                let (route, modifier) = if node.kind == NodeKind::Switch {
                    (self.routes[i].clone(), attr::sl2vl_modifier(inp, out))
                } else {
                    (self.port_route(f.port_id(n, out)), 0)
                };
                let Some(r) = route else {
                    unsent.push(u);
                    continue;
                };
                reqs.push(Req::set(
                    Route::Direct(r),
                    attr_id::SL2VL,
                    modifier,
                    attr::sl2vl_encode(&update::sl2vl_row(new, n, inp, out)),
                ));
                what.push(u);
                pushed.sl2vl_entries += 1;
            }
        }
        let got = self.pipe.run(&reqs)?;
        for (t, g) in what.into_iter().zip(&got) {
            if g.is_err() {
                pushed.failed += 1;
                unsent.push(t);
            }
        }
        // What was not confirmed is still what it was: `new` keeps the old values there, so
        // that it says what the switches hold.
        pushed.unsent = unsent.len() as u64;
        for u in unsent {
            update::apply(new, &self.current, u);
        }
        Ok(pushed)
    }
}
