//! Shared plumbing for the line-oriented readers (ibnetdiscover, ibsim, opensm-subnet.lst):
//!
//! - [`decode`] and [`Lines`]: bytes → text (invalid UTF-8 replaced, never an error) → lines
//!   with 1-based numbers, `\n` or `\r\n` endings;
//! - [`Cursor`]: a tiny scanner over one line (whitespace is spaces and tabs) that never
//!   slices inside a UTF-8 sequence and never panics;
//! - number parsers that report overflow instead of wrapping;
//! - [`Warnings`], [`GuidTable`], [`LidTable`]: diagnostics and duplicate detection with the
//!   line of each claim;
//! - [`Records`]: the node-record / port-line model shared by the ibnetdiscover and ibsim
//!   readers. Port lines are collected while reading (a link may name a node whose record
//!   comes later) and resolved at the end, where both ends of every link are cross-checked.

use super::{Loaded, ParseError};
use crate::builder::{BuildOptions, FabricBuilder};
use crate::model::{Lid, NodeId, NodeKind, Speed, Width, MAX_LMC, MAX_UNICAST_LID};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

// ---------------------------------------------------------------------------------------------
// Lines

/// The file's text without a leading UTF-8 byte-order mark; invalid UTF-8 sequences become
/// U+FFFD (which keeps every `\n`, so line numbers are those of the raw bytes). Borrows when
/// the input is valid UTF-8.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes)
}

/// Number of lines as an editor counts them: `\n`-terminated lines plus a final unterminated
/// one. An empty text has 0 lines.
pub fn line_count(text: &str) -> usize {
    let n = text.bytes().filter(|&b| b == b'\n').count();
    if text.is_empty() || text.ends_with('\n') {
        n
    } else {
        n + 1
    }
}

/// One line of input: 1-based number and text without the line ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub no: usize,
    pub text: &'a str,
}

/// Iterator over the lines of a text. `\r\n` and `\n` end lines; a trailing `\r` is dropped.
#[derive(Clone, Debug)]
pub struct Lines<'a> {
    rest: &'a str,
    no: usize,
    done: bool,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        Lines {
            rest: text,
            no: 0,
            done: text.is_empty(),
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;
    fn next(&mut self) -> Option<Line<'a>> {
        if self.done {
            return None;
        }
        self.no += 1;
        let (line, rest) = match self.rest.find('\n') {
            Some(i) => (self.rest.get(..i).unwrap_or(""), self.rest.get(i + 1..)),
            None => (self.rest, None),
        };
        match rest {
            Some(r) if !r.is_empty() => self.rest = r,
            _ => self.done = true,
        }
        let text = line.strip_suffix('\r').unwrap_or(line);
        Some(Line { no: self.no, text })
    }
}

// ---------------------------------------------------------------------------------------------
// Scanning

/// Whitespace inside a line: space, tab, and the rarer ASCII blanks.
#[inline]
pub fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r')
}

/// Trims [`is_ws`] from both ends.
pub fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii() && is_ws(c as u8))
}

/// A position in one line. All moves stop at ASCII bytes or at the end, so every slice is on a
/// character boundary; slicing goes through `str::get` anyway.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(s: &'a str) -> Self {
        Cursor { s, pos: 0 }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }
    pub fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }
    /// The unread rest of the line.
    pub fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }
    pub fn skip_ws(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(is_ws) {
            self.pos += 1;
        }
        self.pos > start
    }
    /// Moves `n` bytes forward (clamped to the end). Callers pass lengths of text they have
    /// already scanned, so the position stays on a character boundary.
    pub fn advance(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.s.len());
    }
    /// Consumes `b` if it is next.
    pub fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// Consumes `word` if the rest starts with it.
    pub fn eat_str(&mut self, word: &str) -> bool {
        if self.rest().starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }
    /// Consumes ASCII bytes while `pred` holds (non-ASCII bytes always stop).
    pub fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii() && pred(b)) {
            self.pos += 1;
        }
        self.s.get(start..self.pos).unwrap_or("")
    }
    /// Consumes a run of non-whitespace characters (any UTF-8).
    pub fn token(&mut self) -> &'a str {
        let rest = self.rest();
        let end = rest
            .char_indices()
            .find(|&(_, c)| c.is_ascii() && is_ws(c as u8))
            .map_or(rest.len(), |(i, _)| i);
        self.pos += end;
        rest.get(..end).unwrap_or("")
    }
    /// Parses `"text"` at the cursor. `Ok(None)`: no quote here; `Err(())`: no closing quote.
    #[allow(clippy::result_unit_err)]
    pub fn quoted(&mut self) -> Result<Option<&'a str>, ()> {
        if self.peek() != Some(b'"') {
            return Ok(None);
        }
        let inner = self.s.get(self.pos + 1..).unwrap_or("");
        match inner.find('"') {
            Some(e) => {
                self.pos += e + 2;
                Ok(Some(inner.get(..e).unwrap_or("")))
            }
            None => Err(()),
        }
    }
    /// A decimal or `0x` hexadecimal number (see [`parse_num`]); `None` leaves the cursor.
    pub fn number(&mut self) -> Option<u64> {
        let save = self.pos;
        let tok = self.take_while(|b| b.is_ascii_alphanumeric());
        match parse_num(tok) {
            Some(v) => Some(v),
            None => {
                self.pos = save;
                None
            }
        }
    }
    /// A run of hexadecimal digits (no `0x`), at most 16.
    pub fn hex(&mut self) -> Option<u64> {
        let save = self.pos;
        let tok = self.take_while(|b| b.is_ascii_hexdigit());
        match parse_hex(tok) {
            Some(v) => Some(v),
            None => {
                self.pos = save;
                None
            }
        }
    }
}

