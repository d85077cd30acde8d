//! Reader for ibnetdiscover's ports report (`ibnetdiscover -p`, `--ports`): one line per port
//! of every node, so every link appears twice, once from each end:
//!
//! ```text
//! SW     2 19 0x0008f10400411f56 4x QDR - CA    44  1 0x0002c9030001d731 ( 'ISR9024 Voltaire' - 'mtest HCA-1' )
//! CA    44  1 0x0002c9030001d731 4x QDR - SW     2 19 0x0008f10400411f56 ( 'mtest HCA-1' - 'ISR9024 Voltaire' )
//! SW     2 24 0x0008f10400411f56 4x SDR                                    'ISR9024 Voltaire'
//! ```
//!
//! Each end: node type (`SW`, `CA`, `RT`), LID (decimal; a switch's LID is its port 0's), port
//! number, port GUID; then the local port's active width and speed (`??`/`???` unknown), and
//! either the peer end and both node descriptions in single quotes, or, for a port without a
//! peer, the node's description alone (such lines only tell the port exists).
//!
//! The report names ports, not nodes, so nodes are inferred: a switch prints its one port GUID
//! on every port, which is its node. Ports of channel adapters and routers are one node when
//! their descriptions match and their GUIDs minus their port numbers agree (ConnectX-3 and
//! earlier number port GUIDs after the node GUID; later adapters are one node per port); the
//! node's GUID is then its lowest port GUID, which the report cannot tell from the real one.
//! A node's port count is the highest port number the report shows for it. Vendor, device
//! and system GUIDs are not in the report.
//!
//! Shell prompts and infiniband-diags warnings captured with the output are skipped, as are
//! blank lines and `#` comments. Everything else must be a port line.

use super::diag::Warnings;
use super::subnet_lst::{assemble, Block, PortPair};
use super::text::{decode, excerpt, hex_guid, is_shell_prompt, is_tool_noise, trim, Cursor, Lines};
use super::{Loaded, ParseError};
use crate::builder::BuildOptions;
use crate::model::{NodeKind, Speed, Width};
use rustc_hash::FxHashMap;

/// One end of a line: the node type, LID, port number and port GUID.
#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub kind: NodeKind,
    pub lid: u64,
    pub pn: u8,
    pub guid: u64,
}

/// One port line.
pub(crate) struct PortLine<'a> {
    pub local: End,
    pub desc: &'a str,
    pub width: Width,
    pub speed: Speed,
    /// The peer end and its node's description, for a cabled port.
    pub peer: Option<(End, &'a str)>,
    pub line: usize,
}

/// True when `line` has the shape of a ports report line: `SW|CA|RT <lid> <port> 0x<16 hex>`.
pub(crate) fn looks_like_port_line(line: &str) -> bool {
    let mut c = Cursor::new(trim(line));
    end(&mut c).is_ok()
}

/// Reads an ibnetdiscover ports report.
pub fn read(bytes: &[u8], file: &str, opts: BuildOptions) -> Result<Loaded, ParseError> {
    let text = decode(bytes);
    let err = |line: usize, msg: String| ParseError::new(file, line, msg);
    let mut lines: Vec<PortLine> = Vec::new();
    for line in Lines::new(&text) {
        let t = trim(line.text);
        if t.is_empty() || t.starts_with('#') || is_tool_noise(t) || is_shell_prompt(t) {
            continue;
        }
        lines.push(port_line(t, line.no).map_err(|m| err(line.no, m))?);
    }
    build(
        file,
        &lines,
        Warnings::default(),
        opts,
        "no cabled ports: expected ibnetdiscover ports report lines `SW <lid> <port> 0x<guid> 4x EDR - CA <lid> <port> 0x<guid> ( 'desc' - 'desc' )`",
    )
}

