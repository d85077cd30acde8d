//! Dragonfly(a, p, h) with full-mesh groups.

use super::{check_size, gerr, mul, GenError, GenOptions, Plan};
use crate::model::Fabric;

/// How the global links join the groups. Each group has `a*h` global channels
/// `c = r*h + k` (router r, its k-th global port); with `g` groups, channel `c` belongs to round
/// `t = c / (g-1)` and slot `s = c % (g-1)`; every round joins every pair of groups once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Arrangement {
    /// Relative ("palmtree"-like; what gen_topo.py uses): slot `s` of group `i` goes to group
    /// `(i + s + 1) mod g`, which sees the link on its slot `g - 2 - s`.
    #[default]
    Relative,
    /// Absolute ("consecutive"): slot `s` of group `i` goes to group `s` if `s < i`, else
    /// `s + 1`, i.e. each group lists the other groups in increasing order.
    Absolute,
}

impl Arrangement {
    pub fn name(self) -> &'static str {
        match self {
            Arrangement::Relative => "relative",
            Arrangement::Absolute => "absolute",
        }
    }
    /// `relative` (alias `palmtree`) or `absolute` (alias `consecutive`).
    pub fn parse(s: &str) -> Option<Arrangement> {
        match s.to_ascii_lowercase().as_str() {
            "relative" | "palmtree" => Some(Arrangement::Relative),
            "absolute" | "consecutive" => Some(Arrangement::Absolute),
            _ => None,
        }
    }
}

/// Dragonfly(a, p, h): `g` groups of `a` routers each, routers of a group fully meshed, `p` HCAs
/// and `h` global links per router. The maximum (and default) size is `g = a*h + 1`: one global
/// link between every pair of groups. With fewer groups (`2 ≤ g < a*h + 1`) every pair of groups
/// gets `floor(a*h / (g-1))` links, plus one more when both groups still have a free global port
/// in the last, partial round; global ports without a partner stay uncabled. `g = 1` is a single
/// full-mesh group.
///
/// Names `S_g<i>_r<r>`, HCAs `H_g<i>_r<r>_<t>` (switches and HCAs group by group, router by
/// router). Ports (gen_topo.py's layout): `1..=p` HCAs, `p+1 ..= p+a-1` local links (to the
/// other routers in increasing order), `p+a ..= p+a+h-1` global links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DragonflySpec {
    pub a: u32,
    pub p: u32,
    pub h: u32,
    /// Number of groups; `None` = `a*h + 1`.
    pub g: Option<u32>,
    pub arrangement: Arrangement,
}

impl DragonflySpec {
    /// The maximum-size dragonfly with the relative arrangement.
    pub fn new(a: u32, p: u32, h: u32) -> DragonflySpec {
        DragonflySpec {
            a,
            p,
            h,
            g: None,
            arrangement: Arrangement::Relative,
        }
    }
}

/// Partner (group, channel) of channel `c` of group `i`, if cabled.
fn partner(arr: Arrangement, g: u64, ah: u64, i: u64, c: u64) -> Option<(u64, u64)> {
    if g < 2 {
        return None;
    }
    let t = c / (g - 1);
    let s = c % (g - 1);
    let (j, s2) = match arr {
        Arrangement::Relative => ((i + s + 1) % g, g - 2 - s),
        Arrangement::Absolute => {
            let j = if s < i { s } else { s + 1 };
            (j, if i < j { i } else { i - 1 })
        }
    };
    let c2 = t * (g - 1) + s2;
    (c2 < ah).then_some((j, c2))
}

/// Generates a dragonfly; see [`DragonflySpec`]. Hints: kind `dragonfly(a=..,p=..,h=..,g=..)`
/// (plus the arrangement when not relative), `level` = group index, coords `[group, router]`,
/// link classes `host`, `local`, `global`.
pub fn dragonfly(spec: &DragonflySpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let DragonflySpec { a, p, h, .. } = *spec;
    let ah = mul(a as u64, h as u64, "dragonfly")?;
    let gmax = ah + 1;
    let g = spec.g.map_or(gmax, |g| g as u64);
    let mut kind = format!("dragonfly(a={a},p={p},h={h},g={g})");
    if spec.arrangement != Arrangement::Relative {
        kind.push_str(&format!(" {}", spec.arrangement.name()));
    }
    if a == 0 {
        return gerr(format!("{kind}: a (routers per group) must be at least 1"));
    }
    if g == 0 {
        return gerr(format!("{kind}: g (groups) must be at least 1"));
    }
    if g > gmax {
        return gerr(format!(
            "{kind}: {g} groups cannot all be joined with a*h = {ah} global links per group (at most a*h+1 = {gmax} groups)"
        ));
    }
    if g > 1 && h == 0 {
        return gerr(format!("{kind}: h = 0 leaves the {g} groups disconnected"));
    }
    let nsw = mul(g, a as u64, &kind)?;
    let nh = mul(nsw, p as u64, &kind)?;
    check_size(&kind, nsw, nh, opts)?;
    let ports = p as u64 + a as u64 - 1 + h as u64;
    if ports > super::MAX_PORTS as u64 {
        return gerr(format!(
            "{kind}: routers need {ports} ports, more than {}",
            super::MAX_PORTS
        ));
    }
    let mut plan = Plan::new(kind, &["local", "global"]);
    let sw = |i: u64, r: u64| (i * a as u64 + r) as u32;
    for i in 0..g {
        for r in 0..a {
            plan.add_switch(format!("S_g{i}_r{r}"));
            plan.sw_level.push(i as u32);
            plan.sw_coords.push(vec![i as u32, r]);
        }
    }
    for i in 0..g {
        for r in 0..a {
            for r2 in r + 1..a {
                let pa = p + r2; // p + 1 + (r2 - 1): local ports skip the router itself
                let pb = p + 1 + r;
                plan.link(sw(i, r as u64), pa, sw(i, r2 as u64), pb, 1);
            }
        }
    }
    let (hu, pa0) = (h as u64, (p + a) as u64);
    for i in 0..g {
        for c in 0..ah {
            if let Some((j, c2)) = partner(spec.arrangement, g, ah, i, c) {
                if (i, c) < (j, c2) {
                    plan.link(
                        sw(i, c / hu),
                        (pa0 + c % hu) as u32,
                        sw(j, c2 / hu),
                        (pa0 + c2 % hu) as u32,
                        2,
                    );
                }
            }
        }
    }
    for i in 0..g {
        for r in 0..a {
            for t in 0..p {
                plan.add_hca(format!("H_g{i}_r{r}_{t}"), sw(i, r as u64), t + 1);
            }
        }
    }
    plan.finish(opts)
}
