//! Slim Fly: the McKay–Miller–Širáň (MMS) graphs of Besta & Hoefler (SC14).

use super::{check_size, gerr, GenError, GenOptions, Plan};
use crate::model::Fabric;

/// Slim Fly MMS graph for a prime power `q = 4w + δ`, δ ∈ {-1, 0, 1} (δ = 0 means q is a power
/// of 2): `2q²` routers `(s, a, b)`, s ∈ {0, 1}, a, b ∈ GF(q); network degree
/// `(3q − δ)/2`; diameter 2. With ξ the primitive element of GF(q):
/// - `(0,x,y) ~ (0,x,y')` iff `y − y' ∈ X`, `(1,m,c) ~ (1,m,c')` iff `c − c' ∈ X'`,
///   `(0,x,y) ~ (1,m,c)` iff `y = m·x + c`;
/// - δ = 1: X = {ξ^0, ξ^2, …, ξ^(q−3)}, X' = {ξ^1, ξ^3, …, ξ^(q−2)};
/// - δ = −1: X = {ξ^0, ξ^2, …, ξ^(2w−2)} ∪ {ξ^(2w−1), ξ^(2w+1), …, ξ^(4w−3)},
///   X' = {ξ^1, ξ^3, …, ξ^(2w−1)} ∪ {ξ^(2w), ξ^(2w+2), …, ξ^(4w−2)};
/// - δ = 0: X = {ξ^0, ξ^2, …, ξ^(q−2)}, X' = {ξ^1, ξ^3, …, ξ^(q−1)}.
///
/// For a prime q, GF(q) is the integers mod q and ξ the smallest primitive root, as in
/// gen_topo.py, so the fabric equals gen_topo's. For q = p^k (k > 1) elements are polynomials over
/// GF(p) numbered by their base-p digits (constant term lowest), reduced by the first monic
/// irreducible polynomial of degree k in that numbering; ξ is the smallest primitive element.
///
/// Names `S_<s>_<a>_<b>` (switch order s, a, b), HCAs `H_<s>_<a>_<b>_<t>`. Ports: `1..=p` HCAs,
/// then network ports in order of use, the edges taken in increasing (lower switch, higher
/// switch) order (gen_topo.py's layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlimFlySpec {
    pub q: u32,
    /// HCAs per router; `None` = ceil(degree / 2).
    pub p: Option<u32>,
}

/// A finite field GF(q) with elements `0..q`, as addition/multiplication tables.
struct Field {
    q: usize,
    add: Vec<u16>,
    mul: Vec<u16>,
    neg: Vec<u16>,
}

impl Field {
    fn add(&self, a: usize, b: usize) -> usize {
        self.add[a * self.q + b] as usize
    }
    fn mul(&self, a: usize, b: usize) -> usize {
        self.mul[a * self.q + b] as usize
    }
    fn sub(&self, a: usize, b: usize) -> usize {
        self.add(a, self.neg[b] as usize)
    }
}

/// `q = p^k` with p prime, or `None`.
fn prime_power(q: u32) -> Option<(u32, u32)> {
    if q < 2 {
        return None;
    }
    let mut p = 2;
    while p * p <= q && q / p * p != q {
        p += 1;
    }
    if q / p * p != q {
        p = q; // q itself is prime
    }
    let (mut r, mut k) = (q, 0);
    while r / p * p == r {
        r /= p;
        k += 1;
    }
    (r == 1).then_some((p, k))
}

/// Polynomial product of digit vectors (base p, constant term first) reduced by the monic
/// polynomial `modulus` (its k low coefficients; the leading 1 implied).
fn poly_mul(a: &[u32], b: &[u32], modulus: &[u32], p: u32) -> Vec<u32> {
    let k = modulus.len();
    let mut prod = vec![0u32; 2 * k];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            prod[i + j] = (prod[i + j] + x * y) % p;
        }
    }
    for d in (k..2 * k).rev() {
        let c = prod[d];
        if c != 0 {
            // x^d = x^(d-k) * x^k and x^k = -modulus
            prod[d] = 0;
            for (i, &m) in modulus.iter().enumerate() {
                prod[d - k + i] = (prod[d - k + i] + (p - m) * c) % p;
            }
        }
    }
    prod.truncate(k);
    prod
}

fn to_digits(mut e: usize, p: u32, k: usize) -> Vec<u32> {
    let mut v = vec![0u32; k];
    for d in v.iter_mut() {
        *d = (e % p as usize) as u32;
        e /= p as usize;
    }
    v
}

