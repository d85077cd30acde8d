//! Path SLs in ibdmchk's PSL format (`-c`): one line `0x<source node GUID> <DLID decimal> <SL>`
//! per (source CA, destination LID), as `ibdiagnet -vlr` and the reference harness write it:
//! ```text
//! 0x0000000000100000 5 1
//! ```
//! The reader also takes ibdm's per-node sections (and the `dump_pr` plug-in's path-record
//! dump, which has the same shape):
//! ```text
//! Channel Adapter 0x0002c90300a1b2c5, base LID 5, "node01 HCA-1", port 1
//! # LID  : SL : MTU : RATE
//! 0x0002 : 0  : 4   : 7
//! 0x0011 : UNREACHABLE
//! ```
//! Keys are source *node* GUIDs, so with multi-port HCAs one line sets the SL of every port of
//! that node. A GUID that is not a node GUID but a CA port GUID sets that port only (the
//! path-record dump is per port).

use super::{
    node_guid_map, numbered_lines, perr, port_guid_map, require_text, take_0x, take_dec, text_of,
    Capped,
};
use crate::tables::{PathSl, NUM_SLS};
use fabric::io::ParseError;
use fabric::{Fabric, NodeKind, PortId};
use rustc_hash::FxHashSet;

const UNSET: u8 = u8::MAX;

/// Path SLs read from a PSL file.
#[derive(Clone, Debug)]
pub struct PslLoad {
    /// `Uniform` when every listed path has the same SL, `PerDest` when the SL depends on the
    /// destination only, else `PerPair` over `Fabric::end_ports` with stride `max_lid + 1`.
    /// Paths the file does not list take the collapsed value (`Uniform`), their destination's
    /// SL (`PerDest`) or 0 (`PerPair`, and `PerDest` destinations the file never names).
    pub path_sl: PathSl,
    pub warnings: Vec<String>,
    /// Lines (entries) read.
    pub entries: usize,
    /// (source CA port, DLID of another CA's port) pairs the file gives no SL (OpenSM's SA
    /// and fabroute list every one): they take the default above, a warning says how many.
    pub missing_pairs: u64,
}

