//! The discrete-event core: [`Sim`], the state it holds, and [`simulate`]. See the crate
//! documentation for the model. The event handlers are further `impl Sim` blocks, one file
//! per part of the model: hosts, links, switches, faults and reconfiguration, the deadlock
//! check, the invariants.

mod buffers;
mod control;
mod deadlock;
mod host;
mod invariants;
mod link;
mod run;
mod setup;
mod state;
mod switch;

use crate::config::Config;
use crate::net::{FrontRings, SimNet};
use crate::queue::EventQueue;
use crate::reconf::FaultEvent;
use crate::report::{BufferRef, DropReason, FaultLog, Report};
use crate::stats::{BinAcc, Histogram};
use fabric::{Fabric, Lid};
use routing::forward::Plane;
use routing::tables::Update;
use routing::Routing;
use rustc_hash::FxHashMap;
use state::{ChanState, Ctrl, Host, Packet, VlState};

/// Why a run cannot start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("the fabric has fewer than two hosts (end ports cabled to a switch)")]
    TooFewHosts,
    #[error("the tables do not fit the fabric: {0}")]
    Tables(String),
    #[error("bad configuration: {0}")]
    Config(String),
}

/// The simulator. Build it with [`Sim::new`], add a fault with [`Sim::with_fault`], and
/// [`Sim::run`] it.
pub struct Sim<'f> {
    f: &'f Fabric,
    cfg: Config,
    net: SimNet,
    plane: Plane,
    routing: Routing,
    nvl: usize,
    q: EventQueue,
    now: u64,
    end: u64,

    /// Per channel: its state, in one cache line (see [`ChanState`]).
    cs: Vec<ChanState>,
    // Crossbar, per output channel: the request bits: bit `port * nvl + vl` is set exactly
    // when the head of input buffer (port, vl) of the switch is routed to this output.
    // `rw` words per output; when that is one word, it is `ChanState::req` and this is empty.
    req: Vec<u64>,
    rw: usize,
    /// While [`Sim::grant`] calls `try_link`: the crossbar event it holds back (input
    /// channel or `NONE`, packet, end time).
    xbar_pending: (u32, u32, u64),
    max_ports: usize,
    /// Per (channel, VL), at `channel * nvl + vl`: its state, see [`VlState`].
    vs: Vec<VlState>,
    /// Per (channel, VL): the packets of its input and output buffers ([`IN`](state::IN), [`OUT`](state::OUT)) behind
    /// their front ones (`VlState::q`).
    bufs: [FrontRings; 2],
    /// Per (channel, VL): credits on their way back upstream (only with a propagation or
    /// flow-control delay).
    cred_fly: Vec<u32>,
    in_cap: u32,
    out_cap: u32,
    inq_min_cr: usize,
    // Switches.
    sw_alive: Vec<bool>,
    held: Vec<(u32, u8)>,

    hosts: Vec<Host>,
    /// Per host: its LID (dense, for the destinations of new packets).
    host_lid: Vec<Lid>,
    pk: Vec<Packet>,
    free_pk: Vec<u32>,
    mean_bytes: u64,
    overrides: FxHashMap<(u32, u32), (Lid, u8)>,
    inject_stopped: bool,
    gen_stop: u64,

    // Faults and repair.
    fault: Option<FaultEvent>,
    plan: Vec<Update>,
    ctrl: Vec<Ctrl>,
    computed: bool,
    waiting_drain: bool,
    log: FaultLog,

    // Counters.
    generated: u64,
    delivered: u64,
    dropped: [u64; DropReason::COUNT],
    in_sources: u64,
    live: u64,
    hops: u64,
    events: u64,
    progress: u64,
    last_progress: u64,
    bins: Vec<BinAcc>,
    lat: Histogram,
    net_lat: Histogram,
    win_del_bytes: u64,
    win_gen_bytes: u64,
    win_inj_bytes: u64,
    deadlock: Option<(u64, Vec<BufferRef>)>,
    invariant_checks: u64,
}

impl std::fmt::Debug for Sim<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("hosts", &self.hosts.len())
            .field("vls", &self.nvl)
            .finish_non_exhaustive()
    }
}

/// Runs `routing` on `f` with `cfg` and an optional fault.
pub fn simulate(
    f: &Fabric,
    routing: Routing,
    cfg: Config,
    fault: Option<FaultEvent>,
) -> Result<Report, SimError> {
    let mut s = Sim::new(f, routing, cfg)?;
    if let Some(fe) = fault {
        s = s.with_fault(fe)?;
    }
    Ok(s.run())
}
