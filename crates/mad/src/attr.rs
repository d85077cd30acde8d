//! The SMP attributes a subnet manager reads and writes, over the 64 data bytes of an SMP.
//! Field positions are IBA vol. 1 bit offsets, most significant bit first (`field(bit,
//! width)` below), so every accessor is one line that can be checked against the spec's
//! table.

use crate::SMP_DATA;

/// Reads `width` bits (≤ 32) starting at IBA bit offset `bit` (MSB-first) of `d`.
fn get(d: &[u8], bit: usize, width: usize) -> u32 {
    let mut v = 0u64;
    let first = bit / 8;
    let last = (bit + width - 1) / 8;
    for &b in &d[first..=last] {
        v = (v << 8) | b as u64;
    }
    let total = (last - first + 1) * 8;
    let shift = total - (bit % 8) - width;
    ((v >> shift) & ((1u64 << width) - 1)) as u32
}

/// Writes `width` bits (≤ 32) of `val` at IBA bit offset `bit` of `d`.
fn set(d: &mut [u8], bit: usize, width: usize, val: u32) {
    let first = bit / 8;
    let last = (bit + width - 1) / 8;
    let total = (last - first + 1) * 8;
    let shift = total - (bit % 8) - width;
    let mask = ((1u64 << width) - 1) << shift;
    let mut v = 0u64;
    for &b in &d[first..=last] {
        v = (v << 8) | b as u64;
    }
    v = (v & !mask) | (((val as u64) << shift) & mask);
    for i in (first..=last).rev() {
        d[i] = v as u8;
        v >>= 8;
    }
}

fn get64(d: &[u8], byte: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[byte..byte + 8]);
    u64::from_be_bytes(b)
}

fn set64(d: &mut [u8], byte: usize, v: u64) {
    d[byte..byte + 8].copy_from_slice(&v.to_be_bytes());
}

/// Node types in NodeInfo.
pub const NODE_CA: u8 = 1;
pub const NODE_SWITCH: u8 = 2;
pub const NODE_ROUTER: u8 = 3;

/// NodeInfo (attribute 0x11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NodeInfo {
    pub node_type: u8,
    pub nports: u8,
    pub sys_guid: u64,
    pub node_guid: u64,
    /// The GUID of the port the SMP arrived by (a switch: its port 0).
    pub port_guid: u64,
    pub partition_cap: u16,
    pub device_id: u16,
    pub revision: u32,
    /// The port the SMP arrived by.
    pub local_port: u8,
    pub vendor_id: u32,
}

impl NodeInfo {
    pub fn decode(d: &[u8; SMP_DATA]) -> NodeInfo {
        NodeInfo {
            node_type: d[2],
            nports: d[3],
            sys_guid: get64(d, 4),
            node_guid: get64(d, 12),
            port_guid: get64(d, 20),
            partition_cap: get(d, 224, 16) as u16,
            device_id: get(d, 240, 16) as u16,
            revision: get(d, 256, 32),
            local_port: d[36],
            vendor_id: get(d, 296, 24),
        }
    }
    pub fn encode(&self) -> [u8; SMP_DATA] {
        let mut d = [0u8; SMP_DATA];
        d[0] = 1;
        d[1] = 1;
        d[2] = self.node_type;
        d[3] = self.nports;
        set64(&mut d, 4, self.sys_guid);
        set64(&mut d, 12, self.node_guid);
        set64(&mut d, 20, self.port_guid);
        set(&mut d, 224, 16, self.partition_cap as u32);
        set(&mut d, 240, 16, self.device_id as u32);
        set(&mut d, 256, 32, self.revision);
        d[36] = self.local_port;
        set(&mut d, 296, 24, self.vendor_id);
        d
    }
}

/// NodeDescription (attribute 0x10): up to 64 bytes of text, NUL-padded.
pub fn node_desc_decode(d: &[u8; SMP_DATA]) -> String {
    let end = d.iter().position(|&b| b == 0).unwrap_or(SMP_DATA);
    String::from_utf8_lossy(&d[..end]).into_owned()
}

