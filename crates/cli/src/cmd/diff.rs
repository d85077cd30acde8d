//! `fabroute diff A B [--fabric F] [--lmc N] [--all]`: what differs between two table sets
//! of one fabric — per switch the changed LFT entries and the 64-LID blocks a subnet manager
//! would send, changed SL2VL entries, changed path SLs. Exit 0 when identical, 1 when they
//! differ (like diff(1)), 3 on bad input, among which two sets of different fabrics.
//!
//! A and B are table-set directories as `fabroute route -o DIR` and `fabroute fault -o DIR`
//! write them (and OpenSM's dump directory): `opensm-lfts.dump`, `opensm-subnet.lst`, optional
//! `opensm-sl2vl.dump` (absent: identity tables) and `opensm-path-sl.psl` (absent: SL 0), and
//! `summary.json` (the LMC; the digests that tie the files to their set). With `--fabric F`
//! either may instead be a single LFT file (`opensm-lfts.dump`, a `-U` file, ibroute output,
//! `opensm.fdbs`); then only the LFTs are compared.
//!
//! Both sets are read against one fabric, so that switch and end-port indices and LIDs mean
//! the same on both sides: `--fabric F`, or else the `opensm-subnet.lst` of the set whose
//! fabric contains the other's (a fault set's list leaves its failed links and switches out;
//! its tables are still those of the whole fabric). The lists must agree on every port they
//! share (node GUID, port number, node kind, LID); a port or cable in one that the other
//! lacks is allowed one way only. The comparison itself is `routing::diff::TableDiff`.

use crate::cmd::check::{read_routing, SetInfo};
use crate::util::{load_fabric_bytes, read_input};
use anyhow::{bail, Result};
use fabric::{BuildOptions, Fabric, Lid, NodeKind, PortId};
use routing::diff::TableDiff;
use routing::opensm::{LFTS_FILE, PSL_FILE, SL2VL_FILE, SUBNET_LST_FILE};
use routing::Routing;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Detail lines per section of the text output without `--all`.
const LINES: usize = 40;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The old table set: a directory (`fabroute route -o` / `fault -o`, OpenSM's dumps), or
    /// with --fabric an LFT file.
    pub a: PathBuf,
    /// The new table set, in the same forms.
    pub b: PathBuf,
    /// The fabric both sets are tables of (its opensm-subnet.lst, or any fabric file with the
    /// same LIDs). Default: the opensm-subnet.lst of the set whose fabric contains the
    /// other's. Needed for LFT files and for two sets with different failures (give the
    /// fabric without failures).
    #[arg(long)]
    pub fabric: Option<PathBuf>,
    /// LMC of the end ports. Default: what each set's summary.json records, else 0.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: Option<u8>,
    /// List every difference (default: the first 40 lines of each section).
    #[arg(long)]
    pub all: bool,
}

/// One side of the comparison and its files.
struct Side {
    label: &'static str,
    path: PathBuf,
    dir: bool,
    lst: Option<PathBuf>,
    lfts: PathBuf,
    sl2vl: Option<PathBuf>,
    psl: Option<PathBuf>,
    set: Option<SetInfo>,
}

impl Side {
    fn open(label: &'static str, path: &Path) -> Result<Side> {
        crate::util::recover_set(path);
        if path.is_dir() {
            let lfts = path.join(LFTS_FILE);
            if !lfts.is_file() {
                bail!(
                    "{label} {}: no {LFTS_FILE} in this directory: not a table set",
                    path.display()
                );
            }
            let opt = |n: &str| Some(path.join(n)).filter(|p| p.is_file());
            Ok(Side {
                label,
                path: path.to_path_buf(),
                dir: true,
                lst: opt(SUBNET_LST_FILE),
                set: SetInfo::beside(&lfts)?,
                lfts,
                sl2vl: opt(SL2VL_FILE),
                psl: opt(PSL_FILE),
            })
        } else if path.is_file() {
            Ok(Side {
                label,
                path: path.to_path_buf(),
                dir: false,
                lst: None,
                lfts: path.to_path_buf(),
                sl2vl: None,
                psl: None,
                set: SetInfo::beside(path)?,
            })
        } else {
            bail!("{label} {}: no such file or directory", path.display())
        }
    }
}

