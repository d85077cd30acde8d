//! Tests of the line readers (ibnetdiscover, ibsim net, opensm-subnet.lst) and format detection:
//! the shared topology corpus, hand-written realistic dumps, contradictory input with exact
//! messages and lines, and a property test feeding random and mutated bytes to every reader.

use fabric::io::{
    self, detect, iblinkinfo, ibnetdiscover, ibsim, ports_report, subnet_lst, text, Format, Loaded,
    ParseError,
};
use fabric::{BuildOptions, Fabric, NodeId, NodeKind, Speed, Width};
use proptest::prelude::*;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------------
// helpers

/// The vendored test data (`tests/data` at the workspace root).
fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

fn data(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fabrics")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn no_include(name: &str) -> Result<(String, Vec<u8>), String> {
    Err(format!("no include support in this test ({name})"))
}

fn ibsim_str(text: &str) -> Result<Loaded, ParseError> {
    ibsim::read(
        text.as_bytes(),
        "t.net",
        &mut no_include,
        BuildOptions::default(),
    )
}

fn ibnd_str(text: &str) -> Result<Loaded, ParseError> {
    ibnetdiscover::read(text.as_bytes(), "t.ibnd", BuildOptions::default())
}

fn lst_str(text: &str) -> Result<Loaded, ParseError> {
    subnet_lst::read(text.as_bytes(), "t.lst", BuildOptions::default())
}

fn ports_str(text: &str) -> Result<Loaded, ParseError> {
    ports_report::read(text.as_bytes(), "t.ports", BuildOptions::default())
}

fn node(f: &Fabric, name: &str) -> NodeId {
    f.node_by_name(name)
        .unwrap_or_else(|| panic!("no node {name:?}"))
}

/// (name, port) at the other end of `name[port]`.
fn peer(f: &Fabric, name: &str, port: u8) -> Option<(String, u8)> {
    let n = node(f, name);
    let r = f.remote(f.port_id(n, port))?;
    let rp = f.port(r);
    Some((f.node(rp.node).name.clone(), rp.num))
}

fn link_of<'a>(f: &'a Fabric, name: &str, port: u8) -> &'a fabric::Link {
    let n = node(f, name);
    let l = f.port(f.port_id(n, port)).link.expect("cabled");
    f.link(l)
}

fn lid(f: &Fabric, name: &str, port: u8) -> u16 {
    let n = node(f, name);
    f.port(f.port_id(n, port)).lid
}

fn port_guid(f: &Fabric, name: &str, port: u8) -> u64 {
    let n = node(f, name);
    f.port(f.port_id(n, port)).guid
}

/// Every link as a sorted pair of (name, port), sorted.
fn link_set(f: &Fabric) -> Vec<((String, u8), (String, u8))> {
    let mut v: Vec<_> = f
        .links
        .iter()
        .map(|l| {
            let (a, b) = (f.port(l.a), f.port(l.b));
            let x = (f.node(a.node).name.clone(), a.num);
            let y = (f.node(b.node).name.clone(), b.num);
            if x <= y {
                (x, y)
            } else {
                (y, x)
            }
        })
        .collect();
    v.sort();
    v
}

fn sw_links(f: &Fabric) -> usize {
    f.links
        .iter()
        .filter(|l| {
            let (a, b) = (f.port(l.a).node, f.port(l.b).node);
            a != b && f.is_switch(a) && f.is_switch(b)
        })
        .count()
}

fn expect_err(r: Result<Loaded, ParseError>) -> ParseError {
    match r {
        Ok(l) => panic!(
            "expected an error, got a fabric with {} nodes (warnings {:?})",
            l.fabric.nodes.len(),
            l.warnings
        ),
        Err(e) => e,
    }
}

fn assert_err(r: Result<Loaded, ParseError>, line: usize, needle: &str) -> ParseError {
    let e = expect_err(r);
    assert!(
        e.message.contains(needle),
        "message {:?} does not contain {needle:?}",
        e.message
    );
    assert_eq!(e.line, line, "wrong line in {e}");
    e
}

// ---------------------------------------------------------------------------------------------
// ibsim: the shared corpus

