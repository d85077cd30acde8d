//! Writers and round trips: JSON (exact), ibsim net files and ibnetdiscover text (up to the
//! documented normalisation, `fabric::io::writers` module docs), golden files, and acceptance of
//! the written net files by Debian's `ibsim`.

use fabric::io::writers::{
    canonical_link_order, normalise_ibnetdiscover, normalise_ibsim, to_ibnetdiscover, to_ibsim,
    to_ibsim_lossy, to_json, WriteError, IBSIM_MAX_LINE,
};
use fabric::io::{ibnetdiscover, ibsim, json, ParseError};
use fabric::rng::Rng;
use fabric::*;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use std::path::PathBuf;

// ---------------------------------------------------------------------------------------------
// Random fabrics, built with FabricBuilder directly.

#[derive(Clone, Debug)]
struct NodeSpec {
    kind: NodeKind,
    nports: u8,
    guid: u64,
    name: String,
    desc: String,
    sys_guid: u64,
    vendor_id: u32,
    device_id: u32,
    esp0: bool,
    /// A CA/router port GUID that does not follow node GUID + port (port 1), if any.
    odd_port_guid: Option<u64>,
}

#[derive(Clone, Debug)]
struct FabricSpec {
    nodes: Vec<NodeSpec>,
    /// Link picks: indexes (mod the number of free ports left) of the two ends.
    links: Vec<(u32, u32, Width, Speed)>,
    /// Seed for explicit LIDs (None: the builder assigns them all).
    lid_seed: Option<u64>,
    lmc: u8,
    hints_seed: Option<u64>,
}

fn width() -> impl Strategy<Value = Width> {
    prop_oneof![
        6 => Just(Width::X4),
        1 => Just(Width::X1),
        1 => Just(Width::X2),
        1 => Just(Width::X8),
        1 => Just(Width::X12),
        1 => Just(Width::Unknown),
    ]
}

fn speed() -> impl Strategy<Value = Speed> {
    prop_oneof![
        3 => Just(Speed::Sdr),
        1 => Just(Speed::Ddr),
        2 => Just(Speed::Qdr),
        1 => Just(Speed::Fdr10),
        1 => Just(Speed::Fdr),
        2 => Just(Speed::Edr),
        1 => Just(Speed::Hdr),
        1 => Just(Speed::Ndr),
        1 => Just(Speed::Xdr),
        1 => Just(Speed::Unknown),
    ]
}

fn guid() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => Just(0u64),
        2 => 0x10_0000u64..0x10_0040,
        2 => 0x20_0000u64..0x20_0010,
        1 => 1u64..64,
        4 => 0x0002_c903_0000_0000u64..0x0002_c903_00ff_ffff,
        4 => 1u64..(u64::MAX - 1024),
    ]
}

fn node_spec(ibsim_names: bool) -> impl Strategy<Value = NodeSpec> {
    let kind = prop_oneof![
        3 => Just(NodeKind::Switch),
        4 => Just(NodeKind::Ca),
        1 => Just(NodeKind::Router),
    ];
    let name = if ibsim_names {
        "[A-Za-z0-9_.:/;=\\[\\] -]{1,20}".boxed()
    } else {
        "[ -~]{1,20}".boxed()
    };
    let desc = prop_oneof![
        4 => "[ -~]{0,40}",
        1 => "[a-z \t\"#=é]{0,12}",
        1 => Just(String::new()),
    ];
    (
        kind,
        0u8..=255,
        guid(),
        name,
        desc,
        prop_oneof![Just(0u64), any::<u64>()],
        prop_oneof![Just(0u32), 1u32..0x00ff_ffff],
        prop_oneof![Just(0u32), 1u32..0xffff],
        any::<bool>(),
        prop_oneof![4 => Just(None), 1 => (1u64..u64::MAX / 2).prop_map(Some)],
    )
        .prop_map(
            |(kind, np, guid, name, desc, sys_guid, vendor_id, device_id, esp0, odd)| {
                let nports = match kind {
                    NodeKind::Switch if np == 255 => 254,
                    NodeKind::Switch => 1 + np % 40,
                    NodeKind::Ca => 1 + np % 4,
                    NodeKind::Router => 1 + np % 3,
                };
                NodeSpec {
                    kind,
                    nports,
                    guid,
                    name,
                    desc,
                    sys_guid,
                    vendor_id,
                    device_id,
                    esp0,
                    odd_port_guid: odd,
                }
            },
        )
}

fn fabric_spec(ibsim_names: bool) -> impl Strategy<Value = FabricSpec> {
    (
        prop::collection::vec(node_spec(ibsim_names), 1..12),
        prop::collection::vec((any::<u32>(), any::<u32>(), width(), speed()), 0..40),
        prop_oneof![Just(None), any::<u64>().prop_map(Some)],
        0u8..=2,
        prop_oneof![Just(None), any::<u64>().prop_map(Some)],
    )
        .prop_map(|(nodes, links, lid_seed, lmc, hints_seed)| FabricSpec {
            nodes,
            links,
            lid_seed,
            lmc,
            hints_seed,
        })
}

