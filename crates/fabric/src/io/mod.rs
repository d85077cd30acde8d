//! Readers and writers for fabric formats. Readers take the file's bytes (the caller does the
//! I/O) and report every problem as a [`ParseError`] with file, line and what was expected.
//! They never panic, whatever the bytes.

use crate::builder::BuildOptions;
use crate::model::Fabric;
use std::fmt;

pub(crate) mod diag;
pub mod guids;
pub mod iblinkinfo;
pub mod ibnetdiscover;
pub mod ibsim;
pub mod json;
pub mod ports_report;
pub(crate) mod records;
pub mod subnet_lst;
pub(crate) mod syntax;
pub mod text;
pub mod writers;

/// A problem in an input file, located by file name and 1-based line (0 = whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub message: String,
    pub kind: ParseErrorKind,
}

/// What kind of problem a [`ParseError`] is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// The input is not what the format allows.
    #[default]
    Malformed,
    /// Well-formed, but two ports claim the same LID: a reader told to assign LIDs afresh
    /// (`BuildOptions::reassign_lids`) does not read them, so it does not meet this.
    LidClash,
}

impl ParseError {
    pub fn new(file: &str, line: usize, message: impl Into<String>) -> Self {
        ParseError {
            file: file.to_string(),
            line,
            message: message.into(),
            kind: ParseErrorKind::Malformed,
        }
    }

    /// The same error, of kind `kind`.
    pub fn of_kind(self, kind: ParseErrorKind) -> Self {
        ParseError { kind, ..self }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}
impl std::error::Error for ParseError {}

/// A loaded fabric plus the warnings the reader produced (e.g. a link whose far end has no
/// record in a truncated dump).
#[derive(Clone, Debug)]
pub struct Loaded {
    pub fabric: Fabric,
    pub warnings: Vec<String>,
}

/// The fabric file formats fabroute understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `ibnetdiscover` output.
    Ibnetdiscover,
    /// ibsim net file.
    IbsimNet,
    /// OpenSM's `opensm-subnet.lst` (also ibdiagnet's `.lst`).
    SubnetLst,
    /// ibnetdiscover's ports report (`ibnetdiscover -p`).
    PortsReport,
    /// iblinkinfo's default output.
    Iblinkinfo,
    /// fabroute's JSON.
    Json,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Ibnetdiscover => "ibnetdiscover",
            Format::IbsimNet => "ibsim",
            Format::SubnetLst => "subnet.lst",
            Format::PortsReport => "ibnetdiscover ports report",
            Format::Iblinkinfo => "iblinkinfo",
            Format::Json => "json",
        }
    }
}

/// Resolves `include "file"` directives of ibsim net files: given the name as written, returns
/// the bytes and a display name, or an error message.
pub type IncludeResolver<'a> = dyn FnMut(&str) -> Result<(String, Vec<u8>), String> + 'a;

