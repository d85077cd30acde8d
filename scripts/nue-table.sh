#!/usr/bin/env bash
# The Nue table of docs/vl-engines.md: fabroute's nue beside OpenSM's nue (3.3.23 on ibsim
# through the team's harness) at the same VL count, on every fabric of the shared set.
#
#   scripts/nue-table.sh OUT_DIR [TOPOLOGIES_DIR] [VLS="1 8"]
#
# TOPOLOGIES_DIR defaults to ../shared/topologies, the harness to ../shared/tools
# (TOOLS=...). FABROUTE_BIN=path uses that binary. Prints the markdown table; every run's
# files stay in OUT_DIR. Max link load: CA pairs on the busiest switch-to-switch channel;
# hops: switch-to-switch hops, averaged over CA pairs (4 decimals, OpenSM's from lft_stats.py's
# hop histogram); seconds: fabroute's engine time and
# OpenSM's route_s (engine plus queuing of the LFT MADs), measured in the same run.
set -euo pipefail
out=$(realpath -m "$1")
top=$(cd "$(dirname "$0")/.." && pwd)
topo=${2:-$top/../shared/topologies}
vls=${3:-"1 8"}
tools=${TOOLS:-$top/../shared/tools}
mkdir -p "$out"
if [ -z "${FABROUTE_BIN:-}" ]; then (cd "$top" && cargo build --release -q -p fabroute); fi
bin=${FABROUTE_BIN:-$top/target/release/fabroute}
echo "| fabric | VLs | fabroute max link load | OpenSM max link load | fabroute avg hops | OpenSM avg hops | fabroute max hops | OpenSM max hops | fabroute s | OpenSM s | fabroute verdict | OpenSM verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for net in "$topo"/*.net; do
  name=$(basename "$net" .net)
  for v in $vls; do
    d="$out/$name.nue$v"
    "$bin" --json route "$net" -R nue --max-vls "$v" -o "$d.ours" --summary-only >"$d.ours.json" 2>"$d.ours.log" || true
    extra=(--no-psl)
    [ "$v" != 1 ] && extra=(--psl-max-pairs 300000)
    timeout 900 "$tools/opensm_route.sh" --nue-vls "$v" "${extra[@]}" -t 600 "$net" nue "$d.osm" >"$d.osm.log" 2>&1 || true
    python3 - "$d" "$name" "$v" <<'PY'
import json, os, sys
d, name, v = sys.argv[1:4]
try:
    o = json.load(open(d + ".ours.json"))
    ours = (o["max_link_load"], "%.4f" % o["avg_hops"], o["max_hops"], "%.3f" % o["route_seconds"],
            "deadlock-free" if o["deadlock_free"] and o["unreachable_pairs"] == 0 else "CREDIT_LOOPS_OR_UNREACHABLE")
except Exception as e:
    ours = ("fails",) * 5
try:
    s = json.load(open(os.path.join(d + ".osm", "summary.json")))
    st = json.load(open(os.path.join(d + ".osm", "lft_stats.json")))
    if s.get("engine_used") != "nue":
        theirs = ("falls back to %s" % s.get("engine_used"),) + ("-",) * 4
    else:
        # lft_stats.py's CDG over (channel, VL) with OpenSM's path SLs and SL2VL when known
        acyclic = st.get("cdg_acyclic")
        verdict = {True: "deadlock-free", False: "CREDIT_LOOPS"}.get(acyclic, "?")
        if v != "1" and s.get("psl_distinct_sls") in (None, "NA"):
            verdict = "not judged (no PSL)"
        # the average from the hop histogram (lft_stats.py rounds sw_hops_avg to 4 digits)
        hist = st.get("sw_hops_hist") or {}
        pairs = sum(hist.values())
        avg = sum(int(h) * c for h, c in hist.items()) / pairs if pairs else st["sw_hops_avg"]
        theirs = (st["link_load_max"], "%.4f" % avg, st["sw_hops_max"], s.get("route_s", "?"), verdict)
except Exception:
    theirs = ("no run",) + ("-",) * 4
print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
    name, v, ours[0], theirs[0], ours[1], theirs[1], ours[2], theirs[2], ours[3], theirs[3], ours[4], theirs[4]))
PY
  done
done
