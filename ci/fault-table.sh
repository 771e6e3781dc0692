#!/usr/bin/env bash
# The fault-attempt table, N times (issue 12): runs the freeze healer's rows
# (`cargo test -p tests --test freeze_healer`, no cluster), lab A's rows on a real
# embedded cluster (`--test labs -- lab_a::fault_row`: only the `fault_row_*` rows of lab A's
# lane, one cluster per run) and lab B's (`--test labs -- lab_b::fault_row`: acts 1-4, then only
# the `fault_row_*` rows, one cluster per run) N times and prints, per row, how many of N held,
# plus every `figure:` line's values per row.
#
#   ci/fault-table.sh [--runs N] [--only freeze_healer|lab_a|lab_b]
#                                       (N default 10; not part of `cargo test`)
#
# Environment:
#   FAULT_TABLE_LOCK=FILE  wrap each cluster run in `flock FILE` (a shared machine's own
#                          convention; the fixture takes the project's machine lock itself)
#   FAULT_TABLE_OUT=DIR    where the logs go (default target/fault-table/<UTC time>)
#
# A row that is missing from a run's output (the test binary crashed, the cluster did not come
# up) counts as not held in that run. Exit status: 0 when every row held every time, else 1.
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

runs=10
tests=(freeze_healer lab_a lab_b)
# The test binary a group of rows is in, and the libtest filter it runs with here (empty: every
# row of the binary).
binary_of() {
  case "$1" in
    lab_a|lab_b) echo labs ;;
    *) echo "$1" ;;
  esac
}
filter_of() {
  case "$1" in
    lab_a|lab_b) echo "$1::fault_row" ;;
    *) echo "" ;;
  esac
}
while [ $# -gt 0 ]; do
  case "$1" in
    --only)
      case "${2:-}" in
        freeze_healer|lab_a|lab_b) tests=("$2"); shift 2 ;;
        *) echo "--only: expected freeze_healer, lab_a or lab_b, found '${2:-}'" >&2; exit 2 ;;
      esac ;;
    --runs) runs="${2:-}"; shift 2 || { echo "--runs needs a value" >&2; exit 2; } ;;
    --runs=*) runs="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (expected --runs N, --only TEST)" >&2; exit 2 ;;
  esac
done
case "$runs" in
  ''|*[!0-9]*|0) echo "--runs: expected a positive integer, found '$runs'" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
out="${FAULT_TABLE_OUT:-target/fault-table/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"

echo "building the rows' test binaries" >&2
binaries=()
for t in "${tests[@]}"; do binaries+=(--test "$(binary_of "$t")"); done
cargo test -q -p tests --no-run "${binaries[@]}" >"$out/build.log" 2>&1 || {
  tail -20 "$out/build.log" >&2; exit 1; }

: >"$out/results.tsv"
: >"$out/figures.tsv"
for i in $(seq 1 "$runs"); do
  for t in "${tests[@]}"; do
    lock=()
    if [ "$t" != freeze_healer ] && [ -n "${FAULT_TABLE_LOCK:-}" ]; then
      lock=(flock "$FAULT_TABLE_LOCK")
    fi
    read -r -a filter <<<"$(filter_of "$t")"
    log="$out/$t.$i"
    start=$(date +%s)
    # The harness's verdicts go to stdout, the rows' own lines (figures) and cargo's to stderr.
    "${lock[@]}" cargo test -q -p tests --test "$(binary_of "$t")" -- "${filter[@]}" >"$log.out" 2>"$log.err" || true
    echo "run $i/$runs $t: $(( $(date +%s) - start )) s, $(grep -c -E '^test .* \.\.\. ok$' "$log.out" || true) rows ok, logs $log.out $log.err" >&2
    # "test NAME ... ok" / "test NAME ... FAILED"
    sed -n -E "s/^test (.*[^ ]) +\.\.\. (ok|FAILED)$/$i\t$t\t\1\t\2/p" "$log.out" >>"$out/results.tsv"
    # Every test's harness announces its rows first (`--list`), so a crashed run still counts.
    cargo test -q -p tests --test "$(binary_of "$t")" -- --list "${filter[@]}" 2>/dev/null \
      | sed -n -E "s/^(.*): test$/$i\t$t\t\1\tlisted/p" >>"$out/results.tsv"
    grep -E 'figure:|    row .*: ' "$log.err" | sed -E "s/^ +//; s/^/$i\t$t\t/" >>"$out/figures.tsv" || true
  done
done

echo
echo "## Fault-attempt rows, $runs run(s), $(date -u +%Y-%m-%d) ($out)"
echo
echo "| test | row | held |"
echo "|---|---|---|"
table=$(awk -F'\t' -v runs="$runs" '
  $4 == "listed" { rows[$2 "\t" $3] = 1; next }
  $4 == "ok" { ok[$2 "\t" $3]++ }
  END {
    for (k in rows) {
      split(k, p, "\t")
      printf "| %s | %s | %d/%d |\n", p[1], p[2], ok[k] + 0, runs
    }
  }' "$out/results.tsv" | sort)
echo "$table"
status=0
if [ -z "$table" ] || echo "$table" | grep -qv "| $runs/$runs |$"; then status=1; fi
echo
echo "Figures (every run): $out/figures.tsv"
awk -F'\t' '
  match($3, /[0-9]+ ms/) {
    v = substr($3, RSTART, RLENGTH - 3) + 0
    key = $2 ": " substr($3, 1, RSTART - 1) "N ms" substr($3, RSTART + RLENGTH)
    if (!(key in n) || v < lo[key]) lo[key] = v
    if (!(key in n) || v > hi[key]) hi[key] = v
    n[key]++
  }
  END { for (k in n) printf "  %s: N = %d-%d ms (%d values)\n", k, lo[k], hi[k], n[k] }
' "$out/figures.tsv" | sort
exit "$status"
