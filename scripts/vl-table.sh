#!/usr/bin/env bash
# The VL-engine table of docs/vl-engines.md: fabroute's hopvl, dfsssp, lash and updn beside
# OpenSM's dfsssp, lash and nue (8 VLs) on the same fabrics.
#
#   scripts/vl-table.sh OUT_DIR [TOOLS_DIR]
#
# TOOLS_DIR holds the team's reference harness (opensm_route.sh; default ../shared/tools); without
# it only fabroute's columns are filled. Prints the markdown table on stdout; every run's files
# stay in OUT_DIR.
set -euo pipefail
out=$(realpath -m "$1")
top=$(cd "$(dirname "$0")/.." && pwd)
tools=${2:-$top/../shared/tools}
bin=$top/target/release/fabroute
mkdir -p "$out"
[ -x "$bin" ] || (cd "$top" && cargo build --release -q -p fabroute)

# name | generator spec
fabrics=(
  "slimfly_q5|slimfly 5"
  "slimfly_q7|slimfly 7"
  "dragonfly_a4_p2_h2|dragonfly 4 2 2"
  "dragonfly_a6_p3_h3|dragonfly 6 3 3"
  "dragonfly_a8_p4_h4|dragonfly 8 4 4"
  "torus_4x4|torus 4x4 hcas=2"
  "torus_8x8|torus 8x8 hcas=2"
  "hyperx_4x4x4|hyperx 4x4x4 hcas=2"
  "ktree_8_3|ktree 8 3"
)

ours() { # fabric-file engine dir -> "vls sls maxload avghops seconds verdict"
  local net=$1 e=$2 d=$3
  if "$bin" route "$net" -R "$e" -o "$d" --summary-only >"$d.log" 2>&1; then
    python3 - "$d/summary.json" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
vls = str(len(s["vls_used"]))
for n in s["notes"]:
    m = re.search(r"dfsssp: (\d+) layers needed", n)
    if m and m.group(1) != vls:
        vls = "%s_(spread_over_%s)" % (m.group(1), vls)
print(vls, len(s["sls_used"]), s["max_link_load"], "%.3f" % s["avg_hops"],
      "%.3f" % s["route_seconds"], "deadlock-free" if s["deadlock_free"] else "CREDIT_LOOPS")
PY
  else
    echo "fails: $(grep -o 'needed [^)]*available [0-9]*\|need[^;]*' "$d.log" | head -1 | tr ' ' '_')"
  fi
}

theirs() { # fabric-file engine dir -> same columns from OpenSM's run
  local net=$1 e=$2 d=$3
  local extra=()
  [ "$e" = nue ] && extra=(--nue-vls 8)
  timeout 900 "$tools/opensm_route.sh" "${extra[@]}" --psl-max-pairs 2000000 -t 600 "$net" "$e" "$d" >"$d.log" 2>&1 || true
  python3 - "$d" "$e" <<'PY'
import json, os, sys
d, e = sys.argv[1], sys.argv[2]
try:
    s = json.load(open(os.path.join(d, "summary.json")))
except Exception:
    print("no run"); sys.exit()
if s.get("engine_used") != e:
    print("fails: %s" % s.get("result", "?").replace(" ", "_")); sys.exit()
st = {}
try:
    st = json.load(open(os.path.join(d, "lft_stats.json")))
except Exception:
    pass
vls = {"lash": s.get("lash_lanes"), "dfsssp": s.get("dfsssp_vls")}.get(e) or s.get("ibdmchk_vls", "?")
sls = s.get("psl_distinct_sls", "?")
if e == "dfsssp" and sls not in ("NA", "?") and sls != vls:
    vls = "%s_(spread_over_%s)" % (vls, sls)
verdict = {"no_credit_loops": "deadlock-free", "credit_loops": "CREDIT_LOOPS"}.get(s.get("ibdmchk"), s.get("ibdmchk"))
if sls == "NA":
    verdict = "not_judged_(no_PSL)"
print(vls, sls, st.get("link_load_max", "?"),
      "%.3f" % st["sw_hops_avg"] if "sw_hops_avg" in st else "?", s.get("route_s", "?"), verdict)
PY
}

echo "| fabric | switches / CAs | engine | VLs | SLs | max link load | avg hops | route s | deadlock |"
echo "|---|---|---|---|---|---|---|---|---|"
for entry in "${fabrics[@]}"; do
  name=${entry%%|*}
  spec=${entry#*|}
  net=$out/$name.net
  # shellcheck disable=SC2086
  "$bin" gen $spec -o "$net" 2>/dev/null
  size=$("$bin" info "$net" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print("%d / %d" % (s["switches"], s["cas"]))')
  for e in hopvl dfsssp lash updn; do
    read -r a b c d x y <<<"$(ours "$net" "$e" "$out/$name.ours.$e")"
    echo "| $name | $size | fabroute $e | ${a//_/ } | ${b:-} | ${c:-} | ${d:-} | ${x:-} | ${y//_/ } |"
  done
  if [ -x "$tools/opensm_route.sh" ]; then
    for e in dfsssp lash nue; do
      read -r a b c d x y <<<"$(theirs "$net" "$e" "$out/$name.osm.$e")"
      echo "| $name | $size | OpenSM $e | ${a//_/ } | ${b:-} | ${c:-} | ${d:-} | ${x:-} | ${y//_/ } |"
    done
  fi
done
