//! Multicast groups as input: the group file of `route --mcast FILE` and the IPoIB broadcast
//! group (`--mcast ipoib`).
//!
//! **Group file.** One group per line; `#` starts a comment; blank lines are skipped:
//!
//! ```text
//! # MLID   [mgid=GID] [sl=SL]  MEMBER...
//! 0xC000   all                                  # every end port, full members
//! 0xC001   sl=1 node01 node02 send:node03        # node03 sends only
//! 0xC002   mgid=ff12:601b:ffff::1 0x0002c9030001a2b1 17 H_1_0_0/1
//! ```
//!
//! - MLID: 0xC000–0xFFFE, hex with `0x` or decimal, each once in the file;
//! - `mgid=`: an IPv6-style GID (`ff12:401b:ffff::1`) or 32 hex digits after `0x`;
//! - `sl=`: the SL of the group's packets, 0–15 (default 0);
//! - MEMBER: `all` (every cabled end port), or a node name, a node description, a port GUID
//!   (`0x…`), a LID (decimal), or `NAME/PORT`; a node name or description stands for every
//!   cabled end port of that node. A `send:` prefix makes the member send-only. A member
//!   listed twice is a full member if either listing is.

use super::{Group, Member, MLID_FIRST, MLID_LAST};
use fabric::{Fabric, Lid, PortId};
use std::collections::BTreeMap;

/// An error in a group file: where and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct GroupError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

/// The IPoIB broadcast group of the default partition (P_Key 0xFFFF, IPv4): MLID 0xC000,
/// MGID ff12:401b:ffff::ffff:ffff, SL 0, every cabled end port a full member.
pub fn ipoib_group(f: &Fabric) -> Group {
    let mut members: Vec<Member> = f
        .end_ports
        .iter()
        .filter(|&&p| f.remote(p).is_some())
        .map(|&p| Member {
            port: p,
            full: true,
        })
        .collect();
    members.sort();
    Group {
        mlid: MLID_FIRST,
        mgid: Some(0xff12_401b_ffff_0000_0000_0000_ffff_ffff),
        sl: 0,
        members,
    }
}

/// Parses a group file (see the module documentation) against fabric `f`. Groups come back
/// sorted by MLID.
pub fn parse_groups(f: &Fabric, text: &str, file: &str) -> Result<Vec<Group>, GroupError> {
    let names = NameIndex::new(f);
    let mut groups: BTreeMap<Lid, (usize, Group)> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |msg: String| GroupError {
            file: file.to_string(),
            line,
            msg,
        };
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let mut words = body.split_whitespace();
        let first = words.next().unwrap_or_default();
        let mlid = parse_num(first)
            .filter(|&v| (MLID_FIRST as u64..=MLID_LAST as u64).contains(&v))
            .ok_or_else(|| {
                err(format!(
                    "{first:?} is not a multicast LID: expected 0xC000-0xFFFE (hex with 0x, or decimal) at the start of the line"
                ))
            })? as Lid;
        if let Some((at, _)) = groups.get(&mlid) {
            return Err(err(format!(
                "MLID {mlid:#06X} is already a group (line {at})"
            )));
        }
        let mut g = Group {
            mlid,
            mgid: None,
            sl: 0,
            members: Vec::new(),
        };
        let mut full: BTreeMap<PortId, bool> = BTreeMap::new();
        for w in words {
            if let Some(v) = w.strip_prefix("mgid=") {
                g.mgid = Some(parse_gid(v).ok_or_else(|| {
                    err(format!(
                        "mgid={v:?}: expected an IPv6-style GID (ff12:401b:ffff::1) or 0x and 32 hex digits"
                    ))
                })?);
            } else if let Some(v) = w.strip_prefix("sl=") {
                g.sl = v
                    .parse::<u8>()
                    .ok()
                    .filter(|&s| s < 16)
                    .ok_or_else(|| err(format!("sl={v:?}: expected an SL 0-15")))?;
            } else {
                let (send_only, spec) = match w.strip_prefix("send:") {
                    Some(s) => (true, s),
                    None => (false, w),
                };
                let ports = if spec == "all" {
                    f.end_ports
                        .iter()
                        .copied()
                        .filter(|&p| f.remote(p).is_some())
                        .collect()
                } else {
                    names.resolve(f, spec).map_err(err)?
                };
                for p in ports {
                    let e = full.entry(p).or_insert(false);
                    *e |= !send_only;
                }
            }
        }
        if full.is_empty() {
            return Err(err(format!(
                "group {mlid:#06X} has no member: list end ports (names, GUIDs, LIDs) or `all`"
            )));
        }
        g.members = full
            .into_iter()
            .map(|(port, full)| Member { port, full })
            .collect();
        groups.insert(mlid, (line, g));
    }
    Ok(groups.into_values().map(|(_, g)| g).collect())
}

