#!/usr/bin/env bash
# Throwaway Redis servers for the tests: Debian's redis-server on loopback
# ports, in memory only (no RDB, no AOF), each under a pid file in a
# temporary directory (its own per run of scripts/test.sh). One plain server, and a Redis Cluster of three
# masters (no replicas) holding all 16384 slots.
#
#   eval "$(scripts/redis.sh start)"   # installs redis-server if missing, starts both,
#                                      # prints: export LOOM_GATEWAY_TEST_REDIS=redis://127.0.0.1:PORT/0
#                                      #         export LOOM_GATEWAY_TEST_REDIS_CLUSTER='redis://127.0.0.1:P1?addr=127.0.0.1:P2&addr=127.0.0.1:P3'
#   scripts/redis.sh stop              # stops the servers started above (by their pids)
#
# A second start leaves running servers as they are and prints the same
# lines. If a server does not start or the cluster does not form, start
# prints the log tails on stderr, stops the cluster's nodes, exits 1 and
# prints only `false` on stdout, so that the eval fails too.
#
# Environment: LOOM_GATEWAY_REDIS_PORT (first port tried, default 6399; the
# next free one up to +20 is taken; the cluster takes the next three free
# ones after it, up to +60, each with its bus port, +10000, free too; a
# port another process binds first, between the check and the server's
# bind, is passed over for the next),
# LOOM_GATEWAY_REDIS_DIR (state directory, default
# ${TMPDIR:-/tmp}/loom-gateway-redis; the cluster's is its cluster/,
# wiped when a start finds no node running). Everything but the export
# lines goes to stderr.
set -euo pipefail

dir=${LOOM_GATEWAY_REDIS_DIR:-${TMPDIR:-/tmp}/loom-gateway-redis}
pidfile=$dir/redis.pid
cdir=$dir/cluster
nodes=3

log() { printf 'redis.sh: %s\n' "$*" >&2; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

install_redis() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return
  "$(dirname "$0")/apt-install.sh" redis-server
}

# pid_of FILE prints the pid in FILE if that process is alive and is a
# redis-server (a pid file left from before a reboot may name another).
pid_of() {
  [ -f "$1" ] || return 1
  local pid
  pid=$(cat "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ ! -r "/proc/$pid/comm" ] || [ "$(cat "/proc/$pid/comm")" = redis-server ] || return 1
  echo "$pid"
}

running_pid() { pid_of "$pidfile"; }

# kill_pid PID stops a server: SIGTERM, then SIGKILL after 5s.
kill_pid() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null || true
}

version() { redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'; }

# serve PORT DIR LOGFILE ARGS...: starts a redis-server on PORT in the
# background (its pid file DIR/redis.pid) and waits until it answers. It
# returns 1 at once when the server exits (another process took the port
# between the check and the bind: the caller takes another), 2 when it runs
# but does not answer within 10 s (its pid: served_pid).
serve() {
  local port=$1 sdir=$2 logfile=$3 pid
  shift 3
  rm -f "$sdir/redis.pid"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --daemonize no --pidfile "$sdir/redis.pid" --dir "$sdir" "$@" >>"$logfile" 2>&1 </dev/null &
  pid=$!
  served_pid=$pid
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 1
    # The answer is this server's, not another's on the same port.
    if [ "$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" = "$pid" ] &&
      [ "$(pid_of "$sdir/redis.pid" || true)" = "$pid" ]; then
      return 0
    fi
    sleep 0.1
  done
  return 2
}

start_single() {
  if pid=$(running_pid); then
    port=$(cat "$dir/port")
    log "already running (pid $pid, port $port)"
    single="export LOOM_GATEWAY_TEST_REDIS=redis://127.0.0.1:$port/0"
    return
  fi
  local first=${LOOM_GATEWAY_REDIS_PORT:-6399} port= status
  for p in $(seq "$first" $((first + 20))); do
    port_free "$p" || continue
    port=$p status=0
    serve "$port" "$dir" "$dir/redis.log" || status=$?
    case $status in
      0)
        echo "$port" >"$dir/port"
        log "redis-server $(version) on 127.0.0.1:$port (pid $(cat "$pidfile"))"
        single="export LOOM_GATEWAY_TEST_REDIS=redis://127.0.0.1:$port/0"
        return ;;
      1) log "port $port was taken meanwhile; trying the next" ;;
      *)
        log "redis-server did not answer PING on port $port; log:"
        tail -20 "$dir/redis.log" >&2 || true
        kill_pid "$served_pid"
        exit 1 ;;
    esac
  done
  log "no free port in $first..$((first + 20))"
  exit 1
}

# cluster_pids prints the pids of the live cluster nodes.
cluster_pids() {
  local i
  for i in $(seq "$nodes"); do pid_of "$cdir/node$i/redis.pid" || true; done
}

stop_cluster() {
  local pids pid
  pids=$(cluster_pids)
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  for pid in $pids; do kill_pid "$pid"; done
  rm -f "$cdir"/node*/redis.pid "$cdir/ports"
  [ -z "$pids" ] || log "cluster stopped (pids $(echo $pids))"
}

