#!/usr/bin/env bash
# Browser test of the operator console (web/): installs Debian's
# chromium when it is missing, installs playwright-core (tests/console,
# npm ci), builds the gateway, starts it with --demo on free loopback
# ports, runs tests/console/console.test.mjs with node --test (GATEWAY_LOG
# is the gateway's text log, at the default info level), and stops the
# gateway. Screenshots land in tests/console/out/.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  step "installing chromium (Debian package)"
  scripts/apt-install.sh chromium
fi
"$CHROMIUM" --version 2>/dev/null | grep -i chromium || { echo "FAIL: $CHROMIUM is not chromium"; exit 1; }

step "npm packages (tests/console)"
(cd tests/console && npm ci --no-audit --no-fund --loglevel=error)

step "build the gateway"
work=$(mktemp -d)
gw=""
cleanup() {
  if [ -n "$gw" ] && kill -0 "$gw" 2>/dev/null; then
    kill -TERM "$gw" 2>/dev/null || true
    wait "$gw" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/gateway" ./cmd/gateway

step "start the gateway with --demo"
# Port 0: the kernel picks free ports; the demo prints the addresses it got.
# With a collector (scripts/otelcol.sh), the gateway exports traces and the
# console shows each call's trace id.
OTEL_EXPORTER_OTLP_ENDPOINT="${LOOM_GATEWAY_TEST_OTLP_ENDPOINT:-}" \
"$work/gateway" --demo --listen 127.0.0.1:0 --host-listen 127.0.0.1:0 --log-format text --log-level info --shutdown-timeout 5s \
  >"$work/demo.out" 2>"$work/gateway.log" &
gw=$!
for _ in $(seq 1 300); do
  grep -q '^Console: ' "$work/demo.out" && break
  if ! kill -0 "$gw" 2>/dev/null; then
    echo "FAIL: the gateway exited"; cat "$work/gateway.log"; exit 1
  fi
  sleep 0.1
done
CONSOLE_URL=$(sed -n 's/^Console: \(http[^ ]*\).*/\1/p' "$work/demo.out" | head -1)
HOST_TOKEN=$(sed -n '/^Host API/,$p' "$work/demo.out" | grep -o 'Authorization: Bearer [^"]*' | head -1 | sed 's/^Authorization: Bearer //')
if [ -z "$CONSOLE_URL" ] || [ -z "$HOST_TOKEN" ]; then
  echo "FAIL: no console URL or host token in the demo output"; cat "$work/demo.out" "$work/gateway.log"; exit 1
fi
echo "console at $CONSOLE_URL"

step "browser test (node --test, playwright-core + $CHROMIUM)"
status=0
(cd tests/console && TRACED="${LOOM_GATEWAY_TEST_OTLP_ENDPOINT:+1}" CONSOLE_URL="$CONSOLE_URL" HOST_TOKEN="$HOST_TOKEN" CHROMIUM="$CHROMIUM" GATEWAY_LOG="$work/gateway.log" node --test console.test.mjs) || status=$?
if [ "$status" != 0 ]; then
  echo "gateway log (last 40 lines):"; tail -40 "$work/gateway.log"
  exit "$status"
fi
echo "screenshots: tests/console/out/"
