//! The forwarding view: what a packet does at every switch, compiled once from a [`Fabric`], a
//! [`FaultMask`] and a [`Routing`], and the one walker of the tables.
//!
//! - [`Plane`] is the data plane under a fault mask: for every switch port, what leaving on it
//!   leads to (a [`Hop`]: the next switch and its input port, an end port, or a failure as a
//!   value), and for every end port the switch it hangs off. Built once per check (flat arrays
//!   indexed by switch index and port number); [`Plane::fail_channel`] kills a channel later,
//!   so RFTR keeps one plane across a fault sequence.
//! - [`Forward`] adds the tables: the LFT entry, next hop and VL of a packet at
//!   (switch, input port, DLID, SL) ([`Forward::step`]), and [`Forward::walk_from`], which
//!   follows a packet hop by hop and hands each [`WalkStep`] to a visitor that may stop it. Every
//!   walk of the tables in this crate — the path walker ([`crate::walk`]), the memoised
//!   per-destination resolutions (walker, full-reconfiguration accounting, RFTR's suffix
//!   tables), RFTR's verifier and RFTR itself, the EBB flows — goes through it; the CDG
//!   builder and the simulator read the same [`Plane`] and [`Forward::step`].
//!
//! The walker takes its LFT entries from a [`Column`] (the entries of every switch for one
//! DLID): [`Forward::column`] reads the routing directly, and a gathered slice (`&[u8]`
//! indexed by switch) serves hot loops that transpose blocks of destinations first.
//!
//! **Rules** (the same for every caller): an entry `NO_PORT` is "no route"; port 0, a port
//! beyond the count, an uncabled port and a channel dead under the mask are black holes; a
//! packet that reaches an end port other than the target is misdelivered; a walk that visits
//! more switches than the fabric has is a forwarding loop. None of these is a sentinel in the
//! results: they are [`Failure`] values, and an entry is reported as `Option<u8>` (`None` for
//! no route).

use crate::tables::Routing;
use fabric::SwitchIdx;
use fabric::{ChannelId, Fabric, FaultMask, Lid, NodeId, PortId, NO_PORT};
use serde::Serialize;

/// Marker for "none" in dense index arrays.
pub const NONE: u32 = u32::MAX;

/// Why a route does not reach its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// An LFT entry on the way is `NO_PORT` (no route): the pair is unreachable.
    NoRoute,
    /// The route visits more switches than the fabric has: a forwarding loop.
    Loop,
    /// An LFT entry points at port 0 (the switch itself) for an end port's LID.
    PortZero,
    /// An LFT entry points beyond the switch's port count.
    BeyondPortCount,
    /// An LFT entry points at a port without a cable.
    Unconnected,
    /// An LFT entry points at a channel that is dead under the fault mask.
    DeadChannel,
    /// The packet is delivered to an end port that does not own the LID.
    Misdelivered,
}

/// Coarse classes used in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    Unreachable,
    Loop,
    BlackHole,
    Misdelivered,
}

impl Failure {
    pub const ALL: [Failure; 7] = [
        Failure::NoRoute,
        Failure::Loop,
        Failure::PortZero,
        Failure::BeyondPortCount,
        Failure::Unconnected,
        Failure::DeadChannel,
        Failure::Misdelivered,
    ];
    /// Dense code (index into [`Failure::ALL`]).
    #[inline]
    pub fn code(self) -> u32 {
        self as u32
    }
    /// Inverse of [`Failure::code`] (out-of-range codes give `NoRoute`).
    pub fn from_code(c: u32) -> Failure {
        Failure::ALL
            .get(c as usize)
            .copied()
            .unwrap_or(Failure::NoRoute)
    }
    /// Black holes: the LFT sends the packet somewhere it cannot go on.
    pub fn class(self) -> FailureClass {
        match self {
            Failure::NoRoute => FailureClass::Unreachable,
            Failure::Loop => FailureClass::Loop,
            Failure::PortZero
            | Failure::BeyondPortCount
            | Failure::Unconnected
            | Failure::DeadChannel => FailureClass::BlackHole,
            Failure::Misdelivered => FailureClass::Misdelivered,
        }
    }
    pub fn describe(self) -> &'static str {
        match self {
            Failure::NoRoute => "no LFT entry",
            Failure::Loop => "forwarding loop",
            Failure::PortZero => "LFT points at port 0",
            Failure::BeyondPortCount => "LFT port beyond the port count",
            Failure::Unconnected => "LFT points at an unconnected port",
            Failure::DeadChannel => "LFT points at a dead link",
            Failure::Misdelivered => "delivered to the wrong end port",
        }
    }
}

