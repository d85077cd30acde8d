//! Reader for infiniband-diags' `iblinkinfo` (its default output): a header per node, then one
//! line per port with the peer port's LID, port number and node description:
//!
//! ```text
//! Switch: 0x0002c903007b78b0 MF0;sw226:SX6036/U1:
//!           19    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      13    3[  ] "MF0;sw95:MQM8700/U1" ( )
//!           19    2[  ] ==(                Down/ Polling)==>             [  ] "" ( )
//! CA: node01 HCA-1:
//!       0x0c42a103008b3bd4      1    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      19   33[  ] "MF0;sw226:SX6036/U1" ( )
//! ```
//!
//! A switch line starts with the switch's LID, a CA or router line with the port GUID and its
//! base LID. The link is `(WIDTH SPEED STATE/PHYSSTATE)`: speeds by their rate (2.5, 5.0,
//! 10.0 (FDR10 when marked), 14.0625, 25.78125, 53.125, 106.25, 212.5 Gbps). Ports that are
//! down or whose peer is not available only tell the port exists.
//!
//! The peer is named by LID and port only, so it is found by its LID among the listed nodes
//! (LIDs are unique in a subnet): a listing without the channel adapters
//! (`--switches-only`) or with only part of the fabric cannot be read. A node's port count
//! is its highest listed port; a CA's node GUID, which the output does not give, is its
//! lowest port GUID.
//!
//! The line mode (`-l`) prints one line per port with both ends' port GUIDs
//! (`0x<guid> "<description>" LID PORT[..] ==( … )==>  0x<guid> LID PORT[..] "<description>"`)
//! but no node types: a GUID listed on two or more port numbers is a switch (a switch shows
//! its one port GUID on every port, down ones included), every other port a channel adapter's,
//! grouped into nodes as in the ports report ([`super::ports_report`]).

use super::diag::Warnings;
use super::ports_report::{build, End, PortLine};
use super::subnet_lst::{assemble, Block, PortPair};
use super::text::{decode, excerpt, hex_guid, is_shell_prompt, is_tool_noise, trim, Cursor, Lines};
use super::{Loaded, ParseError};
use crate::builder::BuildOptions;
use crate::model::{NodeKind, Speed, Width};
use rustc_hash::FxHashMap;

/// A node header: `Switch: 0x<guid> <desc>:`, `CA: <desc>:` or `Router: <desc>:`.
fn header(t: &str) -> Option<(NodeKind, Option<u64>, &str)> {
    let (kind, rest) = if let Some(r) = t.strip_prefix("Switch: ") {
        (NodeKind::Switch, r)
    } else if let Some(r) = t.strip_prefix("CA: ") {
        (NodeKind::Ca, r)
    } else if let Some(r) = t.strip_prefix("Router: ") {
        (NodeKind::Router, r)
    } else {
        return None;
    };
    let rest = rest.strip_suffix(':')?;
    if kind == NodeKind::Switch {
        let (g, desc) = rest.split_once(' ').unwrap_or((rest, ""));
        let guid = hex_guid(g)?;
        Some((kind, Some(guid), desc))
    } else {
        Some((kind, None, rest))
    }
}

/// True when `line` is an iblinkinfo switch header or port line (for format detection).
pub(crate) fn looks_like_iblinkinfo(line: &str) -> bool {
    let t = trim(line);
    header(t).is_some_and(|h| h.1.is_some()) || (t.contains("==(") && t.contains(")==>"))
}

/// One node as listed.
struct Node<'a> {
    kind: NodeKind,
    desc: &'a str,
    /// Switch GUID; for a CA or router, its lowest port GUID.
    guid: u64,
    nports: u8,
}

/// One cabled port line.
struct Cabled {
    node: usize,
    port_guid: u64,
    lid: u64,
    pn: u8,
    width: Width,
    speed: Speed,
    peer_lid: u64,
    peer_pn: u8,
    line: usize,
}

