//go:build tools

// Keeps kube-apiserver in the module graph so `go build k8s.io/kubernetes/cmd/kube-apiserver` resolves.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
