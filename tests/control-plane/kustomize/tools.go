//go:build tools

// Keeps the kustomize CLI in the module graph, to render deploy/ in tests.
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
