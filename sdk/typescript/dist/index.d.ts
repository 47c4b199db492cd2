import { type Client, type Middleware } from "openapi-fetch";
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
/**
 * A client for the agent listener (`/v1/runs/{runId}/...`), authorised by
 * the run token that `POST /host/v1/runs` issued. Pass `undefined` as the
 * token to send no Authorization header.
 */
export declare function createAgentClient(baseUrl: string, runToken: string | undefined, opts?: ClientOptions): GatewayClient;
/** A client for the host listener (`/host/v1/...`) bound to TCP, authorised by the host token. */
export declare function createHostClient(baseUrl: string, hostToken: string, opts?: ClientOptions): GatewayClient;
