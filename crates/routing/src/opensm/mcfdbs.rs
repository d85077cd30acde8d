//! `opensm.mcfdbs` (OpenSM's `dump_mcast_routes`, ibdmchk's `-m` input): per switch with
//! multicast entries, in OpenSM's switch order,
//!
//! ```text
//!
//! Switch 0x0002c90200400000
//! LID    : Out Port(s)
//! 0xC000 : 0x001  0x005
//! ```
//!
//! (each port as ` 0x%03X `, so two spaces between ports and one at the end of the line).
//! An empty file means no multicast entry anywhere.

use super::{numbered_lines, perr, switches_in_osm_order, take_0x, text_of};
use crate::mcast::{GroupMft, Mfts, PortMask, MLID_FIRST};
use fabric::io::ParseError;
use fabric::{Fabric, FaultMask, Lid};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Writes `opensm.mcfdbs` for `mfts` (switches `dead` marks are left out, as OpenSM dumps
/// only the switches it knows).
pub fn write_mcfdbs(f: &Fabric, mfts: Option<&Mfts>, dead: Option<&FaultMask>) -> String {
    let mut out = String::new();
    let Some(mfts) = mfts.filter(|m| !m.is_empty()) else {
        return out;
    };
    let by_switch = mfts.by_switch(f.num_switches());
    for s in switches_in_osm_order(f) {
        let n = f.switches[s];
        if dead.is_some_and(|m| m.node_dead(n)) || by_switch[s].is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "\nSwitch 0x{:016x}\nLID    : Out Port(s)\n",
            f.node(n).guid
        );
        for (mlid, mask) in &by_switch[s] {
            let _ = write!(out, "0x{mlid:04X} :");
            for p in mask.ports() {
                let _ = write!(out, " 0x{p:03X} ");
            }
            out.push('\n');
        }
    }
    out
}

/// Reads `opensm.mcfdbs` into MFTs (SL 0; the file does not carry SLs or members). Errors
/// name the file and line; switches not in the fabric are skipped with a warning.
pub fn read_mcfdbs(
    bytes: &[u8],
    file: &str,
    f: &Fabric,
) -> Result<(Mfts, Vec<String>), ParseError> {
    let text = text_of(bytes);
    let mut warnings = Vec::new();
    let mut groups: BTreeMap<Lid, BTreeMap<u32, PortMask>> = BTreeMap::new();
    // None = before any header; Some(None) = skipped switch.
    let mut cur: Option<Option<u32>> = None;
    for (ln, raw) in numbered_lines(&text) {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("LID") {
            continue;
        }
        if let Some(h) = line.strip_prefix("Switch") {
            let g = take_0x(h.trim_start())
                .filter(|(_, rest)| rest.trim().is_empty())
                .map(|(g, _)| g)
                .ok_or_else(|| perr(file, ln, "expected `Switch 0x<switch node GUID>`"))?;
            cur = Some(super::switch_of_guid(f, g, file, ln, &mut warnings).map(|s| s as u32));
            continue;
        }
        let s = match cur {
            Some(Some(s)) => s,
            Some(None) => continue,
            None => {
                return Err(perr(
                    file,
                    ln,
                    "expected `Switch 0x<GUID>` before the first entry",
                ))
            }
        };
        let (mlid, rest) =
            take_0x(line).ok_or_else(|| perr(file, ln, "expected `0x<MLID> : 0x<port> ...`"))?;
        if !(MLID_FIRST as u64..=0xFFFF).contains(&mlid) {
            return Err(perr(
                file,
                ln,
                format!("0x{mlid:04X} is not a multicast LID (0xC000-0xFFFF)"),
            ));
        }
        let rest = rest
            .trim_start()
            .strip_prefix(':')
            .ok_or_else(|| perr(file, ln, "expected ` : ` after the MLID"))?;
        let nports = f.node(f.switches[s as usize]).nports;
        let mask = groups.entry(mlid as Lid).or_default().entry(s).or_default();
        for tok in rest.split_whitespace() {
            let p = take_0x(tok)
                .filter(|(_, r)| r.is_empty())
                .map(|(p, _)| p)
                .ok_or_else(|| perr(file, ln, format!("{tok:?}: expected a port as 0x<hex>")))?;
            if p > nports as u64 {
                return Err(perr(
                    file,
                    ln,
                    format!("port 0x{p:03X}: the switch has ports 0..={nports}"),
                ));
            }
            mask.set(p as u8);
        }
    }
    let mfts = Mfts {
        groups: groups
            .into_iter()
            .map(|(mlid, sws)| GroupMft {
                mlid,
                sl: 0,
                switches: sws.into_iter().filter(|(_, m)| !m.is_empty()).collect(),
            })
            .collect(),
    };
    Ok((mfts, warnings))
}