#[test]
fn ibsim_corpus_matches_meta() {
    let dir = testdata().join("topologies");
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "net"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .net files in {}", dir.display());
    for p in &files {
        let bytes = std::fs::read(p).unwrap();
        let name = p.display().to_string();
        assert_eq!(detect(&bytes), Some(Format::IbsimNet), "{name}");
        let loaded = ibsim::read(&bytes, &name, &mut no_include, BuildOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.warnings.is_empty(), "{name}: {:?}", loaded.warnings);
        let f = &loaded.fabric;
        let meta_path = PathBuf::from(format!("{}.meta.json", p.display()));
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
        assert_eq!(
            f.num_switches() as u64,
            meta["num_switches"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            f.count(NodeKind::Ca) as u64,
            meta["num_hcas"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            sw_links(f) as u64,
            meta["num_sw_links"].as_u64().unwrap(),
            "{name}"
        );
        // Every HCA is cabled (one port each) → links = sw links + hcas.
        assert_eq!(f.links.len(), sw_links(f) + f.count(NodeKind::Ca), "{name}");
        for s in meta["switches"].as_array().unwrap() {
            let sname = s["name"].as_str().unwrap();
            let want =
                u64::from_str_radix(s["guid"].as_str().unwrap().trim_start_matches("0x"), 16)
                    .unwrap();
            let n = node(f, sname);
            assert_eq!(f.node(n).guid, want, "{name}: GUID of {sname}");
            assert_eq!(
                f.node(n).nports as u64,
                s["nports"].as_u64().unwrap(),
                "{name}: {sname}"
            );
            assert_eq!(
                port_guid(f, sname, 0),
                want,
                "{name}: port 0 GUID of {sname}"
            );
            assert_eq!(f.node(n).desc, sname, "ibsim uses the id as description");
        }
        // ibsim CA GUIDs: 0x100000 advancing by ports + 1, port GUID = node GUID + port.
        let mut next = 0x100000u64;
        for nd in f.nodes.iter().filter(|n| n.kind == NodeKind::Ca) {
            assert_eq!(nd.guid, next, "{name}: CA {}", nd.name);
            let n = node(f, &nd.name);
            for p in 1..=nd.nports {
                assert_eq!(port_guid(f, &nd.name, p), nd.guid + p as u64);
            }
            assert_eq!(f.node(n).sys_guid, nd.guid);
            next += nd.nports as u64 + 1;
        }
        // ibsim links come up 4x SDR.
        assert!(f
            .links
            .iter()
            .all(|l| l.width == Width::X4 && l.speed == Speed::Sdr));
        assert_eq!(
            meta["first_hca"].as_str(),
            f.nodes
                .iter()
                .find(|n| n.kind == NodeKind::Ca)
                .map(|n| n.name.as_str())
        );
    }
}

// ---------------------------------------------------------------------------------------------
// opensm-subnet.lst from the OpenSM runs, against the ibsim view of the same net

#[test]
fn subnet_lst_runs_match_ibsim() {
    let runs = testdata().join("opensm");
    let net = testdata().join("topologies/torus2d_4x4_h2.net");
    let net_bytes = std::fs::read(&net).unwrap_or_else(|e| panic!("{}: {e}", net.display()));
    let sim = ibsim::read(
        &net_bytes,
        "torus2d_4x4_h2.net",
        &mut no_include,
        BuildOptions::default(),
    )
    .unwrap()
    .fabric;
    // The nine OpenSM runs of shared/opensm-runs wrote the same subnet.lst byte for byte; the
    // vendored copy stands for them all.
    let mut lids_by_name: Option<FxHashMap<(String, u8), u16>> = None;
    for p in [runs.join("torus2d_4x4_h2.subnet.lst")] {
        let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let name = p.display().to_string();
        assert_eq!(detect(&bytes), Some(Format::SubnetLst), "{name}");
        let loaded = subnet_lst::read(&bytes, &name, BuildOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.warnings.is_empty(), "{name}: {:?}", loaded.warnings);
        let f = &loaded.fabric;
        assert_eq!(f.num_switches(), 16, "{name}");
        assert_eq!(f.count(NodeKind::Ca), 32, "{name}");
        // Same nodes, GUIDs, port GUIDs and cabling as ibsim's view of the net file.
        for nd in &sim.nodes {
            let n = node(f, &nd.name);
            assert_eq!(f.node(n).guid, nd.guid, "{name}: {}", nd.name);
            assert_eq!(f.node(n).kind, nd.kind);
            assert_eq!(f.node(n).nports, nd.nports);
            assert_eq!(
                f.node(n).sys_guid,
                nd.guid,
                "SystemGUID = node GUID under ibsim"
            );
            let ports: Vec<u8> = if nd.kind == NodeKind::Switch {
                vec![0]
            } else {
                (1..=nd.nports).collect()
            };
            for p in ports {
                assert_eq!(
                    port_guid(f, &nd.name, p),
                    port_guid(&sim, &nd.name, p),
                    "{name}: {}[{p}]",
                    nd.name
                );
            }
        }
        assert_eq!(link_set(f), link_set(&sim), "{name}");
        assert!(f
            .links
            .iter()
            .all(|l| l.width == Width::X4 && l.speed == Speed::Sdr));
        // LIDs: all from the file (OpenSM assigned them), unique, and the same in every run.
        let mut lids: FxHashMap<(String, u8), u16> = FxHashMap::default();
        for nd in &f.nodes {
            let ports: Vec<u8> = if nd.kind == NodeKind::Switch {
                vec![0]
            } else {
                (1..=nd.nports).collect()
            };
            for p in ports {
                let l = lid(f, &nd.name, p);
                assert!(l > 0, "{name}: {}[{p}] has no LID", nd.name);
                lids.insert((nd.name.clone(), p), l);
            }
        }
        let mut uniq: Vec<u16> = lids.values().copied().collect();
        uniq.sort_unstable();
        uniq.dedup();
        assert_eq!(uniq.len(), lids.len(), "{name}: LIDs are not unique");
        if let Some(prev) = &lids_by_name {
            assert_eq!(prev, &lids, "{name}: LIDs differ from the other runs");
        }
        lids_by_name = Some(lids);
    }
    // The first line of every run: H_0_0_0 holds LID 1, S_0_0 LID 2.
    let lids = lids_by_name.unwrap();
    assert_eq!(lids[&("H_0_0_0".to_string(), 1)], 1);
    assert_eq!(lids[&("S_0_0".to_string(), 0)], 2);
}

// ---------------------------------------------------------------------------------------------
// ibnetdiscover: realistic dumps

const L01: &str = "S-248a070300f0c0de";
const L02: &str = "S-248a070300f0c1de";
const SP: &str = "S-248a070300f0aaaa";
const N1: &str = "H-0002c90300a1b2c4";
const N2: &str = "H-0002c90300a1b3d0";
const N3: &str = "H-0002c90300a1b4e0";
const R1: &str = "R-0002c90300a1b5f0";

fn check_cluster_edr(l: &Loaded) {
    let f = &l.fabric;
    // Its H-0002c90300a1b4e0 reads `lid 65535` (none assigned): said, not silently replaced.
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("1 port(s) read with LID 65535")
                && w.contains("H-0002c90300a1b4e0 port 1")),
        "{:?}",
        l.warnings
    );
    assert_eq!(f.num_switches(), 3);
    assert_eq!(f.count(NodeKind::Ca), 3);
    assert_eq!(f.count(NodeKind::Router), 1);
    assert_eq!(f.links.len(), 10);
    // GUIDs from switchguid=/caguid=/rtguid= and the parentheses.
    assert_eq!(f.node(node(f, L01)).guid, 0x248a070300f0c0de);
    assert_eq!(port_guid(f, L01, 0), 0x248a070300f0c0de);
    assert_eq!(f.node(node(f, N1)).guid, 0x2c90300a1b2c4);
    assert_eq!(f.node(node(f, N1)).sys_guid, 0x2c90300a1b2c7);
    assert_eq!(port_guid(f, N1, 1), 0x2c90300a1b2c5);
    assert_eq!(port_guid(f, N1, 2), 0x2c90300a1b2c6);
    assert_eq!(f.node(node(f, R1)).kind, NodeKind::Router);
    assert_eq!(port_guid(f, R1, 1), 0x2c90300a1b5f1);
    assert_eq!(f.node(node(f, L01)).vendor_id, 0x2c9);
    assert_eq!(f.node(node(f, L01)).device_id, 0xcf08);
    assert_eq!(f.node(node(f, SP)).device_id, 0xd2f0);
    // Header attributes.
    assert!(f.node(node(f, L01)).enhanced_sp0);
    assert!(!f.node(node(f, SP)).enhanced_sp0);
    assert_eq!(f.node(node(f, L01)).desc, "MF0;leaf01:MSB7700/U1");
    assert_eq!(f.node(node(f, N2)).desc, "node02 # rack 7 HCA-1  ");
    assert_eq!(f.node(node(f, N3)).desc, "node03 \"spare\" HCA-1");
    // LIDs: switch from the header, CA from its port-line comment; 65535 = none.
    assert_eq!(lid(f, SP, 0), 2);
    assert_eq!(lid(f, L01, 0), 3);
    assert_eq!(lid(f, L02, 0), 4);
    assert_eq!(lid(f, N1, 1), 5);
    assert_eq!(lid(f, N1, 2), 6);
    assert_eq!(lid(f, N2, 1), 7);
    assert_eq!(lid(f, R1, 1), 9);
    let fresh = lid(f, N3, 1);
    assert!(
        fresh != 0 && fresh != 0xFFFF && ![2, 3, 4, 5, 6, 7, 9].contains(&fresh),
        "LID {fresh}"
    );
    // Cabling, from both ends.
    assert_eq!(peer(f, N1, 1), Some((L01.into(), 1)));
    assert_eq!(
        peer(f, N1, 2),
        Some((L02.into(), 1)),
        "both HCA ports cabled"
    );
    assert_eq!(peer(f, L01, 36), Some((SP.into(), 2)));
    assert_eq!(peer(f, SP, 39), Some((SP.into(), 40)), "loopback cable");
    assert_eq!(peer(f, L02, 3), Some((R1.into(), 1)));
    // Width and speed from the comment tokens.
    assert_eq!(
        (link_of(f, L01, 1).width, link_of(f, L01, 1).speed),
        (Width::X4, Speed::Edr)
    );
    assert_eq!(link_of(f, L02, 35).speed, Speed::Hdr);
    assert_eq!(link_of(f, L02, 36).speed, Speed::Fdr10);
    assert_eq!(link_of(f, L02, 2).speed, Speed::Unknown);
    assert_eq!(link_of(f, L02, 2).width, Width::X4);
    assert_eq!(
        (link_of(f, R1, 1).width, link_of(f, R1, 1).speed),
        (Width::X1, Speed::Sdr)
    );
    assert_eq!(link_of(f, SP, 40).speed, Speed::Edr);
    // The shell prompts and the ibwarn line were skipped with warnings.
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("stray lines before the topology")),
        "{:?}",
        l.warnings
    );
    assert!(
        l.warnings.iter().any(|w| w.contains("ignored tool output")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn ibnetdiscover_cluster_with_quirks() {
    let bytes = data("cluster_edr.ibnd");
    assert_eq!(detect(&bytes), Some(Format::Ibnetdiscover));
    let l = ibnetdiscover::read(&bytes, "cluster_edr.ibnd", BuildOptions::default()).unwrap();
    check_cluster_edr(&l);
}

#[test]
fn ibnetdiscover_crlf_and_spaces_give_the_same_fabric() {
    let a = ibnetdiscover::read(&data("cluster_edr.ibnd"), "a", BuildOptions::default()).unwrap();
    let bytes = data("cluster_crlf_spaces.ibnd");
    assert!(bytes.windows(2).any(|w| w == b"\r\n") && !bytes.contains(&b'\t'));
    assert_eq!(detect(&bytes), Some(Format::Ibnetdiscover));
    let b = ibnetdiscover::read(&bytes, "b", BuildOptions::default()).unwrap();
    check_cluster_edr(&b);
    assert_eq!(a.fabric.nodes, b.fabric.nodes);
    assert_eq!(a.fabric.ports, b.fabric.ports);
    assert_eq!(a.fabric.links, b.fabric.links);
}

#[test]
fn ibnetdiscover_chassis_grouping() {
    let bytes = data("chassis_grouped.ibnd");
    assert_eq!(detect(&bytes), Some(Format::Ibnetdiscover));
    let l = ibnetdiscover::read(&bytes, "chassis_grouped.ibnd", BuildOptions::default()).unwrap();
    let f = &l.fabric;
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(f.num_switches(), 5);
    assert_eq!(f.count(NodeKind::Ca), 3);
    assert_eq!(f.links.len(), 8);
    assert_eq!(
        peer(f, "S-0008f104003f10b1", 1),
        Some(("H-0002c9020020e4a4".into(), 1))
    );
    assert_eq!(
        peer(f, "S-0008f104003f10b2", 2),
        Some(("S-0008f10500201234".into(), 24))
    );
    assert_eq!(lid(f, "S-0008f104003f10a2", 0), 11);
    assert_eq!(lid(f, "H-0002c9020020e6c4", 1), 22);
    assert_eq!(
        f.node(node(f, "S-0008f104003f10a1")).sys_guid,
        0x8f104003f1000
    );
    assert!(f
        .links
        .iter()
        .all(|l| l.width == Width::X4 && l.speed == Speed::Ddr));
}

#[test]
fn ibnetdiscover_truncated_dump_loads_with_warnings() {
    // The dump ends before the records of node03 and the router: both are kept from what the
    // switch's lines say about them (a dump cut short loses the CA records at its end).
    let l = ibnetdiscover::read(
        &data("truncated.ibnd"),
        "truncated.ibnd",
        BuildOptions::default(),
    )
    .unwrap();
    let f = &l.fabric;
    assert_eq!(f.num_switches(), 3);
    assert_eq!(f.count(NodeKind::Ca), 3);
    assert_eq!(f.count(NodeKind::Router), 1);
    assert_eq!(f.links.len(), 10);
    let n3 = node(f, N3);
    assert_eq!(f.node(n3).guid, 0x0002c90300a1b4e0);
    assert_eq!(f.node(n3).desc, "node03 \"spare\" HCA-1");
    assert_eq!(f.port(f.port_id(n3, 1)).guid, 0x2c90300a1b4e1);
    assert_eq!(peer(f, N3, 1), Some(("S-248a070300f0c1de".into(), 2)));
    let r1 = node(f, R1);
    assert_eq!(f.node(r1).kind, NodeKind::Router);
    assert_eq!(f.node(r1).desc, "gw01 router");
    assert_eq!(lid(f, R1, 1), 9);
    let k = link_of(f, R1, 1);
    assert_eq!((k.width, k.speed), (Width::X1, Speed::Sdr));
    let kept: Vec<_> = l
        .warnings
        .iter()
        .filter(|w| w.contains("has no record"))
        .collect();
    assert_eq!(kept.len(), 2, "one warning per node kept: {:?}", l.warnings);
    assert!(kept[0].starts_with("truncated.ibnd:24: "), "{}", kept[0]);
    assert!(kept[0].contains(N3) && kept[0].contains("kept as a channel adapter"));
    assert!(kept[1].contains("kept as a router"), "{}", kept[1]);
    assert!(
        !l.warnings.iter().any(|w| w.contains("only one end")),
        "{:?}",
        l.warnings
    );
    // A switch without a record is not made up (its other cables are unknown): the link to
    // it is dropped.
    let text = "caguid=0x2c90300a1b2c4\nCa\t2 \"H-0002c90300a1b2c4\"\t# \"n1\"\n\
        [1](2c90300a1b2c5) \t\"S-248a070300f0c0de\"[1]\t# lid 5 lmc 0 \"leaf\" lid 3 4xEDR\n\
        [2](2c90300a1b2c6) \t\"H-0002c90300a1b2d4\"[1](2c90300a1b2d5)\t# lid 7 lmc 0 \"n2\" lid 6 4xEDR\n\n\
        caguid=0x2c90300a1b2d4\nCa\t1 \"H-0002c90300a1b2d4\"\t# \"n2\"\n\
        [1](2c90300a1b2d5) \t\"H-0002c90300a1b2c4\"[2](2c90300a1b2c6)\t# lid 6 lmc 0 \"n1\" lid 7 4xEDR\n";
    let l = ibnd_str(text).unwrap();
    assert_eq!(l.fabric.num_switches(), 0);
    assert_eq!(l.fabric.links.len(), 1, "only the back-to-back cable");
    assert!(
        l.warnings.iter().any(|w| w.contains("dropped")
            && w.contains("\"S-248a070300f0c0de\" has no record in the file")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn ibnetdiscover_link_to_a_record_without_that_port_is_kept_with_a_warning() {
    // The CA record lists no port line (dump cut right after its header).
    let text = "switchguid=0x10(10)\nSwitch\t4 \"S-0000000000000010\"\t# \"sw\" base port 0 lid 1 lmc 0\n\
                [1]\t\"H-0000000000000020\"[1](21) \t# \"h\" lid 2 4xQDR\n\ncaguid=0x20\nCa\t1 \"H-0000000000000020\"\t# \"h\"\n";
    let l = ibnd_str(text).unwrap();
    assert_eq!(l.fabric.links.len(), 1);
    assert_eq!(
        port_guid(&l.fabric, "H-0000000000000020", 1),
        0x21,
        "GUID from the switch side"
    );
    assert!(
        l.warnings.iter().any(|w| w.contains("only one end")),
        "{:?}",
        l.warnings
    );
}

// ---------------------------------------------------------------------------------------------
// ibnetdiscover: contradictions

const SW_A: &str =
    "switchguid=0xa(a)\nSwitch\t8 \"S-000000000000000a\"\t\t# \"A\" base port 0 lid 1 lmc 0\n";
const SW_B: &str =
    "switchguid=0xb(b)\nSwitch\t8 \"S-000000000000000b\"\t\t# \"B\" base port 0 lid 2 lmc 0\n";
const SW_C: &str =
    "switchguid=0xc(c)\nSwitch\t8 \"S-000000000000000c\"\t\t# \"C\" base port 0 lid 3 lmc 0\n";

#[test]
fn ibnetdiscover_contradictory_ends() {
    let text = format!(
        "{SW_A}[1]\t\"S-000000000000000b\"[2]\t\t# \"B\" lid 2 4xEDR\n\n\
         {SW_B}[2]\t\"S-000000000000000c\"[1]\t\t# \"C\" lid 3 4xEDR\n\n\
         {SW_C}[1]\t\"S-000000000000000b\"[2]\t\t# \"B\" lid 2 4xEDR\n"
    );
    let e = assert_err(ibnd_str(&text), 3, "the two ends of a link disagree");
    assert!(
        e.message
            .contains("line 7 cables \"S-000000000000000b\"[2] to \"S-000000000000000c\"[1]"),
        "{}",
        e.message
    );
    assert_eq!(e.file, "t.ibnd");
}

#[test]
fn ibnetdiscover_ends_disagree_on_speed() {
    let text = format!(
        "{SW_A}[1]\t\"S-000000000000000b\"[2]\t\t# \"B\" lid 2 4xEDR\n\n\
         {SW_B}[2]\t\"S-000000000000000a\"[1]\t\t# \"A\" lid 1 4xHDR\n"
    );
    // ibnetdiscover prints each end's own speed: the link loads at the lower one, and the
    // warning names both lines.
    let l = ibnd_str(&text).unwrap();
    let f = &l.fabric;
    let k = link_of(f, "S-000000000000000a", 1);
    assert_eq!((k.width, k.speed), (fabric::Width::X4, fabric::Speed::Edr));
    assert!(
        l.warnings.iter().any(|w| w.starts_with("t.ibnd:")
            && w.contains("(also listed at line ")
            && w.contains(
                "the ends disagree on the speed (EDR vs HDR); loaded at the lower, 4xEDR"
            )),
        "{:?}",
        l.warnings
    );
}

#[test]
fn ibnetdiscover_xdr_links_keep_their_speed() {
    // Quantum-X800 fabrics: `4xXDR` (200 Gb/s a lane); an XDR port cabled to an NDR one
    // runs at NDR.
    let text = format!(
        "{SW_A}[1]\t\"S-000000000000000b\"[2]\t\t# \"B\" lid 2 4xXDR\n\
         [3]\t\"S-000000000000000b\"[4]\t\t# \"B\" lid 2 4xXDR\n\n\
         {SW_B}[2]\t\"S-000000000000000a\"[1]\t\t# \"A\" lid 1 4xXDR\n\
         [4]\t\"S-000000000000000a\"[3]\t\t# \"A\" lid 1 4xNDR\n"
    );
    let l = ibnd_str(&text).unwrap();
    let k = link_of(&l.fabric, "S-000000000000000a", 1);
    assert_eq!((k.width, k.speed), (fabric::Width::X4, fabric::Speed::Xdr));
    assert_eq!(fabric::Speed::Xdr.gbps_per_lane(), 200.0);
    let k = link_of(&l.fabric, "S-000000000000000a", 3);
    assert_eq!(k.speed, fabric::Speed::Ndr);
}

#[test]
fn ibnetdiscover_ends_disagree_on_width_and_speed() {
    let text = format!(
        "{SW_A}[1]\t\"S-000000000000000b\"[2]\t\t# \"B\" lid 2 4xEDR\n\n\
         {SW_B}[2]\t\"S-000000000000000a\"[1]\t\t# \"A\" lid 1 1xFDR\n"
    );
    let l = ibnd_str(&text).unwrap();
    let k = link_of(&l.fabric, "S-000000000000000b", 2);
    assert_eq!((k.width, k.speed), (fabric::Width::X1, fabric::Speed::Fdr));
    let w: Vec<&String> = l
        .warnings
        .iter()
        .filter(|w| w.contains("disagree"))
        .collect();
    assert_eq!(w.len(), 1, "one warning per link, not per end: {w:?}");
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, t)| t.starts_with("[1]") || t.starts_with("[2]"))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(
        w[0].as_str(),
        format!(
            "t.ibnd:{}: link \"S-000000000000000a\"[1] - \"S-000000000000000b\"[2] (also listed at line {}): the ends disagree on the width (4x vs 1x), the ends disagree on the speed (EDR vs FDR); loaded at the lower, 1xFDR",
            lines[0], lines[1]
        )
    );
}

/// A dump whose tabs were lost (copied from a terminal: `Switch41 "S-…"# …`,
/// `[1]"H-…"[1](…) # …`) reads to the same fabric as the original, for every real dump.
#[test]
fn ibnetdiscover_dumps_without_their_tabs_give_the_same_fabric() {
    let dir = testdata().join("real");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("ibnd") {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let glued: Vec<u8> = bytes.iter().copied().filter(|&b| b != b'\t').collect();
        if glued.len() == bytes.len() {
            continue; // written with spaces only
        }
        assert_eq!(
            detect(&glued),
            Some(Format::Ibnetdiscover),
            "{}",
            p.display()
        );
        let a = ibnetdiscover::read(&bytes, "a", BuildOptions::default()).unwrap();
        let b = ibnetdiscover::read(&glued, "b", BuildOptions::default())
            .unwrap_or_else(|e| panic!("{} without tabs: {e}", p.display()));
        assert_eq!(a.fabric.nodes, b.fabric.nodes, "{}", p.display());
        assert_eq!(a.fabric.ports, b.fabric.ports, "{}", p.display());
        assert_eq!(a.fabric.links, b.fabric.links, "{}", p.display());
        n += 1;
    }
    assert!(n >= 5, "{n} real dumps with tabs");
    // The hand-written glued lines of the issue, exactly.
    let text = "Switch2 \"S-0c42a103009d6eb6\"# \"MF0;SLG04-16:MQM8700/U1\" enhanced port 0 lid 3894 lmc 0\n\
                [1]\"H-1c34da0300a0b0c0\"[1](1c34da0300a0b0c1) # \"node 1\" lid 65535 4xHDR\n\n\
                Ca1 \"H-1c34da0300a0b0c0\"# \"node 1\"\n\
                [1](1c34da0300a0b0c1) \"S-0c42a103009d6eb6\"[1]# lid 7 lmc 0 \"MF0;SLG04-16:MQM8700/U1\" lid 3894 4xHDR\n";
    let l = ibnd_str(text).unwrap();
    assert_eq!(l.fabric.nodes.len(), 2);
    assert_eq!(lid(&l.fabric, "H-1c34da0300a0b0c0", 1), 7);
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("\"Switch2\": tabs lost")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn ibnetdiscover_port_beyond_count() {
    let text = format!("{SW_A}[1]\t\"S-000000000000000b\"[2]\n[9]\t\"S-000000000000000b\"[3]\n");
    assert_err(
        ibnd_str(&text),
        4,
        "port 9 is beyond the port count 8 of \"S-000000000000000a\"",
    );
    let text = format!("{SW_A}[1]\t\"S-000000000000000b\"[12]\t# \"B\" lid 2 4xEDR\n\n{SW_B}");
    assert_err(ibnd_str(&text), 3, "which has only 8 ports");
    let text = "switchguid=0xa(a)\nSwitch\t300 \"S-000000000000000a\"\n";
    assert_err(
        ibnd_str(text),
        2,
        "port count 300 of this Switch is out of range 1..=254",
    );
}

#[test]
fn ibnetdiscover_duplicate_guid_and_node() {
    let text = "caguid=0x20\nCa\t1 \"H-0000000000000020\"\t# \"h1\"\n[1](77) \t\"S-000000000000000a\"[1]\t# lid 5 lmc 0 \"A\" lid 1 4xEDR\n\n\
                caguid=0x30\nCa\t1 \"H-0000000000000030\"\t# \"h2\"\n[1](77) \t\"S-000000000000000a\"[2]\t# lid 6 lmc 0 \"A\" lid 1 4xEDR\n";
    let e = assert_err(ibnd_str(text), 7, "duplicate GUID 0x0000000000000077");
    assert!(e.message.contains("(line 3)"), "{}", e.message);
    let text = format!("{SW_A}\n{SW_A}");
    assert_err(
        ibnd_str(&text),
        5,
        "duplicate node \"S-000000000000000a\": it already has a record at line 2",
    );
    let text = "caguid=0x20\nCa\t1 \"H-0000000000000021\"\n";
    assert_err(ibnd_str(text), 2, "does not match caguid=0x20 at line 1");
    // Two nodes claiming one LID.
    let text = format!("{SW_A}\n{}", SW_B.replace("lid 2", "lid 1"));
    assert_err(ibnd_str(&text), 5, "LID 1 of \"S-000000000000000b\" port 0 is already used by \"S-000000000000000a\" port 0 (line 2)");
}

#[test]
fn ibnetdiscover_record_cut_short() {
    let text = format!(
        "{SW_A}[1]\t\"S-000000000000000b\"[2]\n\nswitchguid=0xb(b)\nSwitch\t8 \"S-00000000"
    );
    assert_err(
        ibnd_str(&text),
        6,
        "record cut short: the node id has no closing quote",
    );
    let text = format!("{SW_A}[1]\t\"S-000000000000000b\"[");
    assert_err(
        ibnd_str(&text),
        3,
        "record cut short: expected the remote port number",
    );
    let text = format!("{SW_A}[1]\t\"S-0000");
    assert_err(
        ibnd_str(&text),
        3,
        "record cut short: the remote node id has no closing quote",
    );
    let text = "vendid=0x2c9\ndevid=0xcf08\nvendid=0x2c9\n";
    assert_err(
        ibnd_str(text),
        3,
        "record cut short: the record begun by vendid= at line 1",
    );
    let text = format!("{SW_A}\nswitchguid=0xb(b)\n[1]\t\"S-000000000000000a\"[1]\n");
    assert_err(ibnd_str(&text), 5, "port line outside a node record");
    let text = "switchguid=0xb(b\n";
    assert_err(
        ibnd_str(text),
        1,
        "record cut short: expected switchguid=0x<node guid>(<port guid>)",
    );
    // A dump that ends right after the id lines of a record loads, with a warning.
    let text = format!("{SW_A}\nvendid=0x2c9\n");
    let l = ibnd_str(&text).unwrap();
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("t.ibnd:4: the file ends inside a record")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn ibnetdiscover_garbage_empty_binary() {
    let text =
        format!("{SW_A}[1]\t\"S-000000000000000b\"[2]\n\nthis is not a topology line\n{SW_B}");
    assert_err(
        ibnd_str(&text),
        5,
        "unexpected line \"this is not a topology line\"",
    );
    assert_err(ibnd_str(""), 0, "no nodes");
    assert_err(ibnd_str("\n \r\n\t\n"), 0, "no nodes");
    let bin: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let e = expect_err(ibnetdiscover::read(&bin, "bin", BuildOptions::default()));
    assert!(e.line <= text::line_count(&text::decode(&bin)));
    // Binary after a valid start: an error on the first binary line.
    let mut bytes = format!("{SW_A}\n").into_bytes();
    bytes.extend_from_slice(b"\x00\x01\xff\xfe garbage\n");
    let e = expect_err(ibnetdiscover::read(
        &bytes,
        "mixed",
        BuildOptions::default(),
    ));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("unexpected line"), "{}", e.message);
}

#[test]
fn ibnetdiscover_lid_65535_and_reassign() {
    let text = format!("{}\n", SW_A.replace("lid 1", "lid 65535"));
    let l = ibnd_str(&text).unwrap();
    assert_eq!(
        lid(&l.fabric, "S-000000000000000a", 0),
        1,
        "assigned afresh"
    );
    let text = format!("{}\n", SW_A.replace("lid 1", "lid 50000"));
    assert_err(ibnd_str(&text), 2, "LID 50000 is not a unicast LID");
    let opts = BuildOptions {
        lmc: 0,
        reassign_lids: true,
    };
    let l = ibnetdiscover::read(text.as_bytes(), "t", opts).unwrap();
    assert_eq!(lid(&l.fabric, "S-000000000000000a", 0), 1);
}

// ---------------------------------------------------------------------------------------------
// ibsim

#[test]
fn ibsim_guid_rules_options_and_syntax() {
    let text = "\
# comment at the top
vendid=0x2c9
devid=0x1003
switchguid=0x500000
Switch\t8 \"sw1\"\t# \"leaf one\" enhanced port 0 lid 7 lmc 0
[1]\t\"hca1\"[1]
# comment inside a record
[2]\t\"hca1\"[2]\tw=1 s=2
[3]\t\"sw2\"[3]\tw=0x8 s=4
[5]\t\"sw1\"[6]
[6]\t\"sw1\"[5]

switchguid+0x10
Switch\t8 \"sw2\"
[3]\t\"sw1\"[3]\tw=8 s=4
[4]\t\"hca2\"

do Dump
pdebug=0
hcaguids=0x9000
Hca\t2 \"hca1\"
[1]\t\"sw1\"[1]
[2]\t\"sw1\"[2]\ts=3 w=3

Ca\t1 \"hca2\"\t# desc with spaces lid 12
[1]\t\"sw2\"[4]\t# lid 12 lmc 0 \"sw2\" lid 9 4xQDR

rtguid=0x7000
Rt\t2 \"rt1\"
";
    let l = ibsim_str(text).unwrap();
    let f = &l.fabric;
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(f.node(node(f, "sw1")).guid, 0x500000);
    assert_eq!(
        f.node(node(f, "sw2")).guid,
        0x500010,
        "+ is relative to the base"
    );
    assert_eq!(f.node(node(f, "hca1")).guid, 0x9000);
    assert_eq!(port_guid(f, "hca1", 2), 0x9002);
    assert_eq!(
        f.node(node(f, "hca2")).guid,
        0x9003,
        "CAs advance by ports + 1"
    );
    assert_eq!(f.node(node(f, "rt1")).guid, 0x7000);
    assert_eq!(f.node(node(f, "sw1")).vendor_id, 0x2c9);
    assert_eq!(
        f.node(node(f, "sw2")).vendor_id,
        0,
        "vendid= applies to one node"
    );
    assert_eq!(
        f.node(node(f, "hca2")).device_id,
        0x1003,
        "devid= is sticky"
    );
    assert_eq!(f.node(node(f, "sw1")).desc, "leaf one");
    assert_eq!(f.node(node(f, "sw2")).desc, "sw2");
    assert_eq!(f.node(node(f, "hca2")).desc, "desc with spaces");
    assert!(f.node(node(f, "sw1")).enhanced_sp0);
    assert_eq!(lid(f, "sw1", 0), 7);
    assert_eq!(lid(f, "hca2", 1), 12);
    assert_eq!(
        peer(f, "sw2", 4),
        Some(("hca2".into(), 1)),
        "remote port defaults to 1"
    );
    assert_eq!(peer(f, "sw1", 5), Some(("sw1".into(), 6)));
    assert_eq!(link_of(f, "sw1", 1).width, Width::X4);
    assert_eq!(
        (link_of(f, "sw1", 2).width, link_of(f, "sw1", 2).speed),
        (Width::X1, Speed::Ddr)
    );
    assert_eq!(
        (link_of(f, "sw1", 3).width, link_of(f, "sw1", 3).speed),
        (Width::X12, Speed::Qdr)
    );
    // hca2's comment enables 4xQDR but sw2[4] keeps the default SDR: SDR is common.
    assert_eq!(link_of(f, "sw2", 4).speed, Speed::Sdr);
    assert_eq!(f.links.len(), 5);
}

#[test]
fn ibsim_include_with_names_and_cycles() {
    let files: FxHashMap<&str, &str> = [
        ("cas.net", "Hca\t1 \"h1\"\n[1]\t\"s1\"[1]\n"),
        ("bad.net", "Hca\t1 \"h2\"\n[1]\t\"s1\"[2]\nbogus line\n"),
        ("loop1.net", "include \"loop2.net\"\n"),
        ("loop2.net", "\ninclude \"loop1.net\"\n"),
    ]
    .into_iter()
    .collect();
    let mut resolver = |name: &str| -> Result<(String, Vec<u8>), String> {
        files
            .get(name)
            .map(|t| (format!("inc/{name}"), t.as_bytes().to_vec()))
            .ok_or_else(|| "no such file".to_string())
    };
    let main = "Switch\t4 \"s1\"\n[1]\t\"h1\"[1]\n\ninclude \"cas.net\"\n";
    let l = ibsim::read(
        main.as_bytes(),
        "main.net",
        &mut resolver,
        BuildOptions::default(),
    )
    .unwrap();
    assert_eq!(l.fabric.links.len(), 1);
    assert_eq!(l.fabric.node(node(&l.fabric, "h1")).guid, 0x100000);

    let main = "Switch\t4 \"s1\"\n\ninclude \"bad.net\"\n";
    let e = expect_err(ibsim::read(
        main.as_bytes(),
        "main.net",
        &mut resolver,
        BuildOptions::default(),
    ));
    assert_eq!((e.file.as_str(), e.line), ("inc/bad.net", 3), "{e}");
    assert!(
        e.message.contains("unexpected line \"bogus line\""),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("(included from main.net:3)"),
        "{}",
        e.message
    );

    let main = "include \"loop1.net\"\n";
    let e = expect_err(ibsim::read(
        main.as_bytes(),
        "main.net",
        &mut resolver,
        BuildOptions::default(),
    ));
    assert_eq!((e.file.as_str(), e.line), ("inc/loop2.net", 2), "{e}");
    assert!(
        e.message
            .contains("include cycle: main.net -> inc/loop1.net -> inc/loop2.net -> inc/loop1.net"),
        "{}",
        e.message
    );

    let main = "include \"missing.net\"\n";
    let e = expect_err(ibsim::read(
        main.as_bytes(),
        "main.net",
        &mut resolver,
        BuildOptions::default(),
    ));
    assert_eq!(e.line, 1);
    assert!(
        e.message
            .contains("cannot include \"missing.net\": no such file"),
        "{}",
        e.message
    );
}

#[test]
fn ibsim_contradictions() {
    // A says [1] -> B[2] but B[2] -> C[1].
    let text = "Switch 4 \"A\"\n[1] \"B\"[2]\n\nSwitch 4 \"B\"\n[2] \"C\"[1]\n\nSwitch 4 \"C\"\n[1] \"B\"[2]\n";
    let e = assert_err(ibsim_str(text), 2, "the two ends of a link disagree");
    assert!(
        e.message.contains("line 5 cables \"B\"[2] to \"C\"[1]"),
        "{}",
        e.message
    );
    // Port beyond the count, locally and remotely.
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[5] \"B\"[1]\n"),
        2,
        "port 5 is beyond the port count 4 of \"A\"",
    );
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[1] \"B\"[9]\n\nHca 2 \"B\"\n"),
        2,
        "is cabled to port 9 of \"B\", which has only 2 ports",
    );
    assert_err(
        ibsim_str("Switch 255 \"A\"\n"),
        1,
        "port count 255 of this Switch is out of range",
    );
    assert_err(
        ibsim_str("Switch 99999999999999999999999 \"A\"\n"),
        1,
        "expected the port count",
    );
    // Duplicate GUID: the CA base is reset onto an earlier CA.
    let text = "Hca 1 \"h1\"\n\nHca 1 \"h2\"\n\ncaguid=0x100000\nHca 1 \"h3\"\n";
    assert_err(ibsim_str(text), 6, "duplicate GUID 0x0000000000100000");
    let text = "Hca 2 \"h1\"\n\ncaguid=0x100002\nHca 1 \"h2\"\n";
    let e = assert_err(ibsim_str(text), 4, "duplicate GUID 0x0000000000100002");
    assert!(
        e.message.contains("\"h1\" already has it (line 1)"),
        "{}",
        e.message
    );
    assert_err(
        ibsim_str("Switch 4 \"A\"\n\nSwitch 4 \"A\"\n"),
        3,
        "duplicate node \"A\"",
    );
    // Options.
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[1] \"B\"[1] w=0\n"),
        2,
        "bad port option w=0",
    );
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[1] \"B\"[1] s=9\n"),
        2,
        "bad port option s=9",
    );
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[1] \"B\"[1] w=1\n\nSwitch 4 \"B\"\n[1] \"A\"[1] w=2\n"),
        5,
        "no link width in common (w=1 vs w=2)",
    );
    // Cut short, garbage, empty.
    assert_err(ibsim_str("Switch 4 \"A\"\n[1] \"B"), 2, "record cut short");
    assert_err(
        ibsim_str("Switch 4 \"A\n"),
        1,
        "record cut short: the node id has no closing quote",
    );
    assert_err(
        ibsim_str("Switch 4 \"A\"\n\nwhatever = 3\n"),
        3,
        "unexpected line \"whatever = 3\"",
    );
    assert_err(
        ibsim_str("[1] \"A\"[1]\n"),
        1,
        "port line outside a node record",
    );
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[1] \"B\"[1] junk\n"),
        2,
        "unexpected text \"junk\"",
    );
    assert_err(ibsim_str(""), 0, "no nodes");
    assert_err(ibsim_str("# only a comment\n"), 0, "no nodes");
    // A link to a node the file never defines is an error, as in ibsim ("can't find remote
    // node"); only ibnetdiscover dumps, which can be cut short, drop such links with a warning
    // (ibnetdiscover_truncated_dump_loads_with_warnings).
    assert_err(
        ibsim_str("Switch 4 \"A\"\n[1] \"B\"[1]\n[2] \"ghost\"[1]\n\nHca 1 \"B\"\n[1] \"A\"[1]\n"),
        3,
        "\"A\"[2] is cabled to \"ghost\"[1], which the file never defines",
    );
}

