//! `fabroute fault` as a user runs it: fault specifications, what it refuses and why, and
//! the pairs it reports cut off or dropped.

use std::path::Path;

use crate::common;
use common::{check_set, example, fr, summary, tmp};

/// RFTR's tables over `--memory-limit`: refused before they are built, with the estimate
/// and what to do, exit status 3; within it the same fault repairs.
#[test]
fn fault_refuses_tables_over_the_memory_limit() {
    let d = tmp("fault-memory");
    let net = example("torus2d_4x4_h2.net");
    let args = |limit: &'static str| {
        [
            "fault",
            &net,
            "--fail",
            "link:S_0_0/3",
            "--summary-only",
            "--memory-limit",
            limit,
            "-o",
            d.to_str().unwrap(),
        ]
        .map(String::from)
    };
    let o = fr(&args("0.000001").each_ref().map(String::as_str));
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("reachability tables") && err.contains("--memory-limit"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let o = fr(&args("1").each_ref().map(String::as_str));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A sweep of random samples holds the start and a state per thread: each gets its share
    // of the limit.
    let jsonl = d.join("sweep.jsonl");
    let sweep = |limit: &str| {
        fr(&[
            "--threads",
            "2",
            "sweep",
            &net,
            "--faults",
            "2",
            "--samples",
            "2",
            "--memory-limit",
            limit,
            "-o",
            jsonl.to_str().unwrap(),
        ])
    };
    let o = sweep("0.000001");
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds up to 3 RFTR states"), "{err}");
    let o = sweep("1");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn fault_rejects_bad_specs_and_repairs_good_ones() {
    let d = tmp("fault");
    let o = fr(&[
        "fault",
        &example("torus2d_4x4_h2.net"),
        "--fail",
        "link:S_0_0/1",
        "-o",
        d.to_str().unwrap(),
    ]);
    // An HCA's cable: its end port is cut off (see tests/operator.rs).
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("1 end port(s) cut off"));
    let o = fr(&[
        "fault",
        &example("torus2d_4x4_h2.net"),
        "--fail",
        "link:S_0_0/3",
        "--fail",
        "switch:S_2_2",
        "-o",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&d);
    assert_eq!(s["rftr"]["supported"], true);
    assert!(s["rftr"]["affected_pairs"].as_u64().unwrap() > 0);
    let lst = std::fs::read_to_string(d.join("opensm-subnet.lst")).unwrap();
    assert!(
        !lst.contains("{S_2_2}"),
        "a failed switch must not appear in subnet.lst"
    );
    assert!(d.join("delta.txt").exists() && d.join("delta.json").exists());
}

/// A fault that splits the fabric (a cable of a row of four switches): exit 1, as the pairs
/// cut off are not delivered, and the report says they are cut off rather than RFTR's
/// failure: "supported" (every pair a live path joins is routed) holds for RFTR and full
/// reconfiguration alike.
#[test]
fn fault_that_splits_the_fabric_says_the_pairs_are_cut_off() {
    let d = tmp("split");
    let net = d.join("row.net");
    let g = fr(&["gen", "mesh", "4x1", "hcas=2", "-o", net.to_str().unwrap()]);
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let o = fr(&[
        "--json",
        "fault",
        net.to_str().unwrap(),
        "--fail",
        "link:S_1_0/3",
        "-o",
        d.join("out").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("all cut off: no live path is left"), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &s["rftr"];
    assert!(r["unsupported_pairs"].as_u64().unwrap() > 0);
    assert_eq!(r["disconnected_pairs"], r["unsupported_pairs"]);
    assert_eq!(r["steps"][0]["disconnected_pairs"], r["unsupported_pairs"]);
    // every pair a live path joins is routed, by RFTR and by full reconfiguration alike
    assert_eq!(r["supported"], true, "{s}");
    let full = &s["full_reconfiguration"];
    assert_eq!(full["supported"], true, "{s}");
    assert_eq!(full["disconnected_pairs"], r["unsupported_pairs"], "{s}");
}

/// A loopback cable (both ends on one switch, as in the vendored Mellanox lab dump) cannot
/// be failed, and the error says what it is.
#[test]
fn a_loopback_cable_is_named_as_such() {
    let d = tmp("loopback");
    let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/mellanox_lab_small_topo_hdr_edr_fdr_sharp_loopback.ibnd");
    let o = fr(&[
        "fault",
        dump.to_str().unwrap(),
        "--fail",
        "link:0x2c903007b78b0/29",
        "-o",
        d.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("is a loopback cable"), "{err}");
}

/// A ports report (`ibnetdiscover -p`) and iblinkinfo's output (vendored real tool output) are
/// read like any fabric: `info` tells the format, `route` and `fault` work on a ports report
/// and their tables check clean.
#[test]
fn a_ports_report_routes_and_repairs() {
    let d = tmp("ports_report");
    let rep =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/diags/x5_dual_port.ports");
    let rep = rep.to_str().unwrap();
    let o = fr(&["--json", "info", rep]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "ibnetdiscover ports report", "{v}");
    assert_eq!(v["end_ports"], 152, "{v}");
    let lnk =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/diags/x5_dual_port.linkinfo");
    let o = fr(&["--json", "info", lnk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "iblinkinfo", "{v}");
    assert_eq!(v["end_ports"], 152, "{v}");
    let out = d.join("route");
    let o = fr(&["route", rep, "-R", "ftree", "-o", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = fr(&[
        "check",
        rep,
        "--lfts",
        out.join("opensm-lfts.dump").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = d.join("fault");
    let o = fr(&[
        "fault",
        rep,
        "--engine",
        "updn",
        "--fail",
        "link:0x0008f10500200b50/1",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("680 repaired, 0 unsupported") && err.contains("union CDG acyclic"),
        "{err}"
    );
}

/// The same link twice to `--fail` (from either end), or a link of a switch failed before it,
/// is a usage error (exit 2) naming both specs.
#[test]
fn failing_the_same_link_twice_is_an_error() {
    let d = tmp("twice");
    let net = example("torus2d_4x4_h2.net");
    let out = d.join("f");
    for (first, second, what) in [
        (
            "link:S_0_0/3",
            "link:S_0_0/3",
            "that link has already failed",
        ),
        (
            "link:S_0_0/3",
            "link:S_1_0/4",
            "that link has already failed",
        ),
        (
            "switch:S_0_0",
            "link:S_1_0/4",
            "that switch has already failed",
        ),
        (
            "switch:S_0_0",
            "switch:S_0_0",
            "that switch has already failed",
        ),
    ] {
        let o = fr(&[
            "fault",
            &net,
            "--fail",
            first,
            "--fail",
            second,
            "-o",
            out.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{first} {second}: {err}");
        assert!(
            err.contains(&format!(
                "--fail {second:?} (fault 2) repeats --fail {first:?} (fault 1): {what}"
            )),
            "{err}"
        );
        assert!(!out.exists(), "nothing is written on a usage error");
    }
    // Two different links are fine.
    let o = fr(&[
        "fault",
        &net,
        "--fail",
        "link:S_0_0/3",
        "--fail",
        "link:S_0_0/5",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.join("summary.json").exists());
}

/// `--fail switch:X` also takes a switch's node description (names change between formats,
/// descriptions do not), and says so when several switches share it.
#[test]
fn faults_name_switches_by_description_too() {
    let d = tmp("bydesc");
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let tartu = real.join("tartu_sx6036_fdr_8sw_144hca.ibnd");
    let fail = |fabric: &Path, spec: &str, out: &str| {
        fr(&[
            "--json",
            "fault",
            fabric.to_str().unwrap(),
            "--engine",
            "updn",
            "--fail",
            spec,
            "-o",
            d.join(out).to_str().unwrap(),
        ])
    };
    let by_name = fail(&tartu, "switch:S-f4521403001165a0", "name");
    let by_desc = fail(&tartu, "switch:MF0;ib5:SX6036/U1", "desc");
    assert_eq!(by_name.status.code(), by_desc.status.code());
    let v = |o: &std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert_eq!(
        v(&by_name)["rftr"]["affected_pairs"],
        v(&by_desc)["rftr"]["affected_pairs"]
    );
    let x5 = real.join("x5_psmn_voltaire4036_qdr_ddr_11sw_89hca.ibnd");
    let o = fail(&x5, "switch:Infiniscale-IV Mellanox Technologies", "two");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("2 switches have the description"), "{err}");
}

/// Found by a robustness hunt on real dumps: a dual-port HCA whose second port's switch fails.
/// The files `fault` writes leave that port's LIDs out (the subnet file does not list the
/// port), in the LFT dump and in opensm.fdbs, so `check` reads both and agrees with `fault`.
#[test]
fn fault_files_leave_out_the_dead_port_of_a_dual_port_hca() {
    let d = tmp("dualport");
    let net = d.join("dual.net");
    std::fs::write(
        &net,
        "Switch\t8 \"S1\"\n[1]\t\"S2\"[1]\n[2]\t\"S3\"[2]\n[3]\t\"h1\"[1]\n[4]\t\"d\"[1]\n\n\
         Switch\t8 \"S2\"\n[1]\t\"S1\"[1]\n[2]\t\"S3\"[1]\n[3]\t\"h2\"[1]\n\n\
         Switch\t8 \"S3\"\n[1]\t\"S2\"[2]\n[2]\t\"S1\"[2]\n[3]\t\"h3\"[1]\n[4]\t\"d\"[2]\n\n\
         Hca\t1 \"h1\"\n[1]\t\"S1\"[3]\n\nHca\t1 \"h2\"\n[1]\t\"S2\"[3]\n\n\
         Hca\t1 \"h3\"\n[1]\t\"S3\"[3]\n\nHca\t2 \"d\"\n[1]\t\"S1\"[4]\n[2]\t\"S3\"[4]\n",
    )
    .unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = d.join("f");
    let o = fr(&[
        "fault",
        &s(&net),
        "--engine",
        "updn",
        "--fail",
        "switch:S3",
        "-o",
        &s(&out),
    ]);
    let (c, code) = check_set(&out);
    assert_eq!(code, o.status.code(), "{c}");
    assert_eq!(c["pairs"]["ok"], c["pairs"]["checked"]);
    // the same with opensm.fdbs as the LFTs
    let p = |n: &str| s(&out.join(n));
    let (lst, fdbs, sl2vl, psl) = (
        p("opensm-subnet.lst"),
        p("opensm.fdbs"),
        p("opensm-sl2vl.dump"),
        p("opensm-path-sl.psl"),
    );
    let mut args = vec!["check", &lst, "--lfts", &fdbs, "--sl2vl", &sl2vl];
    // (no path-SL file when every pair uses SL 0)
    if out.join("opensm-path-sl.psl").exists() {
        args.extend(["--psl", &psl]);
    }
    let o = fr(&args);
    assert_eq!(
        o.status.code(),
        code,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Found by `scripts/fault-hunt.py` on the real dumps: on a two-switch lab fabric the one
/// cable between the switches failed (60 pairs cut off, `fault` exit 1, as `check`'s), then
/// one of the switches; its end ports, and so those pairs, are gone, and `check` on what
/// `fault` wrote passed while `fault` still exited 1. The exit status now counts the pairs of
/// end ports still alive (`unrouted_pairs`).
#[test]
fn pairs_cut_off_then_dropped_do_not_fail_fault() {
    let d = tmp("cutdrop");
    let lab = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/mellanox_lab_small_topo_hdr_edr_fdr_sharp_loopback.ibnd");
    let cable = "link:S-0002c903007b78b0/1";
    for (faults, code, unrouted) in [
        (vec![cable], 1, 60),
        (vec![cable, "switch:S-0002c903007b78b0"], 0, 0),
        (vec![cable, "switch:S-b8599f0300fc6de4"], 0, 0),
    ] {
        let out =
            d.join(faults.len().to_string() + faults.last().unwrap().replace(':', "_").as_str());
        let mut args = vec!["--json", "fault", lab.to_str().unwrap(), "--engine", "updn"];
        for f in &faults {
            args.extend(["--fail", f]);
        }
        args.extend(["-o", out.to_str().unwrap()]);
        let o = fr(&args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{faults:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["rftr"]["unrouted_pairs"], unrouted, "{faults:?}");
        assert_eq!(v["rftr"]["disconnected_pairs"], 60, "{faults:?}");
        let (c, ccode) = check_set(&out);
        assert_eq!(ccode, Some(code), "{faults:?}: {c}");
    }
}
