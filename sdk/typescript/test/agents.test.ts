// End-to-end test of the MCP face through an agent SDK nobody here wrote:
// the OpenAI Agents SDK (@openai/agents-core, whose MCP client is
// @modelcontextprotocol/client 2, speaking 2026-07-28). It connects with a
// URL and a bearer header, lists the run's tools, turns them into its
// own function tools and invokes them through its own tool path (what a
// model's tool call runs), and reads what the model would read when the
// run has ended.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MCPServerStreamableHttp, RunContext, getAllMcpTools, type FunctionTool } from "@openai/agents-core";
import { createHostClient } from "../src/index.js";
import { startGateway, type Gateway } from "./harness.js";

const WORK = "https://loom.example/facet/work";

let gw: Gateway;

async function newRun(): Promise<{ runId: string; token: string }> {
  const host = createHostClient(gw.hostURL, gw.hostToken);
  const created = await host.POST("/host/v1/runs", { body: { maxConfidentiality: [WORK], ttlSeconds: 600 } });
  assert.equal(created.response.status, 201, JSON.stringify(created.error));
  return { runId: created.data!.runId, token: created.data!.token };
}

async function connect(runId: string, token: string): Promise<MCPServerStreamableHttp> {
  const server = new MCPServerStreamableHttp({
    url: `${gw.agentURL}/v1/runs/${runId}/mcp`,
    name: "loom",
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await server.connect();
  return server;
}

async function functionTools(server: MCPServerStreamableHttp): Promise<Map<string, FunctionTool>> {
  const tools = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: false });
  return new Map(tools.map((t) => [t.name, t as FunctionTool]));
}

/** What the model reads of a tool's output: the SDK's string, or its items as JSON. */
function read(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

describe("loom-gateway's MCP face through the OpenAI Agents SDK", () => {
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.stop();
  });

  test("lists the tools and calls them through the SDK's own tool path", async () => {
    const { runId, token } = await newRun();
    const server = await connect(runId, token);
    try {
      const tools = await functionTools(server);
      assert.deepEqual(
        [...tools.keys()].sort(),
        ["describe_handle", "loom_calendar_list", "loom_context", "loom_page_discover", "loom_page_inspect",
          "loom_page_read", "loom_people", "loom_profile", "loom_search", "result"],
      );
      const ctx = new RunContext();
      const out = read(await tools.get("loom_search")!.invoke(ctx, JSON.stringify({ query: "atlas", limit: 5 })));
      assert.match(out, /cfh:v:/, out);
      const handle = /cfh:v:[0-9a-z]{5}/.exec(out)![0];
      const written = read(await tools.get("result")!.invoke(ctx, JSON.stringify({ value: { cite: handle } })));
      assert.match(written, /\\"links\\":1/, written);
      const refused = read(await tools.get("loom_search")!.invoke(ctx, JSON.stringify({ qeury: "atlas" })));
      assert.match(refused, /invalid_input/, refused);
    } finally {
      await server.close();
    }
  });

  test("a run that ended: the model reads that it is over and that retrying will not help", async () => {
    const { runId, token } = await newRun();
    const server = await connect(runId, token);
    try {
      const tools = await functionTools(server);
      const host = createHostClient(gw.hostURL, gw.hostToken);
      const deleted = await host.DELETE("/host/v1/runs/{runId}", { params: { path: { runId } } });
      assert.equal(deleted.response.status, 204);
      const out = read(await tools.get("loom_search")!.invoke(new RunContext(), JSON.stringify({ query: "atlas" })));
      assert.match(out, /run_ended/, out);
      assert.match(out, /retrying will not help/, out);
      assert.doesNotMatch(out, /try again/i, out);
    } finally {
      await server.close();
    }
  });
});
