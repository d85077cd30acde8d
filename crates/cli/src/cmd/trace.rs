//! `fabroute trace FABRIC --lfts F [--sl2vl F] [--psl F] [--lmc N] SRC DST`: the path one
//! packet takes through the tables, hop by hop (switch, GUID, in port, out port, SL, VL),
//! or where and why it is lost.
//!
//! The walk is `routing::forward::Forward`'s (`walk_pair` from an end port, `walk_from` from
//! a switch's port 0), the one walker `check` uses too; this command only records its steps.
//! Without a fault mask: the fabric file says what is cabled (a fault set's
//! `opensm-subnet.lst` leaves its failed links out, so an entry pointing at one is an entry
//! pointing at an uncabled port).
//!
//! SRC and DST: a LID (decimal or 0x hex; for DST a virtual LID of an LMC range is the DLID,
//! which selects that path), a node name or node description, `NAME/PORT` for another port of
//! a multi-port HCA (port 1 otherwise), or a node or port GUID (0x…). A switch stands for its
//! port 0 and LID. Every reading of the text is tried; more than one port, or none, is an
//! error listing the candidates.

use crate::args::Tables;
use crate::cmd::check::load_tables;
use anyhow::{bail, Result};
use fabric::{Fabric, Lid, NodeId, NodeKind, PortId};
use routing::forward::{Control, Failure, Forward, Hop, Plane, WalkEnd, NONE};
use routing::{PathSl, Routing};
use serde::Serialize;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub tables: Tables,
    /// Source: LID (decimal or 0x hex), node name or description (NAME/PORT for a port
    /// other than 1 of a multi-port HCA), or node/port GUID (0x…). A switch means its port 0.
    pub src: String,
    /// Destination, in the same forms. A virtual LID of an LMC range is used as the DLID and
    /// selects that path; a name or GUID means the base LID.
    pub dst: String,
}

/// One end of the trace.
#[derive(Clone, Debug, Serialize)]
struct End {
    /// How people know the node: its name, or its description where the name only repeats
    /// the GUID (`fabric::Fabric::label`).
    node: String,
    /// The node's name as the fabric file gives it.
    name: String,
    desc: String,
    kind: NodeKind,
    node_guid: String,
    port_guid: String,
    port: u8,
    /// The port's base LID (a switch: its LID).
    lid: Lid,
}

/// One switch on the way.
#[derive(Clone, Debug, Serialize)]
struct HopRec {
    switch: String,
    guid: String,
    in_port: u8,
    /// The LFT entry for the DLID; 0 at the destination switch (its own port 0). `None`
    /// where the walk breaks on a missing entry.
    out_port: Option<u8>,
    sl: u8,
    /// VL on the outgoing link: SL2VL(in, out, SL). `None` when the packet does not leave.
    vl: Option<u8>,
    /// Where the outgoing link leads (node and port), when it leads somewhere.
    to: Option<String>,
    to_port: Option<u8>,
}

/// Where and why the packet is lost.
#[derive(Clone, Debug, Serialize)]
struct Lost {
    failure: &'static str,
    reason: String,
    /// The switch it is lost at (`None`: at the source).
    switch: Option<String>,
    guid: Option<String>,
    in_port: Option<u8>,
    /// Its LFT entry for the DLID (`None`: no entry).
    entry: Option<u8>,
}

#[derive(Clone, Debug, Serialize)]
struct TraceDoc {
    source: End,
    destination: End,
    dlid: Lid,
    sl: u8,
    /// VL the source puts the packet on (a CA's own SL2VL row; a switch source: see its hop).
    source_vl: Option<u8>,
    hops: Vec<HopRec>,
    delivered: bool,
    /// Switch-to-switch links crossed.
    switch_hops: u32,
    lost: Option<Lost>,
}

fn guid(g: u64) -> String {
    format!("{g:#018x}")
}

/// The base LID of a port (a switch: its port 0's).
fn base_lid(f: &Fabric, p: PortId) -> Lid {
    let port = f.port(p);
    if f.is_switch(port.node) {
        f.switch_lid(port.node)
    } else {
        port.lid
    }
}