/// Reads a PSL file for fabric `f`.
///
/// Errors: malformed lines, DLIDs 0 or beyond the fabric's highest LID, SLs above 15,
/// section entries before any section header. Warnings: unknown or switch source GUIDs
/// (skipped), conflicting duplicate entries (the later wins).
pub fn read_psl(bytes: &[u8], file: &str, f: &Fabric) -> Result<PslLoad, ParseError> {
    const WHAT: &str = "ibdmchk's path-SL file (`0x<source GUID> <DLID> <SL>` lines)";
    // A fabric with fewer than two end ports has no pair: its path-SL file is empty.
    if f.end_ports.len() < 2 && bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(PslLoad {
            path_sl: PathSl::Uniform(0),
            warnings: Vec::new(),
            entries: 0,
            missing_pairs: 0,
        });
    }
    require_text(bytes, file, WHAT)?;
    let text = text_of(bytes);
    let stride = f.max_lid() as usize + 1;
    let ne = f.end_ports.len();
    let mut ep_index = vec![u32::MAX; f.ports.len()];
    for (i, &p) in f.end_ports.iter().enumerate() {
        ep_index[p.idx()] = i as u32;
    }
    let nodes = node_guid_map(f);
    let ports = port_guid_map(f);
    let mut tab = vec![UNSET; ne * stride];
    let mut warnings = Vec::new();
    let mut entries = 0usize;
    let mut unknown = Capped::new(10);
    let mut conflicts = 0usize;

    // Source end-port indices for a GUID: every end port of that node, or one CA port.
    let sources = |g: u64| -> Result<Vec<usize>, String> {
        if let Some(&n) = nodes.get(&g) {
            if f.is_switch(n) {
                return Err(format!(
                    "source GUID 0x{g:016x} is switch {:?}; switch-sourced paths are not kept",
                    f.node(n).name
                ));
            }
            let v: Vec<usize> = f
                .node_ports(n)
                .filter_map(|p| {
                    let i = ep_index[p.idx()];
                    (i != u32::MAX).then_some(i as usize)
                })
                .collect();
            return Ok(v);
        }
        if let Some(&p) = ports.get(&g) {
            let i = ep_index[p.idx()];
            if i != u32::MAX {
                return Ok(vec![i as usize]);
            }
        }
        Err(format!("source GUID 0x{g:016x} is not in the fabric"))
    };
    let mut set = |srcs: &[usize], dlid: usize, sl: u8, tab: &mut Vec<u8>| {
        for &s in srcs {
            let e = &mut tab[s * stride + dlid];
            if *e != UNSET && *e != sl {
                conflicts += 1;
            }
            *e = sl;
        }
    };

    // Current section source (None = before any section; Some(None) = skipped section).
    let mut section: Option<Option<Vec<usize>>> = None;
    for (ln, raw) in numbered_lines(&text) {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let header = ["Channel Adapter", "Router", "Switch"]
            .iter()
            .find_map(|k| line.strip_prefix(k).map(|rest| (*k, rest)));
        if let Some((kind, rest)) = header {
            let g = take_0x(rest.trim_start())
                .filter(|(_, tail)| tail.is_empty() || tail.starts_with([',', ' ', '\t']))
                .map(|(g, _)| g)
                .ok_or_else(|| perr(file, ln, format!("expected `{kind} 0x<GUID>,`")))?;
            section = Some(match sources(g) {
                Ok(v) => Some(v),
                Err(m) => {
                    unknown.push(&mut warnings, || {
                        format!("{file}:{ln}: {m}; its section is skipped")
                    });
                    None
                }
            });
            continue;
        }
        let (first, rest) = take_0x(line).ok_or_else(|| {
            perr(
                file,
                ln,
                "expected `0x<source node GUID> <DLID> <SL>`, `0x<LID> : <SL>` or a `Channel Adapter 0x<GUID>,` header",
            )
        })?;
        let rest = rest.trim_start();
        let (srcs, dlid, sl) = if let Some(r) = rest.strip_prefix(':') {
            // Section entry `0x<lid> : <sl> [: mtu : rate]` or `: UNREACHABLE`.
            let srcs = match &section {
                Some(Some(v)) => v.clone(),
                Some(None) => continue,
                None => {
                    return Err(perr(
                        file,
                        ln,
                        "`0x<LID> : <SL>` entry before any `Channel Adapter 0x<GUID>,` header",
                    ))
                }
            };
            let r = r.trim_start();
            if r.starts_with("UNREACHABLE") {
                continue;
            }
            let (sl, tail) =
                take_dec(r).ok_or_else(|| perr(file, ln, "expected a decimal SL after `:`"))?;
            let tail = tail.trim_start();
            if !(tail.is_empty() || tail.starts_with(':')) {
                return Err(perr(
                    file,
                    ln,
                    "expected `0x<LID> : <SL>` optionally followed by ` : ...`",
                ));
            }
            (srcs, first, sl)
        } else {
            let bad = || {
                perr(
                    file,
                    ln,
                    "expected `0x<source node GUID> <DLID decimal> <SL>`",
                )
            };
            if !rest.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(bad());
            }
            let (dlid, r) = take_dec(rest).ok_or_else(bad)?;
            let r = r.trim_start();
            let (sl, tail) = take_dec(r).ok_or_else(bad)?;
            if !tail.trim().is_empty() {
                return Err(bad());
            }
            let srcs = match sources(first) {
                Ok(v) => v,
                Err(m) => {
                    unknown.push(&mut warnings, || format!("{file}:{ln}: {m}; entry skipped"));
                    continue;
                }
            };
            (srcs, dlid, sl)
        };
        if dlid == 0 || dlid >= stride as u64 {
            return Err(perr(
                file,
                ln,
                format!(
                    "DLID {dlid} is outside the fabric's LIDs 1..={}",
                    stride - 1
                ),
            ));
        }
        if sl >= NUM_SLS as u64 {
            return Err(perr(file, ln, format!("SL {sl} is beyond SL15")));
        }
        set(&srcs, dlid as usize, sl as u8, &mut tab);
        entries += 1;
    }
    unknown.finish(
        &mut warnings,
        file,
        "entries or sections with unknown sources skipped",
    );
    if conflicts > 0 {
        warnings.push(format!(
            "{file}: {conflicts} entries gave a path a different SL than an earlier entry (the later wins)"
        ));
    }
    if entries == 0 {
        return Err(perr(
            file,
            1,
            format!("no path SL for a pair of this fabric: expected {WHAT}"),
        ));
    }
    let missing_pairs = missing(f, stride, &tab);
    if missing_pairs > 0 {
        warnings.push(format!(
            "{file}: {missing_pairs} (source, DLID) pairs of the fabric have no path SL here (a file cut short?); they are taken as {}",
            match collapse_sparse(stride, tab.clone()) {
                PathSl::Uniform(s) => format!("SL {s}"),
                _ => "their destination's SL, or SL 0".to_string(),
            }
        ));
    }
    Ok(PslLoad {
        path_sl: collapse_sparse(stride, tab),
        warnings,
        entries,
        missing_pairs,
    })
}

