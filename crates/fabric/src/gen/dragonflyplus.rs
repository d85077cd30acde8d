//! Dragonfly+ (Shpiner et al. 2017): groups that are 2-level leaf/spine fat trees, joined by
//! global cables between spines.

use super::{check_size, gerr, mul, GenError, GenOptions, Plan, MAX_PORTS};
use crate::model::Fabric;

/// Dragonfly+: `g` groups, each a complete bipartite leaf/spine tree (`leaves` leaves with
/// `hosts` HCAs each, `spines` spines, `links` parallel cables between every leaf and every
/// spine of its group); every spine has `global` global ports cabled to spines of other groups.
///
/// **Global cabling.** A group has `G = spines * global` global ports. With `g ≥ 2` groups
/// (`g ≤ G + 1`, the default being the maximum `G + 1`) every pair of groups gets
/// `b = floor(G / (g-1))` cables, and `b + 1` when the pair is one of the *extra* pairs;
/// `r = G mod (g-1)` is the number of extra pairs of every group (but one, see below). With
/// groups numbered `0..g` and `d = min(|i-j|, g-|i-j|)` the cyclic distance of groups `i` and
/// `j`, the extra pairs are:
/// - the pairs with `d ≤ floor(r/2)`;
/// - when `r` is odd and `g` even, the pairs with `d = g/2`;
/// - when `r` and `g` are odd, every other pair along the cycle of distance `m = (g-1)/2`:
///   listing the groups `0, m, 2m, … (mod g)` as `v_0 .. v_{g-1}`, the pairs `{v_0, v_1}`,
///   `{v_2, v_3}`, …, `{v_{g-3}, v_{g-2}}` (`v_{g-1}` = group `m+1` is left out).
///
/// So every pair of groups has `b` or `b + 1` cables, and every global port is cabled except
/// when `G` and `g` are both odd (the port total is odd): then the last global port of the last
/// spine of group `(g+1)/2` stays uncabled, the only one in the fabric. With `g = G + 1` every
/// pair gets exactly one cable; with `g = 1` (a single leaf/spine tree) every global port is
/// uncabled.
///
/// Which spine carries a cable: group `i` lists its peers in the order `i+1, i+2, …, i+g-1`
/// (mod g) and gives each peer its cables at consecutive positions `q = 0, 1, …`; position `q`
/// is global port `q / spines` of spine `q mod spines`. The cables to one peer thus sit on
/// different spines (a peer with `c` cables has them on `min(c, spines)` spines, none more
/// than `ceil(c / spines)`), and every spine gets `global` positions. The `t`-th cable of a
/// pair joins the `t`-th positions of the two groups.
///
/// Names: leaves `L_g<i>_<j>`, spines `S_g<i>_<k>`, HCAs `H_g<i>_<j>_<t>` (HCA `t` of leaf
/// `j`). Switch order (GUIDs): group by group, its leaves then its spines; HCAs group by group,
/// leaf by leaf. Ports: a leaf has its HCAs on `1..=hosts`, then its uplinks spine by spine
/// (cable `t` to spine `k` on `hosts + k*links + t + 1`); a spine has its leaves' cables leaf
/// by leaf (`j*links + t + 1`), then its global ports on `leaves*links + 1 ..= leaves*links +
/// global` (global port `x` on `leaves*links + 1 + x`). Leaves need `hosts + spines*links`
/// ports, spines `leaves*links + global`. A switch declares the highest port it uses (the rule
/// of every generator): a spine with its last global ports uncabled declares fewer unless
/// `radix=` is given.
///
/// `hosts = 0` (no HCAs) is allowed, as in the other generators; `leaves`, `spines`, `links`
/// and `groups` must be at least 1, and `global` too when there is more than one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DragonflyPlusSpec {
    /// Number of groups; `None` = `spines * global + 1` (one cable between every pair).
    pub groups: Option<u32>,
    /// Leaves per group.
    pub leaves: u32,
    /// Spines per group.
    pub spines: u32,
    /// HCAs per leaf.
    pub hosts: u32,
    /// Global ports per spine.
    pub global: u32,
    /// Parallel cables between every leaf and every spine of its group.
    pub links: u32,
}

