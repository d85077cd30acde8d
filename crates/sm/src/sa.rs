//! The subnet administrator on the SM's port: answers to SA queries (class 0x03) from what
//! the SM knows, and error answers to MADs of classes it does not serve.
//!
//! - `SubnAdmGet` and `SubnAdmGetTable` of **PathRecord** (by SLID/DLID or SGID/DGID),
//!   **NodeRecord**, **PortInfoRecord**, **LinkRecord**, **SwitchInfoRecord**, and `Get` of **ClassPortInfo**. A table is sent when
//!   it fits in one MAD (three PathRecords, one NodeRecord, two PortInfoRecords); a larger
//!   one would need RMPP, which this SA does not send, and is answered `ERR_NO_RESOURCES`.
//! - A PathRecord carries the (DLID, SL) the source must use *now*: over RFTR the DLID of
//!   the pair's current path (`Rftr::dlid`: a virtual LID after a repair moved it) and the
//!   SL of the tables the switches hold for (source, that DLID); otherwise the destination's
//!   base LID (or the LID asked for, within its LMC range) and its path SL. A DLID in the
//!   query names the destination port, so a host that asks for the base LID of a moved pair
//!   is told the virtual LID. The path is walked through the tables under the dead links:
//!   MTU and rate are the smallest on it, and a pair whose walk does not deliver has no
//!   record (`ERR_NO_RECORDS`).
//! - `SubnAdmSet` of **InformInfo** subscribes or unsubscribes the sender to generic notices
//!   ([`crate::notify`]: Reports of traps 64, 65 and 69).
//! - **MCMemberRecord**: `SubnAdmSet` joins a multicast group (creating it), `SubnAdmDelete`
//!   leaves it, `SubnAdmGet` / `SubnAdmGetTable` list groups and members
//!   ([`crate::sa_mcast`], served by [`crate::mcast::McastState::serve`]).
//! - Other classes get the answer a kernel gives to a MAD no agent serves (status
//!   "unsupported class or version"); LID-routed SMP requests to the SM (SMInfo) get
//!   "unsupported method/attribute"; responses and traps get nothing.
//!
//! Each answer costs a lookup and one or two walks of the tables: nothing is allocated per
//! query beyond the answer itself.

use crate::mcast::McastState;
use crate::notify::Subscriptions;
use crate::sa_mcast::McAnswer;
use fabric::{Fabric, FaultMask, NodeId, PortId};
use mad::attr::{self, NodeInfo, PortInfo, SmInfo, SwitchInfo};
use mad::inform::INFORM_INFO_LEN;
use mad::records::{
    lr_mask, swir_mask, LinkRecord, McMemberRecord, SwitchInfoRecord, SWITCH_INFO_IN_RECORD,
};
use mad::sa::{
    self, method, pir_mask, pr_mask, sa_attr, sa_status, Gid, NodeRecord, PathRecord,
    PortInfoRecord, SaRequest, DEFAULT_GID_PREFIX, SA_DATA,
};
use mad::{status, Address, MAD_SIZE};
use routing::fault::rftr::Rftr;
use routing::forward::{Control, Forward, Plane, WalkEnd};
use routing::Routing;
use std::collections::HashMap;

/// OpenSM's default subnet timeout, which it gives as every path's packet lifetime.
const PKT_LIFE: u8 = 0x12;
/// The SA's response time value in ClassPortInfo: 4.096 µs × 2^16 ≈ 268 ms, what OpenSM
/// gives with its default transaction timeout (200 ms).
const RESP_TIME: u8 = 16;

/// What the SA reads: the fabric and the state the SM keeps of it.
pub struct View<'a, 'f> {
    pub f: &'f Fabric,
    /// The tables the switches hold.
    pub tables: &'a Routing,
    /// The forwarding view under the links found dead.
    pub plane: &'a Plane,
    /// PortInfo of every port as last read (by `PortId`).
    pub port_info: &'a [PortInfo],
    /// SwitchInfo of every switch as last read or set (by `NodeId`).
    pub switch_info: &'a [SwitchInfo],
    /// The links and switches found dead.
    pub mask: &'a FaultMask,
    /// Over RFTR: the per-pair DLIDs.
    pub rftr: Option<&'a Rftr<'f>>,
}

