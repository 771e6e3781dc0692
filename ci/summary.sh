#!/usr/bin/env bash
# Appends the key facts of every lab run under DIR (default target/lab-artifacts) as a Markdown
# table to $GITHUB_STEP_SUMMARY (or prints it when that is unset), with `cargo xtask lab summary`,
# then the runs' junit.xml counts and failing cases (`cargo xtask lab junit-summary`).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/lab-artifacts}
title=${2:-Lab facts}
out=${GITHUB_STEP_SUMMARY:-/dev/stdout}
{
  echo "### ${title}"
  echo
  if ! cargo xtask lab summary "$dir"; then
    echo "_no lab evidence under ${dir}: the lab did not get as far as act 1_"
  fi
  echo
  echo "#### JUnit (one test case per act and per grade)"
  echo
  if ! cargo xtask lab junit-summary "$dir"; then
    echo "_no junit.xml under ${dir}_"
  fi
  echo
} >>"$out"