fn end_of(f: &Fabric, p: PortId) -> End {
    let port = f.port(p);
    let node = f.node(port.node);
    End {
        node: f.label(port.node).to_string(),
        name: node.name.clone(),
        desc: node.desc.clone(),
        kind: node.kind,
        node_guid: guid(node.guid),
        port_guid: guid(f.shown_port_guid(p)),
        port: port.num,
        lid: base_lid(f, p),
    }
}

/// `name port N` for messages.
fn port_name(f: &Fabric, p: PortId) -> String {
    let port = f.port(p);
    format!("{} port {}", f.label(port.node), port.num)
}

/// One reading of an SRC/DST text.
struct Cand {
    port: PortId,
    /// The LID the text gave, when it is a LID.
    lid: Option<Lid>,
    why: String,
}

/// The port a node stands for: a switch its port 0, an end node port 1 or `port`.
fn node_port(f: &Fabric, n: NodeId, port: Option<u8>) -> Result<PortId, String> {
    let node = f.node(n);
    match (node.kind, port) {
        (NodeKind::Switch, None | Some(0)) => Ok(f.port_id(n, 0)),
        (NodeKind::Switch, Some(k)) => Err(format!(
            "{} is a switch: it is addressed by its port 0 (its LID), not port {k}",
            node.name
        )),
        (_, p) => {
            let k = p.unwrap_or(1);
            if k == 0 || k > node.nports {
                Err(format!("{} has ports 1..={}", node.name, node.nports))
            } else {
                Ok(f.port_id(n, k))
            }
        }
    }
}

/// Parses a LID or GUID: decimal, or 0x hex. Returns the value and whether it was hex.
fn number(s: &str) -> Option<(u64, bool)> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(|v| (v, true));
    }
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok().map(|v| (v, false));
    }
    None
}

/// Every node `s` names: by name, description, node GUID or port GUID (with that port).
fn nodes_named(f: &Fabric, s: &str) -> Vec<(NodeId, Option<PortId>, String)> {
    let mut v = Vec::new();
    if let Some((g, true)) = number(s) {
        for (i, n) in f.nodes.iter().enumerate() {
            let id = NodeId(i as u32);
            if n.guid == g {
                v.push((id, None, format!("node GUID {}", guid(g))));
            } else if n.kind == NodeKind::Switch && f.shown_port_guid(f.port_id(id, 0)) == g {
                v.push((id, None, format!("port GUID {}", guid(g))));
            }
            if n.kind.is_end() {
                for p in f.node_ports(id).skip(1) {
                    if f.port(p).guid == g {
                        v.push((id, Some(p), format!("port GUID {}", guid(g))));
                    }
                }
            }
        }
    }
    for (i, n) in f.nodes.iter().enumerate() {
        if n.name == s {
            v.push((NodeId(i as u32), None, "node name".into()));
        } else if !n.desc.is_empty() && n.desc == s {
            v.push((NodeId(i as u32), None, "node description".into()));
        }
    }
    if v.is_empty() {
        // What operators call the node: `ib5` for `MF0;ib5:SX6036/U1`, `node01` for
        // `node01 HCA-1` (ambiguous names are reported with every node they fit).
        for id in f.nodes_by_short_name(s) {
            v.push((id, None, format!("short name in {:?}", f.node(id).desc)));
        }
    }
    v
}

