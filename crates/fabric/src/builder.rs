//! Building a [`Fabric`]: readers and generators add nodes and links here, then `build()`
//! checks consistency, fills in default GUIDs and LIDs and derives the flat indexes.

use crate::model::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::fmt;

/// A contradiction found while building a fabric. Readers attach file and line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError(pub String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BuildError {}

fn err<T>(msg: impl Into<String>) -> Result<T, BuildError> {
    Err(BuildError(msg.into()))
}

/// Options for `build()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildOptions {
    /// LMC given to end ports that have no LID in the input (switch port 0 always gets LMC 0).
    pub lmc: u8,
    /// Ignore every LID in the input and assign all LIDs afresh.
    pub reassign_lids: bool,
}

#[derive(Clone, Debug, Default)]
struct PortDraft {
    guid: u64,
    lid: Lid,
    lmc: u8,
    link: Option<u32>,
}

/// Mutable staging area for a fabric.
#[derive(Debug, Default)]
pub struct FabricBuilder {
    nodes: Vec<Node>,
    ports: Vec<Vec<PortDraft>>,
    links: Vec<Link>,
    /// Link endpoints as (node, port number) while building.
    ends: Vec<[(NodeId, u8); 2]>,
    by_name: FxHashMap<String, NodeId>,
    by_guid: FxHashMap<u64, NodeId>,
    pub hints: TopoHints,
}

