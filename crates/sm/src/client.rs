//! A host's side of the SA, for multicast: who this port is (NodeInfo and PortInfo of the
//! own port by a directed-route SMP of no hops), then MCMemberRecord joins (`SubnAdmSet`)
//! and leaves (`SubnAdmDelete`) sent to the master SM the port knows of. What `fabroute
//! join` runs, against this crate's SA or OpenSM's alike; generic over the transport, so
//! the fake fabric serves it in tests as a umad port serves it on ibsim.
//!
//! Joins carry what OpenSM requires to create a group (MGID, PortGID, Q_Key, P_Key, TClass,
//! SL, FlowLabel, JoinState) with IPoIB's Q_Key, the default P_Key and SL 0, so a first join
//! creates the group and later ones match it. Each request is sent again after `timeout`,
//! `retries` times, with the same transaction ID, so that a late answer to the first send
//! is taken (a second leave of the same port would be refused).

use mad::records::{mcr_mask, McMemberRecord};
use mad::sa::{self, method, Gid, SaRequest, DEFAULT_GID_PREFIX};
use mad::{attr, Address, Method, Route, Smp, Transport};
use std::time::Duration;

/// This port, as its own SMA reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Me {
    pub port_guid: u64,
    pub port_num: u8,
    pub lid: u16,
    /// MasterSMLID of the port: where SA requests go.
    pub sm_lid: u16,
}

