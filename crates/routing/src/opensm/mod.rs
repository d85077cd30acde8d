//! OpenSM and ibutils (ibdmchk) file formats: readers take bytes, writers return strings.
//!
//! | file | read | write | module |
//! |---|---|---|---|
//! | `opensm-lfts.dump` / `-U` input / `ibroute` output | [`read_lfts`] | [`write_lfts`] | `lfts` |
//! | `opensm.fdbs` (ibdmchk `-f`) | [`read_fdbs`] | [`write_fdbs`] | `fdbs` |
//! | `opensm.mcfdbs` (ibdmchk `-m`) | [`read_mcfdbs`] | [`write_mcfdbs`] | `mcfdbs` |
//! | `opensm-subnet.lst` (ibdmchk `-s`) | (fabric crate) | [`write_subnet_lst`] | `subnet_lst` |
//! | `opensm-sl2vl.dump` (ibdmchk `-d`) | [`read_sl2vl`] | [`write_sl2vl`] | `sl2vl` |
//! | path SLs, ibdmchk `.psl` (`-c`) | [`read_psl`] | [`write_psl`] | `psl` |
//!
//! [`write_set`] produces every file `fabroute route -o DIR` emits.
//!
//! Ordering: OpenSM walks its GUID maps (`cl_qmap`) whose keys are GUIDs in network byte
//! order compared as host (little-endian) integers, so nodes, switches and ports come out in
//! ascending order of the *byte-swapped* GUID ([`osm_guid_order`]). The writers reproduce that,
//! which is what makes them byte-identical with OpenSM's own dumps on x86.
//!
//! Checked against OpenSM 3.3.23 on ibsim (fixtures in `tests/data/opensm`): re-dumps of
//! `opensm-lfts.dump`, `opensm-subnet.lst` and `opensm-sl2vl.dump` are byte-identical for every
//! run (9 engines on a 4x4 torus, LMC 1, a dragonfly with failed links); `opensm.fdbs` is
//! byte-identical whenever OpenSM's hop tables hold true min-hop counts (all engines but
//! torus-2QoS, which keeps none, and nue, whose table is not a hop count); OpenSM's file engine
//! loads a `write_lfts` file and re-dumps it unchanged. The PSL writer reproduces the
//! reference harness's `.psl` files byte for byte.
//!
//! Readers never panic; every error is a [`ParseError`] with file, 1-based line and what was
//! expected. Problems OpenSM itself tolerates (unknown switch GUIDs, ...) are warnings.

use fabric::io::ParseError;
use fabric::SwitchIdx;
use fabric::{Fabric, Lid, NodeId, NodeKind, PortId};
use rustc_hash::FxHashMap;

mod fdbs;
mod lfts;
mod mcfdbs;
mod psl;
mod sl2vl;
mod subnet_lst;

pub use fdbs::{read_fdbs, route_hops, write_fdbs, write_fdbs_to, HopTable, HOPS_NONE};
pub use lfts::{read_lfts, write_lfts, write_lfts_to, LftLoad};
pub use mcfdbs::{read_mcfdbs, write_mcfdbs};
pub use psl::{collapse_path_sl, read_psl, write_psl, write_psl_to, PslLoad};
pub use sl2vl::{read_sl2vl, write_sl2vl, Sl2VlLoad};
pub use subnet_lst::{write_subnet_lst, SubnetLstOptions};

use crate::tables::{PathSl, Routing};

/// File names OpenSM uses in its dump directory (and fabroute in `route -o DIR`).
pub const LFTS_FILE: &str = "opensm-lfts.dump";
pub const FDBS_FILE: &str = "opensm.fdbs";
pub const MCFDBS_FILE: &str = "opensm.mcfdbs";
pub const SUBNET_LST_FILE: &str = "opensm-subnet.lst";
pub const SL2VL_FILE: &str = "opensm-sl2vl.dump";
/// Not an OpenSM dump: the name OpenSM's reference harness gives ibdmchk's `-c` PSL file.
pub const PSL_FILE: &str = "opensm-path-sl.psl";

/// Sort key reproducing OpenSM's map order: the GUID as stored (big-endian) read as a
/// little-endian integer.
#[inline]
pub fn osm_guid_order(guid: u64) -> u64 {
    guid.swap_bytes()
}

/// OpenSM's node type string (`ib_get_node_type_str`).
pub(crate) fn type_str(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Switch => "Switch",
        NodeKind::Ca => "Channel Adapter",
        NodeKind::Router => "Router",
    }
}

/// The GUID OpenSM shows for a port: a switch's external ports share port 0's GUID.
pub(crate) fn port_guid(f: &Fabric, p: PortId) -> u64 {
    f.shown_port_guid(p)
}

