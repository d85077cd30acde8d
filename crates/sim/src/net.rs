//! The simulated network: static structure (channels, switch ports, hosts) and the
//! fixed-capacity ring buffers of packet ids that hold every VL queue.

use fabric::{ChannelId, Fabric, PortId};
use routing::forward::{Plane, NONE};

/// Fixed-capacity FIFO rings of `u32`, all in one array: queue `q` owns
/// `buf[q << shift .. (q + 1) << shift]`.
#[derive(Clone, Debug)]
pub(crate) struct Rings {
    shift: u32,
    buf: Vec<u32>,
    head: Vec<u16>,
    len: Vec<u16>,
}

impl Rings {
    /// `n` queues of at least `cap` entries each.
    pub fn new(n: usize, cap: usize) -> Self {
        let cap = cap.max(1).next_power_of_two();
        Rings {
            shift: cap.trailing_zeros(),
            buf: vec![0; n << cap.trailing_zeros()],
            head: vec![0; n],
            len: vec![0; n],
        }
    }
    #[inline]
    pub fn cap(&self) -> usize {
        1 << self.shift
    }
    #[inline]
    pub fn len(&self, q: usize) -> usize {
        self.len[q] as usize
    }
    #[inline]
    pub fn front(&self, q: usize) -> Option<u32> {
        if self.len[q] == 0 {
            None
        } else {
            Some(self.buf[(q << self.shift) + self.head[q] as usize])
        }
    }
    #[inline]
    pub fn push(&mut self, q: usize, v: u32) {
        let cap = self.cap();
        debug_assert!((self.len[q] as usize) < cap, "ring {q} overflows");
        let at = (self.head[q] as usize + self.len[q] as usize) & (cap - 1);
        self.buf[(q << self.shift) + at] = v;
        self.len[q] += 1;
    }
    #[inline]
    pub fn pop(&mut self, q: usize) -> Option<u32> {
        let v = self.front(q)?;
        self.head[q] = ((self.head[q] as usize + 1) & (self.cap() - 1)) as u16;
        self.len[q] -= 1;
        Some(v)
    }
    /// Prefetches queue `q`'s head entry and its length.
    #[inline]
    pub fn prefetch(&self, q: usize) {
        if let Some(&h) = self.head.get(q) {
            prefetch_index::prefetch_index(&self.buf, (q << self.shift) + h as usize);
            prefetch_index::prefetch_index(&self.len, q);
        }
    }
    /// The entries of queue `q`, front first.
    pub fn iter(&self, q: usize) -> impl Iterator<Item = u32> + '_ {
        let cap = self.cap();
        (0..self.len[q] as usize)
            .map(move |i| self.buf[(q << self.shift) + ((self.head[q] as usize + i) & (cap - 1))])
    }
    /// Empties queue `q`, returning its entries.
    pub fn drain(&mut self, q: usize) -> Vec<u32> {
        let v: Vec<u32> = self.iter(q).collect();
        self.len[q] = 0;
        self.head[q] = 0;
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
pub(crate) struct Net {
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

impl Net {
    pub fn new(f: &Fabric, plane: &Plane, t_byte: &dyn Fn(ChannelId) -> u32) -> Net {
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
            let sw = f.switch_index[port.node.idx()];
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
        Net {
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
