#!/usr/bin/env bash
# Time to repair on a live (ibsim) fabric: OpenSM against `fabroute sm`, same fabric, same
# cable pulled on ibsim's console.
#
#   scripts/bench-live.sh [-R ENGINE] [-l LMC] [-n RUNS] OUTDIR SPEC CABLE [SPEC CABLE ...]
#
# SPEC is a `fabroute gen` spec in quotes ("torus 8x8 hcas=1"), CABLE an ibsim port
# ("S_3_3"[2]). For each fabric and run: OpenSM (`opensm -R ENGINE` under libumad2sim) comes
# up, the cable is unlinked, and its log gives trap received → SUBNET UP (and the unlink →
# SUBNET UP wall time); then `fabroute sm -R ENGINE` with `--repair rftr` and with
# `--repair full` on fresh ibsim instances, whose events give trap received → last block
# confirmed. Both SMs run LMC (`-l`, default: each SM's own default, 0 for OpenSM and 2 for
# fabroute). Prints one Markdown row per fabric (medians over the runs) and writes every log
# under OUTDIR. Needs ibsim-utils, libumad2sim0, opensm; builds fabroute if needed.
set -euo pipefail
engine=updn runs=3 osm_lmc=() fr_lmc=()
while [ $# -gt 0 ]; do
  case "$1" in
    -R) engine="$2"; shift 2 ;;
    -l) osm_lmc=(-l "$2"); fr_lmc=(--lmc "$2"); shift 2 ;;
    -n) runs="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] || { sed -n 2,14p "$0" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
here=$(cd "$(dirname "$0")/.." && pwd)
fr="$here/target/release/fabroute"
[ -x "$fr" ] || (cd "$here" && cargo build --release -q -p fabroute)
preload=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# start_ibsim DIR NET: ibsim with its console on DIR/ctl; sets $sim_pid and fd 3.
start_ibsim() {
  local d=$1 net=$2 sizes
  sizes=$(sed -n 's/^# ibsim needs at least: \(-N [0-9]* -S [0-9]* -P [0-9]*\).*/\1/p' "$net")
  rm -f "$d/ctl"; mkfifo "$d/ctl"; exec 3<>"$d/ctl"
  (cd "$d" && exec ibsim -s $sizes "$net" <&3 > "$d/ibsim.log" 2>&1) &
  sim_pid=$!; pids+=($sim_pid)
  for _ in $(seq 200); do grep -q "simulator ready" "$d/ibsim.log" && return 0; sleep 0.05; done
  echo "ibsim did not start in $d" >&2; exit 4
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# Seconds of an OpenSM log timestamp "Mon DD HH:MM:SS USEC".
osm_s() { awk '{ split($3, t, ":"); printf "%.6f\n", t[1]*3600 + t[2]*60 + t[3] + $4/1e6 }'; }

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "NA" }'; }

