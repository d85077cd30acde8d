//! Routes that a switch's SL2VL table sends to VL 15, where their packets are dropped: found
//! pair by pair, counted, with the first few as examples.

use crate::forward::Hop;
use crate::tables::DROP_VL;
use crate::walk::{Dest, WalkContext, BLOCK};
use fabric::{Lid, NodeId};
use rayon::prelude::*;
use serde::Serialize;

/// A pair whose route a switch maps to VL 15: where, and on which SL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vl15Drop {
    pub src: String,
    pub src_port: u8,
    pub dlid: Lid,
    pub dest: String,
    pub at_switch: String,
    pub in_port: u8,
    pub out_port: u8,
    pub sl: u8,
}

/// Examples of [`Vl15Drop`] kept.
const VL15_EXAMPLES: usize = 10;

/// A drop as found: (destination LID, source end port, switch, input port, output port, SL).
type DropAt = (Lid, u32, u32, u8, u8, u8);

/// The pairs whose route meets VL 15 at some switch (the SL2VL entry of its input port,
/// output port and SL), walked pair by pair along the LFTs with each pair's path SL; only
/// called when some SL2VL entry is VL 15. Routes the LFTs do not deliver are left to the
/// path walk. Returns the count and the first [`VL15_EXAMPLES`] (in destination order).
pub(super) fn vl15_drops(net: &WalkContext<'_>) -> (u64, Vec<Vl15Drop>) {
    let f = net.f;
    let ns = net.num_switches();
    let (sl2vl, path_sl) = (&net.r.sl2vl, &net.r.path_sl);
    let drop = DROP_VL;
    let per_chunk = |chunk: &[Dest]| -> (u64, Vec<DropAt>) {
        let mut outp = Vec::new();
        net.gather(chunk.iter().map(|d| d.lid), chunk.len(), &mut outp);
        let (mut n, mut ex) = (0u64, Vec::new());
        for (b, d) in chunk.iter().enumerate() {
            let o = &outp[b * ns..(b + 1) * ns];
            for &s0 in &net.src_switches {
                for &e in net.srcs_of(s0 as usize) {
                    if e == d.ep {
                        continue;
                    }
                    let sl = path_sl.get(e as usize, d.lid) & 15;
                    let (mut s, mut q) = (s0 as usize, net.ep_inport(e));
                    // the first hop that drops, counted only when the LFTs deliver the
                    // pair (the path walk counts the others)
                    let mut first = None;
                    for _ in 0..=ns {
                        let out = o[s];
                        let hop = net.hop(s, out);
                        if matches!(hop, Hop::Fail(_)) {
                            break;
                        }
                        if first.is_none() && sl2vl.vl(f.switches[s], q, out, sl) == drop {
                            first = Some((s as u32, q, out));
                        }
                        match hop {
                            Hop::Switch { sw, inp, .. } => (s, q) = (sw as usize, inp),
                            Hop::End { port, .. } => {
                                if let Some((at, q, out)) =
                                    first.filter(|_| port == f.end_ports[d.ep as usize])
                                {
                                    n += 1;
                                    if ex.len() < VL15_EXAMPLES {
                                        ex.push((d.lid, e, at, q, out, sl));
                                    }
                                }
                                break;
                            }
                            Hop::Fail(_) => break,
                        }
                    }
                }
            }
        }
        (n, ex)
    };
    let (n, mut ex) = net.dests.par_chunks(BLOCK).map(per_chunk).reduce(
        || (0, Vec::new()),
        |(a, mut x), (b, y)| {
            x.extend(y);
            x.truncate(VL15_EXAMPLES);
            (a + b, x)
        },
    );
    ex.truncate(VL15_EXAMPLES);
    let name = |n: NodeId| f.node(n).name.clone();
    let examples = ex
        .into_iter()
        .map(|(dlid, e, s, q, o, sl)| {
            let sp = f.end_ports[e as usize];
            Vl15Drop {
                src: name(f.port(sp).node),
                src_port: f.port(sp).num,
                dlid,
                dest: f
                    .lid_port(dlid)
                    .map(|p| name(f.port(p).node))
                    .unwrap_or_default(),
                at_switch: name(f.switches[s as usize]),
                in_port: q,
                out_port: o,
                sl,
            }
        })
        .collect();
    (n, examples)
}
