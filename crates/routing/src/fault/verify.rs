//! Independent verification of an RFTR state from its tables: every selected
//! (source end port, DLID, SL) is walked through the LFTs and SL2VL tables, and the channel
//! dependency graph over (channel, VL) of those walks — optionally together with the
//! surviving prefixes of the walks in use before the last fault (the migration union, walked
//! through the tables of a [`Snapshot`] taken before it) — is searched for cycles with the
//! checker's SCC routine.
//!
//! Walks are memoised per (DLID, SL): from a given (channel, VL) the rest of a walk is fixed
//! by the tables, so each (channel, VL) vertex is expanded once per (DLID, SL) and every pair
//! still gets its own arrival verdict. Nothing here reads RFTR's path store.

use super::rftr::Rftr;
use crate::cdg::cyclic_sccs;
use crate::forward::{Control, Forward, Hop, Plane, WalkEnd, WalkStep, NONE};
use crate::tables::{Routing, NUM_SLS};
use fabric::{Fabric, FaultMask, Lid};
use serde::Serialize;

/// Verdict on one state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SelectedCheck {
    /// Selected pairs walked.
    pub pairs: u64,
    /// Selected pairs whose walk does not arrive (must be 0).
    pub undelivered: u64,
    /// Largest VL seen on an inter-switch hop, plus one.
    pub vls_used: u8,
    /// Cyclic strongly connected components in the dependency graph.
    pub cyclic_sccs: usize,
    pub deadlock_free: bool,
}

/// What was in use before a fault: the tables and every selected
/// (source end port, destination end port, DLID).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub routing: Routing,
    pub pairs: Vec<(u32, u32, Lid)>,
}

impl Snapshot {
    pub fn of(r: &Rftr<'_>) -> Self {
        Snapshot {
            routing: r.routing.clone(),
            pairs: r.selected_pairs(),
        }
    }
}

/// A pair as the walker groups it: (DLID * 16 + path SL, source, destination).
fn keyed(r: &Routing, (src, dst, dlid): (u32, u32, Lid)) -> (u32, u32, u32) {
    let sl = r.path_sl.get(src as usize, dlid);
    ((dlid as u32) * NUM_SLS as u32 + sl as u32, src, dst)
}

const PENDING: u8 = 0;
const ARRIVES: u8 = 1;
const FAILS: u8 = 2;

/// Memoised table walker: stamps per (channel, VL) vertex record the (DLID, SL) group that
/// expanded it and the outcome from there.
#[derive(Clone)]
pub(super) struct Walker<'a> {
    f: &'a Fabric,
    pub(super) plane: Plane,
    stamp: Vec<u32>,
    status: Vec<u8>,
    stack: Vec<u32>,
    /// Dependencies found by the walks so far (a vertex expanded, or met, after another).
    pub(super) edges: Vec<(u32, u32)>,
    /// Largest VL met on an inter-switch hop, plus one.
    pub(super) vmax: u8,
    /// Channels: a vertex's memo slot is `vl * channels + channel`, so the slots of one VL
    /// lie together (most walks stay on VL 0).
    nch: u32,
    /// Per switch index, 16 entries: the VL of each SL where no port pair changes it, else
    /// [`PORTS_MATTER`]; empty when not given ([`Walker::with_port_free_vls`]).
    port_free: Vec<u8>,
}

/// A [`Walker::port_free`] entry: this switch's VL depends on the ports.
pub(super) const PORTS_MATTER: u8 = u8::MAX;

/// Per switch index, 16 entries: the VL each SL takes at the switch when no port pair
/// changes it, else [`PORTS_MATTER`]. Valid while `r`'s SL2VL tables do not change.
pub(super) fn port_free_vls(f: &Fabric, r: &Routing) -> Vec<u8> {
    let mut out = vec![PORTS_MATTER; f.switches.len() * NUM_SLS];
    for (s, &n) in f.switches.iter().enumerate() {
        if let Some(m) = r.sl2vl.port_free(n) {
            out[s * NUM_SLS..(s + 1) * NUM_SLS].copy_from_slice(&m);
        }
    }
    out
}

impl<'a> Walker<'a> {
    /// Forgets every memo (stamps start again at 0); for a caller that has run out of salts.
    pub(super) fn forget(&mut self) {
        self.stamp.fill(0);
    }

