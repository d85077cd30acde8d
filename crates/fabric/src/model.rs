//! The fabric model: nodes, ports, links (each a pair of directed channels) and LIDs.
//!
//! Everything is addressed by dense `u32` ids into flat arrays:
//! - `NodeId` indexes [`Fabric::nodes`];
//! - `PortId` indexes [`Fabric::ports`]; node `n` owns ports `port_base[n] ..= port_base[n] + nports`
//!   (port number 0 included for every node, so `port_id(n, p) = port_base[n] + p`);
//! - `LinkId` indexes [`Fabric::links`]; link `l` is the two directed channels
//!   `ChannelId(2l)` (from `links[l].a` to `links[l].b`) and `ChannelId(2l + 1)` (back).
//!   So `c ^ 1` is the reverse channel of `c`.
//!
//! Library code builds a `Fabric` once through [`crate::FabricBuilder`] and never changes one in
//! place (`with_lmc` and `with_end_lmc` return copies; the fields are public for readers); a
//! fault scenario is a [`crate::FaultMask`] over it.

use serde::{Deserialize, Serialize};

/// Dense node index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);
/// Dense port index (not the port number on the node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PortId(pub u32);
/// Dense link index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkId(pub u32);
/// Dense switch index: the position of a switch in [`Fabric::switches`] (not its `NodeId`).
/// Flat per-switch arrays (LFT rows, distance matrices, walk stamps) are indexed by it and
/// store it as a raw `u32`; interfaces take and return it typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SwitchIdx(pub u32);
/// Directed channel: `2 * link` runs a→b, `2 * link + 1` runs b→a.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChannelId(pub u32);

impl NodeId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl PortId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl SwitchIdx {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl LinkId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
    /// The channel running from `a` to `b`.
    #[inline]
    pub fn forward(self) -> ChannelId {
        ChannelId(self.0 * 2)
    }
}
impl ChannelId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
    #[inline]
    pub fn link(self) -> LinkId {
        LinkId(self.0 >> 1)
    }
    #[inline]
    pub fn reverse(self) -> ChannelId {
        ChannelId(self.0 ^ 1)
    }
}

/// A local identifier. 0 means "not assigned".
pub type Lid = u16;
/// Highest unicast LID.
pub const MAX_UNICAST_LID: Lid = 0xBFFF;
/// Highest LMC InfiniBand allows.
pub const MAX_LMC: u8 = 7;
/// "No port" marker in port-number fields (also an LFT's "no route").
pub const NO_PORT: u8 = 0xFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Switch,
    Ca,
    Router,
}

impl NodeKind {
    /// The keyword used by ibnetdiscover / ibsim (`Switch`, `Ca`, `Rt`).
    pub fn keyword(self) -> &'static str {
        match self {
            NodeKind::Switch => "Switch",
            NodeKind::Ca => "Ca",
            NodeKind::Router => "Rt",
        }
    }
    /// True for end nodes (CAs and routers): their ports carry their own LIDs.
    pub fn is_end(self) -> bool {
        !matches!(self, NodeKind::Switch)
    }
}

/// Link width as reported by ibnetdiscover (`4x`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Width {
    X1,
    X2,
    #[default]
    X4,
    X8,
    X12,
    Unknown,
}

impl Width {
    pub fn as_str(self) -> &'static str {
        match self {
            Width::X1 => "1x",
            Width::X2 => "2x",
            Width::X4 => "4x",
            Width::X8 => "8x",
            Width::X12 => "12x",
            Width::Unknown => "??",
        }
    }
    pub fn parse(s: &str) -> Option<Width> {
        Some(match s {
            "1x" | "1X" => Width::X1,
            "2x" | "2X" => Width::X2,
            "4x" | "4X" => Width::X4,
            "8x" | "8X" => Width::X8,
            "12x" | "12X" => Width::X12,
            "??" | "???" => Width::Unknown,
            _ => return None,
        })
    }
    /// Lanes, for bandwidth figures (Unknown counts as 4).
    pub fn lanes(self) -> u32 {
        match self {
            Width::X1 => 1,
            Width::X2 => 2,
            Width::X4 | Width::Unknown => 4,
            Width::X8 => 8,
            Width::X12 => 12,
        }
    }
}

/// Link speed per lane as reported by ibnetdiscover (`SDR` .. `XDR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Speed {
    #[default]
    Sdr,
    Ddr,
    Qdr,
    Fdr10,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
    Unknown,
}