/// Loads a fabric file (digest-checked when it belongs to `set`) with end-port LMC `lmc`.
fn load(path: &Path, set: Option<&SetInfo>, lmc: u8) -> Result<Fabric> {
    let bytes = read_input(path)?;
    if let Some(s) = set {
        s.verify(path, &bytes)?;
    }
    let f = load_fabric_bytes(path, &bytes, BuildOptions::default())?.fabric;
    if lmc == 0 {
        return Ok(f);
    }
    f.with_end_lmc(lmc)
        .map_err(|e| anyhow::anyhow!("{}: LMC {lmc}: {e}", path.display()))
}

/// What a port is, for comparing two descriptions of a fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PortKey {
    node_guid: u64,
    num: u8,
    kind: NodeKind,
    lid: Lid,
}

/// One end of a cable: node GUID and port number.
type CableEnd = (u64, u8);

/// The ports (by port GUID; a switch by its port 0) and cables (by node GUID and port
/// number) of a fabric, with names for messages.
struct Inventory {
    ports: BTreeMap<u64, (PortKey, String)>,
    links: BTreeMap<(CableEnd, CableEnd), String>,
}

fn inventory(f: &Fabric) -> Inventory {
    let mut ports = BTreeMap::new();
    for (i, n) in f.nodes.iter().enumerate() {
        let id = fabric::NodeId(i as u32);
        let nums: Vec<u8> = if n.kind == NodeKind::Switch {
            vec![0]
        } else {
            (1..=n.nports).collect()
        };
        for num in nums {
            let p = f.port_id(id, num);
            let g = f.shown_port_guid(p);
            if g == 0 {
                continue;
            }
            let lid = if num == 0 {
                f.switch_lid(id)
            } else {
                f.port(p).lid
            };
            let key = PortKey {
                node_guid: n.guid,
                num,
                kind: n.kind,
                lid,
            };
            ports.insert(g, (key, format!("{} port {num}", n.name)));
        }
    }
    let mut links = BTreeMap::new();
    for l in &f.links {
        let end = |p: PortId| (f.node(f.port(p).node).guid, f.port(p).num);
        let (a, b) = (end(l.a), end(l.b));
        let name = |p: PortId| format!("{}/{}", f.node(f.port(p).node).name, f.port(p).num);
        links.insert(
            (a.min(b), a.max(b)),
            format!("{} - {}", name(l.a), name(l.b)),
        );
    }
    Inventory { ports, links }
}

/// How two descriptions of a fabric relate.
struct Relation {
    /// Ports both have that they describe differently.
    conflicts: Vec<String>,
    /// Ports and cables only the first has: count and the first few.
    x_only: (usize, Vec<String>),
    /// The same for the second.
    y_only: (usize, Vec<String>),
}

fn relate(x: &Inventory, y: &Inventory, xl: &str, yl: &str) -> Relation {
    let mut conflicts = Vec::new();
    for (g, (kx, nx)) in &x.ports {
        if let Some((ky, ny)) = y.ports.get(g) {
            if kx == ky {
                continue;
            }
            conflicts.push(format!(
                "port GUID {g:#018x} is {nx} (node GUID {:#018x}) with LID {} in {xl}, {ny} (node GUID {:#018x}) with LID {} in {yl}",
                kx.node_guid, kx.lid, ky.node_guid, ky.lid
            ));
        }
    }
    let only = |a: &Inventory, b: &Inventory| {
        let mut v: Vec<String> = a
            .ports
            .iter()
            .filter(|(g, _)| !b.ports.contains_key(g))
            .map(|(g, (_, n))| format!("{n} ({g:#018x})"))
            .collect();
        v.extend(
            a.links
                .iter()
                .filter(|(k, _)| !b.links.contains_key(k))
                .map(|(_, n)| format!("cable {n}")),
        );
        let n = v.len();
        v.truncate(3);
        (n, v)
    };
    Relation {
        conflicts,
        x_only: only(x, y),
        y_only: only(y, x),
    }
}

