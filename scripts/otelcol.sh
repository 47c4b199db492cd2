#!/usr/bin/env bash
# A throwaway OpenTelemetry Collector for the trace tests: tools/otelcol
# (the OTLP receiver and the file exporter, its own Go module), built once
# into a cache directory, listening for OTLP over HTTP on a free loopback
# port and writing every span it receives, as OTLP JSON lines, to a file.
#
#   eval "$(scripts/otelcol.sh start)"  # builds if needed, starts, prints:
#                                       #   export LOOM_GATEWAY_TEST_OTLP_ENDPOINT=http://127.0.0.1:PORT
#                                       #   export LOOM_GATEWAY_TEST_OTEL_FILE=DIR/traces.jsonl
#   scripts/otelcol.sh stop             # stops the collector started above (by its pid)
#
# A second start leaves a running collector as it is and prints the same
# lines. If the collector does not start, start prints its log tail on
# stderr, exits 1 and prints only `false` on stdout, so that the eval fails
# too.
#
# Environment: LOOM_GATEWAY_OTELCOL_PORT (first port tried, default 4318;
# the next free one up to +20 is taken; a port another process binds
# first, between the check and the collector's bind, is passed over), LOOM_GATEWAY_OTELCOL_DIR (state
# directory, default ${TMPDIR:-/tmp}/loom-gateway-otelcol),
# LOOM_GATEWAY_OTELCOL_CACHE (where the binary is built, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/loom-gateway; the binary's name carries
# the hash of tools/otelcol's sources, so a change rebuilds it). Everything
# but the export lines goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${LOOM_GATEWAY_OTELCOL_DIR:-${TMPDIR:-/tmp}/loom-gateway-otelcol}
cache=${LOOM_GATEWAY_OTELCOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loom-gateway}
pidfile=$dir/otelcol.pid

log() { printf 'otelcol.sh: %s\n' "$*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# binary builds tools/otelcol into the cache once per version of its
# sources and prints the binary's path.
binary() {
  local sum bin
  sum=$(cat tools/otelcol/go.mod tools/otelcol/go.sum tools/otelcol/*.go | sha256sum | cut -c1-16)
  bin=$cache/otelcol-$sum
  if [ ! -x "$bin" ]; then
    log "building the collector (tools/otelcol) into $bin"
    mkdir -p "$cache"
    # A name of its own while it builds: another run may build it too.
    (cd tools/otelcol && go build -o "$bin.$$.tmp" .) >&2
    mv "$bin.$$.tmp" "$bin"
  fi
  echo "$bin"
}

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ ! -r "/proc/$pid/cmdline" ] || tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'otelcol-' || return 1
  echo "$pid"
}

exports() {
  echo "export LOOM_GATEWAY_TEST_OTLP_ENDPOINT=http://127.0.0.1:$(cat "$dir/port")"
  echo "export LOOM_GATEWAY_TEST_OTEL_FILE=$dir/traces.jsonl"
}

start() {
  if pid=$(running_pid); then
    log "already running (pid $pid, port $(cat "$dir/port"))"
    exports
    return
  fi
  local bin first=${LOOM_GATEWAY_OTELCOL_PORT:-4318} port=
  if ! bin=$(binary); then
    log "the collector did not build"
    echo false
    exit 1
  fi
  mkdir -p "$dir"
  # A port found free may be bound by another process (another run's
  # collector) before this one binds it: then the collector exits, and the
  # next free port is tried.
  for p in $(seq "$first" $((first + 20))); do
    port_free "$p" || continue
    port=$p
    if serve "$bin" "$port"; then
      log "started (pid $(cat "$pidfile"), port $port)"
      exports
      return
    fi
    if ! grep -q 'address already in use' "$dir/otelcol.log"; then
      log "the collector did not start; its log:"
      tail -n 30 "$dir/otelcol.log" >&2 || true
      stop
      echo false
      exit 1
    fi
    log "port $port was taken meanwhile; trying the next"
  done
  log "no free port in $first..$((first + 20))"
  echo false
  exit 1
}

# listens PID PORT: whether process PID holds the TCP socket listening on
# 127.0.0.1:PORT (by the socket's inode in /proc/net/tcp).
listens() {
  local hex inode
  hex=$(printf '0100007F:%04X' "$2")
  inode=$(awk -v a="$hex" '$2 == a && $4 == "0A" { print $10; exit }' /proc/net/tcp 2>/dev/null)
  [ -n "$inode" ] && ls -l "/proc/$1/fd" 2>/dev/null | grep -q "socket:\[$inode\]"
}

# serve BIN PORT: starts the collector on PORT and waits until it listens
# there; fails when it exits first or does not listen within 10 s.
serve() {
  local bin=$1 port=$2 pid
  rm -f "$dir/traces.jsonl"
  cat >"$dir/config.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$port
exporters:
  file:
    path: $dir/traces.jsonl
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
YAML
  echo "$port" >"$dir/port"
  "$bin" --config "$dir/config.yaml" >"$dir/otelcol.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pidfile"
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 1; }
    if ! port_free "$port"; then
      # Someone listens there: this collector, or where /proc cannot
      # tell, one that is still alive a moment later.
      if [ -r /proc/net/tcp ]; then
        listens "$pid" "$port" && return 0
      else
        sleep 0.5
        kill -0 "$pid" 2>/dev/null && return 0
      fi
    fi
    sleep 0.1
  done
  return 1
}

stop() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped (pid $pid)"
  fi
  rm -f "$pidfile"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 2
  ;;
esac
