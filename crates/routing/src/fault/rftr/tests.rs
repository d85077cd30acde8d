//! Unit tests of RFTR's candidate scan and of the VLs of repaired paths.

use super::*;
use crate::engines::by_name;
use crate::engines::RouteOptions;

fn start<'f>(f: &'f Fabric, vls: u8) -> Rftr<'f> {
    let e = by_name("updn").unwrap();
    let opts = e.pin_choices(f, &RouteOptions::default()).unwrap();
    let base = e.route(f, &FaultMask::none(f), &opts).unwrap();
    let rule = e.rftr_base(f, &opts).unwrap();
    Rftr::new(
        f,
        &base,
        rule,
        RftrConfig {
            vls,
            ..RftrConfig::default()
        },
    )
    .unwrap()
}

/// The one-scan candidate search finds what sorting every candidate finds: for every pair
/// a fault breaks, the best (transitions, hops, join switch) of both agree, and none of
/// either exceeds the VL budget. Pairs are repaired as they come, so later scans see
/// rewritten base-LID entries, and with two end ports per switch the join at the
/// destination's switch is often already as short as the fault-free distance.
#[test]
fn candidate_scan_equals_the_sorted_candidate_list() {
    let (mut checked, mut unreachable, mut listed_in_order) = (0, 0, 0);
    for (spec, vls) in [
        ("torus 4x4 hcas=1 lmc=2", 2),
        ("torus 3x3x3 hcas=1 lmc=2", 2),
        ("mesh 4x3 hcas=1 lmc=2", 3),
        ("ktree 4 2 lmc=2", 2),
        ("torus 5x4 hcas=2", 2),
        ("torus 4x4 hcas=2 lmc=1", 2),
    ] {
        let f = super::super::test_fabric(spec);
        let links = super::super::sweep::switch_links(&f);
        for &l in links.iter().step_by(3) {
            let mut r = start(&f, vls);
            let mut rep = FaultReport::default();
            let pairs = r.start_fault(Fault::Link(l), &mut rep);
            let mut last_e = NONE;
            for &(e, _, slot, prev) in &pairs {
                r.cur_prev = prev;
                if e != last_e {
                    r.start_group(e);
                    last_e = e;
                }
                let s = r.slot_switch[slot as usize];
                r.prepare(s, e);
                let fast = r
                    .best_candidate(s, e, None, Want::Best)
                    .map(|c| (c.trans, c.hops, c.c));
                let scan = r
                    .scan_best(s, e, Want::Best)
                    .map(|c| (c.trans, c.hops, c.c));
                assert_eq!(fast, scan, "{spec}: link {l:?}, switch {s} to end {e}");
                let mut all = r.candidates(s, e);
                Rftr::sort_candidates(&mut all);
                assert!(all.iter().all(|c| c.trans < vls), "{spec}");
                let slow = all.first().map(|c| (c.trans, c.hops, c.c));
                assert_eq!(fast, slow, "{spec}: link {l:?}, switch {s} to end {e}");
                // The list read in order as it is built: the sorted list, whole.
                let mut lazy = Vec::new();
                let least = all.first().map_or(0, |c| c.trans);
                r.each_candidate_in_order(s, e, least, |_, c| {
                    lazy.push(Rftr::rank_key(c));
                    false
                });
                let sorted: Vec<_> = all.iter().map(Rftr::rank_key).collect();
                assert_eq!(lazy, sorted, "{spec}: link {l:?}, switch {s} to end {e}");
                listed_in_order += sorted.len();
                // The scans that may stop at any candidate with a transition: the best when
                // it has none, else one of the list; none without a transition where no
                // path obeying the turn rule leads to the destination's switch.
                let listed = |c: Option<Cand>| {
                    c.is_none_or(|c| {
                        all.iter()
                            .any(|a| (a.trans, a.hops, a.c) == (c.trans, c.hops, c.c))
                    })
                };
                let either = r.scan_best(s, e, Want::BestOrAnyTransition);
                match slow {
                    Some((0, ..)) | None => {
                        assert_eq!(either.map(|c| (c.trans, c.hops, c.c)), slow, "{spec}")
                    }
                    Some(_) => assert!(either.is_some_and(|c| c.trans > 0) && listed(either)),
                }
                r.learn_legal_reach(s);
                let t = r.end_sw[e as usize];
                if r.legal_reach(s, t) == Some(false) {
                    assert!(all.iter().all(|c| c.trans > 0), "{spec}: {s} to end {e}");
                    let with = r.scan_best(s, e, Want::BestWithTransition);
                    assert_eq!(with.map(|c| (c.trans, c.hops, c.c)), slow, "{spec}");
                    let any = r.scan_best(s, e, Want::AnyTransition);
                    assert_eq!(any.is_some(), slow.is_some(), "{spec}: {s} to end {e}");
                    assert!(listed(any), "{spec}: {s} to end {e}");
                    unreachable += 1;
                }
                checked += 1;
                r.repair(slot, e);
            }
        }
    }
    assert!(checked > 100, "only {checked} pairs compared");
    assert!(
        unreachable > 10,
        "only {unreachable} pairs without a legal path"
    );
    assert!(
        listed_in_order > 1000,
        "only {listed_in_order} candidates read in order"
    );
}

