//! RFTR correctness: after every fault, every pair RFTR claims is routed reaches its
//! destination through the tables; the channel dependency graph over (channel, VL) of the
//! union of the surviving old paths and the new paths is acyclic; unsupported pairs are exactly
//! those reported. Checked from the tables alone, independently of RFTR's own path store.

use fabric::SwitchIdx;

use fabric::gen::{generate, TopoSpec};
use fabric::{ChannelId, Fabric, FaultMask, Lid, NodeId, NO_PORT};
use proptest::prelude::*;
use routing::engines::{by_name, Dir, RouteOptions, UpDownRanking};
use routing::fault::{CheckMode, Fault, Rftr, RftrConfig, UpDownRule};
use routing::{PathSl, Routing};

use crate::common;
use common::{random_faults, switch_links};

fn fabric(spec: &str) -> Fabric {
    generate(&spec.parse::<TopoSpec>().unwrap()).unwrap()
}

fn start(f: &Fabric, vls: u8) -> Rftr<'_> {
    start_cfg(
        f,
        RftrConfig {
            vls,
            ..Default::default()
        },
    )
}

/// updn options with the roots updn picks for `f` pinned, computed once per fabric: picking
/// routes several candidate root sets, and the tests start RFTR hundreds of times.
fn pinned_opts(f: &Fabric) -> RouteOptions {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<(usize, usize, u64), RouteOptions>> =
            RefCell::new(HashMap::new());
    }
    // Key: sizes and a hash of the wiring.
    let key = (
        f.num_switches(),
        f.links.len(),
        f.links.iter().fold(0u64, |h, l| {
            (h ^ (l.a.0 as u64) << 32 ^ l.b.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        }),
    );
    CACHE.with(|c| {
        c.borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                by_name("updn")
                    .unwrap()
                    .pin_choices(f, &RouteOptions::default())
                    .unwrap()
            })
            .clone()
    })
}

fn start_cfg(f: &Fabric, cfg: RftrConfig) -> Rftr<'_> {
    let mask = FaultMask::none(f);
    let opts = pinned_opts(f);
    let base = by_name("updn").unwrap().route(f, &mask, &opts).unwrap();
    let (rk, _) = UpDownRanking::for_updn(f, &mask, &opts).unwrap();
    let rule = UpDownRule::from_fn(f, |c| rk.channel_dir(f, c) == Dir::Up);
    Rftr::new(f, &base, std::sync::Arc::new(rule), cfg).unwrap()
}

/// Walks (src end → dlid) through the tables; returns the inter-switch hops with their VLs,
/// stopping at the first dead channel (`complete` = reached the destination end port).
struct Walk {
    hops: Vec<(ChannelId, u8)>,
    complete: bool,
}

fn walk(f: &Fabric, r: &Routing, mask: &FaultMask, src: usize, dst: usize, dlid: Lid) -> Walk {
    let sp = f.end_ports[src];
    let target = f.end_ports[dst];
    let sl = r.path_sl.get(src, dlid);
    let mut hops = Vec::new();
    let first = f.attached_switch(sp).unwrap();
    let mut node = f.port(first).node;
    let mut inp = f.port(first).num;
    for _ in 0..=f.num_switches() {
        let s = f.switch_of(node).unwrap().idx();
        let out = r.out_port(SwitchIdx(s as u32), dlid);
        if out == NO_PORT || out == 0 {
            return Walk {
                hops,
                complete: false,
            };
        }
        let Some(c) = f.out_channel(f.port_id(node, out)) else {
            return Walk {
                hops,
                complete: false,
            };
        };
        if !mask.channel_alive(f, c) {
            return Walk {
                hops,
                complete: false,
            };
        }
        let far = f.channel_dst(c);
        if far == target {
            return Walk {
                hops,
                complete: true,
            };
        }
        let nn = f.port(far).node;
        if !f.is_switch(nn) {
            return Walk {
                hops,
                complete: false,
            };
        }
        hops.push((c, r.sl2vl.vl(node, inp, out, sl)));
        node = nn;
        inp = f.port(far).num;
    }
    Walk {
        hops,
        complete: false,
    }
}

