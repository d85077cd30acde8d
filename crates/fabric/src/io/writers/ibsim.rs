//! ibsim net file writer (the format `ibsim/sim_net.c` of ibsim 0.10 parses).
//!
//! Layout, one record per node in fabric order, records separated by a blank line (ibsim ends a
//! record at the first line that is not a port line *and consumes that line*, so the blank line
//! matters):
//! ```text
//! switchguid=0x2c90300f0c0de
//! Switch    36 "leaf01"    # "MF0;leaf01:MSB7700/U1" enhanced port 0 lid 3 lmc 0
//! [1]    "node01"[1]    w=2 e=2
//!
//! caguid=0x2c90300a1b2c4
//! Hca    2 "node01"    # "node01 HCA-1"
//! [1]    "leaf01"[1]    e=2    # lid 5 lmc 0
//! ```
//! (The wide gaps are single tabs in the output.) Port options: `w=` enabled-width mask (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x), `s=` speed
//! mask (1 = SDR, 2 = DDR, 4 = QDR), `e=` extended speed mask (1 = FDR, 2 = EDR, 4 = HDR; ibsim
//! 0.10 as packaged by Debian refuses 8 = NDR, so NDR links are written as HDR);
//! ibsim makes a link's active width/speed the highest bit common to both ends, so both ends get
//! the same single-bit masks. 4x and SDR are ibsim's defaults and are not written. CA port lines
//! end with `# lid N lmc M` (ibsim sets the CA port's LID from it); switch headers carry port 0's
//! LID/LMC and enhanced/base port 0 as ibnetdiscover prints them.

use super::{
    check_consistent, check_ibsim_port_guids, clean_desc, default_port_guid, effective_guids,
    link_of, peer, port_of, separate_ibsim_guids, WriteError,
};
use crate::model::*;
use std::fmt::Write as _;

/// Longest line written (ibsim reads lines into a 256-byte buffer).
pub const IBSIM_MAX_LINE: usize = 250;
/// Longest node id ibsim keeps (`NODEIDLEN` 65 including the terminating NUL).
pub const IBSIM_MAX_NAME: usize = 64;
/// Descriptions are cut to this many bytes (ibsim keeps 63; the cut keeps lines short).
pub const IBSIM_MAX_DESC: usize = 128;

/// Why ibsim cannot use `name` as a node id, if it cannot.
pub fn ibsim_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name.len() > IBSIM_MAX_NAME {
        return Some(format!(
            "it is {} bytes long and ibsim keeps at most {IBSIM_MAX_NAME}",
            name.len()
        ));
    }
    if let Some(c) = name.chars().find(|&c| c == '#' || c == '@') {
        return Some(format!("it contains {c:?}, which ibsim reserves"));
    }
    if name.contains('"') {
        return Some("it contains '\"', which would end the quoted id".into());
    }
    if name.chars().any(char::is_control) {
        return Some("it contains a control character".into());
    }
    None
}

/// A description as written into an ibsim file: cleaned, then cut to [`IBSIM_MAX_DESC`] bytes at
/// a character boundary.
pub(crate) fn ibsim_desc(desc: &str) -> String {
    let mut d = clean_desc(desc);
    if d.len() > IBSIM_MAX_DESC {
        let mut cut = IBSIM_MAX_DESC;
        while !d.is_char_boundary(cut) {
            cut -= 1;
        }
        d.truncate(cut);
    }
    d
}

/// The speed ibsim will show for `s` and the port options that give it (empty for the default).
pub(crate) fn ibsim_speed(s: Speed) -> (Speed, &'static str) {
    match s {
        Speed::Sdr | Speed::Unknown => (Speed::Sdr, ""),
        Speed::Ddr => (Speed::Ddr, "s=2"),
        Speed::Qdr => (Speed::Qdr, "s=4"),
        Speed::Fdr10 => (Speed::Qdr, "s=4"),
        Speed::Fdr => (Speed::Fdr, "e=1"),
        Speed::Edr => (Speed::Edr, "e=2"),
        Speed::Hdr => (Speed::Hdr, "e=4"),
        // Debian's ibsim 0.10 accepts e=0..7 only (no NDR bit); upstream later added e=8
        // (none for XDR).
        Speed::Ndr | Speed::Xdr => (Speed::Hdr, "e=4"),
    }
}

