//! Subnet management packets (SMPs) as bytes: the 256-byte MAD with its common header, the
//! directed-route fields, and the attributes a subnet manager reads and writes
//! ([`attr`]). Safe code only; the bytes are the wire format (big-endian, IBA vol. 1
//! ch. 13.4 and 14.2), so what [`Smp::encode`] writes is what a switch or ibsim reads.
//! [`sa`] does the same for subnet administration (class 0x03: the SA header, PathRecord,
//! NodeRecord, PortInfoRecord) and for the common header of any class.
//!
//! The crate also states the one interface the subnet manager talks through,
//! [`Transport`]: a kernel umad port (`fabroute-umad`) and the in-process fake fabric of
//! `fabroute-sm` both implement it.

pub mod attr;
pub mod inform;
pub mod records;
pub mod sa;

use std::time::Duration;

/// Size of every MAD.
pub const MAD_SIZE: usize = 256;
/// Size of an SMP's attribute data.
pub const SMP_DATA: usize = 64;
/// Most hops a directed route can take.
pub const MAX_HOPS: usize = 63;

/// Management class of LID-routed SMPs.
pub const CLASS_SUBN_LID: u8 = 0x01;
/// Management class of directed-route SMPs.
pub const CLASS_SUBN_DR: u8 = 0x81;

/// The SMP methods a subnet manager uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Method {
    Get = 0x01,
    Set = 0x02,
    GetResp = 0x81,
    Trap = 0x05,
    TrapRepress = 0x07,
}

impl Method {
    pub fn from_u8(v: u8) -> Option<Method> {
        Some(match v {
            0x01 => Method::Get,
            0x02 => Method::Set,
            0x81 => Method::GetResp,
            0x05 => Method::Trap,
            0x07 => Method::TrapRepress,
            _ => return None,
        })
    }
}

/// Attribute identifiers (IBA table 145).
pub mod attr_id {
    pub const NOTICE: u16 = 0x0002;
    pub const NODE_DESC: u16 = 0x0010;
    pub const NODE_INFO: u16 = 0x0011;
    pub const SWITCH_INFO: u16 = 0x0012;
    pub const SM_INFO: u16 = 0x0020;
    pub const PORT_INFO: u16 = 0x0015;
    pub const SL2VL: u16 = 0x0017;
    pub const LFT: u16 = 0x0019;
    pub const MFT: u16 = 0x001B;
}

/// MAD status bits (the low 15 bits; DR SMPs use bit 15 as the direction bit).
pub mod status {
    /// The responder does not support this method / attribute (bits 2..4 = 1, 2).
    pub const BAD_VERSION: u16 = 0x0004;
    pub const METHOD_UNSUPPORTED: u16 = 0x0008;
    pub const ATTR_UNSUPPORTED: u16 = 0x000C;
    /// An attribute field holds a value the responder refuses.
    pub const BAD_PARAM: u16 = 0x001C;
}

/// Why bytes are not an SMP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not 256 bytes.
    Size(usize),
    /// Base version other than 1.
    BaseVersion(u8),
    /// Management class other than 0x01 / 0x81.
    Class(u8),
    /// A method this codec does not know.
    Method(u8),
    /// Directed route with a hop count above 63.
    HopCount(u8),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Size(n) => write!(f, "a MAD is {MAD_SIZE} bytes, not {n}"),
            DecodeError::BaseVersion(v) => write!(f, "base version {v} (expected 1)"),
            DecodeError::Class(c) => write!(f, "management class {c:#04x} is not an SMP class"),
            DecodeError::Method(m) => write!(f, "unknown SMP method {m:#04x}"),
            DecodeError::HopCount(h) => write!(f, "hop count {h} above {MAX_HOPS}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// How an SMP is routed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Directed route: the output port at each hop, first the port the SMP leaves the SM's
    /// node by. Empty = the SM's own node.
    Direct(Vec<u8>),
    /// LID-routed (class 0x01) to this LID through the forwarding tables.
    Lid(u16),
}

/// One subnet management packet, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Smp {
    pub method: Method,
    /// MAD status without the direction bit.
    pub status: u16,
    pub tid: u64,
    pub attr: u16,
    pub modifier: u32,
    pub m_key: u64,
    pub route: Route,
    /// DR only: set on responses (the direction bit).
    pub returning: bool,
    /// DR only: hop pointer as received.
    pub hop_ptr: u8,
    pub data: [u8; SMP_DATA],
}

impl Smp {
    /// A request: `Get` or `Set` of `attr` with `modifier` along `route`.
    pub fn request(method: Method, route: Route, tid: u64, attr: u16, modifier: u32) -> Smp {
        Smp {
            method,
            status: 0,
            tid,
            attr,
            modifier,
            m_key: 0,
            route,
            returning: false,
            hop_ptr: 0,
            data: [0; SMP_DATA],
        }
    }

