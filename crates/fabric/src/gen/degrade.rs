//! Degraded fabrics: remove random switch-switch links and switches, keeping the fabric connected.

use super::{gerr, GenError};
use crate::builder::{BuildOptions, FabricBuilder};
use crate::model::*;
use crate::rng::Rng;

/// What [`degrade_with`] removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DegradeSpec {
    /// Switch-to-switch links to remove.
    pub links: usize,
    /// Switches to remove (with their links; end nodes left without any link go too).
    pub switches: usize,
    pub seed: u64,
    /// Never remove the first switch or its links (gen_topo.py's convention: the first switch
    /// holds the torus-2QoS seed links and is next to the SM's HCA). Default true.
    pub keep_first: bool,
    /// Only remove switches that have no HCA (or router) attached, so every end node stays.
    /// Default false.
    pub keep_hca_switches: bool,
}

impl DegradeSpec {
    pub fn new(links: usize, switches: usize, seed: u64) -> DegradeSpec {
        DegradeSpec {
            links,
            switches,
            seed,
            keep_first: true,
            keep_hca_switches: false,
        }
    }
}

/// [`degrade_with`] with the default options (first switch kept, any switch removable).
pub fn degrade(f: &Fabric, links: usize, switches: usize, seed: u64) -> Result<Fabric, GenError> {
    degrade_with(f, &DegradeSpec::new(links, switches, seed))
}