impl std::fmt::Debug for View<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("rftr", &self.rftr.is_some())
            .finish_non_exhaustive()
    }
}

/// Counters of what the SA answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaStats {
    /// SA requests answered with records (status 0).
    pub answered: u64,
    /// SA requests answered with an error status.
    pub errors: u64,
    /// MADs of other classes answered with "unsupported class".
    pub other_classes: u64,
    /// SMInfo Gets answered (LID-routed SMPs to the SM's port).
    pub sm_info: u64,
    /// MADs that get no answer (responses, RMPP acknowledgements, undecodable bytes).
    pub dropped: u64,
}

/// The SA's own state: NodeInfo as discovered, and ports by GUID.
#[derive(Clone, Debug)]
pub struct Sa {
    node_info: Vec<NodeInfo>,
    by_guid: HashMap<u64, PortId>,
    pub stats: SaStats,
    /// What an SMInfo Get is answered with (its ActCount kept current by the SM).
    pub sm: SmInfo,
    /// Hosts' subscriptions to notices (SA Set of InformInfo).
    pub subs: Subscriptions,
}

/// An answer under construction: up to `cap` records of `len` bytes (padded), or an error.
struct Table {
    buf: [u8; SA_DATA],
    step: usize,
    count: usize,
    cap: usize,
}

impl Table {
    fn new(len: usize) -> Table {
        let step = sa::padded(len);
        Table {
            buf: [0; SA_DATA],
            step,
            count: 0,
            cap: SA_DATA / step,
        }
    }
    /// Adds a record; `false` once more records matched than fit (the count goes on).
    fn push(&mut self, rec: &[u8]) -> bool {
        if self.count < self.cap {
            let at = self.count * self.step;
            self.buf[at..at + rec.len()].copy_from_slice(rec);
        }
        self.count += 1;
        self.count <= self.cap
    }
    /// The status for `method` with what was found.
    fn status(&self, m: u8) -> u16 {
        match (m, self.count) {
            (method::GET, 0) => sa_status::NO_RECORDS,
            (method::GET, 1) => 0,
            (method::GET, _) => sa_status::TOO_MANY_RECORDS,
            (_, n) if n > self.cap => sa_status::NO_RESOURCES,
            _ => 0,
        }
    }
}

/// The byte range each NodeRecord component covers in the record (IBA table 194).
const NR_FIELDS: [(usize, usize); 15] = [
    (0, 2),    // LID
    (2, 4),    // reserved
    (4, 5),    // BaseVersion
    (5, 6),    // ClassVersion
    (6, 7),    // NodeType
    (7, 8),    // NumPorts
    (8, 16),   // SystemImageGUID
    (16, 24),  // NodeGUID
    (24, 32),  // PortGUID
    (32, 34),  // PartitionCap
    (34, 36),  // DeviceID
    (36, 40),  // Revision
    (40, 41),  // LocalPortNum
    (41, 44),  // VendorID
    (44, 108), // NodeDescription
];

impl Sa {
    /// The SA of a discovered fabric, with the NodeInfo read of each node (by `NodeId`).
    pub fn new(f: &Fabric, node_info: Vec<NodeInfo>) -> Sa {
        let mut by_guid = HashMap::new();
        for &n in &f.switches {
            by_guid.insert(f.shown_port_guid(f.port_id(n, 0)), f.port_id(n, 0));
        }
        for &p in &f.end_ports {
            by_guid.insert(f.port(p).guid, p);
        }
        Sa {
            node_info,
            by_guid,
            stats: SaStats::default(),
            sm: SmInfo::default(),
            subs: Subscriptions::default(),
        }
    }

