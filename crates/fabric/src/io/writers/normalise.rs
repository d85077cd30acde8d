//! What a fabric looks like after a round trip through a text format (see the module docs of
//! [`super`] for the rules).

use super::ibsim::{ibsim_desc, ibsim_speed};
use super::{
    check_consistent, check_guids, check_ibsim_port_guids, clean_desc, default_port_guid,
    eff_port_guid, effective_guids, rebuild, separate_ibsim_guids, EffGuids, LinkSpec, NodeSpec,
    WriteError,
};
use crate::builder::BuildError;
use crate::model::*;

/// The same fabric with its links in canonical order: sorted by their lower end (node id, then
/// port number) and oriented from it; `hints.link_class` is permuted along. Nodes, ports, GUIDs,
/// LIDs and hints are untouched. Text readers' link order is their own; compare
/// `canonical_link_order(read(..))` with a `normalise_*` result.
pub fn canonical_link_order(f: &Fabric) -> Result<Fabric, BuildError> {
    check_consistent(f).map_err(BuildError)?;
    let nodes = f
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let n = NodeId(i as u32);
            NodeSpec {
                node: node.clone(),
                ports: f
                    .node_ports(n)
                    .map(|p| {
                        let port = &f.ports[p.idx()];
                        (port.num, port.guid, port.lid, port.lmc)
                    })
                    .collect(),
            }
        })
        .collect();
    let position: Vec<usize> = (0..f.nodes.len()).collect();
    rebuild(
        nodes,
        link_specs(f, &position, |l| (l.width, l.speed)),
        f.hints.clone(),
    )
}

/// What `ibsim::read(to_ibsim_lossy(f))` yields, with links in canonical order (and the same
/// errors as [`super::to_ibsim_lossy`]).
pub fn normalise_ibsim(f: &Fabric) -> Result<Fabric, WriteError> {
    check_consistent(f).map_err(WriteError::Inconsistent)?;
    let order: Vec<NodeId> = (0..f.nodes.len() as u32).map(NodeId).collect();
    let mut eff = effective_guids(f, &order)?;
    separate_ibsim_guids(f, &order, &mut eff, &mut Vec::new())?;
    check_ibsim_port_guids(f, &eff)?;
    let nodes = order
        .iter()
        .map(|&n| {
            let node = &f.nodes[n.idx()];
            let guid = eff.node[n.idx()];
            let mut out = node.clone();
            out.guid = guid;
            out.desc = ibsim_desc(&node.desc);
            // ibsim's NodeInfo gives the node GUID as system image GUID unless told otherwise.
            if out.sys_guid == 0 {
                out.sys_guid = guid;
            }
            out.enhanced_sp0 = node.kind == NodeKind::Switch && node.enhanced_sp0;
            NodeSpec {
                node: out,
                // ibsim's rule for every port GUID, whatever the fabric said.
                ports: listed_ports(f, n, |num| default_port_guid(node.kind, guid, num)),
            }
        })
        .collect();
    let position: Vec<usize> = (0..f.nodes.len()).collect();
    let links = link_specs(f, &position, |l| {
        let w = match l.width {
            Width::Unknown => Width::X4,
            w => w,
        };
        (w, ibsim_speed(l.speed).0)
    });
    rebuild(nodes, links, TopoHints::default()).map_err(|e| WriteError::Inconsistent(e.0))
}

/// What `ibnetdiscover::read(to_ibnetdiscover(f))` yields, with links in canonical order.
/// [`WriteError::GuidClash`] when no reader can read the file back: an uncabled CA/router port
/// is not listed, so it falls back to node GUID + port number, which another port already has.
pub fn normalise_ibnetdiscover(f: &Fabric) -> Result<Fabric, WriteError> {
    check_consistent(f).map_err(WriteError::Inconsistent)?;
    let order = super::ibnetdiscover::node_order(f);
    let eff = effective_guids(f, &order)?;
    let mut position = vec![0usize; f.nodes.len()];
    for (i, &n) in order.iter().enumerate() {
        position[n.idx()] = i;
    }
    let defaults = unlisted_defaults(f, &eff, &order);
    let guid_of = |n: NodeId, num: u8| listed_guid(f, &eff, &defaults, n, num);
    check_guids(f, &eff, guid_of)?;
    let nodes = order
        .iter()
        .map(|&n| {
            let node = &f.nodes[n.idx()];
            let guid = eff.node[n.idx()];
            let mut out = node.clone();
            out.guid = guid;
            out.name = super::ibnetdiscover::node_id(node.kind, guid);
            out.desc = clean_desc(&node.desc);
            out.enhanced_sp0 = node.kind == NodeKind::Switch && node.enhanced_sp0;
            NodeSpec {
                node: out,
                ports: listed_ports(f, n, |num| guid_of(n, num).0),
            }
        })
        .collect();
    let links = link_specs(f, &position, |l| (l.width, l.speed));
    rebuild(nodes, links, TopoHints::default()).map_err(|e| WriteError::Inconsistent(e.0))
}

