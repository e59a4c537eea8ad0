#!/usr/bin/env bash
# Publishes one version of pipewarden from binaries `make release` has built: everything a user
# installs, pushed to REGISTRY and written to DIST, then signed. Run through `make release`;
# it is the same here, in a test and in the tag workflow.
#
#   REGISTRY     where to push: REGISTRY/pipewarden (the image index), REGISTRY/policies/kfp-default
#                (the default policy, an OCI Wasm artifact), REGISTRY/charts/pipewarden (the chart)
#   VERSION      the version (the workspace's); DIST the output folder (emptied first)
#   BINARIES     the static binaries: BINARIES/<target>/release/{pipewarden,kfp-compile}
#   TARGETS      "x86_64-unknown-linux-musl aarch64-unknown-linux-musl"
#   POLICY_WASM  the default policy built with the `policy` profile
#   COSIGN_KEY   a cosign private key (COSIGN_PASSWORD its password): keyed signatures with no
#                transparency-log upload, and the public key in DIST and in the chart and YAML;
#                empty: keyless (Sigstore's OIDC flow, as in the tag workflow), logged in Rekor
#   TOOLS        crane, cosign, helm and kustomize (.cache/bin); CARGO_CYCLONEDX the SBOM tool
#
# Prints a line per phase, then a table of what was published.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
: "${REGISTRY:?REGISTRY names where to push}" "${VERSION:?}" "${DIST:?}" "${BINARIES:?}"
: "${TARGETS:?}" "${POLICY_WASM:?}" "${TOOLS:?}" "${CARGO_CYCLONEDX:?}"
key="${COSIGN_KEY:-}"
crane="$TOOLS/crane" cosign="$TOOLS/cosign" helm="$TOOLS/helm" kustomize="$TOOLS/kustomize"
for tool in "$crane" "$cosign" "$helm" "$kustomize"; do
  [[ -x "$tool" ]] || { echo "release: no $tool: run \`make control-plane\`" >&2; exit 1; }
done
[[ -x "$CARGO_CYCLONEDX" ]] || { echo "release: no $CARGO_CYCLONEDX: run \`make release-tools\`" >&2; exit 1; }
[[ -f "$POLICY_WASM" ]] || { echo "release: no policy at $POLICY_WASM: run \`make policies\`" >&2; exit 1; }
[[ -z "$key" || -f "$key" ]] || { echo "release: COSIGN_KEY $key does not exist" >&2; exit 1; }

t0=$(date +%s)
phase() { echo "release: $* ($(($(date +%s) - t0))s)"; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$DIST" && mkdir -p "$DIST"
: >"$DIST/references.txt"
published() { # KIND REFERENCE: one row of references.txt
  printf '%-22s %s\n' "$1" "$2" >>"$DIST/references.txt"
}
# Loopback registries speak plain HTTP (the tests' registry).
host="${REGISTRY%%/*}"
plain_http=()
case "$host" in localhost | localhost:* | 127.* | \[::1\]*) plain_http=(--plain-http) ;; esac
# Keyed: offline, checked with the public key alone (as pipewarden checks a policy). Keyless:
# Fulcio's certificate for the workflow's OIDC identity, logged in Rekor.
sign_flags=(--yes --new-bundle-format=false)
if [[ -n "$key" ]]; then
  sign_flags+=(--key "$key" --tlog-upload=false)
  "$cosign" public-key --key "$key" >"$DIST/cosign.pub"
