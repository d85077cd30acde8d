//! How a credit loop is reported: each cyclic SCC of the CDG with a witness cycle as switch
//! hops, and for each witness edge the smallest pair whose route induces it.

use super::cycles::{cyclic_sccs, witness_cycle};
use super::{Cdg, Ctx, EdgeEv, Scratch};
use crate::tables::PathSl;
use crate::walk::BLOCK;
use fabric::{ChannelId, Fabric, Lid, NodeId};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// A pair that induces a CDG edge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EdgeExample {
    pub src: String,
    pub src_port: u8,
    pub dlid: Lid,
}

/// One hop of a witness cycle: the packet leaves `switch` on `port` with `vl`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WitnessHop {
    pub switch: String,
    pub guid: String,
    pub port: u8,
    pub vl: u8,
    pub to_switch: String,
    pub to_port: u8,
    #[serde(skip)]
    pub channel: ChannelId,
    /// A (source, destination LID) pair whose route goes from this hop to the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<EdgeExample>,
}

/// One cyclic strongly connected component of the CDG.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CycleReport {
    /// (channel, VL) vertices in the component.
    pub vertices: usize,
    /// Distinct channels and switches involved.
    pub channels: usize,
    pub switches: usize,
    pub vls: Vec<u8>,
    /// A shortest cycle through the component's smallest vertex.
    pub witness: Vec<WitnessHop>,
}

fn guid_str(g: u64) -> String {
    format!("{g:#018x}")
}

/// Every cyclic SCC of `cdg`, each with a witness cycle (no example pairs).
pub fn find_cycles(f: &Fabric, cdg: &Cdg) -> Vec<CycleReport> {
    let sccs = cyclic_sccs(cdg.num_vertices(), &cdg.offsets, &cdg.targets);
    sccs.iter()
        .map(|members| {
            let wit = witness_cycle(&cdg.offsets, &cdg.targets, members, members[0]);
            let mut chans: Vec<ChannelId> = members.iter().map(|&v| cdg.vertex(v).0).collect();
            chans.sort_unstable();
            chans.dedup();
            let mut sws: Vec<NodeId> = chans
                .iter()
                .map(|&c| f.port(f.channel_src(c)).node)
                .collect();
            sws.sort_unstable();
            sws.dedup();
            let mut vls: Vec<u8> = members.iter().map(|&v| cdg.vertex(v).1).collect();
            vls.sort_unstable();
            vls.dedup();
            CycleReport {
                vertices: members.len(),
                channels: chans.len(),
                switches: sws.len(),
                vls,
                witness: wit
                    .iter()
                    .map(|&v| {
                        let (c, vl) = cdg.vertex(v);
                        let sp = f.port(f.channel_src(c));
                        let dp = f.port(f.channel_dst(c));
                        let n = f.node(sp.node);
                        WitnessHop {
                            switch: f.label(sp.node).to_string(),
                            guid: guid_str(n.guid),
                            port: sp.num,
                            vl,
                            to_switch: f.label(dp.node).to_string(),
                            to_port: dp.num,
                            channel: c,
                            example: None,
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Finds, for each witness edge, the smallest (destination LID, source end port) pair whose
/// route induces it (a second traversal; only run when there are cycles).
pub(super) fn attach_examples(ctx: &Ctx<'_, '_>, cycles: &mut [CycleReport]) {
    let nvl = ctx.nvl;
    let vert =
        |h: &WitnessHop| -> u32 { ctx.sw.of_chan[h.channel.idx()] * nvl as u32 + h.vl as u32 };
    let mut wanted: FxHashMap<(u32, u32), usize> = FxHashMap::default();
    let mut slots: Vec<(usize, usize)> = Vec::new();
    for (ci, c) in cycles.iter().enumerate() {
        let k = c.witness.len();
        for i in 0..k {
            let u = vert(&c.witness[i]);
            let w = vert(&c.witness[(i + 1) % k]);
            if let std::collections::hash_map::Entry::Vacant(e) = wanted.entry((u, w)) {
                e.insert(slots.len());
                slots.push((ci, i));
            }
        }
    }
    if wanted.is_empty() {
        return;
    }
    let net = ctx.net;
    let nv = ctx.sw.chan.len() * nvl;
    let ns = net.num_switches();
    let per_pair = matches!(net.r.path_sl, PathSl::PerPair { .. });
    let best = net
        .dests
        .par_chunks(BLOCK)
        .fold(
            || {
                (
                    Scratch::new(nv, true),
                    vec![None::<(Lid, u32)>; slots.len()],
                )
            },
            |(mut sc, mut best), chunk| {
                let mut outp = std::mem::take(&mut sc.outp);
                net.gather(chunk.iter().map(|d| d.lid), chunk.len(), &mut outp);
                for (b, d) in chunk.iter().enumerate() {
                    let col = &outp[b * ns..(b + 1) * ns];
                    let mut hits: Vec<(usize, u32)> = Vec::new();
                    ctx.traverse(
                        d,
                        col,
                        &mut sc,
                        &mut |e: EdgeEv| {
                            let w = e.c2 * nvl as u32 + e.v2;
                            if let Some(&slot) = wanted.get(&(e.u, w)) {
                                hits.push((slot, e.origin));
                            }
                        },
                        &mut |_| {},
                    );
                    for (slot, origin) in hits {
                        let Some(&(sl, s, q)) = sc.starts.get(origin as usize) else {
                            continue;
                        };
                        let uni = ctx.ca.uniform[s as usize];
                        let src = net.srcs_of(s as usize).iter().copied().find(|&e| {
                            e != d.ep
                                && (uni || net.ep_inport(e) == q)
                                && (!per_pair || net.r.path_sl.get(e as usize, d.lid) & 15 == sl)
                        });
                        if let Some(src) = src {
                            let cand = (d.lid, src);
                            if best[slot].is_none_or(|b| cand < b) {
                                best[slot] = Some(cand);
                            }
                        }
                    }
                }
                sc.outp = outp;
                (sc, best)
            },
        )
        .map(|x| x.1)
        .reduce_with(|mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                if let Some(y) = y {
                    if x.is_none_or(|v| y < v) {
                        *x = Some(y);
                    }
                }
            }
            a
        });
    let f = net.f;
    if let Some(best) = best {
        for (slot, b) in best.into_iter().enumerate() {
            if let Some((lid, src)) = b {
                let (ci, i) = slots[slot];
                let p = f.end_ports[src as usize];
                cycles[ci].witness[i].example = Some(EdgeExample {
                    src: f.node(f.port(p).node).name.clone(),
                    src_port: f.port(p).num,
                    dlid: lid,
                });
            }
        }
    }
}
