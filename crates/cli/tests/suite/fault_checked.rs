//! What `fabroute fault` writes, checked by `fabroute check`: virtual LIDs, VL bases,
//! unrepaired and uncovered pairs, SLs, credit loops.

use std::path::Path;

use crate::common;
use common::{check_set, example, fr, summary, tmp};

/// What `fault` writes is a whole table set a subnet manager programs: `check` on it (LMC from
/// its summary, with its SL2VL and path SLs) walks every LID of every LMC range. Virtual LIDs
/// no repair uses follow their base LID, so a repair without virtual LIDs checks clean.
#[test]
fn check_passes_on_what_fault_writes() {
    let d = tmp("faultcheck");
    let out = d.join("f");
    let o = fr(&[
        "fault",
        &example("torus2d_4x4_h2.net"),
        "--fail",
        "link:S_0_0/3",
        "--fail",
        "link:S_1_1/3",
        "--fail",
        "link:S_2_2/5",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["lmc"], 2);
    assert_eq!(s["rftr"]["max_virtual_lids_per_destination"], 0);
    // 32 end ports x 3 virtual LIDs each, all mirroring their base LID.
    assert_eq!(s["rftr"]["virtual_lids_mirroring_base"], 96);
    let (v, code) = check_set(&out);
    assert_eq!(code, Some(0), "{v}");
    // Every (source, LID) pair of the LMC ranges: 32 sources x 31 destinations x 4 LIDs.
    assert_eq!(v["pairs"]["checked"], 32 * 31 * 4);
    assert_eq!(v["pairs"]["ok"], 32 * 31 * 4);
    assert_eq!(v["deadlock_free"], true);
}

/// A repair that uses virtual LIDs and VL transitions: the pairs no source uses (other
/// sources toward those virtual LIDs, moved sources toward the base LID whose path died) are
/// completed for checkers, so `check` on what `fault` writes passes; `--minimal` writes only
/// what RFTR routes, and `check` then reports those pairs.
#[test]
fn check_passes_on_fault_output_with_virtual_lids_in_use() {
    let d = tmp("faultcheck_vlid");
    let fabric = example("torus2d_4x4_h2.net");
    let run = |name: &str, extra: &[&str]| {
        let out = d.join(name);
        let mut args = vec![
            "fault",
            "--json",
            fabric.as_str(),
            "--fail",
            "link:S_0_3/4",
            "--fail",
            "link:S_1_0/3",
            "-o",
        ];
        let o = out.to_str().unwrap().to_string();
        args.push(o.as_str());
        args.extend_from_slice(extra);
        let r = fr(&args);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let s: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        let (v, code) = check_set(&out);
        (s, v, code)
    };
    let (s, v, code) = run("full", &[]);
    assert!(
        s["rftr"]["max_virtual_lids_per_destination"]
            .as_u64()
            .unwrap()
            >= 1,
        "{s}"
    );
    assert!(s["rftr"]["max_transitions"].as_u64().unwrap() >= 1, "{s}");
    let comp = &s["rftr"]["completion_for_checkers"];
    assert_eq!(comp["applied"], true);
    assert!(comp["lft_entries"].as_u64().unwrap() > 0, "{comp}");
    assert_eq!(comp["uncovered"], 0);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["pairs"]["checked"], 32 * 31 * 4);
    assert_eq!(v["pairs"]["ok"], 32 * 31 * 4);
    assert_eq!(v["deadlock_free"], true);
    // --minimal: the same repair, without the completion; check finds the unused pairs.
    let (s2, v2, code2) = run("minimal", &["--minimal"]);
    assert_eq!(s2["rftr"]["lft_entries"], s["rftr"]["lft_entries"]);
    assert_eq!(code2, Some(1), "{v2}");
    assert!(v2["pairs"]["ok"].as_u64().unwrap() < 32 * 31 * 4);
}

