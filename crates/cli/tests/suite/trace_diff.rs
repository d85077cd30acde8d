//! `fabroute trace` and `fabroute diff` as a user runs them, against answers worked out by
//! hand: a line of three switches written out port by port with its LFTs, SL2VL tables and
//! path SLs, and hand-edited copies of a routed 4x4 torus.

use serde_json::Value;
use std::path::Path;
use std::process::Output;

use crate::common;
use common::{example, fr, summary, tmp};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

/// The fabric: sw1 - sw2 = sw3 (sw2 and sw3 joined twice: ports 2-1 and 4-4).
/// hA on sw1/1, hB on sw3/2, the two-port hC on sw2/3 (port 1) and sw3/3 (port 2).
/// hA and hB share the node description "node HCA-1". LIDs: switches 1, 2, 3; with LMC 1
/// hA 4-5, hB 6-7, hC 8-9 (port 1) and 10-11 (port 2).
const LINE: &str = r#"switchguid=0x0000000000000a01(0000000000000a01)
Switch	4 "sw1"		# "left switch" enhanced port 0 lid 1 lmc 0
[1]	"hA"[1](b01) 		# "node HCA-1" lid 4 4xSDR
[2]	"sw2"[1]		# "middle switch" lid 2 4xSDR

switchguid=0x0000000000000a02(0000000000000a02)
Switch	4 "sw2"		# "middle switch" enhanced port 0 lid 2 lmc 0
[1]	"sw1"[2]		# "left switch" lid 1 4xSDR
[2]	"sw3"[1]		# "right switch" lid 3 4xSDR
[3]	"hC"[1](d01) 		# "gamma HCA-1" lid 8 4xSDR
[4]	"sw3"[4]		# "right switch" lid 3 4xSDR

switchguid=0x0000000000000a03(0000000000000a03)
Switch	4 "sw3"		# "right switch" enhanced port 0 lid 3 lmc 0
[1]	"sw2"[2]		# "middle switch" lid 2 4xSDR
[2]	"hB"[1](c01) 		# "node HCA-1" lid 6 4xSDR
[3]	"hC"[2](d02) 		# "gamma HCA-1" lid 10 4xSDR
[4]	"sw2"[4]		# "middle switch" lid 2 4xSDR

caguid=0x0000000000000b00
Ca	1 "hA"		# "node HCA-1"
[1](b01) 	"sw1"[1]		# lid 4 lmc 0 "left switch" lid 1 4xSDR

caguid=0x0000000000000c00
Ca	1 "hB"		# "node HCA-1"
[1](c01) 	"sw3"[2]		# lid 6 lmc 0 "right switch" lid 3 4xSDR

caguid=0x0000000000000d00
Ca	2 "hC"		# "gamma HCA-1"
[1](d01) 	"sw2"[3]		# lid 8 lmc 0 "middle switch" lid 2 4xSDR
[2](d02) 	"sw3"[3]		# lid 10 lmc 0 "right switch" lid 3 4xSDR
"#;

/// Per switch (GUID suffix, LID, description) the port for LIDs 1..=11. Toward hB the base
/// LID 6 leaves sw2 on port 2, the virtual LID 7 on the parallel link, port 4.
const ROUTES: [(&str, u16, &str, [u8; 11]); 3] = [
    ("a01", 1, "left switch", [0, 2, 2, 1, 1, 2, 2, 2, 2, 2, 2]),
    ("a02", 2, "middle switch", [1, 0, 2, 1, 1, 2, 4, 3, 3, 2, 2]),
    ("a03", 3, "right switch", [1, 1, 0, 1, 1, 2, 2, 1, 1, 3, 3]),
];

/// The LFT dump, with `edit` = (switch GUID suffix, LID, new port or `None` to drop).
fn lfts(edit: Option<(&str, u16, Option<u8>)>) -> String {
    let mut out = String::new();
    for (g, lid, desc, ports) in ROUTES {
        out += &format!(
            "Unicast lids [0-11] of switch Lid {lid} guid 0x0000000000000{g} ('{desc}'):\n"
        );
        for (i, &p) in ports.iter().enumerate() {
            let l = i as u16 + 1;
            let p = match edit {
                Some((eg, el, np)) if eg == g && el == l => np,
                _ => Some(p),
            };
            if let Some(p) = p {
                out += &format!("0x{l:04x} {p:03}\n");
            }
        }
        out += "11 lids dumped\n";
    }
    out
}

