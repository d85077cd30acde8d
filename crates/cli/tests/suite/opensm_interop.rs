//! Against the real thing: OpenSM routes fabrics simulated by ibsim, ibdmchk judges its tables,
//! and `fabroute check` must reach the same verdict on the same files. And a `-U` file written
//! by fabroute, loaded by OpenSM's `file` engine, must come back identical in OpenSM's own dump.
//!
//! Needs Debian's opensm, ibsim-utils, libumad2sim0, ibutils and infiniband-diags
//! (`scripts/install-test-deps.sh` installs them; `.ci/run` calls it). Without them the tests
//! fail, unless `FABROUTE_NO_EXTERNAL_TOOLS=1` asks to skip them (and each says so).

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fabroute")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// True when the reference tools are installed; panics when they are not, unless
/// `FABROUTE_NO_EXTERNAL_TOOLS` is set.
fn tools_present() -> bool {
    let have = ["ibsim", "opensm", "ibdmchk", "saquery"].iter().all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }) && Path::new("/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so").exists();
    if !have && std::env::var_os("FABROUTE_NO_EXTERNAL_TOOLS").is_none() {
        panic!("OpenSM/ibsim/ibdmchk are not installed: run scripts/install-test-deps.sh (or set FABROUTE_NO_EXTERNAL_TOOLS=1 to skip these tests)");
    }
    if !have {
        eprintln!("SKIPPED (FABROUTE_NO_EXTERNAL_TOOLS): OpenSM/ibsim/ibdmchk not installed");
    }
    have
}

fn tmpdir(name: &str) -> common::TmpDir {
    common::TmpDir::new(&format!("interop-{}-{name}", std::process::id()))
}

/// Generates a fabric with our own generator.
fn gen(dir: &Path, spec: &[&str]) -> PathBuf {
    let out = dir.join("fabric.net");
    let st = Command::new(bin())
        .arg("gen")
        .args(spec)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "gen {spec:?}");
    out
}

/// Runs OpenSM through scripts/opensm-run.sh; returns (engine_used, ibdmchk verdict).
fn opensm(net: &Path, engine: &str, out: &Path, extra: &[&str]) -> (String, String) {
    let o = Command::new("bash")
        .arg(root().join("scripts/opensm-run.sh"))
        .args(extra)
        .arg(net)
        .arg(engine)
        .arg(out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "opensm-run.sh {engine} failed: {text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or("")
            .to_string()
    };
    (get("engine_used"), get("ibdmchk"))
}

/// `fabroute check` on OpenSM's files; returns deadlock_free.
fn our_check(out: &Path) -> (bool, bool) {
    let mut cmd = Command::new(bin());
    cmd.arg("check")
        .arg(out.join("opensm-subnet.lst"))
        .arg("--lfts")
        .arg(out.join("opensm-lfts.dump"))
        .arg("--json");
    if out.join("opensm-path-sl.psl").exists() {
        cmd.arg("--psl").arg(out.join("opensm-path-sl.psl"));
    }
    if out.join("opensm-sl2vl.dump").exists() {
        cmd.arg("--sl2vl").arg(out.join("opensm-sl2vl.dump"));
    }
    let o = cmd.output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "fabroute check printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let df = v["deadlock_free"].as_bool().unwrap();
    let unreachable = v["unreachable_pairs"]["count"].as_u64().unwrap();
    assert_eq!(
        o.status.success(),
        df && unreachable == 0,
        "exit status follows the verdict"
    );
    (df, unreachable == 0)
}

