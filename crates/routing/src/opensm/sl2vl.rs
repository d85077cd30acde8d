//! `opensm-sl2vl.dump` (OpenSM's `dump_sl2vl_tbl`; ibdmchk `-d` reads it as is).
//!
//! One block per port GUID in OpenSM's map order: a switch (port 0's GUID) lists one row per
//! (input port 0..=P, cabled output port), output-major; a CA or router port lists the single
//! row `0 0` (its own table, fabroute's `(input 0, output = that port)`):
//! ```text
//! Switch 0x0000000000200000, base LID 2, "S_0_0"
//! #in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15
//! #--------------------------------------------------------
//! 0   1   : 0  0  0  0  0  0  0  0  1  1  1  1  1  1  1  1
//! #--------------------------------------------------------
//!
//! ```
//! (every value is printed as ` %-2u`, so rows end with a blank).

use super::{
    numbered_lines, perr, port_base_lid, port_guid, port_guid_map, require_text, take_0x, take_dec,
    text_of, type_str,
};
use crate::tables::{Sl2Vl, DROP_VL, NUM_SLS};
use fabric::io::ParseError;
use fabric::{Fabric, NodeId, NodeKind, PortId};
use std::fmt::Write as _;

const COLUMNS: &str = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n";
const RULE: &str = "#--------------------------------------------------------\n";

/// SL2VL tables read from a dump, with the reader's warnings.
#[derive(Clone, Debug)]
pub struct Sl2VlLoad {
    /// Nodes without a block keep the identity map; rows a block omits keep identity values.
    pub sl2vl: Sl2Vl,
    pub warnings: Vec<String>,
    /// Rows read.
    pub rows: usize,
    /// Switches and end ports the dump has no block for (OpenSM writes one for each): their
    /// tables are taken as identity, a warning says how many.
    pub missing_switches: usize,
    pub missing_end_ports: usize,
}

/// Ports that get a block, in OpenSM's order: every switch's port 0 and every cabled
/// CA/router port.
fn dump_ports(f: &Fabric) -> Vec<PortId> {
    let mut v: Vec<PortId> = f
        .switches
        .iter()
        .map(|&n| f.port_id(n, 0))
        .chain(f.end_ports.iter().copied())
        .collect();
    v.sort_by_key(|&p| (super::osm_guid_order(port_guid(f, p)), p));
    v
}

fn write_row(out: &mut String, t: &Sl2Vl, node: NodeId, inp: u8, out_p: u8, shown: (u8, u8)) {
    let _ = write!(out, "{:<3} {:<3} :", shown.0, shown.1);
    for sl in 0..NUM_SLS as u8 {
        let _ = write!(out, " {:<2}", t.vl(node, inp, out_p, sl));
    }
    out.push('\n');
}

/// Writes the SL2VL tables in OpenSM's layout.
pub fn write_sl2vl(f: &Fabric, t: &Sl2Vl) -> String {
    write_sl2vl_live(f, t, None)
}

/// [`write_sl2vl`] without the nodes dead under `dead` (as `opensm-subnet.lst` leaves them
/// out: ibdmchk reports a GUID the subnet file does not list).
pub fn write_sl2vl_live(f: &Fabric, t: &Sl2Vl, dead: Option<&fabric::FaultMask>) -> String {
    let mut out = String::new();
    for p in dump_ports(f) {
        let port = f.port(p);
        let n = port.node;
        if dead.is_some_and(|m| {
            m.node_dead(n) || f.out_channel(p).is_some_and(|c| !m.channel_alive(f, c))
        }) {
            continue;
        }
        let node = f.node(n);
        let _ = writeln!(
            out,
            "{} 0x{:016x}, base LID {}, \"{}\"",
            type_str(node.kind),
            port_guid(f, p),
            port_base_lid(f, p),
            node.desc
        );
        out.push_str(COLUMNS);
        out.push_str(RULE);
        if node.kind == NodeKind::Switch {
            for o in 1..=node.nports {
                if f.port(f.port_id(n, o)).link.is_none() {
                    continue;
                }
                for i in 0..=node.nports {
                    write_row(&mut out, t, n, i, o, (i, o));
                }
            }
        } else {
            write_row(&mut out, t, n, 0, port.num, (0, 0));
        }
        out.push_str(RULE);
        out.push('\n');
    }
    out
}