impl Speed {
    pub fn as_str(self) -> &'static str {
        match self {
            Speed::Sdr => "SDR",
            Speed::Ddr => "DDR",
            Speed::Qdr => "QDR",
            Speed::Fdr10 => "FDR10",
            Speed::Fdr => "FDR",
            Speed::Edr => "EDR",
            Speed::Hdr => "HDR",
            Speed::Ndr => "NDR",
            Speed::Xdr => "XDR",
            Speed::Unknown => "???",
        }
    }
    pub fn parse(s: &str) -> Option<Speed> {
        Some(match s {
            "SDR" => Speed::Sdr,
            "DDR" => Speed::Ddr,
            "QDR" => Speed::Qdr,
            "FDR10" => Speed::Fdr10,
            "FDR" => Speed::Fdr,
            "EDR" => Speed::Edr,
            "HDR" => Speed::Hdr,
            "NDR" => Speed::Ndr,
            "XDR" => Speed::Xdr,
            "???" | "??" => Speed::Unknown,
            _ => return None,
        })
    }
    /// Nominal data rate per lane in Gb/s (Unknown counts as SDR).
    pub fn gbps_per_lane(self) -> f64 {
        match self {
            Speed::Sdr | Speed::Unknown => 2.0,
            Speed::Ddr => 4.0,
            Speed::Qdr | Speed::Fdr10 => 8.0,
            Speed::Fdr => 13.64,
            Speed::Edr => 25.0,
            Speed::Hdr => 50.0,
            Speed::Ndr => 100.0,
            Speed::Xdr => 200.0,
        }
    }
}

/// One node (switch, channel adapter or router).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub kind: NodeKind,
    /// Node GUID.
    pub guid: u64,
    /// System image GUID (0 when unknown).
    pub sys_guid: u64,
    /// The node's identifier in the source file (ibsim: the quoted id such as `S_0_0`;
    /// ibnetdiscover: `S-0002c9...`). Unique within a fabric.
    pub name: String,
    /// Node description (may be empty; may contain spaces and `#`).
    pub desc: String,
    /// Number of external ports (port numbers 1..=nports).
    pub nports: u8,
    /// Vendor and device id, when the input gives them.
    pub vendor_id: u32,
    pub device_id: u32,
    /// Switch only: port 0 is an enhanced port 0.
    pub enhanced_sp0: bool,
}

/// One port of a node. Port number 0 exists for every node (a switch's management port);
/// on CAs and routers it is unused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    pub node: NodeId,
    pub num: u8,
    /// Port GUID (0 when the node kind has none for this port: switch external ports share the
    /// switch's port-0 GUID, which is stored on port 0).
    pub guid: u64,
    /// Base LID (0 = none). Switches: only port 0 has a LID.
    pub lid: Lid,
    pub lmc: u8,
    /// The link on this port, if cabled.
    pub link: Option<LinkId>,
}

/// A physical link between two ports; both directions are modelled as channels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub a: PortId,
    pub b: PortId,
    pub width: Width,
    pub speed: Speed,
}

/// Topology knowledge a generator has and a file reader does not: coordinates, tree levels,
/// link classes, roots. All vectors are either empty or indexed by `NodeId`/`LinkId`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopoHints {
    /// A short description such as `torus 4x4` (empty if unknown).
    pub kind: String,
    /// Per node: coordinates (torus/mesh/hyperx; empty for other nodes or kinds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub coords: Vec<Vec<u32>>,
    /// Torus/mesh/hyperx dimensions and wrap-around flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrap: Vec<bool>,
    /// Per node: tree level (0 = roots) or group index (dragonfly); `u32::MAX` = none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub level: Vec<u32>,
    /// Per link: a class index into `link_class_names` (e.g. "local", "global", "L1-L2").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_class: Vec<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_class_names: Vec<String>,
    /// Root switches (fat trees).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<NodeId>,
}

/// An immutable InfiniBand fabric.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fabric {
    pub nodes: Vec<Node>,
    /// `port_base[n]` is the `PortId` of port 0 of node `n`; one extra entry at the end.
    pub port_base: Vec<u32>,
    pub ports: Vec<Port>,
    pub links: Vec<Link>,
    pub hints: TopoHints,
    /// Derived: switch node ids in node order.
    #[serde(skip)]
    pub switches: Vec<NodeId>,
    /// Derived: for every node, its index among switches (`u32::MAX` for non-switches);
    /// typed: [`Fabric::switch_of`].
    #[serde(skip)]
    pub(crate) switch_index: Vec<u32>,
    /// Derived: end ports (CA/router ports with a LID-carrying role: every port numbered ≥ 1
    /// of a CA or router), in node then port order.
    #[serde(skip)]
    pub end_ports: Vec<PortId>,
    /// Derived: switch adjacency in CSR form over *switch indices*:
    /// the out-channels of switch `s` are `sw_adj[sw_adj_start[s]..sw_adj_start[s+1]]`,
    /// each leading to another switch.
    #[serde(skip)]
    pub sw_adj_start: Vec<u32>,
    #[serde(skip)]
    pub sw_adj: Vec<ChannelId>,
    /// Derived: LID → port owning it (`u32::MAX` = unused). Covers every LID of every LMC range.
    #[serde(skip)]
    pub lid_owner: Vec<u32>,
}