fi
((${#plain_http[@]})) && sign_flags+=(--allow-http-registry)
export COSIGN_YES=true
sign() { "$cosign" sign "${sign_flags[@]}" "$@" >/dev/null 2>"$work/cosign.log" || { cat "$work/cosign.log" >&2; exit 1; }; }

# 1. Binaries: statically linked, one per platform, checked by their ELF headers.
arch_of() { case "$1" in x86_64-*) echo amd64 ;; aarch64-*) echo arm64 ;; *) echo "release: unknown target $1" >&2; exit 1 ;; esac; }
machine_of() { case "$1" in amd64) echo "X86-64" ;; arm64) echo "AArch64" ;; esac; }
build_arch="$(case "$(uname -m)" in x86_64) echo amd64 ;; aarch64 | arm64) echo arm64 ;; *) uname -m ;; esac)"
arches=()
for target in $TARGETS; do
  arch="$(arch_of "$target")"
  arches+=("$arch")
  for name in pipewarden kfp-compile; do
    binary="$BINARIES/$target/release/$name"
    [[ -x "$binary" ]] || { echo "release: no $binary: run \`make release-binaries\`" >&2; exit 1; }
    if readelf -l "$binary" | grep -q 'Requesting program interpreter'; then
      echo "release: $binary is dynamically linked" >&2
      exit 1
    fi
    readelf -h "$binary" | grep -q "Machine:.*$(machine_of "$arch")" ||
      { echo "release: $binary is not a linux/$arch binary" >&2; exit 1; }
    install -m 0755 "$binary" "$DIST/$name-linux-$arch"
  done
done
native="$DIST/pipewarden-linux-$build_arch"
[[ -x "$native" ]] || { echo "release: no binary for this host ($build_arch) among $TARGETS" >&2; exit 1; }
commit="$("$native" --version | sed -n 's/.*(commit \([^,]*\),.*/\1/p')"
cp "$POLICY_WASM" "$DIST/kfp-default.wasm"
phase "binaries: ${arches[*]} (commit $commit)"

# 2. SBOMs (CycloneDX) of each binary: the crates it is built from, resolved for its target.
for target in $TARGETS; do
  arch="$(arch_of "$target")"
  for package in pipewarden:host kfp-compile:policies/kfp-compiler; do
    name="${package%%:*}" dir="${package#*:}"
    # cargo-cyclonedx writes beside the manifest: a name of our own, moved out at once.
    stem="release-sbom-$$-$name-$arch"
    (cd "$repo" && "$CARGO_CYCLONEDX" cyclonedx -q --manifest-path "$dir/Cargo.toml" \
      --format json --spec-version 1.5 --target "$target" \
      --override-filename "$stem")
    mv "$repo/$dir/$stem.json" "$DIST/$name-linux-$arch.cdx.json"
  done
done
phase "SBOMs: $(ls "$DIST"/*.cdx.json | wc -l) (CycloneDX 1.5)"

# 3. The image: one per platform, assembled without a daemon, then one index naming both.
image="$REGISTRY/pipewarden"
manifests=()
for arch in "${arches[@]}"; do
  pinned="$(PLATFORM="linux/$arch" COMMIT="$commit" CRANE="$crane" \
    "$here/assemble.sh" "$DIST/pipewarden-linux-$arch" "$image:$VERSION-linux-$arch")"
  manifests+=(-m "$pinned")
  published "image linux/$arch" "$pinned"
done
"$crane" index append "${manifests[@]}" -t "$image:$VERSION" >/dev/null
index_digest="$("$crane" digest "$image:$VERSION")"
published image "$image:$VERSION@$index_digest"
phase "image index $image:$VERSION@$index_digest"

# 4. The default policy as an OCI Wasm artifact, pushed by the binary just built.
policy_ref="$("$native" policy push "$POLICY_WASM" "oci://$REGISTRY/policies/kfp-default:$VERSION")"
published policy "$policy_ref"
phase "policy $policy_ref"

# 5. The chart, whose defaults are this release: the image and the policy by digest (and the
# public key the policy is checked with, when keyed).
chart_ref="$(REGISTRY="$REGISTRY" VERSION="$VERSION" DIST="$DIST" HELM="$helm" \
  IMAGE_REPOSITORY="$image" IMAGE_DIGEST="$index_digest" POLICY_REF="$policy_ref" \
  VERIFY_KEY_FILE="$([[ -z "$key" ]] || echo "$DIST/cosign.pub")" "$here/publish-chart.sh")"
