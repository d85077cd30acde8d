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

use super::common::{unreached_note, Topo};
use super::{Engine, EngineError, EngineInfo, RouteOptions, Routed};
use crate::tables::{PathSl, NUM_SLS};
use crate::turn::Base;
use fabric::{Fabric, FaultMask, NO_PORT};
use rayon::prelude::*;
use std::fmt;

/// The `torus-2QoS` engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Torus2Qos;

/// torus-2QoS's settings: OpenSM's `torus-2QoS.conf`, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TorusSettings {
    pub config: Option<TorusConfig>,
}

/// OpenSM's `torus-2QoS.conf`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TorusConfig {
    /// Radix per dimension (x, y, z); 1 = the dimension is absent.
    pub radix: [u32; 3],
    /// Mesh (no wrap) per dimension. Radix 2 is always a mesh (two cables, not a ring).
    pub mesh: [bool; 3],
    /// Seeds in file order; the first whose switches are all present is used.
    pub seeds: Vec<Seed>,
    /// `port_order`: the order a destination switch's own ports (port 0, end ports) are
    /// visited in; ports not listed follow in increasing order.
    pub port_order: Vec<u8>,
    /// `portgroup_max_ports`: most parallel links (or local ports) one direction may have.
    pub portgroup_max_ports: u32,
}

/// One seed: per dimension the `+` and `-` seed links (from switch GUID, to switch GUID)
/// and the dateline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seed {
    pub links: [[Option<(u64, u64)>; 2]; 3],
    pub dateline: [i32; 3],
}

/// A `torus-2QoS.conf` error: the line (1-based) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub line: usize,
    pub msg: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}
impl std::error::Error for ConfigError {}

/// C's `strtoul(s, 0)`: `0x` hex, a leading `0` octal, else decimal; the whole token.
fn number(tok: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = tok.strip_prefix("0x").or(tok.strip_prefix("0X")) {
        (h, 16)
    } else if tok.len() > 1 && tok.starts_with('0') {
        (&tok[1..], 8)
    } else {
        (tok, 10)
    };
    u64::from_str_radix(digits, radix).ok()
}

