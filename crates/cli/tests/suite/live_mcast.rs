//! `fabroute sm --mcast ipoib` on ibsim: the IPoIB broadcast group's tree is programmed as
//! MulticastForwardingTable blocks at subnet up; `ibroute -M` of every switch reads back
//! what `opensm.mcfdbs` says, and `fabroute check` finds the group delivered to every
//! member exactly once from every sender; after a host's cable and then a cable between
//! switches are pulled, the mended tree is in the switches and checks clean.
//!
//! Hosts then join and leave groups through the SA (`fabroute join` as ibsim clients).
//!
//! Needs ibsim-utils, libumad2sim0 and infiniband-diags, as `live_ibsim`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::ibsim::*;

/// (switch GUID, MLID) → ports, from OpenSM's `opensm.mcfdbs` format or `ibroute -M`'s
/// (both print "Switch 0x<guid>" then "0xC000 : 0x001 0x002 ...").
fn mft_lines(text: &str, guid: Option<u64>) -> BTreeMap<(u64, u64), Vec<u64>> {
    let mut out = BTreeMap::new();
    let mut cur = guid;
    for l in text.lines() {
        if let Some(g) = l.strip_prefix("Switch 0x") {
            cur = u64::from_str_radix(g.split_whitespace().next().unwrap_or(""), 16).ok();
            continue;
        }
        let Some((lid, ports)) = l.split_once(':') else {
            continue;
        };
        let Some(lid) = lid.trim().strip_prefix("0x") else {
            continue;
        };
        let (Ok(mlid), Some(g)) = (u64::from_str_radix(lid, 16), cur) else {
            continue;
        };
        if mlid < 0xC000 {
            continue;
        }
        let ports: Vec<u64> = ports
            .split_whitespace()
            .filter_map(|p| u64::from_str_radix(p.trim_start_matches("0x"), 16).ok())
            .collect();
        out.insert((g, mlid), ports);
    }
    out
}

/// MLID → ports of `ibroute -M`'s table: a "Ports: 0 1 2 ..." header, then one row per MLID
/// with an `x` under each port it forwards to.
fn ibroute_mft(text: &str) -> BTreeMap<u64, Vec<u64>> {
    let mut out = BTreeMap::new();
    let mut cols: Vec<(usize, u64)> = Vec::new();
    for l in text.lines() {
        if let Some(i) = l.find("Ports:") {
            let mut at = i + "Ports:".len();
            cols.clear();
            // Ports 10 and up show only their last digit on this line (the tens are on
            // the line above): the n-th number is port n.
            for w in l[at..].split(' ') {
                if w.parse::<u64>().is_ok() {
                    cols.push((at, cols.len() as u64));
                }
                at += w.len() + 1;
            }
            continue;
        }
        let t = l.trim_start();
        let Some(hex) = t.strip_prefix("0x") else {
            continue;
        };
        let Ok(mlid) = u64::from_str_radix(hex.split_whitespace().next().unwrap_or(""), 16) else {
            continue;
        };
        let bytes = l.as_bytes();
        let ports = cols
            .iter()
            .filter(|&&(c, _)| bytes.get(c) == Some(&b'x'))
            .map(|&(_, p)| p)
            .collect();
        out.insert(mlid, ports);
    }
    out
}

/// Every switch's MFT as `ibroute -M` reads it, keyed like `mft_lines`.
fn read_back(
    dir: &std::path::Path,
    sock: &str,
    host: &str,
    lst: &str,
) -> BTreeMap<(u64, u64), Vec<u64>> {
    let mut all = BTreeMap::new();
    for l in lst.lines().filter(|l| l.starts_with("{ SW")) {
        let first = l.split(" } ").next().unwrap();
        let guid =
            u64::from_str_radix(&first.split("PortGUID:").nth(1).unwrap()[..16], 16).unwrap();
        let lid = u64::from_str_radix(&first.split("LID:").nth(1).unwrap()[..4], 16).unwrap();
        let o = sim_client("ibroute", dir, sock, host)
            .args(["-M", &lid.to_string()])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "ibroute -M {lid}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        for (mlid, ports) in ibroute_mft(&String::from_utf8_lossy(&o.stdout)) {
            all.insert((guid, mlid), ports);
        }
    }
    all
}

/// An ibsim fabric (a 4x4 torus, 2 HCAs per switch) with `fabroute sm -R updn --lmc 0
/// --mcast ipoib` up on its first HCA.
struct Live {
    dir: std::path::PathBuf,
    net: IbsimNet,
    sock: String,
    ibsim: Proc,
    _sm: Proc,
    /// The SM's events file and its `-o` directory.
    ev: std::path::PathBuf,
    out: std::path::PathBuf,
}