    /// The answer to a MAD a host sent to the SM's port from `from`, or `None` when it gets
    /// none. `mc`: the multicast state MCMemberRecord requests act on (a join or leave it
    /// serves is left in its `changes` for the SM to push).
    pub fn answer(
        &mut self,
        v: &View<'_, '_>,
        mc: Option<&mut McastState>,
        m: &[u8; MAD_SIZE],
        from: Address,
    ) -> Option<[u8; MAD_SIZE]> {
        let class = m[1];
        if class == mad::CLASS_SUBN_LID {
            if let Some(a) = self.sm_info(m) {
                self.stats.sm_info += 1;
                return Some(a);
            }
        }
        if class == mad::CLASS_SUBN_LID || class == mad::CLASS_SUBN_DR {
            let a = sa::error_response(m, status::ATTR_UNSUPPORTED);
            self.count_other(a.is_some());
            return a;
        }
        if class != sa::CLASS_SUBN_ADM {
            let a = sa::error_response(m, status::BAD_VERSION);
            self.count_other(a.is_some());
            return a;
        }
        let req = match SaRequest::decode(m) {
            Ok(r) => r,
            Err(e) => {
                let a = e.status().and_then(|st| sa::error_response(m, st));
                match a {
                    Some(_) => self.stats.errors += 1,
                    None => self.stats.dropped += 1,
                }
                return a;
            }
        };
        if req.hdr.attr == sa_attr::INFORM_INFO && req.hdr.method == method::SET {
            let (st, echo) = self.subs.set(from.lid, &req.data);
            let a = sa::sa_response(&req, st, INFORM_INFO_LEN, if st == 0 { &echo } else { &[] });
            match st {
                0 => self.stats.answered += 1,
                _ => self.stats.errors += 1,
            }
            return a;
        }
        let mc_methods = [method::GET, method::GET_TABLE, method::SET, method::DELETE];
        if req.hdr.attr == sa_attr::MCMEMBER_RECORD && mc_methods.contains(&req.hdr.method) {
            let ans = match mc {
                Some(mc) => {
                    let requester = v.f.lid_port(from.lid);
                    let mut ans = mc.serve(v.f, v.mask, v.port_info, &req, requester);
                    mc.changes.extend(ans.change.take());
                    ans
                }
                None => McAnswer::without_groups(&req),
            };
            let mut t = Table::new(McMemberRecord::SIZE);
            for r in &ans.records {
                t.push(&r.encode());
            }
            let recs = &t.buf[..t.count.min(t.cap) * t.step];
            let a = sa::sa_response(&req, ans.status, McMemberRecord::SIZE, recs);
            match (a.is_some(), ans.status) {
                (false, _) => self.stats.dropped += 1,
                (true, 0) => self.stats.answered += 1,
                (true, _) => self.stats.errors += 1,
            }
            return a;
        }
        let (st, len, table) = self.query(v, &req);
        let recs = match &table {
            Some(t) if st == 0 => &t.buf[..t.count * t.step],
            _ => &[][..],
        };
        let a = sa::sa_response(&req, st, len, recs);
        match (a.is_some(), st) {
            (false, _) => self.stats.dropped += 1,
            (true, 0) => self.stats.answered += 1,
            (true, _) => self.stats.errors += 1,
        }
        a
    }

    /// The answer to a LID-routed SMInfo Get (`sminfo`, or another SM looking for the
    /// master): this SM's GUID, priority, state and ActCount. `None` for anything else (a
    /// Set, which another SM's handover would send, gets "unsupported attribute").
    fn sm_info(&self, m: &[u8; MAD_SIZE]) -> Option<[u8; MAD_SIZE]> {
        crate::standby::sm_info_answer(m, &self.sm)
    }

    fn count_other(&mut self, answered: bool) {
        if answered {
            self.stats.other_classes += 1;
        } else {
            self.stats.dropped += 1;
        }
    }

