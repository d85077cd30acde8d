//! `route --mcast` and `check` of multicast tables: the IPoIB broadcast group on the shipped
//! 4x4 torus delivers once to every end port, with no credit loop together with unicast —
//! on up*/down* trees for updn, on an SL of its own for LASH — and ibdmchk, reading the same
//! opensm.mcfdbs, agrees (its verdict quoted below). Broken tables and bad group files are
//! reported with what is wrong and where.

use std::path::Path;
use std::process::Command;

use crate::common;
use common::{example, fr, summary, tmp};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `fabroute route` of the shipped 4x4 torus with `engine`, the IPoIB group and `extra`
/// options, into `out`.
fn route_torus(engine: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let (net, o) = (example("torus2d_4x4_h2.net"), s(out));
    let mut args = vec!["route", net.as_str(), "-R", engine, "--mcast", "ipoib"];
    args.extend(extra);
    args.extend(["-o", o.as_str()]);
    fr(&args)
}

/// ibdmchk's output on a set with `-M` (multicast included), or `None` when it is not
/// installed and `FABROUTE_NO_EXTERNAL_TOOLS` is set.
fn ibdmchk(dir: &Path, with_sls: bool) -> Option<String> {
    let have = Command::new("sh")
        .args(["-c", "command -v ibdmchk"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        assert!(
            std::env::var_os("FABROUTE_NO_EXTERNAL_TOOLS").is_some(),
            "ibdmchk is not installed: run scripts/install-test-deps.sh (or set FABROUTE_NO_EXTERNAL_TOOLS=1)"
        );
        return None;
    }
    let mut args = vec![
        "-s",
        "opensm-subnet.lst",
        "-f",
        "opensm.fdbs",
        "-m",
        "opensm.mcfdbs",
        "-M",
    ];
    if with_sls {
        args.extend(["-c", "opensm-path-sl.psl", "-d", "opensm-sl2vl.dump"]);
    }
    let o = Command::new("timeout")
        .arg("120")
        .arg("ibdmchk")
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn ipoib_on_updn_delivers_once_without_credit_loops_and_ibdmchk_agrees() {
    let d = tmp("mcast-updn");
    let set = d.join("set");
    let o = route_torus("updn", &set, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{err}");
    assert!(said.contains("up*/down* trees"), "{said}");
    let m = &summary(&set)["multicast"];
    assert_eq!(m["groups"], 1);
    assert_eq!(m["check"]["ok"], true);
    // One flood per sender switch (16), each reaching the 31 other end ports.
    assert_eq!(m["check"]["deliveries"], 16 * 31);
    assert_eq!(m["credit_loops_with_unicast"], 0);
    assert_eq!(m["unreached_members"], 0);
    let mcfdbs = std::fs::read_to_string(set.join("opensm.mcfdbs")).unwrap();
    assert_eq!(mcfdbs.matches("Switch 0x").count(), 16);
    assert!(mcfdbs.contains("LID    : Out Port(s)\n0xC000 : 0x001  0x002 "));
    let c = fr(&["check", &s(&set)]);
    let out = String::from_utf8_lossy(&c.stdout);
    assert!(c.status.success(), "{out}");
    assert!(
        out.contains("multicast") && out.contains("every receiver reached once"),
        "{out}"
    );
    if let Some(text) = ibdmchk(&set, false) {
        // ibdmchk: "-I- Multicast Group:0xC000 has:16 switches and:32 HCAs",
        // "-I- MFT added 104 edges to links dependency graph", "-I- no credit loops found"
        assert!(
            text.contains("Multicast Group:0xC000 has:16 switches and:32 HCAs"),
            "{text}"
        );
        assert!(text.contains("MFT added"), "{text}");
        assert!(text.contains("no credit loops found"), "{text}");
    }
}

/// LASH's unicast fills VL 0 and 1; shortest multicast trees on SL 0 close a credit loop
/// with it, so multicast moves to a free SL and VL. `check` reads that SL from the set's
/// summary; told SL 0 it finds the loop, as ibdmchk (which takes multicast on SL 0) does.
#[test]
fn ipoib_on_lash_takes_an_sl_of_its_own() {
    let d = tmp("mcast-lash");
    let set = d.join("set");
    let o = route_torus("lash", &set, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let m = &summary(&set)["multicast"];
    let sl = m["own_sl_vl"]["sl"].as_u64().unwrap();
    assert!(sl > 0, "{m}");
    assert_eq!(m["credit_loops_with_unicast"], 0);
    let c = fr(&["check", &s(&set)]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stdout));
    let c = fr(&["check", &s(&set), "--mcast-sl", "0"]);
    let out = String::from_utf8_lossy(&c.stdout);
    assert_eq!(c.status.code(), Some(1), "{out}");
    assert!(out.contains("CREDIT LOOP(S) with unicast"), "{out}");
    if let Some(text) = ibdmchk(&set, true) {
        // ibdmchk: "Found credit loop on: S0000000000200000/U1/P3 VL: 0"
        assert!(text.contains("Found credit loop"), "{text}");
    }
}

#[test]
fn broken_multicast_tables_and_group_files_are_reported() {
    let d = tmp("mcast-bad");
    let set = d.join("set");
    let net = example("torus2d_4x4_h2.net");
    let o = fr(&[
        "route",
        &net,
        "-R",
        "updn",
        "--mcast",
        "ipoib",
        "-o",
        &s(&set),
    ]);
    assert!(o.status.success());
    // Drop one switch's entry: the end ports below it hear nothing.
    let text = std::fs::read_to_string(set.join("opensm.mcfdbs")).unwrap();
    let mut blocks: Vec<&str> = text.split("\nSwitch ").collect();
    blocks.remove(3);
    let cut = d.join("cut.mcfdbs");
    std::fs::write(&cut, blocks.join("\nSwitch ")).unwrap();
    let c = fr(&["check", &s(&set), "--mcfdbs", &s(&cut), "--mcast", "ipoib"]);
    let out = String::from_utf8_lossy(&c.stdout);
    assert_eq!(c.status.code(), Some(1), "{out}");
    assert!(out.contains("NOT DELIVERED"), "{out}");
    assert!(out.contains("\"kind\":\"unreached\""), "{out}");
    // A group file with a member the fabric does not have: file and line, nothing written.
    let g = d.join("groups.txt");
    std::fs::write(&g, "# two groups\n0xC001 H_0_0_0 H_1_0_0\n0xC002 H_9_9_9\n").unwrap();
    let out_dir = d.join("never");
    let o = fr(&[
        "route",
        &net,
        "-R",
        "updn",
        "--mcast",
        &s(&g),
        "-o",
        &s(&out_dir),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("groups.txt:3:") && err.contains("H_9_9_9"),
        "{err}"
    );
    assert!(!out_dir.exists());
    // The same file without the bad line routes both groups.
    std::fs::write(&g, "0xC001 H_0_0_0 H_1_0_0 send:H_2_0_0\n0xC002 all\n").unwrap();
    let o = fr(&[
        "route",
        &net,
        "-R",
        "updn",
        "--mcast",
        &s(&g),
        "-o",
        &s(&out_dir),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(summary(&out_dir)["multicast"]["groups"], 2);
    let c = fr(&["check", &s(&out_dir), "--mcast", &s(&g)]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stdout));
}

/// `fault --mcast`: the trees are mended after each fault; the set's opensm.mcfdbs holds the
/// mended trees, which `check` (and the summary) find delivering once with no credit loop.
#[test]
fn fault_mends_the_trees_a_fault_cuts() {
    let d = tmp("mcast-fault");
    let out = d.join("out");
    let o = fr(&[
        "fault",
        &example("torus2d_4x4_h2.net"),
        "--engine",
        "updn",
        "--mcast",
        "ipoib",
        "--fail",
        "link:S_1_1/3",
        "--fail",
        "switch:S_2_2",
        "-o",
        &s(&out),
    ]);
    let said = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}{err}");
    assert!(err.contains("link:S_1_1/3: multicast:"), "{err}");
    let m = &summary(&out)["multicast"];
    assert_eq!(m["steps"].as_array().unwrap().len(), 2);
    assert_eq!(m["check"]["ok"], true, "{m}");
    assert_eq!(m["credit_loops_with_unicast"], 0);
    assert!(m["mft_entries_changed"].as_u64().unwrap() > 0);
    // The two end ports of the failed switch are gone: 30 receivers, 15 sender switches.
    assert_eq!(m["check"]["deliveries"], 15 * 29);
    let c = fr(&["check", &s(&out), "--mcast", "ipoib"]);
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(c.status.success(), "{text}");
    assert!(text.contains("every receiver reached once"), "{text}");
    // `diff` against `route`'s set (same LIDs at LMC 2, the same base trees) lists exactly the
    // MFT entries and blocks the mending changed.
    let set = d.join("route");
    let o = route_torus("updn", &set, &["--lmc", "2"]);
    assert!(o.status.success());
    let o = fr(&["diff", &s(&set), &s(&out), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["totals"]["mft_entries"], m["mft_entries_changed"],
        "{}",
        v["totals"]
    );
    assert_eq!(v["totals"]["mft_blocks"], m["mft_blocks_changed"]);
    assert!(!v["mft"].as_array().unwrap().is_empty());
}
