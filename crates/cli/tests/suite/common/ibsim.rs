//! Running ibsim and its clients (through libumad2sim) for the live tests.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const PRELOAD: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fabroute")
}

pub fn tools_present() -> bool {
    let have = ["ibsim", "dump_lfts", "ibtracert", "saquery"]
        .iter()
        .all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        })
        && Path::new(PRELOAD).exists();
    if !have && std::env::var_os("FABROUTE_NO_EXTERNAL_TOOLS").is_none() {
        panic!("ibsim/libumad2sim/infiniband-diags are not installed: run scripts/install-test-deps.sh (or set FABROUTE_NO_EXTERNAL_TOOLS=1 to skip these tests)");
    }
    if !have {
        eprintln!("SKIPPED (FABROUTE_NO_EXTERNAL_TOOLS): ibsim/libumad2sim/infiniband-diags not installed");
    }
    have
}

/// `program` as an ibsim client: attached as HCA `host` of the ibsim listening on `sock`,
/// through libumad2sim, working in `dir` (where libumad2sim writes its sysfs tree).
pub fn sim_client(program: &str, dir: &Path, sock: &str, host: &str) -> Command {
    let mut c = Command::new(program);
    c.env("IBSIM_SOCKNAME", sock)
        .env("SIM_HOST", host)
        .env("LD_PRELOAD", PRELOAD)
        .current_dir(dir);
    c
}

/// A child process killed (by its pid) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

pub fn run(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

/// Switch names and switch-to-switch cables (name, port) of an ibsim net file written by
/// `fabroute gen` or `convert`, and the HCA names.
pub struct IbsimNet {
    pub sizes: Vec<String>,
    pub cables: Vec<(String, u8)>,
    pub hcas: Vec<String>,
    /// Per HCA name, the node description that opensm-subnet.lst shows (the `# "…"` comment
    /// of a dump converted to a net file; a generated fabric's HCAs are described by name).
    pub desc: std::collections::BTreeMap<String, String>,
}

pub fn parse_net(text: &str) -> IbsimNet {
    let quoted = |s: &str| s.split('"').nth(1).unwrap_or("").to_string();
    let mut switches = BTreeSet::new();
    let mut hcas = Vec::new();
    let mut desc = std::collections::BTreeMap::new();
    let mut sizes = Vec::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# ibsim needs at least: ") {
            sizes = rest
                .split(" (")
                .next()
                .unwrap()
                .split_whitespace()
                .map(String::from)
                .collect();
        }
        if l.starts_with("Switch") {
            switches.insert(quoted(l));
        } else if l.starts_with("Hca") || l.starts_with("Ca") {
            let name = quoted(l);
            let d = l
                .split_once('#')
                .map(|(_, c)| quoted(c))
                .unwrap_or_default();
            desc.insert(name.clone(), if d.is_empty() { name.clone() } else { d });
            hcas.push(name);
        }
    }
    let mut cables = Vec::new();
    let mut cur = String::new();
    for l in text.lines() {
        if l.starts_with("Switch") {
            cur = quoted(l);
        } else if l.starts_with("Hca") || l.starts_with("Ca") {
            cur.clear();
        } else if let (false, Some(rest)) = (cur.is_empty(), l.strip_prefix('[')) {
            let port: u8 = rest.split(']').next().unwrap().parse().unwrap();
            let remote = quoted(l);
            // Each cable once: from the end whose name sorts first.
            if switches.contains(&remote) && cur < remote {
                cables.push((cur.clone(), port));
            }
        }
    }
    IbsimNet {
        sizes,
        cables,
        hcas,
        desc,
    }
}

/// Every LID an opensm-subnet.lst names (base LIDs of every port).
pub fn base_lids(lst: &str) -> BTreeSet<u64> {
    lst.split("LID:")
        .skip(1)
        .filter_map(|s| u64::from_str_radix(&s[..4], 16).ok())
        .collect()
}

pub fn events(p: &Path) -> Vec<serde_json::Value> {
    read(p)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn count(p: &Path, event: &str) -> usize {
    events(p).iter().filter(|e| e["event"] == event).count()
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Starts ibsim on net file `netf` (described by `net`) in `dir`, on socket `sock`, and
/// waits until it is ready; its stdin is the console.
pub fn start_ibsim(dir: &Path, netf: &Path, net: &IbsimNet, sock: &str) -> Proc {
    let sim_log = dir.join("ibsim.log");
    let p = Proc(
        Command::new("ibsim")
            .arg("-s")
            .args(&net.sizes)
            .arg(netf)
            .env("IBSIM_SOCKNAME", sock)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&sim_log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("ibsim starts"),
    );
    wait_for("ibsim", Duration::from_secs(20), || {
        read(&sim_log).contains("simulator ready")
    });
    p
}

/// A fresh directory for test `name` with the ibsim net file of `fabroute gen GEN…` in
/// it: (directory, net file, its description, an ibsim socket name for this test).
pub fn generated_net(
    name: &str,
    gen: &[&str],
) -> (std::path::PathBuf, std::path::PathBuf, IbsimNet, String) {
    let dir = std::env::temp_dir().join(format!("fabroute-live-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let netf = dir.join("fabric.net");
    let (ok, text) = run(Command::new(bin())
        .arg("gen")
        .args(gen)
        .arg("-o")
        .arg(&netf));
    assert!(ok, "{text}");
    let net = parse_net(&read(&netf));
    let sock = format!("frlive{}{name}", std::process::id());
    (dir, netf, net, sock)
}

/// Starts OpenSM (`-R engine`, priority `priority`, dumps into `dir`) as HCA `host` of the
/// ibsim on `sock`, and waits for its SUBNET UP.
pub fn start_opensm(dir: &Path, sock: &str, host: &str, engine: &str, priority: &str) -> Proc {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("opensm.conf"), "force_log_flush TRUE\n").unwrap();
    let log = dir.join("opensm.log");
    let p = Proc(
        sim_client("opensm", dir, sock, host)
            .arg("-F")
            .arg(dir.join("opensm.conf"))
            .arg("-f")
            .arg(&log)
            .args(["-D", "0x43", "--dump_files_dir"])
            .arg(dir)
            .args(["-R", engine, "-p", priority])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("OpenSM's SUBNET UP", Duration::from_secs(60), || {
        read(&log).contains("SUBNET UP")
    });
    p
}

/// Whether OpenSM is installed. Without it the tests that run it beside fabroute fail, as
/// [`tools_present`] does, unless `FABROUTE_NO_EXTERNAL_TOOLS=1` asks to skip them.
pub fn opensm_present() -> bool {
    let have = Command::new("sh")
        .args(["-c", "command -v opensm"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have && std::env::var_os("FABROUTE_NO_EXTERNAL_TOOLS").is_none() {
        panic!("opensm is not installed: run scripts/install-test-deps.sh (or set FABROUTE_NO_EXTERNAL_TOOLS=1 to skip these tests)");
    }
    have
}

/// `fabroute sm ARGS --max-seconds 120 --events EVENTS -o OUT` as HCA `host` of the ibsim on
/// `sock`, working in `dir`, its output thrown away.
pub fn spawn_sm(
    dir: &Path,
    sock: &str,
    host: &str,
    args: &[&str],
    events: &Path,
    out: &Path,
) -> Proc {
    Proc(
        sim_client(bin(), dir, sock, host)
            .arg("sm")
            .args(args)
            .args(["--max-seconds", "120", "--events"])
            .arg(events)
            .arg("-o")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}
