//! Fault scenarios as masks over an immutable [`Fabric`], so that thousands of scenarios can
//! share one fabric.

use crate::model::*;
use fixedbitset::FixedBitSet;

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