pub fn node_desc_encode(s: &str) -> [u8; SMP_DATA] {
    let mut d = [0u8; SMP_DATA];
    let b = s.as_bytes();
    let n = b.len().min(SMP_DATA);
    d[..n].copy_from_slice(&b[..n]);
    d
}

/// Logical port states (PortInfo.PortState).
pub mod port_state {
    pub const NO_CHANGE: u8 = 0;
    pub const DOWN: u8 = 1;
    pub const INIT: u8 = 2;
    pub const ARMED: u8 = 3;
    pub const ACTIVE: u8 = 4;
}

/// Physical port states (PortInfo.PortPhysicalState).
pub mod phys_state {
    pub const SLEEP: u8 = 1;
    pub const POLLING: u8 = 2;
    pub const DISABLED: u8 = 3;
    pub const LINK_UP: u8 = 5;
}

/// PortInfo (attribute 0x15), kept as its 64 bytes so that a Set can send back exactly what
/// a Get returned with only the fields the SM means to change (get-modify-set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo(pub [u8; SMP_DATA]);

impl Default for PortInfo {
    fn default() -> Self {
        PortInfo([0; SMP_DATA])
    }
}

macro_rules! field {
    ($get:ident, $set:ident, $bit:expr, $w:expr, $t:ty) => {
        pub fn $get(&self) -> $t {
            get(&self.0, $bit, $w) as $t
        }
        pub fn $set(&mut self, v: $t) {
            set(&mut self.0, $bit, $w, v as u32)
        }
    };
}

/// PortInfo.CapabilityMask bits.
pub mod cap {
    /// IsSM: an SM runs behind this port (set when an SM opens the port's issm device).
    pub const IS_SM: u32 = 0x0000_0002;
    /// IsClientReregistrationSupported: the port acts on PortInfo.ClientReregister.
    pub const IS_CLIENT_REREG: u32 = 0x0200_0000;
    /// IsMulticastFDBTopSupported (a switch's port 0): the switch honours
    /// SwitchInfo.MulticastFDBTop and ignores MFT entries above it.
    pub const HAS_MCAST_FDB_TOP: u32 = 0x4000_0000;
}

impl PortInfo {
    field!(lid, set_lid, 128, 16, u16);
    field!(master_sm_lid, set_master_sm_lid, 144, 16, u16);
    field!(cap_mask, set_cap_mask, 160, 32, u32);
    field!(local_port, set_local_port, 224, 8, u8);
    field!(link_width_enabled, set_link_width_enabled, 232, 8, u8);
    field!(link_width_supported, set_link_width_supported, 240, 8, u8);
    field!(link_width_active, set_link_width_active, 248, 8, u8);
    field!(link_speed_supported, set_link_speed_supported, 256, 4, u8);
    field!(port_state, set_port_state, 260, 4, u8);
    field!(phys_state, set_phys_state, 264, 4, u8);
    field!(lmc, set_lmc, 277, 3, u8);
    field!(link_speed_active, set_link_speed_active, 280, 4, u8);
    field!(neighbor_mtu, set_neighbor_mtu, 288, 4, u8);
    field!(link_speed_enabled, set_link_speed_enabled, 284, 4, u8);
    field!(vl_cap, set_vl_cap, 296, 4, u8);
    field!(mtu_cap, set_mtu_cap, 332, 4, u8);
    field!(oper_vls, set_oper_vls, 344, 4, u8);
    // ClientReregister: a Set with it asks the port's clients to register again with the
    // SA (multicast joins, event subscriptions), as a new master SM does.
    field!(client_reregister, set_client_reregister, 408, 1, u8);
    field!(link_speed_ext_active, set_link_speed_ext_active, 496, 4, u8);
    field!(
        link_speed_ext_enabled,
        set_link_speed_ext_enabled,
        507,
        5,
        u8
    );

