#!/usr/bin/env bash
# Installs the Debian packages the embedded backend and the build need, when run as root on
# Debian (CI, the lab machines). Shared by .ci/run and the GitHub workflows. Elsewhere it only
# says what is missing. `cargo xtask upstream build` checks the same list again itself.
set -euo pipefail
pkgs=(gcc pkg-config libseccomp-dev protobuf-compiler iptables conntrack iproute2 util-linux shellcheck)
# A Japanese font (and fontconfig's fc-list) for the report page test's Japanese pages, which
# would otherwise render as boxes; file and binutils (readelf) for `cargo xtask dist`'s checks.
pkgs+=(fonts-noto-cjk fontconfig file binutils)
# The shells and groff that parse `completion bash|zsh|fish` and the man pages (lab/tests/scripting.rs).
pkgs+=(zsh fish groff-base)
# Headless Chromium for the report page test (lab/tests/report.rs). On Debian only: Ubuntu's
# `chromium` is a snap wrapper, and GitHub's Ubuntu runners already have google-chrome (the test
# also takes KCA_CHROMIUM=/path/to/browser).
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
