#!/usr/bin/env bash
# Runs every curl example of docs/clients.md against a fresh `--demo` gateway
# and fails on an unexpected status, so the doc cannot drift from the gateway.
#
# An example is any line starting with `curl` inside a ```sh block of the doc;
# each must end with `# expect: <status>`, or `# expect: <status> <code>` to
# also check the problem's `code`. The lines run in document order
# with AGENT_URL, HOST_URL, TOKEN (the demo run's token) and HOST_TOKEN set,
# as the doc tells a reader to set them. The script also fails when a route
# of api/openapi.yaml has no example.
#
# Usage: scripts/curl-examples.sh [path/to/gateway]   (default: go build it)
set -euo pipefail
cd "$(dirname "$0")/.."

doc=docs/clients.md
spec=api/openapi.yaml
tmp=$(mktemp -d)
gwpid=
cleanup() {
  if [ -n "$gwpid" ] && kill -0 "$gwpid" 2>/dev/null; then
    kill "$gwpid" 2>/dev/null || true
    wait "$gwpid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

bin=${1:-}
if [ -z "$bin" ]; then
  bin=$tmp/gateway
  go build -o "$bin" ./cmd/gateway
fi

# The examples, as "<line number><TAB><line>".
mapfile -t examples < <(awk '
  /^```sh[[:space:]]*$/ { insh = 1; next }
  /^```/               { insh = 0; next }
  insh && /^[[:space:]]*curl[[:space:]]/ { printf "%d\t%s\n", NR, $0 }
' "$doc")
if [ "${#examples[@]}" -eq 0 ]; then
  echo "FAIL: no curl examples found in $doc"
  exit 1
fi

# Every example carries its expected status (and maybe the problem code).
expect_re='# expect: ([0-9]{3})( ([a-z_]+))?[[:space:]]*$'
missing=0
for ex in "${examples[@]}"; do
  if ! [[ ${ex#*$'\t'} =~ $expect_re ]]; then
    echo "FAIL: $doc:${ex%%$'\t'*}: curl example without '# expect: <status>': ${ex#*$'\t'}"
    missing=1
  fi
done
[ "$missing" -eq 0 ] || exit 1

# Every operation of the contract has an example: "<METHOD> <path regex>".
mapfile -t ops < <(awk '
  /^paths:/      { inpaths = 1; next }
  /^[^[:space:]]/ { inpaths = 0 }
  inpaths && /^  \/[^:]*:[[:space:]]*$/ { path = $1; sub(/:$/, "", path); next }
  inpaths && /^    (get|put|post|patch|delete):[[:space:]]*$/ {
    m = $1; sub(/:$/, "", m); re = path; gsub(/\{[^}]+\}/, "[^/]+", re)
    printf "%s ^%s$\n", toupper(m), re
  }
' "$spec")
method_path() { # an example line -> "METHOD /path"
  local line=$1 m=GET url
  if [[ $line =~ -X\ ([A-Z]+) ]]; then m=${BASH_REMATCH[1]}
  elif [[ $line =~ (--json|\ -d\ |--data) ]]; then m=POST; fi
  [[ $line =~ \"\$(AGENT_URL|HOST_URL)([^\"?]*) ]] && url=${BASH_REMATCH[2]} || url=?
  echo "$m $url"
}
uncovered=0
for op in "${ops[@]}"; do
  want_m=${op%% *} want_re=${op#* } found=0
  for ex in "${examples[@]}"; do
    mp=$(method_path "${ex#*$'\t'}")
    if [ "${mp%% *}" = "$want_m" ] && [[ ${mp#* } =~ $want_re ]]; then found=1; break; fi
  done
  if [ "$found" -eq 0 ]; then
    echo "FAIL: $spec: $want_m $want_re has no curl example in $doc"
    uncovered=1
  fi
done
[ "$uncovered" -eq 0 ] || exit 1

# A fresh demo gateway on free ports (port 0: the demo output names the real ones).
"$bin" --demo --listen 127.0.0.1:0 --host-listen 127.0.0.1:0 --log-format text >"$tmp/out" 2>"$tmp/err" &
gwpid=$!
for _ in $(seq 1 150); do
  grep -q '^Console:' "$tmp/out" 2>/dev/null && break
  kill -0 "$gwpid" 2>/dev/null || { echo "FAIL: gateway --demo exited"; cat "$tmp/out" "$tmp/err"; exit 1; }
  sleep 0.2
done
grep -q '^Console:' "$tmp/out" || { echo "FAIL: gateway --demo did not print its demo run"; cat "$tmp/out" "$tmp/err"; exit 1; }
agent_line=$(grep -A1 '^Agent API' "$tmp/out" | tail -1)
host_line=$(grep -A1 '^Host API' "$tmp/out" | tail -1)
TOKEN=$(sed -n 's/.*Authorization: Bearer \([^"]*\)".*/\1/p' <<<"$agent_line")
HOST_TOKEN=$(sed -n 's/.*Authorization: Bearer \([^"]*\)".*/\1/p' <<<"$host_line")
AGENT_URL=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$agent_line" | head -1)
HOST_URL=$(grep -o 'http://[0-9.]*:[0-9]*' <<<"$host_line" | head -1)
if [ -z "$TOKEN" ] || [ -z "$HOST_TOKEN" ] || [ -z "$AGENT_URL" ] || [ -z "$HOST_URL" ]; then
  echo "FAIL: cannot read the tokens and addresses from the demo output"; cat "$tmp/out"; exit 1
fi
export TOKEN HOST_TOKEN AGENT_URL HOST_URL

# curl, as the examples call it: the body goes to a file, the status to stdout.
curl() { command curl -sS --max-time 60 -o "$tmp/body" -w '%{http_code}' "$@"; }

passed=0 failed=0
for ex in "${examples[@]}"; do
  n=${ex%%$'\t'*} line=${ex#*$'\t'}
  [[ $line =~ $expect_re ]]
  want=${BASH_REMATCH[1]} code=${BASH_REMATCH[3]}
  : >"$tmp/body"
  got=$(eval "$line" 2>"$tmp/curl-err") || true
  if [ -n "$code" ] && [ "$got" = "$want" ] && ! grep -q "\"code\":\"$code\"" "$tmp/body"; then
    got="$got without code $code"
  fi
  if [ "$got" = "$want" ]; then
    passed=$((passed + 1))
    printf 'ok   %s %-22s %s:%s  %s\n' "$got" "$code" "$doc" "$n" "$(method_path "$line")"
  else
    failed=$((failed + 1))
    printf 'FAIL %s (want %s %s)  %s:%s\n  %s\n' "${got:-none}" "$want" "$code" "$doc" "$n" "$line"
    sed 's/^/  | /' "$tmp/body" "$tmp/curl-err" | head -20
    echo
  fi
done
echo "curl-examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
