//! The records the engine keeps: event payloads, packets, per-channel and per-(channel, VL)
//! state laid out for the hot path, hosts and timed control actions.

use crate::net::FrontHdr;
use crate::traffic::Dest;
use fabric::rng::Rng;
use fabric::Fault;
use fabric::Lid;
use routing::forward::NONE;
use std::collections::VecDeque;

// Event kinds (top 4 bits of the payload).
pub(super) const EV_GEN: u64 = 0;
pub(super) const EV_ARRIVE: u64 = 1;
pub(super) const EV_XBAR: u64 = 2;
pub(super) const EV_LINK: u64 = 3;
pub(super) const EV_CREDIT: u64 = 4;
pub(super) const EV_WATCH: u64 = 5;
pub(super) const EV_CTRL: u64 = 6;
pub(super) const EV_END: u64 = 7;
pub(super) const EV_TRACE: u64 = 8;
/// A crossbar transfer and the link transmission it fed, ending at the same time: an
/// [`EV_XBAR`] and the [`EV_LINK`] right behind it in the queue, as one event (see
/// [`Sim::grant`](super::Sim::grant)).
pub(super) const EV_XL: u64 = 9;
pub(super) const KIND_SHIFT: u32 = 60;
/// How many events ahead each stage of [`Sim::prefetch`](super::Sim::prefetch) looks.
pub(super) const PF: [usize; 5] = [12, 9, 6, 3, 1];
pub(super) const DATA_MASK: u64 = (1 << KIND_SHIFT) - 1;

#[inline]
pub(super) fn ev(kind: u64, data: u64) -> u64 {
    (kind << KIND_SHIFT) | data
}

// Packet states.
pub(super) const P_FREE: u8 = 0;
pub(super) const P_SOURCE: u8 = 1;
pub(super) const P_WIRE: u8 = 2;
pub(super) const P_IN: u8 = 3;
pub(super) const P_OUT: u8 = 4;

/// One packet in the slab, one cache line each (48 bytes unaligned would straddle two lines
/// for a third of the packets, and a packet is read at every hop).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
pub(super) struct Packet {
    pub(super) gen: u64,
    pub(super) inj: u64,
    /// When its tail is complete in the buffer it is in (or, on a wire, at the far end).
    pub(super) tail: u64,
    /// Destination host.
    pub(super) dst: u32,
    /// Channel it is on (wire) or arrived by (input buffer). Where a head is routed to is
    /// its buffer's [`Head`].
    pub(super) ch: u32,
    pub(super) dlid: Lid,
    pub(super) bytes: u16,
    pub(super) sl: u8,
    pub(super) vl: u8,
    pub(super) cr: u8,
    pub(super) hops: u8,
    pub(super) state: u8,
}

/// The head of an input buffer (per (channel, VL)) as routed: the one record of where it goes,
/// kept beside the buffer so that arbitration does not fetch every waiting packet. Valid while
/// the buffer is not empty; `out` is `NONE` while the head is not routed (held).
#[derive(Clone, Copy, Debug)]
pub(super) struct Head {
    pub(super) out: u32,
    pub(super) ovl: u8,
    pub(super) cr: u8,
}

impl Head {
    pub(super) const EMPTY: Head = Head {
        out: NONE,
        ovl: 0,
        cr: 0,
    };
}

