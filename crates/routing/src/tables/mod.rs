//! The routing result: what a subnet manager programs.
//!
//! - **LFTs**: one linear forwarding table per switch over the unicast LID space, switch-major
//!   in one flat array (`lft[switch_index * stride + lid]` = output port number, [`NO_PORT`] =
//!   no route). `stride = max_lid + 1`. LMC virtual LIDs are ordinary entries.
//! - **Path SLs**: the service level a source end port puts on packets to a destination LID.
//! - **SL2VL**: per node, `(input port, output port, SL) → VL`; for CAs/routers only the
//!   row of each port (input 0, output = that port) matters.
//!
//! InfiniBand limits are enforced by [`Routing::validate`]: 15 data VLs (0..=14), 16 SLs,
//! LMC ≤ 7, LIDs ≤ 0xBFFF.

use fabric::{Fabric, Lid, NodeId, NodeKind, PortId, SwitchIdx, MAX_LMC, MAX_UNICAST_LID, NO_PORT};

pub mod update;
pub use update::{Update, LFT_BLOCK};

/// Number of service levels.
pub const NUM_SLS: usize = 16;
/// Number of data virtual lanes.
pub const NUM_DATA_VLS: u8 = 15;
/// VL 15, the management lane: an SL2VL table may map SLs to it, and their packets are dropped
/// there (the checker and the simulator drop them). Engines never map to it.
pub const DROP_VL: u8 = 15;

/// How path SLs are stored (dense per-pair storage is only used when an engine needs it).
#[derive(Debug, PartialEq, Eq)]
pub enum PathSl {
    /// Every path uses this SL.
    Uniform(u8),
    /// SL depends on the destination LID only: `sl[lid]`.
    PerDest(Vec<u8>),
    /// SL per (source end port, destination LID): `sl[src * stride + lid]`, where `src` is the
    /// index of the source in `Fabric::end_ports`.
    PerPair { stride: usize, sl: Vec<u8> },
}

impl Clone for PathSl {
    fn clone(&self) -> Self {
        match self {
            PathSl::Uniform(s) => PathSl::Uniform(*s),
            PathSl::PerDest(v) => PathSl::PerDest(v.clone()),
            PathSl::PerPair { stride, sl } => PathSl::PerPair {
                stride: *stride,
                sl: sl.clone(),
            },
        }
    }

    /// Reuses `self`'s storage when both are of the same kind.
    fn clone_from(&mut self, src: &Self) {
        match (self, src) {
            (PathSl::PerDest(a), PathSl::PerDest(b)) => a.clone_from(b),
            (PathSl::PerPair { stride: a, sl: x }, PathSl::PerPair { stride: b, sl: y }) => {
                *a = *b;
                x.clone_from(y);
            }
            (me, src) => *me = src.clone(),
        }
    }
}

impl PathSl {
    /// SL for source end-port index `src` (into `Fabric::end_ports`) and destination `dlid`.
    #[inline]
    pub fn get(&self, src: usize, dlid: Lid) -> u8 {
        match self {
            PathSl::Uniform(s) => *s,
            PathSl::PerDest(v) => v.get(dlid as usize).copied().unwrap_or(0),
            PathSl::PerPair { stride, sl } => {
                sl.get(src * stride + dlid as usize).copied().unwrap_or(0)
            }
        }
    }
}

/// SL-to-VL tables for every node. `None` for a node means the identity map (VL = SL, which is
/// what OpenSM programs with `-Q` for SL0..14; SL15 maps to VL 15 = "drop" in IB, we map
/// SL → SL mod 15 to stay within data VLs).
#[derive(Debug, PartialEq, Eq)]
pub struct Sl2Vl {
    /// Per node: offset into `data` or `u32::MAX` for identity.
    offset: Vec<u32>,
    /// Per node: number of ports + 1 (row stride in input ports and output ports).
    width: Vec<u16>,
    data: Vec<u8>,
}

impl Clone for Sl2Vl {
    fn clone(&self) -> Self {
        Sl2Vl {
            offset: self.offset.clone(),
            width: self.width.clone(),
            data: self.data.clone(),
        }
    }

    /// Reuses `self`'s storage.
    fn clone_from(&mut self, src: &Self) {
        self.offset.clone_from(&src.offset);
        self.width.clone_from(&src.width);
        self.data.clone_from(&src.data);
    }
}

