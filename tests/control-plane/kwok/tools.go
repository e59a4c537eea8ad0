//go:build tools

// Keeps kwok in the module graph: it simulates nodes and pod lifecycles against the local
// kube-apiserver, so Argo's controller can schedule pods that no kubelet runs.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