/// The port (and the LID, when the text is one) that `spec` names. See the module docs.
fn resolve(f: &Fabric, what: &str, spec: &str) -> Result<(PortId, Option<Lid>)> {
    let s = spec.trim();
    let mut cands: Vec<Cand> = Vec::new();
    let mut port_errors: Vec<String> = Vec::new();
    if let Some((v, _)) = number(s) {
        if let Some(p) = Lid::try_from(v).ok().and_then(|l| f.lid_port(l)) {
            cands.push(Cand {
                port: p,
                lid: Some(v as Lid),
                why: format!("LID {v}"),
            });
        }
    }
    let mut add = |cands: &mut Vec<Cand>, text: &str, port: Option<u8>| {
        for (n, p, why) in nodes_named(f, text) {
            let got = match (p, port) {
                (Some(p), None) => Ok(p),
                (Some(p), Some(k)) if f.port(p).num == k => Ok(p),
                (Some(p), Some(k)) => Err(format!(
                    "{text} is {} (a port GUID), not port {k}",
                    port_name(f, p)
                )),
                (None, k) => node_port(f, n, k),
            };
            match got {
                Ok(p) => cands.push(Cand {
                    port: p,
                    lid: None,
                    why,
                }),
                Err(e) => port_errors.push(e),
            }
        }
    };
    add(&mut cands, s, None);
    if let Some((head, tail)) = s.rsplit_once('/') {
        if let Ok(k) = tail.trim().parse::<u8>() {
            add(&mut cands, head.trim(), Some(k));
        }
    }
    // One candidate per port; a LID reading wins (it fixes the DLID).
    let mut uniq: Vec<Cand> = Vec::new();
    for c in cands {
        match uniq.iter_mut().find(|u| u.port == c.port) {
            Some(u) => {
                if u.lid.is_none() && c.lid.is_some() {
                    *u = c;
                }
            }
            None => uniq.push(c),
        }
    }
    match uniq.len() {
        1 => Ok((uniq[0].port, uniq[0].lid)),
        0 => {
            if let Some(e) = port_errors.first() {
                bail!("{what} {spec:?}: {e}");
            }
            let head = s.rsplit_once('/').map_or(s, |(h, _)| h).to_lowercase();
            let similar: Vec<String> = f
                .nodes
                .iter()
                .filter(|n| {
                    !head.is_empty()
                        && (n.name.to_lowercase().contains(&head)
                            || n.desc.to_lowercase().contains(&head))
                })
                .take(8)
                .map(|n| format!("{:?} ({:?})", n.name, n.desc))
                .collect();
            let hint = if similar.is_empty() {
                let some: Vec<String> = f
                    .nodes
                    .iter()
                    .take(4)
                    .map(|n| format!("{:?}", n.name))
                    .collect();
                format!("names in this fabric look like {}", some.join(", "))
            } else {
                format!("similar nodes: {}", similar.join(", "))
            };
            bail!(
                "{what} {spec:?}: no node name, node description (or its short name), GUID or LID of the fabric matches ({hint})"
            )
        }
        _ => {
            let list: Vec<String> = uniq
                .iter()
                .map(|c| {
                    format!(
                        "{} ({}, LID {}; by {})",
                        port_name(f, c.port),
                        guid(f.shown_port_guid(c.port)),
                        base_lid(f, c.port),
                        c.why
                    )
                })
                .collect();
            bail!(
                "{what} {spec:?} is ambiguous: it names {} ports: {}; give the node name, a GUID or a LID",
                uniq.len(),
                list.join(", ")
            )
        }
    }
}

/// The SL a switch-sourced packet carries: path SL tables are kept per end-port source, so a
/// switch gets the uniform or per-destination SL, or 0.
fn switch_sl(r: &Routing, dlid: Lid) -> u8 {
    match &r.path_sl {
        PathSl::Uniform(s) => *s,
        PathSl::PerDest(_) => r.path_sl.get(0, dlid),
        PathSl::PerPair { .. } => 0,
    }
}

/// Why a walk broke, in words: at switch `at` (entered on `inp`), whose entry is `entry`.
/// `delivered_to` names the end port a misdelivered packet reaches, `cycle` the switches of
/// a loop.
struct Why<'a> {
    failure: Failure,
    at: Option<NodeId>,
    inp: Option<u8>,
    entry: Option<u8>,
    dlid: Lid,
    delivered_to: Option<String>,
    cycle: &'a [String],
}

