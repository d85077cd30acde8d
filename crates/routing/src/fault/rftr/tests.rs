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
    let mut checked = 0;
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
            for &(e, _, slot) in &pairs {
                if e != last_e {
                    r.start_group(e);
                    last_e = e;
                }
                let s = r.slot_switch[slot as usize];
                r.prepare(s, e);
                let fast = r.best_candidate(s, e, None).map(|c| (c.trans, c.hops, c.c));
                let scan = r.scan_best(s, e).map(|c| (c.trans, c.hops, c.c));
                assert_eq!(fast, scan, "{spec}: link {l:?}, switch {s} to end {e}");
                let mut all = r.candidates(s, e);
                Rftr::sort_candidates(&mut all);
                assert!(all.iter().all(|c| c.trans < vls), "{spec}");
                let slow = all.first().map(|c| (c.trans, c.hops, c.c));
                assert_eq!(fast, slow, "{spec}: link {l:?}, switch {s} to end {e}");
                checked += 1;
                r.repair(slot, e);
            }
        }
    }
    assert!(checked > 100, "only {checked} pairs compared");
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
                seen[f.switch_of(f.port(f.channel_src(c0)).node).unwrap().idx()] = true;
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
