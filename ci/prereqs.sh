#!/usr/bin/env bash
# The Debian packages of the project, installed in one root step, for the GitHub workflows: their
# runners run `cargo test` as a user that cannot install. On a machine where `cargo test` runs as
# root (CI here, the lab machines) nothing calls this: `cargo test` and `cargo xtask` install what
# they need themselves (xtask/src/upstream/debian.rs and prereq.rs, ci/protoc). The list is the
# union of those lists (xtask's unit test `the_workflows_prereqs_script_lists_exactly_the_rust_lists`
# keeps them equal). Elsewhere than Debian it only says what is missing.
set -euo pipefail
# xtask/src/upstream/prereq.rs: the upstream builds and the embedded node; ci/protoc.
pkgs=(gcc libc6-dev pkg-config libseccomp-dev iptables iproute2 conntrack ca-certificates protobuf-compiler)
# debian.rs WORKFLOWS and DIST: shellcheck for actionlint; file and readelf for `cargo xtask dist`.
pkgs+=(shellcheck file binutils)
# debian.rs CONFORMANCE: BusyBox for the agnhost image of `cargo xtask conformance`.
pkgs+=(busybox-static)
# debian.rs SCRIPTING: the shells and groff that parse the completion scripts and man pages.
pkgs+=(zsh fish groff-base)
# debian.rs REPORT_PAGES: the report page test. Debian's chromium only: Ubuntu's `chromium` is a
# snap wrapper, and GitHub's Ubuntu runners already have google-chrome (KCA_CHROMIUM names it).
pkgs+=(fonts-noto-cjk fontconfig)
# shellcheck disable=SC1091
if [ -r /etc/os-release ] && . /etc/os-release && [ "${ID:-}" = debian ]; then
  pkgs+=(chromium)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "ci/prereqs: all Debian packages present"
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ci/prereqs: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
  echo "ci/prereqs: missing Debian packages: ${missing[*]} (install them as root)" >&2
  exit 1
fi
