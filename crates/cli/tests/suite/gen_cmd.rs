//! `fabroute gen` as a user runs it: every generator's fabric routable, and the edges of
//! its options.

use std::path::Path;

use crate::common;
use common::{check_set, example, fr, summary, tmp};

#[test]
fn gen_convert_and_route_write_what_they_say() {
    let d = tmp("gen");
    let net = d.join("t.net");
    assert!(
        fr(&["gen", "mesh", "3x3", "hcas=1", "-o", net.to_str().unwrap()])
            .status
            .success()
    );
    assert!(d.join("t.net.t2q.conf").exists());
    let json = d.join("t.json");
    assert!(fr(&[
        "convert",
        net.to_str().unwrap(),
        "--to",
        "json",
        "-o",
        json.to_str().unwrap()
    ])
    .status
    .success());
    let a: serde_json::Value =
        serde_json::from_slice(&fr(&["info", net.to_str().unwrap(), "--json"]).stdout).unwrap();
    let b: serde_json::Value =
        serde_json::from_slice(&fr(&["info", json.to_str().unwrap(), "--json"]).stdout).unwrap();
    assert_eq!(a["links"], b["links"]);
    assert_eq!(a["diameter"], b["diameter"]);
    let out = d.join("route");
    let o = fr(&[
        "route",
        json.to_str().unwrap(),
        "-R",
        "dor",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&out);
    for k in [
        "engine_requested",
        "engine_used",
        "pairs",
        "unreachable_pairs",
        "max_link_load",
        "mean_link_load",
        "avg_hops",
        "vls",
        "sls",
        "deadlock_free",
        "route_seconds",
    ] {
        assert!(!s[k].is_null(), "summary.json lacks {k}");
    }
    assert_eq!(s["deadlock_free"], true, "DOR on a mesh");
    assert_eq!(s["pairs"], 72);
    assert!(out.join("opensm-lfts.dump").exists());
    // The tables it wrote check clean; exit status follows the verdict.
    let o = fr(&[
        "check",
        out.join("opensm-subnet.lst").to_str().unwrap(),
        "--lfts",
        out.join("opensm-lfts.dump").to_str().unwrap(),
    ]);
    assert!(o.status.success());
}

/// `gen superpod` writes a net file and the cores as roots; `route` reads both (Up*/Down* from
/// the roots file, MinHop without), every pair is reachable despite the missing cables, and
/// the Up*/Down* tables check clean. The aggregation nodes keep their description.
#[test]
fn gen_superpod_is_routable() {
    let d = tmp("superpod");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let net = d.join("sp.net");
    let o = fr(&[
        "gen",
        "superpod",
        "su=2",
        "nodes=3",
        "rails=2",
        "spines=3",
        "uplinks=5",
        "cores=4",
        "missing=3",
        "-o",
        &s(&net),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 2 x (2 leaves + 3 spines) + 4 cores + 4 management leaves + the management spine
    assert_eq!(v["summary"]["switches"], 19);
    // 12 compute HCAs, 12 management HCAs, 19 aggregation nodes
    assert_eq!(v["summary"]["cas"], 43);
    let roots = std::fs::read_to_string(d.join("sp.net.roots")).unwrap();
    assert_eq!(roots.lines().count(), 4, "the cores: {roots}");
    let text = std::fs::read_to_string(&net).unwrap();
    assert_eq!(
        text.matches("# \"Mellanox Technologies Aggregation Node\"")
            .count(),
        19
    );
    for (engine, roots_arg) in [("updn", true), ("minhop", false)] {
        let out = d.join(engine);
        let mut args = vec!["route".to_string(), s(&net), "-R".into(), engine.into()];
        if roots_arg {
            args.extend(["--roots".to_string(), s(&d.join("sp.net.roots"))]);
        }
        args.extend(["-o".to_string(), s(&out)]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = fr(&args);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let sum = summary(&out);
        assert_eq!(sum["engine_used"], engine);
        assert_eq!(sum["unreachable_pairs"], 0, "{engine}");
        assert_eq!(sum["pairs"], 43 * 42, "{engine}");
        if engine == "updn" {
            assert_eq!(o.status.code(), Some(0));
            assert_eq!(sum["deadlock_free"], true);
            // Pairs without an up*/down* path (aggregation nodes on spines of different core
            // groups) change VL: the check needs the SL2VL tables and path SLs too.
            let c = fr(&[
                "check",
                &s(&out.join("opensm-subnet.lst")),
                "--lfts",
                &s(&out.join("opensm-lfts.dump")),
                "--sl2vl",
                &s(&out.join("opensm-sl2vl.dump")),
                "--psl",
                &s(&out.join("opensm-path-sl.psl")),
            ]);
            assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        }
    }
}

/// `gen dragonflyplus` (and its alias `dfplus`) writes the fabric and no roots file; Up*/Down*
/// routes it deadlock-free with every pair reachable.
#[test]
fn gen_dragonflyplus_is_routable() {
    let d = tmp("dfplus");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let net = d.join("dfp.net");
    let params = ["groups=4", "leaves=4", "spines=4", "hosts=4", "global=3"];
    for kind in ["dragonflyplus", "dfplus"] {
        let mut args = vec!["gen", kind];
        args.extend(params);
        let out = s(&net);
        args.extend(["-o", &out, "--json"]);
        let o = fr(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["summary"]["switches"], 32);
        assert_eq!(v["summary"]["cas"], 64);
        // 4 x 16 leaf-spine cables, 4 cables between each of the 6 pairs of groups
        assert_eq!(v["summary"]["switch_links"], 64 + 24);
        assert_eq!(v["summary"]["diameter"], 3);
        assert_eq!(v["companions"].as_array().unwrap().len(), 0);
    }
    assert!(!d.join("dfp.net.roots").exists());
    let out = d.join("updn");
    let o = fr(&["route", &s(&net), "-R", "updn", "-o", &s(&out)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let sum = summary(&out);
    assert_eq!(sum["deadlock_free"], true);
    assert_eq!(sum["unreachable_pairs"], 0);
    assert_eq!(sum["pairs"], 64 * 63);
    // a bad parameter is a usage error that names it
    let o = fr(&[
        "gen",
        "dfplus",
        "leaves=4",
        "spines=0",
        "hosts=4",
        "global=3",
        "-o",
        &s(&net),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("spines (per group) must be at least 1"));
}

/// Found by a robustness hunt over the generators' edges: values out of range are usage
/// errors (2); degenerate fabrics (no end-port pair, no link, one switch) write files `check`
/// reads back or says why not; `gen`'s advice names options it has.
#[test]
fn generator_edges_and_option_ranges() {
    let d = tmp("edges");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let t44 = example("torus2d_4x4_h2.net");
    let x = s(&d.join("x"));
    for args in [
        vec!["route", &t44, "-R", "nue", "--max-vls", "16", "-o", &x],
        vec!["route", &t44, "-R", "nue", "--sls", "0", "-o", &x],
        vec!["route", &t44, "-R", "updn", "--lmc", "8", "-o", &x],
        vec![
            "route",
            &t44,
            "-R",
            "lash",
            "--lash-start-vl",
            "8",
            "-o",
            &x,
        ],
        vec![
            "fault",
            &t44,
            "--vls",
            "16",
            "--fail",
            "link:S_0_0/3",
            "-o",
            &x,
        ],
        vec!["gen", "torus", "4x4", "lmc=8", "-o", &x],
        vec!["gen", "torus", "4x4", "hcas=-1", "-o", &x],
    ] {
        let o = fr(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // no end-port pair: the empty path-SL file reads back
    let h0 = s(&d.join("h0.net"));
    assert!(fr(&["gen", "torus", "3x3", "hcas=0", "-o", &h0])
        .status
        .success());
    let out = d.join("h0");
    assert!(fr(&["route", &h0, "-R", "nue", "-o", &s(&out)])
        .status
        .success());
    let (c, code) = check_set(&out);
    assert_eq!(code, Some(0), "{c}");
    // one switch, no link: route says its subnet file is empty, check says so too
    let one = s(&d.join("one.net"));
    assert!(fr(&["gen", "torus", "1", "hcas=0", "-o", &one])
        .status
        .success());
    let out = d.join("one");
    let o = fr(&["route", &one, "-R", "updn", "-o", &s(&out)]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no live link"));
    let o = fr(&[
        "check",
        &s(&out.join("opensm-subnet.lst")),
        "--lfts",
        &s(&out.join("opensm-lfts.dump")),
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the file is empty"));
    // a 1x1 torus has no seed link: no torus-2QoS config beside it
    let t11 = d.join("t11.net");
    assert!(fr(&["gen", "torus", "1x1", "-o", &s(&t11)])
        .status
        .success());
    assert!(!d.join("t11.net.t2q.conf").exists());
    // what an ibsim net file cannot carry: gen points at the formats that can
    let o = fr(&["gen", "torus", "4x4", "speed=XDR", "-o", &x]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--to json") && !err.contains("give --lossy"),
        "{err}"
    );
    let o = fr(&["gen", "ktree", "4", "2", "radix=255", "-o", &x]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("radix 255 is above"), "{err}");
    // nothing to sweep on a fabric without inter-switch links
    let o = fr(&["sweep", &one, "--faults", "1", "--exhaustive", "-o", &x]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no inter-switch link"));
    // the balance pass does not run with LMC > 0, and says so
    let o = fr(&["route", &t44, "-R", "updn", "--lmc", "2", "-o", &x]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("balance pass skipped"));
    // summary.json's pair counts add up in both units (every LID; base LIDs)
    let v = summary(&d.join("x"));
    let sum = |k: &str| -> u64 {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .sum()
    };
    let n = |k: &str| v[k].as_u64().unwrap();
    assert_eq!(
        sum("hop_histogram_all_lids") + n("unreachable_pairs"),
        n("pairs")
    );
    assert_eq!(sum("hop_histogram"), n("base_lid_pairs_delivered"));
    assert_eq!(n("pairs"), 4 * n("base_lid_pairs"));
}
