//go:build tools

// Package tools pins the upstream commands this wrapper module builds.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/kyverno"
	_ "github.com/kyverno/kyverno/cmd/kyverno-init"
	_ "github.com/kyverno/kyverno/cmd/background-controller"
	_ "github.com/kyverno/kyverno/cmd/cleanup-controller"
	_ "github.com/kyverno/kyverno/cmd/reports-controller"
)
