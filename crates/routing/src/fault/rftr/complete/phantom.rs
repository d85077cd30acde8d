//! The completion's phantom pairs: the SL (and VL) of every (source, LID) no selected path
//! uses, and the hints that selected paths give them.

use super::*;

impl Rftr<'_> {
    /// Per switch on a selected path toward (`d`, `lid`): that path's SL and the VL it is on
    /// where it leaves the switch.
    pub(super) fn selected_hints(
        &self,
        tables: &Routing,
        d: u32,
        lid: Lid,
        in_use: bool,
    ) -> Vec<Option<(u8, u8)>> {
        let f = self.f;
        let ns = f.num_switches();
        let target = f.end_ports[d as usize];
        let base = f.port(target).lid;
        let mut hint: Vec<Option<(u8, u8)>> = vec![None; ns];
        if in_use {
            for slot in 0..self.slot_switch.len() {
                let p = self.sel[slot * f.end_ports.len() + d as usize];
                if p >= DROPPED || base + self.paths.off[p as usize] as Lid != lid {
                    continue;
                }
                let sl = self.paths.sl[p as usize];
                // the VL each hop is on, from the SL2VL tables (the first hop from one of the
                // slot's own ports)
                let mut inp = self.slot_ends[slot]
                    .first()
                    .map_or(0, |&e| self.end_swport[e as usize]);
                for &c in self.paths.hops_of(p) {
                    let src = f.port(f.channel_src(c));
                    let x = f.switch_of(src.node).map_or(NONE, |s| s.0);
                    let vl = tables.sl2vl.vl(src.node, inp, src.num, sl);
                    if x != NONE && hint[x as usize].is_none() {
                        hint[x as usize] = Some((sl, vl));
                    }
                    inp = f.port(f.channel_dst(c)).num;
                }
            }
        }
        hint
    }

    /// Path SLs (and, over a base that keeps its VLs, fresh-VL placements) for the pairs no
    /// source uses toward (`dest`, `lid`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn phantom_pairs(
        &self,
        tables: &Routing,
        dest: Dest,
        lid: Lid,
        in_use: bool,
        col: &mut Col,
        hint: &[Option<(u8, u8)>],
        fx: &mut ColumnFix,
    ) {
        let f = self.f;
        let ns = f.num_switches();
        let (d, ds) = match dest {
            Dest::End(d) => (Some(d), self.end_sw[d as usize] as usize),
            Dest::Switch(t) => (None, t as usize),
        };
        let max_vl = self.cfg.vls.saturating_sub(1);
        let Col {
            entry,
            deliv,
            legal,
            filled,
            ..
        } = col;
        // A switch LID is a base LID no pair uses.
        let base_like = d.is_none_or(|d| lid == f.port(f.end_ports[d as usize]).lid || !in_use);
        let mut group_of: Vec<u32> = Vec::new();
        for e in 0..f.end_ports.len() as u32 {
            let s = self.end_sw[e as usize];
            if Some(e) == d || s == NONE || !self.plane.attach(e).live {
                continue;
            }
            if d.is_some_and(|d| self.dlid(e, d) == Some(lid)) {
                continue;
            }
            let s = s as usize;
            if self.fresh.is_some() {
                // Over a base that keeps its VLs: a base (or base-mirroring) column's entries
                // are the base's, so a delivering switch's path is the base path with the
                // base SL; any other phantom path goes whole on a fresh VL (placed below).
                if s == ds || (base_like && deliv[s]) {
                    continue;
                }
                if !(deliv[s] || filled[s]) {
                    fx.uncovered += 1;
                    continue;
                }
                if group_of.is_empty() {
                    group_of = vec![u32::MAX; ns];
                }
                if group_of[s] == u32::MAX {
                    let mut chans = Vec::new();
                    let mut hops_at = Vec::new();
                    let (mut x, mut inp) = (s, 0u8);
                    while x != ds && chans.len() <= ns {
                        let Hop::Switch { sw, inp: nin, ch } = self.plane.hop(x, entry[x]) else {
                            break;
                        };
                        chans.push(ch.0);
                        hops_at.push((x as u32, inp, entry[x]));
                        inp = nin;
                        x = sw as usize;
                    }
                    if x != ds {
                        fx.uncovered += 1;
                        continue;
                    }
                    group_of[s] = fx.fresh.len() as u32;
                    // On a repaired path (a delivering switch some selected path crosses):
                    // from here on the phantom takes that path's channels; on its VL it adds
                    // no dependency at all.
                    let join = if deliv[s] { hint[s] } else { None };
                    let joins_at = hops_at
                        .iter()
                        .enumerate()
                        .skip(1)
                        .find_map(|(k, &(x, _, _))| hint[x as usize].map(|(sl, vl)| (k, sl, vl)));
                    fx.fresh.push(FreshPhantom {
                        chans,
                        hops: hops_at,
                        ends: Vec::new(),
                        join,
                        joins_at,
                        sw: s as u32,
                        // no selected path crosses it: its entry may go
                        revertible: hint[s].is_none(),
                    });
                }
                fx.fresh[group_of[s] as usize]
                    .ends
                    .push((e, self.end_swport[e as usize]));
                continue;
            }
            if s == ds || (legal[s] && (deliv[s] || filled[s])) {
                // a legal path: SL 0, VL 0 all the way
                if tables.path_sl.get(e as usize, lid) != 0 {
                    fx.sls.push((e, 0));
                }
                continue;
            }
            if !(deliv[s] || filled[s]) {
                fx.uncovered += 1;
                continue;
            }
            // Walk the path; VL = illegal turns so far; the SL is coloured afterwards.
            let mut needs = Vec::new();
            let (mut x, mut inp, mut prev, mut vl) = (s, self.end_swport[e as usize], None, 0u8);
            let mut ok = true;
            while x != ds {
                let Hop::Switch { sw, inp: nin, ch } = self.plane.hop(x, entry[x]) else {
                    ok = false;
                    break;
                };
                if let Some(pc) = prev {
                    if !self.rule.legal(f, pc, ch) {
                        vl += 1;
                    }
                }
                if vl > max_vl || needs.len() > ns {
                    ok = false;
                    break;
                }
                needs.push(Need {
                    sw: x as u32,
                    inp,
                    out: entry[x],
                    vl,
                });
                prev = Some(ch);
                inp = nin;
                x = sw as usize;
            }
            if ok {
                fx.pending.push((e, needs, s as u32, hint[s].is_none()));
            } else {
                // more illegal turns than VLs: a switch no selected path crosses loses its
                // entry (so no walk adds a dependency from there)
                if hint[s].is_none() && entry[s] != NO_PORT {
                    entry[s] = NO_PORT;
                    fx.entries.push((s as u32, NO_PORT));
                }
                fx.uncovered += 1;
            }
        }
    }
}

/// Per base VL, the dependencies of `seed` (the tables completed without base-VL
/// placements: the base paths in use and every phantom's walk there), as layers phantom
/// paths can be tried against.
pub(super) fn base_vl_layers(f: &fabric::Fabric, base_vls: u8, seed: &crate::cdg::Cdg) -> Layers {
    let mut layers = Layers::new(f.links.len() * 2, base_vls as usize);
    for u in 0..seed.num_vertices() as u32 {
        let (cu, vu) = seed.vertex(u);
        if vu >= base_vls {
            continue;
        }
        for &w in seed.successors(u) {
            let (cw, vw) = seed.vertex(w);
            if vw == vu {
                // The seed is acyclic (checked by the caller), so this always fits.
                let added = layers.try_add_edge(vu as usize, cu.0, cw.0);
                debug_assert!(added, "the seed has a cycle on VL {vu}");
            }
        }
    }
    layers
}
