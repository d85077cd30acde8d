//! fabroute's JSON form of a fabric.
//!
//! ```json
//! {
//!   "format": "fabroute-fabric",
//!   "version": 1,
//!   "nodes": [
//!     {
//!       "kind": "switch",
//!       "name": "leaf01",
//!       "desc": "MF0;leaf01:MSB7700/U1",
//!       "guid": "0x248a070300f0c0de",
//!       "nports": 36,
//!       "vendor_id": 713,
//!       "enhanced_sp0": true,
//!       "ports": [ { "num": 0, "guid": "0x248a070300f0c0de", "lid": 3 } ]
//!     }
//!   ],
//!   "links": [ { "a": "leaf01[1]", "b": "node01[1]", "width": "4x", "speed": "EDR" } ],
//!   "hints": { "kind": "torus 4x4", ... }
//! }
//! ```
//! Nodes are in `NodeId` order, links in `LinkId` order and oriented `a` → `b`; a link end is
//! `"<node name>[<port>]"` (split at the last `[`, so names may contain brackets). GUIDs are
//! hex strings (decimal strings and plain numbers are accepted too). Zero-valued fields and
//! ports with nothing set are left out. `kind` is `switch`, `ca` or `router`; widths are `1x`,
//! `2x`, `4x`, `8x`, `12x` or `??`; speeds `SDR` … `XDR`, `FDR10` or `???`.
//!
//! [`read`] rebuilds through [`FabricBuilder`], so every invariant is checked again; unknown
//! fields, duplicate ports or links, hints of the wrong length and anything the builder refuses
//! are [`ParseError`]s. `read(to_json(f)) == f` exactly.

use super::{Loaded, ParseError};
use crate::builder::FabricBuilder;
use crate::model::*;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// The `format` value of fabroute fabric JSON.
pub const JSON_FORMAT: &str = "fabroute-fabric";
/// The `version` this build writes and reads.
pub const JSON_VERSION: u32 = 1;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Guid(u64);

impl Guid {
    fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl Serialize for Guid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("0x{:016x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Guid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Guid;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a GUID: a hex string such as \"0x0002c90300a1b2c4\" or a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Guid, E> {
                Ok(Guid(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Guid, E> {
                u64::try_from(v)
                    .map(Guid)
                    .map_err(|_| E::custom(format!("a GUID cannot be negative ({v})")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Guid, E> {
                let t = v.trim();
                let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => t.parse::<u64>(),
                };
                parsed
                    .map(Guid)
                    .map_err(|_| E::custom(format!("{v:?} is not a 64-bit GUID")))
            }
        }
        d.deserialize_any(V)
    }
}

mod width_str {
    use super::*;
    pub fn serialize<S: Serializer>(w: &Width, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(w.as_str())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Width, D::Error> {
        let s = String::deserialize(d)?;
        Width::parse(&s).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown width {s:?} (expected 1x, 2x, 4x, 8x, 12x or ??)"
            ))
        })
    }
}

