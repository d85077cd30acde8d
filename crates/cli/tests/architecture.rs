//! ARCHITECTURE.md's boundaries, checked on the source tree (rust-analyzer's habit: an
//! invariant a test does not hold is a wish):
//! - the core crates (fabric, routing, sim, mad, sm) do no file-system I/O and read no clock;
//! - `unsafe` lives in `umad` only;
//! - every command ends through `out::Status` (no bare `ExitCode` in `cmd/`);
//! - outside `engines/`, engines are named through the registry, except the two helpers the
//!   CLI needs by name (`torus2qos::parse_config`/`TorusConfig` for `--torus-config`,
//!   `hopvl::hop_vls` for `sim --hop-vls`).

use std::path::{Path, PathBuf};

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Lines of `files` containing any of `needles` (outside `//` comments), as `file:line: text`.
fn hits(files: &[PathBuf], needles: &[&str]) -> Vec<String> {
    let mut v = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if needles.iter().any(|n| code.contains(n)) {
                v.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    v
}

#[test]
fn core_crates_do_no_io_and_read_no_clock() {
    for c in ["fabric", "routing", "sim", "mad", "sm"] {
        let files = sources(&crates().join(c).join("src"));
        assert!(!files.is_empty(), "{c}");
        let h = hits(
            &files,
            &[
                "std::fs",
                "fs::read",
                "File::open",
                "File::create",
                "Instant::now",
                "SystemTime",
                "TcpStream",
                "TcpListener",
                "UdpSocket",
            ],
        );
        assert!(
            h.is_empty(),
            "{c} does I/O or reads the clock:\n{}",
            h.join("\n")
        );
    }
}

#[test]
fn unsafe_lives_in_umad_only() {
    for c in ["fabric", "routing", "sim", "mad", "sm", "cli"] {
        let h = hits(&sources(&crates().join(c).join("src")), &["unsafe "]);
        assert!(h.is_empty(), "unsafe outside umad:\n{}", h.join("\n"));
    }
}

#[test]
fn every_command_ends_through_status() {
    let h = hits(
        &sources(&crates().join("cli/src/cmd")),
        &["ExitCode::SUCCESS", "ExitCode::FAILURE", "ExitCode::from"],
    );
    assert!(
        h.is_empty(),
        "a command returns an exit code of its own:\n{}",
        h.join("\n")
    );
}

#[test]
fn engines_are_named_through_the_registry() {
    let allowed = [
        "engines::torus2qos::parse_config",
        "engines::torus2qos::TorusConfig",
        "engines::hopvl::hop_vls",
    ];
    let engines = [
        "minhop",
        "updn",
        "dor",
        "ftree",
        "sssp",
        "dfsssp",
        "lash",
        "hopvl",
        "nue",
        "torus2qos",
    ];
    let mut files = Vec::new();
    for c in ["cli", "sim", "sm"] {
        files.extend(sources(&crates().join(c).join("src")));
    }
    let needles: Vec<String> = engines.iter().map(|e| format!("engines::{e}::")).collect();
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    let h: Vec<String> = hits(&files, &needles)
        .into_iter()
        .filter(|l| !allowed.iter().any(|a| l.contains(a)))
        .collect();
    assert!(
        h.is_empty(),
        "an engine named outside the registry:\n{}",
        h.join("\n")
    );
}
