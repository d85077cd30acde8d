//! Multicast membership through the SA (MCMemberRecord, attribute 0x38): the group table
//! behind joins (`SubnAdmSet`), leaves (`SubnAdmDelete`) and queries (`SubnAdmGet`,
//! `SubnAdmGetTable`), as OpenSM's `osm_sa_mcmember_record.c` behaves where IBA leaves room.
//! No routing and no I/O here: a request becomes a [`Plan`] (nothing changed yet), which
//! [`crate::mcast::McastState`] routes and then [`McGroups::commit`]s, so a group whose tree
//! cannot be routed is left as it was.
//!
//! **Join** (Set). The mask must hold MGID, PortGID and JoinState
//! (`ERR_REQ_INSUFFICIENT_COMPONENTS`); the PortGID must have the subnet prefix
//! (`ERR_INVALID_GID`) and name a channel adapter port of the fabric (else
//! `ERR_REQ_INVALID`, as for a JoinState of 0). An MGID naming a group adds the port, its
//! JoinState OR-ed with what it held (full member 0x1, non-member 0x2, send-only non-member
//! 0x4, send-only full member 0x8); the fields the mask selects must match the group's
//! (Q_Key, P_Key, TClass, SL, FlowLabel, HopLimit; MTU and rate by their selectors) and the
//! port must carry the group's MTU and rate, else `ERR_REQ_INVALID`. An MGID of zero, or one
//! naming no group, creates a group when the join is a full member's (0x1 or 0x8; else
//! `ERR_REQ_INVALID`) and the mask holds Q_Key, TClass, P_Key, FlowLabel and SL, as OpenSM
//! requires (else `ERR_REQ_INSUFFICIENT_COMPONENTS`); MTU and rate are the creator port's
//! unless asked for, hop limit and scope are optional. The P_Key must be of the default
//! partition (this SM programs no P_Key tables). A zero MGID gets a fresh one: `ff1S:a01b`,
//! the subnet prefix, and a 32-bit counter (S: the scope asked for, else 2, link-local),
//! OpenSM's SA-assigned form, skipping MGIDs in use. The group's MLID is the one asked for
//! when the mask holds MLID and it is free in the [`MlidPool`], else the pool's lowest free
//! one (`ERR_NO_RESOURCES` when none is). A member that joined itself can be changed only by
//! itself; one joined by another port (ProxyJoin) by anyone (one partition here).
//!
//! **Leave** (Delete). Same mask; the group must exist, the port be a member holding every
//! JoinState bit the request clears and at least one (else `ERR_REQ_INVALID`). A member
//! left with no bit is removed; a group left with no full member is deleted with its
//! remaining members and its MLID goes back to the pool, but for the groups of
//! `SmConfig::mcast` (`--mcast`), which are permanent like OpenSM's well-known groups. The
//! answer (a DeleteResp) carries the record with the JoinState the port still holds.
//!
//! **Query** (Get, GetTable). Groups matched on MGID, MLID and the other fields the mask
//! selects. With a PortGID in the mask: the groups that port is a member of, one record
//! each with its JoinState and ProxyJoin. Without: one record per group with PortGID and
//! JoinState zero, as OpenSM answers a requester without an SM_Key; with a non-zero SM_Key
//! (this SA has none to compare with) one record per member. A Get needs exactly one record.
//!
//! Answers carry the group's fields with selectors "exactly" (2) for MTU, rate and packet
//! lifetime, as OpenSM's do; a join's, the JoinState the port holds after it (the bits it
//! held OR-ed with those asked).