/// The (source CA port, DLID of another CA's port) pairs left `UNSET` (ports of one node
/// aside: a multi-port node lists its siblings' LIDs under its first port only).
fn missing(f: &Fabric, stride: usize, tab: &[u8]) -> u64 {
    let cas: Vec<(usize, PortId)> = f
        .end_ports
        .iter()
        .enumerate()
        .filter(|(_, &p)| f.node(f.port(p).node).kind == NodeKind::Ca && f.port(p).lid != 0)
        .map(|(i, &p)| (i, p))
        .collect();
    let mut n = 0u64;
    for &(si, sp) in &cas {
        let row = &tab[si * stride..(si + 1) * stride];
        for &(_, dp) in &cas {
            let d = f.port(dp);
            if d.node == f.port(sp).node {
                continue;
            }
            for o in 0..(1usize << d.lmc.min(7)) {
                let lid = d.lid as usize + o;
                if lid < stride && row[lid] == UNSET {
                    n += 1;
                }
            }
        }
    }
    n
}

/// Collapses a table whose `UNSET` entries are "don't care".
fn collapse_sparse(stride: usize, tab: Vec<u8>) -> PathSl {
    let mut uniform: Option<u8> = None;
    let mut is_uniform = true;
    for &v in tab.iter().filter(|&&v| v != UNSET) {
        match uniform {
            None => uniform = Some(v),
            Some(u) if u != v => {
                is_uniform = false;
                break;
            }
            _ => {}
        }
    }
    if is_uniform {
        return PathSl::Uniform(uniform.unwrap_or(0));
    }
    if stride > 0 {
        let mut per = vec![UNSET; stride];
        let mut ok = true;
        'outer: for row in tab.chunks(stride) {
            for (d, &v) in row.iter().enumerate() {
                if v == UNSET {
                    continue;
                }
                if per[d] == UNSET {
                    per[d] = v;
                } else if per[d] != v {
                    ok = false;
                    break 'outer;
                }
            }
        }
        if ok {
            for v in &mut per {
                if *v == UNSET {
                    *v = 0;
                }
            }
            return PathSl::PerDest(per);
        }
    }
    let sl = tab
        .into_iter()
        .map(|v| if v == UNSET { 0 } else { v })
        .collect();
    PathSl::PerPair { stride, sl }
}