/// Decimal digits, overflow-checked.
pub fn parse_dec(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        acc.checked_mul(10)?.checked_add((b - b'0') as u64)
    })
}

/// Hexadecimal digits without prefix, 1 to 16 of them (leading zeros allowed beyond 16).
pub fn parse_hex(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        let d = (b as char).to_digit(16)? as u64;
        acc.checked_mul(16)?.checked_add(d)
    })
}

/// `0x…` hexadecimal or decimal (like `strtoul(s, 0, 0)` without the octal surprise).
pub fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => parse_hex(h),
        None => parse_dec(s),
    }
}

/// Reads a port number: 1..=254 fits the model's `u8` with 255 reserved.
/// Reads the start of a node header after its keyword `word`: the port count and the quoted
/// node id (`Switch 36 "S-…"`). `example_id` shows the expected id form in the message.
pub fn node_header<'a>(
    c: &mut Cursor<'a>,
    word: &str,
    example: &str,
) -> Result<(u8, &'a str), String> {
    c.skip_ws();
    let nports = match c.number() {
        Some(v) => match port_num(v) {
            Some(0) | None => {
                return Err(format!(
                    "port count {v} of this {word} is out of range 1..=254"
                ))
            }
            Some(p) => p,
        },
        None => {
            return Err(format!(
                "expected the port count after {word:?} (e.g. {word} {example})"
            ))
        }
    };
    c.skip_ws();
    match c.quoted() {
        Ok(Some(id)) => Ok((nports, id)),
        Ok(None) => Err(format!(
            "record cut short: expected the quoted node id after \"{word} {nports}\""
        )),
        Err(()) => Err("record cut short: the node id has no closing quote".to_string()),
    }
}

pub fn port_num(v: u64) -> Option<u8> {
    u8::try_from(v).ok().filter(|&p| p != u8::MAX)
}

/// Width and speed from an ibnetdiscover token such as `4xEDR`, `12xQDR`, `4x???`, `?????`.
pub fn parse_width_speed(tok: &str) -> Option<(Width, Speed)> {
    let (w, s) = if let Some(rest) = tok.strip_prefix("??") {
        (Width::Unknown, rest)
    } else {
        let x = tok.find(['x', 'X'])?;
        let (w, s) = (tok.get(..=x)?, tok.get(x + 1..)?);
        (Width::parse(w)?, s)
    };
    Some((w, Speed::parse(s)?))
}

/// Looks like an interactive shell prompt captured with the output:
/// `[root@head ~]# ibnetdiscover`, `user@host:~$ cmd`, `$ cmd`.
pub fn is_shell_prompt(line: &str) -> bool {
    let t = trim(line);
    if let Some(inner) = t.strip_prefix('[') {
        if let Some(close) = inner.find(']') {
            let (head, after) = (inner.get(..close).unwrap_or(""), inner.get(close + 1..));
            let after = after.map(|a| a.trim_start()).unwrap_or("");
            return head.contains('@') && (after.starts_with('#') || after.starts_with('$'));
        }
        return false;
    }
    if t == "$" || t.starts_with("$ ") {
        return true;
    }
    // user@host:dir$ … or user@host:dir# …
    let first = t.split([' ', '\t']).next().unwrap_or("");
    first.contains('@') && (first.ends_with('$') || first.ends_with('#') || first.ends_with('>'))
}

/// Diagnostics printed by the infiniband-diags tools on stderr (`ibwarn: [1234] …`).
pub fn is_tool_noise(line: &str) -> bool {
    let t = trim(line);
    t.starts_with("ibwarn:")
        || t.starts_with("ibwarn ")
        || t.starts_with("ibpanic:")
        || t.starts_with("ibnetdiscover:")
        || t.starts_with("ibnd_")
        || t.starts_with("src/")
        || t.starts_with("mad_rpc")
        || t.starts_with("umad_")
}

