//! Event subscriptions through the SA: InformInfo (SA attribute 0x0003, 36 bytes), which a
//! host sets to subscribe to notices, and the SubnAdmReport of a Notice (attribute 0x0002,
//! 80 bytes) that the SA sends each subscriber (IBA vol. 1, 13.4.8 and 15.2.5).
//!
//! Pure functions on bytes; decoding reads fixed offsets of a fixed-size array and cannot
//! fail.

use crate::sa::{method, Gid, CLASS_SUBN_ADM, SA_CLASS_VERSION, SA_DATA_OFFSET};
use crate::MAD_SIZE;

/// Bytes of an InformInfo.
pub const INFORM_INFO_LEN: usize = 36;
/// Bytes of a Notice in an SA MAD (the SMP form stops at 64).
pub const NOTICE_LEN: usize = 80;

/// Generic trap numbers the SA reports (IBA table 118).
pub mod trap {
    /// A port's GID is in service (the port is reachable).
    pub const GID_IN_SERVICE: u16 = 64;
    /// A port's GID is out of service.
    pub const GID_OUT_OF_SERVICE: u16 = 65;
    /// "RePath": paths were recomputed. fabroute sends it to a source whose (DLID, SL)
    /// toward a destination changed, with the destination's GID in the data details.
    pub const REPATH: u16 = 69;
    /// In a subscription: every trap.
    pub const ALL: u16 = 0xFFFF;
}

/// Notice types (IBA table 117).
pub mod notice_type {
    pub const URGENT: u16 = 1;
    pub const SUBN_MGMT: u16 = 3;
    pub const INFO: u16 = 4;
    /// In a subscription: every type.
    pub const ALL: u16 = 0xFFFF;
}

/// ProducerType of notices the SM produces (class manager).
pub const PRODUCER_CLASS_MANAGER: u32 = 4;

/// InformInfo: what a subscriber wants to be told about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InformInfo {
    /// The port the notices are about (0: see the LID range).
    pub gid: Gid,
    /// LIDs the notices are about (`0xFFFF` as the start: all).
    pub lid_begin: u16,
    pub lid_end: u16,
    pub is_generic: bool,
    /// True to subscribe, false to unsubscribe.
    pub subscribe: bool,
    /// Notice type (`notice_type::ALL`: every type).
    pub kind: u16,
    /// Generic: the trap number (`trap::ALL`: every trap); vendor: the device ID.
    pub trap_number: u16,
    /// The queue pair that receives the Reports (24 bits).
    pub qpn: u32,
    pub resp_time: u8,
    /// Generic: the producer type; vendor: the vendor ID (24 bits).
    pub producer: u32,
}

impl InformInfo {
    /// A generic subscription (or, with `subscribe` false, its end) to `trap_number` of
    /// every type, about every port, with Reports to `qpn`.
    pub fn generic(subscribe: bool, trap_number: u16, qpn: u32) -> InformInfo {
        InformInfo {
            lid_begin: 0xFFFF,
            is_generic: true,
            subscribe,
            kind: notice_type::ALL,
            trap_number,
            qpn,
            ..InformInfo::default()
        }
    }

    pub fn decode(b: &[u8; INFORM_INFO_LEN]) -> InformInfo {
        let be16 = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
        let qr = u32::from_be_bytes([b[28], b[29], b[30], b[31]]);
        InformInfo {
            gid: Gid::read(b, 0),
            lid_begin: be16(16),
            lid_end: be16(18),
            is_generic: b[22] != 0,
            subscribe: b[23] != 0,
            kind: be16(24),
            trap_number: be16(26),
            qpn: qr >> 8,
            resp_time: (qr & 0x1f) as u8,
            producer: u32::from_be_bytes([0, b[33], b[34], b[35]]),
        }
    }

    pub fn encode(&self) -> [u8; INFORM_INFO_LEN] {
        let mut b = [0u8; INFORM_INFO_LEN];
        self.gid.write(&mut b, 0);
        b[16..18].copy_from_slice(&self.lid_begin.to_be_bytes());
        b[18..20].copy_from_slice(&self.lid_end.to_be_bytes());
        b[22] = self.is_generic as u8;
        b[23] = self.subscribe as u8;
        b[24..26].copy_from_slice(&self.kind.to_be_bytes());
        b[26..28].copy_from_slice(&self.trap_number.to_be_bytes());
        let qr = ((self.qpn & 0xff_ffff) << 8) | (self.resp_time & 0x1f) as u32;
        b[28..32].copy_from_slice(&qr.to_be_bytes());
        b[33..36].copy_from_slice(&(self.producer & 0xff_ffff).to_be_bytes()[1..]);
        b
    }

    /// Whether the subscription covers a generic notice of `kind` and `trap_number` about
    /// the port with `gid` and LIDs `lids` (base, last).
    pub fn covers(&self, kind: u16, trap_number: u16, gid: Gid, lids: (u16, u16)) -> bool {
        let any_gid = self.gid == Gid::default();
        let port = if !any_gid {
            self.gid == gid
        } else if self.lid_begin == 0xFFFF {
            true
        } else {
            let end = self.lid_end.max(self.lid_begin);
            lids.0 <= end && lids.1 >= self.lid_begin
        };
        self.is_generic
            && (self.kind == notice_type::ALL || self.kind == kind)
            && (self.trap_number == trap::ALL || self.trap_number == trap_number)
            && port
    }
}

/// A generic notice the SA produces: its type, trap number, the SM's LID and GID as issuer,
/// and the GID it is about (data details of traps 64-69).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaNotice {
    pub kind: u16,
    pub trap_number: u16,
    pub issuer_lid: u16,
    pub issuer_gid: Gid,
    pub about: Gid,
}

