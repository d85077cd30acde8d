//! The fat-tree engine's completion of a destination's column: switches the tree walk
//! leaves without an entry get one over a legal path.

use super::*;

/// Per-thread scratch for [`complete_column`].
#[derive(Debug, Default)]
pub(super) struct CompScratch {
    /// 0 = no entry, 1 = being resolved, 2 = entry with known hops/label
    pub(super) state: Vec<u8>,
    pub(super) hops: Vec<u16>,
    pub(super) down: Vec<bool>,
    pub(super) stack: Vec<u32>,
    pub(super) a: Vec<u32>,
    pub(super) b: Vec<u32>,
    pub(super) cand: Vec<(u8, u32)>,
}

/// Completes one destination column (`col[s]` = output port of switch `s`, `NO_PORT` = none
/// yet; `col[d]` set) with up*/down*-consistent entries, using the final link loads for
/// tie-breaking. Returns (fell back to the up*/down* BFS, entries left unreachable).
pub(super) fn complete_column(
    ft: &FtreeState,
    rk: &UpDownRanking,
    codes_row: &[u16],
    d: usize,
    col: &mut [u8],
    sc: &mut CompScratch,
) -> (bool, usize) {
    let t = ft.t;
    let n = t.n;
    sc.state.clear();
    sc.state.resize(n, 0);
    sc.hops.resize(n, 0);
    sc.down.resize(n, false);
    sc.state[d] = 2;
    sc.hops[d] = 0;
    sc.down[d] = true;
    // Hops and labels of the entries the fat-tree pass made (follow the next pointers).
    for s0 in 0..n {
        if !t.alive[s0] || sc.state[s0] != 0 || col[s0] == NO_PORT {
            continue;
        }
        sc.stack.clear();
        let mut x = s0;
        let ok = loop {
            match sc.state[x] {
                2 => break true,
                1 => break false,
                _ => {}
            }
            if col[x] == NO_PORT {
                break false;
            }
            sc.state[x] = 1;
            sc.stack.push(x as u32);
            let nx = ft.peer_of(x, col[x]);
            if nx == u32::MAX {
                break false;
            }
            x = nx as usize;
        };
        while let Some(y) = sc.stack.pop() {
            let y = y as usize;
            if ok {
                let ny = ft.peer_of(y, col[y]) as usize;
                sc.hops[y] = sc.hops[ny].saturating_add(1);
                sc.down[y] = !rk.is_up_sw(y, ny) && sc.down[ny];
                sc.state[y] = 2;
            } else {
                sc.state[y] = 0;
                col[y] = NO_PORT;
            }
        }
    }
    // Pass 1: down entries propagate upward from down-labelled switches, by hops.
    sc.a.clear();
    sc.b.clear();
    for s in 0..n {
        if sc.state[s] == 2 && sc.down[s] {
            sc.a.push(s as u32);
        }
    }
    {
        let hops = &sc.hops;
        sc.a.sort_unstable_by_key(|&s| (hops[s as usize], s));
    }
    let (mut ia, mut ib) = (0, 0);
    loop {
        let take_a = match (sc.a.get(ia), sc.b.get(ib)) {
            (Some(&x), Some(&y)) => sc.hops[x as usize] <= sc.hops[y as usize],
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let u = if take_a {
            ia += 1;
            sc.a[ia - 1]
        } else {
            ib += 1;
            sc.b[ib - 1]
        } as usize;
        let nh = sc.hops[u].saturating_add(1);
        for g in ft.up[u]..ft.down[u] {
            let gr = ft.groups[g as usize];
            let p = gr.remote as usize;
            if sc.state[p] != 0 || gr.mirror == u32::MAX {
                continue;
            }
            // p forwards down to u on its least-loaded link toward u
            let pgr = ft.groups[gr.mirror as usize];
            let mut best = ft.gch[pgr.start as usize];
            for i in pgr.start + 1..pgr.end {
                let x = ft.gch[i as usize];
                if ft.load[x.ch as usize] < ft.load[best.ch as usize] {
                    best = x;
                }
            }
            col[p] = best.port;
            sc.state[p] = 2;
            sc.hops[p] = nh;
            sc.down[p] = true;
            sc.b.push(p as u32);
        }
    }
    // Pass 2: top-down, switches without an entry go up to a parent with one.
    let mut missing = false;
    for &s in &ft.by_rank {
        let s = s as usize;
        if sc.state[s] == 2 {
            continue;
        }
        let (u0, u1) = (ft.up[s] as usize, ft.down[s] as usize);
        // Among the parents with an entry and the fewest hops, the least-loaded link.
        let mut best: Option<(u16, u32, GLink)> = None;
        for g in u0..u1 {
            let gr = ft.groups[g];
            let p = gr.remote as usize;
            if sc.state[p] != 2 {
                continue;
            }
            for j in gr.start..gr.end {
                let l = ft.gch[j as usize];
                let key = (sc.hops[p], ft.load[l.ch as usize]);
                if best.is_none_or(|(h, ld, _)| key < (h, ld)) {
                    best = Some((key.0, key.1, l));
                }
            }
        }
        match best {
            Some((h, _, l)) => {
                col[s] = l.port;
                sc.state[s] = 2;
                sc.hops[s] = h.saturating_add(1);
                sc.down[s] = false;
            }
            None => missing = true,
        }
    }
    if !missing {
        return (false, 0);
    }
    // Switches still without an entry: if one of them has an up*/down* path under the ranking,
    // route the whole column by the up*/down* BFS; otherwise only those get BFS entries
    // (escapes, as they have no legal path).
    let fallback = (0..n).any(|s| {
        t.alive[s] && sc.state[s] != 2 && codes_row[s] != INF && code_is_legal(codes_row[s])
    });
    let mut unreached = 0;
    #[allow(clippy::needless_range_loop)] // s indexes several arrays besides col
    for s in 0..n {
        if !t.alive[s] || s == d || (sc.state[s] == 2 && !fallback) {
            continue;
        }
        sc.cand.clear();
        updown_cands(t, rk, codes_row, s, &mut sc.cand);
        if sc.cand.is_empty() {
            col[s] = NO_PORT;
            unreached += 1;
            continue;
        }
        let mut best = sc.cand[0].0;
        let mut bl = u32::MAX;
        for &(p, _) in sc.cand.iter() {
            let l = ft.load[ft.ch_of(s, p) as usize];
            if l < bl {
                bl = l;
                best = p;
            }
        }
        col[s] = best;
    }
    (fallback, unreached)
}
