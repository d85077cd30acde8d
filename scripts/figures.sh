#!/usr/bin/env bash
# Regenerates the pictures in docs/figures/ with fabroute's own commands (release build).
#   scripts/figures.sh [SAMPLES]     (default 1000 sampled scenarios per sweep point)
set -euo pipefail
cd "$(dirname "$0")/.."
samples=${1:-1000}
cargo build --release -q -p fabroute
fr=target/release/fabroute
out=docs/figures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# Fault tolerance of RFTR on Up*/Down* tori against full reconfiguration, 1..4 link faults.
files=()
for t in 4x4 6x6 8x8 3x3x3; do
  $fr gen torus $t hcas=2 -o "$work/torus$t.net" >/dev/null
  for k in 1 2 3 4; do
    $fr sweep "$work/torus$t.net" --faults $k --samples "$samples" --seed 1 \
      -o "$work/torus$t.k$k.jsonl" >/dev/null
    files+=("$work/torus$t.k$k.jsonl")
  done
done
$fr plot sweep "${files[@]}" -o "$out/fault-tolerance-tori.svg" | tee "$out/fault-tolerance-tori.txt"

# Link loads: ftree on the 8-ary 3-tree-like real cluster dump and on a generated 8-ary 3-tree.
$fr route tests/data/real/tartu_sx6036_fdr_8sw_144hca.ibnd -R ftree -o "$work/tartu-ftree" >/dev/null
# (relative paths: the picture titles name the tables)
(cd "$work" && "$OLDPWD/$fr" stats tartu-ftree/opensm-subnet.lst --lfts tartu-ftree/opensm-lfts.dump \
  --ebb-runs 0 --svg tartu-svg >/dev/null)
cp "$work/tartu-svg/link-loads.svg" "$out/loads-tartu-ftree.svg"
cp "$work/tartu-svg/hottest-links.svg" "$out/hottest-tartu-ftree.svg"

# Credit loops: MinHop on the 4x4 torus (exit 1 expected).
$fr route examples/torus2d_4x4_h2.net -R minhop -o "$work/torus4x4-minhop" >/dev/null || true
(cd "$work" && "$OLDPWD/$fr" check torus4x4-minhop/opensm-subnet.lst --lfts torus4x4-minhop/opensm-lfts.dump \
  --svg loops.svg >/dev/null || true)
cp "$work/loops.svg" "$out/loops-torus4x4-minhop.svg"
echo "wrote $out"
