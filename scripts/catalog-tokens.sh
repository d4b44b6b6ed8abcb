#!/usr/bin/env bash
# First-turn tokens of every committed real MCP capture (fixtures/catalogs/*.tools.json)
# under the six default modes, as one markdown table on stdout.
#
# For each capture it writes, in a scratch directory, a scenario holding just that
# capture (server named by the file stem, one query that expects no call) and runs
# `discbench tokens` on it under progressive, legacy, inline, mcp-resource, tool-search
# and retrieval. Each figure is the `total` column of `tokens` (system + tool_defs: the
# system prompt and the tool definitions the first request shows, before any selection
# step and, under retrieval, without the top k each query adds). `tools` is the number
# of tools in the capture. Rows are sorted by legacy tokens, largest first, with a Total
# row. A capture that fails to load, or a mode that gives no row, is left out of the
# table and listed after it, as is any other problem found; the script then exits 1.
#
#   scripts/catalog-tokens.sh                       # from the repository root
#   DISCBENCH=target/release/discbench scripts/catalog-tokens.sh > catalog-tokens.md
#
# DISCBENCH names the binary to use (default: `cargo run --release --quiet --`).
# Needs jq (to count each capture's tools).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
read -r -a discbench <<< "${DISCBENCH:-cargo run --release --quiet --}"
modes=(progressive legacy inline mcp-resource tool-search retrieval)
mode_args=()
for m in "${modes[@]}"; do mode_args+=(--mode "$m"); done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

rows=$scratch/rows.tsv # legacy, stem, tools, one column per mode
: > "$rows"
failures=()
tokenizer=

shopt -s nullglob
captures=(fixtures/catalogs/*.tools.json)
[ ${#captures[@]} -gt 0 ] || { echo "no fixtures/catalogs/*.tools.json" >&2; exit 2; }

for f in "${captures[@]}"; do
  stem=$(basename "$f" .tools.json)
  if ! n=$(jq -e '.tools | length' "$f" 2>"$scratch/err"); then
    failures+=("\`$stem\`: not a tools/list capture: $(head -n 1 "$scratch/err")")
    continue
  fi
  scenario=$scratch/$stem.yaml
  # YAML single quotes: a quote inside is doubled.
  path=${root//\'/\'\'}/$f
  cat > "$scenario" <<EOF
name: tokens-$stem
description: The capture $stem.tools.json alone, for its static token ledger.
catalog:
  include:
    - { path: '$path', name: '$stem' }
queries:
  - id: q
    text: Hello.
    expect: { calls: [] }
EOF
  if ! out=$("${discbench[@]}" tokens "$scenario" "${mode_args[@]}" 2>"$scratch/err"); then
    failures+=("\`$stem\`: \`tokens\` failed: $(tr '\n' ' ' < "$scratch/err")")
    continue
  fi
  t=$(awk '$1 == "tokenizer:" { print $2 }' <<< "$out")
  if [ -z "$tokenizer" ]; then tokenizer=$t; elif [ "$t" != "$tokenizer" ]; then
    failures+=("\`$stem\`: tokenizer $t, not $tokenizer")
  fi
  # Header: scenario mode tools system tool_defs total selection; `total` is field 6.
  line="$stem	$n"
  legacy=
  missing=
  for m in "${modes[@]}"; do
    v=$(awk -v s="tokens-$stem" -v m="$m" '$1 == s && $2 == m { print $6 }' <<< "$out")
    if ! [[ $v =~ ^[0-9]+$ ]]; then missing+=" $m"; continue; fi
    line+="	$v"
    [ "$m" = legacy ] && legacy=$v
  done
  if [ -n "$missing" ]; then
    failures+=("\`$stem\`: no \`total\` for mode(s)$missing")
    continue
  fi
  # Cross-check: tool search holds back every MCP tool, so its note names the count.
  held=$(awk -v s="tokens-$stem" '$1 == s && $2 == "tool-search" {
    if (match($0, /\(([0-9]+) tools held back/)) { print substr($0, RSTART + 1, RLENGTH - 17) } }' <<< "$out")
  if [ -n "$held" ] && [ "$held" != "$n" ]; then
    failures+=("\`$stem\`: the capture has $n tools, the loaded scenario $held (row kept)")
  fi
  printf '%s\t%s\n' "$legacy" "$line" >> "$rows"
done

header="| capture (file stem) | tools"
rule="|---|---:"
for m in "${modes[@]}"; do
  header+=" | $m \`total\`"
  rule+="|---:"
done
echo "$header |"
echo "$rule|"
sort -t $'\t' -k1,1nr -k2,2 "$rows" | cut -f 2- |
  awk -F '\t' '
    { printf "| `%s`", $1; for (i = 2; i <= NF; i++) { printf " | %s", $i; sum[i] += $i }
      printf " |\n"; n = NF; rows++ }
    END { printf "| **Total** (%d captures)", rows
          for (i = 2; i <= n; i++) printf " | %d", sum[i]
          printf " |\n" }'

if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "Problems (tokenizer ${tokenizer:-unknown}):"
  for x in "${failures[@]}"; do echo "- $x"; done
  exit 1
fi
