//! N-dimensional tori and meshes (gen_topo.py's `torus` / `mesh`).

use super::{check_size, gerr, join, mul, GenError, GenOptions, Plan};
use crate::model::Fabric;

/// An N-dimensional torus, mesh or mix of the two.
///
/// - Switches `S_x_y_..` in coordinate order (the first coordinate varies slowest); HCAs
///   `H_x_y_.._k`, `hcas` per switch.
/// - Ports: `1..=hcas` HCAs; dimension `d` uses port `hcas + 2d + 1` for the `+` direction and
///   `hcas + 2d + 2` for the `-` direction; a `+` port is always cabled to the neighbour's `-`
///   port (gen_topo.py's layout, what OpenSM's DOR expects). Dimensions of size 1 keep their
///   (unused) port numbers.
/// - A wrapped dimension of size 2 gets, like gen_topo.py, **two parallel links** between the two
///   switches (`+`→`-` both ways), unless `k2_single_link` is set: then only the link from
///   coordinate 0's `+` port to coordinate 1's `-` port exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TorusSpec {
    /// Sizes of the dimensions (1..=6 of them, each ≥ 1).
    pub dims: Vec<u32>,
    /// Per dimension: wrap-around links (torus) or not (mesh). Same length as `dims`.
    pub wrap: Vec<bool>,
    /// HCAs per switch.
    pub hcas: u32,
    /// Radix-2 wrapped dimensions: one link instead of two parallel ones.
    pub k2_single_link: bool,
}

impl TorusSpec {
    /// A torus (every dimension wrapped).
    pub fn torus(dims: &[u32], hcas: u32) -> TorusSpec {
        TorusSpec {
            dims: dims.to_vec(),
            wrap: vec![true; dims.len()],
            hcas,
            k2_single_link: false,
        }
    }
    /// A mesh (no dimension wrapped).
    pub fn mesh(dims: &[u32], hcas: u32) -> TorusSpec {
        TorusSpec {
            wrap: vec![false; dims.len()],
            ..TorusSpec::torus(dims, hcas)
        }
    }
}

/// Generates a torus/mesh; see [`TorusSpec`]. Hints: kind `torus 4x4` / `mesh 4x4` (a mix is
/// written `torus 4x4m`, `m` marking unwrapped dimensions), coords, dims, wrap, link classes
/// `host`, `dim0`, `dim1`, …
pub fn torus(spec: &TorusSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let nd = spec.dims.len();
    if !(1..=6).contains(&nd) {
        return gerr(format!(
            "torus/mesh: {nd} dimensions given, 1 to 6 are supported"
        ));
    }
    if spec.wrap.len() != nd {
        return gerr(format!(
            "torus/mesh: {} wrap flags for {nd} dimensions",
            spec.wrap.len()
        ));
    }
    if let Some(d) = spec.dims.iter().position(|&k| k == 0) {
        return gerr(format!("torus/mesh: dimension {d} has size 0"));
    }
    let all_wrap = spec.wrap.iter().all(|&w| w);
    let no_wrap = spec.wrap.iter().all(|&w| !w);
    let what = if no_wrap { "mesh" } else { "torus" };
    let dims_s = spec
        .dims
        .iter()
        .zip(&spec.wrap)
        .map(|(k, &w)| {
            if w || no_wrap {
                k.to_string()
            } else {
                format!("{k}m")
            }
        })
        .collect::<Vec<_>>()
        .join("x");
    let kind = if all_wrap || no_wrap {
        format!("{what} {}", join(&spec.dims, "x"))
    } else {
        format!("torus {dims_s}")
    };
    let mut n: u64 = 1;
    for &k in &spec.dims {
        n = mul(n, k as u64, &kind)?;
    }
    let hcas_total = mul(n, spec.hcas as u64, &kind)?;
    check_size(&kind, n, hcas_total, opts)?;
    let h = spec.hcas;
    if h as u64 + 2 * nd as u64 > super::MAX_PORTS as u64 {
        return gerr(format!(
            "{kind}: {h} HCAs per switch plus {} dimension ports exceed {} ports",
            2 * nd,
            super::MAX_PORTS
        ));
    }
    let classes: Vec<String> = (0..nd).map(|d| format!("dim{d}")).collect();
    let class_refs: Vec<&str> = classes.iter().map(|s| s.as_str()).collect();
    let mut plan = Plan::new(kind, &class_refs);
    plan.dims = spec.dims.clone();
    plan.wrap = spec.wrap.clone();
    let n = n as usize;
    // strides: first coordinate slowest
    let mut stride = vec![1usize; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * spec.dims[d + 1] as usize;
    }
    let coord_of = |i: usize| -> Vec<u32> {
        (0..nd)
            .map(|d| ((i / stride[d]) % spec.dims[d] as usize) as u32)
            .collect()
    };
    plan.sw_names.reserve(n);
    plan.sw_coords.reserve(n);
    for i in 0..n {
        let c = coord_of(i);
        plan.add_switch(format!("S_{}", join(&c, "_")));
        plan.sw_coords.push(c);
    }
    for i in 0..n {
        for (d, &k) in spec.dims.iter().enumerate() {
            if k == 1 {
                continue;
            }
            let cd = plan.sw_coords[i][d];
            if cd == k - 1 && !spec.wrap[d] {
                continue;
            }
            if k == 2 && cd == 1 && spec.k2_single_link {
                continue;
            }
            let nb_cd = (cd + 1) % k;
            let j = i - cd as usize * stride[d] + nb_cd as usize * stride[d];
            let pplus = h + 2 * d as u32 + 1;
            plan.link(i as u32, pplus, j as u32, pplus + 1, d as u16 + 1);
        }
    }
    plan.hcas.reserve(n * h as usize);
    for i in 0..n {
        for k in 0..h {
            let name = format!("H_{}_{k}", join(&plan.sw_coords[i], "_"));
            plan.add_hca(name, i as u32, k + 1);
        }
    }
    plan.finish(opts)
}
