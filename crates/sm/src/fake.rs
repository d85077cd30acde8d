//! An in-process fabric that answers SMPs the way ibsim does, built from a fabroute
//! [`Fabric`]: directed routes over physically up links, NodeInfo / NodeDescription /
//! PortInfo (with ibsim's port state machine: INIT → ARMED → ACTIVE one step at a time,
//! the peer within one step) / SwitchInfo (LinearFDBTop, PortStateChange, and
//! MulticastFDBTop when [`FakeFabric::honour_mcast_top`] asks) /
//! LinearForwardingTable / SLtoVLMappingTable, and trap 128 on [`FakeFabric::unlink`],
//! LID-routed to the SM through the programmed tables, and lost when that route is broken,
//! as in ibsim. Another SM ([`FakeSm`]) can stand on a second port and answer SMInfo. Its clock is virtual: each answered SMP takes `smp_time`, a `recv` that
//! finds nothing waits out its timeout. So tests of discovery, programming and repair run
//! without ibsim and give the same result every time.

use fabric::{Fabric, LinkId, NodeId, NodeKind, PortId};
use mad::attr::{
    self, cap, phys_state, port_state, NodeInfo, Notice, PortInfo, SmInfo, SwitchInfo,
};
use mad::{attr_id, status, Address, Method, Route, Smp, Transport, MAD_SIZE, SMP_DATA};
use routing::tables::update::{lft_block_lids, mft_block, mft_block_mlids, LFT_BLOCK};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// LinearFDBCap of every fake switch (ibsim's default).
pub const FDB_CAP: usize = 30720;

#[derive(Clone, Debug)]
struct SwState {
    info: SwitchInfo,
    lft: Vec<u8>,
}

/// Counters of what the fake was asked, per attribute and method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FakeStats {
    pub gets: u64,
    pub sets: u64,
    /// LinearForwardingTable Sets, and SLtoVLMappingTable Sets.
    pub lft_sets: u64,
    pub sl2vl_sets: u64,
    /// MulticastForwardingTable Sets.
    pub mft_sets: u64,
    /// PortInfo Sets with ClientReregister, per port (`PortId` index).
    pub rereg: Vec<u32>,
    /// SMPs dropped (a directed route over a link that is not up, a bad path).
    pub dropped: u64,
    pub traps_sent: u64,
    pub traps_lost: u64,
}

/// Another SM on the fake fabric: it answers LID-routed SMInfo Gets to its port's LID with
/// `info` while `alive` (killing it is `alive = false`).
#[derive(Clone, Debug)]
pub struct FakeSm {
    pub port: PortId,
    pub info: SmInfo,
    pub alive: bool,
}

/// See the module documentation.
#[derive(Debug)]
pub struct FakeFabric {
    f: Fabric,
    sm_port: PortId,
    port: Vec<PortInfo>,
    link_up: Vec<bool>,
    sw: Vec<Option<SwState>>,
    sl2vl: BTreeMap<(u32, u8, u8), [u8; 16]>,
    /// MFT blocks set: (switch node, block, position) → the 32 port masks.
    mft: BTreeMap<(u32, u32, u8), [u16; attr::MFT_MLIDS]>,
    queue: VecDeque<([u8; MAD_SIZE], Address)>,
    /// MADs the SM sent that are not SMPs (its answers to hosts' requests), with where to.
    pub answers: Vec<([u8; MAD_SIZE], Address)>,
    clock: Duration,
    /// Virtual time one answered SMP takes (default 15 µs, ibsim's pipelined rate).
    pub smp_time: Duration,
    pub stats: FakeStats,
    next_trap_tid: u64,
    /// Drop every `drop_every`-th SMP sent to the fake (0: none), as ibsim's `Error`
    /// command drops a share of SMPs: for tests of the pipeline's retries.
    pub drop_every: u64,
    received: u64,
    /// Another SM (see [`FakeFabric::add_sm`]).
    pub other_sm: Option<FakeSm>,
}

