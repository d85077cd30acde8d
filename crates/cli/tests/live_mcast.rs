//! `fabroute sm --mcast ipoib` on ibsim: the IPoIB broadcast group's tree is programmed as
//! MulticastForwardingTable blocks at subnet up; `ibroute -M` of every switch reads back
//! what `opensm.mcfdbs` says, and `fabroute check` finds the group delivered to every
//! member exactly once from every sender; after a host's cable and then a cable between
//! switches are pulled, the mended tree is in the switches and checks clean.
//!
//! Needs ibsim-utils, libumad2sim0 and infiniband-diags, as `live_ibsim`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;
use std::time::Duration;

mod common;
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
            for w in l[at..].split(' ') {
                if let Ok(p) = w.parse::<u64>() {
                    cols.push((at, p));
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

#[test]
fn the_ipoib_tree_is_programmed_and_mended() {
    if !tools_present() {
        return;
    }
    let name = "mcast";
    let (dir, netf, net, sock) = generated_net(name, &["torus", "4x4", "hcas=2"]);
    let mut ibsim = start_ibsim(&dir, &netf, &net, &sock);
    let ev = dir.join("events.jsonl");
    let out = dir.join("tables");
    let _sm = spawn_sm(
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
    let up = events(&ev).remove(0);
    let asker = &net.hcas[3];
    let verify = |what: &str, members: &[&str]| {
        let written = mft_lines(&read(&out.join("opensm.mcfdbs")), None);
        assert!(!written.is_empty(), "{what}: opensm.mcfdbs has the group");
        let held = read_back(&dir, &sock, asker, &read(&out.join("opensm-subnet.lst")));
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
        assert!(ok, "{what}: check of the multicast tree:\n{text}");
        written.len()
    };
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