impl FabricBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }
    pub fn num_links(&self) -> usize {
        self.links.len()
    }

    /// Adds a node. Names must be unique; non-zero GUIDs must be unique.
    pub fn add_node(
        &mut self,
        kind: NodeKind,
        nports: u8,
        guid: u64,
        name: impl Into<String>,
        desc: impl Into<String>,
    ) -> Result<NodeId, BuildError> {
        let name = name.into();
        if nports == 0 || nports == u8::MAX {
            return err(format!(
                "node {name:?}: port count {nports} is out of range 1..=254"
            ));
        }
        let id = NodeId(self.nodes.len() as u32);
        if let Some(&other) = self.by_name.get(&name) {
            let _ = other;
            return err(format!("duplicate node name {name:?}"));
        }
        if guid != 0 {
            if let Some(&other) = self.by_guid.get(&guid) {
                return err(format!(
                    "duplicate node GUID {guid:#018x} (nodes {:?} and {name:?})",
                    self.nodes[other.idx()].name
                ));
            }
            self.by_guid.insert(guid, id);
        }
        self.by_name.insert(name.clone(), id);
        self.nodes.push(Node {
            kind,
            guid,
            sys_guid: 0,
            name,
            desc: desc.into(),
            nports,
            vendor_id: 0,
            device_id: 0,
            enhanced_sp0: false,
        });
        self.ports
            .push(vec![PortDraft::default(); nports as usize + 1]);
        Ok(id)
    }

    pub fn node(&self, n: NodeId) -> &Node {
        &self.nodes[n.idx()]
    }
    pub fn node_mut(&mut self, n: NodeId) -> &mut Node {
        &mut self.nodes[n.idx()]
    }
    pub fn find_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }
    pub fn find_guid(&self, guid: u64) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    fn check_port(&self, n: NodeId, port: u8) -> Result<(), BuildError> {
        let node = &self.nodes[n.idx()];
        if port > node.nports {
            return err(format!(
                "port {port} of {:?} is beyond its port count {}",
                node.name, node.nports
            ));
        }
        Ok(())
    }

    /// Sets a port GUID. Duplicate port GUIDs across different nodes are rejected at `build()`.
    pub fn set_port_guid(&mut self, n: NodeId, port: u8, guid: u64) -> Result<(), BuildError> {
        self.check_port(n, port)?;
        self.ports[n.idx()][port as usize].guid = guid;
        Ok(())
    }

    /// Sets a port's base LID and LMC (0 = unassigned; LID 0xFFFF is treated as unassigned).
    pub fn set_lid(&mut self, n: NodeId, port: u8, lid: u32, lmc: u8) -> Result<(), BuildError> {
        self.check_port(n, port)?;
        if lmc > MAX_LMC {
            return err(format!("LMC {lmc} is above the maximum {MAX_LMC}"));
        }
        let lid = if lid == 0xFFFF { 0 } else { lid };
        if lid > MAX_UNICAST_LID as u32 {
            return err(format!(
                "LID {lid:#x} is not a unicast LID (maximum {MAX_UNICAST_LID:#x})"
            ));
        }
        let p = &mut self.ports[n.idx()][port as usize];
        p.lid = lid as Lid;
        p.lmc = lmc;
        Ok(())
    }

    /// The node and port at the other end of `(n, port)`, if connected.
    pub fn peer(&self, n: NodeId, port: u8) -> Option<(NodeId, u8)> {
        let l = self.ports.get(n.idx())?.get(port as usize)?.link? as usize;
        let [x, y] = self.ends[l];
        Some(if x == (n, port) { y } else { x })
    }

    /// Connects two ports. Connecting the same pair again is accepted (returns the existing
    /// link) as long as width and speed agree, so readers may add each link from both ends.
    pub fn connect(
        &mut self,
        a: NodeId,
        pa: u8,
        b: NodeId,
        pb: u8,
        width: Width,
        speed: Speed,
    ) -> Result<LinkId, BuildError> {
        self.check_port(a, pa)?;
        self.check_port(b, pb)?;
        let (na, nb) = (&self.nodes[a.idx()].name, &self.nodes[b.idx()].name);
        if pa == 0 || pb == 0 {
            return err(format!(
                "port 0 cannot be cabled ({na:?}[{pa}] - {nb:?}[{pb}])"
            ));
        }
        if a == b && pa == pb {
            return err(format!("port {pa} of {na:?} is cabled to itself"));
        }
        let existing_a = self.peer(a, pa);
        let existing_b = self.peer(b, pb);
        match (existing_a, existing_b) {
            (Some(x), _) if x == (b, pb) => {
                let l = self.ports[a.idx()][pa as usize].link.unwrap();
                let link = &mut self.links[l as usize];
                if link.width != width
                    && width != Width::Unknown
                    && link.width != Width::Unknown
                {
                    return err(format!(
                        "the two ends of link {na:?}[{pa}] - {nb:?}[{pb}] disagree on width ({} vs {})",
                        link.width.as_str(),
                        width.as_str()
                    ));
                }
                if link.speed != speed
                    && speed != Speed::Unknown
                    && link.speed != Speed::Unknown
                {
                    return err(format!(
                        "the two ends of link {na:?}[{pa}] - {nb:?}[{pb}] disagree on speed ({} vs {})",
                        link.speed.as_str(),
                        speed.as_str()
                    ));
                }
                if link.width == Width::Unknown {
                    link.width = width;
                }
                if link.speed == Speed::Unknown {
                    link.speed = speed;
                }
                return Ok(LinkId(l));
            }
            (Some((xn, xp)), _) => {
                return err(format!(
                    "the two ends of a link disagree: {na:?}[{pa}] is already cabled to {:?}[{xp}], not {nb:?}[{pb}]",
                    self.nodes[xn.idx()].name
                ))
            }
            (None, Some((xn, xp))) => {
                return err(format!(
                    "the two ends of a link disagree: {nb:?}[{pb}] is already cabled to {:?}[{xp}], not {na:?}[{pa}]",
                    self.nodes[xn.idx()].name
                ))
            }
            (None, None) => {}
        }
        let l = self.links.len() as u32;
        self.links.push(Link {
            a: PortId(0),
            b: PortId(0),
            width,
            speed,
        });
        self.ends.push([(a, pa), (b, pb)]);
        self.ports[a.idx()][pa as usize].link = Some(l);
        self.ports[b.idx()][pb as usize].link = Some(l);
        Ok(LinkId(l))
    }

    /// Checks, fills defaults and derives indexes.
    pub fn build(self) -> Result<Fabric, BuildError> {
        self.build_with(BuildOptions::default())
    }

    pub fn build_with(mut self, opts: BuildOptions) -> Result<Fabric, BuildError> {
        if opts.lmc > MAX_LMC {
            return err(format!("LMC {} is above the maximum {MAX_LMC}", opts.lmc));
        }
        // Default GUIDs: a switch's port 0 carries the node GUID; CA/router port p gets
        // node GUID + p (ibsim's rule) when the input did not say.
        for node in &self.nodes {
            if node.kind.is_end()
                && node.guid != 0
                && node.guid.checked_add(node.nports as u64).is_none()
            {
                return err(format!(
                    "node {:?}: GUID {:#018x} leaves no room for its {} port GUIDs (node GUID + port)",
                    node.name, node.guid, node.nports
                ));
            }
        }
        // A default never takes a GUID the input gave (or an earlier default): a CA without
        // cabled ports in a dump lists no port GUIDs, and node GUID + 1 is often another
        // function's own port GUID (ConnectX-4 and later give port 1 the node GUID). Such a
        // port keeps GUID 0 (unknown).
        let mut taken: FxHashSet<u64> = self
            .ports
            .iter()
            .flatten()
            .map(|d| d.guid)
            .filter(|&g| g != 0)
            .collect();
        for (i, node) in self.nodes.iter().enumerate() {
            let ports = &mut self.ports[i];
            match node.kind {
                NodeKind::Switch => {
                    // (port 0 carries the node GUID: a real default, so a clash is an error)
                    if ports[0].guid == 0 {
                        ports[0].guid = node.guid;
                        taken.insert(node.guid);
                    }
                }
                _ => {
                    for (p, d) in ports.iter_mut().enumerate().skip(1) {
                        if d.guid == 0 && node.guid != 0 && taken.insert(node.guid + p as u64) {
                            d.guid = node.guid + p as u64;
                        }
                    }
                }
            }
        }
        drop(taken);
        // Duplicate port GUIDs are contradictions, except on the ports of one switch (which
        // share its port 0 GUID in some views).
        let mut seen: FxHashMap<u64, (NodeId, u8)> = FxHashMap::default();
        for (i, ports) in self.ports.iter().enumerate() {
            for (p, d) in ports.iter().enumerate() {
                if d.guid == 0 {
                    continue;
                }
                if let Some(&(on, op)) = seen.get(&d.guid) {
                    if on.idx() != i || self.nodes[i].kind != NodeKind::Switch {
                        return err(format!(
                            "duplicate port GUID {:#018x} on {:?}[{op}] and {:?}[{p}]",
                            d.guid,
                            self.nodes[on.idx()].name,
                            self.nodes[i].name
                        ));
                    }
                } else {
                    seen.insert(d.guid, (NodeId(i as u32), p as u8));
                }
            }
        }
        drop(seen);

        // Flatten ports.
        let mut port_base = Vec::with_capacity(self.nodes.len() + 1);
        let total: usize = self.ports.iter().map(|p| p.len()).sum();
        let mut ports = Vec::with_capacity(total);
        for (i, drafts) in self.ports.iter().enumerate() {
            port_base.push(ports.len() as u32);
            for (p, d) in drafts.iter().enumerate() {
                ports.push(Port {
                    node: NodeId(i as u32),
                    num: p as u8,
                    guid: d.guid,
                    lid: if opts.reassign_lids { 0 } else { d.lid },
                    lmc: if opts.reassign_lids { 0 } else { d.lmc },
                    link: d.link.map(LinkId),
                });
            }
        }
        port_base.push(ports.len() as u32);
        let mut links = self.links;
        for (l, ends) in self.ends.iter().enumerate() {
            let [(a, pa), (b, pb)] = *ends;
            links[l].a = PortId(port_base[a.idx()] + pa as u32);
            links[l].b = PortId(port_base[b.idx()] + pb as u32);
        }

        let mut fabric = Fabric {
            nodes: self.nodes,
            port_base,
            ports,
            links,
            hints: self.hints,
            switches: Vec::new(),
            switch_index: Vec::new(),
            end_ports: Vec::new(),
            sw_adj_start: Vec::new(),
            sw_adj: Vec::new(),
            lid_owner: Vec::new(),
        };
        assign_lids(&mut fabric, opts.lmc)?;
        derive(&mut fabric)?;
        Ok(fabric)
    }
}

