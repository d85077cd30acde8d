//! sim's integration tests, one binary (one link instead of one per file): each
//! module is one subject, as the separate test files were.

mod common;
mod deadlock;
mod faults;
mod switch;
mod validation;
