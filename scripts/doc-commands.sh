#!/usr/bin/env bash
# Runs every command of the README and the docs, in document order, so no
# doc can drift from the gateway. Each document runs in a fresh working
# directory of its own, with the gateway binary built from this tree.
#
# A command is any line of a ```sh block:
#   - a line ending `# expect: <status>` (or `# expect: <status> <code>`,
#     which also checks the problem's `code`) is a curl call; it must answer
#     that status. `, body has <text>` after the expectation also checks
#     that the body holds text as written. `NAME=$(curl ... | filter)   # expect: <status>` checks
#     the status and sets NAME to the filter's output on the body.
#   - any other line must succeed (exit 0); a line ending in `&` starts a
#     background job, which must still be stoppable with SIGTERM at the end.
#   - three lines are not run as written, each for a stated reason:
#     `go build -o gateway ./cmd/gateway` (this script builds that binary
#     once and links it in), `go run ./cmd/gateway --demo` (the same
#     program; the docs that use the demo start it from the built binary),
#     and `./scripts/test.sh` (the test command running this script).
#   - a block whose first line is `# in your own project` shows setup for
#     another project (installing a generator there); it is listed, not run.
# A line may not continue onto the next (no trailing backslash).
#
# docs/clients.md must also show every route of api/openapi.yaml.
# BENCHMARKS.md is not run: its commands are measurements of minutes each,
# and its figures are read on a quiet machine, not asserted.
#
# Usage: scripts/doc-commands.sh [path/to/gateway]   (default: go build it)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