impl FakeFabric {
    /// A fabric whose SM attaches at end port `sm_port` of `f`. Every port starts as
    /// ibsim starts it: cabled ports physically up in INIT, LID 0, no SM LID.
    pub fn new(f: &Fabric, sm_port: PortId) -> FakeFabric {
        let mut port = vec![PortInfo::default(); f.ports.len()];
        for (i, p) in f.ports.iter().enumerate() {
            let pi = &mut port[i];
            pi.set_local_port(p.num);
            pi.set_vl_cap(5);
            pi.set_oper_vls(1);
            pi.set_link_width_supported(0x03);
            pi.set_link_speed_supported(1);
            // Channel adapters act on ClientReregister (IsClientReregistrationSupported).
            pi.set_cap_mask(if f.node(p.node).kind == NodeKind::Switch {
                0x0008
            } else {
                attr::cap::IS_CLIENT_REREG
            });
            if p.num == 0 {
                pi.set_port_state(port_state::ACTIVE);
                pi.set_phys_state(phys_state::LINK_UP);
            } else if let Some(l) = p.link {
                pi.set_port_state(port_state::INIT);
                pi.set_phys_state(phys_state::LINK_UP);
                let link = f.link(l);
                pi.set_link_width_active(match link.width.lanes() {
                    1 => 1,
                    8 => 4,
                    12 => 8,
                    2 => 16,
                    _ => 2,
                });
                pi.set_link_speed_active(match link.speed {
                    fabric::Speed::Ddr => 2,
                    fabric::Speed::Qdr => 4,
                    _ => 1,
                });
            } else {
                pi.set_port_state(port_state::DOWN);
                pi.set_phys_state(phys_state::POLLING);
            }
        }
        let sw = f
            .nodes
            .iter()
            .map(|n| {
                (n.kind == NodeKind::Switch).then(|| {
                    let mut info = SwitchInfo::default();
                    info.set_linear_fdb_cap(FDB_CAP as u16);
                    SwState {
                        info,
                        lft: vec![0xff; FDB_CAP],
                    }
                })
            })
            .collect();
        FakeFabric {
            f: f.clone(),
            sm_port,
            port,
            link_up: vec![true; f.links.len()],
            sw,
            sl2vl: BTreeMap::new(),
            mft: BTreeMap::new(),
            queue: VecDeque::new(),
            answers: Vec::new(),
            clock: Duration::ZERO,
            smp_time: Duration::from_micros(15),
            stats: FakeStats::default(),
            next_trap_tid: 1 << 40,
            drop_every: 0,
            received: 0,
            other_sm: None,
        }
        .with_sm_bit(sm_port)
    }

    fn with_sm_bit(mut self, p: PortId) -> Self {
        let pi = &mut self.port[p.idx()];
        pi.set_cap_mask(pi.cap_mask() | cap::IS_SM);
        self
    }

    /// The SM's client attaches at end port `p` instead (its port advertises IsSM, as
    /// ibsim sets it when an SM opens the issm device); the ports keep what the previous SM
    /// programmed.
    pub fn attach_sm(&mut self, p: PortId) {
        self.sm_port = p;
        let pi = &mut self.port[p.idx()];
        pi.set_cap_mask(pi.cap_mask() | cap::IS_SM);
    }

    /// Another SM at `sm.port` (its port advertises IsSM).
    pub fn add_sm(&mut self, sm: FakeSm) {
        let pi = &mut self.port[sm.port.idx()];
        pi.set_cap_mask(pi.cap_mask() | cap::IS_SM);
        self.other_sm = Some(sm);
    }

    /// The answer of the other SM to a LID-routed SMInfo Get from the SM, when it is alive
    /// and the forwarding tables carry the request from the SM's switch to its LID.
    fn other_sm_answer(&self, s: &Smp, to: Address) -> Option<([u8; MAD_SIZE], Address)> {
        let o = self.other_sm.as_ref().filter(|o| o.alive)?;
        let pi = &self.port[o.port.idx()];
        if s.attr != attr_id::SM_INFO || s.method != Method::Get || to.lid != pi.lid() {
            return None;
        }
        let sw = self.f.port(self.f.remote(self.sm_port)?).node;
        if !self.active(self.sm_port) || !self.lid_route_reaches(sw, to.lid) {
            return None;
        }
        let from = Address {
            lid: pi.lid(),
            qpn: 0,
        };
        Some((s.response(0, o.info.encode()).encode(), from))
    }

    /// The fabric the fake was built from.
    pub fn fabric(&self) -> &Fabric {
        &self.f
    }

