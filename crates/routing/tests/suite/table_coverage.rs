//! Table files that leave part of the fabric out are counted, not taken silently: a path-SL
//! file without some (source, DLID) pairs, an SL2VL dump without some ports' blocks. And the
//! balance pass says the true reason it skips a fabric without inter-switch traffic.

use fabric::gen::{generate, TopoSpec};
use fabric::{Fabric, FaultMask};
use routing::engines::{by_name, RouteOptions};
use routing::opensm::{read_psl, read_sl2vl, write_psl, write_sl2vl};

fn fabric(spec: &str) -> Fabric {
    generate(&spec.parse::<TopoSpec>().unwrap()).unwrap()
}

fn dfsssp(f: &Fabric) -> routing::Routing {
    by_name("dfsssp")
        .unwrap()
        .route(f, &FaultMask::none(f), &RouteOptions::default())
        .unwrap()
}

#[test]
fn a_path_sl_file_cut_short_counts_the_pairs_it_lacks() {
    let f = fabric("torus 4x4 hcas=2");
    let r = dfsssp(&f);
    let full = write_psl(&f, &r.path_sl);
    let whole = read_psl(full.as_bytes(), "p.psl", &f).unwrap();
    assert_eq!(whole.missing_pairs, 0);
    assert!(whole.warnings.iter().all(|w| !w.contains("no path SL")));
    // every line is one (single-port source, DLID) pair
    let lines: Vec<&str> = full.lines().collect();
    let kept = lines.len() / 3;
    let cut = lines[..kept].join("\n");
    let part = read_psl(cut.as_bytes(), "p.psl", &f).unwrap();
    assert_eq!(part.missing_pairs as usize, lines.len() - kept);
    assert!(
        part.warnings
            .iter()
            .any(|w| w.contains(&format!("{} (source, DLID) pairs", lines.len() - kept))),
        "{:?}",
        part.warnings
    );
}

#[test]
fn an_sl2vl_dump_cut_short_counts_the_blocks_it_lacks() {
    let f = fabric("torus 4x4 hcas=2");
    let r = dfsssp(&f);
    let full = write_sl2vl(&f, &r.sl2vl);
    let whole = read_sl2vl(full.as_bytes(), "s.dump", &f).unwrap();
    assert_eq!((whole.missing_switches, whole.missing_end_ports), (0, 0));
    // keep the first four blocks
    let mut out = String::new();
    let mut blocks = 0;
    for l in full.lines() {
        if l.starts_with("Switch") || l.starts_with("Channel Adapter") {
            blocks += 1;
        }
        if blocks > 4 {
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    let part = read_sl2vl(out.as_bytes(), "s.dump", &f).unwrap();
    let total = f.num_switches() + f.end_ports.len();
    assert_eq!(part.missing_switches + part.missing_end_ports, total - 4);
    assert!(part.warnings.iter().any(|w| w.contains("no SL2VL block")));
}

#[test]
fn the_balance_pass_says_why_it_skips_a_single_switch() {
    let net = "Switch\t4 \"s\"\n[1]\t\"h1\"[1]\n[2]\t\"h2\"[1]\n\nHca\t1 \"h1\"\n[1]\t\"s\"[1]\n\nHca\t1 \"h2\"\n[1]\t\"s\"[2]\n";
    let mut none = |n: &str| Err(format!("no include ({n})"));
    let f = fabric::io::ibsim::read(net.as_bytes(), "one.net", &mut none, Default::default())
        .unwrap()
        .fabric;
    let routed = by_name("updn")
        .unwrap()
        .route_detailed(&f, &FaultMask::none(&f), &RouteOptions::default())
        .unwrap();
    let n = routed
        .notes
        .iter()
        .find(|n| n.contains("balance pass skipped"))
        .expect("a note says the pass was skipped");
    assert!(
        n.contains("no route crosses a link between switches"),
        "{n}"
    );
    assert!(!n.contains("entries of state"), "{n}");
    assert!(
        routed.notes.iter().any(|n| n.starts_with("1 root ")),
        "{:?}",
        routed.notes
    );
}
