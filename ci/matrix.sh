#!/usr/bin/env bash
# Prints the nightly version matrix as GitHub step outputs (append to $GITHUB_OUTPUT):
#   pairs=[{"k3s":"v1.35.8+k3s1","kyverno":"v1.19.1"}, ...]   k3s release x Kyverno release
#   k3s_tags=["v1.35.8-k3s1", ...]                           rancher/k3s image tags (k3s backend)
# The pinned pair plus the newest patch releases of the same minor lines (k3s v1.35.x,
# Kyverno v1.19.x), read from the GitHub releases of k3s-io/k3s and kyverno/kyverno (GH_TOKEN is
# used when set). When the releases cannot be read, only the pinned pair is printed, with a
# warning: the pinned pair always runs.
set -euo pipefail
pinned_k3s=${PINNED_K3S:-v1.35.8+k3s1}
pinned_kyverno=${PINNED_KYVERNO:-v1.19.1}
k3s_minor=$(sed -E 's/^(v[0-9]+\.[0-9]+)\..*/\1/' <<<"$pinned_k3s")
kyverno_minor=$(sed -E 's/^(v[0-9]+\.[0-9]+)\..*/\1/' <<<"$pinned_kyverno")

releases() {
  local auth=()
  if [ -n "${GH_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer ${GH_TOKEN}"); fi
  curl -fsSL --retry 3 "${auth[@]}" "https://api.github.com/repos/$1/releases?per_page=100"
}

newest_k3s=$pinned_k3s
if json=$(releases k3s-io/k3s); then
  found=$(jq -r --arg m "$k3s_minor" '
    [.[] | select(.prerelease | not) | .tag_name
     | select(startswith($m + ".")) | select(test("^v[0-9]+\\.[0-9]+\\.[0-9]+\\+k3s[0-9]+$"))]
    | sort_by(capture("^v(?<a>[0-9]+)\\.(?<b>[0-9]+)\\.(?<c>[0-9]+)\\+k3s(?<d>[0-9]+)$") | [.a, .b, .c, .d] | map(tonumber))
    | last // empty' <<<"$json")
  newest_k3s=${found:-$pinned_k3s}
else
  echo "::warning::ci/matrix: could not read k3s releases; running the pinned k3s only" >&2
fi

newest_kyverno=$pinned_kyverno
if json=$(releases kyverno/kyverno); then
  found=$(jq -r --arg m "$kyverno_minor" '
    [.[] | select(.prerelease | not) | .tag_name
     | select(startswith($m + ".")) | select(test("^v[0-9]+\\.[0-9]+\\.[0-9]+$"))]
    | sort_by(ltrimstr("v") | split(".") | map(tonumber))
    | last // empty' <<<"$json")
  newest_kyverno=${found:-$pinned_kyverno}
else
  echo "::warning::ci/matrix: could not read Kyverno releases; running the pinned Kyverno only" >&2
fi

pairs=$(jq -cn --arg pk "$pinned_k3s" --arg nk "$newest_k3s" --arg py "$pinned_kyverno" --arg ny "$newest_kyverno" '
  [{k3s: $pk, kyverno: $py}, {k3s: $nk, kyverno: $py}, {k3s: $pk, kyverno: $ny}, {k3s: $nk, kyverno: $ny}] | unique')
tags=$(jq -cn --arg pk "$pinned_k3s" --arg nk "$newest_k3s" '[$pk, $nk] | unique | map(sub("\\+"; "-"))')
echo "ci/matrix: k3s ${pinned_k3s} (newest ${newest_k3s}), Kyverno ${pinned_kyverno} (newest ${newest_kyverno})" >&2
echo "pairs=${pairs}"
echo "k3s_tags=${tags}"
