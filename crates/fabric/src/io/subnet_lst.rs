//! Reader for OpenSM's `opensm-subnet.lst` (also ibdiagnet's `.lst`): one line per cabled port
//! of every node, so every link appears twice:
//!
//! ```text
//! { SW Ports:24 SystemGUID:… NodeGUID:… PortGUID:… VenID:0002C9 DevID:B924 Rev:000000A0 {desc} LID:0002 PN:05 } { CA … PN:01 } PHY=4x LOG=ACT SPD=10
//! ```
//!
//! `Ports`, `LID`, `PN` are hexadecimal, GUIDs are 16 hex digits. Types `SW`, `CA`, `Rt` may
//! carry `-SM`. Tolerated quirks: 6- or 8-digit VenID, an 8-digit (32-bit swapped) DevID whose
//! real value is the first four digits, descriptions with spaces and braces. `LOG=DWN` lines
//! are skipped. `SPD` 2.5/5/10/14/25/50/FDR10 → SDR/DDR/QDR/FDR/EDR/HDR/FDR10 (`??` unknown).
//!
//! Nodes are keyed by NodeGUID and named by their description when it is unique in the file,
//! otherwise `desc (0x<guid>)` (an empty description gives `S-<guid>`/`H-<guid>`/`R-<guid>`).
//! Everything a line says about a node, port or link must agree with the other lines.

use super::diag::{LidTable, Loc, Warnings};
use super::text::{decode, excerpt, parse_hex, trim, Cursor, Lines};
use super::{Loaded, ParseError, ParseErrorKind};
use crate::builder::{BuildOptions, FabricBuilder};
use crate::model::{Lid, NodeId, NodeKind, Speed, Width, MAX_UNICAST_LID};
use rustc_hash::{FxHashMap, FxHashSet};

/// What a line says about one end of a link: one `{ … }` node block.
#[derive(Clone, Debug)]
pub(crate) struct Block<'a> {
    pub kind: NodeKind,
    pub nports: u8,
    pub sys: u64,
    pub node: u64,
    pub port_guid: u64,
    pub ven: u32,
    pub dev: u32,
    pub desc: &'a str,
    pub lid: u64,
    pub pn: u8,
}

/// What the file says about one node.
#[derive(Clone, Debug)]
struct NodeInfo {
    kind: NodeKind,
    nports: u8,
    sys: u64,
    desc: String,
    ven: u32,
    dev: u32,
    line: usize,
    /// Per port (index 0 = switch port 0): port GUID, LID, line of the first mention.
    ports: Vec<(u64, u64, usize)>,
}

#[derive(Clone, Copy, Debug)]
struct LinkRec {
    a: (u64, u8),
    b: (u64, u8),
    width: Width,
    speed: Speed,
    line: usize,
    seen: u8,
}

fn kind_tag(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Switch => "SW",
        NodeKind::Ca => "CA",
        NodeKind::Router => "Rt",
    }
}

/// Reads an opensm-subnet.lst.
pub fn read(bytes: &[u8], file: &str, opts: BuildOptions) -> Result<Loaded, ParseError> {
    let text = decode(bytes);
    let err = |line: usize, msg: String| ParseError::new(file, line, msg);
    let mut warnings = Warnings::default();
    let mut pairs: Vec<PortPair> = Vec::new();
    let mut down = 0usize;

    for line in Lines::new(&text) {
        let t = trim(line.text);
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let no = line.no;
        let mut c = Cursor::new(t);
        let a = block(&mut c).map_err(|m| err(no, m))?;
        c.skip_ws();
        let b = block(&mut c).map_err(|m| err(no, format!("second node block: {m}")))?;
        let (width, speed, state) = trailer(&mut c).map_err(|m| err(no, m))?;
        if state == "DWN" {
            down += 1;
            continue;
        }
        for blk in [&a, &b] {
            if blk.pn == 0 || blk.pn > blk.nports {
                return Err(err(
                    no,
                    format!(
                        "PN:{:02X} is beyond the port count Ports:{:02X} of {:?} (NodeGUID {:016x})",
                        blk.pn, blk.nports, blk.desc, blk.node
                    ),
                ));
            }
        }
        pairs.push(PortPair {
            a,
            b,
            width,
            speed,
            line: no,
        });
    }
    if down > 0 {
        warnings.push(format!("{file}: skipped {down} LOG=DWN lines"));
    }
    assemble(
        file,
        &pairs,
        warnings,
        opts,
        "no nodes: expected opensm-subnet.lst lines `{ SW Ports:.. NodeGUID:.. .. PN:.. } { .. } PHY=.. LOG=.. SPD=..`",
    )
}

