//! File-system helpers shared by subcommands: loading fabrics and writing outputs atomically.

use anyhow::{Context, Result};
use fabric::io::{self, Loaded};
use fabric::BuildOptions;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The largest input file read (`--max-input`); larger ones are refused before they are read.
static MAX_INPUT: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT);
/// Whether standard input (`-`) has been read already: it can be read once.
static STDIN_TAKEN: AtomicBool = AtomicBool::new(false);
/// Default `--max-input`: 4 GiB (an LFT dump of a 13,824-HCA fat tree is about 1 GB).
pub const DEFAULT_MAX_INPUT: u64 = 4 << 30;

pub fn set_max_input(bytes: u64) {
    MAX_INPUT.store(bytes, Relaxed);
}

/// Parses a size such as `4G`, `512M`, `100k` or `123456` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("{s:?}: unknown size unit {c:?} (K, M, G, T)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{s:?}: expected a size such as 4G, 512M or 1000000"))
}

/// A size in the largest binary unit that divides it (`4G`, `512M`, `1000`).
pub fn human_size(n: u64) -> String {
    for (shift, u) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{u}", n >> shift);
        }
    }
    n.to_string()
}

/// How an input path is named in messages: `<stdin>` for `-`.
pub fn input_name(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads an input file, or standard input for `-` (once per run). Inputs above `--max-input`
/// are refused with a message saying how to raise the limit, before they fill memory.
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let max = MAX_INPUT.load(Relaxed);
    let too_big = |size: Option<u64>| {
        let (what, want) = match size {
            Some(n) => (format!("is {n} bytes, above"), n),
            None => ("holds more than".to_string(), max.saturating_mul(4)),
        };
        anyhow::anyhow!(
            "{} {what} the input limit of {} (raise it with --max-input, e.g. --max-input {})",
            input_name(path),
            human_size(max),
            human_size(want.next_power_of_two())
        )
    };
    if is_stdin(path) {
        if STDIN_TAKEN.swap(true, Relaxed) {
            crate::usage_bail!("only one input can be read from standard input (`-`)");
        }
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(max + 1)
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        if bytes.len() as u64 > max {
            return Err(too_big(None));
        }
        return Ok(bytes);
    }
    let meta = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.is_dir() {
        anyhow::bail!("cannot read {}: it is a directory", path.display());
    }
    if meta.len() > max {
        return Err(too_big(Some(meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > max {
        return Err(too_big(None));
    }
    Ok(bytes)
}

/// Reads a fabric file (or `-`) in any supported format; `include` directives resolve relative
/// to the file's directory (the current one for standard input). Warnings go to stderr.
pub fn load_fabric(path: &Path, opts: BuildOptions) -> Result<Loaded> {
    let bytes = read_input(path)?;
    load_fabric_bytes(path, &bytes, opts)
}

/// [`load_fabric`] for a command that assigns LIDs itself when given an LMC (`--lmc`): then
/// the file's LIDs are not read at all, so a dump whose LIDs clash (two subnets in one file,
/// a capture taken while the SM was reassigning) still loads. Without an LMC a clash
/// ([`fabric::io::ParseErrorKind::LidClash`]) stays an error, which then names the option.
pub fn load_fabric_for_lmc(path: &Path, lmc: Option<u8>) -> Result<Loaded> {
    let opts = BuildOptions {
        reassign_lids: lmc.is_some(),
        ..BuildOptions::default()
    };
    load_fabric(path, opts).map_err(|e| {
        let clash = e.chain().any(|c| {
            c.downcast_ref::<fabric::io::ParseError>()
                .is_some_and(|p| p.kind == fabric::io::ParseErrorKind::LidClash)
        });
        if clash {
            anyhow::anyhow!("{e:#} (the file's LIDs clash: --lmc N assigns every LID afresh)")
        } else {
            e
        }
    })
}

/// [`load_fabric`] on bytes already read from `path`.
pub fn load_fabric_bytes(path: &Path, bytes: &[u8], opts: BuildOptions) -> Result<Loaded> {
    let dir = if is_stdin(path) {
        PathBuf::new()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let mut resolver = |name: &str| -> Result<(String, Vec<u8>), String> {
        let p: PathBuf = dir.join(name);
        read_input(&p)
            .map(|b| (p.display().to_string(), b))
            .map_err(|e| format!("cannot read included file {}: {e:#}", p.display()))
    };
    let loaded = io::read(bytes, &input_name(path), &mut resolver, opts)?;
    for w in &loaded.warnings {
        crate::warn!("{w}");
    }
    Ok(loaded)
}

/// What a GUID file names: it decides which nodes count as a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuidList {
    /// Root switches (`--roots`): switch node or port GUIDs.
    Roots,
    /// Compute or I/O nodes (`--cn-guids`, `--io-guids`): channel adapter node or port GUIDs.
    EndNodes,
    /// Any node (`--guid-routing-order`).
    AnyNode,
}

/// Reads a GUID file (root, compute-node, I/O or routing-order list): one `0x` GUID per line,
/// `#` comments and blank lines skipped, anything after the GUID ignored; each GUID matched
/// against `f`'s node and port GUIDs. A file with no GUID, or none that matches what `list`
/// names, is an error (another fabric's file, or the wrong file); GUIDs that match nothing or
/// the wrong kind of node are warned about with their line.
pub fn read_guid_file(
    path: &std::path::Path,
    f: &fabric::Fabric,
    list: GuidList,
) -> Result<Vec<u64>> {
    let bytes = read_input(path)?;
    let shown = input_name(path);
    let (v, lines): (Vec<u64>, Vec<usize>) = fabric::io::guids::parse_guid_list(&bytes, &shown)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .unzip();
    if v.is_empty() {
        anyhow::bail!("{shown}: no GUID in the file (expected one 0x<GUID> per line)");
    }
    let mut owner = std::collections::HashMap::with_capacity(f.nodes.len() + f.ports.len());
    for (i, n) in f.nodes.iter().enumerate() {
        owner.insert(n.guid, fabric::NodeId(i as u32));
    }
    for p in &f.ports {
        if p.guid != 0 {
            owner.entry(p.guid).or_insert(p.node);
        }
    }
    let (mut unknown, mut wrong) = (Vec::new(), Vec::new());
    for (&g, &ln) in v.iter().zip(&lines) {
        match owner.get(&g) {
            None => unknown.push((ln, g)),
            Some(&n) => {
                let sw = f.is_switch(n);
                let ok = match list {
                    GuidList::Roots => sw,
                    GuidList::EndNodes => !sw,
                    GuidList::AnyNode => true,
                };
                if !ok {
                    wrong.push((ln, g, f.node(n).name.clone()));
                }
            }
        }
    }
    let want = match list {
        GuidList::Roots => "a switch",
        GuidList::EndNodes => "a channel adapter",
        GuidList::AnyNode => "a node or port",
    };
    if unknown.len() + wrong.len() == v.len() {
        let first = unknown
            .first()
            .map(|&(l, g)| format!("line {l}: 0x{g:016x} is not in the fabric"))
            .or_else(|| {
                wrong
                    .first()
                    .map(|(l, g, n)| format!("line {l}: 0x{g:016x} is {n:?}"))
            })
            .unwrap_or_default();
        anyhow::bail!(
            "{shown}: none of its {} GUIDs is {want} of this fabric ({first}; another fabric's file?)",
            v.len()
        );
    }
    let list_of = |items: Vec<String>| {
        let more = if items.len() > 5 {
            format!(" and {} more", items.len() - 5)
        } else {
            String::new()
        };
        format!(
            "{}{more}",
            items.into_iter().take(5).collect::<Vec<_>>().join(", ")
        )
    };
    if !unknown.is_empty() {
        crate::warn!(
            "{shown}: {} of {} GUIDs match nothing in the fabric, ignored: {}",
            unknown.len(),
            v.len(),
            list_of(
                unknown
                    .iter()
                    .map(|(l, g)| format!("line {l} 0x{g:016x}"))
                    .collect()
            )
        );
    }
    if !wrong.is_empty() {
        crate::warn!(
            "{shown}: {} GUIDs are not {want}: {}",
            wrong.len(),
            list_of(
                wrong
                    .iter()
                    .map(|(l, g, n)| format!("line {l} 0x{g:016x} ({n})"))
                    .collect()
            )
        );
    }
    Ok(v)
}

/// Writes `contents` to `path` atomically: a temporary file in the same directory, flushed,
/// then renamed over the target. Nothing half-written is ever visible under `path`.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let tmp = hidden_sibling(path, &format!("tmp.{}", std::process::id()))?;
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

/// One output file, checked before the work that fills it: not a directory, its directory
/// exists and takes files (a probe file is created there and removed). Written atomically
/// by [`OutputFile::write`].
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
}

impl OutputFile {
    pub fn prepare(path: &Path) -> Result<OutputFile> {
        if path.is_dir() {
            anyhow::bail!(
                "{} is a directory: expected a file to write",
                path.display()
            );
        }
        let dir = dir_of(path);
        if !dir.is_dir() {
            anyhow::bail!(
                "cannot write {}: there is no directory {}",
                path.display(),
                dir.display()
            );
        }
        let probe = hidden_sibling(path, &format!("probe.{}", std::process::id()))?;
        fs::File::create(&probe).with_context(|| format!("cannot write {}", path.display()))?;
        let _ = fs::remove_file(&probe);
        Ok(OutputFile {
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&self, contents: &[u8]) -> Result<()> {
        write_atomic(&self.path, contents)
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {what} ({{eta}} left)"
    )) {
        bar.set_style(style);
    }
    watch(&bar, what);
    bar
}

/// A spinner on stderr for work without a known length.
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    let sp = indicatif::ProgressBar::new_spinner();
    sp.set_message(msg.to_string());
    if !crate::out::quiet() {
        sp.enable_steady_tick(std::time::Duration::from_millis(120));
    }
    watch(&sp, msg);
    sp
}

/// How often progress goes to a log (stderr not a terminal).
const LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Progress where no one watches a terminal: with `--quiet`, none at all; when stderr is
/// not a terminal (a log under a batch system), a plain line every [`LOG_EVERY`] while the
/// work lasts (`fabroute: routing with updn… 20 s`, or `… 1200/5000 scenarios, 30 s`).
fn watch(bar: &indicatif::ProgressBar, what: &str) {
    use std::io::IsTerminal;
    if crate::out::quiet() {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        return;
    }
    if std::io::stderr().is_terminal() {
        return;
    }
    let (bar, what) = (bar.clone(), what.to_string());
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let step = std::time::Duration::from_millis(200);
        let mut next = LOG_EVERY;
        while !bar.is_finished() {
            std::thread::sleep(step);
            let t = start.elapsed();
            if t < next || bar.is_finished() {
                continue;
            }
            next += LOG_EVERY;
            let done = match bar.length() {
                Some(len) if len > 0 => format!(" {}/{len}", bar.position()),
                _ => String::new(),
            };
            crate::out::stderr_line(&format!("fabroute: {what}…{done} {} s", t.as_secs()));
        }
    });
}

/// A digest of a file's bytes for telling which files belong together (not for security):
/// 64-bit, word at a time, the same on every machine. Printed as 16 hex digits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Digest {
    h: u64,
    tail: [u8; 8],
    n: usize,
    len: u64,
}