use crate::mlid::MlidPool;
use fabric::{Fabric, PortId};
use mad::attr::PortInfo;
use mad::records::{join_state as js, mcr_mask, McMemberRecord};
use mad::sa::{self, method, sa_status, Gid, SaRequest, DEFAULT_GID_PREFIX};
use routing::mcast::{Group, Member};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The Q_Key of the IPoIB groups OpenSM makes from its partition configuration; the groups
/// of `--mcast` get it.
pub const IPOIB_QKEY: u32 = 0x0000_0b1b;
/// MTU code (2048 bytes) and rate code (10 Gb/s) of a `--mcast` group, OpenSM's defaults for
/// partition groups (lowered to the slowest member's when a member cannot carry them).
const DEFAULT_MTU: u8 = 4;
const DEFAULT_RATE: u8 = 3;
/// OpenSM's default subnet timeout, the packet lifetime of a group that names none.
const PKT_LIFE: u8 = 0x12;
/// Link-local scope.
const LINK_LOCAL: u8 = 2;
/// Components every join and leave names.
pub const JOIN_MASK: u64 = mcr_mask::MGID | mcr_mask::PORT_GID | mcr_mask::JOIN_STATE;
/// Components a join that creates a group names besides (OpenSM's
/// `REQUIRED_MC_CREATE_COMP_MASK`).
pub const CREATE_MASK: u64 =
    mcr_mask::QKEY | mcr_mask::TCLASS | mcr_mask::PKEY | mcr_mask::FLOW_LABEL | mcr_mask::SL;
/// JoinState bits that keep a group alive.
const FULL_ANY: u8 = js::FULL | js::SEND_ONLY_FULL;
/// JoinState bits that receive the group's packets.
const RECEIVES: u8 = js::FULL | js::NON;
/// Tries for a fresh MGID before giving up (OpenSM's bound).
const MGID_TRIES: u32 = 1000;

/// A port's membership in a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Membership {
    /// [`mad::records::join_state`] bits, never 0.
    pub join_state: u8,
    /// Joined by another port (ProxyJoin).
    pub proxy: bool,
}

/// A multicast group as the SA holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McGroup {
    /// 0 for a `--mcast` group without one.
    pub mgid: u128,
    pub mlid: u16,
    pub qkey: u32,
    pub pkey: u16,
    pub tclass: u8,
    /// MTU code.
    pub mtu: u8,
    /// Rate code.
    pub rate: u8,
    pub pkt_life: u8,
    pub sl: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub scope: u8,
    /// A `--mcast` group: never deleted, its MLID never freed.
    pub permanent: bool,
    pub members: BTreeMap<PortId, Membership>,
}

impl McGroup {
    /// Whether some member keeps the group alive.
    pub fn has_full_member(&self) -> bool {
        self.members.values().any(|m| m.join_state & FULL_ANY != 0)
    }

    /// The group as `routing::mcast` routes it: members that receive (full and non-members)
    /// are full, send-only ones send only.
    pub fn routing_group(&self) -> Group {
        Group {
            mlid: self.mlid,
            mgid: (self.mgid != 0).then_some(self.mgid),
            sl: self.sl,
            members: self
                .members
                .iter()
                .map(|(&port, m)| Member {
                    port,
                    full: m.join_state & RECEIVES != 0,
                })
                .collect(),
        }
    }

    /// The group's record; with a member, its PortGID, JoinState and ProxyJoin.
    pub fn record(&self, f: &Fabric, member: Option<(PortId, Membership)>) -> McMemberRecord {
        let (port_gid, state, proxy) = match member {
            Some((p, m)) => (port_gid(f, p), m.join_state, m.proxy),
            None => (Gid::default(), 0, false),
        };
        McMemberRecord {
            mgid: self.mgid,
            port_gid,
            qkey: self.qkey,
            mlid: self.mlid,
            mtu_selector: 2,
            mtu: self.mtu,
            tclass: self.tclass,
            pkey: self.pkey,
            rate_selector: 2,
            rate: self.rate,
            pkt_life_selector: 2,
            pkt_life: self.pkt_life,
            sl: self.sl,
            flow_label: self.flow_label,
            hop_limit: self.hop_limit,
            scope: self.scope,
            join_state: state,
            proxy_join: proxy,
        }
    }
}

fn port_gid(f: &Fabric, p: PortId) -> Gid {
    Gid {
        prefix: DEFAULT_GID_PREFIX,
        guid: f.shown_port_guid(p),
    }
}

