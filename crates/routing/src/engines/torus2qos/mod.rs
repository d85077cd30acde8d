//! `torus-2QoS`: dimension-order routing on 2D/3D tori and meshes with two VLs per ring
//! (OpenSM's `torus-2QoS`), routing around failed links and one failed switch without
//! changing any path SL.
//!
//! **Coordinates.** From OpenSM's `torus-2QoS.conf` ([`parse_config`]: `torus`/`mesh` radices,
//! seed links `xp_link` … `zm_link`, datelines, `next_seed`, `port_order`), else from the
//! generator's hints, else inferred (a mesh, or a torus whose radices are all ≥ 5). A seed
//! switch and its seed neighbours are placed first; then, repeatedly, an unplaced neighbour
//! `x` of a placed switch goes to the empty neighbouring position of that switch it is
//! consistent with (every placed neighbour of `x` next to it) when there is only one.
//! Links between switches one step apart in one dimension are torus links, grouped per
//! switch by direction (parallel cables in one group); other links are left unused (as
//! OpenSM does; a wrap cable in a mesh dimension is one).
//!
//! **Routes.** The lowest differing dimension first. A step in dimension `d` aims at the
//! turning switch `T` (the destination's coordinate in `d`, the own ones elsewhere): the
//! shorter way round (ties: the way that does not wrap) if the ring's links reach `T`
//! that way, else the other way; where `T` itself is missing (x and y only), the shorter way
//! by index if a link goes there. When neither works the next differing dimension is tried
//! (an early turn). Parallel links are used round robin per (switch, direction), with
//! separate counters for CA and switch destinations.
//!
//! **SL and VL.** The path SL depends only on the two switches' coordinates: bit `d` is set
//! when the shorter way round ring `d` wraps (ties: not). It does not change under failures.
//! SL2VL on a switch, for output port in dimension `od` and input port in dimension `id`
//! (3 = an end port or port 0): VL bit 0 = SL bit `od` (the ring's loop VL); VL bit 1 = the
//! hop after an early turn (`id > od`: y→x, z→x, z→y), with 4 or more VLs; VL bit 2 = SL bit
//! 3 (the QoS level, 0 here), with 8 or more. Output to an end port or port 0, and CA ports:
//! VL = SL bit 3. All VLs are offset by the budget's start VL.
//!
//! **Refused** (clearly, never a fallback): no torus found; a ring broken in more than one
//! place or unevenly; missing switches not in one z-column run; any switch pair without a
//! route; early turns with fewer than 4 VLs.

mod config;
mod geometry;

pub use config::{parse_config, ConfigError, Seed, TorusConfig, TorusSettings};
use fabric::SwitchIdx;
use geometry::{from_hints, geometry, Geo, GROUPS, NONE};

use super::common::{unreached_note, Topo};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::{PathSl, NUM_SLS};
use crate::turn::Base;
use fabric::{Fabric, FaultMask, NO_PORT};
use rayon::prelude::*;

/// The `torus-2QoS` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Torus2Qos;

/// Per switch and direction group: its live torus ports, ascending; and per switch port
/// its dimension (0..3, or 3 for end ports, port 0 and unused links).
struct Groups {
    ports: Vec<[Vec<u8>; GROUPS]>,
    port_dim: Vec<Vec<u8>>,
    non_torus: usize,
}

fn groups(t: &Topo, g: &Geo) -> Groups {
    let mut ports: Vec<[Vec<u8>; GROUPS]> = (0..t.n).map(|_| Default::default()).collect();
    let mut port_dim: Vec<Vec<u8>> =
        t.f.switches
            .iter()
            .map(|&s| vec![3u8; t.f.node(s).nports as usize + 1])
            .collect();
    let mut non_torus = 0;
    for s in 0..t.n {
        let Some(cs) = g.at[s] else { continue };
        for a in t.links(s) {
            let Some(cp) = g.at[a.peer as usize] else {
                continue;
            };
            match g.dir(cs, cp) {
                Some(k) => {
                    ports[s][k].push(a.port);
                    port_dim[s][a.port as usize] = (k / 2) as u8;
                }
                None => non_torus += 1,
            }
        }
        for p in ports[s].iter_mut() {
            p.sort_unstable();
            p.dedup();
        }
    }
    Groups {
        ports,
        port_dim,
        non_torus: non_torus / 2,
    }
}