/// Ports that need a LID: every switch's port 0, and every cabled CA/router port.
fn lid_ports(f: &Fabric) -> Vec<PortId> {
    let mut v = Vec::new();
    for (i, node) in f.nodes.iter().enumerate() {
        let n = NodeId(i as u32);
        if node.kind == NodeKind::Switch {
            v.push(f.port_id(n, 0));
        } else {
            for p in 1..=node.nports {
                let pid = f.port_id(n, p);
                if f.ports[pid.idx()].link.is_some() || f.ports[pid.idx()].lid != 0 {
                    v.push(pid);
                }
            }
        }
    }
    v
}

/// Keeps given LIDs (checking for overlaps) and assigns the rest in node order, switches'
/// port 0 with LMC 0, end ports with `lmc` in aligned blocks, lowest free block first.
fn assign_lids(f: &mut Fabric, lmc: u8) -> Result<(), BuildError> {
    let need = lid_ports(f);
    let mut owner: Vec<u32> = vec![u32::MAX; MAX_UNICAST_LID as usize + 1];
    owner[0] = u32::MAX - 1; // LID 0 is reserved
    let mut max_used = 0usize;
    // Pass 1: given LIDs.
    for &p in &need {
        let port = &f.ports[p.idx()];
        if port.lid == 0 {
            continue;
        }
        let base = port.lid as usize;
        // A LID not aligned to its LMC block is kept as given (OpenSM would report it).
        let n = 1usize << port.lmc;
        let end = base + n;
        if end - 1 > MAX_UNICAST_LID as usize {
            return err(format!(
                "LID range {base:#x}+{n} of {:?} port {} is beyond the unicast range",
                f.nodes[port.node.idx()].name,
                port.num
            ));
        }
        for (lid, o) in owner.iter_mut().enumerate().take(end).skip(base) {
            if *o != u32::MAX {
                let other = &f.ports[*o as usize];
                return err(format!(
                    "LID {lid:#x} is claimed twice: by {:?} port {} and {:?} port {}",
                    f.nodes[other.node.idx()].name,
                    other.num,
                    f.nodes[port.node.idx()].name,
                    port.num
                ));
            }
            *o = p.0;
        }
        max_used = max_used.max(end - 1);
    }
    // Pass 2: assign the missing ones.
    let mut next = [1usize; 8]; // per block size: lowest candidate
    for &p in &need {
        if f.ports[p.idx()].lid != 0 {
            continue;
        }
        let is_sw = f.nodes[f.ports[p.idx()].node.idx()].kind == NodeKind::Switch;
        let l = if is_sw { 0 } else { lmc };
        let n = 1usize << l;
        let mut base = next[l as usize].div_ceil(n) * n;
        loop {
            if base + n - 1 > MAX_UNICAST_LID as usize {
                return err(format!(
                    "out of unicast LIDs: {} ports need LIDs with LMC {lmc}",
                    need.len()
                ));
            }
            if owner[base..base + n].iter().all(|&o| o == u32::MAX) {
                break;
            }
            base += n;
        }
        for o in &mut owner[base..base + n] {
            *o = p.0;
        }
        next[l as usize] = base + n;
        max_used = max_used.max(base + n - 1);
        let port = &mut f.ports[p.idx()];
        port.lid = base as Lid;
        port.lmc = l;
    }
    owner.truncate(max_used + 1);
    owner[0] = u32::MAX;
    f.lid_owner = owner;
    Ok(())
}

