//! `fabroute fault --from DIR`: repairs of the tables already deployed (a `route -o` set or
//! OpenSM's dump directory), their LIDs kept, the delta equal to what `fabroute diff` finds;
//! `--summary-only`; the incremental check against `--full-check`.

use std::path::Path;

use crate::common;
use common::{check_set_with, fr, tmp};

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The LFT entries `fabroute diff A B --json` counts.
fn diff_entries(a: &Path, b: &Path) -> u64 {
    let o = fr(&[
        "diff",
        &a.display().to_string(),
        &b.display().to_string(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "the sets differ");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["totals"]["lft_entries"].as_u64().unwrap()
}

/// A `route -o` set at LMC 0 repaired in place: the LIDs are the set's (`diff` compares the
/// two sets, which it refuses across different LIDs), RFTR's own delta is exactly what
/// `diff` finds with `--minimal`, `delta_to_deployed` is what it finds with the completion
/// for checkers, and `check` passes on the result. Two faults in sequence.
#[test]
fn from_a_route_set_keeps_its_lids_and_the_delta_is_the_diff() {
    let d = tmp("from-route");
    let net = d.join("k.net");
    ok(&fr(&[
        "gen",
        "ktree",
        "4",
        "3",
        "-o",
        &net.display().to_string(),
    ]));
    let set = d.join("set");
    ok(&fr(&[
        "route",
        &net.display().to_string(),
        "-R",
        "updn",
        "--lmc",
        "0",
        "-o",
        &set.display().to_string(),
    ]));
    let faults = ["--fail", "link:L1_0.0_0/5", "--fail", "link:L2_1_0.1/2"];
    for minimal in [true, false] {
        let out = d.join(format!("out{minimal}"));
        let mut args = vec!["fault", "--from"];
        let (s, o) = (set.display().to_string(), out.display().to_string());
        args.extend([s.as_str(), "--engine", "updn", "-o", o.as_str()]);
        args.extend(faults);
        if minimal {
            args.push("--minimal");
        }
        ok(&fr(&args));
        let sum = json(&out.join("summary.json"));
        assert_eq!(sum["lmc"], 0);
        assert!(sum["from"].as_str().unwrap().ends_with("set"));
        let rftr = sum["rftr"]["lft_entries"].as_u64().unwrap();
        let to_deployed = sum["delta_to_deployed"]["lft_entries"].as_u64().unwrap();
        let diff = diff_entries(&set, &out);
        assert!(rftr > 0);
        assert_eq!(to_deployed, diff);
        assert_eq!(sum["delta_to_deployed"]["sl2vl_entries"], 0);
        if minimal {
            assert_eq!(rftr, diff, "RFTR's delta is the whole difference");
        } else {
            assert!(rftr <= diff);
            let c = check_set_with(&out, &[]);
            assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stdout));
        }
    }
}

/// OpenSM's own dumps: LASH at LMC 0 has no virtual LID for a repaired path on a fresh VL,
/// so every affected pair is unsupported and counted as wanting a LID (exit 1); OpenSM's
/// Up*/Down* from roots fabroute does not rank from is refused with the advice to give them.
#[test]
fn from_opensm_dumps_reports_what_it_cannot_do() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/opensm");
    for (engine, code) in [("lash", 1), ("updn", 3)] {
        let d = tmp(&format!("from-osm-{engine}"));
        let set = d.join("set");
        std::fs::create_dir_all(&set).unwrap();
        std::fs::copy(
            data.join("torus2d_4x4_h2.subnet.lst"),
            set.join("opensm-subnet.lst"),
        )
        .unwrap();
        for e in std::fs::read_dir(data.join(format!("torus2d_4x4_h2.{engine}"))).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), set.join(e.file_name())).unwrap();
        }
        let out = d.join("out").display().to_string();
        let o = fr(&[
            "fault",
            "--from",
            &set.display().to_string(),
            "--engine",
            engine,
            "--fail",
            "link:S_0_0/3",
            "-o",
            &out,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{engine}: {err}");
        if code == 1 {
            let sum = json(&Path::new(&out).join("summary.json"));
            let step = &sum["rftr"]["steps"][0];
            assert!(step["unsupported_pairs"].as_u64().unwrap() > 0);
            assert_eq!(step["no_free_lid_pairs"], step["unsupported_pairs"]);
            assert!(err.contains("for want of a free LID"), "{err}");
        } else {
            assert!(err.contains("--roots"), "{err}");
        }
    }
}