/// Reads an SL2VL dump for fabric `f`. Blocks of unknown GUIDs are skipped with a warning;
/// rows naming ports beyond the node's port count, malformed rows and VLs above 15 are errors.
/// VL 15 (the "drop" lane) is kept and warned about: a route that meets it is dropped there,
/// which the checker reports ([`crate::cdg::CheckReport::drops_on_vl15`]).
pub fn read_sl2vl(bytes: &[u8], file: &str, f: &Fabric) -> Result<Sl2VlLoad, ParseError> {
    const WHAT: &str = "an OpenSM SL2VL dump (`Switch|Channel Adapter 0x<GUID>, base LID ..` blocks of `<in> <out> : <16 VLs>` rows)";
    require_text(bytes, file, WHAT)?;
    let text = text_of(bytes);
    let by_guid = port_guid_map(f);
    let mut t = Sl2Vl::identity(f);
    let mut warnings = Vec::new();
    let mut rows = 0usize;
    let mut vl15 = 0usize;
    // None = before any header; Some(None) = skipped block; Some(Some(port)) = current port.
    let mut cur: Option<Option<PortId>> = None;
    let mut seen: rustc_hash::FxHashSet<PortId> = Default::default();
    for (ln, raw) in numbered_lines(&text) {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let header = ["Switch", "Channel Adapter", "Router"]
            .iter()
            .find_map(|k| line.strip_prefix(k).map(|rest| (*k, rest)));
        if let Some((kind, rest)) = header {
            let (g, tail) = take_0x(rest.trim_start())
                .filter(|(_, tail)| tail.starts_with(','))
                .ok_or_else(|| {
                    perr(
                        file,
                        ln,
                        format!("expected `{kind} 0x<port GUID>, base LID <lid>, \"<desc>\"`"),
                    )
                })?;
            let _ = tail;
            cur = Some(match by_guid.get(&g) {
                Some(&p) => {
                    seen.insert(p);
                    let nk = f.node(f.port(p).node).kind;
                    if type_str(nk) != kind {
                        warnings.push(format!(
                            "{file}:{ln}: GUID 0x{g:016x} is a {} in the fabric, not a {kind}",
                            type_str(nk)
                        ));
                    }
                    Some(p)
                }
                None => {
                    warnings.push(format!(
                        "{file}:{ln}: port GUID 0x{g:016x} is not in the fabric; its block is skipped"
                    ));
                    None
                }
            });
            continue;
        }
        let p = match cur {
            Some(Some(p)) => p,
            Some(None) => continue,
            None => {
                return Err(perr(
                    file,
                    ln,
                    "expected a `Switch|Channel Adapter|Router 0x<GUID>, base LID ...` header before the first row",
                ))
            }
        };
        let bad_row = || perr(file, ln, "expected a row `<in port> <out port> : <16 VLs>`");
        let (inp, rest) = take_dec(line).ok_or_else(bad_row)?;
        let (outp, rest) = take_dec(rest.trim_start()).ok_or_else(bad_row)?;
        let rest = rest.trim_start().strip_prefix(':').ok_or_else(bad_row)?;
        let mut vls = [0u8; NUM_SLS];
        let mut count = 0usize;
        for tok in rest.split_ascii_whitespace() {
            if count == NUM_SLS {
                return Err(perr(file, ln, "expected exactly 16 VLs, found more"));
            }
            let v: u8 =
                tok.parse().ok().filter(|&v| v <= 15).ok_or_else(|| {
                    perr(file, ln, format!("expected a VL 0..=15, found {tok:?}"))
                })?;
            if v == DROP_VL {
                vl15 += 1;
            }
            vls[count] = v;
            count += 1;
        }
        if count != NUM_SLS {
            return Err(perr(
                file,
                ln,
                format!("expected 16 VLs (SL0..SL15), found {count}"),
            ));
        }
        let port = f.port(p);
        let n = port.node;
        let np = f.node(n).nports as u64;
        let (i, o) = if f.is_switch(n) {
            if inp > np || outp > np {
                return Err(perr(
                    file,
                    ln,
                    format!(
                        "port pair {inp} {outp} is beyond the port count {np} of {:?}",
                        f.node(n).name
                    ),
                ));
            }
            (inp as u8, outp as u8)
        } else {
            if inp != 0 || (outp != 0 && outp != port.num as u64) {
                return Err(perr(
                    file,
                    ln,
                    format!("expected the row `0 0` for a CA/router port, found `{inp} {outp}`"),
                ));
            }
            (0, port.num)
        };
        for (sl, &v) in vls.iter().enumerate() {
            t.set(n, i, o, sl as u8, v);
        }
        rows += 1;
    }
    if vl15 > 0 {
        warnings.push(format!(
            "{file}: {vl15} entries map an SL to VL 15 (packets on those SLs are dropped there)"
        ));
    }
    if rows == 0 {
        return Err(perr(
            file,
            1,
            format!("no SL2VL row for a port of this fabric: expected {WHAT}"),
        ));
    }
    let (mut missing_switches, mut missing_end_ports) = (0, 0);
    for p in dump_ports(f) {
        if !seen.contains(&p) {
            if f.is_switch(f.port(p).node) {
                missing_switches += 1;
            } else {
                missing_end_ports += 1;
            }
        }
    }
    if missing_switches + missing_end_ports > 0 {
        warnings.push(format!(
            "{file}: no SL2VL block for {missing_switches} of the {} switches and {missing_end_ports} of the {} end ports (OpenSM writes one for each: a dump cut short?); their tables are taken as identity",
            f.num_switches(),
            f.end_ports.len()
        ));
    }
    Ok(Sl2VlLoad {
        sl2vl: t,
        warnings,
        rows,
        missing_switches,
        missing_end_ports,
    })
}
