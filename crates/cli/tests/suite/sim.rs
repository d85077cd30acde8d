//! `fabroute sim` as a user runs it: summary keys, series, pictures (well-formed SVG that
//! rsvg-convert renders), deadlock exit status, fault runs with the schemes overlaid, sweeps.

use std::path::Path;

use crate::common;
use common::{check_svg, fr, tmp};

fn gen(dir: &Path, spec: &[&str], name: &str) -> String {
    let p = dir.join(name).display().to_string();
    let mut args = vec!["gen"];
    args.extend_from_slice(spec);
    args.extend_from_slice(&["-o", &p]);
    let o = fr(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    p
}

/// `fabroute sim RING -R minhop EXTRA… -o OUT`.
fn sim_minhop(ring: &str, extra: &[&str], out: &Path) -> std::process::Output {
    let mut args = vec!["sim", ring, "-R", "minhop"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    fr(&args)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn d1a_ring_deadlocks_with_exit_1_and_the_cycle() {
    let d = tmp("ring");
    let ring = gen(&d, &["torus", "8", "hcas=1"], "ring.net");
    let out = d.join("out");
    let o = sim_minhop(&ring, &["--load", "0.8", "--time", "2ms", "--json"], &out);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, json(&out.join("summary.json")));
    for k in [
        "offered",
        "accepted",
        "packets_generated",
        "packets_delivered",
        "packets_dropped",
        "packets_in_network",
        "packet_hops",
        "deadlock",
        "deadlock_cycle",
        "latency_ns",
        "wall_seconds",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for k in ["mean", "p50", "p99"] {
        assert!(v["latency_ns"][k].is_number());
    }
    assert_eq!(v["deadlock"], true);
    let cyc = v["deadlock_cycle"].as_array().unwrap();
    assert_eq!(cyc.len(), 8);
    for b in cyc {
        assert!(b["switch"].as_str().unwrap().starts_with("S_"));
        assert!(b["guid"].as_str().unwrap().starts_with("0x"));
        assert!(b["port"].is_number() && b["vl"] == 0);
    }
    assert_eq!(v["meta"]["static_deadlock_free"], false);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("credit loop(s): the simulation may deadlock"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let csv = std::fs::read_to_string(out.join("series.csv")).unwrap();
    assert!(csv.starts_with("t_us,offered,injected,accepted,"));
    check_svg(&out.join("accepted.svg"));
    check_svg(&out.join("latency-histogram.svg"));
    // The dateline fixes it.
    let out2 = d.join("out2");
    let o = sim_minhop(
        &ring,
        &["--dateline", "--load", "1.0", "--time", "2ms"],
        &out2,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(json(&out2.join("summary.json"))["deadlock"], false);
}

/// The ring's shortest-path tables that deadlock on 1 VL (D1a) do not with hop-incremented
/// VLs over the same LFTs; a budget too small for the longest path is a clear error.
#[test]
fn hop_vls_over_cyclic_tables_do_not_deadlock() {
    let d = tmp("hopvls");
    let ring = gen(&d, &["torus", "8", "hcas=1"], "ring.net");
    let out = d.join("out");
    let o = sim_minhop(
        &ring,
        &["--hop-vls", "--load", "1.0", "--time", "2ms", "--json"],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deadlock"], false);
    assert_eq!(v["meta"]["hop_vls"], true);
    assert_eq!(v["meta"]["static_deadlock_free"], true);
    assert_eq!(v["meta"]["static_pairs_undelivered"], 0);
    // the configuration as run, load included
    assert_eq!(v["meta"]["config"]["traffic"]["load"], 1.0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("hop-incremented VLs: 4 VLs"));
    let o = sim_minhop(
        &ring,
        &["--hop-vls", "--max-vls", "2", "--time", "0.1ms"],
        &d.join("out2"),
    );
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--hop-vls") && err.contains("need 4 VLs"),
        "{err}"
    );
}

#[test]
fn fault_run_overlays_the_schemes() {
    let d = tmp("fault");
    let t = gen(&d, &["torus", "4x4", "hcas=2"], "t.net");
    let out = d.join("out");
    // A link fails at 0.4 ms of 1 ms, repaired by `repair`.
    let fault_run = |repair: &str, out: &Path| {
        fr(&[
            "sim",
            &t,
            "-R",
            "updn",
            "--load",
            "0.04",
            "--time",
            "1ms",
            "--warmup",
            "0.2ms",
            "--fail",
            "link:S_1_1/3",
            "--fail-at",
            "0.4ms",
            "--repair",
            repair,
            "--t-compute",
            "20us",
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let o = fault_run("none,rftr,full-static,full-dynamic", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&out.join("summary.json"));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        for k in ["dip", "recovery_us", "lft_blocks_sent", "packets_lost"] {
            assert!(r.get(k).is_some(), "missing {k}");
        }
    }
    let by = |s: &str| runs.iter().find(|r| r["scheme"] == s).unwrap();
    assert_eq!(by("none")["lft_blocks_sent"], 0);
    assert!(by("rftr")["lft_blocks_sent"].as_u64().unwrap() > 0);
    assert!(by("full-static")["fault"]["injection_stopped_us"].is_number());
    assert!(by("full-static")["lft_blocks_sent"].as_u64().unwrap() > 0);
    for s in ["no-repair", "rftr", "full-static", "full-dynamic"] {
        assert!(out.join(format!("series-{s}.csv")).exists(), "{s}");
    }
    let svg = std::fs::read_to_string(out.join("accepted.svg")).unwrap();
    for s in [
        "no repair",
        "rftr",
        "full-static",
        "full-dynamic",
        "link fails",
    ] {
        assert!(svg.contains(s), "{s} in the picture");
    }
    check_svg(&out.join("accepted.svg"));
    check_svg(&out.join("lost.svg"));
    // Full reconfiguration alone (no RFTR session beside it; LMC 0 then, the fabric's) routes
    // the damaged fabric too: blocks go out and the reconfiguration ends.
    let alone = d.join("alone");
    let o = fault_run("full-static", &alone);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // One run: the summary is that run.
    let r = &json(&alone.join("summary.json"));
    assert_eq!(r["scheme"], "full-static");
    assert!(r["lft_blocks_sent"].as_u64().unwrap() > 0, "{r}");
    assert!(r["fault"]["reconf_end_us"].is_number(), "{r}");
    // Tables from files cannot be repaired.
    let o = fr(&[
        "sim",
        &t,
        "--lfts",
        "x.dump",
        "--fail",
        "link:S_1_1/3",
        "--repair",
        "rftr",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn sweep_runs_in_parallel_and_draws_the_curves() {
    let d = tmp("sweep");
    let osm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/opensm");
    let lst = osm.join("torus2d_4x4_h2.subnet.lst");
    let dir = osm.join("torus2d_4x4_h2.lash");
    let out = d.join("out");
    let o = fr(&[
        "sim",
        lst.to_str().unwrap(),
        "--lfts",
        dir.join("opensm-lfts.dump").to_str().unwrap(),
        "--sl2vl",
        dir.join("opensm-sl2vl.dump").to_str().unwrap(),
        "--psl",
        dir.join("opensm-path-sl.psl").to_str().unwrap(),
        "--load",
        "0.2:1.0:0.4",
        "--time",
        "300us",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&out.join("summary.json"));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(v["meta"]["static_deadlock_free"], true);
    assert!(runs
        .iter()
        .all(|r| r["deadlock"] == false && r["vls"].as_u64().unwrap() > 1));
    let acc: Vec<f64> = runs
        .iter()
        .map(|r| r["accepted"].as_f64().unwrap())
        .collect();
    assert!((acc[0] - 0.2).abs() < 0.02 && acc[2] < 0.9, "{acc:?}");
    for f in ["throughput.svg", "latency.svg", "accepted-load0.2.svg"] {
        check_svg(&out.join(f));
    }
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    // Bad arguments are errors with exit 2.
    let o = fr(&[
        "sim",
        lst.to_str().unwrap(),
        "--lfts",
        "x",
        "--load",
        "2",
        "-o",
        "/tmp/x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("outside 0..=1"));
}

/// OpenSM's dfsssp tables of the 4x4 torus with SL 1 mapped to VL 15 (the drop lane) on
/// every row: the checker says those routes are dropped, and the simulator drops their
/// packets at the first switch instead of simulating a 16th lane.
#[test]
fn packets_mapped_to_vl15_are_dropped() {
    let d = tmp("vl15");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/opensm");
    let run = data.join("torus2d_4x4_h2.dfsssp");
    let sl2vl = std::fs::read_to_string(run.join("opensm-sl2vl.dump")).unwrap();
    let dropped: Vec<String> = sl2vl
        .lines()
        .map(|l| match l.split_once(':') {
            Some((ports, vls)) if ports.split_whitespace().count() == 2 => {
                let mut v: Vec<&str> = vls.split_whitespace().collect();
                v[1] = "15";
                format!("{ports}: {}", v.join(" "))
            }
            _ => l.to_string(),
        })
        .collect();
    let vl15 = d.join("vl15.sl2vl");
    std::fs::write(&vl15, dropped.join("\n")).unwrap();
    let p = |x: &Path| x.to_str().unwrap().to_string();
    let lst = p(&data.join("torus2d_4x4_h2.subnet.lst"));
    let tables = [
        "--lfts".to_string(),
        p(&run.join("opensm-lfts.dump")),
        "--sl2vl".into(),
        p(&vl15),
        "--psl".into(),
        p(&run.join("opensm-path-sl.psl")),
    ];
    let mut check = vec!["check".to_string(), lst.clone()];
    check.extend(tables.iter().cloned());
    let o = fr(&check.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("DROPPED"), "{text}");
    assert!(text.contains("dropped on VL 15: "), "{text}");
    // the JSON report counts them, and they are not among the pairs delivered
    check.push("--json".into());
    let o = fr(&check.iter().map(String::as_str).collect::<Vec<_>>());
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let dropped = c["dropped_on_vl15"].as_u64().unwrap();
    assert!(dropped > 0);
    assert_eq!(
        c["pairs"]["ok"].as_u64().unwrap() + dropped,
        c["pairs"]["checked"].as_u64().unwrap()
    );
    let out = d.join("out");
    let mut sim = vec!["--json".to_string(), "sim".into(), lst];
    sim.extend(tables.iter().cloned());
    sim.extend(["--load", "0.3", "--time", "0.2ms", "-o"].map(String::from));
    sim.push(p(&out));
    let o = fr(&sim.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["dropped_by_reason"]["vl_out_of_range"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(v["vls"].as_u64().unwrap() <= 15);
}

/// Usage errors come before any routing: with an engine that cannot route the fabric, a bad
/// setting still gets its own message and exit 2, not the engine's failure (exit 3).
#[test]
fn settings_are_checked_before_routing() {
    let d = tmp("validate");
    let t = gen(&d, &["torus", "4x4", "hcas=2"], "t.net");
    let out = d.join("out");
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", &t, "-R", "ftree", "-q"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-o", out.to_str().unwrap()]);
        let o = fr(&args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(3), "ftree cannot route a torus: {err}");
    for (extra, says) in [
        (&["--speedup", "0"][..], "speed-up"),
        (&["--pattern", "hotspot", "--hot", "99"][..], "hot host 99"),
        (
            &["--pattern", "hotspot", "--hot-fraction", "1.5"][..],
            "fraction 1.5",
        ),
        (&["--size", "20000"][..], "buffers"),
        (&["--warmup", "3ms", "--time", "2ms"][..], "--warmup"),
        (
            &[
                "--fail",
                "link:S_1_1/3",
                "--fail-at",
                "3ms",
                "--time",
                "2ms",
            ][..],
            "--fail-at",
        ),
        (
            &["--fail", "link:S_1_1/3", "--repair", "rftr", "--hop-vls"][..],
            "--hop-vls",
        ),
    ] {
        let (code, err) = run(extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(
            !err.contains("not a fat tree"),
            "{extra:?} routed first: {err}"
        );
    }
}
