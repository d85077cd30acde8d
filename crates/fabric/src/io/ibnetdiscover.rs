//! Reader for `ibnetdiscover` output (rdma-core infiniband-diags), as real clusters produce it.
//!
//! A record is optional `vendid=`/`devid=`/`sysimgguid=` lines, a `switchguid=0x…(portguid)`,
//! `caguid=0x…` or `rtguid=0x…` line, a header `Switch|Ca|Rt <nports> "<id>" # "<desc>" …` and
//! one line per cabled port:
//!
//! ```text
//! switchguid=0x248a070300f0c0de(248a070300f0c0de)
//! Switch    36 "S-248a070300f0c0de"        # "leaf01" enhanced port 0 lid 3 lmc 0
//! [1]    "H-0002c90300a1b2c4"[1](2c90300a1b2c5)         # "node01 HCA-1" lid 5 4xEDR
//!
//! caguid=0x2c90300a1b2c4
//! Ca    2 "H-0002c90300a1b2c4"        # "node01 HCA-1"
//! [1](2c90300a1b2c5)     "S-248a070300f0c0de"[1]        # lid 5 lmc 0 "leaf01" lid 3 4xEDR
//! ```
//!
//! Node names are the quoted ids; node GUIDs come from the `…guid=` lines (or the id), port
//! GUIDs from the parentheses; a switch's LID from its header, a CA port's LID from the
//! `# lid N lmc M` at the start of its port-line comment (`lid 65535` = none). Width and speed
//! come from the `4xEDR` token. Every link is listed from both ends; the two lines are
//! cross-checked once every record has been read.
//!
//! Tolerated: tabs or spaces, CRLF, `[ext N]`, the `-g` grouping lines (`Chassis N (guid …)`,
//! `Non-Chassis Nodes`, `# Spine Nodes`, …), the `-f` ` s= w= v=` suffix, tool warnings
//! (`ibwarn: …`) and shell prompts captured with the output, and any stray lines before the
//! first record. A far end whose record contradicts the line is an error.
//!
//! A dump cut short loses the records at its end, which are usually the channel adapters'.
//! A CA or router (`"H-…"`, `"R-…"`) that has no record but is named on port lines is kept
//! with what those lines say about it (GUID from the id, port GUIDs, LIDs, description;
//! its port count is the highest port named), with a warning. A link to a switch without a
//! record is dropped with a warning: its other cables are unknown.

use super::diag::Loc;
use super::records::{Combined, Records};
use super::syntax::{glued_keyword, node_header, parse_header_rest, parse_port_comment};
use super::text::{
    decode, excerpt, is_shell_prompt, is_tool_noise, parse_hex, port_num, trim, Cursor, Line, Lines,
};
use super::{Loaded, ParseError};
use crate::builder::BuildOptions;
use crate::model::{NodeId, NodeKind, Speed, Width};

/// Width and speed as one end of a link reports them (`Unknown` when not given).
#[derive(Clone, Copy, Debug)]
struct End {
    width: Width,
    speed: Speed,
}

/// A link's width and speed from its two ends. ibnetdiscover prints each port's own active
/// width and speed; when the ends disagree (a port renegotiated, or a hand-edited example) the
/// link runs at the lower of the two, and the note says so.
fn combine(a: &End, b: Option<&End>) -> Result<Combined, String> {
    let Some(b) = b else {
        return Ok(Combined::agreed(a.width, a.speed));
    };
    let mut notes = Vec::new();
    let width = match (a.width, b.width) {
        (Width::Unknown, w) | (w, Width::Unknown) => w,
        (x, y) if x == y => x,
        (x, y) => {
            notes.push(format!(
                "the ends disagree on the width ({} vs {})",
                x.as_str(),
                y.as_str()
            ));
            if x.lanes() <= y.lanes() {
                x
            } else {
                y
            }
        }
    };
    let speed = match (a.speed, b.speed) {
        (Speed::Unknown, s) | (s, Speed::Unknown) => s,
        (x, y) if x == y => x,
        (x, y) => {
            notes.push(format!(
                "the ends disagree on the speed ({} vs {})",
                x.as_str(),
                y.as_str()
            ));
            if x.gbps_per_lane() <= y.gbps_per_lane() {
                x
            } else {
                y
            }
        }
    };
    let note = (!notes.is_empty()).then(|| {
        format!(
            "{}; loaded at the lower, {}{}",
            notes.join(", "),
            width.as_str(),
            speed.as_str()
        )
    });
    Ok(Combined { width, speed, note })
}

