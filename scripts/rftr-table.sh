#!/usr/bin/env bash
# The RFTR fault-tolerance table: tori with 2 HCAs per switch, Up*/Down* base, 2 VLs,
# n = 1..MAXN link faults applied in sequence; exhaustive where the space is at most EXH
# scenarios, otherwise SAMPLES seeded samples. Prints a markdown table; keeps the JSONL.
# ENGINE=name sets another base (e.g. torus-2QoS, nue), VLS the VLs in all (default 2) and
# REPAIR_VLS the VLs kept for repaired paths over a VL base (e.g. ENGINE=nue VLS=3
# REPAIR_VLS=2: nue on 1 VL, 2 extra VLs).
#
#   scripts/rftr-table.sh OUTDIR [MAXN=8] [EXH=10000000] [SAMPLES=100000] [TORI="4x4 8x8 3x3x3 4x4x4"]
#
# FABROUTE_BIN=path uses that binary instead of building target/release/fabroute; EXTRA
# passes more `fabroute sweep` options (e.g. EXTRA=--virtual-lids-only).
set -euo pipefail
out=${1:?usage: $0 OUTDIR [MAXN] [EXH] [SAMPLES] [TORI]}
maxn=${2:-8}; exh=${3:-10000000}; samples=${4:-100000}; tori=${5:-"4x4 8x8 3x3x3 4x4x4"}
mkdir -p "$out"
if [ -z "${FABROUTE_BIN:-}" ]; then cargo build --release -q -p fabroute; fi
fr=${FABROUTE_BIN:-target/release/fabroute}
echo "| torus | n | scenarios | mode | % supported (RFTR) | max SLs | max virtual LIDs/dest | max transitions | RFTR deadlock-free | full reconf. supported | full reconf. deadlock-free | mean pairs changed (full) | wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for t in $tori; do
  net="$out/torus_$t.net"
  $fr gen torus "$t" hcas=2 -o "$net" 2>/dev/null
  links=$($fr info "$net" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["switch_links"])')
  for n in $(seq 1 "$maxn"); do
    space=$(python3 -c "import math; print(math.comb($links, $n))")
    if [ "$space" -le "$exh" ]; then mode=(--exhaustive); m=exhaustive; else mode=(--samples "$samples" --seed 1); m="sampled (seed 1)"; fi
    f="$out/torus_${t}_${ENGINE:-updn}_n$n.jsonl"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    rv=(); [ -n "${REPAIR_VLS:-}" ] && rv=(--repair-vls "$REPAIR_VLS")
    $fr sweep "$net" --engine "${ENGINE:-updn}" --vls "${VLS:-2}" "${rv[@]}" --lmc 2 --faults "$n" "${mode[@]}" ${EXTRA:-} -o "$f" > "$f.log" 2>&1
    wall=$(python3 -c "import time; print(f'{time.time() - $t0:.0f}')")
    python3 - "$f.summary.json" "$t" "$n" "$m" "$wall" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); t, n, m, wall = sys.argv[2:6]; x = s["summary"]
full = f'{x["full_supported"]}/{x["full_scenarios"]}' if x["full_scenarios"] else "-"
fdf = f'{x["full_deadlock_free"]}/{x["full_scenarios"]}' if x["full_scenarios"] else "-"
print(f'| {t} | {n} | {x["scenarios"]} (+{s["skipped_disconnected"]} disconnected) | {m} | {x["supported_pct"]:.3f} | {x["max_sls"]} | {x["max_virtual_lids"]} | {x["max_transitions"]} | {x["deadlock_free"]}/{x["scenarios"]} | {full} | {fdf} | {x["full_mean_changed_pairs"]:.0f} | {wall} |')
EOF
  done
done
