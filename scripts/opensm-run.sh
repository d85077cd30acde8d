#!/usr/bin/env bash
# Route a fabric with the reference subnet manager (Debian's OpenSM on an ibsim-simulated
# fabric), collect its dump files, optionally its path SLs, and ibdmchk's verdict.
#
#   scripts/opensm-run.sh [options] NET ENGINE OUTDIR
#
# Options (before NET):
#   -a FILE     root GUID file (updn/ftree)
#   -U FILE     unicast LFT file for the `file` engine
#   -t FILE     torus-2QoS configuration
#   --psl       query the path SL of every CA pair from the SA (needed for SL/VL engines)
#   --no-ibdmchk  skip ibdmchk (slow on large fabrics)
#   --timeout S give up after S seconds (default 120)
#
# Writes to OUTDIR: OpenSM's dumps (opensm-lfts.dump, opensm.fdbs, opensm.mcfdbs,
# opensm-subnet.lst, opensm-sl2vl.dump when QoS is on), opensm.log, opensm-path-sl.psl
# (with --psl), ibdmchk.out, and result.txt with lines `engine_used=...`,
# `ibdmchk=no_credit_loops|credit_loops|error`, `route_s=...`.
# Needs: ibsim, opensm, libumad2sim0, ibdmchk, saquery (with --psl).
set -euo pipefail

roots="" ufile="" t2q="" psl=0 timeout=120 ibdm=1
while [ $# -gt 0 ]; do
  case "$1" in
    -a) roots=$(readlink -f "$2"); shift 2 ;;
    -U) ufile=$(readlink -f "$2"); shift 2 ;;
    -t) t2q=$(readlink -f "$2"); shift 2 ;;
    --psl) psl=1; shift ;;
    --no-ibdmchk) ibdm=0; shift ;;
    --timeout) timeout="$2"; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 3 ] || { echo "usage: $0 [options] NET ENGINE OUTDIR" >&2; exit 2; }
net=$(readlink -f "$1"); engine="$2"; out="$3"
mkdir -p "$out"; out=$(readlink -f "$out")
preload=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
for tool in ibsim opensm ibdmchk; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 3; }
done
[ -f "$preload" ] || { echo "libumad2sim0 is not installed" >&2; exit 3; }

# Sizes for ibsim's limits.
nsw=$(grep -c '^Switch' "$net" || true)
nca=$(grep -cE '^(Hca|Ca)' "$net" || true)
# ibsim allocates (declared ports + 1) port slots per node.
nports=$(awk '/^(Switch|Hca|Ca|Rt)[ \t]/ { n += $2 + 1 } END { print n + 0 }' "$net")
sim_host=$(grep -m1 -E '^(Hca|Ca)' "$net" | sed -E 's/^[A-Za-z]+[[:space:]]+[0-9]+[[:space:]]+"([^"]+)".*/\1/')

export IBSIM_SOCKNAME="fr$$x$RANDOM"
ibsim_pid="" osm_pid=""
cleanup() {
  for pid in $osm_pid $ibsim_pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT

ibsim -s -n -N $((nsw + nca + 16)) -S $((nsw + 16)) -P $((nports + 64)) "$net" \
  > "$out/ibsim.log" 2>&1 &
ibsim_pid=$!
for _ in $(seq 100); do
  grep -q "Network simulator ready" "$out/ibsim.log" 2>/dev/null && break
  kill -0 "$ibsim_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q "Network simulator ready" "$out/ibsim.log" || {
  echo "ibsim did not start:" >&2; grep -v "cannot parse remote lid" "$out/ibsim.log" | tail -5 >&2; exit 4; }

printf 'osm_ucast_mgr.c 0x04\nosm_state_mgr.c 0x04\n' > "$out/per-module-logging.conf"
cat > "$out/opensm.conf" <<EOF
per_module_logging_file $out/per-module-logging.conf
force_log_flush TRUE
EOF
args=(-F "$out/opensm.conf" -f "$out/opensm.log" -e -D 0x43 --dump_files_dir "$out" -R "$engine")
case "$engine" in lash*|dfsssp*|nue*|torus-2QoS*) args+=(-Q) ;; esac
[ -n "$roots" ] && args+=(-a "$roots")
[ -n "$ufile" ] && args+=(-U "$ufile")
[ -n "$t2q" ] && args+=(--torus_config "$t2q")
if [ $psl = 1 ]; then args+=(-s 0); else args+=(-o); fi
mkdir -p "$out/cache"
(cd "$out" && SIM_HOST="$sim_host" OSM_CACHE_DIR="$out/cache" LD_PRELOAD=$preload \
  exec opensm "${args[@]}" > "$out/opensm.stdout" 2>&1) &
