#!/usr/bin/env bash
# Builds the gateway's container image with podman (no daemon, no base
# image, no registry): FROM scratch, holding only the static gateway
# (CGO_ENABLED=0, -trimpath, built from the checkout's commit, whose version
# it reports)
# at /loom-gateway, which is also the sample loom of --demo, and an empty
# /tmp (mode 1777: --demo's files, the default unix host socket). It runs as
# uid and gid 65532; ENTRYPOINT is the gateway, with no default arguments.
# Every file and the image's creation time are dated 1970-01-01 (--timestamp
# 0): the same commit, Go toolchain and podman give the same image, the same
# manifest digest.
#
#   scripts/image.sh [NAME]   # default localhost/loom-gateway:latest; prints the
#                             # image's manifest digest (sha256:...) on stdout
#
# Podman as configured in the environment (CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF; `eval "$(scripts/podman.sh env)"` sets up the
# tests' store). GOARCH picks another architecture. See
# docs/deploy/container.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:-localhost/loom-gateway:latest}
command -v podman >/dev/null || { echo "image.sh: podman is not installed (scripts/podman.sh env installs it)" >&2; exit 1; }

ctx=$(mktemp -d "${TMPDIR:-/tmp}/loom-gateway-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
# The gateway is built from a clone of the checkout's commit: the go command
# stamps the commit only in a repository whose .git is a directory (not in a
# `git worktree`), and the image is the commit's, whatever the working tree
# holds besides.
revision=$(git -C "$root" rev-parse HEAD) || { echo "image.sh: $root is not a git checkout" >&2; exit 1; }
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  echo "image.sh: the working tree has uncommitted changes; the image is built from commit $revision without them" >&2
fi
git clone --quiet --shared --no-checkout "$root" "$ctx/src"
git -C "$ctx/src" -c advice.detachedHead=false checkout --quiet "$revision"
mkdir -p "$ctx/rootfs/tmp"
(cd "$ctx/src" && CGO_ENABLED=0 GOOS=linux GOFLAGS=-buildvcs=true go build -trimpath -o "$ctx/rootfs/loom-gateway" ./cmd/gateway)
chmod 0755 "$ctx/rootfs" "$ctx/rootfs/loom-gateway"
chmod 1777 "$ctx/rootfs/tmp"
version=$("$ctx/rootfs/loom-gateway" --version | awk '{print $2}')
arch=$(go env GOARCH)

cat >"$ctx/Containerfile" <<CONTAINERFILE
FROM scratch
COPY rootfs/ /
USER 65532:65532
ENTRYPOINT ["/loom-gateway"]
LABEL org.opencontainers.image.title="loom-gateway" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$revision"
CONTAINERFILE

podman build --quiet --no-cache --timestamp 0 --arch "$arch" --os linux --pull=never \
  -f "$ctx/Containerfile" -t "$name" "$ctx" >/dev/null
digest=$(podman image inspect --format '{{.Digest}}' "$name")
echo "image.sh: built $name, version $version, digest $digest" >&2
echo "$digest"
