//go:build tools

// Keeps the CNCF distribution registry in the module graph: a loopback OCI registry for tests.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