/// The state of one directed channel, everything the hot path reads about it in one cache
/// line: its static facts (a copy of [`crate::net::Chan`]), its output side (at the switch
/// or host it leaves: link, crossbar output, VL arbitration) and its input side (at the
/// switch it enters: the crossbar transfer in progress). Per-VL state lives beside it, in
/// arrays indexed `channel * nvl + vl`.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct ChanState {
    pub(super) src_sw: u32,
    pub(super) dst_sw: u32,
    pub(super) src_host: u32,
    pub(super) dst_host: u32,
    /// Picoseconds per byte.
    pub(super) t_byte: u32,
    pub(super) src_port: u8,
    pub(super) dst_port: u8,
    /// The link is up (and both its ends).
    pub(super) alive: bool,
    /// A packet is on the link (its VL and credits: `send_vl`, `send_cr`).
    pub(super) busy: bool,
    pub(super) send_vl: u8,
    pub(super) send_cr: u8,
    /// The VL the link served last (round robin).
    pub(super) vlarb: u8,
    /// The crossbar output feeding this channel is busy.
    pub(super) xout_busy: bool,
    /// An injection channel: its host has packets waiting in its source queue (so that a
    /// link or credit event need not read the host to find its queue empty).
    pub(super) src_queued: bool,
    /// The VLs whose output buffer is not empty (bit per VL).
    pub(super) oq_mask: u16,
    /// Round-robin pointer over the crossbar output's request bits.
    pub(super) xout_rr: u32,
    /// The crossbar output's request bits when they fit one word (see `Sim::req`).
    pub(super) req: u64,
    /// Picoseconds the link has been sending.
    pub(super) busy_ps: u64,
    /// Crossbar, this channel as an input: the packet crossing (or `NONE`), to which output,
    /// from which VL, with how many credits.
    pub(super) xin_pkt: u32,
    pub(super) xin_out: u32,
    pub(super) xin_vl: u8,
    pub(super) xin_cr: u8,
}

impl ChanState {
    pub(super) fn new(ch: &crate::net::Chan) -> ChanState {
        ChanState {
            src_sw: ch.src_sw,
            dst_sw: ch.dst_sw,
            src_host: ch.src_host,
            dst_host: ch.dst_host,
            t_byte: ch.t_byte,
            src_port: ch.src_port,
            dst_port: ch.dst_port,
            alive: true,
            busy: false,
            send_vl: 0,
            send_cr: 0,
            vlarb: 0,
            xout_busy: false,
            src_queued: false,
            oq_mask: 0,
            xout_rr: 0,
            req: 0,
            busy_ps: 0,
            xin_pkt: NONE,
            xin_out: NONE,
            xin_vl: 0,
            xin_cr: 0,
        }
    }
}

/// The state of one (channel, VL): its credits, its input buffer's routed head, and where
/// its two rings start.
#[derive(Clone, Copy, Debug)]
#[repr(align(32))]
pub(super) struct VlState {
    /// Credits the sender holds for the receiver's input buffer (those on their way back
    /// are `Sim::cred_fly`).
    pub(super) credits: u32,
    /// Room left in the output buffer (credits).
    pub(super) out_space: u32,
    /// The input buffer's head, see [`Head`].
    pub(super) hd: Head,
    /// The input buffer ([`IN`]) and the output buffer ([`OUT`]): front packet, where the
    /// rest starts in `Sim::bufs`, length.
    pub(super) q: [FrontHdr; 2],
}

/// The input buffer of a (channel, VL): at the switch the channel enters.
pub(super) const IN: usize = 0;
/// The output buffer of a (channel, VL): at the switch the channel leaves.
pub(super) const OUT: usize = 1;

// The layouts the hot path is built around: one cache line per channel, two (channel, VL)
// records per line.
const _: () = assert!(std::mem::size_of::<ChanState>() == 64);
const _: () = assert!(std::mem::size_of::<VlState>() == 32);

impl VlState {
    pub(super) fn new(in_cap: u32, out_cap: u32) -> VlState {
        VlState {
            credits: in_cap,
            out_space: out_cap,
            hd: Head::EMPTY,
            q: [FrontHdr::EMPTY; 2],
        }
    }
}

pub(super) struct Host {
    pub(super) ep: u32,
    pub(super) ch: u32,
    /// Its end port: node and port number.
    pub(super) node: fabric::NodeId,
    pub(super) num: u8,
    pub(super) rng: Rng,
    pub(super) dest: Option<Dest>,
    pub(super) queue: VecDeque<u32>,
    pub(super) alive: bool,
}

/// A timed control action.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ctrl {
    Fail(Fault),
    /// The SM has detected the failure (static: stop injection now).
    Detected,
    /// The SM has the new tables.
    Computed,
    /// Apply SMP `i` of the plan.
    Smp(usize),
    /// Every SMP done: sources take their new (DLID, SL); injection resumes.
    Sources,
}