/// The switches `learn_legal_reach` finds reachable from a source under the turn rule over
/// the live links are those of a search over whole paths: every switch sequence extended
/// hop by hop while each turn is legal (small fabrics, every source, after each fault).
#[test]
fn legal_reach_equals_a_search_over_paths() {
    for spec in ["torus 4x4 hcas=1", "mesh 4x3 hcas=1", "ktree 4 2"] {
        let f = super::super::test_fabric(spec);
        let links = super::super::sweep::switch_links(&f);
        let mut r = start(&f, 2);
        let ns = f.num_switches();
        let mut unreached = 0;
        for &l in links.iter().step_by(4).take(3) {
            r.apply(Fault::Link(l));
            for s in 0..ns as u32 {
                r.learn_legal_reach(s);
                // Depth-first over simple paths (channel sequences without a repeated switch).
                let mut seen = vec![false; ns];
                seen[s as usize] = true;
                let mut stack: Vec<(u32, Vec<u32>, Option<ChannelId>)> = vec![(s, vec![s], None)];
                while let Some((u, on, last)) = stack.pop() {
                    for &c in f.switch_links(SwitchIdx(u)) {
                        let v = r.ch_dst_sw[c.idx()];
                        if v == NONE || r.ch_dead[c.idx()] || on.contains(&v) {
                            continue;
                        }
                        if last.is_some_and(|p| r.illegal(p, c)) {
                            continue;
                        }
                        seen[v as usize] = true;
                        let mut on2 = on.clone();
                        on2.push(v);
                        stack.push((v, on2, Some(c)));
                    }
                }
                for t in 0..ns as u32 {
                    assert_eq!(
                        r.legal_reach(s, t),
                        Some(seen[t as usize]),
                        "{spec}: {s}->{t}"
                    );
                    unreached += usize::from(!seen[t as usize]);
                }
            }
        }
        assert!(unreached > 0, "{spec}: every switch reached everywhere");
    }
}

