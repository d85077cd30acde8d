//! General services MADs as bytes: the common header of any management class
//! ([`MadHeader`], and [`error_response`], the answer a GSI responder gives to a request it
//! does not serve), and subnet administration (SA, class 0x03, IBA vol. 1 ch. 15): the SA
//! header ([`SaRequest::decode`], [`sa_response`]) and the records an SA returns
//! ([`PathRecord`], [`NodeRecord`], [`PortInfoRecord`], [`class_port_info`]).
//!
//! Pure functions on bytes, no I/O. Decoders return errors and never panic, whatever the
//! input (a fuzz target runs [`SaRequest::decode`] on arbitrary bytes).
//!
//! A `SubnAdmGetTableResp` is sent as one RMPP DATA segment (flags Active, First, Last) whose
//! PayloadLength counts the SA header and the records, so that a kernel requester's RMPP
//! layer hands over exactly the records. Answers that need more than one MAD are not built
//! here: the SA of `fabroute sm` answers them with `ERR_NO_RESOURCES` (docs/live.md).

use crate::attr::NodeInfo;
use crate::{status, MAD_SIZE};

/// Management class of subnet administration.
pub const CLASS_SUBN_ADM: u8 = 0x03;
/// Class version of SA MADs.
pub const SA_CLASS_VERSION: u8 = 2;
/// Offset of the SA data (records) in the MAD: common header, RMPP header, SA header.
pub const SA_DATA_OFFSET: usize = 56;
/// Bytes of SA data in one MAD.
pub const SA_DATA: usize = MAD_SIZE - SA_DATA_OFFSET;

/// MAD methods (IBA table 99 and 15.2.2).
pub mod method {
    pub const GET: u8 = 0x01;
    pub const SET: u8 = 0x02;
    pub const SEND: u8 = 0x03;
    pub const TRAP: u8 = 0x05;
    pub const REPORT: u8 = 0x06;
    pub const TRAP_REPRESS: u8 = 0x07;
    pub const GET_TABLE: u8 = 0x12;
    pub const GET_TRACE_TABLE: u8 = 0x13;
    pub const GET_MULTI: u8 = 0x14;
    pub const DELETE: u8 = 0x15;
    pub const GET_RESP: u8 = 0x81;
    pub const GET_TABLE_RESP: u8 = 0x92;
    pub const DELETE_RESP: u8 = 0x95;
    /// The response bit of the method byte.
    pub const RESPONSE: u8 = 0x80;
}

/// SA attribute identifiers (IBA table 207).
pub mod sa_attr {
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    pub const NOTICE: u16 = 0x0002;
    pub const INFORM_INFO: u16 = 0x0003;
    pub const NODE_RECORD: u16 = 0x0011;
    pub const PORT_INFO_RECORD: u16 = 0x0012;
    pub const SWITCH_INFO_RECORD: u16 = 0x0014;
    pub const LINK_RECORD: u16 = 0x0020;
    pub const PATH_RECORD: u16 = 0x0035;
    pub const MCMEMBER_RECORD: u16 = 0x0038;
}

/// SA status codes: the class-specific bits 8..14 of the MAD status (IBA table 208).
pub mod sa_status {
    pub const NO_RESOURCES: u16 = 0x0100;
    pub const REQ_INVALID: u16 = 0x0200;
    pub const NO_RECORDS: u16 = 0x0300;
    pub const TOO_MANY_RECORDS: u16 = 0x0400;
    pub const INVALID_GID: u16 = 0x0500;
    pub const INSUFFICIENT_COMPONENTS: u16 = 0x0600;
}

/// The default GID prefix of a subnet (fe80::/64).
pub const DEFAULT_GID_PREFIX: u64 = 0xfe80_0000_0000_0000;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// The common MAD header (first 24 bytes) of any management class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MadHeader {
    pub base_version: u8,
    pub class: u8,
    pub class_version: u8,
    /// The whole method byte, response bit included.
    pub method: u8,
    pub status: u16,
    pub class_specific: u16,
    pub tid: u64,
    pub attr: u16,
    pub modifier: u32,
}

