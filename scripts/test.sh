#!/usr/bin/env bash
# The full test suite: what the README's test command runs and what CI
# runs on a bare machine. It installs what the tests need, checks that the
# generated code and go.mod are clean, lints the contract, and runs every
# Go test under the race detector, the browser, SDK and docs tests, then
# each fuzz target briefly.
#
# Every gateway it starts listens on ports found free (the docs' fixed
# ports are replaced, see scripts/doc-commands.sh), so a demo left running
# or another server on 8080 cannot break or hang it. Each step prints its
# time; the last line is `test.sh: passed in <n>s` or
# `test.sh: FAILED at <step> ...`. Steps that do not depend on each other
# run side by side, in two lanes whose output is printed whole once both
# end: the contract lint beside go generate and go vet; then the Go tests
# and the build of the fuzz binaries beside the browser, SDK and docs
# tests.
#
# Environment: FUZZTIME (each fuzz target's time, default 10s); FUZZ_ONLY=1
# runs only the fuzz steps (build the fuzz binaries, fuzz every target).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

start=$SECONDS
failed=()
current="setup"
logs=$(mktemp -d)
finish() {
  local status=$?
  [ -z "${redis_started:-}" ] || scripts/redis.sh stop || true
  [ -z "${otelcol_started:-}" ] || scripts/otelcol.sh stop || true
  rm -rf "$logs"
  if [ "$status" -eq 0 ] && [ "${#failed[@]}" -eq 0 ]; then
    printf '\ntest.sh: passed in %ss\n' "$((SECONDS - start))"
  else
    [ "${#failed[@]}" -gt 0 ] || failed=("$current")
    printf '\ntest.sh: FAILED at %s (after %ss)\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" "$((SECONDS - start))"
    [ "$status" -ne 0 ] || exit 1
  fi
}
trap finish EXIT

# step name cmd...: runs one step in the foreground; a failure stops the suite.
step() {
  local name=$1 t0=$SECONDS
  shift
  current=$name
  printf '\n==> %s\n' "$name"
  "$@"
  printf '<== %s: ok in %ss\n' "$name" "$((SECONDS - t0))"
}

# lane name step-function...: runs steps one after another in the
# background, each into a log of its own; wait_lanes prints them. A lane's
# step runs as the condition of an if, where errexit is off: each returns
# its own failure.
lanes=()
lane() {
  local name=$1
  shift
  lanes+=("$name")
  (
    for fn in "$@"; do
      t0=$SECONDS
      if "$fn" >"$logs/$fn.log" 2>&1; then
        echo "$fn ok $((SECONDS - t0))" >>"$logs/$name.done"
      else
        echo "$fn FAILED $((SECONDS - t0))" >>"$logs/$name.done"
        exit 1
      fi
    done
  ) &
  eval "lane_pid_${#lanes[@]}=$!"
}
wait_lanes() {
  local i=0 name fn verdict secs
  for name in "${lanes[@]}"; do
    i=$((i + 1))
    local pid_var="lane_pid_$i"
    wait "${!pid_var}" || true
    while read -r fn verdict secs; do
      printf '\n==> %s (%s)\n' "$(title "$fn")" "$name"
      cat "$logs/$fn.log"
      if [ "$verdict" = ok ]; then
        printf '<== %s: ok in %ss\n' "$(title "$fn")" "$secs"
      else
        printf '<== %s: FAILED after %ss\n' "$(title "$fn")" "$secs"
        failed+=("$(title "$fn")")
      fi
    done <"$logs/$name.done"
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
    *) echo "$1" ;;
  esac
}

toolchain() {
  go version
  command -v node >/dev/null || { echo "node is required (Node 20)"; return 1; }
  node --version
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

go_tests() { go test -race -count=1 -timeout 20m ./...; }
console_test() { ./scripts/console-test.sh; }
sdk_test() { ./scripts/sdk-test.sh; }
image_test() { ./scripts/image-test.sh; }

# The fuzz binaries are built once, with the fuzzing instrumentation (every
# package the target links, the standard library included, is compiled
# again for it: that build, not the fuzzing, is most of a fuzz step's
# time on a fresh machine), beside the other tests.
fuzzdir=$logs/fuzz
fuzz_build() {
  mkdir -p "$fuzzdir"
  local pkg dir
  for pkg in $(go list ./...); do
    dir=$(go list -f '{{.Dir}}' "$pkg")
    grep -qs '^func Fuzz' "$dir"/*_test.go || continue
    echo "build $pkg"
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
