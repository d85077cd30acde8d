#!/usr/bin/env bash
# What infiniband-diags' discovery tools print for one fabric, from the real tools on ibsim:
#
#   scripts/ibsim-discover.sh FABRIC OUT_PREFIX
#
# Converts FABRIC (any format fabroute reads) to an ibsim net file, starts ibsim on it, and
# runs `ibnetdiscover -p` (the ports report), `ibnetdiscover` (the topology file),
# `iblinkinfo` and `iblinkinfo -l` under libumad2sim from its first HCA: OUT_PREFIX.ports,
# OUT_PREFIX.ibnd, OUT_PREFIX.linkinfo and OUT_PREFIX.linkinfo-l. This is how tests/data/diags/ was made. Needs ibsim-utils, libumad2sim0 and
# infiniband-diags (scripts/install-test-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
fabric=$(readlink -f "$1")
out=$(readlink -f "$2")
fr="$here/target/release/fabroute"
[ -x "$fr" ] || (cd "$here" && . scripts/ensure-rust.sh && cargo build --release -q -p fabroute)
preload=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
for t in ibsim ibnetdiscover iblinkinfo; do command -v $t >/dev/null || { echo "$t is not installed (scripts/install-test-deps.sh)" >&2; exit 3; }; done
[ -f "$preload" ] || { echo "libumad2sim0 is not installed (scripts/install-test-deps.sh)" >&2; exit 3; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$fr" convert "$fabric" --to ibsim --lossy -o "$work/f.net" 2>/dev/null
sizes=$(sed -n 's/^# ibsim needs at least: \(-N [0-9]* -S [0-9]* -P [0-9]*\).*/\1/p' "$work/f.net")
# the first HCA whose port 1 is cabled (discovery from an unconnected port sees nothing else)
host=$(awk '/^(Hca|Ca)[ \t]/ { h = $0; next } h != "" && /^\[1\]/ { print h; exit } { h = "" }' "$work/f.net" |
  sed -E 's/^[A-Za-z]+[[:space:]]+[0-9]+[[:space:]]+"([^"]+)".*/\1/')
export IBSIM_SOCKNAME="frports$$"
mkfifo "$work/console"; exec 3<>"$work/console"
ibsim -s $sizes "$work/f.net" <&3 > "$work/ibsim.log" 2>&1 & pid=$!
for _ in $(seq 200); do grep -q "simulator ready" "$work/ibsim.log" && break; sleep 0.05; done
run() { SIM_HOST="$host" LD_PRELOAD="$preload" timeout 300 "$@"; }
run ibnetdiscover -p > "$out.ports.tmp" && mv "$out.ports.tmp" "$out.ports"
run ibnetdiscover > "$out.ibnd.tmp" && mv "$out.ibnd.tmp" "$out.ibnd"
run iblinkinfo > "$out.linkinfo.tmp" && mv "$out.linkinfo.tmp" "$out.linkinfo"
run iblinkinfo -l > "$out.linkinfo-l.tmp" && mv "$out.linkinfo-l.tmp" "$out.linkinfo-l"
echo "wrote $out.ports ($(wc -l < "$out.ports") ports), $out.ibnd, $out.linkinfo and $out.linkinfo-l"
