// The loom-gateway TypeScript client: openapi-fetch over the types that
// openapi-typescript generates from api/openapi.yaml (schema.d.ts, committed;
// `npm run generate` regenerates it). Nothing here is hand-written API
// surface: every path, body and response type comes from the contract.
import createClient from "openapi-fetch";
function bearerClient(baseUrl, token, opts) {
    const client = createClient({
        baseUrl: baseUrl.replace(/\/+$/, ""),
        headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
        ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
    for (const m of opts.middleware ?? [])
        client.use(m);
    return client;
}
/**
 * A client for the agent listener (`/v1/runs/{runId}/...`), authorised by
 * the run token that `POST /host/v1/runs` issued. Pass `undefined` as the
 * token to send no Authorization header.
 */
export function createAgentClient(baseUrl, runToken, opts = {}) {
    return bearerClient(baseUrl, runToken, opts);
}
/** A client for the host listener (`/host/v1/...`) bound to TCP, authorised by the host token. */
export function createHostClient(baseUrl, hostToken, opts = {}) {
    return bearerClient(baseUrl, hostToken, opts);
}