impl MadHeader {
    /// The header of `m`; `None` when `m` is shorter than a header.
    pub fn decode(m: &[u8]) -> Option<MadHeader> {
        if m.len() < 24 {
            return None;
        }
        Some(MadHeader {
            base_version: m[0],
            class: m[1],
            class_version: m[2],
            method: m[3],
            status: be16(m, 4),
            class_specific: be16(m, 6),
            tid: be64(m, 8),
            attr: be16(m, 16),
            modifier: be32(m, 20),
        })
    }

    /// A response (the method's response bit is set): never answered.
    pub fn is_response(&self) -> bool {
        self.method & method::RESPONSE != 0
    }
}

/// The method that answers a request with `m`, or `None` for methods that get no response
/// (responses, Send, Trap, TrapRepress). Set is answered by GetResp, GetTraceTable by
/// GetTableResp, anything else by the method with the response bit.
pub fn response_method(m: u8) -> Option<u8> {
    match m {
        _ if m & method::RESPONSE != 0 => None,
        method::SEND | method::TRAP | method::TRAP_REPRESS => None,
        method::SET => Some(method::GET_RESP),
        method::GET_TRACE_TABLE => Some(method::GET_TABLE_RESP),
        _ => Some(m | method::RESPONSE),
    }
}

/// The answer a GSI responder gives to request `req` it does not serve: the request with the
/// response method and `status` (e.g. [`status::BAD_VERSION`] for a class it does not
/// support, as a kernel answers a MAD no agent registered for). `None` when the MAD gets no
/// answer: not a request, a directed-route SMP (whose answer needs its return path), or not a
/// MAD at all.
pub fn error_response(req: &[u8], st: u16) -> Option<[u8; MAD_SIZE]> {
    let h = MadHeader::decode(req)?;
    if req.len() != MAD_SIZE || h.base_version != 1 || h.class == crate::CLASS_SUBN_DR {
        return None;
    }
    let m = response_method(h.method)?;
    let mut r = [0u8; MAD_SIZE];
    r.copy_from_slice(req);
    r[3] = m;
    r[4..6].copy_from_slice(&st.to_be_bytes());
    if h.class == CLASS_SUBN_ADM {
        // No RMPP on an error, and no records.
        r[24..36].fill(0);
        r[44..46].fill(0);
    }
    Some(r)
}

/// Why bytes are not an SA request this SA can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaError {
    /// Not 256 bytes.
    Size(usize),
    BaseVersion(u8),
    /// Not class 0x03.
    Class(u8),
    /// A class version other than 2.
    ClassVersion(u8),
    /// A response, or a method that gets no response: dropped.
    NotARequest(u8),
    /// An RMPP segment other than a whole one-segment DATA transfer (ACK, STOP, ABORT, or
    /// one segment of several).
    Rmpp {
        kind: u8,
        flags: u8,
    },
}

impl SaError {
    /// The MAD status to answer with, or `None` when nothing is answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            SaError::Size(_) | SaError::NotARequest(_) => None,
            SaError::BaseVersion(_) | SaError::Class(_) | SaError::ClassVersion(_) => {
                Some(status::BAD_VERSION)
            }
            // ACK, STOP and ABORT are RMPP's own; a segmented request is more than this SA
            // takes.
            SaError::Rmpp { kind, .. } if *kind != RMPP_DATA => None,
            SaError::Rmpp { .. } => Some(sa_status::NO_RESOURCES),
        }
    }
}

impl std::fmt::Display for SaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaError::Size(n) => write!(f, "a MAD is {MAD_SIZE} bytes, not {n}"),
            SaError::BaseVersion(v) => write!(f, "base version {v} (expected 1)"),
            SaError::Class(c) => write!(f, "management class {c:#04x} is not SA (0x03)"),
            SaError::ClassVersion(v) => write!(f, "SA class version {v} (expected 2)"),
            SaError::NotARequest(m) => write!(f, "method {m:#04x} is not an SA request"),
            SaError::Rmpp { kind, flags } => write!(
                f,
                "RMPP type {kind} with flags {flags:#x}: only one-segment requests are taken"
            ),
        }
    }
}

impl std::error::Error for SaError {}

/// RMPP type of a DATA segment.
pub const RMPP_DATA: u8 = 1;
/// RMPP flags: Active, First, Last.
pub const RMPP_ACTIVE: u8 = 1;
pub const RMPP_FIRST: u8 = 2;
pub const RMPP_LAST: u8 = 4;