/// SL2VL: SL 3 goes on VL 1 through sw2 (in 1, out 2), on VL 2 through sw3 (in 1, out 2),
/// and hA puts it on VL 4. Everything else is the identity (VL = SL).
const SL2VL: &str = "Switch 0x0000000000000a02, base LID 2, \"middle switch\"
#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15
1   2   : 0  1  2  1  4  5  6  7  8  9  10 11 12 13 14 0
Switch 0x0000000000000a03, base LID 3, \"right switch\"
1   2   : 0  1  2  2  4  5  6  7  8  9  10 11 12 13 14 0
Channel Adapter 0x0000000000000b01, base LID 4, \"node HCA-1\"
0   0   : 0  1  2  4  4  5  6  7  8  9  10 11 12 13 14 0
";

/// Path SLs: hA to LID 6 on SL 3, to LID 7 on SL 5 (one source only: the reader takes them
/// as per-destination SLs, 0 for LIDs no line names).
const PSL: &str = "0x0000000000000b00 6 3\n0x0000000000000b00 7 5\n";

/// Writes the line fabric and its tables into `d`; returns the common trace arguments.
fn line_set(d: &Path, lft: &str, sls: bool) -> Vec<String> {
    std::fs::write(d.join("line.ibnd"), LINE).unwrap();
    std::fs::write(d.join("lfts.dump"), lft).unwrap();
    std::fs::write(d.join("sl2vl.dump"), SL2VL).unwrap();
    std::fs::write(d.join("path.psl"), PSL).unwrap();
    let mut v = vec![
        "trace".to_string(),
        s(&d.join("line.ibnd")),
        "--lfts".into(),
        s(&d.join("lfts.dump")),
        "--lmc".into(),
        "1".into(),
    ];
    if sls {
        v.extend([
            "--sl2vl".into(),
            s(&d.join("sl2vl.dump")),
            "--psl".into(),
            s(&d.join("path.psl")),
        ]);
    }
    v
}

fn trace(base: &[String], src: &str, dst: &str, json_out: bool) -> Output {
    let mut a: Vec<&str> = base.iter().map(String::as_str).collect();
    a.extend([src, dst]);
    if json_out {
        a.push("--json");
    }
    fr(&a)
}

/// (switch, in port, out port) of every hop.
fn hops(v: &Value) -> Vec<(String, u64, Option<u64>)> {
    v["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["switch"].as_str().unwrap().to_string(),
                h["in_port"].as_u64().unwrap(),
                h["out_port"].as_u64(),
            )
        })
        .collect()
}

fn hop(sw: &str, inp: u64, out: Option<u64>) -> (String, u64, Option<u64>) {
    (sw.to_string(), inp, out)
}

