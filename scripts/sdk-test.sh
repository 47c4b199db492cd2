#!/usr/bin/env bash
# The contract, proven from the outside: the generated TypeScript client and
# Stoplight Prism against a real `--demo` gateway, and every command of the
# README and docs/. Needs Go and Node 20 (npm packages come from `npm ci`);
# exits non-zero on any failure.
#
#   1. build the gateway once;
#   2. npm ci in sdk/typescript;
#   3. schema.d.ts is exactly what openapi-typescript makes of api/openapi.yaml;
#   4. tsc (strict; a type error fails, and so does a call in test/types.ts
#      that should not compile but does), and the committed dist/ is what
#      tsc makes of src/;
#   5. the node test, straight against the gateway;
#   6. the MCP face through the official TypeScript MCP SDK
#      (@modelcontextprotocol/sdk), which also checks each result against
#      the tool's outputSchema;
#   7. the MCP face through an agent SDK from npm (the OpenAI Agents SDK,
#      @openai/agents-core, whose MCP client speaks 2026-07-28): its own
#      tool path, and what the model reads when the run has ended;
#   8. a sandbox-shaped round trip: the agent side in a network namespace
#      of its own, reaching the gateway by a veth address over REST and by
#      a host name over MCP (skipped, saying why, without root or ip netns);
#   8b. the node test again through Prism (proxy mode, --errors) in front of
#      both listeners: any contract violation Prism reports fails;
#   9. the official MCP conformance suite against --demo
#      (scripts/conformance.sh: Node 22 from the npm registry, the
#      scenarios that do not apply listed with their reasons);
#  10. every command of the README and docs/ (scripts/doc-commands.sh), each
#      document against a fresh gateway of its own;
#  11. the programs of the docs (the TypeScript and Go ones of
#      docs/clients.md), each compiled and run in a new project outside the
#      repository, as the doc says, against --demo (scripts/doc-examples.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

start=$SECONDS
step() { printf '\n==> [%ss] %s\n' "$((SECONDS - start))" "$*"; }

step "toolchain"
go version
command -v node >/dev/null || { echo "FAIL: node is required (Node 20 or later)"; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { echo "FAIL: Node 20 or later is required, found $(node --version)"; exit 1; }
echo "node $(node --version), npm $(npm --version)"
# docs/operators.md runs two gateways on a redis-server of its own.
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || scripts/apt-install.sh redis-server

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step "build the gateway"
go build -o "$tmp/gateway" ./cmd/gateway
export LOOM_GATEWAY_BIN=$tmp/gateway

cd "$root/sdk/typescript"

step "npm ci (sdk/typescript)"
npm ci --prefer-offline --no-audit --no-fund --loglevel=error

step "schema.d.ts is generated from api/openapi.yaml"
npm run --silent check:generated

step "tsc: the typed client, its test and the must-not-compile checks"
npm run --silent build

step "dist/ (the package's JS and types, committed) is what tsc makes of src/"
npm run --silent check:dist

step "TypeScript client against --demo (direct)"
npm run --silent test:direct

step "MCP face through the official TypeScript MCP SDK against --demo"
npm run --silent test:mcp

step "MCP face through the OpenAI Agents SDK against --demo"
npm run --silent test:agents

step "an agent in its own network namespace (REST by address, MCP by host name)"
npm run --silent test:sandbox

step "TypeScript client against --demo through Prism (proxy --errors)"
npm run --silent test:prism

cd "$root"
step "the MCP conformance suite against --demo"
scripts/conformance.sh "$tmp/gateway"

step "each agent SDK's own schema conversion over the catalog"; scripts/sdkcheck.sh "$tmp/gateway"

step "every command of the README and docs/"
scripts/doc-commands.sh "$tmp/gateway"

step "the programs of the docs, each in a new project against --demo"
scripts/doc-examples.sh "$tmp/gateway"

step "sdk-test: all passed in $((SECONDS - start))s"