/// `N ports/cables (e.g. …)`.
fn some(o: &(usize, Vec<String>)) -> String {
    format!("{} port(s) and cable(s) (e.g. {})", o.0, o.1.join(", "))
}

fn refuse_conflicts(r: &Relation, xl: &str, yl: &str) -> Result<()> {
    if r.conflicts.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = r.conflicts.iter().take(3).map(String::as_str).collect();
    bail!(
        "{xl} and {yl} are not tables of the same fabric: {}{}",
        shown.join("; "),
        if r.conflicts.len() > 3 {
            format!("; {} more ports differ", r.conflicts.len() - 3)
        } else {
            String::new()
        }
    )
}

/// The fabric both sides are read against, where it came from, and what one side's fabric
/// lacks (a note).
fn reference(a: &Args, sa: &Side, sb: &Side, lmc: u8) -> Result<(Fabric, PathBuf, Option<String>)> {
    let lst = |s: &Side| -> Result<Option<Fabric>> {
        s.lst
            .as_deref()
            .map(|p| load(p, s.set.as_ref(), lmc))
            .transpose()
    };
    if let Some(fp) = &a.fabric {
        let f = load(fp, None, lmc)?;
        let inv = inventory(&f);
        let shown = format!("--fabric {}", fp.display());
        for s in [sa, sb] {
            if let Some(fx) = lst(s)? {
                let label = format!("{} ({})", s.label, s.path.display());
                let r = relate(&inventory(&fx), &inv, &label, &shown);
                refuse_conflicts(&r, &label, &shown)?;
                if r.x_only.0 > 0 {
                    bail!(
                        "{label} is not a table set of {shown}: its {SUBNET_LST_FILE} has {} that the fabric lacks",
                        some(&r.x_only)
                    );
                }
            }
        }
        return Ok((f, fp.clone(), None));
    }
    for s in [sa, sb] {
        if !s.dir {
            crate::usage_bail!(
                "{} {} is a file: give the fabric its tables are of with --fabric",
                s.label,
                s.path.display()
            );
        }
        if s.lst.is_none() {
            bail!(
                "{} {}: no {SUBNET_LST_FILE} (give the fabric with --fabric)",
                s.label,
                s.path.display()
            );
        }
    }
    let (fa, fb) = (lst(sa)?.expect("checked"), lst(sb)?.expect("checked"));
    let r = relate(&inventory(&fa), &inventory(&fb), "A", "B");
    refuse_conflicts(&r, "A", "B")?;
    let path = |s: &Side| s.lst.clone().expect("checked");
    let lacks = |l: &str, m: &str, o: &(usize, Vec<String>)| {
        (o.0 > 0).then(|| {
            format!(
                "{l}'s {SUBNET_LST_FILE} lacks {} port(s) and cable(s) that {m}'s lists (failed, or not cabled; e.g. {}): both sets are read against {m}'s fabric",
                o.0,
                o.1.join(", ")
            )
        })
    };
    if r.y_only.0 == 0 {
        Ok((fa, path(sa), lacks("B", "A", &r.x_only)))
    } else if r.x_only.0 == 0 {
        Ok((fb, path(sb), lacks("A", "B", &r.y_only)))
    } else {
        bail!(
            "A and B are not tables of the same fabric, or of one fabric with different failures: A has {} that B lacks, B has {} that A lacks (for sets of one fabric give the fabric without failures with --fabric)",
            some(&r.x_only),
            some(&r.y_only)
        )
    }
}

/// What `diff` compares, every input read and checked: both sides' tables over the one
/// fabric they are read against, their multicast tables, and the notes on what was missing.
struct Plan {
    a: Args,
    f: Fabric,
    fabric_path: PathBuf,
    /// Both sides are sets (SL2VL tables, path SLs and multicast compared too).
    full: bool,
    notes: Vec<String>,
    ra: Routing,
    rb: Routing,
    /// Both sides' multicast tables (sets only; an absent file has no entry).
    mfts: Option<(routing::mcast::Mfts, routing::mcast::Mfts)>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    execute(plan(a)?)
}

