//! Writers: ibsim net files, ibnetdiscover topology text and fabroute JSON.
//!
//! Writers return strings (no I/O). None of them panics, whatever the [`Fabric`]: a fabric whose
//! flat indexes contradict each other (possible only if someone edited the public fields by
//! hand) gives [`WriteError::Inconsistent`] (ibsim), a comment-only file (ibnetdiscover) or a
//! JSON document that records the error and that [`super::json::read`] refuses.
//!
//! # What survives a round trip
//!
//! JSON ([`to_json`] / [`super::json::read`]) is exact: `read(to_json(f)) == f`, including node
//! order, link order and orientation, GUIDs (also zero ones), LIDs, LMCs, every port's GUID and
//! LID, and the [`TopoHints`].
//!
//! The two text formats cannot carry everything. For each one a `normalise_*` function computes
//! exactly what reading the written text back yields, so that
//! `canonical_link_order(read(write(f))) == normalise_*(f)` holds for every fabric (the readers
//! build through [`FabricBuilder`] with default [`crate::BuildOptions`]). Common to both:
//!
//! * **Links** keep their ends, width and speed but not their order or orientation: a text file
//!   lists each link from both ends, so the reader's link order is its own business.
//!   [`canonical_link_order`] sorts links by their lower end (position of the node in the file,
//!   then port number) and orients them from that end; both sides of the comparison use it.
//! * **Hints** ([`TopoHints`]) are dropped.
//! * **Zero node GUIDs** (unknown) are replaced by GUIDs that ibsim's counters would give the
//!   node (switches from `0x200000`, CAs from `0x100000`, routers from `0`, stepping like ibsim),
//!   skipping any value that is already used by a node or port of the fabric; CA/router port
//!   GUIDs that were zero become node GUID + port number.
//! * **Unlisted ports**: only cabled ports appear in either format, so LIDs/LMCs of uncabled
//!   ports, GUIDs of switch ports other than 0 and of CA/router port 0 are lost (become 0);
//!   GUIDs of uncabled CA/router ports become node GUID + port number (the builder's default),
//!   or 0 where another port already has that GUID.
//! * **GUID clashes**: the text readers refuse a GUID that two nodes share among the node and
//!   port GUIDs the file states (one EUI-64 namespace; the builder itself only compares node
//!   GUIDs with node GUIDs and port GUIDs, including the defaults it fills in, with port GUIDs). When the file's GUIDs (after the fallbacks above, or ibsim's
//!   derivation of port GUIDs) would clash, `normalise_*` returns [`WriteError::GuidClash`], and
//!   so does [`to_ibsim_lossy`]; [`to_ibnetdiscover`] writes the file anyway (it cannot fail).
//! * **`enhanced_sp0`** is kept for switches and cleared for CAs and routers (neither format has
//!   it for them).
//! * **Descriptions** are cleaned: control characters become spaces and `"` becomes `'`
//!   (a description is written between double quotes, so it cannot contain one).
//!
//! ## ibsim ([`to_ibsim`], [`to_ibsim_lossy`], [`normalise_ibsim`])
//! Node order is kept and node names are ibsim's node ids. A name ibsim cannot use (empty, over
//! 64 bytes, containing `"`, `#`, `@` or a control character) is a [`WriteError::BadName`] in both
//! functions: names are identifiers and are never rewritten silently. In addition:
//! * GUIDs come from `switchguid=`/`caguid=`/`rtguid=` lines, written only where the node GUID
//!   differs from what ibsim's counter would assign. ibsim derives port GUIDs itself (switch
//!   port 0 = node GUID, CA/router port `p` = node GUID + `p`), so any other port GUID is lost.
//! * Widths and speeds go into `w=`/`s=`/`e=` port options (written on both ends of a link, as
//!   ibsim requires). `Unknown` width/speed are written as ibsim's defaults (4x, SDR); FDR10 has
//!   no ibsim option and is written as QDR (same signalling rate); NDR and XDR are written as HDR because
//!   Debian's ibsim 0.10 refuses `e=8` (its extended-speed mask stops at HDR).
//! * Descriptions longer than 128 bytes are cut (at a character boundary) to keep lines short;
//!   ibsim itself keeps only 63 bytes of a description.
//! * `vendid=`, `devid=` and `sysimgguid=` lines carry vendor id, device id and system image GUID;
//!   a zero (unknown) system image GUID reads back as the node GUID, which is what ibsim's
//!   NodeInfo reports then.
//!
//! [`to_ibsim`] is strict: it returns [`WriteError::Lossy`] when the file would lose anything
//! beyond the common normalisation (a port GUID ibsim would change, an FDR10 or NDR link, a LID on an
//! uncabled port, a cleaned or cut description), so a successful `to_ibsim` means
//! `normalise_ibsim(f)` differs from `f` only by link order, hints, zero GUIDs and unknown
//! widths/speeds. [`to_ibsim_lossy`] writes anyway and returns the list of what was lost.
//!
//! ## ibnetdiscover ([`to_ibnetdiscover`], [`normalise_ibnetdiscover`])
//! The output follows rdma-core's `ibnetdiscover` (default, ungrouped mode) byte for byte except
//! the date in the header: all switches, then all CAs, then all routers, each group in fabric
//! order. In addition:
//! * Node names become ibnetdiscover's ids `S-`/`H-`/`R-` + 16 hex digits of the node GUID; the
//!   fabric's names are lost (descriptions are kept, cleaned as above).
//! * Node order becomes switches, CAs, routers.
//! * Port GUIDs of cabled ports, widths, speeds (including `??`/`???` for unknown), LIDs/LMCs of
//!   switch port 0 and of cabled CA/router ports, vendor/device ids and system image GUIDs
//!   (when non-zero) are kept.

