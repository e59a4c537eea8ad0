//go:build tools

// Keeps go-containerregistry's crane in the module graph: `make image` assembles and pushes
// the image with it, without a container daemon.
package tools

import _ "github.com/google/go-containerregistry/cmd/crane"