    /// The attribute to Set from one that was read: every field a Set would *act on*
    /// without meaning to (the port state and physical state, the enabled widths and
    /// speeds, ClientReregister) is cleared to "no change". The caller then sets what it
    /// means to change.
    pub fn for_set(&self) -> PortInfo {
        let mut p = *self;
        p.set_port_state(port_state::NO_CHANGE);
        p.set_phys_state(0);
        p.set_link_width_enabled(0);
        p.set_link_speed_enabled(0);
        p.set_link_speed_ext_enabled(0);
        p.set_client_reregister(0);
        p
    }

    /// The physical link is up (the state directed routes need).
    pub fn link_up(&self) -> bool {
        self.phys_state() == phys_state::LINK_UP
    }
}

/// SwitchInfo (attribute 0x12), kept whole for get-modify-set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchInfo(pub [u8; SMP_DATA]);

impl Default for SwitchInfo {
    fn default() -> Self {
        SwitchInfo([0; SMP_DATA])
    }
}

impl SwitchInfo {
    field!(linear_fdb_cap, set_linear_fdb_cap, 0, 16, u16);
    field!(mcast_fdb_cap, set_mcast_fdb_cap, 32, 16, u16);
    field!(linear_fdb_top, set_linear_fdb_top, 48, 16, u16);
    field!(life_time, set_life_time, 88, 5, u8);
    field!(port_state_change, set_port_state_change, 93, 1, u8);
    field!(enhanced_port0, set_enhanced_port0, 132, 1, u8);
    field!(mcast_fdb_top, set_mcast_fdb_top, 144, 16, u16);
}

/// SLtoVLMappingTable (attribute 0x17): the VL of each of the 16 SLs, two per byte, SL 0 in
/// the high nibble of byte 0.
pub fn sl2vl_decode(d: &[u8; SMP_DATA]) -> [u8; 16] {
    let mut v = [0u8; 16];
    for (sl, x) in v.iter_mut().enumerate() {
        let b = d[sl / 2];
        *x = if sl % 2 == 0 { b >> 4 } else { b & 0x0f };
    }
    v
}

pub fn sl2vl_encode(v: &[u8; 16]) -> [u8; SMP_DATA] {
    let mut d = [0u8; SMP_DATA];
    for (sl, &x) in v.iter().enumerate() {
        d[sl / 2] |= if sl % 2 == 0 { (x & 0xf) << 4 } else { x & 0xf };
    }
    d
}

/// The SLtoVLMappingTable modifier of a switch's (input port, output port) row.
pub fn sl2vl_modifier(inp: u8, out: u8) -> u32 {
    ((inp as u32) << 8) | out as u32
}

/// MLIDs per MulticastForwardingTable block.
pub const MFT_MLIDS: usize = 32;

/// The MulticastForwardingTable modifier: the block of 32 MLIDs (from 0xC000) in the low 9
/// bits, the 16-port position (ports 16·position … 16·position + 15) in the top 4.
pub fn mft_modifier(block: u32, position: u8) -> u32 {
    ((position as u32 & 0xf) << 28) | (block & 0x1ff)
}

/// The 32 port masks of an MFT block, big-endian as the attribute carries them.
pub fn mft_encode(masks: &[u16; MFT_MLIDS]) -> [u8; SMP_DATA] {
    let mut d = [0u8; SMP_DATA];
    for (i, m) in masks.iter().enumerate() {
        d[2 * i..2 * i + 2].copy_from_slice(&m.to_be_bytes());
    }
    d
}

/// The 32 port masks of an MFT block's data.
pub fn mft_decode(d: &[u8; SMP_DATA]) -> [u16; MFT_MLIDS] {
    std::array::from_fn(|i| u16::from_be_bytes([d[2 * i], d[2 * i + 1]]))
}

/// Notice (attribute 0x02), the generic form traps use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Notice {
    pub generic: bool,
    /// 0 fatal, 1 urgent, 2 security, 3 subnet management, 4 informational.
    pub kind: u8,
    /// Generic: the producer's node type (2 = switch).
    pub producer: u32,
    pub trap_number: u16,
    pub issuer_lid: u16,
    pub toggle: bool,
    pub count: u16,
    /// Trap 128: the LID of the switch whose ports changed state.
    pub data_lid: u16,
}