fn vls(v: &Value) -> Vec<Option<u64>> {
    v["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["vl"].as_u64())
        .collect()
}

#[test]
fn trace_names_lids_and_guids_give_the_hand_computed_path() {
    let d = tmp("trace-forms");
    let base = line_set(&d, &lfts(None), false);
    let o = trace(&base, "hA", "hB", true);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let want = vec![
        hop("sw1", 1, Some(2)),
        hop("sw2", 1, Some(2)),
        hop("sw3", 1, Some(2)),
    ];
    assert_eq!(hops(&v), want);
    assert_eq!(v["delivered"], true);
    assert_eq!(v["switch_hops"], 2);
    assert_eq!(v["dlid"], 6);
    assert_eq!(v["source"]["port_guid"], "0x0000000000000b01");
    assert_eq!(v["source"]["lid"], 4);
    assert_eq!(v["destination"]["node"], "hB");
    assert_eq!(v["destination"]["port_guid"], "0x0000000000000c01");
    let last = &v["hops"][2];
    assert_eq!(
        (last["to"].as_str(), last["to_port"].as_u64()),
        (Some("hB"), Some(1))
    );
    // LIDs (decimal and hex), node and port GUIDs name the same ports.
    for (src, dst) in [
        ("4", "6"),
        ("0x0004", "0x6"),
        ("0x0000000000000b00", "0x0000000000000c00"),
        ("0x0000000000000b01", "0x0000000000000c01"),
        ("hA/1", "right switch"),
    ] {
        let o = trace(&base, src, dst, true);
        if dst == "right switch" {
            // A switch's description: its port 0, delivered on sw3 itself.
            let v = json(&o);
            assert_eq!(
                hops(&v),
                vec![
                    hop("sw1", 1, Some(2)),
                    hop("sw2", 1, Some(2)),
                    hop("sw3", 1, Some(0))
                ]
            );
            assert_eq!(v["dlid"], 3);
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{src} {dst}: {}", stderr(&o));
        assert_eq!(hops(&json(&o)), want, "{src} -> {dst}");
    }
    // The text a user reads.
    let o = trace(&base, "hA", "hB", false);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "hA port 1 (0x0000000000000b01, LID 4) -> hB port 1 (0x0000000000000c01, LID 6): DLID 6, SL 0"
    );
    assert_eq!(
        lines[2],
        "  src  hA    0x0000000000000b01  port 1           0   0"
    );
    assert_eq!(
        lines[3],
        "  1    sw1   0x0000000000000a01  in 1 out 2       0   0"
    );
    assert_eq!(
        lines[5],
        "  3    sw3   0x0000000000000a03  in 1 out 2       0   0"
    );
    assert_eq!(lines[6], "  dst  hB    0x0000000000000c01  port 1");
    assert_eq!(
        lines[7],
        "delivered: 3 switch(es), 2 switch-to-switch link(s)"
    );
}

#[test]
fn trace_a_virtual_lid_takes_its_own_path() {
    let d = tmp("trace-vlid");
    let base = line_set(&d, &lfts(None), false);
    let v = json(&trace(&base, "hA", "7", true));
    // LID 7 is hB's second LID: sw2 sends it over the parallel link (port 4 to sw3's port 4).
    assert_eq!(
        hops(&v),
        vec![
            hop("sw1", 1, Some(2)),
            hop("sw2", 1, Some(4)),
            hop("sw3", 4, Some(2))
        ]
    );
    assert_eq!(v["dlid"], 7);
    assert_eq!(v["destination"]["lid"], 6);
    let text = stdout(&trace(&base, "hA", "7", false));
    assert!(text.contains("DLID 7 (virtual LID: base 6 + 1)"), "{text}");
}

#[test]
fn trace_sl_from_the_psl_and_vl_from_each_sl2vl() {
    let d = tmp("trace-sl");
    let base = line_set(&d, &lfts(None), true);
    let v = json(&trace(&base, "hA", "hB", true));
    assert_eq!(v["sl"], 3);
    // hA's own row puts SL 3 on VL 4; sw1 has no table (identity: VL 3); sw2 (in 1, out 2)
    // maps it to VL 1, sw3 (in 1, out 2) to VL 2.
    assert_eq!(v["source_vl"], 4);
    assert_eq!(vls(&v), vec![Some(3), Some(1), Some(2)]);
    assert!(v["hops"].as_array().unwrap().iter().all(|h| h["sl"] == 3));
    // To LID 7: SL 5, which every table here maps to VL 5 (sw2 in 1 out 4 and sw3 in 4
    // out 2 have no rows: identity).
    let v = json(&trace(&base, "hA", "7", true));
    assert_eq!(
        (v["sl"].as_u64(), v["source_vl"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(vls(&v), vec![Some(5), Some(5), Some(5)]);
    // No line names LID 4: SL 0, VL 0 everywhere.
    let v = json(&trace(&base, "hB", "hA", true));
    assert_eq!(v["sl"], 0);
    assert_eq!(
        hops(&v),
        vec![
            hop("sw3", 2, Some(1)),
            hop("sw2", 2, Some(1)),
            hop("sw1", 2, Some(1))
        ]
    );
    assert_eq!(vls(&v), vec![Some(0), Some(0), Some(0)]);
    let text = stdout(&trace(&base, "hA", "hB", false));
    assert!(
        text.contains("  2    sw2   0x0000000000000a02  in 1 out 2       3   1"),
        "{text}"
    );
}

#[test]
fn trace_ports_of_a_two_port_hca_and_switch_ends() {
    let d = tmp("trace-ports");
    let base = line_set(&d, &lfts(None), false);
    // hC means its port 1 (on sw2); hC/2 its port 2 (on sw3).
    let v = json(&trace(&base, "hC", "hA", true));
    assert_eq!(v["source"]["port"], 1);
    assert_eq!(
        hops(&v),
        vec![hop("sw2", 3, Some(1)), hop("sw1", 2, Some(1))]
    );
    // From hC port 2 to switch sw1: delivered on sw1's port 0.
    let v = json(&trace(&base, "hC/2", "sw1", true));
    assert_eq!(v["source"]["port_guid"], "0x0000000000000d02");
    assert_eq!(
        hops(&v),
        vec![
            hop("sw3", 3, Some(1)),
            hop("sw2", 2, Some(1)),
            hop("sw1", 2, Some(0))
        ]
    );
    assert_eq!(vls(&v)[2], None, "the destination switch keeps the packet");
    assert_eq!(v["switch_hops"], 2);
    // From switch sw1 (its port 0) to hC port 2 (LID 10).
    let v = json(&trace(&base, "sw1", "10", true));
    assert_eq!(v["source"]["port"], 0);
    assert_eq!(v["destination"]["port"], 2);
    assert_eq!(
        hops(&v),
        vec![
            hop("sw1", 0, Some(2)),
            hop("sw2", 1, Some(2)),
            hop("sw3", 1, Some(3))
        ]
    );
}

#[test]
fn trace_undelivered_says_where_and_why_and_exits_1() {
    let d = tmp("trace-lost");
    // sw2 loses its entry for LID 6.
    let base = line_set(&d, &lfts(Some(("a02", 6, None))), false);
    let o = trace(&base, "hA", "hB", true);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["delivered"], false);
    assert_eq!(hops(&v), vec![hop("sw1", 1, Some(2)), hop("sw2", 1, None)]);
    let lost = &v["lost"];
    assert_eq!(lost["failure"], "no_route");
    assert_eq!(lost["switch"], "sw2");
    assert_eq!(lost["in_port"], 1);
    assert!(lost["entry"].is_null());
    let o = trace(&base, "hA", "hB", false);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains(
        "NOT DELIVERED at sw2 (0x0000000000000a02), entered on port 1: no LFT entry for LID 6 (unset)"
    ));
    // The virtual LID still arrives (sw2's entry for LID 7 is there).
    assert_eq!(trace(&base, "hA", "7", true).status.code(), Some(0));

    // sw1 sends LID 6 to its port 3, which has no cable.
    let base = line_set(&d, &lfts(Some(("a01", 6, Some(3)))), false);
    let o = trace(&base, "hA", "hB", true);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(hops(&v), vec![hop("sw1", 1, Some(3))]);
    assert_eq!(v["lost"]["failure"], "unconnected");
    assert_eq!(v["lost"]["entry"], 3);

    // sw2 sends LID 6 back to sw1, which sends it to sw2 again: a loop.
    let base = line_set(&d, &lfts(Some(("a02", 6, Some(1)))), false);
    let o = trace(&base, "hA", "hB", true);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(
        hops(&v),
        vec![hop("sw1", 1, Some(2)), hop("sw2", 1, Some(1))]
    );
    assert_eq!(v["lost"]["failure"], "loop");
    assert_eq!(v["lost"]["switch"], "sw1");
    assert_eq!(v["lost"]["in_port"], 2);
    assert!(v["lost"]["reason"]
        .as_str()
        .unwrap()
        .contains("sw1 -> sw2 -> sw1"));

    // sw3 sends LID 6 to hC's port 2: delivered to the wrong end port.
    let base = line_set(&d, &lfts(Some(("a03", 6, Some(3)))), false);
    let v = json(&trace(&base, "hA", "hB", true));
    assert_eq!(v["lost"]["failure"], "misdelivered");
    assert!(v["lost"]["reason"].as_str().unwrap().contains("hC port 2"));
}

#[test]
fn trace_ambiguous_and_unknown_names_list_candidates() {
    let d = tmp("trace-names");
    let base = line_set(&d, &lfts(None), false);
    let o = trace(&base, "node HCA-1", "hC", false);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("is ambiguous"), "{e}");
    assert!(e.contains("hA port 1 (0x0000000000000b01, LID 4"), "{e}");
    assert!(e.contains("hB port 1 (0x0000000000000c01, LID 6"), "{e}");
    let o = trace(&base, "hA", "HCA", false);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("DST \"HCA\": no node name"), "{e}");
    assert!(e.contains("\"hC\" (\"gamma HCA-1\")"), "{e}");
    let o = trace(&base, "hC/3", "hA", false);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("hC has ports 1..=2"));
    // LID 12 belongs to nobody.
    assert_eq!(trace(&base, "hA", "12", false).status.code(), Some(3));
    // The same port twice is a usage error.
    assert_eq!(trace(&base, "hA", "4", false).status.code(), Some(2));
}

