//! NVIDIA DGX SuperPOD-style 3-level fat trees: scalable units with rail-optimised leaves,
//! spine groups, core groups, a SHARP aggregation node on every switch, a management network on
//! the side and, optionally, missing cables.

use super::{check_size, gerr, mul, GenError, GenOptions, Plan, MAX_PORTS};
use crate::model::Fabric;
use crate::rng::Rng;
use std::collections::HashMap;

/// The node description of a SHARP aggregation node, as Mellanox/NVIDIA switches report it.
/// Routing engines recognise service CAs by the substring `aggregation node`.
pub const AGGREGATION_NODE_DESC: &str = "Mellanox Technologies Aggregation Node";

/// A DGX SuperPOD-style fabric, built as real clusters are cabled.
///
/// - `su` scalable units (SUs), each with `nodes` DGX-like nodes of `rails` compute HCAs
///   (one CA with one port per HCA, named `dgx-su{u}-n{i} HCA-{r}`);
/// - rail-optimised leaves: SU `u` has `rails` leaves `su{u}-leaf{r}`; leaf `r` carries the
///   rail-`r` HCA of every node of its SU;
/// - `spines` spines per SU (`su{u}-spine{j}`, the SU's spine group); every leaf of an SU is
///   cabled to every spine of its SU with `uplinks` cables in total: `uplinks / spines` to each
///   spine, the first `uplinks % spines` spines one more (so `uplinks >= spines`);
/// - `cores` cores (default `spines * ceil(su / 2)`), split into `spines` core groups as evenly
///   as possible (the first `cores % spines` groups one larger; needs `cores >= spines`), named
///   `core{g}-{i}`; spine `j` of every SU is cabled to every core of group `j` with
///   `core_links` cables each;
/// - with `sharp`, one SHARP aggregation node on every switch (leaves, spines, cores and the
///   management switches): a one-port CA described as [`AGGREGATION_NODE_DESC`] and named
///   `<switch name> Aggregation Node` (unique, and still recognisable when ibsim uses the name
///   as the description);
/// - a management network on the side: `mgmt` management leaves `mgmt-leaf{k}` with
///   `mgmt_hcas` service HCAs each (ordinary CAs `mgmt-{k} HCA-{i}`); the first
///   `ceil(mgmt / 2)` hang off `su0-spine0` by 2 cables each, the others off one management
///   spine `mgmt-spine` (only there when that half is non-empty) by 2 cables each, and the
///   management spine is cabled to `mgmt_cores` cores, one cable each: the first cores of
///   distinct core groups (core 0 of groups 0, 1, …, then core 1 of each group, …);
/// - `missing` leaf-spine or spine-core cables removed at random (seeded by `missing_seed`),
///   never disconnecting the switch graph and never taking a leaf's last uplink; removing one of
///   several parallel cables counts as one. Asking for more than can go that way is an error.
///
/// Switch order (GUIDs): SU by SU its leaves then its spines, then the cores group by group,
/// the management leaves, the management spine. HCA order: the compute HCAs (SU, node, rail),
/// the management HCAs, then the aggregation nodes in switch order.
///
/// Ports, in order of use: a leaf has its HCAs on `1..=nodes` (node `i` on port `i + 1`), then
/// its uplinks spine by spine; a spine has its leaves' cables leaf by leaf, then its cores'
/// (core by core), then (`su0-spine0` only) the management leaves'; a core has SU `u`'s cables
/// on `u * core_links + 1 ..`, then the management spine's cable if it has one; a management
/// leaf has its HCAs, then its 2 uplinks; the management spine its leaves' cables, then its
/// cores'. The aggregation node takes the port after all of these (on a QM8700 it is port 41,
/// behind the 40 external ports). Missing cables leave their ports empty; nothing is renumbered.
///
/// Port limit: every switch must fit in [`MAX_PORTS`] (or in `radix=` when given), counting the
/// aggregation node's port; the error names the switch level and the ports it needs (a leaf needs
/// `nodes + uplinks + 1`). The check does not assume the 40 ports of a QM8700: with the defaults
/// a leaf uses 41 ports (20 HCAs + 20 uplinks + the aggregation node), as on the real switch.
///
/// Hints: kind `superpod su=… nodes=… …` (every parameter), `level` cores 0, spines and the
/// management spine 1, leaves and management leaves 2 (`u32::MAX` for CAs), link classes `host`,
/// `leaf-spine`, `spine-core`, `mgmt` (the management leaves' uplinks and the management
/// spine's core cables), roots = the cores (not the management spine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuperPodSpec {
    pub su: u32,
    pub nodes: u32,
    pub rails: u32,
    pub spines: u32,
    pub uplinks: u32,
    /// `None`: `spines * ceil(su / 2)`, at least 1.
    pub cores: Option<u32>,
    pub core_links: u32,
    pub sharp: bool,
    pub mgmt: u32,
    pub mgmt_hcas: u32,
    pub mgmt_cores: u32,
    pub missing: u32,
    pub missing_seed: u64,
}