/// An SA request, decoded: the header, the SA header and the 200 data bytes (the template
/// record whose fields the component mask selects).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaRequest {
    pub hdr: MadHeader,
    pub sm_key: u64,
    /// In units of 8 bytes (0 in requests).
    pub attr_offset: u16,
    pub comp_mask: u64,
    pub data: [u8; SA_DATA],
}

impl SaRequest {
    /// Decodes a received SA request. Errors say what to answer ([`SaError::status`]).
    pub fn decode(m: &[u8]) -> Result<SaRequest, SaError> {
        if m.len() != MAD_SIZE {
            return Err(SaError::Size(m.len()));
        }
        let hdr = MadHeader::decode(m).ok_or(SaError::Size(m.len()))?;
        if hdr.is_response() || response_method(hdr.method).is_none() {
            return Err(SaError::NotARequest(hdr.method));
        }
        if hdr.base_version != 1 {
            return Err(SaError::BaseVersion(hdr.base_version));
        }
        if hdr.class != CLASS_SUBN_ADM {
            return Err(SaError::Class(hdr.class));
        }
        if hdr.class_version != SA_CLASS_VERSION {
            return Err(SaError::ClassVersion(hdr.class_version));
        }
        let flags = m[26] & 0x07;
        if flags & RMPP_ACTIVE != 0 {
            let kind = m[25];
            let whole = RMPP_ACTIVE | RMPP_FIRST | RMPP_LAST;
            if kind != RMPP_DATA || flags != whole {
                return Err(SaError::Rmpp { kind, flags });
            }
        }
        let mut data = [0u8; SA_DATA];
        data.copy_from_slice(&m[SA_DATA_OFFSET..]);
        Ok(SaRequest {
            hdr,
            sm_key: be64(m, 36),
            attr_offset: be16(m, 44),
            comp_mask: be64(m, 48),
            data,
        })
    }

    /// The bytes of a request (what a host sends; tests and fuzzing build requests with it).
    pub fn encode(&self) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[0] = self.hdr.base_version;
        m[1] = self.hdr.class;
        m[2] = self.hdr.class_version;
        m[3] = self.hdr.method;
        m[4..6].copy_from_slice(&self.hdr.status.to_be_bytes());
        m[6..8].copy_from_slice(&self.hdr.class_specific.to_be_bytes());
        m[8..16].copy_from_slice(&self.hdr.tid.to_be_bytes());
        m[16..18].copy_from_slice(&self.hdr.attr.to_be_bytes());
        m[20..24].copy_from_slice(&self.hdr.modifier.to_be_bytes());
        m[36..44].copy_from_slice(&self.sm_key.to_be_bytes());
        m[44..46].copy_from_slice(&self.attr_offset.to_be_bytes());
        m[48..56].copy_from_slice(&self.comp_mask.to_be_bytes());
        m[SA_DATA_OFFSET..].copy_from_slice(&self.data);
        m
    }

    /// A request of `method` for `attr` with `comp_mask` and a template record.
    pub fn new(method: u8, attr: u16, tid: u64, comp_mask: u64, record: &[u8]) -> SaRequest {
        let mut data = [0u8; SA_DATA];
        let n = record.len().min(SA_DATA);
        data[..n].copy_from_slice(&record[..n]);
        SaRequest {
            hdr: MadHeader {
                base_version: 1,
                class: CLASS_SUBN_ADM,
                class_version: SA_CLASS_VERSION,
                method,
                status: 0,
                class_specific: 0,
                tid,
                attr,
                modifier: 0,
            },
            sm_key: 0,
            attr_offset: 0,
            comp_mask,
            data,
        }
    }
}

/// Bytes a record of `len` bytes takes in a table: rounded up to 8 (the AttributeOffset unit).
pub fn padded(len: usize) -> usize {
    len.div_ceil(8) * 8
}