#[test]
fn byte_order_mark_and_invalid_utf8_are_tolerated() {
    let mut bytes = b"\xEF\xBB\xBFSwitch 4 \"A\"\t# \"caf\xe9 leaf\"\n[1] \"B\"[1]\n\nHca 1 \"B\"\n[1] \"A\"[1]\n".to_vec();
    assert_eq!(detect(&bytes), Some(Format::IbsimNet));
    let l = ibsim::read(&bytes, "bom.net", &mut no_include, BuildOptions::default()).unwrap();
    assert_eq!(l.fabric.node(node(&l.fabric, "A")).desc, "caf\u{fffd} leaf");
    assert_eq!(l.fabric.links.len(), 1);
    // Line numbers still count raw lines after a replaced byte.
    bytes.extend_from_slice(b"\xff\xfe junk\n");
    let e = expect_err(ibsim::read(
        &bytes,
        "bom.net",
        &mut no_include,
        BuildOptions::default(),
    ));
    assert_eq!(e.line, 6, "{e}");
}

// ---------------------------------------------------------------------------------------------
// opensm-subnet.lst

fn lst_line(
    a: (&str, u8, u64, u64, &str, u16, u8),
    b: (&str, u8, u64, u64, &str, u16, u8),
    trailer: &str,
) -> String {
    let blk = |(ty, np, node, pg, desc, lid, pn): (&str, u8, u64, u64, &str, u16, u8),
               ven: &str,
               dev: &str| {
        format!(
            "{{ {ty} Ports:{np:02X} SystemGUID:{node:016x} NodeGUID:{node:016x} PortGUID:{pg:016x} VenID:{ven} DevID:{dev} Rev:000000A0 {{{desc}}} LID:{lid:04X} PN:{pn:02X} }}"
        )
    };
    format!(
        "{} {} {trailer}\n",
        blk(a, "0002C9", "B924"),
        blk(b, "000002C9", "B9240000")
    )
}

