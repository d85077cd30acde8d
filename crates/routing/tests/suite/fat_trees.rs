//! Fat trees as real clusters build them: the 4-level tree of `ftree-balance.md` over its whole
//! parameter range (global balance of the L2 -> L1 links, nothing on L3), SuperPOD-style trees
//! with an aggregation node on every switch, management leaves and missing cables (every pair,
//! no credit loop, compute paths of at most 4 switch hops, leaf uplinks within 5 % of the
//! bound their count allows), and the vendored real dumps.
//!
//! Loads are counted independently of the engines: every (source switch, destination LID)
//! path of the tables ([`routing::vl::paths::Paths`]) adds the number of end ports on its
//! source switch to each channel it crosses; deadlock freedom and delivery come from
//! [`routing::cdg::check`] over the tables' own SL2VL and path SLs.

use fabric::SwitchIdx;

use fabric::{Fabric, FaultMask};
use proptest::prelude::*;
use routing::engines::{by_name, RouteOptions};
use routing::vl::paths::Paths;
use routing::Routing;

fn gen(spec: &str) -> Fabric {
    spec.parse::<fabric::gen::TopoSpec>()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .generate()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// Routes `f` with `engine` without hints (as a fabric read from a file would be).
fn route_plain(engine: &str, f: &Fabric) -> (Routing, Vec<String>) {
    let mask = FaultMask::none(f);
    let r = by_name(engine)
        .unwrap()
        .route_detailed(f, &mask, &RouteOptions::default())
        .unwrap_or_else(|e| panic!("{engine}: {e}"));
    (r.routing, r.notes)
}

/// End-port pairs per directed channel, and the paths.
fn loads(f: &Fabric, r: &Routing) -> (Vec<u64>, Paths) {
    let paths = Paths::of(f, r, None);
    let mut ends_on = vec![0u64; f.num_switches()];
    for &p in &f.end_ports {
        if let Some(q) = f.remote(p) {
            let n = f.port(q).node;
            if f.is_switch(n) {
                ends_on[f.switch_of(n).unwrap().idx()] += 1;
            }
        }
    }
    let mut load = vec![0u64; f.links.len() * 2];
    for i in 0..paths.len() {
        for &c in paths.chans(i) {
            load[c as usize] += ends_on[paths.src[i] as usize];
        }
    }
    (load, paths)
}

/// The balance pass never raises the busiest counted link (its note: "... load A -> B", A
/// after the shorter paths of its first phase where it has one).
fn assert_balance_never_worse(what: &str, notes: &[String]) {
    for n in notes
        .iter()
        .filter(|n| n.starts_with("balance pass") && !n.starts_with("balance pass skipped"))
    {
        let figs = n.rsplit_once("link load ").map(|x| x.1).expect("figures");
        let (a, b) = figs.split_once(" -> ").expect("A -> B");
        let b = b.split_whitespace().next().expect("B");
        let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
        assert!(
            b <= a,
            "{what}: the balance pass raised the busiest link: {n}"
        );
    }
}

fn assert_complete_and_deadlock_free(f: &Fabric, r: &Routing, what: &str, notes: &[String]) {
    assert_balance_never_worse(what, notes);
    let rep = routing::cdg::check(f, r, None);
    assert_eq!(
        rep.pairs.ok, rep.pairs.checked,
        "{what}: {} pairs not delivered; notes {notes:?}",
        rep.unreachable_pairs.count
    );
    assert!(
        rep.deadlock_free,
        "{what}: {} credit loops; notes {notes:?}",
        rep.loops.count
    );
}

/// Switch name of a channel's ends.
fn ends(f: &Fabric, c: usize) -> (&str, &str) {
    let ch = fabric::ChannelId(c as u32);
    (
        &f.node(f.port(f.channel_src(ch)).node).name,
        &f.node(f.port(f.channel_dst(ch)).node).name,
    )
}

fn four_level_case(sets: u32, l0: u32, l1: u32, hcas: u32, l3: u32) {
    let spec = format!("fourlevel sets={sets} l0={l0} l1={l1} hcas={hcas} l3={l3}");
    let mut f = gen(&spec);
    f.hints = Default::default();
    let (r, notes) = route_plain("ftree", &f);
    assert_complete_and_deadlock_free(&f, &r, &spec, &notes);
    let (load, _) = loads(&f, &r);
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for (c, &l) in load.iter().enumerate() {
        let (a, b) = ends(&f, c);
        if a.starts_with("L3") || b.starts_with("L3") {
            assert_eq!(l, 0, "{spec}: {a} -> {b} carries {l}");
        }
        if a.starts_with("L2") && b.starts_with("L1") {
            lo = lo.min(l);
            hi = hi.max(l);
        }
    }
    if sets < 2 || hcas == 0 {
        return;
    }
    // One destination's traffic on an L2 -> L1 link: every source outside its set. The
    // fat-tree pass gives each destination one L2 -> L1 link into its set, so a set's
    // `l0 * hcas` destinations over its `l1` links put at most `ceil(l0 * hcas / l1)` of them
    // on one link; the seed patch's bug put twice that on a quarter of the links. Where the
    // count does not divide, the balance pass may do better than whole destinations (a
    // source leaf's entry moved to another L1 of its set: `fourlevel sets=3 l0=2 l1=5
    // hcas=3 l3=1` goes from 24 to 18), never worse.
    let one = ((sets - 1) * l0 * hcas) as u64;
    let per_link = (l0 * hcas).div_ceil(l1) as u64;
    if (l0 * hcas).is_multiple_of(l1) {
        assert_eq!(lo, hi, "{spec}: L2->L1 loads {lo}..{hi}; notes {notes:?}");
    } else {
        assert!(
            hi <= per_link * one,
            "{spec}: an L2->L1 link carries {hi}, more than {per_link} destinations of {one} each; loads {lo}..{hi}; notes {notes:?}"
        );
    }
    if l0 * hcas >= l1 {
        assert!(
            lo > 0,
            "{spec}: an L2->L1 link carries nothing; notes {notes:?}"
        );
    }
}

#[test]
fn four_level_trees_of_the_seed_patch_are_balanced_globally() {
    // The cases: fewer HCAs per L0 than L1 per set.
    four_level_case(6, 4, 6, 3, 2);
    four_level_case(5, 6, 4, 2, 2);
    four_level_case(4, 4, 4, 4, 2);
    four_level_case(3, 2, 3, 4, 2);
    // One L3 (ranked as a side top, below the L2s) and a balance pass that beats whole
    // destinations per link (a random case that failed the earlier spread rule).
    four_level_case(3, 2, 5, 3, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn four_level_trees_balance_at_every_size(
        sets in 2u32..=6, l0 in 1u32..=5, l1 in 1u32..=6, hcas in 1u32..=5, l3 in 0u32..=3,
    ) {
        four_level_case(sets, l0, l1, hcas, l3);
    }
}

/// Regular trees whose hosts do not divide over their up links: the fat-tree pass gives each
/// destination one spine, so a leaf with 6 hosts under 4 spines gets two of them down one
/// spine link, 84 host pairs where 66 will do. `ftree` runs the balance pass there (it skips
/// it where the counts divide), and a source leaf's entries spread a destination over the
/// spines: the busiest link is at the bound of the traffic into a leaf over its spine links,
/// in steps of one source leaf's hosts. The last tree (18 hosts under 8 spines of two
/// cables each, a 9-spine tree built one spine short) needs the pass's last phase, which
/// offers every leaf entry its other spines (378 without it). updn and dnup run that phase
/// on two-level trees too (the last tree: 860 without it, 780 with).
#[test]
fn leaves_whose_hosts_do_not_divide_over_the_spines_are_balanced() {
    let trees = [
        (8u64, 4u64, 6u64, 1u64),
        (6, 4, 5, 1),
        (18, 8, 18, 2),
        (32, 16, 20, 1),
    ];
    for (leaves, spines, hosts, cables) in trees {
        let spec =
            format!("leafspine leaves={leaves} spines={spines} hosts={hosts} links={cables}");
        let mut f = gen(&spec);
        f.hints = Default::default();
        for engine in ["ftree", "updn", "dnup"] {
            let what = format!("{engine} on {spec}");
            let (r, notes) = route_plain(engine, &f);
            assert_complete_and_deadlock_free(&f, &r, &what, &notes);
            let (load, _) = loads(&f, &r);
            let max = load.iter().copied().max().unwrap();
            let into_leaf = hosts * (leaves - 1) * hosts;
            let bound = into_leaf.div_ceil(spines * cables).div_ceil(hosts) * hosts;
            assert_eq!(max, bound, "{what}: busiest link {max}; notes {notes:?}");
        }
    }
}

/// SuperPOD-style trees: every pair, no credit loop, compute-to-compute paths of at most 4
/// switch hops (leaf, spine, core, spine, leaf), and leaf uplinks within 5 % of the bound
/// their cables allow, for ftree, updn and dnup.
/// `lenient`: a leaf uplink may exceed the bound where it cannot be relieved without
/// loading a link at least as busy: every destination it carries could only move to another
/// shortest uplink whose onward path (the tables from that spine on), before it joins the
/// old one, crosses a link that would then carry at least as much as the uplink does now.
fn superpod_case(spec: &str, lenient: bool) {
    let mut f = gen(spec);
    f.hints = Default::default();
    let is_compute = |e: u32| {
        let d = &f.node(f.port(f.end_ports[e as usize]).node).desc;
        d.starts_with("dgx")
    };
    for engine in ["ftree", "updn", "dnup"] {
        let what = format!("{engine} on {spec}");
        let (r, notes) = route_plain(engine, &f);
        assert_complete_and_deadlock_free(&f, &r, &what, &notes);
        // Leaf uplinks within 5 % of the bound the uplinks allow. With cables missing, a
        // tapered core or management leaves sharing a spine's core cables, a leaf's uplinks
        // may stay above it where the links beyond them are the bottleneck: the traffic the
        // damage forces through a few links (e.g. the two cables of a management spine), or
        // the core links of an oversubscribed tree. Then (`lenient`) the tables must be at
        // the balance pass's objective, the sorted vector of link loads, busiest first:
        // some link that is no leaf uplink carries at least as much as the busiest uplink
        // (the uplinks are not the fabric's bottleneck), and no destination is left that
        // could leave the uplink for links all less busy (a move that would lower the
        // sorted vector). Meeting the bound there would raise a busier link (see
        // docs/benchmarks.md, issue 11, "the objective"). Where the uplinks are the busiest
        // links, no such move is left and they are within 10 % of the bound, the tables are
        // at the pass's objective too: the bound (Hall's, per leaf) need not be reachable
        // with the other leaves' destinations on the same spines (a random case: ftree's
        // uplinks at 324 against 306 with 318 elsewhere, where updn's uplinks reach 312
        // with 348 elsewhere). Loads move in steps of a leaf's hosts (one destination's
        // traffic), so "at least as much" is up to one step of the busiest uplink's leaf:
        // a random case had a leaf without its cable to one spine at 252 on its cable to
        // another, while the third spine's core cables, shared with two management leaves
        // and cut to at least 240 by the traffic leaving the unit, stood at 246 (a move of
        // one destination of 6 hosts there would give them 252: no lower sorted vector).
        let u = superpod_uplinks(engine, &f, &r);
        let (up, bound) = (u.max, u.bound);
        eprintln!(
            "{what}: leaf uplinks {up}, bound {bound}, busiest other link {}, uplinks above 1.05x the bound {}",
            u.elsewhere, u.over
        );
        assert!(
            up * 100 <= bound * 105
                || (lenient
                    && u.free.is_none()
                    && (u.elsewhere + u.step >= up || up * 100 <= bound * 110)),
            "{what}: leaf uplinks carry {up} host pairs, the bound is {bound} (busiest other link {}); a leaf entry that could move off an uplink above it onto links all below it: {:?}; notes {notes:?}",
            u.elsewhere, u.free
        );
        let (_, paths) = loads(&f, &r);
        for i in 0..paths.len() {
            let src_is_leaf = f
                .node(f.switches[paths.src[i] as usize])
                .name
                .contains("-leaf");
            // (With cables missing, the shortest way may itself be longer.)
            if src_is_leaf && is_compute(paths.dst[i]) && !spec.contains("missing") {
                assert!(
                    paths.hops(i) <= 4,
                    "{what}: a compute path of {} switch hops",
                    paths.hops(i)
                );
            }
        }
    }
}

#[test]
fn superpod_style_trees_route_every_pair_without_credit_loops() {
    superpod_case(
        "superpod su=1 nodes=4 rails=2 spines=2 uplinks=4 cores=2 radix=41",
        false,
    );
    superpod_case("superpod su=2", false);
    superpod_case("superpod su=4 radix=41", false);
    // shapes that were off before the chains of the balance pass and the tree's own ranks
    // for updn: one scalable unit, single spine cables, cores hanging off one spine
    // (lenient: ftree's last balance phase moves one leaf entry onto an uplink, 60 against
    // a bound of 55, where that relieves a busier link; the busiest stays at 66, and no
    // entry can leave that uplink for links all below it)
    superpod_case(
        "superpod su=3 nodes=5 rails=1 spines=2 uplinks=2 cores=4",
        true,
    );
    superpod_case(
        "superpod su=1 nodes=4 rails=2 spines=2 uplinks=2 cores=4",
        false,
    );
    superpod_case(
        "superpod su=1 nodes=4 rails=3 spines=3 uplinks=3 cores=6",
        false,
    );
    superpod_case(
        "superpod su=3 nodes=5 rails=3 spines=3 uplinks=6 cores=6 missing=4 missing-seed=2",
        false,
    );
    superpod_case("superpod su=2 missing=6 missing-seed=5", false);
    superpod_case(
        "superpod su=1 nodes=6 rails=2 spines=3 uplinks=5 cores=6 missing=4 missing-seed=19",
        false,
    );
    superpod_case(
        "superpod su=1 nodes=3 rails=4 spines=2 uplinks=4 cores=4 missing=6 missing-seed=61",
        false,
    );
    // random cases of the property below: ftree's last balance phase, then at most three
    // rounds, stopped a move short (here a leaf entry that could leave an uplink at 156
    // for links all below it, which its fourth round moves); it now runs until a round
    // moves nothing (2 of 1,392 random specs failed before, none of 6,926 since)
    superpod_case(
        "superpod su=4 nodes=6 rails=3 spines=4 uplinks=6 cores=8 missing=2 missing-seed=71",
        true,
    );
    superpod_case(
        "superpod su=2 nodes=4 rails=4 spines=2 uplinks=4 cores=4 missing=4 missing-seed=44",
        true,
    );
    // ftree's uplinks the busiest links at 324, 5.9 % above their bound of 306, with no
    // single move left (see `superpod_case`)
    superpod_case(
        "superpod su=4 nodes=6 rails=4 spines=4 uplinks=4 cores=8 missing=6 missing-seed=43",
        true,
    );
    // a random case: ftree's fan-down gave a leaf a six-hop path to a management host (up
    // through a spine that lost its core cables to the one root) where a neighbouring spine
    // offers a legal four-hop one; the balance pass's moves keep lengths, so the leaf's
    // uplink carried 27 host pairs against a bound of 24 until its first phase shortened
    // such paths
    superpod_case(
        "superpod su=2 nodes=3 rails=1 spines=4 uplinks=4 cores=8 missing=4 missing-seed=15",
        true,
    );
    // random cases: a move the uplink check offered would have added a down->up turn
    // (su2-leaf0 onto the spine that lost both core cables); uplinks at 252 against a bound
    // of 156 where the core cables beyond them stand at 246 (see `superpod_case`)
    superpod_case(
        "superpod su=3 nodes=4 rails=2 spines=4 uplinks=5 cores=8 missing=4 missing-seed=48",
        true,
    );
    superpod_case(
        "superpod su=4 nodes=6 rails=3 spines=3 uplinks=4 cores=6 missing=2 missing-seed=17",
        true,
    );
    // ftree keeps the max link load below updn's (229 against 255 over all end ports)
    // and leaves one leaf above its bound, under the busier management-spine cables
    superpod_case(
        "superpod su=2 nodes=5 rails=1 spines=3 uplinks=3 cores=6 missing=2 missing-seed=46",
        true,
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn superpod_style_trees_with_random_missing_cables(
        su in 1u32..=4, nodes in 2u32..=6, rails in 1u32..=4, spines in 1u32..=4,
        extra in 0u32..=3, missing in 0u32..=6, seed in 0u64..100,
    ) {
        let uplinks = spines + extra;
        let cores = spines * 2;
        let spec = if missing == 0 {
            format!("superpod su={su} nodes={nodes} rails={rails} spines={spines} uplinks={uplinks} cores={cores}")
        } else {
            format!(
                "superpod su={su} nodes={nodes} rails={rails} spines={spines} uplinks={uplinks} cores={cores} missing={missing} missing-seed={seed}"
            )
        };
        // Small trees may not have that many cables to spare: those specs are refused.
        if spec.parse::<fabric::gen::TopoSpec>().unwrap().generate().is_ok() {
            // (random shapes include tapered cores, where core links are the bottleneck)
            superpod_case(&spec, true);
        }
    }
}

/// A spine that lost one of its core cables (the SuperPOD shape of the fixed tests, the cable
/// su0-spine0 - core0-0 failed): its remaining core cable and the core's cable down to it
/// would carry twice their share, unless the leaves below and the leaves of other units send
/// fewer destinations that way — moves of the balance pass above the busiest link's own
/// switch. Every pair, no credit loop, and the max link load well below what the tables had
/// before those moves (ftree 13,752, updn 14,749, on the same tree read from a file without
/// the cable; the intact tree: ftree 5,918, updn 6,847).
#[test]
fn a_spine_that_lost_a_core_cable_is_relieved_by_the_leaves() {
    let mut f = gen("superpod su=4 radix=41");
    f.hints = Default::default();
    let name = |p: fabric::PortId| f.node(f.port(p).node).name.as_str();
    let l = f
        .links
        .iter()
        .position(|k| {
            let (a, b) = (name(k.a), name(k.b));
            (a, b) == ("su0-spine0", "core0-0") || (a, b) == ("core0-0", "su0-spine0")
        })
        .expect("the cable");
    let mut mask = FaultMask::none(&f);
    mask.fail_link(fabric::LinkId(l as u32));
    for (engine, limit) in [("ftree", 11_000u64), ("updn", 12_500)] {
        let r = by_name(engine)
            .unwrap()
            .route_detailed(&f, &mask, &RouteOptions::default())
            .unwrap_or_else(|e| panic!("{engine}: {e}"));
        let rep = routing::cdg::check(&f, &r.routing, Some(&mask));
        assert_eq!(rep.pairs.ok, rep.pairs.checked, "{engine}");
        assert!(rep.deadlock_free, "{engine}: {:?}", r.notes);
        let max = routing::metrics::route_metrics(&f, &r.routing, Some(&mask))
            .link_load
            .max;
        eprintln!("{engine}: max link load {max} with su0-spine0 - core0-0 failed");
        assert!(
            max <= limit,
            "{engine}: max link load {max}; notes {:?}",
            r.notes
        );
    }
}

/// The vendored real dumps: ftree, updn and dnup complete and free of credit loops, without
/// any GUID file, and within the max link load OpenSM's same engine reaches with the right
/// root file (`shared/topologies/real/README.md`) where we match it.
#[test]
fn real_dumps_route_with_every_tree_engine() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    // (file stem, engine, OpenSM's max link load)
    let opensm: &[(&str, &str, u64)] = &[
        ("nvidia_selene_storage_hdr_edr_160sw_1247hca", "ftree", 2691),
        ("x5_psmn_voltaire4036_qdr_ddr_11sw_89hca", "ftree", 216),
        ("x5_psmn_voltaire4036_qdr_ddr_11sw_89hca", "updn", 356),
        ("x5_psmn_voltaire4036_qdr_ddr_11sw_89hca", "dnup", 220),
        ("nvidia_selene_storage_hdr_edr_160sw_1247hca", "updn", 9733),
        ("nvidia_selene_storage_hdr_edr_160sw_1247hca", "dnup", 9733),
        // (OpenSM's ftree cannot route tartu, root file or not, and falls back to minhop)
        ("tartu_sx6036_fdr_8sw_144hca", "ftree", 472),
        ("tartu_sx6036_fdr_8sw_144hca", "updn", 472),
        ("tartu_sx6036_fdr_8sw_144hca", "dnup", 472),
        ("switchib_edr_2level_6sw_96hca", "ftree", 144),
        ("switchib_edr_2level_6sw_96hca", "updn", 144),
        ("switchib_edr_2level_6sw_96hca", "dnup", 144),
    ];
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ibnd"))
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    for p in files {
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&p).unwrap();
        let mut none = |n: &str| -> Result<(String, Vec<u8>), String> { Err(n.to_string()) };
        let f = fabric::io::read(&bytes, &stem, &mut none, fabric::BuildOptions::default())
            .unwrap_or_else(|e| panic!("{stem}: {e}"))
            .fabric;
        for engine in ["ftree", "updn", "dnup"] {
            let what = format!("{engine} on {stem}");
            let (r, notes) = route_plain(engine, &f);
            assert_complete_and_deadlock_free(&f, &r, &what, &notes);
            let (load, _) = loads(&f, &r);
            let max = load
                .iter()
                .enumerate()
                .filter(|&(c, _)| {
                    let ch = fabric::ChannelId(c as u32);
                    f.is_switch(f.port(f.channel_src(ch)).node)
                        && f.is_switch(f.port(f.channel_dst(ch)).node)
                })
                .map(|(_, &l)| l)
                .max()
                .unwrap_or(0);
            if let Some(&(_, _, theirs)) =
                opensm.iter().find(|(s, e, _)| *s == stem && *e == engine)
            {
                assert!(
                    max <= theirs,
                    "{what}: max link load {max}, OpenSM {theirs}; notes {notes:?}"
                );
            }
        }
    }
}

/// Host traffic on the leaf uplinks of a SuperPOD-style tree against the bound the uplinks
/// allow: per leaf, for every set U of its uplinks, the destinations all of whose shortest
/// paths start on U need ceil(count / |U|) destinations on one of them, each carrying the
/// leaf's hosts as sources (without missing cables: ceil(destinations elsewhere / uplinks)).
/// Hosts per switch: its CAs other than aggregation nodes (service HCAs on management
/// leaves count).
fn hosts_per_switch(f: &Fabric) -> Vec<u64> {
    let mut hosts = vec![0u64; f.num_switches()];
    for &p in &f.end_ports {
        if is_aggregation(f, p) {
            continue;
        }
        if let Some(q) = f.remote(p) {
            let nd = f.port(q).node;
            if f.is_switch(nd) {
                hosts[f.switch_of(nd).unwrap().idx()] += 1;
            }
        }
    }
    hosts
}

/// An aggregation node's port (SHARP); every other CA is a host.
fn is_aggregation(f: &Fabric, p: fabric::PortId) -> bool {
    f.node(f.port(p).node)
        .desc
        .to_ascii_lowercase()
        .contains("aggregation node")
}

fn superpod_uplinks(engine: &str, f: &Fabric, r: &Routing) -> Uplinks {
    let paths = Paths::of(f, r, None);
    // the ranking the engine routed with: a move may not add a down->up turn to the path
    let rk = routing::engines::updown_ranking(engine, f, &RouteOptions::default())
        .unwrap()
        .expect("an up/down engine");
    // hosts: every CA but the aggregation nodes (service HCAs on management leaves count)
    let is_compute = |e: u32| !is_aggregation(f, f.end_ports[e as usize]);
    let n = f.num_switches();
    let hosts = hosts_per_switch(f);
    let total: u64 = hosts.iter().sum();
    // Every path's host traffic on every channel (`all`, for the busiest link that is no
    // uplink), and a leaf's own hosts' traffic on the first channel of its paths (`load`):
    // transit that missing cables force through a leaf (down to it and up again, on a second
    // VL) is no part of what its uplink choice can balance.
    let mut all = vec![0u64; f.links.len() * 2];
    let mut load = vec![0u64; f.links.len() * 2];
    for i in 0..paths.len() {
        if is_compute(paths.dst[i]) {
            let w = hosts[paths.src[i] as usize];
            let chans = paths.chans(i);
            for &c in chans {
                all[c as usize] += w;
            }
            if let Some(&c) = chans.first() {
                load[c as usize] += w;
            }
        }
    }
    let mut is_uplink = vec![false; f.links.len() * 2];
    let peer = |c: u32| {
        let d = f.port(f.channel_dst(fabric::ChannelId(c))).node;
        f.is_switch(d).then(|| f.switch_of(d).unwrap().idx())
    };
    // switch-graph distances (BFS from every switch)
    let topo = routing::engines::common::Topo::new(f, &FaultMask::none(f));
    let dist: Vec<Vec<u32>> = (0..n)
        .map(|a| routing::engines::ranking::bfs_levels(&topo, &[a]))
        .collect();
    let mut bound = 0u64;
    let mut max = 0u64;
    let mut leaves: Vec<(usize, Vec<(u32, usize)>)> = Vec::new();
    for (s, &here) in hosts.iter().enumerate() {
        if here == 0 || !f.node(f.switches[s]).name.contains("-leaf") {
            continue;
        }
        let ups: Vec<(u32, usize)> = f
            .switch_links(SwitchIdx(s as u32))
            .iter()
            .filter_map(|c| peer(c.0).map(|v| (c.0, v)))
            .filter(|&(_, v)| !f.node(f.switches[v]).name.contains("-leaf"))
            .collect();
        if ups.is_empty() {
            continue;
        }
        for &(c, _) in &ups {
            max = max.max(load[c as usize]);
            is_uplink[c as usize] = true;
        }
        leaves.push((s, ups.clone()));
        let k = ups.len();
        if k > 16 {
            bound = bound.max((total - here).div_ceil(k as u64) * here);
            continue;
        }
        // Hall's bound: the destinations that can only leave over the uplinks of a set U
        // (every shortest path to them starts on one of U) share U's links.
        let mut by_mask = std::collections::HashMap::<u32, u64>::new();
        for (m, &hm) in hosts.iter().enumerate() {
            if m == s || hm == 0 || dist[s][m] == u32::MAX {
                continue;
            }
            let mask = ups
                .iter()
                .enumerate()
                .filter(|&(_, &(_, v))| dist[v][m].saturating_add(1) == dist[s][m])
                .fold(0u32, |acc, (j, _)| acc | 1 << j);
            *by_mask.entry(mask).or_default() += hm;
        }
        for u in 1u32..(1 << k) {
            let inside: u64 = by_mask
                .iter()
                .filter(|&(&m, _)| m & !u == 0)
                .map(|(_, &c)| c)
                .sum();
            bound = bound.max(inside.div_ceil(u.count_ones() as u64) * here);
        }
    }
    let elsewhere = (0..all.len())
        .filter(|&c| !is_uplink[c] && peer(c as u32).is_some())
        .map(|c| all[c])
        .max()
        .unwrap_or(0);
    // Uplinks above 1.05x the bound: is there a destination on one that could move to
    // another shortest uplink with every link that gains its traffic staying below the
    // uplink's load (a move that lowers the sorted vector of loads)?
    let mut by_dest: Vec<Vec<usize>> = vec![Vec::new(); f.end_ports.len()];
    for i in 0..paths.len() {
        if is_compute(paths.dst[i]) {
            by_dest[paths.dst[i] as usize].push(i);
        }
    }
    // the switch-to-switch channels of the tables' path from switch `v` to LID `lid`
    let walk = |v: usize, lid: fabric::Lid| -> Option<Vec<u32>> {
        let (mut x, mut out) = (v, Vec::new());
        for _ in 0..=n {
            let port = r.out_port(SwitchIdx(x as u32), lid);
            let ch = f.out_channel(f.port_id(f.switches[x], port))?;
            match peer(ch.0) {
                Some(y) => {
                    out.push(ch.0);
                    x = y;
                }
                None => return Some(out),
            }
        }
        None
    };
    let (mut over, mut free) = (0, None);
    for (s, ups) in &leaves {
        let s = *s;
        for &(c, _) in ups {
            if load[c as usize] * 100 <= bound * 105 {
                continue;
            }
            over += 1;
            for list in &by_dest {
                let Some(&first) = list.first() else {
                    continue;
                };
                if free.is_some() {
                    break;
                }
                let m = paths.dst_sw[first] as usize;
                let (mut w, mut lid, mut old) = (0u64, None, None);
                for &i in list {
                    if paths.chans(i).contains(&c) {
                        w += hosts[paths.src[i] as usize];
                        lid = Some(paths.dlid[i]);
                    }
                    if paths.src[i] as usize == s {
                        old = Some(paths.chans(i));
                    }
                }
                let Some(old) = old else { continue };
                let Some(lid) = lid else { continue };
                if w == 0 {
                    continue;
                }
                for &(c2, v2) in ups {
                    if c2 == c || dist[v2][m].saturating_add(1) != dist[s][m] {
                        continue;
                    }
                    let Some(rest) = walk(v2, lid) else { continue };
                    // (no longer than the path it would replace)
                    if rest.len() + 1 > old.len() {
                        continue;
                    }
                    // no down->up turn more than the path it would replace (the rules of
                    // the engine's ranking: a legal path stays legal)
                    let turns = |first: usize, chans: &mut dyn Iterator<Item = u32>| {
                        let (mut at, mut down, mut k) = (first, false, 0);
                        for x in chans {
                            let next = peer(x).unwrap();
                            let up = rk.is_up_sw(at, next);
                            k += usize::from(down && up);
                            (at, down) = (next, !up);
                        }
                        k
                    };
                    let new_turns = turns(s, &mut std::iter::once(c2).chain(rest.iter().copied()));
                    if new_turns > turns(s, &mut old.iter().copied()) {
                        continue;
                    }
                    // the links that gain the traffic: the new path's, up to where it joins
                    // the old one
                    if std::iter::once(c2)
                        .chain(rest)
                        .filter(|x| !old.contains(x))
                        .all(|x| all[x as usize] + w < all[c as usize])
                    {
                        free = Some(format!(
                            "{}: destination LID {lid} ({w} host pairs) from {} at {} to {}",
                            f.node(f.switches[s]).name,
                            f.node(f.switches[peer(c).unwrap()]).name,
                            all[c as usize],
                            f.node(f.switches[v2]).name
                        ));
                        break;
                    }
                }
            }
        }
    }
    let step = leaves
        .iter()
        .filter(|(_, ups)| ups.iter().any(|&(c, _)| load[c as usize] == max))
        .map(|&(s, _)| hosts[s])
        .max()
        .unwrap_or(0);
    Uplinks {
        max,
        bound,
        elsewhere,
        over,
        step,
        free,
    }
}

/// The check behind `lenient` finds what it looks for: on an intact tree routed by updn
/// (every leaf uplink at its bound, no move left), one leaf's destinations piled onto its
/// first uplink put that uplink far above the bound, with moves back to the other uplinks
/// that load nothing as busy.
#[test]
fn the_leaf_uplink_check_finds_a_leaf_piled_on_one_uplink() {
    let mut f = gen("superpod su=2 nodes=4 rails=2 spines=2 uplinks=4 cores=4");
    f.hints = Default::default();
    let (mut r, _) = route_plain("updn", &f);
    let u = superpod_uplinks("updn", &f, &r);
    assert!(
        u.max * 100 <= u.bound * 105 && u.free.is_none(),
        "{:?}",
        u.free
    );
    let s = (0..f.num_switches())
        .find(|&s| f.node(f.switches[s]).name == "su0-leaf0")
        .expect("su0-leaf0");
    let ups: Vec<u8> = f
        .switch_links(SwitchIdx(s as u32))
        .iter()
        .filter(|&&c| {
            let d = f.port(f.channel_dst(c)).node;
            f.is_switch(d) && f.node(d).name.contains("spine")
        })
        .map(|&c| f.port(f.channel_src(c)).num)
        .collect();
    assert!(ups.len() > 1, "{ups:?}");
    let row = r.lft_of_mut(SwitchIdx(s as u32));
    let mut piled = 0;
    for port in row.iter_mut() {
        if ups[1..].contains(port) {
            *port = ups[0];
            piled += 1;
        }
    }
    assert!(piled > 0);
    let u = superpod_uplinks("updn", &f, &r);
    assert!(
        u.max * 100 > u.bound * 105 && u.free.is_some(),
        "leaf uplinks {} against the bound {}, free move {:?}",
        u.max,
        u.bound,
        u.free
    );
}

/// What [`superpod_uplinks`] found.
struct Uplinks {
    /// The busiest leaf uplink (its leaf's own hosts' traffic).
    max: u64,
    /// The highest per-leaf bound.
    bound: u64,
    /// The busiest switch-to-switch link that is no leaf uplink.
    elsewhere: u64,
    /// Leaf uplinks above 1.05x the bound.
    over: usize,
    /// One destination's traffic on the busiest uplink: its leaf's hosts (the most of such
    /// leaves where several uplinks are that busy).
    step: u64,
    /// A move that would relieve one of them without loading a link as busy, if any.
    free: Option<String>,
}

/// Where the leaf-uplink bound and the fabric's busiest link conflict, on an intact tree:
/// `superpod su=1 nodes=4 rails=1 spines=4 uplinks=5 cores=8`. The management spine hangs
/// off core0-0 and core1-0; the two management leaves on su0-spine0 reach the two behind
/// the management spine only through su0-spine0 -> core0-0 (36 host pairs, forced on every
/// shortest-path routing), and su0-leaf0 reaches those 6 management hosts only through
/// spine 0 (then the same cable) or spine 1. Every engine leaves su0-leaf0's cable to spine
/// 1 at 24 host pairs, above 1.05x the bound of 21; at most 22 there means one of those
/// destinations through spine 0, and su0-spine0 -> core0-0 at 40 instead of 36. The balance
/// pass keeps the busiest link down (the sorted vector of link loads, busiest first), so
/// this leaf stays above the bound: the decision this test pins down.
#[test]
fn a_leaf_stays_above_its_bound_where_meeting_it_would_raise_the_busiest_link() {
    let spec = "superpod su=1 nodes=4 rails=1 spines=4 uplinks=5 cores=8";
    let mut f = gen(spec);
    f.hints = Default::default();
    let sw = |name: &str| {
        (0..f.num_switches())
            .find(|&s| f.node(f.switches[s]).name == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let (leaf, sp0, sp1, c00) = (
        sw("su0-leaf0"),
        sw("su0-spine0"),
        sw("su0-spine1"),
        sw("core0-0"),
    );
    let (m0, m1, m2, m3) = (
        sw("mgmt-leaf0"),
        sw("mgmt-leaf1"),
        sw("mgmt-leaf2"),
        sw("mgmt-leaf3"),
    );
    // the cable su0-spine0 - core0-0, and switch distances with and without it
    let peer = |c: fabric::ChannelId| {
        let d = f.port(f.channel_dst(c)).node;
        f.is_switch(d).then(|| f.switch_of(d).unwrap().idx())
    };
    let hot = *f
        .switch_links(SwitchIdx(sp0 as u32))
        .iter()
        .find(|&&c| peer(c) == Some(c00))
        .expect("su0-spine0 -> core0-0");
    let link = f
        .links
        .iter()
        .position(|k| k.a == f.channel_src(hot) || k.b == f.channel_src(hot))
        .expect("its link");
    let dist = |mask: &FaultMask, a: usize| {
        let topo = routing::engines::common::Topo::new(&f, mask);
        routing::engines::ranking::bfs_levels(&topo, &[a])
    };
    let intact = FaultMask::none(&f);
    let mut cut = FaultMask::none(&f);
    cut.fail_link(fabric::LinkId(link as u32));
    // forced: every shortest path from the management leaves on spine 0 to those behind
    // the management spine, and from spine 0 to them, takes the cable
    for a in [m0, m1, sp0] {
        for b in [m2, m3] {
            assert!(
                dist(&cut, a)[b] > dist(&intact, a)[b],
                "{} -> {} has a shortest path without the cable",
                f.node(f.switches[a]).name,
                f.node(f.switches[b]).name
            );
        }
    }
    // su0-leaf0's shortest ways to them start at spine 0 or spine 1 only
    let d = dist(&intact, leaf);
    for b in [m2, m3] {
        let firsts: Vec<usize> = f
            .switch_links(SwitchIdx(leaf as u32))
            .iter()
            .filter_map(|&c| peer(c))
            .filter(|&v| dist(&intact, v)[b] + 1 == d[b])
            .collect();
        assert!(
            firsts.iter().all(|&v| v == sp0 || v == sp1) && firsts.contains(&sp1),
            "{firsts:?}"
        );
    }
    let on = hosts_per_switch(&f);
    let hosts = |s: usize| on[s];
    let forced = (hosts(m0) + hosts(m1)) * (hosts(m2) + hosts(m3));
    let behind = hosts(m2) + hosts(m3);
    assert_eq!((forced, behind, hosts(leaf)), (36, 6, 4));
    for engine in ["ftree", "updn", "dnup"] {
        let (r, notes) = route_plain(engine, &f);
        assert_complete_and_deadlock_free(&f, &r, engine, &notes);
        let u = superpod_uplinks(engine, &f, &r);
        // the busiest link carries exactly the forced traffic; the leaf's cable to spine 1
        // carries all 6 destinations behind the management spine
        assert_eq!(
            (u.max, u.bound, u.elsewhere),
            (behind * hosts(leaf), 21, forced),
            "{engine}"
        );
        assert!(u.free.is_none(), "{engine}: {:?}", u.free);
        // within 1.05x the bound (22) the cable to spine 1 holds at most 5 of the 6, so
        // one goes by spine 0 and su0-spine0 -> core0-0 carries 40
        let at_most = u.bound * 105 / 100 / hosts(leaf);
        assert_eq!(at_most, behind - 1);
        assert!(forced + (behind - at_most) * hosts(leaf) > u.elsewhere);
    }
}

/// ftree gives no entry a path longer than its ranking needs, at LMC 2 too (where the
/// balance pass does not run, but its first phase does): on the random SuperPOD case whose
/// fat-tree pass reached a management host from a leaf over six links between switches (up
/// to the one root and down) where a neighbouring spine offers a legal four, every LID of
/// that host is four links from the leaf, at LMC 0 and at LMC 2, and the routing stays
/// complete and free of credit loops.
#[test]
fn ftree_paths_are_no_longer_than_the_ranking_needs_at_lmc_2_too() {
    let spec = "superpod su=2 nodes=3 rails=1 spines=4 uplinks=4 cores=8 missing=4 missing-seed=15";
    for lmc in [0u8, 2] {
        let mut f = gen(spec).with_lmc(lmc).unwrap();
        f.hints = Default::default();
        let (r, notes) = route_plain("ftree", &f);
        let what = format!("ftree at LMC {lmc} on {spec}");
        assert_complete_and_deadlock_free(&f, &r, &what, &notes);
        let sw = |name: &str| {
            (0..f.num_switches())
                .find(|&s| f.node(f.switches[s]).name == name)
                .unwrap_or_else(|| panic!("{name}"))
        };
        let leaf = sw("su0-leaf0");
        let host = f
            .end_ports
            .iter()
            .copied()
            .find(|&p| f.node(f.port(p).node).name == "mgmt-2 HCA-0")
            .expect("the management host");
        let base = f.port(host).lid;
        for lid in base..base + (1 << lmc) {
            // links between switches from the leaf: follow the tables to the host's port
            let (mut x, mut hops) = (leaf, 0);
            loop {
                let port = r.out_port(SwitchIdx(x as u32), lid);
                let out = f.port_id(f.switches[x], port);
                let next = f.remote(out).expect("a cabled port");
                if next == host {
                    break;
                }
                let n = f.port(next).node;
                x = f.switch_of(n).expect("a switch on the way").idx();
                hops += 1;
                assert!(hops < 16, "{what}: LID {lid} loops");
            }
            assert_eq!(hops, 4, "{what}: LID {lid} is {hops} links from su0-leaf0");
        }
    }
}
