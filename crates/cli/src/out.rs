//! What every command prints and how it ends, in one place.
//!
//! - Human text goes through `say!`: to stdout, or to stderr when `--json` asked for the one
//!   JSON document on stdout ([`document`]). Warnings and progress always go to stderr.
//! - A reader that goes away (`fabroute route … | head -1`) ends stdout quietly: later lines
//!   are dropped, the command finishes its work and exits with its usual status. No panic.
//! - Exit statuses ([`Status`]), the same for every command.

use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static JSON: AtomicBool = AtomicBool::new(false);
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
/// Set once the command's JSON document is on stdout (so a later error adds no second one).
static DOCUMENT_WRITTEN: AtomicBool = AtomicBool::new(false);

/// How a command ended. Documented in `fabroute --help` and the README.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done, and the tables (if any) are complete and free of credit loops.
    Clean = 0,
    /// Done, but the tables have credit loops or pairs they do not deliver (route, fault,
    /// check), or some repairs were not supported; `trace`: the packet is not delivered;
    /// `diff`: the two table sets differ.
    Unclean = 1,
    /// Usage error (clap's own status).
    Usage = 2,
    /// Bad input (unreadable or malformed file, options that contradict the fabric) or an
    /// I/O error: nothing trustworthy was produced.
    Failed = 3,
}

impl Status {
    /// Clean when `ok`, else unclean.
    pub fn of(ok: bool) -> Self {
        if ok {
            Status::Clean
        } else {
            Status::Unclean
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s as u8)
    }
}

/// An error in the arguments that clap cannot see (a value out of range, options that
/// contradict each other): the command ends with [`Status::Usage`], like clap's own errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `bail!` for usage errors: returns `Err(UsageError(format!(...)))`.
#[macro_export]
macro_rules! usage_bail {
    ($($t:tt)*) => { return Err($crate::out::UsageError(format!($($t)*)).into()) };
}

/// The exit status for a command's error: [`Status::Usage`] for a [`UsageError`] anywhere in
/// its chain, else [`Status::Failed`].
pub fn status_of(e: &anyhow::Error) -> Status {
    if e.chain().any(|c| c.is::<UsageError>()) {
        Status::Usage
    } else {
        Status::Failed
    }
}

static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether `--quiet` is on: no spinners, bars or progress lines.
pub fn quiet() -> bool {
    QUIET.load(Relaxed)
}

pub fn set_quiet(on: bool) {
    QUIET.store(on, Relaxed);
}

/// Whether `--json` is on.
pub fn json() -> bool {
    JSON.load(Relaxed)
}

pub fn set_json(on: bool) {
    JSON.store(on, Relaxed);
}

/// Writes one line to stdout, dropping it (and every later one) once stdout is gone.
fn stdout_line(s: &str) {
    if STDOUT_GONE.load(Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{s}").and_then(|_| out.flush()).is_err() {
        STDOUT_GONE.store(true, Relaxed);
    }
}

/// Writes `text` as it is to stdout (a file written to `-`), dropping it once stdout is gone.
pub fn stdout_raw(text: &str) {
    if STDOUT_GONE.load(Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .is_err()
    {
        STDOUT_GONE.store(true, Relaxed);
    }
}

/// Writes one line to stderr (errors there are ignored: nothing else can be told).
pub fn stderr_line(s: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{s}");
}

/// A line of human text: stdout, or stderr under `--json`.
pub fn say_str(s: &str) {
    if json() {
        stderr_line(s);
    } else {
        stdout_line(s);
    }
}

/// The command's JSON document on stdout (pretty-printed).
pub fn document(v: &impl Serialize) -> anyhow::Result<()> {
    stdout_line(&serde_json::to_string_pretty(v)?);
    DOCUMENT_WRITTEN.store(true, Relaxed);
    Ok(())
}

/// How a failed command ends: the error on stderr, and under `--json` also as the JSON
/// document on stdout (unless the command wrote its own before it failed), so a script that
/// reads stdout always gets one document. Returns the exit status.
pub fn fail(e: &anyhow::Error) -> Status {
    let status = status_of(e);
    stderr_line(&format!("fabroute: error: {e:#}"));
    if json() && !DOCUMENT_WRITTEN.load(Relaxed) {
        if let Ok(s) = serde_json::to_string_pretty(&error_document(e, status)) {
            stdout_line(&s);
        }
    }
    status
}

/// `{"error": {...}}`: the message as printed, each cause of the chain, the exit status and
/// its kind, and the file and line when an input file was at fault.
fn error_document(e: &anyhow::Error, status: Status) -> serde_json::Value {
    let mut err = serde_json::json!({
        "message": format!("{e:#}"),
        "causes": e.chain().map(|c| c.to_string()).collect::<Vec<_>>(),
        "status": status as u8,
        "kind": match status {
            Status::Usage => "usage",
            _ => "failed",
        },
    });
    if let Some(p) = e
        .chain()
        .find_map(|c| c.downcast_ref::<fabric::io::ParseError>())
    {
        err["file"] = p.file.clone().into();
        if p.line > 0 {
            err["line"] = p.line.into();
        }
    }
    serde_json::json!({ "error": err })
}

/// `format!`-style human text, see [`say_str`].
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { $crate::out::say_str(&format!($($t)*)) };
}

/// A warning on stderr, `fabroute: warning: …`.
#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => { $crate::out::stderr_line(&format!("fabroute: warning: {}", format!($($t)*))) };
}
