#!/usr/bin/env bash
# The full test suite: what the README's test command runs and what CI
# runs on a bare machine. It installs what the tests need, checks that the
# generated code and go.mod are clean, lints the contract, and runs every
# Go test under the race detector, the browser, SDK and docs tests, then
# each fuzz target briefly.
#
# Every gateway it starts listens on ports found free (the docs' fixed
# ports are replaced, see scripts/doc-commands.sh), so a demo left running
# or another server on 8080 cannot break or hang it.
#
# Output: steps that do not depend on each other run side by side, in
# lanes: the contract lint beside go generate and go vet; then the Go tests
# and the build of the fuzz binaries beside the browser, SDK and docs
# tests. Each line a lane prints starts with its name, as it happens: a
# step's start and end (with its time), each Go package as it ends (with
# its time), each failed test with its output, the "==> " steps of the
# scripts, and, after 30 s without a line, what is still running
# (tools/testprogress). A step's whole output is in a log of its own,
# named when the step fails, with its last lines. The last line is
# `test.sh: passed in <n>s` or `test.sh: FAILED at <step> ...`.
#
# Each run keeps its Redis servers, collector, logs and temporary files
# (TMPDIR) in a directory of its own, removed when it passes (its logs are
# kept when it fails), with ports picked at random and taken again when
# another process wins one first; so two runs from two checkouts go side
# by side on one machine, and neither stops the other's servers. Two runs
# from one checkout share its node_modules and build outputs: the second
# waits for the first, and says so.
#
# Adding a step: a script of the repository becomes a step with one line.
# Name it in a lane (`lane "outside" console_test sdk_test
# scripts/image-test.sh`: it runs after the lane's other steps, beside the
# other lanes) or run it on its own after the lanes (`step
# "scripts/image-test.sh" scripts/image-test.sh`). It should print a
# "==> <what>" line as each part of it starts, and exit non-zero on failure.
#
# Environment: FUZZTIME (each fuzz target's time, default 10s); FUZZ_ONLY=1
# runs only the fuzz steps (build the fuzz binaries, fuzz every target);
# TMPDIR (where the run's directory is made, default /tmp). To try a
# change to this script quickly:
# GO_PACKAGES (what go test runs, default ./...) and SKIP (names of steps
# not to run, e.g. "console_test sdk_test fuzz_build fuzz_all"; a run that
# skips a step says so before its last line).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

start=$SECONDS
failed=()
current="setup"

# The run's own directory: servers' state, logs, TMPDIR. Its name is short:
# unix sockets the tests make below TMPDIR must fit in 107 bytes.
run=$(mktemp -d "${TMPDIR:-/tmp}/loom-test.XXXXXX")
logs=$run/logs
mkdir -p "$logs" "$run/tmp" "$run/bin"
# TMPDIR is open to every user, as /tmp is: tests run the gateway as
# another uid from a directory they make below it (tests/tokenfile_test.go).
chmod 755 "$run"
chmod 1777 "$run/tmp"
lockdir=${TMPDIR:-/tmp}
export TMPDIR=$run/tmp
export LOOM_GATEWAY_REDIS_DIR=$run/redis LOOM_GATEWAY_OTELCOL_DIR=$run/otelcol
# Random first ports below the kernel's ephemeral range (32768 and up);
# the scripts take the next free one, and another if a server of another
# run takes it first.
export LOOM_GATEWAY_REDIS_PORT=${LOOM_GATEWAY_REDIS_PORT:-$((20000 + RANDOM % 6000))}
export LOOM_GATEWAY_OTELCOL_PORT=${LOOM_GATEWAY_OTELCOL_PORT:-$((26000 + RANDOM % 6000))}

finish() {
  local status=$?
  [ -z "${redis_started:-}" ] || scripts/redis.sh stop 2>/dev/null || true
  [ -z "${otelcol_started:-}" ] || scripts/otelcol.sh stop 2>/dev/null || true
  if [ "$status" -eq 0 ] && [ "${#failed[@]}" -eq 0 ]; then
    rm -rf "$run"
    [ -z "${SKIP:-}" ] || printf '\n(steps skipped: %s)\n' "$SKIP"
    printf '\ntest.sh: passed in %ss\n' "$((SECONDS - start))"
  else
    rm -rf "$run/tmp" "$run/bin" "$run/fuzz"
    printf '\nthe logs of this run are in %s\n' "$logs"
    [ "${#failed[@]}" -gt 0 ] || failed=("$current")
    printf '\ntest.sh: FAILED at %s (after %ss)\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" "$((SECONDS - start))"
    [ "$status" -ne 0 ] || exit 1
  fi
}
trap finish EXIT

# One run per checkout at a time (they share node_modules and build
# outputs); children do not hold the lock (9>&- on each), so a server
# left running cannot keep it.
exec 9>"$lockdir/loom-gateway-test-$(printf '%s' "$root" | sha256sum | cut -c1-16).lock"
if ! flock -n 9; then
  echo "test.sh: another test.sh runs in this checkout ($root); waiting for it to end (runs in two checkouts go side by side)"
  flock 9
