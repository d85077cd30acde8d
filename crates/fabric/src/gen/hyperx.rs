//! HyperX: a Hamming graph of switches (every pair of switches differing in exactly one
//! coordinate is linked), with trunking.

use super::{check_size, gerr, join, mul, GenError, GenOptions, Plan};
use crate::model::Fabric;

/// HyperX with `L = dims.len()` dimensions of sizes `S1..SL`, `links` (K) parallel links between
/// every pair of switches that differ in exactly one coordinate, and `hcas` HCAs per switch.
///
/// Names `S_x_y_..` (coordinate order, first coordinate slowest), HCAs `H_x_y_.._k`.
/// Ports: `1..=hcas` HCAs; then dimension by dimension, for every other value `v` of that
/// coordinate in increasing order, `K` consecutive ports: switch `c` reaches `c` with coordinate
/// d set to `v` on ports `hcas + Σ_{e<d} (S_e − 1)·K + idx·K + 1 ..= … + K` where
/// `idx = v` if `v < c_d`, else `v − 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HyperXSpec {
    pub dims: Vec<u32>,
    pub links: u32,
    pub hcas: u32,
}

/// Generates a HyperX; see [`HyperXSpec`]. Hints: kind `hyperx 4x4 K=2`, coords, dims,
/// wrap (all false), link classes `host`, `dim0`, `dim1`, …
pub fn hyperx(spec: &HyperXSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let nd = spec.dims.len();
    let k = spec.links;
    let kind = format!("hyperx {} K={k}", join(&spec.dims, "x"));
    if !(1..=8).contains(&nd) {
        return gerr(format!(
            "{kind}: {nd} dimensions given, 1 to 8 are supported"
        ));
    }
    if let Some(d) = spec.dims.iter().position(|&s| s == 0) {
        return gerr(format!("{kind}: dimension {d} has size 0"));
    }
    if k == 0 {
        return gerr(format!("{kind}: links (K) must be at least 1"));
    }
    let mut n = 1u64;
    for &s in &spec.dims {
        n = mul(n, s as u64, &kind)?;
    }
    let nh = mul(n, spec.hcas as u64, &kind)?;
    check_size(&kind, n, nh, opts)?;
    let mut ports = spec.hcas as u64;
    let mut base = Vec::with_capacity(nd);
    for &s in &spec.dims {
        base.push(ports);
        ports += (s as u64 - 1) * k as u64;
        if ports > super::MAX_PORTS as u64 {
            return gerr(format!(
                "{kind}: switches need {ports} or more ports, more than {}",
                super::MAX_PORTS
            ));
        }
    }
    let classes: Vec<String> = (0..nd).map(|d| format!("dim{d}")).collect();
    let class_refs: Vec<&str> = classes.iter().map(|s| s.as_str()).collect();
    let mut plan = Plan::new(kind, &class_refs);
    plan.dims = spec.dims.clone();
    plan.wrap = vec![false; nd];
    let n = n as usize;
    let mut stride = vec![1usize; nd];
    for d in (0..nd - 1).rev() {
        stride[d] = stride[d + 1] * spec.dims[d + 1] as usize;
    }
    for i in 0..n {
        let c: Vec<u32> = (0..nd)
            .map(|d| ((i / stride[d]) % spec.dims[d] as usize) as u32)
            .collect();
        plan.add_switch(format!("S_{}", join(&c, "_")));
        plan.sw_coords.push(c);
    }
    for i in 0..n {
        for d in 0..nd {
            let cd = plan.sw_coords[i][d];
            for v in cd + 1..spec.dims[d] {
                let j = i + (v - cd) as usize * stride[d];
                // On i, v > cd: idx = v - 1; on j, cd < v: idx = cd.
                let pi = base[d] as u32 + (v - 1) * k;
                let pj = base[d] as u32 + cd * k;
                for t in 1..=k {
                    plan.link(i as u32, pi + t, j as u32, pj + t, d as u16 + 1);
                }
            }
        }
    }
    for i in 0..n {
        for t in 0..spec.hcas {
            let name = format!("H_{}_{t}", join(&plan.sw_coords[i], "_"));
            plan.add_hca(name, i as u32, t + 1);
        }
    }
    plan.finish(opts)
}