/// A join or a leave, checked and not applied yet.
#[derive(Clone, Debug)]
pub struct Plan {
    /// A join (Set); `false`: a leave (Delete).
    pub join: bool,
    pub mlid: u16,
    /// The group after the change; `None`: deleted.
    pub group: Option<McGroup>,
    /// The join creates the group.
    pub created: bool,
    /// The member port.
    pub port: PortId,
    /// Its JoinState after the change (0: no longer a member).
    pub join_state: u8,
    /// Whether the group's tree changes: a member added or removed, one that starts or stops
    /// receiving, the group created or deleted.
    pub tree_changes: bool,
    /// The record to answer with.
    pub record: McMemberRecord,
    /// The MGID counter after the change.
    next_mgid: u32,
}

/// Every group the SA holds, by MLID, and the MLIDs in use.
#[derive(Clone, Debug)]
pub struct McGroups {
    groups: BTreeMap<u16, McGroup>,
    by_mgid: HashMap<u128, u16>,
    /// Channel adapter ports by port GUID: who may be a member.
    by_guid: HashMap<u64, PortId>,
    pool: MlidPool,
    next_mgid: u32,
}

/// Whether MAD `m` is an SA MAD about MCMemberRecord.
pub fn is_mcmember(m: &[u8]) -> bool {
    m.len() >= 18
        && m[1] == sa::CLASS_SUBN_ADM
        && u16::from_be_bytes([m[16], m[17]]) == sa::sa_attr::MCMEMBER_RECORD
}

impl McGroups {
    /// No group yet; MLIDs from `pool`.
    pub fn new(f: &Fabric, pool: MlidPool) -> McGroups {
        let by_guid = f.end_ports.iter().map(|&p| (f.port(p).guid, p)).collect();
        McGroups {
            groups: BTreeMap::new(),
            by_mgid: HashMap::new(),
            by_guid,
            pool,
            next_mgid: 0,
        }
    }

    /// Adds a group of `SmConfig::mcast` (permanent; full members join as full members,
    /// send-only ones as send-only non-members). Its MLID is taken from the pool when the
    /// pool holds it. `false` when a group already has that MLID (nothing added).
    pub fn add_permanent(&mut self, port_info: &[PortInfo], g: &Group) -> bool {
        if self.groups.contains_key(&g.mlid) {
            return false;
        }
        // Reserved when the pool holds it (beyond the pool's range there is nothing to
        // reserve: the pool never hands it out).
        if self.pool.peek(Some(g.mlid)) == Some(g.mlid) {
            self.pool.alloc(Some(g.mlid));
        }
        let mut mtu = DEFAULT_MTU;
        let mut rate = DEFAULT_RATE;
        for m in &g.members {
            let (pm, pr) = port_caps(port_info.get(m.port.idx()));
            mtu = mtu.min(pm.unwrap_or(mtu));
            if let Some(r) = pr {
                if gbps(r) < gbps(rate) {
                    rate = r;
                }
            }
        }
        let members = g
            .members
            .iter()
            .map(|m| {
                let state = if m.full { js::FULL } else { js::SEND_ONLY_NON };
                (
                    m.port,
                    Membership {
                        join_state: state,
                        proxy: false,
                    },
                )
            })
            .collect();
        let mgid = g.mgid.unwrap_or(0);
        if mgid != 0 {
            self.by_mgid.entry(mgid).or_insert(g.mlid);
        }
        self.groups.insert(
            g.mlid,
            McGroup {
                mgid,
                mlid: g.mlid,
                qkey: IPOIB_QKEY,
                pkey: 0xffff,
                tclass: 0,
                mtu,
                rate,
                pkt_life: PKT_LIFE,
                sl: g.sl,
                flow_label: 0,
                hop_limit: 0,
                scope: mgid_scope(mgid).unwrap_or(LINK_LOCAL),
                permanent: true,
                members,
            },
        );
        true
    }

