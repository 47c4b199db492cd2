// Each agent SDK's own conversion of the gateway's MCP catalog, run over
// what a live gateway serves (scripts/sdkcheck.sh starts it). For each SDK
// (pinned in package.json), the SDK's own MCP client lists the run's tools
// and the SDK's own code turns each tool's inputSchema into what it hands a
// model and checks a call against; then, for every tool:
//   - a minimal valid call is accepted ({"query":"atlas"} for loom_search);
//   - a call missing a required member is refused (tools with one).
// An SDK that cannot be loaded, or converts fewer tools than the gateway
// serves, fails the check; nothing is skipped.
//
// The SDKs and the function each uses:
//   @langchain/mcp-adapters  loadMcpTools: simplifyJsonSchemaForLLM over the
//                            inputSchema, a DynamicStructuredTool whose
//                            invoke validates (@cfworker/json-schema) and
//                            refuses with ToolInputParsingException.
//   @openai/agents-core      getAllMcpTools(convertSchemasToStrict: true):
//                            mcpToFunctionTool, strict when the schema meets
//                            OpenAI's strict rules (else non-strict, a
//                            failure here); the call checked against the
//                            strict parameters it sends (optional members as
//                            null, as a strict model sends them), then run
//                            through the tool's own invoke.
//   @ai-sdk/mcp + ai         createMCPClient().tools(): jsonSchema({...
//                            inputSchema, additionalProperties: false}), the
//                            schema it hands the provider; it has no
//                            validator of its own, so the call is checked
//                            against that schema (ajv, draft 2020-12).
//   @mastra/mcp              MCPClient.listTools(): convertInputSchema, a
//                            Standard Schema whose validate is the tool's
//                            input check.
//
// Each SDK runs on every MCP revision it speaks with this gateway (which
// speaks 2026-07-28, 2025-11-25 and 2025-06-18 and answers an initialize
// with the revision it offers), chosen with the SDK's own option:
//   @langchain/mcp-adapters  2025-11-25 only: its @modelcontextprotocol/sdk
//                            1.x Client offers LATEST_PROTOCOL_VERSION
//                            (2025-11-25) in initialize and has no
//                            2026-07-28 (server/discover) at all.
//   @openai/agents-core      2026-07-28 only: it builds its
//                            @modelcontextprotocol/client 2.x Client with
//                            versionNegotiation {mode: "auto"}, which takes
//                            2026-07-28 from server/discover whenever the
//                            server offers it (its 2025 fallback is for
//                            servers without server/discover).
//   @ai-sdk/mcp              2026-07-28 (protocolVersionDiscovery, its
//                            default) and 2025-11-25 (protocolVersionDiscovery
//                            false: initialize offering
//                            LATEST_LEGACY_PROTOCOL_VERSION).
//   @mastra/mcp              2026-07-28 (its default, "auto") and 2025-11-25
//                            (protocolVersion "legacy": the 2.x Client's
//                            initialize, offering 2025-11-25).
// None of them offers 2025-06-18 (each would accept it from a server that
// chose it; this gateway answers the revision offered), so no pass runs
// on it. A pass fails unless every tools/list and tools/call the SDK sends
// names the pass's revision in MCP-Protocol-Version (read from the fetch
// each SDK takes as an option).
//
// Environment: SDKCHECK_RUNS, a JSON list of {"sdk", "revision",
// "dialect", "url", "token"}: one pass of one SDK on one revision over one
// run (the result tool writes once a run), its MCP URL with ?dialect= when
// dialect is not "".
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const runs = JSON.parse(process.env.SDKCHECK_RUNS ?? "[]");

// A minimal valid call of every tool of the catalog.
const minimal = {
  loom_search: { query: "atlas" },
  loom_page_discover: {},
  loom_page_inspect: { target: "Projects/Atlas/about.md" },
  loom_page_read: { target: "Projects/Atlas/about.md" },
  loom_people: { query: "ada@example.com" },
  loom_calendar_list: {},
  loom_context: { read: "where" },
  loom_profile: {},
  describe_handle: { token: "cfh:v:7kq2m" },
  result: { value: "done" },
};
// The required member of each tool that has one.
const required = {
  loom_page_inspect: "target",
  loom_page_read: "target",
  loom_people: "query",
  loom_context: "read",
  describe_handle: "token",
  result: "value",
};

// The revisions each SDK speaks with this gateway (above).
const revisions = {
  "@langchain/mcp-adapters": ["2025-11-25"],
  "@openai/agents-core": ["2026-07-28"],
  "@ai-sdk/mcp": ["2026-07-28", "2025-11-25"],
  "@mastra/mcp": ["2026-07-28", "2025-11-25"],
};