fn plan(a: Args) -> Result<Plan> {
    let sa = Side::open("A", &a.a)?;
    let sb = Side::open("B", &a.b)?;
    let lmc_of = |s: &Side| a.lmc.or(s.set.as_ref().and_then(|i| i.lmc)).unwrap_or(0);
    let (la, lb) = (lmc_of(&sa), lmc_of(&sb));
    if la != lb {
        bail!(
            "A was routed with LMC {la} and B with LMC {lb} (their summary.json): their LID ranges differ, so their tables cannot be compared entry by entry"
        );
    }
    let (f, fabric_path, lacks) = reference(&a, &sa, &sb, la)?;
    // SL2VL tables and path SLs only when both sides are sets (a lone LFT file has neither).
    let full = sa.dir && sb.dir;
    let read_side = |s: &Side| {
        read_routing(
            &f,
            &s.lfts,
            s.sl2vl.as_deref().filter(|_| full),
            s.psl.as_deref().filter(|_| full),
            s.set.as_ref(),
            false,
        )
    };
    let (ra, rb) = (read_side(&sa)?, read_side(&sb)?);
    let mfts = if full {
        let read = |s: &Side| -> Result<routing::mcast::Mfts> {
            let dir = s.lfts.parent().unwrap_or(Path::new("."));
            Ok(
                crate::mcast::read_set_mfts(&dir.join(routing::opensm::MCFDBS_FILE), &f)?
                    .unwrap_or_default(),
            )
        };
        Some((read(&sa)?, read(&sb)?))
    } else {
        None
    };
    let mut notes: Vec<String> = lacks.into_iter().collect();
    if full {
        for s in [&sa, &sb] {
            if s.sl2vl.is_none() {
                notes.push(format!(
                    "{} has no {SL2VL_FILE}: identity SL2VL tables",
                    s.label
                ));
            }
            if s.psl.is_none() {
                notes.push(format!("{} has no {PSL_FILE}: SL 0 on every path", s.label));
            }
        }
    } else {
        notes.push("an LFT file on one side: only the LFTs are compared".to_string());
    }
    Ok(Plan {
        a,
        f,
        fabric_path,
        full,
        notes,
        ra,
        rb,
        mfts,
    })
}

fn execute(p: Plan) -> Result<ExitCode> {
    let Plan {
        a,
        f,
        fabric_path,
        full,
        notes,
        ra,
        rb,
        mfts,
    } = p;
    let d = TableDiff::between(&f, &ra, &rb);
    let mft = mfts.map(|(x, y)| x.diff(&y)).unwrap_or_default();
    if crate::out::json() {
        let mut v = document(&f, &a, &fabric_path, full, &notes, &d);
        v["identical"] = json!(d.is_empty() && mft.is_empty());
        v["totals"]["mft_entries"] = json!(mft.len());
        v["totals"]["mft_blocks"] = json!(routing::mcast::mft_blocks(&mft));
        v["mft"] = json!(mft
            .iter()
            .map(|c| {
                let n = f.node(f.switches[c.switch as usize]);
                json!({"switch": n.name, "guid": guid(n.guid), "mlid": c.mlid,
                       "old_ports": c.old.ports().collect::<Vec<_>>(),
                       "new_ports": c.new.ports().collect::<Vec<_>>()})
            })
            .collect::<Vec<_>>());
        crate::out::document(&v)?;
    } else {
        print(&f, &a, &fabric_path, full, &notes, &d, &mft);
    }
    Ok(if d.is_empty() && mft.is_empty() {
        crate::out::Status::Clean
    } else {
        crate::out::Status::Unclean
    }
    .into())
}

fn guid(g: u64) -> String {
    format!("{g:#018x}")
}

fn port_text(p: Option<u8>) -> String {
    p.map_or("-".to_string(), |p| p.to_string())
}

/// `name port N` of an end port, by end-port index.
fn source_name(f: &Fabric, ep: u32) -> (String, u8, String) {
    let p = f.end_ports[ep as usize];
    let port = f.port(p);
    (
        f.node(port.node).name.clone(),
        port.num,
        guid(f.shown_port_guid(p)),
    )
}

