//! routing's integration tests, one binary (one link instead of one per file): each
//! module is one subject, as the separate test files were.

mod check;
mod common;
mod engines;
mod fat_trees;
mod mcast;
mod nue;
mod opensm_formats;
mod pinned_base;
mod rftr;
mod rftr_incremental;
mod superpod_roots;
mod table_coverage;
mod torus2qos;
mod updn_roots;
