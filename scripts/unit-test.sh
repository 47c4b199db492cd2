#!/usr/bin/env bash
# Runs deploy/systemd/loom-gateway.service for real: under systemd as PID
# 1, in a container built from Debian packages; first, the offline checks
# of the Kubernetes manifests (step 0 below).
#
#   1. A Debian root file system with systemd, made by mmdebstrap and kept
#      in a cache directory as a tarball named by the hash of its suite,
#      mirror and package list (made again when that list changes),
#      imported into a podman store of this run (scripts/podman.sh).
#   2. The image booted with podman (rootful, --systemd=always, --network
#      host, CAP_SYS_ADMIN and / shared, for systemd's sandboxing); the gateway (built static from this tree), a loom and the
#      unit installed as docs/operators.md says, the listeners on free
#      loopback ports.
#   3. `systemd-analyze verify` on the unit must print nothing (it exits 0
#      on unknown keys and bad values: only its output tells), and
#      `systemd-analyze security --offline=true` must score it 2.5 or less.
#   4. The unit as shipped: active; its log names a PID and mount namespace
#      in a user namespace (loom's own /proc, with the C init); the host
#      token reached it by LoadCredential= (a run created with it, 401
#      without); a call whose loom leaves a `setsid` child, which is gone
#      when the call ends; `systemctl stop` leaves nothing.
#   5. The same unit with the namespaces refused (a drop-in,
#      RestrictNamespaces=yes): the gateway falls back to a process group,
#      the loom's `setsid` child outlives the call, and `systemctl stop`
#      removes it (KillMode=control-group). Then with KillMode=process the
#      child outlives the stop: the check that can see a survivor sees one.
#
# It installs what it needs (podman and runc: scripts/podman.sh; mmdebstrap:
# scripts/apt-install.sh)
# and needs root (rootful podman; mmdebstrap's root mode). A step that
# cannot run says so and fails; nothing is skipped.
#
# Environment: LOOM_GATEWAY_UNIT_CACHE (where the root file system tarball
# is kept, default ${XDG_CACHE_HOME:-$HOME/.cache}/loom-gateway),
# LOOM_GATEWAY_UNIT_MIRROR (the Debian mirror, default
# http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
t0=$SECONDS

say() { printf 'unit-test.sh: %s\n' "$*"; }
fail() {
  printf 'unit-test.sh: FAIL: %s\n' "$*"
  exit 1
}

[ "$(id -u)" = 0 ] || fail "needs root (rootful podman with systemd as PID 1, mmdebstrap's root mode); run it as root"

missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v curl >/dev/null || missing+=(curl)
if [ "${#missing[@]}" -gt 0 ]; then
  scripts/apt-install.sh "${missing[@]}" || fail "could not install ${missing[*]}"
fi