impl Notice {
    /// Trap 128 ("link state of at least one port changed") as a switch sends it.
    pub const TRAP_LINK_STATE: u16 = 128;

    pub fn decode(d: &[u8; SMP_DATA]) -> Notice {
        Notice {
            generic: get(d, 0, 1) == 1,
            kind: get(d, 1, 7) as u8,
            producer: get(d, 8, 24),
            trap_number: get(d, 32, 16) as u16,
            issuer_lid: get(d, 48, 16) as u16,
            toggle: get(d, 64, 1) == 1,
            count: get(d, 65, 15) as u16,
            data_lid: get(d, 80, 16) as u16,
        }
    }
    pub fn encode(&self) -> [u8; SMP_DATA] {
        let mut d = [0u8; SMP_DATA];
        set(&mut d, 0, 1, self.generic as u32);
        set(&mut d, 1, 7, self.kind as u32);
        set(&mut d, 8, 24, self.producer);
        set(&mut d, 32, 16, self.trap_number as u32);
        set(&mut d, 48, 16, self.issuer_lid as u32);
        set(&mut d, 64, 1, self.toggle as u32);
        set(&mut d, 65, 15, self.count as u32);
        set(&mut d, 80, 16, self.data_lid as u32);
        d
    }
}

/// SMInfo (attribute 0x20): who a subnet manager is and what state it is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SmInfo {
    /// The GUID of the SM's port.
    pub guid: u64,
    /// Shown only to a requester that presents it (0 here: no M_Key protection).
    pub sm_key: u64,
    /// Grows as the SM works (here: the SMPs it has sent).
    pub act_count: u32,
    /// 0-15; the highest priority (then the lowest GUID) is master.
    pub priority: u8,
    /// One of [`sm_state`].
    pub state: u8,
}

/// SMInfo.SMState values.
pub mod sm_state {
    pub const NOT_ACTIVE: u8 = 0;
    pub const DISCOVERING: u8 = 1;
    pub const STANDBY: u8 = 2;
    pub const MASTER: u8 = 3;
}