/// Derives the switch list, end ports and switch adjacency.
pub(crate) fn derive(f: &mut Fabric) -> Result<(), BuildError> {
    f.switches.clear();
    f.switch_index = vec![u32::MAX; f.nodes.len()];
    for (i, node) in f.nodes.iter().enumerate() {
        if node.kind == NodeKind::Switch {
            f.switch_index[i] = f.switches.len() as u32;
            f.switches.push(NodeId(i as u32));
        }
    }
    f.end_ports.clear();
    for (i, node) in f.nodes.iter().enumerate() {
        if node.kind.is_end() {
            let n = NodeId(i as u32);
            for p in 1..=node.nports {
                let pid = f.port_id(n, p);
                if f.ports[pid.idx()].link.is_some() {
                    f.end_ports.push(pid);
                }
            }
        }
    }
    f.sw_adj_start = Vec::with_capacity(f.switches.len() + 1);
    f.sw_adj.clear();
    for si in 0..f.switches.len() {
        f.sw_adj_start.push(f.sw_adj.len() as u32);
        let n = f.switches[si];
        for p in 1..=f.nodes[n.idx()].nports {
            let pid = f.port_id(n, p);
            if let Some(c) = f.out_channel(pid) {
                let rn = f.ports[f.channel_dst(c).idx()].node;
                if rn != n && f.nodes[rn.idx()].kind == NodeKind::Switch {
                    f.sw_adj.push(c);
                }
            }
        }
    }
    f.sw_adj_start.push(f.sw_adj.len() as u32);
    if f.lid_owner.is_empty() {
        // Fabric deserialized from JSON: rebuild the LID map from the ports.
        let mut owner: Vec<u32> = Vec::new();
        for (i, port) in f.ports.iter().enumerate() {
            if port.lid == 0 {
                continue;
            }
            let end = port.lid as usize + (1usize << port.lmc);
            if owner.len() < end {
                owner.resize(end, u32::MAX);
            }
            for o in &mut owner[port.lid as usize..end] {
                if *o != u32::MAX {
                    return err(format!("LID {:#x} is claimed twice", port.lid));
                }
                *o = i as u32;
            }
        }
        f.lid_owner = owner;
    }
    Ok(())
}

