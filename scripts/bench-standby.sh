#!/usr/bin/env bash
# A fabroute SM taking over from another on a live (ibsim) fabric: master at the first HCA,
# standby at the last, the master killed once the standby polls it.
#
#   scripts/bench-standby.sh [-R ENGINE] [-l LMC] [-p POLL_S] [-m fabroute|opensm] OUTDIR NET
#
# NET is an ibsim net file (`fabroute gen … -o NET`). The master is `fabroute sm` (priority
# 5) or OpenSM (`-m opensm`, priority 10); the standby is `fabroute sm` (priority 1,
# `--poll-interval POLL_S`, default 1). Prints the wall time from the kill to the
# `take_over` event and that event (read-back SMPs and time, blocks written, check), and
# the standby's peak RSS. Logs under OUTDIR. Needs ibsim-utils, libumad2sim0 (and opensm
# for `-m opensm`); builds fabroute if needed.
set -euo pipefail
engine=updn lmc=0 poll=1 master=fabroute
while [ $# -gt 0 ]; do
  case "$1" in
    -R) engine="$2"; shift 2 ;;
    -l) lmc="$2"; shift 2 ;;
    -p) poll="$2"; shift 2 ;;
    -m) master="$2"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
net=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
fr="${FABROUTE_BIN:-$here/target/release/fabroute}"
[ -x "$fr" ] || (cd "$here" && cargo build --release -q -p fabroute)
preload=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
sizes=$(sed -n 's/^# ibsim needs at least: \(-N [0-9]* -S [0-9]* -P [0-9]*\).*/\1/p' "$net")
hcas=$(grep -E '^(Hca|Ca)' "$net" | sed -E 's/^[A-Za-z]+[[:space:]]+[0-9]+[[:space:]]+"([^"]+)".*/\1/')
first=$(echo "$hcas" | head -1) last=$(echo "$hcas" | tail -1)
export IBSIM_SOCKNAME="frsb$$"
rm -rf "$out"/{m,s,ctl}; mkdir -p "$out/m" "$out/s"
mkfifo "$out/ctl"; exec 3<>"$out/ctl"
(cd "$out" && exec ibsim -s $sizes "$net" <&3 > "$out/ibsim.log" 2>&1) & sim=$!
trap 'kill $sim 2>/dev/null || true; kill ${mpid:-} ${spid:-} 2>/dev/null || true' EXIT
for _ in $(seq 400); do grep -q "simulator ready" "$out/ibsim.log" && break; sleep 0.05; done
if [ "$master" = opensm ]; then
  printf 'force_log_flush TRUE\n' > "$out/m/opensm.conf"
  (cd "$out/m" && SIM_HOST="$first" LD_PRELOAD=$preload exec opensm -F "$out/m/opensm.conf" \
    -f "$out/m/opensm.log" -R "$engine" -l "$lmc" -p 10 > "$out/m/out" 2>&1) & mpid=$!
  for _ in $(seq 12000); do grep -q -- '-> SUBNET UP' "$out/m/opensm.log" 2>/dev/null && break; sleep 0.05; done
else
  (cd "$out/m" && SIM_HOST="$first" LD_PRELOAD=$preload exec "$fr" sm -R "$engine" --lmc "$lmc" \
    --priority 5 --sweep-interval 0 --events "$out/m/ev.jsonl" > "$out/m/log" 2>&1) & mpid=$!
  for _ in $(seq 12000); do grep -q subnet_up "$out/m/ev.jsonl" 2>/dev/null && break; sleep 0.05; done
fi
(cd "$out/s" && SIM_HOST="$last" LD_PRELOAD=$preload exec /usr/bin/time -f %M -o "$out/s/rss" \
  "$fr" sm -R "$engine" --lmc "$lmc" --priority 1 --poll-interval "$poll" --sweep-interval 0 \
  --exit-after take_over --events "$out/s/ev.jsonl" > "$out/s/log" 2>&1) & spid=$!
for _ in $(seq 12000); do grep -q '"standby"' "$out/s/ev.jsonl" 2>/dev/null && break; sleep 0.05; done
sleep "$poll"
t0=$(date +%s.%N)
kill "$mpid"; wait "$mpid" 2>/dev/null || true
for _ in $(seq 60000); do grep -q take_over "$out/s/ev.jsonl" 2>/dev/null && break; sleep 0.01; done
t1=$(date +%s.%N)
wait "$spid" || true
echo "master $master, $(basename "$net"), LMC $lmc, poll ${poll} s: take_over $(echo "$t1 - $t0" | bc) s after the kill; standby peak RSS $(cat "$out/s/rss") KB"
grep take_over "$out/s/ev.jsonl"