/// Builds the fabric a spec describes; `None` when the builder refuses it (GUID clashes).
fn build(spec: &FabricSpec) -> Option<Fabric> {
    let mut b = FabricBuilder::new();
    let mut ids = Vec::new();
    for (i, n) in spec.nodes.iter().enumerate() {
        // Unique names: a suffix keeps random names apart.
        let name = format!("{}_{i}", n.name);
        let id = b
            .add_node(n.kind, n.nports, n.guid, name, n.desc.clone())
            .ok()?;
        let m = b.node_mut(id);
        m.sys_guid = n.sys_guid;
        m.vendor_id = n.vendor_id;
        m.device_id = n.device_id;
        m.enhanced_sp0 = n.esp0;
        if let (Some(g), true) = (n.odd_port_guid, n.kind.is_end()) {
            b.set_port_guid(id, 1, g).ok()?;
        }
        ids.push(id);
    }
    let mut free: Vec<(NodeId, u8)> = ids
        .iter()
        .zip(&spec.nodes)
        .flat_map(|(&id, n)| (1..=n.nports).map(move |p| (id, p)))
        .collect();
    for &(x, y, w, s) in &spec.links {
        if free.len() < 2 {
            break;
        }
        let a = free.swap_remove(x as usize % free.len());
        let c = free.swap_remove(y as usize % free.len());
        b.connect(a.0, a.1, c.0, c.1, w, s).ok()?;
    }
    if let Some(seed) = spec.lid_seed {
        let mut rng = Rng::new(seed);
        // Ports that get LIDs: switch port 0 and cabled CA/router ports.
        let mut need = Vec::new();
        for (&id, n) in ids.iter().zip(&spec.nodes) {
            if n.kind == NodeKind::Switch {
                need.push((id, 0u8));
            } else {
                for p in 1..=n.nports {
                    if b.peer(id, p).is_some() {
                        need.push((id, p));
                    }
                }
            }
        }
        let mut blocks: Vec<u32> = (1..=need.len() as u32 * 2).collect();
        rng.shuffle(&mut blocks);
        for (&(id, p), &blk) in need.iter().zip(&blocks) {
            if rng.below(3) == 0 {
                continue; // left to the builder
            }
            let lmc = if p == 0 { 0 } else { rng.below(4) as u8 };
            b.set_lid(id, p, blk * 8, lmc).ok()?;
        }
    }
    if let Some(seed) = spec.hints_seed {
        let mut rng = Rng::new(seed);
        let n = spec.nodes.len();
        b.hints = TopoHints {
            kind: format!("random {seed:x}"),
            coords: (0..n)
                .map(|_| (0..rng.below(3)).map(|_| rng.below(8) as u32).collect())
                .collect(),
            dims: vec![4, 4],
            wrap: vec![true, false],
            level: (0..n).map(|_| rng.below(4) as u32).collect(),
            link_class: (0..b.num_links()).map(|_| rng.below(2) as u16).collect(),
            link_class_names: vec!["host".into(), "net".into()],
            roots: (0..n as u32)
                .filter(|_| rng.below(3) == 0)
                .map(NodeId)
                .collect(),
        };
    }
    b.build_with(BuildOptions {
        lmc: spec.lmc,
        reassign_lids: false,
    })
    .ok()
}

// ---------------------------------------------------------------------------------------------
// Readers.

fn no_include(name: &str) -> Result<(String, Vec<u8>), String> {
    Err(format!("unexpected include of {name:?}"))
}

fn read_ibsim(text: &str) -> Result<Fabric, ParseError> {
    ibsim::read(
        text.as_bytes(),
        "written.net",
        &mut no_include,
        BuildOptions::default(),
    )
    .map(|l| l.fabric)
}

fn read_ibnd(text: &str) -> Result<Fabric, ParseError> {
    ibnetdiscover::read(text.as_bytes(), "written.ibnd", BuildOptions::default()).map(|l| l.fabric)
}

fn read_json(text: &str) -> Result<Fabric, ParseError> {
    json::read(text.as_bytes(), "written.json").map(|l| l.fabric)
}

/// A readable first difference between two fabrics (for assertion messages).
fn first_difference(got: &Fabric, want: &Fabric) -> String {
    if got.nodes.len() != want.nodes.len() {
        return format!("{} nodes, expected {}", got.nodes.len(), want.nodes.len());
    }
    for (i, (g, w)) in got.nodes.iter().zip(&want.nodes).enumerate() {
        if g != w {
            return format!("node {i}: got {g:?}\n expected {w:?}");
        }
    }
    if got.ports.len() != want.ports.len() {
        return format!("{} ports, expected {}", got.ports.len(), want.ports.len());
    }
    for (i, (g, w)) in got.ports.iter().zip(&want.ports).enumerate() {
        if g != w {
            return format!(
                "port {i} (node {:?} port {}): got {g:?}, expected {w:?}",
                want.nodes[w.node.idx()].name,
                w.num
            );
        }
    }
    if got.links.len() != want.links.len() {
        return format!("{} links, expected {}", got.links.len(), want.links.len());
    }
    for (i, (g, w)) in got.links.iter().zip(&want.links).enumerate() {
        if g != w {
            return format!("link {i}: got {g:?}, expected {w:?}");
        }
    }
    if got.hints != want.hints {
        return format!("hints: got {:?}\n expected {:?}", got.hints, want.hints);
    }
    "derived fields differ".into()
}

fn assert_same(got: &Fabric, want: &Fabric, text: &str, what: &str) {
    assert!(
        got == want,
        "{what} round trip differs: {}\n--- written file ---\n{text}",
        first_difference(got, want)
    );
}

// ---------------------------------------------------------------------------------------------
// Property tests.