impl Fabric {
    #[inline]
    pub fn node(&self, n: NodeId) -> &Node {
        &self.nodes[n.idx()]
    }
    #[inline]
    pub fn port(&self, p: PortId) -> &Port {
        &self.ports[p.idx()]
    }
    #[inline]
    pub fn link(&self, l: LinkId) -> &Link {
        &self.links[l.idx()]
    }
    /// `PortId` of port number `num` on node `n` (no bounds check on `num` beyond debug).
    #[inline]
    pub fn port_id(&self, n: NodeId, num: u8) -> PortId {
        debug_assert!(num <= self.nodes[n.idx()].nports);
        PortId(self.port_base[n.idx()] + num as u32)
    }
    /// Ports of node `n`, port 0 first.
    pub fn node_ports(&self, n: NodeId) -> impl Iterator<Item = PortId> + '_ {
        (self.port_base[n.idx()]..self.port_base[n.idx() + 1]).map(PortId)
    }
    /// Port a channel leaves from.
    #[inline]
    pub fn channel_src(&self, c: ChannelId) -> PortId {
        let l = &self.links[c.link().idx()];
        if c.0 & 1 == 0 {
            l.a
        } else {
            l.b
        }
    }
    /// Port a channel arrives at.
    #[inline]
    pub fn channel_dst(&self, c: ChannelId) -> PortId {
        self.channel_src(c.reverse())
    }
    /// The channel leaving port `p`, if cabled.
    #[inline]
    pub fn out_channel(&self, p: PortId) -> Option<ChannelId> {
        let l = self.ports[p.idx()].link?;
        let c = l.forward();
        Some(if self.links[l.idx()].a == p {
            c
        } else {
            c.reverse()
        })
    }
    /// The port at the other end of the cable on `p`.
    #[inline]
    pub fn remote(&self, p: PortId) -> Option<PortId> {
        self.out_channel(p).map(|c| self.channel_dst(c))
    }
    pub fn num_switches(&self) -> usize {
        self.switches.len()
    }
    pub fn is_switch(&self, n: NodeId) -> bool {
        self.nodes[n.idx()].kind == NodeKind::Switch
    }
    /// Out-channels of switch `s` that lead to other switches.
    #[inline]
    pub fn switch_links(&self, s: SwitchIdx) -> &[ChannelId] {
        let s = s.idx();
        &self.sw_adj[self.sw_adj_start[s] as usize..self.sw_adj_start[s + 1] as usize]
    }
    /// The switch index of node `n`, `None` when it is no switch.
    #[inline]
    pub fn switch_of(&self, n: NodeId) -> Option<SwitchIdx> {
        match self.switch_index.get(n.idx()) {
            Some(&s) if s != u32::MAX => Some(SwitchIdx(s)),
            _ => None,
        }
    }
    /// The switch channel `c` leaves, `None` when it leaves an end node.
    #[inline]
    pub fn src_switch(&self, c: ChannelId) -> Option<SwitchIdx> {
        self.switch_of(self.ports[self.channel_src(c).idx()].node)
    }
    /// The switch channel `c` leads to, `None` when it leads to an end node.
    #[inline]
    pub fn dst_switch(&self, c: ChannelId) -> Option<SwitchIdx> {
        self.switch_of(self.ports[self.channel_dst(c).idx()].node)
    }
    /// The node of switch `s`.
    #[inline]
    pub fn switch_node(&self, s: SwitchIdx) -> NodeId {
        self.switches[s.idx()]
    }
    /// Every switch index, in order.
    pub fn switch_ids(&self) -> impl Iterator<Item = SwitchIdx> {
        (0..self.switches.len() as u32).map(SwitchIdx)
    }
    /// The LID-owning port of a node: a switch's port 0, otherwise `None` (CAs own LIDs per port).
    pub fn switch_lid(&self, n: NodeId) -> Lid {
        self.ports[self.port_base[n.idx()] as usize].lid
    }
    /// The smallest LMC of the end ports (0 without end ports): the virtual LIDs every
    /// destination has.
    pub fn end_lmc(&self) -> u8 {
        self.end_ports
            .iter()
            .map(|&p| self.port(p).lmc)
            .min()
            .unwrap_or(0)
    }
    /// The highest LID assigned (including LMC ranges).
    pub fn max_lid(&self) -> Lid {
        (self.lid_owner.len().saturating_sub(1)) as Lid
    }
    /// Which port owns `lid` (base LID or any LID of its LMC range).
    #[inline]
    pub fn lid_port(&self, lid: Lid) -> Option<PortId> {
        match self.lid_owner.get(lid as usize) {
            Some(&p) if p != u32::MAX => Some(PortId(p)),
            _ => None,
        }
    }
    /// Finds a node by name (linear scan; callers that need many lookups should build a map).
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| NodeId(i as u32))
    }
    /// How to show node `n` to people: its name, unless the name only repeats its GUID (the
    /// `S-f452140300e8c4a0` / `H-…` ids of ibnetdiscover dumps) and it has a description
    /// (`MF0;ib5:SX6036/U1`, `node01 HCA-1`): then the description.
    pub fn label(&self, n: NodeId) -> &str {
        let node = self.node(n);
        let id_only = node.name.split_once('-').is_some_and(|(k, hex)| {
            matches!(k, "S" | "H" | "R")
                && hex.len() == 16
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
        });
        if id_only && !node.desc.trim().is_empty() {
            &node.desc
        } else {
            &node.name
        }
    }
    /// The nodes whose description gives `short` as a short name ([`short_names`]), compared
    /// without regard to case: what operators call a switch (`ib5` for `MF0;ib5:SX6036/U1`)
    /// or a host (`node01` for `node01 HCA-1`).
    pub fn nodes_by_short_name(&self, short: &str) -> Vec<NodeId> {
        let short = short.trim();
        if short.is_empty() {
            return Vec::new();
        }
        (0..self.nodes.len())
            .filter(|&i| short_names(&self.nodes[i].desc).any(|s| s.eq_ignore_ascii_case(short)))
            .map(|i| NodeId(i as u32))
            .collect()
    }
    /// The GUID port `p` shows to a subnet manager: a switch's ports share port 0's GUID (its
    /// node GUID when port 0 has none), a CA or router port has its own.
    pub fn shown_port_guid(&self, p: PortId) -> u64 {
        let port = self.port(p);
        if self.is_switch(port.node) {
            let g = self.port(self.port_id(port.node, 0)).guid;
            if g != 0 {
                g
            } else {
                self.node(port.node).guid
            }
        } else {
            port.guid
        }
    }
    /// Finds a node by GUID (linear scan).
    pub fn node_by_guid(&self, guid: u64) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.guid == guid)
            .map(|i| NodeId(i as u32))
    }
    /// The switch an end port is cabled to, with the switch-side port.
    pub fn attached_switch(&self, p: PortId) -> Option<PortId> {
        let r = self.remote(p)?;
        if self.is_switch(self.ports[r.idx()].node) {
            Some(r)
        } else {
            None
        }
    }
    /// Counts used by `info` and tests.
    pub fn count(&self, kind: NodeKind) -> usize {
        self.nodes.iter().filter(|n| n.kind == kind).count()
    }
}

/// True for CA node descriptions of service nodes that are not compute nodes (SHARP
/// aggregation nodes, on every switch of real trees): a fat tree's shape is found from the
/// other CAs, and the metrics' distances from end-port switches leave them out.
pub fn is_service_ca(desc: &str) -> bool {
    desc.to_ascii_lowercase().contains("aggregation node")
}

/// The short names a node description gives: the host part of a description as NVIDIA /
/// Mellanox switches write it (`MF0;ib5:SX6036/U1` gives `ib5`, `MF0;MSPINE4-01:MQM8700/U1`
/// gives `MSPINE4-01`), and the first word of a description of several words (`node01` for
/// `node01 HCA-1`, `ufm01` for `ufm01 mlx5_0`).
pub fn short_names(desc: &str) -> impl Iterator<Item = &str> {
    let d = desc.trim();
    let host = d
        .split_once(';')
        .map_or(d, |(_, r)| r)
        .split_once(':')
        .map(|(h, _)| h.trim())
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace));
    let word = d
        .split_once(char::is_whitespace)
        .map(|(w, _)| w)
        .filter(|w| !w.is_empty() && Some(*w) != host);
    host.into_iter().chain(word)
}