/// True when the dependency graph of these (channel, VL) sequences has no cycle (Kahn).
fn acyclic(num_channels: usize, seqs: &[Vec<(ChannelId, u8)>]) -> bool {
    let v = |c: ChannelId, vl: u8| c.idx() * 16 + vl as usize;
    let n = num_channels * 16;
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for s in seqs {
        for w in s.windows(2) {
            edges.push((v(w[0].0, w[0].1) as u32, v(w[1].0, w[1].1) as u32));
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let mut indeg = vec![0u32; n];
    let mut start = vec![0usize; n + 1];
    for &(a, b) in &edges {
        indeg[b as usize] += 1;
        start[a as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut stack: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut seen = 0;
    while let Some(x) = stack.pop() {
        seen += 1;
        for &(_, b) in &edges[start[x]..start[x + 1]] {
            indeg[b as usize] -= 1;
            if indeg[b as usize] == 0 {
                stack.push(b as usize);
            }
        }
    }
    seen == n
}

/// Per switch index, the switches it reaches over live links (breadth first from each).
fn live_reach(f: &Fabric, mask: &FaultMask) -> Vec<fixedbitset::FixedBitSet> {
    let ns = f.num_switches();
    let mut adj = vec![Vec::new(); ns];
    for c in 0..f.links.len() as u32 * 2 {
        let c = ChannelId(c);
        if let (Some(a), Some(b)) = (f.src_switch(c), f.dst_switch(c)) {
            if mask.channel_alive(f, c) {
                adj[a.idx()].push(b.idx());
            }
        }
    }
    (0..ns)
        .map(|s| {
            let mut seen = fixedbitset::FixedBitSet::with_capacity(ns);
            if !mask.node_dead(f.switches[s]) {
                let mut q = vec![s];
                seen.insert(s);
                while let Some(x) = q.pop() {
                    for &y in &adj[x] {
                        if !seen.put(y) {
                            q.push(y);
                        }
                    }
                }
            }
            seen
        })
        .collect()
}

/// Selected walks of every routed pair under `mask`.
fn selected_walks(r: &Rftr<'_>, mask: &FaultMask) -> Vec<(u32, u32, Walk)> {
    r.selected_pairs()
        .into_iter()
        .map(|(s, d, l)| {
            (
                s,
                d,
                walk(r.fabric(), &r.routing, mask, s as usize, d as usize, l),
            )
        })
        .collect()
}

/// Applies `faults` one after another and checks the invariants after each.
fn run_and_check(f: &Fabric, faults: &[Fault], vls: u8) -> (bool, u8) {
    run_and_check_cfg(
        f,
        faults,
        RftrConfig {
            vls,
            ..Default::default()
        },
    )
}

fn run_and_check_cfg(f: &Fabric, faults: &[Fault], cfg: RftrConfig) -> (bool, u8) {
    let (ok, r) = run_and_check_state(f, faults, cfg);
    (ok, r.sls_used())
}

/// [`run_and_check_cfg`], returning the state after the last fault.
fn run_and_check_state<'f>(f: &'f Fabric, faults: &[Fault], cfg: RftrConfig) -> (bool, Rftr<'f>) {
    run_and_check_from(f, start_cfg(f, cfg), faults, cfg.vls)
}

/// Applies `faults` to a started RFTR state and checks every invariant after each (see
/// [`run_and_check_cfg`]) with this file's own walker; VLs must stay below `vls`.
fn run_and_check_from<'f>(
    f: &'f Fabric,
    mut r: Rftr<'f>,
    faults: &[Fault],
    vls: u8,
) -> (bool, Rftr<'f>) {
    let mut all_supported = true;
    for &fault in faults {
        let before = selected_walks(&r, &r.mask.clone());
        let report = r.apply(fault);
        let mask = r.mask.clone();
        let after = selected_walks(&r, &mask);
        // Every pair RFTR selects reaches its destination; VLs stay within budget.
        for (s, d, w) in &after {
            assert!(w.complete, "pair {s}->{d} selected but does not arrive");
            assert!(w.hops.iter().all(|&(_, vl)| vl < vls));
        }
        // Unsupported pairs are exactly the routed-before pairs that lost their path.
        let routed: std::collections::HashSet<(u32, u32)> =
            after.iter().map(|(s, d, _)| (*s, *d)).collect();
        for &(s, d) in &report.unsupported {
            assert!(
                !routed.contains(&(s, d)),
                "{s}->{d} reported unsupported but routed"
            );
        }
        let lost = before
            .iter()
            .filter(|(s, d, _)| !routed.contains(&(*s, *d)))
            .filter(|(s, d, _)| {
                // Not dropped with a failed switch.
                let sw = |e: u32| {
                    f.port(f.attached_switch(f.end_ports[e as usize]).unwrap())
                        .node
                };
                !mask.node_dead(sw(*s)) && !mask.node_dead(sw(*d))
            })
            .count() as u64;
        assert_eq!(lost, report.unsupported_pairs, "unsupported count");
        // The pairs reported cut off are exactly the unsupported ones that no live path joins.
        let reach = live_reach(f, &mask);
        let sw = |e: u32| {
            let n = f
                .port(f.attached_switch(f.end_ports[e as usize]).unwrap())
                .node;
            f.switch_of(n).unwrap().idx()
        };
        let cut = report
            .unsupported
            .iter()
            .filter(|&&(s, d)| !reach[sw(s)].contains(sw(d)))
            .count() as u64;
        assert_eq!(cut, report.disconnected_pairs, "pairs cut off");
        assert_eq!(report.unsupported.len() as u64, report.unsupported_pairs);
        if report.unsupported_pairs > 0 {
            all_supported = false;
        }
        // Union of surviving old paths (up to the fault) and new ones is acyclic.
        let mut seqs: Vec<Vec<(ChannelId, u8)>> = Vec::new();
        for (_, _, w) in &before {
            let live: Vec<_> = w
                .hops
                .iter()
                .copied()
                .take_while(|&(c, _)| mask.channel_alive(f, c))
                .collect();
            seqs.push(live);
        }
        seqs.extend(after.into_iter().map(|(_, _, w)| w.hops));
        assert!(
            acyclic(f.links.len() * 2, &seqs),
            "CDG of the union has a cycle"
        );
        assert!(r.routing.validate(f).is_ok());
    }
    (all_supported, r)
}

/// RFTR over engine `name`'s tables for `f` (the engine's choices pinned; over a base that
/// keeps its own VLs the engine routes within `vls - 2` of the `vls` VLs), and whether the
/// base keeps its own VLs. `None` when the engine declines the fabric.
fn start_engine<'f>(f: &'f Fabric, name: &str, vls: u8) -> Option<(Rftr<'f>, bool)> {
    start_engine_with(f, name, vls, 2)
}

/// [`start_engine`] with `repair` VLs of the `vls` left to RFTR over a base that keeps its
/// own (`fault --repair-vls`).
fn start_engine_with<'f>(
    f: &'f Fabric,
    name: &str,
    vls: u8,
    repair: u8,
) -> Option<(Rftr<'f>, bool)> {
    let e = by_name(name).unwrap();
    let mut opts = e.pin_choices(f, &RouteOptions::default()).ok()?;
    if matches!(e.rftr_base(f, &opts).ok()?, routing::turn::Base::FreshVls) {
        opts.budget.vls = vls - repair;
    }
    let base = e.route(f, &FaultMask::none(f), &opts).ok()?;
    let how = e.rftr_base(f, &opts).ok()?;
    let fresh = matches!(how, routing::turn::Base::FreshVls);
    let cfg = RftrConfig {
        vls,
        ..Default::default()
    };
    Some((Rftr::new(f, &base, how, cfg).ok()?, fresh))
}

/// What `fault` writes for checkers: RFTR's tables with unused virtual LIDs mirrored and the
/// pairs no source uses completed. `cdg::check` over every (source, LID) finds no credit
/// loop, and every pair delivered unless the completion counted pairs it could not cover;
/// the pairs in use walk the same hops on the same VLs as before.
fn assert_completion_for_checkers(
    f: &Fabric,
    r: &Rftr<'_>,
    what: &str,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let before = selected_walks(r, &r.mask.clone());
    let mut t = r.routing.clone();
    t.mirror_unrouted_lmc_lids(f);
    let c = r.complete_for_checkers(&mut t);
    prop_assert!(c.applied);
    // what `fault` and the live SM program is the same when every joinable pair is repaired
    if r.unrepaired_joinable() == 0 {
        let p = r.programmed(true);
        prop_assert_eq!(p.completion, c);
        prop_assert!(p.tables.lft == t.lft && p.tables.path_sl == t.path_sl);
    } else {
        // pairs left unrepaired: no route added, and still no credit loop over every
        // (source, LID); the pairs in use walk as before
        let p = r.programmed(true);
        prop_assert!(p.completion.applied && !p.completion.routes_added);
        let rep = routing::cdg::check(f, &p.tables, Some(&r.mask));
        prop_assert!(
            rep.deadlock_free,
            "{what}: credit loops in what is programmed with pairs unrepaired ({:?}): {:?}",
            p.completion,
            rep.cycles.first().map(|x| &x.witness[0])
        );
        prop_assert!(
            rep.pairs.ok < rep.pairs.checked,
            "{what}: unrepaired pairs delivered"
        );
        for (s, d, w) in &before {
            let dlid = r.dlid(*s, *d).unwrap();
            let w2 = walk(f, &p.tables, &r.mask, *s as usize, *d as usize, dlid);
            prop_assert!(w2.complete);
            prop_assert_eq!(&w2.hops, &w.hops);
        }
    }
    let rep = routing::cdg::check(f, &t, Some(&r.mask));
    prop_assert!(
        rep.deadlock_free,
        "{what}: credit loops after completion ({:?}): {:?}",
        c,
        rep.cycles.first().map(|x| &x.witness[0])
    );
    if c.uncovered == 0 {
        prop_assert_eq!(rep.pairs.ok, rep.pairs.checked, "{}: {:?}", what, c);
    }
    for (s, d, w) in &before {
        let dlid = r.dlid(*s, *d).unwrap();
        let w2 = walk(f, &t, &r.mask, *s as usize, *d as usize, dlid);
        prop_assert!(w2.complete);
        prop_assert_eq!(&w2.hops, &w.hops);
    }
    Ok(())
}