// 256 cases each by default; PROPTEST_CASES raises it.
proptest! {

    #[test]
    fn json_round_trip_is_exact(spec in fabric_spec(false)) {
        let Some(f) = build(&spec) else { return Ok(()) };
        let text = to_json(&f);
        let back = read_json(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        assert_same(&back, &f, &text, "JSON");
        // Writing again gives the same bytes.
        prop_assert_eq!(to_json(&back), text);
    }

    #[test]
    fn ibsim_round_trip(spec in fabric_spec(true)) {
        let Some(f) = build(&spec) else { return Ok(()) };
        let (text, lost) = match to_ibsim_lossy(&f) {
            Ok(x) => x,
            Err(e @ WriteError::GuidClash { .. }) => {
                // Custom port GUIDs made ibsim's derived ones collide: no file, no normal form.
                prop_assert_eq!(normalise_ibsim(&f).unwrap_err(), e.clone());
                prop_assert_eq!(to_ibsim(&f).unwrap_err(), e);
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        for line in text.lines() {
            prop_assert!(line.len() <= IBSIM_MAX_LINE, "line too long: {line:?}");
        }
        // The strict writer succeeds exactly when nothing is lost, with the same text.
        match to_ibsim(&f) {
            Ok(t) => { prop_assert!(lost.is_empty()); prop_assert_eq!(&t, &text); }
            Err(WriteError::Lossy { count, .. }) => prop_assert_eq!(count, lost.len()),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
        }
        let want = normalise_ibsim(&f).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = read_ibsim(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let back = canonical_link_order(&back).map_err(|e| TestCaseError::fail(e.to_string()))?;
        assert_same(&back, &want, &text, "ibsim");
    }

    #[test]
    fn ibnetdiscover_round_trip(spec in fabric_spec(false)) {
        let Some(f) = build(&spec) else { return Ok(()) };
        let text = to_ibnetdiscover(&f);
        let want = match normalise_ibnetdiscover(&f) {
            Ok(w) => w,
            Err(WriteError::GuidClash { guid, .. }) => {
                // An unlisted port falls back to a GUID another port has: the reader must say so.
                let e = read_ibnd(&text).err();
                prop_assert!(e.is_some(), "reader accepted a duplicate port GUID {guid:#x}\n{text}");
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        let back = read_ibnd(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let back = canonical_link_order(&back).map_err(|e| TestCaseError::fail(e.to_string()))?;
        assert_same(&back, &want, &text, "ibnetdiscover");
        // A second round trip changes nothing more.
        prop_assert_eq!(to_ibnetdiscover(&back), to_ibnetdiscover(&want));
    }

    /// Normalisation is what the formats can carry: normalising twice changes nothing, and a
    /// fabric already in normal form writes without loss.
    #[test]
    fn normalisation_is_idempotent(spec in fabric_spec(true)) {
        let Some(f) = build(&spec) else { return Ok(()) };
        match normalise_ibsim(&f) {
            Ok(n1) => {
                prop_assert_eq!(&normalise_ibsim(&n1).unwrap(), &n1);
                prop_assert!(to_ibsim(&n1).is_ok(), "{:?}", to_ibsim_lossy(&n1).map(|x| x.1));
            }
            // Custom port GUIDs that ibsim's derivation makes collide: nothing to normalise to.
            Err(WriteError::GuidClash { .. }) => {}
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        }
        match normalise_ibnetdiscover(&f) {
            Ok(n2) => {
                prop_assert_eq!(&normalise_ibnetdiscover(&n2).unwrap(), &n2);
                prop_assert_eq!(canonical_link_order(&n2).unwrap(), n2.clone());
            }
            Err(WriteError::GuidClash { .. }) => {}
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        }
    }

    /// Whatever the bytes, the JSON reader answers with a fabric or a ParseError.
    #[test]
    fn json_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = json::read(&bytes, "fuzz.json");
    }

    /// Mutating a valid document: the reader still answers (fabric or error), never panics.
    #[test]
    fn json_reader_survives_mutations(spec in fabric_spec(false), cut in any::<u32>(), byte in any::<u8>()) {
        let Some(f) = build(&spec) else { return Ok(()) };
        let mut bytes = to_json(&f).into_bytes();
        let at = cut as usize % bytes.len();
        bytes[at] = byte;
        let _ = json::read(&bytes, "mutated.json");
        bytes.truncate(at);
        let _ = json::read(&bytes, "truncated.json");
    }
}

// ---------------------------------------------------------------------------------------------
// The reference example (opensm-formats.md 3.10): a leaf, a spine and a 2-port HCA.

fn reference_fabric() -> Fabric {
    let mut b = FabricBuilder::new();
    let leaf = b
        .add_node(
            NodeKind::Switch,
            36,
            0x248a_0703_00f0_c0de,
            "leaf01",
            "MF0;leaf01:MSB7700/U1",
        )
        .unwrap();
    let spine = b
        .add_node(
            NodeKind::Switch,
            36,
            0x248a_0703_00f0_aaaa,
            "spine01",
            "MF0;spine01:MSB7700/U1",
        )
        .unwrap();
    let hca = b
        .add_node(
            NodeKind::Ca,
            2,
            0x0002_c903_00a1_b2c4,
            "node01",
            "node01 HCA-1",
        )
        .unwrap();
    for (n, sys, dev) in [
        (leaf, 0x248a_0703_00f0_c0de, 0xcf08),
        (spine, 0x248a_0703_00f0_aaaa, 0xcf08),
        (hca, 0x0002_c903_00a1_b2c7, 0x1013),
    ] {
        let m = b.node_mut(n);
        m.sys_guid = sys;
        m.vendor_id = 0x2c9;
        m.device_id = dev;
        m.enhanced_sp0 = m.kind == NodeKind::Switch;
    }
    b.set_lid(leaf, 0, 3, 0).unwrap();
    b.set_lid(spine, 0, 2, 0).unwrap();
    b.set_lid(hca, 1, 5, 0).unwrap();
    b.connect(leaf, 1, hca, 1, Width::X4, Speed::Edr).unwrap();
    b.connect(leaf, 35, spine, 7, Width::X4, Speed::Edr)
        .unwrap();
    b.build().unwrap()
}

fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/writers")
        .join(name)
}

/// Compares `text` with a golden file; `FABROUTE_BLESS=1` rewrites the file instead.
fn golden(name: &str, text: &str) {
    let path = data_path(name);
    if std::env::var_os("FABROUTE_BLESS").is_some() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (FABROUTE_BLESS=1 writes it)", path.display()));
    assert!(
        text == want,
        "{} differs from the writer's output:\n{text}",
        path.display()
    );
}

#[test]
fn ibnetdiscover_matches_the_reference_example() {
    let text = to_ibnetdiscover(&reference_fabric());
    // The lines of the real ibnetdiscover excerpt, verbatim (tabs included), in order.
    let excerpt = [
        "#",
        "# Topology file: generated by fabroute",
        "#",
        "# Initiated from node 0002c90300a1b2c4 port 0002c90300a1b2c5",
        "",
        "vendid=0x2c9",
        "devid=0xcf08",
        "sysimgguid=0x248a070300f0c0de",
        "switchguid=0x248a070300f0c0de(248a070300f0c0de)",
        "Switch\t36 \"S-248a070300f0c0de\"\t\t# \"MF0;leaf01:MSB7700/U1\" enhanced port 0 lid 3 lmc 0",
        "[1]\t\"H-0002c90300a1b2c4\"[1](2c90300a1b2c5) \t\t# \"node01 HCA-1\" lid 5 4xEDR",
        "[35]\t\"S-248a070300f0aaaa\"[7]\t\t# \"MF0;spine01:MSB7700/U1\" lid 2 4xEDR",
        "",
    ];
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..excerpt.len()], &excerpt[..], "{text}");
    let ca = [
        "vendid=0x2c9",
        "devid=0x1013",
        "sysimgguid=0x2c90300a1b2c7",
        "caguid=0x2c90300a1b2c4",
        "Ca\t2 \"H-0002c90300a1b2c4\"\t\t# \"node01 HCA-1\"",
        "[1](2c90300a1b2c5) \t\"S-248a070300f0c0de\"[1]\t\t# lid 5 lmc 0 \"MF0;leaf01:MSB7700/U1\" lid 3 4xEDR",
    ];
    let at = lines
        .iter()
        .position(|l| *l == "devid=0x1013")
        .expect("CA record")
        - 1;
    assert_eq!(&lines[at..at + ca.len()], &ca[..], "{text}");
    golden("reference.ibnetdiscover", &text);
}

#[test]
fn golden_ibsim_and_json() {
    let f = reference_fabric();
    golden("reference.net", &to_ibsim(&f).unwrap());
    golden("reference.json", &to_json(&f));
    // The golden JSON reads back to the same fabric.
    let text = std::fs::read_to_string(data_path("reference.json")).unwrap();
    assert_eq!(read_json(&text).unwrap(), f);
}

#[test]
fn reference_round_trips_through_the_readers() {
    let f = reference_fabric();
    let text = to_ibnetdiscover(&f);
    let back = canonical_link_order(&read_ibnd(&text).unwrap()).unwrap();
    assert_same(
        &back,
        &normalise_ibnetdiscover(&f).unwrap(),
        &text,
        "ibnetdiscover",
    );
    let text = to_ibsim(&f).unwrap();
    let back = canonical_link_order(&read_ibsim(&text).unwrap()).unwrap();
    assert_same(&back, &normalise_ibsim(&f).unwrap(), &text, "ibsim");
    // Nothing but link order and hints is normalised away for this fabric in ibsim.
    assert_eq!(
        normalise_ibsim(&f).unwrap(),
        canonical_link_order(&f).unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// Writer details that do not need the readers.

/// A fabric with one node of each kind and all GUIDs zero.
fn zero_guid_fabric() -> Fabric {
    let mut b = FabricBuilder::new();
    let s = b.add_node(NodeKind::Switch, 4, 0, "sw", "").unwrap();
    let h = b.add_node(NodeKind::Ca, 2, 0, "hca", "").unwrap();
    let r = b.add_node(NodeKind::Router, 2, 0, "rt", "").unwrap();
    let s2 = b
        .add_node(NodeKind::Switch, 4, 0x20_0001, "sw2", "")
        .unwrap();
    b.connect(s, 1, h, 1, Width::X4, Speed::Sdr).unwrap();
    b.connect(s, 2, r, 1, Width::X4, Speed::Sdr).unwrap();
    b.connect(s, 3, s2, 3, Width::X4, Speed::Sdr).unwrap();
    b.build().unwrap()
}

#[test]
fn zero_guids_get_ibsims_guids() {
    let f = zero_guid_fabric();
    let text = to_ibsim(&f).unwrap();
    // The switch and the CA take ibsim's counters (no line); the router's counter starts at 0,
    // which is no GUID, so it gets 1 with an explicit line; sw2 is exactly where the switch
    // counter is, so it needs no line either.
    assert!(!text.contains("switchguid="), "{text}");
    assert!(!text.contains("caguid="), "{text}");
    assert!(text.contains("\nrtguid=0x1\nRt\t2 \"rt\""), "{text}");
    let n = normalise_ibsim(&f).unwrap();
    let guids: Vec<u64> = n.nodes.iter().map(|n| n.guid).collect();
    assert_eq!(guids, [0x20_0000, 0x10_0000, 1, 0x20_0001]);
    // CA port GUIDs follow: node + port.
    let h = n.node_by_name("hca").unwrap();
    assert_eq!(n.port(n.port_id(h, 2)).guid, 0x10_0002);
    // ibnetdiscover names come from the same GUIDs.
    let names: Vec<String> = normalise_ibnetdiscover(&f)
        .unwrap()
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "S-0000000000200000",
            "S-0000000000200001",
            "H-0000000000100000",
            "R-0000000000000001"
        ]
    );
}

#[test]
fn zero_guid_skips_used_values() {
    // A CA whose GUID is where ibsim's CA counter starts: the zero-GUID CA after it must not
    // take 0x100000..=0x100002 (its node GUID or port GUIDs).
    let mut b = FabricBuilder::new();
    b.add_node(NodeKind::Ca, 2, 0, "first", "").unwrap();
    b.add_node(NodeKind::Ca, 1, 0x10_0001, "taken", "").unwrap();
    let f = b.build().unwrap();
    let text = to_ibsim(&f).unwrap();
    let n = normalise_ibsim(&f).unwrap();
    let first = n.nodes[0].guid;
    assert!(
        first > 0x10_0002,
        "first got {first:#x}, overlapping 0x100001..0x100002\n{text}"
    );
    assert!(text.contains(&format!("caguid=0x{first:x}\n")), "{text}");
}

#[test]
fn ibsim_options_encode_width_and_speed() {
    let mut b = FabricBuilder::new();
    let s = b.add_node(NodeKind::Switch, 8, 0x20_0000, "s", "").unwrap();
    let h = b.add_node(NodeKind::Ca, 8, 0x10_0000, "h", "").unwrap();
    let cases = [
        (Width::X1, Speed::Ddr, "w=1 s=2"),
        (Width::X2, Speed::Qdr, "w=16 s=4"),
        (Width::X8, Speed::Fdr, "w=4 e=1"),
        (Width::X12, Speed::Edr, "w=8 e=2"),
        (Width::X4, Speed::Hdr, "e=4"),
        (Width::Unknown, Speed::Ddr, "s=2"),
    ];
    for (i, &(w, sp, _)) in cases.iter().enumerate() {
        let p = i as u8 + 1;
        b.connect(s, p, h, p, w, sp).unwrap();
    }
    b.connect(s, 7, h, 7, Width::X4, Speed::Sdr).unwrap();
    let f = b.build().unwrap();
    let text = to_ibsim(&f).unwrap();
    for (i, &(_, _, opts)) in cases.iter().enumerate() {
        let p = i + 1;
        assert!(
            text.contains(&format!("[{p}]\t\"h\"[{p}]\t{opts}\n")),
            "{text}"
        );
        let lid = f.port(f.port_id(h, p as u8)).lid;
        assert!(
            text.contains(&format!("[{p}]\t\"s\"[{p}]\t{opts}\t# lid {lid} lmc 0\n")),
            "{text}"
        );
    }
    assert!(text.contains("[7]\t\"h\"[7]\n"), "{text}");
}

#[test]
fn ibsim_refuses_bad_names() {
    for (name, why) in [
        ("a#b", "'#'"),
        ("a@b", "'@'"),
        ("a\"b", "'\"'"),
        ("", "empty"),
        ("tab\tname", "control"),
    ] {
        let mut b = FabricBuilder::new();
        b.add_node(NodeKind::Switch, 2, 1, name, "").unwrap();
        let f = b.build().unwrap();
        match to_ibsim_lossy(&f) {
            Err(e @ WriteError::BadName { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(why), "{name:?}: {msg}");
            }
            other => panic!("{name:?}: expected BadName, got {other:?}"),
        }
        assert!(to_ibsim(&f).is_err());
        // ibnetdiscover ids do not use names: always writable.
        assert!(to_ibnetdiscover(&f).contains("Switch\t2 \"S-0000000000000001\""));
    }
    let long = "n".repeat(65);
    let mut b = FabricBuilder::new();
    b.add_node(NodeKind::Switch, 2, 1, long.as_str(), "")
        .unwrap();
    let f = b.build().unwrap();
    assert!(matches!(to_ibsim(&f), Err(WriteError::BadName { .. })));
    let ok = "n".repeat(64);
    let mut b = FabricBuilder::new();
    b.add_node(NodeKind::Switch, 2, 1, ok.as_str(), "").unwrap();
    assert!(to_ibsim(&b.build().unwrap()).is_ok());
}

#[test]
fn strict_ibsim_reports_losses() {
    let mut b = FabricBuilder::new();
    let s = b
        .add_node(NodeKind::Switch, 4, 0x20_0000, "s", "long \"quoted\" desc")
        .unwrap();
    let h = b.add_node(NodeKind::Ca, 2, 0x10_0000, "h", "").unwrap();
    b.set_port_guid(h, 2, 0xdead).unwrap();
    b.set_lid(h, 2, 77, 0).unwrap();
    b.connect(s, 1, h, 1, Width::X4, Speed::Fdr10).unwrap();
    let f = b.build().unwrap();
    let (text, lost) = to_ibsim_lossy(&f).unwrap();
    let all = lost.join("\n");
    assert_eq!(lost.len(), 4, "{all}");
    assert!(all.contains("description"), "{all}");
    assert!(all.contains("GUID 0xdead becomes 0x100002"), "{all}");
    assert!(all.contains("LID 77"), "{all}");
    assert!(all.contains("FDR10 is written as QDR"), "{all}");
    assert!(text.contains("# \"long 'quoted' desc\""), "{text}");
    match to_ibsim(&f) {
        Err(WriteError::Lossy { count: 4, first }) => assert!(first.contains("description")),
        other => panic!("expected Lossy, got {other:?}"),
    }
    let n = normalise_ibsim(&f).unwrap();
    assert_eq!(n.port(n.port_id(h, 2)).guid, 0x10_0002);
    // NDR has no option Debian's ibsim accepts: written as HDR, and reported.
    let mut b = FabricBuilder::new();
    let s2 = b.add_node(NodeKind::Switch, 2, 0x20_0000, "s", "").unwrap();
    let h2 = b.add_node(NodeKind::Ca, 1, 0x10_0000, "h", "").unwrap();
    b.connect(s2, 1, h2, 1, Width::X4, Speed::Ndr).unwrap();
    let ndr = b.build().unwrap();
    let (text2, lost2) = to_ibsim_lossy(&ndr).unwrap();
    assert_eq!(lost2.len(), 1, "{lost2:?}");
    assert!(lost2[0].contains("NDR is written as HDR"), "{lost2:?}");
    assert!(text2.contains("[1]\t\"h\"[1]\te=4\n"), "{text2}");
    assert_eq!(normalise_ibsim(&ndr).unwrap().links[0].speed, Speed::Hdr);
    // XDR neither (ibsim has no bit for it at all).
    let mut b = FabricBuilder::new();
    let s3 = b.add_node(NodeKind::Switch, 2, 0x20_0000, "s", "").unwrap();
    let h3 = b.add_node(NodeKind::Ca, 1, 0x10_0000, "h", "").unwrap();
    b.connect(s3, 1, h3, 1, Width::X4, Speed::Xdr).unwrap();
    let xdr = b.build().unwrap();
    let (_, lost3) = to_ibsim_lossy(&xdr).unwrap();
    assert_eq!(lost3.len(), 1, "{lost3:?}");
    assert!(lost3[0].contains("XDR is written as HDR"), "{lost3:?}");
    assert_eq!(n.port(n.port_id(h, 2)).lid, 0);
    assert_eq!(n.links[0].speed, Speed::Qdr);
}

#[test]
fn ibsim_lines_stay_short() {
    let mut b = FabricBuilder::new();
    let name = "x".repeat(64);
    let s = b
        .add_node(
            NodeKind::Switch,
            254,
            0x20_0000,
            name.as_str(),
            "é".repeat(300),
        )
        .unwrap();
    let h = b
        .add_node(NodeKind::Ca, 1, 0x10_0000, "y".repeat(64), "")
        .unwrap();
    b.connect(s, 254, h, 1, Width::X12, Speed::Hdr).unwrap();
    b.set_lid(s, 0, 0xBFF0, 3).unwrap();
    let f = b.build().unwrap();
    let (text, lost) = to_ibsim_lossy(&f).unwrap();
    assert_eq!(lost.len(), 1, "{lost:?}");
    for line in text.lines() {
        assert!(line.len() <= IBSIM_MAX_LINE, "{} bytes: {line}", line.len());
    }
    assert_eq!(normalise_ibsim(&f).unwrap().nodes[0].desc, "é".repeat(64));
}

#[test]
fn vendor_device_and_sysimg_lines_are_unambiguous() {
    // ibsim keeps devid= for following nodes but resets vendid=/sysimgguid= after a node; the
    // writer repeats or resets them so that every node reads the same either way.
    let mut b = FabricBuilder::new();
    let a = b.add_node(NodeKind::Ca, 1, 0x10_0000, "a", "").unwrap();
    b.add_node(NodeKind::Ca, 1, 0x10_0002, "b", "").unwrap();
    b.add_node(NodeKind::Ca, 1, 0x10_0004, "c", "").unwrap();
    let m = b.node_mut(a);
    m.vendor_id = 0x2c9;
    m.device_id = 0x1013;
    m.sys_guid = 0x77;
    let f = b.build().unwrap();
    let text = to_ibsim(&f).unwrap();
    let records: Vec<&str> = text.split("\n\n").skip(1).collect();
    assert!(
        records[0].starts_with("vendid=0x2c9\ndevid=0x1013\nsysimgguid=0x77\nHca"),
        "{text}"
    );
    assert!(
        records[1].starts_with("vendid=0x0\ndevid=0x0\nsysimgguid=0x0\nHca"),
        "{text}"
    );
    assert!(records[2].starts_with("Hca"), "{text}");
}

#[test]
fn inconsistent_fabrics_are_errors_not_panics() {
    let good = reference_fabric();
    let breakers: [fn(&mut Fabric); 7] = [
        |f| {
            f.port_base.pop();
        },
        |f| f.ports.truncate(3),
        |f| f.links[0].a = PortId(9999),
        |f| f.ports[1].link = Some(LinkId(42)),
        |f| f.nodes[0].nports = 200,
        |f| {
            let b = f.links[0].b;
            f.links[1].b = b;
        },
        |f| f.ports[0].num = 9,
    ];
    for (i, brk) in breakers.iter().enumerate() {
        let mut f = good.clone();
        brk(&mut f);
        assert!(
            matches!(to_ibsim(&f), Err(WriteError::Inconsistent(_))),
            "case {i}"
        );
        assert!(normalise_ibsim(&f).is_err(), "case {i}");
        assert!(normalise_ibnetdiscover(&f).is_err(), "case {i}");
        assert!(canonical_link_order(&f).is_err(), "case {i}");
        let t = to_ibnetdiscover(&f);
        assert!(
            t.contains("# error: the fabric is inconsistent"),
            "case {i}: {t}"
        );
        let j = to_json(&f);
        let e = read_json(&j).unwrap_err();
        assert!(e.message.contains("write error"), "case {i}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// JSON reader errors.

fn json_err(text: &str) -> ParseError {
    match read_json(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn json_errors_name_the_problem_and_line() {
    let good = to_json(&reference_fabric());
    // Syntax error: serde's line.
    let broken = good.replacen("\"nports\": 36,", "\"nports\": 36", 1);
    let e = json_err(&broken);
    let line = broken
        .lines()
        .position(|l| l.contains("\"nports\": 36"))
        .unwrap()
        + 2;
    assert_eq!(e.line, line, "{e}");
    assert!(e.message.starts_with("bad fabric JSON"), "{e}");
    assert!(!e.message.contains(" at line "), "{e}");

    let e = json_err(&good.replacen("\"nports\": 36", "\"nports\": 36, \"colour\": 1", 1));
    assert!(e.message.contains("colour"), "{e}");
    let e = json_err(&good.replacen("\"version\": 1", "\"version\": 2", 1));
    assert!(e.message.contains("unsupported version 2"), "{e}");
    assert_eq!(e.line, 3);
    let e = json_err(&good.replacen("fabroute-fabric", "other", 1));
    assert!(e.message.contains("\"format\""), "{e}");
    let e = json_err(&good.replacen("\"leaf01[35]\"", "\"leaf01[99]\"", 1));
    assert!(e.message.contains("beyond its port count"), "{e}");
    let e = json_err(&good.replacen("\"leaf01[35]\"", "\"nosuch[1]\"", 1));
    assert!(e.message.contains("no node is named \"nosuch\""), "{e}");
    let e = json_err(&good.replacen("\"leaf01[35]\"", "\"leaf01\"", 1));
    assert!(e.message.contains("node[port]"), "{e}");
    let e = json_err(&good.replacen("\"speed\": \"EDR\"", "\"speed\": \"GDR\"", 1));
    assert!(e.message.contains("unknown speed"), "{e}");
    // Contradictions the builder finds: a name used twice, a LID used twice.
    let e = json_err(&good.replacen("\"name\": \"spine01\"", "\"name\": \"leaf01\"", 1));
    assert!(e.message.contains("duplicate node name"), "{e}");
    assert!(e.line > 0, "{e}");
    let e = json_err(&good.replacen("\"lid\": 2", "\"lid\": 3", 1));
    assert!(e.message.contains("claimed twice"), "{e}");
    // A GUID the builder could not give port GUIDs from.
    let e = json_err(&good.replacen("0x0002c90300a1b2c4", "0xffffffffffffffff", 1));
    assert!(e.message.contains("no room"), "{e}");
    // A link listed twice.
    let f = reference_fabric();
    let mut doc: serde_json::Value = serde_json::from_str(&to_json(&f)).unwrap();
    let l0 = doc["links"][0].clone();
    doc["links"].as_array_mut().unwrap().push(l0);
    let e = json_err(&serde_json::to_string_pretty(&doc).unwrap());
    assert!(e.message.contains("listed twice"), "{e}");
    // Hints that do not fit.
    let mut doc: serde_json::Value = serde_json::from_str(&to_json(&f)).unwrap();
    doc["hints"] = serde_json::json!({"kind": "x", "level": [0, 1]});
    let e = json_err(&serde_json::to_string_pretty(&doc).unwrap());
    assert!(
        e.message.contains("hints.level has 2 entries for 3 nodes"),
        "{e}"
    );
    // Not UTF-8.
    let e = json::read(b"{\n\xff}", "x.json").unwrap_err();
    assert_eq!(e.line, 2);
}

#[test]
fn json_accepts_hand_written_documents() {
    // Numbers for GUIDs, defaults for width/speed, no LIDs: the builder fills them in.
    let text = r#"{
      "format": "fabroute-fabric", "version": 1,
      "nodes": [
        {"kind": "switch", "name": "s[0]", "guid": 2097152, "nports": 2},
        {"kind": "ca", "name": "h", "guid": "0x100000", "nports": 1}
      ],
      "links": [ {"a": "s[0][1]", "b": "h[1]"} ]
    }"#;
    let f = read_json(text).unwrap();
    assert_eq!(f.nodes[0].guid, 0x20_0000);
    assert_eq!(f.links[0].width, Width::X4);
    assert_eq!(f.links[0].speed, Speed::Sdr);
    assert_eq!(f.port(f.port_id(NodeId(1), 1)).guid, 0x10_0001);
    assert!(f.switch_lid(NodeId(0)) != 0);
    // And the canonical form of it round trips exactly.
    assert_eq!(read_json(&to_json(&f)).unwrap(), f);
}

// ---------------------------------------------------------------------------------------------
// Generated fabrics (fabric::gen).

/// One small fabric of every generator kind, with options that change widths, speeds, LMC and
/// port counts, and a degraded one.
const GENERATED: &[&str] = &[
    "torus 4x4 hcas=2",
    "torus 3x3x2m lmc=1",
    "mesh 3x4 hcas=1 width=12x speed=EDR",
    "ktree 4 2",
    "ktree 4 3 fail-links=4 fail-seed=1",
    "xgft m=4,2 w=1,2 links=2",
    "leafspine leaves=4 spines=2 hosts=3 links=2 radix=16",
    "fourlevel sets=2 l0=2 l1=2 hcas=2 l3=2",
    "dragonfly 4 2 2",
    "dragonfly 2 1 1 arrangement=absolute speed=HDR width=2x",
    "slimfly 5",
    "hyperx 3x3 links=2 hcas=2",
    "randreg 12 4 seed=3 lmc=2",
];

fn generated() -> Vec<(&'static str, Fabric)> {
    GENERATED
        .iter()
        .map(|s| {
            let f = s
                .parse::<fabric::gen::TopoSpec>()
                .and_then(|t| t.generate())
                .unwrap_or_else(|e| panic!("{s}: {e}"));
            (*s, f)
        })
        .collect()
}

#[test]
fn generated_fabrics_round_trip_through_json() {
    for (spec, f) in generated() {
        let text = to_json(&f);
        let back = read_json(&text).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_same(&back, &f, "(json)", spec);
        assert!(!f.hints.kind.is_empty(), "{spec}: generators fill hints");
    }
}

/// The generators number nodes the way ibsim does, so the strict ibsim writer needs no GUID
/// lines and loses nothing; the fabric read back is the generated one without hints.
#[test]
fn generated_fabrics_are_ibsim_native() {
    for (spec, f) in generated() {
        let text = to_ibsim(&f).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let guid_lines = text.lines().filter(|l| {
            l.starts_with("switchguid=") || l.starts_with("caguid=") || l.starts_with("rtguid=")
        });
        assert_eq!(guid_lines.count(), 0, "{spec}: GUID lines written:\n{text}");
        let mut want = canonical_link_order(&f).unwrap();
        want.hints = TopoHints::default();
        assert_eq!(normalise_ibsim(&f).unwrap(), want, "{spec}");
    }
}

#[test]
fn generated_fabrics_round_trip_through_text() {
    for (spec, f) in generated() {
        let text = to_ibsim(&f).unwrap();
        let back = read_ibsim(&text).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let back = canonical_link_order(&back).unwrap();
        assert_same(&back, &normalise_ibsim(&f).unwrap(), &text, spec);
        let text = to_ibnetdiscover(&f);
        let back = read_ibnd(&text).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let back = canonical_link_order(&back).unwrap();
        assert_same(&back, &normalise_ibnetdiscover(&f).unwrap(), &text, spec);
    }
}

// ---------------------------------------------------------------------------------------------
// Debian's ibsim must accept what to_ibsim writes.

/// Fabrics for the ibsim acceptance test: the reference example, a fabric with routers, zero
/// GUIDs, every width and speed, multi-port HCAs and a loopback cable, and random ones.
/// The vendored real ibnetdiscover dumps (`tests/data/real`), by file stem.
fn real_dumps() -> Vec<(String, Fabric)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) == Some("ibnd") {
            let bytes = std::fs::read(&p).unwrap();
            let l = ibnetdiscover::read(&bytes, "real.ibnd", BuildOptions::default()).unwrap();
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((stem, l.fabric));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Every real dump can be written as an ibsim net file with `--lossy`: the file reads back to
/// the ibsim normal form of the dump (same nodes, names, cabling; GUIDs, speeds and
/// descriptions as listed in what was lost), and the strict writer refuses exactly those that
/// lose something.
#[test]
fn real_dumps_write_lossy_ibsim_files_that_read_back() {
    let dumps = real_dumps();
    assert!(dumps.len() >= 6);
    let mut moved = 0;
    for (name, f) in &dumps {
        let (text, lost) = to_ibsim_lossy(f).unwrap_or_else(|e| panic!("{name}: {e}"));
        moved += lost
            .iter()
            .filter(|l| l.contains("the port GUIDs ibsim derives from it would meet"))
            .count();
        match to_ibsim(f) {
            Ok(t) => assert!(lost.is_empty() && t == text, "{name}"),
            Err(WriteError::Lossy { count, .. }) => assert_eq!(count, lost.len(), "{name}"),
            Err(e) => panic!("{name}: strict writer: {e}"),
        }
        let want = normalise_ibsim(f).unwrap();
        let back = read_ibsim(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = canonical_link_order(&back).unwrap();
        assert_same(&back, &want, &text, name);
        // Names and cabling survive whatever was lost.
        assert_eq!(back.nodes.len(), f.nodes.len(), "{name}");
        assert_eq!(back.links.len(), f.links.len(), "{name}");
        for (a, b) in back.nodes.iter().zip(&f.nodes) {
            assert_eq!(a.name, b.name, "{name}");
        }
    }
    // Two of the dumps (Selene's storage fabric, the lab fabric) have CA nodes whose
    // consecutive node GUIDs meet ibsim's derived port GUIDs.
    assert!(moved >= 2, "{moved} nodes given fresh GUIDs");
}

fn ibsim_fabrics() -> Vec<(String, Fabric)> {
    let mut out = vec![("reference".to_string(), reference_fabric())];
    out.push(("zero-guids".into(), zero_guid_fabric()));

    let mut b = FabricBuilder::new();
    let s1 = b
        .add_node(NodeKind::Switch, 12, 0, "core 1", "core switch")
        .unwrap();
    let s2 = b
        .add_node(NodeKind::Switch, 12, 0x1234, "core-2", "")
        .unwrap();
    let h = b
        .add_node(NodeKind::Ca, 4, 0, "host:a", "host a HCA-1")
        .unwrap();
    let r = b
        .add_node(NodeKind::Router, 2, 0x9000, "gw", "router")
        .unwrap();
    let widths = [Width::X1, Width::X2, Width::X4, Width::X8, Width::X12];
    let speeds = [
        Speed::Sdr,
        Speed::Ddr,
        Speed::Qdr,
        Speed::Fdr,
        Speed::Edr,
        Speed::Hdr,
        Speed::Ndr,
    ];
    for p in 1..=7u8 {
        let w = widths[p as usize % widths.len()];
        b.connect(s1, p, s2, p, w, speeds[p as usize - 1]).unwrap();
    }
    b.connect(s1, 8, h, 1, Width::X4, Speed::Edr).unwrap();
    b.connect(s2, 8, h, 2, Width::X4, Speed::Edr).unwrap();
    b.connect(s1, 9, r, 1, Width::X4, Speed::Qdr).unwrap();
    b.connect(s2, 10, s2, 11, Width::X4, Speed::Sdr).unwrap();
    out.push(("kinds".into(), b.build().unwrap()));

    for (spec, f) in generated() {
        if spec.starts_with("dragonfly 4") || spec.starts_with("torus 3x3x2m") {
            out.push((spec.replace(' ', "_"), f));
        }
    }

    // Real dumps, written lossily (port GUIDs ibsim derives, FDR10, clashing GUIDs moved).
    for (name, f) in real_dumps() {
        if matches!(
            name.as_str(),
            "mellanox_lab_small_topo_hdr_edr_fdr_sharp_loopback" | "tartu_sx6036_fdr_8sw_144hca"
        ) {
            out.push((name, f));
        }
    }

    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = fabric_spec(true);
    while out.len() < 12 {
        let spec = strategy.new_tree(&mut runner).unwrap().current();
        if let Some(f) = build(&spec) {
            out.push((format!("random-{}", out.len()), f));
        }
    }
    out
}

#[test]
fn ibsim_accepts_written_files() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("ibsim").is_file()))
        .unwrap_or(false);
    if !found {
        if std::env::var_os("FABROUTE_NO_EXTERNAL_TOOLS").is_none() {
            panic!("ibsim is not on PATH: run scripts/install-test-deps.sh (or set FABROUTE_NO_EXTERNAL_TOOLS=1 to skip this test)");
        }
        eprintln!("SKIPPED (FABROUTE_NO_EXTERNAL_TOOLS) ibsim_accepts_written_files: ibsim is not on PATH");
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("writers-ibsim");
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for (i, (name, f)) in ibsim_fabrics().into_iter().enumerate() {
        let (text, _lost) = to_ibsim_lossy(&f).unwrap();
        let path = dir.join(format!("{name}.net"));
        std::fs::write(&path, &text).unwrap();
        let ports: usize = f
            .nodes
            .iter()
            .map(|n| n.nports as usize + usize::from(n.kind == NodeKind::Switch))
            .sum();
        let sock = format!("fabroute-wt-{}-{i}", std::process::id());
        let mut child = Command::new("ibsim")
            .args(["-s", "-n"])
            .args(["-N", &(f.nodes.len() + 1).to_string()])
            .args(["-S", &(f.num_switches() + 1).to_string()])
            .args(["-P", &(ports + 1).to_string()])
            .arg(&path)
            .env("IBSIM_SOCKNAME", &sock)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ibsim");
        let pid = child.id();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut seen = String::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                seen.push_str(&line);
                seen.push('\n');
                if line.contains("Network simulator ready") {
                    let _ = tx.send(true);
                }
            }
            seen
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut ready = false;
        while Instant::now() < deadline {
            if rx.recv_timeout(Duration::from_millis(100)).is_ok() {
                ready = true;
                break;
            }
            if let Ok(Some(_)) = child.try_wait() {
                ready = rx.try_recv().is_ok();
                break;
            }
        }
        let status = child.try_wait().ok().flatten();
        if status.is_none() {
            // Still running (accepted, or stuck): stop this ibsim by its own handle/PID.
            let _ = child.kill();
        }
        let _ = child.wait();
        let out = reader.join().unwrap_or_default();
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let err: Vec<&str> = err
            .lines()
            .filter(|l| {
                !l.contains("cannot parse remote lid and connection type")
                    && !l.contains("failed parsing port connection type")
            })
            .collect();
        if !ready {
            failures.push(format!(
                "ibsim (pid {pid}) did not accept {} ({name}), exit {status:?}:\n{out}{}\n--- file ---\n{text}",
                path.display(),
                err.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