impl DragonflyPlusSpec {
    /// `groups` groups (`None`: the maximum) with single leaf-spine cables.
    pub fn new(
        groups: Option<u32>,
        leaves: u32,
        spines: u32,
        hosts: u32,
        global: u32,
    ) -> DragonflyPlusSpec {
        DragonflyPlusSpec {
            groups,
            leaves,
            spines,
            hosts,
            global,
            links: 1,
        }
    }

    /// The number of groups: `groups`, or `spines * global + 1`.
    pub fn group_count(&self) -> u64 {
        match self.groups {
            Some(g) => g as u64,
            None => self.spines as u64 * self.global as u64 + 1,
        }
    }
}

const LOCAL: u16 = 1;
const GLOBAL: u16 = 2;

/// Is `{i, j}` (distinct groups) one of the extra pairs with `b + 1` cables? See
/// [`DragonflyPlusSpec`]; `r = G mod (g-1)`.
fn extra_pair(g: u64, r: u64, i: u64, j: u64) -> bool {
    if r == 0 {
        return false;
    }
    let diff = (j + g - i) % g;
    let d = diff.min(g - diff);
    if d <= r / 2 {
        return true;
    }
    if r.is_multiple_of(2) {
        return false;
    }
    if g.is_multiple_of(2) {
        return d == g / 2;
    }
    let m = (g - 1) / 2;
    if d != m {
        return false;
    }
    // The pair is {x, x + m}. On the cycle v_k = k*m (mod g) it is the edge {v_k, v_{k+1}}
    // with v_k = x; since 2m = -1 (mod g), k = -2x (mod g). Every other edge, from k = 0 up
    // to k = g-3, is taken.
    let x = if (i + m) % g == j { i } else { j };
    let k = (g - (2 * x) % g) % g;
    k.is_multiple_of(2) && k + 3 <= g
}

