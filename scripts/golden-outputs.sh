#!/usr/bin/env bash
# Writes a fixed set of fabroute outputs (route with every engine on three fabrics, check and
# stats on OpenSM's tables, fault with three fault sequences, two seeded sweeps) into OUT, with
# timings removed from the JSON, so that two builds can be compared with `diff -r`:
#
#   scripts/golden-outputs.sh OLD_BINARY /tmp/golden-old [SHARED_DIR]
#   scripts/golden-outputs.sh target/release/fabroute /tmp/golden-new [SHARED_DIR]
#   diff -r /tmp/golden-old /tmp/golden-new && echo identical
#
# Used to show that a refactoring changes no behaviour. SHARED_DIR (default ../shared) holds
# OpenSM's reference runs; without it the OpenSM part is left out.
set -euo pipefail
bin=$(realpath "$1")
out=$2
top=$(cd "$(dirname "$0")/.." && pwd)
shared=${3:-$top/../shared}
rm -rf "$out"
mkdir -p "$out"
cd "$top"

# Removes keys that hold wall-clock times (anything ending in "seconds" or named "threads").
strip_times() {
  python3 - "$@" <<'PY'
import json, sys, re
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()
                if not (k.endswith("seconds") or k in ("threads", "wall_ms", "elapsed"))}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
for path in sys.argv[1:]:
    text = open(path).read()
    if path.endswith(".jsonl"):
        lines = [json.dumps(clean(json.loads(l)), sort_keys=True) for l in text.splitlines() if l.strip()]
        open(path, "w").write("\n".join(lines) + "\n")
    else:
        try:
            v = json.loads(text)
        except ValueError:
            continue
        open(path, "w").write(json.dumps(clean(v), sort_keys=True, indent=1) + "\n")
PY
}

# Runs a command, keeping its exit status and its output with times masked.
run() {
  local name=$1
  shift
  set +e
  "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"
  echo $? >"$out/$name.rc"
  set -e
  # Shown only when the check prepared for at least 0.5 ms: a timing, not a behaviour.
  sed -i -E -e "s#$out#<out>#g" -e 's/[0-9]+(\.[0-9]+)? ?(s|ms|µs|us)\b/<t>/g' -e 's/, <t> before the repair//g' "$out/$name.stdout" "$out/$name.stderr"
}

fabrics="examples/torus2d_4x4_h2.net examples/ktree_k4_n3.net examples/mesh2d_4x4_h2.net"
for fab in $fabrics; do
  b=$(basename "$fab" .net)
  for e in minhop updn dnup dor ftree sssp; do
    run "route-$b-$e" "$bin" route "$fab" -R "$e" -o "$out/route-$b-$e" --threads 2
  done
  run "route-$b-updn-lmc2" "$bin" route "$fab" -R updn --lmc 2 -o "$out/route-$b-updn-lmc2"
done
run route-ktree-ftree-roots "$bin" route examples/ktree_k4_n3.net -R ftree -a examples/ktree_k4_n3.net.roots -o "$out/route-ktree-ftree-roots"

if [ -d "$shared/opensm-runs" ]; then
  for d in "$shared"/opensm-runs/*/; do
    b=$(basename "$d")
    extra=()
    [ -s "$d/opensm-sl2vl.dump" ] && extra+=(--sl2vl "$d/opensm-sl2vl.dump")
    [ -s "$d/opensm-path-sl.psl" ] && extra+=(--psl "$d/opensm-path-sl.psl")
    run "check-$b" "$bin" check "$d/opensm-subnet.lst" --lfts "$d/opensm-lfts.dump" "${extra[@]}" --json
    run "stats-$b" "$bin" stats "$d/opensm-subnet.lst" --lfts "$d/opensm-lfts.dump" "${extra[@]}" --json
  done
fi

run fault-torus-1 "$bin" fault examples/torus2d_4x4_h2.net --engine updn --fail link:S_0_0/3 -o "$out/fault-torus-1"
run fault-torus-3 "$bin" fault examples/torus2d_4x4_h2.net --engine updn --lmc 3 --vls 3 \
  --fail link:S_0_0/3 --fail link:S_1_1/4 --fail switch:S_2_2 -o "$out/fault-torus-3"
run fault-mesh-dor "$bin" fault examples/mesh2d_4x4_h2.net --engine dor --fail link:S_1_1/3 --fail link:S_2_1/4 -o "$out/fault-mesh-dor"
run sweep-torus "$bin" sweep examples/torus2d_4x4_h2.net --faults 3 --samples 300 --seed 7 -o "$out/sweep-torus.jsonl"
run sweep-ktree "$bin" sweep examples/ktree_k4_n3.net --faults 2 --samples 100 --seed 3 --threads 1 -o "$out/sweep-ktree.jsonl"

find "$out" -name '*.json' -o -name '*.jsonl' -o -name '*.stdout' | sort | while read -r f; do strip_times "$f"; done
echo "wrote $(find "$out" -type f | wc -l) files to $out"