impl Digest {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    pub fn new() -> Self {
        Digest::default()
    }

    #[inline]
    fn word(&mut self, w: u64) {
        self.h = (self.h.rotate_left(23) ^ w).wrapping_mul(Self::K);
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.n > 0 {
            let take = (8 - self.n).min(bytes.len());
            self.tail[self.n..self.n + take].copy_from_slice(&bytes[..take]);
            self.n += take;
            bytes = &bytes[take..];
            if self.n < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.tail));
            self.n = 0;
        }
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.n = rest.len();
    }

    /// The digest as 16 hex digits.
    pub fn hex(mut self) -> String {
        let mut last = [0u8; 8];
        last[..self.n].copy_from_slice(&self.tail[..self.n]);
        self.word(u64::from_le_bytes(last));
        self.word(self.len);
        format!("{:016x}", self.h)
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> String {
        let mut d = Digest::new();
        d.update(bytes);
        d.hex()
    }
}

/// A writer that digests what passes through it.
pub struct Digesting<W> {
    pub inner: W,
    pub digest: Digest,
}

impl<W: Write> Write for Digesting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// An output directory written as a whole: files go into a sibling temporary directory
/// (`.NAME.fabroute-tmp.PID`), and [`OutputDir::commit`] puts it in place of `NAME`, so `NAME`
/// holds the old set or the new one, never a mix. Checked before any work starts; leftovers
/// of interrupted runs (temporary directories of processes that no longer run) are removed,
/// and a set an interrupted commit left aside is put back.
#[derive(Debug)]
pub struct OutputDir {
    target: PathBuf,
    tmp: PathBuf,
    committed: bool,
}