suite=bookworm
mirror=${LOOM_GATEWAY_UNIT_MIRROR:-http://deb.debian.org/debian}
packages=systemd,systemd-sysv,procps
cache=${LOOM_GATEWAY_UNIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loom-gateway}
key=$(printf '%s %s %s minbase no-recommends\n' "$suite" "$mirror" "$packages" | sha256sum | cut -c1-16)
tarball=$cache/unit-rootfs-$key.tar
image=localhost/loom-gateway-unit-rootfs:$key

work=$(mktemp -d)
ctr=loom-gateway-unit-test-$$
cleanup() {
  if [ -n "${CONTAINERS_CONF:-}" ]; then
    podman rm -f -t 0 "$ctr" >/dev/null 2>&1 || true
    LOOM_GATEWAY_PODMAN_DIR=$work/podman scripts/podman.sh clean || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Podman, rootful, with runc and ulimits this machine allows, its store in
# a directory of this run (scripts/podman.sh), removed at the end.
export LOOM_GATEWAY_PODMAN_DIR=$work/podman
podman_env=$(scripts/podman.sh env) || fail "scripts/podman.sh env: podman cannot be set up"
eval "$podman_env"

# 0. The Kubernetes manifests, offline: deploy/kubernetes/check, a Go
# module of its own (the k8s.io modules stay out of the gateway's go.mod):
# every document decoded strictly into its k8s.io/api type, the
# Deployment's security and shape, its flags against the gateway's --help,
# and the host token as a Secret volume with fsGroup gives it, read by the
# gateway run as the pod's uid (root is needed for that: hence here).
say "the Kubernetes manifests (deploy/kubernetes/check)"
(cd deploy/kubernetes/check && go test -count=1 ./...) || fail "deploy/kubernetes/check: the manifests do not pass (output above)"

# 1. The root file system and its image.
if [ ! -s "$tarball" ]; then
  say "making a Debian $suite root file system with $packages (mmdebstrap, about a minute) into $tarball"
  mkdir -p "$cache"
  mmdebstrap --quiet --format=tar --variant=minbase --include="$packages" \
    --aptopt='APT::Install-Recommends "false"' \
    "$suite" "$tarball.tmp" "$mirror" || fail "mmdebstrap could not make the root file system (is $mirror reachable?)"
  mv "$tarball.tmp" "$tarball"
fi
say "importing $tarball as $image"
podman import --quiet "$tarball" "$image" >/dev/null || fail "podman import $tarball"

# 2. The gateway, the loom and the unit.
say "building the gateway (static)"
CGO_ENABLED=0 go build -o "$work/gateway" ./cmd/gateway || fail "go build ./cmd/gateway"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
declare -A taken=()
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    [ -n "${taken[$p]:-}" ] && continue
    if port_free "$p"; then taken[$p]=1; echo "$p"; return; fi
  done
}
agent_port=$(free_port)
host_port=$(free_port)
agent=http://127.0.0.1:$agent_port
host=http://127.0.0.1:$host_port

# The unit as shipped, its two listeners moved to the free ports.
unit=deploy/systemd/loom-gateway.service
grep -q -- '--listen 127.0.0.1:8080 ' "$unit" && grep -q -- '--host-listen 127.0.0.1:8081 ' "$unit" ||
  fail "$unit no longer has --listen 127.0.0.1:8080 and --host-listen 127.0.0.1:8081 (this script moves them to free ports)"
sed -e "s/--listen 127.0.0.1:8080 /--listen 127.0.0.1:$agent_port /" \
  -e "s/--host-listen 127.0.0.1:8081 /--host-listen 127.0.0.1:$host_port /" "$unit" >"$work/loom-gateway.service"

# The loom: the gateway's sample Loom (the binary under the name loom),
# behind a script that first leaves a child in a session of its own, out
# of the call's process group: `sleep 607`, the mark looked for below.
cat >"$work/escaping-loom" <<'EOF'
#!/bin/sh
setsid sleep 607 </dev/null >/dev/null 2>&1 &
exec /usr/local/lib/loom-test/loom "$@"
EOF
printf '{"cliPath":"/usr/local/lib/loom-test/escaping-loom","transport":{"kind":"direct","instanceDir":"/usr/local/lib/loom-test","runId":"unit-1"}}\n' >"$work/loom-retrieval.json"
head -c 32 /dev/urandom | base64 >"$work/host-token"
token=$(cat "$work/host-token")

say "booting $image with systemd as PID 1 (podman, runc, --network host)"
# systemd needs CAP_SYS_ADMIN to set up a service's sandbox (its mount
# namespace: ProtectSystem=, PrivateTmp=, ...), and / mounted shared: it
# mounts a service's credentials in a namespace of its own and moves them
# into place, which a container's private mounts would hide from the
# service (it would find $CREDENTIALS_DIRECTORY empty). Outside a
# container systemd makes / shared itself.
# podman masks parts of the container's /proc (/proc/kcore, /proc/keys,
# ...), and the kernel refuses a new proc to a user namespace that sees a
# masked one: unmask=ALL, so that what allows or refuses loom's own /proc
# is the unit's settings, as on a host, not podman's masks.
podman run -d --name "$ctr" --systemd=always --network host --cap-add SYS_ADMIN --security-opt unmask=ALL "$image" \
  /bin/sh -c 'mount --make-rshared / && exec /sbin/init' >/dev/null ||
  fail "podman run --systemd=always $image"
cx() { podman exec "$ctr" "$@"; }
state=
for _ in $(seq 300); do
  state=$(podman exec "$ctr" systemctl is-system-running 2>&1) || true
  case "$state" in running | degraded) break ;; esac
  [ "$(podman inspect -f '{{.State.Running}}' "$ctr" 2>&1)" = true ] ||
    { podman logs "$ctr" 2>&1 | tail -20; fail "the container stopped while systemd booted"; }
  sleep 0.2
