//! Fault handling: RFTR (reachability-based fault-tolerant rerouting), the full
//! reconfiguration baseline, the delta a subnet manager pushes, the turn rules of base
//! routings, independent verification of RFTR states, and fault sweeps.

pub mod delta;
pub mod paths;
pub mod reconf;
pub mod rftr;
pub mod session;
pub mod sweep;
pub mod tracker;
pub mod verify;

pub use crate::turn::{DorRule, TurnRule, UpDownRule};
pub use delta::{Delta, DeltaCounts};
pub use fabric::{switch_components, Fault};
pub use rftr::{Completion, FaultReport, Programmed, Rftr, RftrConfig, RftrError};
pub use session::{CheckMode, Phase, Session, SessionError};
pub use tracker::Tracker;

use crate::engines::{Engine, EngineError, RouteOptions};
use crate::turn::Base;
use fabric::Fabric;

/// How RFTR repairs `engine`'s tables: the engine's own answer ([`Engine::rftr_base`]), or
/// an error naming the engines that have one.
pub fn base_rule<'f>(
    f: &'f Fabric,
    engine: &dyn Engine,
    opts: &RouteOptions,
) -> Result<Base<'f>, EngineError> {
    engine.rftr_base(f, opts)
}

/// A generated fabric for unit tests (`"torus 4x4 hcas=2"` and the like).
#[cfg(test)]
pub(crate) fn test_fabric(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .expect("topology spec")
        .generate()
        .expect("generated fabric")
}