/// The fabric of port lines that name their ports by GUID (see the module documentation for
/// how nodes are inferred); `no_nodes` is the error for lines without a cabled port.
pub(crate) fn build(
    file: &str,
    lines: &[PortLine<'_>],
    warnings: Warnings,
    opts: BuildOptions,
    no_nodes: &str,
) -> Result<Loaded, ParseError> {
    // Nodes: a switch is its GUID; other ports group by (type, description, GUID − port).
    // Per node: its GUID (the lowest port GUID of a group) and port count.
    let mut nodes: FxHashMap<(NodeKind, &str, u64), (u64, u8)> = FxHashMap::default();
    for l in lines {
        let ends = std::iter::once((l.local, l.desc)).chain(l.peer);
        for (e, desc) in ends {
            let k = group(&e, desc);
            let n = nodes.entry(k).or_insert((e.guid, 0));
            n.0 = n.0.min(e.guid);
            n.1 = n.1.max(e.pn);
        }
    }
    let mut pairs: Vec<PortPair> = Vec::new();
    for l in lines {
        let Some((p, pdesc)) = l.peer else { continue };
        let mk = |e: End, desc| {
            let (node, nports) = nodes[&group(&e, desc)];
            Block {
                kind: e.kind,
                nports,
                sys: 0,
                node,
                port_guid: e.guid,
                ven: 0,
                dev: 0,
                desc,
                lid: e.lid,
                pn: e.pn,
            }
        };
        pairs.push(PortPair {
            a: mk(l.local, l.desc),
            b: mk(p, pdesc),
            width: l.width,
            speed: l.speed,
            line: l.line,
        });
    }
    assemble(file, &pairs, warnings, opts, no_nodes)
}

/// The node a port belongs to (see the module documentation).
fn group<'a>(e: &End, desc: &'a str) -> (NodeKind, &'a str, u64) {
    match e.kind {
        NodeKind::Switch => (e.kind, "", e.guid),
        _ => (e.kind, desc, e.guid.wrapping_sub(e.pn as u64)),
    }
}

/// Parses `TYPE LID PORT 0xGUID`.
fn end(c: &mut Cursor<'_>) -> Result<End, String> {
    c.skip_ws();
    let ty = c.token();
    let kind = match ty {
        "SW" => NodeKind::Switch,
        "CA" => NodeKind::Ca,
        "RT" | "Rt" => NodeKind::Router,
        _ => {
            return Err(format!(
                "expected a port: `SW|CA|RT <lid> <port> 0x<guid>`, got {:?}",
                excerpt(ty)
            ))
        }
    };
    c.skip_ws();
    let lid = c
        .number()
        .ok_or_else(|| format!("expected the LID of a {ty} port (decimal)"))?;
    c.skip_ws();
    let pn = c
        .number()
        .and_then(|p| u8::try_from(p).ok())
        .filter(|&p| p != 0 && p != u8::MAX)
        .ok_or_else(|| format!("expected the port number of a {ty} port (1..=254)"))?;
    c.skip_ws();
    let g = c.token();
    let guid = hex_guid(g).ok_or_else(|| {
        format!(
            "expected the port GUID (0x and hex digits), got {:?}",
            excerpt(g)
        )
    })?;
    Ok(End {
        kind,
        lid,
        pn,
        guid,
    })
}

/// Parses one port line.
fn port_line(t: &str, line: usize) -> Result<PortLine<'_>, String> {
    let mut c = Cursor::new(t);
    let local = end(&mut c)?;
    c.skip_ws();
    let w = c.token();
    let width = Width::parse(w).ok_or_else(|| {
        format!(
            "expected the link width (1x, 2x, 4x, 8x, 12x or ??), got {:?}",
            excerpt(w)
        )
    })?;
    c.skip_ws();
    let s = c.token();
    let speed = Speed::parse(s).ok_or_else(|| {
        format!(
            "expected the link speed (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR or ???), got {:?}",
            excerpt(s)
        )
    })?;
    c.skip_ws();
    if c.peek() == Some(b'\'') {
        // a port without a peer: the node's description only
        let desc = quoted_to_end(c.rest())
            .ok_or("record cut short: expected the node description in single quotes")?;
        return Ok(PortLine {
            local,
            desc,
            width,
            speed,
            peer: None,
            line,
        });
    }
    if !c.eat(b'-') {
        return Err(format!(
            "expected ` - ` and the peer port, or the node description in single quotes, got {:?}",
            excerpt(c.rest())
        ));
    }
    let peer = end(&mut c).map_err(|m| format!("peer: {m}"))?;
    c.skip_ws();
    // ( 'desc' - 'peer desc' )
    let rest = trim(c.rest());
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(trim)
        .ok_or("record cut short: expected `( 'description' - 'peer description' )`")?;
    let (desc, pdesc) = inner
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .and_then(|r| r.split_once("' - '"))
        .ok_or("expected `( 'description' - 'peer description' )` after the peer port")?;
    if (local.guid, local.pn) == (peer.guid, peer.pn) && local.kind == peer.kind {
        return Err(format!("port {} is cabled to itself", local.pn));
    }
    Ok(PortLine {
        local,
        desc,
        width,
        speed,
        peer: Some((peer, pdesc)),
        line,
    })
}

/// `'text'` up to the end of the line: the text between the first and the last quote.
fn quoted_to_end(s: &str) -> Option<&str> {
    let s = trim(s);
    s.strip_prefix('\'')?.strip_suffix('\'')
}
