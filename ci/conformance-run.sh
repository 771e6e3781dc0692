#!/usr/bin/env bash
# Runs `cargo xtask conformance` with the given arguments (e.g. `--cluster kubeconfig ...`) as root
# (the embedded node and the image import need it), with Go's toolchain pinned to the local one.
# The JUnit report, e2e.log and verdict.txt go to the --report-dir given.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
if [ "$(id -u)" != 0 ]; then
  exec sudo --preserve-env=PATH,HOME,CARGO_HOME,RUSTUP_HOME,GOTOOLCHAIN,GOPATH,GOCACHE,GOMODCACHE,GITHUB_STEP_SUMMARY \
    bash "$0" "$@"
fi
cargo xtask conformance "$@"