    /// The LFT entry a switch holds for `lid`.
    pub fn lft(&self, sw: NodeId, lid: u16) -> u8 {
        self.sw[sw.idx()]
            .as_ref()
            .map_or(0xff, |s| s.lft[lid as usize])
    }
    /// What the switches hold, as tables of `d` (a fabric discovered on this fake, matched
    /// by GUID): every LFT entry up to `d`'s top LID, and the SL2VL rows that were set
    /// (others stay the identity). Path SLs are the hosts', not the switches': SL 0.
    pub fn held(&self, d: &Fabric) -> routing::Routing {
        let mut r = routing::Routing::empty(d);
        for s in d.switch_ids() {
            if let Some(pn) = self.f.node_by_guid(d.node(d.switch_node(s)).guid) {
                for lid in 0..=d.max_lid() {
                    r.lft_of_mut(s)[lid as usize] = self.lft(pn, lid);
                }
            }
        }
        for (i, node) in d.nodes.iter().enumerate() {
            let Some(pn) = self.f.node_by_guid(node.guid) else {
                continue;
            };
            for (&(_, inp, out), v) in self.sl2vl.range((pn.0, 0, 0)..=(pn.0, u8::MAX, u8::MAX)) {
                for (sl, &vl) in v.iter().enumerate() {
                    r.sl2vl.set(NodeId(i as u32), inp, out, sl as u8, vl);
                }
            }
        }
        r
    }

    /// Makes every switch honour SwitchInfo.MulticastFDBTop, as many switches do and ibsim's
    /// do not: port 0 advertises it, the top starts at 0xBFFF (no MLID forwarded) and MFT
    /// entries above the top forward nowhere, so multicast works only once the SM sets it.
    pub fn honour_mcast_top(&mut self) {
        for &n in &self.f.switches {
            let p0 = self.f.port_id(n, 0);
            let pi = &mut self.port[p0.idx()];
            pi.set_cap_mask(pi.cap_mask() | cap::HAS_MCAST_FDB_TOP);
            if let Some(s) = self.sw[n.idx()].as_mut() {
                s.info.set_mcast_fdb_top(routing::mcast::MLID_FIRST - 1);
            }
        }
    }

    /// Whether switch `n` honours MulticastFDBTop ([`FakeFabric::honour_mcast_top`]).
    fn honours_top(&self, n: NodeId) -> bool {
        self.port[self.f.port_id(n, 0).idx()].cap_mask() & cap::HAS_MCAST_FDB_TOP != 0
    }

    /// A switch's MulticastFDBTop.
    pub fn mcast_top(&self, sw: NodeId) -> u16 {
        self.sw[sw.idx()]
            .as_ref()
            .map_or(0, |s| s.info.mcast_fdb_top())
    }

    /// The ports switch `sw` forwards multicast LID `mlid` to (its MFT row, as port numbers;
    /// none above its MulticastFDBTop when it honours one).
    pub fn mft_ports(&self, sw: NodeId, mlid: u16) -> Vec<u8> {
        if mlid < routing::mcast::MLID_FIRST {
            return Vec::new();
        }
        if self.honours_top(sw) && mlid > self.mcast_top(sw) {
            return Vec::new();
        }
        let block = mft_block(mlid);
        let i = mlid as usize - mft_block_mlids(block as usize).start;
        let block = block as u32;
        let mut out = Vec::new();
        for pos in 0..16u8 {
            if let Some(m) = self.mft.get(&(sw.0, block, pos)) {
                for b in 0..16 {
                    if m[i] & (1 << b) != 0 {
                        out.push(pos * 16 + b);
                    }
                }
            }
        }
        out
    }

    /// Writes one LFT entry behind the SM's back (a table another SM left wrong).
    pub fn set_lft(&mut self, sw: NodeId, lid: u16, port: u8) {
        if let Some(s) = self.sw[sw.idx()].as_mut() {
            s.lft[lid as usize] = port;
        }
    }
    /// A switch's LinearFDBTop.
    pub fn fdb_top(&self, sw: NodeId) -> u16 {
        self.sw[sw.idx()]
            .as_ref()
            .map_or(0, |s| s.info.linear_fdb_top())
    }
    /// The SL2VL row a node holds for (input port, output port), if one was written.
    pub fn sl2vl(&self, n: NodeId, inp: u8, out: u8) -> Option<[u8; 16]> {
        self.sl2vl.get(&(n.0, inp, out)).copied()
    }
    /// The PortInfo a port holds.
    pub fn port_info(&self, p: PortId) -> PortInfo {
        self.port[p.idx()]
    }

