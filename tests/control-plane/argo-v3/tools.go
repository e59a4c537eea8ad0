//go:build tools

// Keeps Argo Workflows v3's workflow controller in the module graph: `make bench-stale` measures
// its stale-copy behaviour (the release KFP 2.14 ships) beside v4's and pipewarden's.
package tools

import _ "github.com/argoproj/argo-workflows/v3/cmd/workflow-controller"
