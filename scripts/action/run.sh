#!/usr/bin/env bash
# The gate step of the discbench action (action.yml), usable as it is in any CI job:
# runs `discbench run` on the given scenarios, modes and models against a committed
# baseline, writes the Markdown verdict (compare.md, then summary.md) to RUN_DIR/gate.md
# and to $GITHUB_STEP_SUMMARY when that is set, writes the step's outputs to
# $GITHUB_OUTPUT when that is set, and exits with discbench's code: 0 no regression,
# 1 regression (0 when DISCBENCH_FAIL_ON_REGRESSION is false), 2 bad input, 3
# infrastructure failure.
#
# Environment (lists: one item per line; blank lines are skipped):
#   DISCBENCH_BIN         the binary [default: discbench on PATH]
#   DISCBENCH_SCENARIOS   scenario files or directories [default: discbench's, scenarios/]
#   DISCBENCH_MODES       modes, presets or specs (a spec has commas, hence one a line)
#   DISCBENCH_MODELS      models [default: discbench's, oracle and lexical]
#   DISCBENCH_BASELINE    a summary.json or run directory; empty: run without judging
#                         (to make the first baseline)
#   DISCBENCH_THRESHOLDS  METRIC=VALUE, comma-separated or one a line
#   DISCBENCH_ARGS        more `discbench run` arguments, split on white space (no
#                         quoting, no globbing)
#   DISCBENCH_OUT         where the run directory is made [default: discbench-reports]
#   DISCBENCH_RUN_ID      the run directory's name [default: gate; gate-2, gate-3, …
#                         when OUT already holds it]
#   DISCBENCH_FAIL_ON_REGRESSION  true or false [default: true]
# Outputs: verdict (ok, regressed, no-baseline or failed), exit-code, run-dir (absolute,
# or empty when no run directory was made), summary (RUN_DIR/summary.json), markdown
# (RUN_DIR/gate.md).
set -euo pipefail

# The non-blank lines of $1, trimmed.
items() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    if [ -n "$line" ]; then printf '%s\n' "$line"; fi
  done <<<"$1"
}

bin=${DISCBENCH_BIN:-discbench}
out=${DISCBENCH_OUT:-discbench-reports}
baseline=$(items "${DISCBENCH_BASELINE:-}")
case "$(printf '%s' "${DISCBENCH_FAIL_ON_REGRESSION:-true}" | tr '[:upper:]' '[:lower:]')" in
  true | yes | 1 | "") fail_on_regression=true ;;
  false | no | 0) fail_on_regression=false ;;
  *)
    echo "discbench gate: fail-on-regression must be true or false, not '$DISCBENCH_FAIL_ON_REGRESSION'" >&2
    exit 2
    ;;
esac

run_id=${DISCBENCH_RUN_ID:-}
if [ -z "$run_id" ]; then
  run_id=gate
  n=1
  while [ -e "$out/$run_id" ]; do
    n=$((n + 1))
    run_id="gate-$n"
  done
fi
dir="$out/$run_id"
# A run never overwrites: when the directory is there already, discbench refuses, and
# what the directory holds is an earlier run's, never this step's verdict.
fresh=true
if [ -e "$dir" ]; then fresh=false; fi

args=(run --no-progress --out "$out" --run-id "$run_id")
while IFS= read -r item; do args+=(--mode "$item"); done < <(items "${DISCBENCH_MODES:-}")
while IFS= read -r item; do args+=(--model "$item"); done < <(items "${DISCBENCH_MODELS:-}")
while IFS= read -r item; do args+=(--threshold "$item"); done < <(items "${DISCBENCH_THRESHOLDS:-}")
if [ -n "$baseline" ]; then args+=(--baseline "$baseline"); fi
read -r -a extra <<<"$(printf '%s' "${DISCBENCH_ARGS:-}" | tr '\n' ' ')"
if [ "${#extra[@]}" -gt 0 ]; then args+=("${extra[@]}"); fi
scenarios=()
while IFS= read -r item; do scenarios+=("$item"); done < <(items "${DISCBENCH_SCENARIOS:-}")
if [ "${#scenarios[@]}" -gt 0 ]; then args+=(-- "${scenarios[@]}"); fi

if ! command -v "$bin" >/dev/null 2>&1; then
  echo "discbench gate: no $bin to run (install it first: scripts/action/install.sh)" >&2
  exit 3
fi
echo "+ $bin$(printf ' %q' "${args[@]}")"
rc=0
"$bin" "${args[@]}" || rc=$?

case "$rc" in
  0) if [ -n "$baseline" ]; then verdict=ok; else verdict=no-baseline; fi ;;
  1) verdict=regressed ;;
  *) verdict=failed ;;
esac

# The Markdown: the verdict against the baseline first, then the run's summary.
markdown=""
# The run directory as an output: absolute, and empty when this step made none (bad
# input refused before anything was written, or OUT held a run of that name already).
run_dir=""
if [ "$fresh" = true ] && [ -d "$dir" ]; then
  dir=$(cd "$dir" && pwd)
  run_dir=$dir
  markdown="$dir/gate.md"
  {
    if [ "$verdict" = failed ]; then
      printf '## discbench: failed (exit %s)\n\n' "$rc"
      echo "The run is not a measurement: see the step's log (exit 2: bad input or usage; 3: infrastructure, such as requests that failed after every retry)."
      echo
    fi
    if [ -f "$dir/compare.md" ]; then
      cat "$dir/compare.md"
      echo
    fi
    if [ -f "$dir/summary.md" ]; then cat "$dir/summary.md"; fi
  } >"$markdown"
fi

if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  # GitHub takes at most 1 MiB of summary per step: past that, the verdict alone.
  limit=1000000
  if [ -n "$markdown" ] && [ "$(wc -c <"$markdown")" -le "$limit" ]; then
    cat "$markdown" >>"$GITHUB_STEP_SUMMARY"
  elif [ -n "$markdown" ] && [ -f "$dir/compare.md" ]; then
    {
      cat "$dir/compare.md"
      echo
      echo "The run's summary is longer than a job summary may be: see $dir/summary.md."
    } >>"$GITHUB_STEP_SUMMARY"
  else
    {
      printf '## discbench: %s (exit %s)\n\n' "$verdict" "$rc"
      echo "See the step's log."
    } >>"$GITHUB_STEP_SUMMARY"
  fi
fi

summary=""
if [ -n "$markdown" ] && [ -f "$dir/summary.json" ]; then summary="$dir/summary.json"; fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "verdict=$verdict"
    echo "exit-code=$rc"
    echo "run-dir=$run_dir"
    echo "summary=$summary"
    echo "markdown=$markdown"
  } >>"$GITHUB_OUTPUT"
fi

echo "discbench gate: $verdict (exit $rc); run directory ${run_dir:-(none made)}"
if [ "$verdict" = regressed ]; then
  if [ "$fail_on_regression" = true ]; then level=error; else level=warning; fi
  if [ "${GITHUB_ACTIONS:-}" = true ]; then
    echo "::$level title=discbench::a regression against $baseline: see the job summary or $dir/compare.md"
  fi
  if [ "$fail_on_regression" = false ]; then exit 0; fi
fi
exit "$rc"