done
case "$state" in
  running) ;;
  degraded)
    say "systemd in the container is degraded (failed units below); the test goes on"
    cx systemctl --failed --no-legend || true
    ;;
  *) fail "systemd in the container was not running within 60 s: $state" ;;
esac

podman cp "$work/gateway" "$ctr:/usr/local/bin/loom-gateway"
cx mkdir -p /usr/local/lib/loom-test /etc/loom-gateway
podman cp "$work/escaping-loom" "$ctr:/usr/local/lib/loom-test/escaping-loom"
podman cp "$work/loom-retrieval.json" "$ctr:/etc/loom-gateway/loom-retrieval.json"
podman cp "$work/host-token" "$ctr:/etc/loom-gateway/host-token"
podman cp "$work/loom-gateway.service" "$ctr:/etc/systemd/system/loom-gateway.service"
cx sh -c 'chown -R root:root /usr/local /etc/loom-gateway /etc/systemd/system/loom-gateway.service &&
  chmod 0755 /usr/local/bin/loom-gateway /usr/local/lib/loom-test/escaping-loom &&
  ln -sf /usr/local/bin/loom-gateway /usr/local/lib/loom-test/loom &&
  chmod 0644 /etc/loom-gateway/loom-retrieval.json /etc/systemd/system/loom-gateway.service &&
  chmod 0600 /etc/loom-gateway/host-token && systemctl daemon-reload' || fail "installing the gateway in the container"

# 3. systemd-analyze, in the container, on the unit as installed.
out=$(cx systemd-analyze verify /etc/systemd/system/loom-gateway.service 2>&1) || fail "systemd-analyze verify exited non-zero: $out"
[ -z "$out" ] || fail "systemd-analyze verify printed (it must print nothing): $out"
say "ok: systemd-analyze verify prints nothing"
sec=$(cx systemd-analyze security --offline=true /etc/systemd/system/loom-gateway.service 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$sec")
[ -n "$score" ] || fail "systemd-analyze security --offline=true gave no score: $(tail -5 <<<"$sec")"
awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }' ||
  fail "systemd-analyze security --offline=true scores the unit $score, above 2.5: $(grep '✗' <<<"$sec")"
say "ok: systemd-analyze security --offline=true: $score (2.5 or less)"

escapees() { cx pgrep -f '^sleep 607$' 2>/dev/null | tr '\n' ' ' || true; }
journal() { cx journalctl -u loom-gateway --no-pager -o cat 2>&1 | tail -n "${1:-20}"; }
# start_unit: starts the unit and waits for the host listener's /readyz.
start_unit() {
  cx systemctl daemon-reload
  cx systemctl reset-failed loom-gateway 2>/dev/null || true
  cx journalctl --rotate --vacuum-time=1s -q >/dev/null 2>&1 || true
  cx systemctl start loom-gateway || { journal; fail "systemctl start loom-gateway"; }
  local i
  for i in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$host/readyz")" = 200 ] && break
    [ "$i" = 100 ] && { journal; fail "the unit's host listener did not answer /readyz 200 within 20 s"; }
    sleep 0.2
  done
  local active
  active=$(cx systemctl is-active loom-gateway) || true
  [ "$active" = active ] || { journal; fail "loom-gateway is $active, not active"; }
}
# call: creates a run with the host token and makes one tool call in it.
call() {
  local run=$1 body status runtoken
  status=$(curl -s -o /dev/null -w '%{http_code}' "$host/host/v1/runs" --json "{\"runId\":\"$run\",\"ttlSeconds\":600}")
  [ "$status" = 401 ] || fail "a run created without the host token answered $status, not 401"
  body=$(curl -sS -H "Authorization: Bearer $token" "$host/host/v1/runs" --json "{\"runId\":\"$run\",\"ttlSeconds\":600}") ||
    fail "creating a run"
  runtoken=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' <<<"$body")
  [ -n "$runtoken" ] || { journal; fail "the host token (by LoadCredential=) did not create a run: $body"; }
  status=$(curl -sS -o "$work/call.json" -w '%{http_code}' -H "Authorization: Bearer $runtoken" "$agent/v1/runs/$run/loom_search" --json '{"query":"atlas","limit":5}')
  [ "$status" = 200 ] || { cat "$work/call.json"; journal; fail "the tool call answered $status, not 200"; }
}
stop_unit() {
  cx systemctl stop loom-gateway || fail "systemctl stop loom-gateway"
  sleep 0.5
}
dropin() { # name content: a drop-in for the unit ("" removes it)
  cx mkdir -p /etc/systemd/system/loom-gateway.service.d
  if [ -n "$2" ]; then
    printf '[Service]\n%s\n' "$2" | podman exec -i "$ctr" sh -c "cat >/etc/systemd/system/loom-gateway.service.d/$1.conf"
  else
    cx rm -f "/etc/systemd/system/loom-gateway.service.d/$1.conf"
  fi
}