/// The base LID OpenSM shows for a port (switches: port 0's).
pub(crate) fn port_base_lid(f: &Fabric, p: PortId) -> Lid {
    let port = f.port(p);
    if f.is_switch(port.node) {
        f.switch_lid(port.node)
    } else {
        port.lid
    }
}

/// Switch indices in OpenSM's dump order.
pub(crate) fn switches_in_osm_order(f: &Fabric) -> Vec<usize> {
    let mut v: Vec<usize> = (0..f.switches.len()).collect();
    v.sort_by_key(|&s| (osm_guid_order(f.node(f.switches[s]).guid), s));
    v
}

/// Port GUID → port (switch port 0 for switch GUIDs; every CA/router port with a GUID).
pub(crate) fn port_guid_map(f: &Fabric) -> FxHashMap<u64, PortId> {
    let mut m = FxHashMap::default();
    for (i, node) in f.nodes.iter().enumerate() {
        let n = NodeId(i as u32);
        if node.kind == NodeKind::Switch {
            let p0 = f.port_id(n, 0);
            m.entry(port_guid(f, p0)).or_insert(p0);
        } else {
            for p in f.node_ports(n).skip(1) {
                let g = f.port(p).guid;
                if g != 0 {
                    m.entry(g).or_insert(p);
                }
            }
        }
    }
    m
}

/// Node GUID → node.
pub(crate) fn node_guid_map(f: &Fabric) -> FxHashMap<u64, NodeId> {
    let mut m = FxHashMap::default();
    for (i, node) in f.nodes.iter().enumerate() {
        if node.guid != 0 {
            m.entry(node.guid).or_insert(NodeId(i as u32));
        }
    }
    m
}

/// Lines of a text file, 1-based, without `\r\n`/`\n`. Invalid UTF-8 is replaced.
/// Warnings of one kind, capped: the first `cap` are kept with their line, the rest counted
/// and summed up in one line by [`Capped::finish`].
pub(crate) struct Capped {
    cap: usize,
    seen: usize,
}

impl Capped {
    pub(crate) fn new(cap: usize) -> Self {
        Capped { cap, seen: 0 }
    }

    /// Counts one; keeps `msg()` while under the cap.
    pub(crate) fn push(&mut self, warnings: &mut Vec<String>, msg: impl FnOnce() -> String) {
        self.seen += 1;
        if self.seen <= self.cap {
            warnings.push(msg());
        }
    }

    /// `{file}: N more {what}` when some were not kept.
    pub(crate) fn finish(&self, warnings: &mut Vec<String>, file: &str, what: &str) {
        if self.seen > self.cap {
            warnings.push(format!("{file}: {} more {what}", self.seen - self.cap));
        }
    }
}

/// The text of a table file; a UTF-8 byte order mark (editors on other systems write one) is
/// dropped.
pub(crate) fn text_of(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes))
}

pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// Refuses what cannot be a table file before any line is read: an empty file, or a binary
/// one (a NUL byte; the line it is on is named). `what` says what was expected.
pub(crate) fn require_text(bytes: &[u8], file: &str, what: &str) -> Result<(), ParseError> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(perr(file, 0, format!("the file is empty: expected {what}")));
    }
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(perr(
            file,
            line,
            format!("a binary file (NUL byte), not {what}"),
        ));
    }
    Ok(())
}

/// The switch index of node GUID `g` named by a table file's switch header at `file:ln`, or
/// `None` with a warning (not in the fabric, or not a switch: the caller skips its entries).
pub(crate) fn switch_of_guid(
    f: &Fabric,
    g: u64,
    file: &str,
    ln: usize,
    warnings: &mut Vec<String>,
) -> Option<usize> {
    match f.node_by_guid(g) {
        Some(n) if f.is_switch(n) => f.switch_of(n).map(SwitchIdx::idx),
        Some(n) => {
            warnings.push(format!(
                "{file}:{ln}: GUID 0x{g:016x} is {:?}, not a switch; its entries are skipped",
                f.node(n).name
            ));
            None
        }
        None => {
            warnings.push(format!(
                "{file}:{ln}: switch GUID 0x{g:016x} is not in the fabric; its entries are skipped"
            ));
            None
        }
    }
}

pub(crate) fn perr(file: &str, line: usize, msg: impl Into<String>) -> ParseError {
    ParseError::new(file, line, msg)
}

/// Parses a run of hex digits at the start of `s` (no prefix). Returns the value, the number
/// of digits and the rest; `None` if there are no digits or the value overflows 64 bits.
pub(crate) fn take_hex(s: &str) -> Option<(u64, &str)> {
    let n = s.bytes().take_while(|b| b.is_ascii_hexdigit()).count();
    if n == 0 {
        return None;
    }
    let v = u64::from_str_radix(&s[..n], 16).ok()?;
    Some((v, &s[n..]))
}

