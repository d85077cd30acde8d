//! The multicast check, from the MFTs alone (ours or OpenSM's `opensm.mcfdbs`), independent
//! of how the trees were built.
//!
//! **Delivery.** For every group and every switch with a sending member, a packet is
//! flooded through the masks as switches forward it (every port of the mask but the one it
//! came in on). Every receiver must get exactly one copy; a switch reached twice is a
//! duplicate (two paths, or a loop); an end port that is not a receiver getting a copy is a
//! leak; a mask port whose cable is missing or dead drops the packet. The members are the
//! group file's when given (all send; full members receive), else they are inferred from
//! the masks: every end port a mask names is a full member (all OpenSM's file can say).
//! Senders on one switch share one flood: they differ only in their own port, which the
//! switch never sends back to.
//!
//! **Dependencies.** Each hop of each flood adds a channel dependency (channel into the
//! switch, VL) → (channel out, VL), with VL = `SL2VL[switch][in][out][group SL]`; the first
//! hop's VL depends on the sender's port, so senders of one switch with different first-hop
//! VLs are flooded apart. [`mcast_cycles`] adds these edges to the unicast CDG and reports
//! every cycle, with a witness, so a credit loop that needs unicast and multicast together
//! is found.

use super::{Group, Mfts};
use crate::cdg::{find_cycles, Cdg, CycleReport};
use crate::forward::NONE;
use crate::tables::Routing;
use fabric::{ChannelId, Fabric, FaultMask, Lid, NodeId, PortId};
use rustc_hash::FxHashSet;
use serde::Serialize;

/// A problem found in one group's tables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum McastIssue {
    /// A receiver the flood from `sender` never reaches.
    Unreached {
        mlid: Lid,
        sender: String,
        receiver: String,
    },
    /// A switch or end port reached twice from one sender (two paths, or a loop).
    Duplicate {
        mlid: Lid,
        sender: String,
        at: String,
    },
    /// An end port that is not a receiver gets the group's packets.
    Leak {
        mlid: Lid,
        sender: String,
        port: String,
    },
    /// A mask names a port without a live cable.
    DeadPort { mlid: Lid, switch: String, port: u8 },
}

/// The verdict of [`check_mcast`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct McastCheck {
    pub groups: usize,
    /// (group, sender switch) floods walked.
    pub floods: u64,
    /// Copies delivered to receivers.
    pub deliveries: u64,
    pub unreached: u64,
    pub duplicates: u64,
    pub leaks: u64,
    pub dead_ports: u64,
    /// The first issues found (at most [`MAX_EXAMPLES`]).
    pub examples: Vec<McastIssue>,
    /// Multicast dependencies: (from vertex, to vertex) over (switch channel, VL), as
    /// channel ids and VLs; input to [`mcast_cycles`].
    #[serde(skip)]
    pub edges: Vec<((ChannelId, u8), (ChannelId, u8))>,
}

/// Examples kept per check.
pub const MAX_EXAMPLES: usize = 20;

impl McastCheck {
    /// Every group delivers exactly once to every receiver, nowhere else.
    pub fn ok(&self) -> bool {
        self.unreached + self.duplicates + self.leaks + self.dead_ports == 0
    }
    fn issue(&mut self, i: McastIssue) {
        match &i {
            McastIssue::Unreached { .. } => self.unreached += 1,
            McastIssue::Duplicate { .. } => self.duplicates += 1,
            McastIssue::Leak { .. } => self.leaks += 1,
            McastIssue::DeadPort { .. } => self.dead_ports += 1,
        }
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(i);
        }
    }
}

fn port_name(f: &Fabric, p: PortId) -> String {
    format!("{}/{}", f.node(f.port(p).node).name, f.port(p).num)
}

