// End-to-end test of the generated TypeScript client against a real gateway
// started with --demo: a run is created through the host API, then every
// agent route is called through the typed openapi-fetch client, results and
// error codes are checked. With LOOM_GATEWAY_VIA=prism every call goes
// through Stoplight Prism (proxy mode, --errors; one in front of the agent
// listener, one in front of the host listener), which validates each request
// and response against api/openapi.yaml; any violation it reports fails.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Middleware } from "openapi-fetch";
import { createAgentClient, createHostClient, type Entry, type GatewayClient, type Problem, type ToolResult } from "../src/index.js";
import { prismViolations, startGateway, type Gateway } from "./harness.js";

const WORK = "https://loom.example/facet/work";
const HANDLE = /^cfh:v:[23456789abcdefghjkmnpqrstvwxyz]{5}$/;

let gw: Gateway;
let host: GatewayClient; // host API via hostBaseURL (Prism in prism mode), host token
let agent: GatewayClient; // agent API via baseURL (Prism in prism mode), this run's token
let direct: GatewayClient; // agent listener itself: requests that break the contract on purpose
let runId: string;
let runToken: string;
let narrowRunId: string; // a run offered loom_search only
let narrowToken: string;
let heldHandle: string;

// Every response through Prism is checked here: no Prism violation header,
// and no problem that Prism made up instead of the gateway.
const seen: string[] = [];
const contractGuard: Middleware = {
  async onResponse({ request, response }) {
    const v = response.headers.get("sl-violations");
    if (v) seen.push(`${request.method} ${new URL(request.url).pathname}: ${v}`);
    if ((response.headers.get("content-type") ?? "").includes("problem+json")) {
      const body = (await response.clone().json()) as { type?: string };
      if (String(body.type).includes("stoplight.io")) {
        seen.push(`${request.method} ${new URL(request.url).pathname}: Prism answered ${JSON.stringify(body)}`);
      }
    }
    return undefined;
  },
};

function okResult(r: { data?: ToolResult; error?: Problem; response: Response }, kind: ToolResult["kind"], tool: string): ToolResult {
  assert.equal(r.response.status, 200, `${tool}: status ${r.response.status} ${JSON.stringify(r.error)}`);
  assert.match(r.response.headers.get("content-type") ?? "", /^application\/json/);
  const d = r.data;
  assert.ok(d, `${tool}: no body`);
  assert.equal(d.status, "ok");
  assert.equal(d.kind, kind);
  assert.match(d.outputId, new RegExp(`^${runId.replace(/[.]/g, "\\.")}:${tool}:\\d+$`));
  assert.ok(d.notice.length > 0);
  const admitted = d.entries.filter((e) => e.status === "admitted");
  const withheld = d.entries.filter((e) => e.status === "withheld");
  assert.equal(d.admitted, admitted.length, `${tool}: admitted count`);
  assert.equal(d.withheld, withheld.length, `${tool}: withheld count`);
  assert.equal(d.omitted, 0);
  for (const e of admitted) checkAdmitted(e, tool);
  for (const e of withheld) {
    assert.ok(e.reasonCode === "cfc_ceiling_exceeded" || e.reasonCode === "cfc_label_read_failed", `${tool}: reasonCode ${e.reasonCode}`);
    assert.equal(e.value, undefined, `${tool}: a withheld entry carries no value`);
    assert.equal(e.handle, undefined, `${tool}: a withheld entry carries no handle`);
  }
  return d;
}

function checkAdmitted(e: Entry, tool: string): void {
  assert.match(e.handle ?? "", HANDLE, `${tool}: handle`);
  assert.ok(e.label, `${tool}: admitted entry has a label`);
  assert.ok(e.labelSource === "row" || e.labelSource === "query");
  assert.ok(e.value !== undefined && e.value !== null, `${tool}: admitted entry has a value`);
  // Under the work-only ceiling every clause of an admitted row's label is
  // satisfied by the work facet.
  for (const clause of e.label.confidentiality) assert.ok(clause.includes(WORK), `${tool}: clause ${JSON.stringify(clause)} within the ceiling`);
  assert.equal((e.value as Record<string, unknown>).ifc, undefined, `${tool}: ifc is stripped from the value`);
}