    /// The 256 bytes on the wire.
    pub fn encode(&self) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[0] = 1; // base version
        m[2] = 1; // class version
        m[3] = self.method as u8;
        m[8..16].copy_from_slice(&self.tid.to_be_bytes());
        m[16..18].copy_from_slice(&self.attr.to_be_bytes());
        m[20..24].copy_from_slice(&self.modifier.to_be_bytes());
        m[24..32].copy_from_slice(&self.m_key.to_be_bytes());
        m[64..128].copy_from_slice(&self.data);
        match &self.route {
            Route::Direct(path) => {
                m[1] = CLASS_SUBN_DR;
                let st = self.status | if self.returning { 0x8000 } else { 0 };
                m[4..6].copy_from_slice(&st.to_be_bytes());
                m[6] = self.hop_ptr;
                m[7] = path.len() as u8;
                // DrSLID and DrDLID: the permissive LID, both ends are directed.
                m[32..36].copy_from_slice(&[0xff; 4]);
                // Initial path: entry 0 unused, entries 1..=n the output ports.
                m[129..129 + path.len()].copy_from_slice(path);
            }
            Route::Lid(_) => {
                m[1] = CLASS_SUBN_LID;
                m[4..6].copy_from_slice(&self.status.to_be_bytes());
            }
        }
        m
    }

    /// Decodes a received MAD. A LID-routed SMP comes back as `Route::Lid(0)` (the
    /// destination LID is in the transport header, not the MAD).
    pub fn decode(m: &[u8]) -> Result<Smp, DecodeError> {
        if m.len() != MAD_SIZE {
            return Err(DecodeError::Size(m.len()));
        }
        if m[0] != 1 {
            return Err(DecodeError::BaseVersion(m[0]));
        }
        let method = Method::from_u8(m[3]).ok_or(DecodeError::Method(m[3]))?;
        let raw_status = u16::from_be_bytes([m[4], m[5]]);
        let mut data = [0u8; SMP_DATA];
        data.copy_from_slice(&m[64..128]);
        let be64 = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&m[r]);
            u64::from_be_bytes(b)
        };
        let (route, status, returning, hop_ptr) = match m[1] {
            CLASS_SUBN_DR => {
                let n = m[7];
                if n as usize > MAX_HOPS {
                    return Err(DecodeError::HopCount(n));
                }
                let path = m[129..129 + n as usize].to_vec();
                (
                    Route::Direct(path),
                    raw_status & 0x7fff,
                    raw_status & 0x8000 != 0,
                    m[6],
                )
            }
            CLASS_SUBN_LID => (Route::Lid(0), raw_status, false, 0),
            c => return Err(DecodeError::Class(c)),
        };
        Ok(Smp {
            method,
            status,
            tid: be64(8..16),
            attr: u16::from_be_bytes([m[16], m[17]]),
            modifier: u32::from_be_bytes([m[20], m[21], m[22], m[23]]),
            m_key: be64(24..32),
            route,
            returning,
            hop_ptr,
            data,
        })
    }

    /// The response a responder makes of this request: `GetResp`, the direction bit set,
    /// `status`, and `data` in place of the request's.
    pub fn response(&self, status: u16, data: [u8; SMP_DATA]) -> Smp {
        let mut r = self.clone();
        r.method = Method::GetResp;
        r.status = status;
        r.data = data;
        if let Route::Direct(p) = &self.route {
            r.returning = true;
            r.hop_ptr = p.len() as u8;
        }
        r
    }
}

/// Where a MAD goes: the destination LID and queue pair the transport header carries
/// (`0xFFFF` = the permissive LID that directed routes use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    pub lid: u16,
    pub qpn: u32,
}

impl Address {
    /// Where an SMP on `route` is addressed.
    pub fn of(route: &Route) -> Address {
        match route {
            Route::Direct(_) => Address {
                lid: 0xffff,
                qpn: 0,
            },
            Route::Lid(l) => Address { lid: *l, qpn: 0 },
        }
    }
}

