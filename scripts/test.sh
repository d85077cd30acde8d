#!/usr/bin/env bash
# The test command: a Rust toolchain (installed if missing), the Debian packages the tests use
# (OpenSM, ibsim, ibdmchk, infiniband-diags, rsvg-convert; scripts/install-test-deps.sh), then
# `cargo test --workspace`. Extra arguments go to cargo test. Prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
. scripts/ensure-rust.sh
scripts/install-test-deps.sh
cargo test --workspace --locked "$@"
echo "test.sh: done in $(( $(date +%s) - start )) s (building included)"