/// A short, printable excerpt of a line for messages.
pub fn excerpt(s: &str) -> String {
    let t = trim(s);
    let mut out: String = t
        .chars()
        .take(60)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if t.chars().count() > 60 {
        out.push('…');
    }
    out
}

/// What the `# …` comment of an ibnetdiscover port line says:
/// CA side `lid 5 lmc 0 "remote desc" lid 3 4xEDR`, switch side `"remote desc" lid 3 4xEDR`
/// (possibly followed by ` s=4 w=2 v=4` with `-f`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortComment {
    /// The line's own port LID and LMC (CA and router port lines only).
    pub own_lid: Option<(u64, u64)>,
    /// The LID printed for the far end.
    pub remote_lid: Option<u64>,
    pub width_speed: Option<(Width, Speed)>,
}

/// Parses a port-line comment (the text after `#`). Never fails: parts it cannot read are
/// `None`. The remote description is skipped by taking everything up to the last `"`, so a
/// description may contain `#`, quotes or trailing spaces.
pub fn parse_port_comment(comment: &str) -> PortComment {
    let mut out = PortComment::default();
    let mut c = Cursor::new(comment);
    c.skip_ws();
    let save = c;
    if c.eat_str("lid") && c.skip_ws() {
        if let Some(lid) = c.number() {
            let mut lmc = 0;
            let save2 = c;
            c.skip_ws();
            if c.eat_str("lmc") && c.skip_ws() {
                match c.number() {
                    Some(v) => lmc = v,
                    None => c = save2,
                }
            } else {
                c = save2;
            }
            out.own_lid = Some((lid, lmc));
        } else {
            c = save;
        }
    } else {
        c = save;
    }
    let rest = c.rest();
    let tail = match rest.rfind('"') {
        Some(i) => rest.get(i + 1..).unwrap_or(""),
        None => rest,
    };
    let mut toks = tail
        .split(|ch: char| ch.is_ascii() && is_ws(ch as u8))
        .filter(|t| !t.is_empty());
    while let Some(t) = toks.next() {
        if t == "lid" {
            let Some(v) = toks.next() else { break };
            out.remote_lid = parse_num(v);
            if let Some(ws) = toks.next() {
                out.width_speed = parse_width_speed(ws);
            }
            break;
        } else if let Some(ws) = parse_width_speed(t) {
            out.width_speed = Some(ws);
            break;
        }
    }
    out
}

/// What the `# …` part of a node header line says: `# "desc" enhanced port 0 lid 3 lmc 0`
/// (ibsim also accepts an unquoted description ending before ` enhanced port `, ` base port `,
/// ` lid ` or ` lmc `).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderComment<'a> {
    pub desc: Option<&'a str>,
    /// `Some(true)` for `enhanced port 0`, `Some(false)` for `base port 0`.
    pub enhanced: Option<bool>,
    pub lid: Option<u64>,
    pub lmc: Option<u64>,
}

/// Parses the text after a header's node id. Errors: text before `#`, or a description whose
/// closing quote is missing (a line cut short).
pub fn parse_header_rest(rest: &str) -> Result<HeaderComment<'_>, String> {
    let mut out = HeaderComment::default();
    let mut c = Cursor::new(rest);
    c.skip_ws();
    if c.at_end() {
        return Ok(out);
    }
    if !c.eat(b'#') {
        return Err(format!(
            "unexpected text {:?} after the node id (expected a # comment)",
            excerpt(c.rest())
        ));
    }
    c.skip_ws();
    let body = c.rest();
    let after = if let Some(q) = body.strip_prefix('"') {
        let Some(e) = q.rfind('"') else {
            return Err("record cut short: the node description has no closing quote".into());
        };
        out.desc = Some(q.get(..e).unwrap_or(""));
        q.get(e + 1..).unwrap_or("")
    } else {
        let cut = [" enhanced port ", " base port ", " lid ", " lmc "]
            .iter()
            .filter_map(|k| body.find(k))
            .min()
            .unwrap_or(body.len());
        let d = trim(body.get(..cut).unwrap_or(""));
        if !d.is_empty() {
            out.desc = Some(d);
        }
        body.get(cut..).unwrap_or("")
    };
    let toks: Vec<&str> = after
        .split(|ch: char| ch.is_ascii() && is_ws(ch as u8))
        .filter(|t| !t.is_empty())
        .collect();
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            "enhanced" | "base"
                if toks.get(i + 1) == Some(&"port") && toks.get(i + 2) == Some(&"0") =>
            {
                out.enhanced = Some(toks[i] == "enhanced");
                i += 3;
            }
            "lid" | "lmc" => {
                let v = toks.get(i + 1).and_then(|t| parse_num(t));
                let Some(v) = v else {
                    return Err(format!(
                        "expected a number after {:?} in the node header",
                        toks[i]
                    ));
                };
                if toks[i] == "lid" {
                    out.lid = Some(v);
                } else {
                    out.lmc = Some(v);
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Diagnostics

/// Warnings with a cap so a huge damaged file does not produce a huge list.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    list: Vec<String>,
    suppressed: usize,
}

impl Warnings {
    const CAP: usize = 200;
    pub fn push(&mut self, msg: String) {
        if self.list.len() < Self::CAP {
            self.list.push(msg);
        } else {
            self.suppressed += 1;
        }
    }
    pub fn finish(mut self) -> Vec<String> {
        if self.suppressed > 0 {
            self.list
                .push(format!("… and {} more warnings", self.suppressed));
        }
        self.list
    }
}

/// Where something was read: index into a file-name table and 1-based line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Loc {
    pub file: u32,
    pub line: u32,
}