/// The `…=` lines seen since the last header.
#[derive(Default)]
struct Ids {
    vendid: Option<u64>,
    devid: Option<u64>,
    sysimgguid: Option<u64>,
    /// Kind announced, node GUID, port GUID in parentheses, key and line.
    guid: Option<(NodeKind, u64, Option<u64>, &'static str, Loc)>,
    /// First id line of the record.
    first: Option<(&'static str, Loc)>,
}

/// What a port line says about a channel adapter or router at its far end, kept in case that
/// node has no record (a dump cut short).
struct FarEnd<'t> {
    name: &'t str,
    port: u8,
    port_guid: u64,
    lid: Option<u64>,
    desc: &'t str,
    at: Loc,
}

struct Reader<'t> {
    rec: Records<End>,
    far: Vec<FarEnd<'t>>,
    ids: Ids,
    cur: Option<NodeId>,
    started: bool,
    stray: usize,
    stray_first: usize,
    stray_last: usize,
    /// A glued header was seen (warned once).
    glued: bool,
    /// The node the dump says discovery started from ("# Initiated from node G port P").
    initiated: Option<(u64, Loc)>,
}

const KEYS: [&str; 6] = [
    "vendid",
    "devid",
    "sysimgguid",
    "switchguid",
    "caguid",
    "rtguid",
];

/// Reads ibnetdiscover output.
pub fn read(bytes: &[u8], file: &str, opts: BuildOptions) -> Result<Loaded, ParseError> {
    let text = decode(bytes);
    let mut r = Reader {
        rec: Records::new(file, opts),
        far: Vec::new(),
        ids: Ids::default(),
        cur: None,
        started: false,
        stray: 0,
        stray_first: 0,
        stray_last: 0,
        glued: false,
        initiated: None,
    };
    for line in Lines::new(&text) {
        r.line(line)?;
    }
    if r.stray > 0 {
        let msg = if r.started {
            format!(
                "skipped {} stray lines before the topology (lines {}..={})",
                r.stray, r.stray_first, r.stray_last
            )
        } else {
            format!("{} lines hold no topology record", r.stray)
        };
        r.rec.warnings.push(format!("{file}: {msg}"));
    }
    if let Some((key, at)) = r.ids.first {
        r.rec.warn(
            at,
            format!("the file ends inside a record: the {key}= line has no node header after it (truncated dump?)"),
        );
    }
    r.keep_far_ends()?;
    if let Some((g, at)) = r.initiated {
        if r.rec.b.find_guid(g).is_none() {
            r.rec.warn(
                at,
                format!("the dump was taken from node {g:#018x}, which has no record in the file (a dump cut short?)"),
            );
        }
    }
    r.rec.finish(
        combine,
        "no nodes: expected ibnetdiscover output with Switch/Ca/Rt records",
    )
}

/// The node GUID of a "# Initiated from node <hex guid> port <hex guid>" comment.
fn initiated_from(t: &str) -> Option<u64> {
    let rest = t
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("Initiated from node")?;
    let g = rest.split_whitespace().next()?;
    u64::from_str_radix(g.trim_start_matches("0x"), 16).ok()
}

impl<'t> Reader<'t> {
    fn at(&self, no: usize) -> Loc {
        Loc::new(0, no)
    }

