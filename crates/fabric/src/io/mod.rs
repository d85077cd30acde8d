//! Readers and writers for fabric formats. Readers take the file's bytes (the caller does the
//! I/O) and report every problem as a [`ParseError`] with file, line and what was expected.
//! They never panic, whatever the bytes.

use crate::builder::BuildOptions;
use crate::model::Fabric;
use std::fmt;

pub mod ibnetdiscover;
pub mod ibsim;
pub mod json;
pub mod lines;
pub mod subnet_lst;
pub mod writers;

/// A problem in an input file, located by file name and 1-based line (0 = whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub fn new(file: &str, line: usize, message: impl Into<String>) -> Self {
        ParseError {
            file: file.to_string(),
            line,
            message: message.into(),
        }
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
    /// fabroute's JSON.
    Json,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Ibnetdiscover => "ibnetdiscover",
            Format::IbsimNet => "ibsim",
            Format::SubnetLst => "subnet.lst",
            Format::Json => "json",
        }
    }
}

/// Resolves `include "file"` directives of ibsim net files: given the name as written, returns
/// the bytes and a display name, or an error message.
pub type IncludeResolver<'a> = dyn FnMut(&str) -> Result<(String, Vec<u8>), String> + 'a;

/// Guesses the format from the content (never from the file name).
pub fn detect(bytes: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]);
    let mut saw_ibnd_guid = false;
    let mut saw_node = false;
    for raw in text.lines() {
        let line = raw.trim_start();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('{') && line.contains("Ports:") && line.contains("PortGUID:") {
            return Some(Format::SubnetLst);
        }
        if line.starts_with('{') || line.starts_with('[') && !saw_node {
            if line.starts_with('{') {
                return Some(Format::Json);
            }
        }
        if line.starts_with("# Topology file") {
            return Some(Format::Ibnetdiscover);
        }
        if (line.starts_with("switchguid=") || line.starts_with("caguid=") || line.starts_with("rtguid="))
            && line.contains('(')
        {
            saw_ibnd_guid = true;
        }
        if line.starts_with("Switch") || line.starts_with("Ca") || line.starts_with("Hca") || line.starts_with("Rt") {
            if line.contains("\"S-") || line.contains("\"H-") || line.contains("\"R-") || saw_ibnd_guid {
                return Some(Format::Ibnetdiscover);
            }
            saw_node = true;
        }
    }
    if saw_node {
        Some(Format::IbsimNet)
    } else {
        None
    }
}

/// Reads a fabric in any supported format, detected from the content.
pub fn read(
    bytes: &[u8],
    file: &str,
    include: &mut IncludeResolver<'_>,
    opts: BuildOptions,
) -> Result<Loaded, ParseError> {
    match detect(bytes) {
        Some(Format::Ibnetdiscover) => ibnetdiscover::read(bytes, file, opts),
        Some(Format::IbsimNet) => ibsim::read(bytes, file, include, opts),
        Some(Format::SubnetLst) => subnet_lst::read(bytes, file, opts),
        Some(Format::Json) => json::read(bytes, file),
        None => Err(ParseError::new(
            file,
            0,
            "not a fabric file: expected ibnetdiscover output, an ibsim net file, an opensm-subnet.lst or fabroute JSON",
        )),
    }
}
