//! SA records of the fabric's structure (IBA vol. 1, 15.2.5): LinkRecord (attribute 0x20,
//! one per direction of a cable) and SwitchInfoRecord (0x14, a switch's LID and the first
//! 20 bytes of its SwitchInfo); and of multicast membership: MCMemberRecord (0x38,
//! 15.2.5.17). Pure functions on bytes; decoding reads fixed offsets and cannot fail on the
//! SA's 200 data bytes (a shorter slice is refused, never a panic).

use crate::sa::Gid;

/// LinkRecord component mask bits.
pub mod lr_mask {
    pub const FROM_LID: u64 = 1 << 0;
    pub const FROM_PORT: u64 = 1 << 1;
    pub const TO_PORT: u64 = 1 << 2;
    pub const TO_LID: u64 = 1 << 3;
}

/// SwitchInfoRecord component mask bits.
pub mod swir_mask {
    pub const LID: u64 = 1 << 0;
}

/// LinkRecord: the cable from (FromLID, FromPort) to (ToLID, ToPort); a switch is named by
/// its LID, an end port by its base LID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinkRecord {
    pub from_lid: u16,
    pub from_port: u8,
    pub to_port: u8,
    pub to_lid: u16,
}

impl LinkRecord {
    pub const SIZE: usize = 8;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&self.from_lid.to_be_bytes());
        b[2] = self.from_port;
        b[3] = self.to_port;
        b[4..6].copy_from_slice(&self.to_lid.to_be_bytes());
        b
    }

    /// The record at the start of `b` (`None` when `b` is shorter than one).
    pub fn decode(b: &[u8]) -> Option<LinkRecord> {
        let b = b.get(..Self::SIZE)?;
        Some(LinkRecord {
            from_lid: u16::from_be_bytes([b[0], b[1]]),
            from_port: b[2],
            to_port: b[3],
            to_lid: u16::from_be_bytes([b[4], b[5]]),
        })
    }

    /// Whether the record has the fields of `q` that `mask` selects.
    pub fn matches(&self, q: &LinkRecord, mask: u64) -> bool {
        (mask & lr_mask::FROM_LID == 0 || self.from_lid == q.from_lid)
            && (mask & lr_mask::FROM_PORT == 0 || self.from_port == q.from_port)
            && (mask & lr_mask::TO_PORT == 0 || self.to_port == q.to_port)
            && (mask & lr_mask::TO_LID == 0 || self.to_lid == q.to_lid)
    }
}

/// Bytes of SwitchInfo a SwitchInfoRecord carries.
pub const SWITCH_INFO_IN_RECORD: usize = 20;

/// SwitchInfoRecord: a switch's LID and its SwitchInfo (the first 20 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchInfoRecord {
    pub lid: u16,
    pub info: [u8; SWITCH_INFO_IN_RECORD],
}

impl SwitchInfoRecord {
    pub const SIZE: usize = 24;

    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&self.lid.to_be_bytes());
        b[4..].copy_from_slice(&self.info);
        b
    }

    /// The record at the start of `b` (`None` when `b` is shorter than one).
    pub fn decode(b: &[u8]) -> Option<SwitchInfoRecord> {
        let b = b.get(..Self::SIZE)?;
        let mut info = [0u8; SWITCH_INFO_IN_RECORD];
        info.copy_from_slice(&b[4..]);
        Some(SwitchInfoRecord {
            lid: u16::from_be_bytes([b[0], b[1]]),
            info,
        })
    }
}

/// MCMemberRecord component mask bits (IBA 15.2.5.17, in the order of the fields).
pub mod mcr_mask {
    pub const MGID: u64 = 1 << 0;
    pub const PORT_GID: u64 = 1 << 1;
    pub const QKEY: u64 = 1 << 2;
    pub const MLID: u64 = 1 << 3;
    pub const MTU_SELECTOR: u64 = 1 << 4;
    pub const MTU: u64 = 1 << 5;
    pub const TCLASS: u64 = 1 << 6;
    pub const PKEY: u64 = 1 << 7;
    pub const RATE_SELECTOR: u64 = 1 << 8;
    pub const RATE: u64 = 1 << 9;
    pub const PKT_LIFE_SELECTOR: u64 = 1 << 10;
    pub const PKT_LIFE: u64 = 1 << 11;
    pub const SL: u64 = 1 << 12;
    pub const FLOW_LABEL: u64 = 1 << 13;
    pub const HOP_LIMIT: u64 = 1 << 14;
    pub const SCOPE: u64 = 1 << 15;
    pub const JOIN_STATE: u64 = 1 << 16;
    pub const PROXY_JOIN: u64 = 1 << 17;
}

/// MCMemberRecord.JoinState bits.
pub mod join_state {
    /// Full member: sends and receives; a group lives while it has one.
    pub const FULL: u8 = 0x1;
    /// Non-member: sends and receives, but does not keep the group alive.
    pub const NON: u8 = 0x2;
    /// Send-only non-member: sends, receives nothing.
    pub const SEND_ONLY_NON: u8 = 0x4;
    /// Send-only full member (IBA 1.3): sends, receives nothing, keeps the group alive.
    pub const SEND_ONLY_FULL: u8 = 0x8;
}