/// DOR on the shipped torus: H_0_0_0 (on S_0_0 port 1) to H_1_0_0 (on S_1_0 port 1), whose
/// switches are neighbours over S_0_0 port 3 - S_1_0 port 4: the one minimal path.
#[test]
fn trace_on_the_routed_torus() {
    let d = tmp("trace-torus");
    let o = fr(&[
        "route",
        &example("torus2d_4x4_h2.net"),
        "-R",
        "dor",
        "-o",
        &s(&d),
    ]);
    // DOR on a torus has credit loops (exit 1); its paths are still the minimal ones.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v = json(&fr(&[
        "trace",
        &s(&d.join("opensm-subnet.lst")),
        "--lfts",
        &s(&d.join("opensm-lfts.dump")),
        "H_0_0_0",
        "H_1_0_0",
        "--json",
    ]));
    assert_eq!(
        hops(&v),
        vec![hop("S_0_0", 1, Some(3)), hop("S_1_0", 4, Some(1))]
    );
    assert_eq!(v["switch_hops"], 1);
}

// ---------------------------------------------------------------- diff

/// Routes the torus with `engine` and LMC `lmc` into `dir`.
fn route(dir: &Path, engine: &str, lmc: &str) {
    let o = fr(&[
        "route",
        &example("torus2d_4x4_h2.net"),
        "-R",
        engine,
        "--lmc",
        lmc,
        "-o",
        &s(dir),
    ]);
    // DOR on a torus has credit loops (exit 1): the tables are written all the same.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(dir.join("opensm-lfts.dump").is_file());
}