/// Reads iblinkinfo's default output.
pub fn read(bytes: &[u8], file: &str, opts: BuildOptions) -> Result<Loaded, ParseError> {
    let text = decode(bytes);
    let err = |line: usize, msg: String| ParseError::new(file, line, msg);
    let mut nodes: Vec<Node> = Vec::new();
    let mut cabled: Vec<Cabled> = Vec::new();
    let mut warnings = Warnings::default();
    let mut unavailable = 0usize;
    for line in Lines::new(&text) {
        let t = trim(line.text);
        let no = line.no;
        if t.is_empty() || t.starts_with('#') || is_tool_noise(t) || is_shell_prompt(t) {
            continue;
        }
        if let Some((kind, guid, desc)) = header(t) {
            nodes.push(Node {
                kind,
                desc,
                guid: guid.unwrap_or(u64::MAX),
                nports: 0,
            });
            continue;
        }
        if is_line_mode(t) {
            if nodes.is_empty() {
                return read_line_mode(&text, file, opts);
            }
            return Err(err(
                no,
                "a line-mode (-l) line among the default output's node blocks".into(),
            ));
        }
        let Some(cur) = nodes.len().checked_sub(1) else {
            return Err(err(
                no,
                format!(
                    "expected a node header (`Switch: 0x<guid> <description>:`, `CA: <description>:`), got {:?}",
                    excerpt(t)
                ),
            ));
        };
        let node = &mut nodes[cur];
        let mut c = Cursor::new(t);
        let mut port_guid = 0;
        if node.kind != NodeKind::Switch {
            let g = c.token();
            port_guid = hex_guid(g).ok_or_else(|| {
                err(
                    no,
                    format!(
                        "expected the port GUID (0x and hex digits) of a {} port, got {:?}",
                        kind_name(node.kind),
                        excerpt(g)
                    ),
                )
            })?;
            node.guid = if node.guid == u64::MAX {
                port_guid
            } else {
                node.guid.min(port_guid)
            };
            c.skip_ws();
        }
        let (lid, pn, far) = port_columns(&mut c).map_err(|m| err(no, m))?;
        node.nports = node.nports.max(pn);
        let (width, speed, after) = match far {
            Far::Down => continue,
            Far::Unavailable => {
                unavailable += 1;
                continue;
            }
            Far::Up(w, sp, after) => (w, sp, after),
        };
        let (peer_lid, peer_pn) = peer_port(&mut Cursor::new(after)).map_err(|m| err(no, m))?;
        cabled.push(Cabled {
            node: cur,
            port_guid,
            lid,
            pn,
            width,
            speed,
            peer_lid,
            peer_pn,
            line: no,
        });
    }
    note_unavailable(&mut warnings, file, unavailable);
    // The peer of each cabled port, by LID: a switch's LID, or a CA/router port's base LID.
    let mut by_lid: FxHashMap<u64, (usize, u64, usize)> = FxHashMap::default();
    for c in &cabled {
        let n = &nodes[c.node];
        let k = if n.kind == NodeKind::Switch {
            (c.node, n.guid, c.line)
        } else {
            (c.node, c.port_guid, c.line)
        };
        if let Some(&(o, _, l)) = by_lid.get(&c.lid) {
            if o != c.node {
                return Err(err(
                    c.line,
                    format!(
                        "LID {} of {:?} is also the LID of {:?} (line {l})",
                        c.lid, n.desc, nodes[o].desc
                    ),
                ));
            }
        }
        by_lid.entry(c.lid).or_insert(k);
    }
    let block = |node: usize, port_guid: u64, lid: u64, pn: u8| {
        let n = &nodes[node];
        Block {
            kind: n.kind,
            nports: n.nports,
            sys: 0,
            node: n.guid,
            port_guid: if n.kind == NodeKind::Switch {
                n.guid
            } else {
                port_guid
            },
            ven: 0,
            dev: 0,
            desc: n.desc,
            lid,
            pn,
        }
    };
    let mut pairs: Vec<PortPair> = Vec::with_capacity(cabled.len());
    for c in &cabled {
        let Some(&(pnode, pguid, _)) = by_lid.get(&c.peer_lid) else {
            return Err(err(
                c.line,
                format!(
                    "the peer's LID {} is not listed: every node must be (iblinkinfo without --switches-only, -S or -G)",
                    c.peer_lid
                ),
            ));
        };
        if nodes[pnode].nports < c.peer_pn {
            return Err(err(
                c.line,
                format!(
                    "the peer port {} of {:?} (LID {}) is not listed (its node lists ports up to {})",
                    c.peer_pn, nodes[pnode].desc, c.peer_lid, nodes[pnode].nports
                ),
            ));
        }
        pairs.push(PortPair {
            a: block(c.node, c.port_guid, c.lid, c.pn),
            b: block(pnode, pguid, c.peer_lid, c.peer_pn),
            width: c.width,
            speed: c.speed,
            line: c.line,
        });
    }
    assemble(
        file,
        &pairs,
        warnings,
        opts,
        "no cabled ports: expected iblinkinfo output (`Switch: 0x<guid> <description>:` headers and port lines `LID PORT[..] ==( 4X 25.78125 Gbps Active/  LinkUp)==> LID PORT[..] \"description\" ( )`)",
    )
}

