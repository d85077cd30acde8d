//! Faults and what the subnet manager does about them: the repair schemes and the tables
//! each installs.
//!
//! The SM sends only what changed, as OpenSM does: the plan of
//! [`routing::tables::update::plan`] (every LFT block with a changed entry, then every SL-to-VL
//! row that changed, one SMP each) on the switches the fault left alive. Sources take their
//! new (DLID, SL) once every SMP is done.

use fabric::{Fault, Lid};
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
pub struct RepairTables {
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
    pub repair: Option<RepairTables>,
}
