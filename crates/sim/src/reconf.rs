//! Faults and what the subnet manager does about them: the repair schemes, and the SMPs that
//! carry new tables to the switches.
//!
//! A plan lists only what changed, as OpenSM sends it: every (switch, 64-LID block) of the
//! LFTs that holds a changed entry (one LinearForwardingTable SMP each), then every (switch,
//! input port, output port) whose SL-to-VL row changed (one SLtoVLMappingTable SMP each).
//! Sources take their new (DLID, SL) once every SMP is done.

use fabric::{Fabric, FaultMask, Lid};
use routing::fault::Fault;
use routing::tables::LFT_BLOCK;
use routing::Routing;
use serde::Serialize;
use std::collections::BTreeMap;

/// How the SM repairs a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// RFTR: the local delta (alternative paths on virtual LIDs, dead entries rewritten),
    /// pushed while traffic flows; sources switch to their new (DLID, SL) at the end.
    Rftr,
    /// Full reconfiguration, static: stop injection when the failure is detected, drain the
    /// network, upload every changed block, resume (the RFTR paper's baseline).
    FullStatic,
    /// Full reconfiguration, dynamic: upload every changed block while traffic flows (old and
    /// new entries mix: may deadlock).
    FullDynamic,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Rftr => "rftr",
            Scheme::FullStatic => "full-static",
            Scheme::FullDynamic => "full-dynamic",
        }
    }
}

/// The tables a repair installs and when the SM has them.
#[derive(Clone, Debug)]
pub struct Repair {
    pub scheme: Scheme,
    /// The complete tables after the repair (same LID space as the base tables).
    pub tables: Routing,
    /// New (DLID, SL) per (source end port, destination end port), indices into
    /// `Fabric::end_ports` (RFTR's `Delta::sources`); pairs not listed use the destination's
    /// base LID and the tables' path SL.
    pub sources: BTreeMap<(u32, u32), (Lid, u8)>,
    /// The SM's routing time (measured engine or RFTR time, or a constant), ps.
    pub t_compute: u64,
}

/// A failure at a time, and the repair that follows it (none: the tables stay as they are).
#[derive(Clone, Debug)]
pub struct FaultEvent {
    pub at: u64,
    pub fault: Fault,
    pub repair: Option<Repair>,
}

/// One SMP of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Smp {
    /// LFT block `block` (LIDs `64·block ..`) of switch index `sw`.
    Lft { sw: u32, block: u16 },
    /// SL-to-VL row (`inp`, `out`) of switch index `sw`.
    Sl2Vl { sw: u32, inp: u8, out: u8 },
}

/// What changes from `old` to `new` on the switches alive under `mask`: LFT blocks first (by
/// switch, block), then SL2VL rows.
pub fn plan(f: &Fabric, mask: &FaultMask, old: &Routing, new: &Routing) -> Vec<Smp> {
    let mut v = Vec::new();
    let stride = old.stride().min(new.stride());
    for (s, &n) in f.switches.iter().enumerate() {
        if mask.node_dead(n) {
            continue;
        }
        let (a, b) = (&old.lft_of(s)[..stride], &new.lft_of(s)[..stride]);
        for (blk, (ca, cb)) in a.chunks(LFT_BLOCK).zip(b.chunks(LFT_BLOCK)).enumerate() {
            if ca != cb {
                v.push(Smp::Lft {
                    sw: s as u32,
                    block: blk as u16,
                });
            }
        }
    }
    for (s, &n) in f.switches.iter().enumerate() {
        if mask.node_dead(n) || (old.sl2vl.is_identity(n) && new.sl2vl.is_identity(n)) {
            continue;
        }
        let np = f.node(n).nports;
        for inp in 0..=np {
            for out in 1..=np {
                if (0..16u8)
                    .any(|sl| old.sl2vl.vl(n, inp, out, sl) != new.sl2vl.vl(n, inp, out, sl))
                {
                    v.push(Smp::Sl2Vl {
                        sw: s as u32,
                        inp,
                        out,
                    });
                }
            }
        }
    }
    v
}

/// Applies one SMP of `new` to `cur`.
pub(crate) fn apply(f: &Fabric, cur: &mut Routing, new: &Routing, smp: Smp) {
    match smp {
        Smp::Lft { sw, block } => {
            let lo = block as usize * LFT_BLOCK;
            let hi = (lo + LFT_BLOCK).min(cur.stride()).min(new.stride());
            if lo < hi {
                let src = &new.lft_of(sw as usize)[lo..hi];
                cur.lft_of_mut(sw as usize)[lo..hi].copy_from_slice(src);
            }
        }
        Smp::Sl2Vl { sw, inp, out } => {
            let n = f.switches[sw as usize];
            for sl in 0..16u8 {
                let vl = new.sl2vl.vl(n, inp, out, sl);
                if cur.sl2vl.vl(n, inp, out, sl) != vl {
                    cur.sl2vl.set(n, inp, out, sl, vl);
                }
            }
        }
    }
}

/// The mask after `fault`.
pub(crate) fn mask_after(f: &Fabric, fault: Fault) -> FaultMask {
    let mut m = FaultMask::none(f);
    match fault {
        Fault::Link(l) => m.fail_link(l),
        Fault::Switch(n) => m.fail_node(n),
    }
    m
}