impl SaNotice {
    pub fn encode(&self) -> [u8; NOTICE_LEN] {
        let mut b = [0u8; NOTICE_LEN];
        b[0] = 0x80 | (self.kind as u8 & 0x7f);
        b[1..4].copy_from_slice(&PRODUCER_CLASS_MANAGER.to_be_bytes()[1..]);
        b[4..6].copy_from_slice(&self.trap_number.to_be_bytes());
        b[6..8].copy_from_slice(&self.issuer_lid.to_be_bytes());
        // toggle/count 0; data details: 6 reserved bytes, then the GID.
        self.about.write(&mut b, 16);
        self.issuer_gid.write(&mut b, 64);
        b
    }

    pub fn decode(b: &[u8; NOTICE_LEN]) -> SaNotice {
        SaNotice {
            kind: (b[0] & 0x7f) as u16,
            trap_number: u16::from_be_bytes([b[4], b[5]]),
            issuer_lid: u16::from_be_bytes([b[6], b[7]]),
            about: Gid::read(b, 16),
            issuer_gid: Gid::read(b, 64),
        }
    }
}

/// The SubnAdmReport MAD carrying `notice`, with transaction id `tid`.
pub fn report(notice: &SaNotice, tid: u64) -> [u8; MAD_SIZE] {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = CLASS_SUBN_ADM;
    m[2] = SA_CLASS_VERSION;
    m[3] = method::REPORT;
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&crate::sa::sa_attr::NOTICE.to_be_bytes());
    m[SA_DATA_OFFSET..SA_DATA_OFFSET + NOTICE_LEN].copy_from_slice(&notice.encode());
    m
}

/// The notice in a Report MAD, if `m` is one.
pub fn decode_report(m: &[u8; MAD_SIZE]) -> Option<SaNotice> {
    let attr = u16::from_be_bytes([m[16], m[17]]);
    if m[1] != CLASS_SUBN_ADM || m[3] != method::REPORT || attr != crate::sa::sa_attr::NOTICE {
        return None;
    }
    let mut b = [0u8; NOTICE_LEN];
    b.copy_from_slice(&m[SA_DATA_OFFSET..SA_DATA_OFFSET + NOTICE_LEN]);
    Some(SaNotice::decode(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subscription to trap 69 for one port, QP 1, byte by byte where the IBA table puts
    /// the fields.
    #[test]
    fn inform_info_fields_sit_where_the_table_says() {
        let i = InformInfo {
            gid: Gid {
                prefix: 0xfe80_0000_0000_0000,
                guid: 0x0002_c903_0000_1234,
            },
            lid_begin: 0xFFFF,
            lid_end: 0,
            is_generic: true,
            subscribe: true,
            kind: notice_type::ALL,
            trap_number: trap::REPATH,
            qpn: 1,
            resp_time: 18,
            producer: PRODUCER_CLASS_MANAGER,
        };
        let b = i.encode();
        assert_eq!(&b[0..8], &0xfe80_0000_0000_0000u64.to_be_bytes());
        assert_eq!(&b[16..20], &[0xff, 0xff, 0, 0]);
        assert_eq!(&b[22..28], &[1, 1, 0xff, 0xff, 0, 69]);
        assert_eq!(&b[28..32], &[0, 0, 1, 18]);
        assert_eq!(&b[32..36], &[0, 0, 0, 4]);
        assert_eq!(InformInfo::decode(&b), i);
    }

    #[test]
    fn a_subscription_covers_what_it_names() {
        let about = Gid {
            prefix: 0xfe80_0000_0000_0000,
            guid: 7,
        };
        let all = InformInfo {
            lid_begin: 0xFFFF,
            is_generic: true,
            subscribe: true,
            kind: notice_type::ALL,
            trap_number: trap::ALL,
            ..InformInfo::default()
        };
        assert!(all.covers(notice_type::INFO, trap::REPATH, about, (4, 7)));
        let repath_only = InformInfo {
            trap_number: trap::REPATH,
            ..all
        };
        assert!(!repath_only.covers(
            notice_type::SUBN_MGMT,
            trap::GID_OUT_OF_SERVICE,
            about,
            (4, 7)
        ));
        let lids = InformInfo {
            lid_begin: 8,
            lid_end: 11,
            ..all
        };
        assert!(!lids.covers(notice_type::INFO, trap::REPATH, about, (4, 7)));
        assert!(lids.covers(notice_type::INFO, trap::REPATH, about, (8, 8)));
        let other_port = InformInfo {
            gid: Gid {
                prefix: about.prefix,
                guid: 8,
            },
            ..all
        };
        assert!(!other_port.covers(notice_type::INFO, trap::REPATH, about, (4, 7)));
        let vendor = InformInfo {
            is_generic: false,
            ..all
        };
        assert!(!vendor.covers(notice_type::INFO, trap::REPATH, about, (4, 7)));
    }

    #[test]
    fn a_report_carries_its_notice() {
        let n = SaNotice {
            kind: notice_type::INFO,
            trap_number: trap::REPATH,
            issuer_lid: 1,
            issuer_gid: Gid {
                prefix: 0xfe80_0000_0000_0000,
                guid: 0x10,
            },
            about: Gid {
                prefix: 0xfe80_0000_0000_0000,
                guid: 0x20,
            },
        };
        let m = report(&n, 99);
        assert_eq!(&m[0..4], &[1, 3, 2, 6]);
        assert_eq!(&m[16..18], &[0, 2]);
        // Generic, type 4; producer 4; trap 69; issuer LID 1.
        assert_eq!(&m[56..64], &[0x84, 0, 0, 4, 0, 69, 0, 1]);
        assert_eq!(decode_report(&m), Some(n));
    }
}