#[test]
fn every_single_link_fault_on_tori_is_supported() {
    for spec in [
        "torus 4x4 hcas=2 lmc=2",
        "torus 8x8 hcas=2 lmc=2",
        "torus 4x4x4 hcas=2 lmc=2",
    ] {
        let f = fabric(spec);
        for l in switch_links(&f) {
            let (ok, _) = run_and_check(&f, &[Fault::Link(l)], 2);
            assert!(ok, "{spec}: link {l:?} fault not supported");
        }
    }
}

/// Where the walk from live switch `s` toward switch `t`'s LID ends: `Some(true)` at `t`,
/// `Some(false)` at a switch without an entry, `None` on a dead or missing cable, a loop,
/// or anything else.
fn switch_lid_walk(f: &Fabric, r: &Routing, mask: &FaultMask, s: usize, t: usize) -> Option<bool> {
    let lid = f.switch_lid(f.switches[t]);
    let mut cur = s;
    for _ in 0..=f.num_switches() {
        if cur == t {
            return Some(true);
        }
        let port = r.lft_of(SwitchIdx(cur as u32))[lid as usize];
        if port == NO_PORT {
            return Some(false);
        }
        let p = f.port_id(f.switches[cur], port);
        let l = f.port(p).link?;
        if mask.link_dead(l) {
            return None;
        }
        let rn = f.port(f.remote(p)?).node;
        if !f.is_switch(rn) || mask.node_dead(rn) {
            return None;
        }
        cur = f.switch_of(rn).unwrap().idx();
    }
    None
}

/// After a single cable between switches fails, what RFTR programs takes every live switch
/// to every live switch's LID (management traffic: `perfquery`, `ibroute`) when RFTR
/// repaired every pair; and in any case no walk toward a switch LID ends on a dead cable or
/// loops (a switch with no way has no entry). Up*/down* tori and fat trees, LMC 0 and 2.
#[test]
fn routes_to_switch_lids_survive_every_single_link_fault() {
    let mut repaired_faults = 0;
    for spec in [
        "torus 4x4 hcas=2",
        "torus 4x4 hcas=2 lmc=2",
        "ktree 4 3",
        "torus 4x4x2 hcas=1",
    ] {
        let f = fabric(spec);
        let ns = f.num_switches();
        for l in switch_links(&f) {
            let mut r = start(&f, 2);
            r.apply(Fault::Link(l));
            let p = r.programmed(true);
            let all_repaired = r.unrepaired_joinable() == 0;
            repaired_faults += usize::from(all_repaired);
            for s in 0..ns {
                for t in 0..ns {
                    let w = switch_lid_walk(&f, &p.tables, &r.mask, s, t);
                    assert!(
                        w == Some(true) || (w == Some(false) && !all_repaired),
                        "{spec}: link {l:?}: switch {s} toward switch {t}'s LID: {w:?} ({:?})",
                        p.completion
                    );
                }
            }
        }
    }
    assert!(repaired_faults > 50, "{repaired_faults}");
}

/// True when the base-LID walk from switch `s` toward end `e` reaches it over live channels.
fn base_walk_alive(f: &Fabric, r: &Routing, mask: &FaultMask, s: usize, e: usize) -> bool {
    let lid = f.port(f.end_ports[e]).lid;
    let target = f.end_ports[e];
    let mut node = f.switches[s];
    for _ in 0..=f.num_switches() {
        let si = f.switch_of(node).unwrap().idx();
        let out = r.out_port(SwitchIdx(si as u32), lid);
        if out == NO_PORT || out == 0 || out > f.node(node).nports {
            return false;
        }
        let Some(c) = f.out_channel(f.port_id(node, out)) else {
            return false;
        };
        if !mask.channel_alive(f, c) {
            return false;
        }
        if f.channel_dst(c) == target {
            return true;
        }
        node = f.port(f.channel_dst(c)).node;
        if !f.is_switch(node) {
            return false;
        }
    }
    false
}

#[test]
fn repair_touches_few_entries_and_keeps_other_paths() {
    let f = fabric("torus 8x8 hcas=2 lmc=2");
    for (reuse, prefer) in [(true, true), (true, false), (false, false)] {
        let mut r = start_cfg(
            &f,
            RftrConfig {
                reuse_dead_base: reuse,
                prefer_base_lid: prefer,
                ..Default::default()
            },
        );
        let before = r.routing.clone();
        let l = switch_links(&f)[5];
        let rep = r.apply(Fault::Link(l));
        assert!(rep.affected_pairs > 0);
        assert_eq!(rep.repaired_pairs, rep.affected_pairs);
        // Base-LID entries change only where the base walk was broken by the fault (and,
        // with `reuse_dead_base` off, nowhere): traffic that still arrives keeps its tables.
        let mut mask = FaultMask::none(&f);
        mask.fail_link(l);
        let mut changed = 0;
        for (e, &p) in f.end_ports.iter().enumerate() {
            let lid = f.port(p).lid;
            for s in 0..f.num_switches() {
                if before.out_port(SwitchIdx(s as u32), lid)
                    != r.routing.out_port(SwitchIdx(s as u32), lid)
                {
                    changed += 1;
                    assert!(reuse, "base LID {lid} changed at switch {s} with reuse off");
                    assert!(
                        !base_walk_alive(&f, &before, &mask, s, e),
                        "switch {s}: live base-LID entry for {lid} rewritten"
                    );
                }
            }
        }
        assert_eq!(
            changed > 0,
            reuse,
            "reuse {reuse}: {changed} base entries changed"
        );
        let counts = r.delta.counts();
        assert!(counts.lft_entries > 0);
        assert!(counts.lft_entries < f.num_switches() * f.end_ports.len());
        assert!(matches!(r.routing.path_sl, PathSl::PerPair { .. }));
    }
}

#[test]
fn switch_failure_drops_its_end_ports_and_repairs_the_rest() {
    let f = fabric("torus 4x4 hcas=2 lmc=2");
    let n = f.switches[5];
    let (ok, _) = run_and_check(&f, &[Fault::Switch(n)], 2);
    assert!(ok);
    let mut r = start(&f, 2);
    let rep = r.apply(Fault::Switch(n));
    assert_eq!(rep.dropped_pairs, 2);
    let total = f.end_ports.len() as u64 - 2;
    assert_eq!(r.routed_pairs(), total * (total - 1));
}

