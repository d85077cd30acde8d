//! Virtual-lane tools shared by the engines and RFTR.
//!
//! InfiniBand gives a packet its service level (SL) at the source and never changes it; each
//! switch maps (input port, output port, SL) to the VL the packet leaves on. Engines that use
//! VLs for deadlock freedom therefore have to answer two questions, and this module answers
//! them once:
//! - [`colour`]: which SL may a path take so that, at every switch it crosses, the VL it needs
//!   there agrees with every other path of that SL through the same (input port, output port)?
//!   A greedy colouring of paths by SL ([`colour::SlColouring`]), used by RFTR (VL = number of
//!   illegal turns so far) and by the hop-incremented scheme (VL = hop index).
//! - [`layers`]: which paths may share a VL so that the channel dependency graph of each VL
//!   stays acyclic ([`layers::Layers`], an incremental cycle check per layer), used by the
//!   layered engines (DFSSSP, LASH).
//!
//! Both are independent of any engine: they see switch indices, ports, channels and VLs.

pub mod colour;
pub mod layers;
pub mod paths;

pub use colour::{Need, SlColouring};
pub use layers::Layers;