/// The node owning a LID, with the port (`None` for LIDs no port owns).
fn lid_owner(f: &Fabric, lid: Lid) -> Option<String> {
    f.lid_port(lid).map(|p| {
        let port = f.port(p);
        if f.is_switch(port.node) {
            f.node(port.node).name.clone()
        } else {
            format!("{} port {}", f.node(port.node).name, port.num)
        }
    })
}

fn document(
    f: &Fabric,
    a: &Args,
    fabric: &Path,
    full: bool,
    notes: &[String],
    d: &TableDiff,
) -> serde_json::Value {
    let blocks = d.lft_blocks();
    let mut lft: Vec<serde_json::Value> = Vec::new();
    let mut i = 0;
    while i < d.lft.len() {
        let s = d.lft[i].sw;
        let j = i + d.lft[i..].iter().take_while(|c| c.sw == s).count();
        let n = f.node(f.switches[s as usize]);
        let bl: Vec<u16> = blocks.iter().filter(|b| b.0 == s).map(|b| b.1).collect();
        lft.push(json!({
            "switch": n.name, "guid": guid(n.guid), "blocks": bl,
            "entries": d.lft[i..j].iter().map(|c| json!({
                "lid": c.lid, "block": c.block(), "old": c.old, "new": c.new,
            })).collect::<Vec<_>>(),
        }));
        i = j;
    }
    let sl2vl: Vec<_> = d
        .sl2vl
        .iter()
        .map(|c| {
            let n = f.node(c.node);
            json!({"node": n.name, "guid": guid(n.guid), "kind": n.kind, "in": c.inp, "out": c.out,
                   "sl": c.sl, "old_vl": c.old, "new_vl": c.new})
        })
        .collect();
    let path_sl: Vec<_> = d
        .path_sl
        .iter()
        .map(|c| {
            let (name, port, g) = source_name(f, c.src);
            json!({"source": name, "port": port, "port_guid": g, "dlid": c.dlid,
                   "destination": lid_owner(f, c.dlid), "old_sl": c.old, "new_sl": c.new})
        })
        .collect();
    let mut compared = vec!["lft"];
    if full {
        compared.extend(["sl2vl", "path_sl"]);
    }
    json!({
        "a": a.a.display().to_string(),
        "b": a.b.display().to_string(),
        "fabric": fabric.display().to_string(),
        "compared": compared,
        "notes": notes,
        "identical": d.is_empty(),
        "totals": {
            "lft_entries": d.lft.len(),
            "lft_blocks": blocks.len(),
            "switches": d.switches_touched(),
            "sl2vl_entries": d.sl2vl.len(),
            "sl2vl_nodes": d.sl2vl_nodes(),
            "path_sls": d.path_sl.len(),
        },
        "lft": lft,
        "sl2vl": sl2vl,
        "path_sl": path_sl,
    })
}

