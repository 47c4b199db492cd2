// Compile-time checks: the generated types really constrain a caller. Every
// `@ts-expect-error` below must meet a type error, or `tsc` fails ("Unused
// '@ts-expect-error' directive"), so a schema.d.ts that degraded to `any`
// or lost a route fails the build. Never run; only compiled.
import { createAgentClient, type ToolResult } from "../src/index.js";

export async function typeChecks(): Promise<void> {
  const agent = createAgentClient("http://127.0.0.1:8080", "token");
  const runId = "demo";

  // The well-typed call compiles and its data is the contract's ToolResult.
  const ok = await agent.POST("/v1/runs/{runId}/loom_search", { params: { path: { runId } }, body: { query: "atlas", limit: 5 } });
  const result: ToolResult | undefined = ok.data;
  const kinds: ToolResult["kind"] | undefined = result?.kind;
  void kinds;

  // @ts-expect-error limit is an integer, not a string
  await agent.POST("/v1/runs/{runId}/loom_search", { params: { path: { runId } }, body: { query: "atlas", limit: "5" } });
  // @ts-expect-error rank is recency or score
  await agent.POST("/v1/runs/{runId}/loom_search", { params: { path: { runId } }, body: { query: "atlas", rank: "best" } });
  // @ts-expect-error target is required
  await agent.POST("/v1/runs/{runId}/loom_page_read", { params: { path: { runId } }, body: {} });
  // @ts-expect-error read is where or activity
  await agent.POST("/v1/runs/{runId}/loom_context", { params: { path: { runId } }, body: { read: "when" } });
  // @ts-expect-error no such route in the contract
  await agent.POST("/v1/runs/{runId}/loom_delete", { params: { path: { runId } }, body: {} });
  // @ts-expect-error the tool routes are POST only
  await agent.GET("/v1/runs/{runId}/loom_profile", { params: { path: { runId } } });
  // @ts-expect-error runId is a required path parameter
  await agent.POST("/v1/runs/{runId}/loom_profile", { body: {} });

  const desc = await agent.POST("/v1/runs/{runId}/describe_handle", { params: { path: { runId } }, body: { token: "cfh:v:3x5q9" } });
  // @ts-expect-error known is a boolean
  const known: string | undefined = desc.data?.known;
  void known;
  // @ts-expect-error a problem's code is one of the contract's codes
  const code: "teapot" | undefined = desc.error?.code;
  void code;
}