    /// Pulls the cable of `l`, as ibsim's `Unlink`: both ends go DOWN / POLLING, each
    /// switch end sets PortStateChange and sends trap 128 to its SM (LID-routed through its
    /// tables; lost when that route is broken or the switch has no LID / SM LID yet).
    pub fn unlink(&mut self, l: LinkId) {
        self.set_cable(l, false);
    }

    /// Puts the cable of `l` back (ibsim's `ReLink`): both ends physically up in INIT, each
    /// switch end sets PortStateChange and sends trap 128.
    pub fn relink(&mut self, l: LinkId) {
        self.set_cable(l, true);
    }

    fn set_cable(&mut self, l: LinkId, up: bool) {
        if self.link_up[l.idx()] == up {
            return;
        }
        self.link_up[l.idx()] = up;
        let (state, phys) = if up {
            (port_state::INIT, phys_state::LINK_UP)
        } else {
            (port_state::DOWN, phys_state::POLLING)
        };
        let link = self.f.link(l).clone();
        for p in [link.a, link.b] {
            let pi = &mut self.port[p.idx()];
            pi.set_port_state(state);
            pi.set_phys_state(phys);
        }
        for p in [link.a, link.b] {
            let n = self.f.port(p).node;
            if let Some(s) = self.sw[n.idx()].as_mut() {
                s.info.set_port_state_change(1);
                self.trap_128(n);
            }
        }
    }

    /// A MAD from a host (an SA query, or any other class) reaching the SM's port, as ibsim
    /// hands the SM's client what it does not answer itself; the SM's answers collect in
    /// [`FakeFabric::answers`].
    pub fn inject(&mut self, m: [u8; MAD_SIZE], from: Address) {
        self.queue.push_back((m, from));
    }

    /// Unlinks every cable of switch `n` (ibsim's `Unlink "node"`).
    pub fn unlink_node(&mut self, n: NodeId) {
        let links: Vec<LinkId> = self
            .f
            .node_ports(n)
            .filter_map(|p| self.f.port(p).link)
            .collect();
        for l in links {
            self.unlink(l);
        }
    }

    fn trap_128(&mut self, n: NodeId) {
        let p0 = self.f.port_id(n, 0);
        let (lid, smlid) = (
            self.port[p0.idx()].lid(),
            self.port[p0.idx()].master_sm_lid(),
        );
        if lid == 0 || smlid == 0 {
            self.stats.traps_lost += 1;
            return;
        }
        if !self.lid_route_reaches(n, smlid) {
            self.stats.traps_lost += 1;
            return;
        }
        let notice = Notice {
            generic: true,
            kind: 1,
            producer: 2,
            trap_number: Notice::TRAP_LINK_STATE,
            issuer_lid: lid,
            data_lid: lid,
            ..Default::default()
        };
        let mut s = Smp::request(
            Method::Trap,
            Route::Lid(smlid),
            self.next_trap_tid,
            attr_id::NOTICE,
            0,
        );
        self.next_trap_tid += 1;
        s.data = notice.encode();
        let from = Address { lid, qpn: 0 };
        self.queue.push_back((s.encode(), from));
        self.stats.traps_sent += 1;
    }

    fn active(&self, p: PortId) -> bool {
        let pi = &self.port[p.idx()];
        pi.phys_state() == phys_state::LINK_UP && pi.port_state() == port_state::ACTIVE
    }

    /// ibsim's LID routing from switch `n`: every hop needs LID ≤ LinearFDBTop, an entry,
    /// and both ends of each crossed link ACTIVE.
    fn lid_route_reaches(&self, mut n: NodeId, lid: u16) -> bool {
        for _ in 0..64 {
            let Some(s) = self.sw[n.idx()].as_ref() else {
                return false;
            };
            if self.port[self.f.port_id(n, 0).idx()].lid() == lid {
                return true;
            }
            if lid > s.info.linear_fdb_top() {
                return false;
            }
            let out = s.lft[lid as usize];
            if out == 0xff || out == 0 || out > self.f.node(n).nports {
                return false;
            }
            let p = self.f.port_id(n, out);
            let Some(r) = self.f.remote(p) else {
                return false;
            };
            if !self.active(p) || !self.active(r) {
                return false;
            }
            let rn = self.f.port(r).node;
            if self.f.node(rn).kind != NodeKind::Switch {
                let pi = &self.port[r.idx()];
                let (base, lmc) = (pi.lid(), pi.lmc());
                return lid >= base && (lid as u32) < base as u32 + (1u32 << lmc);
            }
            n = rn;
        }
        false
    }

