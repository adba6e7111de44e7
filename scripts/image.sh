#!/usr/bin/env bash
# Builds the container image of deploy/Containerfile: `make image`, and the
# image test of package deploy. Usage: scripts/image.sh [TAG] (default
# localhost/vesta:latest).
#
# No base image and no registry: the static binary is built here
# (CGO_ENABLED=0; Go modules come through the module proxy) and copied into
# an image FROM scratch with the host's CA bundle (Debian's ca-certificates).
#
# Environment:
#   ENGINE        podman or docker; default podman, else a docker whose
#                 daemon answers
#   ENGINE_FLAGS  global flags of the engine, e.g. for rootful podman in a
#                 container without systemd or overlay support:
#                 "--cgroup-manager cgroupfs --storage-driver vfs"
#   VERSION       stamped into the binary (vesta version); default git describe
#   KEEP_CONTEXT  a directory to lay the build context in and keep (default:
#                 a temporary one, removed)
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${1:-localhost/vesta:latest}
GO=${GO:-go}
if [ -z "${ENGINE:-}" ]; then
  if command -v podman >/dev/null 2>&1; then
    ENGINE=podman
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    ENGINE=docker
  else
    echo "image: neither podman nor a running docker found (scripts/deps.sh installs podman)" >&2
    exit 1
  fi
fi
# shellcheck disable=SC2206 # ENGINE_FLAGS is a list of words
engine=("$ENGINE" ${ENGINE_FLAGS:-})

ca=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$ca" ]; then
  echo "image: $ca missing (Debian's ca-certificates package)" >&2
  exit 1
fi

if [ -n "${KEEP_CONTEXT:-}" ]; then
  ctx=$KEEP_CONTEXT
  mkdir -p "$ctx"
else
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
fi
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}

CGO_ENABLED=0 GOOS=linux $GO build -trimpath -ldflags "-s -w -X github.com/vesta-go/vesta/internal/buildinfo.version=$version" \
  -o "$ctx/vesta" ./cmd/vesta
cp "$ca" "$ctx/ca-certificates.crt"
rm -rf "$ctx/rootfs"
cp -R deploy/rootfs "$ctx/rootfs"
rm -f "$ctx/rootfs/var/lib/vesta/.keep"
chmod 0755 "$ctx/rootfs/var/lib/vesta"

# --format docker keeps the HEALTHCHECK (podman's default OCI format has none);
# --pull=never: FROM scratch needs no registry, and nothing may be fetched.
build=(build --format docker --pull=never)
[ "$ENGINE" = docker ] && build=(build --pull=false)
"${engine[@]}" "${build[@]}" -f deploy/Containerfile -t "$tag" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.title=vesta" "$ctx"
echo "image: built $tag with $ENGINE"
