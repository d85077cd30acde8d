//! Two `fabroute sm` on one ibsim fabric: the second finds the first as master (PortInfo
//! IsSM, then SMInfo), stands by and answers `sminfo` as STANDBY; when the master is
//! killed it takes over within its poll interval, reads back the tables the switches hold,
//! finds them clean and adopts them without writing one LFT block or SL2VL row; `sminfo`
//! then names it master, `dump_lfts` reads the same tables as the first SM wrote, and a
//! pulled cable is repaired by the new master.
//!
//! Needs ibsim-utils, libumad2sim0 and infiniband-diags, as `live_ibsim`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::ibsim::*;

fn sminfo(dir: &std::path::Path, sock: &str, host: &str, lid: Option<u64>) -> String {
    let mut c = sim_client("sminfo", dir, sock, host);
    if let Some(l) = lid {
        c.arg(l.to_string());
    }
    let o = c.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_standby_takes_over_from_a_killed_master_without_rewriting_the_tables() {
    if !tools_present() {
        return;
    }
    let name = "standby";
    let (dir, netf, net, sock) = generated_net(name, &["torus", "4x4", "hcas=2"]);
    let mut ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let sm = |host: &str, priority: &str, tag: &str| {
        Proc(
            sim_client(bin(), &dir, &sock, host)
                .args(["sm", "-R", "updn", "--lmc", "1", "--priority", priority])
                .args(["--poll-interval", "1", "--sweep-interval", "1"])
                .args(["--max-seconds", "120", "--events"])
                .arg(dir.join(format!("{tag}.jsonl")))
                .arg("-o")
                .arg(dir.join(tag))
                .stdout(std::fs::File::create(dir.join(format!("{tag}.log"))).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let (m_ev, s_ev) = (dir.join("master.jsonl"), dir.join("standby.jsonl"));
    let master = sm(&net.hcas[0], "5", "master");
    wait_for("subnet up", Duration::from_secs(60), || {
        count(&m_ev, "subnet_up") == 1
    });
    let standby_host = net.hcas.last().unwrap().clone();
    let _standby = sm(&standby_host, "1", "standby");
    wait_for("standby", Duration::from_secs(30), || {
        count(&s_ev, "standby") == 1
    });
    let sb = events(&s_ev).remove(0);
    assert_eq!(sb["master_node"], net.hcas[0], "{sb}");
    assert_eq!(sb["master_priority"], 5, "{sb}");
    let master_lid = sb["master_lid"].as_u64().unwrap();
    // Hosts find the master; asked by its LID, the standby answers as STANDBY.
    let asker = &net.hcas[3];
    let t = sminfo(&dir, &sock, asker, None);
    assert!(
        t.contains(&format!("sm lid {master_lid} "))
            && t.contains("priority 5 state 3 SMINFO_MASTER"),
        "{t}"
    );
    let lst = read(&dir.join("master/opensm-subnet.lst"));
    let lid_of = |host: &str| -> u64 {
        let line = lst
            .lines()
            .find(|l| {
                l.starts_with("{ CA")
                    && l.split(" } ")
                        .next()
                        .unwrap()
                        .contains(&format!("{{{host}}}"))
            })
            .unwrap_or_else(|| panic!("{host} in the subnet list"));
        u64::from_str_radix(&line.split("LID:").nth(1).unwrap()[..4], 16).unwrap()
    };
    let standby_lid = lid_of(&standby_host);
    let t = sminfo(&dir, &sock, asker, Some(standby_lid));
    assert!(t.contains("priority 1 state 2 SMINFO_STANDBY"), "{t}");
    assert_eq!(
        count(&s_ev, "take_over"),
        0,
        "no take-over while the master answers"
    );

    // The master dies.
    drop(master);
    let t_kill = Instant::now();
    wait_for("take_over", Duration::from_secs(30), || {
        count(&s_ev, "take_over") == 1
    });
    let wall = t_kill.elapsed();
    let to = events(&s_ev)
        .into_iter()
        .find(|e| e["event"] == "take_over")
        .unwrap();
    assert_eq!(to["adopted"], true, "{to}");
    assert_eq!(to["held_deadlock_free"], true, "{to}");
    assert_eq!(to["held_unreachable_pairs"], 0, "{to}");
    assert_eq!(to["lft_blocks"], 0, "{to}");
    assert_eq!(to["sl2vl_entries"], 0, "{to}");
    assert_eq!(to["failed_smps"], 0, "{to}");
    assert_eq!(to["deadlock_free"], true, "{to}");
    // One poll interval (1 s), the poll's retries (4 × 100 ms) and the take-over itself.
    assert!(
        wall < Duration::from_secs(4),
        "took over {wall:?} after the kill"
    );
    // Every port now names the new master.
    let t = sminfo(&dir, &sock, asker, None);
    assert!(
        t.contains(&format!("sm lid {standby_lid} "))
            && t.contains("priority 1 state 3 SMINFO_MASTER"),
        "{t}"
    );
    // The switches hold what the first master wrote; the read-back checks clean.
    let dump = dir.join("readback.dump");
    let o = sim_client("dump_lfts", &dir, &sock, asker)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&dump, &o.stdout).unwrap();
    let (ok, text) = run(Command::new(bin())
        .args(["diff", "--lmc", "1", "--fabric"])
        .arg(dir.join("master/opensm-subnet.lst"))
        .arg(dir.join("master/opensm-lfts.dump"))
        .arg(&dump));
    assert!(ok, "the tables changed:\n{text}");
    let (ok, text) = run(Command::new(bin())
        .arg("check")
        .arg(dir.join("standby/opensm-subnet.lst"))
        .arg("--lfts")
        .arg(&dump)
        .args(["--lmc", "1"]));
    assert!(ok, "check of the read-back tables:\n{text}");

    // The new master repairs a pulled cable.
    let mut stdin = ibsim.0.stdin.take().unwrap();
    let (sw, port) = &net.cables[net.cables.len() / 2];
    writeln!(stdin, "Unlink \"{sw}\"[{port}]").unwrap();
    stdin.flush().unwrap();
    wait_for("the repair", Duration::from_secs(30), || {
        count(&s_ev, "repaired") >= 1
    });
    let rep = events(&s_ev)
        .into_iter()
        .find(|e| e["event"] == "repaired")
        .unwrap();
    assert_eq!(rep["deadlock_free"], true, "{rep}");
    assert_eq!(rep["unreachable_pairs"], 0, "{rep}");
    assert_eq!(rep["failed_smps"], 0, "{rep}");
    eprintln!(
        "{name}: took over {wall:?} after the kill ({} s from the decision, {} read-back SMPs, 0 blocks written); repaired {} in {} s",
        to["seconds"], to["readback_smps"], rep["faults"], rep["seconds"]
    );
    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}

/// CA name → base LID, from an `opensm-subnet.lst`.
fn ca_lids(lst: &str) -> std::collections::BTreeMap<String, u64> {
    lst.lines()
        .filter(|l| l.starts_with("{ CA"))
        .filter_map(|l| {
            let first = l.split(" } ").next()?;
            let name = first.split('{').nth(2)?.split('}').next()?.to_string();
            let lid = u64::from_str_radix(first.split("LID:").nth(1)?.get(..4)?, 16).ok()?;
            Some((name, lid))
        })
        .collect()
}

#[test]
fn fabroute_stands_by_opensm_and_takes_over_with_its_lids() {
    if !tools_present() || !opensm_present() {
        return;
    }
    let name = "standby-osm";
    let (dir, netf, net, sock) = generated_net(name, &["torus", "4x4", "hcas=2"]);
    let _ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let osm = dir.join("osm");
    let opensm = start_opensm(&osm, &sock, &net.hcas[0], "updn", "10");
    let ev = dir.join("events.jsonl");
    let _fr = standby_sm(&dir, &sock, net.hcas.last().unwrap());
    wait_for("standby", Duration::from_secs(30), || {
        count(&ev, "standby") == 1
    });
    let sb = events(&ev).remove(0);
    assert_eq!(sb["master_priority"], 10, "{sb}");
    assert_eq!(sb["master_node"], net.hcas[0], "{sb}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(count(&ev, "take_over"), 0, "OpenSM answers the polls");
    drop(opensm);
    wait_for("take_over", Duration::from_secs(30), || {
        count(&ev, "take_over") == 1
    });
    let to = events(&ev)
        .into_iter()
        .find(|e| e["event"] == "take_over")
        .unwrap();
    // OpenSM's tables are adopted only when they pass the check and obey fabroute's updn
    // rule; otherwise the refusal says why and only what differs is written.
    if to["adopted"] == true {
        assert_eq!(to["lft_blocks"], 0, "{to}");
    } else {
        assert!(
            to["refused"].as_str().is_some_and(|r| !r.is_empty()),
            "{to}"
        );
    }
    assert_eq!(to["failed_smps"], 0, "{to}");
    assert_eq!(to["deadlock_free"], true, "{to}");
    assert_eq!(to["unreachable_pairs"], 0, "{to}");
    // OpenSM's LIDs are kept.
    let theirs = ca_lids(&read(&osm.join("opensm-subnet.lst")));
    let ours = ca_lids(&read(&dir.join("fr/opensm-subnet.lst")));
    assert_eq!(theirs.len(), net.hcas.len());
    assert_eq!(theirs, ours, "the LIDs OpenSM gave");
    // The switches hold what fabroute wrote, and it checks clean.
    let dump = dir.join("readback.dump");
    let o = sim_client("dump_lfts", &dir, &sock, &net.hcas[3])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&dump, &o.stdout).unwrap();
    let (ok, text) = run(Command::new(bin())
        .args(["diff", "--fabric"])
        .arg(dir.join("fr/opensm-subnet.lst"))
        .arg(dir.join("fr/opensm-lfts.dump"))
        .arg(&dump));
    assert!(ok, "the switches hold other tables:\n{text}");
    eprintln!(
        "{name}: took over from OpenSM: adopted {} ({}), {} LFT blocks written",
        to["adopted"], to["refused"], to["lft_blocks"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The standby of a fabroute SM (priority 1, polling every second) at `host`, writing its
/// events to `dir/events.jsonl` and its tables to `dir/fr`.
fn standby_sm(dir: &std::path::Path, sock: &str, host: &str) -> Proc {
    spawn_sm(
        dir,
        sock,
        host,
        &[
            "-R",
            "updn",
            "--lmc",
            "0",
            "--priority",
            "1",
            "--poll-interval",
            "1",
        ],
        &dir.join("events.jsonl"),
        &dir.join("fr"),
    )
}

/// What saquery prints for `args`, asked from `host`.
fn saq(dir: &std::path::Path, sock: &str, host: &str, args: &[String]) -> String {
    let o = sim_client("saquery", dir, sock, host)
        .args(args)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// OpenSM's SA and fabroute's, on the same fabric with the same LIDs and the same tables
/// (fabroute takes over from OpenSM on a fat tree and adopts its updn tables): the
/// PathRecords, NodeRecords, PortInfoRecords, LinkRecords, SwitchInfoRecords and
/// ClassPortInfo that `saquery` prints agree line for line, but for the fields that name the SM or its optional capabilities.
#[test]
fn sa_answers_agree_with_opensm_field_for_field() {
    if !tools_present() || !opensm_present() {
        return;
    }
    let name = "sa-osm";
    let (dir, netf, net, sock) = generated_net(name, &["ktree", "4", "3"]);
    let _ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let osm = dir.join("osm");
    let opensm = start_opensm(&osm, &sock, &net.hcas[0], "updn", "10");
    let ev = dir.join("events.jsonl");
    let _fr = standby_sm(&dir, &sock, net.hcas.last().unwrap());
    wait_for("standby", Duration::from_secs(30), || {
        count(&ev, "standby") == 1
    });
    let lids = ca_lids(&read(&osm.join("opensm-subnet.lst")));
    let n = net.hcas.len();
    let sample: Vec<u64> = [1, n / 3, n / 2, 2 * n / 3, n - 2]
        .iter()
        .map(|&i| lids[&net.hcas[i]])
        .collect();
    // Two switches (the lowest and the highest LID) by their LIDs.
    let lst = read(&osm.join("opensm-subnet.lst"));
    let sw_lids: std::collections::BTreeSet<u64> = lst
        .lines()
        .filter(|l| l.starts_with("{ SW"))
        .filter_map(|l| u64::from_str_radix(l.split("LID:").nth(1)?.get(..4)?, 16).ok())
        .collect();
    let switches = [*sw_lids.first().unwrap(), *sw_lids.last().unwrap()];
    let asker = &net.hcas[2];
    let ask_all = || -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, &s) in sample.iter().enumerate() {
            for &d in &sample[i + 1..] {
                for (a, b) in [(s, d), (d, s)] {
                    let args: Vec<String> =
                        ["-p", "--slid", &a.to_string(), "--dlid", &b.to_string()]
                            .iter()
                            .map(|x| x.to_string())
                            .collect();
                    out.push((
                        format!("PathRecord {a} -> {b}"),
                        saq(&dir, &sock, asker, &args),
                    ));
                }
            }
            out.push((
                format!("NodeRecord {s}"),
                saq(&dir, &sock, asker, &[s.to_string()]),
            ));
            out.push((
                format!("PortInfoRecord {s}"),
                saq(&dir, &sock, asker, &["PIR".into(), s.to_string()]),
            ));
        }
        for &w in &switches {
            for q in ["LR", "SWIR"] {
                out.push((
                    format!("{q} {w}"),
                    saq(&dir, &sock, asker, &[q.into(), w.to_string()]),
                ));
            }
        }
        for &s in &sample[..2] {
            out.push((
                format!("LR {s}"),
                saq(&dir, &sock, asker, &["LR".into(), s.to_string()]),
            ));
        }
        out.push((
            "ClassPortInfo".into(),
            saq(&dir, &sock, asker, &["-c".into()]),
        ));
        out
    };
    let theirs = ask_all();
    drop(opensm);
    wait_for("take_over", Duration::from_secs(30), || {
        count(&ev, "take_over") == 1
    });
    let to = events(&ev)
        .into_iter()
        .find(|e| e["event"] == "take_over")
        .unwrap();
    assert_eq!(
        to["adopted"], true,
        "OpenSM's updn tables on a fat tree: {to}"
    );
    assert_eq!(to["lft_blocks"], 0, "{to}");
    let ours = ask_all();
    // Where the two may differ, and why: the SM's LID (another SM), and the optional SA
    // capabilities OpenSM advertises (multipath, UD multicast, re-init, QoS, ...) that
    // fabroute's SA does not serve.
    let allowed = ["SMLid:", "Capability mask....", "Capability mask 2.."];
    let mut differ = Vec::new();
    let mut fields = 0;
    for ((what, a), (_, b)) in theirs.iter().zip(&ours) {
        // saquery prints a SwitchInfoRecord's MulticastFDBTop only when the SA's
        // CapabilityMask2 says the SM keeps it (OpenSM's does; fabroute programs no MFTs).
        let (la, lb): (Vec<&str>, Vec<&str>) = (
            a.lines()
                .filter(|l| !l.contains("MulticastFDBTop"))
                .collect(),
            b.lines().collect(),
        );
        assert_eq!(la.len(), lb.len(), "{what}: OpenSM\n{a}\nfabroute\n{b}");
        assert!(la.len() > 3, "{what} answered: {a}");
        for (x, y) in la.iter().zip(&lb) {
            fields += 1;
            if x != y && !allowed.iter().any(|k| x.contains(k)) {
                differ.push(format!(
                    "{what}: OpenSM `{}` fabroute `{}`",
                    x.trim(),
                    y.trim()
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    eprintln!(
        "{name}: {} queries, {fields} lines compared: equal but for the SM LID and SA capability masks",
        theirs.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