    /// Follows a directed route from the SM's port: the port the SMP arrives at, or `None`
    /// when a link on the way is not physically up or the path is bad.
    fn follow(&self, path: &[u8]) -> Option<PortId> {
        let mut at = self.sm_port;
        for (i, &out) in path.iter().enumerate() {
            let n = self.f.port(at).node;
            if i > 0 && self.f.node(n).kind != NodeKind::Switch {
                return None;
            }
            if out == 0 || out > self.f.node(n).nports {
                return None;
            }
            let p = self.f.port_id(n, out);
            let l = self.f.port(p).link?;
            if !self.link_up[l.idx()] {
                return None;
            }
            at = self.f.remote(p)?;
        }
        Some(at)
    }

    fn handle(&mut self, s: &Smp, at: PortId) -> (u16, [u8; SMP_DATA]) {
        let n = self.f.port(at).node;
        let node = self.f.node(n);
        let is_sw = node.kind == NodeKind::Switch;
        let set = s.method == Method::Set;
        if set {
            self.stats.sets += 1;
        } else {
            self.stats.gets += 1;
        }
        let bad = (status::BAD_PARAM, s.data);
        match s.attr {
            attr_id::NODE_INFO => {
                let ni = NodeInfo {
                    node_type: match node.kind {
                        NodeKind::Switch => attr::NODE_SWITCH,
                        NodeKind::Ca => attr::NODE_CA,
                        NodeKind::Router => attr::NODE_ROUTER,
                    },
                    nports: node.nports,
                    sys_guid: node.sys_guid,
                    node_guid: node.guid,
                    port_guid: if is_sw {
                        self.f.ports[self.f.port_id(n, 0).idx()].guid
                    } else {
                        self.f.port(at).guid
                    },
                    partition_cap: 8,
                    device_id: node.device_id as u16,
                    revision: 0,
                    local_port: self.f.port(at).num,
                    vendor_id: node.vendor_id,
                };
                (0, ni.encode())
            }
            attr_id::NODE_DESC => {
                let d = if node.desc.is_empty() {
                    &node.name
                } else {
                    &node.desc
                };
                (0, attr::node_desc_encode(d))
            }
            attr_id::PORT_INFO => {
                let num = s.modifier & 0xff;
                let num = if !is_sw && num == 0 {
                    self.f.port(at).num as u32
                } else {
                    num
                };
                if num > node.nports as u32 {
                    return bad;
                }
                let p = self.f.port_id(n, num as u8);
                if set {
                    if !is_sw && p != at {
                        return bad;
                    }
                    let req = PortInfo(s.data);
                    if req.oper_vls() > self.port[p.idx()].vl_cap() {
                        return bad;
                    }
                    let want = req.port_state();
                    let cur = self.port[p.idx()].port_state();
                    let peer = self
                        .f
                        .remote(p)
                        .filter(|_| self.f.port(p).link.is_some_and(|l| self.link_up[l.idx()]));
                    if want > port_state::INIT {
                        let Some(r) = peer else { return bad };
                        let rs = self.port[r.idx()].port_state();
                        if (rs as i32 - want as i32).abs() > 1
                            || (cur as i32 - want as i32).abs() != 1
                        {
                            return bad;
                        }
                    }
                    if req.client_reregister() == 1 {
                        let r = &mut self.stats.rereg;
                        r.resize(r.len().max(self.f.ports.len()), 0);
                        r[p.idx()] += 1;
                    }
                    let pi = &mut self.port[p.idx()];
                    pi.set_lid(req.lid());
                    pi.set_master_sm_lid(req.master_sm_lid());
                    pi.set_lmc(req.lmc());
                    pi.set_oper_vls(req.oper_vls());
                    if want > port_state::INIT {
                        pi.set_port_state(want);
                    }
                }
                (0, self.port[p.idx()].0)
            }
            attr_id::SWITCH_INFO => {
                let top =
                    self.port[self.f.port_id(n, 0).idx()].cap_mask() & cap::HAS_MCAST_FDB_TOP != 0;
                let Some(sw) = self.sw[n.idx()].as_mut() else {
                    return (status::ATTR_UNSUPPORTED, s.data);
                };
                if set {
                    let req = SwitchInfo(s.data);
                    if top {
                        sw.info.set_mcast_fdb_top(req.mcast_fdb_top());
                    }
                    if req.port_state_change() == 1 {
                        sw.info.set_port_state_change(0);
                    }
                    sw.info.set_linear_fdb_top(req.linear_fdb_top());
                    sw.info.set_life_time(req.life_time());
                }
                (0, sw.info.0)
            }
            attr_id::LFT => {
                let Some(sw) = self.sw[n.idx()].as_mut() else {
                    return (status::ATTR_UNSUPPORTED, s.data);
                };
                let block = s.modifier as usize;
                let r = lft_block_lids(block, FDB_CAP);
                if r.len() != LFT_BLOCK {
                    return bad;
                }
                if set {
                    sw.lft[r.clone()].copy_from_slice(&s.data);
                    self.stats.lft_sets += 1;
                }
                let mut d = [0u8; SMP_DATA];
                d.copy_from_slice(&sw.lft[r]);
                (0, d)
            }
            attr_id::MFT => {
                if self.sw[n.idx()].is_none() {
                    return (status::ATTR_UNSUPPORTED, s.data);
                }
                let (block, pos) = (s.modifier & 0x1ff, (s.modifier >> 28) as u8);
                if pos as u32 * 16 > node.nports as u32 {
                    return bad;
                }
                if set {
                    self.mft
                        .insert((n.0, block, pos), attr::mft_decode(&s.data));
                    self.stats.mft_sets += 1;
                }
                let m = self
                    .mft
                    .get(&(n.0, block, pos))
                    .copied()
                    .unwrap_or_default();
                (0, attr::mft_encode(&m))
            }
            attr_id::SL2VL => {
                let (inp, out) = if is_sw {
                    ((s.modifier >> 8) as u8, s.modifier as u8)
                } else {
                    (0, self.f.port(at).num)
                };
                if inp > node.nports || out > node.nports {
                    return bad;
                }
                if set {
                    self.sl2vl
                        .insert((n.0, inp, out), attr::sl2vl_decode(&s.data));
                    self.stats.sl2vl_sets += 1;
                }
                let v = self
                    .sl2vl
                    .get(&(n.0, inp, out))
                    .copied()
                    .unwrap_or(std::array::from_fn(|sl| if sl < 15 { sl as u8 } else { 7 }));
                (0, attr::sl2vl_encode(&v))
            }
            _ => (status::ATTR_UNSUPPORTED, s.data),
        }
    }
}

