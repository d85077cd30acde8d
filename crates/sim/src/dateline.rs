//! The classic dateline on two VLs, as SL + SL2VL tables over given LFTs on a torus (Dally and
//! Seitz; what torus-2QoS does per dimension): bit k of a path's SL says whether the path
//! crosses the wrap-around link of dimension k; a channel of dimension k carries VL 1 when
//! that bit is set and the packet has crossed, or is crossing, the wrap, VL 0 otherwise.
//!
//! With shortest paths in each ring (at most half way round) "has crossed" is a property of
//! the switch: moving `+` along a ring of n, a packet that crosses the wrap is on the far side
//! exactly when its coordinate is below n/2 (and the wrap channel leaves n-1); moving `-`,
//! when it is at n/2 or above (the wrap channel leaves 0). So the SL2VL entry of a switch
//! needs only its coordinate and the direction of the output port. The VLs of each
//! dimension then form no cycle; with dimension-ordered paths the dimensions do not either.
//! [`dateline`] returns the tables unchecked: run [`routing::cdg::check`] on them (paths that
//! are not dimension ordered keep their cycles).

use fabric::{Fabric, Lid, NodeId, NodeKind};
use routing::forward::{Control, Forward, Plane};
use routing::tables::PathSl;
use routing::Routing;

/// Why a dateline cannot be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DatelineError {
    #[error("the fabric has no torus coordinates (generate it with `fabroute gen torus ...`)")]
    NoCoordinates,
    #[error("{0} dimensions: SLs encode at most 4")]
    TooManyDimensions(usize),
    #[error("dimension {0} has {1} switches: a dateline needs rings of 3 or more")]
    ShortRing(usize, u32),
    #[error("switch {0} has a port to a switch that is not a ring neighbour")]
    NotATorus(String),
}

/// Coordinates per switch index, dimensions and wrap flags: the generator's hints, or, for a
/// fabric read from a file, the switch names `fabroute gen torus` writes (`S_x`, `S_x_y`, ...:
/// dimension sizes from the largest coordinate, a dimension wraps when a link joins its first
/// and last coordinate).
type Grid = (Vec<Vec<u32>>, Vec<u32>, Vec<bool>);