#[test]
fn subnet_lst_quirks() {
    let sw1 = (
        "SW",
        36u8,
        0x10u64,
        0x10u64,
        "MF0;leaf01 {rack 3}",
        2u16,
        1u8,
    );
    let ca = ("CA-SM", 2u8, 0x20u64, 0x21u64, "node01 HCA-1", 5u16, 1u8);
    let ca2 = ("CA", 2u8, 0x20u64, 0x22u64, "node01 HCA-1", 6u16, 2u8);
    let sw2 = (
        "SW",
        36u8,
        0x30u64,
        0x30u64,
        "Quantum Mellanox Technologies",
        3u16,
        7u8,
    );
    let sw3 = (
        "SW",
        36u8,
        0x40u64,
        0x40u64,
        "Quantum Mellanox Technologies",
        4u16,
        9u8,
    );
    let mut text = String::new();
    text += &lst_line(sw1, ca, "PHY=4x LOG=ACT SPD=25");
    text += &lst_line(ca, sw1, "PHY=4x LOG=ACT SPD=25");
    text += &lst_line(
        (sw2.0, sw2.1, sw2.2, sw2.3, sw2.4, sw2.5, 2),
        ca2,
        "PHY=4x LOG=ACT SPD=FDR10",
    );
    text += &lst_line(
        ca2,
        (sw2.0, sw2.1, sw2.2, sw2.3, sw2.4, sw2.5, 2),
        "PHY=4x LOG=ACT SPD=FDR10",
    );
    text += &lst_line(sw2, sw3, "PHY=12x LOG=ACT SPD=14");
    text += &lst_line(sw3, sw2, "PHY=12x LOG=ACT SPD=14");
    text += &lst_line(
        (sw1.0, sw1.1, sw1.2, sw1.3, sw1.4, sw1.5, 3),
        (sw3.0, sw3.1, sw3.2, sw3.3, sw3.4, sw3.5, 3),
        "PHY=4x LOG=DWN SPD=2.5",
    );
    let text = text.replace("\n", "\r\n");
    assert_eq!(detect(text.as_bytes()), Some(Format::SubnetLst));
    let l = lst_str(&text).unwrap();
    let f = &l.fabric;
    assert_eq!(f.num_switches(), 3);
    assert_eq!(f.count(NodeKind::Ca), 1);
    assert_eq!(f.links.len(), 3, "the DWN link is skipped");
    assert!(
        l.warnings.iter().any(|w| w.contains("skipped 1 LOG=DWN")),
        "{:?}",
        l.warnings
    );
    // Names: unique descriptions as they are, duplicates made unique with the GUID.
    let leaf = "MF0;leaf01 {rack 3}";
    assert_eq!(f.node(node(f, leaf)).guid, 0x10);
    let q2 = "Quantum Mellanox Technologies (0x0000000000000030)";
    let q3 = "Quantum Mellanox Technologies (0x0000000000000040)";
    assert_eq!(f.node(node(f, q2)).desc, "Quantum Mellanox Technologies");
    assert_eq!(peer(f, q2, 7), Some((q3.to_string(), 9)));
    assert_eq!(peer(f, "node01 HCA-1", 2), Some((q2.to_string(), 2)));
    assert_eq!(lid(f, leaf, 0), 2);
    assert_eq!(lid(f, "node01 HCA-1", 1), 5);
    assert_eq!(lid(f, "node01 HCA-1", 2), 6);
    assert_eq!(port_guid(f, "node01 HCA-1", 2), 0x22);
    assert_eq!(f.node(node(f, leaf)).vendor_id, 0x2c9);
    assert_eq!(
        f.node(node(f, leaf)).device_id,
        0xb924,
        "8-digit swapped DevID"
    );
    assert_eq!(link_of(f, leaf, 1).speed, Speed::Edr);
    assert_eq!(link_of(f, q2, 2).speed, Speed::Fdr10);
    assert_eq!(
        (link_of(f, q2, 7).width, link_of(f, q2, 7).speed),
        (Width::X12, Speed::Fdr)
    );
}