#[test]
fn one_vl_means_no_transitions() {
    let f = fabric("torus 4x4 hcas=2 lmc=2");
    let mut r = start(&f, 1);
    for l in switch_links(&f).into_iter().take(3) {
        let rep = r.apply(Fault::Link(l));
        assert_eq!(rep.max_transitions, 0);
    }
    assert_eq!(r.sls_used(), 1);
}

#[test]
fn lmc_zero_repairs_only_on_dead_base_entries() {
    // Without virtual LIDs the paper's RFTR has nowhere to put new paths; reusing dead
    // base-LID entries still repairs the pairs that need no VL transition.
    let f = fabric("torus 4x4 hcas=2");
    let l = switch_links(&f)[0];
    let mut strict = start_cfg(
        &f,
        RftrConfig {
            reuse_dead_base: false,
            ..Default::default()
        },
    );
    let rep = strict.apply(Fault::Link(l));
    assert!(rep.affected_pairs > 0);
    assert_eq!(rep.repaired_pairs, 0);
    assert_eq!(rep.unsupported_pairs, rep.affected_pairs);
    // The table-level invariants (arrival, exact unsupported set, acyclic union) hold too.
    let _ = run_and_check(&f, &[Fault::Link(l)], 2);
    let mut r = start(&f, 2);
    let rep = r.apply(Fault::Link(l));
    assert!(rep.repaired_pairs > 0);
    assert_eq!(
        rep.repaired_pairs + rep.unsupported_pairs,
        rep.affected_pairs
    );
    assert_eq!(
        rep.transition_paths, 0,
        "a transition needs an SL and a virtual LID"
    );
    assert_eq!(r.max_virtual_lids(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn random_fault_sequences_keep_invariants(
        kind in 0usize..3,
        seed in 0u64..1000,
        nfaults in 1usize..5,
        with_switch in any::<bool>(),
        reuse_dead_base in any::<bool>(),
        prefer_base_lid in any::<bool>(),
    ) {
        let spec = match kind {
            0 => "torus 4x4 hcas=2 lmc=3".to_string(),
            1 => format!("randreg 12 4 hcas=2 lmc=3 seed={seed}"),
            _ => "mesh 3x4 hcas=1 lmc=3".to_string(),
        };
        let f = fabric(&spec);
        let faults = random_faults(&f, seed, nfaults, with_switch);
        let cfg = RftrConfig { vls: 2, reuse_dead_base, prefer_base_lid, ..Default::default() };
        run_and_check_cfg(&f, &faults, cfg);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]
    /// RFTR over the VL engines' tables, nue and torus-2QoS included (their VLs and SLs kept,
    /// repaired paths on the VLs above): every invariant after every fault, with the walker of this file (every
    /// selected pair arrives, VLs within the budget, the union of the surviving old walks and
    /// the new ones acyclic over (channel, VL)), and the verifier agrees.
    #[test]
    fn random_faults_on_vl_engine_bases(
        kind in 0usize..4,
        engine in 0usize..5,
        seed in 0u64..1000,
        nfaults in 1usize..4,
        with_switch in any::<bool>(),
    ) {
        let spec = match kind {
            0 => "torus 4x4 hcas=2 lmc=3".to_string(),
            1 => "dragonfly 4 2 2 lmc=3".to_string(),
            2 => "slimfly 5 hosts=2 lmc=3".to_string(),
            _ => format!("randreg 12 4 hcas=2 lmc=3 seed={seed}"),
        };
        let name = ["dfsssp", "lash", "hopvl", "nue", "torus-2QoS"][engine];
        let f = fabric(&spec);
        let vls = 8u8;
        // the engine may decline (VLs): nothing to repair then
        let Some((r, fresh)) = start_engine(&f, name, vls) else {
            return Ok(());
        };
        prop_assert!(fresh);
        let faults = random_faults(&f, seed, nfaults, with_switch);
        let (_, r) = run_and_check_from(&f, r, &faults, vls);
        let chk = routing::fault::verify::check_state(&r, None);
        prop_assert!(chk.deadlock_free && chk.undelivered == 0, "{} on {}: {:?}", name, spec, chk);
        prop_assert!(chk.vls_used <= vls);
    }
}

#[test]
fn transitions_happen_and_are_needed() {
    // Some single faults on a torus need a VL transition; with 1 VL the same faults leave
    // pairs unsupported. This shows the VL machinery is exercised, not bypassed.
    let f = fabric("torus 8x8 hcas=2 lmc=2");
    let mut with_transition = 0;
    let mut unsupported_with_one_vl = 0;
    for l in switch_links(&f) {
        let mut r2 = start(&f, 2);
        let rep2 = r2.apply(Fault::Link(l));
        if rep2.transition_paths > 0 {
            with_transition += 1;
        }
        let mut r1 = start(&f, 1);
        let rep1 = r1.apply(Fault::Link(l));
        if rep1.unsupported_pairs > 0 {
            unsupported_with_one_vl += 1;
        }
    }
    eprintln!("faults needing transitions: {with_transition}, unsupported with 1 VL: {unsupported_with_one_vl}");
    assert!(with_transition > 0);
    assert!(unsupported_with_one_vl > 0);
}

mod sweeps {
    use super::*;
    use routing::fault::sweep::{self, Scenarios, SweepContext, SweepSpec};

    fn ctx<'f>(f: &'f Fabric, engine: &'f dyn routing::engines::Engine) -> SweepContext<'f> {
        ctx_checked(f, engine, CheckMode::Full)
    }

    fn ctx_checked<'f>(
        f: &'f Fabric,
        engine: &'f dyn routing::engines::Engine,
        mode: CheckMode,
    ) -> SweepContext<'f> {
        let opts = RouteOptions::default();
        let base = engine.route(f, &FaultMask::none(f), &opts).unwrap();
        let rule = routing::fault::base_rule(f, engine, &opts).unwrap();
        SweepContext::new(
            f,
            Rftr::new(f, &base, rule, RftrConfig::default()).unwrap(),
            base,
            engine,
            opts,
            mode,
        )
    }

    /// The incremental check (a tracker started once, copied per scenario and per shared
    /// prefix) gives every scenario the verdict the full check of each migration union
    /// gives, with and without shared prefixes, including scenarios that lose pairs.
    #[test]
    fn incremental_checks_give_the_full_checks_verdicts() {
        for (spec_text, faults, scenarios) in [
            ("torus 3x3 hcas=2 lmc=2", 3, Scenarios::Exhaustive),
            (
                "torus 4x4 hcas=2 lmc=1",
                5,
                Scenarios::Samples { count: 40, seed: 7 },
            ),
            (
                "torus 4x4 hcas=1 lmc=0",
                6,
                Scenarios::Samples { count: 40, seed: 3 },
            ),
        ] {
            let f = fabric(spec_text);
            let e = by_name("updn").unwrap();
            let (full, inc) = (
                ctx(&f, e.as_ref()),
                ctx_checked(&f, e.as_ref(), CheckMode::Incremental),
            );
            let spec = SweepSpec {
                faults,
                scenarios,
                shard: (0, 1),
                full: false,
            };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let p = sweep::run(&full, &spec, |r| a.push(r.clone()), |_| {});
            sweep::run(&inc, &spec, |r| b.push(r.clone()), |_| {});
            assert!(!a.is_empty(), "{spec_text}");
            assert_eq!(a, b, "{spec_text}");
            if spec_text.ends_with("lmc=0") {
                assert!(
                    a.iter().any(|r| !r.supported),
                    "{spec_text}: some scenario loses pairs, and both checks say so"
                );
            }
            let links = sweep::switch_links(&f);
            let mut alone = Vec::new();
            for id in 0..p.total {
                let fs = sweep::scenario_faults(&f, &links, &spec, id);
                alone.extend(sweep::evaluate(&inc, id, &fs, false));
            }
            assert_eq!(b, alone, "{spec_text}: shared prefixes under the tracker");
        }
        // A start state that drops some pairs (one destination's own switch sends its base
        // LID nowhere): both checks find it in every scenario that keeps the entry.
        let f = fabric("torus 4x4 hcas=2 lmc=1");
        let e = by_name("updn").unwrap();
        let opts = RouteOptions::default();
        let base = e.route(&f, &FaultMask::none(&f), &opts).unwrap();
        let dst = f.end_ports[5];
        let s = f
            .switch_of(f.port(f.remote(dst).unwrap()).node)
            .unwrap()
            .idx();
        let broken = |mode| {
            let rule = routing::fault::base_rule(&f, e.as_ref(), &opts).unwrap();
            let mut r = Rftr::new(&f, &base, rule, RftrConfig::default()).unwrap();
            r.routing.lft_of_mut(SwitchIdx(s as u32))[f.port(dst).lid as usize] = NO_PORT;
            SweepContext::new(&f, r, base.clone(), e.as_ref(), opts.clone(), mode)
        };
        let spec = SweepSpec {
            faults: 2,
            scenarios: Scenarios::Samples { count: 12, seed: 2 },
            shard: (0, 1),
            full: false,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        sweep::run(
            &broken(CheckMode::Full),
            &spec,
            |r| a.push(r.clone()),
            |_| {},
        );
        sweep::run(
            &broken(CheckMode::Incremental),
            &spec,
            |r| b.push(r.clone()),
            |_| {},
        );
        assert_eq!(a, b);
        assert!(
            a.iter().any(|r| !r.supported),
            "the dropped pairs are found"
        );
    }

    #[test]
    fn shards_partition_the_space_and_single_faults_are_all_supported() {
        let f = fabric("torus 4x4 hcas=2 lmc=2");
        let e = by_name("updn").unwrap();
        let c = ctx(&f, e.as_ref());
        let spec = |shard| SweepSpec {
            faults: 1,
            scenarios: Scenarios::Exhaustive,
            shard,
            full: true,
        };
        let mut whole = Vec::new();
        sweep::run(&c, &spec((0, 1)), |r| whole.push(r.clone()), |_| {});
        assert_eq!(whole.len(), 32);
        assert!(whole.iter().all(|r| r.supported && r.deadlock_free));
        let full = whole
            .iter()
            .map(|r| r.full.clone().unwrap())
            .collect::<Vec<_>>();
        assert!(full.iter().all(|v| v.supported && v.deadlock_free));
        let mut parts = Vec::new();
        for i in 0..3 {
            sweep::run(&c, &spec((i, 3)), |r| parts.push(r.clone()), |_| {});
        }
        parts.sort_by_key(|r| r.id);
        assert_eq!(parts, whole);
    }

    /// `run` evaluates scenarios in fault-sequence order and shares the states of common
    /// prefixes; every line must equal evaluating that scenario alone from the fault-free
    /// state. Exhaustive 3-fault space of a 3x3 torus (with prefixes shared by many
    /// scenarios), and samples drawn from so few links that whole sequences repeat.
    #[test]
    fn shared_prefix_runs_equal_scenarios_evaluated_alone() {
        let f = fabric("torus 3x3 hcas=2 lmc=2");
        let e = by_name("updn").unwrap();
        let c = ctx(&f, e.as_ref());
        let links = sweep::switch_links(&f);
        for scenarios in [
            Scenarios::Exhaustive,
            Scenarios::Samples {
                count: 300,
                seed: 5,
            },
        ] {
            let spec = SweepSpec {
                faults: 3,
                scenarios,
                shard: (0, 1),
                full: true,
            };
            let mut got = Vec::new();
            let p = sweep::run(&c, &spec, |r| got.push(r.clone()), |_| {});
            let mut alone = Vec::new();
            for id in 0..p.total {
                let faults = sweep::scenario_faults(&f, &links, &spec, id);
                alone.extend(sweep::evaluate(&c, id, &faults, true));
            }
            assert_eq!(got, alone, "{scenarios:?}");
            assert_eq!(got.len() as u64 + p.skipped_disconnected, p.total);
            let mut seqs: Vec<&Vec<String>> = got.iter().map(|r| &r.faults).collect();
            seqs.sort();
            seqs.dedup();
            if matches!(scenarios, Scenarios::Samples { .. }) {
                assert!(seqs.len() < got.len(), "some sampled sequences repeat");
            }
            assert!(
                got.iter().any(|r| r.sls > 1),
                "some repairs need a transition"
            );
        }
    }

    /// Sweeps and RFTR give the same results on 1 and on 3 threads: the sweep lines, and
    /// the repaired tables and delta of a fault sequence.
    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let f = fabric("torus 4x4 hcas=2 lmc=2");
        let e = by_name("updn").unwrap();
        let c = ctx(&f, e.as_ref());
        let spec = SweepSpec {
            faults: 3,
            scenarios: Scenarios::Samples { count: 40, seed: 9 },
            shard: (0, 1),
            full: true,
        };
        let pool = |n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        };
        let lines = |n| {
            pool(n).install(|| {
                let mut v = Vec::new();
                sweep::run(&c, &spec, |r| v.push(r.clone()), |_| {});
                v
            })
        };
        let (one, three) = (lines(1), lines(3));
        assert!(!one.is_empty());
        assert_eq!(one, three);
        let links = sweep::switch_links(&f);
        let repaired = |n| {
            pool(n).install(|| {
                let mut r = c.start.clone();
                for &l in links.iter().step_by(5).take(4) {
                    r.apply(Fault::Link(l));
                }
                (r.routing.lft.clone(), r.delta.clone(), r.sls_used())
            })
        };
        assert_eq!(repaired(1), repaired(3));
    }

    #[test]
    fn sampled_scenarios_are_reproducible_and_some_multi_faults_fail() {
        let f = fabric("torus 4x4 hcas=2 lmc=2");
        let e = by_name("updn").unwrap();
        let c = ctx(&f, e.as_ref());
        let spec = SweepSpec {
            faults: 6,
            scenarios: Scenarios::Samples { count: 60, seed: 3 },
            shard: (0, 1),
            full: false,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let p = sweep::run(&c, &spec, |r| a.push(r.clone()), |_| {});
        sweep::run(&c, &spec, |r| b.push(r.clone()), |_| {});
        assert_eq!(a, b);
        assert_eq!(a.len() as u64 + p.skipped_disconnected, 60);
        assert!(
            a.iter().all(|r| r.deadlock_free),
            "RFTR stays deadlock-free"
        );
        assert!(a.iter().all(|r| r.faults.len() == 6));
        let s = sweep::SweepSummary::of(a.iter());
        assert_eq!(s.scenarios, a.len() as u64);
        assert!(s.max_sls <= 16);
    }
}

