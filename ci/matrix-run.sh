#!/usr/bin/env bash
# Runs `cargo xtask matrix` with the given arguments (e.g. `--kubernetes v1.36.3 --kyverno v1.19.1`)
# as root (the embedded node and the labs' faults need it), with Go's toolchain pinned to the local
# one. Cell runs go to target/lab-artifacts/matrix-<utc>_<cell>_r<k>/, the drift table to
# target/lab-artifacts/matrix-<utc>/matrix.{md,html,json}.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
if [ "$(id -u)" != 0 ]; then
  exec sudo --preserve-env=PATH,HOME,CARGO_HOME,RUSTUP_HOME,GOTOOLCHAIN,GOPATH,GOCACHE,GOMODCACHE,GITHUB_STEP_SUMMARY \
    bash "$0" "$@"
fi
status=0
cargo xtask matrix "$@" || status=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  for md in target/lab-artifacts/matrix-*/matrix.md; do
    [ -f "$md" ] || continue
    { echo "### Drift table: cargo xtask matrix $*"; echo; cat "$md"; echo; } >> "$GITHUB_STEP_SUMMARY"
  done
fi
exit "$status"