/// Removes `spec.switches` random switches, then `spec.links` random switch-to-switch links,
/// each choice rejected when it would disconnect the remaining switches (so the result is
/// connected if the input's switches were). End nodes (HCAs, routers) that lose all their links
/// are removed with their switch.
///
/// The result is rebuilt through [`FabricBuilder`] keeping node order, names, descriptions,
/// GUIDs, port numbers, port counts, link widths/speeds and the LIDs of the remaining ports; hints
/// are carried over for the remaining nodes and links (roots filtered; `kind` gets a
/// `degraded` suffix). Note: once switches are removed, ibsim would number the GUIDs of a
/// written net file differently (it numbers nodes in file order).
pub fn degrade_with(f: &Fabric, spec: &DegradeSpec) -> Result<Fabric, GenError> {
    let ns = f.switches.len();
    if ns == 0 {
        return gerr("degrade: the fabric has no switches");
    }
    if f.sw_adj_start.len() != ns + 1 || f.switch_index.len() != f.nodes.len() {
        return gerr("degrade: the fabric's derived indexes are missing (call rederive())");
    }
    let mut rng = Rng::new(spec.seed);
    let mut sw_dead = vec![false; ns];
    let mut link_dead = vec![false; f.links.len()];
    let first = if spec.keep_first { Some(0usize) } else { None };

    // Does switch `s` have an end node attached?
    let has_end = |s: usize| -> bool {
        f.node_ports(f.switches[s]).any(|p| {
            f.remote(p)
                .is_some_and(|r| f.nodes[f.ports[r.idx()].node.idx()].kind.is_end())
        })
    };
    // Is the switch graph restricted to live switches and links connected?
    let connected = |sw_dead: &[bool], link_dead: &[bool]| -> bool {
        let Some(start) = (0..ns).find(|&s| !sw_dead[s]) else {
            return false;
        };
        let mut seen = vec![false; ns];
        seen[start] = true;
        let mut stack = vec![start];
        let mut count = 1;
        while let Some(s) = stack.pop() {
            for &c in f.switch_links(SwitchIdx(s as u32)) {
                if link_dead[c.link().idx()] {
                    continue;
                }
                let Some(t) = f.dst_switch(c).map(SwitchIdx::idx) else {
                    continue;
                };
                if !sw_dead[t] && !seen[t] {
                    seen[t] = true;
                    count += 1;
                    stack.push(t);
                }
            }
        }
        count == sw_dead.iter().filter(|&&d| !d).count()
    };

    if spec.switches > 0 {
        let mut cand: Vec<usize> = (0..ns)
            .filter(|&s| Some(s) != first && !(spec.keep_hca_switches && has_end(s)))
            .collect();
        if spec.switches >= ns {
            return gerr(format!(
                "degrade: cannot remove {} of the {ns} switches (at least one must stay)",
                spec.switches
            ));
        }
        rng.shuffle(&mut cand);
        let mut removed = 0;
        for s in cand {
            if removed == spec.switches {
                break;
            }
            sw_dead[s] = true;
            if connected(&sw_dead, &link_dead) {
                removed += 1;
            } else {
                sw_dead[s] = false;
            }
        }
        if removed < spec.switches {
            return gerr(format!(
                "degrade: only {removed} of the {} switches asked for can be removed without disconnecting the fabric",
                spec.switches
            ));
        }
    }
    if spec.links > 0 {
        let sw_of = |p: PortId| f.switch_of(f.port(p).node).map(SwitchIdx::idx);
        let mut cand: Vec<usize> = (0..f.links.len())
            .filter(|&l| {
                let (Some(a), Some(b)) = (sw_of(f.links[l].a), sw_of(f.links[l].b)) else {
                    return false;
                };
                !sw_dead[a] && !sw_dead[b] && Some(a) != first && Some(b) != first
            })
            .collect();
        rng.shuffle(&mut cand);
        let mut removed = 0;
        for l in cand {
            if removed == spec.links {
                break;
            }
            link_dead[l] = true;
            if connected(&sw_dead, &link_dead) {
                removed += 1;
            } else {
                link_dead[l] = false;
            }
        }
        if removed < spec.links {
            return gerr(format!(
                "degrade: only {removed} of the {} switch links asked for can be removed without disconnecting the fabric",
                spec.links
            ));
        }
    }

    // Nodes to keep.
    let mut keep = vec![true; f.nodes.len()];
    for (s, &dead) in sw_dead.iter().enumerate() {
        if dead {
            keep[f.switches[s].idx()] = false;
        }
    }
    let node_of = |p: PortId| f.ports[p.idx()].node.idx();
    for (l, link) in f.links.iter().enumerate() {
        if !keep[node_of(link.a)] || !keep[node_of(link.b)] {
            link_dead[l] = true;
        }
    }
    for (i, node) in f.nodes.iter().enumerate() {
        if keep[i] && node.kind.is_end() {
            let n = NodeId(i as u32);
            let had = f.node_ports(n).any(|p| f.ports[p.idx()].link.is_some());
            let has = f
                .node_ports(n)
                .any(|p| f.ports[p.idx()].link.is_some_and(|l| !link_dead[l.idx()]));
            if had && !has {
                keep[i] = false;
            }
        }
    }

    // Rebuild.
    let mut b = FabricBuilder::new();
    let mut new_id = vec![u32::MAX; f.nodes.len()];
    for (i, node) in f.nodes.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        let id = b.add_node(
            node.kind,
            node.nports,
            node.guid,
            node.name.clone(),
            node.desc.clone(),
        )?;
        new_id[i] = id.0;
        let m = b.node_mut(id);
        m.sys_guid = node.sys_guid;
        m.vendor_id = node.vendor_id;
        m.device_id = node.device_id;
        m.enhanced_sp0 = node.enhanced_sp0;
        for p in f.node_ports(NodeId(i as u32)) {
            let port = &f.ports[p.idx()];
            if port.guid != 0 {
                b.set_port_guid(id, port.num, port.guid)?;
            }
            let cabled = port.link.is_some_and(|l| !link_dead[l.idx()]);
            let needs_lid = if node.kind == NodeKind::Switch {
                port.num == 0
            } else {
                cabled
            };
            if needs_lid && port.lid != 0 {
                b.set_lid(id, port.num, port.lid as u32, port.lmc)?;
            }
        }
    }
    for (l, link) in f.links.iter().enumerate() {
        if link_dead[l] {
            continue;
        }
        let (pa, pb) = (&f.ports[link.a.idx()], &f.ports[link.b.idx()]);
        b.connect(
            NodeId(new_id[pa.node.idx()]),
            pa.num,
            NodeId(new_id[pb.node.idx()]),
            pb.num,
            link.width,
            link.speed,
        )?;
    }
    let h = &f.hints;
    let mut hints = TopoHints {
        kind: if h.kind.is_empty() {
            String::new()
        } else {
            format!(
                "{} degraded(-{} links,-{} switches,seed {})",
                h.kind, spec.links, spec.switches, spec.seed
            )
        },
        dims: h.dims.clone(),
        wrap: h.wrap.clone(),
        link_class_names: h.link_class_names.clone(),
        ..TopoHints::default()
    };
    if h.coords.len() == f.nodes.len() {
        hints.coords = (0..f.nodes.len())
            .filter(|&i| keep[i])
            .map(|i| h.coords[i].clone())
            .collect();
    }
    if h.level.len() == f.nodes.len() {
        hints.level = (0..f.nodes.len())
            .filter(|&i| keep[i])
            .map(|i| h.level[i])
            .collect();
    }
    if h.link_class.len() == f.links.len() {
        hints.link_class = (0..f.links.len())
            .filter(|&l| !link_dead[l])
            .map(|l| h.link_class[l])
            .collect();
    }
    hints.roots = h
        .roots
        .iter()
        .filter(|r| r.idx() < f.nodes.len() && keep[r.idx()])
        .map(|r| NodeId(new_id[r.idx()]))
        .collect();
    b.hints = hints;
    let lmc = f.end_ports.first().map_or(0, |&p| f.ports[p.idx()].lmc);
    Ok(b.build_with(BuildOptions {
        lmc,
        reassign_lids: false,
    })?)
}