fn start(name: &str) -> Live {
    let (dir, netf, net, sock) = generated_net(name, &["torus", "4x4", "hcas=2"]);
    let ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let ev = dir.join("events.jsonl");
    let out = dir.join("tables");
    let sm = spawn_sm(
        &dir,
        &sock,
        &net.hcas[0],
        &[
            "-R",
            "updn",
            "--lmc",
            "0",
            "--mcast",
            "ipoib",
            "--sweep-interval",
            "1",
        ],
        &ev,
        &out,
    );
    wait_for("subnet up", Duration::from_secs(60), || {
        count(&ev, "subnet_up") == 1
    });
    Live {
        dir,
        net,
        sock,
        ibsim,
        _sm: sm,
        ev,
        out,
    }
}

/// The switches' MFTs read back (by `ibroute -M` as `asker`) equal the SM's `opensm.mcfdbs`,
/// which is not empty, and `fabroute check` of the SM's tables passes with `members` (the
/// groups' members, `--mcast …`, or none). Returns what the switches hold.
fn programmed(
    dir: &std::path::Path,
    sock: &str,
    asker: &str,
    out: &std::path::Path,
    what: &str,
    members: &[&str],
) -> BTreeMap<(u64, u64), Vec<u64>> {
    let written = mft_lines(&read(&out.join("opensm.mcfdbs")), None);
    assert!(!written.is_empty(), "{what}: opensm.mcfdbs has the group");
    let held = read_back(dir, sock, asker, &read(&out.join("opensm-subnet.lst")));
    assert_eq!(
        held, written,
        "{what}: the switches hold what opensm.mcfdbs says"
    );
    let (ok, text) = run(Command::new(bin())
        .arg("check")
        .arg(out.join("opensm-subnet.lst"))
        .arg("--lfts")
        .arg(out.join("opensm-lfts.dump"))
        .arg("--mcfdbs")
        .arg(out.join("opensm.mcfdbs"))
        .args(members)
        .args(["--lmc", "0"]));
    assert!(ok, "{what}: check of the multicast tables:\n{text}");
    held
}