    pub(super) fn new(f: &'a Fabric, mask: &FaultMask) -> Self {
        let nv = f.links.len() * 2 * NUM_SLS;
        Walker {
            f,
            plane: Plane::new(f, Some(mask)),
            stamp: vec![0; nv],
            status: vec![FAILS; nv],
            stack: Vec::new(),
            edges: Vec::new(),
            vmax: 0,
            nch: (f.links.len() * 2) as u32,
            port_free: Vec::new(),
        }
    }

    /// Reads VLs from `table` ([`port_free_vls`] of the tables walked, which must not change
    /// while this walker is used) where no port changes them.
    pub(super) fn with_port_free_vls(mut self, table: Vec<u8>) -> Self {
        self.port_free = table;
        self
    }

    /// Takes `w`'s forwarding plane and per-switch VLs (this walker's memo stays its own):
    /// a lane of a parallel walk brought up to the state its template walker is in.
    pub(super) fn follow(&mut self, w: &Walker<'a>) {
        self.plane.clone_from(&w.plane);
        self.port_free.clone_from(&w.port_free);
    }

    /// Reads switch index `s`'s SL2VL table again (after a change to it) for the per-switch
    /// VLs, when they are in use.
    pub(super) fn refresh_port_free(&mut self, r: &Routing, s: u32) {
        let row = s as usize * NUM_SLS..(s as usize + 1) * NUM_SLS;
        if let Some(out) = self.port_free.get_mut(row) {
            let m = r.sl2vl.port_free(self.f.switches[s as usize]);
            out.copy_from_slice(&m.unwrap_or([PORTS_MATTER; NUM_SLS]));
        }
    }

    /// Walks every pair through `r`; adds each newly expanded vertex's dependency edge. With
    /// `old`, walks stop silently at the first dead channel (surviving prefixes) and `salt`
    /// keeps their groups apart from the current state's. Returns the pairs that do not arrive.
    fn walk_all(&mut self, r: &Routing, pairs: &[(u32, u32, Lid)], salt: u32) -> u64 {
        // Group by (DLID, SL) so that the memo of one group is complete before the next.
        let mut order: Vec<(u32, u32, u32)> = pairs.iter().map(|&p| keyed(r, p)).collect();
        let kmax = order.iter().map(|o| o.0 as usize + 1).max().unwrap_or(0);
        if kmax <= 8 * order.len() + 1024 {
            // Counting sort on the key: linear, and keys are dense enough.
            let mut at = vec![0u32; kmax + 1];
            for o in &order {
                at[o.0 as usize + 1] += 1;
            }
            for k in 0..kmax {
                at[k + 1] += at[k];
            }
            let mut sorted = vec![(0u32, 0u32, 0u32); order.len()];
            for o in &order {
                let slot = &mut at[o.0 as usize];
                sorted[*slot as usize] = *o;
                *slot += 1;
            }
            order = sorted;
        } else {
            order.sort_unstable();
        }
        self.walk_grouped(r, &order, None, salt, None)
    }

    /// The pairs of one DLID walked through `r` (see [`Walker::walk_grouped`]); `order` is
    /// scratch; `gathered`, when given, holds the column's LFT entries by switch and path SLs
    /// by source, copied from `r` (else they are read from `r`). Returns the pairs that do
    /// not arrive.
    pub(super) fn walk_column(
        &mut self,
        r: &Routing,
        pairs: &[(u32, u32, Lid)],
        salt: u32,
        order: &mut Vec<(u32, u32, u32)>,
        gathered: Option<Gathered<'_>>,
    ) -> u64 {
        order.clear();
        match gathered.and_then(|g| g.sls) {
            Some(sls) => order.extend(pairs.iter().map(|&(src, dst, dlid)| {
                let sl = sls[src as usize];
                ((dlid as u32) * NUM_SLS as u32 + sl as u32, src, dst)
            })),
            None => order.extend(pairs.iter().map(|&p| keyed(r, p))),
        }
        // One DLID: grouping by SL is a sort over at most 16 keys, and usually none is
        // needed (every pair on one SL).
        if order.windows(2).any(|w| w[0].0 != w[1].0) {
            order.sort_by_key(|o| o.0);
        }
        self.walk_grouped(r, order, None, salt, gathered.map(|g| g.lft))
    }

    /// The selected pairs of one column, each switch's sources toward it given as one
    /// representative with how many pairs it stands for (`order[i]` stands for `weights[i]`
    /// pairs: the caller gives one pair for a whole switch only where no port changes its
    /// VLs, and every pair in one group); `lft`, the column's LFT entries by switch when
    /// the caller copied them out (else they are read from `r`). Returns the pairs that do
    /// not arrive.
    pub(super) fn walk_weighted(
        &mut self,
        r: &Routing,
        order: &[(u32, u32, u32)],
        weights: &[u32],
        salt: u32,
        lft: Option<&[u8]>,
    ) -> u64 {
        self.walk_grouped(r, order, Some(weights), salt, lft)
    }

