//! RFTR's delta as `fault` and `sm` write it: `delta.json` (per switch the changed LFT
//! entries, SL2VL entries, the sources given a new (DLID, SL)) and `delta.txt` for people.

use fabric::Fabric;
use routing::fault::Rftr;
use routing::tables::update::lft_block;
use serde_json::json;

pub(crate) fn delta_listing(f: &Fabric, r: &Rftr<'_>) -> serde_json::Value {
    let sw = |s: u32| {
        let n = f.switches[s as usize];
        json!({"name": f.node(n).name, "guid": format!("{:#018x}", f.node(n).guid)})
    };
    let mut lft: std::collections::BTreeMap<u32, Vec<serde_json::Value>> = Default::default();
    for (&(s, lid), &(old, new)) in &r.delta.lft {
        if old != new {
            lft.entry(s)
                .or_default()
                .push(json!({"lid": lid, "block": lft_block(lid), "old": old, "new": new}));
        }
    }
    let lft: Vec<_> = lft
        .into_iter()
        .map(|(s, e)| json!({"switch": sw(s), "entries": e}))
        .collect();
    let sl2vl: Vec<_> = r
        .delta
        .sl2vl
        .iter()
        .filter(|(_, (o, n))| o != n)
        .map(|(&(s, i, o, sl), &(old, new))| {
            json!({"switch": sw(s), "in": i, "out": o, "sl": sl, "old_vl": old, "new_vl": new})
        })
        .collect();
    let name = |e: u32| f.node(f.port(f.end_ports[e as usize]).node).name.clone();
    let sources: Vec<_> = r
        .delta
        .sources
        .iter()
        .map(|(&(s, d), &(dlid, sl))| json!({"source": name(s), "destination": name(d), "dlid": dlid, "sl": sl}))
        .collect();
    json!({"lft": lft, "sl2vl": sl2vl, "sources": sources})
}

pub(crate) fn delta_text(f: &Fabric, r: &Rftr<'_>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let c = r.delta.counts();
    let _ = writeln!(
        out,
        "# RFTR delta: {} LFT entries in {} blocks on {} switches, {} SL2VL entries, {} source updates",
        c.lft_entries, c.lft_blocks, c.switches, c.sl2vl_entries, c.source_updates
    );
    let _ = writeln!(out, "# 1. LFT blocks (push first)");
    let mut last = (u32::MAX, u16::MAX);
    for (&(s, lid), &(old, new)) in &r.delta.lft {
        if old == new {
            continue;
        }
        let n = f.switches[s as usize];
        if (s, lft_block(lid)) != last {
            let _ = writeln!(
                out,
                "switch {} guid {:#018x} block {}",
                f.node(n).name,
                f.node(n).guid,
                lft_block(lid)
            );
            last = (s, lft_block(lid));
        }
        let show = |p: u8| {
            if p == fabric::NO_PORT {
                "-".to_string()
            } else {
                p.to_string()
            }
        };
        let _ = writeln!(out, "  lid {lid:#06x}: port {} -> {}", show(old), show(new));
    }
    let _ = writeln!(out, "# 2. SL2VL entries");
    for (&(s, i, o, sl), &(old, new)) in &r.delta.sl2vl {
        if old != new {
            let n = f.switches[s as usize];
            let _ = writeln!(
                out,
                "switch {} in {i} out {o} sl {sl}: vl {old} -> {new}",
                f.node(n).name
            );
        }
    }
    let _ = writeln!(
        out,
        "# 3. New (DLID, SL) per source (after every switch confirmed)"
    );
    for (&(s, d), &(dlid, sl)) in &r.delta.sources {
        let name = |e: u32| f.node(f.port(f.end_ports[e as usize]).node).name.clone();
        let _ = writeln!(out, "{} -> {}: dlid {dlid:#06x} sl {sl}", name(s), name(d));
    }
    out
}
