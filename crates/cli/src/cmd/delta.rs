//! RFTR's delta as `fault` and `sm` write it: `delta.json` (per switch the changed LFT
//! entries, SL2VL entries, the sources given a new (DLID, SL)) and `delta.txt` for people.

use fabric::{Fabric, Lid};
use routing::fault::{Delta, Rftr};
use routing::tables::update::lft_block;
use serde::ser::{Serialize, Serializer};
use std::io::Write;

/// Writes `delta.json` (pretty-printed, keys in alphabetical order) straight to `w`: a
/// repair that moved millions of pairs lists millions of entries, which as a JSON tree in
/// memory took tens of GB.
pub(crate) fn write_delta_json(f: &Fabric, r: &Rftr<'_>, w: &mut dyn Write) -> std::io::Result<()> {
    let doc = Listing { f, d: &r.delta };
    let mut ser =
        serde_json::Serializer::with_formatter(w, serde_json::ser::PrettyFormatter::new());
    doc.serialize(&mut ser).map_err(std::io::Error::other)
}

/// The whole listing: `{"lft": [...], "sl2vl": [...], "sources": [...]}`.
struct Listing<'a> {
    f: &'a Fabric,
    d: &'a Delta,
}

#[derive(serde::Serialize)]
struct SwitchRef<'a> {
    guid: String,
    name: &'a str,
}

fn switch_ref(f: &Fabric, s: u32) -> SwitchRef<'_> {
    let n = f.node(f.switches[s as usize]);
    SwitchRef {
        guid: format!("{:#018x}", n.guid),
        name: &n.name,
    }
}

#[derive(serde::Serialize)]
struct LftEntry {
    block: u16,
    lid: Lid,
    new: u8,
    old: u8,
}

/// The changed entries of one switch.
struct Entries<'a> {
    d: &'a Delta,
    s: u32,
}

#[derive(serde::Serialize)]
struct LftSwitch<'a> {
    entries: Entries<'a>,
    switch: SwitchRef<'a>,
}

#[derive(serde::Serialize)]
struct Sl2vlEntry<'a> {
    #[serde(rename = "in")]
    inp: u8,
    new_vl: u8,
    old_vl: u8,
    out: u8,
    sl: u8,
    switch: SwitchRef<'a>,
}

#[derive(serde::Serialize)]
struct SourceEntry<'a> {
    destination: &'a str,
    dlid: Lid,
    sl: u8,
    source: &'a str,
}

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let changed = self.d.lft.range((self.s, 0)..=(self.s, Lid::MAX));
        ser.collect_seq(
            changed
                .filter(|(_, (o, n))| o != n)
                .map(|(&(_, lid), &(old, new))| LftEntry {
                    block: lft_block(lid),
                    lid,
                    new,
                    old,
                }),
        )
    }
}

impl Serialize for Listing<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (f, d) = (self.f, self.d);
        let touched = d.touched_switches();
        let name = |e: u32| f.node(f.port(f.end_ports[e as usize]).node).name.as_str();
        let mut m = ser.serialize_map(Some(3))?;
        m.serialize_entry(
            "lft",
            &Seq(|| {
                touched.iter().map(|&s| LftSwitch {
                    entries: Entries { d, s },
                    switch: switch_ref(f, s),
                })
            }),
        )?;
        m.serialize_entry(
            "sl2vl",
            &Seq(|| {
                d.sl2vl.iter().filter(|(_, (o, n))| o != n).map(
                    |(&(s, inp, out, sl), &(old, new))| Sl2vlEntry {
                        inp,
                        new_vl: new,
                        old_vl: old,
                        out,
                        sl,
                        switch: switch_ref(f, s),
                    },
                )
            }),
        )?;
        m.serialize_entry(
            "sources",
            &Seq(|| {
                d.sources.iter().map(|(&(s, e), &(dlid, sl))| SourceEntry {
                    destination: name(e),
                    dlid,
                    sl,
                    source: name(s),
                })
            }),
        )?;
        m.end()
    }
}

/// A sequence serialised from a fresh iterator, element by element.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq((self.0)())
    }
}

/// Writes `delta.txt` (for people) straight to `out`.
pub(crate) fn write_delta_text(
    f: &Fabric,
    r: &Rftr<'_>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let c = r.delta.counts();
    writeln!(
        out,
        "# RFTR delta: {} LFT entries in {} blocks on {} switches, {} SL2VL entries, {} source updates",
        c.lft_entries, c.lft_blocks, c.switches, c.sl2vl_entries, c.source_updates
    )?;
    writeln!(out, "# 1. LFT blocks (push first)")?;
    let mut last = (u32::MAX, u16::MAX);
    for (&(s, lid), &(old, new)) in &r.delta.lft {
        if old == new {
            continue;
        }
        let n = f.switches[s as usize];
        if (s, lft_block(lid)) != last {
            writeln!(
                out,
                "switch {} guid {:#018x} block {}",
                f.node(n).name,
                f.node(n).guid,
                lft_block(lid)
            )?;
            last = (s, lft_block(lid));
        }
        let show = |p: u8| {
            if p == fabric::NO_PORT {
                "-".to_string()
            } else {
                p.to_string()
            }
        };
        writeln!(out, "  lid {lid:#06x}: port {} -> {}", show(old), show(new))?;
    }
    writeln!(out, "# 2. SL2VL entries")?;
    for (&(s, i, o, sl), &(old, new)) in &r.delta.sl2vl {
        if old != new {
            let n = f.switches[s as usize];
            writeln!(
                out,
                "switch {} in {i} out {o} sl {sl}: vl {old} -> {new}",
                f.node(n).name
            )?;
        }
    }
    writeln!(
        out,
        "# 3. New (DLID, SL) per source (after every switch confirmed)"
    )?;
    for (&(s, d), &(dlid, sl)) in &r.delta.sources {
        let name = |e: u32| f.node(f.port(f.end_ports[e as usize]).node).name.clone();
        writeln!(out, "{} -> {}: dlid {dlid:#06x} sl {sl}", name(s), name(d))?;
    }
    Ok(())
}