    /// Whether switch index `s` maps `sl` to the same VL whatever the ports (known only with
    /// [`Walker::with_port_free_vls`]).
    pub(super) fn port_free_at(&self, s: u32, sl: u8) -> bool {
        self.port_free
            .get(s as usize * NUM_SLS + sl as usize)
            .is_some_and(|&v| v != PORTS_MATTER)
    }

    /// Walks pairs `(key = DLID * 16 + SL, source, destination)` given grouped by key.
    fn walk_grouped(
        &mut self,
        r: &Routing,
        order: &[(u32, u32, u32)],
        weights: Option<&[u32]>,
        salt: u32,
        lft: Option<&[u8]>,
    ) -> u64 {
        let Walker {
            f,
            plane,
            stamp,
            status,
            stack,
            edges,
            vmax,
            nch,
            port_free,
        } = self;
        let nch = *nch;
        let port_free: &[u8] = port_free;
        let f: &Fabric = f;
        let fw = Forward::new(f, plane, r);
        let mut bad = 0u64;
        // The last walk's (group, source switch, destination, verdict): where the source
        // switch's VLs do not depend on the ports, a source beside it toward the same
        // destination in the same group walks the same way (its first vertex is the same and
        // already stamped: no edge, the same verdict).
        let mut last = (u32::MAX, NONE, u32::MAX, FAILS);
        for (i, &(key, src, dst)) in order.iter().enumerate() {
            // how many pairs this one stands for
            let n = weights.map_or(1, |w| w[i] as u64);
            let dlid = (key / NUM_SLS as u32) as Lid;
            let sl = (key % NUM_SLS as u32) as u8;
            let group = salt + key + 1;
            // The switch the source hangs off, whatever the mask says of the source itself
            // (its pairs are selected, so it is alive).
            let a = fw.plane.attach(src);
            if a.sw == NONE {
                bad += n;
                continue;
            }
            if last.0 == group
                && last.1 == a.sw
                && last.2 == dst
                && port_free
                    .get(a.sw as usize * NUM_SLS + sl as usize)
                    .is_some_and(|&v| v != PORTS_MATTER)
            {
                bad += n * u64::from(last.3 != ARRIVES);
                continue;
            }
            let target = f.end_ports[dst as usize];
            let mut prev = u32::MAX;
            let mut known = FAILS;
            stack.clear();
            let visit = |step: &WalkStep| {
                if !matches!(step.to, Hop::Switch { .. }) {
                    return Control::Continue;
                }
                let vl = match port_free.get(step.sw as usize * NUM_SLS + sl as usize) {
                    Some(&v) if v != PORTS_MATTER => v,
                    _ => fw.vl(step.sw, step.inp, step.out, sl),
                };
                *vmax = (*vmax).max(vl + 1);
                let v = step.ch.0 * NUM_SLS as u32 + vl as u32;
                if prev != u32::MAX {
                    edges.push((prev, v));
                }
                let slot = (vl as u32 * nch + step.ch.0) as usize;
                if stamp[slot] == group {
                    // Known from here on (or a loop back into this walk: PENDING).
                    known = status[slot];
                    return Control::Stop;
                }
                stamp[slot] = group;
                status[slot] = PENDING;
                stack.push(slot as u32);
                prev = v;
                Control::Continue
            };
            let end = match lft {
                Some(col) => fw.walk_from(col, a.sw, a.inp, target, visit),
                None => fw.walk_from(&fw.column(dlid), a.sw, a.inp, target, visit),
            };
            let result = match end {
                WalkEnd::Delivered { .. } => ARRIVES,
                WalkEnd::Broken(_) => FAILS,
                WalkEnd::Stopped if known == PENDING => FAILS,
                WalkEnd::Stopped => known,
            };
            for &v in stack.iter() {
                status[v as usize] = result;
            }
            last = (group, a.sw, dst, result);
            if result != ARRIVES {
                bad += n;
            }
        }
        bad
    }
}

/// Checks the current state of `r`: every selected pair arrives, and the dependency graph of
/// its walks — with `before`, together with the surviving prefixes of the walks selected
/// before the last fault — is acyclic.
pub fn check_state(r: &Rftr<'_>, before: Option<&Snapshot>) -> SelectedCheck {
    check_tables(
        r.fabric(),
        &r.mask,
        &r.routing,
        &r.selected_pairs(),
        before.map(|b| (&b.routing, &b.pairs[..])),
    )
}