impl Sl2Vl {
    /// Whether some entry maps an SL to [`DROP_VL`] (so some route may be dropped).
    pub fn maps_to_drop_vl(&self) -> bool {
        self.data.contains(&DROP_VL)
    }

    /// Identity tables on every node.
    pub fn identity(f: &Fabric) -> Self {
        Sl2Vl {
            offset: vec![u32::MAX; f.nodes.len()],
            width: f.nodes.iter().map(|n| n.nports as u16 + 1).collect(),
            data: Vec::new(),
        }
    }

    /// The VL for (node, input port, output port, SL).
    #[inline]
    pub fn vl(&self, node: NodeId, inp: u8, out: u8, sl: u8) -> u8 {
        let o = self.offset[node.idx()];
        if o == u32::MAX {
            return sl % NUM_DATA_VLS;
        }
        let w = self.width[node.idx()] as usize;
        self.data[o as usize + ((inp as usize * w + out as usize) * NUM_SLS) + sl as usize]
    }

    /// Gives `node` an explicit table (initialised to identity) and returns it for editing,
    /// indexed `[(inp * width + out) * 16 + sl]`.
    pub fn table_mut(&mut self, node: NodeId) -> &mut [u8] {
        let w = self.width[node.idx()] as usize;
        let len = w * w * NUM_SLS;
        if self.offset[node.idx()] == u32::MAX {
            self.offset[node.idx()] = self.data.len() as u32;
            self.data
                .extend((0..len).map(|i| (i % NUM_SLS) as u8 % NUM_DATA_VLS));
        }
        let o = self.offset[node.idx()] as usize;
        &mut self.data[o..o + len]
    }

    /// Sets one entry.
    pub fn set(&mut self, node: NodeId, inp: u8, out: u8, sl: u8, vl: u8) {
        let w = self.width[node.idx()] as usize;
        let t = self.table_mut(node);
        t[(inp as usize * w + out as usize) * NUM_SLS + sl as usize] = vl;
    }

    /// `node`'s explicit table (indexed as in [`Sl2Vl::table_mut`]), `None` for the
    /// identity map.
    pub fn table(&self, node: NodeId) -> Option<&[u8]> {
        let o = self.offset[node.idx()];
        if o == u32::MAX {
            return None;
        }
        let w = self.width[node.idx()] as usize;
        Some(&self.data[o as usize..o as usize + w * w * NUM_SLS])
    }

    /// `node`'s SL-to-VL map when no port changes it (`vl(node, i, o, sl)` is the same for
    /// every port pair): a walker that reads many VLs may look this up per switch instead.
    pub fn port_free(&self, node: NodeId) -> Option<[u8; NUM_SLS]> {
        let mut m = [0u8; NUM_SLS];
        match self.table(node) {
            None => {
                for (sl, v) in m.iter_mut().enumerate() {
                    *v = sl as u8 % NUM_DATA_VLS;
                }
            }
            Some(t) => {
                m.copy_from_slice(&t[..NUM_SLS]);
                if t.chunks_exact(NUM_SLS).any(|row| row != m) {
                    return None;
                }
            }
        }
        Some(m)
    }

    /// True when `node` uses the identity map.
    pub fn is_identity(&self, node: NodeId) -> bool {
        self.offset[node.idx()] == u32::MAX
    }
}

/// A complete routing result.
#[derive(Debug)]
pub struct Routing {
    /// Highest LID covered by the LFTs; `stride = max_lid + 1`.
    pub max_lid: Lid,
    /// Switch-major LFTs, `fabric.num_switches() * stride` bytes.
    pub lft: Vec<u8>,
    pub path_sl: PathSl,
    pub sl2vl: Sl2Vl,
}

impl Clone for Routing {
    fn clone(&self) -> Self {
        Routing {
            max_lid: self.max_lid,
            lft: self.lft.clone(),
            path_sl: self.path_sl.clone(),
            sl2vl: self.sl2vl.clone(),
        }
    }

    /// Reuses `self`'s storage: a copy into tables of the same shape touches no fresh
    /// memory (a live subnet manager builds each repair's tables this way).
    fn clone_from(&mut self, src: &Self) {
        self.max_lid = src.max_lid;
        self.lft.clone_from(&src.lft);
        self.path_sl.clone_from(&src.path_sl);
        self.sl2vl.clone_from(&src.sl2vl);
    }
}