    /// Status, record length and records of a decoded request.
    fn query(&self, v: &View<'_, '_>, req: &SaRequest) -> (u16, usize, Option<Table>) {
        let m = req.hdr.method;
        let known = [
            method::GET,
            method::SET,
            method::GET_TABLE,
            method::GET_TRACE_TABLE,
            method::GET_MULTI,
            method::DELETE,
            method::REPORT,
        ];
        if !known.contains(&m) {
            return (status::METHOD_UNSUPPORTED, 0, None);
        }
        let attr = req.hdr.attr;
        let table_ok = m == method::GET || m == method::GET_TABLE;
        match attr {
            sa_attr::CLASS_PORT_INFO if m == method::GET => {
                let mut t = Table::new(sa::CLASS_PORT_INFO_SIZE);
                t.push(&sa::class_port_info(RESP_TIME));
                (0, sa::CLASS_PORT_INFO_SIZE, Some(t))
            }
            sa_attr::PATH_RECORD if table_ok => {
                let mut t = Table::new(PathRecord::SIZE);
                match self.path_record(v, req) {
                    Ok(r) => {
                        t.push(&r.encode());
                        (t.status(m), PathRecord::SIZE, Some(t))
                    }
                    Err(st) => (st, PathRecord::SIZE, None),
                }
            }
            sa_attr::NODE_RECORD if table_ok => match self.node_records(v, req) {
                Ok(t) => (t.status(m), NodeRecord::SIZE, Some(t)),
                Err(st) => (st, NodeRecord::SIZE, None),
            },
            sa_attr::PORT_INFO_RECORD if table_ok => match self.port_info_records(v, req) {
                Ok(t) => (t.status(m), PortInfoRecord::SIZE, Some(t)),
                Err(st) => (st, PortInfoRecord::SIZE, None),
            },
            sa_attr::LINK_RECORD if table_ok => match link_records(v, req) {
                Ok(t) => (t.status(m), LinkRecord::SIZE, Some(t)),
                Err(st) => (st, LinkRecord::SIZE, None),
            },
            sa_attr::SWITCH_INFO_RECORD if table_ok => match switch_info_records(v, req) {
                Ok(t) => (t.status(m), SwitchInfoRecord::SIZE, Some(t)),
                Err(st) => (st, SwitchInfoRecord::SIZE, None),
            },
            // A method the SA class has, on an attribute this SA does not serve with it.
            _ => (status::ATTR_UNSUPPORTED, 0, None),
        }
    }

    /// One end of a path from the query: the GID (when its bit is set) or the LID. `Ok(None)`
    /// when neither is given.
    fn end_port(
        &self,
        f: &Fabric,
        mask: u64,
        gid: (u64, Gid),
        lid: (u64, u16),
    ) -> Result<Option<PortId>, u16> {
        let by_gid = if mask & gid.0 != 0 {
            if gid.1.prefix != DEFAULT_GID_PREFIX {
                return Err(sa_status::INVALID_GID);
            }
            Some(
                *self
                    .by_guid
                    .get(&gid.1.guid)
                    .ok_or(sa_status::INVALID_GID)?,
            )
        } else {
            None
        };
        let by_lid = if mask & lid.0 != 0 {
            Some(f.lid_port(lid.1).ok_or(sa_status::NO_RECORDS)?)
        } else {
            None
        };
        match (by_gid, by_lid) {
            (Some(a), Some(b)) if a != b => Err(sa_status::NO_RECORDS),
            (a, b) => Ok(a.or(b)),
        }
    }

