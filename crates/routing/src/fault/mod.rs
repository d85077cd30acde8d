//! Fault handling: RFTR (reachability-based fault-tolerant rerouting), the delta a subnet
//! manager pushes, and the turn rules of base routings.

pub mod delta;
pub mod paths;
pub mod rftr;
pub mod turn;

pub use delta::{Delta, DeltaCounts};
pub use rftr::{Fault, FaultReport, Rftr, RftrConfig};
pub use turn::{DorRule, TurnRule, UpDownRule};