/// What leaving a switch on one port leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// To switch index `sw`, entering it on port `inp`, over channel `ch`.
    Switch { sw: u32, inp: u8, ch: ChannelId },
    /// To end port `port` over channel `ch`.
    End { port: PortId, ch: ChannelId },
    /// Nowhere.
    Fail(Failure),
}

impl Hop {
    /// The channel taken, when there is one.
    #[inline]
    pub fn channel(&self) -> Option<ChannelId> {
        match *self {
            Hop::Switch { ch, .. } | Hop::End { ch, .. } => Some(ch),
            Hop::Fail(_) => None,
        }
    }
}

/// How an end port is attached under the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attach {
    /// Node alive and its cable alive: a usable source and destination.
    pub live: bool,
    /// Its injection channel (meaningful when cabled).
    pub ch: ChannelId,
    /// Switch index it hangs off, [`NONE`] when cabled to another end node or not cabled.
    pub sw: u32,
    /// The switch-side port number.
    pub inp: u8,
}

/// The data plane under a fault mask. See the module documentation.
#[derive(Clone, Debug)]
pub struct Plane {
    /// Per switch index: offset into `hops` of its port 0; one extra entry at the end.
    hop_start: Vec<u32>,
    hops: Vec<Hop>,
    /// Per end-port index (into `Fabric::end_ports`).
    ends: Vec<Attach>,
    /// `PortId` → end-port index (`NONE` for switch ports).
    ep_index: Vec<u32>,
}

/// Decodes output port `o` of switch node `n` under `mask` (any port number, `NO_PORT` too).
fn decode_port(f: &Fabric, mask: Option<&FaultMask>, n: NodeId, o: u8) -> Hop {
    if o == NO_PORT {
        return Hop::Fail(Failure::NoRoute);
    }
    if o == 0 {
        return Hop::Fail(Failure::PortZero);
    }
    if o > f.node(n).nports {
        return Hop::Fail(Failure::BeyondPortCount);
    }
    let Some(ch) = f.out_channel(f.port_id(n, o)) else {
        return Hop::Fail(Failure::Unconnected);
    };
    if mask.is_some_and(|m| !m.channel_alive(f, ch)) {
        return Hop::Fail(Failure::DeadChannel);
    }
    let dst = f.channel_dst(ch);
    let dp = f.port(dst);
    if let Some(si) = f.switch_of(dp.node) {
        Hop::Switch {
            sw: si.0,
            inp: dp.num,
            ch,
        }
    } else {
        Hop::End { port: dst, ch }
    }
}