/// Generates a Dragonfly+; see [`DragonflyPlusSpec`]. Hints: kind `dragonflyplus groups=..
/// leaves=.. spines=.. hosts=.. global=..` (plus `links=W` when not 1), `level` = group index
/// (as for [`dragonfly`](super::dragonfly())), coords `[group, 0 for a leaf / 1 for a spine,
/// index in the group]`, link classes `host`, `local` (leaf-spine), `global` (spine-spine). No
/// roots: which switches Up*/Down* ranks from is the engine's choice.
pub fn dragonfly_plus(spec: &DragonflyPlusSpec, opts: &GenOptions) -> Result<Fabric, GenError> {
    let DragonflyPlusSpec {
        leaves,
        spines,
        hosts,
        global,
        links,
        ..
    } = *spec;
    let gports = spines as u64 * global as u64; // < 2^64: two u32 factors
    let g = spec.group_count();
    let mut kind = format!(
        "dragonflyplus groups={g} leaves={leaves} spines={spines} hosts={hosts} global={global}"
    );
    if links != 1 {
        kind.push_str(&format!(" links={links}"));
    }
    for (what, v) in [
        ("groups", g),
        ("leaves (per group)", leaves as u64),
        ("spines (per group)", spines as u64),
        ("links (cables per leaf-spine pair)", links as u64),
    ] {
        if v == 0 {
            return gerr(format!("{kind}: {what} must be at least 1"));
        }
    }
    if g > 1 && global == 0 {
        return gerr(format!(
            "{kind}: global = 0 leaves the {g} groups disconnected"
        ));
    }
    if g > gports + 1 {
        return gerr(format!(
            "{kind}: {g} groups cannot all be joined with spines*global = {gports} global ports per group (at most spines*global+1 = {} groups)",
            gports + 1
        ));
    }
    for (what, need, detail) in [
        (
            "leaf switches need",
            hosts as u64 + spines as u64 * links as u64,
            format!("{hosts} HCAs + {spines} spines x {links} cables"),
        ),
        (
            "spine switches need",
            leaves as u64 * links as u64 + global as u64,
            format!("{leaves} leaves x {links} cables + {global} global ports"),
        ),
    ] {
        if need > MAX_PORTS as u64 {
            return gerr(format!(
                "{kind}: {what} {need} ports ({detail}), more than the {MAX_PORTS} a switch can have"
            ));
        }
    }
    let per_group = leaves as u64 + spines as u64;
    let nsw = mul(g, per_group, &kind)?;
    let nh = mul(mul(g, leaves as u64, &kind)?, hosts as u64, &kind)?;
    check_size(&kind, nsw, nh, opts)?;
    // From here on every count fits the LID space (so u32 indices are safe), and g - 1 ≤ G.

    let mut plan = Plan::new(kind, &["local", "global"]);
    let per_group = per_group as u32;
    let leaf = |i: u32, j: u32| i * per_group + j;
    let spine = |i: u32, k: u32| i * per_group + leaves + k;
    let g32 = g as u32;
    for i in 0..g32 {
        for j in 0..leaves {
            plan.add_switch(format!("L_g{i}_{j}"));
            plan.sw_level.push(i);
            plan.sw_coords.push(vec![i, 0, j]);
        }
        for k in 0..spines {
            plan.add_switch(format!("S_g{i}_{k}"));
            plan.sw_level.push(i);
            plan.sw_coords.push(vec![i, 1, k]);
        }
    }
    // Leaf-spine cables.
    for i in 0..g32 {
        for j in 0..leaves {
            for k in 0..spines {
                for t in 0..links {
                    plan.link(
                        leaf(i, j),
                        hosts + k * links + t + 1,
                        spine(i, k),
                        j * links + t + 1,
                        LOCAL,
                    );
                }
            }
        }
    }
    // Global cables.
    if g > 1 {
        let (b, r) = (gports / (g - 1), gports % (g - 1));
        let count = |i: u64, j: u64| b + u64::from(extra_pair(g, r, i, j));
        // start[i * g + j]: the first position of group i's cables to group j (positions are
        // below G ≤ 254², and g² is at most about twice the number of global cables).
        let gu = g as usize;
        let mut start = vec![0u32; gu * gu];
        for i in 0..g {
            let mut q = 0u64;
            for o in 1..g {
                let j = (i + o) % g;
                start[(i * g + j) as usize] = q as u32;
                q += count(i, j);
            }
            debug_assert!(q <= gports);
        }
        let down = leaves * links;
        let at = |i: u64, q: u64| -> (u32, u32) {
            let sp = spine(i as u32, (q % spines as u64) as u32);
            (sp, down + 1 + (q / spines as u64) as u32)
        };
        for i in 0..g {
            for j in i + 1..g {
                let qi = start[(i * g + j) as usize] as u64;
                let qj = start[(j * g + i) as usize] as u64;
                for t in 0..count(i, j) {
                    let (a, pa) = at(i, qi + t);
                    let (c, pc) = at(j, qj + t);
                    plan.link(a, pa, c, pc, GLOBAL);
                }
            }
        }
    }
    for i in 0..g32 {
        for j in 0..leaves {
            for t in 0..hosts {
                plan.add_hca(format!("H_g{i}_{j}_{t}"), leaf(i, j), t + 1);
            }
        }
    }
    plan.finish(opts)
}

#[cfg(test)]
mod tests {
    use super::extra_pair;

    /// Every group is in exactly `r` extra pairs, except group `(g+1)/2` when `r` and `g` are
    /// both odd (`r - 1`).
    #[test]
    fn extra_pairs_give_every_group_r() {
        for g in 2..40u64 {
            for r in 0..g - 1 {
                let mut deg = vec![0u64; g as usize];
                for i in 0..g {
                    for j in i + 1..g {
                        assert_eq!(extra_pair(g, r, i, j), extra_pair(g, r, j, i));
                        if extra_pair(g, r, i, j) {
                            deg[i as usize] += 1;
                            deg[j as usize] += 1;
                        }
                    }
                }
                for (x, &d) in deg.iter().enumerate() {
                    let short = r % 2 == 1 && g % 2 == 1 && x as u64 == g.div_ceil(2);
                    assert_eq!(d, r - u64::from(short), "g={g} r={r} group {x}");
                }
            }
        }
    }
}
