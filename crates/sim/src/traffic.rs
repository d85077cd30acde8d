//! Traffic: who sends to whom, packet sizes and generation gaps. Every host has its own
//! random stream (seeded from the run's seed and the host's index), so the traffic a host
//! offers does not depend on what the network does: two runs with the same seed and
//! different tables or repair schemes see the same packets generated at the same times.

use crate::config::{Arrival, Pattern, SizeDist, Traffic};
use fabric::rng::Rng;

/// Destination choice of one sending host.
#[derive(Clone, Debug)]
pub(crate) enum Dest {
    /// Uniform over every other host.
    Uniform,
    /// Always this host index.
    Fixed(u32),
    /// One of these, uniformly.
    Among(Vec<u32>),
    /// To `hot` with probability `p`, else uniform over the others.
    Hot { hot: u32, p: f64 },
}

/// The per-host destination rules of a pattern over `n` hosts (`None`: the host does not
/// send). Random choices come from `Rng::new(seed)` and nothing else.
pub(crate) fn destinations(
    pattern: &Pattern,
    n: usize,
    seed: u64,
    host_of_ep: &dyn Fn(u32) -> Option<u32>,
) -> Vec<Option<Dest>> {
    let mut rng = Rng::new(seed ^ 0x7061_7474_6572_6e00);
    match pattern {
        Pattern::Uniform => vec![Some(Dest::Uniform); n],
        Pattern::Permutation => {
            let mut p: Vec<u32> = (0..n as u32).collect();
            // Sattolo's algorithm: a uniformly random cyclic permutation (no fixed points).
            for i in (1..n).rev() {
                let j = rng.below(i as u64) as usize;
                p.swap(i, j);
            }
            p.into_iter().map(|d| Some(Dest::Fixed(d))).collect()
        }
        Pattern::Bisect { both_ways } => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            rng.shuffle(&mut order);
            let mut v = vec![None; n];
            for pair in order.chunks_exact(2) {
                let (a, b) = (pair[0], pair[1]);
                v[b as usize] = Some(Dest::Fixed(a));
                if *both_ways {
                    v[a as usize] = Some(Dest::Fixed(b));
                }
            }
            v
        }
        Pattern::Hotspot { hot, fraction } => {
            let hot = hot.unwrap_or(0).min(n.saturating_sub(1) as u32);
            vec![
                Some(Dest::Hot {
                    hot,
                    p: fraction.clamp(0.0, 1.0)
                });
                n
            ]
        }
        Pattern::Flows(flows) => {
            let mut per: Vec<Vec<u32>> = vec![Vec::new(); n];
            for &(s, d) in flows {
                if let (Some(s), Some(d)) = (host_of_ep(s), host_of_ep(d)) {
                    if s != d {
                        per[s as usize].push(d);
                    }
                }
            }
            per.into_iter()
                .map(|v| match v.len() {
                    0 => None,
                    1 => Some(Dest::Fixed(v[0])),
                    _ => Some(Dest::Among(v)),
                })
                .collect()
        }
    }
}

/// Picks a destination host for host `me` of `n`.
#[inline]
pub(crate) fn pick(d: &Dest, me: u32, n: u32, rng: &mut Rng) -> u32 {
    let other = |rng: &mut Rng| {
        let x = rng.below(n as u64 - 1) as u32;
        if x >= me {
            x + 1
        } else {
            x
        }
    };
    match d {
        Dest::Uniform => other(rng),
        Dest::Fixed(x) => *x,
        Dest::Among(v) => v[rng.below(v.len() as u64) as usize],
        Dest::Hot { hot, p } => {
            if *hot != me && rng.unit() < *p {
                *hot
            } else {
                other(rng)
            }
        }
    }
}

/// Draws a packet size.
#[inline]
pub(crate) fn size(s: &SizeDist, rng: &mut Rng) -> u16 {
    match s {
        SizeDist::Fixed(b) => *b,
        SizeDist::Uniform { min, max } => *min + rng.below((*max - *min) as u64 + 1) as u16,
        SizeDist::Choice(v) => {
            let total: f64 = v.iter().map(|x| x.1).sum();
            let mut u = rng.unit() * total;
            for &(b, w) in v {
                if u < w {
                    return b;
                }
                u -= w;
            }
            v.last().map(|x| x.0).unwrap_or(64)
        }
    }
}

/// Gap to the next generated packet at a host whose link takes `ps_per_byte`: Bernoulli in
/// slots of the mean packet time, or exponential (rounded to whole bytes' time, at least one
/// byte). `None` when the load is zero.
#[inline]
pub(crate) fn gap(t: &Traffic, ps_per_byte: u64, mean_bytes: u64, rng: &mut Rng) -> Option<u64> {
    let load = t.load;
    if load <= 0.0 {
        return None;
    }
    let slot = mean_bytes * ps_per_byte;
    match t.arrival {
        Arrival::Bernoulli => {
            if load >= 1.0 {
                return Some(slot);
            }
            // Geometric number of slots, at least one.
            let u = 1.0 - rng.unit(); // (0, 1]
            let k = (u.ln() / (1.0 - load).ln()).floor() as u64 + 1;
            Some(k.saturating_mul(slot))
        }
        Arrival::Poisson => {
            let u = 1.0 - rng.unit();
            let mean_bytes_gap = mean_bytes as f64 / load;
            let bytes = (-u.ln() * mean_bytes_gap).round().max(1.0) as u64;
            Some(bytes.saturating_mul(ps_per_byte))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_what_they_say() {
        let n = 10;
        let none = |_| None;
        let perm = destinations(&Pattern::Permutation, n, 3, &none);
        let mut seen = vec![false; n];
        for (i, d) in perm.iter().enumerate() {
            let Some(Dest::Fixed(x)) = d else { panic!() };
            assert_ne!(*x as usize, i, "no fixed point");
            assert!(!seen[*x as usize], "each host receives once");
            seen[*x as usize] = true;
        }
        let bis = destinations(&Pattern::Bisect { both_ways: false }, n, 3, &none);
        assert_eq!(bis.iter().filter(|d| d.is_some()).count(), n / 2);
        let fb = destinations(&Pattern::Bisect { both_ways: true }, n, 3, &none);
        assert_eq!(fb.iter().filter(|d| d.is_some()).count(), n);
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            assert_ne!(pick(&Dest::Uniform, 4, n as u32, &mut rng), 4);
        }
        let hot = Dest::Hot { hot: 2, p: 0.5 };
        let k = (0..10_000)
            .filter(|_| pick(&hot, 0, n as u32, &mut rng) == 2)
            .count();
        // 0.5 + 0.5/9 of the packets.
        assert!((k as f64 / 10_000.0 - 0.5556).abs() < 0.03, "{k}");
    }

    #[test]
    fn gaps_give_the_load() {
        for arrival in [Arrival::Bernoulli, Arrival::Poisson] {
            let t = Traffic {
                load: 0.3,
                arrival,
                ..Traffic::default()
            };
            let mut rng = Rng::new(9);
            let n = 200_000u64;
            let total: u64 = (0..n).map(|_| gap(&t, 4000, 58, &mut rng).unwrap()).sum();
            let load = (n * 58 * 4000) as f64 / total as f64;
            assert!((load - 0.3).abs() < 0.005, "{arrival:?}: {load}");
        }
    }
}