fn from_digits(v: &[u32], p: u32) -> usize {
    v.iter()
        .rev()
        .fold(0usize, |acc, &d| acc * p as usize + d as usize)
}

/// Smallest primitive element of the ring built with these tables, if it is a field.
fn primitive(q: usize, mul: &dyn Fn(usize, usize) -> usize) -> Option<usize> {
    'cand: for xi in 2..q {
        let mut x = 1usize;
        for _ in 1..q - 1 {
            x = mul(x, xi);
            if x == 1 || x == 0 {
                continue 'cand;
            }
        }
        if mul(x, xi) == 1 {
            return Some(xi);
        }
    }
    None
}

fn field(q: u32) -> Option<(Field, usize)> {
    let (p, k) = prime_power(q)?;
    let qs = q as usize;
    let k = k as usize;
    let (add, mul_t) = if k == 1 {
        let mut add = vec![0u16; qs * qs];
        let mut mul_t = vec![0u16; qs * qs];
        for a in 0..qs {
            for b in 0..qs {
                add[a * qs + b] = ((a + b) % qs) as u16;
                mul_t[a * qs + b] = ((a * b) % qs) as u16;
            }
        }
        (add, mul_t)
    } else {
        // Find a modulus making the ring a field (one with a primitive element).
        let mut found = None;
        for mcode in 0..qs {
            let modulus = to_digits(mcode, p, k);
            if modulus[0] == 0 {
                continue; // divisible by x
            }
            let m = |a: usize, b: usize| {
                from_digits(
                    &poly_mul(&to_digits(a, p, k), &to_digits(b, p, k), &modulus, p),
                    p,
                )
            };
            if primitive(qs, &m).is_some() {
                found = Some(modulus);
                break;
            }
        }
        let modulus = found?;
        let mut add = vec![0u16; qs * qs];
        let mut mul_t = vec![0u16; qs * qs];
        for a in 0..qs {
            let da = to_digits(a, p, k);
            for b in 0..qs {
                let db = to_digits(b, p, k);
                let s: Vec<u32> = da.iter().zip(&db).map(|(x, y)| (x + y) % p).collect();
                add[a * qs + b] = from_digits(&s, p) as u16;
                mul_t[a * qs + b] = from_digits(&poly_mul(&da, &db, &modulus, p), p) as u16;
            }
        }
        (add, mul_t)
    };
    let mut neg = vec![0u16; qs];
    for (a, n) in neg.iter_mut().enumerate() {
        *n = (0..qs).find(|&b| add[a * qs + b] == 0)? as u16;
    }
    let f = Field {
        q: qs,
        add,
        mul: mul_t,
        neg,
    };
    let xi = primitive(qs, &|a, b| f.mul(a, b))?;
    Some((f, xi))
}