    /// The groups, by MLID.
    pub fn groups(&self) -> impl Iterator<Item = &McGroup> {
        self.groups.values()
    }

    /// The group of `mlid`.
    pub fn group(&self, mlid: u16) -> Option<&McGroup> {
        self.groups.get(&mlid)
    }

    /// The group named by `mgid`.
    pub fn by_mgid(&self, mgid: u128) -> Option<&McGroup> {
        self.by_mgid.get(&mgid).and_then(|m| self.groups.get(m))
    }

    /// The MLIDs in use.
    pub fn pool(&self) -> &MlidPool {
        &self.pool
    }

    /// Checks a join (see the module documentation) from `requester`. `Err`: the MAD status.
    pub fn plan_join(
        &self,
        f: &Fabric,
        port_info: &[PortInfo],
        req: &SaRequest,
        requester: Option<PortId>,
    ) -> Result<Plan, u16> {
        let mask = req.comp_mask;
        let (q, port) = self.member_request(req)?;
        let want = q.join_state;
        if want == 0 {
            return Err(sa_status::REQ_INVALID);
        }
        if mask & mcr_mask::PKEY != 0 && q.pkey & 0x7fff == 0 {
            return Err(sa_status::REQ_INVALID);
        }
        let caps = port_caps(port_info.get(port.idx()));
        let proxy = requester != Some(port);
        let existing = (q.mgid != 0).then(|| self.by_mgid(q.mgid)).flatten();
        let (mut g, created, next_mgid) = match existing {
            Some(g) => {
                if !other_fields_match(mask, &q, g) || !selectors_match(mask, &q, g) {
                    return Err(sa_status::REQ_INVALID);
                }
                (g.clone(), false, self.next_mgid)
            }
            None => {
                if want & FULL_ANY == 0 {
                    return Err(sa_status::REQ_INVALID);
                }
                if mask & CREATE_MASK != CREATE_MASK {
                    return Err(sa_status::INSUFFICIENT_COMPONENTS);
                }
                let (g, next) = self.new_group(mask, &q, caps)?;
                (g, true, next)
            }
        };
        if !carries(caps, &g) {
            return Err(sa_status::REQ_INVALID);
        }
        let old = g.members.get(&port).copied();
        if let Some(m) = old {
            if !m.proxy && proxy {
                return Err(sa_status::REQ_INVALID);
            }
        }
        let state = old.map_or(0, |m| m.join_state) | want;
        let member = Membership {
            join_state: state,
            proxy: old.map_or(proxy, |m| m.proxy),
        };
        g.members.insert(port, member);
        let receives = |s: u8| s & RECEIVES != 0;
        let tree_changes = created || old.is_none_or(|m| receives(m.join_state) != receives(state));
        Ok(Plan {
            join: true,
            mlid: g.mlid,
            record: g.record(f, Some((port, member))),
            group: Some(g),
            created,
            port,
            join_state: state,
            tree_changes,
            next_mgid,
        })
    }

    /// Checks a leave (see the module documentation) from `requester`.
    pub fn plan_leave(
        &self,
        f: &Fabric,
        req: &SaRequest,
        requester: Option<PortId>,
    ) -> Result<Plan, u16> {
        let (q, port) = self.member_request(req)?;
        let g = self.by_mgid(q.mgid).ok_or(sa_status::REQ_INVALID)?;
        let old = *g.members.get(&port).ok_or(sa_status::REQ_INVALID)?;
        let clear = q.join_state;
        if clear & old.join_state == 0 || clear & !old.join_state != 0 {
            return Err(sa_status::REQ_INVALID);
        }
        if !old.proxy && requester != Some(port) {
            return Err(sa_status::REQ_INVALID);
        }
        let mut g = g.clone();
        let state = old.join_state & !clear;
        let member = Membership {
            join_state: state,
            proxy: old.proxy,
        };
        if state == 0 {
            g.members.remove(&port);
        } else {
            g.members.insert(port, member);
        }
        let record = g.record(f, Some((port, member)));
        let deleted = !g.permanent && !g.has_full_member();
        let receives = |s: u8| s & RECEIVES != 0;
        Ok(Plan {
            join: false,
            mlid: g.mlid,
            tree_changes: deleted || receives(old.join_state) != receives(state) || state == 0,
            group: (!deleted).then_some(g),
            created: false,
            port,
            join_state: state,
            record,
            next_mgid: self.next_mgid,
        })
    }

