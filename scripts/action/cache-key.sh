#!/usr/bin/env bash
# The cache key and install root of the discbench action (action.yml): a digest of
# the discbench source the action was fetched at, so that a moving ref (a branch) gets
# a new binary when its source changes and a pinned one is built once per runner OS
# and architecture. Prints `key=…` and `root=…`, and appends them to $GITHUB_OUTPUT
# when that is set.
#
# Environment: DISCBENCH_SOURCE (the discbench checkout; default: this script's
# repository), RUNNER_OS, RUNNER_ARCH, RUNNER_TOOL_CACHE / RUNNER_TEMP (GitHub sets
# them; elsewhere `uname` and $TMPDIR stand in). With `--digest`, prints the source's
# digest alone (what install.sh checks a cached binary against).
set -euo pipefail

source_dir=${DISCBENCH_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ ! -f "$source_dir/Cargo.toml" ]; then
  echo "discbench action: $source_dir holds no Cargo.toml (DISCBENCH_SOURCE)" >&2
  exit 2
fi

if command -v sha256sum >/dev/null 2>&1; then
  sha=(sha256sum)
else
  sha=(shasum -a 256)
fi

# Every file of the source but version control, build output and run output, by
# relative path, so the digest is the same wherever the runner unpacked the action.
digest=$(
  cd "$source_dir" &&
    find . \( -path ./.git -o -path ./target -o -path ./reports \) -prune -o -type f -print0 |
    LC_ALL=C sort -z | xargs -0 "${sha[@]}" | "${sha[@]}" | cut -c1-20
)
if [ "${1:-}" = --digest ]; then
  echo "$digest"
  exit 0
fi
os=${RUNNER_OS:-$(uname -s)}
arch=${RUNNER_ARCH:-$(uname -m)}
key="discbench-$os-$arch-$digest"
cache_base=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}}
root="$cache_base/discbench/$digest"

echo "key=$key"
echo "root=$root"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "key=$key"
    echo "root=$root"
  } >>"$GITHUB_OUTPUT"
fi