fn coords(f: &Fabric) -> Result<Grid, DatelineError> {
    let h = &f.hints;
    let (xy, dims, wrap) = if !h.dims.is_empty() && h.coords.len() == f.nodes.len() {
        let xy = f
            .switches
            .iter()
            .map(|&s| {
                let c = &h.coords[s.idx()];
                if c.len() == h.dims.len() {
                    Ok(c.clone())
                } else {
                    Err(DatelineError::NoCoordinates)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let wrap = (0..h.dims.len())
            .map(|k| h.wrap.get(k).copied().unwrap_or(false))
            .collect();
        (xy, h.dims.clone(), wrap)
    } else {
        from_names(f).ok_or(DatelineError::NoCoordinates)?
    };
    if dims.len() > 4 {
        return Err(DatelineError::TooManyDimensions(dims.len()));
    }
    for (k, &n) in dims.iter().enumerate() {
        if wrap[k] && n < 3 {
            return Err(DatelineError::ShortRing(k, n));
        }
    }
    Ok((xy, dims, wrap))
}

/// Coordinates from switch names `S_x_y...` (see [`coords`]).
fn from_names(f: &Fabric) -> Option<Grid> {
    let mut xy = Vec::with_capacity(f.switches.len());
    for &s in &f.switches {
        let name = &f.node(s).name;
        let rest = name.strip_prefix("S_")?;
        let c: Vec<u32> = rest
            .split('_')
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        xy.push(c);
    }
    let nd = xy.first()?.len();
    if nd == 0 || xy.iter().any(|c| c.len() != nd) {
        return None;
    }
    let dims: Vec<u32> = (0..nd)
        .map(|k| xy.iter().map(|c| c[k]).max().unwrap_or(0) + 1)
        .collect();
    let mut wrap = vec![false; nd];
    for (s, _) in f.switches.iter().enumerate() {
        for &ch in f.switch_links(fabric::SwitchIdx(s as u32)) {
            let Some(t) = f.dst_switch(ch).map(fabric::SwitchIdx::idx) else {
                continue;
            };
            let (a, b) = (&xy[s], &xy[t]);
            for k in 0..nd {
                if dims[k] > 2
                    && (a[k] == 0 && b[k] == dims[k] - 1 || b[k] == 0 && a[k] == dims[k] - 1)
                {
                    wrap[k] = true;
                }
            }
        }
    }
    Some((xy, dims, wrap))
}

/// The dimension and direction (+1 / -1) of a hop from coordinates `a` to `b`, and whether it
/// is the wrap-around link.
fn step(dims: &[u32], wrap: &[bool], a: &[u32], b: &[u32]) -> Option<(usize, i8, bool)> {
    let mut found = None;
    for k in 0..dims.len() {
        if a[k] == b[k] {
            continue;
        }
        if found.is_some() {
            return None;
        }
        let n = dims[k];
        let w = wrap.get(k).copied().unwrap_or(false);
        found = if b[k] == a[k] + 1 {
            Some((k, 1, false))
        } else if a[k] == b[k] + 1 {
            Some((k, -1, false))
        } else if w && a[k] == n - 1 && b[k] == 0 {
            Some((k, 1, true))
        } else if w && a[k] == 0 && b[k] == n - 1 {
            Some((k, -1, true))
        } else {
            return None;
        };
    }
    found
}

/// `r` with path SLs and SL2VL tables for a dateline on VLs 0 and 1 (LFTs unchanged). See the
/// module documentation.
pub fn dateline(f: &Fabric, r: &Routing) -> Result<Routing, DatelineError> {
    let (xy, dims, wrap) = coords(f)?;
    let mut out = r.clone();
    // SL2VL: per switch, per output port to a ring neighbour.
    for (s, &n) in f.switches.iter().enumerate() {
        let np = f.node(n).nports;
        let mut rows: Vec<(u8, [u8; 16])> = Vec::new();
        for o in 1..=np {
            let Some(c) = f.out_channel(f.port_id(n, o)) else {
                continue;
            };
            let far = f.port(f.channel_dst(c)).node;
            let mut vls = [0u8; 16];
            if let Some(fs) = f.switch_of(far) {
                let (k, dir, _) = step(&dims, &wrap, &xy[s], &xy[fs.idx()])
                    .ok_or_else(|| DatelineError::NotATorus(f.node(n).name.clone()))?;
                let x = xy[s][k];
                let half = dims[k].div_ceil(2);
                let crossed = if !wrap[k] {
                    false
                } else if dir > 0 {
                    x < dims[k] / 2 || x == dims[k] - 1
                } else {
                    x >= half || x == 0
                };
                for (sl, v) in vls.iter_mut().enumerate() {
                    *v = u8::from(crossed && (sl >> k) & 1 == 1);
                }
            }
            rows.push((o, vls));
        }
        // Every entry is written (VL 0 outside the ring ports), so the tables use VLs 0 and 1
        // only.
        for inp in 0..=np {
            for o in 0..=np {
                let vls = rows
                    .iter()
                    .find(|r| r.0 == o)
                    .map(|r| r.1)
                    .unwrap_or([0; 16]);
                for (sl, &v) in vls.iter().enumerate() {
                    out.sl2vl.set(n, inp, o, sl as u8, v);
                }
            }
        }
    }
    // End nodes inject on VL 0 whatever the SL.
    for (i, node) in f.nodes.iter().enumerate() {
        if node.kind != NodeKind::Switch {
            let n = NodeId(i as u32);
            for inp in 0..=node.nports {
                for p in 0..=node.nports {
                    for sl in 0..16u8 {
                        out.sl2vl.set(n, inp, p, sl, 0);
                    }
                }
            }
        }
    }
    // Path SLs: the wrap links each (source, LID) path crosses.
    let plane = Plane::new(f, None);
    let fw = Forward::new(f, &plane, r);
    let stride = r.stride();
    let ne = f.end_ports.len();
    let mut sl = vec![0u8; ne * stride];
    for (src, _) in f.end_ports.iter().enumerate() {
        for (dst, &dp) in f.end_ports.iter().enumerate() {
            if dst == src {
                continue;
            }
            let port = f.port(dp);
            let base = port.lid;
            for off in 0..(1u32 << port.lmc) {
                let lid = (base as u32 + off) as Lid;
                if lid as usize >= stride {
                    continue;
                }
                let mut bits = 0u8;
                fw.walk_pair(src as u32, lid, dp, |st| {
                    if let Some((ns, _)) = st.next_switch() {
                        if let Some((k, _, true)) =
                            step(&dims, &wrap, &xy[st.sw as usize], &xy[ns as usize])
                        {
                            bits |= 1 << k;
                        }
                    }
                    Control::Continue
                });
                sl[src * stride + lid as usize] = bits;
            }
        }
    }
    out.path_sl = PathSl::PerPair { stride, sl };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::FaultMask;
    use routing::engines::{by_name, RouteOptions};

    fn route(spec: &str, engine: &str) -> (Fabric, Routing) {
        let f = spec
            .parse::<fabric::gen::TopoSpec>()
            .unwrap()
            .generate()
            .unwrap();
        let r = by_name(engine)
            .unwrap()
            .route(&f, &FaultMask::none(&f), &RouteOptions::default())
            .unwrap();
        (f, r)
    }

    /// Shortest paths on rings of 5 to 8 and DOR on 2-D tori: credit loops before, none with
    /// the dateline, and two VLs used.
    #[test]
    fn dateline_breaks_every_ring_cycle() {
        for (spec, engine) in [
            ("torus 8 hcas=1", "minhop"),
            ("torus 5 hcas=2", "minhop"),
            ("torus 7 hcas=1", "minhop"),
            ("torus 4x4 hcas=2", "dor"),
            ("torus 5x3 hcas=1", "dor"),
        ] {
            let (f, r) = route(spec, engine);
            assert!(!routing::cdg::check(&f, &r, None).deadlock_free, "{spec}");
            let d = dateline(&f, &r).unwrap();
            let rep = routing::cdg::check(&f, &d, None);
            assert!(rep.deadlock_free, "{spec} {engine}: {:?}", rep.cycles);
            assert_eq!(rep.pairs.ok, rep.pairs.checked);
            assert_eq!(rep.cdg.vls_used, vec![0, 1], "{spec}");
        }
    }

    /// A fabric written to an ibsim file and read back has no hints: the names give the
    /// coordinates, and the tables come out the same.
    #[test]
    fn coordinates_from_names_when_read_from_a_file() {
        let (f, r) = route("torus 5x4 hcas=1", "dor");
        let text = fabric::io::writers::to_ibsim(&f).unwrap();
        let g = fabric::io::read(
            text.as_bytes(),
            "t.net",
            &mut |_| Err("no includes".into()),
            Default::default(),
        )
        .unwrap()
        .fabric;
        assert!(g.hints.dims.is_empty());
        let (xy, dims, wrap) = from_names(&g).unwrap();
        assert_eq!((dims, wrap), (vec![5, 4], vec![true, true]));
        assert_eq!(xy.len(), 20);
        let a = dateline(&f, &r).unwrap();
        let b = dateline(&g, &r).unwrap();
        assert_eq!(a.path_sl, b.path_sl);
    }

    #[test]
    fn refuses_fabrics_without_coordinates() {
        let (f, r) = route("ktree 2 2", "updn");
        assert_eq!(dateline(&f, &r).unwrap_err(), DatelineError::NoCoordinates);
    }
}