/// The keep check's bound (`no_shorter_legal_walk`, a search backwards from the
/// destination over (switch, class), run only as deep as asked) answers as a search forwards
/// from the source over (switch, channel taken into it) that asks the turn rule of each pair
/// of channels, on the live links after each fault, for lengths asked in an order that
/// makes it go on from where it stopped; somewhere the turn rule and somewhere the faults
/// make the walks longer than the plain live and the fault-free turn-rule distances.
#[test]
fn no_shorter_legal_walk_answers_as_a_forward_search() {
    for spec in [
        "torus 4x4 hcas=1",
        "mesh 4x3 hcas=1",
        "ktree 4 2",
        "torus 3x3x3 hcas=1",
    ] {
        let f = super::super::test_fabric(spec);
        let links = super::super::sweep::switch_links(&f);
        let mut r = start(&f, 2);
        let (ns, nch) = (f.num_switches(), f.links.len() * 2);
        let (mut by_rule, mut by_fault) = (0, 0);
        for &l in links.iter().step_by(4).take(3) {
            r.apply(Fault::Link(l));
            for s in 0..ns as u32 {
                // Breadth-first over channels: dist[c] = hops of the shortest legal walk
                // from s whose last hop is c.
                let mut dist = vec![u32::MAX; nch];
                let mut queue: Vec<ChannelId> = Vec::new();
                let mut to = vec![u32::MAX; ns];
                to[s as usize] = 0;
                let mut plain = vec![u32::MAX; ns];
                plain[s as usize] = 0;
                for &c in f.switch_links(SwitchIdx(s)) {
                    if r.ch_dst_sw[c.idx()] != NONE && !r.ch_dead[c.idx()] {
                        dist[c.idx()] = 1;
                        queue.push(c);
                    }
                }
                let mut at = 0;
                while at < queue.len() {
                    let c = queue[at];
                    at += 1;
                    let v = r.ch_dst_sw[c.idx()];
                    to[v as usize] = to[v as usize].min(dist[c.idx()]);
                    for &n in f.switch_links(SwitchIdx(v)) {
                        if r.ch_dst_sw[n.idx()] == NONE || r.ch_dead[n.idx()] {
                            continue;
                        }
                        if !r.illegal(c, n) && dist[n.idx()] == u32::MAX {
                            dist[n.idx()] = dist[c.idx()] + 1;
                            queue.push(n);
                        }
                    }
                }
                // The live fabric's distances, ignoring the turn rule.
                let mut q = vec![s];
                let mut i = 0;
                while i < q.len() {
                    let u = q[i];
                    i += 1;
                    for &c in f.switch_links(SwitchIdx(u)) {
                        let v = r.ch_dst_sw[c.idx()];
                        if v != NONE && !r.ch_dead[c.idx()] && plain[v as usize] == u32::MAX {
                            plain[v as usize] = plain[u as usize] + 1;
                            q.push(v);
                        }
                    }
                }
                for t in 0..ns as u32 {
                    let d = to[t as usize];
                    let near = d.min(ns as u32);
                    for h in [2, near + 1, 0, near, 1, near.saturating_sub(1), 7, near + 3] {
                        assert_eq!(
                            r.no_shorter_legal_walk(s, t, h),
                            d >= h,
                            "{spec}: {s}->{t} in fewer than {h} hops"
                        );
                    }
                    assert!(d >= plain[t as usize], "{spec}: {s}->{t}");
                    by_rule += usize::from(d > plain[t as usize]);
                    let free = r.legal_distance(s, t).unwrap_or(u32::MAX);
                    assert!(d >= free, "{spec}: {s}->{t} below the fault-free bound");
                    by_fault += usize::from(d > free);
                }
            }
        }
        assert!(by_rule > 0, "{spec}: the turn rule never lengthened a walk");
        assert!(by_fault > 0, "{spec}: the faults never lengthened a walk");
    }
}