impl Plane {
    /// Compiles the plane of `f` under `mask` (`None`: nothing failed).
    pub fn new(f: &Fabric, mask: Option<&FaultMask>) -> Plane {
        let mut hop_start = Vec::with_capacity(f.num_switches() + 1);
        let mut hops = Vec::new();
        for &n in &f.switches {
            hop_start.push(hops.len() as u32);
            for o in 0..=f.node(n).nports {
                hops.push(decode_port(f, mask, n, o));
            }
        }
        hop_start.push(hops.len() as u32);
        let mut ep_index = vec![NONE; f.ports.len()];
        let ends = f
            .end_ports
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                ep_index[p.idx()] = i as u32;
                let mut a = Attach {
                    live: false,
                    ch: ChannelId(0),
                    sw: NONE,
                    inp: 0,
                };
                let Some(c) = f.out_channel(p) else {
                    return a;
                };
                a.ch = c;
                let rp = f.port(f.channel_dst(c));
                if let Some(si) = f.switch_of(rp.node) {
                    a.sw = si.0;
                    a.inp = rp.num;
                }
                let node = f.port(p).node;
                a.live = !mask.is_some_and(|m| m.node_dead(node) || !m.channel_alive(f, c));
                a
            })
            .collect();
        Plane {
            hop_start,
            hops,
            ends,
            ep_index,
        }
    }

    /// Number of switches.
    #[inline]
    pub fn num_switches(&self) -> usize {
        self.hop_start.len() - 1
    }

    /// What leaving switch index `s` on port `o` leads to (`NO_PORT` and out-of-range ports
    /// included).
    #[inline]
    pub fn hop(&self, s: usize, o: u8) -> Hop {
        if o == NO_PORT {
            return Hop::Fail(Failure::NoRoute);
        }
        let st = self.hop_start[s];
        if o as u32 >= self.hop_start[s + 1] - st {
            return Hop::Fail(Failure::BeyondPortCount);
        }
        self.hops[(st + o as u32) as usize]
    }

    /// Where [`Plane::hop`] of (`s`, `o`) is stored, when it is (for a caller that wants to
    /// prefetch it).
    #[inline]
    pub fn hop_ref(&self, s: usize, o: u8) -> Option<&Hop> {
        let st = *self.hop_start.get(s)?;
        self.hops.get((st + o as u32) as usize)
    }

    /// How end port `ep` (index into `Fabric::end_ports`) is attached.
    #[inline]
    pub fn attach(&self, ep: u32) -> Attach {
        self.ends[ep as usize]
    }

    /// The end-port index of port `p`, if it is an end port.
    #[inline]
    pub fn end_index(&self, p: PortId) -> Option<u32> {
        self.ep_index.get(p.idx()).copied().filter(|&e| e != NONE)
    }

    /// Number of end ports.
    #[inline]
    pub fn num_end_ports(&self) -> usize {
        self.ends.len()
    }

    /// Kills channel `c` (one direction): the switch port it leaves becomes a dead channel,
    /// and an end port injecting on it is no longer live.
    pub fn fail_channel(&mut self, f: &Fabric, c: ChannelId) {
        let sp = f.port(f.channel_src(c));
        if let Some(si) = f.switch_of(sp.node) {
            let at = (self.hop_start[si.idx()] + sp.num as u32) as usize;
            self.hops[at] = Hop::Fail(Failure::DeadChannel);
        } else if let Some(e) = self.end_index(f.channel_src(c)) {
            self.ends[e as usize].live = false;
        }
    }

    /// Kills every channel into and out of node `n`; its end ports stop being live.
    pub fn fail_node(&mut self, f: &Fabric, n: NodeId) {
        for p in f.node_ports(n) {
            if let Some(c) = f.out_channel(p) {
                self.fail_channel(f, c);
                self.fail_channel(f, c.reverse());
            }
            if let Some(e) = self.end_index(p) {
                self.ends[e as usize].live = false;
            }
        }
    }
}

/// The LFT entries of every switch for one DLID.
pub trait Column {
    /// The entry of switch index `s` (`NO_PORT` when none or outside the table).
    fn entry(&self, s: u32) -> u8;
}

/// Entries gathered into a slice indexed by switch (`NO_PORT` beyond its end).
impl Column for [u8] {
    #[inline]
    fn entry(&self, s: u32) -> u8 {
        self.get(s as usize).copied().unwrap_or(NO_PORT)
    }
}

/// The entries of one DLID read from the routing itself.
#[derive(Clone, Copy, Debug)]
pub struct LidColumn<'a> {
    r: &'a Routing,
    dlid: Lid,
}

impl Column for LidColumn<'_> {
    #[inline]
    fn entry(&self, s: u32) -> u8 {
        self.r.out_port_checked(SwitchIdx(s), self.dlid)
    }
}

/// One hop of a walk: at switch index `sw`, entered on port `inp`, the entry `out` sends the
/// packet over `ch` to `to` (a switch or an end port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkStep {
    pub sw: u32,
    pub inp: u8,
    pub out: u8,
    pub ch: ChannelId,
    pub to: Hop,
}

impl WalkStep {
    /// The next switch and its input port, when the hop leads to a switch.
    #[inline]
    pub fn next_switch(&self) -> Option<(u32, u8)> {
        match self.to {
            Hop::Switch { sw, inp, .. } => Some((sw, inp)),
            _ => None,
        }
    }
}

/// What the visitor of a walk says after each step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Continue,
    Stop,
}

/// Where a walk broke: the failure, the switch index it broke at, and that switch's entry
/// (`None` when the entry is "no route" or the walk broke before any switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Break {
    pub failure: Failure,
    pub at: Option<u32>,
    pub entry: Option<u8>,
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// Reached the target after `sw_hops` switch-to-switch channels.
    Delivered {
        sw_hops: u32,
    },
    Broken(Break),
    /// The visitor stopped it (after the step it was given).
    Stopped,
}