/// `1-3,5,7-8` for a sorted list.
fn ranges(v: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Prints at most `limit` lines of a section, then how many were left out.
struct Budget {
    left: usize,
    cut: usize,
}

impl Budget {
    fn new(all: bool) -> Budget {
        Budget {
            left: if all { usize::MAX } else { LINES },
            cut: 0,
        }
    }
    fn line(&mut self, s: String) {
        if self.left > 0 {
            self.left -= 1;
            crate::say!("{s}");
        } else {
            self.cut += 1;
        }
    }
    fn end(self, what: &str) {
        if self.cut > 0 {
            crate::say!("  … {} more {what} lines (--all shows every one)", self.cut);
        }
    }
}

fn print(
    f: &Fabric,
    a: &Args,
    fabric: &Path,
    full: bool,
    notes: &[String],
    d: &TableDiff,
    mft: &[routing::mcast::MftChange],
) {
    crate::say!(
        "A: {}  B: {}  (fabric {})",
        a.a.display(),
        a.b.display(),
        fabric.display()
    );
    for n in notes {
        crate::say!("note: {n}");
    }
    let blocks = d.lft_blocks();
    crate::say!(
        "LFT: {} entries differ in {} blocks on {} switches",
        d.lft.len(),
        blocks.len(),
        d.switches_touched()
    );
    let mut b = Budget::new(a.all);
    let mut i = 0;
    while i < d.lft.len() {
        let s = d.lft[i].sw;
        let j = i + d.lft[i..].iter().take_while(|c| c.sw == s).count();
        let n = f.node(f.switches[s as usize]);
        let bl: Vec<String> = blocks
            .iter()
            .filter(|x| x.0 == s)
            .map(|x| x.1.to_string())
            .collect();
        b.line(format!(
            "  switch {} {}: {} entries, block(s) {}",
            n.name,
            guid(n.guid),
            j - i,
            bl.join(" ")
        ));
        // Runs of consecutive LIDs with the same change, within one block.
        let mut k = i;
        while k < j {
            let c = d.lft[k];
            let run = d.lft[k..j]
                .iter()
                .enumerate()
                .take_while(|(n, x)| {
                    x.lid == c.lid + *n as Lid
                        && (x.old, x.new) == (c.old, c.new)
                        && x.block() == c.block()
                })
                .count();
            let last = d.lft[k + run - 1].lid;
            let lids = if run == 1 {
                format!("LID {} ({:#06x})", c.lid, c.lid)
            } else {
                format!("LIDs {}-{} ({:#06x}-{:#06x})", c.lid, last, c.lid, last)
            };
            b.line(format!(
                "    {lids}, block {}: port {} -> {}",
                c.block(),
                port_text(c.old),
                port_text(c.new)
            ));
            k += run;
        }
        i = j;
    }
    b.end("LFT");
    if full {
        crate::say!(
            "SL2VL: {} entries differ on {} nodes",
            d.sl2vl.len(),
            d.sl2vl_nodes()
        );
        // One line per SL2VL row (input port, output port): its changed entries, or the
        // whole row when most of it changes.
        let mut b = Budget::new(a.all);
        let mut i = 0;
        while i < d.sl2vl.len() {
            let c = d.sl2vl[i];
            let j = i + d.sl2vl[i..]
                .iter()
                .take_while(|x| (x.node, x.inp, x.out) == (c.node, c.inp, c.out))
                .count();
            let n = f.node(c.node);
            let row = &d.sl2vl[i..j];
            let vls = |v: Vec<u8>| v.iter().map(u8::to_string).collect::<Vec<_>>().join(" ");
            let what = format!(
                "{} {}: VL {} -> {}",
                if row.len() == 1 { "SL" } else { "SLs" },
                ranges(&row.iter().map(|x| x.sl as u32).collect::<Vec<_>>()),
                vls(row.iter().map(|x| x.old).collect()),
                vls(row.iter().map(|x| x.new).collect())
            );
            b.line(format!(
                "  {} {} in {} out {}: {what}",
                n.name,
                guid(n.guid),
                c.inp,
                c.out
            ));
            i = j;
        }
        b.end("SL2VL");
        crate::say!("path SLs: {} (source, DLID) pairs differ", d.path_sl.len());
        let mut b = Budget::new(a.all);
        for c in &d.path_sl {
            let (name, port, _) = source_name(f, c.src);
            b.line(format!(
                "  {name} port {port} -> DLID {} ({}): SL {} -> {}",
                c.dlid,
                lid_owner(f, c.dlid).unwrap_or_else(|| "no port".into()),
                c.old,
                c.new
            ));
        }
        b.end("path SL");
        crate::say!(
            "MFT: {} entries differ in {} blocks",
            mft.len(),
            routing::mcast::mft_blocks(mft)
        );
        let mut b = Budget::new(a.all);
        let ports = |m: &routing::mcast::PortMask| {
            let v: Vec<String> = m.ports().map(|p| p.to_string()).collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(" ")
            }
        };
        for c in mft {
            let n = f.node(f.switches[c.switch as usize]);
            b.line(format!(
                "  {} {} MLID {:#06X}: ports {} -> {}",
                n.name,
                guid(n.guid),
                c.mlid,
                ports(&c.old),
                ports(&c.new)
            ));
        }
        b.end("MFT");
    }
    crate::say!(
        "{}",
        if d.is_empty() && mft.is_empty() {
            "A and B are identical"
        } else {
            "A and B differ"
        }
    );
}
