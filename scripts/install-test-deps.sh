#!/usr/bin/env bash
# Installs the Debian packages the tests use beside cargo: OpenSM, ibsim (with its umad2sim
# preload library), ibutils' ibdmchk, infiniband-diags, and rsvg-convert for the SVG tests.
# Does nothing when they are already there. Uses sudo when not run as root.
set -euo pipefail
pkgs=(opensm ibsim-utils libumad2sim0 ibutils infiniband-diags librsvg2-bin python3)
need=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
[ ${#need[@]} -eq 0 ] && exit 0
command -v apt-get >/dev/null || { echo "install-test-deps: no apt-get; install ${need[*]} by hand" >&2; exit 1; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-test-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