    /// The PathRecord of the query's (source, destination), or the status that says why
    /// there is none.
    fn path_record(&self, v: &View<'_, '_>, req: &SaRequest) -> Result<PathRecord, u16> {
        let f = v.f;
        let q = PathRecord::decode(&req.data).ok_or(sa_status::REQ_INVALID)?;
        let mask = req.comp_mask;
        let src = self.end_port(f, mask, (pr_mask::SGID, q.sgid), (pr_mask::SLID, q.slid))?;
        let dst = self.end_port(f, mask, (pr_mask::DGID, q.dgid), (pr_mask::DLID, q.dlid))?;
        let (Some(src), Some(dst)) = (src, dst) else {
            // All paths from (or to) a port need a table larger than one MAD.
            return Err(if req.hdr.method == method::GET {
                sa_status::INSUFFICIENT_COMPONENTS
            } else {
                sa_status::NO_RESOURCES
            });
        };
        let fw = Forward::new(f, v.plane, v.tables);
        let (dlid, sl) =
            self.dlid_sl(v, src, dst, (mask & pr_mask::DLID != 0).then_some(q.dlid))?;
        let (mtu, rate) = walk(&fw, v.port_info, src, dst, dlid).ok_or(sa_status::NO_RECORDS)?;
        // Reversible: the way back delivers too.
        let (back, _) = self.dlid_sl(v, dst, src, None).unwrap_or((0, 0));
        let reversible = back != 0 && walk(&fw, v.port_info, dst, src, back).is_some();
        let loopback = src == dst;
        let r = PathRecord {
            service_id: if mask & pr_mask::SERVICE_ID != 0 {
                q.service_id
            } else {
                0
            },
            dgid: Gid {
                prefix: DEFAULT_GID_PREFIX,
                guid: f.shown_port_guid(dst),
            },
            sgid: Gid {
                prefix: DEFAULT_GID_PREFIX,
                guid: f.shown_port_guid(src),
            },
            dlid,
            slid: if mask & pr_mask::SLID != 0 {
                q.slid
            } else {
                f.port(src).lid
            },
            // OpenSM sets a hop limit only for a query by DGID (a path that may leave the
            // subnet).
            hop_limit: if mask & pr_mask::DGID != 0 { 0xff } else { 0 },
            reversible,
            numb_path: 0,
            pkey: 0xffff,
            sl,
            mtu_selector: 2,
            mtu,
            rate_selector: 2,
            rate,
            pkt_life_selector: 2,
            pkt_life: if loopback { 0 } else { PKT_LIFE },
            ..Default::default()
        };
        // The query's other components the path must meet.
        let meets = |bit: u64, ok: bool| mask & bit == 0 || ok;
        let ok = meets(pr_mask::PKEY, q.pkey & 0x7fff == 0x7fff)
            && meets(pr_mask::SL, q.sl == sl)
            && meets(pr_mask::REVERSIBLE, !q.reversible || reversible)
            && meets(
                pr_mask::MTU,
                selected(
                    q.mtu_selector,
                    q.mtu,
                    mtu,
                    mask & pr_mask::MTU_SELECTOR != 0,
                ),
            )
            && meets(
                pr_mask::RATE,
                selected(
                    q.rate_selector,
                    q.rate,
                    rate,
                    mask & pr_mask::RATE_SELECTOR != 0,
                ),
            )
            && meets(
                pr_mask::PKT_LIFE,
                selected(
                    q.pkt_life_selector,
                    q.pkt_life,
                    r.pkt_life,
                    mask & pr_mask::PKT_LIFE_SELECTOR != 0,
                ),
            );
        if !ok {
            return Err(sa_status::NO_RECORDS);
        }
        Ok(r)
    }

    /// The DLID and SL source port `src` uses to reach `dst` now. `asked`: the DLID of the
    /// query, kept when it is one of `dst`'s LIDs and no repair says otherwise.
    fn dlid_sl(
        &self,
        v: &View<'_, '_>,
        src: PortId,
        dst: PortId,
        asked: Option<u16>,
    ) -> Result<(u16, u8), u16> {
        let f = v.f;
        let base = f.port(dst).lid;
        let ends = (v.plane.end_index(src), v.plane.end_index(dst));
        let dlid = match (v.rftr, ends) {
            (Some(r), (Some(s), Some(d))) if s != d => r.dlid(s, d).ok_or(sa_status::NO_RECORDS)?,
            _ => asked
                .filter(|&l| f.lid_port(l) == Some(dst))
                .unwrap_or(base),
        };
        // Path SLs are kept per end-port source; a switch sends on SL 0.
        let sl = ends.0.map_or(0, |s| v.tables.path_sl.get(s as usize, dlid));
        Ok((dlid, sl))
    }