    fn line(&mut self, line: Line<'t>) -> Result<(), ParseError> {
        let at = self.at(line.no);
        let t = trim(line.text);
        if t.is_empty() {
            self.cur = None;
            return Ok(());
        }
        if t.starts_with('#') {
            if t.contains("Topology file") {
                self.started = true;
            }
            if let Some(g) = initiated_from(t) {
                self.initiated = Some((g, at));
            }
            return Ok(());
        }
        if is_tool_noise(t) || is_shell_prompt(t) {
            if self.started {
                self.rec
                    .warn(at, format!("ignored tool output {:?}", excerpt(t)));
            } else {
                self.stray(line.no);
            }
            return Ok(());
        }
        let mut c = Cursor::new(t);
        let word = c.take_while(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if let Some(key) = KEYS.iter().find(|k| **k == word) {
            if c.peek() == Some(b'=') {
                c.eat(b'=');
                self.cur = None;
                self.started = true;
                return self.id_line(key, c, at);
            }
        }
        let kind_of = |w: &str| match w {
            "Switch" => Some(NodeKind::Switch),
            "Ca" | "Hca" => Some(NodeKind::Ca),
            "Rt" => Some(NodeKind::Router),
            _ => None,
        };
        if let Some(kind) = kind_of(word) {
            if c.peek().is_some_and(|b| b == b' ' || b == b'\t') {
                self.started = true;
                return self.header(kind, word, c, at);
            }
        }
        // `Switch41 "S-…"# …`: the tabs were lost (a dump copied from a terminal).
        if let Some(kw) = glued_keyword(word) {
            if c.at_end()
                || c.peek()
                    .is_some_and(|b| b == b' ' || b == b'\t' || b == b'"')
            {
                if !self.glued {
                    self.glued = true;
                    self.rec.warn(
                        at,
                        format!("node headers run together with their port counts ({word:?}: tabs lost, a dump copied from a terminal?); read as if separated"),
                    );
                }
                let mut c = Cursor::new(t);
                c.advance(kw.len());
                self.started = true;
                return self.header(kind_of(kw).expect("keyword"), kw, c, at);
            }
        }
        if t.starts_with('[') {
            if let Some(n) = self.cur {
                return self.port_line(n, t, at);
            }
            if !self.started {
                self.stray(line.no);
                return Ok(());
            }
            return Err(self.rec.err(
                at,
                format!(
                    "port line outside a node record: {:?} (expected a Switch/Ca/Rt header line before the port lines)",
                    excerpt(t)
                ),
            ));
        }
        if (word == "Chassis" && c.peek().is_some_and(|b| b == b' ' || b == b'\t'))
            || t.starts_with("Non-Chassis Nodes")
            || t.starts_with("Hostname:")
        {
            self.cur = None;
            self.started = true;
            return Ok(());
        }
        if !self.started {
            self.stray(line.no);
            return Ok(());
        }
        Err(self.rec.err(
            at,
            format!(
                "unexpected line {:?}: expected a node header (Switch/Ca/Rt), a port line ([N] \"id\"[M]), \
                 vendid=/devid=/sysimgguid=/switchguid=/caguid=/rtguid=, a # comment or a blank line",
                excerpt(t)
            ),
        ))
    }

    fn stray(&mut self, no: usize) {
        if self.stray == 0 {
            self.stray_first = no;
        }
        self.stray += 1;
        self.stray_last = no;
    }

    /// `key=value` (after the `=`).
    fn id_line(&mut self, key: &'static str, mut c: Cursor<'_>, at: Loc) -> Result<(), ParseError> {
        c.skip_ws();
        let Some(v) = c.number() else {
            return Err(self.rec.err(
                at,
                format!("expected a number after {key}= (e.g. {key}=0x2c9)"),
            ));
        };
        let mut port_guid = None;
        if key == "switchguid" && c.eat(b'(') {
            match c.hex() {
                Some(g) if c.eat(b')') => port_guid = Some(g),
                _ => {
                    return Err(self.rec.err(
                        at,
                        "record cut short: expected switchguid=0x<node guid>(<port guid>)",
                    ))
                }
            }
        }
        c.skip_ws();
        if !(c.at_end() || c.peek() == Some(b'#')) {
            return Err(self.rec.err(
                at,
                format!("unexpected text {:?} after {key}=", excerpt(c.rest())),
            ));
        }
        let dup = match key {
            "vendid" => self.ids.vendid.replace(v).is_some(),
            "devid" => self.ids.devid.replace(v).is_some(),
            "sysimgguid" => self.ids.sysimgguid.replace(v).is_some(),
            _ => {
                let kind = match key {
                    "switchguid" => NodeKind::Switch,
                    "caguid" => NodeKind::Ca,
                    _ => NodeKind::Router,
                };
                self.ids
                    .guid
                    .replace((kind, v, port_guid, key, at))
                    .is_some()
            }
        };
        if dup {
            let (fk, fa) = self.ids.first.unwrap_or((key, at));
            return Err(self.rec.err(
                at,
                format!(
                    "record cut short: the record begun by {fk}= at line {} has no Switch/Ca/Rt header before this second {key}=",
                    fa.line
                ),
            ));
        }
        if self.ids.first.is_none() {
            self.ids.first = Some((key, at));
        }
        Ok(())
    }

    fn header(
        &mut self,
        kind: NodeKind,
        word: &str,
        mut c: Cursor<'_>,
        at: Loc,
    ) -> Result<(), ParseError> {
        let ids = std::mem::take(&mut self.ids);
        self.cur = None;
        let (nports, id) =
            node_header(&mut c, word, "36 \"S-…\"").map_err(|m| self.rec.err(at, m))?;
        if id.is_empty() {
            return Err(self.rec.err(at, "empty node id"));
        }
        let hc = parse_header_rest(c.rest()).map_err(|m| self.rec.err(at, m))?;
        // Node GUID: the guid= line, else the id ("S-<16 hex>").
        let id_guid = id
            .split_once('-')
            .filter(|(p, h)| matches!(*p, "S" | "H" | "R") && (1..=16).contains(&h.len()))
            .and_then(|(_, h)| parse_hex(h));
        let mut guid = id_guid.unwrap_or(0);
        let mut port0 = None;
        if let Some((k, g, pg, key, gat)) = ids.guid {
            if k != kind {
                return Err(self.rec.err(
                    at,
                    format!(
                        "{key}= at line {} announces a {} record, but this header is a {word}",
                        gat.line,
                        k.keyword()
                    ),
                ));
            }
            if let Some(ig) = id_guid {
                if ig != g {
                    return Err(self.rec.err(
                        at,
                        format!(
                            "node id {id:?} does not match {key}={g:#x} at line {}",
                            gat.line
                        ),
                    ));
                }
            }
            guid = g;
            port0 = pg;
        }
        let desc = hc.desc.unwrap_or("");
        let n = self.rec.add_node(kind, nports, guid, id, desc, at)?;
        {
            let node = self.rec.b.node_mut(n);
            node.vendor_id = ids.vendid.map_or(0, |v| v as u32);
            node.device_id = ids.devid.map_or(0, |v| v as u32);
            node.sys_guid = ids.sysimgguid.unwrap_or(0);
            node.enhanced_sp0 = kind == NodeKind::Switch && hc.enhanced == Some(true);
        }
        if kind == NodeKind::Switch {
            let pg = port0.unwrap_or(guid);
            if pg != 0 {
                self.rec.set_port_guid(n, 0, pg, at)?;
            }
            if let Some(lid) = hc.lid {
                self.rec.set_lid(n, 0, lid, hc.lmc.unwrap_or(0), at)?;
            }
        }
        self.cur = Some(n);
        Ok(())
    }

    fn port_line(&mut self, n: NodeId, t: &'t str, at: Loc) -> Result<(), ParseError> {
        let mut c = Cursor::new(t);
        let lp = self.rec.local_port(&mut c, n, t, at)?;
        self.ext(&mut c, at)?;
        let local_guid = self.paren_guid(&mut c, at)?;
        c.skip_ws();
        let remote = self.rec.remote_id(&mut c, lp, true, at)?;
        let rp = if c.eat(b'[') {
            match c.number() {
                Some(v) if c.eat(b']') => v,
                _ => {
                    return Err(self.rec.err(
                        at,
                        format!(
                        "record cut short: expected the remote port number [N] after \"{remote}\""
                    ),
                    ))
                }
            }
        } else {
            return Err(self.rec.err(
                at,
                format!("record cut short: expected the remote port number [N] after \"{remote}\""),
            ));
        };
        let Some(rp) = port_num(rp) else {
            return Err(self
                .rec
                .err(at, format!("remote port {rp} is out of range 1..=254")));
        };
        self.ext(&mut c, at)?;
        c.skip_ws();
        let remote_guid = self.paren_guid(&mut c, at)?.unwrap_or(0);
        c.skip_ws();
        let comment = if c.at_end() {
            ""
        } else if c.eat(b'#') {
            c.rest()
        } else {
            return Err(self.rec.err(
                at,
                format!(
                    "unexpected text {:?} on a port line (expected a # comment)",
                    excerpt(c.rest())
                ),
            ));
        };
        let pc = parse_port_comment(comment);
        if (remote.starts_with("H-") || remote.starts_with("R-")) && ibnd_guid(remote).is_some() {
            // the far end's description: the comment's first quoted text
            let desc = comment
                .split_once('"')
                .and_then(|(_, r)| r.rfind('"').map(|e| r.get(..e).unwrap_or("")))
                .unwrap_or("");
            self.far.push(FarEnd {
                name: remote,
                port: rp,
                port_guid: remote_guid,
                lid: pc.remote_lid,
                desc,
                at,
            });
        }
        let kind = self.rec.b.node(n).kind;
        let unknown = End {
            width: Width::Unknown,
            speed: Speed::Unknown,
        };
        if lp == 0 || lp > self.rec.b.node(n).nports {
            // Out of range: let add_port_line report it before anything is recorded.
            return self
                .rec
                .add_port_line(n, lp, remote, rp, remote_guid, unknown, at);
        }
        if let Some(g) = local_guid {
            if kind == NodeKind::Switch {
                let own = self.rec.port_guid(n, 0);
                if own != 0 && own != g {
                    return Err(self.rec.err(
                        at,
                        format!("port GUID {g:#x} on a port line of switch {:?} contradicts its port GUID {own:#x}", self.rec.name(n)),
                    ));
                }
            } else {
                self.rec.set_port_guid(n, lp, g, at)?;
            }
        }
        if kind != NodeKind::Switch {
            if let Some((lid, lmc)) = pc.own_lid {
                self.rec.set_lid(n, lp, lid, lmc, at)?;
            }
        }
        if let Some(m) = pc.width_speed_error() {
            return Err(self.rec.err(at, m));
        }
        let (width, speed) = pc.width_speed.unwrap_or((Width::Unknown, Speed::Unknown));
        self.rec
            .add_port_line(n, lp, remote, rp, remote_guid, End { width, speed }, at)
    }

    /// Optional `[ext N]`.
    fn ext(&self, c: &mut Cursor<'_>, at: Loc) -> Result<(), ParseError> {
        if c.eat_str("[ext") {
            c.skip_ws();
            if c.number().is_none() || !c.eat(b']') {
                return Err(self.rec.err(at, "record cut short: expected [ext N]"));
            }
        }
        Ok(())
    }

    /// Optional `(hexguid)`, possibly after blanks.
    fn paren_guid(&self, c: &mut Cursor<'_>, at: Loc) -> Result<Option<u64>, ParseError> {
        let save = *c;
        c.skip_ws();
        if !c.eat(b'(') {
            *c = save;
            return Ok(None);
        }
        match c.hex() {
            Some(g) if c.eat(b')') => Ok(Some(g)),
            _ => Err(self.rec.err(
                at,
                "record cut short: expected a port GUID in parentheses, e.g. (2c90300a1b2c5)",
            )),
        }
    }
}

/// The non-zero GUID of an ibnetdiscover node id.
fn ibnd_guid(id: &str) -> Option<u64> {
    super::ibnd_id_guid(id).filter(|&g| g != 0)
}

impl Reader<'_> {
    /// Adds the channel adapters and routers that port lines name but that have no record,
    /// from what those lines say (see the module documentation).
    fn keep_far_ends(&mut self) -> Result<(), ParseError> {
        let far = std::mem::take(&mut self.far);
        // per missing node, in the order first named: the lines naming it
        let mut order: Vec<&str> = Vec::new();
        let mut lines: rustc_hash::FxHashMap<&str, Vec<&FarEnd>> = Default::default();
        for f in &far {
            if self.rec.b.find_name(f.name).is_some() {
                continue;
            }
            lines
                .entry(f.name)
                .or_insert_with(|| {
                    order.push(f.name);
                    Vec::new()
                })
                .push(f);
        }
        for name in order {
            let named = &lines[name];
            let first = named[0];
            let kind = if name.starts_with('R') {
                NodeKind::Router
            } else {
                NodeKind::Ca
            };
            let guid = ibnd_guid(name).expect("checked when kept");
            let nports = named.iter().map(|f| f.port).max().unwrap_or(1);
            let n = self
                .rec
                .add_node(kind, nports, guid, name, first.desc, first.at)?;
            self.rec.mark_from_lines(n);
            for f in named {
                if f.port_guid != 0 {
                    self.rec.set_port_guid(n, f.port, f.port_guid, f.at)?;
                }
                if let Some(lid) = f.lid {
                    self.rec.set_lid(n, f.port, lid, 0, f.at)?;
                }
            }
            let what = if kind == NodeKind::Router {
                "router"
            } else {
                "channel adapter"
            };
            self.rec.warn(
                first.at,
                format!(
                    "{name:?} has no record in the file (a dump cut short?): kept as a {what} with what the lines naming it say (GUID, port GUIDs, LIDs, description {:?})",
                    first.desc
                ),
            );
        }
        Ok(())
    }
}
