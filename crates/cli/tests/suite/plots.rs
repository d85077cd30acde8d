//! The pictures (`--svg`, `plot`) and `merge` of sweep shards, as a user runs them.

use std::path::Path;

use crate::common;
use common::{check_svg, example, fr, tmp};

/// `stats --svg DIR` draws the load distribution per link class and the busiest links by name;
/// `check --svg FILE` draws every credit loop's witness on its switches; `plot sweep` draws the
/// fault-tolerance curves. Every picture is well-formed and renders; the figures in them are
/// the ones the text reports.
#[test]
fn pictures_of_loads_loops_and_fault_tolerance() {
    let d = tmp("svg");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // A 4-ary 2-tree routed by ftree: two link classes up and down, loads known.
    let net = d.join("k.net");
    assert!(fr(&["gen", "ktree", "4", "2", "-o", &s(&net)])
        .status
        .success());
    let r = d.join("r");
    assert_eq!(
        fr(&["route", &s(&net), "-R", "ftree", "-o", &s(&r)])
            .status
            .code(),
        Some(0)
    );
    let (lst, lfts) = (
        s(&r.join("opensm-subnet.lst")),
        s(&r.join("opensm-lfts.dump")),
    );
    let pics = d.join("pics");
    let o = fr(&[
        "stats",
        &lst,
        "--lfts",
        &lfts,
        "--ebb-runs",
        "0",
        "--svg",
        &s(&pics),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for f in ["link-loads.svg", "hottest-links.svg"] {
        check_svg(&pics.join(f));
    }
    // One histogram panel per class the text lists, titled with its link count.
    let dist = std::fs::read_to_string(pics.join("link-loads.svg")).unwrap();
    let classes = v["metrics"]["classes"].as_array().unwrap();
    assert!(classes.len() >= 2, "{classes:?}");
    for c in classes {
        let title = format!("{}: {} links", c["class"].as_str().unwrap(), c["links"]);
        let title = title.replace('>', "&gt;");
        assert!(dist.contains(&title), "{title} not in the picture");
    }
    // The busiest link's bar carries the maximum load.
    let hot = std::fs::read_to_string(pics.join("hottest-links.svg")).unwrap();
    let max = v["metrics"]["link_load"]["max"].as_u64().unwrap();
    assert!(hot.contains(&format!(">{max}</text>")), "max {max}");

    // Credit loops: minhop on a 4x4 torus has one cyclic component.
    let t = example("torus2d_4x4_h2.net");
    let m = d.join("m");
    assert_eq!(
        fr(&["route", &t, "-R", "minhop", "-o", &s(&m)])
            .status
            .code(),
        Some(1)
    );
    let loops = d.join("loops.svg");
    let o = fr(&[
        "check",
        &s(&m.join("opensm-subnet.lst")),
        "--lfts",
        &s(&m.join("opensm-lfts.dump")),
        "--svg",
        &s(&loops),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    check_svg(&loops);
    let pic = std::fs::read_to_string(&loops).unwrap();
    let cycles = v["cycles"].as_array().unwrap();
    assert!(!cycles.is_empty());
    let witness = cycles[0]["witness"].as_array().unwrap();
    // Every hop of the first witness is an arrow labelled with its ports and VL.
    for h in witness {
        let label = format!("p{}→p{} VL{}", h["port"], h["to_port"], h["vl"]);
        assert!(pic.contains(&label), "{label}");
        assert!(pic.contains(&format!(">{}</text>", h["switch"].as_str().unwrap())));
    }
    // Loop-free tables write no picture.
    let clean = d.join("clean.svg");
    let o = fr(&["check", &lst, "--lfts", &lfts, "--svg", &s(&clean)]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!clean.exists());

    // Fault tolerance from two sweeps of one fabric (1 and 2 faults).
    let mut files = Vec::new();
    for k in ["1", "2"] {
        let out = d.join(format!("t.k{k}.jsonl"));
        let o = fr(&[
            "sweep",
            &t,
            "--faults",
            k,
            "--samples",
            "20",
            "-o",
            &s(&out),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(s(&out));
    }
    // The incremental check gives the same lines, and says so in the summary.
    let inc = d.join("t.k2.inc.jsonl");
    let o = fr(&[
        "sweep",
        &t,
        "--faults",
        "2",
        "--samples",
        "20",
        "--check",
        "incremental",
        "-o",
        &s(&inc),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(&inc).unwrap(),
        std::fs::read_to_string(&files[1]).unwrap()
    );
    let sj: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("t.k2.inc.jsonl.summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(sj["check"], "incremental");
    let tol = d.join("tol.svg");
    let mut args = vec!["plot", "sweep"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", tol.to_str().unwrap(), "--json"]);
    let o = fr(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check_svg(&tol);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0]["faults"], 1);
    assert_eq!(pts[0]["scenarios"], 20);
    assert_eq!(pts[0]["fabric"], "torus2d_4x4_h2 (updn)");
    let pic = std::fs::read_to_string(&tol).unwrap();
    assert!(pic.contains("torus2d_4x4_h2 (updn): RFTR"));
    assert!(pic.contains("torus2d_4x4_h2 (updn): full reconfiguration"));
    // Not a sweep file: a located error.
    let o = fr(&["plot", "sweep", &lst, "-o", &s(&d.join("x.svg"))]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("opensm-subnet.lst:1: not a line of `fabroute sweep` output"));
}

/// `merge` says when shards are missing (from the summaries `sweep` writes beside its
/// output) and refuses shards of different sweeps; `plot sweep` counts a scenario given twice
/// once.
#[test]
fn merge_and_plot_see_missing_mixed_and_repeated_shards() {
    let d = tmp("shards");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let net = example("torus2d_4x4_h2.net");
    let sweep = |faults: &str, shard: &str, name: &str| {
        let out = d.join(name);
        let o = fr(&[
            "sweep",
            &net,
            "--faults",
            faults,
            "--samples",
            "12",
            "--shard",
            shard,
            "-o",
            &s(&out),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        s(&out)
    };
    let a0 = sweep("2", "0/3", "a0.jsonl");
    let a2 = sweep("2", "2/3", "a2.jsonl");
    let b1 = sweep("3", "1/3", "b1.jsonl");
    let merged = s(&d.join("m.jsonl"));
    let o = fr(&["merge", &a0, &a2, "-o", &merged]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("shards [1] of 3 are not among the inputs"),
        "{err}"
    );
    let o = fr(&["merge", &a0, &b1, "-o", &s(&d.join("x.jsonl"))]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("are shards of different sweeps: faults 2 against 3"),
        "{err}"
    );
    // the same file twice: counted once
    let o = fr(&[
        "--json",
        "plot",
        "sweep",
        &merged,
        &merged,
        "-o",
        &s(&d.join("p.svg")),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines = std::fs::read_to_string(&merged).unwrap().lines().count() as u64;
    assert_eq!(v["points"][0]["scenarios"].as_u64(), Some(lines));
    assert!(String::from_utf8_lossy(&o.stderr).contains("given more than once"));
}
