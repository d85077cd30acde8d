#!/usr/bin/env bash
# Fault tolerance at operator scale: `fabroute sweep --check incremental` over the issue 39
# fabrics, one row per (fabric, LMC, fault count), with wall time and peak memory.
#
#   scripts/rftr-scale-table.sh OUTDIR SAMPLES "FABRIC:LMC:FAULTS,FAULTS ..." [SEED=1]
#
# FABRIC is one of k16 k20 k24 t16x16x8 dfp25k (generated as scripts/bench-rftr-scale.sh
# does), e.g. "dfp25k:0:1,2,4,8 k24:1:1,2,4". Each row: SAMPLES seeded scenarios of FAULTS
# random inter-switch link faults applied in sequence, RFTR checked after every fault by
# the incremental tracker, full reconfiguration once per scenario. Prints a Markdown table;
# keeps every JSONL, summary and log in OUTDIR. FABROUTE_BIN=path uses that binary.
set -euo pipefail
out=${1:?usage: $0 OUTDIR SAMPLES "FABRIC:LMC:FAULTS,... ..." [SEED]}
samples=${2:?samples}; rows=${3:?rows}; seed=${4:-1}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${FABROUTE_BIN:-}" ]; then (cd "$here" && cargo build --release -q -p fabroute); fi
fr=${FABROUTE_BIN:-$here/target/release/fabroute}
gen() { $fr gen "$@" --no-companions >/dev/null 2>&1; }
echo "| fabric | LMC | faults | scenarios | % supported (RFTR) | max SLs | max virtual LIDs/dest | max transitions | RFTR deadlock-free | full reconf. supported / deadlock-free | LFT blocks, mean: RFTR / full | pairs changed by full reconf. (mean) | wall s | peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for row in $rows; do
  IFS=: read -r name lmc counts <<< "$row"
  net="$out/$name.net"
  if [ ! -s "$net" ]; then
    case "$name" in
      k16) gen ktree 16 3 -o "$net" ;;
      k20) gen ktree 20 3 -o "$net" ;;
      k24) gen ktree 24 3 -o "$net" ;;
      t16x16x8) gen torus 16x16x8 hcas=4 -o "$net" ;;
      dfp25k) gen dragonflyplus groups=25 leaves=32 spines=32 hosts=32 global=32 -o "$net" ;;
      *) echo "unknown fabric $name" >&2; exit 2 ;;
    esac
  fi
  for n in ${counts//,/ }; do
    f="$out/${name}_lmc${lmc}_n$n.jsonl"
    /usr/bin/time -f "%e %M" -o "$f.time" "$fr" sweep "$net" --engine updn --lmc "$lmc" \
      --faults "$n" --samples "$samples" --seed "$seed" --check incremental -q -o "$f" \
      > "$f.log" 2>&1
    python3 - "$f.summary.json" "$f.time" "$name" "$lmc" "$n" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); wall, kb = open(sys.argv[2]).read().split()[-2:]
name, lmc, n = sys.argv[3:6]; x = s["summary"]; k = x["scenarios"]
full = f'{x["full_supported"]}/{x["full_deadlock_free"]} of {x["full_scenarios"]}' if x["full_scenarios"] else "-"
blocks = f'{x["mean_lft_blocks"]:.0f} / {x["full_mean_lft_blocks"]:.0f}'
print(f'| {name} | {lmc} | {n} | {k} (+{s["skipped_disconnected"]} disconnected) | {x["supported_pct"]:.1f} | {x["max_sls"]} | {x["max_virtual_lids"]} | {x["max_transitions"]} | {x["deadlock_free"]}/{k} | {full} | {blocks} | {x["full_mean_changed_pairs"]:.0f} | {float(wall):.0f} | {int(kb) // 1024} |')
EOF
  done
done