use crate::builder::{BuildError, FabricBuilder};
use crate::model::*;
use rustc_hash::FxHashSet;

mod ibnetdiscover;
mod ibsim;
mod normalise;

pub use self::ibnetdiscover::to_ibnetdiscover;
pub use self::ibsim::{
    ibsim_name_problem, to_ibsim, to_ibsim_lossy, IBSIM_MAX_DESC, IBSIM_MAX_LINE, IBSIM_MAX_NAME,
};
pub use self::normalise::{canonical_link_order, normalise_ibnetdiscover, normalise_ibsim};
pub use super::json::to_json;

/// Why a fabric could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// A node name the format cannot carry (ibsim node ids).
    #[error("node {name:?} cannot be written as an ibsim node id: {reason}")]
    BadName { name: String, reason: String },
    /// The strict writer would lose information; the message lists what.
    #[error("the ibsim net file would lose information ({count} item(s)), first: {first}; to_ibsim_lossy writes it anyway")]
    Lossy { count: usize, first: String },
    /// A line would exceed the reader's line buffer.
    #[error("line {line} would be {len} bytes long, above the limit of {max} bytes")]
    LineTooLong { line: usize, len: usize, max: usize },
    /// Two nodes would share a GUID (as node or port GUID) in the file read back, which the
    /// readers refuse: ibsim derives port GUIDs from node GUIDs, and ibnetdiscover lists only
    /// cabled ports, so an uncabled port falls back to node GUID + port number.
    #[error("GUID {guid:#x} would belong to both {first} and {second} once read back")]
    GuidClash {
        guid: u64,
        first: String,
        second: String,
    },
    /// No unused GUID could be found for a node whose GUID is zero.
    #[error("no unused GUID is left for node {name:?}")]
    NoFreeGuid { name: String },
    /// The fabric's flat indexes contradict each other.
    #[error("inconsistent fabric: {0}")]
    Inconsistent(String),
}