/// Parses OpenSM's `torus-2QoS.conf` (see `man torus-2QoS.conf`). A token starting with `#`
/// starts a comment; unknown keywords, bad numbers, missing arguments, a second `torus`
/// line, datelines outside `-radix < n < radix` or before the `torus` line are errors.
pub fn parse_config(text: &str) -> Result<TorusConfig, ConfigError> {
    let mut c = TorusConfig {
        radix: [0; 3],
        portgroup_max_ports: 16,
        ..TorusConfig::default()
    };
    let mut have_size = false;
    let mut seed = Seed::default();
    let mut seed_used = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |msg: String| ConfigError { line, msg };
        let toks: Vec<&str> = raw
            .split_whitespace()
            .take_while(|t| !t.starts_with('#'))
            .collect();
        let Some(&kw) = toks.first() else { continue };
        let args = &toks[1..];
        let need = |n: usize| {
            if args.len() < n {
                Err(err(format!(
                    "{kw} needs {n} value(s), found {}",
                    args.len()
                )))
            } else {
                Ok(())
            }
        };
        let num = |t: &str| number(t).ok_or_else(|| err(format!("{t:?} is not a number")));
        match kw {
            "torus" | "mesh" => {
                need(3)?;
                if have_size {
                    return Err(err("a second torus/mesh line".into()));
                }
                have_size = true;
                for d in 0..3 {
                    let t = args[d];
                    let (n, suffix) = match t.char_indices().last() {
                        Some((k, ch)) if ch.is_ascii_alphabetic() && !t.starts_with("0x") => {
                            (&t[..k], Some(ch.to_ascii_lowercase()))
                        }
                        _ => (t, None),
                    };
                    let r = num(n)?;
                    if r == 0 || r > 1024 {
                        return Err(err(format!("radix {t} is not in 1..=1024")));
                    }
                    c.radix[d] = r as u32;
                    c.mesh[d] = match suffix {
                        Some('t') => false,
                        Some('m') => true,
                        None => kw == "mesh",
                        Some(x) => {
                            return Err(err(format!("radix suffix {x:?}: expected t or m")))
                        }
                    } || r == 2;
                }
            }
            "xp_link" | "xm_link" | "yp_link" | "ym_link" | "zp_link" | "zm_link" => {
                need(2)?;
                let d = (kw.as_bytes()[0] - b'x') as usize;
                let m = usize::from(kw.as_bytes()[1] == b'm');
                seed.links[d][m] = Some((num(args[0])?, num(args[1])?));
                seed_used = true;
            }
            "x_dateline" | "y_dateline" | "z_dateline" => {
                need(1)?;
                let d = (kw.as_bytes()[0] - b'x') as usize;
                if !have_size {
                    return Err(err(format!("{kw} before the torus line")));
                }
                let (neg, t) = match args[0].strip_prefix('-') {
                    Some(t) => (true, t),
                    None => (false, args[0]),
                };
                let v = num(t)? as i64 * if neg { -1 } else { 1 };
                let r = c.radix[d] as i64;
                if v <= -r || v >= r {
                    return Err(err(format!("{kw} {v}: expected -{r} < n < {r}")));
                }
                seed.dateline[d] = v as i32;
                seed_used = true;
            }
            "next_seed" => {
                if seed_used {
                    c.seeds.push(std::mem::take(&mut seed));
                    seed_used = false;
                }
            }
            "portgroup_max_ports" => {
                need(1)?;
                c.portgroup_max_ports = num(args[0])?.min(u32::MAX as u64) as u32;
            }
            "port_order" => {
                for t in args {
                    let p = num(t)?;
                    if p > 254 {
                        return Err(err(format!("port {p} is not in 0..=254")));
                    }
                    if !c.port_order.contains(&(p as u8)) {
                        c.port_order.push(p as u8);
                    }
                }
            }
            "max_changes" => {
                need(1)?;
                num(args[0])?;
            }
            _ => {
                return Err(err(format!(
                    "unknown keyword {kw:?} (expected torus, mesh, xp_link … zm_link, x_dateline … z_dateline, next_seed, portgroup_max_ports, port_order, max_changes)"
                )))
            }
        }
    }
    if seed_used {
        c.seeds.push(seed);
    }
    if !have_size {
        return Err(ConfigError {
            line: text.lines().count().max(1),
            msg: "no torus or mesh line (the radices)".into(),
        });
    }
    if c.seeds.is_empty() {
        return Err(ConfigError {
            line: text.lines().count().max(1),
            msg: "no seed links (xp_link …)".into(),
        });
    }
    Ok(c)
}

const NONE: u32 = u32::MAX;
/// Direction groups per switch: `2d` = toward −d, `2d + 1` = toward +d.
const GROUPS: usize = 6;

/// The torus as found: radices, wrap flags, positions.
#[derive(Clone, Debug)]
struct Geo {
    r: [u32; 3],
    wrap: [bool; 3],
    /// Per position (x + X·(y + Y·z)): the live switch there, or `NONE`.
    pos: Vec<u32>,
    /// Per switch: its coordinates (`None`: not placed).
    at: Vec<Option<[u32; 3]>>,
    /// Switches in the order they were placed (destination order of the tables).
    order: Vec<u32>,
    /// Where the coordinates came from, for the notes.
    source: String,
}

