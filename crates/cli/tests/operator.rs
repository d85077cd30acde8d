//! Small contracts an operator relies on (issue 42, item 9): `convert -o -` writes to
//! standard output, `fault` and `sweep` take `-R` as `route` does, and a port out of range in
//! `--fail` is a usage error.

mod common;
use common::{example, fr, tmp};

#[test]
fn convert_to_standard_output() {
    let o = fr(&[
        "convert",
        &example("torus2d_4x4_h2.net"),
        "-o",
        "-",
        "--to",
        "json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "fabroute-fabric");
    assert!(!std::path::Path::new("-").exists(), "no file named '-'");
    let o = fr(&[
        "convert",
        &example("torus2d_4x4_h2.net"),
        "-o",
        "-",
        "--to",
        "json",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn fault_takes_dash_r_and_port_ranges_are_usage_errors() {
    let d = tmp("dash-r");
    let out = d.join("o").display().to_string();
    let net = example("torus2d_4x4_h2.net");
    let o = fr(&[
        "fault",
        &net,
        "-R",
        "updn",
        "--fail",
        "link:S_0_0/3",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fr(&[
        "fault",
        &net,
        "-R",
        "updn",
        "--fail",
        "link:S_0_0/9",
        "-o",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has ports 1..=6"));
}
