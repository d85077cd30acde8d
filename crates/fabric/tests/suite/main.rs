//! fabric's integration tests, one binary (one link instead of one per file): each
//! module is one subject, as the separate test files were.

mod generators;
mod link_widths;
mod readers;
mod roundtrip;