/// The response to `req`: `status`, and `records` (each `record_len` bytes, padded to 8)
/// as the SA data. GetTableResp goes as one whole RMPP DATA segment. `None` when the records
/// do not fit in one MAD, or the request's method gets no response.
pub fn sa_response(
    req: &SaRequest,
    st: u16,
    record_len: usize,
    records: &[u8],
) -> Option<[u8; MAD_SIZE]> {
    let m = response_method(req.hdr.method)?;
    if records.len() > SA_DATA || record_len > SA_DATA {
        return None;
    }
    let mut r = [0u8; MAD_SIZE];
    r[0] = 1;
    r[1] = CLASS_SUBN_ADM;
    r[2] = SA_CLASS_VERSION;
    r[3] = m;
    r[4..6].copy_from_slice(&st.to_be_bytes());
    r[8..16].copy_from_slice(&req.hdr.tid.to_be_bytes());
    r[16..18].copy_from_slice(&req.hdr.attr.to_be_bytes());
    r[20..24].copy_from_slice(&req.hdr.modifier.to_be_bytes());
    if m == method::GET_TABLE_RESP {
        r[24] = 1; // RMPP version
        r[25] = RMPP_DATA;
        r[26] = RMPP_ACTIVE | RMPP_FIRST | RMPP_LAST;
        r[28..32].copy_from_slice(&1u32.to_be_bytes()); // segment number
        let payload = (SA_DATA_OFFSET - 36 + records.len()) as u32;
        r[32..36].copy_from_slice(&payload.to_be_bytes());
    }
    let offset = if st == 0 {
        (padded(record_len) / 8) as u16
    } else {
        0
    };
    r[44..46].copy_from_slice(&offset.to_be_bytes());
    r[48..56].copy_from_slice(&req.comp_mask.to_be_bytes());
    r[SA_DATA_OFFSET..SA_DATA_OFFSET + records.len()].copy_from_slice(records);
    Some(r)
}

/// The bytes of `m` to send: a one-segment RMPP DATA transfer (a GetTableResp) ends with its
/// payload (36 header bytes and PayloadLength), as OpenSM sends it, so that a requester
/// without an RMPP layer under it (libumad2sim) counts the records by the length it
/// receives; a kernel pads a short MAD or segments by the same length. Any other MAD is
/// sent whole.
pub fn wire_len(m: &[u8; MAD_SIZE]) -> usize {
    let active = m[1] == CLASS_SUBN_ADM && m[24] == 1 && m[25] == RMPP_DATA && m[26] & 0x07 == 7;
    if !active {
        return MAD_SIZE;
    }
    let payload = be32(m, 32) as usize;
    (36 + payload).clamp(SA_DATA_OFFSET, MAD_SIZE)
}

#[cfg(test)]
mod wire_tests {
    use super::*;

    #[test]
    fn a_table_answer_ends_with_its_records_and_others_are_whole() {
        let req = SaRequest::new(method::GET_TABLE, sa_attr::PATH_RECORD, 1, 0, &[]);
        let one = sa_response(&req, 0, PathRecord::SIZE, &[7u8; PathRecord::SIZE]).unwrap();
        assert_eq!(wire_len(&one), SA_DATA_OFFSET + PathRecord::SIZE);
        let none = sa_response(&req, sa_status::NO_RECORDS, PathRecord::SIZE, &[]).unwrap();
        assert_eq!(wire_len(&none), SA_DATA_OFFSET);
        let get = SaRequest::new(method::GET, sa_attr::PATH_RECORD, 1, 0, &[]);
        let one = sa_response(&get, 0, PathRecord::SIZE, &[7u8; PathRecord::SIZE]).unwrap();
        assert_eq!(wire_len(&one), MAD_SIZE);
        // A PayloadLength beyond the MAD is cut to the MAD.
        let mut bad = sa_response(&req, 0, PathRecord::SIZE, &[]).unwrap();
        bad[32..36].copy_from_slice(&10_000u32.to_be_bytes());
        assert_eq!(wire_len(&bad), MAD_SIZE);
    }
}