fn sibling(target: &Path, tag: &str) -> Result<PathBuf> {
    hidden_sibling(target, &format!("fabroute-{tag}"))
}

/// The directory `path` is in (`.` for a bare name).
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The hidden name `.NAME.TAG` beside `path`, in its directory.
fn hidden_sibling(path: &Path, tag: &str) -> Result<PathBuf> {
    let name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?
        .to_string_lossy()
        .into_owned();
    Ok(dir_of(path).join(format!(".{name}.{tag}")))
}

/// True when process `pid` runs (Linux: `/proc/PID` exists).
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Cleans up after runs that wrote `target` and were interrupted (their process no longer
/// runs), and puts a whole set back where a commit stopped between its two renames: the new
/// set when it was complete (a commit had started: the old set was already set aside, so the
/// new one had been written whole), else the old set. Says what it did on standard error.
/// Called before a set is written and before one is read, so that neither finds `target`
/// missing after a crash.
pub fn recover_set(target: &Path) {
    let (Ok(prefix), Some(parent)) = (sibling(target, ""), target.parent()) else {
        return;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let prefix = prefix
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let Ok(rd) = fs::read_dir(parent) else {
        return;
    };
    // (kind, pid, path) of the leftovers of dead processes.
    let mut left: Vec<(String, u32, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let rest = n.strip_prefix(&prefix)?;
            let (kind, pid) = rest.split_once('.')?;
            let pid = pid.parse::<u32>().ok()?;
            (!alive(pid)).then(|| (kind.to_string(), pid, e.path()))
        })
        .collect();
    left.sort();
    let name = target.display();
    if !target.exists() {
        // A commit that set the old set aside and died before the new one went in place: its
        // temporary directory holds the whole new set.
        let started = left.iter().find_map(|(k, pid, old)| {
            let tmp = left
                .iter()
                .find(|(k2, p2, _)| k2 == "tmp" && p2 == pid)
                .map(|t| t.2.clone());
            (k == "old").then(|| (old.clone(), tmp, *pid))
        });
        if let Some((old, tmp, pid)) = started {
            let (from, what) = match tmp {
                Some(t) => (t, "the new set it had written whole"),
                None => (old, "the previous set"),
            };
            if fs::rename(&from, target).is_ok() {
                crate::warn!(
                    "{name} was missing: a run (pid {pid}) was interrupted while putting its tables in place; recovered {what}"
                );
            }
        }
    }
    for (kind, _, path) in left {
        if path.exists() && (kind == "tmp" || kind == "old") {
            let _ = fs::remove_dir_all(path);
        }
    }
}

impl OutputDir {
    /// Checks that `target` can be written (its parent exists and takes files; `target` is a
    /// directory or absent), cleans up after interrupted runs, and makes the temporary
    /// directory.
    pub fn prepare(target: &Path) -> Result<OutputDir> {
        if target.exists() && !target.is_dir() {
            anyhow::bail!("{} exists and is not a directory", target.display());
        }
        let parent = dir_of(target);
        fs::create_dir_all(&parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        recover_set(target);
        let tmp = sibling(target, &format!("tmp.{}", std::process::id()))?;
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp).with_context(|| {
            format!(
                "cannot write into {} (the output directory's parent)",
                parent.display()
            )
        })?;
        Ok(OutputDir {
            target: target.to_path_buf(),
            tmp,
            committed: false,
        })
    }

    /// Where file `name` of the set is written until the commit.
    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.join(name)
    }

    /// Writes a whole file of the set; returns its digest.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<String> {
        let p = self.path(name);
        fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))?;
        Ok(Digest::of(bytes))
    }

    /// Streams a file of the set through `fill`; returns its digest.
    pub fn stream(
        &self,
        name: &str,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<String> {
        let p = self.path(name);
        let file = fs::File::create(&p).with_context(|| format!("cannot write {}", p.display()))?;
        let mut w = Digesting {
            inner: std::io::BufWriter::with_capacity(1 << 20, file),
            digest: Digest::new(),
        };
        fill(&mut w)
            .and_then(|_| w.flush())
            .with_context(|| format!("cannot write {}", p.display()))?;
        Ok(w.digest.hex())
    }

    /// Puts the new set in place of the old one (if any).
    pub fn commit(mut self) -> Result<()> {
        // Make the new files durable before they replace anything.
        if let Ok(rd) = fs::read_dir(&self.tmp) {
            for e in rd.flatten() {
                if let Ok(f) = fs::File::open(e.path()) {
                    let _ = f.sync_all();
                }
            }
        }
        let old = sibling(&self.target, &format!("old.{}", std::process::id()))?;
        let had = self.target.exists();
        if had {
            fs::rename(&self.target, &old)
                .with_context(|| format!("cannot replace {}", self.target.display()))?;
        }
        fs::rename(&self.tmp, &self.target)
            .with_context(|| format!("cannot put {} in place", self.target.display()))?;
        if had {
            let _ = fs::remove_dir_all(&old);
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for OutputDir {
    /// A set that was not committed (an error on the way) leaves nothing behind.
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Writes the OpenSM file set of `r` into `out` (streamed, with a progress bar on a terminal)
/// and returns each file's digest, for the summary.
pub fn write_tables(
    out: &OutputDir,
    f: &fabric::Fabric,
    r: &routing::Routing,
    opts: &routing::opensm::SetOptions,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut digests = std::collections::BTreeMap::new();
    let live_link = match &opts.subnet_lst.dead {
        Some(m) => f.links.iter().any(|l| m.port_link_alive(f, l.a)),
        None => !f.links.is_empty(),
    };
    if !live_link {
        crate::warn!(
            "no live link is left, so the opensm-subnet.lst written lists nothing and cannot be read back: check the tables against the fabric file itself"
        );
    }
    for file in routing::opensm::set_files(f, r, opts) {
        let bar = progress_bar(0, file.name);
        let d = out.stream(file.name, |w| {
            let mut tick = |done: usize, total: usize| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            };
            let mut sink = routing::opensm::Sink {
                out: w,
                progress: Some(&mut tick),
            };
            file.write(&mut sink)
        })?;
        bar.finish_and_clear();
        digests.insert(file.name.to_string(), d);
    }
    Ok(digests)
}
