//go:build tools

// Keeps the cosign CLI in the module graph: tests sign policy artifacts with it.
package tools

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
