#!/usr/bin/env bash
# Runs every command of the README and the docs, in document order, so no
# doc can drift from the gateway. Each document runs in a fresh working
# directory of its own, with the gateway binary built from this tree.
#
# A command is any line of a ```sh block:
#   - a line ending `# expect: <status>` (or `# expect: <status> <code>`,
#     which also checks the problem's `code`) is a curl call; it must answer
#     that status. `, body has <text>` after the expectation also checks
#     that the body holds text as written. A line that prints the status
#     itself (its curl has `-w '\n%{http_code}\n'`) runs as written, in the
#     document's shell, so an assignment on it (`RUN=$(curl ...); echo
#     "$RUN"`) holds for the later lines; its last line of output is the
#     status. On any other line curl writes the body to a file and the
#     status is checked from it; `NAME=$(curl ... | filter)   # expect:
#     <status>` checks the status and sets NAME to the filter's output on
#     the body.
#   - any other line must succeed (exit 0); a line ending in `&` starts a
#     background job, which must still be stoppable with SIGTERM at the end.
#   - three lines are not run as written, each for a stated reason:
#     `go build -o gateway ./cmd/gateway` (this script builds that binary
#     once and links it in), `go run ./cmd/gateway --demo` (the same
#     program; the docs that use the demo start it from the built binary),
#     and `./scripts/test.sh` (the test command running this script).
#   - a block whose first line is `# in your own project` shows setup for
#     another project (installing a generator there); it is listed, not run.
#     So is one whose first line is `# on the deployment host`: root's
#     commands on a server or a cluster (docs/operators.md, "Deployment",
#     names the test that holds each).
#     One whose first line is `# in a new project: FILE...` is listed here
#     and run by scripts/doc-examples.sh, in a new project of its own.
# A line may not continue onto the next (no trailing backslash).
#
# Ports: every loopback address with a fixed port (127.0.0.1:8080 and the
# like) is given a port found free just before the document runs, the same
# one wherever the document names that address (and wherever it names the
# port as `--port 8080`, as a server's command line does), so a demo left
# running or any other server on 8080 cannot fail or hang the run.
#
# Links: every markdown link of README.md, BENCHMARKS.md and docs/*.md to a
# file of the repository must name a file that exists, its #anchor a
# heading of that file, and a "[X.md](...), section N" a heading "## N."
# of X.md.
#
# docs/clients.md must also show every route of api/openapi.yaml.
# BENCHMARKS.md is not run: its commands are measurements of minutes each,
# and its figures are read on a quiet machine, not asserted.
#
# Usage: scripts/doc-commands.sh [path/to/gateway]   (default: go build it)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# DOCS (a list of files) runs those documents only, to try one quickly.
read -r -a docs <<<"${DOCS:-README.md $(echo docs/*.md)}"
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

# anchors doc: the #anchor of every heading of doc, as GitHub makes them
# (lower case; punctuation but - and _ dropped; spaces to -; -1, -2 ... on
# repeats), one a line.
anchors() {
  awk '/^```/ { fence = !fence; next } !fence && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
    tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g' |
    awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}
# links doc: "<line><TAB><target>" for every markdown link outside code.
links() {
  awk '/^```/ { fence = !fence; next } !fence {
      line = $0; gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^) ]+\)/)) {
        printf "%d\t%s\n", NR, substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
      }
    }' "$1"
}
broken=0
for doc in README.md BENCHMARKS.md docs/*.md; do
  dir=$(dirname "$doc")
  while IFS=$'\t' read -r n target; do
    case "$target" in http://*|https://*|mailto:*) continue ;; esac
    file=${target%%#*} anchor=""
    [[ $target == *"#"* ]] && anchor=${target#*#}
    if [ -z "$file" ]; then file=$doc; else file=$dir/$file; fi
    if [ ! -e "$file" ]; then
      echo "FAIL $doc:$n: the link ($target) names $file, which does not exist"; broken=1; continue
    fi
    if [ -n "$anchor" ] && [[ $file == *.md ]] && ! anchors "$file" | grep -qxF -- "$anchor"; then
      echo "FAIL $doc:$n: the link ($target): $file has no heading #$anchor"; broken=1
    fi
  done < <(links "$doc")
  # "[X.md](path), section N" and "[X.md](path) section N": X.md has "## N. ..."
  while IFS=: read -r n ref; do
    file=$dir/$(sed -E 's/^\[[^]]*\]\(([^)#]*).*/\1/' <<<"$ref")
    num=$(grep -oE '[0-9]+$' <<<"$ref")
    if [ ! -f "$file" ] || ! grep -qE "^## $num\. " "$file"; then
      echo "FAIL $doc:$n: \"$ref\": $file has no section $num"; broken=1
    fi
  done < <(grep -noE '\[[^]]*\]\([^)]+\.md\),? section [0-9]+' "$doc")