/// Why bytes are not a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Fewer bytes than the record takes.
    Short { need: usize, got: usize },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Short { need, got } => {
                write!(f, "a record of {need} bytes, only {got} given")
            }
        }
    }
}

impl std::error::Error for RecordError {}

/// MCMemberRecord (attribute 0x38): a port's membership in a multicast group, or (with
/// PortGID and JoinState zero) the group itself. Selector fields: 0 greater than, 1 less
/// than, 2 exactly, 3 largest available.
///
/// Layout (52 bytes): MGID 0..16, PortGID 16..32, Q_Key 32..36, MLID 36..38, MTUSelector:2
/// MTU:6 at 38, TClass 39, P_Key 40..42, RateSelector:2 Rate:6 at 42,
/// PacketLifeTimeSelector:2 PacketLifeTime:6 at 43, SL:4 FlowLabel:20 HopLimit:8 at 44..48,
/// Scope:4 JoinState:4 at 48, ProxyJoin:1 and 23 reserved bits at 49..52.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McMemberRecord {
    pub mgid: u128,
    pub port_gid: Gid,
    pub qkey: u32,
    pub mlid: u16,
    /// 2 bits.
    pub mtu_selector: u8,
    /// 6 bits: IBA MTU code (1 = 256 … 5 = 4096).
    pub mtu: u8,
    pub tclass: u8,
    pub pkey: u16,
    /// 2 bits.
    pub rate_selector: u8,
    /// 6 bits: IBA rate code.
    pub rate: u8,
    /// 2 bits.
    pub pkt_life_selector: u8,
    /// 6 bits.
    pub pkt_life: u8,
    /// 4 bits.
    pub sl: u8,
    /// 20 bits.
    pub flow_label: u32,
    pub hop_limit: u8,
    /// 4 bits (2 = link-local).
    pub scope: u8,
    /// 4 bits ([`join_state`]).
    pub join_state: u8,
    pub proxy_join: bool,
}

impl McMemberRecord {
    /// Bytes of the record; a table spaces records by `sa::padded` of it (56).
    pub const SIZE: usize = 52;

