//! SA records of the fabric's structure (IBA vol. 1, 15.2.5): LinkRecord (attribute 0x20,
//! one per direction of a cable) and SwitchInfoRecord (0x14, a switch's LID and the first
//! 20 bytes of its SwitchInfo). Pure functions on bytes; decoding reads fixed offsets and
//! cannot fail on the SA's 200 data bytes.

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
}
