//! Who sends and who receives under a fault mask, shared by the walker (`walk`), the CDG
//! builder (`cdg`), the metrics and the VL engines' path walks: the forwarding plane, the
//! live sources per switch (CSR), and the live destination LIDs in ascending order.

use crate::forward::{Forward, Hop, Plane, NONE};
use crate::tables::Routing;
use fabric::{ChannelId, Fabric, FaultMask, Lid, PortId, NO_PORT};

/// A destination LID owned by a live end port.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dest {
    pub lid: Lid,
    /// Index into `Fabric::end_ports`.
    pub ep: u32,
    pub base: bool,
}

/// Per-call precomputation shared by the walker, the CDG builder and the metrics: the
/// forwarding plane plus who sends and who receives.
#[derive(Debug)]
pub(crate) struct WalkContext<'a> {
    pub f: &'a Fabric,
    pub r: &'a Routing,
    pub plane: Plane,
    /// Live sources per switch, CSR over end-port indices in ascending order.
    pub sw_src_start: Vec<u32>,
    pub sw_srcs: Vec<u32>,
    /// Switches with at least one live source, ascending.
    pub src_switches: Vec<u32>,
    /// Live end ports cabled directly to another end node.
    pub direct_srcs: Vec<u32>,
    /// Live destination LIDs, ascending.
    pub dests: Vec<Dest>,
    /// End-port-owned LIDs regardless of liveness (for the pair universe).
    pub all_ep_lids: u64,
}

impl<'a> WalkContext<'a> {
    pub fn new(f: &'a Fabric, r: &'a Routing, mask: Option<&FaultMask>) -> WalkContext<'a> {
        let ns = f.num_switches();
        let plane = Plane::new(f, mask);
        let ne = f.end_ports.len();
        let mut direct_srcs = Vec::new();
        let mut cnt = vec![0u32; ns + 1];
        for e in 0..ne as u32 {
            let a = plane.attach(e);
            if !a.live {
                continue;
            }
            if a.sw != NONE {
                cnt[a.sw as usize + 1] += 1;
            } else {
                direct_srcs.push(e);
            }
        }
        for i in 0..ns {
            cnt[i + 1] += cnt[i];
        }
        let sw_src_start = cnt.clone();
        let mut fill = cnt;
        let mut sw_srcs = vec![0u32; sw_src_start[ns] as usize];
        for e in 0..ne as u32 {
            let a = plane.attach(e);
            if a.live && a.sw != NONE {
                sw_srcs[fill[a.sw as usize] as usize] = e;
                fill[a.sw as usize] += 1;
            }
        }
        let src_switches = (0..ns as u32)
            .filter(|&s| sw_src_start[s as usize + 1] > sw_src_start[s as usize])
            .collect();
        let mut dests = Vec::new();
        let mut all_ep_lids = 0u64;
        for lid in 1..f.lid_owner.len() {
            let Some(p) = f.lid_port(lid as Lid) else {
                continue;
            };
            let Some(ep) = plane.end_index(p) else {
                continue;
            };
            all_ep_lids += 1;
            if plane.attach(ep).live {
                dests.push(Dest {
                    lid: lid as Lid,
                    ep,
                    base: f.port(p).lid == lid as Lid,
                });
            }
        }
        WalkContext {
            f,
            r,
            plane,
            sw_src_start,
            sw_srcs,
            src_switches,
            direct_srcs,
            dests,
            all_ep_lids,
        }
    }

    #[inline]
    pub fn num_switches(&self) -> usize {
        self.plane.num_switches()
    }

    /// The forwarding view over this net's plane and tables.
    #[inline]
    pub fn forward(&self) -> Forward<'_> {
        Forward::new(self.f, &self.plane, self.r)
    }

    /// What output port `o` of switch index `s` leads to.
    #[inline]
    pub fn hop(&self, s: usize, o: u8) -> Hop {
        self.plane.hop(s, o)
    }

    /// Usable under the mask (node alive and cable alive).
    #[inline]
    pub fn ep_live(&self, e: u32) -> bool {
        self.plane.attach(e).live
    }

    /// The switch index a live end port hangs off (`NONE` if it is not live or not on a
    /// switch).
    #[inline]
    pub fn ep_sw(&self, e: u32) -> u32 {
        let a = self.plane.attach(e);
        if a.live {
            a.sw
        } else {
            NONE
        }
    }

    /// The switch-side port number of end port `e`.
    #[inline]
    pub fn ep_inport(&self, e: u32) -> u8 {
        self.plane.attach(e).inp
    }

    /// The injection channel of end port `e` (valid when it is cabled).
    #[inline]
    pub fn ep_chan(&self, e: u32) -> ChannelId {
        self.plane.attach(e).ch
    }

    /// Live sources hanging off switch `s`.
    #[inline]
    pub fn srcs_of(&self, s: usize) -> &[u32] {
        &self.sw_srcs[self.sw_src_start[s] as usize..self.sw_src_start[s + 1] as usize]
    }

    pub fn live_sources(&self) -> u64 {
        (0..self.plane.num_end_ports() as u32)
            .filter(|&e| self.ep_live(e))
            .count() as u64
    }

    /// Fills `out[b * S + s]` with the LFT entry of switch `s` for `lids[b]`.
    pub fn gather(&self, lids: impl Iterator<Item = Lid> + Clone, nb: usize, out: &mut Vec<u8>) {
        let ns = self.num_switches();
        out.clear();
        out.resize(nb * ns, NO_PORT);
        for s in 0..ns {
            let row = self
                .r
                .lft
                .get(s * self.r.stride()..(s + 1) * self.r.stride());
            let Some(row) = row else { continue };
            for (b, lid) in lids.clone().enumerate() {
                out[b * ns + s] = row.get(lid as usize).copied().unwrap_or(NO_PORT);
            }
        }
    }

    /// The destination end port of `d`.
    #[inline]
    pub fn dest_port(&self, d: &Dest) -> PortId {
        self.f.end_ports[d.ep as usize]
    }
}