/// OpenSM's safety rules for damaged tori: every ring broken in at most one place (and as
/// many switches without a − link as without a + link), missing switches all in one
/// (x, y) column, and when more than one, each next to another in z.
fn check_damage(g: &Geo, gr: &Groups) -> Result<usize, EngineError> {
    let dims = ["x", "y", "z"];
    for d in 0..3 {
        if g.r[d] <= 1 {
            continue;
        }
        let (o1, o2) = ((d + 1) % 3, (d + 2) % 3);
        for a in 0..g.r[o1] {
            for b in 0..g.r[o2] {
                let (mut b2g, mut g2b) = (0, 0);
                for i in 0..g.r[d] {
                    let mut c = [0u32; 3];
                    c[d] = i;
                    c[o1] = a;
                    c[o2] = b;
                    let s = g.pos[g.idx(c)];
                    if s == NONE {
                        continue;
                    }
                    b2g += usize::from(gr.ports[s as usize][2 * d].is_empty());
                    g2b += usize::from(gr.ports[s as usize][2 * d + 1].is_empty());
                }
                let mut c = [0u32; 3];
                c[o1] = a;
                c[o2] = b;
                if b2g != g2b {
                    return Err(EngineError::NotApplicable(format!(
                        "torus-2QoS: strange failures in the {} ring through {c:?} ({b2g} switches without a - link, {g2b} without a + link)",
                        dims[d]
                    )));
                }
                if b2g > 1 {
                    return Err(EngineError::NotApplicable(format!(
                        "torus-2QoS: the {} ring through {c:?} is broken in {b2g} places (at most one is routable without changing path SLs)",
                        dims[d]
                    )));
                }
            }
        }
    }
    let missing: Vec<[u32; 3]> = (0..g.pos.len())
        .filter(|&i| g.pos[i] == NONE)
        .map(|i| {
            let x = i as u32 % g.r[0];
            let y = (i as u32 / g.r[0]) % g.r[1];
            let z = i as u32 / (g.r[0] * g.r[1]);
            [x, y, z]
        })
        .collect();
    if let Some(m0) = missing.first() {
        if missing.iter().any(|m| m[0] != m0[0] || m[1] != m0[1]) {
            return Err(EngineError::NotApplicable(format!(
                "torus-2QoS: {} missing switches not in one z column (e.g. {m0:?}); only one failed switch, or a run of them in z, is routable",
                missing.len()
            )));
        }
        if missing.len() > 1 {
            let inz = |c: [u32; 3]| missing.contains(&c);
            for &m in &missing {
                let nb = [g.step(m, 2, true), g.step(m, 2, false)];
                if !nb.iter().flatten().any(|&c| inz(c)) {
                    return Err(EngineError::NotApplicable(format!(
                        "torus-2QoS: missing switch at {m:?} is not next to another missing one in z"
                    )));
                }
            }
        }
    }
    Ok(missing.len())
}

/// How far one can walk from each switch in each direction along live torus links
/// (`r − 1` at most: a whole intact ring).
fn reach(g: &Geo, gr: &Groups, n: usize) -> Vec<[u32; GROUPS]> {
    let mut out = vec![[0u32; GROUPS]; n];
    for (s, o) in out.iter_mut().enumerate() {
        let Some(cs) = g.at[s] else { continue };
        for (k, ok) in o.iter_mut().enumerate() {
            let (d, up) = (k / 2, k % 2 == 1);
            let (mut cur, mut c, mut steps) = (s, cs, 0u32);
            while steps + 1 < g.r[d] && !gr.ports[cur][k].is_empty() {
                let Some(nc) = g.step(c, d, up) else { break };
                let nx = g.pos[g.idx(nc)];
                if nx == NONE {
                    break;
                }
                steps += 1;
                (cur, c) = (nx as usize, nc);
            }
            *ok = steps;
        }
    }
    out
}

