#!/usr/bin/env bash
# Renders an overlay with a built policy: `deploy/render.sh [overlay] [policy.wasm]`.
# Default: the kubeflow overlay and the default policy from `make policies`.
# COMPONENTS="monitoring ..." adds components from deploy/components/ to the overlay.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
overlay="${1:-kubeflow}"
wasm="${2:-${CARGO_TARGET_DIR:-$repo/target}/wasm32-wasip2/policy/kfp_default.wasm}"
kustomize="${KUSTOMIZE:-${PIPEWARDEN_CONTROL_PLANE_BIN:-${PIPEWARDEN_CONTROL_PLANE_CACHE:-$repo/.cache/bin}}/kustomize}"
[[ -f "$wasm" ]] || { echo "no policy at $wasm: run \`make policies\`" >&2; exit 1; }
[[ -x "$kustomize" ]] || { echo "no kustomize at $kustomize: run \`make control-plane\`" >&2; exit 1; }
cp "$wasm" "$here/base/policy/policy.wasm"
printf 'sha256:%s' "$(sha256sum "$wasm" | cut -d' ' -f1)" >"$here/base/policy/policy.sha256"
if [[ -z "${COMPONENTS:-}" ]]; then
  exec "$kustomize" build "$here/overlays/$overlay"
fi
# Components join through a throwaway kustomization beside the overlays (kustomize takes
# only relative paths) that names the overlay, and puts the components' own objects (a
# ServiceMonitor, say) in the overlay's namespace as well.
work="$(mktemp -d "$here/.render.XXXXXX")"
trap 'rm -rf "$work"' EXIT
namespace="$(sed -n 's/^namespace: *//p' "$here/overlays/$overlay/kustomization.yaml")"
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  [[ -z "$namespace" ]] || echo "namespace: $namespace"
  echo "resources: [../overlays/$overlay]"
  echo "components:"
  for component in $COMPONENTS; do echo "  - ../components/$component"; done
} >"$work/kustomization.yaml"
"$kustomize" build "$work"
