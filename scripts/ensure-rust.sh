# Sourced by the scripts that build fabroute (`. scripts/ensure-rust.sh`): puts a Rust
# toolchain new enough for the workspace (rust-version in Cargo.toml) on PATH: the one on
# PATH or in ~/.cargo/bin, else rustup's stable toolchain installed into ~/.cargo (when the
# machine can reach it). Debian's own rustc is too old for the workspace and is not used.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "ensure-rust: no cargo on PATH or in ~/.cargo/bin; trying rustup's installer" >&2
  if ! (set -o pipefail && command -v curl >/dev/null 2>&1 &&
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
    sh -s -- -y --profile minimal --component rustfmt,clippy >/dev/null); then
    echo "ensure-rust: could not install Rust; install a toolchain >= $(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml") (rustup.rs) and run again" >&2
    exit 1
  fi
  export PATH="$HOME/.cargo/bin:$PATH"
fi