/// The plane together with the tables. Cheap to build (references only).
#[derive(Clone, Copy, Debug)]
pub struct Forward<'a> {
    pub f: &'a Fabric,
    pub plane: &'a Plane,
    pub r: &'a Routing,
}

impl<'a> Forward<'a> {
    pub fn new(f: &'a Fabric, plane: &'a Plane, r: &'a Routing) -> Self {
        Forward { f, plane, r }
    }

    /// The entries of `dlid`, read from the routing.
    #[inline]
    pub fn column(&self, dlid: Lid) -> LidColumn<'a> {
        LidColumn { r: self.r, dlid }
    }

    /// The LFT entry of switch index `s` for `dlid` (`NO_PORT` when none or out of range).
    #[inline]
    pub fn entry(&self, s: u32, dlid: Lid) -> u8 {
        self.r.out_port_checked(SwitchIdx(s), dlid)
    }

    /// The VL of a packet with `sl` leaving switch index `s` on `out`, entered on `inp`.
    #[inline]
    pub fn vl(&self, s: u32, inp: u8, out: u8, sl: u8) -> u8 {
        self.r.sl2vl.vl(self.f.switches[s as usize], inp, out, sl)
    }

    /// The next hop and VL of a packet at (switch index `s`, input port `inp`, `dlid`, `sl`):
    /// its output port (`None` for no route), where that leads and the VL it leaves on.
    #[inline]
    pub fn step(&self, s: u32, inp: u8, dlid: Lid, sl: u8) -> (Option<u8>, Hop, u8) {
        let out = self.entry(s, dlid);
        let hop = self.plane.hop(s as usize, out);
        let vl = if out == NO_PORT {
            0
        } else {
            self.vl(s, inp, out, sl)
        };
        (Some(out).filter(|&o| o != NO_PORT), hop, vl)
    }

    /// Follows the entries of `col` from switch index `sw` (entered on `inp`) until the packet
    /// reaches `target` (an end port, or port 0 of a switch: a switch's own LID), breaks, or
    /// `visit` stops it. `visit` sees every step that
    /// leads somewhere (a switch, or an end port: the target or not), before the walk looks at
    /// its outcome; it is not called for a hop that fails. No allocation.
    #[inline]
    pub fn walk_from<C: Column + ?Sized>(
        &self,
        col: &C,
        mut sw: u32,
        mut inp: u8,
        target: PortId,
        mut visit: impl FnMut(&WalkStep) -> Control,
    ) -> WalkEnd {
        let ns = self.plane.num_switches() as u32;
        let mut sw_hops = 0u32;
        let mut visits = 0u32;
        loop {
            visits += 1;
            let out = col.entry(sw);
            let entry = Some(out).filter(|&o| o != NO_PORT);
            if visits > ns {
                return WalkEnd::Broken(Break {
                    failure: Failure::Loop,
                    at: Some(sw),
                    entry,
                });
            }
            let to = self.plane.hop(sw as usize, out);
            let ch = match to {
                Hop::Switch { ch, .. } | Hop::End { ch, .. } => ch,
                // Port 0 of the switch that owns the DLID: the packet is home.
                Hop::Fail(Failure::PortZero)
                    if self.f.port_id(self.f.switches[sw as usize], 0) == target =>
                {
                    return WalkEnd::Delivered { sw_hops };
                }
                Hop::Fail(failure) => {
                    return WalkEnd::Broken(Break {
                        failure,
                        at: Some(sw),
                        entry,
                    })
                }
            };
            let step = WalkStep {
                sw,
                inp,
                out,
                ch,
                to,
            };
            if visit(&step) == Control::Stop {
                return WalkEnd::Stopped;
            }
            match to {
                Hop::Switch { sw: n, inp: i, .. } => {
                    sw_hops += 1;
                    sw = n;
                    inp = i;
                }
                Hop::End { port, .. } => {
                    return if port == target {
                        WalkEnd::Delivered { sw_hops }
                    } else {
                        WalkEnd::Broken(Break {
                            failure: Failure::Misdelivered,
                            at: Some(sw),
                            entry,
                        })
                    };
                }
                Hop::Fail(_) => unreachable!("handled above"),
            }
        }
    }

    /// Follows `dlid` from end port `src_ep` to end port `dst_ep`: the injection (a dead
    /// source breaks with `DeadChannel` before any switch; a source cabled straight to another
    /// end node delivers when that node is the target), then [`Forward::walk_from`] over the
    /// routing's own entries.
    pub fn walk_pair(
        &self,
        src_ep: u32,
        dlid: Lid,
        target: PortId,
        visit: impl FnMut(&WalkStep) -> Control,
    ) -> WalkEnd {
        let a = self.plane.attach(src_ep);
        if !a.live {
            return WalkEnd::Broken(Break {
                failure: Failure::DeadChannel,
                at: None,
                entry: None,
            });
        }
        if a.sw == NONE {
            return if self.f.channel_dst(a.ch) == target {
                WalkEnd::Delivered { sw_hops: 0 }
            } else {
                WalkEnd::Broken(Break {
                    failure: Failure::Misdelivered,
                    at: None,
                    entry: None,
                })
            };
        }
        self.walk_from(&self.column(dlid), a.sw, a.inp, target, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{FabricBuilder, NodeKind, Speed, Width};

    /// A line of three switches s0 - s1 - s2 with one host on s0 and one on s2.
    fn line() -> (Fabric, Routing) {
        let mut b = FabricBuilder::new();
        let s: Vec<NodeId> = (0..3)
            .map(|i| {
                b.add_node(NodeKind::Switch, 4, 0x100 + i, format!("s{i}"), "")
                    .unwrap()
            })
            .collect();
        let h0 = b.add_node(NodeKind::Ca, 1, 0x200, "h0", "").unwrap();
        let h2 = b.add_node(NodeKind::Ca, 1, 0x210, "h2", "").unwrap();
        let c = |b: &mut FabricBuilder, x, px, y, py| {
            b.connect(x, px, y, py, Width::X4, Speed::Sdr).unwrap();
        };
        c(&mut b, s[0], 2, s[1], 1);
        c(&mut b, s[1], 2, s[2], 1);
        c(&mut b, h0, 1, s[0], 4);
        c(&mut b, h2, 1, s[2], 4);
        let f = b.build().unwrap();
        let mut r = Routing::empty(&f);
        let lid2 = f.port(f.port_id(h2, 1)).lid;
        let lid0 = f.port(f.port_id(h0, 1)).lid;
        for (sw, to2, to0) in [(0, 2, 4), (1, 2, 1), (2, 4, 1)] {
            r.lft_of_mut(SwitchIdx(sw as u32))[lid2 as usize] = to2;
            r.lft_of_mut(SwitchIdx(sw as u32))[lid0 as usize] = to0;
        }
        (f, r)
    }

    fn ep(f: &Fabric, name: &str) -> u32 {
        f.end_ports
            .iter()
            .position(|&p| f.node(f.port(p).node).name == name)
            .unwrap() as u32
    }

    #[test]
    fn walks_deliver_count_hops_and_show_each_step() {
        let (f, r) = line();
        let plane = Plane::new(&f, None);
        let fw = Forward::new(&f, &plane, &r);
        let (h0, h2) = (ep(&f, "h0"), ep(&f, "h2"));
        let target = f.end_ports[h2 as usize];
        let dlid = f.port(target).lid;
        let mut seen = Vec::new();
        let end = fw.walk_pair(h0, dlid, target, |s| {
            seen.push((s.sw, s.inp, s.out));
            Control::Continue
        });
        assert_eq!(end, WalkEnd::Delivered { sw_hops: 2 });
        assert_eq!(seen, vec![(0, 4, 2), (1, 1, 2), (2, 1, 4)]);
        // The visitor can stop a walk.
        let end = fw.walk_pair(h0, dlid, target, |s| {
            if s.sw == 1 {
                Control::Stop
            } else {
                Control::Continue
            }
        });
        assert_eq!(end, WalkEnd::Stopped);
    }

    #[test]
    fn failures_are_values_with_their_switch_and_entry() {
        let (f, mut r) = line();
        let h0 = ep(&f, "h0");
        let target = f.end_ports[ep(&f, "h2") as usize];
        let dlid = f.port(target).lid;
        let walk = |r: &Routing, mask: Option<&FaultMask>| {
            let plane = Plane::new(&f, mask);
            Forward::new(&f, &plane, r).walk_pair(h0, dlid, target, |_| Control::Continue)
        };
        let broken = |failure, at, entry| WalkEnd::Broken(Break { failure, at, entry });
        r.lft_of_mut(SwitchIdx(1))[dlid as usize] = NO_PORT;
        assert_eq!(walk(&r, None), broken(Failure::NoRoute, Some(1), None));
        r.lft_of_mut(SwitchIdx(1))[dlid as usize] = 0;
        assert_eq!(walk(&r, None), broken(Failure::PortZero, Some(1), Some(0)));
        r.lft_of_mut(SwitchIdx(1))[dlid as usize] = 9;
        assert_eq!(
            walk(&r, None),
            broken(Failure::BeyondPortCount, Some(1), Some(9))
        );
        r.lft_of_mut(SwitchIdx(1))[dlid as usize] = 3;
        assert_eq!(
            walk(&r, None),
            broken(Failure::Unconnected, Some(1), Some(3))
        );
        r.lft_of_mut(SwitchIdx(1))[dlid as usize] = 1;
        assert_eq!(walk(&r, None), broken(Failure::Loop, Some(1), Some(1)));
        r.lft_of_mut(SwitchIdx(1))[dlid as usize] = 2;
        let mut mask = FaultMask::none(&f);
        let l = f.links.iter().position(|l| {
            let (a, b) = (f.port(l.a).node, f.port(l.b).node);
            f.node(a).name == "s1" && f.node(b).name == "s2"
                || f.node(a).name == "s2" && f.node(b).name == "s1"
        });
        mask.fail_link(fabric::LinkId(l.unwrap() as u32));
        assert_eq!(
            walk(&r, Some(&mask)),
            broken(Failure::DeadChannel, Some(1), Some(2))
        );
        // A dead source breaks before any switch.
        let mut mask = FaultMask::none(&f);
        mask.fail_node(f.port(f.end_ports[h0 as usize]).node);
        assert_eq!(
            walk(&r, Some(&mask)),
            broken(Failure::DeadChannel, None, None)
        );
        // Delivered to the other host: misdelivered at s0.
        let other = f.end_ports[h0 as usize];
        let plane = Plane::new(&f, None);
        let fw = Forward::new(&f, &plane, &r);
        let end = fw.walk_from(&fw.column(dlid), 2, 1, other, |_| Control::Continue);
        assert_eq!(end, broken(Failure::Misdelivered, Some(2), Some(4)));
    }

    #[test]
    fn failing_a_channel_later_equals_compiling_with_the_mask() {
        let (f, _) = line();
        let mut mask = FaultMask::none(&f);
        mask.fail_link(fabric::LinkId(1));
        let compiled = Plane::new(&f, Some(&mask));
        let mut later = Plane::new(&f, None);
        let c = fabric::LinkId(1).forward();
        later.fail_channel(&f, c);
        later.fail_channel(&f, c.reverse());
        for s in 0..f.num_switches() {
            for o in 0..=5u8 {
                assert_eq!(compiled.hop(s, o), later.hop(s, o), "switch {s} port {o}");
            }
        }
        for e in 0..f.end_ports.len() as u32 {
            assert_eq!(compiled.attach(e), later.attach(e));
        }
        let h = f.port(f.end_ports[0]).node;
        let mut dead = FaultMask::none(&f);
        dead.fail_node(h);
        let mut later = Plane::new(&f, None);
        later.fail_node(&f, h);
        assert_eq!(Plane::new(&f, Some(&dead)).attach(0), later.attach(0));
    }

    #[test]
    fn step_gives_port_hop_and_vl() {
        let (f, mut r) = line();
        let target = f.end_ports[ep(&f, "h2") as usize];
        let dlid = f.port(target).lid;
        r.sl2vl.set(f.switches[1], 1, 2, 3, 5);
        let plane = Plane::new(&f, None);
        let fw = Forward::new(&f, &plane, &r);
        let (out, hop, vl) = fw.step(1, 1, dlid, 3);
        assert_eq!(out, Some(2));
        assert!(matches!(hop, Hop::Switch { sw: 2, inp: 1, .. }));
        assert_eq!(vl, 5);
        assert_eq!(fw.step(1, 1, dlid, 0).2, 0, "identity for other SLs");
        assert_eq!(fw.step(1, 1, 0xBFFF, 0).0, None);
    }
}
