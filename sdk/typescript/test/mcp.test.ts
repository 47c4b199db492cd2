// End-to-end test of the MCP face with the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk) against a real gateway started with --demo:
// the SDK's client connects to a run's /mcp endpoint with the run token as a
// bearer header, lists the tools (the same list as GET .../tools), calls
// them, reads a refusal as an isError result carrying the REST problem,
// and cites a handle in the run's result. The SDK validates every
// structuredContent against the tool's outputSchema, so a result that does
// not match the contract fails here.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createHostClient, type Problem, type ToolResult } from "../src/index.js";
import { startGateway, type Gateway } from "./harness.js";

const WORK = "https://loom.example/facet/work";
const HANDLE = /^cfh:v:[23456789abcdefghjkmnpqrstvwxyz]{5}$/;

let gw: Gateway;
let runId: string;
let runToken: string;
let mcp: Client;

async function connect(id: string, token: string): Promise<Client> {
  const c = new Client({ name: "sdk-test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.agentURL}/v1/runs/${id}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await c.connect(transport);
  return c;
}

function text(r: object): string {
  const content = (r as { content?: { type: string; text: string }[] }).content ?? [];
  assert.equal(content[0]?.type, "text");
  return content[0].text;
}

describe("loom-gateway's MCP face through the official TypeScript MCP SDK", () => {
  before(async () => {
    gw = await startGateway();
    const host = createHostClient(gw.hostURL, gw.hostToken);
    const created = await host.POST("/host/v1/runs", { body: { maxConfidentiality: [WORK], ttlSeconds: 600 } });
    assert.equal(created.response.status, 201, JSON.stringify(created.error));
    runId = created.data!.runId;
    runToken = created.data!.token;
    mcp = await connect(runId, runToken);
  });

  after(async () => {
    await mcp?.close();
    await gw?.stop();
  });

  test("initialize names the server and tells the model rows are data", () => {
    const info = mcp.getServerVersion();
    assert.equal(info?.name, "loom-gateway");
    assert.ok(mcp.getServerCapabilities()?.tools, "the tools capability");
    const instructions = mcp.getInstructions() ?? "";
    assert.match(instructions, /untrusted/);
    assert.match(instructions, /cfh:v:/);
  });

  test("tools/list is GET .../tools, with annotations and output schemas", async () => {
    const listed = await mcp.listTools();
    const res = await fetch(`${gw.agentURL}/v1/runs/${runId}/tools`, { headers: { Authorization: `Bearer ${runToken}` } });
    assert.equal(res.status, 200);
    const rest = (await res.json()) as { tools: { name: string; description: string; inputSchema: unknown }[] };
    const byName = new Map(listed.tools.map((t) => [t.name, t]));
    assert.deepEqual([...byName.keys()].sort(), rest.tools.map((t) => t.name).sort());
    for (const t of rest.tools) {
      const m = byName.get(t.name)!;
      assert.equal(m.description, t.description, `${t.name}: description`);
      assert.deepEqual(m.inputSchema, t.inputSchema, `${t.name}: inputSchema`);
      assert.ok(m.outputSchema, `${t.name}: outputSchema`);
      assert.equal(m.annotations?.readOnlyHint, t.name !== "result", `${t.name}: readOnlyHint`);
      assert.equal(m.annotations?.openWorldHint, false, `${t.name}: openWorldHint`);
    }
  });

  let handle = "";
  test("tools/call loom_search: admitted rows with handles, the withheld one without", async () => {
    const r = await mcp.callTool({ name: "loom_search", arguments: { query: "atlas", limit: 5 } });
    assert.notEqual(r.isError, true, text(r));
    const d = r.structuredContent as unknown as ToolResult;
    assert.deepEqual(JSON.parse(text(r)), d, "the text block is the structured result");
    assert.equal(d.kind, "search");
    assert.match(d.outputId, new RegExp(`^${runId}:loom_search:1$`));
    const admitted = d.entries.filter((e) => e.status === "admitted");
    assert.ok(admitted.length >= 1 && d.withheld >= 1, `admitted ${admitted.length}, withheld ${d.withheld}`);
    for (const e of admitted) assert.match(e.handle ?? "", HANDLE);
    for (const e of d.entries.filter((e) => e.status === "withheld")) assert.equal(e.value, undefined);
    handle = admitted[0].handle!;
  });

  test("tools/call: each of the eight tools answers its result", async () => {
    const calls: [string, Record<string, unknown>, string][] = [
      ["loom_search", { person: "person:ada-example", limit: 3 }, "search"],
      ["loom_page_discover", { kind: "projects", limit: 20 }, "page.discover"],
      ["loom_page_inspect", { target: "Projects/Atlas" }, "page.inspect"],
      ["loom_page_read", { target: "Projects/Atlas/brief.md" }, "page.read"],
      ["loom_people", { query: "ada@example.com", shape: "card" }, "people"],
      ["loom_calendar_list", { from: "2026-03-01", to: "2026-03-31" }, "calendar.list"],
      ["loom_context", { read: "where" }, "context"],
      ["loom_profile", {}, "profile"],
    ];
    for (const [name, args, kind] of calls) {
      const r = await mcp.callTool({ name, arguments: args });
      assert.notEqual(r.isError, true, `${name}: ${text(r)}`);
      const d = r.structuredContent as unknown as ToolResult;
      assert.equal(d.kind, kind, name);
      assert.equal(d.entries.length, d.admitted + d.withheld, `${name}: counts`);
    }
  });

  test("a refusal is an isError result with the REST problem and its faults", async () => {
    const r = await mcp.callTool({ name: "loom_search", arguments: { qeury: "atlas", limit: "5" } });
    assert.equal(r.isError, true);
    // The SDK has checked the problem against the outputSchema it listed.
    const p = r.structuredContent as unknown as Problem;
    assert.deepEqual(JSON.parse(text(r)), p, "the text block is the structured problem");
    assert.equal(p.code, "invalid_input");
    assert.equal(p.status, 400);
    assert.equal(p.outputId, undefined, "a refusal by the contract takes no output number");
    const reasons = (p.errors ?? []).map((f) => `${f.pointer} ${f.reason}`);
    assert.deepEqual(reasons, ["/qeury unknown_field", "/limit wrong_type"]);
    assert.ok(p.errors?.[0].choices?.includes("query"), "the unknown field lists the fields the tool takes");
  });

  test("describe_handle and the result writer, citing the handle", async () => {
    const described = await mcp.callTool({ name: "describe_handle", arguments: { token: handle } });
    assert.notEqual(described.isError, true, text(described));
    assert.equal((described.structuredContent as { known: boolean }).known, true);
    const written = await mcp.callTool({ name: "result", arguments: { value: { cite: handle } } });
    assert.notEqual(written.isError, true, text(written));
    assert.equal((written.structuredContent as { links: number }).links, 1);
    const again = await mcp.callTool({ name: "result", arguments: { value: "twice" } });
    assert.equal(again.isError, true);
    assert.equal((again.structuredContent as unknown as Problem).code, "result_exists");
  });

  test("another run's id with this token cannot connect", async () => {
    await assert.rejects(connect("demo", runToken), /404|run_not_found/);
  });
});