/// Why a request got no usable answer.
#[derive(Debug)]
pub enum ClientError {
    Io(std::io::Error),
    /// No answer after every retry.
    Timeout {
        what: String,
        tries: u32,
    },
    /// The SA answered with a non-zero MAD status.
    Status {
        what: String,
        status: u16,
    },
    /// The answer could not be read, or the port is not ready (no LID, no SM).
    Bad(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Io(e) => write!(f, "{e}"),
            ClientError::Timeout { what, tries } => {
                write!(f, "{what}: no answer after {tries} tries")
            }
            ClientError::Status { what, status } => {
                write!(f, "{what}: the SA answered status {status:#06x}")
            }
            ClientError::Bad(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<std::io::Error> for ClientError {
    fn from(e: std::io::Error) -> Self {
        ClientError::Io(e)
    }
}

/// Q_Key of the groups this client creates (IPoIB's, as the SM's `--mcast` groups).
pub const JOIN_QKEY: u32 = crate::sa_mcast::IPOIB_QKEY;

/// An SA client on one port.
#[derive(Debug)]
pub struct SaClient<T: Transport> {
    t: T,
    me: Me,
    tid: u64,
    timeout: Duration,
    retries: u32,
    /// Requests sent, answers used.
    pub sent: u64,
}

impl<T: Transport> SaClient<T> {
    /// Asks the port's own SMA who it is; fails when the port has no LID or knows no SM
    /// yet (the subnet is not up).
    pub fn attach(t: T, timeout: Duration, retries: u32) -> Result<Self, ClientError> {
        let mut c = SaClient {
            t,
            me: Me {
                port_guid: 0,
                port_num: 0,
                lid: 0,
                sm_lid: 0,
            },
            // The low 32 bits only: the kernel (and libumad2sim) own the high half, which
            // routes a response back to the agent that sent the request.
            tid: (std::process::id() as u64 & 0xffff) << 16,
            timeout,
            retries,
            sent: 0,
        };
        let ni = attr::NodeInfo::decode(&c.smp(mad::attr_id::NODE_INFO, 0)?);
        let pi = attr::PortInfo(c.smp(mad::attr_id::PORT_INFO, ni.local_port as u32)?);
        c.me = Me {
            port_guid: ni.port_guid,
            port_num: ni.local_port,
            lid: pi.lid(),
            sm_lid: pi.master_sm_lid(),
        };
        if c.me.lid == 0 || c.me.sm_lid == 0 {
            return Err(ClientError::Bad(format!(
                "port {:#018x} has LID {} and master SM LID {}: the subnet is not up yet",
                c.me.port_guid, c.me.lid, c.me.sm_lid
            )));
        }
        Ok(c)
    }

    pub fn me(&self) -> Me {
        self.me
    }

    /// Joins group `mgid` with `join_state` (`mad::records::join_state`); the SA's record
    /// (MLID, JoinState now held).
    pub fn join(&mut self, mgid: u128, join_state: u8) -> Result<McMemberRecord, ClientError> {
        self.member(method::SET, mgid, join_state)
    }

    /// Leaves group `mgid`, clearing `join_state`.
    pub fn leave(&mut self, mgid: u128, join_state: u8) -> Result<McMemberRecord, ClientError> {
        self.member(method::DELETE, mgid, join_state)
    }

    fn member(
        &mut self,
        how: u8,
        mgid: u128,
        join_state: u8,
    ) -> Result<McMemberRecord, ClientError> {
        let rec = McMemberRecord {
            mgid,
            port_gid: Gid {
                prefix: DEFAULT_GID_PREFIX,
                guid: self.me.port_guid,
            },
            qkey: JOIN_QKEY,
            pkey: 0xffff,
            join_state,
            ..Default::default()
        };
        let mask = mcr_mask::MGID
            | mcr_mask::PORT_GID
            | mcr_mask::QKEY
            | mcr_mask::PKEY
            | mcr_mask::TCLASS
            | mcr_mask::SL
            | mcr_mask::FLOW_LABEL
            | mcr_mask::JOIN_STATE;
        let what = format!(
            "{} of {} ({join_state:#x})",
            if how == method::SET { "join" } else { "leave" },
            std::net::Ipv6Addr::from(mgid)
        );
        let to = Address {
            lid: self.me.sm_lid,
            qpn: 1,
        };
        let rec = rec.encode();
        let answer = self.ask(&what, to, |tid| {
            SaRequest::new(how, sa::sa_attr::MCMEMBER_RECORD, tid, mask, &rec).encode()
        })?;
        let (h, recs) = sa::decode_response(&answer)
            .ok_or_else(|| ClientError::Bad(format!("{what}: an answer that is no SA response")))?;
        if h.status != 0 {
            return Err(ClientError::Status {
                what,
                status: h.status,
            });
        }
        let r = recs
            .first()
            .ok_or_else(|| ClientError::Bad(format!("{what}: the answer holds no record")))?;
        McMemberRecord::decode(r).map_err(|e| ClientError::Bad(format!("{what}: {e}")))
    }

    /// A directed-route Get of `attr_id` from the own port's SMA: its data.
    fn smp(&mut self, attr_id: u16, modifier: u32) -> Result<[u8; mad::SMP_DATA], ClientError> {
        let what = format!("SMP Get of attribute {attr_id:#06x} of the own port");
        let route = Route::Direct(Vec::new());
        let to = Address::of(&route);
        let m = self.ask(&what, to, |tid| {
            Smp::request(Method::Get, route.clone(), tid, attr_id, modifier).encode()
        })?;
        let s = Smp::decode(&m).map_err(|e| ClientError::Bad(format!("{what}: {e}")))?;
        if s.status != 0 {
            return Err(ClientError::Status {
                what,
                status: s.status,
            });
        }
        Ok(s.data)
    }

    /// Sends the MAD `build(tid)` makes and waits for the response with that TID.
    fn ask(
        &mut self,
        what: &str,
        to: Address,
        build: impl Fn(u64) -> [u8; mad::MAD_SIZE],
    ) -> Result<[u8; mad::MAD_SIZE], ClientError> {
        // One transaction ID for every send of this request: a join or leave is not
        // idempotent, so when an answer is only late, the first one to come (the SA's answer
        // to the first send) is the one used, and the later answers to the copies are
        // ignored with the next request's fresh ID.
        self.tid = (self.tid + 1) & 0xffff_ffff;
        let tid = self.tid;
        let mad = build(tid);
        for _ in 0..=self.retries {
            self.t.send(&mad, to)?;
            self.sent += 1;
            let end = self.t.now() + self.timeout;
            loop {
                let now = self.t.now();
                if now >= end {
                    break;
                }
                let Some((m, _)) = self.t.recv(end - now)? else {
                    continue;
                };
                let Some(h) = sa::MadHeader::decode(&m) else {
                    continue;
                };
                if h.is_response() && h.tid & 0xffff_ffff == tid {
                    return Ok(m);
                }
            }
        }
        Err(ClientError::Timeout {
            what: what.to_string(),
            tries: self.retries + 1,
        })
    }
}
