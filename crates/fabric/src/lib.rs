//! fabroute's fabric layer: the immutable fabric model, its builder, fault masks, readers and
//! writers for real topology formats, and synthetic topology generators.
//!
//! Invariants: no file-system or network I/O happens here (readers take bytes, writers
//! produce strings); everything is deterministic for a given input and seed.

pub mod builder;
pub mod faults;
pub mod gen;
pub mod io;
pub mod model;
pub mod rng;
pub mod summary;

pub use builder::{BuildError, BuildOptions, FabricBuilder};
pub use faults::{link_name, switch_components, Fault, FaultMask};
pub use model::*;
