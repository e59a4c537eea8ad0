#!/usr/bin/env bash
# Packages deploy/helm/pipewarden with a release's defaults and pushes it to
# oci://REGISTRY/charts: image.repository and image.digest, policy.source=oci with
# policy.oci.reference (a reference pinned by digest) and, when VERIFY_KEY_FILE names one, the
# cosign public key it is checked with. The ConfigMap policy stays an option
# (policy.source=configMap after add-policy.sh). Writes DIST/pipewarden-VERSION.tgz; prints
# REGISTRY/charts/pipewarden:VERSION@sha256:... `image/release.sh` calls it, and so do the
# tests of the README's install commands.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${REGISTRY:?}" "${VERSION:?}" "${DIST:?}" "${HELM:?}" "${IMAGE_REPOSITORY:?}" "${IMAGE_DIGEST:?}" "${POLICY_REF:?}"
[[ "$POLICY_REF" == oci://*@sha256:* ]] || { echo "publish-chart: POLICY_REF must be oci://...@sha256:..." >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chart="$work/pipewarden"
cp -R "$repo/deploy/helm/pipewarden" "$chart"
rm -f "$chart/policy/policy.wasm" "$chart/policy/policy.sha256"
values=(
  "image.repository=$IMAGE_REPOSITORY"
  "image.digest=$IMAGE_DIGEST"
  "policy.source=oci"
  "policy.oci.reference=$POLICY_REF"
)
[[ -z "${VERIFY_KEY_FILE:-}" ]] || values+=("policy.oci.verifyKey=$(cat "$VERIFY_KEY_FILE")")
python3 "$here/set_values.py" "$chart/values.yaml" "${values[@]}"
mkdir -p "$DIST"
"$HELM" package "$chart" --version "$VERSION" --app-version "$VERSION" -d "$DIST" >/dev/null
plain_http=()
case "${REGISTRY%%/*}" in localhost | localhost:* | 127.* | \[::1\]*) plain_http=(--plain-http) ;; esac
"$HELM" push "$DIST/pipewarden-$VERSION.tgz" "oci://$REGISTRY/charts" "${plain_http[@]}" >"$work/push.log" 2>&1 ||
  { cat "$work/push.log" >&2; exit 1; }
digest="$(sed -n 's/^Digest: *//p' "$work/push.log")"
[[ -n "$digest" ]] || { cat "$work/push.log" >&2; exit 1; }
echo "$REGISTRY/charts/pipewarden:$VERSION@$digest"
