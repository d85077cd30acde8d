//! The switch-level paths of destination-based tables, as the VL engines need them.
//!
//! In InfiniBand every end port on one switch follows the same path toward a destination LID,
//! so a *path* here is (source switch, destination LID): the inter-switch channels the tables
//! send a packet over from the source switch to the destination's switch. [`Paths`] collects
//! them once, walked through [`crate::forward`], in a flat arena (channel ids, one `u32` per
//! hop), so engines can try several orders over them without walking again.
//!
//! Only live end ports' LIDs are destinations and only switches with live end ports are
//! sources (what the checker walks); pairs on one switch have no inter-switch hop and no path.
//! A source whose walk does not arrive is counted in [`Paths::broken`], not stored.

use crate::forward::{Control, Hop, WalkEnd};
use crate::tables::Routing;
use crate::walk::WalkContext;
use fabric::{ChannelId, Fabric, FaultMask, Lid};

/// Every (source switch, destination LID) path of a routing. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    /// Per path: source switch index, destination LID, index of the destination end port and
    /// the switch it hangs off.
    pub src: Vec<u32>,
    pub dlid: Vec<Lid>,
    pub dst: Vec<u32>,
    pub dst_sw: Vec<u32>,
    start: Vec<u32>,
    chans: Vec<u32>,
    /// Destination LIDs in the order their paths are stored, with their first path index.
    pub dests: Vec<(Lid, u32)>,
    /// (source switch, destination LID) walks that did not arrive.
    pub broken: u64,
}

impl Paths {
    /// Walks every path of `r` on `f` under `mask`.
    pub fn of(f: &Fabric, r: &Routing, mask: Option<&FaultMask>) -> Paths {
        let net = WalkContext::new(f, r, mask);
        let fw = net.forward();
        let mut p = Paths {
            start: vec![0],
            ..Paths::default()
        };
        let mut buf: Vec<u32> = Vec::new();
        for d in &net.dests {
            let target = net.dest_port(d);
            let dsw = net.ep_sw(d.ep);
            p.dests.push((d.lid, p.src.len() as u32));
            for &s in &net.src_switches {
                if s == dsw {
                    continue;
                }
                buf.clear();
                let end = fw.walk_from(&fw.column(d.lid), s, 0, target, |st| {
                    if matches!(st.to, Hop::Switch { .. }) {
                        buf.push(st.ch.0);
                    }
                    Control::Continue
                });
                if !matches!(end, WalkEnd::Delivered { .. }) {
                    p.broken += 1;
                    continue;
                }
                p.src.push(s);
                p.dlid.push(d.lid);
                p.dst.push(d.ep);
                p.dst_sw.push(dsw);
                p.chans.extend_from_slice(&buf);
                p.start.push(p.chans.len() as u32);
            }
        }
        p
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// The inter-switch channels of path `i`, in order.
    #[inline]
    pub fn chans(&self, i: usize) -> &[u32] {
        &self.chans[self.start[i] as usize..self.start[i + 1] as usize]
    }

    /// Switch hops of path `i`.
    #[inline]
    pub fn hops(&self, i: usize) -> usize {
        (self.start[i + 1] - self.start[i]) as usize
    }

    /// The longest path, in switch hops (0 without paths).
    pub fn max_hops(&self) -> usize {
        (0..self.len()).map(|i| self.hops(i)).max().unwrap_or(0)
    }

    /// The (switch index, input port, output port) of hop `k` of path `i` (input port 0 at
    /// the source switch, where packets come from end ports).
    #[inline]
    pub fn hop_ports(&self, f: &Fabric, i: usize, k: usize) -> (u32, u8, u8) {
        let ch = self.chans(i);
        let c = ChannelId(ch[k]);
        let sp = f.port(f.channel_src(c));
        let inp = if k == 0 {
            0
        } else {
            f.port(f.channel_dst(ChannelId(ch[k - 1]))).num
        };
        (f.switch_of(sp.node).map_or(u32::MAX, |s| s.0), inp, sp.num)
    }
}

/// Writes `sl_of_path` into per-pair path SLs: every live end port on a path's source switch
/// gets that path's SL toward its destination LID; all other pairs keep `default`.
pub fn path_sls(
    f: &Fabric,
    r: &Routing,
    paths: &Paths,
    sl_of_path: impl Fn(usize) -> u8,
    default: u8,
) -> crate::tables::PathSl {
    let stride = r.stride();
    let ne = f.end_ports.len();
    let mut sl = vec![default; ne * stride];
    // End ports per switch, ascending.
    let mut on: Vec<Vec<u32>> = vec![Vec::new(); f.num_switches()];
    for (e, &p) in f.end_ports.iter().enumerate() {
        if let Some((s, _)) = crate::tables::end_port_switch(f, p) {
            on[s.idx()].push(e as u32);
        }
    }
    for i in 0..paths.len() {
        let v = sl_of_path(i);
        let lid = paths.dlid[i] as usize;
        for &e in &on[paths.src[i] as usize] {
            if let Some(x) = sl.get_mut(e as usize * stride + lid) {
                *x = v;
            }
        }
    }
    crate::tables::PathSl::PerPair { stride, sl }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{by_name, RouteOptions};

    #[test]
    fn paths_match_pair_walks() {
        let f = crate::fault::test_fabric("torus 3x3 hcas=2");
        let r = by_name("minhop")
            .unwrap()
            .route(&f, &FaultMask::none(&f), &RouteOptions::default())
            .unwrap();
        let p = Paths::of(&f, &r, None);
        // 9 source switches, 18 destination LIDs, 8 other switches each.
        assert_eq!(p.len(), 18 * 8);
        assert_eq!(p.broken, 0);
        assert_eq!(p.max_hops(), 2);
        for i in 0..p.len() {
            // Against the checker's pair walk from an end port on the source switch.
            let src_ep = (0..f.end_ports.len())
                .find(|&e| {
                    crate::tables::end_port_switch(&f, f.end_ports[e]).map(|x| x.0)
                        == Some(fabric::SwitchIdx(p.src[i]))
                })
                .unwrap();
            let w = crate::walk::walk_pair(&f, &r, None, f.end_ports[src_ep], p.dlid[i]);
            assert!(w.delivered());
            let inner: Vec<u32> = w.channels[1..w.channels.len() - 1]
                .iter()
                .map(|c| c.0)
                .collect();
            assert_eq!(p.chans(i), &inner[..]);
            let (s0, inp, _) = p.hop_ports(&f, i, 0);
            assert_eq!((s0, inp), (p.src[i], 0));
        }
        let sls = path_sls(&f, &r, &p, |i| (p.hops(i) % 3) as u8, 7);
        let e0 = f.end_ports[0];
        let own = f.port(e0).lid;
        assert_eq!(sls.get(0, own), 7, "no path to itself: the default");
    }
}
