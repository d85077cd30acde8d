//! The simulated network: static structure (channels, switch ports, hosts) and the
//! fixed-capacity ring buffers of packet ids that hold every VL queue.

use fabric::{ChannelId, Fabric, PortId};
use routing::forward::{Plane, NONE};

/// Fixed-capacity FIFO rings of `u32`, all in one array: queue `q` owns
/// `buf[q << shift .. (q + 1) << shift]`. Where each queue starts and how long it is
/// ([`RingHdr`]) the caller keeps, beside the rest of its state for that queue, and passes in:
/// the simulator reads it with the queue's credits and head record, in the same cache line.
#[derive(Clone, Debug)]
struct Rings {
    shift: u32,
    buf: Vec<u32>,
}

/// Where one ring of [`Rings`] starts and how many entries it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RingHdr {
    head: u16,
    len: u16,
}

impl Rings {
    /// `n` queues of at least `cap` entries each.
    pub fn new(n: usize, cap: usize) -> Self {
        let cap = cap.max(1).next_power_of_two();
        Rings {
            shift: cap.trailing_zeros(),
            buf: vec![0; n << cap.trailing_zeros()],
        }
    }
    #[inline]
    pub fn cap(&self) -> usize {
        1 << self.shift
    }
    #[inline]
    pub fn front(&self, q: usize, h: RingHdr) -> Option<u32> {
        if h.len == 0 {
            None
        } else {
            Some(self.buf[(q << self.shift) + h.head as usize])
        }
    }
    #[inline]
    pub fn push(&mut self, q: usize, h: &mut RingHdr, v: u32) {
        let cap = self.cap();
        debug_assert!((h.len as usize) < cap, "ring {q} overflows");
        let at = (h.head as usize + h.len as usize) & (cap - 1);
        self.buf[(q << self.shift) + at] = v;
        h.len += 1;
    }
    #[inline]
    pub fn pop(&mut self, q: usize, h: &mut RingHdr) -> Option<u32> {
        let v = self.front(q, *h)?;
        h.head = ((h.head as usize + 1) & (self.cap() - 1)) as u16;
        h.len -= 1;
        Some(v)
    }
    /// The entries of queue `q`, front first.
    pub fn iter(&self, q: usize, h: RingHdr) -> impl Iterator<Item = u32> + '_ {
        let cap = self.cap();
        (0..h.len as usize)
            .map(move |i| self.buf[(q << self.shift) + ((h.head as usize + i) & (cap - 1))])
    }
}

/// Rings like [`Rings`] whose header also holds the front entry ([`FrontHdr`]): a queue
/// of one entry (the common case for input buffers below saturation) never touches the
/// ring's memory. The ring holds the entries behind the front.
#[derive(Clone, Debug)]
pub(crate) struct FrontRings {
    rest: Rings,
}

/// The front entry of one ring of [`FrontRings`] (`EMPTY_FRONT` when the ring is empty) and
/// where the rest starts. No `Default`: an empty header is [`FrontHdr::EMPTY`], not zeros
/// (which would hold packet 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FrontHdr {
    front: u32,
    rest: RingHdr,
}

impl FrontHdr {
    /// An empty queue.
    pub const EMPTY: FrontHdr = FrontHdr {
        front: EMPTY_FRONT,
        rest: RingHdr { head: 0, len: 0 },
    };

    /// Entries, the front included (the rest is empty whenever the front is).
    #[inline]
    pub fn len(&self) -> usize {
        if self.front == EMPTY_FRONT {
            0
        } else {
            self.rest.len as usize + 1
        }
    }
}

const EMPTY_FRONT: u32 = u32::MAX;

impl FrontRings {
    /// `n` queues of at least `cap` entries each.
    pub fn new(n: usize, cap: usize) -> Self {
        FrontRings {
            rest: Rings::new(n, cap.saturating_sub(1)),
        }
    }
    #[inline]
    pub fn front(&self, h: FrontHdr) -> Option<u32> {
        (h.front != EMPTY_FRONT).then_some(h.front)
    }
    #[inline]
    pub fn push(&mut self, q: usize, h: &mut FrontHdr, v: u32) {
        debug_assert!(v != EMPTY_FRONT, "entry {v} is the empty mark");
        if h.front == EMPTY_FRONT {
            h.front = v;
        } else {
            self.rest.push(q, &mut h.rest, v);
        }
    }
    #[inline]
    pub fn pop(&mut self, q: usize, h: &mut FrontHdr) -> Option<u32> {
        let v = self.front(*h)?;
        h.front = self.rest.pop(q, &mut h.rest).unwrap_or(EMPTY_FRONT);
        Some(v)
    }
    /// The entries of queue `q`, front first.
    pub fn iter(&self, q: usize, h: FrontHdr) -> impl Iterator<Item = u32> + '_ {
        self.front(h).into_iter().chain(self.rest.iter(q, h.rest))
    }
    /// Empties queue `q`, returning its entries.
    pub fn drain(&mut self, q: usize, h: &mut FrontHdr) -> Vec<u32> {
        let v: Vec<u32> = self.iter(q, *h).collect();
        *h = FrontHdr::EMPTY;
        v
    }
}