/// `--summary-only` writes the summary and the delta, no table set; the incremental check
/// (the default) and `--full-check` give the same verdicts and repairs.
#[test]
fn summary_only_and_the_two_checks_agree() {
    let d = tmp("summary-only");
    let net = d.join("t.net");
    ok(&fr(&[
        "gen",
        "torus",
        "6x6",
        "hcas=2",
        "-o",
        &net.display().to_string(),
    ]));
    let mut steps = Vec::new();
    for full in [false, true] {
        let out = d.join(format!("o{full}"));
        let (n, o) = (net.display().to_string(), out.display().to_string());
        let mut args = vec!["fault", n.as_str(), "--engine", "updn", "--summary-only"];
        args.extend(["--fail", "link:S_0_0/3", "--fail", "switch:S_2_3", "-o", &o]);
        if full {
            args.push("--full-check");
        }
        ok(&fr(&args));
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.starts_with("opensm")), "{names:?}");
        assert!(names.contains(&"delta.txt".to_string()));
        steps.push(json(&out.join("summary.json"))["rftr"]["steps"].clone());
    }
    let (inc, full) = (&steps[0], &steps[1]);
    for i in 0..2 {
        for k in [
            "affected_pairs",
            "repaired_pairs",
            "union_deadlock_free",
            "undelivered_selected_pairs",
        ] {
            assert_eq!(inc[i][k], full[i][k], "step {i} {k}");
        }
    }
}

/// A table set describes itself (issue 42): `check D`, `stats D` and `trace D SRC DST` read
/// every file of the set; `check F --lfts D/opensm-lfts.dump` takes the set's SL2VL and path
/// SLs beside the LFTs (without them dfsssp's clean tables looked deadlocked) and says so;
/// the fabric file a `fault` set was not written for is refused with a pointer to the set's
/// own; a fabric file without `--lfts` is a usage error.
#[test]
fn sets_describe_themselves() {
    let d = tmp("sets");
    let net = d.join("t.net");
    ok(&fr(&[
        "gen",
        "torus",
        "4x4",
        "hcas=2",
        "-o",
        &net.display().to_string(),
    ]));
    let (n, set) = (net.display().to_string(), d.join("dfsssp"));
    let s = set.display().to_string();
    ok(&fr(&["route", &n, "-R", "dfsssp", "-o", &s]));
    assert!(set.join("opensm-sl2vl.dump").exists());
    let lfts = set.join("opensm-lfts.dump").display().to_string();
    let o = fr(&["check", &n, "--lfts", &lfts]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("opensm-sl2vl.dump beside the LFTs"), "{err}");
    // the LFTs alone (no set beside them): identity SL2VL, SL 0 everywhere, credit loops
    let alone = d.join("alone.dump");
    std::fs::copy(set.join("opensm-lfts.dump"), &alone).unwrap();
    let o = fr(&["check", &n, "--lfts", &alone.display().to_string()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "without the set's VLs: credit loops"
    );
    ok(&check_set_with(&set, &[]));
    ok(&fr(&["check", &s]));
    // a path-SL file cut short: a warning with the count, an error with --strict
    let psl = std::fs::read_to_string(set.join("opensm-path-sl.psl")).unwrap();
    let cut = d.join("cut.psl");
    let keep: Vec<&str> = psl.lines().take(100).collect();
    std::fs::write(&cut, keep.join("\n")).unwrap();
    let c = cut.display().to_string();
    let o = fr(&["check", &s, "--psl", &c]);
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("(source, DLID) pairs of the fabric have no path SL"));
    let o = fr(&["check", &s, "--psl", &c, "--strict"]);
    assert_eq!(o.status.code(), Some(3));
    ok(&fr(&["stats", &s, "--ebb-runs", "0"]));
    let o = fr(&["trace", &s, "H_0_0_0", "H_3_3_1"]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains("delivered"));
    let o = fr(&["check", &n]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--lfts"));
    // a fault set (LMC 2) against the original fabric file
    let f = d.join("fault").display().to_string();
    ok(&fr(&[
        "fault",
        &n,
        "--engine",
        "updn",
        "--fail",
        "link:S_0_0/3",
        "-o",
        &f,
    ]));
    let flfts = format!("{f}/opensm-lfts.dump");
    let o = fr(&["check", &n, "--lfts", &flfts]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("whose own fabric is"), "{err}");
    ok(&fr(&["check", &f]));
}
