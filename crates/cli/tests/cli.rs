//! The `fabroute` binary as a user runs it: outputs, JSON keys, exit codes, error messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabroute"))
        .args(args)
        .output()
        .unwrap()
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fabroute-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn info_json_has_the_documented_keys() {
    let o = fr(&["info", &example("torus2d_4x4_h2.net"), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["switches"], 16);
    assert_eq!(v["cas"], 32);
    assert_eq!(v["routers"], 0);
    assert_eq!(v["links"], 64);
    assert_eq!(v["diameter"], 4);
}

#[test]
fn bad_input_is_a_located_error_and_exit_2() {
    let d = tmp("bad");
    let p = d.join("bad.net");
    std::fs::write(
        &p,
        "Switch\t4 \"a\"\n[1]\t\"b\"[1]\n[9]\t\"b\"[2]\n\nHca\t1 \"b\"\n[1]\t\"a\"[1]\n",
    )
    .unwrap();
    let o = fr(&["info", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.net:3"), "{err}");
    assert!(!err.contains("panicked"));
    let o = fr(&["info", d.join("missing.net").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

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
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
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

#[test]
fn chain_reports_failed_engines_and_unknown_names() {
    let d = tmp("chain");
    let o = fr(&[
        "route",
        &example("torus2d_4x4_h2.net"),
        "-R",
        "nosuch,ftree,updn",
        "-o",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["engine_requested"], "nosuch,ftree,updn");
    let failed: Vec<&str> = s["failed_engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["engine"].as_str().unwrap())
        .collect();
    assert_eq!(failed[0], "nosuch");
    assert_eq!(
        s["engine_used"],
        if failed.contains(&"ftree") {
            "updn"
        } else {
            "ftree"
        }
    );
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
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("only links between two switches"));
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
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["rftr"]["supported"], true);
    assert!(s["rftr"]["affected_pairs"].as_u64().unwrap() > 0);
    let lst = std::fs::read_to_string(d.join("opensm-subnet.lst")).unwrap();
    assert!(
        !lst.contains("{S_2_2}"),
        "a failed switch must not appear in subnet.lst"
    );
    assert!(d.join("delta.txt").exists() && d.join("delta.json").exists());
}