/// What the subnet manager sends MADs through and receives them from. `send` takes the
/// destination (an SMP's permissive LID, or a GSI requester's LID and QP for an answer);
/// `recv` waits at most `timeout` and returns `Ok(None)` when nothing arrived, else the MAD
/// and where it came from (the source LID and QP the transport header carries; a directed
/// route's answer comes from the permissive LID). `now` is the transport's clock (wall time
/// for a device, a virtual clock for a fake), so that the SM's timeouts and timings are
/// measured on the clock of the fabric it talks to.
pub trait Transport {
    fn send(&mut self, mad: &[u8; MAD_SIZE], to: Address) -> std::io::Result<()>;
    fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<([u8; MAD_SIZE], Address)>>;
    fn now(&self) -> Duration;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directed-route NodeInfo Get that libibmad's `smpquery -D nodeinfo 0,1` sends:
    /// header `01 81 01 01`, hop count 1 at byte 7, DrSLID/DrDLID `ffff ffff` at 32, the
    /// initial path `00 01` at 128.
    #[test]
    fn dr_nodeinfo_get_has_the_wire_layout() {
        let s = Smp::request(
            Method::Get,
            Route::Direct(vec![1]),
            0x1234,
            attr_id::NODE_INFO,
            0,
        );
        let m = s.encode();
        assert_eq!(&m[0..8], &[0x01, 0x81, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01]);
        assert_eq!(&m[8..16], &[0, 0, 0, 0, 0, 0, 0x12, 0x34]);
        assert_eq!(&m[16..24], &[0x00, 0x11, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&m[32..36], &[0xff; 4]);
        assert_eq!(&m[128..130], &[0x00, 0x01]);
        assert!(m[130..].iter().all(|&b| b == 0));
        assert_eq!(Smp::decode(&m).unwrap(), s);
    }

    #[test]
    fn lid_routed_set_and_responses_round_trip() {
        let mut s = Smp::request(Method::Set, Route::Lid(7), 99, attr_id::LFT, 3);
        s.data[5] = 4;
        let m = s.encode();
        assert_eq!(&m[0..4], &[0x01, 0x01, 0x01, 0x02]);
        assert_eq!(&m[20..24], &[0, 0, 0, 3]);
        assert_eq!(m[69], 4);
        let d = Smp::decode(&m).unwrap();
        assert_eq!(d.route, Route::Lid(0));
        assert_eq!(
            (d.tid, d.attr, d.modifier, d.data),
            (99, attr_id::LFT, 3, s.data)
        );
        let dr = Smp::request(Method::Get, Route::Direct(vec![1, 3, 2]), 5, 0x15, 2);
        let r = dr.response(status::BAD_PARAM, [7; 64]);
        let m = r.encode();
        assert_eq!(u16::from_be_bytes([m[4], m[5]]), 0x8000 | status::BAD_PARAM);
        assert_eq!((m[6], m[7]), (3, 3));
        let back = Smp::decode(&m).unwrap();
        assert!(back.returning);
        assert_eq!(back.status, status::BAD_PARAM);
        assert_eq!(back.method, Method::GetResp);
    }

    #[test]
    fn bad_bytes_are_errors_not_panics() {
        assert_eq!(Smp::decode(&[0; 10]), Err(DecodeError::Size(10)));
        let mut m = Smp::request(Method::Get, Route::Direct(vec![]), 1, 0x11, 0).encode();
        m[7] = 64;
        assert_eq!(Smp::decode(&m), Err(DecodeError::HopCount(64)));
        m[7] = 0;
        m[1] = 0x04;
        assert_eq!(Smp::decode(&m), Err(DecodeError::Class(4)));
        m[1] = 0x81;
        m[3] = 0x42;
        assert_eq!(Smp::decode(&m), Err(DecodeError::Method(0x42)));
        m[0] = 2;
        assert_eq!(Smp::decode(&m), Err(DecodeError::BaseVersion(2)));
    }

    /// What `fuzz/fuzz_targets/fuzz_smp.rs` checks, on seeded pseudo-random MADs: whole
    /// random bytes (mostly refused) and random bytes under a valid first word (mostly
    /// accepted). An accepted SMP encodes to bytes that decode to the same SMP, its response
    /// too; the attribute decoders run on its data and SMInfo round-trips.
    #[test]
    fn random_mads_decode_or_are_refused_and_round_trip() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut ok, mut refused) = (0, 0);
        for i in 0..20_000 {
            let mut m = [0u8; MAD_SIZE];
            for b in m.iter_mut() {
                *b = next() as u8;
            }
            if i % 2 == 0 {
                let methods = [0x01, 0x02, 0x81, 0x05, 0x07];
                m[0] = 1;
                m[1] = if next() % 2 == 0 {
                    CLASS_SUBN_LID
                } else {
                    CLASS_SUBN_DR
                };
                m[3] = methods[(next() % 5) as usize];
                m[7] %= 80;
            }
            let len = if i % 97 == 0 {
                (next() % 300) as usize
            } else {
                MAD_SIZE
            };
            let bytes: Vec<u8> = (0..len).map(|k| m.get(k).copied().unwrap_or(0)).collect();
            match Smp::decode(&bytes) {
                Ok(s) => {
                    ok += 1;
                    assert_eq!(Smp::decode(&s.encode()).unwrap(), s);
                    let r = Smp::decode(&s.response(0, s.data).encode()).unwrap();
                    assert_eq!(r.method, Method::GetResp);
                    let _ = (
                        attr::NodeInfo::decode(&s.data),
                        attr::Notice::decode(&s.data),
                    );
                    let i = attr::SmInfo::decode(&s.data);
                    assert_eq!(attr::SmInfo::decode(&i.encode()), i);
                }
                Err(_) => refused += 1,
            }
        }
        assert!(
            ok > 5_000 && refused > 5_000,
            "{ok} decoded, {refused} refused"
        );
    }
}
