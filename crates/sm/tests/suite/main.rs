//! sm's integration tests, one binary (one link instead of one per file): each
//! module is one subject, as the separate test files were.

mod common;
mod fake;
mod mcast;
mod notify;
mod repair;
mod sa;
mod sa_mcast;
mod standby;