impl Geo {
    fn new(r: [u32; 3], mesh: [bool; 3], n: usize, source: String) -> Self {
        let cells = r.iter().map(|&x| x as usize).product();
        Geo {
            r,
            wrap: [0, 1, 2].map(|d| !mesh[d] && r[d] > 2),
            pos: vec![NONE; cells],
            at: vec![None; n],
            order: Vec::new(),
            source,
        }
    }
    fn idx(&self, c: [u32; 3]) -> usize {
        c[0] as usize + self.r[0] as usize * (c[1] as usize + self.r[1] as usize * c[2] as usize)
    }
    /// One step from `c` in dimension `d`, `+` when `up`; `None` off a mesh's edge or in an
    /// absent dimension.
    fn step(&self, c: [u32; 3], d: usize, up: bool) -> Option<[u32; 3]> {
        let r = self.r[d];
        if r <= 1 {
            return None;
        }
        let mut c2 = c;
        if up {
            if c[d] + 1 < r {
                c2[d] += 1;
            } else if self.wrap[d] {
                c2[d] = 0;
            } else {
                return None;
            }
        } else if c[d] > 0 {
            c2[d] -= 1;
        } else if self.wrap[d] {
            c2[d] = r - 1;
        } else {
            return None;
        }
        Some(c2)
    }
    /// The direction group leading from `a` to the neighbouring position `b`.
    fn dir(&self, a: [u32; 3], b: [u32; 3]) -> Option<usize> {
        (0..3).find_map(|d| {
            if self.step(a, d, true) == Some(b) {
                Some(2 * d + 1)
            } else if self.step(a, d, false) == Some(b) {
                Some(2 * d)
            } else {
                None
            }
        })
    }
    fn adjacent(&self, a: [u32; 3], b: [u32; 3]) -> bool {
        self.dir(a, b).is_some()
    }
    fn put(&mut self, s: usize, c: [u32; 3]) -> Result<(), String> {
        let i = self.idx(c);
        match (self.pos[i], self.at[s]) {
            (NONE, None) => {
                self.pos[i] = s as u32;
                self.at[s] = Some(c);
                self.order.push(s as u32);
                Ok(())
            }
            (x, Some(old)) if x == s as u32 && old == c => Ok(()),
            _ => Err(format!(
                "the seed links put two switches at {c:?} or one switch at two places"
            )),
        }
    }
}

/// For a placed switch `a`: its unplaced neighbours, the free positions next to it, and per
/// neighbour the free positions it is consistent with (every placed neighbour of it next to
/// the position). The neighbour is at one of them.
fn options(g: &Geo, peers: &[Vec<u32>], a: usize) -> (Vec<u32>, Vec<[u32; 3]>, Vec<Vec<usize>>) {
    let Some(ca) = g.at[a] else {
        return Default::default();
    };
    let mut free: Vec<[u32; 3]> = (0..GROUPS)
        .filter_map(|k| g.step(ca, k / 2, k % 2 == 1))
        .filter(|&c| g.pos[g.idx(c)] == NONE)
        .collect();
    free.dedup();
    let cands: Vec<u32> = peers[a]
        .iter()
        .copied()
        .filter(|&x| g.at[x as usize].is_none())
        .collect();
    let fits = cands
        .iter()
        .map(|&x| {
            (0..free.len())
                .filter(|&k| {
                    peers[x as usize].iter().all(|&y| match g.at[y as usize] {
                        Some(cy) => g.adjacent(cy, free[k]),
                        None => true,
                    })
                })
                .collect()
        })
        .collect();
    (cands, free, fits)
}

/// Places every switch it can from what is placed: an unplaced neighbour consistent with
/// exactly one free position goes there, unless another is decided for the same one (then
/// the fabric is not this torus there). One placement per look, since it changes what the
/// others are consistent with. Ends: switches are queued again only after a placement, and
/// there are at most as many placements as switches.
fn propagate(g: &mut Geo, peers: &[Vec<u32>]) {
    let mut queue: Vec<u32> = g.order.clone();
    let mut qi = 0;
    while qi < queue.len() {
        let a = queue[qi] as usize;
        qi += 1;
        let (cands, free, fits) = options(g, peers, a);
        let pick = fits.iter().enumerate().find_map(|(j, f)| match f[..] {
            [k] if fits.iter().filter(|g2| g2[..] == [k]).count() == 1 => Some((j, k)),
            _ => None,
        });
        if let Some((j, k)) = pick {
            let x = cands[j] as usize;
            if g.put(x, free[k]).is_ok() {
                // x, its placed neighbours and a itself may decide more now
                queue.push(x as u32);
                for &y in &peers[x] {
                    if g.at[y as usize].is_some() {
                        queue.push(y);
                    }
                }
                queue.push(a as u32);
            }
        }
    }
}

