//! Multicast for the commands: reading `--mcast FILE|ipoib`, routing the groups after the
//! unicast tables with the engine's up*/down* rule when it has one, checking them (delivery
//! and the CDG of unicast and multicast together) and the summary's `multicast` object.

use crate::util::read_input;
use anyhow::{Context, Result};
use fabric::{Fabric, FaultMask};
use routing::cdg::CycleReport;
use routing::engines::{Engine, RouteOptions};
use routing::mcast::{
    check_mcast, ipoib_group, mcast_cycles, parse_groups, route_groups, Group, McastCheck,
    McastRouting, Mfts, TreeRule,
};
use routing::Routing;
use serde_json::{json, Value};
use std::path::Path;

/// The groups `--mcast` names: `ipoib` for the IPoIB broadcast group, else a group file.
pub fn load_groups(spec: &Path, f: &Fabric) -> Result<Vec<Group>> {
    if spec.as_os_str() == "ipoib" && !spec.exists() {
        return Ok(vec![ipoib_group(f)]);
    }
    let bytes = read_input(spec)?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("{}: a group file is text (UTF-8)", spec.display()))?;
    Ok(parse_groups(f, &text, &spec.display().to_string())?)
}

/// Multicast routed and checked.
pub struct Routed {
    pub routing: McastRouting,
    pub check: McastCheck,
    /// Cycles of the CDG of unicast and multicast together.
    pub cycles: Vec<CycleReport>,
    /// Whether the trees follow the engine's up*/down* rule.
    pub up_down: bool,
    /// (SL, VL) multicast was moved to, to break a credit loop with unicast.
    pub own_vl: Option<(u8, u8)>,
}

impl Routed {
    pub fn ok(&self) -> bool {
        self.check.ok() && self.cycles.is_empty()
    }
}

/// Routes `groups` after the unicast tables `r` of `engine`, and checks them. Trees follow
/// the engine's up*/down* rule when it has one; otherwise, if they close a credit loop with
/// unicast, multicast moves to an SL of its own, mapped to a free VL of the budget or to one
/// whose unicast layer stays acyclic with the trees ([`routing::mcast::own_vl`]; `r`'s
/// SL2VL tables change for that SL only).
///
/// `cdg` is the unicast channel dependency graph of `r` under `mask`, as the caller's check
/// built it (an SL multicast moves to is one unicast does not use, so it stays valid).
pub fn route_and_check(
    f: &Fabric,
    mask: &FaultMask,
    engine: &dyn Engine,
    opts: &RouteOptions,
    r: &mut Routing,
    cdg: &routing::cdg::Cdg,
    groups: &[Group],
) -> Result<Routed> {
    let rule = routing::mcast::engine_up_down_rule(f, engine, opts);
    let tree_rule = TreeRule::of(rule.as_ref());
    let mut routing =
        route_groups(f, mask, groups, tree_rule).map_err(|e| anyhow::anyhow!("multicast: {e}"))?;
    let mut check = check_mcast(f, Some(mask), &routing.mfts, Some(groups), Some(r));
    let mut cycles = mcast_cycles(f, cdg, &check);
    let mut own = None;
    if !cycles.is_empty() && routing::cdg::find_cycles(f, cdg).is_empty() {
        // Multicast on an SL of its own, mapped to a free VL, else to a VL whose unicast
        // layer stays acyclic with the trees (`routing::mcast::own_vl`).
        let before = r.sl2vl.clone();
        for vl in routing::mcast::candidate_vls(f, r, opts.budget.vls) {
            let Some(sl) = routing::mcast::free_sl(r, vl) else {
                break;
            };
            routing::mcast::map_sl(f, r, sl, vl);
            let moved: Vec<Group> = groups.iter().map(|g| Group { sl, ..g.clone() }).collect();
            let c = check_mcast(f, Some(mask), &routing.mfts, Some(&moved), Some(r));
            let cy = mcast_cycles(f, cdg, &c);
            if cy.is_empty() {
                for g in &mut routing.mfts.groups {
                    g.sl = sl;
                }
                (check, cycles, own) = (c, cy, Some((sl, vl)));
                break;
            }
            r.sl2vl = before.clone();
        }
    }
    Ok(Routed {
        routing,
        check,
        cycles,
        up_down: rule.is_some(),
        own_vl: own,
    })
}