impl Routing {
    /// Empty tables (every entry "no route") for the LIDs the fabric assigned.
    pub fn empty(f: &Fabric) -> Self {
        let max_lid = f.max_lid();
        Routing {
            max_lid,
            lft: vec![NO_PORT; f.num_switches() * (max_lid as usize + 1)],
            path_sl: PathSl::Uniform(0),
            sl2vl: Sl2Vl::identity(f),
        }
    }
    #[inline]
    pub fn stride(&self) -> usize {
        self.max_lid as usize + 1
    }
    /// The LFT of switch `s`.
    #[inline]
    pub fn lft_of(&self, s: SwitchIdx) -> &[u8] {
        let st = self.stride();
        &self.lft[s.idx() * st..(s.idx() + 1) * st]
    }
    #[inline]
    pub fn lft_of_mut(&mut self, s: SwitchIdx) -> &mut [u8] {
        let st = self.stride();
        &mut self.lft[s.idx() * st..(s.idx() + 1) * st]
    }
    /// Output port of switch `s` for `lid` (NO_PORT when none or out of range).
    #[inline]
    pub fn out_port(&self, s: SwitchIdx, lid: Lid) -> u8 {
        if lid > self.max_lid {
            return NO_PORT;
        }
        self.lft[s.idx() * self.stride() + lid as usize]
    }

    /// Like [`Routing::out_port`] but never panics, even when the table is shorter than
    /// `s` and `max_lid` imply (NO_PORT then).
    #[inline]
    pub fn out_port_checked(&self, s: SwitchIdx, lid: Lid) -> u8 {
        if lid > self.max_lid {
            return NO_PORT;
        }
        self.lft
            .get(s.idx() * self.stride() + lid as usize)
            .copied()
            .unwrap_or(NO_PORT)
    }

    /// Fills the LID ranges of end ports with LMC > 0 the way a subnet manager that programs
    /// every LID needs them: a LID of a port's range that no switch routes (a virtual LID no
    /// repair uses yet) gets the port's base-LID entry on every switch and the base LID's path
    /// SL from every source. Such a LID then follows exactly the base LID's paths on the same
    /// SLs, so the channel dependency graph gains no dependency. LIDs routed on any switch (in
    /// use, e.g. by an RFTR repair tree) are left as they are. Returns the LIDs filled.
    pub fn mirror_unrouted_lmc_lids(&mut self, f: &Fabric) -> usize {
        let ns = f.num_switches();
        let stride = self.stride();
        self.mirror_lmc_lids_unless(f, |t, _, lid| {
            (0..ns).any(|s| t.lft[s * stride + lid] != NO_PORT)
        })
    }

    /// Every LID of an LMC range above an end port's base LID for which `keep(self, end,
    /// lid)` is false (`end`: the index in `f.end_ports`) takes the base LID's entry on every
    /// switch and its path SL from every source (`Routing::follow_lid`). Returns how many.
    pub fn mirror_lmc_lids_unless(
        &mut self,
        f: &Fabric,
        keep: impl Fn(&Routing, usize, usize) -> bool,
    ) -> usize {
        let stride = self.stride();
        let ns = f.num_switches();
        let mut filled = 0;
        for (e, &p) in f.end_ports.iter().enumerate() {
            let port = f.port(p);
            if port.lmc == 0 || f.is_switch(port.node) {
                continue;
            }
            let base = port.lid as usize;
            for lid in base + 1..base + (1usize << port.lmc.min(MAX_LMC)) {
                if lid >= stride || keep(self, e, lid) {
                    continue;
                }
                self.follow_lid(ns, base, lid);
                filled += 1;
            }
        }
        filled
    }

    /// LID `lid` takes LID `base`'s entry on each of the `ns` switches and its path SL from
    /// every source: it then follows exactly `base`'s paths on the same SLs.
    fn follow_lid(&mut self, ns: usize, base: usize, lid: usize) {
        let stride = self.stride();
        for s in 0..ns {
            self.lft[s * stride + lid] = self.lft[s * stride + base];
        }
        match &mut self.path_sl {
            PathSl::Uniform(_) => {}
            PathSl::PerDest(v) => {
                if lid < v.len() && base < v.len() {
                    v[lid] = v[base];
                }
            }
            PathSl::PerPair { stride: st, sl } => {
                let st = *st;
                if lid < st {
                    for src in 0..sl.len() / st.max(1) {
                        sl[src * st + lid] = sl[src * st + base];
                    }
                }
            }
        }
    }