impl Fabric {
    /// A copy of this fabric with every LID assigned afresh using `lmc` for end ports.
    pub fn with_lmc(&self, lmc: u8) -> Result<Fabric, BuildError> {
        if lmc > MAX_LMC {
            return err(format!("LMC {lmc} is above the maximum {MAX_LMC}"));
        }
        let mut f = self.clone();
        for p in &mut f.ports {
            p.lid = 0;
            p.lmc = 0;
        }
        assign_lids(&mut f, lmc)?;
        Ok(f)
    }

    /// The fabric with every end port's LMC set to `lmc` and its base LID kept: what a file
    /// that lists base LIDs only (OpenSM's `opensm-subnet.lst`) cannot say. Errors when a
    /// base LID is not a multiple of 2^`lmc` or a widened range meets another port's LID.
    pub fn with_end_lmc(&self, lmc: u8) -> Result<Fabric, BuildError> {
        if lmc > MAX_LMC {
            return err(format!("LMC {lmc} is above the maximum {MAX_LMC}"));
        }
        let mut f = self.clone();
        for i in 0..f.ports.len() {
            let (node, lid) = (f.ports[i].node, f.ports[i].lid);
            if lid == 0 || f.nodes[node.idx()].kind == NodeKind::Switch {
                continue;
            }
            if !(lid as u32).is_multiple_of(1u32 << lmc) {
                return err(format!(
                    "LID {lid:#x} of {:?} port {} is not a multiple of {} (LMC {lmc})",
                    f.nodes[node.idx()].name,
                    f.ports[i].num,
                    1u32 << lmc
                ));
            }
            f.ports[i].lmc = lmc;
        }
        f.rederive()?;
        Ok(f)
    }

    /// Restores derived fields after deserialisation (e.g. from JSON).
    pub fn rederive(&mut self) -> Result<(), BuildError> {
        self.lid_owner.clear();
        derive(self)
    }
}
