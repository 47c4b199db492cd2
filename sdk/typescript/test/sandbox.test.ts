// A sandbox-shaped end-to-end test: the agent side (sandbox-agent.ts) runs
// in a network namespace of its own, joined to the host by a veth pair on
// addresses this test picks (10.213.N.0/30, inside the namespace it makes),
// and reaches the gateway, which listens on the host's end, by that address
// over REST and by a host name (the namespace's /etc/hosts, via
// /etc/netns/<name>/hosts) over MCP with the TypeScript SDK: the README's
// round trip, the host reading the result at the end. Without root or
// ip netns the test is skipped, saying why.
import assert from "node:assert/strict";
import { spawnSync, spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createHostClient } from "../src/index.js";
import { freePort, startGateway, type Gateway } from "./harness.js";

const ns = `loomgw-${process.pid}`;
const net = `10.213.${process.pid % 250}`;
const hostEnd = `lgh${process.pid % 100000}`;
const nsEnd = `lgs${process.pid % 100000}`;
const hostName = "loom-gateway.internal";

function sh(...argv: string[]): { ok: boolean; out: string } {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

function cannot(): string | undefined {
  if (process.platform !== "linux") return "network namespaces are Linux's";
  if (process.getuid?.() !== 0) return "making a network namespace needs root";
  const probe = sh("ip", "netns", "add", `${ns}-probe`);
  if (!probe.ok) return `ip netns add failed: ${probe.out.trim()}`;
  sh("ip", "netns", "del", `${ns}-probe`);
  return undefined;
}

const skip = cannot();
let gw: Gateway | undefined;

before(async () => {
  if (skip) return;
  const steps: string[][] = [
    ["ip", "netns", "add", ns],
    ["ip", "link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd],
    ["ip", "link", "set", nsEnd, "netns", ns],
    ["ip", "addr", "add", `${net}.1/30`, "dev", hostEnd],
    ["ip", "link", "set", hostEnd, "up"],
    ["ip", "netns", "exec", ns, "ip", "addr", "add", `${net}.2/30`, "dev", nsEnd],
    ["ip", "netns", "exec", ns, "ip", "link", "set", nsEnd, "up"],
    ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
  ];
  for (const s of steps) {
    const r = sh(...s);
    assert.ok(r.ok, `${s.join(" ")}: ${r.out}`);
  }
  // ip netns exec binds this over the namespace's /etc/hosts.
  mkdirSync(`/etc/netns/${ns}`, { recursive: true });
  writeFileSync(`/etc/netns/${ns}/hosts`, `127.0.0.1 localhost\n${net}.1 ${hostName}\n`);
  process.env.LOOM_GATEWAY_LISTEN = `${net}.1:${await freePort()}`;
  gw = await startGateway();
});

after(async () => {
  await gw?.stop();
  if (skip) return;
  sh("ip", "netns", "del", ns);
  sh("ip", "link", "del", hostEnd);
  rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
});

test("an agent in its own network namespace: the README round trip over REST and MCP", { skip }, async () => {
  const host = createHostClient(gw!.hostURL, gw!.hostToken);
  const created = await host.POST("/host/v1/runs", {
    body: { maxConfidentiality: ["https://loom.example/facet/work"], ttlSeconds: 600 },
  });
  assert.equal(created.response.status, 201, JSON.stringify(created.error));
  const runId = created.data!.runId;
  const port = new URL(gw!.agentURL).port;
  // The namespace cannot reach the host's loopback: only the veth.
  const loop = sh("ip", "netns", "exec", ns, "curl", "-s", "-m", "2", "-o", "/dev/null", `http://127.0.0.1:${port}/healthz`);
  assert.equal(loop.ok, false, "the sandbox reached the host's loopback");

  const script = fileURLToPath(new URL("./sandbox-agent.js", import.meta.url));
  const child = spawn("ip", ["netns", "exec", ns, process.execPath, script], {
    env: {
      ...process.env,
      REST_URL: `http://${net}.1:${port}`,
      MCP_URL: `http://${hostName}:${port}/v1/runs/${runId}/mcp`,
      RUN_ID: runId,
      RUN_TOKEN: created.data!.token,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  assert.equal(code, 0, out);
  const seen = JSON.parse(out.trim().split("\n").pop()!);
  assert.match(seen.handle, /^cfh:v:/);

  // The host reads the result, the handle turned into a link to the row.
  const res = await fetch(`${gw!.hostURL}/host/v1/runs/${runId}/result`, { headers: { Authorization: `Bearer ${gw!.hostToken}` } });
  assert.equal(res.status, 200);
  const body = await res.text();
  assert.match(body, /"@link":"doc-/);
  assert.match(body, /Atlas launch checklist/);
});