/// What a response MAD carries: status, method, and the records at AttributeOffset
/// intervals (as many whole ones as fit, or as RMPP's PayloadLength says). For tests and
/// tools that read answers.
pub fn decode_response(m: &[u8]) -> Option<(MadHeader, Vec<&[u8]>)> {
    let h = MadHeader::decode(m)?;
    if m.len() != MAD_SIZE || !h.is_response() {
        return None;
    }
    let step = be16(m, 44) as usize * 8;
    if h.status != 0 || step == 0 {
        return Some((h, Vec::new()));
    }
    let mut len = SA_DATA;
    if m[26] & RMPP_ACTIVE != 0 {
        let payload = be32(m, 32) as usize;
        len = payload.saturating_sub(SA_DATA_OFFSET - 36).min(SA_DATA);
    }
    // A GetResp (and a DeleteResp) carries one record.
    let n = if h.method == method::GET_RESP || h.method == method::DELETE_RESP {
        (len / step).min(1)
    } else {
        len / step
    };
    let recs = (0..n)
        .map(|i| &m[SA_DATA_OFFSET + i * step..SA_DATA_OFFSET + (i + 1) * step])
        .collect();
    Some((h, recs))
}

/// PathRecord component mask bits (IBA table 205; bits 0 and 1 are the ServiceID).
pub mod pr_mask {
    pub const SERVICE_ID: u64 = 0b11;
    pub const DGID: u64 = 1 << 2;
    pub const SGID: u64 = 1 << 3;
    pub const DLID: u64 = 1 << 4;
    pub const SLID: u64 = 1 << 5;
    pub const RAW_TRAFFIC: u64 = 1 << 6;
    pub const FLOW_LABEL: u64 = 1 << 8;
    pub const HOP_LIMIT: u64 = 1 << 9;
    pub const TCLASS: u64 = 1 << 10;
    pub const REVERSIBLE: u64 = 1 << 11;
    pub const NUMB_PATH: u64 = 1 << 12;
    pub const PKEY: u64 = 1 << 13;
    pub const QOS_CLASS: u64 = 1 << 14;
    pub const SL: u64 = 1 << 15;
    pub const MTU_SELECTOR: u64 = 1 << 16;
    pub const MTU: u64 = 1 << 17;
    pub const RATE_SELECTOR: u64 = 1 << 18;
    pub const RATE: u64 = 1 << 19;
    pub const PKT_LIFE_SELECTOR: u64 = 1 << 20;
    pub const PKT_LIFE: u64 = 1 << 21;
    pub const PREFERENCE: u64 = 1 << 22;
}

/// A GID: subnet prefix and interface identifier (the port GUID).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gid {
    pub prefix: u64,
    pub guid: u64,
}

impl Gid {
    pub(crate) fn read(b: &[u8], at: usize) -> Gid {
        Gid {
            prefix: be64(b, at),
            guid: be64(b, at + 8),
        }
    }
    pub(crate) fn write(&self, b: &mut [u8], at: usize) {
        b[at..at + 8].copy_from_slice(&self.prefix.to_be_bytes());
        b[at + 8..at + 16].copy_from_slice(&self.guid.to_be_bytes());
    }
}

/// PathRecord (attribute 0x35, 64 bytes). Selector fields: 0 greater than, 1 less than,
/// 2 exactly, 3 largest available.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathRecord {
    pub service_id: u64,
    pub dgid: Gid,
    pub sgid: Gid,
    pub dlid: u16,
    pub slid: u16,
    pub raw_traffic: bool,
    /// 20 bits.
    pub flow_label: u32,
    pub hop_limit: u8,
    pub tclass: u8,
    pub reversible: bool,
    /// 7 bits.
    pub numb_path: u8,
    pub pkey: u16,
    /// 12 bits.
    pub qos_class: u16,
    /// 4 bits.
    pub sl: u8,
    pub mtu_selector: u8,
    /// IBA MTU code: 1 = 256 … 5 = 4096.
    pub mtu: u8,
    pub rate_selector: u8,
    /// IBA rate code (2 = 2.5 Gb/s, 3 = 10 Gb/s, …).
    pub rate: u8,
    pub pkt_life_selector: u8,
    pub pkt_life: u8,
    pub preference: u8,
}