/// Checks the MFTs (see the module documentation). `groups`: the members, when known.
/// `r`: the SL2VL tables for the dependencies (none: the dependencies are not collected).
pub fn check_mcast(
    f: &Fabric,
    mask: Option<&FaultMask>,
    mfts: &Mfts,
    groups: Option<&[Group]>,
    r: Option<&Routing>,
) -> McastCheck {
    let alive = |p: PortId| match mask {
        Some(m) => m.port_link_alive(f, p) && !m.node_dead(f.port(p).node),
        None => f.out_channel(p).is_some(),
    };
    let mut out = McastCheck::default();
    let mut seen_edges: FxHashSet<(u32, u8, u32, u8)> = FxHashSet::default();
    // Per port: receiver of the current group (stamp) and copies delivered.
    let mut receiver = vec![u32::MAX; f.ports.len()];
    let mut got = vec![0u32; f.ports.len()];
    let mut got_touched: Vec<PortId> = Vec::new();
    let mut visited = vec![u32::MAX; f.num_switches()];
    let mut dead_reported: FxHashSet<(Lid, u32, u8)> = FxHashSet::default();
    let mut walk_id = 0u32;
    let all_mlids: Vec<Lid> = {
        let mut v: Vec<Lid> = mfts.groups.iter().map(|g| g.mlid).collect();
        if let Some(gs) = groups {
            v.extend(gs.iter().map(|g| g.mlid));
        }
        v.sort_unstable();
        v.dedup();
        v
    };
    for (gi, &mlid) in all_mlids.iter().enumerate() {
        let gi = gi as u32;
        let entry = mfts.group(mlid);
        let given = groups.and_then(|gs| gs.iter().find(|g| g.mlid == mlid));
        let sl = given.map(|g| g.sl).or(entry.map(|e| e.sl)).unwrap_or(0);
        // Members: (port, full).
        let members: Vec<(PortId, bool)> = match given {
            Some(g) => g.members.iter().map(|m| (m.port, m.full)).collect(),
            None => {
                let mut v = Vec::new();
                for &(s, m) in entry.map(|e| e.switches.as_slice()).unwrap_or(&[]) {
                    let node = f.switches[s as usize];
                    for k in m.ports().filter(|&k| k != 0 && k <= f.node(node).nports) {
                        if let Some(q) = f.remote(f.port_id(node, k)) {
                            if !f.is_switch(f.port(q).node) {
                                v.push((q, true));
                            }
                        }
                    }
                }
                v
            }
        };
        out.groups += 1;
        for &(p, full) in &members {
            if full {
                receiver[p.idx()] = gi;
            }
        }
        // Senders by switch: (switch index, switch port, sender port), live only.
        let mut senders: Vec<(u32, u8, PortId)> = members
            .iter()
            .filter(|&&(p, _)| alive(p))
            .filter_map(|&(p, _)| {
                let q = f.remote(p)?;
                let s = f.switch_of(f.port(q).node)?;
                Some((s.0, f.port(q).num, p))
            })
            .collect();
        senders.sort_unstable();
        let mut i = 0;
        while i < senders.len() {
            let s0 = senders[i].0;
            let mut j = i;
            while j < senders.len() && senders[j].0 == s0 {
                j += 1;
            }
            // Distinct first-hop VL patterns among this switch's senders.
            let node = f.switches[s0 as usize];
            let m0 = entry.map(|e| e.mask(s0)).unwrap_or_default();
            let mut patterns: Vec<(Vec<u8>, PortId, u8)> = Vec::new();
            for &(_, in_port, p) in &senders[i..j] {
                let vls: Vec<u8> = match r {
                    Some(r) => m0
                        .ports()
                        .map(|o| r.sl2vl.vl(node, in_port, o, sl))
                        .collect(),
                    None => Vec::new(),
                };
                if !patterns.iter().any(|(v, _, _)| *v == vls) {
                    patterns.push((vls, p, in_port));
                }
            }
            for (k, &(_, sender, in_port)) in patterns.iter().enumerate() {
                walk_id += 1;
                out.floods += 1;
                let sender_name = port_name(f, sender);
                // Only the first pattern counts deliveries; the others add dependencies.
                let count = k == 0;
                flood(
                    &mut Flood {
                        f,
                        alive: &alive,
                        mfts_entry: entry,
                        r,
                        sl,
                        mlid,
                        walk: walk_id,
                        gi,
                        count,
                        sender_name: &sender_name,
                        visited: &mut visited,
                        receiver: &receiver,
                        got: &mut got,
                        got_touched: &mut got_touched,
                        seen_edges: &mut seen_edges,
                        dead_reported: &mut dead_reported,
                        out: &mut out,
                    },
                    s0,
                    in_port,
                );
                if count {
                    // Every live receiver but the senders' own ports... the flood never
                    // returns to its in-port, and a receiver on the sender switch gets its
                    // copy from the mask directly: each receiver exactly once.
                    for &(p, full) in &members {
                        if full && alive(p) && got[p.idx()] == 0 && p != sender {
                            out.issue(McastIssue::Unreached {
                                mlid,
                                sender: sender_name.clone(),
                                receiver: port_name(f, p),
                            });
                        }
                    }
                    for p in got_touched.drain(..) {
                        got[p.idx()] = 0;
                    }
                }
            }
            i = j;
        }
    }
    let mut edges: Vec<(u32, u8, u32, u8)> = seen_edges.into_iter().collect();
    edges.sort_unstable();
    out.edges = edges
        .into_iter()
        .map(|(a, va, b, vb)| ((ChannelId(a), va), (ChannelId(b), vb)))
        .collect();
    out
}

struct Flood<'a, A: Fn(PortId) -> bool> {
    f: &'a Fabric,
    alive: &'a A,
    mfts_entry: Option<&'a super::GroupMft>,
    r: Option<&'a Routing>,
    sl: u8,
    mlid: Lid,
    walk: u32,
    gi: u32,
    count: bool,
    sender_name: &'a str,
    visited: &'a mut [u32],
    receiver: &'a [u32],
    got: &'a mut [u32],
    got_touched: &'a mut Vec<PortId>,
    seen_edges: &'a mut FxHashSet<(u32, u8, u32, u8)>,
    dead_reported: &'a mut FxHashSet<(Lid, u32, u8)>,
    out: &'a mut McastCheck,
}

