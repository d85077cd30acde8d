//! Small contracts an operator relies on (issue 42, item 9): `convert -o -` writes to
//! standard output, `fault` and `sweep` take `-R` as `route` does, and a port out of range in
//! `--fail` is a usage error.

use crate::common;
use common::{example, fr, summary, tmp};

#[test]
fn convert_to_standard_output() {
    let o = fr(&[
        "convert",
        &example("torus2d_4x4_h2.net"),
        "-o",
        "-",
        "--to",
        "json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "fabroute-fabric");
    assert!(!std::path::Path::new("-").exists(), "no file named '-'");
    let o = fr(&[
        "convert",
        &example("torus2d_4x4_h2.net"),
        "-o",
        "-",
        "--to",
        "json",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn fault_takes_dash_r_and_port_ranges_are_usage_errors() {
    let d = tmp("dash-r");
    let out = d.join("o").display().to_string();
    let net = example("torus2d_4x4_h2.net");
    let o = fr(&[
        "fault",
        &net,
        "-R",
        "updn",
        "--fail",
        "link:S_0_0/3",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fr(&[
        "fault",
        &net,
        "-R",
        "updn",
        "--fail",
        "link:S_0_0/9",
        "-o",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has ports 1..=6"));
}

/// A pid of no running process: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    pid
}

/// A commit killed between its two renames leaves no set `D`, the old set at
/// `.D.fabroute-old.PID` and the whole new one at `.D.fabroute-tmp.PID`. The next command that
/// reads `D` puts the new set in place and says so; with only the old set left aside, it puts
/// that back; a command writing `D` recovers the same way before it writes.
#[test]
fn a_set_left_by_an_interrupted_commit_is_recovered() {
    let d = tmp("interrupted-commit");
    let net = example("torus2d_4x4_h2.net");
    let route = |engine: &str, out: &std::path::Path| {
        let o = fr(&[
            "route",
            &net,
            "-R",
            engine,
            "-o",
            &out.display().to_string(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let set = d.join("D");
    let engine_of = |p: &std::path::Path| {
        let v = summary(p);
        v["engine_used"].as_str().unwrap().to_string()
    };
    // The old set (updn) aside, the new one (dor) whole in the temporary directory.
    let pid = dead_pid();
    route("updn", &d.join(format!(".D.fabroute-old.{pid}")));
    route("dor", &d.join(format!(".D.fabroute-tmp.{pid}")));
    let o = fr(&["check", &set.display().to_string()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("recovered the new set"), "{err}");
    assert_eq!(engine_of(&set), "dor");
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["D".to_string()], "leftovers removed");
    // Only the old set aside (the new one gone): it goes back, here for a writer.
    std::fs::rename(&set, d.join(format!(".D.fabroute-old.{}", dead_pid()))).unwrap();
    let o = fr(&["stats", &set.display().to_string()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("recovered the previous set"), "{err}");
    assert_eq!(engine_of(&set), "dor");
    std::fs::rename(&set, d.join(format!(".D.fabroute-old.{}", dead_pid()))).unwrap();
    route("updn", &set);
    assert_eq!(engine_of(&set), "updn");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
}

/// Operators name nodes as they know them: `ib5` for the switch described
/// `MF0;ib5:SX6036/U1`, `stage97` for the host `stage97 mlx4_0` (the Tartu dump), in `trace`
/// and in `fault --fail`, whatever the case; a prefix that fits no node is an error that lists
/// similar nodes.
#[test]
fn short_names_from_descriptions_name_nodes() {
    let d = tmp("short-names");
    let dump = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/tartu_sx6036_fdr_8sw_144hca.ibnd")
        .display()
        .to_string();
    let set = d.join("set").display().to_string();
    let o = fr(&["route", &dump, "-R", "updn", "-o", &set]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fr(&["trace", &set, "stage97", "ib5", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("stage97 mlx4_0"), "{text}");
    assert!(text.contains("MF0;ib5:SX6036/U1"), "{text}");
    let o = fr(&["trace", &set, "stage", "ib5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("similar nodes"),
        "{err}"
    );
    let out = d.join("fault").display().to_string();
    let o = fr(&[
        "fault",
        &dump,
        "--engine",
        "updn",
        "--fail",
        "switch:IB5",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = summary(&d.join("fault"));
    assert_eq!(v["faults"][0], "switch:IB5");
    let step = &v["rftr"]["steps"][0];
    assert_eq!(
        step["element"], "S-f4521403001165a0",
        "the switch described ib5"
    );
    assert!(step["dropped_pairs"].as_u64().unwrap() > 0, "{step}");
}

/// An HCA's own cable can fail (operators lose those most often): the end port is cut off,
/// with every pair to and from it, the other end ports of its switch keep their paths, and
/// the tables written pass `check`.
#[test]
fn an_hca_cable_fails_and_its_pairs_are_cut_off() {
    let d = tmp("hca-cable");
    let out = d.join("out");
    let o = fr(&[
        "fault",
        &example("torus2d_4x4_h2.net"),
        "--engine",
        "updn",
        "--fail",
        "link:H_1_1_0/1",
        "--fail",
        "link:S_0_0/3",
        "-o",
        &out.display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("link:H_1_1_0/1: 0 pairs affected"), "{err}");
    assert!(err.contains("1 end port(s) cut off"), "{err}");
    let v = summary(&out);
    assert_eq!(v["rftr"]["steps"][0]["dropped_pairs"], 1);
    assert_eq!(v["rftr"]["unrouted_pairs"], 0);
    let c = fr(&["check", &out.display().to_string()]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stdout));
    // The switch side of the same kind of cable names it too.
    let o = fr(&[
        "fault",
        &example("torus2d_4x4_h2.net"),
        "--engine",
        "updn",
        "--fail",
        "link:S_1_1/1",
        "-o",
        &d.join("out2").display().to_string(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `sweep --samples K` says when draws repeat or when K covers every combination (then each
/// is evaluated once); `merge` prints a summary for people, not raw JSON.
#[test]
fn sweep_samples_say_what_they_cover_and_merge_speaks_plainly() {
    let d = tmp("sweep-samples");
    let net = d.join("t.net").display().to_string();
    let o = fr(&["gen", "torus", "3x3", "hcas=1", "-o", &net]);
    assert!(o.status.success());
    let one = d.join("one.jsonl").display().to_string();
    let o = fr(&[
        "sweep",
        &net,
        "--faults",
        "1",
        "--samples",
        "50",
        "-o",
        &one,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("at least the 18 combinations") && err.contains("evaluated once"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&one).unwrap().lines().count(), 18);
    let two = d.join("two.jsonl").display().to_string();
    let o = fr(&[
        "sweep",
        &net,
        "--faults",
        "2",
        "--samples",
        "50",
        "-o",
        &two,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("repeat a combination") && err.contains("of 153 possible"),
        "{err}"
    );
    let merged = d.join("m.jsonl").display().to_string();
    let o = fr(&["merge", &two, "-o", &merged]);
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(said.starts_with("50 scenarios: RFTR supported"), "{said}");
    assert!(!said.contains('{'), "{said}");
}

/// Nodes show as operators know them: on an ibnetdiscover dump, whose node names only repeat
/// GUIDs (`S-f4521403001165a0`), `trace`, `check`'s witnesses and `stats`' busiest links use
/// the description (`MF0;ib5:SX6036/U1`, `stage97 mlx4_0`); the JSON keeps the name too.
#[test]
fn dumps_show_descriptions_not_guid_names() {
    let d = tmp("labels");
    let dump = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/tartu_sx6036_fdr_8sw_144hca.ibnd")
        .display()
        .to_string();
    let set = d.join("set");
    let o = fr(&[
        "route",
        &dump,
        "-R",
        "minhop",
        "-o",
        &set.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lfts = set.join("opensm-lfts.dump").display().to_string();
    let o = fr(&["trace", &dump, "--lfts", &lfts, "stage97", "ib1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("src  stage97 mlx4_0"), "{text}");
    assert!(text.contains("MF0;ib5:SX6036/U1"), "{text}");
    assert!(!text.contains("S-f452"), "{text}");
    let o = fr(&["trace", &dump, "--lfts", &lfts, "stage97", "ib1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["source"]["node"], "stage97 mlx4_0");
    assert_eq!(v["source"]["name"], "H-24be05ffff985d90");
    let svg = d.join("svg");
    let o = fr(&[
        "stats",
        &dump,
        "--lfts",
        &lfts,
        "--svg",
        &svg.display().to_string(),
    ]);
    assert!(o.status.success());
    let chart = std::fs::read_to_string(svg.join("hottest-links.svg")).unwrap();
    assert!(chart.contains(":SX6036/U1["), "{chart}");
    assert!(!chart.contains("S-f452"));
}