/// Every switch placed and every link between torus neighbours.
fn complete_and_consistent(t: &Topo, g: &Geo) -> bool {
    (0..t.n).all(|s| match g.at[s] {
        None => false,
        Some(c) => t
            .links(s)
            .iter()
            .all(|a| g.at[a.peer as usize].is_some_and(|cp| g.adjacent(c, cp))),
    })
}

/// Propagation, and where it stops short (a missing switch leaves two places a neighbour
/// fits, as in a radix-4 ring), each of the places tried in turn, a few levels deep; the
/// first placement that is complete with every link between neighbours is kept.
fn place(t: &Topo, g: &mut Geo, peers: &[Vec<u32>], depth: usize) {
    propagate(g, peers);
    if depth == 0 || g.order.len() == t.n {
        return;
    }
    let ambiguous = g.order.iter().find_map(|&a| {
        let (cands, free, fits) = options(g, peers, a as usize);
        fits.iter().position(|f| f.len() > 1).map(|j| {
            (
                cands[j] as usize,
                fits[j].iter().map(|&k| free[k]).collect::<Vec<_>>(),
            )
        })
    });
    let Some((x, places)) = ambiguous else { return };
    for c in places {
        let mut h = g.clone();
        if h.put(x, c).is_err() {
            continue;
        }
        place(t, &mut h, peers, depth - 1);
        if complete_and_consistent(t, &h) {
            *g = h;
            return;
        }
    }
}

/// The geometry from a config: the first seed whose switches are all there.
fn from_config(t: &Topo, c: &TorusConfig) -> Result<Geo, EngineError> {
    let mut by_guid = rustc_hash::FxHashMap::default();
    for s in 0..t.n {
        by_guid.insert(t.guid(s), s);
    }
    let mut why = Vec::new();
    'seeds: for (k, seed) in c.seeds.iter().enumerate() {
        let mut from = None;
        for d in 0..3 {
            for m in 0..2 {
                if let Some((a, _)) = seed.links[d][m] {
                    if from.is_some_and(|f| f != a) {
                        why.push(format!("seed {k}: links do not start at one switch"));
                        continue 'seeds;
                    }
                    from = Some(a);
                }
            }
        }
        let Some(from) = from else { continue };
        let Some(&s0) = by_guid.get(&from) else {
            why.push(format!("seed {k}: switch {from:#x} is not in the fabric"));
            continue;
        };
        let mut g = Geo::new(c.radix, c.mesh, t.n, format!("torus-2QoS.conf seed {k}"));
        let origin = [0, 1, 2].map(|d| {
            let r = c.radix[d] as i64;
            ((-(seed.dateline[d] as i64)).rem_euclid(r)) as u32
        });
        if let Err(e) = g.put(s0, origin) {
            why.push(format!("seed {k}: {e}"));
            continue;
        }
        for d in 0..3 {
            for m in 0..2 {
                let Some((_, b)) = seed.links[d][m] else {
                    continue;
                };
                let Some(&sb) = by_guid.get(&b) else {
                    why.push(format!("seed {k}: switch {b:#x} is not in the fabric"));
                    continue 'seeds;
                };
                // the link itself may be missing (as in OpenSM): the config says where b is
                // one step round the ring (OpenSM places seed neighbours modulo the radix,
                // mesh or not: in a radix-2 dimension + and - are the same switch)
                let r = c.radix[d];
                if r <= 1 {
                    why.push(format!("seed {k}: dimension {d} has radix 1"));
                    continue 'seeds;
                }
                let mut cb = origin;
                cb[d] = if m == 0 {
                    (origin[d] + 1) % r
                } else {
                    (origin[d] + r - 1) % r
                };
                if let Err(e) = g.put(sb, cb) {
                    why.push(format!("seed {k}: {e}"));
                    continue 'seeds;
                }
            }
        }
        for d in 0..3 {
            if c.radix[d] > 1 && seed.links[d].iter().all(|l| l.is_none()) {
                why.push(format!("seed {k}: no seed link in dimension {d}"));
                continue 'seeds;
            }
            if c.radix[d] == 4 && !c.mesh[d] && seed.links[d].iter().any(|l| l.is_none()) {
                why.push(format!(
                    "seed {k}: a radix-4 torus dimension needs both its p and m seed links"
                ));
                continue 'seeds;
            }
        }
        let peers: Vec<Vec<u32>> = (0..t.n)
            .map(|s| super::tree::distinct_peers(t, s))
            .collect();
        place(t, &mut g, &peers, 3);
        return Ok(g);
    }
    Err(EngineError::BadOptions(format!(
        "torus-2QoS.conf: no usable seed ({})",
        why.join("; ")
    )))
}

