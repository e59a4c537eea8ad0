#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kustomize, Helm, the OCI registry, crane, cosign, Argo Workflows v4's
# workflow controller and `argo retry`, kwok and nats-server from the pinned Go wrapper modules
# beside this script, and copies Argo's CRDs out of the same module and the OpenReports CRDs out
# of theirs.
# Output: $PIPEWARDEN_CONTROL_PLANE_CACHE (default <repo>/.cache/bin). A binary is rebuilt only
# when its version marker (derived from the go.mod pins) differs.
#
#   build.sh                 everything `make test` needs
#   build.sh --argo-v3       also Argo v3's workflow controller (for `make bench-stale` only)
#   build.sh --only NAME...  just the named binaries (e.g. --only argo-v3-workflow-controller;
#                            --only promql-eval for the monitoring picture, never built otherwise)
set -euo pipefail

with_argo_v3=false
only=()
while (($#)); do
  case "$1" in
  --argo-v3) with_argo_v3=true ;;
  --only)
    shift
    only=("$@")
    break
    ;;
  *)
    echo "control-plane: unknown argument '$1' (expected --argo-v3 or --only NAME...)" >&2
    exit 2
    ;;
  esac
  shift
done

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
  if ((${#only[@]})) && [[ " ${only[*]} " != *" $name "* ]]; then
    return
  fi
  want="$(marker "$dir" "$mod")"
  if [[ "$pkg" == .* ]]; then # a main package of the wrapper module: its sources count too
    want="$want src:$(cat "$dir/$pkg"/*.go | sha256sum | cut -c1-16)"
  fi
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

# Helm lints and renders deploy/helm/pipewarden; the ldflags are Helm's own release build's (its
# version, and the Kubernetes version its client-go speaks as the default capabilities).
helm_version="$(pinned "$here/helm" helm.sh/helm/v3)"
client_go="$(pinned "$here/helm" k8s.io/client-go)" # v0.MINOR.PATCH is Kubernetes 1.MINOR
client_go_minor="${client_go#v0.}" client_go_minor="${client_go_minor%%.*}"
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in pkg/lint/rules pkg/chartutil; do
  helm_ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$client_go_minor"
done
build helm "$here/helm" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$helm_ldflags"

# A loopback OCI registry (CNCF distribution) for the image and policy-artifact tests, and
# crane, which `make image` assembles and pushes the image with.
build registry "$here/registry" github.com/distribution/distribution/v3 \
  github.com/distribution/distribution/v3/cmd/registry
build crane "$here/crane" github.com/google/go-containerregistry \
  github.com/google/go-containerregistry/cmd/crane
# cosign signs policy artifacts in the signature tests.
build cosign "$here/cosign" github.com/sigstore/cosign/v2 github.com/sigstore/cosign/v2/cmd/cosign

# Argo Workflows' controller (v4.0.7 has the uid/resourceVersion stale-copy fix) and `argo retry`
# in Kubernetes API mode (argo-v4/retry: cmd/argo embeds a UI build the module lacks); kwok
# simulates the nodes and pod lifecycles Argo's pods go through.
argo_ldflags() { # <module> <version>
  echo "-X $1.version=$2 -X $1.gitTag=$2 -X $1.gitTreeState=clean -X $1.buildDate=1970-01-01T00:00:00Z"
}
argo4=github.com/argoproj/argo-workflows/v4
argo4_version="$(pinned "$here/argo-v4" "$argo4")"
build argo-v4-workflow-controller "$here/argo-v4" "$argo4" "$argo4/cmd/workflow-controller" \
  "$(argo_ldflags "$argo4" "$argo4_version")"
build argo-v4-retry "$here/argo-v4" "$argo4" ./retry
# Argo's own CRDs, from the module the controller was built from (minimal: what Argo installs),
# and the full Workflow CRD for its schema.
crds() { # <name> <module dir> <module>
  local name=$1 dir=$2 mod=$3 want target="$out/$1"
  want="$(marker "$dir" "$mod")"
  if ((${#only[@]})) && [[ " ${only[*]} " != *" $name "* ]]; then
    return
  fi
  if [[ -f "$target/.version" && "$(cat "$target/.version")" == "$want" ]]; then
    echo "control-plane: $name up to date ($want)"
    return
  fi
  local source
  (cd "$dir" && go mod download "$mod")
  source="$(cd "$dir" && go list -m -f '{{.Dir}}' "$mod")/manifests/base/crds"
  rm -rf "$target.tmp" && mkdir -p "$target.tmp/full"
  cp "$source"/minimal/argoproj.io_*.yaml "$target.tmp/"
  # The full Workflow schema: the fields Argo's Go types define, for tests that decode as Go does.
  cp "$source"/full/argoproj.io_workflows.yaml "$target.tmp/full/"
  chmod -R u+w "$target.tmp"
  rm -rf "$target" && mv "$target.tmp" "$target"
  echo "$want" >"$target/.version"
  echo "control-plane: $name copied ($want)"
}
crds argo-v4-crds "$here/argo-v4" "$argo4"
# OpenReports' Report CRDs (the policy reports policy engines and Policy Reporter read), from
# the API module at the pinned version, as its own `config/crd` has them.
openreports_crds() {
  local name=openreports-crds dir="$here/openreports" mod=github.com/openreports/reports-api
  local want target="$out/openreports-crds"
  want="$(marker "$dir" "$mod")"
  if ((${#only[@]})) && [[ " ${only[*]} " != *" $name "* ]]; then
    return
  fi
  if [[ -f "$target/.version" && "$(cat "$target/.version")" == "$want" ]]; then
    echo "control-plane: $name up to date ($want)"
    return
  fi
  local source
  (cd "$dir" && go mod download "$mod")
  source="$(cd "$dir" && go list -m -f '{{.Dir}}' "$mod")/config/crd"
  rm -rf "$target.tmp" && mkdir -p "$target.tmp"
  cp "$source"/openreports.io_*.yaml "$target.tmp/"
  chmod -R u+w "$target.tmp"
  rm -rf "$target" && mv "$target.tmp" "$target"
  echo "$want" >"$target/.version"
  echo "control-plane: $name copied ($want)"
}
openreports_crds
kwok_version="$(pinned "$here/kwok" sigs.k8s.io/kwok)"
build kwok "$here/kwok" sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok \
  "-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}"

# nats-server with JetStream: the exit gate's NATS sink delivers to it in the e2e tests.
build nats-server "$here/nats-server" github.com/nats-io/nats-server/v2 github.com/nats-io/nats-server/v2

# promql-eval: the dashboard's queries over recorded scrapes with Prometheus' own PromQL
# engine (tests/picture/, the monitoring picture): only when asked.
if [[ " ${only[*]} " == *" promql-eval "* ]]; then
  build promql-eval "$here/promql" github.com/prometheus/prometheus .
fi

# Argo v3.6.7 (the Argo of KFP 2.14, whose stale-copy guard never matches): benchmark only.
if $with_argo_v3 || [[ " ${only[*]} " == *" argo-v3-workflow-controller "* ]]; then
  argo3=github.com/argoproj/argo-workflows/v3
  build argo-v3-workflow-controller "$here/argo-v3" "$argo3" "$argo3/cmd/workflow-controller" \
    "$(argo_ldflags "$argo3" "$(pinned "$here/argo-v3" "$argo3")")"
fi

echo "control-plane: binaries in $out"