/// The summary's `multicast` object.
pub fn summary(f: &Fabric, m: &Routed) -> Value {
    let mr = &m.routing;
    json!({
        "groups": mr.groups.len(),
        "trees": if m.up_down { "up*/down* (the engine's ranking)" } else { "shortest (central root)" },
        "own_sl_vl": m.own_vl.map(|(sl, vl)| json!({"sl": sl, "vl": vl})),
        "not_up_down_groups": mr.not_up_down,
        "max_link_load": mr.max_link_load(),
        "max_depth": mr.max_depth(),
        "mft_blocks": mr.mfts.blocks(f.num_switches()),
        "switch_entries": mr.mfts.groups.iter().map(|g| g.switches.len()).sum::<usize>(),
        "unreached_members": mr.unreached(),
        "check": check_json(&m.check),
        "credit_loops_with_unicast": m.cycles.len(),
        "per_group": mr.groups,
    })
}

/// The check's verdict as JSON.
pub fn check_json(c: &McastCheck) -> Value {
    json!({
        "ok": c.ok(),
        "groups": c.groups,
        "floods": c.floods,
        "deliveries": c.deliveries,
        "unreached": c.unreached,
        "duplicates": c.duplicates,
        "leaks": c.leaks,
        "dead_ports": c.dead_ports,
        "examples": c.examples,
    })
}

/// One line for the terminal.
pub fn say_line(f: &Fabric, m: &Routed) -> String {
    let mr = &m.routing;
    format!(
        "multicast: {} group(s), {} trees{}, depth ≤ {}, busiest link in {} tree(s), {} MFT block(s); {}; {}",
        mr.groups.len(),
        if m.up_down { "up*/down*" } else { "shortest" },
        m.own_vl
            .map(|(sl, vl)| format!(" on SL {sl} (VL {vl})"))
            .unwrap_or_default(),
        mr.max_depth(),
        mr.max_link_load(),
        mr.mfts.blocks(f.num_switches()),
        verdict(&m.check),
        if m.cycles.is_empty() {
            "no credit loop with unicast".to_string()
        } else {
            format!("{} CREDIT LOOP(S) with unicast", m.cycles.len())
        }
    )
}

/// "every receiver once" or what went wrong.
pub fn verdict(c: &McastCheck) -> String {
    if c.ok() {
        format!("every receiver reached once ({} deliveries)", c.deliveries)
    } else {
        format!(
            "NOT DELIVERED: {} unreached, {} duplicate(s), {} leak(s), {} dead port(s)",
            c.unreached, c.duplicates, c.leaks, c.dead_ports
        )
    }
}

/// Reads the MFTs of a set (`opensm.mcfdbs`), with reader warnings printed. `None` when
/// the file is absent.
pub fn read_set_mfts(path: &Path, f: &Fabric) -> Result<Option<Mfts>> {
    if !path.exists() {
        return Ok(None);
    }
    let bytes = read_input(path)?;
    let (m, warnings) = routing::opensm::read_mcfdbs(&bytes, &path.display().to_string(), f)?;
    for w in warnings {
        crate::warn!("{w}");
    }
    Ok(Some(m))
}

/// The check's examples and the first credit loop's witness.
pub fn print_issues(m: &Routed) {
    print_issue_list(&m.check, &m.cycles);
}