fi

skipped() { [[ " ${SKIP:-} " == *" $1 "* ]]; }

# step name cmd...: runs one step in the foreground; a failure stops the suite.
step() {
  local name=$1 t0=$SECONDS
  shift
  current=$name
  if skipped "$1"; then printf '\n==> %s: skipped (SKIP)\n' "$name"; return; fi
  printf '\n==> %s\n' "$name"
  "$@" 9>&-
  printf '<== %s: ok in %ss\n' "$name" "$((SECONDS - t0))"
}

# lane name step...: runs steps one after another in the background, beside
# the other lanes; wait_lanes waits for them all. A step is a function of
# this script or the path of a script (scripts/x.sh). Its output goes to
# $logs/<step>.log through tools/testprogress, which prints its progress
# lines as they come; go_tests' output is `go test -json`. A lane's step
# runs as the condition of an if, where errexit is off: each returns its
# own failure.
lanes=()
lane() {
  local name=$1
  shift
  lanes+=("$name")
  (
    for fn in "$@"; do
      t0=$SECONDS
      if skipped "$fn"; then printf '[%s] %s: skipped (SKIP)\n' "$name" "$(title "$fn")"; continue; fi
      log=$logs/$(basename "$fn" .sh).log
      printf '[%s] ==> %s\n' "$name" "$(title "$fn")"
      if run_step "$name" "$fn" "$log"; then
        printf '[%s] <== %s: ok in %ss\n' "$name" "$(title "$fn")" "$((SECONDS - t0))"
        echo "ok $fn" >>"$logs/$name.done"
      else
        if [ "$fn" != go_tests ]; then
          tail -n 40 "$log" | sed "s/^/[$name]   | /"
        fi
        printf '[%s] <== %s: FAILED after %ss (its whole output: %s)\n' "$name" "$(title "$fn")" "$((SECONDS - t0))" "$log"
        echo "FAILED $fn" >>"$logs/$name.done"
        exit 1
      fi
    done
  ) 9>&- &
  eval "lane_pid_${#lanes[@]}=$!"
}
run_step() {
  local name=$1 fn=$2 log=$3 json=()
  [ "$fn" != go_tests ] || json=(-json)
  "$fn" 2>&1 </dev/null | "$run/bin/testprogress" "${json[@]}" -lane "$name" -log "$log"
}
wait_lanes() {
  local i=0 name verdict fn
  for name in "${lanes[@]}"; do
    i=$((i + 1))
    local pid_var="lane_pid_$i"
    wait "${!pid_var}" && continue
    if [ -f "$logs/$name.done" ] && grep -q '^FAILED ' "$logs/$name.done"; then
      while read -r verdict fn; do
        [ "$verdict" = ok ] || failed+=("$(title "$fn")")
      done <"$logs/$name.done"
    else
      failed+=("lane $name")
    fi
  done
  lanes=()
  [ "${#failed[@]}" -eq 0 ]
}

title() {
  case "$1" in
    go_tests) echo "go test -race" ;;
    console_test) echo "operator console in a real browser" ;;
    sdk_test) echo "generated clients, MCP SDK, Prism, every docs command" ;;
    image_test) echo "container image: two builds, one digest; run with podman" ;;
    fuzz_build) echo "build the fuzz binaries" ;;
    lint_packages) echo "npm packages (tools/lint)" ;;
    contract_lint) echo "contract lint (Spectral, spectral:oas)" ;;
    generated_clean) echo "generated code and docs/ERRORS.md are clean (go generate)" ;;
    fmt_vet) echo "gofmt and go vet" ;;
    *) echo "$1" ;; # a script: its path
  esac
}

toolchain() {
  go version
  command -v node >/dev/null || { echo "node is required (Node 20)"; return 1; }
  node --version
  command -v flock >/dev/null || { echo "flock is required (util-linux)"; return 1; }
  # The lanes' progress printer.
  go build -o "$run/bin/testprogress" ./tools/testprogress
}

lint_packages() { (cd tools/lint && npm ci --no-audit --no-fund --loglevel=error); }

generated_clean() {
  sums() { find api -name '*.gen.go' -type f -print0 | sort -z | xargs -0 sha256sum; sha256sum go.mod go.sum docs/ERRORS.md; }
  local before after
  before=$(sums) || return 1
  go generate ./... || return 1
  go mod tidy || return 1
  after=$(sums) || return 1
  if [ "$before" != "$after" ]; then
    diff <(echo "$before") <(echo "$after") || true
    echo "FAIL: go generate or go mod tidy changed files; regenerate and commit them"
    return 1
  fi
}

fmt_vet() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*')) || return 1
  if [ -n "$unformatted" ]; then echo "FAIL: gofmt would change:"; echo "$unformatted"; return 1; fi
  go vet ./...
}

contract_lint() { (cd tools/lint && npx --no-install spectral lint --ruleset .spectral.yaml --fail-severity error ../../api/openapi.yaml); }

