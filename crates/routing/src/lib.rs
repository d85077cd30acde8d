//! Routing tables, engines, the deadlock checker, metrics and fault-tolerant rerouting.
//!
//! Invariants: no I/O (OpenSM-format readers take bytes and writers return strings); results
//! are deterministic for a given fabric, options and seed, whatever the thread count.

pub mod cdg;
pub mod diff;
pub mod engines;
pub mod fault;
pub mod forward;
pub mod mcast;
pub mod metrics;
mod net;
pub mod opensm;
pub mod tables;
pub mod turn;
pub mod vl;
pub mod walk;

pub use tables::{PathSl, Routing, Sl2Vl, TableError};
