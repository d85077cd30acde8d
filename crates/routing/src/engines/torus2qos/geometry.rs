//! Where each switch sits in the torus, for the torus-2QoS engine: from the configuration's
//! seed links, from the generator's hints, or inferred; placement by consistent neighbours
//! (see the engine's documentation).

use super::config::{Seed, TorusConfig};
use crate::engines::common::Topo;
use crate::engines::{EngineError, RouteOptions};
use fabric::FaultMask;

pub(super) const NONE: u32 = u32::MAX;
/// Direction groups per switch: `2d` = toward −d, `2d + 1` = toward +d.
pub(super) const GROUPS: usize = 6;

/// The torus as found: radices, wrap flags, positions.
#[derive(Clone, Debug)]
pub(super) struct Geo {
    pub(super) r: [u32; 3],
    pub(super) wrap: [bool; 3],
    /// Per position (x + X·(y + Y·z)): the live switch there, or `NONE`.
    pub(super) pos: Vec<u32>,
    /// Per switch: its coordinates (`None`: not placed).
    pub(super) at: Vec<Option<[u32; 3]>>,
    /// Switches in the order they were placed (destination order of the tables).
    pub(super) order: Vec<u32>,
    /// Where the coordinates came from, for the notes.
    pub(super) source: String,
}

impl Geo {
    pub(super) fn new(r: [u32; 3], mesh: [bool; 3], n: usize, source: String) -> Self {
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
    pub(super) fn idx(&self, c: [u32; 3]) -> usize {
        c[0] as usize + self.r[0] as usize * (c[1] as usize + self.r[1] as usize * c[2] as usize)
    }
    /// One step from `c` in dimension `d`, `+` when `up`; `None` off a mesh's edge or in an
    /// absent dimension.
    pub(super) fn step(&self, c: [u32; 3], d: usize, up: bool) -> Option<[u32; 3]> {
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
    pub(super) fn dir(&self, a: [u32; 3], b: [u32; 3]) -> Option<usize> {
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
    pub(super) fn adjacent(&self, a: [u32; 3], b: [u32; 3]) -> bool {
        self.dir(a, b).is_some()
    }
    pub(super) fn put(&mut self, s: usize, c: [u32; 3]) -> Result<(), String> {
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
pub(super) fn options(
    g: &Geo,
    peers: &[Vec<u32>],
    a: usize,
) -> (Vec<u32>, Vec<[u32; 3]>, Vec<Vec<usize>>) {
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
pub(super) fn propagate(g: &mut Geo, peers: &[Vec<u32>]) {
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
pub(super) fn complete_and_consistent(t: &Topo, g: &Geo) -> bool {
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
pub(super) fn place(t: &Topo, g: &mut Geo, peers: &[Vec<u32>], depth: usize) {
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
pub(super) fn from_config(t: &Topo, c: &TorusConfig) -> Result<Geo, EngineError> {
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
            .map(|s| crate::engines::tree::distinct_peers(t, s))
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
pub(super) fn from_hints(t: &Topo) -> Option<Geo> {
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

/// A config found from the switch graph: a mesh ([`crate::engines::dor::infer_mesh`]), or a torus
/// whose radices are all ≥ 5 (at the first switch, neighbours that share no other
/// neighbour are the two ways of one ring; a ring's radix is the walk straight round it).
pub(super) fn infer(t: &Topo) -> Option<(TorusConfig, String)> {
    let f = t.f;
    let whole = t;
    if let Some((coords, dims)) = crate::engines::dor::infer_mesh(f) {
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
        .map(|s| crate::engines::tree::distinct_peers(whole, s))
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
pub(super) fn geometry(t: &Topo, opts: &RouteOptions) -> Result<Geo, EngineError> {
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