/// The prefix tables kept in step with faults and repairs (rows refreshed where a fault
/// killed the best, repaired paths added past the prefix they share with the path they
/// replace) equal tables built afresh from every stored path's live prefixes, and those
/// built from the tries; after each of several faults, at LMC 0 and 2.
#[test]
fn kept_prefix_tables_equal_fresh_ones() {
    for spec in [
        "torus 4x4 hcas=2 lmc=2",
        "torus 4x4 hcas=1",
        "mesh 4x3 hcas=1 lmc=2",
        "ktree 4 3 lmc=2",
    ] {
        let f = super::super::test_fabric(spec);
        let links = super::super::sweep::switch_links(&f);
        let mut r = start(&f, 3);
        let m1 = r.ncls + 1;
        let mut repaired = 0;
        for &l in links.iter().step_by(5).take(4) {
            let n = r.apply(Fault::Link(l)).repaired_pairs;
            repaired += n;
            // The bookkeeping waits for `settle`, and then leaves every path indexed.
            assert!(n == 0 || !r.settled(), "{spec}: nothing left for settle");
            r.settle();
            assert!(r.settled(), "{spec}: settle left something");
            for p in 0..r.paths.len() as PathId {
                for &c in r.paths.hops_of(p) {
                    assert!(
                        r.paths.by_chan.get(c.idx()).any(|q| q == p),
                        "{spec}: path {p} not indexed under channel {}",
                        c.0
                    );
                }
            }
            for s in 0..f.num_switches() {
                if r.slot_of[s] == NONE {
                    continue;
                }
                let mut fresh = vec![NO_PREFIX; f.num_switches() * m1];
                fresh[s * m1..(s + 1) * m1].fill(NONE as u64);
                for p in r.paths.by_src.get(s) {
                    r.add_fast_prefixes(p, &mut fresh, 0);
                }
                assert!(
                    r.pre_tab[s] == fresh,
                    "{spec}: source {s} against its paths"
                );
                let mut alive = Vec::new();
                assert!(
                    r.prefix_table(s as u32, &mut alive) == fresh,
                    "{spec}: source {s} against its trie"
                );
            }
        }
        assert!(repaired > 0, "{spec}: nothing repaired");
    }
}

/// A repaired state's new paths change VL only upwards and only at turns the base rule
/// forbids, and no switch is visited twice.
#[test]
fn repaired_paths_change_vl_only_at_illegal_turns() {
    let f = super::super::test_fabric("torus 4x4 hcas=2 lmc=2");
    let links = super::super::sweep::switch_links(&f);
    let mut r = start(&f, 3);
    let mut with_transition = 0;
    // Faults one after another (every third link) until some repair needed a transition.
    for &l in links.iter().step_by(3) {
        r.apply(Fault::Link(l));
        for (hops, vls) in r.selected_paths() {
            let mut seen = vec![false; f.num_switches()];
            if let Some(&c0) = hops.first() {
                seen[f.src_switch(c0).unwrap().idx()] = true;
            }
            for (i, &c) in hops.iter().enumerate() {
                let to = r.ch_dst_sw[c.idx()] as usize;
                assert!(!seen[to], "a switch visited twice");
                seen[to] = true;
                if i > 0 {
                    let step = vls[i] - vls[i - 1];
                    assert_eq!(step, u8::from(r.illegal(hops[i - 1], c)));
                }
            }
            if vls.last().is_some_and(|&v| v > 0) {
                with_transition += 1;
            }
        }
        if with_transition > 0 {
            break;
        }
    }
    assert!(with_transition > 0, "no fault sequence needed a transition");
}

/// A trie node's children, found by skipping from subtree to subtree (`PrefixTrie::children`),
/// are exactly the indexed nodes whose parent it is, in index order.
#[test]
fn trie_children_skip_whole_subtrees() {
    let mut nodes = 0;
    for spec in ["torus 4x4 hcas=2 lmc=1", "ktree 4 3", "torus 3x3x3 hcas=1"] {
        let f = super::super::test_fabric(spec);
        let r = start(&f, 2);
        for tr in &r.tries {
            for n in 0..tr.indexed {
                let want: Vec<u32> = (0..tr.indexed)
                    .filter(|&m| tr.nodes[m as usize].parent == n)
                    .collect();
                assert_eq!(tr.children(n).collect::<Vec<_>>(), want, "{spec}: node {n}");
                nodes += 1;
            }
        }
    }
    assert!(nodes > 1000, "only {nodes} nodes looked at");
}

