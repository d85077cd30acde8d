#!/usr/bin/env bash
# RFTR at operator scale: single-fault repair time against full reconfiguration (route,
# compare and check), both measured in the same `fabroute fault` run, with the incremental
# check's time and the whole command's peak memory beside them.
#
#   scripts/bench-rftr-scale.sh OUTDIR [FAULTS=8] [FABRICS="k16 k20 k24 t16x16x8 dfp25k"]
#   REPS=3 scripts/bench-rftr-scale.sh ...   # each fault in 3 processes: per-fault medians
#
# One process per run: on a VM the same repair takes a few times longer in some processes
# than in others (docs/benchmarks.md, "Where the whole command's spread comes from"), so a
# figure for a fault is best the median of several runs (REPS, default 1).
#
# Fabrics: 3-level 16/20/24-ary fat trees (4,096 / 8,000 / 13,824 HCAs), a 16x16x8 torus
# with 4 HCAs per switch (8,192), a Dragonfly+ of 25 groups x 32 leaves x 32 HCAs (25,600).
# LMC 0, and LMC 2 where the unicast LIDs allow it. FAULTS inter-switch links spread over
# the fabric, one `fault` run each (`--summary-only`: no table set written).
set -euo pipefail
out=${1:?usage: $0 OUTDIR [FAULTS] [FABRICS]}
k=${2:-8}
fabrics=${3:-"k16 k20 k24 t16x16x8 dfp25k"}
mkdir -p "$out"
cd "$(dirname "$0")/.."
cargo build --release -q -p fabroute
# A copy: a build during the bench must not change the binary half way.
cp target/release/fabroute "$out/fabroute"
fr=$(realpath "$out/fabroute")
. scripts/scale-fabrics.sh
for fab in $fabrics; do
  net="$out/$fab.net"
  scale_fabric "$fr" "$fab" "$net"
  engine=updn
  mapfile -t links < <(python3 - "$net" "$k" <<'EOF'
import sys, re, random
net, k = sys.argv[1], int(sys.argv[2])
cands, sw = [], None
for line in open(net):
    m = re.match(r'^(Switch|Hca|Ca)\s+\d+\s+"([^"]+)"', line)
    if m: sw = m.group(2) if m.group(1) == "Switch" else None; continue
    m = re.match(r'^\[(\d+)\]\s+"([^"]+)"\[(\d+)\]', line)
    if m and sw and not m.group(2).startswith("H"):
        cands.append(f"{sw}/{m.group(1)}")
random.seed(1)
print("\n".join(random.sample(cands, min(k, len(cands)))))
EOF
)
  # Repetitions outermost: a fault's runs are spread over the fabric's whole bench, so a
  # spell of the machine's slow mode (minutes long) does not decide all of them.
  for r in $(seq "${REPS:-1}"); do
    for lmc in 0 2; do
      for l in "${links[@]}"; do
        d="$out/$fab.lmc$lmc.$(echo "$l" | tr '/' '_')"
        [ "$r" -gt 1 ] && d="$d.r$r"
        # resumable: a fault already measured is kept
        grep -q '"rftr"' "$d.json" 2>/dev/null && continue
        rc=0
        /usr/bin/time -f "%M" -o "$d.rss" "$fr" fault "$net" --engine "$engine" --lmc "$lmc" \
            --fail "link:$l" --summary-only --json -o "$d" > "$d.json" 2> "$d.log" || rc=$?
        # exit 3: e.g. LMC 2 beyond the unicast LIDs; no row for it (exit 1: not every pair
        # repaired, measured all the same)
        [ "$rc" = 3 ] && break
      done
    done
  done
done
python3 - "$out" <<'EOF'
import json, sys, glob, statistics as st, os, re
out = sys.argv[1]
rows = {}
# Per fault: the runs of it (REPS), of which the medians of the times count.
runs = {}
for p in sorted(glob.glob(f"{out}/*.lmc*.json")):
    runs.setdefault(re.sub(r"\.r\d+$", "", p[:-5]), []).append(p)
for key, ps in sorted(runs.items()):
    p = ps[0]
    try:
        d = json.load(open(p))
    except Exception:
        continue
    if "rftr" not in d:
        continue
    fab, lmc = os.path.basename(p).split(".")[0:2]
    rss = int(open(p[:-5] + ".rss").read().split()[-1]) / 1024
    s = d["rftr"]["steps"][0]
    # the times of this fault: medians over its runs
    others = []
    for q in ps:
        try:
            others.append(json.load(open(q)))
        except Exception:
            pass
    others = [o for o in others if "rftr" in o]
    rep = lambda k: st.median(o["rftr"]["steps"][0].get(k, 0) for o in others)
    s = dict(s, repair_seconds=rep("repair_seconds"), settle_seconds=rep("settle_seconds"),
             check_seconds=rep("check_seconds"))
    d["full_reconfiguration"]["seconds"] = st.median(o["full_reconfiguration"]["seconds"] for o in others)
    rss = max(int(open(q[:-5] + ".rss").read().split()[-1]) / 1024 for q in ps)
    rows.setdefault((fab, lmc), []).append((s["repair_seconds"] * 1e3, s["check_seconds"] * 1e3,
        d["full_reconfiguration"]["seconds"] * 1e3, s["affected_pairs"], d["rftr"]["lft_entries"],
        rss, s["unsupported_pairs"], s.get("check_prepare_seconds", 0) * 1e3,
        d["base_route_seconds"] * 1e3, d.get("seconds", {}).get("total", float("nan")),
        d.get("seconds", {}).get("RFTR_start", float("nan")),
        s.get("settle_seconds", 0) * 1e3))
print("| fabric | LMC | faults (that moved pairs) | RFTR repair ms, all faults: median / max | RFTR repair ms, faults that moved pairs: median | then bookkeeping for the next fault (settle) ms, median | full reconf. ms (median) | full / RFTR (medians, faults that moved pairs) | affected pairs (median of those) | unsupported (max) | LFT entries (median of those) | check of the repair ms (median) | one-off: base route ms, first whole walk ms | whole command s (median): all, RFTR start | peak RSS MB (max) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (fab, lmc), v in sorted(rows.items()):
    med = lambda i, xs=v: st.median(x[i] for x in xs)
    hit = [x for x in v if x[3] > 0] or v
    ratio = med(2, hit) / med(0, hit) if med(0, hit) > 0 else float("nan")
    print(f"| {fab} | {lmc[3:]} | {len(v)} ({sum(1 for x in v if x[3] > 0)}) | "
          f"{med(0):.2f} / {max(x[0] for x in v):.2f} | {med(0, hit):.2f} | {med(11, hit):.2f} | {med(2):.0f} | "
          f"{ratio:.0f}x | {med(3, hit):.0f} | {max(x[6] for x in v)} | {med(4, hit):.0f} | "
          f"{med(1):.0f} | {med(8):.0f}, {med(7):.0f} | {med(9):.1f}, {med(10):.1f} | "
          f"{max(x[5] for x in v):.0f} |")
EOF