#[test]
fn the_ipoib_tree_is_programmed_and_mended() {
    if !tools_present() {
        return;
    }
    let name = "mcast";
    let Live {
        dir,
        net,
        sock,
        mut ibsim,
        _sm,
        ev,
        out,
    } = start(name);
    let up = events(&ev).remove(0);
    let asker = &net.hcas[3];
    let verify =
        |what: &str, members: &[&str]| programmed(&dir, &sock, asker, &out, what, members).len();
    let switches = verify("subnet up", &["--mcast", "ipoib"]);
    assert_eq!(
        switches, 16,
        "the broadcast tree spans every switch of the torus"
    );
    assert_eq!(up["mft_blocks"], 16, "{up}");

    // A host's cable: the host leaves the tree.
    let (sw, port) = (net.hcas[5].clone(), 1);
    let mut stdin = ibsim.0.stdin.take().unwrap();
    writeln!(stdin, "Unlink \"{sw}\"[{port}]").unwrap();
    stdin.flush().unwrap();
    wait_for("the repair", Duration::from_secs(30), || {
        count(&ev, "repaired") >= 1
    });
    let rep = events(&ev)
        .into_iter()
        .find(|e| e["event"] == "repaired")
        .unwrap();
    assert_eq!(rep["failed_smps"], 0, "{rep}");
    // Every end port a mask names is a full member (the host cut off is in none).
    verify("after the unlink", &[]);
    assert!(rep["mft_blocks"].as_u64().unwrap() > 0, "{rep}");
    // Then a cable between switches: the tree is mended, and LID-routed queries still
    // reach every switch (the completion routes switch LIDs again).
    let (sw2, port2) = net.cables[0].clone();
    writeln!(stdin, "Unlink \"{sw2}\"[{port2}]").unwrap();
    stdin.flush().unwrap();
    wait_for("the second repair", Duration::from_secs(30), || {
        count(&ev, "repaired") >= 2
    });
    let rep2 = events(&ev)
        .into_iter()
        .filter(|e| e["event"] == "repaired")
        .nth(1)
        .unwrap();
    assert_eq!(rep2["failed_smps"], 0, "{rep2}");
    verify("after the second unlink", &[]);
    eprintln!(
        "{name}: {} MFT blocks at subnet up; Unlink \"{sw}\"[{port}] mended with {} blocks, Unlink \"{sw2}\"[{port2}] with {}",
        up["mft_blocks"], rep["mft_blocks"], rep2["mft_blocks"]
    );
    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fabroute --json join ARGS` as HCA `host`: its JSON document, or a panic with its output.
fn join(dir: &std::path::Path, sock: &str, host: &str, args: &[String]) -> serde_json::Value {
    let o = sim_client(bin(), dir, sock, host)
        .arg("--json")
        .arg("join")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fabroute join {args:?} on {host}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Hosts join groups through the SA of `fabroute sm` on ibsim (`fabroute join`, one client
/// process per host, as IPoIB or MPI would): every join and leave is programmed, the
/// switches' MFTs read back by `ibroute -M` equal `opensm.mcfdbs`, and `fabroute check`
/// finds every group delivered to exactly its members from every sender, before and after
/// a cable between switches is pulled and after half the members leave. Then 1,000
/// join/leave cycles of two groups from one host end with the MLIDs they started with and
/// the switches holding what they held before the cycles.
#[test]
fn joins_through_the_sa_are_programmed_mended_and_cycled() {
    if !tools_present() {
        return;
    }
    let name = "mjoin";
    let Live {
        dir,
        net,
        sock,
        mut ibsim,
        _sm,
        ev,
        out,
    } = start(name);
    // Six groups; host i joins group k when (i + k) % 3 == 0: about a third of the hosts
    // each, every host in two groups.
    let mgid = |k: usize| format!("ff12:1234::{k}");
    let mut members: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut mlids: BTreeMap<usize, u64> = BTreeMap::new();
    let hosts: Vec<String> = net.hcas[1..].to_vec();
    for (i, h) in hosts.iter().enumerate() {
        let mine: Vec<usize> = (1..=6).filter(|k| (i + k) % 3 == 0).collect();
        let doc = join(
            &dir,
            &sock,
            h,
            &mine.iter().map(|&k| mgid(k)).collect::<Vec<_>>(),
        );
        for (k, g) in mine.iter().zip(doc["groups"].as_array().unwrap()) {
            assert_eq!(g["join_state"], 1, "{doc}");
            let m = g["mlid"].as_u64().unwrap();
            assert!(m > 0xC000, "{doc}");
            assert_eq!(
                *mlids.entry(*k).or_insert(m),
                m,
                "one MLID per group: {doc}"
            );
            members.entry(*k).or_default().push(h.clone());
        }
    }
    let joins: usize = members.values().map(Vec::len).sum();
    wait_for("the join events", Duration::from_secs(30), || {
        count(&ev, "mcast_join") == joins
    });
    let distinct: std::collections::BTreeSet<u64> = mlids.values().copied().collect();
    assert_eq!(distinct.len(), 6, "six groups, six MLIDs: {mlids:?}");
    let asker = &net.hcas[0];
    let verify = |what: &str, members: &BTreeMap<usize, Vec<String>>| {
        let groups = dir.join("groups.txt");
        let mut text = String::from("0xC000 all\n");
        for (k, hs) in members {
            if !hs.is_empty() {
                text += &format!("{:#06x} mgid={} {}\n", mlids[k], mgid(*k), hs.join(" "));
            }
        }
        std::fs::write(&groups, text).unwrap();
        let groups = groups.to_string_lossy().into_owned();
        programmed(&dir, &sock, asker, &out, what, &["--mcast", &groups])
    };
    verify("after the joins", &members);

    // A cable between switches: every tree it cut is mended.
    let (sw, port) = net.cables[0].clone();
    let mut stdin = ibsim.0.stdin.take().unwrap();
    writeln!(stdin, "Unlink \"{sw}\"[{port}]").unwrap();
    stdin.flush().unwrap();
    wait_for("the repair", Duration::from_secs(30), || {
        count(&ev, "repaired") >= 1
    });
    verify("after the unlink", &members);

    // Half the members leave (the first of each group's list, and so on every other one).
    let mut leaves = 0;
    for (k, hs) in members.iter_mut() {
        let all = std::mem::take(hs);
        for (i, h) in all.into_iter().enumerate() {
            if i % 2 == 1 {
                hs.push(h);
                continue;
            }
            let doc = join(&dir, &sock, &h, &["--leave".into(), mgid(*k)]);
            assert_eq!(doc["groups"][0]["join_state"], 0, "{doc}");
            leaves += 1;
        }
    }
    wait_for("the leave events", Duration::from_secs(30), || {
        count(&ev, "mcast_leave") == leaves
    });
    let before = verify("after the leaves", &members);

    // 1,000 join/leave cycles of two new groups from one host.
    let t = std::time::Instant::now();
    let cycler = &net.hcas[net.hcas.len() - 1];
    let doc = join(
        &dir,
        &sock,
        cycler,
        &["--cycles".into(), "1000".into(), mgid(7), mgid(8)],
    );
    assert_eq!(doc["cycles"], 1000, "{doc}");
    let seen = doc["mlids_seen"].as_array().unwrap();
    assert_eq!(seen.len(), 2, "each cycle reuses the MLIDs freed: {doc}");
    wait_for("the cycles' events", Duration::from_secs(60), || {
        count(&ev, "mcast_leave") == leaves + 2000
    });
    let cycles_s = t.elapsed().as_secs_f64();
    let after = verify("after 1,000 cycles", &members);
    assert_eq!(after, before, "the cycles leave no MFT entry behind");
    // The next group created gets the lowest free MLID again: none leaked.
    let lowest_free = (0xC001..)
        .find(|m| !mlids.values().any(|x| x == m))
        .unwrap();
    let doc = join(&dir, &sock, cycler, &[mgid(9)]);
    assert_eq!(doc["groups"][0]["mlid"], lowest_free, "{doc}");
    eprintln!(
        "{name}: {joins} joins, {leaves} leaves, 2,000 join/leave cycles in {cycles_s:.1} s, MLIDs {mlids:?}"
    );
    drop(stdin);
    let _ = std::fs::remove_dir_all(&dir);
}
