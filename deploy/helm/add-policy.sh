#!/usr/bin/env bash
# Puts a built policy and its sha256 pin into the chart (pipewarden/policy/), where its
# ConfigMap reads them: `deploy/helm/add-policy.sh [policy.wasm]`. Default: the default policy
# from `make policies`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
wasm="${1:-${CARGO_TARGET_DIR:-$repo/target}/wasm32-wasip2/policy/kfp_default.wasm}"
[[ -f "$wasm" ]] || { echo "no policy at $wasm: run \`make policies\`" >&2; exit 1; }
cp "$wasm" "$here/pipewarden/policy/policy.wasm"
echo "sha256:$(sha256sum "$wasm" | cut -d' ' -f1)" >"$here/pipewarden/policy/policy.sha256"
echo "pipewarden/policy/policy.wasm: $(cat "$here/pipewarden/policy/policy.sha256")"