#[test]
fn subnet_lst_contradictions() {
    let a = ("SW", 8u8, 0xau64, 0xau64, "A", 1u16, 1u8);
    let b = ("SW", 8u8, 0xbu64, 0xbu64, "B", 2u16, 2u8);
    let c = ("SW", 8u8, 0xcu64, 0xcu64, "C", 3u16, 1u8);
    let ok = "PHY=4x LOG=ACT SPD=10";
    // A1-B2 and then B2-C1.
    let text = lst_line(a, b, ok) + &lst_line(b, c, ok);
    let e = assert_err(lst_str(&text), 2, "the two ends of a link disagree");
    assert!(
        e.message.contains("line 1 cables \"B\"[2] to \"A\"[1]"),
        "{}",
        e.message
    );
    // Port beyond the count.
    let text = lst_line(a, ("SW", 8, 0xb, 0xb, "B", 2, 9), ok);
    assert_err(
        lst_str(&text),
        1,
        "PN:09 is beyond the port count Ports:08 of \"B\"",
    );
    // Two lines disagree about a node.
    let text = lst_line(a, b, ok) + &lst_line(("SW", 4, 0xa, 0xa, "A", 1, 3), c, ok);
    assert_err(
        lst_str(&text),
        2,
        "NodeGUID 000000000000000a is SW Ports:08 at line 1 but SW Ports:04 here",
    );
    // Duplicate port GUID on two nodes.
    let text = lst_line(("CA", 1, 0x20, 0x99, "h1", 5, 1), a, ok)
        + &lst_line(("CA", 1, 0x30, 0x99, "h2", 6, 1), b, ok);
    assert_err(lst_str(&text), 2, "duplicate GUID 0x0000000000000099");
    // Width disagreement between the two listings.
    let text = lst_line(a, b, ok) + &lst_line(b, a, "PHY=1x LOG=ACT SPD=10");
    assert_err(lst_str(&text), 2, "disagree on the width");
    // Cut short, garbage, empty.
    let full = lst_line(a, b, ok);
    let cut = &full[..full.find("LID:0002").unwrap()];
    assert_err(lst_str(cut), 1, "record cut short");
    let cut = &full[..full.rfind("Rev:").unwrap()];
    assert_err(lst_str(cut), 1, "second node block: record cut short");
    assert_err(
        lst_str(&(full.clone() + "garbage here\n")),
        2,
        "expected `{ TYPE Ports:..",
    );
    assert_err(
        lst_str(&full.replace("SPD=10", "SPD=7")),
        1,
        "SPD=7 is not a link speed",
    );
    assert_err(lst_str(""), 0, "no nodes");
    // Listed from one end only: loads with a warning.
    let l = lst_str(&lst_line(a, b, ok)).unwrap();
    assert_eq!(l.fabric.links.len(), 1);
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("1 links are listed from one end only")),
        "{:?}",
        l.warnings
    );
}

// ---------------------------------------------------------------------------------------------
// detect() and io::read()

#[test]
fn detect_and_read_dispatch() {
    assert_eq!(detect(b""), None);
    assert_eq!(detect(b"hello\nworld\n"), None);
    assert_eq!(detect(b"\x00\x01\x02\xff"), None);
    assert_eq!(detect(b"  {\"nodes\": []}"), Some(Format::Json));
    assert_eq!(detect(b"[\n {\"a\": 1}]"), Some(Format::Json));
    assert_eq!(
        detect(b"Switch 8 \"Switch1\"\n[3] \"Switch2\"[3] w=4\n"),
        Some(Format::IbsimNet)
    );
    assert_eq!(detect(b"include \"x.net\"\n"), Some(Format::IbsimNet));
    // A prompt that looks like a port line does not confuse detection.
    let text = "[root@head ~]# ibnetdiscover\nibwarn: [1] x\nswitchguid=0xa(a)\nSwitch\t8 \"S-000000000000000a\"\n";
    assert_eq!(detect(text.as_bytes()), Some(Format::Ibnetdiscover));
    // ibnetdiscover without header or guid lines, recognised by its ids.
    assert_eq!(
        detect(b"Ca\t1 \"H-0002c90300a1b2c4\"\n"),
        Some(Format::Ibnetdiscover)
    );
    for (file, fmt) in [
        ("cluster_edr.ibnd", Format::Ibnetdiscover),
        ("chassis_grouped.ibnd", Format::Ibnetdiscover),
        ("truncated.ibnd", Format::Ibnetdiscover),
    ] {
        let bytes = data(file);
        assert_eq!(detect(&bytes), Some(fmt), "{file}");
        let l = io::read(&bytes, file, &mut no_include, BuildOptions::default()).unwrap();
        assert!(!l.fabric.nodes.is_empty());
    }
    let e = io::read(
        b"random words\n",
        "x",
        &mut no_include,
        BuildOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.line, 0);
    assert!(e.message.contains("not a fabric file"), "{}", e.message);
}

// ---------------------------------------------------------------------------------------------
// performance: a 20,000-HCA fabric

/// A leaf/spine fabric in ibnetdiscover form: `leaves` 36-port leaves with 18 HCAs and 18
/// uplinks each; leaves are grouped in pods of `POD` with 18 spines of `POD` ports per pod.
const POD: usize = 200;