impl Loc {
    pub fn new(file: usize, line: usize) -> Loc {
        Loc {
            file: file as u32,
            line: u32::try_from(line).unwrap_or(u32::MAX),
        }
    }
}

/// Who owns a GUID (node GUID or port GUID) and where it was first read.
#[derive(Debug, Default)]
pub(crate) struct GuidTable {
    map: FxHashMap<u64, (NodeId, Loc)>,
}

impl GuidTable {
    /// Claims `guid` for node `n`; the same node may claim a GUID several times (a switch's
    /// port-0 GUID usually equals its node GUID). Returns the earlier claimant on conflict.
    pub fn claim(&mut self, guid: u64, n: NodeId, at: Loc) -> Result<(), (NodeId, Loc)> {
        if guid == 0 {
            return Ok(());
        }
        match self.map.get(&guid) {
            Some(&(o, l)) if o != n => Err((o, l)),
            Some(_) => Ok(()),
            None => {
                self.map.insert(guid, (n, at));
                Ok(())
            }
        }
    }
}

/// Which port claimed each unicast LID (with its LMC range) and where.
#[derive(Debug, Default)]
pub(crate) struct LidTable {
    owner: Vec<(u32, u8, Loc)>,
}

impl LidTable {
    const FREE: u32 = u32::MAX;
    /// Claims `lid .. lid + 2^lmc` for `(n, port)`. Errors name the earlier owner. The LID
    /// range itself must already be validated (unicast, LMC ≤ 7).
    pub fn claim(
        &mut self,
        lid: Lid,
        lmc: u8,
        n: NodeId,
        port: u8,
        at: Loc,
    ) -> Result<(), (u32, u8, Loc, Lid)> {
        if lid == 0 || lid > MAX_UNICAST_LID || lmc > MAX_LMC {
            return Ok(());
        }
        let end = (lid as usize + (1usize << lmc)).min(MAX_UNICAST_LID as usize + 1);
        if self.owner.len() < end {
            self.owner.resize(end, (Self::FREE, 0, Loc::default()));
        }
        for l in lid as usize..end {
            let o = self.owner[l];
            if o.0 != Self::FREE && (o.0 != n.0 || o.1 != port) {
                return Err((o.0, o.1, o.2, l as Lid));
            }
        }
        for o in &mut self.owner[lid as usize..end] {
            *o = (n.0, port, at);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Node records and port lines (ibnetdiscover, ibsim)

const NONE: u32 = u32::MAX;

/// One `[port] "remote"[port]` line, kept until every record has been read.
#[derive(Clone, Debug)]
pub(crate) struct PortLine<T> {
    pub node: NodeId,
    pub port: u8,
    pub remote_port: u8,
    name: (u32, u32),
    /// Port GUID of the far end as printed on this line (0 = not given).
    pub remote_guid: u64,
    pub at: Loc,
    pub data: T,
}

/// Nodes read so far plus the pending port lines; see the module docs.
#[derive(Debug)]
pub(crate) struct Records<T> {
    pub files: Vec<String>,
    /// For each file: where it was included from (ibsim `include`).
    pub parents: Vec<Option<Loc>>,
    pub b: FabricBuilder,
    pub warnings: Warnings,
    opts: BuildOptions,
    node_at: Vec<Loc>,
    slot_base: Vec<u32>,
    slots: Vec<u32>,
    port_guid: Vec<u64>,
    lines: Vec<PortLine<T>>,
    names: String,
    guids: GuidTable,
    lids: LidTable,
}

impl<T> Records<T> {
    pub fn new(file: &str, opts: BuildOptions) -> Self {
        Records {
            files: vec![file.to_string()],
            parents: vec![None],
            b: FabricBuilder::new(),
            warnings: Warnings::default(),
            opts,
            node_at: Vec::new(),
            slot_base: Vec::new(),
            slots: Vec::new(),
            port_guid: Vec::new(),
            lines: Vec::new(),
            names: String::new(),
            guids: GuidTable::default(),
            lids: LidTable::default(),
        }
    }

    pub fn file_name(&self, at: Loc) -> &str {
        self.files.get(at.file as usize).map_or("?", |s| s.as_str())
    }

    /// `file:line` of a location, for messages.
    pub fn where_(&self, at: Loc) -> String {
        format!("{}:{}", self.file_name(at), at.line)
    }

    /// `line N` when `at` is in the same file as `here`, else `file:N`.
    pub fn rel(&self, at: Loc, here: Loc) -> String {
        if at.file == here.file {
            format!("line {}", at.line)
        } else {
            self.where_(at)
        }
    }

    /// A parse error at `at`, with the include chain when `at` is in an included file.
    pub fn err(&self, at: Loc, msg: impl Into<String>) -> ParseError {
        let mut msg = msg.into();
        let mut f = at.file as usize;
        let mut depth = 0;
        while let Some(Some(p)) = self.parents.get(f) {
            msg.push_str(&format!(" (included from {})", self.where_(*p)));
            f = p.file as usize;
            depth += 1;
            if depth > 64 {
                break;
            }
        }
        ParseError::new(self.file_name(at), at.line as usize, msg)
    }

    pub fn warn(&mut self, at: Loc, msg: impl std::fmt::Display) {
        let w = self.where_(at);
        self.warnings.push(format!("{w}: {msg}"));
    }

    pub fn name(&self, n: NodeId) -> &str {
        &self.b.node(n).name
    }

    pub fn node_loc(&self, n: NodeId) -> Loc {
        self.node_at.get(n.idx()).copied().unwrap_or_default()
    }

    /// Adds a node record read at `at`; duplicate names and GUIDs are errors there.
    pub fn add_node(
        &mut self,
        kind: NodeKind,
        nports: u8,
        guid: u64,
        name: &str,
        desc: &str,
        at: Loc,
    ) -> Result<NodeId, ParseError> {
        if let Some(o) = self.b.find_name(name) {
            return Err(self.err(
                at,
                format!(
                    "duplicate node {name:?}: it already has a record at {}",
                    self.rel(self.node_loc(o), at)
                ),
            ));
        }
        let next = NodeId(self.node_at.len() as u32);
        if let Err((o, l)) = self.guids.claim(guid, next, at) {
            return Err(self.err(
                at,
                format!(
                    "duplicate GUID {guid:#018x}: node {name:?} has it, but {:?} already has it ({})",
                    self.name(o),
                    self.rel(l, at)
                ),
            ));
        }
        let n = self
            .b
            .add_node(kind, nports, guid, name, desc)
            .map_err(|e| self.err(at, e.0))?;
        debug_assert_eq!(n, next);
        self.node_at.push(at);
        self.slot_base.push(self.slots.len() as u32);
        self.slots
            .extend(std::iter::repeat_n(NONE, nports as usize + 1));
        self.port_guid
            .extend(std::iter::repeat_n(0u64, nports as usize + 1));
        Ok(n)
    }

    fn slot(&self, n: NodeId, port: u8) -> Option<usize> {
        let base = *self.slot_base.get(n.idx())? as usize;
        let np = self.b.node(n).nports;
        (port <= np).then_some(base + port as usize)
    }

    /// The port GUID recorded for `(n, port)` (switches: port 0's for every port), 0 if none.
    pub fn port_guid(&self, n: NodeId, port: u8) -> u64 {
        let p = if self.b.node(n).kind == NodeKind::Switch {
            0
        } else {
            port
        };
        self.slot(n, p)
            .and_then(|s| self.port_guid.get(s).copied())
            .unwrap_or(0)
    }

    fn beyond(&self, n: NodeId, port: u8, at: Loc) -> ParseError {
        let node = self.b.node(n);
        self.err(
            at,
            format!(
                "port {port} is beyond the port count {} of {:?} (record at {})",
                node.nports,
                node.name,
                self.rel(self.node_loc(n), at)
            ),
        )
    }

    /// Sets a port GUID, checking it against every other node's GUIDs.
    pub fn set_port_guid(
        &mut self,
        n: NodeId,
        port: u8,
        guid: u64,
        at: Loc,
    ) -> Result<(), ParseError> {
        let Some(s) = self.slot(n, port) else {
            return Err(self.beyond(n, port, at));
        };
        if let Err((o, l)) = self.guids.claim(guid, n, at) {
            return Err(self.err(
                at,
                format!(
                    "duplicate GUID {guid:#018x}: port {port} of {:?} has it, but {:?} already has it ({})",
                    self.name(n),
                    self.name(o),
                    self.rel(l, at)
                ),
            ));
        }
        self.b
            .set_port_guid(n, port, guid)
            .map_err(|e| self.err(at, e.0))?;
        if let Some(g) = self.port_guid.get_mut(s) {
            *g = guid;
        }
        Ok(())
    }

    /// Sets a port's LID and LMC (65535 and 0 mean none), checking overlaps with the line of
    /// the earlier owner. Ignored when LIDs are to be reassigned.
    pub fn set_lid(
        &mut self,
        n: NodeId,
        port: u8,
        lid: u64,
        lmc: u64,
        at: Loc,
    ) -> Result<(), ParseError> {
        if self.opts.reassign_lids {
            return Ok(());
        }
        if self.slot(n, port).is_none() {
            return Err(self.beyond(n, port, at));
        }
        let lid = if lid == 0xFFFF { 0 } else { lid };
        if lid > MAX_UNICAST_LID as u64 {
            return Err(self.err(
                at,
                format!("LID {lid} is not a unicast LID (1..={MAX_UNICAST_LID})"),
            ));
        }
        if lmc > MAX_LMC as u64 {
            return Err(self.err(at, format!("LMC {lmc} is above the maximum {MAX_LMC}")));
        }
        let (lid, lmc) = (lid as Lid, lmc as u8);
        if lid == 0 {
            return Ok(());
        }
        if lid as usize + (1usize << lmc) - 1 > MAX_UNICAST_LID as usize {
            return Err(self.err(
                at,
                format!(
                    "LID range {lid}+{} is beyond the unicast range",
                    1u32 << lmc
                ),
            ));
        }
        if let Err((o, op, l, which)) = self.lids.claim(lid, lmc, n, port, at) {
            return Err(self.err(
                at,
                format!(
                    "LID {which} of {:?} port {port} is already used by {:?} port {op} ({})",
                    self.name(n),
                    self.name(NodeId(o)),
                    self.rel(l, at)
                ),
            ));
        }
        self.b
            .set_lid(n, port, lid as u32, lmc)
            .map_err(|e| self.err(at, e.0))
    }

    /// Records `[port] "remote"[remote_port]` of node `n`.
    #[allow(clippy::too_many_arguments)]
    pub fn add_port_line(
        &mut self,
        n: NodeId,
        port: u8,
        remote: &str,
        remote_port: u8,
        remote_guid: u64,
        data: T,
        at: Loc,
    ) -> Result<(), ParseError> {
        if port == 0 {
            return Err(self.err(
                at,
                format!(
                    "port 0 of {:?} cannot be cabled (port lines start at [1])",
                    self.name(n)
                ),
            ));
        }
        if remote_port == 0 {
            return Err(self.err(at, format!("remote port 0 of {remote:?} cannot be cabled")));
        }
        let Some(s) = self.slot(n, port) else {
            return Err(self.beyond(n, port, at));
        };
        let prev = self.slots[s];
        if prev != NONE {
            let pl = &self.lines[prev as usize].at;
            return Err(self.err(
                at,
                format!(
                    "port {port} of {:?} is listed twice (first at {})",
                    self.name(n),
                    self.rel(*pl, at)
                ),
            ));
        }
        self.slots[s] = self.lines.len() as u32;
        let start = self.names.len() as u32;
        self.names.push_str(remote);
        self.lines.push(PortLine {
            node: n,
            port,
            remote_port,
            name: (start, remote.len() as u32),
            remote_guid,
            at,
            data,
        });
        Ok(())
    }

    fn remote_name<'n>(names: &'n str, pl: &PortLine<T>) -> &'n str {
        let (s, l) = (pl.name.0 as usize, pl.name.1 as usize);
        names.get(s..s + l).unwrap_or("")
    }

    /// Resolves every port line, checks that the two ends of each link agree, connects, and
    /// builds. `combine(this_end, far_end)` gives the link's width and speed (or a message);
    /// `far_end` is `None` when only one end lists the link.
    pub fn finish(
        mut self,
        mut combine: impl FnMut(&T, Option<&T>) -> Result<(Width, Speed), String>,
        no_nodes: &str,
    ) -> Result<Loaded, ParseError> {
        if self.node_at.is_empty() {
            return Err(ParseError::new(&self.files[0], 0, no_nodes));
        }
        let lines = std::mem::take(&mut self.lines);
        let names = std::mem::take(&mut self.names);
        for (i, pl) in lines.iter().enumerate() {
            let rname = Self::remote_name(&names, pl);
            let Some(r) = self.b.find_name(rname) else {
                let msg = format!(
                    "link {:?}[{}] - {rname:?}[{}] dropped: {rname:?} has no record in the file",
                    self.name(pl.node),
                    pl.port,
                    pl.remote_port
                );
                self.warn(pl.at, msg);
                continue;
            };
            let Some(rs) = self.slot(r, pl.remote_port) else {
                return Err(self.err(
                    pl.at,
                    format!(
                        "{:?}[{}] is cabled to port {} of {rname:?}, which has only {} ports (record at {})",
                        self.name(pl.node),
                        pl.port,
                        pl.remote_port,
                        self.b.node(r).nports,
                        self.rel(self.node_loc(r), pl.at)
                    ),
                ));
            };
            // The far end's view of this cable.
            let back = self.slots[rs];
            let far = if back == NONE {
                None
            } else {
                let q = &lines[back as usize];
                let qname = Self::remote_name(&names, q);
                if qname != self.name(pl.node) || q.remote_port != pl.port {
                    return Err(self.err(
                        pl.at,
                        format!(
                            "the two ends of a link disagree: this line cables {:?}[{}] to {rname:?}[{}], but {} cables {rname:?}[{}] to {qname:?}[{}]",
                            self.name(pl.node),
                            pl.port,
                            pl.remote_port,
                            self.rel(q.at, pl.at),
                            pl.remote_port,
                            q.remote_port
                        ),
                    ));
                }
                if (back as usize) < i {
                    continue; // connected from the other end already
                }
                Some(q)
            };
            // Port GUIDs printed for the far end must match what its own record says.
            for (end, guid, node, port) in [
                (pl, pl.remote_guid, r, pl.remote_port),
                (
                    far.unwrap_or(pl),
                    far.map_or(0, |q| q.remote_guid),
                    pl.node,
                    pl.port,
                ),
            ] {
                if guid == 0 {
                    continue;
                }
                let known = self.port_guid(node, port);
                if known != 0 && known != guid {
                    return Err(self.err(
                        end.at,
                        format!(
                            "port GUID {guid:#x} given for {:?}[{port}] contradicts its record, which says {known:#x}",
                            self.name(node)
                        ),
                    ));
                }
                if known == 0 && self.b.node(node).kind != NodeKind::Switch {
                    self.set_port_guid(node, port, guid, end.at)?;
                }
            }
            let (width, speed) = match combine(&pl.data, far.map(|q| &q.data)) {
                Ok(ws) => ws,
                Err(m) => {
                    let at = far.map_or(pl.at, |q| q.at);
                    return Err(self.err(
                        at,
                        format!(
                            "link {:?}[{}] - {rname:?}[{}] (also listed at {}): {m}",
                            self.name(pl.node),
                            pl.port,
                            pl.remote_port,
                            self.rel(pl.at, at)
                        ),
                    ));
                }
            };
            if far.is_none() {
                let msg = format!(
                    "only one end of link {:?}[{}] - {rname:?}[{}] is listed (the record of {rname:?} at {} has no line for port {})",
                    self.name(pl.node),
                    pl.port,
                    pl.remote_port,
                    self.rel(self.node_loc(r), pl.at),
                    pl.remote_port
                );
                self.warn(pl.at, msg);
            }
            if let Err(e) = self
                .b
                .connect(pl.node, pl.port, r, pl.remote_port, width, speed)
            {
                return Err(self.err(pl.at, e.0));
            }
        }
        let file = self.files[0].clone();
        let fabric = self
            .b
            .build_with(self.opts)
            .map_err(|e| ParseError::new(&file, 0, e.0))?;
        Ok(Loaded {
            fabric,
            warnings: self.warnings.finish(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_numbers_and_endings() {
        let v: Vec<_> = Lines::new("a\r\nb\n\nc").map(|l| (l.no, l.text)).collect();
        assert_eq!(v, vec![(1, "a"), (2, "b"), (3, ""), (4, "c")]);
        assert_eq!(line_count("a\r\nb\n\nc"), 4);
        assert_eq!(Lines::new("x\n").count(), 1);
        assert_eq!(line_count("x\n"), 1);
        assert_eq!(Lines::new("").count(), 0);
        assert_eq!(line_count(""), 0);
        assert_eq!(Lines::new("\n\n").count(), 2);
    }

    #[test]
    fn numbers_do_not_overflow() {
        assert_eq!(parse_num("0x10"), Some(16));
        assert_eq!(parse_num("42"), Some(42));
        assert_eq!(parse_num("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_num("18446744073709551616"), None);
        assert_eq!(parse_hex("ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_hex("1ffffffffffffffff"), None);
        assert_eq!(parse_num(""), None);
        assert_eq!(parse_num("0x"), None);
        assert_eq!(port_num(255), None);
        assert_eq!(port_num(254), Some(254));
    }

    #[test]
    fn cursor_is_safe_on_utf8() {
        let mut c = Cursor::new("é\"ü\" x");
        assert_eq!(c.take_while(|b| b != b'"'), "");
        assert_eq!(c.token(), "é\"ü\"");
        c.skip_ws();
        assert_eq!(c.rest(), "x");
        let mut c = Cursor::new("\"open");
        assert_eq!(c.quoted(), Err(()));
    }

    #[test]
    fn width_speed_tokens() {
        assert_eq!(parse_width_speed("4xEDR"), Some((Width::X4, Speed::Edr)));
        assert_eq!(
            parse_width_speed("12xFDR10"),
            Some((Width::X12, Speed::Fdr10))
        );
        assert_eq!(
            parse_width_speed("4x???"),
            Some((Width::X4, Speed::Unknown))
        );
        assert_eq!(
            parse_width_speed("?????"),
            Some((Width::Unknown, Speed::Unknown))
        );
        assert_eq!(
            parse_width_speed("??HDR"),
            Some((Width::Unknown, Speed::Hdr))
        );
        assert_eq!(parse_width_speed("3xEDR"), None);
        assert_eq!(parse_width_speed("lid"), None);
    }

    #[test]
    fn port_comments() {
        let c = parse_port_comment(r#" lid 5 lmc 1 "leaf #1 "big" " lid 3 4xEDR s=4 w=2 v=4"#);
        assert_eq!(c.own_lid, Some((5, 1)));
        assert_eq!(c.remote_lid, Some(3));
        assert_eq!(c.width_speed, Some((Width::X4, Speed::Edr)));
        let c = parse_port_comment(r#" "node01 HCA-1" lid 65535 12x???"#);
        assert_eq!(c.own_lid, None);
        assert_eq!(c.remote_lid, Some(65535));
        assert_eq!(c.width_speed, Some((Width::X12, Speed::Unknown)));
        let c = parse_port_comment(r#" "cut short"#);
        assert_eq!(c.width_speed, None);
        assert_eq!(parse_port_comment("").width_speed, None);
    }

    #[test]
    fn header_comments() {
        let h =
            parse_header_rest("\t\t# \"MF0;leaf \"01\"  \" enhanced port 0 lid 3 lmc 2").unwrap();
        assert_eq!(h.desc, Some("MF0;leaf \"01\"  "));
        assert_eq!((h.enhanced, h.lid, h.lmc), (Some(true), Some(3), Some(2)));
        let h = parse_header_rest(" # plain desc base port 0 lid 0x10").unwrap();
        assert_eq!(h.desc, Some("plain desc"));
        assert_eq!((h.enhanced, h.lid, h.lmc), (Some(false), Some(16), None));
        assert_eq!(parse_header_rest("").unwrap(), HeaderComment::default());
        assert!(parse_header_rest(" junk")
            .unwrap_err()
            .contains("unexpected text"));
        assert!(parse_header_rest(" # \"open")
            .unwrap_err()
            .contains("record cut short"));
        assert!(parse_header_rest(" # \"d\" lid x")
            .unwrap_err()
            .contains("expected a number"));
    }

    #[test]
    fn lid_table_reports_the_first_owner() {
        let mut t = LidTable::default();
        let at = Loc::new(0, 7);
        assert!(t.claim(4, 2, NodeId(1), 1, at).is_ok()); // 4..=7
        assert!(t.claim(4, 2, NodeId(1), 1, at).is_ok()); // same port again
        assert_eq!(
            t.claim(6, 0, NodeId(2), 1, Loc::new(0, 9)),
            Err((1, 1, at, 6))
        );
        assert!(t.claim(8, 0, NodeId(2), 1, at).is_ok());
        assert!(
            t.claim(MAX_UNICAST_LID + 1, 0, NodeId(3), 1, at).is_ok(),
            "ignored, never panics"
        );
    }

    #[test]
    fn prompts() {
        assert!(is_shell_prompt("[root@head ~]# ibnetdiscover"));
        assert!(is_shell_prompt("user@login1:~$ ibnetdiscover > f"));
        assert!(is_shell_prompt("$ ibnetdiscover"));
        assert!(!is_shell_prompt("[1]\t\"S-0002c90200400000\"[3]"));
        assert!(!is_shell_prompt("[3](2c9) \"H-1\"[1]"));
    }
}