/// The direction group for the next hop from `sw` toward `dsw`, and whether it is an early
/// turn (a later dimension taken while an earlier one still differs).
fn next_hop(
    g: &Geo,
    gr: &Groups,
    reach: &[[u32; GROUPS]],
    sw: usize,
    dsw: usize,
) -> Option<(usize, bool)> {
    let (a, b) = (g.at[sw]?, g.at[dsw]?);
    let first = (0..3).find(|&d| a[d] != b[d])?;
    for d in first..3 {
        if a[d] == b[d] {
            continue;
        }
        let mut tc = a;
        tc[d] = b[d];
        let r = g.r[d];
        // distances each way (a mesh only has the direct one)
        let (plus, minus) = if g.wrap[d] {
            ((b[d] + r - a[d]) % r, (a[d] + r - b[d]) % r)
        } else if b[d] > a[d] {
            (b[d] - a[d], u32::MAX)
        } else {
            (u32::MAX, a[d] - b[d])
        };
        // shorter way; a tie takes the way that does not wrap
        let up_first = plus < minus || (plus == minus && b[d] > a[d]);
        let ways = if up_first {
            [(true, plus), (false, minus)]
        } else {
            [(false, minus), (true, plus)]
        };
        let k = |up: bool| 2 * d + usize::from(up);
        if g.pos[g.idx(tc)] != NONE {
            // walk the ring toward the turning switch
            if let Some(&(up, _)) = ways
                .iter()
                .find(|&&(up, dist)| dist != u32::MAX && reach[sw][k(up)] >= dist)
            {
                return Some((k(up), d != first));
            }
        } else if d < 2 {
            // the turning switch is missing: the shorter way by index, if a link goes there
            let (up, dist) = ways[0];
            if dist != u32::MAX && !gr.ports[sw][k(up)].is_empty() {
                return Some((k(up), d != first));
            }
        }
    }
    None
}

/// Path SL bits from two switches' coordinates: bit d = the shorter way round ring d wraps.
fn sl_bits(g: &Geo, a: [u32; 3], b: [u32; 3]) -> u8 {
    let mut sl = 0u8;
    for d in 0..3 {
        let direct = a[d].abs_diff(b[d]);
        let wrap = g.r[d] - direct;
        if wrap < direct {
            sl |= 1 << d;
        }
    }
    sl
}