/// Parses `0x<hex>` at the start of `s`.
pub(crate) fn take_0x(s: &str) -> Option<(u64, &str)> {
    let r = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    take_hex(r)
}

/// Parses a run of decimal digits at the start of `s`.
pub(crate) fn take_dec(s: &str) -> Option<(u64, &str)> {
    let n = s.bytes().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    let v = s[..n].parse::<u64>().ok()?;
    Some((v, &s[n..]))
}

/// True when `s` is empty or starts with ASCII whitespace.
pub(crate) fn at_blank_or_end(s: &str) -> bool {
    s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace())
}

/// Where a streaming writer puts its bytes, with a progress report after each batch of units
/// (switches or sources): `(done, total)`.
pub struct Sink<'a> {
    pub out: &'a mut dyn std::io::Write,
    pub progress: Option<&'a mut dyn FnMut(usize, usize)>,
}

impl std::fmt::Debug for Sink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

impl<'a> Sink<'a> {
    /// A sink without progress reports.
    pub fn new(out: &'a mut dyn std::io::Write) -> Self {
        Sink {
            out,
            progress: None,
        }
    }
}

/// Writes the text of units `0..n` (in order) to `sink`: batches of units are formatted in
/// parallel, each into its own buffer, and written in order, so memory stays at one batch
/// whatever the file's size.
pub(crate) fn stream_units(
    n: usize,
    sink: &mut Sink<'_>,
    unit: impl Fn(usize, &mut Vec<u8>) + Sync,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    const BATCH: usize = 64;
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); BATCH];
    let mut at = 0;
    while at < n {
        let end = (at + BATCH).min(n);
        bufs[..end - at]
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, b)| {
                b.clear();
                unit(at + k, b);
            });
        for b in &bufs[..end - at] {
            sink.out.write_all(b)?;
        }
        at = end;
        if let Some(p) = sink.progress.as_mut() {
            p(at, n);
        }
    }
    Ok(())
}

/// Runs a streaming writer into a string (for small files and tests).
pub(crate) fn to_string(write: impl FnOnce(&mut Sink<'_>) -> std::io::Result<()>) -> String {
    let mut v: Vec<u8> = Vec::new();
    let mut sink = Sink::new(&mut v);
    // Writing into memory cannot fail.
    let _ = write(&mut sink);
    String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Three decimal digits, zero-padded (`{:03}` for 0..=999).
#[inline]
pub(crate) fn push_dec3(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&[
        b'0' + (v / 100 % 10) as u8,
        b'0' + (v / 10 % 10) as u8,
        b'0' + (v % 10) as u8,
    ]);
}

/// When a writer emits an optional file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Emit {
    /// Only when it carries information: the SL2VL dump and the PSL are written when the
    /// routing uses any SL other than 0 or any non-identity SL2VL table.
    #[default]
    Auto,
    /// Only when some path uses an SL other than 0 (a set whose SL2VL tables carry VLs for
    /// SLs no path uses needs no path-SL file: every path is on SL 0).
    SlsUsed,
    Always,
    Never,
}

/// Options of [`write_set`].
#[derive(Clone, Debug, Default)]
pub struct SetOptions {
    pub subnet_lst: SubnetLstOptions,
    pub sl2vl: Emit,
    pub psl: Emit,
    /// The multicast tables for `opensm.mcfdbs` (none: an empty file, as OpenSM writes
    /// when no switch has a multicast entry).
    pub mcast: Option<crate::mcast::Mfts>,
}

/// The OpenSM-compatible files for one routing. Contents only: the caller writes them.
#[derive(Clone, Debug)]
pub struct OpensmSet {
    pub lfts: String,
    pub fdbs: String,
    pub mcfdbs: String,
    pub subnet_lst: String,
    pub sl2vl: Option<String>,
    pub psl: Option<String>,
}

impl OpensmSet {
    /// `(file name, contents)` pairs, in a fixed order, optional files only when present.
    pub fn into_files(self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            (SUBNET_LST_FILE, self.subnet_lst),
            (LFTS_FILE, self.lfts),
            (FDBS_FILE, self.fdbs),
            (MCFDBS_FILE, self.mcfdbs),
        ];
        if let Some(s) = self.sl2vl {
            v.push((SL2VL_FILE, s));
        }
        if let Some(s) = self.psl {
            v.push((PSL_FILE, s));
        }
        v
    }
}

/// True when the routing uses SLs or SL2VL tables, i.e. ibdmchk needs `-c`/`-d` to see it.
pub fn uses_sls(f: &Fabric, r: &Routing) -> bool {
    path_sls_used(r) || (0..f.nodes.len()).any(|n| !r.sl2vl.is_identity(NodeId(n as u32)))
}