impl Transport for FakeFabric {
    fn send(&mut self, m: &[u8; MAD_SIZE], to: Address) -> std::io::Result<()> {
        // Not an SMP for the fabric: an answer the SM gives to a host (a GSI response, or
        // a response to a LID-routed SMP request).
        let smp = m[1] == mad::CLASS_SUBN_DR || m[1] == mad::CLASS_SUBN_LID;
        if !smp || (m[1] == mad::CLASS_SUBN_LID && m[3] & 0x80 != 0) {
            self.answers.push((*m, to));
            return Ok(());
        }
        self.received += 1;
        if self.drop_every > 0 && self.received.is_multiple_of(self.drop_every) {
            self.stats.dropped += 1;
            return Ok(());
        }
        let Ok(s) = Smp::decode(m) else {
            self.stats.dropped += 1;
            return Ok(());
        };
        let Route::Direct(path) = &s.route else {
            // LID-routed: SMInfo to the other SM is answered by it; other requests
            // (TrapRepress) are dropped, as ibsim drops them.
            match self.other_sm_answer(&s, to) {
                Some(a) => self.queue.push_back(a),
                None => self.stats.dropped += 1,
            }
            return Ok(());
        };
        if !matches!(s.method, Method::Get | Method::Set) {
            self.stats.dropped += 1;
            return Ok(());
        }
        let Some(at) = self.follow(path) else {
            self.stats.dropped += 1;
            return Ok(());
        };
        let (st, data) = self.handle(&s, at);
        let from = Address {
            lid: 0xffff,
            qpn: 0,
        };
        self.queue.push_back((s.response(st, data).encode(), from));
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<([u8; MAD_SIZE], Address)>> {
        match self.queue.pop_front() {
            Some(m) => {
                self.clock += self.smp_time;
                Ok(Some(m))
            }
            None => {
                self.clock += timeout;
                Ok(None)
            }
        }
    }

    fn now(&self) -> Duration {
        self.clock
    }
}