impl Engine for Torus2Qos {
    fn info(&self) -> &'static EngineInfo {
        &super::TORUS2QOS
    }
    /// RFTR keeps torus-2QoS's VLs and SLs and puts repaired paths on VLs above them.
    fn rftr_base<'f>(&self, _f: &'f Fabric, _opts: &RouteOptions) -> Result<Base<'f>, EngineError> {
        Ok(Base::FreshVls)
    }
    /// Coordinates inferred on the fault-free fabric, written in as a config (seed: the
    /// switch placed first and its neighbours), so that routing under faults keeps them. A
    /// given config or the generator's hints already fix them.
    fn pin_choices(&self, f: &Fabric, opts: &RouteOptions) -> Result<RouteOptions, EngineError> {
        let t = Topo::live(f, &FaultMask::none(f))?;
        if opts.engine.torus.config.is_some() || from_hints(&t).is_some() {
            return Ok(opts.clone());
        }
        let g = geometry(&t, opts)?;
        let s0 = g.order[0] as usize;
        let c0 = g.at[s0].expect("the first switch placed has coordinates");
        let mut seed = Seed::default();
        for d in 0..3 {
            // coordinate 0 is -c0 steps from the seed switch
            seed.dateline[d] = -(c0[d] as i32);
            for (m, up) in [(0, true), (1, false)] {
                if let Some(c) = g.step(c0, d, up) {
                    let s = g.pos[g.idx(c)];
                    if s != NONE {
                        seed.links[d][m] = Some((t.guid(s0), t.guid(s as usize)));
                    }
                }
            }
        }
        let mut o = opts.clone();
        o.engine.torus.config = Some(TorusConfig {
            radix: g.r,
            mesh: g.wrap.map(|w| !w),
            seeds: vec![seed],
            port_order: Vec::new(),
            portgroup_max_ports: 255,
        });
        Ok(o)
    }
    fn route_topo(&self, t: &Topo, opts: &RouteOptions) -> Result<Routed, EngineError> {
        opts.budget.validate()?;
        let f = t.f;
        let v = opts.budget.vls;
        let start = opts.budget.start_vl;
        if v < 2 {
            return Err(EngineError::NotApplicable(format!(
                "torus-2QoS needs at least 2 data VLs (a loop VL per ring), the budget has {v}"
            )));
        }
        if opts.budget.sls < 8 {
            return Err(EngineError::NotApplicable(format!(
                "torus-2QoS needs 8 SLs (a loop bit per dimension), the budget has {}",
                opts.budget.sls
            )));
        }
        let g = geometry(t, opts)?;
        let gr = groups(t, &g);
        let max_group = opts
            .engine
            .torus
            .config
            .as_ref()
            .map_or(16, |c| c.portgroup_max_ports.max(1));
        for s in 0..t.n {
            let local = t.ends_on(s).len() + 1;
            let big = gr.ports[s]
                .iter()
                .map(Vec::len)
                .max()
                .unwrap_or(0)
                .max(local);
            if g.at[s].is_some() && big as u32 > max_group {
                return Err(EngineError::NotApplicable(format!(
                    "torus-2QoS: switch {:?} has {big} ports in one direction or local group, more than portgroup_max_ports {max_group}",
                    f.node(f.switches[s]).name
                )));
            }
        }
        let missing = check_damage(&g, &gr)?;
        let reach = reach(&g, &gr, t.n);
        // per destination switch: its own ports (port 0 first, then end ports), in port order
        let order_rank = |p: u8| -> (usize, u8) {
            match opts
                .engine
                .torus
                .config
                .as_ref()
                .and_then(|c| c.port_order.iter().position(|&x| x == p))
            {
                Some(i) => (i, p),
                None => (usize::MAX, p),
            }
        };
        // (destination switch, port, base LID, LIDs, is a CA)
        let mut dests: Vec<(u32, u8, u32, u32, bool)> = Vec::new();
        for &dsw in &g.order {
            let d = dsw as usize;
            let mut own: Vec<(u8, u32, u32, bool)> = Vec::new();
            if t.sw_lid[d] != 0 {
                own.push((0, t.sw_lid[d] as u32, 1, false));
            }
            for &e in t.ends_on(d) {
                let e = &t.ends[e as usize];
                own.push((e.sw_port, e.base as u32, e.nlids as u32, true));
            }
            own.sort_by_key(|x| order_rank(x.0));
            dests.extend(own.into_iter().map(|(p, b, k, ca)| (dsw, p, b, k, ca)));
        }
        let mut r = t.base_routing();
        let stride = r.stride();
        // tables per switch in parallel: each switch has its own counters
        // per switch: its row and whether it turned early, or the pair it cannot route
        type Row = Result<(Vec<u8>, bool), (usize, usize)>;
        let rows: Vec<Row> = (0..t.n)
            .into_par_iter()
            .map(|sw| {
                let mut row = vec![NO_PORT; stride];
                if g.at[sw].is_none() {
                    return Ok((row, false));
                }
                let mut cnt = [[0usize; 2]; GROUPS];
                let mut early = false;
                for &(dsw, port, base, k, ca) in &dests {
                    let out = if dsw as usize == sw {
                        port
                    } else {
                        let Some((grp, e)) = next_hop(&g, &gr, &reach, sw, dsw as usize) else {
                            return Err((sw, dsw as usize));
                        };
                        early |= e;
                        let ports = &gr.ports[sw][grp];
                        let c = &mut cnt[grp][usize::from(ca)];
                        let p = ports[*c % ports.len()];
                        *c += 1;
                        p
                    };
                    for lid in base..base + k {
                        if let Some(x) = row.get_mut(lid as usize) {
                            *x = out;
                        }
                    }
                }
                Ok((row, early))
            })
            .collect();
        let mut early = false;
        for (sw, res) in rows.into_iter().enumerate() {
            match res {
                Ok((row, e)) => {
                    early |= e;
                    if g.at[sw].is_some() {
                        r.lft_of_mut(SwitchIdx(sw as u32)).copy_from_slice(&row);
                    }
                }
                Err((a, b)) => {
                    return Err(EngineError::NotApplicable(format!(
                        "torus-2QoS: no route from switch {:?} {:?} to {:?} {:?} in dimension order around the failures",
                        f.node(f.switches[a]).name,
                        g.at[a],
                        f.node(f.switches[b]).name,
                        g.at[b]
                    )))
                }
            }
        }
        if early && v < 4 {
            return Err(EngineError::NotApplicable(format!(
                "torus-2QoS: routing around the failures turns early, which needs 4 data VLs; the budget has {v}"
            )));
        }
        // path SLs: from the two switches' coordinates
        let mut lid_sw = vec![NONE; stride];
        for &(dsw, _, base, k, _) in &dests {
            for lid in base..base + k {
                if let Some(x) = lid_sw.get_mut(lid as usize) {
                    *x = dsw;
                }
            }
        }
        let ne = f.end_ports.len();
        let mut sl = vec![0u8; ne * stride];
        sl.par_chunks_mut(stride).enumerate().for_each(|(e, row)| {
            let Some((s, _)) = crate::tables::end_port_switch(f, f.end_ports[e]) else {
                return;
            };
            let Some(a) = g.at.get(s.idx()).copied().flatten() else {
                return;
            };
            for (lid, x) in row.iter_mut().enumerate() {
                let d = lid_sw[lid];
                if d != NONE {
                    if let Some(b) = g.at[d as usize] {
                        *x = sl_bits(&g, a, b);
                    }
                }
            }
        });
        r.path_sl = PathSl::PerPair { stride, sl };
        // SL2VL, one table per node: row (input port, output port), column SL
        for s in 0..t.n {
            if g.at[s].is_none() {
                continue;
            }
            let pd = &gr.port_dim[s];
            let tab = r.sl2vl.table_mut(f.switches[s]);
            for (row, cell) in tab.chunks_exact_mut(NUM_SLS).enumerate() {
                let (id, od) = (pd[row / pd.len()] as usize, pd[row % pd.len()] as usize);
                for (q, x) in cell.iter_mut().enumerate() {
                    let q = q as u8;
                    let vl = if od < 3 {
                        let turn = v >= 4 && id < 3 && id > od;
                        let qos = if v >= 8 { ((q >> 3) & 1) << 2 } else { 0 };
                        ((q >> od) & 1) | (u8::from(turn) << 1) | qos
                    } else {
                        (q >> 3) & 1
                    };
                    *x = start + vl;
                }
            }
        }
        for e in &t.ends {
            let node = f.port(e.port).node;
            if r.sl2vl.is_identity(node) {
                for cell in r.sl2vl.table_mut(node).chunks_exact_mut(NUM_SLS) {
                    for (q, x) in cell.iter_mut().enumerate() {
                        *x = start + ((q as u8 >> 3) & 1);
                    }
                }
            }
        }
        let top = start as u32
            + if v >= 8 {
                8
            } else if v >= 4 {
                4
            } else {
                2
            };
        if top > crate::tables::NUM_DATA_VLS as u32 {
            return Err(EngineError::BadOptions(format!(
                "torus-2QoS uses VLs {start}..{}, beyond the 15 data VLs",
                top - 1
            )));
        }
        let kind = if g.wrap.iter().any(|&w| w) {
            "torus"
        } else {
            "mesh"
        };
        let dims: Vec<String> =
            g.r.iter()
                .filter(|&&x| x > 1)
                .map(|x| x.to_string())
                .collect();
        let mut notes = vec![format!(
            "torus-2QoS: a {} {kind} ({}); path SL = the dimensions whose shorter way wraps; VLs {start}..{}",
            dims.join("x"),
            g.source,
            top - 1
        )];
        if gr.non_torus > 0 {
            notes.push(format!(
                "torus-2QoS: {} links join switches that are not torus neighbours (or wrap a mesh dimension) and carry no routes",
                gr.non_torus
            ));
        }
        if missing > 0 {
            notes.push(format!(
                "torus-2QoS: {missing} switch positions empty; routes go around them"
            ));
        }
        if early {
            notes.push(
                "torus-2QoS: some routes turn early around failures (their next hop on VL bit 1)"
                    .into(),
            );
        }
        unreached_note(t, 0, &mut notes);
        Ok(Routed { routing: r, notes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parses_opensm_syntax_and_rejects_bad_lines() {
        let c = parse_config(
            "# comment\ntorus 4 4t 1\nxp_link 0x200000 0x200004 # trailing\nxm_link 0x200000 0x20000c\n\
             yp_link 0x200000 0x200001\nym_link 0x200000 0x200003\nx_dateline -1\nnext_seed\n\
             mesh 1 1 1\n",
        );
        assert_eq!(c.unwrap_err().line, 9, "a second size line");
        let c = parse_config(
            "torus 4 4 1\nxp_link 0x200000 0x200004\nxm_link 0x200000 0x20000c\nyp_link 0x200000 0x200001\nym_link 0x200000 0x200003\nport_order 0 2 1 2\n",
        )
        .unwrap();
        assert_eq!(c.radix, [4, 4, 1]);
        assert_eq!(c.mesh, [false, false, false]);
        assert_eq!(c.seeds.len(), 1);
        assert_eq!(c.seeds[0].links[0][1], Some((0x200000, 0x20000c)));
        assert_eq!(c.port_order, vec![0, 2, 1]);
        let m = parse_config("mesh 3 2t 5t\nxp_link 1 2\nyp_link 1 3\nzp_link 1 4\n").unwrap();
        assert_eq!(m.mesh, [true, true, false], "radix 2 is always a mesh");
        for (bad, line) in [
            ("torus 4 4\n", 1),
            ("torus 4 4 1\nxp_link 0x1\n", 2),
            ("x_dateline 1\ntorus 4 4 1\n", 1),
            ("torus 4 4 1\nx_dateline 4\n", 2),
            ("torus 4 4 1\nfoo 1\n", 2),
            ("torus 4 0 1\n", 1),
            ("torus 4 4 1\n", 1),
            ("torus 4 4 1\nxp_link 0xZZ 0x1\n", 2),
        ] {
            let e = parse_config(bad).unwrap_err();
            assert_eq!(e.line, line, "{bad:?}: {e}");
        }
    }

    #[test]
    fn sl_bits_mark_the_shorter_way_round() {
        let g = Geo::new([8, 5, 1], [false; 3], 0, String::new());
        assert_eq!(sl_bits(&g, [0, 0, 0], [3, 0, 0]), 0);
        assert_eq!(sl_bits(&g, [0, 0, 0], [4, 0, 0]), 0, "a tie does not wrap");
        assert_eq!(sl_bits(&g, [0, 0, 0], [5, 0, 0]), 1);
        assert_eq!(sl_bits(&g, [1, 4, 0], [7, 0, 0]), 3);
    }
}
