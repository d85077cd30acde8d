//! Directed-route discovery into a [`Fabric`].

use crate::pipe::{Pipe, Req};
use crate::SmError;
use fabric::{BuildOptions, Fabric, FabricBuilder, NodeKind, PortId, Speed, Width};
use mad::attr::{self, NodeInfo, PortInfo, SwitchInfo};
use mad::{attr_id, Route, Transport, MAX_HOPS};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// What discovery found.
#[derive(Clone, Debug)]
pub struct Discovery {
    pub fabric: Fabric,
    /// The SM's own port.
    pub sm_port: PortId,
    /// PortInfo of every port read, by `PortId` of `fabric` (zeros where none was read).
    pub port_info: Vec<PortInfo>,
    /// SwitchInfo by `NodeId` (zeros for end nodes).
    pub switch_info: Vec<SwitchInfo>,
    /// NodeInfo as read, by `NodeId` (its port GUID and local port: of the port it was read
    /// by).
    pub node_info: Vec<NodeInfo>,
    /// SMPs sent (retries included) and the transport time it took.
    pub smps: u64,
    pub time: Duration,
    /// Directed routes that did not answer (after retries) or answered with an error.
    pub failed: u64,
}

struct DNode {
    info: NodeInfo,
    desc: String,
    ports: BTreeMap<u8, PortInfo>,
    port_guids: BTreeMap<u8, u64>,
    sw: SwitchInfo,
}

fn width_of(code: u8) -> Width {
    match code {
        1 => Width::X1,
        2 => Width::X4,
        4 => Width::X8,
        8 => Width::X12,
        16 => Width::X2,
        _ => Width::Unknown,
    }
}

fn speed_of(pi: &PortInfo) -> Speed {
    match pi.link_speed_ext_active() {
        1 => return Speed::Fdr,
        2 => return Speed::Edr,
        4 => return Speed::Hdr,
        8 => return Speed::Ndr,
        _ => {}
    }
    match pi.link_speed_active() {
        1 => Speed::Sdr,
        2 => Speed::Ddr,
        4 => Speed::Qdr,
        _ => Speed::Unknown,
    }
}

/// Which LIDs the discovered fabric gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lids {
    /// Every LID assigned afresh, end ports with this LMC (an SM bringing a subnet up).
    Assign(u8),
    /// The LIDs and LMCs the ports hold (an SM taking over from another): only ports
    /// without one get a LID.
    Keep,
}

/// Discovers the fabric behind the pipeline's port and assigns LIDs with `lmc` for end
/// ports.
pub fn discover<T: Transport>(pipe: &mut Pipe<T>, lmc: u8) -> Result<Discovery, SmError> {
    discover_with(pipe, Lids::Assign(lmc))
}