/// The geometry from the generator's hints (coordinates, dimensions, wrap flags), not for a
/// HyperX.
fn from_hints(t: &Topo) -> Option<Geo> {
    let h = &t.f.hints;
    // coordinates of tori and meshes (a HyperX has coordinates too, but is no torus)
    if h.kind.starts_with("hyperx")
        || h.dims.is_empty()
        || h.dims.len() > 3
        || h.coords.len() != t.f.nodes.len()
    {
        return None;
    }
    let mut r = [1u32; 3];
    let mut mesh = [true; 3];
    for (d, &x) in h.dims.iter().enumerate() {
        r[d] = x.max(1);
        mesh[d] = !h.wrap.get(d).copied().unwrap_or(false);
    }
    let mut g = Geo::new(r, mesh, t.n, "the generator's coordinates".into());
    for s in 0..t.n {
        if !t.alive[s] {
            continue;
        }
        let c = &h.coords[t.f.switches[s].idx()];
        if c.len() != h.dims.len() {
            return None;
        }
        let mut cc = [0u32; 3];
        cc[..c.len()].copy_from_slice(c);
        if (0..3).any(|d| cc[d] >= r[d]) || g.put(s, cc).is_err() {
            return None;
        }
    }
    Some(g)
}

/// A config found from the switch graph: a mesh ([`super::dor::infer_mesh`]), or a torus
/// whose radices are all ≥ 5 (at the first switch, neighbours that share no other
/// neighbour are the two ways of one ring; a ring's radix is the walk straight round it).
fn infer(t: &Topo) -> Option<(TorusConfig, String)> {
    let f = t.f;
    let whole = t;
    if let Some((coords, dims)) = super::dor::infer_mesh(f) {
        if dims.len() <= 3 {
            // seed: the switch at the origin and its + neighbours
            let s0 = coords.iter().position(|c| c.iter().all(|&x| x == 0))?;
            let mut seed = Seed::default();
            let mut r = [1u32; 3];
            for d in 0..dims.len() {
                r[d] = dims[d];
                let mut want = coords[s0].clone();
                want[d] = 1;
                let sb = coords.iter().position(|c| *c == want)?;
                seed.links[d][0] = Some((whole.guid(s0), whole.guid(sb)));
            }
            let c = TorusConfig {
                radix: r,
                mesh: [true; 3],
                seeds: vec![seed],
                port_order: Vec::new(),
                portgroup_max_ports: 16,
            };
            return Some((c, "coordinates inferred: a mesh".into()));
        }
    }
    let s0 = (0..whole.n).find(|&s| whole.alive[s])?;
    let peers: Vec<Vec<u32>> = (0..whole.n)
        .map(|s| super::tree::distinct_peers(whole, s))
        .collect();
    let common = |a: usize, b: usize, not: usize| {
        peers[a]
            .iter()
            .filter(|&&x| x as usize != not && peers[b].binary_search(&x).is_ok())
            .count()
    };
    let nb = &peers[s0];
    if nb.is_empty() || !nb.len().is_multiple_of(2) || nb.len() > 6 {
        return None;
    }
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (i, &u) in nb.iter().enumerate() {
        let opp: Vec<usize> = nb
            .iter()
            .enumerate()
            .filter(|&(j, &v)| j != i && common(u as usize, v as usize, s0) == 0)
            .map(|(_, &v)| v as usize)
            .collect();
        let [v] = opp[..] else { return None };
        if (u as usize) < v {
            pairs.push((u as usize, v));
        }
    }
    if pairs.len() * 2 != nb.len() {
        return None;
    }
    let mut seed = Seed::default();
    let mut r = [1u32; 3];
    for (d, &(u, v)) in pairs.iter().enumerate() {
        // walk straight from s0 through u until back at s0
        let (mut prev, mut cur, mut len) = (s0, u, 1u32);
        while cur != s0 {
            let next: Vec<usize> = peers[cur]
                .iter()
                .map(|&w| w as usize)
                .filter(|&w| w != prev && (w == s0 && prev != s0 || common(prev, w, cur) == 0))
                .collect();
            let [w] = next[..] else { return None };
            (prev, cur) = (cur, w);
            len += 1;
            if len as usize > whole.n {
                return None;
            }
        }
        if len < 5 {
            return None;
        }
        r[d] = len;
        seed.links[d] = [
            Some((whole.guid(s0), whole.guid(u))),
            Some((whole.guid(s0), whole.guid(v))),
        ];
    }
    let c = TorusConfig {
        radix: r,
        mesh: [false; 3],
        seeds: vec![seed],
        port_order: Vec::new(),
        portgroup_max_ports: 16,
    };
    Some((c, "coordinates inferred: a torus".into()))
}