    /// The record's bytes; fields wider than their bits are cut to them.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..16].copy_from_slice(&self.mgid.to_be_bytes());
        self.port_gid.write(&mut b, 16);
        b[32..36].copy_from_slice(&self.qkey.to_be_bytes());
        b[36..38].copy_from_slice(&self.mlid.to_be_bytes());
        b[38] = (self.mtu_selector & 3) << 6 | (self.mtu & 0x3f);
        b[39] = self.tclass;
        b[40..42].copy_from_slice(&self.pkey.to_be_bytes());
        b[42] = (self.rate_selector & 3) << 6 | (self.rate & 0x3f);
        b[43] = (self.pkt_life_selector & 3) << 6 | (self.pkt_life & 0x3f);
        let sfh = ((self.sl & 0xf) as u32) << 28
            | (self.flow_label & 0xf_ffff) << 8
            | self.hop_limit as u32;
        b[44..48].copy_from_slice(&sfh.to_be_bytes());
        b[48] = (self.scope & 0xf) << 4 | (self.join_state & 0xf);
        b[49] = (self.proxy_join as u8) << 7;
        b
    }

    /// The record at the start of `b`; an error when `b` is shorter than one. Reserved bits
    /// are ignored.
    pub fn decode(b: &[u8]) -> Result<McMemberRecord, RecordError> {
        let Some(b) = b.get(..Self::SIZE) else {
            return Err(RecordError::Short {
                need: Self::SIZE,
                got: b.len(),
            });
        };
        let mut mgid = [0u8; 16];
        mgid.copy_from_slice(&b[0..16]);
        let sfh = u32::from_be_bytes([b[44], b[45], b[46], b[47]]);
        Ok(McMemberRecord {
            mgid: u128::from_be_bytes(mgid),
            port_gid: Gid::read(b, 16),
            qkey: u32::from_be_bytes([b[32], b[33], b[34], b[35]]),
            mlid: u16::from_be_bytes([b[36], b[37]]),
            mtu_selector: b[38] >> 6,
            mtu: b[38] & 0x3f,
            tclass: b[39],
            pkey: u16::from_be_bytes([b[40], b[41]]),
            rate_selector: b[42] >> 6,
            rate: b[42] & 0x3f,
            pkt_life_selector: b[43] >> 6,
            pkt_life: b[43] & 0x3f,
            sl: (sfh >> 28) as u8,
            flow_label: (sfh >> 8) & 0xf_ffff,
            hop_limit: sfh as u8,
            scope: b[48] >> 4,
            join_state: b[48] & 0xf,
            proxy_join: b[49] & 0x80 != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_sit_where_the_tables_say_and_round_trip() {
        let l = LinkRecord {
            from_lid: 0x0102,
            from_port: 3,
            to_port: 4,
            to_lid: 0x0506,
        };
        assert_eq!(l.encode(), [1, 2, 3, 4, 5, 6, 0, 0]);
        assert_eq!(LinkRecord::decode(&l.encode()), Some(l));
        assert!(l.matches(
            &LinkRecord {
                from_lid: 0x0102,
                ..Default::default()
            },
            lr_mask::FROM_LID
        ));
        assert!(!l.matches(&LinkRecord { to_port: 9, ..l }, lr_mask::TO_PORT));
        assert_eq!(LinkRecord::decode(&[0; 7]), None);
        let s = SwitchInfoRecord {
            lid: 7,
            info: std::array::from_fn(|i| i as u8 + 1),
        };
        let b = s.encode();
        assert_eq!(&b[..4], &[0, 7, 0, 0]);
        assert_eq!(b[4], 1);
        assert_eq!(SwitchInfoRecord::decode(&b), Some(s));
    }

    /// The bytes of an MCMemberRecord where the Linux kernel's `ib_sa_mcmember_rec` table
    /// and OpenSM's `ib_member_rec_t` put them.
    #[test]
    fn mcmember_record_has_the_wire_layout() {
        let r = McMemberRecord {
            mgid: 0xff12_401b_ffff_0000_0000_0000_ffff_ffff,
            port_gid: Gid {
                prefix: crate::sa::DEFAULT_GID_PREFIX,
                guid: 0x0002_c903_0001_a2b1,
            },
            qkey: 0x0000_0b1b,
            mlid: 0xc001,
            mtu_selector: 2,
            mtu: 4,
            tclass: 0x5a,
            pkey: 0xffff,
            rate_selector: 1,
            rate: 3,
            pkt_life_selector: 3,
            pkt_life: 0x12,
            sl: 0xa,
            flow_label: 0xb_cdef,
            hop_limit: 0x40,
            scope: 2,
            join_state: join_state::FULL | join_state::SEND_ONLY_NON,
            proxy_join: true,
        };
        let b = r.encode();
        assert_eq!(&b[0..4], &[0xff, 0x12, 0x40, 0x1b]);
        assert_eq!(&b[12..16], &[0xff; 4]);
        assert_eq!(&b[16..18], &[0xfe, 0x80]);
        assert_eq!(&b[24..32], &0x0002_c903_0001_a2b1u64.to_be_bytes());
        assert_eq!(&b[32..38], &[0, 0, 0x0b, 0x1b, 0xc0, 0x01]);
        assert_eq!(&b[38..44], &[0x84, 0x5a, 0xff, 0xff, 0x43, 0xd2]);
        assert_eq!(&b[44..48], &[0xab, 0xcd, 0xef, 0x40]);
        assert_eq!(&b[48..52], &[0x25, 0x80, 0, 0]);
        assert_eq!(McMemberRecord::decode(&b), Ok(r));
        assert_eq!(
            McMemberRecord::decode(&b[..51]),
            Err(RecordError::Short { need: 52, got: 51 })
        );
        // Fields wider than their bits are cut, not spilled into their neighbours.
        let wide = McMemberRecord {
            mtu: 0xff,
            sl: 0xff,
            flow_label: u32::MAX,
            scope: 0xff,
            join_state: 0xff,
            ..McMemberRecord::default()
        };
        let w = wide.encode();
        assert_eq!((w[38], w[43], w[48]), (0x3f, 0, 0xff));
        assert_eq!(&w[44..48], &[0xff, 0xff, 0xff, 0x00]);
    }

    /// Random bytes of every length: short ones refused, never a panic; what decodes
    /// encodes back to the same bytes but the reserved bits, and decodes again to the same
    /// record (what `fuzz_sa` checks too).
    #[test]
    fn random_mcmember_records_decode_or_are_refused_and_round_trip() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut ok, mut short) = (0, 0);
        for i in 0..50_000 {
            let len = if i % 5 == 0 {
                (next() % 60) as usize
            } else {
                McMemberRecord::SIZE + (next() % 200) as usize
            };
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            match McMemberRecord::decode(&bytes) {
                Ok(r) => {
                    ok += 1;
                    let e = r.encode();
                    let mut want = [0u8; McMemberRecord::SIZE];
                    want.copy_from_slice(&bytes[..McMemberRecord::SIZE]);
                    want[49] &= 0x80;
                    want[50] = 0;
                    want[51] = 0;
                    assert_eq!(e, want);
                    assert_eq!(McMemberRecord::decode(&e), Ok(r));
                }
                Err(RecordError::Short { need, got }) => {
                    assert_eq!((need, got), (McMemberRecord::SIZE, len));
                    assert!(len < McMemberRecord::SIZE);
                    short += 1;
                }
            }
        }
        assert!(ok > 30_000 && short > 5_000, "{ok} decoded, {short} short");
    }
}