    /// The record of a join or leave and its port: the mask's components, the PortGID's
    /// prefix and port, the MTU and rate codes when selected.
    fn member_request(&self, req: &SaRequest) -> Result<(McMemberRecord, PortId), u16> {
        if req.comp_mask & JOIN_MASK != JOIN_MASK {
            return Err(sa_status::INSUFFICIENT_COMPONENTS);
        }
        let q = McMemberRecord::decode(&req.data).map_err(|_| sa_status::REQ_INVALID)?;
        if !codes_valid(req.comp_mask, &q) {
            return Err(sa_status::REQ_INVALID);
        }
        if q.port_gid.prefix != DEFAULT_GID_PREFIX {
            return Err(sa_status::INVALID_GID);
        }
        let port = *self
            .by_guid
            .get(&q.port_gid.guid)
            .ok_or(sa_status::REQ_INVALID)?;
        Ok((q, port))
    }

    /// A group the join `q` creates, and the MGID counter after it.
    fn new_group(
        &self,
        mask: u64,
        q: &McMemberRecord,
        caps: (Option<u8>, Option<u8>),
    ) -> Result<(McGroup, u32), u16> {
        if q.pkey & 0x7fff != 0x7fff {
            // Not the default partition, the only one this SM has.
            return Err(sa_status::REQ_INVALID);
        }
        let scope = if mask & mcr_mask::SCOPE != 0 {
            q.scope
        } else {
            LINK_LOCAL
        };
        let (mgid, next) = if q.mgid == 0 {
            self.fresh_mgid(scope).ok_or(sa_status::NO_RESOURCES)?
        } else if mgid_valid(q.mgid) {
            (q.mgid, self.next_mgid)
        } else {
            return Err(sa_status::REQ_INVALID);
        };
        let requested = (mask & mcr_mask::MLID != 0 && q.mlid != 0).then_some(q.mlid);
        let mlid = self.pool.peek(requested).ok_or(sa_status::NO_RESOURCES)?;
        let both = |a: u64, b: u64| mask & a != 0 && mask & b != 0;
        let mtu = if both(mcr_mask::MTU, mcr_mask::MTU_SELECTOR) {
            chosen(q.mtu_selector, q.mtu, caps.0, |x| x as u32)
                .filter(|m| (1..=5).contains(m))
                .ok_or(sa_status::REQ_INVALID)?
        } else {
            caps.0.unwrap_or(DEFAULT_MTU)
        };
        let rate = if both(mcr_mask::RATE, mcr_mask::RATE_SELECTOR) {
            chosen(q.rate_selector, q.rate, caps.1, gbps).ok_or(sa_status::REQ_INVALID)?
        } else {
            caps.1.unwrap_or(DEFAULT_RATE)
        };
        let g = McGroup {
            mgid,
            mlid,
            qkey: q.qkey,
            pkey: q.pkey,
            tclass: q.tclass,
            mtu,
            rate,
            pkt_life: if mask & mcr_mask::PKT_LIFE != 0 {
                q.pkt_life
            } else {
                PKT_LIFE
            },
            sl: q.sl,
            flow_label: q.flow_label,
            hop_limit: if mask & mcr_mask::HOP_LIMIT != 0 {
                q.hop_limit
            } else {
                0
            },
            scope,
            permanent: false,
            members: BTreeMap::new(),
        };
        Ok((g, next))
    }

