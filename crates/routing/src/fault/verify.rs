//! Independent verification of an RFTR state from its tables: every selected
//! (source end port, DLID, SL) is walked through the LFTs and SL2VL tables, and the channel
//! dependency graph over (channel, VL) of those walks — optionally together with the
//! surviving prefixes of the paths in use before the last fault (the migration union) — is
//! searched for cycles with the checker's SCC routine.

use super::rftr::Rftr;
use crate::cdg::cyclic_sccs;
use crate::tables::{Routing, NUM_SLS};
use fabric::{ChannelId, Fabric, FaultMask, Lid, NO_PORT};
use rayon::prelude::*;
use serde::Serialize;

/// A walk: the inter-switch hops with their VLs, and whether it reached the destination.
pub type Hops = Vec<(ChannelId, u8)>;

/// Verdict on one state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SelectedCheck {
    /// Selected pairs walked.
    pub pairs: u64,
    /// Selected pairs whose walk does not arrive (must be 0).
    pub undelivered: u64,
    /// Largest VL seen on an inter-switch hop, plus one.
    pub vls_used: u8,
    /// Cyclic strongly connected components in the dependency graph.
    pub cyclic_sccs: usize,
    pub deadlock_free: bool,
}

/// Follows the LFTs toward `dlid` from switch node `node` (entered on port `inp`) until the
/// packet leaves for end port `target`. `hop(switch, in port, out port, channel)` sees every
/// inter-switch hop. True when it arrives over live channels within the switch count.
#[allow(clippy::too_many_arguments)]
pub(crate) fn follow(
    f: &Fabric,
    r: &Routing,
    mask: &FaultMask,
    mut node: fabric::NodeId,
    mut inp: u8,
    dlid: Lid,
    target: fabric::PortId,
    mut hop: impl FnMut(fabric::NodeId, u8, u8, ChannelId),
) -> bool {
    for _ in 0..=f.num_switches() {
        let s = f.switch_index[node.idx()] as usize;
        let port = r.out_port(s, dlid);
        if port == NO_PORT || port == 0 || port > f.node(node).nports {
            return false;
        }
        let Some(c) = f.out_channel(f.port_id(node, port)) else {
            return false;
        };
        if !mask.channel_alive(f, c) {
            return false;
        }
        let far = f.channel_dst(c);
        if far == target {
            return true;
        }
        let nn = f.port(far).node;
        if !f.is_switch(nn) {
            return false;
        }
        hop(node, inp, port, c);
        node = nn;
        inp = f.port(far).num;
    }
    false
}

/// Walks source end port `src` to `dlid` with its SL; hops up to the first failure.
pub fn walk_vl(
    f: &Fabric,
    r: &Routing,
    mask: &FaultMask,
    src: usize,
    dst: usize,
    dlid: Lid,
    out: &mut Hops,
) -> bool {
    out.clear();
    let sl = r.path_sl.get(src, dlid);
    let Some(first) = f.attached_switch(f.end_ports[src]) else {
        return false;
    };
    let (node, inp) = (f.port(first).node, f.port(first).num);
    follow(
        f,
        r,
        mask,
        node,
        inp,
        dlid,
        f.end_ports[dst],
        |n, i, o, c| out.push((c, r.sl2vl.vl(n, i, o, sl))),
    )
}

/// The walks of every selected pair, flat: walk `i` is `hops[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, Default)]
pub struct WalkSet {
    pub offsets: Vec<u32>,
    pub hops: Vec<(ChannelId, u8)>,
    /// Selected pairs whose walk does not arrive.
    pub undelivered: u64,
}

impl WalkSet {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn walk(&self, i: usize) -> &[(ChannelId, u8)] {
        &self.hops[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// Walks every selected pair of `r` through its tables (parallel, in pair order).
pub fn selected_walks(r: &Rftr<'_>) -> WalkSet {
    let f = r.fabric();
    let pairs = r.selected_pairs();
    let chunks: Vec<(Vec<u32>, Hops, u64)> = pairs
        .par_chunks(1024)
        .map(|chunk| {
            let mut lens = Vec::with_capacity(chunk.len());
            let mut all: Hops = Vec::new();
            let mut bad = 0u64;
            let mut h = Vec::new();
            for &(s, d, l) in chunk {
                if !walk_vl(f, &r.routing, &r.mask, s as usize, d as usize, l, &mut h) {
                    bad += 1;
                }
                lens.push(h.len() as u32);
                all.extend_from_slice(&h);
            }
            (lens, all, bad)
        })
        .collect();
    let mut ws = WalkSet {
        offsets: Vec::with_capacity(pairs.len() + 1),
        hops: Vec::new(),
        undelivered: 0,
    };
    ws.offsets.push(0);
    for (lens, hops, bad) in chunks {
        let mut at = ws.hops.len() as u32;
        for l in lens {
            at += l;
            ws.offsets.push(at);
        }
        ws.hops.extend_from_slice(&hops);
        ws.undelivered += bad;
    }
    ws
}

/// Checks walks `cur` of the current state; `before` are walks taken before the last fault
/// (their prefixes up to the first dead channel are added to the dependency graph: what is
/// still in flight during the migration).
pub fn check_walks(r: &Rftr<'_>, cur: &WalkSet, before: Option<&WalkSet>) -> SelectedCheck {
    let f = r.fabric();
    let mut out = SelectedCheck {
        pairs: cur.len() as u64,
        undelivered: cur.undelivered,
        ..Default::default()
    };
    let nv = f.links.len() * 2 * NUM_SLS;
    let v = |c: ChannelId, vl: u8| (c.idx() * NUM_SLS + vl as usize) as u32;
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(cur.hops.len());
    let mut vmax = 0u8;
    let mut add = |hops: &[(ChannelId, u8)], edges: &mut Vec<(u32, u32)>| {
        for w in hops.windows(2) {
            edges.push((v(w[0].0, w[0].1), v(w[1].0, w[1].1)));
        }
        for &(_, vl) in hops {
            vmax = vmax.max(vl + 1);
        }
    };
    for i in 0..cur.len() {
        add(cur.walk(i), &mut edges);
    }
    if let Some(prev) = before {
        for i in 0..prev.len() {
            let h = prev.walk(i);
            let live = h
                .iter()
                .take_while(|&&(c, _)| r.mask.channel_alive(f, c))
                .count();
            add(&h[..live], &mut edges);
        }
    }
    edges.par_sort_unstable();
    edges.dedup();
    let mut offsets = vec![0usize; nv + 1];
    for &(a, _) in &edges {
        offsets[a as usize + 1] += 1;
    }
    for i in 0..nv {
        offsets[i + 1] += offsets[i];
    }
    let targets: Vec<u32> = edges.iter().map(|&(_, b)| b).collect();
    out.cyclic_sccs = cyclic_sccs(nv, &offsets, &targets).len();
    out.deadlock_free = out.cyclic_sccs == 0;
    out.vls_used = vmax;
    out
}

/// Walks the current state and checks it (see [`check_walks`]).
pub fn check_selected(r: &Rftr<'_>, before: Option<&WalkSet>) -> SelectedCheck {
    let cur = selected_walks(r);
    check_walks(r, &cur, before)
}
