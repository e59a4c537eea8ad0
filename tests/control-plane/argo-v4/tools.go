//go:build tools

// Keeps Argo Workflows v4's workflow controller in the module graph: the Argo e2e tests run the
// real controller against the local kube-apiserver. `retry/` is `argo retry` in Kubernetes API
// mode, built from the same module.
package tools

import _ "github.com/argoproj/argo-workflows/v4/cmd/workflow-controller"
