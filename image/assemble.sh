#!/usr/bin/env bash
# Assembles the pipewarden image without a container daemon and pushes it:
#   image/assemble.sh BINARY IMAGE_REF
# One layer on an empty base, as the Containerfile's last stage lays it out: the binary at
# /usr/bin/pipewarden, the CA bundle, and passwd/group naming uid 65532 (nonroot). The image
# runs as 65532 with the binary as entrypoint. Prints the pushed reference with its digest.
# PLATFORM (default linux/amd64) is the binary's; COMMIT (default: what the binary's --version
# says, which only a binary of the build host's architecture can tell) labels the revision.
#
# The binary must be statically linked (the image has no libc); ALLOW_DYNAMIC=1 lifts that
# check for tests that run the unpacked binary on the build host itself.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
[[ $# -eq 2 ]] || { echo "usage: $0 BINARY IMAGE_REF" >&2; exit 2; }
binary=$1 ref=$2
bin_dir="${PIPEWARDEN_CONTROL_PLANE_BIN:-${PIPEWARDEN_CONTROL_PLANE_CACHE:-$repo/.cache/bin}}"
crane="${CRANE:-$bin_dir/crane}"
ca_bundle="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

[[ -x "$crane" ]] || { echo "no crane at $crane: run \`make control-plane\`" >&2; exit 1; }
[[ -x "$binary" ]] || { echo "no pipewarden binary at $binary" >&2; exit 1; }
[[ -s "$ca_bundle" ]] || { echo "no CA bundle at $ca_bundle (set CA_BUNDLE)" >&2; exit 1; }
if readelf -l "$binary" | grep -q 'Requesting program interpreter' && [[ "${ALLOW_DYNAMIC:-}" != 1 ]]; then
  echo "$binary is dynamically linked: the image has no libc (build with +crt-static)" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
install -D -m 0755 "$binary" "$root/usr/bin/pipewarden"
install -D -m 0644 "$ca_bundle" "$root/etc/ssl/certs/ca-certificates.crt"
install -D -m 0644 "$here/passwd" "$root/etc/passwd"
install -D -m 0644 "$here/group" "$root/etc/group"
install -d -m 1777 "$root/tmp"
# Reproducible layer: sorted entries, root-owned, fixed times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  -C "$root" -cf "$work/layer.tar" .

platform="${PLATFORM:-linux/amd64}"
commit="${COMMIT:-$("$root/usr/bin/pipewarden" --version 2>/dev/null | sed -n 's/.*(commit \([^,]*\),.*/\1/p' || true)}"
"$crane" append --oci-empty-base -f "$work/layer.tar" -t "$ref" >/dev/null
"$crane" mutate "$ref" -t "$ref" \
  --set-platform "$platform" --entrypoint /usr/bin/pipewarden --user 65532:65532 \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --label org.opencontainers.image.title=pipewarden \
  --label "org.opencontainers.image.revision=${commit:-unknown}" >/dev/null
digest="$("$crane" digest "$ref")"
repository=$ref
[[ "${ref##*/}" == *:* ]] && repository="${ref%:*}"
echo "$repository@$digest"
