mod common;
use sim::*;
use fabric::*;
fn single(n: usize) -> Fabric {
    let mut b = FabricBuilder::new();
    let s = b.add_node(NodeKind::Switch, n as u8, 0x100, "sw", "").unwrap();
    for i in 0..n {
        let h = b.add_node(NodeKind::Ca, 1, 0x200 + i as u64, format!("h{i}"), "").unwrap();
        b.connect(h, 1, s, (i + 1) as u8, Width::X4, Speed::Sdr).unwrap();
    }
    b.build().unwrap()
}
#[test]
fn explore() {
    for n in [4usize, 8, 16, 32] {
        let f = single(n);
        let r = common::route(&f, "minhop");
        for (ib, ob) in [(1024u32, 64u32), (1024, 1024), (64, 64)] {
            let mut c = Config { t_end: 2000 * US, t_warmup: 200 * US, traffic: Traffic { load: 1.0, ..Traffic::default() }, ..Config::default() };
            c.model.in_buf_bytes = ib; c.model.out_buf_bytes = ob;
            let rep = simulate(&f, r.clone(), c, None).unwrap();
            eprintln!("single {n} in {ib} out {ob}: acc {:.3}", rep.accepted);
        }
    }
}