chart_digest="${chart_ref##*@}"
published chart "$chart_ref"
phase "chart oci://$chart_ref"

# 6. The release YAML: the `oci` overlay with this release's image and policy by digest.
deploy="$work/deploy"
cp -R "$repo/deploy" "$deploy"
rm -rf "$deploy/helm"
cp "$POLICY_WASM" "$deploy/base/policy/policy.wasm" # the overlay drops it from the ConfigMap
printf 'sha256:%s' "$(sha256sum "$POLICY_WASM" | cut -d' ' -f1)" >"$deploy/base/policy/policy.sha256"
echo "PIPEWARDEN_POLICY=$policy_ref" >"$deploy/overlays/oci/policy.env"
mkdir -p "$deploy/release"
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources: [../overlays/oci]"
  echo "images:"
  echo "  - name: ghcr.io/pipewarden/pipewarden"
  echo "    newName: $image"
  echo "    digest: $index_digest"
  if [[ -z "$key" ]]; then # keyless: the digest pins the policy; nothing to check a key with
    echo "patches:"
    echo "  - path: keyless.yaml"
  fi
} >"$deploy/release/kustomization.yaml"
if [[ -n "$key" ]]; then
  cp "$DIST/cosign.pub" "$deploy/overlays/oci/cosign.pub"
else
  cat >"$deploy/release/keyless.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pipewarden
spec:
  template:
    spec:
      containers:
        - name: pipewarden
          env:
            - name: PIPEWARDEN_POLICY_VERIFY_KEY
              $patch: delete
          volumeMounts:
            - mountPath: /etc/pipewarden/verify
              $patch: delete
      volumes:
        - name: verify-key
          $patch: delete
EOF
fi
"$kustomize" build "$deploy/release" >"$DIST/pipewarden.yaml"
phase "release YAML pipewarden.yaml ($(grep -c '^kind:' "$DIST/pipewarden.yaml") objects)"

# 7. Signatures: the index and each platform's image, the policy, the chart; each image's SBOM
# as an attestation of that image; the checksums file as a blob.
sign --recursive "$image@$index_digest"
for arch in "${arches[@]}"; do
  pinned="$(awk -v k="linux/$arch" '$1 == "image" && $2 == k { print $3 }' "$DIST/references.txt")"
  "$cosign" attest "${sign_flags[@]}" --type cyclonedx \
    --predicate "$DIST/pipewarden-linux-$arch.cdx.json" "$pinned" >/dev/null 2>"$work/cosign.log" ||
    { cat "$work/cosign.log" >&2; exit 1; }
done
sign "${policy_ref#oci://}"
sign "$REGISTRY/charts/pipewarden@$chart_digest"
(cd "$DIST" && sha256sum -- pipewarden-linux-* kfp-compile-linux-* kfp-default.wasm \
  "pipewarden-$VERSION.tgz" pipewarden.yaml >SHA256SUMS)
blob_flags=(--yes)
if [[ -n "$key" ]]; then
  blob_flags+=(--key "$key" --tlog-upload=false --output-signature "$DIST/SHA256SUMS.sig")
else
  blob_flags+=(--bundle "$DIST/SHA256SUMS.sigstore.json")
fi
"$cosign" sign-blob "${blob_flags[@]}" "$DIST/SHA256SUMS" >/dev/null 2>"$work/cosign.log" ||
  { cat "$work/cosign.log" >&2; exit 1; }
phase "signed: image index and ${#arches[@]} images, ${#arches[@]} SBOM attestations, policy, chart, SHA256SUMS ($([[ -n "$key" ]] && echo "key $key" || echo keyless))"

echo
printf '%-22s %s\n' WHAT REFERENCE
cat "$DIST/references.txt"
echo
printf '%-34s %10s\n' FILE BYTES
for file in "$DIST"/*; do printf '%-34s %10s\n' "${file##*/}" "$(stat -c %s "$file")"; done
echo "release: $VERSION published in $(($(date +%s) - t0))s"
