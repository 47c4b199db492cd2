#!/usr/bin/env bash
# Podman for the tests, rootful, with its configuration and its storage in
# one directory per run, so that nothing under /etc or /var/lib/containers is
# read or written and two runs (two checkouts, two test steps) do not share
# images, containers or locks.
#
#   eval "$(scripts/podman.sh env)"   # installs podman and runc if missing, writes the
#                                     # configuration, prints:
#                                     #   export CONTAINERS_CONF=DIR/containers.conf
#                                     #   export CONTAINERS_STORAGE_CONF=DIR/storage.conf
#                                     # after which plain `podman ...` uses this run's store
#   scripts/podman.sh clean           # removes this run's containers, images and DIR
#
# DIR is LOOM_GATEWAY_PODMAN_DIR (default ${TMPDIR:-/tmp}/loom-gateway-podman);
# give each concurrent run its own. A second `env` with the same DIR keeps
# the store and prints the same lines.
#
# Run as root: rootless podman needs /dev/net/tun for slirp4netns (0600 on
# the machines this project runs on) and subordinate uid ranges; as root, with
# `--network host`, it needs neither. Containers must be run with `--network
# host` (no CNI/netavark network is configured), and images built FROM
# scratch (no registry is reachable). If `env` fails it prints the reason on
# stderr and only `false` on stdout, so that the eval fails too.
#
# What the configuration fixes on this machine kind, without touching /etc:
#   - cgroups are a v1/v2 hybrid that crun (podman's default runtime) refuses
#     to start containers on; runc works: runtime = "runc".
#   - root lacks CAP_SYS_RESOURCE, so podman's default ulimits (nofile
#     1048576) cannot be set: default_ulimits takes the hard limits of the
#     shell that runs `env` (nofile) and at most 32768 processes (nproc).
#   - no journald: events and container logs go to files (k8s-file), so
#     `podman logs` works.
#   - locks are files under DIR (lock_type = "file"), not the one shared
#     memory segment every rootful podman on the host would use.
set -euo pipefail

dir=${LOOM_GATEWAY_PODMAN_DIR:-${TMPDIR:-/tmp}/loom-gateway-podman}

log() { printf 'podman.sh: %s\n' "$*" >&2; }
fail() {
  log "$*"
  echo false
  exit 1
}

install_podman() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  [ "${#missing[@]}" -eq 0 ] && return
  # podman depends on crun | runc: naming runc satisfies it without crun.
  "$(dirname "$0")/apt-install.sh" podman runc || fail "could not install ${missing[*]}"
}

write_conf() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local nofile nproc
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  if [ "$nofile" = unlimited ]; then nofile=1048576; fi
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  cat >"$dir/containers.conf.new" <<EOF
# Written by scripts/podman.sh for one test run; see that script.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/events.log"
lock_type = "file"
tmp_dir = "$dir/tmp"
static_dir = "$dir/storage/libpod"
volume_path = "$dir/storage/volumes"
EOF
  cat >"$dir/storage.conf.new" <<EOF
# Written by scripts/podman.sh for one test run; see that script.
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
EOF
  mv "$dir/containers.conf.new" "$dir/containers.conf"
  mv "$dir/storage.conf.new" "$dir/storage.conf"
}

exports() {
  printf 'export CONTAINERS_CONF=%q\n' "$dir/containers.conf"
  printf 'export CONTAINERS_STORAGE_CONF=%q\n' "$dir/storage.conf"
}

case "${1:-}" in
  env)
    [ "$(id -u)" = 0 ] || fail "podman runs rootful in the tests: run as root (sudo)"
    install_podman
    write_conf
    # podman info reads both files and opens the store: a bad configuration fails here.
    if ! out=$(CONTAINERS_CONF=$dir/containers.conf CONTAINERS_STORAGE_CONF=$dir/storage.conf \
      podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}' 2>&1); then
      fail "podman info failed: $out"
    fi
    log "podman $(podman --version | awk '{print $3}'), runtime and storage: $out, in $dir"
    exports
    ;;
  clean)
    if [ -f "$dir/containers.conf" ] && [ -f "$dir/storage.conf" ]; then
      export CONTAINERS_CONF=$dir/containers.conf CONTAINERS_STORAGE_CONF=$dir/storage.conf
      podman rm -a -f -t 0 >/dev/null 2>&1 || true
      # reset unmounts the overlay layers before removing graphroot and runroot.
      podman system reset -f >/dev/null 2>&1 || log "podman system reset failed in $dir"
    fi
    # An overlay still mounted under DIR must not be removed through.
    if grep -q " $dir/" /proc/mounts 2>/dev/null; then
      grep " $dir/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: scripts/podman.sh env|clean" >&2
    exit 2
    ;;
esac
