#!/usr/bin/env bash
# fabroute as the subnet manager of an ibsim fabric, end to end, in one command:
#
#   scripts/live-demo.sh [NET] [CABLE] [ENGINE]
#
# Starts ibsim on NET (default: the shipped examples/torus2d_4x4_h2.net) with its console on
# a FIFO, runs `fabroute sm -R ENGINE` (default updn) under libumad2sim on the first HCA,
# pulls CABLE (default "S_1_1"[3]) on the console, waits for the repair, then reads the
# tables back through a second ibsim client (`dump_lfts`), compares them with what the SM
# wrote and checks them with `fabroute check`. Everything lands in out/live/. Needs
# ibsim-utils, libumad2sim0 and infiniband-diags (scripts/install-test-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
net=$(readlink -f "${1:-$here/examples/torus2d_4x4_h2.net}")
cable=${2:-'"S_1_1"[3]'}
engine=${3:-updn}
fr="$here/target/release/fabroute"
[ -x "$fr" ] || (cd "$here" && . scripts/ensure-rust.sh && cargo build --release -q -p fabroute)
preload=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
for t in ibsim dump_lfts; do command -v $t >/dev/null || { echo "$t is not installed (scripts/install-test-deps.sh)" >&2; exit 3; }; done
[ -f "$preload" ] || { echo "libumad2sim0 is not installed (scripts/install-test-deps.sh)" >&2; exit 3; }
out="$here/out/live"; rm -rf "$out"; mkdir -p "$out"; cd "$out"
export IBSIM_SOCKNAME="frdemo$$"
host=$(grep -m1 -E '^(Hca|Ca)' "$net" | sed -E 's/^[A-Za-z]+[[:space:]]+[0-9]+[[:space:]]+"([^"]+)".*/\1/')
other=$(grep -E '^(Hca|Ca)' "$net" | sed -n 2p | sed -E 's/^[A-Za-z]+[[:space:]]+[0-9]+[[:space:]]+"([^"]+)".*/\1/')
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
mkfifo console; exec 3<>console
sizes=$(sed -n 's/^# ibsim needs at least: \(-N [0-9]* -S [0-9]* -P [0-9]*\).*/\1/p' "$net")
ibsim -s $sizes "$net" <&3 > ibsim.log 2>&1 & pids+=($!)
for _ in $(seq 100); do grep -q "simulator ready" ibsim.log && break; sleep 0.05; done
SIM_HOST="$host" LD_PRELOAD=$preload "$fr" sm -R "$engine" --exit-after repaired --max-seconds 60 \
  --events events.jsonl -o tables & sm=$!; pids+=($sm)
for _ in $(seq 600); do grep -q subnet_up events.jsonl 2>/dev/null && break; sleep 0.05; done
echo "== pulling $cable"
echo "Unlink $cable" >&3
wait $sm
echo "== reading the tables back through a second client ($other) and checking them"
SIM_HOST="$other" LD_PRELOAD=$preload dump_lfts > readback.dump 2> dump_lfts.err
"$fr" diff --lmc 2 --fabric tables/opensm-subnet.lst readback.dump tables/opensm-lfts.dump | tail -1
"$fr" check tables/opensm-subnet.lst --lfts readback.dump --sl2vl tables/opensm-sl2vl.dump \
  --psl tables/opensm-path-sl.psl --lmc 2 | tail -2
echo "events: $out/events.jsonl, tables: $out/tables/"
