//! MinHop: OpenSM's default engine. Hop distances by BFS from every switch; every switch then
//! picks, for each destination LID, the least-loaded (fewest paths so far) output port among the
//! min-hop ones, destinations in OpenSM's port order with its exact tie rules (see
//! [`super::common::opensm_order`]).
//! LMC > 0: offset-0 LIDs route as with LMC 0, later offsets prefer other remote systems/nodes.
//! `port_shifting` and `scatter_ports` behave as in OpenSM. Not deadlock-free on cyclic
//! topologies (rings, tori, ...).

use super::common::{
    generic_lfts, hop_matrix, opensm_order, unreached_note, GenericParams, Topo, INF,
};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};

/// The `minhop` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinHop;

impl Engine for MinHop {
    fn info(&self) -> &'static EngineInfo {
        &super::MINHOP
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        let hop = hop_matrix(t);
        let n = t.n;
        let order = opensm_order(t, opts);
        let (routing, unreached) = generic_lfts(
            t,
            &order,
            GenericParams::from_opts(opts, true),
            |s, d, out| {
                let row_d = &hop[d * n..(d + 1) * n];
                let hs = row_d[s];
                if hs == INF || hs == 0 {
                    return;
                }
                for a in t.links(s) {
                    if row_d[a.peer as usize] == hs - 1 {
                        out.push((a.port, a.peer));
                    }
                }
            },
        );
        let mut notes = Vec::new();
        unreached_note(t, unreached, &mut notes);
        Ok(Routed { routing, notes })
    }
}