docs=(README.md docs/*.md)
spec=api/openapi.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bin=${1:-}
if [ -z "$bin" ]; then
  bin=$tmp/gateway
  go build -o "$bin" ./cmd/gateway
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

expect_re='^(.*[^[:space:]])[[:space:]]+# expect: ([0-9]{3})( ([a-z_]+))?(, body has (.*[^[:space:]]))?[[:space:]]*$'
assign_re='^([A-Za-z_][A-Za-z0-9_]*)=\$\((curl .*) \| (.*)\)$'

# sh_lines doc: "<line number><TAB><block's first line><TAB><line>" for every
# line of the doc's ```sh blocks.
sh_lines() {
  awk '
    /^```sh[[:space:]]*$/ { insh = 1; first = ""; next }
    /^```/               { insh = 0; next }
    insh { if (first == "") first = $0; printf "%d\t%s\t%s\n", NR, first, $0 }
  ' "$1"
}

# Route coverage: every operation of the contract has a curl line in
# docs/clients.md ("<METHOD> <path regex>").
method_path() { # a curl line -> "METHOD /path"
  local line=$1 m=GET url
  if [[ $line =~ -X\ ([A-Z]+) ]]; then m=${BASH_REMATCH[1]}
  elif [[ $line =~ (--json|\ -d\ |--data) ]]; then m=POST; fi
  [[ $line =~ \"\$(AGENT_URL|HOST_URL)([^\"?]*) ]] && url=${BASH_REMATCH[2]} || url=?
  echo "$m $url"
}
mapfile -t ops < <(awk '
  /^paths:/      { inpaths = 1; next }
  /^[^[:space:]]/ { inpaths = 0 }
  inpaths && /^  \/[^:]*:[[:space:]]*$/ { path = $1; sub(/:$/, "", path); next }
  inpaths && /^    (get|put|post|patch|delete):[[:space:]]*$/ {
    m = $1; sub(/:$/, "", m); re = path; gsub(/\{[^}]+\}/, "[^/]+", re)
    printf "%s ^%s$\n", toupper(m), re
  }
' "$spec")
mapfile -t client_curls < <(sh_lines docs/clients.md | cut -f3- | grep -E '^[[:space:]]*(curl|[A-Za-z_]+=\$\(curl)[[:space:]]')
uncovered=0
for op in "${ops[@]}"; do
  want_m=${op%% *} want_re=${op#* } found=0
  for line in "${client_curls[@]}"; do
    mp=$(method_path "$line")
    if [ "${mp%% *}" = "$want_m" ] && [[ ${mp#* } =~ $want_re ]]; then found=1; break; fi
  done
  if [ "$found" -eq 0 ]; then
    echo "FAIL: $spec: $want_m $want_re has no curl example in docs/clients.md"
    uncovered=1
  fi
done
[ "$uncovered" -eq 0 ] || exit 1

# q: a string as a single-quoted shell word.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# compile doc work: writes the script that runs doc's commands in work.
compile() {
  local doc=$1 work=$2 n first line cmd want code has var call filter
  {
    cat <<EOF
set -u
# A run cut short (a timeout, ^C) leaves no gateway of the doc running.
trap 'kill \$(jobs -p) 2>/dev/null' EXIT
trap 'exit 143' TERM INT
cd $(q "$work")
GATEWAY=$(q "$bin")
__doc=$(q "$doc")
__passed=0 __failed=0 __shown=0
__body=$(q "$work/.body")
# curl, as the docs call it: the body to a file, the status to stdout.
curl() { command curl -sS --max-time 60 -o "\$__body" -w '%{http_code}' "\$@"; }
__check() { # line want code got [text]
  local got=\$4
  if [ -n "\$3" ] && [ "\$got" = "\$2" ] && ! grep -q "\"code\":\"\$3\"" "\$__body"; then got="\$got without code \$3"; fi
  if [ -n "\${5:-}" ] && [ "\$got" = "\$2" ] && ! grep -qF -- "\$5" "\$__body"; then got="\$got without \$5 in the body"; fi
  if [ "\$got" = "\$2" ]; then
    __passed=\$((__passed + 1)); printf 'ok   %s %-22s %s:%s\n' "\$got" "\$3" "\$__doc" "\$1"
  else
    __failed=\$((__failed + 1)); printf 'FAIL %s (want %s %s)  %s:%s\n' "\${got:-none}" "\$2" "\$3" "\$__doc" "\$1"
    sed 's/^/  | /' "\$__body" | head -20; echo
  fi
}
__ran() { # line status
  if [ "\$2" -eq 0 ]; then
    __passed=\$((__passed + 1)); printf 'ok   ran                        %s:%s\n' "\$__doc" "\$1"
  else
    __failed=\$((__failed + 1)); printf 'FAIL exit %s  %s:%s\n' "\$2" "\$__doc" "\$1"
  fi
}
EOF
    while IFS=$'\t' read -r n first line; do
      cmd=${line#"${line%%[![:space:]]*}"}
      if [ "$first" = "# in your own project" ]; then
        [ -n "$cmd" ] && [ "${cmd:0:1}" != "#" ] && echo "__shown=\$((__shown + 1)); echo 'not run (your own project)  $doc:$n'"
        continue
      fi
      [ -z "$cmd" ] || [ "${cmd:0:1}" = "#" ] && continue
      if [ "${cmd: -1}" = "\\" ]; then
        echo "echo 'FAIL $doc:$n: a command continues onto the next line'; __failed=\$((__failed + 1))"
        continue
      fi
      case "$cmd" in
        "go build -o gateway ./cmd/gateway")
          echo "ln -sf \"\$GATEWAY\" gateway; __ran $n \$?"; continue ;;
        "go run ./cmd/gateway --demo"|"./scripts/test.sh")
          echo "echo 'covered    $(q "$cmd" | tr -d "'") ($doc:$n): see scripts/doc-commands.sh'"; continue ;;
      esac
      if [[ $cmd =~ $expect_re ]]; then
        call=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]} code=${BASH_REMATCH[4]} has=$(q "${BASH_REMATCH[6]}")
        if [[ $call =~ $assign_re ]]; then
          var=${BASH_REMATCH[1]} call=${BASH_REMATCH[2]} filter=${BASH_REMATCH[3]}
          echo ": >\"\$__body\"; __got=\$($call 2>&1); __check $n $want '$code' \"\$__got\" $has; $var=\$($filter <\"\$__body\")"
        else
          echo ": >\"\$__body\"; __got=\$($call 2>&1); __check $n $want '$code' \"\$__got\" $has"
        fi
      elif [ "${cmd: -1}" = "&" ]; then
        echo "$cmd"
        echo "__ran $n 0"
      else
        echo "$cmd"
        echo "__ran $n \$?"
      fi
    done < <(sh_lines "$doc")
    cat <<'EOF'
# Whatever the doc left running must stop on SIGTERM within 15 s.
for __pid in $(jobs -p); do
  kill "$__pid" 2>/dev/null || true
  for _ in $(seq 75); do kill -0 "$__pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$__pid" 2>/dev/null; then
    __failed=$((__failed + 1)); echo "FAIL $__doc: a background job ($__pid) outlived SIGTERM by 15 s"; kill -9 "$__pid"
  fi
done
echo "$__doc: $__passed passed, $__failed failed, $__shown shown for your own project"
[ "$__failed" -eq 0 ]
EOF
  } >"$work/.run.sh"
}

status=0
for doc in "${docs[@]}"; do
  work=$tmp/$(basename "$doc" .md)
  mkdir -p "$work"
  compile "$doc" "$work"
  echo "== $doc"
  if ! timeout 300 bash "$work/.run.sh"; then
    echo "FAIL: $doc"
    for f in "$work"/*.out "$work"/*.log; do [ -f "$f" ] && { echo "-- $f"; tail -20 "$f"; }; done
    status=1
  fi
done
exit $status