/// Whether the near-failure deviation is tried before the scan changes no result
/// (`Rftr::early_deviation_pays`): the same fault sequences from a state that always tries
/// it and from one that tries it for one pair in 64 give the same tables, path SLs, delta
/// and reports, on fabrics where it finds paths (trees) and where it rarely does (tori).
#[test]
fn early_deviation_is_only_a_shortcut() {
    let (mut found, mut tries) = (0, (0, 0));
    for (spec, vls) in [
        ("ktree 4 3", 2),
        ("ktree 6 3", 2),
        ("ktree 6 3 lmc=1", 2),
        ("ktree 4 2 lmc=2", 2),
        ("torus 4x4 hcas=2 lmc=1", 2),
        ("torus 5x4 hcas=2", 2),
        ("torus 3x3x3 hcas=1 lmc=2", 3),
    ] {
        let f = super::super::test_fabric(spec);
        let links = super::super::sweep::switch_links(&f);
        for first in 0..3 {
            let mut always = start(&f, vls);
            always.early_deviation = EarlyDeviation {
                considered: 1,
                tried: 0,
                found: u32::MAX / 16,
            };
            let mut rarely = start(&f, vls);
            rarely.early_deviation = EarlyDeviation {
                considered: 1,
                tried: u32::MAX / 2,
                found: 0,
            };
            // Links near the leaves and near the top (on a tree, the deviation finds paths
            // only past the first hop).
            let far = links.iter().rev().skip(first).step_by(5).take(2);
            for &l in links.iter().skip(first).step_by(5).take(2).chain(far) {
                let a = always.apply(Fault::Link(l));
                let b = rarely.apply(Fault::Link(l));
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{spec}: link {l:?}");
                assert_eq!(always.by_lid, rarely.by_lid, "{spec}: link {l:?}");
                assert_eq!(always.routing.path_sl, rarely.routing.path_sl, "{spec}");
                assert_eq!(always.sel, rarely.sel, "{spec}: link {l:?}");
                let delta = |r: &Rftr| format!("{:?}", r.delta);
                assert_eq!(delta(&always), delta(&rarely), "{spec}: link {l:?}");
            }
            found += always.early_deviation.found - u32::MAX / 16;
            tries.0 += always.early_deviation.tried;
            tries.1 += rarely.early_deviation.tried - u32::MAX / 2;
        }
    }
    assert!(found > 20, "the early deviation found only {found} paths");
    assert!(
        tries.1 * 8 < tries.0,
        "tried {} against {} times",
        tries.1,
        tries.0
    );
}

/// The memory limit: a fabric whose tables would pass it is refused with the estimate (no
/// tables built), one within it starts, and the estimate is within a factor of two of what
/// the started state holds (`Rftr::memory`).
#[test]
fn tables_over_the_memory_limit_are_refused_with_the_estimate() {
    for spec in ["torus 6x6x4 hcas=2", "ktree 6 3", "torus 5x4 hcas=2 lmc=1"] {
        let f = super::super::test_fabric(spec);
        let e = by_name("updn").unwrap();
        let opts = e.pin_choices(&f, &RouteOptions::default()).unwrap();
        let base = e.route(&f, &FaultMask::none(&f), &opts).unwrap();
        let with = |limit| {
            let rule = e.rftr_base(&f, &opts).unwrap();
            let cfg = RftrConfig {
                memory_limit: limit,
                ..RftrConfig::default()
            };
            Rftr::new(&f, &base, rule, cfg)
        };
        let r = with(None).unwrap();
        let held: usize = r.memory().iter().map(|&(_, b)| b).sum();
        let (paths, hops) = r.table_size();
        let estimate = r.table_bytes(paths as u64, hops as u64) as usize;
        assert!(
            estimate <= 2 * held && held <= 2 * estimate,
            "{spec}: estimated {estimate} bytes, held {held}"
        );
        assert!(with(Some(2 * held as u64)).is_ok(), "{spec}");
        match with(Some(held as u64 / 10)) {
            Err(RftrError::TooLarge { bytes, limit, .. }) => {
                assert_eq!(limit, Some(held as u64 / 10), "{spec}");
                assert!(bytes > held as u64 / 10, "{spec}");
            }
            other => panic!("{spec}: {:?}", other.map(|_| ())),
        };
    }
}

