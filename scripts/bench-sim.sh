#!/usr/bin/env bash
# Simulator speed and validation against caminos (a cycle-driven Rust interconnect simulator,
# `cargo install caminos --locked`), side by side in one run, one core each:
#
#  S1  8x8 torus, 2 hosts per switch, uniform traffic at load 0.5, 64-byte packets, 2 VLs/VCs
#      with 1 KiB (16-packet) input and output buffers, DOR, 1 ms simulated:
#      fabroute: `-R dor --dateline` (the dateline on VL 1); caminos: DOR, 2 VCs, bubble flow
#      control, random VC choice (its torus default). 1 ms = 62,500 caminos cycles (a cycle
#      moves one 4-byte phit: 16 ns at 1X SDR; a packet is 16 phits).
#  S2  saturation side by side where both can run the same routing with one VL/VC: an 8x8
#      mesh, 2 hosts per switch, XY dimension-order routing (fabroute `-R dor`, caminos
#      `DOR`), 1 VL/VC, the same buffers and packets, loads 0.2, 0.5 and 1.0.
#  S3  the 5,832-host 18-ary 3-tree (ftree), uniform at 0.5, 1 ms simulated, fabroute only.
#  S4  saturation side by side on a torus with several VLs: a 7x7 torus (odd, so dimension
#      order has no tie between the two ways round a ring), 2 hosts per switch, DOR with
#      hop-incremented VLs (fabroute `-R dor --hop-vls`, 6 VLs; caminos `Hops` policy, 7 VCs),
#      the same buffers and packets, loads 0.3, 0.6, 0.8; fabroute with crossbar speed-up 1
#      and 2 (caminos lets every VC of an input cross at once).
#
# Prints a Markdown table; with --write, replaces the simulator section of docs/benchmarks.md.
# CAMINOS=path/to/caminos overrides the binary (default: caminos on PATH, then
# /work/caminos-root/bin/caminos).
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
[ "${1:-}" = "--write" ] && write=1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p fabroute
FR="$CARGO_TARGET_DIR/release/fabroute"
CAM=${CAMINOS:-$(command -v caminos || echo /work/caminos-root/bin/caminos)}
[ -x "$CAM" ] || { echo "bench-sim: no caminos binary (cargo install caminos --locked)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$FR" gen torus 8x8 hcas=2 -o "$work/t8.net" 2>/dev/null
"$FR" gen mesh 8x8 hcas=2 -o "$work/m8.net" 2>/dev/null
"$FR" gen ktree 18 3 -o "$work/k18.net" 2>/dev/null
"$FR" gen torus 7x7 hcas=2 -o "$work/t7.net" 2>/dev/null

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# fabroute: one run on one thread; prints "delivered wall accepted".
fab() {
  local out=$work/fab-$RANDOM
  "$FR" --threads 1 sim "$@" --json -o "$out" >/dev/null || true
  json "$out/summary.json" "f\"{d['packets_delivered']} {d['wall_seconds']:.3f} {d['accepted']:.3f} {d['packet_hops']}\""
}

# caminos: one run; args: VCs, VC policies, load, bubble, topology; prints "delivered wall
# accepted".
cam() {
  local vcs=$1 pol=$2 load=$3 bubble=$4 topo=${5:-Torus} side=${6:-8} dir=$work/cam-$RANDOM
  local servers=$((side * side * 2))
  mkdir -p "$dir"
  cat >"$dir/main.cfg" <<EOF
Configuration
{
	random_seed: 42,
	warmup: 0,
	measured: 62500,
	topology: $topo { sides: [$side,$side], servers_per_router: 2 },
	traffic: HomogeneousTraffic
	{
		pattern: Uniform { legend_name: "uniform" },
		servers: $servers,
		load: $load,
		message_size: 16,
	},
	maximum_packet_size: 16,
	router: Basic
	{
		virtual_channels: $vcs,
		virtual_channel_policies: [ $pol ],
		delay: 0,
		buffer_size: 256,
		bubble: $bubble,
		flit_size: 16,
		intransit_priority: false,
		allow_request_busy_port: true,
		output_prioritize_lowest_label: false,
		output_buffer_size: 256,
	},
	routing: DOR { order: [0,1], legend_name: "xy-DOR" },
	link_classes: [ LinkClass { delay: 1 }, LinkClass { delay: 1 }, LinkClass { delay: 1 }, LinkClass { delay: 1 } ],
}
EOF
  echo '[ CSV { fields: [=result.accepted_load], filename: "r.csv" } ]' >"$dir/main.od"
  local t0 t1
  t0=$(date +%s.%N)
  "$CAM" --action=local "$dir" >"$dir/log" 2>&1
  t1=$(date +%s.%N)
  python3 - "$dir/runs/run0/local.result" "$t0" "$t1" "$servers" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
acc = float(re.search(r"accepted_load:\s*([0-9.eE+-]+)", text).group(1))
cycles = int(re.search(r"cycle:\s*([0-9]+)", text).group(1))
wall = float(sys.argv[3]) - float(sys.argv[2])
# accepted_load is phits per cycle per server; a packet is 16 phits.
print(f"{round(acc * int(sys.argv[4]) * cycles / 16)} {wall:.3f} {acc:.3f}")
EOF
}

rate() { python3 -c "import sys; print(f'{int(sys.argv[1]) / float(sys.argv[2]):,.0f}')" "$1" "$2"; }

common=(--size 64 --buffer 1024 --time 1ms)
read -r fd fw fa fh < <(fab "$work/t8.net" -R dor --dateline --load 0.5 "${common[@]}")
read -r cd cw ca < <(cam 2 "EnforceFlowControl, Random" 0.5 true)
ratio=$(python3 -c "print(f'{($fd/$fw)/($cd/$cw):.1f}')")
read -r kd kw ka kh < <(fab "$work/k18.net" -R ftree --load 0.5 --time 1ms)

sat_rows=""
for load in 0.2 0.5 1.0; do
  read -r hd hw ha hh < <(fab "$work/m8.net" -R dor --load "$load" "${common[@]}")
  read -r xd xw xa < <(cam 1 "EnforceFlowControl" "$load" false Mesh)
  sat_rows+="| $load | $ha | $xa | $(python3 -c "print(f'{($ha-$xa)/$xa*100:+.0f} %')") |"$'\n'
done

hop_rows=""
for load in 0.3 0.6 0.8; do
  read -r _ _ h1 _ < <(fab "$work/t7.net" -R dor --hop-vls --load "$load" "${common[@]}")
  read -r _ _ h2 _ < <(fab "$work/t7.net" -R dor --hop-vls --speedup 2 --load "$load" "${common[@]}")
  read -r _ _ hc < <(cam 7 "EnforceFlowControl, Hops" "$load" false Torus 7)
  hop_rows+="| $load | $h1 | $h2 | $hc | $(python3 -c "print(f'{($h2-$hc)/$hc*100:+.0f} %')") |"$'\n'
done

machine="$(nproc) cores, $(uname -m), load average $(cut -d' ' -f1 /proc/loadavg) when done"
table=$(cat <<EOF
## Packet-level simulator (\`fabroute sim\`, \`crates/sim\`) against caminos

Command: \`scripts/bench-sim.sh\` (release build, one thread each; caminos 0.6.3 from
\`cargo install caminos --locked\`). Machine: $machine. Wall times include setup (fabroute
also routes the tables).

**S1: 8x8 torus, 128 hosts, uniform 0.5, 64-byte packets, 2 VLs/VCs, 1 KiB buffers in and out,
1 ms simulated** (caminos: 62,500 cycles of one 4-byte phit).

| simulator | delivered packets | wall (s) | delivered packets / s | accepted |
|---|---:|---:|---:|---:|
| fabroute (\`-R dor --dateline\`) | $fd | $fw | $(rate "$fd" "$fw") | $fa |
| caminos (DOR, bubble, random VC) | $cd | $cw | $(rate "$cd" "$cw") | $ca |

fabroute is **${ratio}x** caminos in delivered packets per wall-clock second per core
($fh packet-hops in fabroute's run).

**S2: saturation side by side, 8x8 mesh, 2 hosts per switch, XY DOR, 1 VL/VC**, the same
buffers and packets (fabroute \`-R dor\`; caminos \`DOR\`, 1 VC). Accepted load per host:

| offered | fabroute | caminos | difference |
|---:|---:|---:|---:|
$sat_rows
**S3: 18-ary 3-tree, 5,832 hosts, ftree, uniform 0.5, 1 ms simulated**: $kd packets delivered,
$kh packet-hops, **$kw s** wall on one core (accepted $ka).

**S4: saturation side by side with several VLs, 7x7 torus, 2 hosts per switch, DOR,
hop-incremented VLs** (fabroute \`-R dor --hop-vls\`, 6 VLs; caminos \`DOR\` with the \`Hops\`
VC policy, 7 VCs; the same buffers and packets; the bound of the most loaded link is
97 / 168 = 0.577). Accepted load per host:

| offered | fabroute, speed-up 1 | fabroute, speed-up 2 | caminos | speed-up 2 against caminos |
|---:|---:|---:|---:|---:|
$hop_rows
EOF
)
echo "$table"
if [ $write = 1 ]; then
  python3 - docs/benchmarks.md "$table" <<'EOF'
import sys
path, table = sys.argv[1], sys.argv[2]
text = open(path).read()
start, end = "<!-- sim-bench:start -->", "<!-- sim-bench:end -->"
block = f"{start}\n{table}\n{end}"
if start in text:
    a = text.index(start); b = text.index(end) + len(end)
    text = text[:a] + block + text[b:]
else:
    text = text.rstrip() + "\n\n" + block + "\n"
open(path, "w").write(text)
EOF
  echo "wrote docs/benchmarks.md" >&2
fi