/// A fault on a link that is the only way between two halves of a fabric (a row of four
/// switches) leaves every pair across it unsupported, and all of them are reported cut off;
/// on a 2-D torus no single fault cuts anything off.
#[test]
fn faults_that_split_the_fabric_report_the_pairs_cut_off() {
    let f = fabric("mesh 4x1 hcas=2 lmc=2");
    let links = switch_links(&f);
    assert_eq!(links.len(), 3);
    let mut cut = Vec::new();
    for &l in &links {
        let (ok, r) = run_and_check_state(&f, &[Fault::Link(l)], RftrConfig::default());
        assert!(!ok);
        let rep = r.reports.last().unwrap();
        assert_eq!(rep.disconnected_pairs, rep.unsupported_pairs, "{l:?}");
        cut.push(rep.unsupported_pairs);
    }
    // the row splits 1 | 3, 2 | 2 or 3 | 1 switches, two end ports each, both directions
    cut.sort_unstable();
    assert_eq!(cut, [2 * 2 * 6, 2 * 2 * 6, 2 * 4 * 4]);
    let t = fabric("torus 4x4 hcas=2 lmc=2");
    let (ok, r) = run_and_check_state(
        &t,
        &[Fault::Link(switch_links(&t)[0])],
        RftrConfig::default(),
    );
    assert!(ok);
    assert_eq!(r.reports.last().unwrap().disconnected_pairs, 0);
}

