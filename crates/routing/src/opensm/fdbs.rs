//! `opensm.fdbs` (OpenSM's `dump_ucast_routes`, ibdmchk's `-f` input).
//!
//! Layout (per switch, every LID 1..=max):
//! ```text
//! dump_ucast_routes: Switch 0x0000000000200000
//! LID    : Port : Hops : Optimal
//! 0x0001 : 001  : 01   : yes
//! 0x0007 : 003  : 04   : No 2 hop path possible via port 5!
//! 0x0009 : 003  : HOPS UNKNOWN
//! 0x0010 : UNREACHABLE
//! ```
//! OpenSM takes hops and the optimum from its hop tables. fabroute has none, so the writer
//! computes them from the LFTs themselves ([`route_hops`]): `Hops` = links the LFT walk
//! traverses from the switch to the LID's owner (0 for the switch's own LID, +1 for the final
//! CA link), `HOPS UNKNOWN` when the walk does not arrive (loop, dead end, wrong port);
//! `Optimal` compares with the minimum over the switch graph (BFS), naming the lowest port
//! that achieves it when the route is longer.

use super::{
    numbered_lines, perr, push_dec3, require_text, stream_units, switches_in_osm_order, take_0x,
    take_dec, text_of, to_string, LftLoad, Sink,
};
use crate::forward::{Control, Forward, Hop, Plane, WalkEnd};
use crate::tables::Routing;
use fabric::io::ParseError;
use fabric::SwitchIdx;
use fabric::{Fabric, Lid, NO_PORT};
use std::collections::VecDeque;

/// "No value" in [`HopTable`].
pub const HOPS_NONE: u8 = u8::MAX;

/// Per (switch index, LID): the hops of the routed path and the minimum possible.
#[derive(Clone, Debug)]
pub struct HopTable {
    pub stride: usize,
    /// Links the LFT walk traverses, [`HOPS_NONE`] if it never arrives.
    pub hops: Vec<u8>,
    /// Minimum links over the switch graph, [`HOPS_NONE`] if unreachable.
    pub min: Vec<u8>,
}

impl HopTable {
    #[inline]
    pub fn hops(&self, s: usize, lid: Lid) -> u8 {
        self.hops
            .get(s * self.stride + lid as usize)
            .copied()
            .unwrap_or(HOPS_NONE)
    }
    #[inline]
    pub fn min(&self, s: usize, lid: Lid) -> u8 {
        self.min
            .get(s * self.stride + lid as usize)
            .copied()
            .unwrap_or(HOPS_NONE)
    }
}

/// Where a LID ends: (switch index the packet must reach, extra links after it).
fn lid_target(f: &Fabric, lid: Lid) -> Option<(usize, u8)> {
    let p = f.lid_port(lid)?;
    let port = f.port(p);
    match f.switch_of(port.node) {
        Some(s) => Some((s.idx(), 0)),
        None => {
            let sw = f.attached_switch(p)?;
            Some((f.switch_of(f.port(sw).node)?.idx(), 1))
        }
    }
}

/// Computes walked and minimum hop counts for every (switch, LID 1..=max).
/// Cost O(switches × LIDs) for the walk plus one BFS per destination switch.
pub fn route_hops(f: &Fabric, r: &Routing) -> HopTable {
    let ns = f.num_switches();
    let stride = r.stride();
    let mut hops = vec![HOPS_NONE; ns * stride];
    let mut min = vec![HOPS_NONE; ns * stride];
    const UNVISITED: u8 = 0xFE;
    const ACTIVE: u8 = 0xFD;
    const FAIL: u8 = HOPS_NONE;
    let mut st = vec![UNVISITED; ns];
    let mut stack: Vec<u32> = Vec::new();
    let plane = Plane::new(f, None);
    let fw = Forward::new(f, &plane, r);
    // LIDs grouped by destination switch for the BFS part.
    let mut by_dest: Vec<Vec<(Lid, u8)>> = vec![Vec::new(); ns];
    for lid in 1..stride {
        let lid = lid as Lid;
        let target = lid_target(f, lid);
        if let Some((d, extra)) = target {
            by_dest[d].push((lid, extra));
        }
        let (Some(owner), Some((_, extra))) = (f.lid_port(lid), target) else {
            continue;
        };
        st.fill(UNVISITED);
        for s0 in 0..ns {
            if st[s0] != UNVISITED {
                continue;
            }
            stack.clear();
            stack.push(s0 as u32);
            st[s0] = ACTIVE;
            let mut known = FAIL;
            let end = fw.walk_from(&fw.column(lid), s0 as u32, 0, owner, |step| {
                let Hop::Switch { sw, .. } = step.to else {
                    return Control::Continue;
                };
                match st[sw as usize] {
                    UNVISITED => {
                        st[sw as usize] = ACTIVE;
                        stack.push(sw);
                        Control::Continue
                    }
                    // ACTIVE: a loop; anything else: known from there.
                    v => {
                        known = if v == ACTIVE { FAIL } else { v };
                        Control::Stop
                    }
                }
            });
            // The value of the last stacked switch: links left from it.
            let mut val = match end {
                WalkEnd::Delivered { .. } => extra,
                WalkEnd::Broken(_) => FAIL,
                WalkEnd::Stopped if known >= 0xFB => FAIL,
                WalkEnd::Stopped => known + 1,
            };
            while let Some(s) = stack.pop() {
                st[s as usize] = val;
                val = if val >= 0xFB { FAIL } else { val + 1 };
            }
        }
        for (s, &v) in st.iter().enumerate() {
            hops[s * stride + lid as usize] = if v > 0xFB { HOPS_NONE } else { v };
        }
    }
    // Minimum hops: BFS from every destination switch over switch-to-switch links.
    let mut dist = vec![u32::MAX; ns];
    let mut q = VecDeque::new();
    for (d, lids) in by_dest.iter().enumerate() {
        if lids.is_empty() {
            continue;
        }
        dist.fill(u32::MAX);
        dist[d] = 0;
        q.clear();
        q.push_back(d);
        while let Some(u) = q.pop_front() {
            for &c in f.switch_links(SwitchIdx(u as u32)) {
                let Some(v) = f.dst_switch(c).map(SwitchIdx::idx) else {
                    continue;
                };
                if dist[v] == u32::MAX {
                    dist[v] = dist[u] + 1;
                    q.push_back(v);
                }
            }
        }
        for (s, &ds) in dist.iter().enumerate() {
            if ds == u32::MAX {
                continue;
            }
            for &(lid, extra) in lids {
                let m = ds + extra as u32;
                min[s * stride + lid as usize] = if m >= HOPS_NONE as u32 {
                    HOPS_NONE - 1
                } else {
                    m as u8
                };
            }
        }
    }
    HopTable { stride, hops, min }
}