/// True when some path uses an SL other than 0.
pub fn path_sls_used(r: &Routing) -> bool {
    match &r.path_sl {
        PathSl::Uniform(s) => *s != 0,
        PathSl::PerDest(v) => v.iter().any(|&s| s != 0),
        PathSl::PerPair { sl, .. } => sl.iter().any(|&s| s != 0),
    }
}

/// Whether an optional file of the set is written for `r`, by its [`Emit`].
fn emit_rule(f: &Fabric, r: &Routing) -> impl Fn(Emit) -> bool {
    let (auto, sls_used) = (uses_sls(f, r), path_sls_used(r));
    move |e| match e {
        Emit::Auto => auto,
        Emit::SlsUsed => sls_used,
        Emit::Always => true,
        Emit::Never => false,
    }
}

/// Builds every file of the set.
pub fn build_set(f: &Fabric, r: &Routing, opts: &SetOptions) -> OpensmSet {
    let want = emit_rule(f, r);
    OpensmSet {
        lfts: write_lfts(f, r),
        fdbs: to_string(|sink| fdbs::write_fdbs_to(f, r, opts.subnet_lst.dead.as_ref(), sink)),
        mcfdbs: write_mcfdbs(f, opts.mcast.as_ref(), opts.subnet_lst.dead.as_ref()),
        subnet_lst: write_subnet_lst(f, &opts.subnet_lst),
        sl2vl: want(opts.sl2vl)
            .then(|| sl2vl::write_sl2vl_live(f, &r.sl2vl, opts.subnet_lst.dead.as_ref())),
        psl: want(opts.psl).then(|| {
            to_string(|sink| psl::write_psl_to(f, &r.path_sl, opts.subnet_lst.dead.as_ref(), sink))
        }),
    }
}

/// The files `fabroute route -o DIR` emits: `(file name, contents)`.
pub fn write_set(f: &Fabric, r: &Routing, opts: &SetOptions) -> Vec<(&'static str, String)> {
    set_files(f, r, opts)
        .into_iter()
        .map(|file| (file.name, to_string(|sink| file.write(sink))))
        .collect()
}

type WriteFn<'a> = Box<dyn Fn(&mut Sink<'_>) -> std::io::Result<()> + 'a>;

/// One file of a set: its name and its streaming writer.
pub struct SetFile<'a> {
    pub name: &'static str,
    write: WriteFn<'a>,
}

impl std::fmt::Debug for SetFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetFile").field("name", &self.name).finish()
    }
}

impl SetFile<'_> {
    /// Streams the file into `sink`.
    pub fn write(&self, sink: &mut Sink<'_>) -> std::io::Result<()> {
        (self.write)(sink)
    }
}

/// The files of [`write_set`] as streaming writers, in the same order: the caller decides
/// where each goes, and the big ones (LFTs, fdbs, PSL) never sit in memory whole.
pub fn set_files<'a>(f: &'a Fabric, r: &'a Routing, opts: &'a SetOptions) -> Vec<SetFile<'a>> {
    let want = emit_rule(f, r);
    let small = |s: String| move |sink: &mut Sink<'_>| sink.out.write_all(s.as_bytes());
    let mut v: Vec<SetFile<'a>> = vec![
        SetFile {
            name: SUBNET_LST_FILE,
            write: Box::new(small(write_subnet_lst(f, &opts.subnet_lst))),
        },
        SetFile {
            name: LFTS_FILE,
            write: Box::new(move |sink| {
                lfts::write_lfts_to(f, r, opts.subnet_lst.dead.as_ref(), sink)
            }),
        },
        SetFile {
            name: FDBS_FILE,
            write: Box::new(move |sink| {
                fdbs::write_fdbs_to(f, r, opts.subnet_lst.dead.as_ref(), sink)
            }),
        },
        SetFile {
            name: MCFDBS_FILE,
            write: Box::new(small(write_mcfdbs(
                f,
                opts.mcast.as_ref(),
                opts.subnet_lst.dead.as_ref(),
            ))),
        },
    ];
    if want(opts.sl2vl) {
        v.push(SetFile {
            name: SL2VL_FILE,
            write: Box::new(move |sink| {
                let text = sl2vl::write_sl2vl_live(f, &r.sl2vl, opts.subnet_lst.dead.as_ref());
                sink.out.write_all(text.as_bytes())
            }),
        });
    }
    if want(opts.psl) {
        v.push(SetFile {
            name: PSL_FILE,
            write: Box::new(move |sink| {
                psl::write_psl_to(f, &r.path_sl, opts.subnet_lst.dead.as_ref(), sink)
            }),
        });
    }
    v
}