#[test]
fn dor_base_on_a_mesh_repairs_single_faults_deadlock_free() {
    let f = fabric("mesh 4x4 hcas=1 lmc=2");
    let opts = RouteOptions::default();
    let mask = FaultMask::none(&f);
    let base = by_name("dor").unwrap().route(&f, &mask, &opts).unwrap();
    let rule = routing::fault::base_rule(&f, by_name("dor").unwrap().as_ref(), &opts).unwrap();
    let mut supported = 0;
    let links = switch_links(&f);
    for &l in &links {
        let mut r = Rftr::new(&f, &base, rule.clone(), RftrConfig::default()).unwrap();
        let before = routing::fault::verify::Snapshot::of(&r);
        let rep = r.apply(Fault::Link(l));
        let chk = routing::fault::verify::check_state(&r, Some(&before));
        assert!(chk.deadlock_free, "DOR-based RFTR left a cycle after {l:?}");
        assert_eq!(chk.undelivered, 0);
        if rep.unsupported_pairs == 0 {
            supported += 1;
        }
    }
    // DOR's rule is strict; most single faults still repair within 2 VLs.
    assert!(supported * 2 > links.len(), "{supported}/{}", links.len());
    // And the DOR rule refuses tori.
    let t = fabric("torus 4x4 hcas=1 lmc=2");
    assert!(routing::fault::base_rule(&t, by_name("dor").unwrap().as_ref(), &opts).is_err());
}