/// The lowest port of switch `s` on a minimum-hop path to `lid`.
fn best_port(f: &Fabric, t: &HopTable, s: usize, lid: Lid) -> Option<u8> {
    let m = t.min(s, lid);
    if m == HOPS_NONE {
        return None;
    }
    let n = f.switches[s];
    if m == 0 {
        return Some(0);
    }
    let owner = f.lid_port(lid);
    for p in 1..=f.node(n).nports {
        let Some(remote) = f.remote(f.port_id(n, p)) else {
            continue;
        };
        let rn = f.port(remote).node;
        let ok = if let Some(rs) = f.switch_of(rn) {
            let ms = t.min(rs.idx(), lid);
            ms != HOPS_NONE && ms as u32 + 1 == m as u32
        } else {
            m == 1 && owner == Some(remote)
        };
        if ok {
            return Some(p);
        }
    }
    None
}

/// Writes `opensm.fdbs` with hops computed from the LFTs (see the module documentation).
pub fn write_fdbs(f: &Fabric, r: &Routing) -> String {
    to_string(|sink| write_fdbs_to(f, r, None, sink))
}

/// [`write_fdbs`], streamed switch by switch into `sink` (batches formatted in parallel).
/// Switches dead under `dead` are left out, as `opensm-subnet.lst` leaves them out (ibdmchk
/// refuses an fdbs block for a switch the subnet file does not list).
pub fn write_fdbs_to(
    f: &Fabric,
    r: &Routing,
    dead: Option<&fabric::FaultMask>,
    sink: &mut Sink<'_>,
) -> std::io::Result<()> {
    let t = route_hops(f, r);
    // LIDs whose port the subnet file leaves out (under `dead`) are UNREACHABLE, and the
    // table ends at the highest LID it lists (ibdmchk and `check` read LIDs against it)
    let listed = super::lfts::listed_lids(f, r.max_lid, dead);
    let max = listed.iter().rposition(|&l| l).unwrap_or(0) as Lid;
    // Per LID: `0x<LID> : `.
    let prefix: Vec<[u8; 9]> = (0..=max as u32)
        .map(|lid| {
            let mut p = [0u8; 9];
            let s = format!("0x{lid:04X} : ");
            p.copy_from_slice(&s.as_bytes()[..9.min(s.len())]);
            p
        })
        .collect();
    let mut order = switches_in_osm_order(f);
    if let Some(m) = dead {
        order.retain(|&s| !m.node_dead(f.switches[s]));
    }
    stream_units(order.len(), sink, |k, b| {
        let s = order[k];
        let n = f.switches[s];
        let _ = std::io::Write::write_fmt(
            b,
            format_args!("dump_ucast_routes: Switch 0x{:016x}\n", f.node(n).guid),
        );
        b.extend_from_slice(b"LID    : Port : Hops : Optimal\n");
        for lid in 1..=max {
            b.extend_from_slice(&prefix[lid as usize]);
            let port = r.out_port_checked(SwitchIdx(s as u32), lid);
            if port == NO_PORT || !listed[lid as usize] {
                b.extend_from_slice(b"UNREACHABLE\n");
                continue;
            }
            push_dec3(b, port as u32);
            let h = t.hops(s, lid);
            if h == HOPS_NONE {
                b.extend_from_slice(b"  : HOPS UNKNOWN\n");
                continue;
            }
            b.extend_from_slice(b"  : ");
            if h < 100 {
                b.extend_from_slice(&[b'0' + h / 10, b'0' + h % 10]);
            } else {
                push_dec3(b, h as u32);
            }
            let m = t.min(s, lid);
            if m == h || m == HOPS_NONE {
                b.extend_from_slice(b"   : yes\n");
            } else {
                let bp = best_port(f, &t, s, lid).unwrap_or(port);
                let _ = std::io::Write::write_fmt(
                    b,
                    format_args!("   : No {m} hop path possible via port {bp}!\n"),
                );
            }
        }
    })
}

