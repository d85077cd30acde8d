//! The `fabroute` binary as a user runs it: outputs, JSON keys, exit codes, error messages.

use std::path::Path;
use std::process::Command;

use crate::common;
use common::{example, fr, summary, tmp};

#[test]
fn info_json_has_the_documented_keys() {
    let o = fr(&["info", &example("torus2d_4x4_h2.net"), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["switches"], 16);
    assert_eq!(v["cas"], 32);
    assert_eq!(v["routers"], 0);
    assert_eq!(v["links"], 64);
    assert_eq!(v["diameter"], 4);
    assert_eq!(v["format"], "ibsim");
}

/// Bad input is exit status 3 (the documented contract: 2 is clap's usage errors).
#[test]
fn bad_input_is_a_located_error_and_exit_3() {
    let d = tmp("bad");
    let p = d.join("bad.net");
    std::fs::write(
        &p,
        "Switch\t4 \"a\"\n[1]\t\"b\"[1]\n[9]\t\"b\"[2]\n\nHca\t1 \"b\"\n[1]\t\"a\"[1]\n",
    )
    .unwrap();
    let o = fr(&["info", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.net:3"), "{err}");
    assert!(!err.contains("panicked"));
    let o = fr(&["info", d.join("missing.net").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    // A usage error stays clap's 2.
    assert_eq!(fr(&["info", "--no-such-flag"]).status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

/// Under `--json` a failed command still writes one JSON document on stdout: the error, its
/// causes, the exit status and, for a bad input file, the file and line.
#[test]
fn a_failure_under_json_is_a_json_document() {
    let d = tmp("bad-json");
    let p = d.join("bad.net");
    std::fs::write(&p, "Switch\t4 \"a\"\n[1]\t\"b\"[1]\n[9]\t\"b\"[2]\n").unwrap();
    let o = fr(&["--json", "info", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["status"], 3);
    assert_eq!(v["error"]["kind"], "failed");
    assert_eq!(v["error"]["file"], p.to_str().unwrap());
    assert_eq!(v["error"]["line"], 3);
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.net:3"));
    // an error without a file: the causes, outermost first
    let o = fr(&["--json", "info", d.join("missing.net").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"]["causes"][0]
        .as_str()
        .unwrap()
        .starts_with("cannot read"));
    assert!(v["error"].get("line").is_none());
    // a usage error the command finds itself (clap's own stay clap's)
    let o = fr(&[
        "--json",
        "sweep",
        &example("torus2d_4x4_h2.net"),
        "--engine",
        "updn",
        "--faults",
        "1",
        "-o",
        d.join("sw").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "usage");
    assert_eq!(v["error"]["status"], 2);
}

/// A chain reports the engines that failed before the one that routed; an unknown name in
/// it is a usage error (exit 2) naming the closest engine, found before any routing.
#[test]
fn chain_reports_failed_engines_and_unknown_names() {
    let d = tmp("chain");
    let o = fr(&[
        "route",
        &example("torus2d_4x4_h2.net"),
        "-R",
        "ftree,updn",
        "-o",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let s = summary(&d);
    assert_eq!(s["engine_requested"], "ftree,updn");
    let failed: Vec<&str> = s["failed_engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["engine"].as_str().unwrap())
        .collect();
    assert_eq!(
        s["engine_used"],
        if failed.contains(&"ftree") {
            "updn"
        } else {
            "ftree"
        }
    );
    for (args, want) in [
        (
            vec!["route", "-R", "nosuch,updn"],
            "unknown engine \"nosuch\"",
        ),
        (vec!["route", "-R", "ftre,updn"], "did you mean \"ftree\"?"),
        (vec!["route", "-R", "updnn"], "did you mean \"updn\"?"),
        (
            vec!["fault", "--engine", "dfssp", "--fail", "link:S_0_0/3"],
            "did you mean \"dfsssp\"?",
        ),
    ] {
        let e = d.join("typo");
        let mut a = vec![args[0], &example("torus2d_4x4_h2.net")]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        a.extend(args[1..].iter().map(|x| x.to_string()));
        a.extend(["-o".to_string(), e.display().to_string()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = fr(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!e.exists(), "nothing written for {a:?}");
    }
}

/// The documented exit statuses: 0 clean, 1 done but the tables loop or miss pairs (route,
/// check and fault alike).
#[test]
fn exit_status_follows_the_tables() {
    let d = tmp("status");
    let net = example("torus2d_4x4_h2.net");
    let route = |engine: &str| {
        let out = d.join(engine);
        let o = fr(&["route", &net, "-R", engine, "-o", out.to_str().unwrap()]);
        (o, out)
    };
    let (o, loops) = route("minhop");
    assert_eq!(
        o.status.code(),
        Some(1),
        "minhop closes credit loops on a torus"
    );
    assert!(
        loops.join("opensm-lfts.dump").exists(),
        "the tables are still written"
    );
    let (o, clean) = route("updn");
    assert_eq!(o.status.code(), Some(0));
    let check = |dir: &Path| {
        fr(&[
            "check",
            dir.join("opensm-subnet.lst").to_str().unwrap(),
            "--lfts",
            dir.join("opensm-lfts.dump").to_str().unwrap(),
        ])
        .status
        .code()
    };
    assert_eq!(check(&loops), Some(1));
    assert_eq!(check(&clean), Some(0));
    // stats: 0 on complete tables; tables missing a switch's block deliver fewer pairs, so
    // stats says so, skips the bisection bandwidth (it routes flows) and exits 1
    let stats = |dir: &Path, lfts: &Path| {
        fr(&[
            "stats",
            dir.join("opensm-subnet.lst").to_str().unwrap(),
            "--lfts",
            lfts.to_str().unwrap(),
        ])
    };
    assert_eq!(
        stats(&clean, &clean.join("opensm-lfts.dump")).status.code(),
        Some(0)
    );
    let dump = std::fs::read_to_string(clean.join("opensm-lfts.dump")).unwrap();
    let second = dump.match_indices("Unicast lids").nth(1).unwrap().0;
    let cut = d.join("one-block-less.dump");
    std::fs::write(&cut, &dump[second..]).unwrap();
    let o = stats(&clean, &cut);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("effective bisection bandwidth skipped"),
        "{err}"
    );
}

/// Every command prints exactly one JSON document on stdout with --json, human text on
/// stderr.
#[test]
fn json_on_every_command_is_one_document() {
    let d = tmp("json");
    let net = d.join("t.net");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let runs: Vec<Vec<String>> = vec![
        vec![
            "gen".into(),
            "torus".into(),
            "3x3".into(),
            "-o".into(),
            s(&net),
        ],
        vec!["info".into(), s(&net)],
        vec![
            "convert".into(),
            s(&net),
            "--to".into(),
            "ibnetdiscover".into(),
            "-o".into(),
            s(&d.join("t.ibnd")),
        ],
        vec![
            "route".into(),
            s(&net),
            "-R".into(),
            "updn".into(),
            "-o".into(),
            s(&d.join("r")),
        ],
        vec![
            "check".into(),
            s(&d.join("r/opensm-subnet.lst")),
            "--lfts".into(),
            s(&d.join("r/opensm-lfts.dump")),
        ],
        vec![
            "stats".into(),
            s(&d.join("r/opensm-subnet.lst")),
            "--lfts".into(),
            s(&d.join("r/opensm-lfts.dump")),
            "--ebb-runs".into(),
            "5".into(),
        ],
        vec![
            "trace".into(),
            s(&d.join("r/opensm-subnet.lst")),
            "--lfts".into(),
            s(&d.join("r/opensm-lfts.dump")),
            "S_0_0".into(),
            "S_1_1".into(),
        ],
        vec!["diff".into(), s(&d.join("r")), s(&d.join("r"))],
        vec![
            "fault".into(),
            s(&net),
            "--fail".into(),
            "link:S_0_0/3".into(),
            "-o".into(),
            s(&d.join("f")),
        ],
        vec![
            "sweep".into(),
            s(&net),
            "--faults".into(),
            "1".into(),
            "--exhaustive".into(),
            "-o".into(),
            s(&d.join("sw.jsonl")),
        ],
        vec![
            "merge".into(),
            s(&d.join("sw.jsonl")),
            "-o".into(),
            s(&d.join("m.jsonl")),
        ],
        vec![
            "sim".into(),
            s(&net),
            "-R".into(),
            "updn".into(),
            "--load".into(),
            "0.1".into(),
            "--time".into(),
            "50us".into(),
            "--warmup".into(),
            "10us".into(),
            "-o".into(),
            s(&d.join("sim")),
        ],
    ];
    for args in runs {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.push("--json");
        let o = fr(&a);
        assert!(
            o.status.success(),
            "{a:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8_lossy(&o.stdout);
        let v: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{a:?}: stdout is not one JSON document ({e}): {text}"));
        assert!(v.is_object(), "{a:?}");
    }
}

/// A reader that goes away ends the output quietly: no panic, the usual status, 50 times.
#[test]
fn broken_pipes_end_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let d = tmp("pipe");
    let net = example("torus2d_4x4_h2.net");
    let r = d.join("r");
    assert!(
        fr(&["route", &net, "-R", "minhop", "-o", r.to_str().unwrap()])
            .status
            .code()
            == Some(1)
    );
    let runs: [Vec<String>; 2] = [
        vec![
            "route".into(),
            net.clone(),
            "-R".into(),
            "minhop".into(),
            "--verbose".into(),
            "-o".into(),
            d.join("r2").display().to_string(),
        ],
        vec![
            "check".into(),
            r.join("opensm-subnet.lst").display().to_string(),
            "--lfts".into(),
            r.join("opensm-lfts.dump").display().to_string(),
        ],
    ];
    for args in &runs {
        for i in 0..25 {
            let mut child = Command::new(env!("CARGO_BIN_EXE_fabroute"))
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let out = child.stdout.take().unwrap();
            if i % 2 == 0 {
                // Like `| head -1`: one line, then the reader is gone.
                let mut first = String::new();
                BufReader::new(out).read_line(&mut first).unwrap();
                assert!(!first.is_empty());
            } else {
                // Gone before the first line: every write hits a closed pipe.
                drop(out);
            }
            let o = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                !err.contains("panicked") && !err.contains("Broken pipe"),
                "{args:?}: {err}"
            );
            assert_eq!(
                o.status.code(),
                Some(1),
                "{args:?}: minhop's loops, whatever the reader"
            );
        }
    }
}

/// Output sets are whole: a bad -o fails before any work; leftovers of interrupted runs are
/// cleaned up or put back; a file from another run is refused by `check`.
#[test]
fn output_sets_are_whole_and_checked_as_a_set() {
    let d = tmp("sets");
    let net = example("torus2d_4x4_h2.net");
    // -o naming a file: refused at once.
    let file = d.join("plain");
    std::fs::write(&file, "x").unwrap();
    let o = fr(&["route", &net, "-R", "updn", "-o", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a directory"));
    // Leftovers of a dead process: its temporary set is removed; an old set it had moved
    // aside (DIR missing) is put back before anything else happens.
    let out = d.join("out");
    let stale = d.join(".out.fabroute-tmp.4000000");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("opensm-lfts.dump"), "half").unwrap();
    let aside = d.join(".out.fabroute-old.4000001");
    std::fs::create_dir_all(&aside).unwrap();
    std::fs::write(aside.join("marker"), "old set").unwrap();
    let o = fr(&[
        "route",
        &net,
        "-R",
        "updn",
        "--lmc",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!stale.exists(), "the dead run's temporary set is gone");
    assert!(
        !aside.exists(),
        "the set moved aside was put back, then replaced"
    );
    assert!(
        !out.join("marker").exists(),
        "the new set replaced the old one whole"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("fabroute-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let summary = summary(&out);
    assert_eq!(summary["lmc"], 1);
    assert_eq!(summary["files"].as_object().unwrap().len(), 4);
    let check = |dir: &Path| {
        fr(&[
            "check",
            dir.join("opensm-subnet.lst").to_str().unwrap(),
            "--lfts",
            dir.join("opensm-lfts.dump").to_str().unwrap(),
        ])
    };
    // The LMC comes from the summary: every LID of each port is checked.
    let o = check(&out);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // A subnet.lst from another run (LMC 0) mixed into the set: refused.
    let other = d.join("other");
    assert!(
        fr(&["route", &net, "-R", "updn", "-o", other.to_str().unwrap()])
            .status
            .success()
    );
    std::fs::copy(
        other.join("opensm-subnet.lst"),
        out.join("opensm-subnet.lst"),
    )
    .unwrap();
    let o = check(&out);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not belong to the table set"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A GUID file that matches nothing in the fabric (or holds no GUID) is an error naming the
/// file; one that matches some is used, the rest warned about with their lines.
#[test]
fn guid_files_that_match_nothing_are_errors() {
    let d = tmp("guids");
    let net = example("torus2d_4x4_h2.net");
    let out = d.join("r");
    let run = |file: &Path| {
        fr(&[
            "route",
            &net,
            "-R",
            "updn",
            "--roots",
            file.to_str().unwrap(),
            "--summary-only",
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let foreign = d.join("foreign.guids");
    std::fs::write(
        &foreign,
        "# another fabric\n0x0123456789abcdef\n0x0123456789abcdee\n",
    )
    .unwrap();
    let o = run(&foreign);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("foreign.guids: none of its 2 GUIDs is a switch of this fabric"),
        "{err}"
    );
    assert!(
        err.contains("line 2: 0x0123456789abcdef is not in the fabric"),
        "{err}"
    );
    let empty = d.join("empty.guids");
    std::fs::write(&empty, "# nothing\n\n").unwrap();
    let o = run(&empty);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("empty.guids: no GUID in the file"));
    // A host's GUID is not a root: all-wrong is an error, mixed is a warning.
    let info = fr(&[
        "convert",
        &net,
        "--to",
        "ibnetdiscover",
        "-o",
        d.join("t.ibnd").to_str().unwrap(),
    ]);
    assert!(info.status.success());
    let ibnd = std::fs::read_to_string(d.join("t.ibnd")).unwrap();
    let guid_of = |kind: &str, name: &str| -> String {
        let l = ibnd
            .lines()
            .find(|l| l.starts_with(kind) && l.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("{kind} {name} in {ibnd}"));
        let g = l.split_whitespace().nth(2).unwrap();
        let g = g.split('-').nth(1).unwrap_or(g).trim_matches('"');
        format!("0x{}", g.trim_start_matches("0x"))
    };
    let host = guid_of("Ca", "H_0_0_0");
    let sw = guid_of("Switch", "S_0_0");
    let hosts = d.join("hosts.guids");
    std::fs::write(&hosts, format!("{host}\n")).unwrap();
    let o = run(&hosts);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is \"H_0_0_0\""), "{err}");
    let mixed = d.join("mixed.guids");
    std::fs::write(&mixed, format!("{sw}\n0x0123456789abcdef\n{host}\n")).unwrap();
    let o = run(&mixed);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "1 of 3 GUIDs match nothing in the fabric, ignored: line 2 0x0123456789abcdef"
        ),
        "{err}"
    );
    assert!(err.contains("1 GUIDs are not a switch: line 3"), "{err}");
}

/// `convert --to ibsim` refuses a fabric an ibsim file cannot carry and points at `--lossy`,
/// which writes the file and lists what was lost (also in `--json`); the file reads back.
#[test]
fn convert_to_ibsim_lossy_lists_what_is_lost() {
    let d = tmp("lossy");
    let real = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real/tartu_sx6036_fdr_8sw_144hca.ibnd")
        .display()
        .to_string();
    let out = d.join("t.net");
    let o = fr(&[
        "convert",
        &real,
        "--to",
        "ibsim",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("give --lossy to write it anyway"), "{err}");
    assert!(!out.exists());
    let o = fr(&[
        "convert",
        &real,
        "--to",
        "ibsim",
        "--lossy",
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lost = v["lost"].as_array().unwrap();
    assert!(
        lost.iter().any(|l| l
            .as_str()
            .unwrap()
            .contains("speed FDR10 is written as QDR")),
        "{lost:?}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "--lossy: the file does not carry {} item(s)",
            lost.len()
        )),
        "{err}"
    );
    let o = fr(&["info", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["switches"], 8);
    assert_eq!(v["cas"], 144);
}

/// `-` reads an input from standard input (once per run); inputs above `--max-input` are
/// refused clearly (exit 3) before they are read; a bad size is a usage error.
#[test]
fn stdin_inputs_and_the_input_size_limit() {
    use std::io::Write;
    use std::process::Stdio;
    let d = tmp("stdin");
    let net = example("torus2d_4x4_h2.net");
    let with_stdin = |args: &[&str], input: &[u8]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fabroute"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The command may refuse before reading everything: ignore a broken pipe.
        let _ = c.stdin.take().unwrap().write_all(input);
        c.wait_with_output().unwrap()
    };
    let bytes = std::fs::read(&net).unwrap();
    let o = with_stdin(&["info", "-", "--json"], &bytes);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["switches"], 16);
    // Tables from standard input, the fabric from a file.
    let r = d.join("r");
    assert_eq!(
        fr(&["route", &net, "-R", "updn", "-o", r.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    let lfts = std::fs::read(r.join("opensm-lfts.dump")).unwrap();
    let lst = r.join("opensm-subnet.lst");
    let o = with_stdin(
        &["check", lst.to_str().unwrap(), "--lfts", "-", "--json"],
        &lfts,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deadlock_free"], true);
    // Standard input twice is a usage error.
    let o = with_stdin(&["check", "-", "--lfts", "-"], &bytes);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("only one input can be read from standard input"));
    // The size limit, on a file and on standard input.
    let o = fr(&["info", &net, "--max-input", "1K"]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("is {} bytes, above the input limit of 1K (raise it with --max-input, e.g. --max-input 8K)", bytes.len())),
        "{err}"
    );
    let o = with_stdin(&["info", "-", "--max-input", "2K"], &bytes);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("<stdin> holds more than the input limit of 2K"));
    assert_eq!(
        fr(&["info", &net, "--max-input", "2Q"]).status.code(),
        Some(2)
    );
}

/// Two real dumps in one file (two subnets, each with its own SM's LIDs): their LIDs clash.
/// Without `--lmc` that is a located error that names the option; with it the file's LIDs are
/// not read, and each subnet is routed on its own (pairs across them unreachable).
#[test]
fn clashing_lids_are_an_error_that_names_lmc_which_assigns_them_afresh() {
    let d = tmp("clash");
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let mut text =
        std::fs::read_to_string(real.join("switchib_edr_2level_6sw_96hca.ibnd")).unwrap();
    text += &std::fs::read_to_string(real.join("x5_psmn_voltaire4036_qdr_ddr_11sw_89hca.ibnd"))
        .unwrap();
    let f = d.join("two.ibnd");
    std::fs::write(&f, text).unwrap();
    let (f, out) = (f.to_str().unwrap(), d.join("out"));
    let o = fr(&["route", f, "-R", "updn", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("two.ibnd:") && err.contains("already used by"),
        "{err}"
    );
    assert!(err.contains("--lmc N assigns every LID afresh"), "{err}");
    assert!(!out.exists(), "nothing is written on a read error");
    for e in ["updn", "nue"] {
        let o = fr(&[
            "--json",
            "route",
            f,
            "-R",
            e,
            "--lmc",
            "0",
            "-o",
            out.to_str().unwrap(),
            "--summary-only",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // 96 + 89 end ports; only the pairs between the two subnets are unreachable
        assert_eq!(v["unreachable_pairs"], 2 * 96 * 89, "{e}: {v}");
        assert_eq!(v["deadlock_free"], true, "{e}");
        // unreachable pairs make the exit status 1 (exit_status_follows_the_tables)
        assert_eq!(o.status.code(), Some(1), "{e}");
    }
    // A sweep over the two subnets: no scenario counts as cut off by its fault, and full
    // reconfiguration supports every scenario (the pairs between the subnets were never
    // joined by a live path).
    let o = fr(&[
        "--json",
        "sweep",
        f,
        "--faults",
        "1",
        "--exhaustive",
        "-o",
        d.join("sweep.jsonl").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"];
    assert_eq!(v["skipped_disconnected"], 0, "{v}");
    assert!(s["scenarios"].as_u64().unwrap() > 100, "{v}");
    assert_eq!(s["supported"], s["scenarios"], "{v}");
    assert_eq!(s["full_supported"], s["scenarios"], "{v}");
}

/// `sweep` checks the fault count against the fabric and opens its output before it routes:
/// with a base engine that cannot route the fabric (ftree on a torus, exit 3), a fault count
/// above the fabric's links is still a usage error (exit 2), and an output in a missing
/// directory is found before the engine's failure.
#[test]
fn sweep_checks_before_it_routes() {
    let d = tmp("sweep-plan");
    let t = example("torus2d_4x4_h2.net");
    let out = d.join("s.jsonl");
    let run = |args: &[&str]| {
        let o = fr(args);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let base = ["sweep", &t, "-R", "ftree", "--samples", "3", "-q"];
    let (code, err) = run(&[&base[..], &["--faults", "1", "-o", out.to_str().unwrap()]].concat());
    assert_eq!(code, Some(3), "ftree cannot route a torus: {err}");
    let (code, err) = run(&[&base[..], &["--faults", "99", "-o", out.to_str().unwrap()]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--faults must be 1..=32"), "{err}");
    let missing = d.join("no/such/dir/s.jsonl");
    let (code, err) = run(&[
        &base[..],
        &["--faults", "1", "-o", missing.to_str().unwrap()],
    ]
    .concat());
    assert_ne!(code, Some(0));
    assert!(err.contains("cannot create"), "{err}");
    assert!(!err.contains("fat tree"), "routed first: {err}");
}

/// `sm` finds a roots or group file it cannot read before it attaches to the fabric (the
/// names in them are resolved after discovery, which takes minutes on a large fabric).
#[test]
fn sm_checks_its_files_before_it_attaches() {
    for opt in ["--roots", "--mcast"] {
        let o = fr(&["sm", "-R", "updn", opt, "/no/such/file"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{opt}: {err}");
        assert!(err.contains("cannot read /no/such/file"), "{opt}: {err}");
        assert!(!err.contains("attach"), "{opt}: attached first: {err}");
    }
}

/// `check` and `stats` read and check every argument and open their outputs before
/// they walk the tables: an output that cannot be written or a bad option is reported first,
/// and nothing of the work is printed.
#[test]
fn table_commands_check_before_they_walk() {
    let d = tmp("tables-plan");
    let set = d.join("r");
    let set_s = set.to_str().unwrap();
    let o = fr(&[
        "route",
        &example("torus2d_4x4_h2.net"),
        "-R",
        "updn",
        "-o",
        set_s,
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let missing = d.join("no/such/dir/out");
    let missing_s = missing.to_str().unwrap();
    // The tables have no credit loop, so the check used to walk, print its verdict and
    // skip the picture, exit 0.
    for args in [
        vec!["check", set_s, "--svg", missing_s],
        vec!["stats", set_s, "--csv", missing_s],
    ] {
        let o = fr(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains("there is no directory"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} walked first: {:?}", o.stdout);
    }
    // A bad option beats an unreadable table file (it used to be found after the metrics).
    let o = fr(&[
        "stats",
        set_s,
        "--lfts",
        "/no/such/lfts",
        "--ebb-pattern",
        "halves",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--ebb-pattern \"halves\""), "{err}");
    // A directory where a file is wanted.
    let o = fr(&["stats", set_s, "--csv", set_s]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(o.stdout.is_empty());
}

/// A test's scratch directory is removed when the test is done with it, and kept when the
/// test fails (a panic unwinding past it), for a look at what it wrote.
#[test]
fn scratch_directories_go_unless_the_test_failed() {
    let d = tmp("scratch");
    std::fs::write(d.join("x"), "x").unwrap();
    let path = d.to_path_buf();
    drop(d);
    assert!(!path.exists(), "{} left behind", path.display());
    let kept = std::thread::spawn(|| {
        let d = tmp("scratch-failed");
        let path = d.to_path_buf();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _held = d;
            panic!("a failing test");
        }));
        assert!(r.is_err());
        path
    })
    .join()
    .unwrap();
    assert!(kept.exists(), "a failed test's directory was removed");
    std::fs::remove_dir_all(&kept).unwrap();
}
