#!/usr/bin/env bash
# Max link load of fabroute's engines against OpenSM's same engine, on every fabric of a
# directory (default: ../shared/topologies). Both routings are measured by `fabroute stats`
# on OpenSM's view of the fabric (its opensm-subnet.lst and LIDs).
#
#   scripts/compare-opensm.sh OUTDIR [TOPODIR] [ENGINES="minhop updn dnup dor ftree sssp"]
#
# updn on fabrics without a .roots file: OpenSM gets the first switch (0x200000) as root, since
# it finds none itself; fabroute gets the same file unless FABROUTE_OWN_ROOTS=1, in which case
# it picks its own root set (the evaluated choice of engines/updn.rs).
# The fabroute binary is $CARGO_TARGET_DIR/release/fabroute (default target/).
set -euo pipefail
out=${1:?usage: $0 OUTDIR [TOPODIR] [ENGINES]}
topo=${2:-../shared/topologies}
engines=${3:-"minhop updn dnup dor ftree sssp"}
mkdir -p "$out"
cargo build --release -q -p fabroute
fr=$(realpath "${CARGO_TARGET_DIR:-target}")/release/fabroute
own_roots=${FABROUTE_OWN_ROOTS:-0}
here=$(pwd)
maxload() { "$fr" stats "$1/opensm-subnet.lst" --lfts "$2" --ebb-runs 0 --json 2>/dev/null \
  | python3 -c "import json,sys; m=json.load(sys.stdin)['metrics']; print(m['link_load']['max'], '%.2f' % m['sw_hops_avg'], m['pairs_ok'] == m['pairs'])"; }
echo "| fabric | engine | OpenSM engine used | OpenSM max load | fabroute max load | OpenSM avg hops | fabroute avg hops | fabroute all pairs / deadlock-free | verdict |"
echo "|---|---|---|---|---|---|---|---|---|"
for net in "$topo"/*.net; do
  name=$(basename "$net" .net)
  for e in $engines; do
    case "$e:$name" in
      ftree:ktree*|ftree:fattree*) ;;
      ftree:*) continue ;;
      dor:torus*|dor:mesh*) ;;
      dor:*) continue ;;
    esac
    args=()
    if [ -f "$net.roots" ] && { [ "$e" = updn ] || [ "$e" = ftree ]; }; then
      args+=(-a "$net.roots")
    elif [ "$e" = updn ]; then
      echo 0x200000 > "$out/root1"; args+=(-a "$out/root1")
    fi
    o="$out/$name.$e"
    if ! "$here/scripts/opensm-run.sh" --no-ibdmchk --timeout 600 "${args[@]}" "$net" "$e" "$o/osm" > /dev/null 2>&1; then
      echo "| $name | $e | failed | - | - | - | - | - | OpenSM did not come up |"; continue
    fi
    used=$(grep engine_used "$o/osm/result.txt" | cut -d= -f2)
    rargs=()
    # fabroute gets exactly the root file OpenSM got (but its own roots on non-trees when asked).
    if [ "${#args[@]}" -gt 0 ] && ! { [ "$own_roots" = 1 ] && [ ! -f "$net.roots" ]; }; then
      rargs+=("${args[@]}")
    fi
    "$fr" route "$o/osm/opensm-subnet.lst" -R "$e" "${rargs[@]}" -o "$o/fr" > /dev/null 2>&1 || true
    read -r om oh _ < <(maxload "$o/osm" "$o/osm/opensm-lfts.dump")
    read -r fm fh _ < <(maxload "$o/osm" "$o/fr/opensm-lfts.dump")
    ok=$(python3 -c "import json; d=json.load(open('$o/fr/summary.json')); print('%s / %s' % (d['unreachable_pairs'] == 0, d['deadlock_free']))")
    v=$(python3 -c "print('better' if $fm < $om else ('equal' if $fm == $om else 'WORSE'))")
    echo "| $name | $e | $used | $om | $fm | $oh | $fh | $ok | $v |"
    rm -f "$o"/osm/opensm-lfts.dump "$o"/osm/opensm.fdbs "$o"/osm/opensm-lid-matrix.dump "$o"/fr/opensm-lfts.dump "$o"/fr/opensm.fdbs
  done
done