impl PathRecord {
    pub const SIZE: usize = 64;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&self.service_id.to_be_bytes());
        self.dgid.write(&mut b, 8);
        self.sgid.write(&mut b, 24);
        b[40..42].copy_from_slice(&self.dlid.to_be_bytes());
        b[42..44].copy_from_slice(&self.slid.to_be_bytes());
        let hfr = (self.raw_traffic as u32) << 31
            | (self.flow_label & 0xf_ffff) << 8
            | self.hop_limit as u32;
        b[44..48].copy_from_slice(&hfr.to_be_bytes());
        b[48] = self.tclass;
        b[49] = (self.reversible as u8) << 7 | (self.numb_path & 0x7f);
        b[50..52].copy_from_slice(&self.pkey.to_be_bytes());
        let qs = (self.qos_class & 0xfff) << 4 | (self.sl & 0xf) as u16;
        b[52..54].copy_from_slice(&qs.to_be_bytes());
        b[54] = (self.mtu_selector & 3) << 6 | (self.mtu & 0x3f);
        b[55] = (self.rate_selector & 3) << 6 | (self.rate & 0x3f);
        b[56] = (self.pkt_life_selector & 3) << 6 | (self.pkt_life & 0x3f);
        b[57] = self.preference;
        b
    }

    /// `None` when `b` is shorter than a record.
    pub fn decode(b: &[u8]) -> Option<PathRecord> {
        if b.len() < Self::SIZE {
            return None;
        }
        let hfr = be32(b, 44);
        let qs = be16(b, 52);
        Some(PathRecord {
            service_id: be64(b, 0),
            dgid: Gid::read(b, 8),
            sgid: Gid::read(b, 24),
            dlid: be16(b, 40),
            slid: be16(b, 42),
            raw_traffic: hfr >> 31 != 0,
            flow_label: (hfr >> 8) & 0xf_ffff,
            hop_limit: hfr as u8,
            tclass: b[48],
            reversible: b[49] & 0x80 != 0,
            numb_path: b[49] & 0x7f,
            pkey: be16(b, 50),
            qos_class: qs >> 4,
            sl: (qs & 0xf) as u8,
            mtu_selector: b[54] >> 6,
            mtu: b[54] & 0x3f,
            rate_selector: b[55] >> 6,
            rate: b[55] & 0x3f,
            pkt_life_selector: b[56] >> 6,
            pkt_life: b[56] & 0x3f,
            preference: b[57],
        })
    }
}

/// NodeRecord component mask bits (IBA table 194).
pub mod nr_mask {
    pub const LID: u64 = 1 << 0;
    pub const NODE_TYPE: u64 = 1 << 4;
    pub const NUM_PORTS: u64 = 1 << 5;
    pub const SYS_GUID: u64 = 1 << 6;
    pub const NODE_GUID: u64 = 1 << 7;
    pub const PORT_GUID: u64 = 1 << 8;
    pub const LOCAL_PORT: u64 = 1 << 12;
    pub const NODE_DESC: u64 = 1 << 14;
}

/// NodeRecord (attribute 0x11): LID, NodeInfo (40 bytes), NodeDescription (64 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    pub lid: u16,
    pub info: NodeInfo,
    pub desc: [u8; 64],
}

impl NodeRecord {
    /// Bytes of the record itself; a table spaces records by [`padded`] of it.
    pub const SIZE: usize = 108;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&self.lid.to_be_bytes());
        b[4..44].copy_from_slice(&self.info.encode()[..40]);
        b[44..108].copy_from_slice(&self.desc);
        b
    }

    /// `None` when `b` is shorter than a record.
    pub fn decode(b: &[u8]) -> Option<NodeRecord> {
        if b.len() < Self::SIZE {
            return None;
        }
        let mut ni = [0u8; 64];
        ni[..40].copy_from_slice(&b[4..44]);
        let mut desc = [0u8; 64];
        desc.copy_from_slice(&b[44..108]);
        Some(NodeRecord {
            lid: be16(b, 0),
            info: NodeInfo::decode(&ni),
            desc,
        })
    }
}

/// PortInfoRecord component mask bits (IBA table 197; only those this SA matches on).
pub mod pir_mask {
    pub const LID: u64 = 1 << 0;
    pub const PORT_NUM: u64 = 1 << 1;
    pub const OPTIONS: u64 = 1 << 2;
}

/// PortInfoRecord (attribute 0x12): EndportLID, PortNum, Options, PortInfo (64 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfoRecord {
    pub lid: u16,
    pub port_num: u8,
    pub options: u8,
    pub port_info: [u8; 64],
}

