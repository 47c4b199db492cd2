#!/usr/bin/env bash
# A throwaway Redis for the tests: Debian's redis-server on a loopback port,
# in memory only (no RDB, no AOF), under a pid file in a temporary directory.
#
#   eval "$(scripts/redis.sh start)"   # installs redis-server if missing, starts it,
#                                      # prints: export LOOM_GATEWAY_TEST_REDIS=redis://127.0.0.1:PORT/0
#   scripts/redis.sh stop              # stops the server started above (by its pid)
#
# Environment: LOOM_GATEWAY_REDIS_PORT (first port tried, default 6399; the
# next free one up to +20 is taken), LOOM_GATEWAY_REDIS_DIR (state directory,
# default ${TMPDIR:-/tmp}/loom-gateway-redis). Everything but the export line
# goes to stderr.
set -euo pipefail

dir=${LOOM_GATEWAY_REDIS_DIR:-${TMPDIR:-/tmp}/loom-gateway-redis}
pidfile=$dir/redis.pid

log() { printf 'redis.sh: %s\n' "$*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

install_redis() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return
  log "installing redis-server (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq -o DPkg::Lock::Timeout=600 >&2
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 redis-server >&2
}

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start() {
  install_redis
  mkdir -p "$dir"
  if pid=$(running_pid); then
    port=$(cat "$dir/port")
    log "already running (pid $pid, port $port)"
    echo "export LOOM_GATEWAY_TEST_REDIS=redis://127.0.0.1:$port/0"
    return
  fi
  local first=${LOOM_GATEWAY_REDIS_PORT:-6399} port=
  for p in $(seq "$first" $((first + 20))); do
    if port_free "$p"; then port=$p; break; fi
  done
  [ -n "$port" ] || { log "no free port in $first..$((first + 20))"; exit 1; }
  rm -f "$pidfile"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --daemonize yes --pidfile "$pidfile" --dir "$dir" --logfile "$dir/redis.log" >&2
  for _ in $(seq 100); do
    if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && running_pid >/dev/null; then
      echo "$port" >"$dir/port"
      log "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1:$port (pid $(cat "$pidfile"))"
      echo "export LOOM_GATEWAY_TEST_REDIS=redis://127.0.0.1:$port/0"
      return
    fi
    sleep 0.1
  done
  log "redis-server did not answer PING on port $port; log:"
  tail -20 "$dir/redis.log" >&2 || true
  exit 1
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    log "not running"
    rm -f "$pidfile" "$dir/port"
    return
  fi
  kill "$pid"
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  rm -f "$pidfile" "$dir/port"
  log "stopped (pid $pid)"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