// recorder is a fetch that records the MCP-Protocol-Version of each
// tools/list and tools/call request it sends, in seen.
function recorder(seen) {
  return async (input, init) => {
    const req = input instanceof Request ? input : null;
    const headers = new Headers(init?.headers ?? req?.headers);
    let body = init?.body;
    if (body === undefined && req) body = await req.clone().text();
    try {
      const msg = typeof body === "string" ? JSON.parse(body) : null;
      if (msg && (msg.method === "tools/list" || msg.method === "tools/call")) {
        seen.add(headers.get("mcp-protocol-version") ?? "(none)");
      }
    } catch {
      // not a JSON-RPC message: nothing to record
    }
    return fetch(input, init);
  };
}

const without = (args, name) => Object.fromEntries(Object.entries(args).filter(([k]) => k !== name));
const headers = (run) => ({ Authorization: `Bearer ${run.token}` });
const errText = (e) => String(e?.message ?? e).split("\n")[0].slice(0, 300);

// The tools whose input takes any JSON object, which OpenAI's strict mode
// cannot say: in the default catalog the Agents SDK leaves them
// non-strict (and says so); under ?dialect=openai every tool is strict.
const openObject = new Set(["result"]);

// ajv as the MCP SDK ships it (draft 2020-12), for the SDKs that hand the
// schema on without a validator of their own.
function ajvCompile(schema) {
  const Ajv2020 = require("ajv/dist/2020").default;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  require("ajv-formats").default(ajv);
  const v = ajv.compile(schema);
  return (value) => (v(value) ? { ok: true } : { ok: false, why: ajv.errorsText(v.errors) });
}

// Each SDK: connect with its own client, convert with its own code; answer
// { tools: Map(name -> check(args) -> {ok, why}), close }.
const sdks = {
  async "@langchain/mcp-adapters"(run) {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const { LATEST_PROTOCOL_VERSION } = await import("@modelcontextprotocol/sdk/types.js");
    const { loadMcpTools } = await import("@langchain/mcp-adapters");
    if (LATEST_PROTOCOL_VERSION !== run.revision) {
      throw new Error(`its MCP SDK offers ${LATEST_PROTOCOL_VERSION}, not ${run.revision}`);
    }
    const client = new Client({ name: "sdkcheck", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(run.url), {
      requestInit: { headers: headers(run) },
      fetch: recorder(run.seen),
    }));
    const loaded = await loadMcpTools("loom", client, { throwOnLoadError: true });
    const tools = new Map();
    for (const t of loaded) {
      tools.set(t.name, async (args) => {
        try {
          await t.invoke(args);
          return { ok: true };
        } catch (e) {
          if (e?.name === "ToolInputParsingException" || e?.constructor?.name === "ToolInputParsingException") {
            return { ok: false, why: errText(e) };
          }
          // The call passed the client and the gateway answered an error:
          // the client accepted it.
          return { ok: true, note: `the gateway answered: ${errText(e)}` };
        }
      });
    }
    return { tools, close: () => client.close() };
  },

  async "@openai/agents-core"(run) {
    const { MCPServerStreamableHttp, RunContext, getAllMcpTools } = await import("@openai/agents-core");
    const server = new MCPServerStreamableHttp({
      url: run.url,
      name: "loom",
      requestInit: { headers: headers(run) },
      fetch: recorder(run.seen),
    });
    await server.connect();
    const fts = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true });
    const ctx = new RunContext();
    const tools = new Map();
    for (const ft of fts) {
      if (ft.strict !== true && openObject.has(ft.name) && !run.dialect) {
        console.log(`note @openai/agents-core: ${ft.name} is non-strict on the default URL (the warning above is the SDK's: its value takes any JSON object); ?dialect=openai makes it strict`);
      }
      const validate = ajvCompile(ft.parameters);
      const props = Object.keys(ft.parameters.properties ?? {});
      tools.set(ft.name, async (args) => {
        if (ft.strict !== true && !(openObject.has(ft.name) && !run.dialect)) {
          return { ok: false, why: "the SDK left the tool non-strict" };
        }
        // What a strict model sends: every member, an absent one as null.
        const sent = ft.strict ? Object.fromEntries(props.map((p) => [p, p in args ? args[p] : null])) : args;
        const v = validate(sent);
        if (!v.ok) return v;
        const out = await ft.invoke(ctx, JSON.stringify(sent));
        const text = typeof out === "string" ? out : JSON.stringify(out);
        if (/invalid_input/.test(text)) return { ok: false, why: `the gateway refused what the SDK sent: ${text.slice(0, 300)}` };
        return { ok: true };
      });
    }
    return { tools, close: () => server.close() };
  },

  async "@ai-sdk/mcp"(run) {
    const { createMCPClient } = await import("@ai-sdk/mcp");
    const { asSchema, safeValidateTypes } = await import("@ai-sdk/provider-utils");
    await import("ai"); // the SDK the tools are for: it must load
    const client = await createMCPClient({
      transport: { type: "http", url: run.url, headers: headers(run), fetch: recorder(run.seen) },
      protocolVersionDiscovery: run.revision === "2026-07-28",
    });
    const set = await client.tools();
    const tools = new Map();
    for (const [name, t] of Object.entries(set)) {
      const schema = asSchema(t.inputSchema);
      const validate = ajvCompile(await schema.jsonSchema);
      tools.set(name, async (args) => {
        const own = await safeValidateTypes({ value: args, schema });
        if (!own.success) return { ok: false, why: errText(own.error) };
        return validate(args);
      });
    }
    return { tools, close: () => client.close() };
  },

  async "@mastra/mcp"(run) {
    const { MCPClient } = await import("@mastra/mcp");
    const client = new MCPClient({
      id: `sdkcheck-${process.pid}`,
      servers: {
        loom: {
          url: new URL(run.url),
          requestInit: { headers: headers(run) },
          fetch: recorder(run.seen),
          ...(run.revision === "2026-07-28" ? {} : { protocolVersion: "legacy" }),
        },
      },
    });
    const listed = await client.listTools();
    const tools = new Map();
    for (const [id, t] of Object.entries(listed)) {
      const name = id.replace(/^loom_(?=loom_|describe_handle$|result$)/, "");
      tools.set(name, async (args) => {
        const r = await t.inputSchema["~standard"].validate(args);
        return r.issues ? { ok: false, why: r.issues.map((i) => i.message).join("; ").slice(0, 300) } : { ok: true };
      });
    }
    return { tools, close: () => client.disconnect() };
  },
};