/// Returns the most compact equivalent form (`Uniform` ⊂ `PerDest` ⊂ `PerPair`).
pub fn collapse_path_sl(p: PathSl) -> PathSl {
    match p {
        PathSl::Uniform(s) => PathSl::Uniform(s),
        PathSl::PerDest(v) => {
            if let Some(&first) = v.first() {
                if v.iter().all(|&s| s == first) {
                    return PathSl::Uniform(first);
                }
            } else {
                return PathSl::Uniform(0);
            }
            PathSl::PerDest(v)
        }
        PathSl::PerPair { stride, sl } => {
            // Entries are all meaningful here: map them out of the UNSET range first.
            if sl.contains(&UNSET) {
                return PathSl::PerPair { stride, sl };
            }
            collapse_sparse(stride, sl)
        }
    }
}

/// Writes the path SLs of every (source CA port, destination CA port ≠ source, destination
/// LID of its LMC range) in ibdmchk's PSL format. Sources and destinations are taken in
/// port-GUID order (what the reference harness writes). Lines are keyed by source node GUID;
/// for a multi-port HCA only its first port (lowest port GUID) is written per DLID, since the
/// format cannot tell the ports apart.
pub fn write_psl(f: &Fabric, path_sl: &PathSl) -> String {
    super::to_string(|sink| write_psl_to(f, path_sl, None, sink))
}

/// [`write_psl`], streamed source by source into `sink` (batches formatted in parallel). End
/// ports cut off under `dead` (their cable or their switch failed) are left out, as
/// `opensm-subnet.lst` leaves them out (ibdmchk refuses a GUID the subnet file does not list).
pub fn write_psl_to(
    f: &Fabric,
    path_sl: &PathSl,
    dead: Option<&fabric::FaultMask>,
    sink: &mut super::Sink<'_>,
) -> std::io::Result<()> {
    let cut_off =
        |p: PortId| dead.is_some_and(|m| f.out_channel(p).is_none_or(|c| !m.channel_alive(f, c)));
    let mut cas: Vec<(u64, usize, PortId)> = f
        .end_ports
        .iter()
        .enumerate()
        .filter(|(_, &p)| f.node(f.port(p).node).kind == NodeKind::Ca && !cut_off(p))
        .map(|(i, &p)| (f.port(p).guid, i, p))
        .collect();
    cas.sort();
    let mut multi = vec![0u32; f.nodes.len()];
    for &(_, _, p) in &cas {
        multi[f.port(p).node.idx()] += 1;
    }
    // A node with several ports is one PSL source: its first port (in GUID order) speaks for
    // it, the others add only the DLIDs it has not listed yet.
    let mut first_of_node = vec![usize::MAX; f.nodes.len()];
    for (k, &(_, _, p)) in cas.iter().enumerate() {
        let n = f.port(p).node.idx();
        if first_of_node[n] == usize::MAX {
            first_of_node[n] = k;
        }
    }
    let max = f.max_lid() as u32;
    super::stream_units(cas.len(), sink, |k, b| {
        let (_, si, sp) = cas[k];
        let sn = f.port(sp).node;
        let sguid = f.node(sn).guid;
        // DLIDs an earlier port of the same node listed already (multi-port nodes only).
        let mut listed: FxHashSet<u32> = FxHashSet::default();
        if multi[sn.idx()] > 1 {
            for &(_, _, q) in &cas[first_of_node[sn.idx()]..k] {
                if f.port(q).node != sn {
                    continue;
                }
                for &(_, _, dp) in &cas {
                    if dp == q {
                        continue;
                    }
                    let d = f.port(dp);
                    for o in 0..(1u32 << d.lmc.min(7)) {
                        listed.insert(d.lid as u32 + o);
                    }
                }
            }
        }
        for &(_, _, dp) in &cas {
            if dp == sp {
                continue;
            }
            let d = f.port(dp);
            if d.lid == 0 {
                continue;
            }
            for o in 0..(1u32 << d.lmc.min(7)) {
                let dlid = d.lid as u32 + o;
                if dlid > max {
                    break;
                }
                if multi[sn.idx()] > 1 && listed.contains(&dlid) {
                    continue;
                }
                let sl = path_sl.get(si, dlid as u16);
                let _ = std::io::Write::write_fmt(b, format_args!("0x{sguid:016x} {dlid} {sl}\n"));
            }
        }
    })
}
