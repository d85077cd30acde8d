#!/usr/bin/env bash
# Whole-command benchmarks with peak memory, and fabroute against OpenSM on the same input.
# Every figure in docs/benchmarks.md that says "scripts/bench.sh" comes from this script.
#
#   scripts/bench.sh OUTDIR [parse|check|engines|writers|all]
set -euo pipefail
out=${1:?usage: $0 OUTDIR [parse|check|engines|writers|all]}
what=${2:-all}
mkdir -p "$out"
cargo build --release -q -p fabroute
fr=$(pwd)/target/release/fabroute
here=$(pwd)

# Runs a command under /usr/bin/time; prints "seconds maxrss_MB".
timed() {
  /usr/bin/time -f "%e %M" -o "$out/.time" "$@" > "$out/.stdout" 2> "$out/.stderr" || true
  tail -n 1 "$out/.time" | awk '{printf "%.2f %.0f\n", $1, $2 / 1024}'
}

if [ "$what" = parse ] || [ "$what" = all ]; then
  echo "## parse + build"
  echo "| input | size | wall s (read + build + figures) | peak RSS MB |"
  echo "|---|---|---|---|"
  $fr gen ktree 28 3 -o "$out/ktree28.net" --no-companions 2>/dev/null
  $fr convert "$out/ktree28.net" --to ibnetdiscover -o "$out/ktree28.ibnd" 2>/dev/null
  $fr gen torus 32x32x32 hcas=0 -o "$out/torus32.net" --no-companions 2>/dev/null
  for f in ktree28.ibnd ktree28.net torus32.net; do
    read -r s m < <(timed "$fr" info "$out/$f")
    echo "| $f | $(du -h "$out/$f" | cut -f1) | $s | $m |"
  done
  grep -E "switches|channel|diameter|read" "$out/.stdout" | sed 's/^/    /' || true
fi

if [ "$what" = check ] || [ "$what" = all ]; then
  echo "## check: fabroute vs ibdmchk on the same files"
  echo "| fabric | pairs | fabroute check s | peak MB | ibdmchk s | peak MB | verdicts |"
  echo "|---|---|---|---|---|---|---|"
  for spec in "ktree 8 3" "ktree 12 3" "ktree 16 3"; do
    name=$(echo "$spec" | tr ' ' '_')
    $fr gen $spec -o "$out/$name.net" --no-companions 2>/dev/null
    $fr route "$out/$name.net" -R ftree -o "$out/$name.ftree" > /dev/null 2>&1
    d="$out/$name.ftree"
    pairs=$(python3 -c "import json; print(json.load(open('$d/summary.json'))['pairs'])")
    read -r s1 m1 < <(timed "$fr" check "$d/opensm-subnet.lst" --lfts "$d/opensm-lfts.dump")
    ours=$(grep -q "no credit loops" "$out/.stdout" && echo free || echo loops)
    if command -v ibdmchk > /dev/null; then
      (cd "$d" && timed timeout 900 ibdmchk -s opensm-subnet.lst -f opensm.fdbs -m opensm.mcfdbs) > "$out/.ib"
      read -r s2 m2 < "$out/.ib"
      theirs=$(grep -q "no credit loops found" "$out/.stdout" && echo free || (grep -q "credit loops in routing" "$out/.stdout" && echo loops || echo "no verdict"))
    else
      s2=- m2=- theirs="not installed"
    fi
    echo "| $spec | $pairs | $s1 | $m1 | $s2 | $m2 | fabroute: $ours, ibdmchk: $theirs |"
  done
fi

