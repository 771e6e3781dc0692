//go:build tools

// Package tools pins the upstream commands this wrapper module builds.
package tools

import (
	_ "github.com/k3s-io/kine"
)