/// Decimal, or hex with `0x`.
fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// An IPv6-style GID or `0x` and up to 32 hex digits.
fn parse_gid(s: &str) -> Option<u128> {
    if let Some(h) = s.strip_prefix("0x") {
        return (h.len() <= 32).then(|| u128::from_str_radix(h, 16).ok())?;
    }
    s.parse::<std::net::Ipv6Addr>().ok().map(u128::from)
}

/// Node names and descriptions to nodes, for member lookup.
struct NameIndex {
    by_name: BTreeMap<String, Vec<u32>>,
}

impl NameIndex {
    fn new(f: &Fabric) -> Self {
        let mut by_name: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (i, n) in f.nodes.iter().enumerate() {
            if !n.kind.is_end() {
                continue;
            }
            by_name.entry(n.name.clone()).or_default().push(i as u32);
            if !n.desc.is_empty() && n.desc != n.name {
                by_name.entry(n.desc.clone()).or_default().push(i as u32);
            }
        }
        NameIndex { by_name }
    }

    /// The cabled end ports `spec` names (see the module documentation).
    fn resolve(&self, f: &Fabric, spec: &str) -> Result<Vec<PortId>, String> {
        let cabled = |p: PortId| f.remote(p).is_some();
        if let Some((head, port)) = spec.rsplit_once('/') {
            if let (Some(nodes), Ok(k)) = (self.by_name.get(head), port.parse::<u8>()) {
                let n = fabric::NodeId(nodes[0]);
                if nodes.len() > 1 {
                    return Err(format!("{head:?} names {} nodes", nodes.len()));
                }
                if k == 0 || k > f.node(n).nports {
                    return Err(format!(
                        "{spec:?}: {head} has ports 1..={}",
                        f.node(n).nports
                    ));
                }
                let p = f.port_id(n, k);
                return if cabled(p) {
                    Ok(vec![p])
                } else {
                    Err(format!("{spec:?} is not cabled"))
                };
            }
        }
        if let Some(nodes) = self.by_name.get(spec) {
            let ports: Vec<PortId> = nodes
                .iter()
                .flat_map(|&n| f.node_ports(fabric::NodeId(n)).skip(1))
                .filter(|&p| cabled(p))
                .collect();
            return if ports.is_empty() {
                Err(format!("{spec:?} has no cabled port"))
            } else {
                Ok(ports)
            };
        }
        if let Some(v) = parse_num(spec) {
            if spec.starts_with("0x") || spec.starts_with("0X") {
                let hits: Vec<PortId> = f
                    .end_ports
                    .iter()
                    .copied()
                    .filter(|&p| f.port(p).guid == v)
                    .collect();
                if !hits.is_empty() {
                    return Ok(hits.into_iter().filter(|&p| cabled(p)).collect());
                }
            } else if let Some(p) = Lid::try_from(v).ok().and_then(|l| f.lid_port(l)) {
                if f.node(f.port(p).node).kind.is_end() {
                    return Ok(vec![p]);
                }
                return Err(format!("LID {v} is a switch's, not an end port's"));
            }
        }
        Err(format!(
            "{spec:?}: no end node name, node description, port GUID or LID of the fabric matches"
        ))
    }
}
