#!/usr/bin/env bash
# Installs a released Kyverno VERSION (e.g. v1.19.2) from its official Helm chart repository into
# the cluster behind KUBECONFIG (default k3s's), for the nightly matrix's pairs whose Kyverno is not
# the pinned one (the pinned one is installed by `lab run --install-kyverno` from the chart built
# here). The chart version whose appVersion is VERSION is looked up in the repository index.
set -euo pipefail
version=${1:?usage: ci/install-kyverno-release.sh VERSION (e.g. v1.19.2)}
export KUBECONFIG=${KUBECONFIG:-/etc/rancher/k3s/k3s.yaml}
command -v helm >/dev/null || { echo "ci/install-kyverno-release: helm is required" >&2; exit 1; }
helm repo add kyverno https://kyverno.github.io/kyverno/ >/dev/null
helm repo update kyverno >/dev/null
chart=$(helm search repo kyverno/kyverno --versions -o json |
  jq -r --arg app "$version" '[.[] | select(.name == "kyverno/kyverno" and .app_version == $app) | .version] | first // empty')
[ -n "$chart" ] || { echo "ci/install-kyverno-release: no kyverno/kyverno chart has appVersion ${version}" >&2; exit 1; }
echo "ci/install-kyverno-release: Kyverno ${version} from chart kyverno/kyverno ${chart}" >&2
helm install kyverno kyverno/kyverno --version "$chart" -n kyverno --create-namespace --wait --timeout 10m
