//! `fabroute sm` as the subnet manager of fabrics simulated by Debian's ibsim (through
//! libumad2sim, as OpenSM runs here): subnet up with the tables `fabroute route` computes,
//! then cables pulled on ibsim's console, each repaired by RFTR; the programmed tables are
//! read back by infiniband-diags' `dump_lfts` through a second client, walked by
//! `ibtracert` between hosts, and checked by `fabroute check`; each repair sent exactly the
//! blocks that changed.
//!
//! The SA of `fabroute sm` is asked by `saquery` through a client of the same ibsim: path
//! records carry the LIDs and SLs of the tables the SM wrote, and after a repair the moved
//! sources' new (DLID, SL); queries it cannot answer get an error and the SM stays up.
//!
//! Needs ibsim-utils, libumad2sim0 and infiniband-diags (`scripts/install-test-deps.sh`).
//! Without them the tests fail, unless `FABROUTE_NO_EXTERNAL_TOOLS=1` asks to skip them
//! (and each says so). Every wait is bounded and every process is killed by its pid.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::ibsim::*;

/// The whole loop on one generated fabric: `cuts` cables pulled one after another. `repair`
/// is `rftr`, `full`, or `rftr-over-limit`: RFTR asked for with a memory limit its tables
/// pass, so that the SM repairs by full reconfiguration and says why.
fn live(name: &str, spec: &[&str], engine: &str, repair: &str, cuts: usize) {
    let over_limit = repair == "rftr-over-limit";
    let (repair, extra): (&str, &[&str]) = if over_limit {
        ("full", &["--memory-limit", "0.000001"])
    } else {
        (repair, &[])
    };
    if !tools_present() {
        return;
    }
    let dir = common::TmpDir::new(&format!("live-{}-{name}", std::process::id()));
    let netf = dir.join("fabric.net");
    let (ok, text) = if let ["real", dump] = spec {
        // a vendored real dump, as an ibsim net file (speeds ibsim lacks become the nearest)
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/real")
            .join(dump);
        run(Command::new(bin())
            .arg("convert")
            .arg(path)
            .args(["--to", "ibsim", "--lossy", "-o"])
            .arg(&netf))
    } else {
        run(Command::new(bin())
            .arg("gen")
            .args(spec)
            .arg("-o")
            .arg(&netf))
    };
    assert!(ok, "{text}");
    let net = parse_net(&read(&netf));
    let sock = format!("frlive{}{name}", std::process::id());
    let mut ibsim = start_ibsim(&dir, &netf, &net, &sock);

    let ev = dir.join("events.jsonl");
    let out = dir.join("tables");
    let sm_log = dir.join("sm.log");
    let _sm = Proc(
        sim_client(bin(), &dir, &sock, &net.hcas[0])
            .args([
                "sm",
                "-R",
                engine,
                "--repair",
                if over_limit { "rftr" } else { repair },
                "--sweep-interval",
                "1",
            ])
            .args(extra)
            .args([
                "--max-seconds",
                "120",
                "--exit-after",
                &format!("repaired:{cuts}"),
            ])
            .arg("--events")
            .arg(&ev)
            .arg("-o")
            .arg(&out)
            .stdout(std::fs::File::create(&sm_log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("subnet up", Duration::from_secs(60), || {
        count(&ev, "subnet_up") == 1
    });
    let up = &events(&ev)[0];
    assert_eq!(up["failed_smps"], 0, "{up}");
    assert_eq!(up["deadlock_free"], true, "{up}");
    assert_eq!(up["unreachable_pairs"], 0, "{up}");
    let refused = up["rftr_refused"].as_str();
    assert_eq!(refused.is_some(), over_limit, "{up}");
    assert!(
        refused.is_none_or(|why| why.contains("reachability tables")),
        "{up}"
    );
    copy_dir(&out, &dir.join("t0"));

    // The programmed tables are what `fabroute route` computes on the discovered fabric
    // (with RFTR, virtual LIDs are kept for repairs and follow their base LID).
    let routed = dir.join("routed");
    let (ok, text) = run(Command::new(bin())
        .arg("route")
        .arg(dir.join("t0/fabric.json"))
        .args(["-R", engine, "-o"])
        .arg(&routed));
    assert!(ok, "{text}");
    let (_, text) = run(Command::new(bin())
        .args(["--json", "diff"])
        .arg(dir.join("t0"))
        .arg(&routed));
    let d: serde_json::Value = serde_json::from_str(&text[..text.rfind('}').unwrap() + 1]).unwrap();
    let bases = base_lids(&read(&dir.join("t0/opensm-subnet.lst")));
    let mut differing = 0;
    for sw in d["lft"].as_array().unwrap() {
        for e in sw["entries"].as_array().unwrap() {
            differing += 1;
            let lid = e["lid"].as_u64().unwrap();
            assert!(
                repair == "rftr" && !bases.contains(&lid),
                "{name}: switch {} LID {lid}: the SM programmed {} where `fabroute route` gives {}",
                sw["switch"],
                e["old"],
                e["new"]
            );
        }
    }
    eprintln!("{name}: subnet up equal to `fabroute route` on every base LID ({differing} virtual-LID entries mirror their base LID)");

    // Pull cables, one repair at a time; each repair sends exactly the changed blocks.
    let mut stdin = ibsim.0.stdin.take().unwrap();
    let step = net.cables.len() / (cuts + 1);
    for k in 1..=cuts {
        let (sw, port) = &net.cables[k * step];
        writeln!(stdin, "Unlink \"{sw}\"[{port}]").unwrap();
        stdin.flush().unwrap();
        wait_for(&format!("repair {k}"), Duration::from_secs(30), || {
            count(&ev, "repaired") >= k
        });
        let rep = events(&ev)
            .into_iter()
            .filter(|e| e["event"] == "repaired")
            .nth(k - 1)
            .unwrap();
        assert_eq!(rep["failed_smps"], 0, "{rep}");
        assert_eq!(rep["repair"], repair, "{rep}");
        assert_eq!(rep["unsupported_pairs"], 0, "{rep}");
        assert_eq!(rep["deadlock_free"], true, "{rep}");
        let now = dir.join(format!("t{k}"));
        copy_dir(&out, &now);
        let (_, text) = run(Command::new(bin())
            .args(["--json", "diff", "--fabric"])
            .arg(dir.join("t0/opensm-subnet.lst"))
            .arg(dir.join(format!("t{}", k - 1)))
            .arg(&now));
        let d: serde_json::Value =
            serde_json::from_str(&text[..text.rfind('}').unwrap() + 1]).unwrap();
        assert_eq!(
            d["totals"]["lft_blocks"], rep["blocks_changed"],
            "{name} repair {k}: {rep}\n{text}"
        );
        // No more blocks went out than differ, counting each phase's (the repair's own, then
        // the completion for checkers) once.
        let sent =
            rep["lft_blocks"].as_u64().unwrap() + rep["completion_lft_blocks"].as_u64().unwrap();
        assert!(rep["blocks_changed"].as_u64().unwrap() <= sent, "{rep}");
        // SL2VL rows went out when SL2VL entries changed.
        let rows = rep["sl2vl_entries"].as_u64().unwrap()
            + rep["completion_sl2vl_entries"].as_u64().unwrap();
        assert!(
            d["totals"]["sl2vl_entries"].as_u64() == Some(0) || rows > 0,
            "{name} repair {k}: {rep}"
        );
        if k == 1 || k == cuts {
            verify(&dir, &sock, &net, k, name);
        }
        eprintln!(
            "{name}: Unlink \"{sw}\"[{port}] repaired in {} s, {} blocks (then {} for checkers)",
            rep["seconds"], rep["lft_blocks"], rep["completion_lft_blocks"]
        );
    }

    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}

/// After `k` unlinks: reads the tables back through a second client, compares them with
/// what the SM wrote, checks them, and walks host pairs with `ibtracert`.
fn verify(dir: &Path, sock: &str, net: &IbsimNet, k: usize, name: &str) {
    // Read the tables back through a second client and check them independently.
    let dump = dir.join(format!("readback{k}.dump"));
    let o = sim_client("dump_lfts", dir, sock, &net.hcas[1])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "dump_lfts: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::write(&dump, &o.stdout).unwrap();
    let last = dir.join(format!("t{k}"));
    // ibroute (dump_lfts) reads LFT blocks up to ALIGN(top, 64) / 64 exclusive: when
    // LinearFDBTop is a multiple of 64 the block holding the top LID is never read, and
    // that LID is missing from every switch of the read-back. Compare what it can show;
    // the top LID is walked by ibtracert below.
    let text = String::from_utf8_lossy(&o.stdout);
    let top = text
        .split("Unicast lids [0x0-0x")
        .nth(1)
        .and_then(|t| u64::from_str_radix(t.split(']').next()?, 16).ok())
        .expect("dump_lfts names the top LID");
    let written = if top.is_multiple_of(64) {
        let cut = dir.join(format!("written{k}.dump"));
        let keep: String = read(&last.join("opensm-lfts.dump"))
            .lines()
            .filter(|l| !l.starts_with(&format!("0x{top:04x} ")))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&cut, keep).unwrap();
        cut
    } else {
        last.join("opensm-lfts.dump")
    };
    let (ok, text) = run(Command::new(bin())
        .args(["diff", "--lmc", "2", "--fabric"])
        .arg(last.join("opensm-subnet.lst"))
        .arg(&dump)
        .arg(&written));
    assert!(
        ok,
        "{name}: the switches hold other tables than the SM wrote:\n{text}"
    );
    let (ok, text) = run(Command::new(bin())
        .arg("check")
        .arg(last.join("opensm-subnet.lst"))
        .arg("--lfts")
        .arg(&dump)
        .arg("--sl2vl")
        .arg(last.join("opensm-sl2vl.dump"))
        .arg("--psl")
        .arg(last.join("opensm-path-sl.psl"))
        .args(["--lmc", "2"]));
    assert!(ok, "{name}: check of the read-back tables:\n{text}");

    // Hosts reach hosts by LID through what ibsim forwards: from two sources to every
    // base LID, and every repaired pair by the DLID it was given.
    let lids: Vec<(String, u64)> = read(&last.join("opensm-subnet.lst"))
        .lines()
        .filter_map(|l| {
            let first = l.split(" } ").next()?;
            first.contains("{ CA").then(|| {
                let name = first.split('{').nth(2)?.split('}').next()?.to_string();
                let lid = u64::from_str_radix(&first.split("LID:").nth(1)?[..4], 16).ok()?;
                Some((name, lid))
            })?
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let lid_of = |n: &str| {
        let d = net.desc.get(n).map_or(n, String::as_str);
        lids.iter().find(|x| x.0 == d).map(|x| x.1).unwrap()
    };
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    let n = net.hcas.len();
    for src in [&net.hcas[0], &net.hcas[n / 3], &net.hcas[2 * n / 3]] {
        for (_, d) in &lids {
            if *d != lid_of(src) {
                pairs.push((lid_of(src), *d));
            }
        }
    }
    let delta: serde_json::Value =
        serde_json::from_str(&read(&last.join("delta.json"))).unwrap_or_default();
    for s in delta["sources"].as_array().into_iter().flatten().take(40) {
        pairs.push((
            lid_of(s["source"].as_str().unwrap()),
            s["dlid"].as_u64().unwrap(),
        ));
    }
    if top.is_multiple_of(64) {
        pairs.push((lid_of(&net.hcas[0]), top));
    }
    for (s, d) in &pairs {
        let o = sim_client("ibtracert", dir, sock, &net.hcas[1])
            .args([s.to_string(), d.to_string()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let arrived = text.contains("To ca") || (*d == top && text.contains("To switch"));
        assert!(
            o.status.success() && arrived,
            "{name}: ibtracert {s} {d}: {text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    eprintln!("{name}: after {k} unlinks, tables read back equal and checked, {} ibtracert paths delivered", pairs.len());
}

#[test]
fn torus_8x8_updn_three_cuts() {
    live("t8", &["torus", "8x8", "hcas=1"], "updn", "rftr", 3);
}

/// A real cluster (the Tartu dump: 8 SX6036 switches, 144 HCAs, bundled cables, a switch
/// without end ports that has no up*/down* path to some destinations).
#[test]
fn real_dump_updn_three_cuts() {
    live(
        "tartu",
        &["real", "tartu_sx6036_fdr_8sw_144hca.ibnd"],
        "updn",
        "rftr",
        3,
    );
}

#[test]
fn fat_tree_ftree_three_cuts() {
    live("ft", &["ktree", "4", "3"], "ftree", "rftr", 3);
}

#[test]
fn dragonfly_updn_three_cuts_and_full_reconfiguration() {
    live("df", &["dragonfly", "4", "2", "2"], "updn", "rftr", 3);
    live("dffull", &["dragonfly", "4", "2", "2"], "updn", "full", 1);
    live(
        "dflimit",
        &["dragonfly", "4", "2", "2"],
        "updn",
        "rftr-over-limit",
        1,
    );
}

/// CA name -> (node GUID, base LID), from an opensm-subnet.lst.
fn ca_lids(lst: &str) -> std::collections::BTreeMap<String, (u64, u64)> {
    lst.lines()
        .filter_map(|l| {
            let first = l.split(" } ").next()?;
            if !first.contains("{ CA") {
                return None;
            }
            let name = first.split('{').nth(2)?.split('}').next()?.to_string();
            let guid = u64::from_str_radix(first.split("NodeGUID:").nth(1)?.get(..16)?, 16).ok()?;
            let lid = u64::from_str_radix(first.split("LID:").nth(1)?.get(..4)?, 16).ok()?;
            Some((name, (guid, lid)))
        })
        .collect()
}

/// `saquery ARGS` as a client on `host`: Ok(stdout) or Err(stdout and stderr).
fn saquery(dir: &Path, sock: &str, host: &str, args: &[String]) -> Result<String, String> {
    let o = sim_client("saquery", dir, sock, host)
        .args(args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    if o.status.success() {
        Ok(out)
    } else {
        Err(format!("{out}{}", String::from_utf8_lossy(&o.stderr)))
    }
}

/// (SLID, DLID, SL) of the first record `saquery -p` printed. Under libumad2sim saquery
/// counts the records by the MAD's whole length (no RMPP layer gives it the payload's), so
/// it prints three, the first one the answer: the others are the rest of the MAD.
fn first_path(text: &str) -> (u64, u64, u64) {
    let block = text.split("PathRecord dump:").nth(1).unwrap_or("");
    let field = |name: &str| {
        let line = block
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name}.")))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        let v = line.rsplit('.').next().unwrap().trim();
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => v.parse().unwrap(),
        }
    };
    (field("slid"), field("dlid"), field("sl"))
}

/// The SA of `fabroute sm` (dfsssp, whose paths use several SLs; every repair on a virtual
/// LID) asked by saquery through a second ibsim client, before and after a cable is pulled.
#[test]
fn sa_path_records_follow_the_tables_and_a_repair() {
    if !tools_present() {
        return;
    }
    let name = "sa";
    let (dir, netf, net, sock) = generated_net(name, &["torus", "4x4", "hcas=2"]);
    let mut ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let ev = dir.join("events.jsonl");
    let out = dir.join("tables");
    let mut sm = Proc(
        sim_client(bin(), &dir, &sock, &net.hcas[0])
            .args([
                "sm",
                "-R",
                "dfsssp",
                "--virtual-lids-only",
                "--sweep-interval",
                "1",
                "--priority",
                "13",
            ])
            .args(["--max-seconds", "120", "--events"])
            .arg(&ev)
            .arg("-o")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("subnet up", Duration::from_secs(60), || {
        count(&ev, "subnet_up") == 1
    });
    let cas = ca_lids(&read(&out.join("opensm-subnet.lst")));
    let lid_of = |n: &str| cas[net.desc.get(n).map_or(n, String::as_str)];
    let psl: std::collections::BTreeMap<(u64, u64), u64> = read(&out.join("opensm-path-sl.psl"))
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let g = u64::from_str_radix(w.next()?.trim_start_matches("0x"), 16).ok()?;
            Some(((g, w.next()?.parse().ok()?), w.next()?.parse().ok()?))
        })
        .collect();
    let asker = &net.hcas[1];
    let sa = |args: &[String]| saquery(&dir, &sock, asker, args);
    let path = |s: u64, d: u64| -> (u64, u64, u64) {
        let text = sa(&[
            "-p".into(),
            "--slid".into(),
            s.to_string(),
            "--dlid".into(),
            d.to_string(),
        ])
        .unwrap_or_else(|e| panic!("saquery -p --slid {s} --dlid {d}: {e}"));
        first_path(&text)
    };

    // After subnet up: every destination from three sources, the LIDs asked and the SL of
    // the path-SL file the SM wrote.
    let n = net.hcas.len();
    let mut sls = BTreeSet::new();
    let mut asked = 0;
    for src in [&net.hcas[0], &net.hcas[n / 3], &net.hcas[2 * n / 3]] {
        let (sg, sl_lid) = lid_of(src);
        for &(_, d) in cas.values().filter(|c| c.1 != sl_lid) {
            let (s, dl, sl) = path(sl_lid, d);
            assert_eq!((s, dl), (sl_lid, d), "{src} to LID {d}");
            assert_eq!(Some(&sl), psl.get(&(sg, d)), "{src} to LID {d}: SL");
            sls.insert(sl);
            asked += 1;
        }
    }
    assert!(sls.len() > 1, "dfsssp's paths use several SLs: {sls:?}");

    // What the SA cannot answer gets an error, and the SM stays up: a LID nobody has; all
    // NodeRecords (more than one MAD: no RMPP); a MAD of a class the SM does not serve.
    let (_, sm_lid) = lid_of(&net.hcas[0]);
    let e = sa(&[
        "-p".into(),
        "--slid".into(),
        sm_lid.to_string(),
        "--dlid".into(),
        "4000".into(),
    ])
    .unwrap_err();
    assert!(e.contains("SA_ERR_NO_RECORDS"), "{e}");
    let e = sa(&[]).unwrap_err();
    assert!(e.contains("SA_ERR_NO_RESOURCES"), "{e}");
    let (_, some) = lid_of(&net.hcas[5]);
    let text = sa(&[some.to_string()]).unwrap();
    assert!(
        text.contains(&format!(
            "NodeDescription.........{}",
            net.desc[&net.hcas[5]]
        )),
        "{text}"
    );
    // A MAD of a vendor class (OpenIB's sysstat, 0x32) that no agent of the SM registers:
    // before, libumad2sim killed the SM on it (SIGSEGV, exit 139); now the SM answers
    // "unsupported class", which ibsysstat takes as the ping's answer.
    let o = sim_client("ibsysstat", &dir, &sock, asker)
        .args([sm_lid.to_string(), "ping".into()])
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("ping succeeded"),
        "ibsysstat: {t}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // `sminfo` (infiniband-diags) finds the SM by the SM LID of its port and asks it.
    let o = sim_client("sminfo", &dir, &sock, asker).output().unwrap();
    let t = String::from_utf8_lossy(&o.stdout);
    let lst = read(&out.join("opensm-subnet.lst"));
    let sm_line = lst
        .lines()
        .find(|l| l.contains(&format!("{{{}}}", net.hcas[0])))
        .expect("the SM's node in the subnet list");
    let guid = u64::from_str_radix(&sm_line.split("PortGUID:").nth(1).unwrap()[..16], 16).unwrap();
    assert!(
        o.status.success()
            && t.contains(&format!("sm lid {sm_lid} sm guid {guid:#x}"))
            && t.contains("priority 13 state 3 SMINFO_MASTER"),
        "sminfo: {t}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        sm.0.try_wait().unwrap().is_none(),
        "the SM is still running"
    );

    // Pull a cable: RFTR moves sources to virtual LIDs (and SLs); their PathRecords, asked
    // with the base LID, carry the new (DLID, SL), and ibtracert delivers along them.
    let mut stdin = ibsim.0.stdin.take().unwrap();
    let (sw, port) = &net.cables[net.cables.len() / 2];
    writeln!(stdin, "Unlink \"{sw}\"[{port}]").unwrap();
    stdin.flush().unwrap();
    wait_for("the repair", Duration::from_secs(30), || {
        count(&ev, "repaired") >= 1
    });
    // The tables directory is rewritten before the event is written.
    let delta: serde_json::Value = serde_json::from_str(&read(&out.join("delta.json"))).unwrap();
    let moved = delta["sources"].as_array().unwrap();
    assert!(!moved.is_empty(), "the repair moved sources: {delta}");
    let mut new_sl = 0;
    for m in moved.iter().take(24) {
        let (_, s) = lid_of(m["source"].as_str().unwrap());
        let (_, base) = lid_of(m["destination"].as_str().unwrap());
        let want = (m["dlid"].as_u64().unwrap(), m["sl"].as_u64().unwrap());
        assert_ne!(want.0, base, "{m}");
        let (_, dl, sl) = path(s, base);
        assert_eq!((dl, sl), want, "{m}");
        let o = sim_client("ibtracert", &dir, &sock, asker)
            .args([s.to_string(), dl.to_string()])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && t.contains("To ca"),
            "ibtracert {s} {dl}: {t}"
        );
        new_sl +=
            usize::from(psl.get(&(lid_of(m["source"].as_str().unwrap()).0, base)) != Some(&sl));
        asked += 1;
    }
    assert!(
        sm.0.try_wait().unwrap().is_none(),
        "the SM is still running"
    );
    eprintln!(
        "{name}: {asked} PathRecords as the tables say, {} moved sources told their virtual LID ({new_sl} with a new SL); errors for what the SA cannot answer",
        moved.len().min(24)
    );
    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without ibsim (or with another socket name) `fabroute sm` says so and exits 3, instead of
/// waiting in libumad2sim's connection loop.
#[test]
fn sm_without_ibsim_is_a_clear_error() {
    if !tools_present() {
        return;
    }
    let dir = common::TmpDir::new(&format!("live-{}-none", std::process::id()));
    let t = Instant::now();
    let sock = format!("frnone{}", std::process::id());
    let o = sim_client(bin(), &dir, &sock, "H_0_0_0")
        .args(["sm", "-R", "updn"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("ibsim is not running"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cable pulled and put back (`ReLink`): `link_restored` takes it in, the tables return
/// to those of subnet up (every pair on its base path again), the blocks pushed are what
/// `fabroute diff` finds, and the read-back tables pass `fabroute check`. Then a whole
/// switch removed (`Unlink "S"`: every cable) is one `repaired` event for `switch:S`.
#[test]
fn cable_back_then_switch_removed() {
    if !tools_present() {
        return;
    }
    let name = "relink";
    let (dir, netf, net, sock) = generated_net(name, &["torus", "4x4", "hcas=2"]);
    let mut ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let ev = dir.join("events.jsonl");
    let out = dir.join("tables");
    let _sm = Proc(
        sim_client(bin(), &dir, &sock, &net.hcas[0])
            .args(["sm", "-R", "updn", "--sweep-interval", "1"])
            .args(["--max-seconds", "120"])
            .arg("--events")
            .arg(&ev)
            .arg("-o")
            .arg(&out)
            .stdout(std::fs::File::create(dir.join("sm.log")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("subnet up", Duration::from_secs(60), || {
        count(&ev, "subnet_up") == 1
    });
    copy_dir(&out, &dir.join("t0"));
    let mut stdin = ibsim.0.stdin.take().unwrap();
    let mut console = |cmd: String| {
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
    };
    let diff = |a: &str, b: &str| -> serde_json::Value {
        let (_, text) = run(Command::new(bin())
            .args(["--json", "diff", "--fabric"])
            .arg(dir.join("t0/opensm-subnet.lst"))
            .arg(dir.join(a))
            .arg(dir.join(b)));
        serde_json::from_str(&text[..text.rfind('}').unwrap() + 1]).unwrap()
    };

    // A cable down, repaired; then back.
    let (sw, port) = net.cables[net.cables.len() / 3].clone();
    console(format!("Unlink \"{sw}\"[{port}]"));
    wait_for("repair", Duration::from_secs(30), || {
        count(&ev, "repaired") >= 1
    });
    copy_dir(&out, &dir.join("t1"));
    let t_relink = Instant::now();
    console(format!("ReLink \"{sw}\"[{port}]"));
    wait_for("link_restored", Duration::from_secs(30), || {
        count(&ev, "link_restored") >= 1
    });
    let wall = t_relink.elapsed();
    // Tables are rewritten before the event is logged.
    copy_dir(&out, &dir.join("t2"));
    let back = events(&ev)
        .into_iter()
        .find(|e| e["event"] == "link_restored")
        .unwrap();
    assert_eq!(back["taken_in"], true, "{back}");
    assert_eq!(back["union_deadlock_free"], true, "{back}");
    assert_eq!(back["deadlock_free"], true, "{back}");
    assert_eq!(back["failed_smps"], 0, "{back}");
    assert_eq!(back["faults_left"], 0, "{back}");
    assert_eq!(back["pairs_off_base"], 0, "{back}");
    assert!(back["returned_pairs"].as_u64().unwrap() > 0, "{back}");
    // Back to subnet up's tables; the blocks pushed are what differs.
    let d = diff("t0", "t2");
    assert_eq!(d["totals"]["lft_entries"], 0, "{d}");
    let d = diff("t1", "t2");
    assert_eq!(d["totals"]["lft_blocks"], back["lft_blocks"], "{back}\n{d}");
    assert_eq!(d["totals"]["lft_blocks"], back["blocks_changed"], "{back}");
    // Nothing in the summary is failed any more; the switches hold it and it checks.
    let summary: serde_json::Value =
        serde_json::from_str(&read(&dir.join("t2/summary.json"))).unwrap();
    assert_eq!(summary["dead_links"], serde_json::json!([]), "{summary}");
    verify(&dir, &sock, &net, 2, name);
    eprintln!(
        "{name}: ReLink \"{sw}\"[{port}] taken in in {} s ({} blocks, {} pairs moved back; {:?} wall from the console to the event)",
        back["seconds"], back["lft_blocks"], back["returned_pairs"], wall
    );

    // A whole switch removed: one repair, named `switch:`, and no other after two sweeps.
    let victim = "S_2_2";
    console(format!("Unlink \"{victim}\""));
    wait_for("switch repair", Duration::from_secs(30), || {
        count(&ev, "repaired") >= 2
    });
    std::thread::sleep(Duration::from_millis(2500));
    let reps: Vec<serde_json::Value> = events(&ev)
        .into_iter()
        .filter(|e| e["event"] == "repaired")
        .collect();
    assert_eq!(reps.len(), 2, "one repair for the switch: {reps:?}");
    let rep = &reps[1];
    assert_eq!(
        rep["faults"],
        serde_json::json!([format!("switch:{victim}")]),
        "{rep}"
    );
    assert_eq!(rep["deadlock_free"], true, "{rep}");
    assert_eq!(rep["failed_smps"], 0, "{rep}");
    let summary: serde_json::Value =
        serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(
        summary["dead_switches"],
        serde_json::json!([victim]),
        "{summary}"
    );
    eprintln!(
        "{name}: Unlink \"{victim}\" repaired as one switch fault in {} s ({} blocks, {} pairs affected, {} unsupported)",
        rep["seconds"], rep["lft_blocks"], rep["affected_pairs"], rep["unsupported_pairs"]
    );
    if std::env::var_os("FABROUTE_KEEP").is_some() {
        eprintln!("{}", read(&ev));
    }
    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}