done
[ "$broken" -eq 0 ] || exit 1

# Fixed loopback ports in the docs are replaced by free ones: a port below
# the kernel's ephemeral range (32768 and up) that nothing answers on.
declare -A used_ports=()
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    [ -n "${used_ports[$p]:-}" ] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then used_ports[$p]=1; echo "$p"; return; fi
  done
}

# q: a string as a single-quoted shell word.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# compile doc work: writes the script that runs doc's commands in work.
compile() {
  local doc=$1 work=$2 n first line cmd want code has var call filter addr
  local -A port=()
  for addr in $(sh_lines "$doc" | cut -f3- | grep -oE '127\.0\.0\.1:[0-9]{4,5}' | sort -u); do
    port[$addr]=127.0.0.1:$(free_port)
    echo "   $addr is $(q "${port[$addr]}" | tr -d "'") for $doc"
  done
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
__out=$(q "$work/.out")
# curl, as the docs call it: the body to a file, the status to stdout; a
# call that prints its status itself runs as written.
curl() {
  case " \$* " in
    *"%{http_code}"*) command curl --max-time 60 "\$@" ;;
    *) command curl -sS --max-time 60 -o "\$__body" -w '%{http_code}' "\$@" ;;
  esac
}
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
__checkout() { # line want code [text]: the output of a line that printed its status last
  cp "\$__out" "\$__body"
  __check "\$1" "\$2" "\$3" "\$(grep -v '^[[:space:]]*\$' "\$__out" | tail -n 1)" "\${4:-}"
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
      for addr in "${!port[@]}"; do
        cmd=${cmd//"$addr"/"${port[$addr]}"}
        cmd=${cmd//"--port ${addr#127.0.0.1:} "/"--port ${port[$addr]#127.0.0.1:} "}
      done
      if [ "$first" = "# in your own project" ] || [ "$first" = "# on the deployment host" ]; then
        [ -n "$cmd" ] && [ "${cmd:0:1}" != "#" ] && echo "__shown=\$((__shown + 1)); echo 'not run (${first#\# })  $doc:$n'"
        continue
      fi
      if [[ $first == "# in a new project:"* ]]; then
        [ -n "$cmd" ] && [ "${cmd:0:1}" != "#" ] && echo "__shown=\$((__shown + 1)); echo 'run by scripts/doc-examples.sh  $doc:$n'"
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
        if [[ $call == *"%{http_code}"* ]]; then
          echo "{ $call; } >\"\$__out\" 2>&1 </dev/null; __checkout $n $want '$code' $has"
        elif [[ $call =~ $assign_re ]]; then
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
echo "$__doc: $__passed passed, $__failed failed, $__shown listed, not run"
[ "$__failed" -eq 0 ]
EOF
  } >"$work/.run.sh"
}

status=0
for doc in "${docs[@]}"; do
  work=$tmp/$(basename "$doc" .md)
  mkdir -p "$work"
  compile "$doc" "$work"
  echo "==> $doc"
  if ! timeout 300 bash "$work/.run.sh"; then
    echo "FAIL: $doc"
    for f in "$work"/*.out "$work"/*.log; do [ -f "$f" ] && { echo "-- $f"; tail -20 "$f"; }; done
    status=1
  fi
done
exit $status