/// torus-2QoS from the command line: the `torus-2QoS.conf` beside the fabric is read (and
/// said so), a bad `--torus-config` is an error naming file and line, and `fault` with
/// torus-2QoS or nue as the base writes a table set `check` accepts.
#[test]
fn torus2qos_reads_its_config_and_nue_and_torus2qos_are_rftr_bases() {
    let d = tmp("t2q");
    let fabric = example("torus2d_4x4_h2.net");
    let o = fr(&[
        "--json",
        "route",
        &fabric,
        "-R",
        "torus-2QoS",
        "-o",
        d.join("r").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("torus2d_4x4_h2.net.t2q.conf"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deadlock_free"], true);
    assert_eq!(v["max_link_load"], 48, "OpenSM's torus-2QoS on this fabric");
    let bad = d.join("bad.conf");
    std::fs::write(&bad, "torus 4 4 1\nxp_link 0x200000 0x200004\nbogus 7\n").unwrap();
    let o = fr(&[
        "route",
        &fabric,
        "-R",
        "torus-2QoS",
        "--torus-config",
        bad.to_str().unwrap(),
        "-o",
        d.join("b").to_str().unwrap(),
    ]);
    assert_ne!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.conf:3: unknown keyword \"bogus\""),
        "{err}"
    );
    for (engine, extra) in [("torus-2QoS", "4"), ("nue", "4")] {
        let out = d.join(format!("f-{engine}"));
        let r = fr(&[
            "fault",
            "--json",
            &fabric,
            "--engine",
            engine,
            "--vls",
            extra,
            "--repair-vls",
            "2",
            "--fail",
            "link:S_0_3/4",
            "--fail",
            "switch:S_2_2",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(
            r.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let s: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(s["rftr"]["supported"], true, "{engine}: {s}");
        let (v, _) = check_set(&out);
        assert_eq!(v["deadlock_free"], true, "{engine}: {v}");
    }
}

/// Over VL engines as RFTR bases, the tables `fault` writes deliver every (source, LID) with
/// no credit loop, even where the VLs above the base are too few for every unused pair: those
/// then go on the base's own VLs. The 4x4x4 torus case is the one where a first version of
/// that (layers seeded with the fault-free base's dependencies) closed a credit loop.
#[test]
fn fault_output_over_vl_bases_delivers_every_pair() {
    let d = tmp("faultcheck_vlbase");
    let t444 = d.join("t444.net");
    let r = fr(&[
        "gen",
        "torus",
        "4x4x4",
        "hcas=1",
        "-o",
        t444.to_str().unwrap(),
    ]);
    assert!(r.status.success());
    let t44 = example("torus2d_4x4_h2.net");
    let cases: [(&str, &str, &[&str]); 3] = [
        (t44.as_str(), "dfsssp", &["link:S_0_3/4", "link:S_1_0/3"]),
        (
            t444.to_str().unwrap(),
            "dfsssp",
            &["link:S_0_0_3/3", "link:S_0_3_1/3", "link:S_0_0_0/5"],
        ),
        (t444.to_str().unwrap(), "nue", &["link:S_0_1_3/3"]),
    ];
    for (i, (fabric, engine, faults)) in cases.iter().enumerate() {
        let out = d.join(format!("out{i}"));
        let o = out.to_str().unwrap().to_string();
        let mut args = vec![
            "fault",
            "--json",
            fabric,
            "--engine",
            engine,
            "-o",
            o.as_str(),
        ];
        for f in *faults {
            args.extend_from_slice(&["--fail", f]);
        }
        let r = fr(&args);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let s: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(
            s["rftr"]["completion_for_checkers"]["uncovered"], 0,
            "{engine} {faults:?}: {s}"
        );
        let (v, code) = check_set(&out);
        assert_eq!(v["deadlock_free"], true, "{engine} {faults:?}: {v}");
        assert_eq!(
            v["pairs"]["ok"], v["pairs"]["checked"],
            "{engine} {faults:?}: {v}"
        );
        assert_eq!(code, Some(0), "{v}");
    }
}

/// `--nue-effort`: 2 routes the example torus (every pair, no credit loop, and the first
/// note names more orders than at 1); 0 and 65 are refused with the range named.
#[test]
fn nue_effort_is_read_and_checked() {
    let d = tmp("nue-effort");
    let fabric = example("torus2d_4x4_h2.net");
    let orders = |effort: &str| {
        let o = fr(&[
            "--json",
            "route",
            &fabric,
            "-R",
            "nue",
            "--max-vls",
            "1",
            "--nue-effort",
            effort,
            "-o",
            d.join(effort).to_str().unwrap(),
            "--summary-only",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["deadlock_free"], true);
        assert_eq!(v["unreachable_pairs"], 0);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        let at = err.find("the best of ").expect("the orders note") + 12;
        err[at..]
            .split(' ')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap()
    };
    let (one, two) = (orders("1"), orders("2"));
    assert!(two > one, "{two} orders at effort 2, {one} at 1");
    for bad in ["0", "65"] {
        let o = fr(&[
            "route",
            &fabric,
            "-R",
            "nue",
            "--nue-effort",
            bad,
            "-o",
            "x",
        ]);
        assert_eq!(o.status.code(), Some(2), "clap's usage error");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--nue-effort") && err.contains("1..=64"),
            "{err}"
        );
    }
}

/// Where RFTR leaves pairs unrepaired (LASH on the x5 cluster with a spine switch failed:
/// every pair through it), `fault` says so with exit 1 and adds no route for checkers (a
/// completion would route those pairs outside the repair and delta.txt), so `check` on what
/// it wrote agrees: pairs not delivered, exit 1, and no credit loop.
#[test]
fn fault_and_check_agree_when_rftr_leaves_pairs_unrepaired() {
    let d = tmp("unrepaired");
    let x5 = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/x5_psmn_voltaire4036_qdr_ddr_11sw_89hca.ibnd");
    let out = d.join("f");
    let o = fr(&[
        "--json",
        "fault",
        x5.to_str().unwrap(),
        "--engine",
        "lash",
        "--fail",
        "switch:S-0008f10500108098",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let unsupported = v["rftr"]["unsupported_pairs"].as_u64().unwrap();
    assert!(unsupported > v["rftr"]["disconnected_pairs"].as_u64().unwrap());
    assert_eq!(v["rftr"]["completion_for_checkers"]["routes_added"], false);
    let (c, code) = check_set(&out);
    assert_eq!(code, Some(1));
    assert_eq!(c["deadlock_free"], true);
    let undelivered = c["pairs"]["checked"].as_u64().unwrap() - c["pairs"]["ok"].as_u64().unwrap();
    assert!(undelivered >= unsupported, "{undelivered} < {unsupported}");
    // an unsupported pair, named by port GUIDs, is found by `trace` on the files written
    // (whose node names are not the input's) and is not delivered there
    let ex = &v["rftr"]["steps"][0]["unsupported_examples"][0];
    let p = |n: &str| out.join(n).to_str().unwrap().to_string();
    let (lst, lfts, sl2vl, psl) = (
        p("opensm-subnet.lst"),
        p("opensm-lfts.dump"),
        p("opensm-sl2vl.dump"),
        p("opensm-path-sl.psl"),
    );
    let mut args = vec![
        "trace",
        &lst,
        ex["src_port_guid"].as_str().unwrap(),
        ex["dst_port_guid"].as_str().unwrap(),
        "--lfts",
        &lfts,
        "--sl2vl",
        &sl2vl,
    ];
    // (no path-SL file when every pair uses SL 0)
    if out.join("opensm-path-sl.psl").exists() {
        args.extend(["--psl", &psl]);
    }
    let o = fr(&args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{ex}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Found by a robustness hunt: `fault` and `check` on its files agree on the exit status, also
/// when the completion for checkers leaves unused pairs without a legal path (`uncovered`),
/// which `check` reports. Nue at 2 VLs leaves one VL to the repair; the hunt's case (4×4
/// torus, `link:S_1_1/5`: 16 uncovered) is covered since phantom walks may change VL where
/// they meet a repaired path; the 8×8 torus with one HCA per switch still leaves some.
#[test]
fn fault_and_check_agree_when_the_completion_leaves_pairs_uncovered() {
    let d = tmp("uncovered");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (t44, t88) = (d.join("t44.net"), d.join("t88.net"));
    assert!(fr(&["gen", "torus", "4x4", "-o", &s(&t44)])
        .status
        .success());
    assert!(fr(&["gen", "torus", "8x8", "hcas=1", "-o", &s(&t88)])
        .status
        .success());
    let mut uncovered_seen = false;
    for (net, engine, vls, cable, covered) in [
        (&t44, "nue", "2", "link:S_1_1/5", true),
        (&t44, "nue", "4", "link:S_1_1/5", true),
        (&t44, "updn", "2", "link:S_1_1/5", true),
        (&t88, "nue", "2", "link:S_0_2/4", false),
    ] {
        let what = format!("{} {engine} {vls} {cable}", net.display());
        let out = d.join(format!("{engine}{vls}"));
        let o = fr(&[
            "--json",
            "fault",
            &s(net),
            "--engine",
            engine,
            "--vls",
            vls,
            "--fail",
            cable,
            "-o",
            &s(&out),
        ]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let uncovered = v["rftr"]["completion_for_checkers"]["uncovered"]
            .as_u64()
            .unwrap();
        assert_eq!(uncovered == 0, covered, "{what}: {uncovered} uncovered");
        uncovered_seen |= uncovered > 0;
        assert_eq!(v["rftr"]["supported"], true, "{what}");
        let (c, code) = check_set(&out);
        assert_eq!(o.status.code(), code, "{what}: {c}");
        assert_eq!(code, Some(if uncovered > 0 { 1 } else { 0 }), "{what}");
        assert_eq!(c["deadlock_free"], true, "{what}");
        let undelivered =
            c["pairs"]["checked"].as_u64().unwrap() - c["pairs"]["ok"].as_u64().unwrap();
        assert_eq!(undelivered, uncovered, "{what}");
    }
    // a case with pairs uncovered is among them (if the completion learns to cover it, this
    // test should move to another uncovered case)
    assert!(uncovered_seen);
}

/// Found by a coverage run at 2 and 3 VLs: when RFTR leaves pairs unrepaired, `fault` wrote
/// tables in which `check` found credit loops (the walks of unused pairs along repaired paths,
/// on a base SL and so a base VL: 8×8 torus over nue, three failed cables). Now the completion
/// adds no route then, but gives unused pairs their SLs and takes away entries whose walks do
/// not deliver: `check` finds no credit loop, and the unrepaired pairs stay undelivered.
#[test]
fn fault_with_pairs_unrepaired_writes_tables_free_of_credit_loops() {
    let d = tmp("unrepaired-loops");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let net = d.join("t88.net");
    assert!(fr(&["gen", "torus", "8x8", "hcas=1", "-o", &s(&net)])
        .status
        .success());
    for vls in ["2", "3"] {
        let out = d.join(format!("nue{vls}"));
        let o = fr(&[
            "--json",
            "fault",
            &s(&net),
            "--engine",
            "nue",
            "--vls",
            vls,
            "--fail",
            "link:S_4_1/4",
            "--fail",
            "link:S_6_0/2",
            "--fail",
            "link:S_2_1/2",
            "-o",
            &s(&out),
        ]);
        assert_eq!(o.status.code(), Some(1), "{vls}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["rftr"]["supported"], false, "{vls}");
        let unsupported = v["rftr"]["unsupported_pairs"].as_u64().unwrap();
        assert!(unsupported > 0, "{vls}");
        let comp = &v["rftr"]["completion_for_checkers"];
        assert_eq!(comp["applied"], true, "{vls}");
        assert_eq!(comp["routes_added"], false, "{vls}");
        let (c, code) = check_set(&out);
        assert_eq!(code, Some(1), "{vls}: {c}");
        assert_eq!(c["deadlock_free"], true, "{vls}: {}", c["cycles"]);
        let undelivered =
            c["pairs"]["checked"].as_u64().unwrap() - c["pairs"]["ok"].as_u64().unwrap();
        assert!(undelivered >= unsupported, "{vls}");
    }
}

/// Found by a hunt over generators × bases × VLs with switch faults: a virtual LID that an
/// earlier repair used and a later fault moved its sources off kept its old repair tree, and
/// its unused pairs walked it on a base SL, closing a credit loop with the base paths (4×4
/// torus over dfsssp at 4 VLs, three cables then a switch). Now such a LID follows its base
/// LID again in what `fault` writes (`stale_virtual_lids`).
#[test]
fn fault_restores_virtual_lids_a_later_fault_left_unused() {
    let d = tmp("stale");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let net = d.join("t44.net");
    assert!(fr(&["gen", "torus", "4x4", "-o", &s(&net)])
        .status
        .success());
    let out = d.join("f");
    let o = fr(&[
        "--json",
        "fault",
        &s(&net),
        "--engine",
        "dfsssp",
        "--vls",
        "4",
        "--fail",
        "link:S_0_1/3",
        "--fail",
        "link:S_1_2/3",
        "--fail",
        "link:S_1_0/5",
        "--fail",
        "switch:S_1_2",
        "-o",
        &s(&out),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let comp = &v["rftr"]["completion_for_checkers"];
    assert!(comp["stale_virtual_lids"].as_u64().unwrap() > 0, "{comp}");
    let (c, code) = check_set(&out);
    assert_eq!(o.status.code(), code, "{c}");
    assert_eq!(c["deadlock_free"], true, "{}", c["cycles"]);
}

/// Found by `scripts/fault-hunt.py` with random options: over a VL engine `fault --sls 4`
/// routed the base on up to 7 SLs and then refused it ("the base uses 7 SLs: none of the 4
/// available is left for repaired paths", exit 3). The base now routes within the SLs that
/// leave one per repair VL; too few SLs for that is a usage error.
#[test]
fn fault_keeps_sls_for_repaired_paths_over_vl_bases() {
    let d = tmp("sls");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let net = d.join("df.net");
    assert!(fr(&["gen", "dragonfly", "4", "2", "2", "-o", &s(&net)])
        .status
        .success());
    let out = d.join("f");
    let run = |sls: &str, repair: &str| {
        fr(&[
            "--json",
            "fault",
            &s(&net),
            "--engine",
            "nue",
            "--vls",
            "8",
            "--repair-vls",
            repair,
            "--sls",
            sls,
            "--fail",
            "link:S_g5_r0/7",
            "-o",
            &s(&out),
        ])
    };
    let o = run("4", "1");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["rftr"]["sls_used"].as_u64().unwrap() <= 4,
        "{}",
        v["rftr"]
    );
    let (c, code) = check_set(&out);
    assert_eq!(code, Some(0), "{c}");
    let o = run("2", "2");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--sls 2 must leave the base engine"));
}
