//! `opensm-lfts.dump` (OpenSM's `dump_ucast_lfts`), which is also the `file` engine's `-U`
//! input, and the `ibroute` / `dump_lfts` output variant.
//!
//! Layout written (OpenSM's):
//! ```text
//! Unicast lids [0-48] of switch Lid 2 guid 0x0000000000200000 ('S_0_0'):
//! 0x0001 001 # Channel Adapter portguid 0x0000000000100001: 'H_0_0_0'
//! 0x0002 000 # Switch portguid 0x0000000000200000: 'S_0_0'
//! 48 lids dumped
//! ```
//! Entries without a route are omitted; the trailer prints the highest LID, not a count.
//!
//! Reading follows what OpenSM's file engine accepts: `#` lines and lines that are neither a
//! `Unicast lids` header nor a `0x` entry are ignored; a header selects the switch by the hex
//! after ` guid 0x` and clears its table; an entry is `0x<lid>` blank `<decimal port>` then
//! anything; a ` portguid 0x<guid>` in the rest remaps the LID to that port's current base LID
//! plus the LID's offset within the port's LMC range.

use super::{
    at_blank_or_end, numbered_lines, perr, port_base_lid, port_guid, port_guid_map, push_dec3,
    require_text, stream_units, switches_in_osm_order, take_0x, take_dec, text_of, to_string,
    type_str, Capped, Sink,
};
use crate::tables::Routing;
use fabric::io::ParseError;
use fabric::SwitchIdx;
use fabric::{Fabric, Lid, MAX_UNICAST_LID, NO_PORT};

/// A routing read from an LFT file, with the reader's warnings.
#[derive(Clone, Debug)]
pub struct LftLoad {
    /// LFTs as read; path SLs uniform 0, SL2VL identity.
    pub routing: Routing,
    pub warnings: Vec<String>,
    /// Switches that had a table in the file (each counted once).
    pub switches_loaded: usize,
    /// Entries whose LID was remapped through a `portguid` comment.
    pub remapped: usize,
    /// When the dump gives end ports more LIDs than their LMC allows (OpenSM ran with a higher
    /// LMC than the fabric was given): the LMC the dump's LIDs need. Those extra entries were
    /// skipped (each port's first LID is loaded).
    pub dump_lmc: Option<u8>,
}

/// Writes the LFTs in OpenSM's `opensm-lfts.dump` layout (loadable with `opensm -R file -U`).
pub fn write_lfts(f: &Fabric, r: &Routing) -> String {
    to_string(|sink| write_lfts_to(f, r, None, sink))
}

/// [`write_lfts`], streamed: switch by switch into `sink`, formatting batches of switches in
/// parallel. Every entry line is `0x<lid> <port> # <comment>`; the two constant parts are
/// prepared once per LID, so a line costs two copies and three digits.
/// Under `dead`, what `opensm-subnet.lst` leaves out is left out here too: dead switches'
/// tables, and the entries for LIDs of nodes with no live link (a checker reading the pair
/// would not know them).
/// Per LID `0..=max`: whether `opensm-subnet.lst` written under `dead` lists its port: a
/// switch's (port 0) when the switch has a live link, an end port's when its own link is alive
/// (the other port of a dual-port HCA may still be). Every LID without `dead`.
pub(crate) fn listed_lids(f: &Fabric, max: Lid, dead: Option<&fabric::FaultMask>) -> Vec<bool> {
    (0..=max)
        .map(|lid| match (dead, f.lid_port(lid)) {
            (Some(m), Some(p)) => {
                let n = f.port(p).node;
                if f.is_switch(n) {
                    f.node_ports(n).any(|q| m.port_link_alive(f, q))
                } else {
                    m.port_link_alive(f, p)
                }
            }
            _ => true,
        })
        .collect()
}

