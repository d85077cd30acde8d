#!/usr/bin/env bash
# Engine time as a user sees it on the small real dumps: one `fabroute route --summary-only`
# process per run (cold: nothing warmed but the worker pool, built before any work), the
# median and the maximum of RUNS runs of `route_seconds` (the engine alone) per engine.
#   scripts/bench-small.sh [RUNS]      (default 9)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
cargo build --release -q -p fabroute
fr=target/release/fabroute
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
engines="minhop updn dnup dor ftree sssp dfsssp lash hopvl"
printf '| dump | switches |'; for e in $engines; do printf ' %s |' "$e"; done; echo
printf '|---|---|'; for e in $engines; do printf -- '---|'; done; echo
for f in switchib_edr_2level_6sw_96hca tartu_sx6036_fdr_8sw_144hca x5_psmn_voltaire4036_qdr_ddr_11sw_89hca; do
  sw=$($fr info tests/data/real/$f.ibnd --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['switches'])")
  printf '| %s | %s |' "$f" "$sw"
  for e in $engines; do
    us=$(for i in $(seq "$runs"); do
      $fr route tests/data/real/$f.ibnd -R $e --summary-only -o "$tmp/r" --json 2>/dev/null |
        python3 -c "import json,sys; print(round(json.load(sys.stdin)['route_seconds']*1e6))"
    done | sort -n | awk '{v[NR]=$1} END {printf "%d (max %d)", v[int((NR+1)/2)], v[NR]}')
    printf ' %s |' "$us"
  done
  echo
done
echo
echo "µs: median (and maximum) of $runs processes; load average $(cut -d' ' -f1 /proc/loadavg) when done"