/// The prefix tries built hop by hop (`trie_of`) equal, node for node, the ones the paths
/// sorted by their hops give (each path sharing the nodes of its longest common prefix with
/// the one before), on tori, meshes, fat trees and a Dragonfly+.
#[test]
fn prefix_tries_equal_the_tries_of_the_sorted_paths() {
    for spec in [
        "torus 4x4 hcas=2",
        "torus 3x3x3 hcas=1 lmc=2",
        "mesh 4x3 hcas=2",
        "ktree 4 3",
        "dragonflyplus groups=3 leaves=2 spines=2 hosts=2 global=2",
    ] {
        let f = super::super::test_fabric(spec);
        let r = start(&f, 2);
        let mut nodes = 0;
        for s in 0..f.num_switches() {
            if r.slot_of[s] == NONE {
                continue;
            }
            let mut ids: Vec<PathId> = r.paths.by_src.get(s).collect();
            ids.sort_by(|&a, &b| r.paths.hops_of(a).cmp(r.paths.hops_of(b)).then(a.cmp(&b)));
            let mut want: Vec<(u32, u32, u32, u16)> = Vec::new();
            let mut chain: Vec<usize> = Vec::new();
            let mut prev: &[ChannelId] = &[];
            for &p in &ids {
                let hops = r.paths.hops_of(p);
                let lcp = hops.iter().zip(prev).take_while(|(a, b)| a == b).count();
                chain.truncate(lcp);
                for &n in &chain {
                    want[n].2 = want[n].2.min(p);
                }
                for (i, c) in hops.iter().enumerate().skip(lcp) {
                    let parent = chain.last().map_or(NONE, |&n| n as u32);
                    want.push((c.0, parent, p, i as u16 + 1));
                    chain.push(want.len() - 1);
                }
                prev = hops;
            }
            let got: Vec<(u32, u32, u32, u16)> = r.tries[s]
                .nodes
                .iter()
                .map(|n| (n.ch, n.parent, n.minpath, n.depth))
                .collect();
            assert_eq!(got, want, "{spec}: switch {s}");
            nodes += got.len();
        }
        assert!(nodes > 0, "{spec}");
    }
}

/// The kept base-LID walks (`walks.rs`) equal walks made afresh after every fault's repair
/// and settle, for every (end port, switch) whose entry holds one; the walks the faults did
/// not touch stay kept, and the ones behind a dead channel are walked again, so most entries
/// are kept throughout. Tori, a mesh and a fat tree, link and switch faults, LMC 0 and 2.
#[test]
fn kept_walks_equal_fresh_walks_after_every_fault() {
    for spec in [
        "torus 4x4 hcas=2 lmc=2",
        "torus 3x3x3 hcas=1",
        "mesh 4x3 hcas=2",
        "ktree 4 3",
    ] {
        let f = super::super::test_fabric(spec);
        let links = super::super::sweep::switch_links(&f);
        let mut r = start(&f, 3);
        let (ns, ne) = (f.num_switches(), f.end_ports.len());
        let mut faults: Vec<Fault> = links
            .iter()
            .step_by(4)
            .take(3)
            .map(|&l| Fault::Link(l))
            .collect();
        faults.push(Fault::Switch(f.switches[ns / 2]));
        for fault in faults {
            let moved = r.apply(fault).repaired_pairs;
            r.settle();
            let (mut kept, mut arriving) = (0, 0);
            for e in 0..ne as u32 {
                if r.end_sw[e as usize] == NONE {
                    continue;
                }
                for sw in 0..ns as u32 {
                    let fresh = r.walked_suffix(e, sw);
                    arriving += usize::from(fresh.is_some());
                    if let Some(v) = r.kept_walk(e, sw) {
                        assert_eq!(Some(v), fresh, "{spec}: {fault:?}, end {e}, switch {sw}");
                        kept += 1;
                    }
                }
            }
            assert!(
                kept * 10 >= arriving * 9,
                "{spec}: {fault:?}: only {kept} of {arriving} live walks kept ({moved} pairs moved)"
            );
        }
    }
}
