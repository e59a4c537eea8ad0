//go:build tools

// Keeps the Helm CLI in the module graph: tests lint and render deploy/helm/pipewarden.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