fn kind_name(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Switch => "switch",
        NodeKind::Ca => "CA",
        NodeKind::Router => "router",
    }
}

/// What a port line says about the far side of its link.
enum Far<'t> {
    /// The port is down: no peer.
    Down,
    /// Up, but iblinkinfo could not read the peer.
    Unavailable,
    /// Up: the link's width and speed, and the rest of the line (the peer).
    Up(Width, Speed, &'t str),
}

/// The columns every port line has after the node's own: `LID PORT[..] ==( LINK )==> …`.
fn port_columns<'t>(c: &mut Cursor<'t>) -> Result<(u64, u8, Far<'t>), String> {
    let lid = c.number().ok_or("expected the port's LID (decimal)")?;
    let pn = port_and_ext(c).ok_or("expected the port number and its external number `N[..]`")?;
    c.skip_ws();
    if !c.eat_str("==(") {
        return Err(format!(
            "expected `==(` and the link, got {:?}",
            excerpt(c.rest())
        ));
    }
    let rest = c.rest();
    let close = rest
        .find(")==>")
        .ok_or("record cut short: expected the link `==( … )==>`")?;
    let link = rest.get(..close).unwrap_or("");
    let after = trim(rest.get(close + 4..).unwrap_or(""));
    if after.starts_with('[') {
        return Ok((lid, pn, Far::Down));
    }
    if after.starts_with("\"Port not available\"") {
        return Ok((lid, pn, Far::Unavailable));
    }
    let (width, speed) = link_of(link).ok_or_else(|| {
        format!(
            "expected the link `WIDTH RATE Gbps STATE/PHYSSTATE`, got {:?}",
            excerpt(link)
        )
    })?;
    Ok((lid, pn, Far::Up(width, speed, after)))
}

/// The peer's `LID PORT[..]`.
fn peer_port(c: &mut Cursor<'_>) -> Result<(u64, u8), String> {
    let lid = c.number().ok_or("expected the peer port's LID (decimal)")?;
    let pn = port_and_ext(c).ok_or("expected the peer's port number `N[..]`")?;
    Ok((lid, pn))
}

/// The warning for active ports whose peer iblinkinfo could not read.
fn note_unavailable(warnings: &mut Warnings, file: &str, unavailable: usize) {
    if unavailable > 0 {
        warnings.push(format!(
            "{file}: {unavailable} active ports whose peer was not available are left out"
        ));
    }
}

/// `N[..]`: a port number and its external number in brackets (ignored).
fn port_and_ext(c: &mut Cursor<'_>) -> Option<u8> {
    c.skip_ws();
    let pn = c.number()?;
    let pn = u8::try_from(pn).ok().filter(|&p| p != 0 && p != u8::MAX)?;
    if !c.eat(b'[') {
        return None;
    }
    c.take_while(|b| b != b']');
    c.eat(b']').then_some(pn)
}

/// ` 4X      25.78125 Gbps Active/  LinkUp`: the width and speed of an up link. libibmad
/// prints `undefined (N)` for a width or speed it has no name for, and `Extended speed` for
/// an extended one it cannot aggregate: those are unknown, not errors.
fn link_of(link: &str) -> Option<(Width, Speed)> {
    let t = trim(link);
    let mut c = Cursor::new(t);
    let w = c.token();
    let width = match Width::parse(w) {
        Some(w) => w,
        None if w == "undefined" => Width::Unknown,
        None => return None,
    };
    // the rate is the token before `Gbps`
    let speed = match t.find(" Gbps") {
        Some(i) => {
            let rate = t.get(..i).unwrap_or("").rsplit(' ').next().unwrap_or("");
            match rate {
                "2.5" => Speed::Sdr,
                "5.0" => Speed::Ddr,
                "10.0" if t.contains("(FDR10)") => Speed::Fdr10,
                "10.0" => Speed::Qdr,
                "14.0625" => Speed::Fdr,
                "25.78125" => Speed::Edr,
                "53.125" => Speed::Hdr,
                "106.25" => Speed::Ndr,
                "212.5" => Speed::Xdr,
                _ => Speed::Unknown,
            }
        }
        None => Speed::Unknown,
    };
    Some((width, speed))
}

