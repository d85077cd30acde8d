//! The node-record / port-line model shared by the ibnetdiscover and ibsim readers. Port
//! lines are collected while reading (a link may name a node whose record comes later) and
//! resolved at the end, where both ends of every link are cross-checked.

use super::diag::{GuidTable, LidTable, Loc, Warnings};
use super::text::{excerpt, port_num, Cursor};
use super::{Loaded, ParseError, ParseErrorKind};
use crate::builder::{BuildOptions, FabricBuilder};
use crate::model::{Lid, NodeId, NodeKind, Speed, Width, MAX_LMC, MAX_UNICAST_LID};

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

/// What [`Records::finish`]'s `combine` makes of a link's two ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Combined {
    pub width: Width,
    pub speed: Speed,
    /// Set when the ends disagree and the link was given the lower of the two.
    pub note: Option<String>,
}

impl Combined {
    pub fn agreed(width: Width, speed: Speed) -> Combined {
        Combined {
            width,
            speed,
            note: None,
        }
    }
}

/// Nodes read so far plus the pending port lines; see the module docs.
#[derive(Debug)]
pub(crate) struct Records<T> {
    pub files: Vec<String>,
    /// For each file: where it was included from (ibsim `include`).
    pub parents: Vec<Option<Loc>>,
    pub b: FabricBuilder,
    pub warnings: Warnings,
    /// A port line cabled to a node the file never defines: an error when set (ibsim net
    /// files, which ibsim itself refuses: "can't find remote node"), else the link is dropped
    /// with a warning (ibnetdiscover dumps, which can be cut short).
    pub undefined_far_is_error: bool,
    opts: BuildOptions,
    node_at: Vec<Loc>,
    /// Per node: it has no record of its own and was made from the port lines naming it
    /// (then every link to it is listed from one end only, which is not warned about again).
    from_lines: Vec<bool>,
    slot_base: Vec<u32>,
    slots: Vec<u32>,
    port_guid: Vec<u64>,
    lines: Vec<PortLine<T>>,
    names: String,
    guids: GuidTable,
    lids: LidTable,
    /// Ports whose LID reads 65535 (none assigned): how many, and where the first was.
    unassigned: (usize, Option<String>),
}

impl<T> Records<T> {
    pub fn new(file: &str, opts: BuildOptions) -> Self {
        Records {
            files: vec![file.to_string()],
            parents: vec![None],
            b: FabricBuilder::new(),
            warnings: Warnings::default(),
            undefined_far_is_error: false,
            opts,
            node_at: Vec::new(),
            from_lines: Vec::new(),
            slot_base: Vec::new(),
            slots: Vec::new(),
            port_guid: Vec::new(),
            lines: Vec::new(),
            names: String::new(),
            guids: GuidTable::default(),
            lids: LidTable::default(),
            unassigned: (0, None),
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

    /// The `[N]` that starts a port line of node `n` (line text `t`), as a port number; errors
    /// name what is missing or out of range.
    pub fn local_port(
        &self,
        c: &mut Cursor<'_>,
        n: NodeId,
        t: &str,
        at: Loc,
    ) -> Result<u8, ParseError> {
        c.eat(b'[');
        let lp = match c.number() {
            Some(v) if c.eat(b']') => v,
            Some(_) => {
                return Err(self.err(at, "record cut short: expected ']' after the port number"))
            }
            None => {
                return Err(self.err(
                    at,
                    format!("expected a port number in [..], got {:?}", excerpt(t)),
                ))
            }
        };
        port_num(lp).ok_or_else(|| {
            self.err(
                at,
                format!(
                    "port {lp} is beyond the port count {} of {:?}",
                    self.b.node(n).nports,
                    self.name(n)
                ),
            )
        })
    }

    /// The quoted remote node id after `[lp]` (`allow_empty`: `""` is an id).
    pub fn remote_id<'a>(
        &self,
        c: &mut Cursor<'a>,
        lp: u8,
        allow_empty: bool,
        at: Loc,
    ) -> Result<&'a str, ParseError> {
        match c.quoted() {
            Ok(Some(r)) if allow_empty || !r.is_empty() => Ok(r),
            Ok(_) => Err(self.err(
                at,
                format!("record cut short: expected the quoted remote node id after [{lp}]"),
            )),
            Err(()) => Err(self.err(
                at,
                "record cut short: the remote node id has no closing quote",
            )),
        }
    }

    /// Marks node `n` as made from the port lines naming it (it has no record).
    pub fn mark_from_lines(&mut self, n: NodeId) {
        if self.from_lines.len() <= n.idx() {
            self.from_lines.resize(n.idx() + 1, false);
        }
        self.from_lines[n.idx()] = true;
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
        // the ports of a channel adapter or router each have their own GUID
        if guid != 0 && self.b.node(n).kind != NodeKind::Switch {
            let base = self.slot_base[n.idx()] as usize;
            let np = self.b.node(n).nports as usize;
            if let Some(q) =
                (1..=np).find(|&q| q != port as usize && self.port_guid[base + q] == guid)
            {
                return Err(self.err(
                    at,
                    format!(
                        "duplicate GUID {guid:#018x}: ports {q} and {port} of {:?} both have it (a channel adapter's ports each have their own)",
                        self.name(n)
                    ),
                ));
            }
        }
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
        let lid = if lid == 0xFFFF {
            if self.unassigned.0 == 0 {
                let w = self.where_(at);
                let name = self.name(n).to_string();
                self.unassigned.1 = Some(format!("{w}, {name} port {port}"));
            }
            self.unassigned.0 += 1;
            0
        } else {
            lid
        };
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
            return Err(self
                .err(
                    at,
                    format!(
                        "LID {which} of {:?} port {port} is already used by {:?} port {op} ({})",
                        self.name(n),
                        self.name(NodeId(o)),
                        self.rel(l, at)
                    ),
                )
                .of_kind(ParseErrorKind::LidClash));
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
    /// builds. `combine(this_end, far_end)` gives the link's width and speed and, when the ends
    /// disagree in a way the format tolerates, a note (warned about with both lines), or an
    /// error message; `far_end` is `None` when only one end lists the link.
    pub fn finish(
        mut self,
        mut combine: impl FnMut(&T, Option<&T>) -> Result<Combined, String>,
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
                if self.undefined_far_is_error {
                    return Err(self.err(
                        pl.at,
                        format!(
                            "{:?}[{}] is cabled to {rname:?}[{}], which the file never defines (expected a Switch/Hca/Ca/Rt record named {rname:?}, here or in an included file)",
                            self.name(pl.node),
                            pl.port,
                            pl.remote_port
                        ),
                    ));
                }
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
                Ok(c) => {
                    if let (Some(note), Some(q)) = (c.note, far) {
                        let msg = format!(
                            "link {:?}[{}] - {rname:?}[{}] (also listed at {}): {note}",
                            self.name(pl.node),
                            pl.port,
                            pl.remote_port,
                            self.rel(q.at, pl.at),
                        );
                        self.warn(pl.at, msg);
                    }
                    (c.width, c.speed)
                }
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
            if far.is_none() && !self.from_lines.get(r.idx()).copied().unwrap_or(false) {
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
        if let (k, Some(first)) = &self.unassigned {
            self.warnings.push(format!(
                "{k} port(s) read with LID 65535, which means none assigned (the first: {first}); they get free LIDs"
            ));
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
