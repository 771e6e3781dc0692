#!/usr/bin/env bash
# Installs k3s VERSION (e.g. v1.35.8+k3s1) on this machine with the install script of that very
# release, as on a student's lab VM, then waits (bounded) until the node is Ready.
# Traefik and metrics-server are disabled (the labs never use them). Needs root and the internet
# (GitHub Actions); never run it on a machine you care about.
set -euo pipefail
version=${1:?usage: ci/install-k3s.sh VERSION (e.g. v1.35.8+k3s1)}
[ "$(id -u)" = 0 ] || { echo "ci/install-k3s: run as root" >&2; exit 1; }
script=$(mktemp)
curl -fsSL --retry 3 -o "$script" "https://raw.githubusercontent.com/k3s-io/k3s/${version}/install.sh"
INSTALL_K3S_VERSION="$version" \
  INSTALL_K3S_EXEC="server --disable=traefik --disable=metrics-server --write-kubeconfig-mode=644" \
  sh "$script"
rm -f "$script"
echo "ci/install-k3s: waiting up to 180 s for the node to be Ready" >&2
k3s kubectl wait --for=condition=Ready node --all --timeout=180s
k3s kubectl version
echo "ci/install-k3s: k3s ${version} ready: kubeconfig /etc/rancher/k3s/k3s.yaml, CRI /run/k3s/containerd/containerd.sock" >&2