let failed = 0;
const fail = (msg) => {
  failed++;
  console.log(`FAIL ${msg}`);
};

for (const [sdk, revs] of Object.entries(revisions)) {
  for (const revision of revs) {
    if (!runs.some((r) => r.sdk === sdk && r.revision === revision)) fail(`${sdk}: no run given on ${revision} (SDKCHECK_RUNS)`);
  }
}
for (const run of runs) {
  const started = Date.now();
  const sdk = `${run.sdk} on ${run.revision}` + (run.dialect ? ` (?dialect=${run.dialect})` : "");
  const open = sdks[run.sdk];
  if (!open || !revisions[run.sdk].includes(run.revision)) {
    fail(`${sdk}: not an SDK and revision this check knows`);
    continue;
  }
  run.seen = new Set();
  let conv;
  try {
    conv = await open(run);
  } catch (e) {
    fail(`${sdk}: could not be loaded or connected, so nothing of it was checked: ${errText(e)}`);
    continue;
  }
  const before = failed;
  try {
    const names = [...conv.tools.keys()].sort();
    const want = Object.keys(minimal).sort();
    if (JSON.stringify(names) !== JSON.stringify(want)) {
      fail(`${sdk}: converted ${JSON.stringify(names)}, the gateway serves ${JSON.stringify(want)}`);
    }
    let checks = 0;
    for (const name of want) {
      const check = conv.tools.get(name);
      if (!check) continue;
      const ok = await check(minimal[name]);
      checks++;
      if (!ok.ok) fail(`${sdk}: ${name} ${JSON.stringify(minimal[name])} refused: ${ok.why}`);
      const member = required[name];
      if (member) {
        const bad = await check(without(minimal[name], member));
        checks++;
        if (bad.ok) fail(`${sdk}: ${name} without "${member}" accepted`);
      }
    }
    const seen = [...run.seen];
    if (seen.length !== 1 || seen[0] !== run.revision) {
      fail(`${sdk}: its tools/list and tools/call went on MCP-Protocol-Version ${JSON.stringify(seen)}, not ${run.revision}`);
    }
    const verdict = failed === before ? "ok  " : "FAIL";
    console.log(`${verdict} ${sdk}: ${names.length} tools converted, ${checks} calls checked (${Date.now() - started} ms)`);
  } catch (e) {
    fail(`${sdk}: ${errText(e)}`);
  } finally {
    await Promise.resolve(conv.close()).catch(() => {});
  }
}

if (failed) {
  console.log(`sdkcheck: ${failed} failure(s)`);
  process.exit(1);
}
console.log("sdkcheck: every SDK converts the catalog, accepts each minimal call and refuses each missing required member");
process.exit(0);