/// One cabled port and its peer, as a line of a per-port listing gives them (an
/// opensm-subnet.lst line, or a line of ibnetdiscover's ports report).
pub(crate) struct PortPair<'a> {
    pub a: Block<'a>,
    pub b: Block<'a>,
    pub width: Width,
    pub speed: Speed,
    pub line: usize,
}

/// Builds the fabric of a per-port listing, in which every link should appear twice (once
/// from each end): what each line says about a node, port or link must agree with the other
/// lines. Nodes are keyed by their GUID and named by their description when it is unique,
/// otherwise `desc (0x<guid>)`. `no_nodes` is the error for a listing without a line.
pub(crate) fn assemble(
    file: &str,
    pairs: &[PortPair<'_>],
    mut warnings: Warnings,
    opts: BuildOptions,
    no_nodes: &str,
) -> Result<Loaded, ParseError> {
    let err = |line: usize, msg: String| ParseError::new(file, line, msg);
    let mut order: Vec<u64> = Vec::new();
    let mut nodes: FxHashMap<u64, NodeInfo> = FxHashMap::default();
    let mut links: Vec<LinkRec> = Vec::new();
    let mut peer: FxHashMap<(u64, u8), usize> = FxHashMap::default();
    for &PortPair {
        ref a,
        ref b,
        width,
        speed,
        line: no,
    } in pairs
    {
        for blk in [a, b] {
            note_node(&mut nodes, &mut order, blk, no).map_err(|m| err(no, m))?;
        }
        let ka = (a.node, a.pn);
        let kb = (b.node, b.pn);
        if ka == kb {
            return Err(err(
                no,
                format!("port {} of {:?} is cabled to itself", a.pn, a.desc),
            ));
        }
        let ia = peer.get(&ka).copied();
        let ib = peer.get(&kb).copied();
        match (ia, ib) {
            (Some(i), Some(j)) if i == j => {
                let l = &mut links[i];
                if l.width != width && l.width != Width::Unknown && width != Width::Unknown {
                    return Err(err(
                        no,
                        format!(
                            "the two ends of link {:?}[{}] - {:?}[{}] disagree on the width ({} here, {} at line {})",
                            a.desc, a.pn, b.desc, b.pn, width.as_str(), l.width.as_str(), l.line
                        ),
                    ));
                }
                if l.speed != speed && l.speed != Speed::Unknown && speed != Speed::Unknown {
                    return Err(err(
                        no,
                        format!(
                            "the two ends of link {:?}[{}] - {:?}[{}] disagree on the speed ({} here, {} at line {})",
                            a.desc, a.pn, b.desc, b.pn, speed.as_str(), l.speed.as_str(), l.line
                        ),
                    ));
                }
                if l.width == Width::Unknown {
                    l.width = width;
                }
                if l.speed == Speed::Unknown {
                    l.speed = speed;
                }
                l.seen = l.seen.saturating_add(1);
            }
            (None, None) => {
                peer.insert(ka, links.len());
                peer.insert(kb, links.len());
                links.push(LinkRec {
                    a: ka,
                    b: kb,
                    width,
                    speed,
                    line: no,
                    seen: 1,
                });
            }
            (Some(i), _) | (None, Some(i)) => {
                let l = &links[i];
                let (mine, other) = if ia.is_some() { (ka, kb) } else { (kb, ka) };
                let was = if l.a == mine { l.b } else { l.a };
                let name = |k: (u64, u8)| {
                    nodes
                        .get(&k.0)
                        .map_or(format!("{:016x}", k.0), |n| format!("{:?}", n.desc))
                };
                return Err(err(
                    no,
                    format!(
                        "the two ends of a link disagree: this line cables {}[{}] to {}[{}], but line {} cables {}[{}] to {}[{}]",
                        name(mine), mine.1, name(other), other.1, l.line, name(mine), mine.1, name(was), was.1
                    ),
                ));
            }
        }
    }
    if order.is_empty() {
        return Err(err(0, no_nodes.to_string()));
    }

    // Names: unique descriptions as they are, others made unique with the GUID.
    let mut desc_count: FxHashMap<&str, u32> = FxHashMap::default();
    for g in &order {
        if let Some(n) = nodes.get(g) {
            *desc_count.entry(n.desc.as_str()).or_default() += 1;
        }
    }
    let mut used: FxHashSet<String> = FxHashSet::default();
    let mut b = FabricBuilder::new();
    let mut ids: FxHashMap<u64, NodeId> = FxHashMap::default();
    let mut lids = LidTable::default();
    let mut port_owner: FxHashMap<u64, (u64, usize)> = FxHashMap::default();
    for &g in &order {
        let Some(n) = nodes.get(&g) else { continue };
        let mut name = if n.desc.is_empty() {
            let p = match n.kind {
                NodeKind::Switch => "S",
                NodeKind::Ca => "H",
                NodeKind::Router => "R",
            };
            format!("{p}-{g:016x}")
        } else if desc_count.get(n.desc.as_str()) == Some(&1) {
            n.desc.clone()
        } else {
            format!("{} ({g:#018x})", n.desc)
        };
        let mut k = 2;
        while used.contains(&name) {
            name = format!("{} ({g:#018x}) #{k}", n.desc);
            k += 1;
        }
        used.insert(name.clone());
        let id = b
            .add_node(n.kind, n.nports, g, name, n.desc.clone())
            .map_err(|e| err(n.line, e.0))?;
        ids.insert(g, id);
        {
            let node = b.node_mut(id);
            node.sys_guid = n.sys;
            node.vendor_id = n.ven;
            node.device_id = n.dev;
        }
        for (p, &(pg, lid, line)) in n.ports.iter().enumerate() {
            if line == 0 {
                continue;
            }
            let p = p as u8;
            if pg != 0 {
                match port_owner.get(&pg) {
                    Some(&(o, ol)) if o != g => {
                        return Err(err(
                            line,
                            format!(
                                "duplicate GUID {pg:#018x}: port {p} of {:?} has it, but so does {:?} (line {ol})",
                                n.desc,
                                nodes.get(&o).map_or("?", |x| x.desc.as_str())
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => {
                        port_owner.insert(pg, (g, line));
                    }
                }
                b.set_port_guid(id, p, pg).map_err(|e| err(line, e.0))?;
            }
            if !opts.reassign_lids && lid != 0 && lid != 0xFFFF {
                if lid > MAX_UNICAST_LID as u64 {
                    return Err(err(
                        line,
                        format!("LID:{lid:04X} of {:?} is not a unicast LID", n.desc),
                    ));
                }
                if let Err((o, op, l, which)) = lids.claim(lid as Lid, 0, id, p, Loc::new(0, line))
                {
                    return Err(err(
                        line,
                        format!(
                            "LID {which} of {:?} port {p} is already used by {:?} port {op} (line {})",
                            n.desc,
                            b.node(NodeId(o)).desc,
                            l.line
                        ),
                    )
                    .of_kind(ParseErrorKind::LidClash));
                }
                b.set_lid(id, p, lid as u32, 0)
                    .map_err(|e| err(line, e.0))?;
            }
        }
    }
    // Node GUIDs must not collide with other nodes' port GUIDs either.
    for &g in &order {
        if let Some(&(o, line)) = port_owner.get(&g) {
            if o != g {
                return Err(err(
                    line,
                    format!("duplicate GUID {g:#018x}: it is a port GUID of one node and the NodeGUID of another"),
                ));
            }
        }
    }
    let mut once = 0usize;
    let mut once_first = 0usize;
    for l in &links {
        let (Some(&na), Some(&nb)) = (ids.get(&l.a.0), ids.get(&l.b.0)) else {
            continue;
        };
        if l.seen < 2 {
            if once == 0 {
                once_first = l.line;
            }
            once += 1;
        }
        b.connect(na, l.a.1, nb, l.b.1, l.width, l.speed)
            .map_err(|e| err(l.line, e.0))?;
    }
    if once > 0 {
        warnings.push(format!(
            "{file}:{once_first}: {once} links are listed from one end only (every link should appear twice; truncated file?)"
        ));
    }
    let fabric = b.build_with(opts).map_err(|e| err(0, e.0))?;
    Ok(Loaded {
        fabric,
        warnings: warnings.finish(),
    })
}

/// Records a block's node and port facts, checking them against earlier lines.
fn note_node(
    nodes: &mut FxHashMap<u64, NodeInfo>,
    order: &mut Vec<u64>,
    blk: &Block<'_>,
    line: usize,
) -> Result<(), String> {
    let n = nodes.entry(blk.node).or_insert_with(|| {
        order.push(blk.node);
        NodeInfo {
            kind: blk.kind,
            nports: blk.nports,
            sys: blk.sys,
            desc: blk.desc.to_string(),
            ven: blk.ven,
            dev: blk.dev,
            line,
            ports: vec![(0, 0, 0); blk.nports as usize + 1],
        }
    });
    if n.kind != blk.kind || n.nports != blk.nports {
        return Err(format!(
            "NodeGUID {:016x} is {} Ports:{:02X} at line {} but {} Ports:{:02X} here",
            blk.node,
            kind_tag(n.kind),
            n.nports,
            n.line,
            kind_tag(blk.kind),
            blk.nports
        ));
    }
    if n.desc != blk.desc {
        return Err(format!(
            "NodeGUID {:016x} is {{{}}} at line {} but {{{}}} here",
            blk.node, n.desc, n.line, blk.desc
        ));
    }
    if n.sys != blk.sys {
        return Err(format!(
            "NodeGUID {:016x} has SystemGUID {:016x} at line {} but {:016x} here",
            blk.node, n.sys, n.line, blk.sys
        ));
    }
    // Switches: PortGUID and LID belong to port 0.
    let p = if blk.kind == NodeKind::Switch {
        0
    } else {
        blk.pn as usize
    };
    let Some(slot) = n.ports.get_mut(p) else {
        return Err(format!("PN:{:02X} is beyond the port count", blk.pn));
    };
    if slot.2 == 0 {
        *slot = (blk.port_guid, blk.lid, line);
    } else if slot.0 != blk.port_guid || slot.1 != blk.lid {
        let what = if p == 0 {
            "port 0".to_string()
        } else {
            format!("port {p}")
        };
        return Err(format!(
            "{what} of {:?} has PortGUID {:016x} LID:{:04X} at line {} but PortGUID {:016x} LID:{:04X} here",
            blk.desc, slot.0, slot.1, slot.2, blk.port_guid, blk.lid
        ));
    }
    Ok(())
}

/// Parses `{ TYPE Key:Value … {desc} LID:XXXX PN:XX }`.
fn block<'a>(c: &mut Cursor<'a>) -> Result<Block<'a>, String> {
    c.skip_ws();
    if !c.eat(b'{') {
        return Err(format!(
            "expected `{{ TYPE Ports:.. SystemGUID:.. NodeGUID:.. PortGUID:.. VenID:.. DevID:.. Rev:.. {{desc}} LID:.. PN:.. }}`, got {:?}",
            excerpt(c.rest())
        ));
    }
    c.skip_ws();
    let ty = c.token();
    let base = ty.strip_suffix("-SM").unwrap_or(ty);
    let kind = match base {
        "SW" => NodeKind::Switch,
        "CA" => NodeKind::Ca,
        "Rt" | "RT" => NodeKind::Router,
        _ => {
            return Err(format!(
                "unknown node type {:?} (expected SW, CA or Rt)",
                excerpt(ty)
            ))
        }
    };
    let mut f: [Option<u64>; 7] = [None; 7];
    const KEYS: [&str; 7] = [
        "Ports",
        "SystemGUID",
        "NodeGUID",
        "PortGUID",
        "VenID",
        "DevID",
        "Rev",
    ];
    let mut dev_digits = 0;
    loop {
        c.skip_ws();
        match c.peek() {
            Some(b'{') => break,
            None => {
                return Err("record cut short: the node block ends before its {description}".into())
            }
            _ => {}
        }
        let tok = c.token();
        let Some((k, v)) = tok.split_once(':') else {
            return Err(format!(
                "unexpected {:?} in a node block (expected Key:Value or {{description}})",
                excerpt(tok)
            ));
        };
        let Some(i) = KEYS.iter().position(|&x| x == k) else {
            return Err(format!("unknown field {k:?} in a node block"));
        };
        let Some(val) = parse_hex(v) else {
            return Err(format!("{k}:{} is not a hexadecimal number", excerpt(v)));
        };
        if k == "DevID" {
            dev_digits = v.len();
        }
        f[i] = Some(val);
    }
    c.eat(b'{');
    // The description ends at the `}` followed by ` LID:`.
    let rest = c.rest();
    let mut end = None;
    for (i, ch) in rest.char_indices() {
        if ch == '}' && trim(rest.get(i + 1..).unwrap_or("")).starts_with("LID:") {
            end = Some(i);
            break;
        }
    }
    let Some(e) = end else {
        return Err("record cut short: expected `{description} LID:.. PN:.. }`".into());
    };
    let desc = rest.get(..e).unwrap_or("");
    let mut after = Cursor::new(rest.get(e + 1..).unwrap_or(""));
    let mut lid = None;
    let mut pn = None;
    loop {
        after.skip_ws();
        if after.eat(b'}') {
            break;
        }
        let tok = after.take_while(|b| b != b' ' && b != b'\t' && b != b'}');
        if tok.is_empty() {
            return Err("record cut short: the node block has no closing '}'".into());
        }
        match tok.split_once(':') {
            Some(("LID", v)) => lid = parse_hex(v),
            Some(("PN", v)) => pn = parse_hex(v),
            _ => {
                return Err(format!(
                    "unexpected {:?} after the description (expected LID: and PN:)",
                    excerpt(tok)
                ))
            }
        }
    }
    c.advance(e + 1 + after.pos());
    let need = |i: usize| f[i].ok_or_else(|| format!("the node block has no {}: field", KEYS[i]));
    let nports = need(0)?;
    let nports = u8::try_from(nports)
        .ok()
        .filter(|&p| p != 0 && p != u8::MAX)
        .ok_or_else(|| format!("Ports:{nports:02X} is out of range 1..=254"))?;
    let node = need(2)?;
    if node == 0 {
        return Err("NodeGUID 0 is not a valid GUID".into());
    }
    let lid = lid.ok_or("the node block has no LID: field")?;
    let pn = pn.ok_or("the node block has no PN: field")?;
    let pn = u8::try_from(pn)
        .ok()
        .filter(|&p| p != u8::MAX)
        .ok_or_else(|| format!("PN:{pn:X} is out of range"))?;
    let dev = f[5].unwrap_or(0);
    // An 8-digit DevID is the 16-bit id pushed through a 32-bit swap: the real id comes first.
    let dev = if dev_digits > 4 && dev > 0xFFFF {
        dev >> 16
    } else {
        dev
    };
    Ok(Block {
        kind,
        nports,
        sys: f[1].unwrap_or(0),
        node,
        port_guid: need(3)?,
        ven: f[4].unwrap_or(0) as u32,
        dev: dev as u32,
        desc,
        lid,
        pn,
    })
}

/// `PHY=4x LOG=ACT SPD=2.5` → width, speed, logical state.
fn trailer<'a>(c: &mut Cursor<'a>) -> Result<(Width, Speed, &'a str), String> {
    let mut width = Width::Unknown;
    let mut speed = Speed::Unknown;
    let mut state = "";
    loop {
        c.skip_ws();
        if c.at_end() {
            break;
        }
        let tok = c.token();
        let Some((k, v)) = tok.split_once('=') else {
            return Err(format!(
                "unexpected {:?} after the node blocks (expected PHY= LOG= SPD=)",
                excerpt(tok)
            ));
        };
        match k {
            "PHY" => {
                width = Width::parse(v).ok_or_else(|| {
                    format!(
                        "PHY={} is not a link width (1x, 2x, 4x, 8x, 12x)",
                        excerpt(v)
                    )
                })?
            }
            "SPD" => {
                speed = match v {
                    "2.5" => Speed::Sdr,
                    "5" => Speed::Ddr,
                    "10" => Speed::Qdr,
                    "14" => Speed::Fdr,
                    "25" => Speed::Edr,
                    "50" => Speed::Hdr,
                    "100" => Speed::Ndr,
                    "200" => Speed::Xdr,
                    "FDR10" => Speed::Fdr10,
                    "??" | "???" => Speed::Unknown,
                    _ => {
                        return Err(format!(
                            "SPD={} is not a link speed (2.5, 5, 10, 14, 25, 50, 100, 200, FDR10)",
                            excerpt(v)
                        ))
                    }
                }
            }
            "LOG" => match v {
                "ACT" | "ARM" | "INI" | "DWN" => state = v,
                _ => {
                    return Err(format!(
                        "LOG={} is not a port state (ACT, ARM, INI, DWN)",
                        excerpt(v)
                    ))
                }
            },
            _ => {} // tolerate extra KEY=VALUE fields
        }
    }
    Ok((width, speed, state))
}
