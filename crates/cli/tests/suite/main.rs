//! cli's integration tests, one binary (one link instead of one per file): each
//! module is one subject, as the separate test files were.

mod architecture;
mod base_is_route;
mod cli;
mod common;
mod fault_checked;
mod fault_cmd;
mod fault_from;
mod gen_cmd;
mod live_ibsim;
mod live_mcast;
mod live_standby;
mod mcast;
mod opensm_interop;
mod operator;
mod plots;
mod sim;
mod trace_diff;
