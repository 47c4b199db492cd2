#!/usr/bin/env bash
# Runs the programs of the docs as a reader would: each in a new project of
# its own, outside this repository, against a fresh `--demo` gateway, so a
# snippet that does not compile or run as pasted fails the test command.
#
# A new project is a ```sh block whose first line is
#
#   # in a new project: FILE...
#
# FILE... are files of that project, each shown in the same document as a
# code block whose first line is a comment naming it (`// search.ts`,
# `// main.go`, `// tsconfig.json`). The script writes those blocks to a new
# temporary directory, starts the gateway with --demo on free ports, sets
# what the demo's `export` line sets (AGENT_URL, TOKEN, HOST_URL,
# HOST_TOKEN) and CHECKOUT (this repository, where the docs say "your clone
# of loom-gateway"), and runs the block's lines there with bash -e: each
# must succeed. A Go file must also be as gofmt writes it.
#
# The registries are the only network: npm and the Go module proxy, as a
# reader's machine would use them (npm prefers its cache).
#
# Usage: scripts/doc-examples.sh [path/to/gateway]   (default: go build it)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

tmp=$(mktemp -d)
gw_pid=
cleanup() {
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

bin=${1:-}
if [ -z "$bin" ]; then
  bin=$tmp/gateway
  go build -o "$bin" ./cmd/gateway
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

export npm_config_prefer_offline=true npm_config_audit=false npm_config_fund=false \
  npm_config_update_notifier=false npm_config_loglevel=error

# projects doc: "<line>\t<files>" for each new-project block of doc.
projects() {
  awk '
    /^```sh[[:space:]]*$/ { insh = 1; first = 1; next }
    /^```/ { insh = 0; next }
    insh && first { first = 0; if (sub(/^# in a new project:[[:space:]]*/, "")) printf "%d\t%s\n", NR, $0 }
  ' "$1"
}

# block_lines doc line: the lines of the ```sh block opened at line-1.
block_lines() {
  awk -v start="$2" 'NR > start && /^```/ { exit } NR > start' "$1"
}

# file_block doc name: the code block whose first line is `// name`.
file_block() {
  awk -v want="// $2" '
    /^```/ && !inblock { inblock = 1; first = 1; next }
    /^```/ && inblock { inblock = 0; if (taking) exit; next }
    inblock && first { first = 0; if ($0 == want) { taking = 1; found = 1 } }
    taking { print }
    END { if (!found) exit 1 }
  ' "$1"
}

# demo: starts the gateway with --demo on free ports and evaluates its
# export line.
demo() {
  local out=$1/.demo.out
  "$bin" --demo --listen 127.0.0.1:0 --host-listen 127.0.0.1:0 --shutdown-timeout 5s >"$out" 2>&1 &
  gw_pid=$!
  for _ in $(seq 300); do
    grep -q '^  export' "$out" && break
    kill -0 "$gw_pid" 2>/dev/null || { echo "FAIL: the demo gateway exited:"; cat "$out"; return 1; }
    sleep 0.1
  done
  grep -q '^  export' "$out" || { echo "FAIL: the demo printed no export line in 30 s:"; cat "$out"; return 1; }
  eval "$(grep '^  export' "$out" | head -1)"
}

stop_demo() {
  [ -n "$gw_pid" ] || return 0
  kill "$gw_pid" 2>/dev/null || true
  wait "$gw_pid" 2>/dev/null || true
  gw_pid=
}

status=0 n=0
for doc in README.md docs/*.md; do
  while IFS=$'\t' read -r line files; do
    n=$((n + 1))
    work=$tmp/project-$n
    mkdir -p "$work"
    echo "==> $doc:$line: a new project ($files)"
    ok=1
    for f in $files; do
      if ! file_block "$doc" "$f" >"$work/$f"; then
        echo "FAIL $doc:$line: no code block of $doc starts with \"// $f\""
        ok=0
        continue
      fi
      if [[ $f == *.go ]] && [ -n "$(gofmt -l "$work/$f")" ]; then
        echo "FAIL $doc: $f is not as gofmt writes it:"
        gofmt -d "$work/$f" | sed 's/^/  | /'
        ok=0
      fi
    done
    block_lines "$doc" "$line" >"$work/.commands.sh"
    if [ "$ok" -eq 1 ] && demo "$work"; then
      if (cd "$work" && CHECKOUT=$repo PS4='+ ' bash -ex .commands.sh) >"$work/.log" 2>&1; then
        sed 's/^/  | /' "$work/.log" | tail -n 8
        echo "ok   $doc:$line ($files)"
      else
        sed 's/^/  | /' "$work/.log" | tail -n 40
        echo "FAIL $doc:$line: the project's commands failed (above: the last lines)"
        ok=0
      fi
    else
      ok=0
    fi
    stop_demo
    [ "$ok" -eq 1 ] || status=1
  done < <(projects "$doc")
done
[ "$n" -gt 0 ] || { echo "FAIL: no \"# in a new project\" block in README.md or docs/"; exit 1; }
echo "doc-examples: $n projects, $([ "$status" -eq 0 ] && echo "all passed" || echo "some FAILED")"
exit $status