fn big_ibnd(leaves: usize) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(leaves * 18 * 400);
    s.push_str("#\n# Topology file: generated\n#\n");
    let pods = leaves.div_ceil(POD);
    let leaf = |i: usize| 0x0002_0000_0000_0000u64 + i as u64;
    let spine = |p: usize, j: usize| 0x0003_0000_0000_0000u64 + (p * 18 + j) as u64;
    let hca = |i: usize, k: usize| 0x0004_0000_0000_0000u64 + ((i * 18 + k) as u64) * 4;
    let spine_lid = |p: usize, j: usize| 40000 + p * 18 + j;
    for i in 0..leaves {
        let g = leaf(i);
        let (p, slot) = (i / POD, i % POD);
        let _ = writeln!(
            s,
            "\nvendid=0x2c9\ndevid=0xcf08\nsysimgguid={g:#x}\nswitchguid={g:#x}({g:x})"
        );
        let _ = writeln!(
            s,
            "Switch\t36 \"S-{g:016x}\"\t\t# \"leaf{i}\" enhanced port 0 lid {} lmc 0",
            1 + i
        );
        for k in 0..18 {
            let h = hca(i, k);
            let _ = writeln!(
                s,
                "[{}]\t\"H-{h:016x}\"[1]({:x}) \t\t# \"node{i}-{k} HCA-1\" lid {} 4xHDR",
                k + 1,
                h + 1,
                2000 + i * 18 + k
            );
        }
        for j in 0..18 {
            let _ = writeln!(
                s,
                "[{}]\t\"S-{:016x}\"[{}]\t\t# \"spine{p}-{j}\" lid {} 4xHDR",
                19 + j,
                spine(p, j),
                slot + 1,
                spine_lid(p, j)
            );
        }
    }
    for p in 0..pods {
        let members: Vec<usize> = (p * POD..((p + 1) * POD).min(leaves)).collect();
        for j in 0..18 {
            let g = spine(p, j);
            let _ = writeln!(s, "\nswitchguid={g:#x}({g:x})\nSwitch\t{POD} \"S-{g:016x}\"\t\t# \"spine{p}-{j}\" enhanced port 0 lid {} lmc 0", spine_lid(p, j));
            for &i in &members {
                let _ = writeln!(
                    s,
                    "[{}]\t\"S-{:016x}\"[{}]\t\t# \"leaf{i}\" lid {} 4xHDR",
                    i % POD + 1,
                    leaf(i),
                    19 + j,
                    1 + i
                );
            }
        }
    }
    for i in 0..leaves {
        for k in 0..18 {
            let h = hca(i, k);
            let _ = writeln!(s, "\nvendid=0x2c9\ndevid=0x101b\nsysimgguid={:#x}\ncaguid={h:#x}\nCa\t1 \"H-{h:016x}\"\t\t# \"node{i}-{k} HCA-1\"", h + 3);
            let _ = writeln!(
                s,
                "[1]({:x}) \t\"S-{:016x}\"[{}]\t\t# lid {} lmc 0 \"leaf{i}\" lid {} 4xHDR",
                h + 1,
                leaf(i),
                k + 1,
                2000 + i * 18 + k,
                1 + i
            );
        }
    }
    s
}

#[test]
fn twenty_thousand_hcas_parse_fast() {
    let leaves = 1112; // 1112 * 18 = 20016 HCAs
    let text = big_ibnd(leaves);
    let t0 = std::time::Instant::now();
    let l = ibnd_str(&text).unwrap();
    let dt = t0.elapsed();
    let f = &l.fabric;
    assert_eq!(f.count(NodeKind::Ca), leaves * 18);
    assert_eq!(f.num_switches(), leaves + leaves.div_ceil(POD) * 18);
    assert_eq!(f.links.len(), leaves * 18 * 2);
    assert_eq!(
        lid(
            f,
            &format!("H-{:016x}", 0x0004_0000_0000_0000u64 + 4 * 5),
            1
        ),
        2005
    );
    eprintln!(
        "20016-HCA ibnetdiscover file ({} MB): parse + build {dt:?}",
        text.len() / 1_000_000
    );
    // Generous bound for a loaded 2-core test machine; release is well under a second.
    assert!(dt.as_secs_f64() < 5.0, "took {dt:?}");
}

#[test]
fn small_files_parse_quickly() {
    // Per-file overhead matters for tools that read many small dumps (and for fuzzing).
    let bytes = data("cluster_edr.ibnd");
    let t0 = std::time::Instant::now();
    for _ in 0..200 {
        let l = ibnetdiscover::read(&bytes, "c", BuildOptions::default()).unwrap();
        assert_eq!(l.fabric.links.len(), 10);
    }
    let per = t0.elapsed() / 200;
    eprintln!("cluster_edr.ibnd: {per:?} per parse + build");
    assert!(per.as_millis() < 50, "{per:?}");
}

// ---------------------------------------------------------------------------------------------
// robustness: random bytes and mutations of real files never panic, and errors point into
// the file

type Reader = fn(&[u8]) -> Result<Loaded, ParseError>;

fn readers() -> Vec<(&'static str, Reader)> {
    fn ibnd(b: &[u8]) -> Result<Loaded, ParseError> {
        ibnetdiscover::read(b, "f", BuildOptions::default())
    }
    fn sim(b: &[u8]) -> Result<Loaded, ParseError> {
        ibsim::read(b, "f", &mut no_include, BuildOptions::default())
    }
    fn lst(b: &[u8]) -> Result<Loaded, ParseError> {
        subnet_lst::read(b, "f", BuildOptions::default())
    }
    fn any(b: &[u8]) -> Result<Loaded, ParseError> {
        io::read(
            b,
            "f",
            &mut no_include,
            BuildOptions {
                lmc: 2,
                reassign_lids: false,
            },
        )
    }
    fn ports(b: &[u8]) -> Result<Loaded, ParseError> {
        ports_report::read(b, "f", BuildOptions::default())
    }
    fn linkinfo(b: &[u8]) -> Result<Loaded, ParseError> {
        iblinkinfo::read(b, "f", BuildOptions::default())
    }
    vec![
        ("ibnetdiscover", ibnd),
        ("ibsim", sim),
        ("subnet.lst", lst),
        ("ports report", ports),
        ("iblinkinfo", linkinfo),
        ("detect+read", any),
    ]
}

fn seeds() -> Vec<Vec<u8>> {
    let mut v = vec![
        data("cluster_edr.ibnd"),
        data("chassis_grouped.ibnd"),
        data("cluster_crlf_spaces.ibnd"),
        data("tartu_putty_capture_prompt_no_newline.ibnd"),
    ];
    let small_net = "switchguid=0x10\nSwitch\t4 \"s1\"\t# \"d\" lid 3\n[1]\t\"h1\"[1] w=3 s=2\n[2]\t\"s1\"[3]\n[3]\t\"s1\"[2]\n\nHca\t2 \"h1\"\n[1]\t\"s1\"[1]\t# lid 5 lmc 0 \"s1\" lid 3 4xQDR\n";
    v.push(small_net.as_bytes().to_vec());
    let lst = std::fs::read(testdata().join("opensm/torus2d_4x4_h2.subnet.lst")).unwrap();
    v.push(lst.into_iter().take(4000).collect());
    v.push(std::fs::read(testdata().join("topologies/torus2d_4x4_h2.net")).unwrap());
    v.push(std::fs::read(testdata().join("diags/mellanox_lab.ports")).unwrap());
    v.push(std::fs::read(testdata().join("diags/mellanox_lab.linkinfo")).unwrap());
    v.push(std::fs::read(testdata().join("diags/mellanox_lab.linkinfo-l")).unwrap());
    v
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    Insert(usize, Vec<u8>),
}

fn mutate(mut bytes: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if bytes.is_empty() {
            break;
        }
        let n = bytes.len();
        match m {
            Mutation::Flip(i, x) => bytes[i % n] ^= x | 1,
            Mutation::Truncate(i) => bytes.truncate(i % n),
            Mutation::Insert(i, b) => {
                let at = i % n;
                bytes.splice(at..at, b.iter().copied());
            }
            Mutation::DeleteLine(i) | Mutation::DuplicateLine(i) => {
                let starts: Vec<usize> = std::iter::once(0)
                    .chain(
                        bytes
                            .iter()
                            .enumerate()
                            .filter(|(_, &b)| b == b'\n')
                            .map(|(k, _)| k + 1),
                    )
                    .filter(|&k| k < n)
                    .collect();
                let s = starts[i % starts.len()];
                let e = bytes[s..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(n, |k| s + k + 1);
                if matches!(m, Mutation::DeleteLine(_)) {
                    bytes.drain(s..e);
                } else {
                    let line = bytes[s..e].to_vec();
                    bytes.splice(e..e, line);
                }
            }
        }
    }
    bytes
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (
            any::<usize>(),
            prop::sample::select(vec![
                b"\"".to_vec(),
                b"[".to_vec(),
                b"]".to_vec(),
                b"#".to_vec(),
                b"\n".to_vec(),
                b"\r".to_vec(),
                b"(".to_vec(),
                b"}".to_vec(),
                b"{".to_vec(),
                b"99999999999999999999".to_vec(),
                b"\xff\xfe".to_vec(),
                "é".as_bytes().to_vec(),
                b"0x".to_vec(),
                b" lid 65535 lmc 9 ".to_vec(),
                b"=".to_vec(),
            ])
        )
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
    ]
}

