//! Fault handling: RFTR (reachability-based fault-tolerant rerouting), the full
//! reconfiguration baseline, the delta a subnet manager pushes, the turn rules of base
//! routings, independent verification of RFTR states, and fault sweeps.

pub mod delta;
pub mod paths;
pub mod reconf;
pub mod rftr;
pub mod session;
pub mod sweep;
pub mod verify;

pub use crate::turn::{DorRule, TurnRule, UpDownRule};
pub use delta::{Delta, DeltaCounts};
pub use rftr::{Fault, FaultReport, Rftr, RftrConfig, RftrError};
pub use session::{Session, SessionError};

use crate::engines::{Engine, EngineError, RouteOptions};
use fabric::Fabric;
use std::sync::Arc;

/// The turn rule RFTR uses with `engine`'s tables as its base: the engine's own
/// ([`Engine::turn_rule`]), or an error naming the engines that have one.
pub fn base_rule<'f>(
    f: &'f Fabric,
    engine: &dyn Engine,
    opts: &RouteOptions,
) -> Result<Arc<dyn TurnRule + 'f>, EngineError> {
    engine.turn_rule(f, opts)
}

/// A generated fabric for unit tests (`"torus 4x4 hcas=2"` and the like).
#[cfg(test)]
pub(crate) fn test_fabric(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .expect("topology spec")
        .generate()
        .expect("generated fabric")
}