impl SuperPodSpec {
    /// `su` scalable units with every other parameter at its default.
    pub fn new(su: u32) -> SuperPodSpec {
        SuperPodSpec {
            su,
            nodes: 20,
            rails: 8,
            spines: 10,
            uplinks: 20,
            cores: None,
            core_links: 1,
            sharp: true,
            mgmt: 4,
            mgmt_hcas: 3,
            mgmt_cores: 2,
            missing: 0,
            missing_seed: 1,
        }
    }

    /// The number of cores: `cores`, or `spines * ceil(su / 2)` (at least 1).
    pub fn core_count(&self) -> u64 {
        match self.cores {
            Some(c) => c as u64,
            None => (self.spines as u64 * (self.su as u64).div_ceil(2)).max(1),
        }
    }
}

const LEAF_SPINE: u16 = 1;
const SPINE_CORE: u16 = 2;
const MGMT: u16 = 3;

/// Generates a SuperPOD-style fabric; see [`SuperPodSpec`].
pub fn superpod(spec: &SuperPodSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let s = *spec;
    let cores = s.core_count();
    let mut kind = format!(
        "superpod su={} nodes={} rails={} spines={} uplinks={} cores={cores} core-links={} sharp={} mgmt={} mgmt-hcas={} mgmt-cores={}",
        s.su, s.nodes, s.rails, s.spines, s.uplinks, s.core_links, s.sharp, s.mgmt, s.mgmt_hcas, s.mgmt_cores
    );
    if s.missing > 0 {
        kind.push_str(&format!(
            " missing={} missing-seed={}",
            s.missing, s.missing_seed
        ));
    }
    for (what, v) in [
        ("su (scalable units)", s.su),
        ("nodes (per scalable unit)", s.nodes),
        ("rails (HCAs per node, = leaves per scalable unit)", s.rails),
        ("spines (per scalable unit)", s.spines),
        ("core-links", s.core_links),
    ] {
        if v == 0 {
            return gerr(format!("{kind}: {what} must be at least 1"));
        }
    }
    if s.uplinks < s.spines {
        return gerr(format!(
            "{kind}: uplinks={} is below spines={}: every leaf needs a cable to every spine of its scalable unit",
            s.uplinks, s.spines
        ));
    }
    if cores < s.spines as u64 {
        return gerr(format!(
            "{kind}: cores={cores} is below spines={}: the cores form one core group per spine, each needs at least one core",
            s.spines
        ));
    }
    let mgmt_a = s.mgmt.div_ceil(2); // off su0-spine0
    let mgmt_b = s.mgmt - mgmt_a; // off the management spine
    let has_mspine = mgmt_b > 0;
    if has_mspine && (s.mgmt_cores == 0 || s.mgmt_cores as u64 > cores) {
        return gerr(format!(
            "{kind}: mgmt-cores={} must be between 1 and cores={cores} (the management spine is only reachable through its cores)",
            s.mgmt_cores
        ));
    }

    // Ports per switch level, before allocating anything.
    let an = s.sharp as u64;
    let (limit, limit_what) = match opts.radix {
        Some(r) => ((r as u32).min(MAX_PORTS) as u64, format!("radix={r}")),
        None => (
            MAX_PORTS as u64,
            format!("the {MAX_PORTS} ports a switch can have"),
        ),
    };
    let an_note = if s.sharp { " + 1 aggregation node" } else { "" };
    let per_spine_max = (s.uplinks as u64).div_ceil(s.spines as u64);
    let group_max = cores.div_ceil(s.spines as u64);
    let spine_need = s.rails as u64 * per_spine_max + group_max * s.core_links as u64 + an;
    let mut levels = vec![
        (
            "leaf switches need".to_string(),
            s.nodes as u64 + s.uplinks as u64 + an,
            format!("{} HCAs + {} uplinks{an_note}", s.nodes, s.uplinks),
        ),
        (
            "spine switches need".to_string(),
            spine_need,
            format!(
                "{} leaves x {per_spine_max} cables + {group_max} cores x {} cables{an_note}",
                s.rails, s.core_links
            ),
        ),
        (
            "core switches need".to_string(),
            s.su as u64 * s.core_links as u64 + has_mspine as u64 + an,
            format!(
                "{} scalable units x {} cables{}{an_note}",
                s.su,
                s.core_links,
                if has_mspine {
                    " + 1 management spine"
                } else {
                    ""
                }
            ),
        ),
    ];
    if mgmt_a > 0 {
        levels.push((
            "su0-spine0 (the spine with the management leaves) needs".to_string(),
            spine_need + 2 * mgmt_a as u64,
            format!("a spine's ports + {mgmt_a} management leaves x 2 cables"),
        ));
    }
    if s.mgmt > 0 {
        levels.push((
            "management leaf switches need".to_string(),
            s.mgmt_hcas as u64 + 2 + an,
            format!("{} HCAs + 2 uplinks{an_note}", s.mgmt_hcas),
        ));
    }
    if has_mspine {
        levels.push((
            "the management spine needs".to_string(),
            2 * mgmt_b as u64 + s.mgmt_cores as u64 + an,
            format!(
                "{mgmt_b} management leaves x 2 cables + {} cores{an_note}",
                s.mgmt_cores
            ),
        ));
    }
    for (what, need, detail) in &levels {
        if *need > limit {
            return gerr(format!(
                "{kind}: {what} {need} ports ({detail}), more than {limit_what}"
            ));
        }
    }

    // Sizes (checked) and the LID budget.
    let per_su = s.rails as u64 + s.spines as u64;
    let nsw = mul(s.su as u64, per_su, &kind)? + cores + s.mgmt as u64 + has_mspine as u64;
    let compute = mul(
        mul(s.su as u64, s.nodes as u64, &kind)?,
        s.rails as u64,
        &kind,
    )?;
    let nhca = compute + mul(s.mgmt as u64, s.mgmt_hcas as u64, &kind)? + an * nsw;
    check_size(&kind, nsw, nhca, opts)?;
    // From here on every count fits the LID space, so u32 indices are safe.

    let mut plan = Plan::new(kind, &["leaf-spine", "spine-core", "mgmt"]);
    let (su, rails, spines, cores) = (s.su, s.rails, s.spines, cores as u32);
    let per_su = per_su as u32;
    let leaf = |u: u32, r: u32| u * per_su + r;
    let spine = |u: u32, j: u32| u * per_su + rails + j;
    let core_base = su * per_su;
    let (gq, gr) = (cores / spines, cores % spines);
    let group_size = |g: u32| gq + u32::from(g < gr);
    let core = |g: u32, i: u32| core_base + g * gq + g.min(gr) + i;
    let mleaf = |k: u32| core_base + cores + k;
    let mspine = core_base + cores + s.mgmt;

    for u in 0..su {
        for r in 0..rails {
            plan.add_switch(format!("su{u}-leaf{r}"));
            plan.sw_level.push(2);
        }
        for j in 0..spines {
            plan.add_switch(format!("su{u}-spine{j}"));
            plan.sw_level.push(1);
        }
    }
    for g in 0..spines {
        for i in 0..group_size(g) {
            plan.add_switch(format!("core{g}-{i}"));
            plan.sw_level.push(0);
        }
    }
    for k in 0..s.mgmt {
        plan.add_switch(format!("mgmt-leaf{k}"));
        plan.sw_level.push(2);
    }
    if has_mspine {
        plan.add_switch("mgmt-spine".to_string());
        plan.sw_level.push(1);
    }

    // Compute HCAs: ports 1..=nodes of every leaf.
    for u in 0..su {
        for i in 0..s.nodes {
            for r in 0..rails {
                plan.add_hca_auto(format!("dgx-su{u}-n{i} HCA-{r}"), leaf(u, r));
            }
        }
    }
    // Leaf-spine cables.
    let (uq, ur) = (s.uplinks / spines, s.uplinks % spines);
    for u in 0..su {
        for r in 0..rails {
            for j in 0..spines {
                for _ in 0..uq + u32::from(j < ur) {
                    plan.link_auto(leaf(u, r), spine(u, j), LEAF_SPINE);
                }
            }
        }
    }
    // Spine-core cables.
    for u in 0..su {
        for j in 0..spines {
            for i in 0..group_size(j) {
                for _ in 0..s.core_links {
                    plan.link_auto(spine(u, j), core(j, i), SPINE_CORE);
                }
            }
        }
    }
    // The management network.
    for k in 0..s.mgmt {
        for i in 0..s.mgmt_hcas {
            plan.add_hca_auto(format!("mgmt-{k} HCA-{i}"), mleaf(k));
        }
        let up = if k < mgmt_a { spine(0, 0) } else { mspine };
        for _ in 0..2 {
            plan.link_auto(mleaf(k), up, MGMT);
        }
    }
    if has_mspine {
        let mut chosen = Vec::new();
        let mut i = 0;
        while chosen.len() < s.mgmt_cores as usize {
            for g in 0..spines {
                if i < group_size(g) && chosen.len() < s.mgmt_cores as usize {
                    chosen.push(core(g, i));
                }
            }
            i += 1;
        }
        for c in chosen {
            plan.link_auto(mspine, c, MGMT);
        }
    }
    if s.missing > 0 {
        remove_cables(&mut plan, s.missing, s.missing_seed)?;
    }
    // Aggregation nodes: the port after each switch's cables.
    if s.sharp {
        for sw in 0..plan.sw_names.len() as u32 {
            let name = format!("{} Aggregation Node", plan.sw_names[sw as usize]);
            plan.add_hca_desc_auto(name, AGGREGATION_NODE_DESC, sw);
        }
    }
    plan.roots = (0..cores).map(|c| core_base + c).collect();
    plan.finish(opts)
}

