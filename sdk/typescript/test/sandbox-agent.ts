// The agent side of the sandbox test (sandbox.test.ts), run inside a
// network namespace of its own: it reaches the gateway only through the
// addresses the test gave it, by IP over REST and by host name over MCP
// with the official TypeScript MCP SDK. It prints one JSON line of what
// it saw and exits non-zero on any failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { REST_URL, MCP_URL, RUN_ID, RUN_TOKEN } = process.env as Record<string, string>;
const auth = { Authorization: `Bearer ${RUN_TOKEN}` };

async function rest(path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${REST_URL}/v1/runs/${RUN_ID}/${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? auth : { ...auth, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

function need(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

// REST, by address: the tools, a search, the handle described.
const tools = await rest("tools");
need(tools.status === 200 && tools.json.tools.length === 10, `GET tools: ${tools.status}`);
const search = await rest("loom_search", { query: "atlas" });
need(search.status === 200, `loom_search: ${search.status} ${JSON.stringify(search.json)}`);
const handle: string = search.json.entries.find((e: any) => e.status === "admitted")?.handle;
need(/^cfh:v:/.test(handle ?? ""), "no admitted row with a handle");
const described = await rest("describe_handle", { token: handle });
need(described.status === 200 && described.json.known === true, `describe_handle: ${described.status}`);

// MCP, by host name: the same tools, a call, and the result citing the handle.
const mcp = new Client({ name: "sandbox-agent", version: "1" });
await mcp.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { requestInit: { headers: auth } }));
const listed = await mcp.listTools();
need(listed.tools.length === 10, `tools/list: ${listed.tools.length}`);
const called = await mcp.callTool({ name: "loom_search", arguments: { query: "atlas" } });
need(called.isError !== true, "tools/call loom_search: isError");
const written = await mcp.callTool({ name: "result", arguments: { value: { summary: "Atlas", source: handle } } });
need(written.isError !== true && (written.structuredContent as any)?.links === 1, `result: ${JSON.stringify(written.structuredContent)}`);
await mcp.close();
console.log(JSON.stringify({ handle, tools: listed.tools.length }));
