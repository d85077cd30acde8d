//! VL transitions for Up*/Down* tables (`updn`, `dnup`, `ftree`): the pairs a ranking leaves
//! without an up*/down* path (aggregation nodes on two cores, a leaf whose last uplink to a
//! spine group is missing) are routed anyway, on a second VL after their down → up turn.
//!
//! The tables give such a switch the path with the fewest illegal turns
//! ([`super::ranking`]'s transition codes). Here every (source switch, destination LID) path
//! of the finished tables gets, hop by hop, VL `start_vl + illegal turns taken so far`. Inside
//! one VL every turn is legal, so each VL's channel dependencies follow the up/down order and
//! are acyclic, and dependencies between VLs only go upwards: the tables are deadlock-free.
//! A switch sees only (input port, output port, SL), so the paths that change VL are coloured
//! into SLs ≥ 1 that agree at every (switch, input port, output port) they share
//! ([`crate::vl::SlColouring`], first fit, destination by destination); SL 0 maps everything
//! to `start_vl` and carries every path without a turn.
//!
//! A path needing more turns than the budget's VLs allow (with one VL: any turn) is not
//! routed: its source switch's entry for that LID is cleared — every path through that
//! switch needs at least as many turns, because a switch's code counts the turns of its
//! whole remaining path — and the pairs are named in a note, so the check reports them as
//! undelivered rather than carrying traffic that could close a credit loop. Running out of
//! SLs fails the engine with the shortage named.

use super::common::Topo;
use super::ranking::UpDownRanking;
use super::{Budget, EngineError};
use crate::tables::Routing;
use crate::vl::paths::{path_sls, Paths};
use crate::vl::{Need, SlColouring};
use fabric::SwitchIdx;
use fabric::{ChannelId, NodeKind, NO_PORT};

/// How many unroutable pairs a note names.
const NAMED: usize = 8;

/// Gives the paths of `routing` that turn down → up under `rk` their VLs and SLs (module
/// documentation). Adds a note when any path turns or is left unrouted.
pub(crate) fn assign_transitions(
    t: &Topo,
    rk: &UpDownRanking,
    routing: &mut Routing,
    budget: Budget,
    notes: &mut Vec<String>,
) -> Result<(), EngineError> {
    let f = t.f;
    let paths = Paths::of(f, routing, Some(&t.mask));
    // Turns per path, and the VL of every hop after the first (hop 0 is on start_vl).
    let turns_of = |i: usize| -> u8 {
        let ch = paths.chans(i);
        ch.windows(2)
            .filter(|w| !rk.is_legal_turn(f, ChannelId(w[0]), ChannelId(w[1])))
            .count()
            .min(u8::MAX as usize) as u8
    };
    let turns: Vec<u8> = (0..paths.len()).map(turns_of).collect();
    let max_turns = turns.iter().copied().max().unwrap_or(0);
    if max_turns == 0 {
        return Ok(());
    }
    let allowed = budget.vls - 1;
    // Over budget: clear the source switch's entry.
    let mut over = Vec::new();
    for (i, &tr) in turns.iter().enumerate() {
        if tr > allowed {
            let node = f.switches[paths.src[i] as usize];
            routing.lft_of_mut(SwitchIdx(paths.src[i]))[paths.dlid[i] as usize] = NO_PORT;
            over.push((node, paths.dst[i]));
        }
    }
    let needs = |i: usize, out: &mut Vec<Need>| {
        out.clear();
        let ch = paths.chans(i);
        let mut vl = budget.start_vl;
        for k in 1..ch.len() {
            if !rk.is_legal_turn(f, ChannelId(ch[k - 1]), ChannelId(ch[k])) {
                vl += 1;
            }
            let (sw, inp, o) = paths.hop_ports(f, i, k);
            out.push(Need {
                sw,
                inp,
                out: o,
                vl,
            });
        }
    };
    let mut colours = SlColouring::new(1, budget.sls);
    let mut sl_of = vec![0u8; paths.len()];
    let mut buf = Vec::new();
    let mut moved = 0u64;
    for i in 0..paths.len() {
        if turns[i] == 0 || turns[i] > allowed {
            continue;
        }
        needs(i, &mut buf);
        let Some(sl) = colours.find(&buf).or_else(|| colours.fresh()) else {
            return Err(EngineError::NotApplicable(format!(
                "the paths that change VL after a down->up turn need more than the {} SLs of the budget",
                budget.sls
            )));
        };
        colours.assign(sl, &buf, |_| {});
        sl_of[i] = sl;
        moved += 1;
    }
    for i in 0..f.nodes.len() {
        routing
            .sl2vl
            .table_mut(fabric::NodeId(i as u32))
            .fill(budget.start_vl);
    }
    for (n, sl) in colours.entries() {
        routing
            .sl2vl
            .set(f.switches[n.sw as usize], n.inp, n.out, sl, n.vl);
    }
    routing.path_sl = path_sls(f, routing, &paths, |i| sl_of[i], 0);
    if moved > 0 {
        let top = budget.start_vl + max_turns.min(allowed);
        notes.push(format!(
            "{moved} (source switch, destination LID) paths have no up*/down* path and change VL after their down->up turn: VLs {}..={top}, SLs 0..={} (SL 0 without a turn)",
            budget.start_vl,
            colours.end().saturating_sub(1).max(1)
        ));
    }
    if !over.is_empty() {
        let ends_on = |node: fabric::NodeId| -> usize {
            f.switch_of(node).map_or(0, |s| t.ends_on(s.idx()).len())
        };
        let pairs: usize = over.iter().map(|&(n, _)| ends_on(n)).sum();
        let named: Vec<String> = over
            .iter()
            .take(NAMED)
            .map(|&(n, e)| {
                let dst = f.node(f.port(f.end_ports[e as usize]).node);
                let what = if dst.kind == NodeKind::Switch {
                    "switch"
                } else {
                    "end port"
                };
                format!(
                    "from the end ports of switch {:?} to {what} {:?}",
                    f.node(n).name,
                    dst.name
                )
            })
            .collect();
        notes.push(format!(
            "{pairs} (source end port, destination LID) pairs are not routed: they have no up*/down* path and need {} down->up turn(s), more than the {} VL(s) of the budget allow ({}{})",
            max_turns,
            budget.vls,
            named.join("; "),
            if over.len() > NAMED { "; …" } else { "" }
        ));
    }
    Ok(())
}