fn check_no_panic_and_lines(bytes: &[u8]) {
    let count = text::line_count(&text::decode(bytes));
    for (name, r) in readers() {
        let res = std::panic::catch_unwind(|| r(bytes));
        match res {
            Err(_) => panic!("{name} panicked on {:?}", String::from_utf8_lossy(bytes)),
            Ok(Err(e)) => assert!(
                e.line <= count,
                "{name}: line {} beyond {count} lines: {e}",
                e.line
            ),
            Ok(Ok(l)) => assert!(!l.fabric.nodes.is_empty(), "{name}: loaded an empty fabric"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_no_panic_and_lines(&bytes);
    }

    #[test]
    fn mutated_files_never_panic(seed in 0usize..16, muts in prop::collection::vec(mutation(), 1..8)) {
        let seeds = seeds();
        let base = seeds[seed % seeds.len()].clone();
        check_no_panic_and_lines(&mutate(base, &muts));
    }
}

#[test]
fn guid_overflow_is_an_error_not_a_panic() {
    let net = "caguid=0xffffffffffffffff\nHca\t2 \"x\"\n[1]\t\"s\"[1]\n\nswitchguid=0x10\nSwitch\t2 \"s\"\n[1]\t\"x\"[1]\n";
    let mut inc = |_: &str| -> Result<(String, Vec<u8>), String> { Err("no includes".into()) };
    let e = fabric::io::read(
        net.as_bytes(),
        "o.net",
        &mut inc,
        fabric::BuildOptions::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("leaves no room"), "{e}");
}

#[test]
fn ibsim_file_with_ibnetdiscover_ids_is_detected_as_ibsim() {
    let text = "# ibsim net file written by fabroute\nSwitch\t2 \"S-0000000000200000\"\n[1]\t\"H-0000000000100000\"[1]\n\nHca\t1 \"H-0000000000100000\"\n[1]\t\"S-0000000000200000\"[1]\n";
    assert_eq!(
        fabric::io::detect(text.as_bytes()),
        Some(fabric::io::Format::IbsimNet)
    );
    let hca_only = "Hca\t1 \"H-0000000000100000\"\n[1]\t\"S-0000000000200000\"[1] w=2\n";
    assert_eq!(
        fabric::io::detect(hca_only.as_bytes()),
        Some(fabric::io::Format::IbsimNet)
    );
}

// ---------------------------------------------------------------------------------------------
// ibnetdiscover's ports report (`ibnetdiscover -p`)

/// What a fabric says about its ports, in the terms both ibnetdiscover views share: per
/// cabled link its two ends (switch GUID or CA/router port GUID, port number), width and
/// speed; the LIDs of those ports; the node descriptions. (Node GUIDs of CAs are not in the
/// ports report, so they are not compared.)
type PortView = (
    Vec<((u64, u8), (u64, u8), Width, Speed)>,
    Vec<(u64, u32)>,
    Vec<(NodeKind, String)>,
);

fn port_view(f: &Fabric) -> PortView {
    let end = |p: fabric::PortId| (f.shown_port_guid(p), f.port(p).num);
    let mut links: Vec<_> = f
        .links
        .iter()
        .map(|l| {
            let (a, b) = (end(l.a), end(l.b));
            (a.min(b), a.max(b), l.width, l.speed)
        })
        .collect();
    links.sort_unstable_by_key(|x| (x.0, x.1));
    let mut lids: Vec<(u64, u32)> = f
        .ports
        .iter()
        .enumerate()
        .filter(|(_, p)| p.lid != 0)
        .map(|(i, p)| (f.shown_port_guid(fabric::PortId(i as u32)), p.lid as u32))
        .collect();
    lids.sort_unstable();
    let mut descs: Vec<(NodeKind, String)> =
        f.nodes.iter().map(|n| (n.kind, n.desc.clone())).collect();
    descs.sort_unstable_by(|a, b| (a.0 as u8, &a.1).cmp(&(b.0 as u8, &b.1)));
    (links, lids, descs)
}

#[test]
fn ports_report_and_iblinkinfo_give_the_fabric_of_the_topology_file() {
    // The three files are real infiniband-diags output on the same ibsim fabric.
    for (name, nodes, links, end_ports) in [
        ("mellanox_lab", 15, 16, 13),
        ("x5_dual_port", 100, 222, 152),
    ] {
        let dir = testdata().join("diags");
        let rep = std::fs::read(dir.join(format!("{name}.ports"))).unwrap();
        let top = std::fs::read(dir.join(format!("{name}.ibnd"))).unwrap();
        let lnk = std::fs::read(dir.join(format!("{name}.linkinfo"))).unwrap();
        let lnl = std::fs::read(dir.join(format!("{name}.linkinfo-l"))).unwrap();
        assert_eq!(detect(&rep), Some(Format::PortsReport), "{name}");
        assert_eq!(detect(&lnk), Some(Format::Iblinkinfo), "{name}");
        assert_eq!(detect(&lnl), Some(Format::Iblinkinfo), "{name}");
        let a = io::read(&rep, name, &mut no_include, BuildOptions::default()).unwrap();
        let b = ibnetdiscover::read(&top, name, BuildOptions::default()).unwrap();
        let c = io::read(&lnk, name, &mut no_include, BuildOptions::default()).unwrap();
        let d = io::read(&lnl, name, &mut no_include, BuildOptions::default()).unwrap();
        assert!(a.warnings.is_empty(), "{name}: {:?}", a.warnings);
        assert!(c.warnings.is_empty(), "{name}: {:?}", c.warnings);
        assert!(d.warnings.is_empty(), "{name}: {:?}", d.warnings);
        let (fa, fb) = (&a.fabric, &b.fabric);
        // iblinkinfo gives the same fabric as the ports report, node for node
        assert_eq!(port_view(&c.fabric), port_view(fa), "{name}: iblinkinfo");
        let sorted = |f: &Fabric| {
            let mut v = f.nodes.clone();
            v.sort_unstable_by_key(|n| n.guid);
            v
        };
        assert_eq!(sorted(&c.fabric), sorted(fa), "{name}: iblinkinfo nodes");
        // and so does its line mode, node types inferred
        assert_eq!(port_view(&d.fabric), port_view(fa), "{name}: iblinkinfo -l");
        assert_eq!(sorted(&d.fabric), sorted(fa), "{name}: iblinkinfo -l nodes");
        assert_eq!(fa.nodes.len(), nodes, "{name}");
        assert_eq!(fa.links.len(), links, "{name}");
        let ends = |f: &Fabric| {
            f.ports
                .iter()
                .filter(|p| !f.is_switch(p.node) && p.link.is_some())
                .count()
        };
        assert_eq!(ends(fa), end_ports, "{name}");
        for k in [NodeKind::Switch, NodeKind::Ca, NodeKind::Router] {
            assert_eq!(fa.count(k), fb.count(k), "{name} {k:?}");
        }
        let (va, vb) = (port_view(fa), port_view(fb));
        assert_eq!(va.0, vb.0, "{name}: links");
        assert_eq!(va.1, vb.1, "{name}: LIDs");
        assert_eq!(va.2, vb.2, "{name}: descriptions");
        // every node has as many ports as the topology file gives it, where the report
        // shows its highest port
        for n in fa.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
            let m = fb.node_by_guid(n.guid).expect("the same switch GUID");
            assert_eq!(n.nports, fb.node(m).nports, "{name} {}", n.desc);
        }
    }
    // dual-port adapters (GUID − port number agree) are one node with both ports cabled
    let rep = std::fs::read(testdata().join("diags/x5_dual_port.ports")).unwrap();
    let f = ports_report::read(&rep, "x", BuildOptions::default())
        .unwrap()
        .fabric;
    let dual = f
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| {
            n.kind == NodeKind::Ca
                && f.node_ports(NodeId(*i as u32))
                    .filter(|&p| f.port(p).link.is_some())
                    .count()
                    == 2
        })
        .count();
    assert_eq!(dual, 63);
}

#[test]
fn ports_report_quirks() {
    let sw = "0x0002c903007b78b0";
    let text = format!(
        "[root@head ~]# ibnetdiscover -p\r\n\
         ibwarn: [123] some warning\r\n\
         CA     2  1 0x0c42a103008b3bd1 4x EDR - SW    19 34 {sw} ( 'h1 HCA-1' - 'MF0;sw:SX6036/U1' )\r\n\
         CA     3  2 0x0c42a103008b3bd2 4x EDR - SW    19 33 {sw} ( 'h1 HCA-1' - 'MF0;sw:SX6036/U1' )\r\n\
         CA     4  1 0x248a0703002e61d4 4xXDR - SW    19 32 {sw} ( 'h2 mlx5_0' - 'MF0;sw:SX6036/U1' )\n\
         CA     5  1 0x248a0703002e61d5 2x NDR - SW    19 31 {sw} ( 'h2 mlx5_1' - 'MF0;sw:SX6036/U1' )\n\
         SW    19 36 {sw} 4x SDR                                    'MF0;sw:SX6036/U1'\n\
         SW    19 34 {sw} 4x EDR - CA     2  1 0x0c42a103008b3bd1 ( 'MF0;sw:SX6036/U1' - 'h1 HCA-1' )\n\
         SW    19 33 {sw} 4x EDR - CA     3  2 0x0c42a103008b3bd2 ( 'MF0;sw:SX6036/U1' - 'h1 HCA-1' )\n\
         SW    19 32 {sw} 4x XDR - CA     4  1 0x248a0703002e61d4 ( 'MF0;sw:SX6036/U1' - 'h2 mlx5_0' )\n"
    );
    // `4xXDR` glued is not the report's spacing
    let e = ports_str(&text).unwrap_err();
    assert_eq!(e.line, 5, "{e}");
    assert!(e.message.contains("link width"), "{e}");
    let text = text.replace("4xXDR", "4x XDR");
    let l = ports_str(&text).unwrap();
    let f = &l.fabric;
    // the switch has 36 ports (port 36 is listed without a peer); h1's two ports are one
    // node (GUID − port agree), h2's two adapters are two (mlx5: one node per port)
    let s = f.node_by_guid(0x0002c903007b78b0).unwrap();
    assert_eq!(f.node(s).nports, 36);
    assert_eq!(f.node(s).name, "MF0;sw:SX6036/U1");
    assert_eq!(f.switch_lid(s), 19);
    assert_eq!(f.count(NodeKind::Ca), 3);
    let h1 = node(f, "h1 HCA-1");
    assert_eq!(f.node(h1).nports, 2);
    assert_eq!(f.node(h1).guid, 0x0c42a103008b3bd1);
    assert_eq!(f.port(f.port_id(h1, 2)).lid, 3);
    assert_eq!(
        peer(f, "h1 HCA-1", 2),
        Some(("MF0;sw:SX6036/U1".into(), 33))
    );
    let k = link_of(f, "h2 mlx5_0", 1);
    assert_eq!((k.width, k.speed), (Width::X4, Speed::Xdr));
    let k = link_of(f, "h2 mlx5_1", 1);
    assert_eq!((k.width, k.speed), (Width::X2, Speed::Ndr));
    // the last CA was listed from its own end only
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(
        l.warnings[0].contains("1 links are listed from one end only"),
        "{:?}",
        l.warnings
    );
}

#[test]
fn ports_report_errors_name_the_line() {
    let sw = "0x0002c903007b78b0";
    let good = format!(
        "CA     2  1 0x0c42a103008b3bd1 4x EDR - SW    19 34 {sw} ( 'h1' - 'sw' )\n\
         SW    19 34 {sw} 4x EDR - CA     2  1 0x0c42a103008b3bd1 ( 'sw' - 'h1' )\n"
    );
    ports_str(&good).unwrap();
    let cases: [(String, usize, &str); 8] = [
        (good.replace("4x EDR - SW", "4x GDR - SW"), 1, "link speed"),
        (
            good.replace("0x0c42a103008b3bd1 4x", "0x0c42zz 4x"),
            1,
            "port GUID",
        ),
        (good.replace("CA     2  1", "XX     2  1"), 1, "SW|CA|RT"),
        (
            good.replace("( 'h1' - 'sw' )", "( 'h1' - 'sw'"),
            1,
            "cut short",
        ),
        (
            good.replace("( 'sw' - 'h1' )", "( 'sw' - 'h9' )"),
            2,
            "is {h1} at line 1 but {h9} here",
        ),
        (
            good.replace(
                &format!("SW    19 34 {sw} 4x EDR - CA     2  1"),
                &format!("SW    19 35 {sw} 4x EDR - CA     2  1"),
            ),
            2,
            "the two ends of a link disagree",
        ),
        (
            good.replace(
                "SW    19 34 0x0002c903007b78b0 4x EDR - CA",
                "SW    19  0 0x0002c903007b78b0 4x EDR - CA",
            ),
            2,
            "port number",
        ),
        (good.replace("4x EDR - SW", "4x EDR + SW"), 1, "peer port"),
    ];
    for (text, line, what) in cases {
        let e = ports_str(&text).unwrap_err();
        assert_eq!(e.line, line, "{e}\n{text}");
        assert!(e.message.contains(what), "{e}\n{text}");
        assert!(
            e.to_string().starts_with(&format!("t.ports:{line}: ")),
            "{e}"
        );
    }
    // nothing but prompts: no fabric
    let e = ports_str("$ ibnetdiscover -p\n").unwrap_err();
    assert!(e.message.contains("no cabled ports"), "{e}");
}