mod speed_str {
    use super::*;
    pub fn serialize<S: Serializer>(v: &Speed, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.as_str())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Speed, D::Error> {
        let s = String::deserialize(d)?;
        Speed::parse(&s).ok_or_else(|| {
            de::Error::custom(format!(
                "unknown speed {s:?} (expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR or ???)"
            ))
        })
    }
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
fn is_zero_u16(v: &u16) -> bool {
    *v == 0
}
fn is_zero_u8(v: &u8) -> bool {
    *v == 0
}
fn is_false(v: &bool) -> bool {
    !*v
}
fn hints_empty(h: &TopoHints) -> bool {
    *h == TopoHints::default()
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    format: String,
    version: u32,
    /// Set only when the writer was given an inconsistent fabric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default)]
    nodes: Vec<JNode>,
    #[serde(default)]
    links: Vec<JLink>,
    #[serde(default, skip_serializing_if = "hints_empty")]
    hints: TopoHints,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JNode {
    kind: NodeKind,
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    desc: String,
    #[serde(default, skip_serializing_if = "Guid::is_zero")]
    guid: Guid,
    #[serde(default, skip_serializing_if = "Guid::is_zero")]
    sys_guid: Guid,
    nports: u8,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    vendor_id: u32,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    device_id: u32,
    #[serde(default, skip_serializing_if = "is_false")]
    enhanced_sp0: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ports: Vec<JPort>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JPort {
    num: u8,
    #[serde(default, skip_serializing_if = "Guid::is_zero")]
    guid: Guid,
    #[serde(default, skip_serializing_if = "is_zero_u16")]
    lid: Lid,
    #[serde(default, skip_serializing_if = "is_zero_u8")]
    lmc: u8,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JLink {
    a: String,
    b: String,
    #[serde(with = "width_str", default)]
    width: Width,
    #[serde(with = "speed_str", default)]
    speed: Speed,
}

/// Writes `f` as fabroute JSON (pretty-printed). Never fails: a fabric whose indexes contradict
/// each other gives a document with an `"error"` field that [`read`] refuses.
pub fn to_json(f: &Fabric) -> String {
    let doc = match doc_of(f) {
        Ok(doc) => doc,
        Err(e) => Doc {
            format: JSON_FORMAT.into(),
            version: JSON_VERSION,
            error: Some(format!(
                "the fabric was inconsistent and was not written: {e}"
            )),
            nodes: Vec::new(),
            links: Vec::new(),
            hints: TopoHints::default(),
        },
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
        // Plain structs with string keys always serialise; keep a valid document regardless.
        format!(
            "{{\"format\": \"{JSON_FORMAT}\", \"version\": {JSON_VERSION}, \"error\": {}}}",
            serde_json::Value::String(e.to_string())
        )
    });
    s.push('\n');
    s
}

fn doc_of(f: &Fabric) -> Result<Doc, String> {
    super::writers::check_consistent(f)?;
    let nodes = f
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| JNode {
            kind: n.kind,
            name: n.name.clone(),
            desc: n.desc.clone(),
            guid: Guid(n.guid),
            sys_guid: Guid(n.sys_guid),
            nports: n.nports,
            vendor_id: n.vendor_id,
            device_id: n.device_id,
            enhanced_sp0: n.enhanced_sp0,
            ports: f
                .node_ports(NodeId(i as u32))
                .map(|p| &f.ports[p.idx()])
                .filter(|p| p.guid != 0 || p.lid != 0 || p.lmc != 0)
                .map(|p| JPort {
                    num: p.num,
                    guid: Guid(p.guid),
                    lid: p.lid,
                    lmc: p.lmc,
                })
                .collect(),
        })
        .collect();
    let end = |p: PortId| {
        let port = &f.ports[p.idx()];
        format!("{}[{}]", f.nodes[port.node.idx()].name, port.num)
    };
    let links = f
        .links
        .iter()
        .map(|l| JLink {
            a: end(l.a),
            b: end(l.b),
            width: l.width,
            speed: l.speed,
        })
        .collect();
    Ok(Doc {
        format: JSON_FORMAT.into(),
        version: JSON_VERSION,
        error: None,
        nodes,
        links,
        hints: f.hints.clone(),
    })
}

/// 1-based line of the first occurrence of `needle` in `text` (0 if absent).
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map(|at| text[..at].matches('\n').count() + 1)
        .unwrap_or(0)
}

/// Line of the JSON string value `value` following `"key"` (best effort, 0 if not found).
fn line_of_value(text: &str, key: &str, value: &str) -> usize {
    let quoted = serde_json::Value::String(value.to_string()).to_string();
    let key = format!("\"{key}\"");
    let mut from = 0;
    while let Some(at) = text[from..].find(&quoted) {
        let abs = from + at;
        let before = text[..abs].trim_end();
        if let Some(b) = before.strip_suffix(':') {
            if b.trim_end().ends_with(&key) {
                return text[..abs].matches('\n').count() + 1;
            }
        }
        from = abs + quoted.len().max(1);
    }
    0
}

/// Splits a link end `"name[port]"` at its last `[`.
fn parse_end(s: &str) -> Option<(&str, u8)> {
    let open = s.rfind('[')?;
    let num = s[open + 1..].strip_suffix(']')?;
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((&s[..open], num.parse().ok()?))
}

/// Checks that per-node and per-link hint vectors fit the fabric.
fn check_hints(h: &TopoHints, nodes: usize, links: usize) -> Result<(), String> {
    let per_node = [("coords", h.coords.len()), ("level", h.level.len())];
    for (name, len) in per_node {
        if len != 0 && len != nodes {
            return Err(format!(
                "hints.{name} has {len} entries for {nodes} nodes (it must be empty or one per node)"
            ));
        }
    }
    if !h.link_class.is_empty() && h.link_class.len() != links {
        return Err(format!(
            "hints.link_class has {} entries for {links} links (it must be empty or one per link)",
            h.link_class.len()
        ));
    }
    if !h.link_class_names.is_empty() {
        if let Some(c) = h
            .link_class
            .iter()
            .find(|&&c| c as usize >= h.link_class_names.len())
        {
            return Err(format!(
                "hints.link_class uses class {c} but only {} link_class_names are given",
                h.link_class_names.len()
            ));
        }
    }
    if !h.wrap.is_empty() && h.wrap.len() != h.dims.len() {
        return Err(format!(
            "hints.wrap has {} entries for {} dims",
            h.wrap.len(),
            h.dims.len()
        ));
    }
    if let Some(r) = h.roots.iter().find(|r| r.idx() >= nodes) {
        return Err(format!(
            "hints.roots names node {} but there are {nodes} nodes",
            r.0
        ));
    }
    Ok(())
}

/// Reads fabroute JSON. Bad JSON, unknown fields, a wrong `format`/`version` and contradictory
/// content (duplicate names/GUIDs/ports/links, ports beyond a node's port count, LID clashes,
/// hints that do not fit) are [`ParseError`]s, with the line where one is known.
pub fn read(bytes: &[u8], file: &str) -> Result<Loaded, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        ParseError::new(file, line, "the file is not valid UTF-8")
    })?;
    let doc: Doc = serde_json::from_str(text).map_err(|e| {
        let msg = e.to_string();
        // serde_json appends " at line L column C"; the line goes into the ParseError instead.
        let msg = match msg.rfind(" at line ") {
            Some(at) if e.line() > 0 => msg[..at].to_string(),
            _ => msg,
        };
        ParseError::new(file, e.line(), format!("bad fabric JSON: {msg}"))
    })?;
    if doc.format != JSON_FORMAT {
        return Err(ParseError::new(
            file,
            line_of(text, "\"format\""),
            format!(
                "\"format\" is {:?}; fabroute fabric JSON has \"{JSON_FORMAT}\"",
                doc.format
            ),
        ));
    }
    if doc.version != JSON_VERSION {
        return Err(ParseError::new(
            file,
            line_of(text, "\"version\""),
            format!(
                "unsupported version {} (this build reads version {JSON_VERSION})",
                doc.version
            ),
        ));
    }
    if let Some(e) = doc.error {
        return Err(ParseError::new(
            file,
            line_of(text, "\"error\""),
            format!("the file records a write error: {e}"),
        ));
    }

    let mut b = FabricBuilder::new();
    for node in &doc.nodes {
        let at = || line_of_value(text, "name", &node.name);
        if node.kind.is_end() && node.guid.0.checked_add(node.nports as u64).is_none() {
            return Err(ParseError::new(
                file,
                at(),
                format!(
                    "node {:?}: GUID {:#x} leaves no room for {} port GUIDs",
                    node.name, node.guid.0, node.nports
                ),
            ));
        }
        let id = b
            .add_node(
                node.kind,
                node.nports,
                node.guid.0,
                node.name.clone(),
                node.desc.clone(),
            )
            .map_err(|e| ParseError::new(file, at(), e.0))?;
        {
            let m = b.node_mut(id);
            m.sys_guid = node.sys_guid.0;
            m.vendor_id = node.vendor_id;
            m.device_id = node.device_id;
            m.enhanced_sp0 = node.enhanced_sp0;
        }
        let mut seen = vec![false; node.nports as usize + 1];
        for p in &node.ports {
            match seen.get_mut(p.num as usize) {
                Some(s) if *s => {
                    return Err(ParseError::new(
                        file,
                        at(),
                        format!("node {:?}: port {} is listed twice", node.name, p.num),
                    ))
                }
                Some(s) => *s = true,
                None => {
                    return Err(ParseError::new(
                        file,
                        at(),
                        format!(
                            "node {:?}: port {} is beyond its port count {}",
                            node.name, p.num, node.nports
                        ),
                    ))
                }
            }
            b.set_port_guid(id, p.num, p.guid.0)
                .map_err(|e| ParseError::new(file, at(), e.0))?;
            if p.lid != 0 || p.lmc != 0 {
                b.set_lid(id, p.num, p.lid as u32, p.lmc).map_err(|e| {
                    ParseError::new(file, at(), format!("node {:?}: {}", node.name, e.0))
                })?;
            }
        }
    }
    for (i, l) in doc.links.iter().enumerate() {
        let at = || line_of_value(text, "a", &l.a);
        let mut ends = [(NodeId(0), 0u8); 2];
        for (slot, s) in ends.iter_mut().zip([&l.a, &l.b]) {
            let (name, port) = parse_end(s).ok_or_else(|| {
                ParseError::new(
                    file,
                    at(),
                    format!("link {i}: end {s:?} is not of the form \"node[port]\""),
                )
            })?;
            let n = b.find_name(name).ok_or_else(|| {
                ParseError::new(file, at(), format!("link {i}: no node is named {name:?}"))
            })?;
            *slot = (n, port);
        }
        let [(na, pa), (nb, pb)] = ends;
        let before = b.num_links();
        b.connect(na, pa, nb, pb, l.width, l.speed)
            .map_err(|e| ParseError::new(file, at(), format!("link {i}: {}", e.0)))?;
        if b.num_links() == before {
            return Err(ParseError::new(
                file,
                at(),
                format!("link {i} ({} - {}) is listed twice", l.a, l.b),
            ));
        }
    }
    check_hints(&doc.hints, doc.nodes.len(), doc.links.len())
        .map_err(|e| ParseError::new(file, line_of(text, "\"hints\""), e))?;
    b.hints = doc.hints;
    let fabric = b.build().map_err(|e| ParseError::new(file, 0, e.0))?;
    Ok(Loaded {
        fabric,
        warnings: Vec::new(),
    })
}
