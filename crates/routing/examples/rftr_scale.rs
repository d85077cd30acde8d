//! Times RFTR's single-fault repair alone on one generated fabric, without the CLI around it:
//! `cargo run --release -p fabroute-routing --example rftr_scale -- "ktree 24 3" 0 8`
//! (spec, LMC, faults). Each fault is applied to a fresh clone of the fault-free state
//! (`COLD=1`: with the caches filled with other data first).
use fabric::gen::TopoSpec;
use fabric::FaultMask;
use routing::engines::{by_name, RouteOptions};
use routing::fault::sweep::switch_links;
use routing::fault::{base_rule, Fault, Rftr, RftrConfig};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let spec = args.get(1).map_or("ktree 16 3", |s| s.as_str());
    let lmc: u8 = args.get(2).map_or(0, |s| s.parse().expect("LMC"));
    let k: usize = args.get(3).map_or(8, |s| s.parse().expect("faults"));
    let reps: usize = args.get(4).map_or(1, |s| s.parse().expect("reps"));
    let f = spec
        .parse::<TopoSpec>()
        .and_then(|s| s.generate())
        .expect("spec")
        .with_lmc(lmc)
        .expect("lmc");
    let engine = by_name("updn").expect("updn");
    let opts = engine
        .pin_choices(&f, &RouteOptions::default())
        .expect("roots");
    let t = Instant::now();
    let base = engine.route(&f, &FaultMask::none(&f), &opts).expect("base");
    let rule = base_rule(&f, engine.as_ref(), &opts).expect("rule");
    // DEVIATE_LATE=0: the tie-break before `RftrConfig::deviate_late`.
    let cfg = RftrConfig {
        deviate_late: std::env::var("DEVIATE_LATE").map_or(true, |v| v != "0"),
        ..RftrConfig::default()
    };
    let start = Rftr::new(&f, &base, rule, cfg).expect("rftr");
    eprintln!("start {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let (paths, hops) = start.table_size();
    eprintln!("{paths} paths, {hops} hops");
    for (part, bytes) in start.memory() {
        eprintln!("  {part}: {:.1} MB", bytes as f64 / 1e6);
    }
    let links = switch_links(&f);
    let step = (links.len() / k.max(1)).max(1);
    let only: Option<usize> = std::env::var("FAULT")
        .ok()
        .map(|v| v.parse().expect("FAULT"));
    // LINK=a,b,… (ends of switch links as `fault` names them, e.g. S_10_1_1/8): those links.
    let named = std::env::var("LINK").ok();
    let picked: Vec<_> = match &named {
        Some(n) => n
            .split(',')
            .filter_map(|n| {
                links.iter().copied().find(|&l| {
                    let name = fabric::link_name(&f, l);
                    name.split('-').any(|end| end == n)
                })
            })
            .collect(),
        None => links.iter().copied().step_by(step).take(k).collect(),
    };
    // COLD=1: the caches are filled with other data before each repair, as after the
    // start in a `fault` run (the repair reads its state cold, not from the last repetition).
    let cold = std::env::var("COLD").is_ok_and(|v| v != "0");
    let mut sweep = if cold {
        vec![0u64; 1 << 24]
    } else {
        Vec::new()
    };
    for (i, &l) in picked.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        for _ in 0..reps {
            let mut r = start.clone();
            if cold {
                evict_caches(&mut sweep);
            }
            let faults0 = minor_faults();
            let t = Instant::now();
            let rep = r.apply(Fault::Link(l));
            let el = t.elapsed();
            let faults = minor_faults() - faults0;
            // The bookkeeping the repair left for after its delta (`Rftr::settle`).
            let t = Instant::now();
            r.settle();
            let settle = t.elapsed();
            println!(
                "{}: {:.2} ms (then {:.2} ms to settle), {} pairs, {} unsupported, {} LFT entries, {} minor page faults",
                fabric::link_name(&f, l),
                el.as_secs_f64() * 1e3,
                settle.as_secs_f64() * 1e3,
                rep.affected_pairs,
                rep.unsupported_pairs,
                r.delta.counts().lft_entries,
                faults
            );
        }
    }
}

/// Minor page faults of this process so far (Linux; 0 elsewhere).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit(')').next()?.to_string();
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Writes and reads a buffer (128 MB) larger than the last-level cache.
fn evict_caches(buf: &mut [u64]) {
    for (i, x) in buf.iter_mut().enumerate() {
        *x = x.wrapping_add(i as u64);
    }
    std::hint::black_box(buf.iter().fold(0u64, |a, &x| a ^ x));
}
