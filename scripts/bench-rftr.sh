#!/usr/bin/env bash
# Repair cost of RFTR against full reconfiguration, per single inter-switch link fault:
# repair time, pairs whose path changed, LFT entries/blocks and SL2VL entries to push.
# Both are measured in the same `fabroute fault` run, so each ratio comes from one run.
#
#   scripts/bench-rftr.sh OUTDIR [FAULTS_PER_FABRIC=8]
set -euo pipefail
out=${1:?usage: $0 OUTDIR [FAULTS_PER_FABRIC]}
k=${2:-8}
mkdir -p "$out"
cargo build --release -q -p fabroute
fr=target/release/fabroute
gen() { $fr gen "$@" --no-companions 2>/dev/null; }
gen torus 8x8 hcas=2 -o "$out/torus8x8.net"
gen torus 16x16 hcas=2 -o "$out/torus16x16.net"
gen ktree 8 3 -o "$out/ktree8_3.net"
echo "| fabric | faults | RFTR repair ms (mean) | full reconf. ms (mean) | time ratio | pairs changed RFTR / full | LFT entries RFTR / full | LFT blocks RFTR / full | SL2VL entries RFTR / full |"
echo "|---|---|---|---|---|---|---|---|---|"
for fab in torus8x8 torus16x16 ktree8_3; do
  net="$out/$fab.net"
  # K inter-switch links spread over the fabric: every (n/K)-th switch-switch port line.
  mapfile -t links < <(python3 - "$net" "$k" <<'EOF'
import sys, re
net, k = sys.argv[1], int(sys.argv[2])
cands, sw = [], None
for line in open(net):
    m = re.match(r'^Switch\s+\d+\s+"([^"]+)"', line)
    if m: sw = m.group(1); continue
    m = re.match(r'^\[(\d+)\]\s+"([^"]+)"\[(\d+)\]', line)
    if m and sw and not m.group(2).startswith("H"):
        cands.append(f"{sw}/{m.group(1)}")
step = max(1, len(cands) // k)
print("\n".join(cands[::step][:k]))
EOF
)
  for l in "${links[@]}"; do
    d="$out/$fab.$(echo "$l" | tr '/' '_')"
    $fr fault "$net" --engine updn --lmc 2 --vls 2 --fail "link:$l" -o "$d" > "$d.log" 2>&1 || true
  done
  python3 - "$out" "$fab" <<'EOF'
import json, sys, glob
out, fab = sys.argv[1], sys.argv[2]
rows = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/{fab}.*/summary.json"))]
n = len(rows)
mean = lambda xs: sum(xs) / len(xs) if xs else 0
r = [x["rftr"] for x in rows]; f = [x["full_reconfiguration"] for x in rows]
rt, ft = mean([x["repair_seconds"] for x in r]) * 1e3, mean([x["seconds"] for x in f]) * 1e3
ratio = lambda a, b: f"{mean(a):.0f} / {mean(b):.0f} ({mean(b)/mean(a):.1f}x fewer)" if mean(a) else f"{mean(a):.0f} / {mean(b):.0f}"
print(f"| {fab} | {n} | {rt:.3f} | {ft:.3f} | full/RFTR = {ft/rt:.2f} | "
      f"{ratio([x['affected_pairs'] for x in r], [x['changed_pairs'] for x in f])} | "
      f"{ratio([x['lft_entries'] for x in r], [x['lft_entries'] for x in f])} | "
      f"{ratio([x['lft_blocks'] for x in r], [x['lft_blocks'] for x in f])} | "
      f"{mean([x['sl2vl_entries'] for x in r]):.0f} / 0 |")
EOF
done