#[test]
fn base_lid_ties_shrink_the_delta() {
    // Preferring, among equally ranked candidates, one that keeps the base LID writes fewer
    // LFT entries and virtual LIDs than taking the lowest join switch, on single faults of a
    // torus; both stay fully repaired and deadlock-free (checked by run_and_check_state).
    let f = fabric("torus 8x8 hcas=2 lmc=2");
    let links = switch_links(&f);
    let (mut entries, mut vlids) = ([0usize; 2], [0u32; 2]);
    for &l in links.iter().step_by(links.len() / 6).take(6) {
        for (i, prefer) in [true, false].into_iter().enumerate() {
            let cfg = RftrConfig {
                prefer_base_lid: prefer,
                ..Default::default()
            };
            let (ok, r) = run_and_check_state(&f, &[Fault::Link(l)], cfg);
            assert!(ok);
            entries[i] += r.delta.counts().lft_entries;
            vlids[i] += r.max_virtual_lids();
        }
    }
    assert!(entries[0] < entries[1], "entries {entries:?}");
    assert!(vlids[0] <= vlids[1], "virtual LIDs {vlids:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]
    /// RFTR over the tree engines' tables: on a k-ary n-tree the base obeys its Up*/Down*
    /// rule (`Base::Turns`); on SuperPOD-style trees (aggregation nodes on every switch, a
    /// management network, missing cables) the base changes VL for some pairs itself and
    /// RFTR takes fresh VLs above it (`Base::FreshVls`). Either way every invariant holds
    /// after every random link fault, and the verifier agrees.
    #[test]
    fn random_faults_on_tree_bases(
        kind in 0usize..3,
        engine in 0usize..3,
        seed in 0u64..1000,
        nfaults in 1usize..4,
    ) {
        let spec = match kind {
            0 => "ktree 4 3 lmc=2".to_string(),
            1 => "superpod su=1 nodes=3 rails=2 spines=2 uplinks=4 cores=2 radix=41 lmc=2".to_string(),
            _ => format!("superpod su=2 nodes=3 rails=2 spines=2 uplinks=4 cores=4 missing=2 missing-seed={seed} lmc=2"),
        };
        let name = ["ftree", "updn", "dnup"][engine];
        let mut f = fabric(&spec);
        f.hints = Default::default();
        let vls = 8u8;
        let (r, fresh) = start_engine(&f, name, vls).expect("the tree engines route these trees");
        if kind == 0 {
            prop_assert!(!fresh, "{name} on {spec}: a k-ary n-tree's base obeys its rule");
        }
        let faults = random_faults(&f, seed, nfaults, false);
        let (_, r) = run_and_check_from(&f, r, &faults, vls);
        let chk = routing::fault::verify::check_state(&r, None);
        prop_assert!(chk.deadlock_free && chk.undelivered == 0, "{} on {}: {:?}", name, spec, chk);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]
    /// What `fault` writes for checkers that walk every (source, LID): RFTR's tables with the
    /// unused virtual LIDs mirrored and the pairs no source uses completed. `cdg::check` over
    /// every pair then finds every pair delivered (unless the completion counted pairs it
    /// could not cover) and never a credit loop; the pairs in use keep their paths.
    #[test]
    fn tables_completed_for_checkers_deliver_every_pair_without_loops(
        kind in 0usize..4,
        seed in 0u64..1000,
        nfaults in 1usize..4,
        with_switch in any::<bool>(),
        vls in 2u8..4,
    ) {
        let spec = match kind {
            0 => "torus 4x4 hcas=2 lmc=2".to_string(),
            1 => format!("randreg 12 4 hcas=2 lmc=2 seed={seed}"),
            2 => "mesh 3x4 hcas=1 lmc=2".to_string(),
            _ => "ktree 4 2 lmc=1".to_string(),
        };
        let f = fabric(&spec);
        let mut r = start(&f, vls);
        for fault in random_faults(&f, seed, nfaults, with_switch) {
            r.apply(fault);
        }
        assert_completion_for_checkers(&f, &r, &spec)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]
    /// The same completion over bases that keep their own VLs (dfsssp, lash, hopvl, nue,
    /// torus-2QoS, and ftree on a SuperPOD-style tree whose base changes VL itself): never a
    /// credit loop over every (source, LID); every pair delivered whenever every phantom path
    /// was placed. VLs: 8 (2 for RFTR), 4, or a base of one VL with one or two above it (`fault
    /// --vls 2` and `3` over nue, where the base's graph leaves phantoms little room); up to
    /// three cables and a switch fail, so that later faults move sources off virtual LIDs
    /// earlier repairs used.
    #[test]
    fn tables_completed_for_checkers_over_vl_bases(
        kind in 0usize..4,
        engine in 0usize..5,
        seed in 0u64..1000,
        nfaults in 1usize..4,
        with_switch in any::<bool>(),
        budget in 0usize..3,
        repair in 1u8..3,
    ) {
        let (spec, name) = match kind {
            0 => ("torus 4x4 hcas=2 lmc=2".to_string(), ["dfsssp", "lash", "hopvl", "nue", "torus-2QoS"][engine]),
            1 => ("dragonfly 4 2 2 lmc=2".to_string(), ["dfsssp", "lash", "hopvl", "nue", "torus-2QoS"][engine]),
            2 => (format!("randreg 12 4 hcas=2 lmc=2 seed={seed}"), ["dfsssp", "lash", "hopvl", "nue", "torus-2QoS"][engine]),
            _ => ("superpod su=1 nodes=3 rails=2 spines=2 uplinks=4 cores=2 radix=41 lmc=2".to_string(), "ftree"),
        };
        let mut f = fabric(&spec);
        f.hints = Default::default();
        let (vls, repair) = [(repair + 1, repair), (4, repair), (8u8, 2)][budget];
        let Some((mut r, fresh)) = start_engine_with(&f, name, vls, repair) else {
            return Ok(());
        };
        for fault in random_faults(&f, seed, nfaults, with_switch) {
            r.apply(fault);
        }
        assert_completion_for_checkers(&f, &r, &format!("{name} on {spec} at {vls} VLs, {repair} for RFTR (fresh VLs: {fresh})"))?;
    }
}

/// A mesh read from a file carries no coordinates: `dor` infers them from the switch graph
/// (the same inference for its tables and its RFTR turn rule), so `fault --engine dor` works
/// on it; sides that do not divide evenly, 1-D and 3-D meshes included. A torus with sides
/// above 4 or a mesh with a missing cable is not a mesh, and dor declines to be a base.
#[test]
fn dor_base_on_meshes_read_from_files_infers_coordinates() {
    for spec in [
        "mesh 4x4 hcas=1 lmc=2",
        "mesh 3x5 hcas=1 lmc=2",
        "mesh 2x3x4 hcas=1 lmc=2",
        "mesh 7 hcas=2 lmc=2",
    ] {
        let mut f = fabric(spec);
        f.hints = Default::default();
        let opts = RouteOptions::default();
        let routed = by_name("dor")
            .unwrap()
            .route_detailed(&f, &FaultMask::none(&f), &opts)
            .unwrap();
        assert!(
            routed
                .notes
                .iter()
                .any(|n| n.contains("coordinates inferred")),
            "{spec}: {:?}",
            routed.notes
        );
        let rep = routing::cdg::check(&f, &routed.routing, None);
        assert!(
            rep.deadlock_free && rep.pairs.ok == rep.pairs.checked,
            "{spec}"
        );
        let rule = routing::fault::base_rule(&f, by_name("dor").unwrap().as_ref(), &opts)
            .unwrap_or_else(|e| panic!("{spec}: {e}"));
        for &l in &switch_links(&f) {
            let mut r = Rftr::new(&f, &routed.routing, rule.clone(), RftrConfig::default())
                .unwrap_or_else(|e| panic!("{spec}: {e}"));
            let before = routing::fault::verify::Snapshot::of(&r);
            r.apply(Fault::Link(l));
            let chk = routing::fault::verify::check_state(&r, Some(&before));
            assert!(
                chk.deadlock_free && chk.undelivered == 0,
                "{spec}: {l:?}: {chk:?}"
            );
        }
    }
    for spec in [
        "torus 5x5 hcas=1",
        "mesh 4x4 hcas=1 fail-links=1 fail-seed=3",
    ] {
        let mut f = fabric(spec);
        f.hints = Default::default();
        let e = by_name("dor").unwrap();
        assert!(
            routing::fault::base_rule(&f, e.as_ref(), &RouteOptions::default()).is_err(),
            "{spec}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    /// Coordinates are inferred for every mesh shape (1 to 3 dimensions, sides 2 to 6), and
    /// dor's tables on the file-read mesh are complete and deadlock-free.
    #[test]
    fn dor_infers_every_mesh_shape(a in 2u32..=6, b in 1u32..=6, c in 1u32..=4) {
        let dims: Vec<String> = [a, b, c].iter().filter(|&&x| x > 1).map(|x| x.to_string()).collect();
        let spec = format!("mesh {} hcas=1", dims.join("x"));
        let mut f = fabric(&spec);
        f.hints = Default::default();
        let routed = by_name("dor")
            .unwrap()
            .route_detailed(&f, &FaultMask::none(&f), &RouteOptions::default())
            .unwrap();
        prop_assert!(routed.notes.iter().any(|n| n.contains("coordinates inferred")), "{}: {:?}", spec, routed.notes);
        let rep = routing::cdg::check(&f, &routed.routing, None);
        prop_assert!(rep.deadlock_free && rep.pairs.ok == rep.pairs.checked, "{}", spec);
        prop_assert!(routing::fault::base_rule(&f, by_name("dor").unwrap().as_ref(), &RouteOptions::default()).is_ok());
    }
}

/// A fabric file read as `fault` and `sweep` read it: its LIDs ignored, every LID assigned
/// afresh with LMC 2.
fn read_as_fault_does(path: &std::path::Path) -> Fabric {
    let bytes = std::fs::read(path).unwrap();
    let mut none = |n: &str| -> Result<(String, Vec<u8>), String> { Err(n.to_string()) };
    let opts = fabric::BuildOptions {
        reassign_lids: true,
        ..Default::default()
    };
    fabric::io::read(&bytes, &path.display().to_string(), &mut none, opts)
        .unwrap()
        .fabric
        .with_lmc(2)
        .unwrap()
}

/// RFTR over every base engine on every vendored real dump (LIDs assigned afresh with LMC 2,
/// as `fault` does), with random link faults and then a switch fault: every invariant holds
/// after every fault, the verifier agrees, and the tables completed for checkers have no
/// credit loop. Real fabrics carry what generators do not: management switches hung off a
/// leaf with no up*/down* path to some destinations (the up/down engines give them a path
/// with a down->up turn; as no source's path runs through them, they are no suffix for
/// RFTR and do not stop it), loopback cables, service nodes on every level.
#[test]
fn every_base_engine_repairs_random_faults_on_the_real_dumps() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ibnd"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{} real dumps", files.len());
    let mut repaired = 0;
    for path in &files {
        let f = read_as_fault_does(path);
        let big = f.end_ports.len() > 400;
        for (i, name) in routing::engines::rftr_bases().into_iter().enumerate() {
            // torus-2QoS and dor decline these trees; the large dump once per kind of base
            if big && !matches!(name, "updn" | "dfsssp") {
                continue;
            }
            let Some((r, fresh)) = start_engine(&f, name, 8) else {
                // only the mesh and torus engines decline a tree
                assert!(
                    matches!(name, "dor" | "torus-2QoS"),
                    "{name} on {}: no RFTR base",
                    path.display()
                );
                continue;
            };
            let what = format!("{name} on {} (fresh VLs: {fresh})", path.display());
            let seed = 7 + i as u64;
            let faults = random_faults(&f, seed, if big { 1 } else { 2 }, true);
            let (_, r) = run_and_check_from(&f, r, &faults, 8);
            let chk = routing::fault::verify::check_state(&r, None);
            assert!(chk.deadlock_free && chk.undelivered == 0, "{what}: {chk:?}");
            assert_completion_for_checkers(&f, &r, &what).unwrap();
            repaired += 1;
        }
    }
    // the seven other bases on the five small dumps, two on the large one, and dor and
    // torus-2QoS where a dump's switches form a mesh (a few switches in a row)
    assert!(repaired >= 7 * (files.len() - 1) + 2, "{repaired}");
}

/// A failed cable with a live parallel cable between the same two switches is always
/// repaired, whatever the base: the same switches over the sibling are a candidate (RFTR
/// stores a twin of every broken path over a sibling). LASH, like OpenSM's, routes over the
/// lowest-numbered cable only, so before twins no stored path crossed a sibling and RFTR over
/// LASH repaired none of the pairs of such a fault on this dump (x5, whose switches are
/// joined by bundles of 2-4 cables).
#[test]
fn a_failed_cable_with_a_live_sibling_is_always_repaired() {
    let f = read_as_fault_does(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/real/x5_psmn_voltaire4036_qdr_ddr_11sw_89hca.ibnd"),
    );
    let sw = |p: fabric::PortId| f.port(p).node;
    let bundled: Vec<fabric::LinkId> = switch_links(&f)
        .into_iter()
        .filter(|&l| {
            let k = f.link(l);
            let ends = |x: &fabric::Link| {
                let (a, b) = (sw(x.a), sw(x.b));
                (a.min(b), a.max(b))
            };
            sw(k.a) != sw(k.b)
                && switch_links(&f)
                    .iter()
                    .any(|&m| m != l && ends(f.link(m)) == ends(k))
        })
        .collect();
    assert!(bundled.len() >= 20, "{} bundled cables", bundled.len());
    for name in ["lash", "updn", "dfsssp"] {
        let mut affected = 0;
        for &l in bundled.iter().step_by(3) {
            let (r, _) = start_engine(&f, name, 8).unwrap();
            let (ok, r) = run_and_check_from(&f, r, &[Fault::Link(l)], 8);
            let rep = r.reports.last().unwrap();
            assert!(
                ok,
                "{name}, {l:?}: {} of {} unsupported",
                rep.unsupported_pairs, rep.affected_pairs
            );
            affected += rep.affected_pairs;
        }
        assert!(affected > 0, "{name}: no fault broke a path");
    }
}

/// What a subnet manager programs after RFTR left pairs a live path joins unrepaired (a spine
/// of the x5 cluster failing under LASH): a completion for checkers that adds no route, which
/// would route those pairs outside the repair, and leaves no credit loop; the same fabric
/// after a repaired link fault is completed.
#[test]
fn no_route_added_while_joinable_pairs_are_unrepaired() {
    let x5 = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/x5_psmn_voltaire4036_qdr_ddr_11sw_89hca.ibnd");
    // LMC 2, as `fabroute fault` gives the end ports by default (virtual LIDs to repair with)
    let f = common::read_fabric(&x5).with_lmc(2).unwrap();
    let spine = f
        .nodes
        .iter()
        .position(|n| n.name == "S-0008f10500108098")
        .expect("the spine");
    let (mut r, _) = start_engine(&f, "lash", 8).expect("lash routes x5");
    let rep = r.apply(Fault::Switch(NodeId(spine as u32)));
    assert!(rep.unsupported_pairs > rep.disconnected_pairs);
    assert_eq!(
        r.unrepaired_joinable(),
        rep.unsupported_pairs - rep.disconnected_pairs
    );
    let p = r.programmed(true);
    assert!(p.completion.applied && !p.completion.routes_added);
    // the unrepaired pairs stay undelivered in what is programmed, and no walk closes a loop
    let chk = routing::cdg::check(&f, &p.tables, Some(&r.mask));
    assert!(chk.pairs.checked - chk.pairs.ok >= r.unrepaired_joinable());
    assert!(chk.deadlock_free);
    // a link fault RFTR repairs: completed, every pair delivered
    let r = switch_links(&f)
        .into_iter()
        .find_map(|l| {
            let (mut r, _) = start_engine(&f, "lash", 8).unwrap();
            let rep = r.apply(Fault::Link(l));
            (rep.affected_pairs > 0 && rep.unsupported_pairs == 0).then_some(r)
        })
        .expect("a link fault RFTR repairs over LASH on x5");
    assert_eq!(r.unrepaired_joinable(), 0);
    let p = r.programmed(true);
    assert!(p.completion.applied && p.completion.routes_added);
    assert!(!r.programmed(false).completion.applied);
    let chk = routing::cdg::check(&f, &p.tables, Some(&r.mask));
    assert!(chk.deadlock_free);
    if p.completion.uncovered == 0 {
        assert_eq!(chk.pairs.ok, chk.pairs.checked);
    }
}
