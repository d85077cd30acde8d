//! `fault` repairs the routing `route` gives (issue: one base routing everywhere). On a
//! SuperPOD-style tree read as an operator's dump (no generator hints) whose management spine,
//! cabled to two cores with nothing below it, is the top of the detected tree, `route` and
//! `fault --minimal` at LMC 0 (same LIDs) differ in exactly the LFT entries RFTR's delta
//! lists: the base under the repair is `route`'s, entry for entry. (Pinning that root as a
//! root list used to rank the fabric from it: a different routing, thousands of entries
//! apart.)

use std::path::Path;

use crate::common;
use common::{fr, tmp};

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn fault_repairs_the_tables_route_gives() {
    let d = tmp("base-is-route");
    let (net, dump) = (d.join("sp.net"), d.join("sp.ibnd"));
    ok(&fr(&[
        "gen",
        "superpod",
        "su=2",
        "mgmt=2",
        "mgmt-hcas=0",
        "sharp=false",
        "-o",
        &s(&net),
    ]));
    ok(&fr(&[
        "convert",
        &s(&net),
        "--to",
        "ibnetdiscover",
        "-o",
        &s(&dump),
    ]));
    for engine in ["updn", "ftree"] {
        let set = d.join(format!("route-{engine}"));
        ok(&fr(&[
            "route",
            &s(&dump),
            "-R",
            engine,
            "--lmc",
            "0",
            "-o",
            &s(&set),
        ]));
        let out = d.join(format!("fault-{engine}"));
        ok(&fr(&[
            "fault",
            &s(&dump),
            "--engine",
            engine,
            "--lmc",
            "0",
            "--minimal",
            "--fail",
            "link:core0-0/1",
            "-o",
            &s(&out),
        ]));
        let sum = json(&std::fs::read(out.join("summary.json")).unwrap());
        let rftr = sum["rftr"]["lft_entries"].as_u64().unwrap();
        assert!(rftr > 0, "{engine}: the fault moves paths");
        let o = fr(&["diff", &s(&set), &s(&out), "--json"]);
        assert_eq!(o.status.code(), Some(1), "{engine}: the sets differ");
        let diff = json(&o.stdout)["totals"]["lft_entries"].as_u64().unwrap();
        assert_eq!(
            diff, rftr,
            "{engine}: route's tables and fault's differ only by RFTR's delta"
        );
    }
}