impl SmInfo {
    pub fn decode(d: &[u8; SMP_DATA]) -> SmInfo {
        SmInfo {
            guid: get64(d, 0),
            sm_key: get64(d, 8),
            act_count: get(d, 128, 32),
            priority: get(d, 160, 4) as u8,
            state: get(d, 164, 4) as u8,
        }
    }
    pub fn encode(&self) -> [u8; SMP_DATA] {
        let mut d = [0u8; SMP_DATA];
        set64(&mut d, 0, self.guid);
        set64(&mut d, 8, self.sm_key);
        set(&mut d, 128, 32, self.act_count);
        set(&mut d, 160, 4, (self.priority & 0xf) as u32);
        set(&mut d, 164, 4, (self.state & 0xf) as u32);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SMInfo as the IBA table places its fields: GUID, SM_Key, ActCount, then priority and
    /// state in the high and low nibbles of byte 20.
    #[test]
    fn sm_info_fields_sit_where_the_table_says() {
        let i = SmInfo {
            guid: 0x0002_c903_0000_1234,
            sm_key: 0x1122_3344_5566_7788,
            act_count: 0xdead_beef,
            priority: 14,
            state: sm_state::MASTER,
        };
        let d = i.encode();
        assert_eq!(&d[0..8], &0x0002_c903_0000_1234u64.to_be_bytes());
        assert_eq!(&d[8..16], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!(&d[16..20], &0xdead_beefu32.to_be_bytes());
        assert_eq!(d[20], 0xe3);
        assert!(d[21..].iter().all(|&b| b == 0));
        assert_eq!(SmInfo::decode(&d), i);
    }

    /// NodeInfo of ibsim's first switch in a generated 3x3 torus, byte by byte as the IBA
    /// table places the fields.
    #[test]
    fn nodeinfo_golden_bytes() {
        let ni = NodeInfo {
            node_type: NODE_SWITCH,
            nports: 5,
            sys_guid: 0x0000_0000_0020_0000,
            node_guid: 0x0000_0000_0020_0000,
            port_guid: 0x0000_0000_0020_0000,
            partition_cap: 8,
            device_id: 0xb924,
            revision: 0xa1,
            local_port: 3,
            vendor_id: 0x0002c9,
        };
        let d = ni.encode();
        assert_eq!(&d[0..4], &[1, 1, 2, 5]);
        assert_eq!(&d[12..20], &[0, 0, 0, 0, 0, 0x20, 0, 0]);
        assert_eq!(&d[28..32], &[0, 8, 0xb9, 0x24]);
        assert_eq!(&d[32..40], &[0, 0, 0, 0xa1, 3, 0x00, 0x02, 0xc9]);
        assert_eq!(NodeInfo::decode(&d), ni);
    }

    #[test]
    fn portinfo_fields_sit_where_the_spec_puts_them() {
        let mut p = PortInfo::default();
        p.set_lid(0x1234);
        p.set_master_sm_lid(0x0a);
        p.set_local_port(3);
        p.set_port_state(port_state::ARMED);
        p.set_phys_state(phys_state::LINK_UP);
        p.set_lmc(2);
        p.set_link_width_active(2);
        p.set_link_speed_active(1);
        p.set_link_speed_enabled(7);
        p.set_vl_cap(4);
        p.set_oper_vls(3);
        assert_eq!(&p.0[16..20], &[0x12, 0x34, 0x00, 0x0a]);
        assert_eq!(p.0[28], 3); // LocalPortNum: bit 224
        assert_eq!(p.0[31], 2); // LinkWidthActive: bit 248
        assert_eq!(p.0[32], 0x03); // speed supported (0) | port state (3): bit 256
        assert_eq!(p.0[33], 0x50); // phys state 5 | link-down default 0
        assert_eq!(p.0[34], 0x02); // M_Key protect | LMC in the low three bits
        assert_eq!(p.0[35], 0x17); // speed active | speed enabled
        assert_eq!(p.0[37], 0x40); // VLCap | InitType
        assert_eq!(p.0[43], 0x30); // OperVLs: bit 344
        let mut r = p;
        r.set_client_reregister(1);
        assert_eq!(r.0[51], 0x80); // ClientReregister | reserved | SubnetTimeOut
        assert_eq!(r.for_set().client_reregister(), 0);
        let s = p.for_set();
        assert_eq!(
            (s.port_state(), s.phys_state(), s.link_speed_enabled()),
            (0, 0, 0)
        );
        assert_eq!((s.lid(), s.lmc(), s.master_sm_lid()), (0x1234, 2, 0x0a));
    }

    #[test]
    fn switchinfo_and_sl2vl_and_notice() {
        let mut s = SwitchInfo::default();
        s.set_linear_fdb_cap(30720);
        s.set_linear_fdb_top(0x80);
        s.set_life_time(0x1f);
        s.set_port_state_change(1);
        assert_eq!(&s.0[0..2], &[0x78, 0x00]);
        assert_eq!(&s.0[6..8], &[0x00, 0x80]);
        assert_eq!(s.0[11], 0xfc);
        s.set_life_time(0);
        assert_eq!(s.0[11], 0x04);

        let v: [u8; 16] = std::array::from_fn(|i| (i % 4) as u8);
        let d = sl2vl_encode(&v);
        assert_eq!(&d[0..8], &[0x01, 0x23, 0x01, 0x23, 0x01, 0x23, 0x01, 0x23]);
        assert_eq!(sl2vl_decode(&d), v);
        assert_eq!(sl2vl_modifier(1, 2), 0x0102);

        let n = Notice {
            generic: true,
            kind: 1,
            producer: 2,
            trap_number: 128,
            issuer_lid: 42,
            data_lid: 42,
            ..Default::default()
        };
        let d = n.encode();
        assert_eq!(&d[0..12], &[0x81, 0, 0, 2, 0, 128, 0, 42, 0, 0, 0, 42]);
        assert_eq!(Notice::decode(&d), n);
        assert_eq!(node_desc_decode(&node_desc_encode("S_0_0")), "S_0_0");
    }
}