fn reason(f: &Fabric, w: Why<'_>) -> String {
    let dlid = w.dlid;
    let Some(n) = w.at else {
        return match w.failure {
            Failure::Misdelivered => {
                "the source is cabled straight to another end node, not to the destination".into()
            }
            _ => "the source port's link is not usable".into(),
        };
    };
    let sw = format!(
        "at {} ({}){}",
        f.node(n).name,
        guid(f.node(n).guid),
        w.inp
            .map_or(String::new(), |i| format!(", entered on port {i}"))
    );
    let e = w.entry.map_or("-".to_string(), |p| p.to_string());
    match w.failure {
        Failure::NoRoute => format!("{sw}: no LFT entry for LID {dlid} (unset)"),
        Failure::Loop => format!(
            "{sw}: forwarding loop, the packet is back at a switch it passed ({}); its LFT entry for LID {dlid} (port {e}) sends it round again",
            w.cycle.join(" -> ")
        ),
        Failure::PortZero => format!(
            "{sw}: the LFT entry for LID {dlid} is port 0 (the switch itself), but LID {dlid} is not the switch's"
        ),
        Failure::BeyondPortCount => format!(
            "{sw}: the LFT entry for LID {dlid} is port {e}, beyond the switch's {} ports",
            f.node(n).nports
        ),
        Failure::Unconnected => format!(
            "{sw}: the LFT entry for LID {dlid} is port {e}, which has no cable (or its link failed)"
        ),
        Failure::DeadChannel => {
            format!("{sw}: the LFT entry for LID {dlid} is port {e}, whose link is dead")
        }
        Failure::Misdelivered => format!(
            "{sw}: the LFT entry for LID {dlid} (port {e}) delivers the packet to {}, which does not own LID {dlid}",
            w.delivered_to.as_deref().unwrap_or("another end port")
        ),
    }
}

/// What `trace` follows, every input read and checked: the tables, the two ports and the
/// DLID.
struct Plan {
    f: Fabric,
    r: Routing,
    src: PortId,
    dst: PortId,
    dlid: Lid,
}

pub fn run(a: Args) -> Result<ExitCode> {
    execute(plan(a)?)
}

fn plan(a: Args) -> Result<Plan> {
    let (f, r) = load_tables(&a.tables)?;
    let (src, _) = resolve(&f, "SRC", &a.src)?;
    let (dst, dst_lid) = resolve(&f, "DST", &a.dst)?;
    if src == dst {
        crate::usage_bail!(
            "SRC and DST are the same port ({}): nothing to trace",
            port_name(&f, src)
        );
    }
    let dlid = dst_lid.unwrap_or_else(|| base_lid(&f, dst));
    if dlid == 0 {
        bail!("DST {} has no LID", port_name(&f, dst));
    }
    Ok(Plan {
        f,
        r,
        src,
        dst,
        dlid,
    })
}

fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        f,
        r,
        src,
        dst,
        dlid,
    } = p;
    let plane = Plane::new(&f, None);
    let fw = Forward::new(&f, &plane, &r);
    let src_node = f.port(src).node;
    let src_ep = plane.end_index(src);
    let (sl, source_vl) = match src_ep {
        Some(ep) => {
            let sl = r.path_sl.get(ep as usize, dlid);
            (sl, Some(r.sl2vl.vl(src_node, 0, f.port(src).num, sl)))
        }
        None => (switch_sl(&r, dlid), None),
    };
    let mut hops: Vec<HopRec> = Vec::new();
    let mut seen = vec![false; f.num_switches()];
    let mut looped: Option<(u32, u8)> = None;
    // The switch the packet enters next (and on which port), after the last step.
    let mut next: Option<(u32, u8)> = None;
    let mut switch_hops = 0u32;
    let mut visit = |st: &routing::forward::WalkStep| {
        if seen[st.sw as usize] {
            looped = Some((st.sw, st.inp));
            return Control::Stop;
        }
        seen[st.sw as usize] = true;
        let to = f.channel_dst(st.ch);
        let n = f.switches[st.sw as usize];
        hops.push(HopRec {
            switch: f.label(n).to_string(),
            guid: guid(f.node(n).guid),
            in_port: st.inp,
            out_port: Some(st.out),
            sl,
            vl: Some(fw.vl(st.sw, st.inp, st.out, sl)),
            to: Some(f.label(f.port(to).node).to_string()),
            to_port: Some(f.port(to).num),
        });
        next = st.next_switch();
        if matches!(st.to, Hop::Switch { .. }) {
            switch_hops += 1;
        }
        Control::Continue
    };
    // Where the walk starts: the source's switch (entered on its cable) or the source switch
    // itself (on port 0). `end` is `None` when the source port has no cable.
    let first: Option<(u32, u8)>;
    let end = match src_ep {
        Some(ep) => {
            let at = plane.attach(ep);
            first = (at.live && at.sw != NONE).then_some((at.sw, at.inp));
            f.out_channel(src)
                .map(|_| fw.walk_pair(ep, dlid, dst, &mut visit))
        }
        None => {
            let s = f.switch_of(src_node).map_or(NONE, |s| s.0);
            first = Some((s, 0));
            Some(fw.walk_from(&fw.column(dlid), s, 0, dst, &mut visit))
        }
    };
    // The switch the packet is at when the walk ends, with its input port.
    let at_end = if hops.is_empty() { first } else { next };
    // A loop: the visitor saw a switch again, or (a loop through every switch) the walker
    // gave up before handing the repeated switch over.
    let looped = looped.or(match end {
        Some(WalkEnd::Broken(b)) if b.failure == Failure::Loop => at_end,
        _ => None,
    });
    let sw_node = |s: u32| f.switches[s as usize];
    let mut lost: Option<Lost> = None;
    let mut delivered = false;
    match (end, looped) {
        (None, _) => {
            lost = Some(Lost {
                failure: "unconnected",
                reason: format!("the source port {} has no cable", port_name(&f, src)),
                switch: None,
                guid: None,
                in_port: None,
                entry: None,
            });
        }
        (Some(_), Some((s, inp))) => {
            let n = sw_node(s);
            let entry = Some(fw.entry(s, dlid)).filter(|&p| p != fabric::NO_PORT);
            let name = &f.node(n).name;
            let from = hops.iter().position(|h| &h.switch == name).unwrap_or(0);
            let cycle: Vec<String> = hops[from..]
                .iter()
                .map(|h| h.switch.clone())
                .chain([name.clone()])
                .collect();
            lost = Some(Lost {
                failure: "loop",
                reason: reason(
                    &f,
                    Why {
                        failure: Failure::Loop,
                        at: Some(n),
                        inp: Some(inp),
                        entry,
                        dlid,
                        delivered_to: None,
                        cycle: &cycle,
                    },
                ),
                switch: Some(f.label(n).to_string()),
                guid: Some(guid(f.node(n).guid)),
                in_port: Some(inp),
                entry,
            });
        }
        (Some(WalkEnd::Delivered { .. }), None) => {
            delivered = true;
            if f.is_switch(f.port(dst).node) {
                // The destination switch takes the packet on its port 0.
                if let Some((s, inp)) = at_end {
                    let n = sw_node(s);
                    hops.push(HopRec {
                        switch: f.label(n).to_string(),
                        guid: guid(f.node(n).guid),
                        in_port: inp,
                        out_port: Some(0),
                        sl,
                        vl: None,
                        to: None,
                        to_port: None,
                    });
                }
            }
        }
        (Some(WalkEnd::Broken(b)), None) => {
            let at = b.at.map(sw_node);
            let in_port = if b.failure == Failure::Misdelivered {
                hops.last().map(|h| h.in_port)
            } else {
                at_end.map(|x| x.1)
            };
            let delivered_to = (b.failure == Failure::Misdelivered)
                .then(|| hops.last())
                .flatten()
                .map(|h| {
                    format!(
                        "{} port {}",
                        h.to.as_deref().unwrap_or("?"),
                        h.to_port.unwrap_or(0)
                    )
                });
            if b.failure != Failure::Misdelivered {
                if let (Some(n), Some(inp)) = (at, in_port) {
                    // The switch where it breaks, with the entry that does not lead on.
                    hops.push(HopRec {
                        switch: f.label(n).to_string(),
                        guid: guid(f.node(n).guid),
                        in_port: inp,
                        out_port: b.entry,
                        sl,
                        vl: None,
                        to: None,
                        to_port: None,
                    });
                }
            }
            lost = Some(Lost {
                failure: failure_name(b.failure),
                reason: reason(
                    &f,
                    Why {
                        failure: b.failure,
                        at,
                        inp: in_port,
                        entry: b.entry,
                        dlid,
                        delivered_to,
                        cycle: &[],
                    },
                ),
                switch: at.map(|n| f.label(n).to_string()),
                guid: at.map(|n| guid(f.node(n).guid)),
                in_port,
                entry: b.entry,
            });
        }
        (Some(WalkEnd::Stopped), None) => unreachable!("only a loop stops the walk"),
    }
    let doc = TraceDoc {
        source: end_of(&f, src),
        destination: end_of(&f, dst),
        dlid,
        sl,
        source_vl,
        hops,
        delivered,
        switch_hops,
        lost,
    };
    if crate::out::json() {
        crate::out::document(&doc)?;
    } else {
        print(&doc);
    }
    Ok(crate::out::Status::of(delivered).into())
}

