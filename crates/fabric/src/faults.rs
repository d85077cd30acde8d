//! Faults: a failed cable or switch ([`Fault`]), fault scenarios as masks over an immutable
//! [`Fabric`] (so that thousands of scenarios can share one fabric), and what a mask leaves
//! connected ([`switch_components`]).

use crate::model::*;
use fixedbitset::FixedBitSet;
use serde::Serialize;

/// One failure: a cable, or a switch with every cable on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Fault {
    Link(LinkId),
    Switch(NodeId),
}

/// `name/port-name/port` for a link, as `fault` and the reports name cables.
pub fn link_name(f: &Fabric, l: LinkId) -> String {
    let k = f.link(l);
    let (a, b) = (f.port(k.a), f.port(k.b));
    format!(
        "{}/{}-{}/{}",
        f.node(a.node).name,
        a.num,
        f.node(b.node).name,
        b.num
    )
}

/// Dead links and dead nodes. A channel is alive when its link and both end nodes are alive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultMask {
    dead_links: FixedBitSet,
    dead_nodes: FixedBitSet,
}

impl FaultMask {
    /// No faults.
    pub fn none(f: &Fabric) -> Self {
        FaultMask {
            dead_links: FixedBitSet::with_capacity(f.links.len()),
            dead_nodes: FixedBitSet::with_capacity(f.nodes.len()),
        }
    }
    pub fn fail_link(&mut self, l: LinkId) {
        self.dead_links.insert(l.idx());
    }
    pub fn fail_node(&mut self, n: NodeId) {
        self.dead_nodes.insert(n.idx());
    }
    /// Marks what `fault` fails: the link, or the switch.
    pub fn fail(&mut self, fault: Fault) {
        match fault {
            Fault::Link(l) => self.fail_link(l),
            Fault::Switch(n) => self.fail_node(n),
        }
    }
    /// The mask of `faults` alone.
    pub fn of(f: &Fabric, faults: &[Fault]) -> Self {
        let mut m = FaultMask::none(f);
        for &x in faults {
            m.fail(x);
        }
        m
    }
    #[inline]
    pub fn link_dead(&self, l: LinkId) -> bool {
        self.dead_links.contains(l.idx())
    }
    #[inline]
    pub fn node_dead(&self, n: NodeId) -> bool {
        self.dead_nodes.contains(n.idx())
    }
    /// True when the channel can carry traffic.
    #[inline]
    pub fn channel_alive(&self, f: &Fabric, c: ChannelId) -> bool {
        let l = c.link();
        if self.dead_links.contains(l.idx()) {
            return false;
        }
        if self.dead_nodes.is_clear() {
            return true;
        }
        let link = &f.links[l.idx()];
        !self.dead_nodes.contains(f.ports[link.a.idx()].node.idx())
            && !self.dead_nodes.contains(f.ports[link.b.idx()].node.idx())
    }
    /// True when port `p` is cabled and its link can carry traffic.
    #[inline]
    pub fn port_link_alive(&self, f: &Fabric, p: PortId) -> bool {
        f.out_channel(p).is_some_and(|c| self.channel_alive(f, c))
    }
    pub fn is_empty(&self) -> bool {
        self.dead_links.is_clear() && self.dead_nodes.is_clear()
    }
    pub fn dead_links(&self) -> impl Iterator<Item = LinkId> + '_ {
        self.dead_links.ones().map(|i| LinkId(i as u32))
    }
    pub fn dead_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.dead_nodes.ones().map(|i| NodeId(i as u32))
    }
}

/// Per switch index, a label of its connected component among the live switches and live
/// links under `mask` (switches in one component share a label; `u32::MAX` for a dead
/// switch), and how many components there are.
pub fn switch_components(f: &Fabric, mask: &FaultMask) -> (Vec<u32>, usize) {
    let ns = f.num_switches();
    let mut parent: Vec<u32> = (0..ns as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            p[x as usize] = p[p[x as usize] as usize];
            x = p[x as usize];
        }
        x
    }
    let alive = |s: u32| !mask.node_dead(f.switches[s as usize]);
    let mut comps = (0..ns as u32).filter(|&s| alive(s)).count();
    for (l, k) in f.links.iter().enumerate() {
        if mask.link_dead(LinkId(l as u32)) {
            continue;
        }
        let (Some(a), Some(b)) = (f.switch_of(f.port(k.a).node), f.switch_of(f.port(k.b).node))
        else {
            continue;
        };
        let (a, b) = (a.0, b.0);
        if !alive(a) || !alive(b) {
            continue;
        }
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        if ra != rb {
            parent[ra as usize] = rb;
            comps -= 1;
        }
    }
    let label = (0..ns as u32)
        .map(|s| {
            if alive(s) {
                find(&mut parent, s)
            } else {
                u32::MAX
            }
        })
        .collect();
    (label, comps)
}
