//! `opensm-subnet.lst` writer (OpenSM's `dump_topology_node`; ibdmchk `-s`). The reader lives
//! in the fabric crate (`fabric::io::subnet_lst`).
//!
//! One line per cabled port (number ≥ 1) of every node, nodes in OpenSM's node-GUID map order
//! ([`super::osm_guid_order`]), ports ascending, so every link appears twice:
//! ```text
//! { SW Ports:06 SystemGUID:0000000000200000 NodeGUID:0000000000200000 PortGUID:0000000000200000 VenID:000000 DevID:0000 Rev:000000A1 {S_0_0} LID:0002 PN:01 } { CA-SM Ports:01 SystemGUID:0000000000100000 NodeGUID:0000000000100000 PortGUID:0000000000100001 VenID:00000000 DevID:0000 Rev:000000A1 {H_0_0_0} LID:0001 PN:01 } PHY=4x LOG=ACT SPD=2.5
//! ```
//! OpenSM's quirks are kept: the local VenID has 6 hex digits, the remote one 8; the remote
//! DevID is printed through a 32-bit byte swap (`B9240000` for device 0xB924, `0000` for 0).
//! fabroute keeps no hardware revision, so `Rev` comes from the options; a node without a
//! system image GUID shows its node GUID there (what ibsim and most HCAs report).

use super::{osm_guid_order, port_base_lid, port_guid};
use fabric::{Fabric, NodeId, NodeKind, PortId, Speed};
use std::fmt::Write as _;

/// Options of [`write_subnet_lst`].
#[derive(Clone, Debug)]
pub struct SubnetLstOptions {
    /// The node holding the master SM: its type gets the `-SM` suffix wherever it appears.
    pub sm_node: Option<NodeId>,
    /// The `Rev:` field of every node. Default 0xA1, what ibsim reports, so dumps of simulated
    /// fabrics compare equal with the reference runs.
    pub revision: u32,
    /// Failed links and switches: left out, as a subnet manager would not see them.
    pub dead: Option<fabric::FaultMask>,
}

impl Default for SubnetLstOptions {
    fn default() -> Self {
        SubnetLstOptions {
            sm_node: None,
            revision: 0xA1,
            dead: None,
        }
    }
}

fn kind_tag(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Switch => "SW",
        NodeKind::Ca => "CA",
        NodeKind::Router => "Rt",
    }
}

/// OpenSM's `SPD=` value for the active link speed.
fn speed_str(s: Speed) -> &'static str {
    match s {
        Speed::Sdr => "2.5",
        Speed::Ddr => "5",
        Speed::Qdr => "10",
        Speed::Fdr10 => "FDR10",
        Speed::Fdr => "14",
        Speed::Edr => "25",
        Speed::Hdr => "50",
        Speed::Ndr | Speed::Xdr | Speed::Unknown => "??",
    }
}

fn node_block(out: &mut String, f: &Fabric, p: PortId, remote: bool, opts: &SubnetLstOptions) {
    let port = f.port(p);
    let n = port.node;
    let node = f.node(n);
    let sm = if opts.sm_node == Some(n) { "-SM" } else { "" };
    let sys = if node.sys_guid != 0 {
        node.sys_guid
    } else {
        node.guid
    };
    let _ = write!(
        out,
        "{{ {}{sm} Ports:{:02X} SystemGUID:{sys:016x} NodeGUID:{:016x} PortGUID:{:016x} ",
        kind_tag(node.kind),
        node.nports,
        node.guid,
        port_guid(f, p),
    );
    if remote {
        let dev = (node.device_id & 0xFFFF) << 16;
        let _ = write!(out, "VenID:{:08X} DevID:{dev:04X} ", node.vendor_id);
    } else {
        let _ = write!(
            out,
            "VenID:{:06X} DevID:{:04X} ",
            node.vendor_id,
            node.device_id & 0xFFFF
        );
    }
    let _ = write!(
        out,
        "Rev:{:08X} {{{}}} LID:{:04X} PN:{:02X} }}",
        opts.revision,
        node.desc,
        port_base_lid(f, p),
        port.num
    );
}

/// Writes `opensm-subnet.lst` in OpenSM's layout.
pub fn write_subnet_lst(f: &Fabric, opts: &SubnetLstOptions) -> String {
    let mut order: Vec<usize> = (0..f.nodes.len()).collect();
    order.sort_by_key(|&i| (osm_guid_order(f.nodes[i].guid), i));
    let mut out = String::with_capacity(f.links.len() * 2 * 360);
    for i in order {
        let n = NodeId(i as u32);
        for p in f.node_ports(n).skip(1) {
            let Some(c) = f.out_channel(p) else {
                continue;
            };
            if let Some(m) = &opts.dead {
                if !m.channel_alive(f, c) {
                    continue;
                }
            }
            let r = f.channel_dst(c);
            let link = f.link(c.link());
            node_block(&mut out, f, p, false, opts);
            out.push(' ');
            node_block(&mut out, f, r, true, opts);
            let _ = writeln!(
                out,
                " PHY={} LOG=ACT SPD={}",
                link.width.as_str(),
                speed_str(link.speed)
            );
        }
    }
    out
}
