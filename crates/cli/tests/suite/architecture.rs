//! ARCHITECTURE.md's boundaries, checked on the source tree (rust-analyzer's habit: an
//! invariant a test does not hold is a wish):
//! - the core crates (fabric, routing, sim, mad, sm) do no file-system I/O and read no clock;
//! - `unsafe` lives in `umad` only;
//! - every command ends through `out::Status` (no bare `ExitCode` in `cmd/`);
//! - outside `engines/`, engines are named through the registry, except the two helpers the
//!   CLI needs by name (`torus2qos::parse_config`/`TorusConfig` for `--torus-config`,
//!   `hopvl::hop_vls` for `sim --hop-vls`);
//! - the checker's files build on no engine and no fault code, the simulator on no engine
//!   and no repair code;
//! - LFT and MFT block sizes are defined once, and block arithmetic is written once beside
//!   them (`routing::tables::update`);
//! - no source file is over 800 lines but those listed, each with its reason, and the list
//!   only shrinks.

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

/// The commands that route, walk or simulate check every argument and input and prepare
/// their outputs in `plan`, then work in `execute`: their entry point is only the two.
#[test]
fn commands_that_work_plan_first() {
    let mut wrong = Vec::new();
    for cmd in [
        "route.rs",
        "fault.rs",
        "sweep.rs",
        "sim/mod.rs",
        "check.rs",
        "stats.rs",
        "trace.rs",
        "diff.rs",
    ] {
        let text = std::fs::read_to_string(crates().join("cli/src/cmd").join(cmd)).unwrap();
        let planned = text.contains("fn plan(")
            && text.contains("fn execute(p: Plan)")
            && text.contains("    execute(plan(a)?)\n}");
        if !planned {
            wrong.push(cmd);
        }
    }
    assert!(
        wrong.is_empty(),
        "commands without plan(Args) then execute(Plan): {wrong:?}"
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

/// The text of `f` before its `#[cfg(test)]` module (test fixtures may route with engines).
fn non_test(f: &Path) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[test]
fn the_checker_builds_on_no_engine_and_no_fault_code() {
    let src = crates().join("routing/src");
    let checker = [
        "cdg/mod.rs",
        "cdg/cycles.rs",
        "cdg/witness.rs",
        "cdg/vl15.rs",
        "walk.rs",
        "forward.rs",
        "metrics.rs",
        "diff.rs",
        "tables/mod.rs",
        "tables/update.rs",
        "turn.rs",
    ];
    let mut h = Vec::new();
    for name in checker {
        let f = src.join(name);
        for (i, line) in non_test(&f).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if [
                "crate::engines",
                "crate::fault",
                "super::engines",
                "super::fault",
            ]
            .iter()
            .any(|n| code.contains(n))
            {
                h.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        h.is_empty(),
        "the checker depends on engines or fault code:\n{}",
        h.join("\n")
    );
}

/// The simulator models the fabric, its tables and what an SM sends; it takes repaired tables
/// as input and does not build on RFTR or the fault sessions (`Fault` is the fabric's).
#[test]
fn the_simulator_builds_on_no_repair_code() {
    // Outside the unit tests, which may route with an engine.
    let h: Vec<String> = sources(&crates().join("sim/src"))
        .iter()
        .flat_map(|f| {
            non_test(f)
                .lines()
                .filter(|l| l.contains("routing::fault") || l.contains("routing::engines"))
                .map(|l| format!("{}: {}", f.display(), l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        h.is_empty(),
        "the simulator depends on repair or engine code:\n{}",
        h.join("\n")
    );
}

#[test]
fn table_blocks_are_one_files_job() {
    let mut files = Vec::new();
    for c in ["fabric", "routing", "sim", "mad", "umad", "sm", "cli"] {
        files.extend(sources(&crates().join(c).join("src")));
    }
    let home = "routing/src/tables/update.rs";
    let h = hits(&files, &["const LFT_BLOCK", "const MFT_BLOCK"]);
    assert_eq!(
        h.len(),
        2,
        "block sizes defined more than once:\n{}",
        h.join("\n")
    );
    assert!(h.iter().all(|x| x.contains(home)), "{}", h.join("\n"));
    // Block arithmetic (which LIDs a block holds, which block a LID is in, comparing rows
    // by block) is written once, beside the constants.
    let others: Vec<PathBuf> = files.into_iter().filter(|f| !f.ends_with(home)).collect();
    let h = hits(
        &others,
        &[
            "* LFT_BLOCK",
            "/ LFT_BLOCK",
            "(LFT_BLOCK)",
            "* MFT_BLOCK",
            "/ MFT_BLOCK",
            "/ MFT_MLIDS",
            "* MFT_MLIDS",
            "lid / 64",
            "lid % 64",
        ],
    );
    assert!(
        h.is_empty(),
        "LFT/MFT block arithmetic outside {home}:\n{}",
        h.join("\n")
    );
}

/// Source files over 800 lines, and why each still is. A file split below the limit must
/// leave the list (the test fails while it is listed), so the list only shrinks.
const LONG_FILES: [(&str, &str); 0] = [];

#[test]
fn no_source_file_is_over_800_lines_but_the_listed() {
    let mut long = Vec::new();
    for c in ["fabric", "routing", "sim", "mad", "umad", "sm", "cli"] {
        for f in sources(&crates().join(c).join("src")) {
            let n = std::fs::read_to_string(&f).unwrap().lines().count();
            let rel = f
                .strip_prefix(crates())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let listed = LONG_FILES.iter().any(|(p, _)| *p == rel);
            if n > 800 && !listed {
                long.push(format!("{rel}: {n} lines (split it along its seams)"));
            }
            if n <= 800 && listed {
                long.push(format!("{rel}: {n} lines now: take it off LONG_FILES"));
            }
        }
    }
    for (p, why) in LONG_FILES {
        assert!(crates().join(p).exists(), "{p} is listed but gone");
        assert!(!why.is_empty());
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}
