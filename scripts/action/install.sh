#!/usr/bin/env bash
# Installs discbench for the action (action.yml) or any CI job, at the version of the
# source next to this script: the binary a cache restored into DISCBENCH_ROOT if it
# runs; else a `discbench` already on PATH whose version is the source's; else
# `cargo install --locked --path SOURCE --root DISCBENCH_ROOT` (a release build of
# the committed Cargo.lock; it needs a Rust toolchain and a C compiler, and no network
# beyond the crate registry). Prints the binary's path, appends `bin=PATH` to
# $GITHUB_OUTPUT and the binary's directory to $GITHUB_PATH when those are set.
#
# Environment:
#   DISCBENCH_ROOT    the install root (the binary is ROOT/bin/discbench); the action
#                     caches this directory [required]
#   DISCBENCH_SOURCE  the discbench checkout to build [default: this script's repository]
# Exit codes: 0 installed or found, 2 bad input, 3 the build failed or no toolchain.
set -euo pipefail

source_dir=${DISCBENCH_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
root=${DISCBENCH_ROOT:-}
if [ -z "$root" ]; then
  echo "discbench install: DISCBENCH_ROOT is not set" >&2
  exit 2
fi
if [ ! -f "$source_dir/Cargo.toml" ]; then
  echo "discbench install: $source_dir holds no Cargo.toml (DISCBENCH_SOURCE)" >&2
  exit 2
fi
want=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$source_dir/Cargo.toml" | head -n 1)

# The version a binary reports, or nothing when it does not run.
version_of() {
  "$1" --version 2>/dev/null | sed -n 's/^discbench //p' || true
}

bin=""
cached="$root/bin/discbench"
if [ -x "$cached" ] && [ -n "$(version_of "$cached")" ]; then
  bin=$cached
  echo "discbench $(version_of "$bin"): restored from the cache ($root)"
elif found=$(command -v discbench 2>/dev/null) && [ "$(version_of "$found")" = "$want" ]; then
  bin=$found
  echo "discbench $want: already installed ($bin)"
else
  if ! command -v cargo >/dev/null 2>&1; then
    echo "discbench install: no cargo on PATH; install a Rust toolchain (1.95 or newer) first" >&2
    exit 3
  fi
  echo "discbench $want: building from $source_dir into $root"
  if ! cargo install --locked --path "$source_dir" --root "$root"; then
    echo "discbench install: cargo install failed" >&2
    exit 3
  fi
  bin=$cached
  if [ -z "$(version_of "$bin")" ]; then
    echo "discbench install: $bin does not run after the build" >&2
    exit 3
  fi
fi

echo "bin=$bin"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "bin=$bin" >>"$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_PATH:-}" ]; then
  dirname "$bin" >>"$GITHUB_PATH"
fi
