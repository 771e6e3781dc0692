#!/usr/bin/env bash
# Runs `cargo xtask lab run` with the given arguments (e.g. `--lab b --cluster kubeconfig ...`) as
# root (the labs' faults and the embedded node need it), with Go's toolchain pinned to the local
# one. Artifacts go to target/lab-artifacts/<run-id>/<lab>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
if [ "$(id -u)" != 0 ]; then
  exec sudo --preserve-env=PATH,HOME,CARGO_HOME,RUSTUP_HOME,GOTOOLCHAIN,GOPATH,GOCACHE,GOMODCACHE,GITHUB_STEP_SUMMARY,DOCKER_HOST \
    bash "$0" "$@"
fi
cargo xtask lab run "$@"