osm_pid=$!
deadline=$((SECONDS + timeout)); state=timeout
while [ $SECONDS -lt $deadline ]; do
  if grep -q "SUBNET UP" "$out/opensm.log" 2>/dev/null; then state=up; break; fi
  if grep -qE "ERRORS DURING INITIALIZATION|No routing engine able" "$out/opensm.log" 2>/dev/null; then
    state=failed; break; fi
  kill -0 "$osm_pid" 2>/dev/null || { sleep 0.3; grep -q "SUBNET UP" "$out/opensm.log" && state=up; break; }
  sleep 0.1
done
if [ "$state" != up ]; then echo "opensm: $state" >&2; tail -5 "$out/opensm.log" >&2 || true; exit 5; fi
# -o mode: wait for opensm to finish writing its dumps and exit.
if [ $psl = 0 ]; then
  for _ in $(seq 300); do kill -0 "$osm_pid" 2>/dev/null || break; sleep 0.1; done
fi

used=$(grep -oE "[A-Za-z0-9_-]+ tables configured on all switches" "$out/opensm.log" | tail -1 | cut -d' ' -f1)
t0=$(grep -m1 "building routing with" "$out/opensm.log" | awk '{print $3 "." $4}' || true)
t1=$(grep -m1 "tables configured on all switches" "$out/opensm.log" | awk '{print $3 "." $4}' || true)
route_s=NA
if [ -n "$t0" ] && [ -n "$t1" ]; then
  route_s=$(awk -v a="$t0" -v b="$t1" 'function s(t, p, q){split(t, q, "."); split(q[1], p, ":"); return p[1]*3600 + p[2]*60 + p[3] + q[2]/1e6} BEGIN{printf "%.6f", s(b)-s(a)}')
fi

if [ $psl = 1 ]; then
  command -v saquery >/dev/null || { echo "saquery is not installed" >&2; exit 3; }
  # Every (source CA node, destination CA LID) pair, one SA PathRecord query each
  # (ibsim has no RMPP, so table queries are cut short).
  awk '/^\{ CA/ { for (i = 1; i <= NF; i++) { if ($i ~ /^NodeGUID:/) g = substr($i, 10); if ($i ~ /^LID:/) { l = substr($i, 5); break } } print g, l }' \
    "$out/opensm-subnet.lst" | sort -u | while read -r g l; do echo "$g $((16#$l))"; done > "$out/ca-lids.txt"
  : > "$out/opensm-path-sl.psl.tmp"
  while read -r sg sl_lid; do
    while read -r dg dl; do
      [ "$sl_lid" = "$dl" ] && continue
      sl=$(SIM_HOST="$sim_host" LD_PRELOAD=$preload saquery -p --slid "$sl_lid" --dlid "$dl" 2>/dev/null \
        | awk '/^[[:space:]]*sl[.]/ { sub(/^[[:space:]]*sl[.]+/, ""); print; exit }')
      [ -n "$sl" ] && echo "0x$sg $dl $((sl))" >> "$out/opensm-path-sl.psl.tmp"
    done < "$out/ca-lids.txt"
  done < "$out/ca-lids.txt"
  mv "$out/opensm-path-sl.psl.tmp" "$out/opensm-path-sl.psl"
fi
cleanup

verdict=skipped
if [ $ibdm = 1 ]; then
chk=(-s "$out/opensm-subnet.lst" -f "$out/opensm.fdbs" -m "$out/opensm.mcfdbs")
[ -f "$out/opensm-path-sl.psl" ] && chk+=(-c "$out/opensm-path-sl.psl")
[ -f "$out/opensm-sl2vl.dump" ] && chk+=(-d "$out/opensm-sl2vl.dump")
# ibdmchk 1.5.7 crashes right after reporting credit loops; the verdict is printed first.
( (cd "$out" && exec ibdmchk "${chk[@]}") > "$out/ibdmchk.out" 2>&1 ) 2>/dev/null || true
verdict=error
grep -q "no credit loops found" "$out/ibdmchk.out" && verdict=no_credit_loops
grep -q "credit loops in routing" "$out/ibdmchk.out" && verdict=credit_loops
fi
{
  echo "engine_requested=$engine"
  echo "engine_used=${used:-none}"
  echo "ibdmchk=$verdict"
  echo "route_s=$route_s"
} > "$out/result.txt"
cat "$out/result.txt"
