//! A packet-level simulator of the InfiniBand data plane, driven by the tables a subnet
//! manager programs (LFTs, path SLs, SL-to-VL tables), whoever computed them.
//!
//! **Routing.** Every packet is routed at every switch by
//! [`routing::forward::Forward::step`] over a [`routing::forward::Plane`] of the fabric: the
//! one forwarding view the checker (`routing::cdg`) and the path walker read. A failure kills
//! channels in that plane ([`routing::forward::Plane::fail_channel`]); a repair rewrites the
//! simulator's copy of the tables block by block, as SMPs arrive.
//!
//! **Model** (defaults from the RFTR paper, see [`config`]): time in integer picoseconds;
//! full-duplex links with a data rate per link (1X SDR by default: 4 000 ps per byte) and a
//! propagation delay; switches with an input buffer and an output buffer per (port, VL)
//! (1 KiB each); credit-based flow control per VL in 64-byte blocks (a sender holds the
//! downstream input buffer's free credits, decrements them when a transmission starts; the
//! receiver returns them when the packet's tail leaves its input buffer, after `t_prop +
//! t_fc`); virtual cut-through: a packet is routed `hdr_bytes` after its head arrives plus
//! `t_route`, then requests room for the whole packet in the output buffer of its
//! (output port, VL); the crossbar moves one packet per input and per output at a time
//! (`t_ser / speedup`), round robin over requesting inputs per output and over VLs per
//! input; an output link starts when it is idle and the head of some VL has its credits
//! downstream, VLs round robin, and may start before the packet's tail has arrived
//! (pipelined cut-through) as long as its own tail does not leave before it came in.
//! Hosts (end ports cabled to a switch) have an unbounded source queue, inject on the VL their
//! SL2VL row gives, and eject at once.
//!
//! **Events.** A calendar queue ([`queue::EventQueue`]) of `(time, payload)`; about three
//! events per packet-hop (arrival and routing, crossbar done with the credit return, link
//! free) plus one per generated packet. Packets live in a slab (ids reused, no per-packet
//! allocation); VL queues are fixed-capacity rings of packet ids.
//!
//! **Determinism.** No I/O, no clocks, no threads: `(fabric, tables, config, seed)` gives
//! bit-identical reports. Each host draws from its own seeded stream.
//!
//! **Deadlock.** Every `t_watchdog` the exact check builds the wait-for graph of buffers
//! whose head is blocked with nothing pending that could unblock it: an input buffer's head
//! waits for room in its output buffer (no packet of that VL leaving it), an output buffer's
//! head waits for credits (none on their way back, none held by a crossbar transfer, and the
//! downstream input buffer not empty). Each buffer waits on at most one other, so a cycle is
//! found by following pointers; with deterministic routing such a cycle can never move again:
//! a true deadlock. The run stops and reports the cycle's output buffers as (switch, GUID,
//! port, VL), each a vertex of the static channel dependency graph, so tables whose CDG is
//! acyclic can never report one.
//!
//! **Faults** ([`reconf`]): a link or switch fails at a time; packets on its wires and in its
//! buffers are lost, packets routed to a dead port are dropped, new arrivals whose entry is
//! dead are dropped (or held); then the SM detects (`t_detect`), computes (`t_compute`) and
//! sends SMPs (`t_smp` round trip, `smp_parallel` outstanding) for the changed 64-LID blocks
//! and SL2VL rows, by one of three schemes ([`reconf::Scheme`]).

pub mod config;
pub mod dateline;
mod engine;
mod net;
pub mod queue;
pub mod reconf;
pub mod report;
pub mod stats;
mod traffic;

pub use config::{
    Arrival, Config, LinkRate, Model, Pattern, ReconfTiming, SizeDist, Traffic, Unroutable, MS, NS,
    US,
};
pub use engine::{simulate, Sim, SimError};
pub use reconf::{FaultEvent, RepairTables, Scheme};
pub use report::{series_csv, BufferRef, DropReason, FaultSummary, Report};
pub use stats::{Bin, Latency};