/// Removes `k` random leaf-spine or spine-core cables from `plan`, keeping the switch graph
/// connected and every leaf with an uplink. Candidates are tried once each in a seeded random
/// order; a cable is skipped when removing it would break either rule. The cables that may go
/// together form a matroid (the complements of connected spanning subgraphs, with the other
/// cables fixed), so this greedy pass removes as many as any choice could: when it falls short,
/// `k` is impossible.
fn remove_cables(plan: &mut Plan, k: u32, seed: u64) -> Result<(), GenError> {
    let ns = plan.sw_names.len();
    let cand: Vec<usize> = (0..plan.links.len())
        .filter(|&i| matches!(plan.links[i].4, LEAF_SPINE | SPINE_CORE))
        .collect();
    if k as usize > cand.len() {
        return gerr(format!(
            "{}: missing={k}, but there are only {} leaf-spine and spine-core cables",
            plan.kind,
            cand.len()
        ));
    }
    let mut adj: Vec<Vec<(usize, u32)>> = vec![Vec::new(); ns];
    let mut pair: HashMap<(u32, u32), u32> = HashMap::new();
    // Leaf-spine cables are planned leaf first.
    let mut uplinks = vec![0u32; ns];
    for (i, &(a, _, b, _, c)) in plan.links.iter().enumerate() {
        adj[a as usize].push((i, b));
        adj[b as usize].push((i, a));
        *pair.entry((a.min(b), a.max(b))).or_default() += 1;
        if c == LEAF_SPINE {
            uplinks[a as usize] += 1;
        }
    }
    let mut dead = vec![false; plan.links.len()];
    let connected = |dead: &[bool]| -> bool {
        let mut seen = vec![false; ns];
        seen[0] = true;
        let mut stack = vec![0u32];
        let mut count = 1;
        while let Some(x) = stack.pop() {
            for &(l, y) in &adj[x as usize] {
                if !dead[l] && !seen[y as usize] {
                    seen[y as usize] = true;
                    count += 1;
                    stack.push(y);
                }
            }
        }
        count == ns
    };
    let mut order = cand.clone();
    Rng::new(seed).shuffle(&mut order);
    let mut removed = 0u32;
    for l in order {
        if removed == k {
            break;
        }
        let (a, _, b, _, c) = plan.links[l];
        if c == LEAF_SPINE && uplinks[a as usize] <= 1 {
            continue;
        }
        let key = (a.min(b), a.max(b));
        let parallel = pair[&key] > 1;
        dead[l] = true;
        if parallel || connected(&dead) {
            *pair.get_mut(&key).unwrap() -= 1;
            if c == LEAF_SPINE {
                uplinks[a as usize] -= 1;
            }
            removed += 1;
        } else {
            dead[l] = false;
        }
    }
    if removed < k {
        return gerr(format!(
            "{}: missing={k} cannot be removed: at most {removed} of the {} leaf-spine and spine-core cables can go without disconnecting the switches or leaving a leaf without an uplink",
            plan.kind,
            cand.len()
        ));
    }
    let mut i = 0;
    plan.links.retain(|_| {
        i += 1;
        !dead[i - 1]
    });
    Ok(())
}