impl PortInfoRecord {
    pub const SIZE: usize = 68;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&self.lid.to_be_bytes());
        b[2] = self.port_num;
        b[3] = self.options;
        b[4..68].copy_from_slice(&self.port_info);
        b
    }

    /// `None` when `b` is shorter than a record.
    pub fn decode(b: &[u8]) -> Option<PortInfoRecord> {
        if b.len() < Self::SIZE {
            return None;
        }
        let mut port_info = [0u8; 64];
        port_info.copy_from_slice(&b[4..68]);
        Some(PortInfoRecord {
            lid: be16(b, 0),
            port_num: b[2],
            options: b[3],
            port_info,
        })
    }
}

/// Bytes of ClassPortInfo.
pub const CLASS_PORT_INFO_SIZE: usize = 72;

/// The Q_Key of QP1, the general services QP.
pub const QP1_QKEY: u32 = 0x8001_0000;

/// The SA's ClassPortInfo: base version 1, class version 2, no optional capabilities, the
/// response time value `resp_time` (4.096 µs × 2^value), no redirection (the SA is on QP1
/// with its well-known Q_Key, as OpenSM says too), no trap address.
pub fn class_port_info(resp_time: u8) -> [u8; CLASS_PORT_INFO_SIZE] {
    let mut b = [0u8; CLASS_PORT_INFO_SIZE];
    b[0] = 1;
    b[1] = SA_CLASS_VERSION;
    // CapabilityMask2 (27 bits) 0, RespTimeValue in the low 5 bits.
    b[4..8].copy_from_slice(&((resp_time & 0x1f) as u32).to_be_bytes());
    // RedirectQP (24 bits after a reserved byte) and RedirectQ_Key; TrapQ_Key.
    b[32..36].copy_from_slice(&1u32.to_be_bytes());
    b[36..40].copy_from_slice(&QP1_QKEY.to_be_bytes());
    b[68..72].copy_from_slice(&QP1_QKEY.to_be_bytes());
    b
}

/// (Gb/s × 2, rate code), IBA table 205 / `ibv_rate`, slowest first.
const RATES: [(u32, u8); 21] = [
    (5, 2),
    (10, 5),
    (20, 3),
    (28, 11),
    (40, 6),
    (50, 15),
    (56, 19),
    (60, 4),
    (80, 7),
    (100, 20),
    (112, 12),
    (120, 8),
    (160, 9),
    (200, 16),
    (224, 13),
    (240, 10),
    (336, 14),
    (400, 17),
    (600, 18),
    (800, 21),
    (1200, 22),
];

/// Gb/s × 2 of a rate code; `None` for a code IBA does not define.
pub fn rate_half_gbps(code: u8) -> Option<u32> {
    RATES.iter().find(|r| r.1 == code).map(|r| r.0)
}

/// IBA MTU code of a PortInfo MTU field (1 = 256 … 5 = 4096), as the field stores it.
pub fn mtu_bytes(code: u8) -> Option<u32> {
    (1..=5).contains(&code).then(|| 128u32 << code)
}

/// The IBA rate code (PathRecord.Rate) of `lanes` lanes at `half_gbps` / 2 Gb/s each
/// (SDR 5, DDR 10, QDR and FDR10 20, FDR 28, EDR 50, HDR 100, NDR 200): the highest rate the
/// table has at or below the product. `None` below 2.5 Gb/s.
pub fn rate_code(lanes: u32, half_gbps: u32) -> Option<u8> {
    let total = lanes.saturating_mul(half_gbps);
    RATES
        .iter()
        .rev()
        .find(|(r, _)| *r <= total)
        .map(|&(_, c)| c)
}

/// The rate code of a port's active link (width and speed, the extended speeds first).
pub fn port_rate(pi: &crate::attr::PortInfo) -> Option<u8> {
    let lanes = match pi.link_width_active() {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => return None,
    };
    let half_gbps = match (pi.link_speed_ext_active(), pi.link_speed_active()) {
        (1, _) => 28,
        (2, _) => 50,
        (4, _) => 100,
        (8, _) => 200,
        (_, 1) => 5,
        (_, 2) => 10,
        (_, 4) => 20,
        _ => return None,
    };
    rate_code(lanes, half_gbps)
}

#[cfg(test)]
mod tests;