#[test]
fn iblinkinfo_quirks_and_errors() {
    // Active links as a real fabric shows them (the vendored files come from ibsim, with
    // no SM: Initialize), a down port, a port whose peer is not available, a prompt.
    let good = "user@login1:~$ iblinkinfo\n\
        Switch: 0x0002c903007b78b0 MF0;sw226:SX6036/U1:\n\
        \x20         19    1[  ] ==( 4X      25.78125 Gbps  Active/  LinkUp)==>       2    1[  ] \"h1 HCA-1\" ( )\n\
        \x20         19    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n\
        \x20         19    3[  ] ==( 4X         212.5 Gbps  Active/  LinkUp)==>       3    1[  ] \"h2 mlx5_0\" ( )\n\
        \x20         19    4[  ] ==( 4X  10.0 Gbps (FDR10)  Active/  LinkUp)==>    \"Port not available\"\n\
        CA: h1 HCA-1:\n\
        \x20     0x0c42a103008b3bd1      2    1[  ] ==( 4X      25.78125 Gbps  Active/  LinkUp)==>      19    1[  ] \"MF0;sw226:SX6036/U1\" ( )\n\
        CA: h2 mlx5_0:\n\
        \x20     0x248a0703002e61d4      3    1[  ] ==( 4X         212.5 Gbps  Active/  LinkUp)==>      19    3[  ] \"MF0;sw226:SX6036/U1\" ( )\n";
    assert_eq!(detect(good.as_bytes()), Some(Format::Iblinkinfo));
    let l = iblinkinfo::read(good.as_bytes(), "t.linkinfo", BuildOptions::default()).unwrap();
    let f = &l.fabric;
    assert_eq!((f.count(NodeKind::Switch), f.count(NodeKind::Ca)), (1, 2));
    assert_eq!(f.links.len(), 2);
    let s = f.node_by_guid(0x0002c903007b78b0).unwrap();
    assert_eq!(f.node(s).nports, 4);
    assert_eq!(f.switch_lid(s), 19);
    assert_eq!(link_of(f, "h1 HCA-1", 1).speed, Speed::Edr);
    assert_eq!(link_of(f, "h2 mlx5_0", 1).speed, Speed::Xdr);
    assert_eq!(lid(f, "h2 mlx5_0", 1), 3);
    // names libibmad does not know are unknown, not errors
    let odd = good
        .replace(
            "4X      25.78125 Gbps  Active",
            "undefined (64)   undefined (3)  Active",
        )
        .replace(
            "4X         212.5 Gbps  Active",
            "4X   Extended speed  Active",
        );
    let f = iblinkinfo::read(odd.as_bytes(), "t.linkinfo", BuildOptions::default())
        .unwrap()
        .fabric;
    let k = link_of(&f, "h1 HCA-1", 1);
    assert_eq!((k.width, k.speed), (Width::Unknown, Speed::Unknown));
    let k = link_of(&f, "h2 mlx5_0", 1);
    assert_eq!((k.width, k.speed), (Width::X4, Speed::Unknown));
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("1 active ports whose peer was not available")),
        "{:?}",
        l.warnings
    );
    let read = |t: &str| iblinkinfo::read(t.as_bytes(), "t.linkinfo", BuildOptions::default());
    // the CA blocks left out (`--switches-only`): the peers cannot be named
    let cut = good.split("CA: h1").next().unwrap();
    let e = read(cut).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("the peer's LID 2 is not listed"), "{e}");
    // line mode: a GUID on two port numbers is a switch, the others are CA ports
    let sw = "0x0002c903007b78b0 \"   MF0;sw226:SX6036/U1\"     19";
    let ca = "0x0c42a103008b3bd1 \"                      h1 HCA-1\"      2";
    let lm = format!(
        "{sw}    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x0c42a103008b3bd1      2    1[  ] \"h1 HCA-1\" ( )\n\
         {sw}    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n\
         {ca}    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x0002c903007b78b0     19    1[  ] \"MF0;sw226:SX6036/U1\" ( )\n"
    );
    assert_eq!(detect(lm.as_bytes()), Some(Format::Iblinkinfo));
    let f = read(&lm).unwrap().fabric;
    assert_eq!((f.count(NodeKind::Switch), f.count(NodeKind::Ca)), (1, 1));
    assert_eq!(
        peer(&f, "h1 HCA-1", 1),
        Some(("MF0;sw226:SX6036/U1".into(), 1))
    );
    assert_eq!(lid(&f, "h1 HCA-1", 1), 2);
    let e = read(&format!("{good}{ca}    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x0002c903007b78b0     19    1[  ] \"x\" ( )\n")).unwrap_err();
    assert!(e.message.contains("line-mode (-l) line among"), "{e}");
    // a port line before any header
    let e =
        read("          19    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  2 1[  ] \"h\" ( )\n")
            .unwrap_err();
    assert!(e.message.contains("expected a node header"), "{e}");
    // a garbled link
    let e = read(&good.replace(
        "4X      25.78125 Gbps  Active/  LinkUp)==>       2",
        "4Q      25.78125 Gbps  Active/  LinkUp)==>       2",
    ))
    .unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("expected the link"), "{e}");
    // two nodes on one LID
    let e =
        read(&good.replace("0x248a0703002e61d4      3", "0x248a0703002e61d4      2")).unwrap_err();
    assert!(e.message.contains("is also the LID of"), "{e}");
}

/// Found by a robustness hunt on mutated real dumps: a channel adapter whose two ports claim
/// one GUID, a CA without cabled ports beside a ConnectX-4-style sibling (port GUID = node
/// GUID), and a dump cut before the node it was taken from.
#[test]
fn ibnetdiscover_port_guid_clashes_and_the_initiating_node() {
    // Two cabled ports of one CA with one GUID: the file contradicts itself (the CA's own
    // second port line).
    let text =
        "switchguid=0xa(a)\nSwitch\t4 \"S-000000000000000a\"\t# \"s\" enhanced port 0 lid 1\n\
        [1]\t\"H-0000000000000020\"[1](21) \t# \"h\" lid 2 4xEDR\n\
        [2]\t\"H-0000000000000020\"[2](22) \t# \"h\" lid 3 4xEDR\n\
        [3]\t\"H-0000000000000030\"[1](31) \t# \"k\" lid 4 4xEDR\n\n\
        caguid=0x20\nCa\t2 \"H-0000000000000020\"\t# \"h\"\n\
        [1](21) \t\"S-000000000000000a\"[1]\t# lid 2 lmc 0 \"s\" lid 1 4xEDR\n\
        [2](22) \t\"S-000000000000000a\"[2]\t# lid 3 lmc 0 \"s\" lid 1 4xEDR\n\n\
        caguid=0x30\nCa\t1 \"H-0000000000000030\"\t# \"k\"\n\
        [1](31) \t\"S-000000000000000a\"[3]\t# lid 4 lmc 0 \"s\" lid 1 4xEDR\n";
    ibnd_str(text).expect("distinct port GUIDs load");
    let clash = text.replace("[2](22)", "[2](21)");
    assert_err(
        ibnd_str(&clash),
        10,
        "ports 1 and 2 of \"H-0000000000000020\" both have it",
    );
    // A CA record without cabled ports lists no port GUIDs; node GUID + 1 is its sibling's
    // port GUID (port GUID = node GUID on ConnectX-4 and later), so it is not invented.
    let text =
        "switchguid=0xa(a)\nSwitch\t4 \"S-000000000000000a\"\t# \"s\" enhanced port 0 lid 1\n\
        [1]\t\"H-0000000000000041\"[1](41) \t# \"f1\" lid 2 4xEDR\n\n\
        caguid=0x40\nCa\t1 \"H-0000000000000040\"\t# \"f0\"\n\n\
        caguid=0x41\nCa\t1 \"H-0000000000000041\"\t# \"f1\"\n\
        [1](41) \t\"S-000000000000000a\"[1]\t# lid 2 lmc 0 \"s\" lid 1 4xEDR\n";
    let l = ibnd_str(text).expect("an uncabled CA beside its sibling loads");
    assert_eq!(port_guid(&l.fabric, "H-0000000000000041", 1), 0x41);
    assert_eq!(
        port_guid(&l.fabric, "H-0000000000000040", 1),
        0,
        "not invented"
    );
    // The node the dump was taken from has no record: cut short.
    let head = "#\n# Topology file: generated on Sun Oct  5 21:59:42 2014\n#\n\
        # Initiated from node 0000000000000020 port 0000000000000021\n\n";
    let cut = format!(
        "{head}switchguid=0xa(a)\nSwitch\t4 \"S-000000000000000a\"\t# \"s\" enhanced port 0 lid 1"
    );
    let l = ibnd_str(&cut).expect("a cut dump loads");
    assert!(
        l.warnings.iter().any(|w| w.starts_with("t.ibnd:4: ")
            && w.contains("taken from node 0x0000000000000020, which has no record")),
        "{:?}",
        l.warnings
    );
    let whole = format!(
        "{head}switchguid=0xa(a)\nSwitch\t4 \"S-000000000000000a\"\t# \"s\" enhanced port 0 lid 1\n\
         [1]\t\"H-0000000000000020\"[1](21) \t# \"h\" lid 2 4xEDR\n\n\
         caguid=0x20\nCa\t1 \"H-0000000000000020\"\t# \"h\"\n\
         [1](21) \t\"S-000000000000000a\"[1]\t# lid 2 lmc 0 \"s\" lid 1 4xEDR\n"
    );
    let l = ibnd_str(&whole).expect("the whole dump loads");
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
}

/// Found by a robustness hunt: a capture cut inside a line is an error on that line, and the
/// message says the file ends there without a newline; a file cut on a line boundary, or an
/// error on another line, gets no such hint; an empty file says it is empty.
#[test]
fn an_error_on_a_cut_last_line_says_the_file_may_be_cut() {
    let read = |t: &str| {
        fabric::io::read(
            t.as_bytes(),
            "t.net",
            &mut no_include,
            BuildOptions::default(),
        )
    };
    let whole = "Switch\t4 \"a\"\n[1]\t\"b\"[1]\n\nHca\t1 \"b\"\n[1]\t\"a\"[1]\n";
    assert!(read(whole).is_ok());
    let cut = &whole[..whole.len() - 3];
    let e = read(cut).unwrap_err();
    assert_eq!(e.line, 5);
    assert!(e.message.contains("cut short"), "{e}");
    // the same error with a newline after it: no hint
    let e = read(&format!("{cut}\n")).unwrap_err();
    assert!(!e.message.contains("cut short"), "{e}");
    // an error on an earlier line of a cut file: no hint
    let e = read("Switch\t4 \"a\"\n[9]\t\"b\"[1]\n\nHca\t1 \"b\"\n[1]\t\"a\"").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(!e.message.contains("cut short"), "{e}");
    assert!(read(" \n")
        .unwrap_err()
        .message
        .contains("the file is empty"));
}

/// A director dump captured through a terminal (PuTTY): CRLF line ends, tabs turned into
/// spaces, and the appliance's shell prompt after the last line, without a newline. Made from
/// the vendored Tartu dump (`tests/data/real`), as the capture of a UFM appliance looks; it
/// reads to the same fabric as the clean dump.
#[test]
fn a_terminal_capture_ending_in_an_appliance_prompt_reads() {
    let bytes = data("tartu_putty_capture_prompt_no_newline.ibnd");
    assert!(!bytes.ends_with(b"\n") && !bytes.contains(&b'\t'));
    assert!(bytes.ends_with(b"(config) # "));
    assert_eq!(detect(&bytes), Some(Format::Ibnetdiscover));
    let capture = ibnetdiscover::read(&bytes, "capture", BuildOptions::default()).unwrap();
    let clean = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/real/tartu_sx6036_fdr_8sw_144hca.ibnd"),
    )
    .unwrap();
    let clean = ibnetdiscover::read(&clean, "clean", BuildOptions::default()).unwrap();
    assert_eq!(capture.fabric.nodes, clean.fabric.nodes);
    assert_eq!(capture.fabric.ports, clean.fabric.ports);
    assert_eq!(capture.fabric.links, clean.fabric.links);
    assert_eq!(clean.fabric.num_switches(), 8);
}