/// The entry of switch `guid` for `lid` in an LFT dump (`None`: no entry).
fn entry_of(dump: &str, guid: &str, lid: u16) -> Option<u8> {
    let mut cur = false;
    for l in dump.lines() {
        if l.starts_with("Unicast") {
            cur = l.contains(&format!("guid {guid} "));
        } else if cur && l.starts_with(&format!("0x{lid:04x} ")) {
            return l[7..10].parse().ok();
        }
    }
    None
}

/// The dump with the entry of switch `guid` for `lid` set to `port` (`None`: removed).
fn set_entry(dump: &str, guid: &str, lid: u16, port: Option<u8>) -> String {
    let mut cur = false;
    let mut out = String::new();
    for l in dump.lines() {
        if l.starts_with("Unicast") {
            cur = l.contains(&format!("guid {guid} "));
        } else if cur && l.starts_with(&format!("0x{lid:04x} ")) {
            if let Some(p) = port {
                out += &format!("0x{lid:04x} {p:03}{}\n", &l[10..]);
            }
            continue;
        }
        out += l;
        out += "\n";
    }
    out
}

/// A copy of set `from` whose summary.json keeps the LMC but no digests (its files are
/// edited).
fn copy_set(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["opensm-subnet.lst", "opensm-lfts.dump"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
    let mut v = summary(from);
    v.as_object_mut().unwrap().remove("files");
    std::fs::write(to.join("summary.json"), v.to_string()).unwrap();
}

fn port_change(p: u8) -> u8 {
    p % 6 + 1
}

#[test]
fn diff_finds_exactly_the_entries_changed_by_hand() {
    let d = tmp("diff-hand");
    let (a, b) = (d.join("a"), d.join("b"));
    route(&a, "dor", "2");
    copy_set(&a, &b);
    let dump = std::fs::read_to_string(a.join("opensm-lfts.dump")).unwrap();
    let (s00, s11) = ("0x0000000000200000", "0x0000000000200005");
    // LMC 2: 16 switch LIDs and 32 x 4 end-port LIDs, up to 147 (blocks 0, 1 and 2).
    // S_0_0: LID 20 (block 0) moved, LID 21 (block 0) removed, LID 140 (block 2) moved;
    // S_1_1: LID 70 (block 1) moved.
    let edits: [(&str, u16, Option<u8>); 4] = {
        let e = |g, l| entry_of(&dump, g, l).expect("routed entry");
        [
            (s00, 20, Some(port_change(e(s00, 20)))),
            (s00, 21, None),
            (s00, 140, Some(port_change(e(s00, 140)))),
            (s11, 70, Some(port_change(e(s11, 70)))),
        ]
    };
    let mut edited = dump.clone();
    for (g, l, p) in edits {
        edited = set_entry(&edited, g, l, p);
    }
    std::fs::write(b.join("opensm-lfts.dump"), &edited).unwrap();
    // One path SL (H_0_0_0, node GUID 0x100000, to LID 52: SL 2; H_0_0_1 keeps SL 0 to it,
    // which makes the table per pair, 0 for the pairs not listed) and one SL2VL entry
    // (S_0_0, in 1 out 3, SL 2 on VL 5 instead of 2).
    std::fs::write(
        b.join("opensm-path-sl.psl"),
        "0x0000000000100000 52 2\n0x0000000000100002 52 0\n",
    )
    .unwrap();
    std::fs::write(
        b.join("opensm-sl2vl.dump"),
        "Switch 0x0000000000200000, base LID 1, \"S_0_0\"\n\
         1   3   : 0  1  5  3  4  5  6  7  8  9  10 11 12 13 14 0\n",
    )
    .unwrap();

    let o = fr(&["diff", &s(&a), &s(&b), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    let t = &v["totals"];
    assert_eq!(t["lft_entries"], 4);
    assert_eq!(t["lft_blocks"], 3);
    assert_eq!(t["switches"], 2);
    assert_eq!(t["sl2vl_entries"], 1);
    assert_eq!(t["path_sls"], 1);
    assert_eq!(v["identical"], false);
    let lft = v["lft"].as_array().unwrap();
    assert_eq!(lft.len(), 2);
    assert_eq!(lft[0]["switch"], "S_0_0");
    assert_eq!(lft[0]["blocks"], serde_json::json!([0, 2]));
    assert_eq!(lft[1]["switch"], "S_1_1");
    assert_eq!(lft[1]["blocks"], serde_json::json!([1]));
    let got: Vec<(u64, u64, Option<u64>, Option<u64>)> = lft
        .iter()
        .flat_map(|s| s["entries"].as_array().unwrap().clone())
        .map(|e| {
            (
                e["lid"].as_u64().unwrap(),
                e["block"].as_u64().unwrap(),
                e["old"].as_u64(),
                e["new"].as_u64(),
            )
        })
        .collect();
    let want: Vec<(u64, u64, Option<u64>, Option<u64>)> = edits
        .iter()
        .map(|&(g, l, p)| {
            (
                l as u64,
                l as u64 / 64,
                entry_of(&dump, g, l).map(u64::from),
                p.map(u64::from),
            )
        })
        .collect();
    assert_eq!(got, want);
    let sl = &v["sl2vl"][0];
    assert_eq!(
        (
            &sl["node"],
            &sl["in"],
            &sl["out"],
            &sl["sl"],
            &sl["old_vl"],
            &sl["new_vl"]
        ),
        (
            &Value::from("S_0_0"),
            &Value::from(1),
            &Value::from(3),
            &Value::from(2),
            &Value::from(2),
            &Value::from(5)
        )
    );
    let p = &v["path_sl"][0];
    assert_eq!(p["source"], "H_0_0_0");
    assert_eq!(p["dlid"], 52);
    assert_eq!(
        (p["old_sl"].as_u64(), p["new_sl"].as_u64()),
        (Some(0), Some(2))
    );

    // The same in text, and the other way round (old and new swap).
    let o = fr(&["diff", &s(&a), &s(&b)]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("LFT: 4 entries differ in 3 blocks on 2 switches"),
        "{text}"
    );
    assert!(text.contains("  switch S_0_0 0x0000000000200000: 3 entries, block(s) 0 2"));
    let old20 = entry_of(&dump, s00, 20).unwrap();
    assert!(text.contains(&format!(
        "    LID 20 (0x0014), block 0: port {old20} -> {}",
        port_change(old20)
    )));
    assert!(text.contains(&format!(
        "    LID 21 (0x0015), block 0: port {} -> -",
        entry_of(&dump, s00, 21).unwrap()
    )));
    assert!(text.contains("  S_0_0 0x0000000000200000 in 1 out 3: SL 2: VL 2 -> 5"));
    assert!(text.contains("SL 0 -> 2"));
    assert!(text.ends_with("A and B differ\n"));
    let v = json(&fr(&["diff", &s(&b), &s(&a), "--json"]));
    let e = &v["lft"][0]["entries"][1];
    assert_eq!((e["lid"].as_u64(), e["old"].as_u64()), (Some(21), None));
    assert_eq!(e["new"].as_u64(), entry_of(&dump, s00, 21).map(u64::from));

    // Explicit files against one fabric: the LFTs only.
    let v = json(&fr(&[
        "diff",
        "--fabric",
        &s(&a.join("opensm-subnet.lst")),
        "--lmc",
        "2",
        &s(&a.join("opensm-lfts.dump")),
        &s(&b.join("opensm-lfts.dump")),
        "--json",
    ]));
    assert_eq!(v["totals"]["lft_entries"], 4);
    assert_eq!(v["compared"], serde_json::json!(["lft"]));
    // A file without --fabric is a usage error.
    let o = fr(&["diff", &s(&a.join("opensm-lfts.dump")), &s(&b)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn diff_of_identical_sets_is_exit_0() {
    let d = tmp("diff-same");
    let (a, b) = (d.join("a"), d.join("b"));
    route(&a, "dor", "0");
    copy_set(&a, &b);
    for (x, y) in [(&a, &a), (&a, &b)] {
        let o = fr(&["diff", &s(x), &s(y)]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).ends_with("A and B are identical\n"));
    }
    let v = json(&fr(&["diff", &s(&a), &s(&b), "--json"]));
    assert_eq!(v["identical"], true);
    assert_eq!(v["totals"]["lft_entries"], 0);
}

#[test]
fn diff_refuses_sets_of_different_fabrics() {
    let d = tmp("diff-other");
    let (t, k) = (d.join("torus"), d.join("ktree"));
    route(&t, "updn", "0");
    let o = fr(&[
        "route",
        &example("ktree_k4_n3.net"),
        "-R",
        "updn",
        "-o",
        &s(&k),
    ]);
    assert!(o.status.success());
    let o = fr(&["diff", &s(&t), &s(&k)]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("not tables of the same fabric"), "{e}");
    assert!(e.contains("port GUID 0x0000000000100001"), "{e}");
    // Sets routed with different LMCs have different LID ranges.
    let l2 = d.join("lmc2");
    route(&l2, "updn", "2");
    let o = fr(&["diff", &s(&t), &s(&l2)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("LMC 0 and B with LMC 2"));
}

/// A fault set leaves its failed switch out of its subnet.lst: it is a set of the same
/// fabric (read against the route set's). Two fault sets with different failures need the
/// fabric without failures.
#[test]
fn diff_accepts_a_fault_set_of_the_same_fabric() {
    let d = tmp("diff-fault");
    let (r, f1, f2) = (d.join("route"), d.join("f1"), d.join("f2"));
    route(&r, "updn", "2");
    for (dir, sw) in [(&f1, "switch:S_2_2"), (&f2, "switch:S_1_1")] {
        let o = fr(&[
            "fault",
            &example("torus2d_4x4_h2.net"),
            "--engine",
            "updn",
            "--lmc",
            "2",
            "--fail",
            sw,
            "-o",
            &s(dir),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = fr(&["diff", &s(&r), &s(&f1)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    // S_2_2, its two HCAs and its six cables.
    assert!(
        text.contains("B's opensm-subnet.lst lacks 9 port(s) and cable(s) that A's lists"),
        "{text}"
    );
    assert!(text.contains("(--all shows every one)"));
    let all = stdout(&fr(&["diff", &s(&r), &s(&f1), "--all"]));
    assert!(!all.contains("--all shows"));
    assert!(all.lines().count() > text.lines().count());
    let o = fr(&["diff", &s(&f1), &s(&f2)]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("--fabric"));
    let o = fr(&[
        "diff",
        &s(&f1),
        &s(&f2),
        "--fabric",
        &s(&r.join("opensm-subnet.lst")),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}
