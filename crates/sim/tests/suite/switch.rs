//! One switch alone (specification V3, V4): head-of-line blocking with one VL gives Karol's
//! saturation; one VL per destination (as virtual output queues) removes it.

use fabric::{Fabric, FabricBuilder, NodeKind, Speed, Width};
use routing::tables::PathSl;
use routing::Routing;
use sim::*;

fn single(n: usize) -> (Fabric, Routing) {
    let mut b = FabricBuilder::new();
    let s = b
        .add_node(NodeKind::Switch, n as u8, 0x100, "sw", "")
        .unwrap();
    for i in 0..n {
        let h = b
            .add_node(NodeKind::Ca, 1, 0x200 + i as u64, format!("h{i}"), "")
            .unwrap();
        b.connect(h, 1, s, (i + 1) as u8, Width::X4, Speed::Sdr)
            .unwrap();
    }
    let f = b.build().unwrap();
    let mut r = Routing::empty(&f);
    for (i, &p) in f.end_ports.iter().enumerate() {
        r.lft_of_mut(fabric::SwitchIdx(0))[f.port(p).lid as usize] = (i + 1) as u8;
    }
    (f, r)
}

fn saturate(f: &Fabric, r: &Routing, out_buf: u32) -> f64 {
    let mut c = Config {
        t_end: 2 * MS,
        t_warmup: 200 * US,
        ..Config::default()
    };
    c.traffic.load = 1.0;
    c.model.out_buf_bytes = out_buf;
    let rep = simulate(f, r.clone(), c, None).unwrap();
    assert!(!rep.deadlock);
    rep.accepted
}

/// V3: N x N, 1 VL, room for one packet at each output, uniform at offered 1.0: 0.655 (N=4),
/// 0.618 (N=8), towards 0.586 (Karol, Hluchyj and Morgan, 1987), within a few per cent.
#[test]
fn v3_head_of_line_blocking_matches_karol() {
    for (n, karol) in [(4usize, 0.655), (8, 0.618), (32, 0.586)] {
        let (f, r) = single(n);
        let acc = saturate(&f, &r, 64);
        assert!((acc / karol - 1.0).abs() < 0.06, "N={n}: {acc} vs {karol}");
    }
}

/// V4: the same switch with one VL per destination (path SL = destination, identity SL2VL):
/// no head-of-line blocking, saturation above 0.9.
#[test]
fn v4_a_vl_per_destination_removes_hol_blocking() {
    let n = 8;
    let (f, mut r) = single(n);
    let mut per = vec![0u8; f.max_lid() as usize + 1];
    for (i, &p) in f.end_ports.iter().enumerate() {
        per[f.port(p).lid as usize] = i as u8;
    }
    r.path_sl = PathSl::PerDest(per);
    let acc = saturate(&f, &r, 1024);
    assert!(acc > 0.9, "{acc}");
    let (f1, r1) = single(n);
    assert!(acc > saturate(&f1, &r1, 1024) + 0.2);
}