pub fn write_lfts_to(
    f: &Fabric,
    r: &Routing,
    dead: Option<&fabric::FaultMask>,
    sink: &mut Sink<'_>,
) -> std::io::Result<()> {
    let max = r.max_lid;
    let stride = r.stride();
    let listed = listed_lids(f, max, dead);
    // Per LID: `0x<lid> ` and ` # <comment>\n`, one buffer with offsets.
    let mut text: Vec<u8> = Vec::new();
    let mut at: Vec<(u32, u32, u32)> = Vec::with_capacity(max as usize + 1);
    for lid in 0..=max as usize {
        let start = text.len() as u32;
        let _ = std::io::Write::write_fmt(&mut text, format_args!("0x{lid:04x} "));
        let mid = text.len() as u32;
        match f.lid_port(lid as Lid) {
            Some(p) => {
                let node = f.node(f.port(p).node);
                let _ = std::io::Write::write_fmt(
                    &mut text,
                    format_args!(
                        " # {} portguid 0x{:016x}: '{}'\n",
                        type_str(node.kind),
                        port_guid(f, p),
                        node.desc
                    ),
                );
            }
            None => text.extend_from_slice(b" # unknown node and type\n"),
        }
        at.push((start, mid, text.len() as u32));
    }
    let mut order = switches_in_osm_order(f);
    if let Some(m) = dead {
        // (a switch with no live link is not in the subnet file either)
        order.retain(|&s| {
            let n = f.switches[s];
            !m.node_dead(n) && listed.get(f.switch_lid(n) as usize) != Some(&false)
        });
    }
    stream_units(order.len(), sink, |k, b| {
        let s = order[k];
        let n = f.switches[s];
        let node = f.node(n);
        let _ = std::io::Write::write_fmt(
            b,
            format_args!(
                "Unicast lids [0-{max}] of switch Lid {} guid 0x{:016x} ('{}'):\n",
                f.switch_lid(n),
                node.guid,
                node.desc
            ),
        );
        let row = r.lft.get(s * stride..(s + 1) * stride).unwrap_or(&[]);
        for (lid, &port) in row.iter().enumerate().skip(1) {
            if port == NO_PORT || !listed[lid] {
                continue;
            }
            let (a, m, e) = at[lid];
            b.extend_from_slice(&text[a as usize..m as usize]);
            push_dec3(b, port as u32);
            b.extend_from_slice(&text[m as usize..e as usize]);
        }
        let _ = std::io::Write::write_fmt(b, format_args!("{max} lids dumped\n"));
    })
}

enum Cur {
    /// Before the first header.
    None,
    /// Loading into this switch index.
    Switch(usize),
    /// A switch that is not in the fabric (entries skipped).
    Skipped,
    /// After a `Multicast mlids` line: entries skipped until the next unicast header.
    Multicast,
}

/// Reads an LFT file (OpenSM dump, `-U` input or `ibroute` output) for fabric `f`.
///
/// Errors: entries before any header, malformed headers or entries, ports beyond the switch's
/// port count, LIDs beyond the fabric's highest LID. Warnings: unknown switch GUIDs (skipped,
/// as OpenSM does), GUIDs of non-switches, switches listed twice (the later table wins, as in
/// OpenSM), `portguid` comments naming unknown ports, multicast sections (skipped).
/// Lines of an LFT dump that carry no entry: OpenSM's and ibroute's trailers (`48 lids
/// dumped`, `48 valid lids dumped`) and ibroute's column titles (`Lid  Out   Destination`,
/// `Port     Info`).
fn is_lft_trailer(line: &str) -> bool {
    let mut w = line.split_whitespace();
    match w.next() {
        Some(n) if n.bytes().all(|b| b.is_ascii_digit()) => {
            let rest: Vec<&str> = w.collect();
            matches!(
                rest.as_slice(),
                ["lids", "dumped"] | ["valid", "lids", "dumped"]
            )
        }
        Some("Lid") | Some("Port") => true,
        _ => false,
    }
}