/// Checks that every index of the fabric is in range and that ports, links and nodes agree, so
/// that the writers can index freely afterwards.
pub(crate) fn check_consistent(f: &Fabric) -> Result<(), String> {
    if f.port_base.len() != f.nodes.len() + 1 {
        return Err(format!(
            "port_base has {} entries for {} nodes",
            f.port_base.len(),
            f.nodes.len()
        ));
    }
    let mut expect = 0usize;
    for (i, node) in f.nodes.iter().enumerate() {
        let base = f.port_base[i] as usize;
        if base != expect {
            return Err(format!(
                "node {i} ({:?}) starts at port {base}, expected {expect}",
                node.name
            ));
        }
        expect = base + node.nports as usize + 1;
    }
    if f.port_base[f.nodes.len()] as usize != expect || f.ports.len() != expect {
        return Err(format!(
            "{} ports for port counts that add up to {expect}",
            f.ports.len()
        ));
    }
    for (i, node) in f.nodes.iter().enumerate() {
        let base = f.port_base[i] as usize;
        for num in 0..=node.nports as usize {
            let p = &f.ports[base + num];
            if p.node.idx() != i || p.num as usize != num {
                return Err(format!(
                    "port {} is filed under node {i} ({:?}) port {num} but says node {} port {}",
                    base + num,
                    node.name,
                    p.node.0,
                    p.num
                ));
            }
            if let Some(l) = p.link {
                let link = f.links.get(l.idx()).ok_or_else(|| {
                    format!(
                        "port {num} of {:?} refers to missing link {}",
                        node.name, l.0
                    )
                })?;
                if link.a.idx() != base + num && link.b.idx() != base + num {
                    return Err(format!(
                        "port {num} of {:?} refers to link {} which does not end there",
                        node.name, l.0
                    ));
                }
            }
        }
    }
    for (l, link) in f.links.iter().enumerate() {
        for end in [link.a, link.b] {
            let p = f
                .ports
                .get(end.idx())
                .ok_or_else(|| format!("link {l} ends at missing port {}", end.0))?;
            if p.link != Some(LinkId(l as u32)) {
                return Err(format!(
                    "link {l} ends at port {} of node {}, which does not point back to it",
                    p.num, p.node.0
                ));
            }
            if p.num == 0 {
                return Err(format!("link {l} ends at a port 0"));
            }
        }
        if link.a == link.b {
            return Err(format!("link {l} has both ends on the same port"));
        }
    }
    Ok(())
}

