//! What a multicast join costs the SM's SA handler on a generated fabric (routing the
//! group's tree again, no MADs): `cargo run --release -p fabroute-sm --example join_cost --
//! "ktree 16 3" [GROUPS] [JOINS]`. Hosts join GROUPS groups (round robin) one request at a
//! time; prints the median and greatest time per join and the largest link load.
use fabric::FaultMask;
use mad::records::{join_state, McMemberRecord};
use mad::sa::{method, sa_attr, Gid, SaRequest, DEFAULT_GID_PREFIX};
use routing::engines::{by_name, RouteOptions};
use sm::mcast::McastState;
use sm::mlid::MlidPool;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let spec = args.get(1).map_or("ktree 16 3", |s| s.as_str());
    let groups: u128 = args.get(2).map_or(100, |s| s.parse().expect("GROUPS"));
    let joins: usize = args.get(3).map_or(2000, |s| s.parse().expect("JOINS"));
    let f = spec
        .parse::<fabric::gen::TopoSpec>()
        .and_then(|s| s.generate())
        .expect("spec");
    let e = by_name("updn").expect("updn");
    let opts = e.pin_choices(&f, &RouteOptions::default()).expect("roots");
    // Every port 4x QDR with a 4096-byte MTU, as a bring-up would have read.
    let mut pi = mad::attr::PortInfo::default();
    pi.set_mtu_cap(5);
    pi.set_link_width_active(2);
    pi.set_link_speed_active(4);
    let port_info = vec![pi; f.ports.len()];
    let t = Instant::now();
    let mut mc = McastState::start(
        &f,
        e.as_ref(),
        &opts,
        vec![],
        MlidPool::new(0xfffe),
        &port_info,
    )
    .expect("start");
    eprintln!("start {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let mask = FaultMask::none(&f);
    let mut times = Vec::with_capacity(joins);
    for i in 0..joins {
        let p = f.end_ports[(i * 7919) % f.end_ports.len()];
        let rec = McMemberRecord {
            mgid: 0xff12_1234_0000_0000_0000_0000_0000_0000 | (1 + i as u128 % groups),
            port_gid: Gid {
                prefix: DEFAULT_GID_PREFIX,
                guid: f.port(p).guid,
            },
            qkey: 0x0b1b,
            pkey: 0xffff,
            join_state: join_state::FULL,
            ..Default::default()
        };
        let req = SaRequest::new(
            method::SET,
            sa_attr::MCMEMBER_RECORD,
            i as u64,
            sm::sa_mcast::CREATE_MASK | sm::sa_mcast::JOIN_MASK,
            &rec.encode(),
        );
        let t = Instant::now();
        let a = mc.serve(&f, &mask, &port_info, &req, Some(p));
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(a.status, 0, "join {i}");
    }
    let mut s = times.clone();
    s.sort_by(f64::total_cmp);
    let load = mc.mfts().groups.len();
    println!(
        "{spec}: {joins} joins into {load} groups: median {:.3} ms, max {:.3} ms per join",
        s[s.len() / 2],
        s[s.len() - 1]
    );
}