/// [`print_issues`] for a check and its cycles.
pub fn print_issue_list(c: &McastCheck, cycles: &[CycleReport]) {
    for e in &c.examples {
        crate::say!(
            "  multicast: {}",
            serde_json::to_string(e).unwrap_or_default()
        );
    }
    if let Some(c) = cycles.first() {
        crate::say!(
            "  credit loop of unicast and multicast ({} channels on VL(s) {:?}):",
            c.channels,
            c.vls
        );
        for h in &c.witness {
            crate::say!(
                "    {} ({}) port {} VL {} -> {} port {}",
                h.switch,
                h.guid,
                h.port,
                h.vl,
                h.to_switch,
                h.to_port
            );
        }
    }
}

/// Multicast beside `fault`: the groups routed on the fault-free fabric with the base
/// engine's rule, then mended after each fault ([`routing::mcast::repair_trees`]).
pub struct FaultMcast {
    groups: Vec<Group>,
    rule: Option<routing::turn::UpDownRule>,
    pub routing: McastRouting,
    base: Mfts,
    steps: Vec<routing::mcast::TreeRepair>,
}

impl FaultMcast {
    /// Routes `groups` on the fault-free fabric.
    pub fn start(
        f: &Fabric,
        engine: &dyn Engine,
        opts: &RouteOptions,
        groups: Vec<Group>,
    ) -> Result<Self> {
        let rule = routing::mcast::engine_up_down_rule(f, engine, opts);
        let tree_rule = TreeRule::of(rule.as_ref());
        let routing = route_groups(f, &FaultMask::none(f), &groups, tree_rule)
            .map_err(|e| anyhow::anyhow!("multicast: {e}"))?;
        let base = routing.mfts.clone();
        Ok(FaultMcast {
            groups,
            rule,
            routing,
            base,
            steps: Vec::new(),
        })
    }

    /// Mends the trees for the faults of `mask` (cumulative); returns the step's line.
    pub fn apply(&mut self, f: &Fabric, mask: &FaultMask) -> Result<String> {
        let tree_rule = TreeRule::of(self.rule.as_ref());
        let rep = routing::mcast::repair_trees(f, mask, &mut self.routing, &self.groups, tree_rule)
            .map_err(|e| anyhow::anyhow!("multicast: {e}"))?;
        let line = format!(
            "multicast: {} tree(s) cut, {} routed again, {} MFT entries in {} block(s) changed",
            rep.groups_cut, rep.groups_rebuilt, rep.entries_changed, rep.mft_blocks
        );
        self.steps.push(rep);
        Ok(line)
    }

    /// Checks the mended trees against the final unicast `tables`; the summary's object and
    /// whether all is well.
    pub fn finish(&self, f: &Fabric, mask: &FaultMask, tables: &Routing) -> (Value, bool, String) {
        let check = check_mcast(
            f,
            Some(mask),
            &self.routing.mfts,
            Some(&self.groups),
            Some(tables),
        );
        let cdg = routing::cdg::build_cdg(f, tables, Some(mask));
        let cycles = mcast_cycles(f, &cdg, &check);
        // The delta against the base trees, as `diff` counts it.
        let changes = self.base.diff(&self.routing.mfts);
        let (entries, blocks) = (changes.len(), routing::mcast::mft_blocks(&changes));
        let ok = check.ok() && cycles.is_empty();
        let line = format!(
            "multicast after the faults: {}; {}; {} MFT entries in {} block(s) differ from the base trees",
            verdict(&check),
            if cycles.is_empty() {
                "no credit loop with unicast".to_string()
            } else {
                format!("{} CREDIT LOOP(S) with unicast", cycles.len())
            },
            entries,
            blocks
        );
        let v = json!({
            "groups": self.groups.len(),
            "trees": if self.rule.is_some() { "up*/down* (the engine's ranking)" } else { "shortest (central root)" },
            "steps": self.steps,
            "mft_entries_changed": entries,
            "mft_blocks_changed": blocks,
            "max_link_load": self.routing.max_link_load(),
            "check": check_json(&check),
            "credit_loops_with_unicast": cycles.len(),
        });
        (v, ok, line)
    }
}
