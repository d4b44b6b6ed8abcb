#!/usr/bin/env bash
# Installs discbench for the action (action.yml) or any CI job, built from the source
# next to this script: the binary a cache restored into DISCBENCH_ROOT when it was
# built from this very source (the digest of its files, which cache-key.sh computes,
# is kept beside it in ROOT/source-digest) and runs; else
# `cargo install --locked --path SOURCE --root DISCBENCH_ROOT` (a release build of
# the committed Cargo.lock; it needs a Rust toolchain and a C compiler, and no network
# beyond the crate registry). A `discbench` already on PATH is never taken: its
# version number says nothing of the commit it was built from, and a stale binary on a
# self-hosted runner would judge the run. Prints the binary's path, appends `bin=PATH`
# to $GITHUB_OUTPUT and the binary's directory to $GITHUB_PATH when those are set.
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
digest=$(DISCBENCH_SOURCE="$source_dir" "$BASH" "$(dirname "$0")/cache-key.sh" --digest)

# Whether a binary runs at all.
runs() {
  "$1" --version >/dev/null 2>&1
}

bin=""
cached="$root/bin/discbench"
if [ -x "$cached" ] && runs "$cached" &&
  [ "$(cat "$root/source-digest" 2>/dev/null || true)" = "$digest" ]; then
  bin=$cached
  echo "discbench: restored from the cache ($root), built from source $digest"
else
  if ! command -v cargo >/dev/null 2>&1; then
    echo "discbench install: no cargo on PATH; install a Rust toolchain (1.95 or newer) first" >&2
    exit 3
  fi
  echo "discbench: building source $digest from $source_dir into $root"
  rm -f "$root/source-digest"
  if ! cargo install --locked --force --path "$source_dir" --root "$root"; then
    echo "discbench install: cargo install failed" >&2
    exit 3
  fi
  bin=$cached
  if ! runs "$bin"; then
    echo "discbench install: $bin does not run after the build" >&2
    exit 3
  fi
  echo "$digest" >"$root/source-digest"
fi

echo "bin=$bin"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "bin=$bin" >>"$GITHUB_OUTPUT"
fi
if [ -n "${GITHUB_PATH:-}" ]; then
  dirname "$bin" >>"$GITHUB_PATH"
fi
