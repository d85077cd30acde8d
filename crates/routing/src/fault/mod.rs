//! Fault handling: RFTR (reachability-based fault-tolerant rerouting), the full
//! reconfiguration baseline, the delta a subnet manager pushes, the turn rules of base
//! routings, independent verification of RFTR states, and fault sweeps.

pub mod delta;
pub mod paths;
pub mod reconf;
pub mod rftr;
pub mod sweep;
pub mod turn;
pub mod verify;

pub use delta::{Delta, DeltaCounts};
pub use rftr::{Fault, FaultReport, Rftr, RftrConfig};
pub use turn::{DorRule, TurnRule, UpDownRule};

use crate::engines::{Dir, RouteOptions, UpDownRanking};
use fabric::{Fabric, FaultMask};
use std::sync::Arc;

/// Base engines RFTR can repair, with the turn rule each one obeys.
pub const RFTR_ENGINES: &[&str] = &["updn", "dor"];

/// Options with the Up*/Down* roots pinned: when `engine` is updn and no root GUIDs are
/// given, the roots it picks on the fault-free fabric are written into `root_guids`, so the
/// base routing, RFTR's turn rule and every full reconfiguration after faults rank the
/// fabric from the same roots (as a subnet manager keeps its roots), and the root choice is
/// paid once.
pub fn pin_roots(f: &Fabric, engine: &str, opts: &RouteOptions) -> Result<RouteOptions, String> {
    let mut o = opts.clone();
    if engine == "updn" && o.root_guids.is_empty() {
        let (rk, _) = UpDownRanking::for_updn(f, &FaultMask::none(f), opts)
            .map_err(|e| format!("updn: {e}"))?;
        o.root_guids = rk
            .roots
            .iter()
            .map(|&s| f.node(f.switches[s]).guid)
            .collect();
    }
    Ok(o)
}

/// The turn rule of base engine `engine` on this fabric (with the same options the engine
/// gets, so that ranks and roots agree).
pub fn base_rule<'f>(
    f: &'f Fabric,
    engine: &str,
    opts: &RouteOptions,
) -> Result<Arc<dyn TurnRule + 'f>, String> {
    match engine {
        "updn" => {
            let (rk, _) = UpDownRanking::for_updn(f, &FaultMask::none(f), opts)
                .map_err(|e| format!("updn: {e}"))?;
            Ok(Arc::new(UpDownRule::from_fn(f, |c| {
                rk.channel_dir(f, c) == Dir::Up
            })))
        }
        "dor" => {
            if f.hints.wrap.iter().any(|&w| w) {
                return Err(
                    "dor is deadlock-free only on meshes; this fabric has wrap-around \
                            links (use updn as the base engine)"
                        .into(),
                );
            }
            DorRule::from_hints(f)
                .map(|r| Arc::new(r) as Arc<dyn TurnRule>)
                .ok_or_else(|| {
                    "dor as an RFTR base needs mesh coordinates (a generated mesh)".to_string()
                })
        }
        other => Err(format!(
            "RFTR cannot use {other:?} as its base engine (supported: {})",
            RFTR_ENGINES.join(", ")
        )),
    }
}

/// A generated fabric for unit tests (`"torus 4x4 hcas=2"` and the like).
#[cfg(test)]
pub(crate) fn test_fabric(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .expect("topology spec")
        .generate()
        .expect("generated fabric")
}