/// A node description as the text formats write it: control characters become spaces and `"`
/// becomes `'`.
pub fn clean_desc(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// GUIDs as a written file carries them.
#[derive(Clone, Debug)]
pub(crate) struct EffGuids {
    /// Per `NodeId`: the node GUID in the file (never 0).
    pub node: Vec<u64>,
    /// Per `NodeId`: true when ibsim's counter would not give `node[n]` by itself, so a
    /// `switchguid=`/`caguid=`/`rtguid=` line is needed before the node.
    pub needs_line: Vec<bool>,
}

/// ibsim's first GUID for each node kind (ibsim 0.10: `guids[]` in `sim_net.c`; routers have no
/// initialiser there and so start at 0).
pub(crate) fn ibsim_guid_base(kind: NodeKind) -> u64 {
    match kind {
        NodeKind::Switch => 0x20_0000,
        NodeKind::Ca => 0x10_0000,
        NodeKind::Router => 0,
    }
}

/// How many GUIDs ibsim's counter steps over for a node beyond the node GUID itself.
pub(crate) fn guid_span(node: &Node) -> u64 {
    match node.kind {
        NodeKind::Switch => 0,
        _ => node.nports as u64,
    }
}

/// Assigns every node its GUID in a file written in `order`, simulating ibsim's per-kind GUID
/// counters: non-zero GUIDs are kept; a zero GUID gets the counter's value unless that (or one
/// of the port GUIDs it implies) is already used, in which case the next free value is taken.
pub(crate) fn effective_guids(f: &Fabric, order: &[NodeId]) -> Result<EffGuids, WriteError> {
    let mut used: FxHashSet<u64> = FxHashSet::default();
    for node in &f.nodes {
        if node.guid != 0 {
            used.insert(node.guid);
            for p in 1..=guid_span(node) {
                used.insert(node.guid.wrapping_add(p));
            }
        }
    }
    for p in &f.ports {
        if p.guid != 0 {
            used.insert(p.guid);
        }
    }
    let mut counter = [
        ibsim_guid_base(NodeKind::Switch),
        ibsim_guid_base(NodeKind::Ca),
        ibsim_guid_base(NodeKind::Router),
    ];
    let slot = |k: NodeKind| match k {
        NodeKind::Switch => 0,
        NodeKind::Ca => 1,
        NodeKind::Router => 2,
    };
    let mut out = EffGuids {
        node: vec![0; f.nodes.len()],
        needs_line: vec![false; f.nodes.len()],
    };
    for &n in order {
        let node = &f.nodes[n.idx()];
        let span = guid_span(node);
        let k = slot(node.kind);
        let guid = if node.guid != 0 {
            node.guid
        } else {
            let g = free_guid(&used, counter[k], span).ok_or_else(|| WriteError::NoFreeGuid {
                name: node.name.clone(),
            })?;
            for p in 0..=span {
                used.insert(g + p);
            }
            g
        };
        out.node[n.idx()] = guid;
        out.needs_line[n.idx()] = guid != counter[k];
        counter[k] = guid.wrapping_add(span).wrapping_add(1);
    }
    Ok(out)
}

/// Checks that the GUIDs of a file ibsim reads (node GUIDs, switch port 0 = node GUID, CA/router
/// port `p` = node GUID + `p`, all of them explicit) are unique across nodes.
pub(crate) fn check_ibsim_port_guids(f: &Fabric, eff: &EffGuids) -> Result<(), WriteError> {
    check_guids(f, eff, |n, num| {
        (
            default_port_guid(f.nodes[n.idx()].kind, eff.node[n.idx()], num),
            true,
        )
    })
}

/// Checks the GUIDs of a file read back the way the readers and the builder do:
/// node GUIDs and the port GUIDs the file states (`port_guid` returns `(guid, stated)` for
/// switch port 0 and CA/router ports 1..) share one namespace in which two nodes may not meet
/// (the readers' rule); every port GUID, stated or filled in by the builder's default, must
/// differ from other nodes' port GUIDs (the builder's rule).
pub(crate) fn check_guids(
    f: &Fabric,
    eff: &EffGuids,
    port_guid: impl Fn(NodeId, u8) -> (u64, bool),
) -> Result<(), WriteError> {
    type Owners = rustc_hash::FxHashMap<u64, (NodeId, Option<u8>)>;
    let mut stated: Owners = Owners::default();
    let mut ports: Owners = Owners::default();
    let what = |n: NodeId, p: Option<u8>| match p {
        None => format!("node {:?}", f.nodes[n.idx()].name),
        Some(p) => format!("port {p} of {:?}", f.nodes[n.idx()].name),
    };
    let claim = |map: &mut Owners, g: u64, n: NodeId, p: Option<u8>| match map.get(&g) {
        Some(&(on, op)) if on != n => Err(WriteError::GuidClash {
            guid: g,
            first: what(on, op),
            second: what(n, p),
        }),
        Some(_) => Ok(()),
        None => {
            map.insert(g, (n, p));
            Ok(())
        }
    };
    for (i, node) in f.nodes.iter().enumerate() {
        let n = NodeId(i as u32);
        if eff.node[i] != 0 {
            claim(&mut stated, eff.node[i], n, None)?;
        }
        let nums = match node.kind {
            NodeKind::Switch => 0..=0,
            _ => 1..=node.nports,
        };
        for num in nums {
            let (g, is_stated) = port_guid(n, num);
            if g == 0 {
                continue;
            }
            if is_stated {
                claim(&mut stated, g, n, Some(num))?;
            }
            claim(&mut ports, g, n, Some(num))?;
        }
    }
    Ok(())
}

/// For a lossy ibsim file: gives every node whose GUIDs in the file (its node GUID and the port
/// GUIDs ibsim derives from it) would meet another node's a fresh GUID, in `order`, and lists
/// each change in `lost`. Real fabrics have such pairs (two single-port CA nodes with
/// consecutive node GUIDs: ibsim's port 1 GUID of the first is the second's node GUID). When a
/// GUID changes every node gets an explicit GUID line, so ibsim's counters need not follow.
pub(crate) fn separate_ibsim_guids(
    f: &Fabric,
    order: &[NodeId],
    eff: &mut EffGuids,
    lost: &mut Vec<String>,
) -> Result<(), WriteError> {
    let claims = |n: NodeId, g: u64| -> Vec<u64> {
        let node = &f.nodes[n.idx()];
        let mut v = vec![g];
        if node.kind != NodeKind::Switch {
            v.extend((1..=node.nports).map(|p| default_port_guid(node.kind, g, p)));
        }
        v
    };
    let mut owner: rustc_hash::FxHashMap<u64, NodeId> = Default::default();
    let mut used: FxHashSet<u64> = FxHashSet::default();
    for &n in order {
        for g in claims(n, eff.node[n.idx()]) {
            used.insert(g);
        }
    }
    let mut changed = false;
    for &n in order {
        let g = eff.node[n.idx()];
        let clash = claims(n, g)
            .into_iter()
            .find_map(|c| owner.get(&c).copied().filter(|&o| o != n));
        let g = match clash {
            None => g,
            Some(o) => {
                let node = &f.nodes[n.idx()];
                let fresh = free_guid(&used, ibsim_guid_base(node.kind).max(g), guid_span(node))
                    .ok_or_else(|| WriteError::NoFreeGuid {
                        name: node.name.clone(),
                    })?;
                for c in claims(n, fresh) {
                    used.insert(c);
                }
                lost.push(format!(
                    "node {:?}: GUID {g:#x} becomes {fresh:#x} (the port GUIDs ibsim derives from it would meet those of {:?})",
                    node.name,
                    f.nodes[o.idx()].name
                ));
                eff.node[n.idx()] = fresh;
                changed = true;
                fresh
            }
        };
        for c in claims(n, g) {
            owner.insert(c, n);
        }
    }
    if changed {
        eff.needs_line.iter_mut().for_each(|b| *b = true);
    }
    Ok(())
}

/// The lowest `g >= start` (wrapping around once, never 0) such that `g..=g + span` holds no
/// used value and does not overflow.
fn free_guid(used: &FxHashSet<u64>, start: u64, span: u64) -> Option<u64> {
    let mut cand = start;
    // Every retry jumps past one used value (in increasing order), plus at most one wrap.
    let limit = 2 * used.len() + 4;
    for _ in 0..limit {
        if cand == 0 {
            cand = 1;
            continue;
        }
        let Some(end) = cand.checked_add(span) else {
            cand = 1;
            continue;
        };
        match (cand..=end).find(|g| used.contains(g)) {
            Some(u) => cand = u.checked_add(1).unwrap_or(1),
            None => return Some(cand),
        }
    }
    None
}

/// The GUID a file gives port `num` of node `n` when it lists it, given the node's effective GUID:
/// the fabric's port GUID when non-zero, else the builder's default.
pub(crate) fn eff_port_guid(f: &Fabric, eff: &EffGuids, n: NodeId, num: u8) -> u64 {
    let g = f.ports[f.port_base[n.idx()] as usize + num as usize].guid;
    if g != 0 {
        return g;
    }
    default_port_guid(f.nodes[n.idx()].kind, eff.node[n.idx()], num)
}

/// The builder's default GUID for port `num` of a node with GUID `node_guid`.
pub(crate) fn default_port_guid(kind: NodeKind, node_guid: u64, num: u8) -> u64 {
    match (kind, num) {
        (NodeKind::Switch, 0) => node_guid,
        (NodeKind::Switch, _) | (_, 0) => 0,
        _ => node_guid.wrapping_add(num as u64),
    }
}

/// The node and port number at the far end of port `num` of node `n` (consistent fabrics only).
pub(crate) fn peer(f: &Fabric, n: NodeId, num: u8) -> Option<(NodeId, u8)> {
    let pid = PortId(f.port_base[n.idx()] + num as u32);
    let r = f.remote(pid)?;
    let rp = &f.ports[r.idx()];
    Some((rp.node, rp.num))
}

/// The port record of port `num` of node `n` (consistent fabrics only).
pub(crate) fn port_of(f: &Fabric, n: NodeId, num: u8) -> &Port {
    &f.ports[f.port_base[n.idx()] as usize + num as usize]
}

/// The link on port `num` of node `n`, if cabled (consistent fabrics only).
pub(crate) fn link_of(f: &Fabric, n: NodeId, num: u8) -> Option<&Link> {
    port_of(f, n, num).link.map(|l| &f.links[l.idx()])
}

/// A node as a normalised fabric has it, for [`rebuild`].
#[derive(Clone, Debug)]
pub(crate) struct NodeSpec {
    pub node: Node,
    /// `(port number, guid, lid, lmc)` for every port with something to set.
    pub ports: Vec<(u8, u64, Lid, u8)>,
}

/// A link for [`rebuild`], by positions in the `NodeSpec` list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkSpec {
    pub a: (usize, u8),
    pub b: (usize, u8),
    pub width: Width,
    pub speed: Speed,
    /// Index of the link in the source fabric (to carry hints along).
    pub src: usize,
}