/// `0x<guid> "<description>" …`: a line of the line mode (the default output's CA lines start
/// with the GUID too, but their first quote is the peer's description, after the link).
fn is_line_mode(t: &str) -> bool {
    t.starts_with("0x") && t.find('"') < t.find("==(")
}

/// Reads iblinkinfo's line mode (`-l`).
fn read_line_mode(text: &str, file: &str, opts: BuildOptions) -> Result<Loaded, ParseError> {
    let err = |line: usize, msg: String| ParseError::new(file, line, msg);
    let mut lines: Vec<PortLine> = Vec::new();
    let mut warnings = Warnings::default();
    let mut unavailable = 0usize;
    for line in Lines::new(text) {
        let t = trim(line.text);
        let no = line.no;
        if t.is_empty() || t.starts_with('#') || is_tool_noise(t) || is_shell_prompt(t) {
            continue;
        }
        if !is_line_mode(t) {
            return Err(err(
                no,
                format!(
                    "expected a line of iblinkinfo -l: `0x<guid> \"<description>\" LID PORT[..] ==( … )==> …`, got {:?}",
                    excerpt(t)
                ),
            ));
        }
        let mut c = Cursor::new(t);
        let g = c.token();
        let guid = hex_guid(g)
            .ok_or_else(|| err(no, format!("expected the port GUID, got {:?}", excerpt(g))))?;
        c.skip_ws();
        let desc = match c.quoted() {
            Ok(Some(d)) => d.trim_start(),
            _ => {
                return Err(err(
                    no,
                    "expected the node description in double quotes".into(),
                ))
            }
        };
        c.skip_ws();
        let (lid, pn, far) = port_columns(&mut c).map_err(|m| err(no, m))?;
        let local = End {
            kind: NodeKind::Ca,
            lid,
            pn,
            guid,
        };
        let mut line = PortLine {
            local,
            desc,
            width: Width::Unknown,
            speed: Speed::Unknown,
            peer: None,
            line: no,
        };
        let (width, speed, after) = match far {
            Far::Down => {
                lines.push(line); // the port exists
                continue;
            }
            Far::Unavailable => {
                unavailable += 1;
                lines.push(line);
                continue;
            }
            Far::Up(w, sp, after) => (w, sp, after),
        };
        let mut p = Cursor::new(after);
        let g = p.token();
        let pguid = hex_guid(g).ok_or_else(|| {
            err(
                no,
                format!("expected the peer's port GUID, got {:?}", excerpt(g)),
            )
        })?;
        p.skip_ws();
        let (plid, ppn) = peer_port(&mut p).map_err(|m| err(no, m))?;
        p.skip_ws();
        let pdesc = match p.quoted() {
            Ok(Some(d)) => d,
            _ => {
                return Err(err(
                    no,
                    "expected the peer's description in double quotes".into(),
                ))
            }
        };
        line.width = width;
        line.speed = speed;
        line.peer = Some((
            End {
                kind: NodeKind::Ca,
                lid: plid,
                pn: ppn,
                guid: pguid,
            },
            pdesc,
        ));
        lines.push(line);
    }
    note_unavailable(&mut warnings, file, unavailable);
    // switches: GUIDs listed on two or more port numbers
    let mut first_port: FxHashMap<u64, u8> = FxHashMap::default();
    let mut switches: rustc_hash::FxHashSet<u64> = Default::default();
    for l in &lines {
        match first_port.get(&l.local.guid) {
            Some(&p) if p != l.local.pn => {
                switches.insert(l.local.guid);
            }
            Some(_) => {}
            None => {
                first_port.insert(l.local.guid, l.local.pn);
            }
        }
    }
    for l in &mut lines {
        if switches.contains(&l.local.guid) {
            l.local.kind = NodeKind::Switch;
        }
        if let Some((p, _)) = &mut l.peer {
            if switches.contains(&p.guid) {
                p.kind = NodeKind::Switch;
            }
        }
    }
    build(
        file,
        &lines,
        warnings,
        opts,
        "no cabled ports: expected iblinkinfo -l lines `0x<guid> \"<description>\" LID PORT[..] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x<guid> LID PORT[..] \"<description>\" ( )`",
    )
}