    fn node_records(&self, v: &View<'_, '_>, req: &SaRequest) -> Result<Table, u16> {
        let f = v.f;
        let mask = req.comp_mask;
        if mask >> NR_FIELDS.len() != 0 {
            return Err(sa_status::REQ_INVALID);
        }
        let q = &req.data[..NodeRecord::SIZE];
        let mut t = Table::new(NodeRecord::SIZE);
        let one = |n: NodeId, p: PortId, t: &mut Table| {
            let mut info = self.node_info.get(n.idx()).copied().unwrap_or_default();
            info.port_guid = f.shown_port_guid(p);
            info.local_port = f.port(p).num;
            let rec = NodeRecord {
                lid: f.port(p).lid,
                info,
                desc: attr::node_desc_encode(&f.node(n).desc),
            }
            .encode();
            let matches = NR_FIELDS
                .iter()
                .enumerate()
                .all(|(bit, &(a, b))| mask & (1 << bit) == 0 || rec[a..b] == q[a..b]);
            matches && !t.push(&rec)
        };
        // One record per switch (port 0) and per CA port, as OpenSM gives them.
        for &n in &f.switches {
            if one(n, f.port_id(n, 0), &mut t) {
                return Ok(t);
            }
        }
        for &p in &f.end_ports {
            if one(f.port(p).node, p, &mut t) {
                return Ok(t);
            }
        }
        Ok(t)
    }

    fn port_info_records(&self, v: &View<'_, '_>, req: &SaRequest) -> Result<Table, u16> {
        let f = v.f;
        let mask = req.comp_mask;
        if mask & !(pir_mask::LID | pir_mask::PORT_NUM | pir_mask::OPTIONS) != 0 {
            return Err(sa_status::REQ_INVALID);
        }
        let q = PortInfoRecord::decode(&req.data).ok_or(sa_status::REQ_INVALID)?;
        let mut t = Table::new(PortInfoRecord::SIZE);
        let ports: Box<dyn Iterator<Item = PortId>> = if mask & pir_mask::LID != 0 {
            // Only the ports of the node that owns the LID.
            match f.lid_port(q.lid) {
                Some(p) if f.is_switch(f.port(p).node) => Box::new(f.node_ports(f.port(p).node)),
                Some(p) => Box::new(std::iter::once(p)),
                None => Box::new(std::iter::empty()),
            }
        } else {
            Box::new(
                f.switches
                    .iter()
                    .flat_map(|&n| f.node_ports(n))
                    .chain(f.end_ports.iter().copied()),
            )
        };
        for p in ports {
            let port = f.port(p);
            let lid = if f.is_switch(port.node) {
                f.switch_lid(port.node)
            } else {
                port.lid
            };
            if mask & pir_mask::PORT_NUM != 0 && port.num != q.port_num {
                continue;
            }
            let rec = PortInfoRecord {
                lid,
                port_num: port.num,
                options: 0,
                port_info: v.port_info.get(p.idx()).copied().unwrap_or_default().0,
            };
            if !t.push(&rec.encode()) {
                break;
            }
        }
        Ok(t)
    }
}

/// LinkRecords: both directions of every cable alive, matched on the fields the mask
/// selects (a switch named by its LID, an end port by its base LID).
fn link_records(v: &View<'_, '_>, req: &SaRequest) -> Result<Table, u16> {
    let f = v.f;
    let mask = req.comp_mask;
    let known = lr_mask::FROM_LID | lr_mask::FROM_PORT | lr_mask::TO_PORT | lr_mask::TO_LID;
    if mask & !known != 0 {
        return Err(sa_status::REQ_INVALID);
    }
    let q = LinkRecord::decode(&req.data).ok_or(sa_status::REQ_INVALID)?;
    let lid = |p: PortId| {
        let port = f.port(p);
        if f.is_switch(port.node) {
            f.switch_lid(port.node)
        } else {
            port.lid
        }
    };
    let mut t = Table::new(LinkRecord::SIZE);
    'links: for (i, l) in f.links.iter().enumerate() {
        if v.mask.link_dead(fabric::LinkId(i as u32)) {
            continue;
        }
        for (a, b) in [(l.a, l.b), (l.b, l.a)] {
            let r = LinkRecord {
                from_lid: lid(a),
                from_port: f.port(a).num,
                to_port: f.port(b).num,
                to_lid: lid(b),
            };
            if r.matches(&q, mask) && !t.push(&r.encode()) {
                break 'links;
            }
        }
    }
    // In LID and port order, as OpenSM lists them: the big-endian bytes sort alike (on the
    // stack: a table holds at most 25).
    if t.count <= t.cap {
        let mut recs = [[0u8; LinkRecord::SIZE]; SA_DATA / LinkRecord::SIZE];
        for (r, c) in recs.iter_mut().zip(t.buf.chunks_exact(LinkRecord::SIZE)) {
            r.copy_from_slice(c);
        }
        recs[..t.count].sort_unstable();
        for (r, c) in recs[..t.count]
            .iter()
            .zip(t.buf.chunks_exact_mut(LinkRecord::SIZE))
        {
            c.copy_from_slice(r);
        }
    }
    Ok(t)
}