/// Whether an ibnetdiscover file lists port `num` of `n` with its GUID (switch port 0, cabled
/// CA/router ports).
fn is_listed(f: &Fabric, n: NodeId, num: u8) -> bool {
    match f.nodes[n.idx()].kind {
        NodeKind::Switch => num == 0,
        _ => num > 0 && super::link_of(f, n, num).is_some(),
    }
}

/// The builder's defaults for the ports the file does not list, by port index: node GUID +
/// port number for CA/router ports, in file order, unless a listed port or an earlier default
/// has that GUID (then 0, unknown).
fn unlisted_defaults(f: &Fabric, eff: &EffGuids, order: &[NodeId]) -> Vec<u64> {
    let mut taken: rustc_hash::FxHashSet<u64> = rustc_hash::FxHashSet::default();
    for (i, node) in f.nodes.iter().enumerate() {
        let n = NodeId(i as u32);
        for num in 0..=node.nports {
            if is_listed(f, n, num) {
                taken.insert(eff_port_guid(f, eff, n, num));
            }
        }
    }
    taken.remove(&0);
    let mut out = vec![0u64; f.ports.len()];
    for &n in order {
        let node = &f.nodes[n.idx()];
        for num in 0..=node.nports {
            let g = default_port_guid(node.kind, eff.node[n.idx()], num);
            if g != 0 && !is_listed(f, n, num) && taken.insert(g) {
                out[(f.port_base[n.idx()] + num as u32) as usize] = g;
            }
        }
    }
    out
}

/// The GUID a port has after an ibnetdiscover round trip, and whether the file states it:
/// listed ports carry theirs, unlisted ones the builder's default ([`unlisted_defaults`]).
fn listed_guid(f: &Fabric, eff: &EffGuids, defaults: &[u64], n: NodeId, num: u8) -> (u64, bool) {
    if is_listed(f, n, num) {
        (eff_port_guid(f, eff, n, num), true)
    } else {
        (
            defaults[(f.port_base[n.idx()] + num as u32) as usize],
            false,
        )
    }
}

/// Port settings a text file carries for node `n`: switch port 0's LID/LMC, cabled CA/router
/// ports' LIDs/LMCs; GUIDs from `guid_of`.
fn listed_ports(f: &Fabric, n: NodeId, guid_of: impl Fn(u8) -> u64) -> Vec<(u8, u64, Lid, u8)> {
    let node = &f.nodes[n.idx()];
    (0..=node.nports)
        .map(|num| {
            let port = super::port_of(f, n, num);
            let carries_lid = match node.kind {
                NodeKind::Switch => num == 0,
                _ => num > 0 && port.link.is_some(),
            };
            let (lid, lmc) = if carries_lid {
                (port.lid, port.lmc)
            } else {
                (0, 0)
            };
            (num, guid_of(num), lid, lmc)
        })
        .filter(|&(_, g, lid, lmc)| g != 0 || lid != 0 || lmc != 0)
        .collect()
}

/// Every link as a [`LinkSpec`] with node positions from `position` and width/speed mapped.
fn link_specs(
    f: &Fabric,
    position: &[usize],
    map: impl Fn(&Link) -> (Width, Speed),
) -> Vec<LinkSpec> {
    f.links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (pa, pb) = (&f.ports[l.a.idx()], &f.ports[l.b.idx()]);
            let (width, speed) = map(l);
            LinkSpec {
                a: (position[pa.node.idx()], pa.num),
                b: (position[pb.node.idx()], pb.num),
                width,
                speed,
                src: i,
            }
        })
        .collect()
}