echo "| fabric | switches | OpenSM trap → SUBNET UP (ms) | OpenSM unlink → SUBNET UP (ms) | fabroute rftr trap → confirmed (ms) | blocks | SMPs | fabroute full (ms) | blocks | rftr speed-up |"
echo "|---|---|---|---|---|---|---|---|---|---|"
while [ $# -ge 2 ]; do
  spec="$1" cable="$2"; shift 2
  tag=$(echo "$spec" | tr -c 'A-Za-z0-9\n' '_')
  fd="$out/$tag"; mkdir -p "$fd"
  net="$fd/fabric.net"
  $fr gen $spec -o "$net" > /dev/null
  host=$(grep -m1 -E '^(Hca|Ca)' "$net" | sed -E 's/^[A-Za-z]+[[:space:]]+[0-9]+[[:space:]]+"([^"]+)".*/\1/')
  nsw=$(grep -c '^Switch' "$net")
  : > "$fd/osm_trap.txt"; : > "$fd/osm_unlink.txt"; : > "$fd/rftr.txt"; : > "$fd/full.txt"
  for run in $(seq "$runs"); do
    # OpenSM.
    d="$fd/opensm.$run"; rm -rf "$d"; mkdir -p "$d"
    export IBSIM_SOCKNAME="frb$$o$run"
    start_ibsim "$d" "$net"
    printf 'force_log_flush TRUE\n' > "$d/opensm.conf"
    (cd "$d" && SIM_HOST="$host" OSM_CACHE_DIR="$d" LD_PRELOAD=$preload \
      exec opensm -F "$d/opensm.conf" -f "$d/opensm.log" -D 0x07 -R "$engine" "${osm_lmc[@]}" > "$d/opensm.out" 2>&1) &
    osm=$!; pids+=($osm)
    for _ in $(seq 6000); do grep -q -- '-> SUBNET UP' "$d/opensm.log" 2>/dev/null && break; sleep 0.05; done
    # OpenSM may sweep again after its first SUBNET UP: wait until its last sweep has come
    # up and nothing has moved for a second.
    prev=""
    for _ in $(seq 120); do
      cur=$(grep -c -e '-> SUBNET UP' -e 'INITIATING HEAVY SWEEP' "$d/opensm.log" || true)
      last=$(grep -e '-> SUBNET UP' -e 'INITIATING HEAVY SWEEP' "$d/opensm.log" | tail -1)
      [ "$cur" = "$prev" ] && [[ "$last" == *"SUBNET UP"* ]] && break
      prev=$cur; sleep 1
    done
    n0=$(grep -c -- '-> SUBNET UP' "$d/opensm.log")
    t_unlink=$(date +%s.%N)
    unl=$(TZ=UTC date -d "@$t_unlink" '+%H %M %S %N' | awk '{ printf "%.6f\n", $1*3600 + $2*60 + $3 + $4/1e9 }')
    unl_fallback=$unl
    echo "Unlink $cable" >&3
    for _ in $(seq 6000); do [ "$(grep -c -- '-> SUBNET UP' "$d/opensm.log")" -gt "$n0" ] && break; sleep 0.02; done
    up=$(grep -- '-> SUBNET UP' "$d/opensm.log" | sed -n "$((n0 + 1))p" | osm_s)
    trap_t=$( (grep -m1 'Received Generic Notice type:1 num:128' "$d/opensm.log" || true) | osm_s)
    [ -n "$trap_t" ] || { echo "OpenSM got no trap in $d" >&2; trap_t=$unl_fallback; }
    awk -v a="$trap_t" -v b="$up" 'BEGIN { printf "%.3f\n", (b - a) * 1e3 }' >> "$fd/osm_trap.txt"
    awk -v a="$unl" -v b="$up" 'BEGIN { printf "%.3f\n", (b - a) * 1e3 }' >> "$fd/osm_unlink.txt"
    stop $osm; stop $sim_pid; exec 3>&-
    # fabroute, RFTR and full.
    for rep in rftr full; do
      d="$fd/$rep.$run"; rm -rf "$d"; mkdir -p "$d"
      export IBSIM_SOCKNAME="frb$$f$rep$run"
      start_ibsim "$d" "$net"
      (cd "$d" && SIM_HOST="$host" LD_PRELOAD=$preload exec "$fr" sm -R "$engine" "${fr_lmc[@]}" --repair $rep \
        --sweep-interval 0 --max-seconds 900 --exit-after repaired --events "$d/events.jsonl" > "$d/sm.log" 2>&1) &
      smp=$!; pids+=($smp)
      for _ in $(seq 12000); do grep -q subnet_up "$d/events.jsonl" 2>/dev/null && break; sleep 0.05; done
      sleep 0.2
      echo "Unlink $cable" >&3
      for _ in $(seq 15000); do grep -q '"repaired"' "$d/events.jsonl" 2>/dev/null && break; sleep 0.02; done
      python3 - "$d/events.jsonl" >> "$fd/$rep.txt" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["event"] == "repaired":
        print("%.3f %d %d" % (e["seconds"] * 1e3, e["lft_blocks"], e["smps"]))
        break
PY
      wait $smp 2>/dev/null || true; stop $sim_pid; exec 3>&-
    done
  done
  ot=$(median < "$fd/osm_trap.txt"); ou=$(median < "$fd/osm_unlink.txt")
  rt=$(cut -d' ' -f1 "$fd/rftr.txt" | median); rb=$(head -1 "$fd/rftr.txt" | cut -d' ' -f2); rs=$(head -1 "$fd/rftr.txt" | cut -d' ' -f3)
  ft=$(cut -d' ' -f1 "$fd/full.txt" | median); fb=$(head -1 "$fd/full.txt" | cut -d' ' -f2)
  sp=$(awk -v a="$ot" -v b="$rt" 'BEGIN { if (b > 0) printf "%.0f×", a / b; else print "NA" }')
  echo "| $spec, \`Unlink $cable\` | $nsw | $ot | $ou | $rt | $rb | $rs | $ft | $fb | $sp |"
done
