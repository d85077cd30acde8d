//! fabroute as the subnet manager of a running fabric: the loop of the RFTR paper's
//! Section 5.3, over any [`mad::Transport`].
//!
//! 1. [`discover()`]: a directed-route breadth-first search (NodeInfo, NodeDescription,
//!    PortInfo of every port, SwitchInfo), pipelined level by level, into a [`fabric::Fabric`] with
//!    LIDs assigned by fabroute's builder (switches LMC 0, end ports LMC-aligned).
//! 2. [`Live::bring_up`]: route it with any engine (through an RFTR [`Session`] when the
//!    repair is RFTR), program port LIDs and the SM LID, LFT blocks, SL2VL tables, ports
//!    ARMED then ACTIVE, and LinearFDBTop.
//! 3. [`Live::step`]: wait for trap 128 (and read SwitchInfo.PortStateChange of every
//!    switch on a light sweep, since a trap is lost when its route to the SM crosses the dead
//!    link); re-read only the reporting switch's ports; apply the failed links; repair with
//!    RFTR (or a full reconfiguration); push only the LFT blocks and SL2VL rows that differ
//!    from what the switches hold, by directed route over live links; wait for every
//!    response. Each step reports an [`Event`].
//!
//! 4. With another SM master ([`find_sms`], [`master_to_follow`]): [`Standby`] polls it, and
//!    when it goes silent [`Live::take_over`] reads back the tables the switches hold,
//!    checks them, and adopts them when clean (nothing written), else pushes what differs.
//!
//! [`fake::FakeFabric`] answers SMPs with ibsim's semantics, so all of this is tested
//! without ibsim. No I/O of its own and no clock but the transport's: given a
//! deterministic transport the events are identical on every run.

pub mod client;
pub mod discover;
pub mod fake;
pub mod live;
pub mod mcast;
pub mod mlid;
pub mod notify;
pub mod pipe;
mod program;
pub mod repair;
pub mod sa;
pub mod sa_mcast;
pub mod standby;
mod takeover;

pub use discover::{discover, discover_with, Discovery, Lids};
pub use live::{Event, Live, RepairMode, SmConfig};
pub use pipe::{Incoming, Pipe, PipeConfig, PipeStats, Req, ReqError};
pub use repair::fault_name;
pub use sa::{Sa, SaStats};
pub use standby::{find_sms, master_to_follow, MasterLost, OtherSm, Standby};

// The wire's block sizes (mad) are the table model's (routing): the SM moves blocks between
// the two unchanged.
const _: () = assert!(mad::attr::MFT_MLIDS == routing::tables::update::MFT_BLOCK);

use routing::fault::Session;

/// Why the SM cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum SmError {
    #[error("transport: {0}")]
    Io(#[from] std::io::Error),
    #[error("discovery: {0}")]
    Discovery(String),
    #[error("routing: {0}")]
    Routing(String),
}