fn failure_name(k: Failure) -> &'static str {
    match k {
        Failure::NoRoute => "no_route",
        Failure::Loop => "loop",
        Failure::PortZero => "port_zero",
        Failure::BeyondPortCount => "beyond_port_count",
        Failure::Unconnected => "unconnected",
        Failure::DeadChannel => "dead_channel",
        Failure::Misdelivered => "misdelivered",
    }
}

fn print(d: &TraceDoc) {
    let e = |x: &End| {
        format!(
            "{} port {} ({}, LID {})",
            x.node, x.port, x.port_guid, x.lid
        )
    };
    let dlid = if d.dlid == d.destination.lid {
        format!("DLID {}", d.dlid)
    } else {
        format!(
            "DLID {} (virtual LID: base {} + {})",
            d.dlid,
            d.destination.lid,
            d.dlid.wrapping_sub(d.destination.lid)
        )
    };
    crate::say!(
        "{} -> {}: {dlid}, SL {}",
        e(&d.source),
        e(&d.destination),
        d.sl
    );
    let w = d
        .hops
        .iter()
        .map(|h| h.switch.len())
        .chain([d.source.node.len(), d.destination.node.len(), 4])
        .max()
        .unwrap_or(4);
    let vl = |v: Option<u8>| v.map_or("-".to_string(), |v| v.to_string());
    let row = |hop: &str, node: &str, g: &str, ports: &str, sl: String, vl: String| {
        let s = format!("  {hop:<4} {node:<w$}  {g:<18}  {ports:<15}  {sl:<2}  {vl}");
        crate::say!("{}", s.trim_end());
    };
    row("hop", "node", "GUID", "ports", "SL".into(), "VL".into());
    row(
        "src",
        &d.source.node,
        &d.source.port_guid,
        &format!("port {}", d.source.port),
        d.sl.to_string(),
        vl(d.source_vl),
    );
    for (i, h) in d.hops.iter().enumerate() {
        let out = h.out_port.map_or("-".to_string(), |p| p.to_string());
        row(
            &(i + 1).to_string(),
            &h.switch,
            &h.guid,
            &format!("in {} out {out}", h.in_port),
            h.sl.to_string(),
            vl(h.vl),
        );
    }
    if d.delivered {
        row(
            "dst",
            &d.destination.node,
            &d.destination.port_guid,
            &format!("port {}", d.destination.port),
            String::new(),
            String::new(),
        );
        crate::say!(
            "delivered: {} switch(es), {} switch-to-switch link(s)",
            d.hops.len(),
            d.switch_hops
        );
    } else if let Some(l) = &d.lost {
        crate::say!("NOT DELIVERED {}", l.reason);
    }
}
