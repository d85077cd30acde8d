# The issue 39 scale fabrics by short name, for scripts/bench-rftr-scale.sh and
# scripts/rftr-scale-table.sh (sourced, not run).
#
#   scale_fabric FABROUTE NAME NET   writes NET unless it exists; NAME is one of
#                                    k16 k20 k24 t16x16x8 dfp25k
scale_fabric() {
  local fr=$1 name=$2 net=$3
  [ -s "$net" ] && return 0
  local spec
  case "$name" in
    k16) spec=(ktree 16 3) ;;
    k20) spec=(ktree 20 3) ;;
    k24) spec=(ktree 24 3) ;;
    t16x16x8) spec=(torus 16x16x8 hcas=4) ;;
    dfp25k) spec=(dragonflyplus groups=25 leaves=32 spines=32 hosts=32 global=32) ;;
    *) echo "unknown fabric $name (expected k16 k20 k24 t16x16x8 dfp25k)" >&2; exit 2 ;;
  esac
  "$fr" gen "${spec[@]}" -o "$net" --no-companions >/dev/null 2>&1
}