/// The geometry of the live fabric: config, else hints, else inferred; found on the whole
/// fabric (a switch keeps its coordinates whatever else fails, and a failed seed switch or
/// seed link does not matter), then restricted to the live switches.
fn geometry(t: &Topo, opts: &RouteOptions) -> Result<Geo, EngineError> {
    let whole = Topo::new(t.f, &FaultMask::none(t.f));
    let mut g = if let Some(c) = &opts.engine.torus.config {
        from_config(&whole, c)?
    } else if let Some(g) = from_hints(&whole) {
        g
    } else if let Some((c, why)) = infer(&whole) {
        let mut g = from_config(&whole, &c)?;
        g.source = why;
        g
    } else {
        return Err(EngineError::NotApplicable(
            "no torus-2QoS.conf given (--torus-config), no coordinates in the topology hints, and the switch graph is neither a mesh nor a torus whose radices are all 5 or more: give the radices and seed links in a torus-2QoS.conf".into(),
        ));
    };
    let unplaced: Vec<usize> = (0..t.n).filter(|&s| g.at[s].is_none()).collect();
    if let Some(&s) = unplaced.first() {
        return Err(EngineError::NotApplicable(format!(
            "not a {} torus ({}): {} switches could not be placed, e.g. {:?}",
            g.r.map(|x| x.to_string()).join("x"),
            g.source,
            unplaced.len(),
            t.f.node(t.f.switches[s]).name
        )));
    }
    for s in 0..t.n {
        if !t.alive[s] {
            if let Some(c) = g.at[s].take() {
                let i = g.idx(c);
                g.pos[i] = NONE;
            }
        }
    }
    g.order.retain(|&s| t.alive[s as usize]);
    Ok(g)
}

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
                        r.lft_of_mut(sw).copy_from_slice(&row);
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
            let Some(a) = g.at.get(s).copied().flatten() else {
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