/// Builds a fabric from specs the way a reader would: nodes in the given order, links sorted by
/// their lower end and oriented from it. `hints` is kept with `link_class` permuted to the new
/// link order.
pub(crate) fn rebuild(
    nodes: Vec<NodeSpec>,
    mut links: Vec<LinkSpec>,
    mut hints: TopoHints,
) -> Result<Fabric, BuildError> {
    for l in &mut links {
        if l.b < l.a {
            std::mem::swap(&mut l.a, &mut l.b);
        }
    }
    links.sort_by_key(|l| (l.a, l.b));
    if hints.link_class.len() == links.len() && !links.is_empty() {
        let old = std::mem::take(&mut hints.link_class);
        hints.link_class = links
            .iter()
            .map(|l| old.get(l.src).copied().unwrap_or_default())
            .collect();
    }
    let mut b = FabricBuilder::new();
    let mut ids = Vec::with_capacity(nodes.len());
    for spec in nodes {
        let nd = spec.node;
        let id = b.add_node(nd.kind, nd.nports, nd.guid, nd.name, nd.desc)?;
        {
            let m = b.node_mut(id);
            m.sys_guid = nd.sys_guid;
            m.vendor_id = nd.vendor_id;
            m.device_id = nd.device_id;
            m.enhanced_sp0 = nd.enhanced_sp0;
        }
        for (num, guid, lid, lmc) in spec.ports {
            if guid != 0 {
                b.set_port_guid(id, num, guid)?;
            }
            if lid != 0 || lmc != 0 {
                b.set_lid(id, num, lid as u32, lmc)?;
            }
        }
        ids.push(id);
    }
    for l in &links {
        let (Some(&na), Some(&nb)) = (ids.get(l.a.0), ids.get(l.b.0)) else {
            return Err(BuildError(format!(
                "link between node positions {} and {} refers to a missing node",
                l.a.0, l.b.0
            )));
        };
        b.connect(na, l.a.1, nb, l.b.1, l.width, l.speed)?;
    }
    b.hints = hints;
    b.build()
}