    /// An unused SA-assigned MGID of `scope`, and the counter after it.
    fn fresh_mgid(&self, scope: u8) -> Option<(u128, u32)> {
        let head = (0xff10u128 | (scope & 0xf) as u128) << 112 | 0xa01bu128 << 96;
        let base = head | (DEFAULT_GID_PREFIX as u128) << 32;
        (0..MGID_TRIES).find_map(|i| {
            let n = self.next_mgid.wrapping_add(i);
            let mgid = base | n as u128;
            (!self.by_mgid.contains_key(&mgid)).then(|| (mgid, n.wrapping_add(1)))
        })
    }

    /// Applies a plan made against this table (and not applied yet). Panics only on a
    /// plan made against another state (a bug, not wire input).
    pub fn commit(&mut self, plan: Plan) {
        self.next_mgid = plan.next_mgid;
        let mlid = plan.mlid;
        match plan.group {
            Some(g) => {
                if plan.created {
                    let got = self.pool.alloc(Some(mlid));
                    assert_eq!(got, Some(mlid), "a plan made against this pool");
                    self.by_mgid.insert(g.mgid, mlid);
                }
                self.groups.insert(mlid, g);
            }
            None => {
                if let Some(g) = self.groups.remove(&mlid) {
                    if self.by_mgid.get(&g.mgid) == Some(&mlid) {
                        self.by_mgid.remove(&g.mgid);
                    }
                    self.pool.free(mlid);
                }
            }
        }
    }

