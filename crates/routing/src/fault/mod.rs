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
pub use rftr::{Completion, Fault, FaultReport, Programmed, Rftr, RftrConfig, RftrError};
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

/// Per switch index, a label of its connected component among the live switches and live
/// links under `mask` (switches in one component share a label; `u32::MAX` for a dead
/// switch), and how many components there are.
pub fn switch_components(f: &Fabric, mask: &fabric::FaultMask) -> (Vec<u32>, usize) {
    let ns = f.num_switches();
    let mut parent: Vec<u32> = (0..ns as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            p[x as usize] = p[p[x as usize] as usize];
            x = p[x as usize];
        }
        x
    }
    let alive = |s: u32| !mask.node_dead(f.switches[s as usize]);
    let mut comps = (0..ns as u32).filter(|&s| alive(s)).count();
    for (l, k) in f.links.iter().enumerate() {
        if mask.link_dead(fabric::LinkId(l as u32)) {
            continue;
        }
        let (a, b) = (
            f.switch_index[f.port(k.a).node.idx()],
            f.switch_index[f.port(k.b).node.idx()],
        );
        if a == u32::MAX || b == u32::MAX || !alive(a) || !alive(b) {
            continue;
        }
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        if ra != rb {
            parent[ra as usize] = rb;
            comps -= 1;
        }
    }
    let label = (0..ns as u32)
        .map(|s| {
            if alive(s) {
                find(&mut parent, s)
            } else {
                u32::MAX
            }
        })
        .collect();
    (label, comps)
}

/// A generated fabric for unit tests (`"torus 4x4 hcas=2"` and the like).
#[cfg(test)]
pub(crate) fn test_fabric(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .expect("topology spec")
        .generate()
        .expect("generated fabric")
}