# 4. The unit as shipped.
say "the unit as shipped"
start_unit
cred=$(cx sh -c 'ls -ln /run/credentials/loom-gateway.service/host-token' 2>&1) || fail "no credential host-token in /run/credentials/loom-gateway.service: $cred"
say "the credential systemd hands the gateway: $cred"
journal 50 | grep -q '"containment":"pid+mount namespace (in a user namespace)"' ||
  { journal; fail "under the unit as shipped the gateway does not log a PID and mount namespace (loom's own /proc) for loom commands"; }
say "ok: active; $(journal 50 | grep -o '"containment":"[^"]*"' | head -1)"
call unit-1
sleep 0.3
left=$(escapees)
[ -z "$left" ] || fail "the loom's setsid child ($left) outlived the call under the unit as shipped (its PID namespace should kill it)"
say "ok: the host token came by LoadCredential= (a run created with it, 401 without); a call whose loom left a setsid child, and the child is gone when the call ends"
stop_unit
left=$(escapees)
gw=$(cx pgrep -f '^/usr/local/bin/loom-gateway' 2>/dev/null | tr '\n' ' ' || true)
[ -z "$left$gw" ] || fail "after systemctl stop, left: ${left:+sleep $left }${gw:+gateway $gw}"
say "ok: systemctl stop leaves nothing"

# 5. Namespaces refused: the cgroup is what ends the escapee.
say "the unit with its namespaces refused (drop-in RestrictNamespaces=yes): KillMode=control-group"
dropin fallback $'RestrictNamespaces=\nRestrictNamespaces=yes'
start_unit
journal 50 | grep -q 'loom commands run in a process group only' ||
  { journal; fail "with RestrictNamespaces=yes the gateway does not log its fallback to a process group"; }
call unit-2
sleep 0.3
left=$(escapees)
[ -n "$left" ] || fail "in a process group only, the loom's setsid child did not outlive its call: this check cannot see an escapee"
say "ok: in a process group only, the setsid child outlives its call (pid $left)"
stop_unit
left=$(escapees)
[ -z "$left" ] || fail "after systemctl stop with KillMode=control-group, the loom's setsid child is still there (pid $left)"
say "ok: systemctl stop (KillMode=control-group) removes it"

say "the same with KillMode=process (the check must see the survivor)"
dropin killmode 'KillMode=process'
start_unit
call unit-3
stop_unit
left=$(escapees)
[ -n "$left" ] || fail "with KillMode=process the setsid child did not outlive systemctl stop: the check above proves nothing"
say "ok: with KillMode=process the setsid child outlives systemctl stop (pid $left); ending it"
for p in $left; do cx kill -9 "$p" || true; done
dropin fallback ""
dropin killmode ""

say "passed in $((SECONDS - t0))s"