pub fn read_lfts(bytes: &[u8], file: &str, f: &Fabric) -> Result<LftLoad, ParseError> {
    const WHAT: &str = "an OpenSM LFT dump (`Unicast lids [..] of switch Lid .. guid 0x<GUID> ..:` blocks of `0x<LID> <port>` lines)";
    require_text(bytes, file, WHAT)?;
    let text = text_of(bytes);
    let mut headers = 0usize;
    let mut r = Routing::empty(f);
    let stride = r.stride();
    let max_lid = f.max_lid();
    let ports_by_guid = port_guid_map(f);
    let mut seen = vec![0usize; f.num_switches()]; // header line of each loaded switch
    let mut warnings = Vec::new();
    let mut remapped = 0usize;
    let mut cur = Cur::None;
    let mut unknown_portguids = Capped::new(10);
    let (mut skipped, mut conflicts) = (Capped::new(5), Capped::new(5));
    // Per LID of the current switch, the dump's LID that a `portguid` remap wrote there
    // (stamped with the header count): two of one port landing on one LID mean the dump's LMC
    // is higher than the fabric's.
    let mut wrote: Vec<(usize, u64)> = vec![(0, 0); stride];
    let (mut beyond_lmc, mut widest) = (0usize, 0u64);
    for (ln, raw) in numbered_lines(&text) {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.split_whitespace().take(2).eq(["Multicast", "mlids"]) {
            warnings.push(format!(
                "{file}:{ln}: multicast table skipped (only unicast LFTs are loaded)"
            ));
            cur = Cur::Multicast;
            continue;
        }
        if line.split_whitespace().take(2).eq(["Unicast", "lids"]) {
            headers += 1;
            let guid = header_guid(line).ok_or_else(|| {
                perr(
                    file,
                    ln,
                    "expected ` guid 0x<hex switch node GUID>` followed by a blank in the `Unicast lids` header",
                )
            })?;
            cur = match f.node_by_guid(guid) {
                Some(n) if f.is_switch(n) => {
                    let s = f.switch_of(n).map_or(0, SwitchIdx::idx);
                    if seen[s] != 0 {
                        warnings.push(format!(
                            "{file}:{ln}: switch 0x{guid:016x} was already listed at line {}; its table is replaced",
                            seen[s]
                        ));
                    }
                    seen[s] = ln;
                    r.lft_of_mut(SwitchIdx(s as u32)).fill(NO_PORT);
                    Cur::Switch(s)
                }
                Some(n) => {
                    warnings.push(format!(
                        "{file}:{ln}: GUID 0x{guid:016x} is {:?}, not a switch; its entries are skipped",
                        f.node(n).name
                    ));
                    Cur::Skipped
                }
                None => {
                    warnings.push(format!(
                        "{file}:{ln}: switch GUID 0x{guid:016x} is not in the fabric; its entries are skipped"
                    ));
                    Cur::Skipped
                }
            };
            continue;
        }
        if !(line.starts_with("0x") || line.starts_with("0X")) {
            // Trailers (`48 lids dumped`) and ibroute's column titles are expected; anything
            // else (a decimal LID, a prompt, garbage) is skipped, but said
            if !is_lft_trailer(line) {
                skipped.push(&mut warnings, || {
                    format!(
                        "{file}:{ln}: line not understood, skipped (expected `0x<hex LID> <port>`): {:?}",
                        line.chars().take(60).collect::<String>()
                    )
                });
            }
            continue;
        }
        let s = match cur {
            Cur::Switch(s) => s,
            Cur::Skipped | Cur::Multicast => continue,
            Cur::None => {
                return Err(perr(
                    file,
                    ln,
                    "LFT entry before any `Unicast lids ... guid 0x<GUID>` switch header",
                ))
            }
        };
        let (lid, rest) = take_0x(line)
            .filter(|(_, rest)| at_blank_or_end(rest))
            .ok_or_else(|| perr(file, ln, "expected `0x<hex LID>` followed by a blank"))?;
        let rest = rest.trim_start();
        let (port, rest) = take_dec(rest)
            .filter(|(_, rest)| at_blank_or_end(rest))
            .ok_or_else(|| {
                perr(
                    file,
                    ln,
                    "expected a decimal output port number after the LID",
                )
            })?;
        let sw = f.switches[s];
        let nports = f.node(sw).nports as u64;
        // 255 is "no path" (OSM_NO_PATH), as in opensm.fdbs
        if port > nports && port != NO_PORT as u64 {
            return Err(perr(
                file,
                ln,
                format!(
                    "port {port} is beyond the port count {nports} of switch {:?}",
                    f.node(sw).name
                ),
            ));
        }
        // The LID as written must be a unicast LID, before any remapping by the comment.
        if lid > 0xFFFF {
            return Err(perr(
                file,
                ln,
                format!("LID 0x{lid:x} is wider than 16 bits"),
            ));
        }
        if lid > MAX_UNICAST_LID as u64 {
            return Err(perr(
                file,
                ln,
                format!("LID 0x{lid:x} is not a unicast LID (at most 0x{MAX_UNICAST_LID:x})"),
            ));
        }
        let mut lid = lid;
        if let Some(pg) = comment_portguid(rest) {
            match ports_by_guid.get(&pg) {
                Some(&p) => {
                    let base = port_base_lid(f, p) as u64;
                    let mask = (1u64 << f.port(p).lmc.min(7)) - 1;
                    let new = base + (lid & mask);
                    if base != 0 && (new as usize) < stride {
                        let w = &mut wrote[new as usize];
                        if w.0 == headers && w.1 != lid {
                            // another LID of this port already landed here: an LMC the
                            // fabric does not have; the first one stays
                            beyond_lmc += 1;
                            widest = widest.max(w.1.abs_diff(lid));
                            continue;
                        }
                        *w = (headers, lid);
                    }
                    if base != 0 && new != lid {
                        lid = new;
                        remapped += 1;
                    }
                }
                None => unknown_portguids.push(&mut warnings, || {
                    format!(
                        "{file}:{ln}: portguid 0x{pg:016x} is not in the fabric; LID 0x{lid:04x} kept as is"
                    )
                }),
            }
        }
        // (A remapped LID stays within its port's range: only the fabric's bound is left.)
        if lid > max_lid as u64 {
            return Err(perr(
                file,
                ln,
                format!("LID 0x{lid:04x} is beyond the fabric's highest LID 0x{max_lid:04x}"),
            ));
        }
        let e = &mut r.lft[s * stride + lid as usize];
        if *e != NO_PORT && *e != port as u8 {
            let was = *e;
            conflicts.push(&mut warnings, || {
                format!(
                    "{file}:{ln}: LID 0x{lid:04x} is listed again in this switch's table, with port {port} instead of {was}; the later entry is kept"
                )
            });
        }
        *e = port as u8;
    }
    skipped.finish(&mut warnings, file, "lines not understood were skipped");
    conflicts.finish(
        &mut warnings,
        file,
        "LIDs are listed twice in one switch's table with different ports",
    );
    unknown_portguids.finish(&mut warnings, file, "entries name unknown port GUIDs");
    // the LMC that gives a port LIDs `widest` apart
    let dump_lmc = (beyond_lmc > 0).then(|| (64 - widest.leading_zeros()).min(7) as u8);
    if let Some(k) = dump_lmc {
        warnings.push(format!(
            "{file}: {beyond_lmc} entries give an end port more LIDs than its LMC here allows (the dump's LIDs need LMC {k}); they were skipped, so only the first LID of each port is loaded"
        ));
    }
    let switches_loaded = seen.iter().filter(|&&l| l != 0).count();
    if headers == 0 {
        return Err(perr(
            file,
            1,
            format!("no switch table found: expected {WHAT}"),
        ));
    }
    if switches_loaded == 0 {
        return Err(perr(
            file,
            1,
            format!("none of the {headers} switch tables is for a switch of this fabric (another fabric's dump?)"),
        ));
    }
    Ok(LftLoad {
        routing: r,
        warnings,
        switches_loaded,
        remapped,
        dump_lmc,
    })
}

/// The switch GUID of a `Unicast lids` header: ` guid 0x<hex>` followed by a blank.
fn header_guid(line: &str) -> Option<u64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|&w| w == "guid")?;
    let (g, rest) = take_0x(words.get(at + 1)?)?;
    rest.is_empty().then_some(g)
}

/// The GUID of a ` portguid 0x<hex>` comment, followed by `:`, a blank or the end.
fn comment_portguid(rest: &str) -> Option<u64> {
    let at = rest
        .find("portguid 0x")
        .or_else(|| rest.find("portguid 0X"))?;
    let (g, tail) = take_0x(&rest[at + 9..])?;
    (tail.is_empty() || tail.starts_with(':') || at_blank_or_end(tail)).then_some(g)
}