services() {
  # openssl: tests/receipt_test.go checks a receipt with it, as
  # docs/SECURITY.md shows.
  command -v openssl >/dev/null || scripts/apt-install.sh openssl
  # Not eval "$(...)": that would succeed, with no Redis, when start fails.
  local redis_env
  redis_started=1
  redis_env=$(scripts/redis.sh start)
  eval "$redis_env"
  export LOOM_GATEWAY_TEST_REDIS LOOM_GATEWAY_TEST_REDIS_CLUSTER
  # The OpenTelemetry Collector of the trace tests (tools/otelcol, built
  # once into a cache).
  local otelcol_env
  otelcol_started=1
  otelcol_env=$(scripts/otelcol.sh start)
  eval "$otelcol_env"
  export LOOM_GATEWAY_TEST_OTLP_ENDPOINT LOOM_GATEWAY_TEST_OTEL_FILE
}

go_tests() { go test -json -race -count=1 -timeout 20m ${GO_PACKAGES:-./...}; }
console_test() { ./scripts/console-test.sh; }
sdk_test() { ./scripts/sdk-test.sh; }
image_test() { ./scripts/image-test.sh; }

# The fuzz binaries are built once, with the fuzzing instrumentation (every
# package the target links, the standard library included, is compiled
# again for it: that build, not the fuzzing, is most of a fuzz step's
# time on a fresh machine), beside the other tests.
fuzzdir=$run/fuzz
fuzz_build() {
  mkdir -p "$fuzzdir"
  local pkg dir
  for pkg in $(go list ./...); do
    dir=$(go list -f '{{.Dir}}' "$pkg")
    grep -qs '^func Fuzz' "$dir"/*_test.go || continue
    echo "==> build $pkg"
    go test -c -fuzz . -o "$fuzzdir/$(echo "$pkg" | tr / _).test" "$pkg" || return 1
  done
}

# fuzz_one pkg target: fuzzes one target for $fuzztime with one worker.
# A failure prints its own output, and then:
#  - the target's seed corpus runs again, with any input Go saved under
#    testdata/fuzz: a finding that reproduces fails the suite;
#  - otherwise the target fuzzes again, up to twice: the fuzzing engine
#    itself fails a short run now and then ("context deadline exceeded"
#    as the time runs out, or a worker "hung or terminated unexpectedly"
#    whose input passes when run again). Three failures in a row fail the
#    suite; a pass is reported as a warning.
fuzztime=${FUZZTIME:-10s}
fuzz_one() {
  local pkg=$1 target=$2 bin dir log again
  bin=$fuzzdir/$(echo "$pkg" | tr / _).test
  dir=$(go list -f '{{.Dir}}' "$pkg")
  log=$fuzzdir/$target.run
  fuzz() {
    (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" \
      -test.fuzzminimizetime 2s -test.parallel 1 -test.fuzzcachedir "$(go env GOCACHE)/fuzz/$pkg") >"$log" 2>&1
  }
  echo "fuzz $pkg $target ($fuzztime)"
  fuzz && return 0
  echo "fuzz $target failed:"
  tail -n 40 "$log"
  echo "running $target's seed corpus (with any saved input) again:"
  if ! (cd "$dir" && "$bin" -test.count=1 -test.run "^${target}\$"); then
    echo "FAIL: fuzz $target: the failing input reproduces"
    return 1
  fi
  for again in 2 3; do
    echo "fuzzing $target again (run $again of 3):"
    if fuzz; then
      echo "WARNING: fuzz $target: a run failed in the fuzzing engine, with no input that reproduces; run $again passed"
      return 0
    fi
    tail -n 5 "$log"
  done
  tail -n 40 "$log"
  echo "FAIL: fuzz $target failed three times in a row"
  return 1
}

# fuzz_all: every target, two at a time (one worker each, one per core),
# each printing its output when it ends.
fuzz_all() {
  local pkg dir target status=0 running=0
  for pkg in $(go list ./...); do
    dir=$(go list -f '{{.Dir}}' "$pkg")
    for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
      if [ "$running" -ge 2 ]; then
        wait -n || status=1
        running=$((running - 1))
      fi
      (fuzz_one "$pkg" "$target" >"$fuzzdir/$target.out" 2>&1 && s=0 || s=$?; cat "$fuzzdir/$target.out"; exit $s) &
      running=$((running + 1))
    done
  done
  while [ "$running" -gt 0 ]; do
    wait -n || status=1
    running=$((running - 1))
  done
  return "$status"
}

if [ -n "${FUZZ_ONLY:-}" ]; then
  step "build the fuzz binaries" fuzz_build
  step "fuzz targets, $fuzztime each, two at a time" fuzz_all
  exit 0
fi

step "toolchain" toolchain
current="the checks"
lane "lint" lint_packages contract_lint
lane "go checks" generated_clean fmt_vet
wait_lanes
step "services: redis-server and a three-node Redis Cluster" services

current="the tests"
lane "go" go_tests fuzz_build
lane "outside" console_test sdk_test image_test
wait_lanes

step "the systemd unit, booted under systemd in a container (scripts/unit-test.sh)" scripts/unit-test.sh
step "fuzz targets, $fuzztime each, two at a time" fuzz_all