/// Static facts about one directed channel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chan {
    /// Switch index it leaves, or `NONE` (a host).
    pub src_sw: u32,
    pub src_port: u8,
    /// Switch index it enters, or `NONE` (a host).
    pub dst_sw: u32,
    pub dst_port: u8,
    /// Host index at either end that is a host (`NONE` otherwise).
    pub src_host: u32,
    pub dst_host: u32,
    /// Picoseconds per byte.
    pub t_byte: u32,
}

/// The static structure the simulator runs on.
#[derive(Clone, Debug)]
pub(crate) struct SimNet {
    pub chans: Vec<Chan>,
    /// Per switch: offset of its port 0 in `in_ch`; one extra entry at the end.
    pub sw_base: Vec<u32>,
    /// Per (switch, port number): the channel arriving at that port (`NONE` if uncabled).
    pub in_ch: Vec<u32>,
    /// Hosts: end ports cabled to a switch, as indices into `Fabric::end_ports`.
    pub host_ep: Vec<u32>,
    /// Per host: its injection channel.
    pub host_ch: Vec<u32>,
    /// Per end port: its host index (`NONE` for end ports that are not hosts).
    pub ep_host: Vec<u32>,
}

impl SimNet {
    pub fn new(f: &Fabric, plane: &Plane, t_byte: &dyn Fn(ChannelId) -> u32) -> SimNet {
        let nch = f.links.len() * 2;
        let mut ep_host = vec![NONE; f.end_ports.len()];
        let mut host_ep = Vec::new();
        let mut host_ch = Vec::new();
        for e in 0..f.end_ports.len() as u32 {
            let a = plane.attach(e);
            if a.sw != NONE {
                ep_host[e as usize] = host_ep.len() as u32;
                host_ep.push(e);
                host_ch.push(a.ch.0);
            }
        }
        let side = |p: PortId| -> (u32, u8, u32) {
            let port = f.port(p);
            let sw = f.switch_of(port.node).map_or(NONE, |s| s.0);
            let host = plane
                .end_index(p)
                .map(|e| ep_host[e as usize])
                .unwrap_or(NONE);
            (sw, port.num, host)
        };
        let chans = (0..nch as u32)
            .map(|c| {
                let ch = ChannelId(c);
                let (src_sw, src_port, src_host) = side(f.channel_src(ch));
                let (dst_sw, dst_port, dst_host) = side(f.channel_dst(ch));
                Chan {
                    src_sw,
                    src_port,
                    dst_sw,
                    dst_port,
                    src_host,
                    dst_host,
                    t_byte: t_byte(ch),
                }
            })
            .collect();
        let mut sw_base = Vec::with_capacity(f.num_switches() + 1);
        let mut in_ch = Vec::new();
        for &n in &f.switches {
            sw_base.push(in_ch.len() as u32);
            for p in 0..=f.node(n).nports {
                let c = f
                    .out_channel(f.port_id(n, p))
                    .map(|c| c.reverse().0)
                    .unwrap_or(NONE);
                in_ch.push(if p == 0 { NONE } else { c });
            }
        }
        sw_base.push(in_ch.len() as u32);
        SimNet {
            chans,
            sw_base,
            in_ch,
            host_ep,
            host_ch,
            ep_host,
        }
    }

    /// The channel arriving at port `p` of switch index `s`.
    #[inline]
    pub fn in_channel(&self, s: u32, p: u8) -> u32 {
        self.in_ch[(self.sw_base[s as usize] + p as u32) as usize]
    }

    /// Ports of switch `s` plus port 0.
    #[inline]
    pub fn ports(&self, s: u32) -> u32 {
        self.sw_base[s as usize + 1] - self.sw_base[s as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::rng::Rng;
    use std::collections::VecDeque;

    /// Random pushes, pops and drains on a few queues against `VecDeque`s, up to each
    /// queue's capacity: front, length, order and the entries behind the front all agree.
    #[test]
    fn front_rings_behave_as_fifo_queues() {
        for cap in [1usize, 2, 3, 16] {
            let n = 5;
            let mut r = FrontRings::new(n, cap);
            let mut hdr = vec![FrontHdr::EMPTY; n];
            let mut model: Vec<VecDeque<u32>> = vec![VecDeque::new(); n];
            let mut rng = Rng::new(cap as u64);
            for step in 0..20_000u32 {
                let q = rng.below(n as u64) as usize;
                match rng.below(10) {
                    0..=4 if model[q].len() < cap => {
                        r.push(q, &mut hdr[q], step);
                        model[q].push_back(step);
                    }
                    9 => assert_eq!(
                        r.drain(q, &mut hdr[q]),
                        model[q].drain(..).collect::<Vec<_>>()
                    ),
                    _ => assert_eq!(r.pop(q, &mut hdr[q]), model[q].pop_front()),
                }
                assert_eq!(hdr[q].len(), model[q].len());
                assert_eq!(r.front(hdr[q]), model[q].front().copied());
                assert!(r.iter(q, hdr[q]).eq(model[q].iter().copied()));
            }
        }
    }
}