/// One column of the tables copied out by the caller (the first whole walk reads a few
/// hundred columns at a time): its LFT entries by switch index, and its path SLs by source
/// end port when they are stored per pair.
#[derive(Clone, Copy)]
pub(super) struct Gathered<'c> {
    pub(super) lft: &'c [u8],
    pub(super) sls: Option<&'c [u8]>,
}

/// Selected pairs: (source end port, destination end port, DLID).
pub type Pairs = [(u32, u32, Lid)];

/// [`check_state`] on plain tables: `pairs` walked through `routing` under `mask`, plus the
/// surviving prefixes of `before`'s pairs walked through its tables.
pub fn check_tables(
    f: &Fabric,
    mask: &FaultMask,
    routing: &Routing,
    pairs: &Pairs,
    before: Option<(&Routing, &Pairs)>,
) -> SelectedCheck {
    let mut w = Walker::new(f, mask);
    let undelivered = w.walk_all(routing, pairs, 0);
    if let Some((br, bp)) = before {
        w.walk_all(br, bp, 1 << 30);
    }
    let nv = f.links.len() * 2 * NUM_SLS;
    let (offsets, targets) = csr(nv, &w.edges);
    let cyclic = cyclic_sccs(nv, &offsets, &targets).len();
    SelectedCheck {
        pairs: pairs.len() as u64,
        undelivered,
        vls_used: w.vmax,
        cyclic_sccs: cyclic,
        deadlock_free: cyclic == 0,
    }
}

/// The dependency graph as CSR without duplicate edges: a counting sort by tail, then each
/// (short) successor list sorted and deduplicated in place. Linear in the edges.
pub(super) fn csr(nv: usize, edges: &[(u32, u32)]) -> (Vec<usize>, Vec<u32>) {
    let mut offsets = vec![0usize; nv + 1];
    for &(a, _) in edges {
        offsets[a as usize + 1] += 1;
    }
    for i in 0..nv {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut targets = vec![0u32; edges.len()];
    for &(a, b) in edges {
        targets[fill[a as usize]] = b;
        fill[a as usize] += 1;
    }
    let mut w = 0usize;
    for v in 0..nv {
        let (lo, hi) = (offsets[v], offsets[v + 1]);
        offsets[v] = w;
        let seg = &mut targets[lo..hi];
        seg.sort_unstable();
        let mut last = None;
        for i in lo..hi {
            let t = targets[i];
            if last != Some(t) {
                targets[w] = t;
                w += 1;
                last = Some(t);
            }
        }
    }
    offsets[nv] = w;
    targets.truncate(w);
    (offsets, targets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{by_name, RouteOptions};

    fn all_pairs(f: &Fabric) -> Vec<(u32, u32, Lid)> {
        let n = f.end_ports.len() as u32;
        (0..n)
            .flat_map(|s| (0..n).filter(move |&d| d != s).map(move |d| (s, d)))
            .map(|(s, d)| (s, d, f.port(f.end_ports[d as usize]).lid))
            .collect()
    }

    /// The memoised walker agrees with the channel-dependency checker: minhop on a torus has
    /// credit loops, updn has none, and every pair arrives in both; with a failed link the
    /// broken pairs are counted and the old tables' surviving prefixes still add edges.
    #[test]
    fn memoised_walks_agree_with_the_checker() {
        let f = super::super::test_fabric("torus 4x4 hcas=2");
        let none = FaultMask::none(&f);
        let pairs = all_pairs(&f);
        for (engine, free) in [("minhop", false), ("updn", true)] {
            let r = by_name(engine)
                .unwrap()
                .route(&f, &none, &RouteOptions::default())
                .unwrap();
            let c = check_tables(&f, &none, &r, &pairs, None);
            assert_eq!(c.undelivered, 0, "{engine}");
            assert_eq!(c.deadlock_free, free, "{engine}");
            assert_eq!(
                crate::cdg::check(&f, &r, None).deadlock_free,
                free,
                "{engine}: checker"
            );
            let mut mask = FaultMask::none(&f);
            mask.fail_link(super::super::sweep::switch_links(&f)[0]);
            let c = check_tables(&f, &mask, &r, &pairs, None);
            assert!(
                c.undelivered > 0,
                "{engine}: a failed link breaks some pairs"
            );
            let u = check_tables(&f, &mask, &r, &pairs, Some((&r, &pairs)));
            assert_eq!(u.undelivered, c.undelivered);
        }
    }
}