/// ibsim's option for width `w` (empty for the default 4x and for unknown).
fn ibsim_width(w: Width) -> &'static str {
    match w {
        Width::X4 | Width::Unknown => "",
        Width::X1 => "w=1",
        Width::X2 => "w=16",
        Width::X8 => "w=4",
        Width::X12 => "w=8",
    }
}

/// Writes `f` as an ibsim net file, refusing anything the file would lose (see the module docs
/// of [`super`]): on success, reading the file back gives `f` up to link order, hints, zero
/// GUIDs and unknown widths/speeds.
pub fn to_ibsim(f: &Fabric) -> Result<String, WriteError> {
    let (text, lost) = to_ibsim_lossy(f)?;
    match lost.first() {
        None => Ok(text),
        Some(first) => Err(WriteError::Lossy {
            count: lost.len(),
            first: first.clone(),
        }),
    }
}

/// Writes `f` as an ibsim net file and lists what the file does not carry (port GUIDs ibsim
/// derives differently, FDR10 written as QDR, NDR as HDR, LIDs of uncabled ports, cleaned or cut
/// descriptions). Fails only on node names ibsim cannot use, on port GUIDs that ibsim's
/// derivation would make collide, and on inconsistent fabrics.
pub fn to_ibsim_lossy(f: &Fabric) -> Result<(String, Vec<String>), WriteError> {
    check_consistent(f).map_err(WriteError::Inconsistent)?;
    for node in &f.nodes {
        if let Some(reason) = ibsim_name_problem(&node.name) {
            return Err(WriteError::BadName {
                name: node.name.clone(),
                reason,
            });
        }
    }
    let order: Vec<NodeId> = (0..f.nodes.len() as u32).map(NodeId).collect();
    let mut eff = effective_guids(f, &order)?;
    let mut lost = Vec::new();
    separate_ibsim_guids(f, &order, &mut eff, &mut lost)?;
    check_ibsim_port_guids(f, &eff)?;
    let mut out = String::new();

    let nports: usize = f
        .nodes
        .iter()
        .map(|n| n.nports as usize + usize::from(n.kind == NodeKind::Switch))
        .sum();
    let _ = writeln!(out, "# ibsim net file written by fabroute");
    let _ = writeln!(
        out,
        "# {} nodes ({} switches, {} CAs, {} routers), {} links",
        f.nodes.len(),
        f.count(NodeKind::Switch),
        f.count(NodeKind::Ca),
        f.count(NodeKind::Router),
        f.links.len()
    );
    let _ = writeln!(
        out,
        "# ibsim needs at least: -N {} -S {} -P {} (defaults 2048, 256, 13312)",
        f.nodes.len(),
        f.count(NodeKind::Switch),
        nports
    );

    // vendid= and sysimgguid= apply to the next node only and devid= to every following node
    // in ibsim; a line is written whenever the value or the previous node's is non-zero, so the
    // file means the same under either reading.
    let (mut prev_vendor, mut prev_device, mut prev_sys) = (0u32, 0u32, 0u64);
    for &n in &order {
        let node = &f.nodes[n.idx()];
        let guid = eff.node[n.idx()];
        out.push('\n');
        if node.vendor_id != 0 || prev_vendor != 0 {
            let _ = writeln!(out, "vendid=0x{:x}", node.vendor_id);
        }
        if node.device_id != 0 || prev_device != 0 {
            let _ = writeln!(out, "devid=0x{:x}", node.device_id);
        }
        if node.sys_guid != 0 || prev_sys != 0 {
            let _ = writeln!(out, "sysimgguid=0x{:x}", node.sys_guid);
        }
        (prev_vendor, prev_device, prev_sys) = (node.vendor_id, node.device_id, node.sys_guid);
        if eff.needs_line[n.idx()] {
            let kw = match node.kind {
                NodeKind::Switch => "switchguid",
                NodeKind::Ca => "caguid",
                NodeKind::Router => "rtguid",
            };
            let _ = writeln!(out, "{kw}=0x{guid:x}");
        }

        let desc = ibsim_desc(&node.desc);
        if desc != node.desc {
            lost.push(format!(
                "node {:?}: description {:?} is written as {desc:?}",
                node.name, node.desc
            ));
        }
        match node.kind {
            NodeKind::Switch => {
                let p0 = port_of(f, n, 0);
                let _ = writeln!(
                    out,
                    "Switch\t{} \"{}\"\t# \"{desc}\" {} port 0 lid {} lmc {}",
                    node.nports,
                    node.name,
                    if node.enhanced_sp0 {
                        "enhanced"
                    } else {
                        "base"
                    },
                    p0.lid,
                    p0.lmc
                );
            }
            NodeKind::Ca => {
                let _ = writeln!(out, "Hca\t{} \"{}\"\t# \"{desc}\"", node.nports, node.name);
            }
            NodeKind::Router => {
                let _ = writeln!(out, "Rt\t{} \"{}\"\t# \"{desc}\"", node.nports, node.name);
            }
        }

        for num in 0..=node.nports {
            let port = port_of(f, n, num);
            let want = default_port_guid(node.kind, guid, num);
            if port.guid != 0 && port.guid != want {
                lost.push(format!(
                    "node {:?} port {num}: GUID {:#x} becomes {want:#x} (ibsim derives port GUIDs from the node GUID)",
                    node.name, port.guid
                ));
            }
            let lid_listed = match node.kind {
                NodeKind::Switch => num == 0,
                _ => num > 0 && port.link.is_some(),
            };
            if !lid_listed && (port.lid != 0 || port.lmc != 0) {
                lost.push(format!(
                    "node {:?} port {num}: LID {} LMC {} is not written (ibsim lists cabled ports only)",
                    node.name, port.lid, port.lmc
                ));
            }
            if num == 0 {
                continue;
            }
            let (Some((rn, rp)), Some(link)) = (peer(f, n, num), link_of(f, n, num)) else {
                continue;
            };
            let (shown, sopt) = ibsim_speed(link.speed);
            if shown != link.speed && link.speed != Speed::Unknown {
                // Report each link once, from its `a` end.
                let a = &f.ports[link.a.idx()];
                if a.node == n && a.num == num {
                    lost.push(format!(
                        "link {:?}[{num}] - {:?}[{rp}]: speed {} is written as {} (ibsim has no option for it)",
                        node.name,
                        f.nodes[rn.idx()].name,
                        link.speed.as_str(),
                        shown.as_str()
                    ));
                }
            }
            let _ = write!(out, "[{num}]\t\"{}\"[{rp}]", f.nodes[rn.idx()].name);
            let opts: Vec<&str> = [ibsim_width(link.width), sopt]
                .into_iter()
                .filter(|o| !o.is_empty())
                .collect();
            if !opts.is_empty() {
                let _ = write!(out, "\t{}", opts.join(" "));
            }
            if node.kind.is_end() {
                let _ = write!(out, "\t# lid {} lmc {}", port.lid, port.lmc);
            }
            out.push('\n');
        }
    }

    for (i, line) in out.lines().enumerate() {
        if line.len() > IBSIM_MAX_LINE {
            return Err(WriteError::LineTooLong {
                line: i + 1,
                len: line.len(),
                max: IBSIM_MAX_LINE,
            });
        }
    }
    Ok((out, lost))
}