# cluster_url prints the go-redis cluster URL of the nodes
# (redis.ParseClusterURL): the first in the authority, the others as addr
# parameters.
cluster_url() {
  local ports p url sep=?
  read -r -a ports <"$cdir/ports"
  url=redis://127.0.0.1:${ports[0]}
  for p in "${ports[@]:1}"; do
    url+="${sep}addr=127.0.0.1:$p"
    sep='&'
  done
  echo "$url"
}

# cluster_failed reports why the cluster did not form, with each node's
# log tail, stops the nodes and exits.
cluster_failed() {
  log "$1; node logs:"
  local i
  for i in $(seq "$nodes"); do
    echo "--- node$i ($cdir/node$i/redis.log)" >&2
    tail -20 "$cdir/node$i/redis.log" >&2 2>/dev/null || true
  done
  stop_cluster
  exit 1
}

# cluster_ok PORT reports whether the node on PORT sees a healthy cluster
# of every node with every slot assigned.
cluster_ok() {
  local info
  info=$(redis-cli -h 127.0.0.1 -p "$1" cluster info 2>/dev/null | tr -d '\r') || return 1
  grep -qx 'cluster_state:ok' <<<"$info" &&
    grep -qx 'cluster_slots_assigned:16384' <<<"$info" &&
    grep -qx 'cluster_slots_ok:16384' <<<"$info" &&
    grep -qx "cluster_known_nodes:$nodes" <<<"$info"
}

# all_ok PORT... reports whether every node on the ports is cluster_ok.
all_ok() {
  local p
  for p in "$@"; do cluster_ok "$p" || return 1; done
}

start_cluster() {
  local live p
  live=$(cluster_pids | wc -w)
  if [ "$live" -eq "$nodes" ] && [ -f "$cdir/ports" ] && all_ok $(cat "$cdir/ports"); then
    log "cluster already running (pids $(echo $(cluster_pids)), ports $(cat "$cdir/ports"))"
    cluster="export LOOM_GATEWAY_TEST_REDIS_CLUSTER='$(cluster_url)'"
    return
  fi
  # Part of an earlier cluster, or its nodes.conf, would not form a new one.
  [ "$live" -eq 0 ] || { log "cluster: $live of $nodes nodes running but no healthy cluster; starting it again"; stop_cluster; }
  rm -rf "$cdir"
  mkdir -p "$cdir"

  # Ports found free may be taken before the nodes bind them (by another
  # run's servers): then the nodes stop and the next free ports are tried.
  local first=$(($(cat "$dir/port") + 1)) last=$((${LOOM_GATEWAY_REDIS_PORT:-6399} + 60)) ports i attempt status
  for attempt in 1 2 3 4 5; do
    ports=()
    for p in $(seq "$first" "$last"); do
      if port_free "$p" && port_free $((p + 10000)); then ports+=("$p"); fi
      [ "${#ports[@]}" -lt "$nodes" ] || break
    done
    [ "${#ports[@]}" -eq "$nodes" ] || { log "cluster: no $nodes free ports (and bus ports) in $first..$last"; exit 1; }
    echo "${ports[*]}" >"$cdir/ports"
    status=0
    for i in $(seq "$nodes"); do
      p=${ports[i - 1]}
      mkdir -p "$cdir/node$i"
      serve "$p" "$cdir/node$i" "$cdir/node$i/redis.log" --cluster-enabled yes --cluster-config-file nodes.conf || { status=$?; break; }
    done
    [ "$status" -ne 2 ] || cluster_failed "cluster: node$i did not answer PING on port $p"
    [ "$status" -ne 0 ] || break
    log "cluster: port $p (or its bus port) was taken meanwhile; trying others"
    stop_cluster
    rm -rf "$cdir"
    mkdir -p "$cdir"
    first=$((p + 1))
  done
  [ "$status" -eq 0 ] || cluster_failed "cluster: no ports held after 5 tries"

  local addrs=()
  for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
  local out
  if ! out=$(TERM=dumb redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes 2>&1); then
    printf '%s\n' "$out" >&2
    cluster_failed "cluster: redis-cli --cluster create failed"
  fi
  # create returns once the nodes agree on the slots; each node then
  # declares the cluster ok on its own.
  local deadline=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if all_ok "${ports[@]}"; then
      log "redis-server $(version) cluster on 127.0.0.1:${ports[*]} (pids $(echo $(cluster_pids)))"
      cluster="export LOOM_GATEWAY_TEST_REDIS_CLUSTER='$(cluster_url)'"
      return
    fi
    sleep 0.1
  done
  for p in "${ports[@]}"; do
    echo "--- CLUSTER INFO of 127.0.0.1:$p" >&2
    redis-cli -h 127.0.0.1 -p "$p" cluster info >&2 2>&1 || true
  done
  cluster_failed "cluster: not cluster_state:ok with 16384 slots on every node within 30s"
}

start() {
  install_redis
  mkdir -p "$dir"
  local single= cluster=
  # On any failure stdout holds only `false`: eval "$(... start)" then
  # fails as well (an empty eval would succeed, and the tests would skip).
  trap '[ $? -eq 0 ] || echo false' EXIT
  start_single
  start_cluster
  echo "$single"
  echo "$cluster"
}

stop() {
  local pid
  if ! pid=$(running_pid); then
    log "not running"
    rm -f "$pidfile" "$dir/port"
  else
    kill_pid "$pid"
    rm -f "$pidfile" "$dir/port"
    log "stopped (pid $pid)"
  fi
  stop_cluster
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
