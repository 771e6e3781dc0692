//go:build tools

// Package tools pins the upstream commands this wrapper module builds.
package tools

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
