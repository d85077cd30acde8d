#!/usr/bin/env bash
# The test command: a Rust toolchain (installed if missing), the Debian packages the tests use
# (OpenSM, ibsim, ibdmchk, infiniband-diags, rsvg-convert; scripts/install-test-deps.sh), then
# `cargo test --workspace`. Extra arguments go to cargo test. Prints how long it took.
#
# `scripts/test.sh --quick` leaves out the tests that run ibsim or OpenSM and the sweeps over
# every vendored and real fabric (about two thirds of the suites' time): for the edit-test
# loop. CI and a change that is to land run the whole command.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
quick=()
if [ "${1:-}" = "--quick" ]; then
    shift
    # Substrings of test names (module::test): the slowest tests, measured per test.
    for t in live_ opensm_interop:: base_is_route:: pinned_base:: real_dumps every_reference \
        nue_against_opensm every_single_link_fault_on_tori; do
        quick+=(--skip "$t")
    done
fi
. scripts/ensure-rust.sh
scripts/install-test-deps.sh
# Without the CLI's default feature `jemalloc`: its C build took about 4 of the 12 minutes
# of a fresh test build; the allocator changes speed, not results.
if [ ${#quick[@]} -gt 0 ]; then
    cargo test --workspace --locked --no-default-features "$@" -- "${quick[@]}"
else
    cargo test --workspace --locked --no-default-features "$@"
fi
echo "test.sh: done in $(( $(date +%s) - start )) s (building included)"
