#!/usr/bin/env bash
# The container step of the test command: builds the gateway's image
# (scripts/image.sh) twice and checks that both builds have the same
# manifest digest, then runs it with rootful podman on the host network
# (tests/container): the version it reports, what it holds, the containment
# its start-up log names under podman's default seccomp profile, Docker's
# default and the shipped deploy/seccomp/loom-gateway.json, no loom process
# left after a call or after podman kill, and no zombie after 20 calls in a
# process group with the gateway as PID 1.
#
#   scripts/image-test.sh
#
# It installs podman itself (scripts/podman.sh, which needs root) and uses a
# podman store of its own under LOOM_GATEWAY_PODMAN_DIR (default: a new
# directory under ${TMPDIR:-/tmp}), removed at the end. Nothing is skipped:
# where a part cannot run, it says so and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'image-test: %s\n' "$*" >&2; }

own_dir=
if [ -z "${LOOM_GATEWAY_PODMAN_DIR:-}" ]; then
  LOOM_GATEWAY_PODMAN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/loom-gateway-image-test.XXXXXX")
  own_dir=1
fi
export LOOM_GATEWAY_PODMAN_DIR
work=$(mktemp -d "${TMPDIR:-/tmp}/loom-gateway-image-work.XXXXXX")
cleanup() {
  rm -rf "$work"
  if [ -n "$own_dir" ]; then scripts/podman.sh clean || true; fi
}
trap cleanup EXIT

# Not eval "$(...)": that would succeed, without podman, when env fails.
podman_env=$(scripts/podman.sh env) || { log "FAIL: podman cannot be set up (see above)"; exit 1; }
eval "$podman_env"
export CONTAINERS_CONF CONTAINERS_STORAGE_CONF

image=localhost/loom-gateway:image-test
first=$(scripts/image.sh "$image")
podman rmi -f "$image" >/dev/null
second=$(scripts/image.sh "$image")
if [ "$first" != "$second" ]; then
  log "FAIL: two builds of the same commit gave different images: $first, then $second"
  exit 1
fi
log "two builds, one digest: $first"

# The fake loom, static: the image has no C library.
CGO_ENABLED=0 go build -trimpath -o "$work/fakeloom" ./tests/fakeloom
chmod 0755 "$work" "$work/fakeloom"

out=$work/go-test.out
if ! LOOM_GATEWAY_TEST_IMAGE=$image LOOM_GATEWAY_TEST_FAKELOOM=$work/fakeloom \
  LOOM_GATEWAY_TEST_REVISION=$(git rev-parse HEAD) \
  go test -count=1 -v -timeout 5m ./tests/container >"$out" 2>&1; then
  cat "$out"
  log "FAIL: tests/container"
  exit 1
fi
if grep -q -- '--- SKIP' "$out"; then
  cat "$out"
  log "FAIL: a container test skipped"
  exit 1
fi
grep -E '^(=== RUN|--- |ok|PASS)' "$out" || true