/// Guesses the format from the content (never from the file name), looking at the first
/// 64 KiB:
/// - a line `{ SW|CA|Rt … NodeGUID:… PortGUID:… }` → opensm-subnet.lst;
/// - a line `SW|CA|RT <lid> <port> 0x<guid> …` → ibnetdiscover's ports report (`-p`);
/// - a line `Switch: 0x<guid> <desc>:` or a port line `… ==( … )==> …` → iblinkinfo;
/// - a file whose first non-blank byte opens a JSON object (`{`, or `[` followed by `{`) →
///   JSON;
/// - `# Topology file`, a `switchguid=0x…(…)` line, a node id of the form `"S-<hex>"`,
///   `"H-<hex>"`, `"R-<hex>"`, or a CA port line `[1](<hex>)` → ibnetdiscover;
/// - otherwise `Switch`/`Hca`/`Ca`/`Rt` headers (or `include`) → ibsim net file.
///
/// Stray lines (shell prompts, tool warnings) do not decide anything.
pub fn detect(bytes: &[u8]) -> Option<Format> {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let text = text::decode(head);
    let first = text.trim_start();
    if first.starts_with('{') && !looks_like_lst(first.lines().next().unwrap_or("")) {
        return Some(Format::Json);
    }
    if let Some(after) = first.strip_prefix('[') {
        if after.trim_start().starts_with('{') || after.trim_start().starts_with(']') {
            return Some(Format::Json);
        }
    }
    let mut headers = 0usize;
    let mut ibsim_only = false;
    for line in text::Lines::new(&text) {
        let t = text::trim(line.text);
        if t.is_empty() {
            continue;
        }
        if t.starts_with('{') {
            if looks_like_lst(t) {
                return Some(Format::SubnetLst);
            }
            continue;
        }
        if t.starts_with('#') {
            if t.contains("Topology file:") {
                return Some(Format::Ibnetdiscover);
            }
            if t.starts_with("# ibsim net file") {
                return Some(Format::IbsimNet);
            }
            continue;
        }
        if ports_report::looks_like_port_line(t) {
            return Some(Format::PortsReport);
        }
        if iblinkinfo::looks_like_iblinkinfo(t) {
            return Some(Format::Iblinkinfo);
        }
        if let Some(rest) = t.strip_prefix("switchguid=") {
            if rest.contains('(') {
                return Some(Format::Ibnetdiscover);
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix('[') {
            // ibnetdiscover CA port line: [1](2c90300a1b2c5)
            let mut c = text::Cursor::new(rest);
            if c.number().is_some()
                && c.eat(b']')
                && c.eat(b'(')
                && c.hex().is_some()
                && c.eat(b')')
            {
                return Some(Format::Ibnetdiscover);
            }
            continue;
        }
        let word = t.split([' ', '\t', '=', '"']).next().unwrap_or("");
        let word = syntax::glued_keyword(word).unwrap_or(word);
        match word {
            // ibnetdiscover never writes `Hca`; ibsim files may use ibnetdiscover-style ids.
            "Hca" => return Some(Format::IbsimNet),
            "Switch" | "Ca" | "Rt" => {
                if let Some(q) = t.find('"') {
                    let id = t.get(q + 1..).unwrap_or("");
                    let id = id.split('"').next().unwrap_or("");
                    if is_ibnd_id(id) {
                        return Some(Format::Ibnetdiscover);
                    }
                }
                headers += 1;
                if headers >= 8 {
                    break;
                }
            }
            "include" | "hcaguids" => ibsim_only = true,
            _ => {}
        }
    }
    if headers > 0 || ibsim_only {
        Some(Format::IbsimNet)
    } else {
        None
    }
}

fn looks_like_lst(line: &str) -> bool {
    let t = line.trim_start().trim_start_matches('{').trim_start();
    (t.starts_with("SW") || t.starts_with("CA") || t.starts_with("Rt") || t.starts_with("RT"))
        && line.contains("NodeGUID:")
        && line.contains("PN:")
}

/// ibnetdiscover node ids: `S-`, `H-` or `R-` and 16 hex digits.
fn is_ibnd_id(id: &str) -> bool {
    ibnd_id_guid(id).is_some()
}

/// The GUID in an ibnetdiscover node id (`S-`, `H-` or `R-` and 16 hex digits).
pub(crate) fn ibnd_id_guid(id: &str) -> Option<u64> {
    let (p, h) = id.split_once('-')?;
    if !matches!(p, "S" | "H" | "R") || h.len() != 16 {
        return None;
    }
    text::parse_hex(h)
}

/// Reads a fabric in any supported format, detected from the content. An error on the last
/// line of a file that ends without a newline says the file may have been cut there.
pub fn read(
    bytes: &[u8],
    file: &str,
    include: &mut IncludeResolver<'_>,
    opts: BuildOptions,
) -> Result<Loaded, ParseError> {
    read_detected(bytes, file, include, opts).map_err(|mut e| {
        let last = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
        if e.file == file && e.line == last && bytes.last().is_some_and(|&b| b != b'\n') {
            e.message.push_str(
                " (the file ends inside this line, without a newline: a capture cut short?)",
            );
        }
        e
    })
}

fn read_detected(
    bytes: &[u8],
    file: &str,
    include: &mut IncludeResolver<'_>,
    opts: BuildOptions,
) -> Result<Loaded, ParseError> {
    match detect(bytes) {
        Some(Format::Ibnetdiscover) => ibnetdiscover::read(bytes, file, opts),
        Some(Format::IbsimNet) => ibsim::read(bytes, file, include, opts),
        Some(Format::SubnetLst) => subnet_lst::read(bytes, file, opts),
        Some(Format::PortsReport) => ports_report::read(bytes, file, opts),
        Some(Format::Iblinkinfo) => iblinkinfo::read(bytes, file, opts),
        Some(Format::Json) => json::read(bytes, file),
        None if bytes.iter().all(|b| b.is_ascii_whitespace()) => Err(ParseError::new(
            file,
            0,
            "the file is empty: expected a fabric (an opensm-subnet.lst lists links, so that of a fabric without links is empty)",
        )),
        None => Err(ParseError::new(
            file,
            0,
            "not a fabric file: expected ibnetdiscover output (or its ports report, -p), iblinkinfo output, an ibsim net file, an opensm-subnet.lst or fabroute JSON",
        )),
    }
}
