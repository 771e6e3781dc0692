#!/usr/bin/env bash
# The newcomer's first `cargo xtask lab run`, timed (docs/bench.md "A cold machine"): cargo's home,
# Go's module and build caches, the upstream cache and the target directory all point at a fresh
# empty directory (`mktemp -d`), so every crate and module is downloaded and everything is built.
# Every output line is stamped with the UTC time; `/usr/bin/time -v` gives the wall time and CPU.
# The directory is kept (its path is printed) for inspection; delete it yourself when done.
# Run as root from anywhere; the repository is this script's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=$(mktemp -d /var/tmp/kca-cold.XXXXXX)
mkdir "$root/cargo" "$root/gocache" "$root/gomod" "$root/upstream" "$root/target"
export CARGO_HOME=$root/cargo GOCACHE=$root/gocache GOMODCACHE=$root/gomod \
  KCA_UPSTREAM_CACHE=$root/upstream CARGO_TARGET_DIR=$root/target
cd "$repo"
echo "cold run in $root, from $(git rev-parse --short HEAD), start $(date -u +%T)"
/usr/bin/time -v cargo xtask lab run 2>&1 | while IFS= read -r l; do
  printf '%s %s\n' "$(date -u +%T)" "$l"
done
echo "end $(date -u +%T); caches kept in $root"
