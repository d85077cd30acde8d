//! Helpers shared by the CLI test binaries.
#![allow(dead_code)]

pub mod ibsim;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the fabroute binary with `args`.
pub fn fr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabroute"))
        .args(args)
        .output()
        .unwrap()
}

/// A shipped example fabric (`examples/NAME`), as a path string.
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

/// A fresh, empty directory for one test (named after the calling test file, the process
/// and `name`: the suite is one process, so two files may use the same `name`).
#[track_caller]
pub fn tmp(name: &str) -> TmpDir {
    let file = Path::new(std::panic::Location::caller().file());
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("test");
    TmpDir::new(&format!("{stem}-{}-{name}", std::process::id()))
}

/// A test's scratch directory, `fabroute-NAME` in the temporary directory: created empty,
/// and removed when the test is done with it, unless the test failed (a panic unwinding
/// past it), when it stays for a look at what was written. Derefs to its path.
pub struct TmpDir(PathBuf);

impl TmpDir {
    pub fn new(name: &str) -> TmpDir {
        let d = std::env::temp_dir().join(format!("fabroute-{name}"));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for TmpDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TmpDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

/// Well-formed XML (balanced tags, quoted attributes, known entities), and rendered by
/// rsvg-convert when it is installed (`scripts/install-test-deps.sh`; CI has it).
pub fn check_svg(p: &Path) {
    let text = std::fs::read_to_string(p).unwrap();
    assert!(text.starts_with("<?xml"), "{}", p.display());
    let mut depth = 0i32;
    let mut rest = text.split_once("?>").unwrap().1;
    while let Some(i) = rest.find('<') {
        let end = rest[i..].find('>').unwrap() + i;
        let tag = &rest[i + 1..end];
        if tag.starts_with('/') {
            depth -= 1;
        } else if !tag.ends_with('/') {
            depth += 1;
        }
        assert!(depth >= 0, "{}: unbalanced at {tag}", p.display());
        assert_eq!(tag.matches('"').count() % 2, 0, "{}: {tag}", p.display());
        rest = &rest[end + 1..];
    }
    assert_eq!(depth, 0, "{}", p.display());
    for (i, _) in text.match_indices('&') {
        let ent = &text[i..i + text[i..].find(';').unwrap() + 1];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&ent),
            "{ent}"
        );
    }
    if Command::new("rsvg-convert")
        .arg("--version")
        .output()
        .is_ok()
    {
        let png = p.with_extension("png");
        let o = Command::new("rsvg-convert")
            .arg(p)
            .arg("-o")
            .arg(&png)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            p.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 1000);
    } else if std::env::var_os("FABROUTE_NO_EXTERNAL_TOOLS").is_some() {
        eprintln!(
            "SKIPPED (FABROUTE_NO_EXTERNAL_TOOLS) rendering {} with rsvg-convert",
            p.display()
        );
    } else {
        panic!("rsvg-convert is not installed: run scripts/install-test-deps.sh (or set FABROUTE_NO_EXTERNAL_TOOLS=1 to skip rendering)");
    }
}

/// `fabroute check` on a table set written into `dir` (its subnet file, LFTs, SL2VL and path
/// SLs), with `extra` arguments.
pub fn check_set_with(dir: &Path, extra: &[&str]) -> Output {
    let p = |n: &str| dir.join(n).display().to_string();
    let (lst, lfts, sl2vl, psl) = (
        p("opensm-subnet.lst"),
        p("opensm-lfts.dump"),
        p("opensm-sl2vl.dump"),
        p("opensm-path-sl.psl"),
    );
    let mut args = vec!["check", &lst, "--lfts", &lfts, "--sl2vl", &sl2vl];
    // (a set whose pairs all use SL 0 has no path-SL file)
    if dir.join("opensm-path-sl.psl").exists() {
        args.extend(["--psl", &psl]);
    }
    args.extend_from_slice(extra);
    fr(&args)
}

/// `fabroute check --json` on a table set `route` or `fault` wrote into `out` (its subnet
/// file, LFTs, SL2VL and path SLs): the summary and the exit code.
pub fn check_set(out: &std::path::Path) -> (serde_json::Value, Option<i32>) {
    let o = check_set_with(out, &["--json"]);
    (serde_json::from_slice(&o.stdout).unwrap(), o.status.code())
}

/// The `summary.json` a command wrote into `dir`.
pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}
