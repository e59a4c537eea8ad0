#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kustomize, the OCI registry, crane and cosign from the pinned Go wrapper modules beside this script.
# Output: $PIPEWARDEN_CONTROL_PLANE_CACHE (default <repo>/.cache/bin). A binary is rebuilt only
# when its version marker (derived from the go.mod pins) differs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${PIPEWARDEN_CONTROL_PLANE_CACHE:-$repo/.cache/bin}"
mkdir -p "$out"

# Modules come only through the configured Go module proxy: no direct VCS fetches, no toolchain download.
proxy="$(go env GOPROXY | sed -E 's/[,|]direct$//')"
if [[ -z "$proxy" || "$proxy" == direct || "$proxy" == off ]]; then
  echo "control-plane: GOPROXY must name a module proxy (got '$(go env GOPROXY)')" >&2
  exit 1
fi
export GOPROXY="$proxy" GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

# Version of a required module in a go.mod: `pinned <dir> <module>`.
pinned() {
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) && $0 !~ /=>/ { print ($1 == m ? $2 : $3); exit }' "$1/go.mod"
}

# Marker: the pin plus a hash of go.mod, so any changed replace or requirement triggers a rebuild.
marker() {
  echo "$2 $(pinned "$1" "$2") go.mod:$(sha256sum "$1/go.mod" | cut -c1-16)"
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# build <name> <module dir> <pinned module> <package> [ldflags]
build() {
  local name=$1 dir=$2 mod=$3 pkg=$4 ldflags=${5:-}
  local want bin="$out/$name"
  want="$(marker "$dir" "$mod")"
  if [[ -x "$bin" && -f "$bin.version" && "$(cat "$bin.version")" == "$want" ]]; then
    echo "control-plane: $name up to date ($want)"
    return
  fi
  local t
  t=$(now)
  (cd "$dir" && go mod download)
  echo "control-plane: $name modules ready in $(secs "$t")"
  t=$(now)
  (cd "$dir" && go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$bin.tmp" "$pkg")
  mv "$bin.tmp" "$bin"
  echo "$want" >"$bin.version"
  echo "control-plane: $name built in $(secs "$t") ($want)"
}

etcd_dir="$here/etcd"
apiserver_dir="$here/kube-apiserver"

build etcd "$etcd_dir" go.etcd.io/etcd/server/v3 .

k8s="$(pinned "$apiserver_dir" k8s.io/kubernetes)" # e.g. v1.34.4
major="${k8s#v}" major="${major%%.*}"
minor="${k8s#v*.}" minor="${minor%%.*}"
version_pkg=k8s.io/component-base/version
build kube-apiserver "$apiserver_dir" k8s.io/kubernetes k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $version_pkg.gitVersion=$k8s -X $version_pkg.gitMajor=$major -X $version_pkg.gitMinor=$minor"

# kustomize renders deploy/ for the manifest tests.
build kustomize "$here/kustomize" sigs.k8s.io/kustomize/kustomize/v5 sigs.k8s.io/kustomize/kustomize/v5

# A loopback OCI registry (CNCF distribution) for the image and policy-artifact tests, and
# crane, which `make image` assembles and pushes the image with.
build registry "$here/registry" github.com/distribution/distribution/v3 \
  github.com/distribution/distribution/v3/cmd/registry
build crane "$here/crane" github.com/google/go-containerregistry \
  github.com/google/go-containerregistry/cmd/crane
# cosign signs policy artifacts in the signature tests.
build cosign "$here/cosign" github.com/sigstore/cosign/v2 github.com/sigstore/cosign/v2/cmd/cosign

echo "control-plane: binaries in $out"