/// Floods one packet from switch `s0`, arriving on `in0` (the sender's switch port).
fn flood<A: Fn(PortId) -> bool>(w: &mut Flood<'_, A>, s0: u32, in0: u8) {
    let f = w.f;
    // (switch, in port, channel it came in on and its VL; NONE for the sender's hop)
    let mut queue: Vec<(u32, u8, u32, u8)> = vec![(s0, in0, NONE, 0)];
    w.visited[s0 as usize] = w.walk;
    let mut head = 0;
    while head < queue.len() {
        let (s, inp, in_ch, in_vl) = queue[head];
        head += 1;
        let mask = w.mfts_entry.map(|e| e.mask(s)).unwrap_or_default();
        let node: NodeId = f.switches[s as usize];
        let np = f.node(node).nports;
        for o in mask.ports() {
            if o == inp || o == 0 {
                continue;
            }
            if o > np {
                if w.count && w.dead_reported.insert((w.mlid, s, o)) {
                    w.out.issue(McastIssue::DeadPort {
                        mlid: w.mlid,
                        switch: f.node(node).name.clone(),
                        port: o,
                    });
                }
                continue;
            }
            let p = f.port_id(node, o);
            let remote = f.remote(p).filter(|_| (w.alive)(p));
            let Some(q) = remote else {
                if w.count && w.dead_reported.insert((w.mlid, s, o)) {
                    w.out.issue(McastIssue::DeadPort {
                        mlid: w.mlid,
                        switch: f.node(node).name.clone(),
                        port: o,
                    });
                }
                continue;
            };
            let qn = f.port(q).node;
            if f.is_switch(qn) {
                let vl = w.r.map_or(0, |r| r.sl2vl.vl(node, inp, o, w.sl));
                let out_ch = f.out_channel(p).map_or(NONE, |c| c.0);
                if in_ch != NONE && out_ch != NONE {
                    w.seen_edges.insert((in_ch, in_vl, out_ch, vl));
                }
                let Some(t) = f.switch_of(qn).map(|t| t.0) else {
                    continue;
                };
                if w.visited[t as usize] == w.walk {
                    if w.count {
                        w.out.issue(McastIssue::Duplicate {
                            mlid: w.mlid,
                            sender: w.sender_name.to_string(),
                            at: f.node(qn).name.clone(),
                        });
                    }
                    continue;
                }
                w.visited[t as usize] = w.walk;
                queue.push((t, f.port(q).num, out_ch, vl));
            } else if w.count {
                if w.receiver[q.idx()] == w.gi {
                    if w.got[q.idx()] == 0 {
                        w.got_touched.push(q);
                    } else {
                        w.out.issue(McastIssue::Duplicate {
                            mlid: w.mlid,
                            sender: w.sender_name.to_string(),
                            at: port_name(f, q),
                        });
                    }
                    w.got[q.idx()] += 1;
                    w.out.deliveries += 1;
                } else {
                    w.out.issue(McastIssue::Leak {
                        mlid: w.mlid,
                        sender: w.sender_name.to_string(),
                        port: port_name(f, q),
                    });
                }
            }
        }
    }
}

/// The cycles of the unicast CDG with the multicast dependencies of `mc` added: every
/// cyclic component, with a witness (see [`crate::cdg::find_cycles`]).
pub fn mcast_cycles(f: &Fabric, cdg: &Cdg, mc: &McastCheck) -> Vec<CycleReport> {
    let max_vl = mc
        .edges
        .iter()
        .map(|&((_, a), (_, b))| a.max(b) as usize + 1)
        .max()
        .unwrap_or(0);
    let nvl = cdg.nvl.max(max_vl).max(1);
    let mut dense = vec![u32::MAX; f.links.len() * 2];
    for (i, c) in cdg.channels.iter().enumerate() {
        dense[c.0 as usize] = i as u32;
    }
    let nv = cdg.channels.len() * nvl;
    let remap = |v: u32| {
        let (c, vl) = (v as usize / cdg.nvl, v as usize % cdg.nvl);
        (c * nvl + vl) as u32
    };
    let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(cdg.targets.len() + mc.edges.len());
    for u in 0..cdg.num_vertices() as u32 {
        for &v in cdg.successors(u) {
            pairs.push((remap(u), remap(v)));
        }
    }
    for &((a, va), (b, vb)) in &mc.edges {
        let (da, db) = (dense[a.0 as usize], dense[b.0 as usize]);
        if da != u32::MAX && db != u32::MAX {
            pairs.push((da * nvl as u32 + va as u32, db * nvl as u32 + vb as u32));
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    let mut offsets = vec![0usize; nv + 1];
    for &(u, _) in &pairs {
        offsets[u as usize + 1] += 1;
    }
    for i in 0..nv {
        offsets[i + 1] += offsets[i];
    }
    let merged = Cdg {
        nvl,
        channels: cdg.channels.clone(),
        offsets,
        targets: pairs.iter().map(|&(_, v)| v).collect(),
        used: vec![true; nv],
        sls_used: cdg.sls_used,
        vls_used: cdg.vls_used,
        max_vls_per_channel: cdg.max_vls_per_channel,
    };
    find_cycles(f, &merged)
}