if [ "$what" = engines ] || [ "$what" = all ]; then
  echo "## engines: fabroute vs OpenSM (engine computation only, same fabric, one run)"
  echo "| fabric | engine | OpenSM route s | fabroute route s | ratio | OpenSM max link load | fabroute max link load |"
  echo "|---|---|---|---|---|---|---|"
  run() {
    local spec="$1" engine="$2" extra="${3:-}"
    local name; name=$(echo "$spec" | tr ' ' '_')
    [ -f "$out/$name.net" ] || $fr gen $spec -o "$out/$name.net" 2>/dev/null
    local osm="$out/$name.osm.$engine"
    local args=()
    [ -f "$out/$name.net.roots" ] && [ "$engine" != dor ] && [ "$engine" != minhop ] && args+=(-a "$out/$name.net.roots")
    [ "$extra" = rootfirst ] && { echo 0x200000 > "$out/root1"; args+=(-a "$out/root1"); }
    "$here/scripts/opensm-run.sh" --no-ibdmchk --timeout 900 "${args[@]}" "$out/$name.net" "$engine" "$osm" > /dev/null 2>&1 || true
    local osm_s; osm_s=$(grep route_s "$osm/result.txt" 2>/dev/null | cut -d= -f2 || echo NA)
    local used; used=$(grep engine_used "$osm/result.txt" 2>/dev/null | cut -d= -f2 || echo none)
    local ours="$out/$name.fr.$engine"
    local rargs=()
    [ -f "$out/$name.net.roots" ] && [ "$engine" != dor ] && [ "$engine" != minhop ] && rargs+=(-a "$out/$name.net.roots")
    # fabroute routes OpenSM's view of the fabric (its LIDs) for comparable tables.
    $fr route "$osm/opensm-subnet.lst" -R "$engine" "${rargs[@]}" -o "$ours" > /dev/null 2>&1
    local fr_s; fr_s=$(python3 -c "import json; print('%.4f' % json.load(open('$ours/summary.json'))['route_seconds'])")
    local fr_max; fr_max=$(python3 -c "import json; print(json.load(open('$ours/summary.json'))['max_link_load'])")
    local osm_max; osm_max=$($fr stats "$osm/opensm-subnet.lst" --lfts "$osm/opensm-lfts.dump" --ebb-runs 0 --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['metrics']['link_load']['max'])" || echo NA)
    local ratio; ratio=$(python3 -c "print('%.0fx' % ($osm_s / $fr_s))" 2>/dev/null || echo NA)
    echo "| $spec | $engine (OpenSM used: $used) | $osm_s | $fr_s | $ratio | $osm_max | $fr_max |"
  }
  run "ktree 18 3" ftree
  run "ktree 18 3" updn
  run "ktree 18 3" minhop
  run "ktree 18 3" sssp
  run "torus 10x10x10 hcas=2" dor
  run "torus 10x10x10 hcas=2" updn rootfirst
fi

if [ "$what" = writers ] || [ "$what" = all ]; then
  echo "## writers: route -o with every file against --summary-only, and cat of the same bytes"
  echo "| fabric | summary-only s | MB | full set s | MB | bytes written | writing s (difference) | cat s | writing / cat | extra MB |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for spec in "ktree 24 3" "ktree 16 3"; do
    name=$(echo "$spec" | tr ' ' '_')
    $fr gen $spec -o "$out/$name.net" --no-companions 2>/dev/null
    rm -rf "$out/$name.w"
    read -r s1 m1 < <(timed "$fr" route "$out/$name.net" -R ftree --summary-only -o "$out/$name.w")
    rm -rf "$out/$name.w"
    sync
    read -r s2 m2 < <(timed "$fr" route "$out/$name.net" -R ftree -o "$out/$name.w")
    bytes=$(cat "$out/$name.w"/* | wc -c)
    # cat of the same bytes to the same disk (a fresh file), page cache warm as for fabroute.
    sync
    read -r s3 m3 < <(timed sh -c "cat '$out/$name.w'/* > '$out/$name.cat'")
    rm -f "$out/$name.cat"
    awk -v a="$s1" -v b="$s2" -v c="$s3" -v m1="$m1" -v m2="$m2" -v spec="$spec" -v bytes="$bytes" \
      'BEGIN { w = b - a; printf "| %s | %s | %s | %s | %s | %.2f GB | %.2f | %s | %.2f | %d |\n", spec, a, m1, b, m2, bytes / 1e9, w, c, (c > 0 ? w / c : 0), m2 - m1 }'
    rm -rf "$out/$name.w"
  done
fi
