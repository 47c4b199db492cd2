// The loom-gateway TypeScript client: openapi-fetch over the types that
// openapi-typescript generates from api/openapi.yaml (schema.d.ts, committed;
// `npm run generate` regenerates it). Nothing here is hand-written API
// surface: every path, body and response type comes from the contract.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "../schema.js";

export type { components, paths };
export type ToolResult = components["schemas"]["ToolResult"];
export type Entry = components["schemas"]["Entry"];
export type Problem = components["schemas"]["Problem"];
export type HandleDescription = components["schemas"]["HandleDescription"];
export type GatewayClient = Client<paths>;

export interface ClientOptions {
  /** Extra openapi-fetch middleware, e.g. to log or to check each response. */
  middleware?: Middleware[];
  /** A fetch to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
}

function bearerClient(baseUrl: string, token: string | undefined, opts: ClientOptions): GatewayClient {
  const client = createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ""),
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  for (const m of opts.middleware ?? []) client.use(m);
  return client;
}

/**
 * A client for the agent listener (`/v1/runs/{runId}/...`), authorised by
 * the run token that `POST /host/v1/runs` issued. Pass `undefined` as the
 * token to send no Authorization header.
 */
export function createAgentClient(baseUrl: string, runToken: string | undefined, opts: ClientOptions = {}): GatewayClient {
  return bearerClient(baseUrl, runToken, opts);
}

/** A client for the host listener (`/host/v1/...`) bound to TCP, authorised by the host token. */
export function createHostClient(baseUrl: string, hostToken: string, opts: ClientOptions = {}): GatewayClient {
  return bearerClient(baseUrl, hostToken, opts);
}
