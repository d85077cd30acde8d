//! File-system helpers shared by subcommands: loading fabrics and writing outputs atomically.

use anyhow::{Context, Result};
use fabric::io::{self, Loaded};
use fabric::BuildOptions;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Reads a fabric file in any supported format; `include` directives resolve relative to the
/// file's directory. Warnings are printed to stderr.
pub fn load_fabric(path: &Path, opts: BuildOptions) -> Result<Loaded> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut resolver = |name: &str| -> Result<(String, Vec<u8>), String> {
        let p: PathBuf = dir.join(name);
        fs::read(&p)
            .map(|b| (p.display().to_string(), b))
            .map_err(|e| format!("cannot read included file {}: {e}", p.display()))
    };
    let loaded = io::read(&bytes, &path.display().to_string(), &mut resolver, opts)?;
    for w in &loaded.warnings {
        crate::warn!("{w}");
    }
    Ok(loaded)
}

/// Reads a GUID file (root, compute-node, I/O or routing-order list): one `0x` GUID per line,
/// `#` comments and blank lines skipped, anything after the GUID ignored.
pub fn read_guid_file(path: &std::path::Path) -> Result<Vec<u64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let tok = t.split_whitespace().next().unwrap_or("");
        let g = tok
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .with_context(|| {
                format!(
                    "{}:{}: expected a GUID like 0x0002c90300a1b2c4, found {tok:?}",
                    path.display(),
                    i + 1
                )
            })?;
        v.push(g);
    }
    Ok(v)
}

/// Writes `contents` to `path` atomically: a temporary file in the same directory, flushed,
/// then renamed over the target. Nothing half-written is ever visible under `path`.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?
        .to_string_lossy()
        .into_owned();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let res = (|| -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {what} ({{eta}} left)"
    )) {
        bar.set_style(style);
    }
    bar
}

/// A spinner on stderr for work without a known length.
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    let sp = indicatif::ProgressBar::new_spinner();
    sp.set_message(msg.to_string());
    sp.enable_steady_tick(std::time::Duration::from_millis(120));
    sp
}