/// SwitchInfoRecords: every live switch's LID and the SwitchInfo the SM last read or set.
fn switch_info_records(v: &View<'_, '_>, req: &SaRequest) -> Result<Table, u16> {
    let f = v.f;
    let mask = req.comp_mask;
    if mask & !swir_mask::LID != 0 {
        return Err(sa_status::REQ_INVALID);
    }
    let q = SwitchInfoRecord::decode(&req.data).ok_or(sa_status::REQ_INVALID)?;
    let mut t = Table::new(SwitchInfoRecord::SIZE);
    for &n in &f.switches {
        let lid = f.switch_lid(n);
        if v.mask.node_dead(n) || (mask & swir_mask::LID != 0 && lid != q.lid) {
            continue;
        }
        let si = v.switch_info.get(n.idx()).copied().unwrap_or_default();
        let mut info = [0u8; SWITCH_INFO_IN_RECORD];
        info.copy_from_slice(&si.0[..SWITCH_INFO_IN_RECORD]);
        if !t.push(&SwitchInfoRecord { lid, info }.encode()) {
            break;
        }
    }
    Ok(t)
}

/// Whether `have` meets a query field `want` under `selector` (0 greater than, 1 less than,
/// 2 exactly, 3 largest available); without a selector in the query, exactly.
fn selected(selector: u8, want: u8, have: u8, with_selector: bool) -> bool {
    match (with_selector, selector) {
        (true, 0) => have > want,
        (true, 1) => have < want,
        (true, 3) => true,
        _ => have == want,
    }
}

/// Walks `dlid` from `src` to `dst` through the tables: `None` when it does not deliver,
/// else the smallest MTU and rate of the ports on the way.
fn walk(
    fw: &Forward<'_>,
    pi: &[PortInfo],
    src: PortId,
    dst: PortId,
    dlid: u16,
) -> Option<(u8, u8)> {
    let f = fw.f;
    let mut mtu = u8::MAX;
    let mut rate = u8::MAX;
    let mut see = |p: PortId| {
        if let Some(i) = pi.get(p.idx()) {
            if i.mtu_cap() != 0 {
                mtu = mtu.min(i.mtu_cap());
            }
            if let Some(r) = sa::port_rate(i) {
                rate = if rate == u8::MAX {
                    r
                } else {
                    rate_min(rate, r)
                };
            }
        }
    };
    see(src);
    if src != dst {
        let mut visit = |st: &routing::forward::WalkStep| {
            see(f.channel_src(st.ch));
            see(f.channel_dst(st.ch));
            Control::Continue
        };
        let end = match fw.plane.end_index(src) {
            Some(e) => fw.walk_pair(e, dlid, dst, &mut visit),
            // A switch: from its port 0.
            None => {
                let s = f.switch_of(f.port(src).node).map_or(u32::MAX, |s| s.0);
                fw.walk_from(&fw.column(dlid), s, 0, dst, &mut visit)
            }
        };
        if !matches!(end, WalkEnd::Delivered { .. }) {
            return None;
        }
    }
    // Ports that report nothing (a switch's port 0) leave the defaults: 2048 bytes, 10 Gb/s.
    Some((
        if mtu == u8::MAX { 4 } else { mtu },
        if rate == u8::MAX { 3 } else { rate },
    ))
}

/// The slower of two rate codes (codes are not ordered by speed).
fn rate_min(a: u8, b: u8) -> u8 {
    let g = |c| sa::rate_half_gbps(c).unwrap_or(u32::MAX);
    if g(a) <= g(b) {
        a
    } else {
        b
    }
}