/// Reads `opensm.fdbs` (output ports only; the hops/optimal columns are not needed to rebuild
/// the LFTs and are ignored). `UNREACHABLE` and port 255 mean no route.
pub fn read_fdbs(bytes: &[u8], file: &str, f: &Fabric) -> Result<LftLoad, ParseError> {
    const WHAT: &str = "OpenSM's opensm.fdbs (`dump_ucast_routes: Switch 0x<GUID>` blocks of `0x<LID> : <port> ...` lines)";
    require_text(bytes, file, WHAT)?;
    let text = text_of(bytes);
    let mut r = Routing::empty(f);
    let stride = r.stride();
    let max_lid = f.max_lid();
    let mut seen = vec![0usize; f.num_switches()];
    let mut warnings = Vec::new();
    // None = before any header; Some(None) = skipped switch.
    let mut cur: Option<Option<usize>> = None;
    for (ln, raw) in numbered_lines(&text) {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("LID") {
            continue;
        }
        if let Some(h) = line.strip_prefix("dump_ucast_routes:") {
            let g = h
                .trim_start()
                .strip_prefix("Switch")
                .map(str::trim_start)
                .and_then(take_0x)
                .filter(|(_, rest)| rest.trim().is_empty())
                .map(|(g, _)| g)
                .ok_or_else(|| {
                    perr(
                        file,
                        ln,
                        "expected `dump_ucast_routes: Switch 0x<switch node GUID>`",
                    )
                })?;
            cur = Some(
                super::switch_of_guid(f, g, file, ln, &mut warnings).inspect(|&s| {
                    if seen[s] != 0 {
                        warnings.push(format!(
                            "{file}:{ln}: switch 0x{g:016x} was already listed at line {}; its table is replaced",
                            seen[s]
                        ));
                    }
                    seen[s] = ln;
                    r.lft_of_mut(SwitchIdx(s as u32)).fill(NO_PORT);
                }),
            );
            continue;
        }
        let s = match cur {
            Some(Some(s)) => s,
            Some(None) => continue,
            None => {
                return Err(perr(
                    file,
                    ln,
                    "expected `dump_ucast_routes: Switch 0x<GUID>` before the first entry",
                ))
            }
        };
        let (lid, rest) = take_0x(line).ok_or_else(|| {
            perr(
                file,
                ln,
                "expected `0x<hex LID> : <port>` or `0x<hex LID> : UNREACHABLE`",
            )
        })?;
        let rest = rest
            .trim_start()
            .strip_prefix(':')
            .map(str::trim_start)
            .ok_or_else(|| perr(file, ln, "expected ` : ` after the LID"))?;
        if lid > max_lid as u64 {
            let why = if lid > 0xFFFF {
                format!("LID 0x{lid:X} is wider than 16 bits")
            } else if lid > fabric::MAX_UNICAST_LID as u64 {
                format!("LID 0x{lid:04X} is not a unicast LID (at most 0xBFFF)")
            } else {
                format!("LID 0x{lid:04X} is beyond the fabric's highest LID 0x{max_lid:04X}")
            };
            return Err(perr(file, ln, why));
        }
        if rest.starts_with("UNREACHABLE") {
            continue;
        }
        let (port, tail) = take_dec(rest)
            .ok_or_else(|| perr(file, ln, "expected a decimal port number or `UNREACHABLE`"))?;
        if !(tail.is_empty() || tail.starts_with([' ', '\t', ':'])) {
            return Err(perr(
                file,
                ln,
                "expected a decimal port number or `UNREACHABLE`",
            ));
        }
        if port == NO_PORT as u64 {
            continue;
        }
        let sw = f.switches[s];
        let np = f.node(sw).nports as u64;
        if port > np {
            return Err(perr(
                file,
                ln,
                format!(
                    "port {port} is beyond the port count {np} of switch {:?}",
                    f.node(sw).name
                ),
            ));
        }
        r.lft[s * stride + lid as usize] = port as u8;
    }
    let switches_loaded = seen.iter().filter(|&&l| l != 0).count();
    if switches_loaded == 0 {
        return Err(perr(
            file,
            1,
            format!("no table for a switch of this fabric: expected {WHAT}"),
        ));
    }
    Ok(LftLoad {
        routing: r,
        warnings,
        switches_loaded,
        remapped: 0,
        dump_lmc: None,
    })
}