/// One case: OpenSM routes, ibdmchk and fabroute agree, and the verdict is the expected one.
fn case(name: &str, spec: &[&str], engine: &str, psl: bool, expect_loops: bool) {
    if !tools_present() {
        return;
    }
    let dir = tmpdir(name);
    let net = gen(&dir, spec);
    let mut extra: Vec<String> = Vec::new();
    if psl {
        extra.push("--psl".into());
    }
    let roots = PathBuf::from(format!("{}.roots", net.display()));
    if roots.exists() && (engine == "updn" || engine == "ftree") {
        extra.push("-a".into());
        extra.push(roots.display().to_string());
    } else if engine == "updn" {
        // No root knowledge in a torus: give OpenSM the first switch, as its auto-detection
        // finds none there and it would silently fall back to minhop.
        std::fs::write(dir.join("root.guid"), "0x200000\n").unwrap();
        extra.push("-a".into());
        extra.push(dir.join("root.guid").display().to_string());
    }
    let t2q = PathBuf::from(format!("{}.t2q.conf", net.display()));
    if engine == "torus-2QoS" {
        extra.push("-t".into());
        extra.push(t2q.display().to_string());
    }
    let extra_ref: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = dir.join("osm");
    let (used, ibdmchk) = opensm(&net, engine, &out, &extra_ref);
    assert_eq!(used, engine, "OpenSM fell back from {engine} to {used}");
    let (deadlock_free, all_reached) = our_check(&out);
    assert!(
        all_reached,
        "{name}: fabroute finds unreachable pairs in OpenSM's tables"
    );
    let theirs_free = match ibdmchk.as_str() {
        "no_credit_loops" => true,
        "credit_loops" => false,
        other => panic!("{name}: ibdmchk gave no verdict ({other})"),
    };
    assert_eq!(
        deadlock_free, theirs_free,
        "{name}: fabroute and ibdmchk disagree on {engine}"
    );
    assert_eq!(
        deadlock_free, !expect_loops,
        "{name}: unexpected verdict for {engine}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn torus_minhop_has_credit_loops() {
    case(
        "t-minhop",
        &["torus", "4x4", "hcas=2"],
        "minhop",
        false,
        true,
    );
}

#[test]
fn torus_dor_has_credit_loops() {
    case("t-dor", &["torus", "4x4", "hcas=2"], "dor", false, true);
}

#[test]
fn torus_updn_is_deadlock_free() {
    case("t-updn", &["torus", "4x4", "hcas=2"], "updn", false, false);
}

#[test]
fn torus_lash_with_path_sls_is_deadlock_free() {
    case("t-lash", &["torus", "4x4", "hcas=2"], "lash", true, false);
}

#[test]
fn torus_dfsssp_with_path_sls_is_deadlock_free() {
    case(
        "t-dfsssp",
        &["torus", "4x4", "hcas=2"],
        "dfsssp",
        true,
        false,
    );
}

#[test]
fn torus_nue_is_deadlock_free() {
    case("t-nue", &["torus", "4x4", "hcas=2"], "nue", false, false);
}

#[test]
fn torus_2qos_with_path_sls_is_deadlock_free() {
    case(
        "t-t2q",
        &["torus", "4x4", "hcas=2"],
        "torus-2QoS",
        true,
        false,
    );
}

#[test]
fn mesh_dor_is_deadlock_free() {
    case("m-dor", &["mesh", "4x4", "hcas=2"], "dor", false, false);
}

#[test]
fn fat_tree_ftree_is_deadlock_free() {
    case("k-ftree", &["ktree", "4", "3"], "ftree", false, false);
}

/// fabroute's `-U` file, loaded by OpenSM's `file` engine, comes back identical.
#[test]
fn opensm_file_engine_reproduces_our_lfts() {
    if !tools_present() {
        return;
    }
    let dir = tmpdir("file-engine");
    let net = gen(&dir, &["torus", "4x4", "hcas=2"]);
    // OpenSM's LIDs: take the fabric as OpenSM sees it.
    let first = dir.join("first");
    opensm(&net, "minhop", &first, &[]);
    let ours = dir.join("ours");
    let st = Command::new(bin())
        .arg("route")
        .arg(first.join("opensm-subnet.lst"))
        .args(["-R", "updn", "-o"])
        .arg(&ours)
        .status()
        .unwrap();
    assert!(st.success());
    let second = dir.join("second");
    let u = ours.join("opensm-lfts.dump");
    let (used, _) = opensm(&net, "file", &second, &["-U", u.to_str().unwrap()]);
    assert_eq!(used, "file");
    let a = std::fs::read_to_string(&u).unwrap();
    let b = std::fs::read_to_string(second.join("opensm-lfts.dump")).unwrap();
    assert!(a.lines().count() > 100);
    assert_eq!(a, b, "OpenSM's re-dump differs from the file it loaded");
    let _ = std::fs::remove_dir_all(&dir);
}

/// ibdmchk's verdict on a table set `fabroute route` wrote (with `-c` PSL and `-d` SL2VL when
/// the set has them): `no_credit_loops`, `credit_loops` or what it printed.
fn ibdmchk_on(dir: &Path) -> String {
    let mut cmd = Command::new("ibdmchk");
    cmd.current_dir(dir).args([
        "-s",
        "opensm-subnet.lst",
        "-f",
        "opensm.fdbs",
        "-m",
        "opensm.mcfdbs",
    ]);
    if dir.join("opensm-path-sl.psl").exists() {
        cmd.args(["-c", "opensm-path-sl.psl"]);
    }
    if dir.join("opensm-sl2vl.dump").exists() {
        cmd.args(["-d", "opensm-sl2vl.dump"]);
    }
    // ibdmchk 1.5.7 may crash right after reporting credit loops: the verdict is printed first.
    let o = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    if text.contains("no credit loops found") {
        "no_credit_loops".into()
    } else if text.contains("credit loops in routing") || text.contains("credit loop") {
        "credit_loops".into()
    } else {
        text
    }
}

/// Our VL engines' tables, judged by ibdmchk with their path SLs and SL2VL tables: no credit
/// loop on every fabric; and minhop's on a torus are caught (the check can fail).
#[test]
fn ibdmchk_finds_our_vl_engines_deadlock_free() {
    if !tools_present() {
        return;
    }
    // (generator spec, engine, deadlock-free, more route options)
    let cases: &[(&[&str], &str, bool, &[&str])] = &[
        (&["torus", "4x4", "hcas=2"], "minhop", false, &[]),
        (&["torus", "4x4", "hcas=2"], "dfsssp", true, &[]),
        (&["torus", "4x4", "hcas=2"], "lash", true, &[]),
        (&["torus", "4x4", "hcas=2"], "hopvl", true, &[]),
        (&["dragonfly", "4", "2", "2"], "hopvl", true, &[]),
        (
            &["dragonfly", "4", "2", "2", "fail-links=3"],
            "dfsssp",
            true,
            &[],
        ),
        (&["slimfly", "5"], "hopvl", true, &[]),
        (&["slimfly", "5", "fail-links=5"], "lash", true, &[]),
        (&["ktree", "4", "3"], "hopvl", true, &[]),
        (&["hyperx", "4x4x4", "hcas=1"], "hopvl", true, &[]),
        (&["torus", "4x4x4", "hcas=1"], "lash", true, &[]),
        (&["torus", "4x4", "hcas=2"], "nue", true, &[]),
        (
            &["torus", "6x6", "hcas=1"],
            "nue",
            true,
            &["--max-vls", "2"],
        ),
        (
            &["dragonfly", "4", "2", "2", "fail-links=3"],
            "nue",
            true,
            &["--max-vls", "4"],
        ),
        (&["torus", "4x4x4", "hcas=1"], "torus-2QoS", true, &[]),
        (&["mesh", "4x4", "hcas=2"], "torus-2QoS", true, &[]),
    ];
    for (i, &(spec, engine, free, extra)) in cases.iter().enumerate() {
        let dir = tmpdir(&format!("vl-{i}"));
        let net = gen(&dir, spec);
        let out = dir.join("ours");
        let o = Command::new(bin())
            .arg("route")
            .arg(&net)
            .args(["-R", engine])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success() || !free,
            "{engine} on {spec:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // (nue keeps one layer, all on SL 0, where that balances better: then there are no
        // path SLs to write and ibdmchk's default SL 0 is exact)
        let one_layer = String::from_utf8_lossy(&o.stderr).contains("one layer kept");
        if free && !one_layer {
            assert!(
                out.join("opensm-path-sl.psl").exists(),
                "{engine} writes its path SLs"
            );
        }
        let verdict = ibdmchk_on(&out);
        let want = if free {
            "no_credit_loops"
        } else {
            "credit_loops"
        };
        assert_eq!(verdict, want, "ibdmchk on {engine} for {spec:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// What `fault` writes, judged by ibdmchk (`-c` PSL, `-d` SL2VL) and by `fabroute check`:
/// a switch failure (its node and the HCAs behind it are left out of every file, as OpenSM's
/// subnet file leaves them out) and a repair with virtual LIDs and a VL transition; both find
/// no credit loop, and `check` finds every (source, LID) delivered.
#[test]
fn ibdmchk_and_check_accept_what_fault_writes() {
    if !tools_present() {
        return;
    }
    let net = root().join("examples/torus2d_4x4_h2.net");
    let cases: &[&[&str]] = &[
        &["--fail", "switch:S_1_1", "--fail", "link:S_2_2/3"],
        &["--fail", "link:S_0_3/4", "--fail", "link:S_1_0/3"],
    ];
    for (i, faults) in cases.iter().enumerate() {
        let dir = tmpdir(&format!("fault-{i}"));
        let out = dir.join("f");
        let o = Command::new(bin())
            .arg("fault")
            .arg(&net)
            .args(["--engine", "updn"])
            .args(*faults)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{faults:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(ibdmchk_on(&out), "no_credit_loops", "{faults:?}");
        let p = |n: &str| out.join(n);
        let mut c = Command::new(bin());
        c.arg("check")
            .arg(p("opensm-subnet.lst"))
            .arg("--lfts")
            .arg(p("opensm-lfts.dump"))
            .arg("--sl2vl")
            .arg(p("opensm-sl2vl.dump"));
        // (no path-SL file when every pair uses SL 0)
        if p("opensm-path-sl.psl").exists() {
            c.arg("--psl").arg(p("opensm-path-sl.psl"));
        }
        let c = c.output().unwrap();
        assert_eq!(
            c.status.code(),
            Some(0),
            "{faults:?}: {}",
            String::from_utf8_lossy(&c.stdout)
        );
    }
}