/// Generates a Slim Fly; see [`SlimFlySpec`]. Hints: kind `slimfly(q=..,delta=..,k'=..,p=..)`,
/// coords `[s, a, b]`, `level` = subgraph s, link classes `host`, `intra` (same subgraph),
/// `inter`.
pub fn slimfly(spec: &SlimFlySpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let q = spec.q;
    // 2q² switches must fit the LID space: q ≤ 156.
    if !(3..=156).contains(&q) || prime_power(q).is_none() || q % 4 == 2 {
        return gerr(format!(
            "slimfly: q = {q} is not a prime power 4w+δ (δ ∈ {{-1,0,1}}) with 3 ≤ q ≤ 156 (2q² switches need LIDs); valid: 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, …"
        ));
    }
    let (delta, w): (i32, u32) = match q % 4 {
        1 => (1, (q - 1) / 4),
        3 => (-1, (q + 1) / 4),
        _ => (0, q / 4),
    };
    let kprime = ((3 * q as i64 - delta as i64) / 2) as u32;
    let p = spec.p.unwrap_or(kprime.div_ceil(2));
    let kind = format!("slimfly(q={q},delta={delta},k'={kprime},p={p})");
    let nsw = 2 * (q as u64) * (q as u64);
    check_size(&kind, nsw, nsw * p as u64, opts)?;
    if p as u64 + kprime as u64 > super::MAX_PORTS as u64 {
        return gerr(format!(
            "{kind}: routers need {} ports, more than {}",
            p + kprime,
            super::MAX_PORTS
        ));
    }
    let Some((f, xi)) = field(q) else {
        return gerr(format!("{kind}: internal error: no field GF({q}) found"));
    };
    let (xe, xpe): (Vec<u32>, Vec<u32>) = match delta {
        1 => (
            (0..q - 2).step_by(2).collect(),
            (1..q - 1).step_by(2).collect(),
        ),
        -1 => (
            (0..2 * w - 1)
                .step_by(2)
                .chain((2 * w - 1..4 * w - 2).step_by(2))
                .collect(),
            (1..2 * w)
                .step_by(2)
                .chain((2 * w..4 * w - 1).step_by(2))
                .collect(),
        ),
        _ => ((0..q - 1).step_by(2).collect(), (1..q).step_by(2).collect()),
    };
    let pow = |e: u32| (0..e).fold(1usize, |x, _| f.mul(x, xi));
    let qs = q as usize;
    let mut in_x = vec![false; qs];
    let mut in_xp = vec![false; qs];
    for &e in &xe {
        in_x[pow(e)] = true;
    }
    for &e in &xpe {
        in_xp[pow(e)] = true;
    }
    let id = |s: usize, a: usize, b: usize| (s * qs * qs + a * qs + b) as u32;
    let mut edges: Vec<(u32, u32, u16)> = Vec::new();
    for x in 0..qs {
        for y in 0..qs {
            for y2 in 0..qs {
                if y != y2 && in_x[f.sub(y, y2)] {
                    let (u, v) = (id(0, x, y), id(0, x, y2));
                    edges.push((u.min(v), u.max(v), 1));
                }
            }
        }
    }
    for m in 0..qs {
        for c in 0..qs {
            for c2 in 0..qs {
                if c != c2 && in_xp[f.sub(c, c2)] {
                    let (u, v) = (id(1, m, c), id(1, m, c2));
                    edges.push((u.min(v), u.max(v), 1));
                }
            }
        }
    }
    for x in 0..qs {
        for y in 0..qs {
            for m in 0..qs {
                let c = f.sub(y, f.mul(m, x));
                edges.push((id(0, x, y), id(1, m, c), 2));
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let mut plan = Plan::new(kind.clone(), &["intra", "inter"]);
    for s in 0..2u32 {
        for a in 0..q {
            for b in 0..q {
                plan.add_switch(format!("S_{s}_{a}_{b}"));
                plan.sw_coords.push(vec![s, a, b]);
                plan.sw_level.push(s);
            }
        }
    }
    for np in plan.next_port.iter_mut() {
        *np = p + 1;
    }
    let mut degree = vec![0u32; nsw as usize];
    for &(u, v, c) in &edges {
        degree[u as usize] += 1;
        degree[v as usize] += 1;
        plan.link_auto(u, v, c);
    }
    if let Some(bad) = degree.iter().find(|&&d| d != kprime) {
        return gerr(format!(
            "{kind}: internal error: network degree {bad}, expected {kprime}"
        ));
    }
    for i in 0..nsw as u32 {
        let (s, a, b) = (
            i as usize / (qs * qs),
            (i as usize / qs) % qs,
            i as usize % qs,
        );
        for t in 0..p {
            plan.add_hca(format!("H_{s}_{a}_{b}_{t}"), i, t + 1);
        }
    }
    plan.finish(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_fields() {
        for q in [4u32, 5, 7, 8, 9, 16, 25, 27, 32, 49] {
            let (f, xi) = field(q).unwrap();
            let qs = q as usize;
            // ξ generates every non-zero element.
            let mut seen = vec![false; qs];
            let mut x = 1;
            for _ in 0..qs - 1 {
                seen[x] = true;
                x = f.mul(x, xi);
            }
            assert_eq!(x, 1, "q={q}");
            assert!(seen[1..].iter().all(|&s| s), "q={q}");
            // distributivity on a sample
            for a in 0..qs {
                for b in 0..qs {
                    let c = (a * 7 + b) % qs;
                    assert_eq!(
                        f.mul(a, f.add(b, c)),
                        f.add(f.mul(a, b), f.mul(a, c)),
                        "q={q}"
                    );
                }
            }
        }
        assert_eq!(field(5).unwrap().1, 2);
        assert_eq!(field(7).unwrap().1, 3);
        assert!(prime_power(12).is_none());
        assert_eq!(prime_power(27), Some((3, 3)));
    }
}
