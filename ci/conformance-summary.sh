#!/usr/bin/env bash
# Prints the verdicts of `cargo xtask conformance` side by side, one column per cluster, as a
# Markdown table appended to $GITHUB_STEP_SUMMARY (or printed when that is unset). Arguments:
# LABEL=DIR pairs, DIR being a run's --report-dir (its verdict.txt; a run that wrote none shows
# `no verdict`).
set -euo pipefail
out=${GITHUB_STEP_SUMMARY:-/dev/stdout}
head="| |"
rule="|---|"
row="| upstream admission e2e (\`N passed, N failed, N skipped\`) |"
for pair in "$@"; do
  label=${pair%%=*}
  dir=${pair#*=}
  verdict="_no verdict (see the job's log)_"
  if [ -s "$dir/verdict.txt" ]; then
    verdict=$(head -1 "$dir/verdict.txt")
  fi
  head+=" ${label} |"
  rule+="---|"
  row+=" ${verdict} |"
done
{
  echo "### Upstream's admission conformance specs (docs/conformance.md)"
  echo
  echo "$head"
  echo "$rule"
  echo "$row"
  echo
} >>"$out"