function problem(r: { data?: unknown; error?: Problem; response: Response }, status: number, code: Problem["code"]): Problem {
  assert.equal(r.response.status, status, `want ${status} ${code}, got ${r.response.status} ${JSON.stringify(r.error ?? r.data)}`);
  assert.match(r.response.headers.get("content-type") ?? "", /^application\/problem\+json/);
  const p = r.error;
  assert.ok(p, "problem body");
  assert.equal(p.code, code);
  assert.equal(p.status, status);
  assert.match(p.type, new RegExp(`/problems/${code}$`));
  assert.ok(p.title.length > 0);
  return p;
}

const value = (d: ToolResult, i = 0) => d.entries.filter((e) => e.status === "admitted")[i]?.value as Record<string, unknown>;

describe(`loom-gateway through the generated TypeScript client (${process.env.LOOM_GATEWAY_VIA ?? "direct"})`, () => {
  before(async () => {
    gw = await startGateway();
    host = createHostClient(gw.hostBaseURL, gw.hostToken, { middleware: [contractGuard] });
    const stamp = `${process.pid}-${Date.now()}`;

    const created = await host.POST("/host/v1/runs", {
      body: { runId: `sdk-${stamp}`, maxConfidentiality: [WORK], ttlSeconds: 600 },
    });
    assert.equal(created.response.status, 201, JSON.stringify(created.error));
    assert.ok(created.data);
    runId = created.data.runId;
    runToken = created.data.token;
    assert.equal(runId, `sdk-${stamp}`);
    assert.ok(!Number.isNaN(Date.parse(created.data.expiresAt)));

    const narrow = await host.POST("/host/v1/runs", { body: { maxConfidentiality: [WORK], tools: ["loom_search"] } });
    assert.equal(narrow.response.status, 201, JSON.stringify(narrow.error));
    narrowRunId = narrow.data!.runId;
    narrowToken = narrow.data!.token;

    agent = createAgentClient(gw.baseURL, runToken, { middleware: [contractGuard] });
    direct = createAgentClient(gw.agentURL, runToken);
  });

  after(async () => {
    const prismLog = gw?.prismLog() ?? "";
    await gw?.stop();
    if (gw?.via === "prism") {
      const bad = prismViolations(prismLog);
      assert.deepEqual(bad, [], `Prism reported contract violations:\n${bad.join("\n")}`);
      assert.match(prismLog, /Forwarding "post" request/, "Prism forwarded the agent calls");
    }
    assert.deepEqual(seen, [], `contract violations:\n${seen.join("\n")}`);
  });

  test("host API: the run exists with its ceiling", async () => {
    const r = await host.GET("/host/v1/runs/{runId}", { params: { path: { runId } } });
    assert.equal(r.response.status, 200);
    assert.equal(r.data?.runId, runId);
    assert.deepEqual(r.data?.ceiling, [WORK]);
    assert.equal(r.data?.hasResult, false);
  });

  test("loom_search", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_search", {
      params: { path: { runId } },
      body: { query: "atlas", limit: 5, rank: "recency" },
    });
    const d = okResult(r, "search", "loom_search");
    assert.ok(d.admitted >= 1, "atlas hits are admitted");
    assert.ok(d.withheld >= 1, "the health-labelled hit is withheld under a work-only ceiling");
    assert.equal(d.envelope?.query, "atlas");
    // rank recency: the newest hit first.
    assert.equal((value(d).title as string), "#atlas standup thread");
    const checklist = d.entries.find((e) => e.status === "admitted" && (e.value as { title: string }).title === "Atlas launch checklist");
    assert.ok(checklist, "the work-labelled checklist is admitted");
    assert.deepEqual(checklist.label?.confidentiality, [[WORK]]);
    assert.equal(checklist.labelSource, "row");
    heldHandle = checklist.handle!;

    const byPerson = await agent.POST("/v1/runs/{runId}/loom_search", {
      params: { path: { runId } },
      body: { person: "person:ada-example", limit: 3 },
    });
    assert.ok(okResult(byPerson, "search", "loom_search").entries.length <= 3);
  });

  test("loom_page_discover", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_page_discover", {
      params: { path: { runId } },
      body: { kind: "projects", limit: 20 },
    });
    const d = okResult(r, "page.discover", "loom_page_discover");
    assert.equal(d.envelope?.totalPages, 6);
    assert.ok(d.entries.some((e) => e.status === "admitted" && (e.value as { path: string }).path === "Projects/Atlas"));
  });

  test("loom_page_inspect", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_page_inspect", {
      params: { path: { runId } },
      body: { target: "Projects/Atlas" },
    });
    const d = okResult(r, "page.inspect", "loom_page_inspect");
    assert.equal(d.entries.length, 1);
    assert.equal(value(d).title, "Atlas");
    assert.equal((value(d).context as { owner: string }).owner, "person:ada-example");
  });

  test("loom_page_read", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_page_read", {
      params: { path: { runId } },
      body: { target: "Projects/Atlas/brief.md" },
    });
    const d = okResult(r, "page.read", "loom_page_read");
    assert.match(String(value(d).text), /Milestones/);

    const missing = await agent.POST("/v1/runs/{runId}/loom_page_read", {
      params: { path: { runId } },
      body: { target: "Projects/Nowhere" },
    });
    const p = problem(missing, 502, "host_refused");
    assert.equal(p.hostCode, "page_not_found");
    assert.match(p.outputId ?? "", /:loom_page_read:\d+$/);
  });

  test("loom_people", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_people", {
      params: { path: { runId } },
      body: { query: "ada@example.com", shape: "card" },
    });
    const d = okResult(r, "people", "loom_people");
    assert.equal(value(d).name, "Ada Example");
  });

  test("loom_calendar_list", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_calendar_list", {
      params: { path: { runId } },
      body: { from: "2026-03-01", to: "2026-03-31" },
    });
    const d = okResult(r, "calendar.list", "loom_calendar_list");
    assert.ok(d.entries.some((e) => e.status === "withheld" && e.reasonCode === "cfc_ceiling_exceeded"), "the physio visit is withheld");
    assert.ok(d.entries.some((e) => e.status === "admitted" && (e.value as { title: string }).title === "Atlas launch"));

    const all = await agent.POST("/v1/runs/{runId}/loom_calendar_list", { params: { path: { runId } }, body: { all: true } });
    assert.ok(okResult(all, "calendar.list", "loom_calendar_list").entries.length > d.entries.length);
  });

  test("loom_context", async () => {
    const where = await agent.POST("/v1/runs/{runId}/loom_context", { params: { path: { runId } }, body: { read: "where" } });
    assert.equal(value(okResult(where, "context", "loom_context")).place, "Example Labs, 4th floor");

    const activity = await agent.POST("/v1/runs/{runId}/loom_context", {
      params: { path: { runId } },
      body: { read: "activity", since: "2026-03-01" },
    });
    okResult(activity, "context", "loom_context");

    // since goes with activity only: a rule violation the contract cannot express.
    const bad = await agent.POST("/v1/runs/{runId}/loom_context", {
      params: { path: { runId } },
      body: { read: "where", since: "2026-03-01" },
    });
    assert.equal(problem(bad, 400, "invalid_input").pointer, "/since");
  });

  test("loom_profile", async () => {
    const r = await agent.POST("/v1/runs/{runId}/loom_profile", { params: { path: { runId } }, body: {} });
    const d = okResult(r, "profile", "loom_profile");
    assert.equal(value(d).name, "Ada Example");
    assert.equal(d.entries[0]?.labelSource, "row");
  });

  test("describe_handle", async () => {
    const known = await agent.POST("/v1/runs/{runId}/describe_handle", {
      params: { path: { runId } },
      body: { token: heldHandle },
    });
    assert.equal(known.response.status, 200, JSON.stringify(known.error));
    assert.equal(known.data?.known, true);
    assert.equal(known.data?.token, heldHandle);
    assert.deepEqual(known.data?.referent, { kind: "document", source: "loom_search", labelSource: "row" });
    assert.deepEqual(known.data?.label?.confidentiality, [[WORK]]);
    assert.match(known.data?.outputId ?? "", /:describe_handle:\d+$/);

    const unknown = await agent.POST("/v1/runs/{runId}/describe_handle", {
      params: { path: { runId } },
      body: { token: "cfh:v:zzzzz" },
    });
    assert.equal(unknown.response.status, 200);
    assert.equal(unknown.data?.known, false);
    assert.equal(unknown.data?.referent, undefined);
    assert.equal(unknown.data?.label, undefined);
  });

  test("result: unheld_handle, then written, then result_exists", async () => {
    const unheld = await agent.POST("/v1/runs/{runId}/result", {
      params: { path: { runId } },
      body: { value: { summary: "nothing", source: "cfh:v:zzzzz" } },
    });
    problem(unheld, 422, "unheld_handle");

    const written = await agent.POST("/v1/runs/{runId}/result", {
      params: { path: { runId } },
      body: { value: { summary: "Atlas launches Thursday", source: heldHandle } },
    });
    assert.equal(written.response.status, 201, JSON.stringify(written.error));
    assert.deepEqual(written.data, { status: "ok", documents: 1, links: 1 });

    const again = await agent.POST("/v1/runs/{runId}/result", {
      params: { path: { runId } },
      body: { value: { summary: "second" } },
    });
    problem(again, 409, "result_exists");

    const stored = await host.GET("/host/v1/runs/{runId}/result", { params: { path: { runId } } });
    assert.equal(stored.response.status, 200, JSON.stringify(stored.error));
    assert.equal(stored.data?.documents.length, 1);
    assert.deepEqual((stored.data?.value as { source: unknown }).source, { "@link": stored.data?.documents[0]?.id });
  });

  test("GET /openapi.yaml serves the contract", async () => {
    const r = await agent.GET("/openapi.yaml", { parseAs: "text" });
    assert.equal(r.response.status, 200);
    assert.match(r.data ?? "", /^openapi: 3\.0\.3/);
  });

  test("invalid_input with a pointer", async () => {
    // Valid for the contract, refused by the gateway's rule: query or person.
    const none = await agent.POST("/v1/runs/{runId}/loom_search", { params: { path: { runId } }, body: {} });
    assert.equal(problem(none, 400, "invalid_input").pointer, "/query");

    // These break the contract on purpose, so they go to the gateway directly
    // (Prism would refuse them itself). The casts defeat the types that would
    // otherwise refuse to compile them.
    const limit = await direct.POST("/v1/runs/{runId}/loom_search", {
      params: { path: { runId } },
      body: { query: "atlas", limit: 0 },
    });
    assert.equal(problem(limit, 400, "invalid_input").pointer, "/limit");

    const kind = await direct.POST("/v1/runs/{runId}/loom_page_discover", {
      params: { path: { runId } },
      body: { kind: "everything" } as unknown as { kind: "all" },
    });
    const p = problem(kind, 400, "invalid_input");
    assert.equal(p.pointer, "/kind");
    assert.deepEqual(p.choices, ["all", "project", "projects", "entity", "entities"]);

    const unknown = await direct.POST("/v1/runs/{runId}/loom_search", {
      params: { path: { runId } },
      body: { query: "atlas", color: "blue" } as { query: string },
    });
    assert.equal(problem(unknown, 400, "invalid_input").pointer, "/color");

    const missing = await direct.POST("/v1/runs/{runId}/loom_page_read", {
      params: { path: { runId } },
      body: {} as unknown as { target: string },
    });
    problem(missing, 400, "invalid_input");
  });

  test("unauthorized: wrong or missing run token", async () => {
    const wrong = createAgentClient(gw.baseURL, "not-a-token", { middleware: [contractGuard] });
    problem(await wrong.POST("/v1/runs/{runId}/loom_profile", { params: { path: { runId } }, body: {} }), 401, "unauthorized");
    // Same answer for a run that does not exist: run ids cannot be probed.
    problem(await wrong.POST("/v1/runs/{runId}/loom_profile", { params: { path: { runId: "no-such-run" } }, body: {} }), 401, "unauthorized");
    // No Authorization header breaks the contract's security requirement: direct only.
    const none = createAgentClient(gw.agentURL, undefined);
    problem(await none.POST("/v1/runs/{runId}/loom_profile", { params: { path: { runId } }, body: {} }), 401, "unauthorized");
  });

  test("run_not_found: a valid token on another run id", async () => {
    problem(await agent.POST("/v1/runs/{runId}/loom_profile", { params: { path: { runId: "demo" } }, body: {} }), 404, "run_not_found");
    problem(await agent.POST("/v1/runs/{runId}/describe_handle", { params: { path: { runId: narrowRunId } }, body: { token: heldHandle } }), 404, "run_not_found");
    problem(await agent.POST("/v1/runs/{runId}/result", { params: { path: { runId: "no-such-run" } }, body: { value: 1 } }), 404, "run_not_found");
  });

  test("not_found and contested from loom_people", async () => {
    const nobody = await agent.POST("/v1/runs/{runId}/loom_people", { params: { path: { runId } }, body: { query: "nobody@example.com" } });
    assert.match(problem(nobody, 404, "not_found").outputId ?? "", /:loom_people:\d+$/);
    const two = await agent.POST("/v1/runs/{runId}/loom_people", { params: { path: { runId } }, body: { query: "team@example.com" } });
    problem(two, 409, "contested");
  });

  test("not_configured: a tool the run is not offered", async () => {
    const narrow = createAgentClient(gw.baseURL, narrowToken, { middleware: [contractGuard] });
    problem(await narrow.POST("/v1/runs/{runId}/loom_profile", { params: { path: { runId: narrowRunId } }, body: {} }), 404, "not_configured");
    const ok = await narrow.POST("/v1/runs/{runId}/loom_search", { params: { path: { runId: narrowRunId } }, body: { query: "atlas" } });
    assert.equal(ok.response.status, 200);
  });

  test("host API: the call log and the handle table", async () => {
    const calls = await host.GET("/host/v1/runs/{runId}/calls", { params: { path: { runId } } });
    assert.equal(calls.response.status, 200);
    const tools = new Set(calls.data?.calls.map((c) => c.tool));
    for (const t of ["loom_search", "loom_page_discover", "loom_page_inspect", "loom_page_read", "loom_people", "loom_calendar_list", "loom_context", "loom_profile"]) {
      assert.ok(tools.has(t), `call log has ${t}`);
    }
    const handles = await host.GET("/host/v1/runs/{runId}/handles", { params: { path: { runId } } });
    assert.equal(handles.response.status, 200);
    assert.ok(handles.data?.handles.some((h) => h.token === heldHandle));

    const del = await host.DELETE("/host/v1/runs/{runId}", { params: { path: { runId: narrowRunId } } });
    assert.equal(del.response.status, 204);
    const gone = await host.GET("/host/v1/runs/{runId}", { params: { path: { runId: narrowRunId } } });
    problem(gone, 404, "run_not_found");
  });
});