/// [`discover`] with the LIDs `lids` says.
pub fn discover_with<T: Transport>(pipe: &mut Pipe<T>, lids: Lids) -> Result<Discovery, SmError> {
    let t0 = pipe.now();
    let sent0 = pipe.stats.sent;
    let mut failed = 0u64;
    let mut nodes: Vec<DNode> = Vec::new();
    let mut by_guid: HashMap<u64, usize> = HashMap::new();
    // (node, port) -> (node, port), both directions.
    let mut links: BTreeMap<(usize, u8), (usize, u8)> = BTreeMap::new();

    let here = pipe.run(&[
        Req::get(Route::Direct(vec![]), attr_id::NODE_INFO, 0),
        Req::get(Route::Direct(vec![]), attr_id::NODE_DESC, 0),
    ])?;
    let (Ok(ni), Ok(nd)) = (&here[0], &here[1]) else {
        return Err(SmError::Discovery(
            "the local port does not answer NodeInfo / NodeDescription".into(),
        ));
    };
    let local = NodeInfo::decode(&ni.data);
    let local_port = local.local_port;
    let pr = pipe.run(&[Req::get(
        Route::Direct(vec![]),
        attr_id::PORT_INFO,
        local_port as u32,
    )])?;
    let local_pi = pr[0]
        .as_ref()
        .map(|s| PortInfo(s.data))
        .map_err(|e| SmError::Discovery(format!("PortInfo of the local port: {e}")))?;
    nodes.push(DNode {
        info: local,
        desc: attr::node_desc_decode(&nd.data),
        ports: BTreeMap::from([(local_port, local_pi)]),
        port_guids: BTreeMap::from([(local_port, local.port_guid)]),
        sw: SwitchInfo::default(),
    });
    by_guid.insert(local.node_guid, 0);
    let mut routes: Vec<Vec<u8>> = vec![vec![]];

    // Frontier: (from node, from port, route to the far end).
    let mut frontier: Vec<(usize, u8, Vec<u8>)> = Vec::new();
    if local_pi.link_up() {
        frontier.push((0, local_port, vec![local_port]));
    }
    while !frontier.is_empty() {
        let reqs: Vec<Req> = frontier
            .iter()
            .map(|(_, _, r)| Req::get(Route::Direct(r.clone()), attr_id::NODE_INFO, 0))
            .collect();
        let got = pipe.run(&reqs)?;
        let mut fresh: Vec<usize> = Vec::new();
        // Ports of known end nodes reached again by another port: read that port's info.
        let mut more_ports: Vec<(usize, u8, Vec<u8>)> = Vec::new();
        for ((from, fport, route), res) in frontier.drain(..).zip(got) {
            let Ok(s) = res else {
                failed += 1;
                continue;
            };
            let ni = NodeInfo::decode(&s.data);
            let idx = match by_guid.get(&ni.node_guid) {
                Some(&i) => {
                    if nodes[i].info.node_type != attr::NODE_SWITCH
                        && !nodes[i].ports.contains_key(&ni.local_port)
                    {
                        nodes[i].port_guids.insert(ni.local_port, ni.port_guid);
                        more_ports.push((i, ni.local_port, route.clone()));
                    }
                    i
                }
                None => {
                    let i = nodes.len();
                    by_guid.insert(ni.node_guid, i);
                    let mut port_guids = BTreeMap::new();
                    port_guids.insert(
                        if ni.node_type == attr::NODE_SWITCH {
                            0
                        } else {
                            ni.local_port
                        },
                        ni.port_guid,
                    );
                    nodes.push(DNode {
                        info: ni,
                        desc: String::new(),
                        ports: BTreeMap::new(),
                        port_guids,
                        sw: SwitchInfo::default(),
                    });
                    routes.push(route.clone());
                    fresh.push(i);
                    if ni.node_type != attr::NODE_SWITCH {
                        more_ports.push((i, ni.local_port, route.clone()));
                    }
                    i
                }
            };
            links.insert((from, fport), (idx, ni.local_port));
            links.insert((idx, ni.local_port), (from, fport));
        }
        // Descriptions, switch ports and SwitchInfo of the new nodes; end-node ports.
        let mut reqs = Vec::new();
        let mut what: Vec<(usize, u16, u8)> = Vec::new();
        for &i in &fresh {
            let r = Route::Direct(routes[i].clone());
            reqs.push(Req::get(r.clone(), attr_id::NODE_DESC, 0));
            what.push((i, attr_id::NODE_DESC, 0));
            if nodes[i].info.node_type == attr::NODE_SWITCH {
                reqs.push(Req::get(r.clone(), attr_id::SWITCH_INFO, 0));
                what.push((i, attr_id::SWITCH_INFO, 0));
                for p in 0..=nodes[i].info.nports {
                    reqs.push(Req::get(r.clone(), attr_id::PORT_INFO, p as u32));
                    what.push((i, attr_id::PORT_INFO, p));
                }
            }
        }
        for (i, p, route) in &more_ports {
            reqs.push(Req::get(
                Route::Direct(route.clone()),
                attr_id::PORT_INFO,
                *p as u32,
            ));
            what.push((*i, attr_id::PORT_INFO, *p));
        }
        let got = pipe.run(&reqs)?;
        for ((i, a, p), res) in what.into_iter().zip(got) {
            let Ok(s) = res else {
                failed += 1;
                continue;
            };
            match a {
                attr_id::NODE_DESC => nodes[i].desc = attr::node_desc_decode(&s.data),
                attr_id::SWITCH_INFO => nodes[i].sw = SwitchInfo(s.data),
                _ => {
                    nodes[i].ports.insert(p, PortInfo(s.data));
                }
            }
        }
        // Next level: every physically up port of a new switch whose far end is unknown.
        for &i in &fresh {
            if nodes[i].info.node_type != attr::NODE_SWITCH || routes[i].len() >= MAX_HOPS {
                continue;
            }
            for p in 1..=nodes[i].info.nports {
                let up = nodes[i].ports.get(&p).is_some_and(|pi| pi.link_up());
                if up && !links.contains_key(&(i, p)) {
                    let mut r = routes[i].clone();
                    r.push(p);
                    frontier.push((i, p, r));
                }
            }
        }
    }

    // Into a fabric, nodes in node GUID order: the fabric (its LIDs when assigned, and so
    // the routing) is the same whichever port discovers it, so that two SMs on one subnet
    // (a master and its standby) build the same tables.
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by_key(|&i| nodes[i].info.node_guid);
    let mut new_of = vec![0usize; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_of[old] = new;
    }
    let nodes: Vec<DNode> = {
        let mut slots: Vec<Option<DNode>> = nodes.into_iter().map(Some).collect();
        order
            .iter()
            .map(|&i| slots[i].take().expect("a permutation"))
            .collect()
    };
    let links: BTreeMap<(usize, u8), (usize, u8)> = links
        .into_iter()
        .map(|((a, pa), (z, pz))| ((new_of[a], pa), (new_of[z], pz)))
        .collect();
    let mut b = FabricBuilder::new();
    let mut names: HashSet<String> = HashSet::new();
    for n in &nodes {
        let kind = match n.info.node_type {
            attr::NODE_SWITCH => NodeKind::Switch,
            attr::NODE_ROUTER => NodeKind::Router,
            _ => NodeKind::Ca,
        };
        let fallback = format!(
            "{}-{:016x}",
            if kind == NodeKind::Switch { "S" } else { "H" },
            n.info.node_guid
        );
        let name = if n.desc.trim().is_empty() || names.contains(&n.desc) {
            fallback
        } else {
            n.desc.clone()
        };
        names.insert(name.clone());
        let id = b
            .add_node(kind, n.info.nports, n.info.node_guid, name, n.desc.clone())
            .map_err(|e| SmError::Discovery(e.to_string()))?;
        let node = b.node_mut(id);
        node.sys_guid = n.info.sys_guid;
        node.vendor_id = n.info.vendor_id;
        node.device_id = n.info.device_id as u32;
        node.enhanced_sp0 = n.sw.enhanced_port0() == 1;
        for (&p, &g) in &n.port_guids {
            b.set_port_guid(id, p, g)
                .map_err(|e| SmError::Discovery(e.to_string()))?;
        }
        if lids == Lids::Keep {
            // A switch's LID is its port 0's; an end port's, its own (with its LMC).
            for (&p, pi) in &n.ports {
                let (lid, lmc) = match kind {
                    NodeKind::Switch if p == 0 => (pi.lid(), 0),
                    NodeKind::Switch => continue,
                    _ => (pi.lid(), pi.lmc()),
                };
                if lid != 0 && lid <= fabric::MAX_UNICAST_LID {
                    b.set_lid(id, p, lid as u32, lmc)
                        .map_err(|e| SmError::Discovery(e.to_string()))?;
                }
            }
        }
    }
    for (&(a, pa), &(z, pz)) in &links {
        if (a, pa) > (z, pz) {
            continue;
        }
        // Width and speed as the switch end (or either end) reports them.
        let pi = nodes[a]
            .ports
            .get(&pa)
            .or_else(|| nodes[z].ports.get(&pz))
            .copied()
            .unwrap_or_default();
        b.connect(
            fabric::NodeId(a as u32),
            pa,
            fabric::NodeId(z as u32),
            pz,
            width_of(pi.link_width_active()),
            speed_of(&pi),
        )
        .map_err(|e| SmError::Discovery(e.to_string()))?;
    }
    let fabric = b
        .build_with(match lids {
            Lids::Assign(lmc) => BuildOptions {
                lmc,
                reassign_lids: true,
            },
            Lids::Keep => BuildOptions {
                lmc: 0,
                reassign_lids: false,
            },
        })
        .map_err(|e| SmError::Discovery(e.to_string()))?;
    let mut port_info = vec![PortInfo::default(); fabric.ports.len()];
    let mut switch_info = vec![SwitchInfo::default(); fabric.nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        let id = fabric::NodeId(i as u32);
        for (&p, pi) in &n.ports {
            port_info[fabric.port_id(id, p).idx()] = *pi;
        }
        switch_info[i] = n.sw;
    }
    let node_info = nodes.iter().map(|n| n.info).collect();
    let sm_port = fabric.port_id(fabric::NodeId(new_of[0] as u32), local_port);
    Ok(Discovery {
        fabric,
        sm_port,
        port_info,
        switch_info,
        node_info,
        smps: pipe.stats.sent - sent0,
        time: pipe.now() - t0,
        failed,
    })
}