    /// The records a Get or GetTable matches (see the module documentation).
    pub fn query(&self, f: &Fabric, req: &SaRequest) -> Result<Vec<McMemberRecord>, u16> {
        let mask = req.comp_mask;
        let q = McMemberRecord::decode(&req.data).map_err(|_| sa_status::REQ_INVALID)?;
        if !codes_valid(mask, &q) {
            return Err(sa_status::REQ_INVALID);
        }
        let port = if mask & mcr_mask::PORT_GID != 0 {
            match self.by_guid.get(&q.port_gid.guid) {
                Some(&p) if q.port_gid.prefix == DEFAULT_GID_PREFIX => Some(p),
                _ => return Ok(Vec::new()),
            }
        } else {
            None
        };
        let mut state_mask = 0u8;
        if mask & mcr_mask::SCOPE != 0 {
            state_mask |= 0xf0;
        }
        if mask & mcr_mask::JOIN_STATE != 0 {
            state_mask |= 0x0f;
        }
        let want = (q.scope << 4 | q.join_state) & state_mask;
        let state_ok = |g: &McGroup, s: u8| (g.scope << 4 | s) & state_mask == want;
        let mut out = Vec::new();
        for g in self.groups.values() {
            if (mask & mcr_mask::MGID != 0 && g.mgid != q.mgid)
                || (mask & mcr_mask::MLID != 0 && g.mlid != q.mlid)
                || !other_fields_match(mask, &q, g)
                || !selectors_match(mask, &q, g)
            {
                continue;
            }
            let proxy_ok =
                |m: &Membership| mask & mcr_mask::PROXY_JOIN == 0 || m.proxy == q.proxy_join;
            match port {
                Some(p) => {
                    if let Some(&m) = g.members.get(&p) {
                        if state_ok(g, m.join_state) && proxy_ok(&m) {
                            out.push(g.record(f, Some((p, m))));
                        }
                    }
                }
                None if req.sm_key != 0 => {
                    for (&p, &m) in &g.members {
                        if state_ok(g, m.join_state) && proxy_ok(&m) {
                            out.push(g.record(f, Some((p, m))));
                        }
                    }
                }
                None => {
                    // Group records: the scope is compared, the JoinState (zeroed) is not.
                    if (g.scope << 4) & state_mask & 0xf0 == want & 0xf0 {
                        out.push(g.record(f, None));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// MTU code and rate code of a port, when its PortInfo says.
fn port_caps(pi: Option<&PortInfo>) -> (Option<u8>, Option<u8>) {
    let mtu = pi.map(|p| p.mtu_cap()).filter(|m| (1..=5).contains(m));
    (mtu, pi.and_then(sa::port_rate))
}

/// Gb/s × 2 of a rate code (0 for a code IBA does not define).
fn gbps(code: u8) -> u32 {
    sa::rate_half_gbps(code).unwrap_or(0)
}

/// Whether a port of capabilities `caps` carries group `g`'s MTU and rate (what the port
/// does not say is not held against it).
fn carries(caps: (Option<u8>, Option<u8>), g: &McGroup) -> bool {
    caps.0.is_none_or(|m| m >= g.mtu) && caps.1.is_none_or(|r| gbps(r) >= gbps(g.rate))
}

/// MTU and rate codes of a join or query that selects them are codes IBA defines (OpenSM's
/// `mtu_is_valid`, `rate_is_valid`).
fn codes_valid(mask: u64, q: &McMemberRecord) -> bool {
    let both = |a: u64, b: u64| mask & a != 0 && mask & b != 0;
    (!both(mcr_mask::MTU, mcr_mask::MTU_SELECTOR) || sa::mtu_bytes(q.mtu).is_some())
        && (!both(mcr_mask::RATE, mcr_mask::RATE_SELECTOR) || sa::rate_half_gbps(q.rate).is_some())
}

/// The value a new group takes for a field asked for with `selector` and `want`, where the
/// creator's port has `port` (`key` orders values): exactly `want`; the port's when it is
/// greater (selector 0) or smaller (1) than `want`; the port's for "largest available".
/// `None`: not realizable.
fn chosen(selector: u8, want: u8, port: Option<u8>, key: impl Fn(u8) -> u32) -> Option<u8> {
    match selector {
        0 => port.filter(|&p| key(p) > key(want)),
        1 => port.filter(|&p| key(p) < key(want)),
        2 => Some(want),
        _ => port.or(Some(want)),
    }
}

/// The fields a join or query names that must equal the group's (OpenSM's
/// `validate_other_comp_fields`): Q_Key; P_Key (same partition, not both limited); TClass;
/// SL, FlowLabel, HopLimit.
fn other_fields_match(mask: u64, q: &McMemberRecord, g: &McGroup) -> bool {
    let is = |bit: u64, ok: bool| mask & bit == 0 || ok;
    is(mcr_mask::QKEY, q.qkey == g.qkey)
        && is(
            mcr_mask::PKEY,
            (q.pkey & 0x8000 != 0 || g.pkey & 0x8000 != 0) && q.pkey & 0x7fff == g.pkey & 0x7fff,
        )
        && is(mcr_mask::TCLASS, q.tclass == g.tclass)
        && is(mcr_mask::SL, q.sl == g.sl)
        && is(mcr_mask::FLOW_LABEL, q.flow_label == g.flow_label)
        && is(mcr_mask::HOP_LIMIT, q.hop_limit == g.hop_limit)
}

/// MTU and rate of the group against what a join or query asks by selector (OpenSM's
/// `validate_more_comp_fields`).
fn selectors_match(mask: u64, q: &McMemberRecord, g: &McGroup) -> bool {
    let fits = |sel: u8, want: u32, have: u32| match sel {
        0 => have > want,
        1 => have < want,
        2 => have == want,
        _ => true,
    };
    let both = |a: u64, b: u64| mask & a != 0 && mask & b != 0;
    (!both(mcr_mask::MTU, mcr_mask::MTU_SELECTOR)
        || fits(q.mtu_selector, q.mtu as u32, g.mtu as u32))
        && (!both(mcr_mask::RATE, mcr_mask::RATE_SELECTOR)
            || fits(q.rate_selector, gbps(q.rate), gbps(g.rate)))
}

/// The scope of a multicast GID (`None`: not one).
fn mgid_scope(mgid: u128) -> Option<u8> {
    (mgid >> 120 == 0xff).then_some((mgid >> 112) as u8 & 0xf)
}

/// Whether a requested MGID may name a new group (OpenSM's `validate_requested_mgid`,
/// IBA 4.1.1): a multicast GID; unless it is an IPoIB one (signature 0x401B or 0x601B), no
/// reserved flag and not the SA's own signature 0xA01B with link-local scope.
fn mgid_valid(mgid: u128) -> bool {
    let Some(scope) = mgid_scope(mgid) else {
        return false;
    };
    let flags = (mgid >> 116) as u8 & 0xf;
    let signature = (mgid >> 96) as u16;
    if signature == 0x401b || signature == 0x601b {
        return true;
    }
    flags & 0xe == 0 && !(signature == 0xa01b && scope == LINK_LOCAL)
}

/// A join or leave the SA served: what `fabroute sm --events` writes as `mcast_join` or
/// `mcast_leave`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McastChange {
    #[serde(skip)]
    pub join: bool,
    pub mlid: u16,
    /// The group's MGID, as an IPv6 address.
    pub mgid: String,
    /// The member port (`node/port`) and its GUID.
    pub port: String,
    pub port_guid: String,
    /// The JoinState the port holds after the change (0: no longer a member).
    pub join_state: u8,
    /// The join created the group; the leave deleted it (its MLID is free again).
    pub created: bool,
    pub deleted: bool,
    /// Members after the change.
    pub members: usize,
    /// The group's tree was routed again.
    pub rerouted: bool,
    /// MFT blocks pushed for it and SMPs of them without a good answer.
    pub mft_blocks: u64,
    pub failed_smps: u64,
    /// From the request's turn to the last MFT block confirmed (transport time).
    pub seconds: f64,
}

impl McastChange {
    /// The change a plan makes (before its blocks are pushed).
    pub fn of(f: &Fabric, plan: &Plan) -> McastChange {
        let p = f.port(plan.port);
        McastChange {
            join: plan.join,
            mlid: plan.mlid,
            mgid: std::net::Ipv6Addr::from(plan.record.mgid).to_string(),
            port: format!("{}/{}", f.node(p.node).name, p.num),
            port_guid: format!("{:#018x}", p.guid),
            join_state: plan.join_state,
            created: plan.created,
            deleted: !plan.join && plan.group.is_none(),
            members: plan.group.as_ref().map_or(0, |g| g.members.len()),
            rerouted: plan.tree_changes,
            mft_blocks: 0,
            failed_smps: 0,
            seconds: 0.0,
        }
    }
}

/// What the SA answers an MCMemberRecord request with.
#[derive(Clone, Debug, PartialEq)]
pub struct McAnswer {
    /// MAD status (0: records).
    pub status: u16,
    pub records: Vec<McMemberRecord>,
    /// The join or leave made, if any.
    pub change: Option<McastChange>,
}

impl McAnswer {
    /// An error answer.
    pub fn error(status: u16) -> McAnswer {
        McAnswer {
            status,
            records: Vec::new(),
            change: None,
        }
    }

    /// The answer to a query that matched `records` (Get: exactly one; GetTable: as many as
    /// one MAD holds).
    pub fn table(m: u8, records: Vec<McMemberRecord>) -> McAnswer {
        let cap = sa::SA_DATA / sa::padded(McMemberRecord::SIZE);
        let status = match (m, records.len()) {
            (method::GET, 0) => sa_status::NO_RECORDS,
            (method::GET, 1) => 0,
            (method::GET, _) => sa_status::TOO_MANY_RECORDS,
            (_, n) if n > cap => sa_status::NO_RESOURCES,
            _ => 0,
        };
        McAnswer {
            status,
            records: if status == 0 { records } else { Vec::new() },
            change: None,
        }
    }

    /// The answer when the SM holds no multicast state at all.
    pub fn without_groups(req: &SaRequest) -> McAnswer {
        match req.hdr.method {
            method::GET | method::GET_TABLE => McAnswer::table(req.hdr.method, Vec::new()),
            method::SET => McAnswer::error(sa_status::NO_RESOURCES),
            _ => McAnswer::error(sa_status::REQ_INVALID),
        }
    }
}