    /// Checks the InfiniBand limits and table shapes against the fabric.
    pub fn validate(&self, f: &Fabric) -> Result<(), TableError> {
        if self.max_lid > MAX_UNICAST_LID {
            return Err(TableError::MaxLid(self.max_lid));
        }
        if self.lft.len() != f.num_switches() * self.stride() {
            return Err(TableError::Shape);
        }
        for p in &f.ports {
            if p.lmc > MAX_LMC {
                return Err(TableError::Lmc(p.lmc));
            }
        }
        for si in f.switch_ids() {
            let n = f.switch_node(si);
            let np = f.node(n).nports;
            for (lid, &port) in self.lft_of(si).iter().enumerate() {
                if port != NO_PORT && port > np {
                    return Err(TableError::PortBeyondCount {
                        switch: f.node(n).name.clone(),
                        lid: lid as Lid,
                        port,
                        nports: np,
                    });
                }
            }
        }
        let max_sl = match &self.path_sl {
            PathSl::Uniform(s) => *s,
            PathSl::PerDest(v) => v.iter().copied().max().unwrap_or(0),
            PathSl::PerPair { sl, .. } => sl.iter().copied().max().unwrap_or(0),
        };
        if max_sl as usize >= NUM_SLS {
            return Err(TableError::Sl(max_sl));
        }
        // VL 15 is legal: the SLs mapped to it are dropped (the checker reports routes that
        // meet it)
        if self.sl2vl.data.iter().any(|&v| v > DROP_VL) {
            return Err(TableError::Vl);
        }
        Ok(())
    }
}

/// A routing outside InfiniBand's limits or not shaped for its fabric.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("max LID {0:#x} exceeds the unicast range {MAX_UNICAST_LID:#x}")]
    MaxLid(Lid),
    #[error("LFT array size does not match the switch count")]
    Shape,
    #[error("LMC {0} exceeds {MAX_LMC}")]
    Lmc(u8),
    #[error("switch {switch:?} routes LID {lid} to port {port}, beyond its {nports} ports")]
    PortBeyondCount {
        switch: String,
        lid: Lid,
        port: u8,
        nports: u8,
    },
    #[error("SL {0} is beyond the 16 service levels")]
    Sl(u8),
    #[error("an SL2VL entry maps to a VL beyond VL 15")]
    Vl,
}

/// Helper shared by engines and checkers: the (switch index, switch port number) an end port
/// hangs off, if it is cabled to a switch.
pub fn end_port_switch(f: &Fabric, p: PortId) -> Option<(SwitchIdx, u8)> {
    let r = f.attached_switch(p)?;
    let rp = f.port(r);
    Some((f.switch_of(rp.node)?, rp.num))
}

/// True for nodes whose ports carry LIDs of their own (CAs and routers).
pub fn is_end_node(f: &Fabric, n: NodeId) -> bool {
    f.node(n).kind != NodeKind::Switch
}

/// Two switches s0 - s1 (port 1 each), host h0 on s0 and h1 on s1 (port 4), switch LIDs 1
/// and 2, h0 LID 4 and h1 LID 128 with LMC 1: LIDs up to 129, so that entries fall in three
/// LFT blocks. The table tests' fabric.
#[cfg(test)]
pub(crate) fn two_switches() -> Fabric {
    use fabric::{FabricBuilder, Speed, Width};
    let mut b = FabricBuilder::new();
    let s0 = b.add_node(NodeKind::Switch, 4, 0x100, "s0", "").unwrap();
    let s1 = b.add_node(NodeKind::Switch, 4, 0x101, "s1", "").unwrap();
    let h0 = b.add_node(NodeKind::Ca, 1, 0x200, "h0", "").unwrap();
    let h1 = b.add_node(NodeKind::Ca, 1, 0x210, "h1", "").unwrap();
    for (x, px, y, py) in [(s0, 1, s1, 1), (h0, 1, s0, 4), (h1, 1, s1, 4)] {
        b.connect(x, px, y, py, Width::X4, Speed::Sdr).unwrap();
    }
    b.set_lid(s0, 0, 1, 0).unwrap();
    b.set_lid(s1, 0, 2, 0).unwrap();
    b.set_lid(h0, 1, 4, 1).unwrap();
    b.set_lid(h1, 1, 128, 1).unwrap();
    b.build().unwrap()
}
