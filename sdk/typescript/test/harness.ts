// Test harness: starts the gateway binary with --demo on free loopback
// ports, optionally puts Stoplight Prism (proxy mode, --errors) in front of
// its agent listener (and of its host listener), and stops all at the end.
//
// Environment:
//   LOOM_GATEWAY_BIN   the gateway binary; unset: `go build` it into a temp dir
//   LOOM_GATEWAY_VIA   "direct" (default) or "prism"
//   LOOM_GATEWAY_SPEC  the contract Prism validates against (default api/openapi.yaml)
//   AGENT_BASE_URL     call the agent API at this URL instead (the gateway is
//                      still started here; use with --listen ports you chose
//                      via LOOM_GATEWAY_LISTEN / LOOM_GATEWAY_HOST_LISTEN)
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package directory (sdk/typescript); this file runs from build/test. */
export const pkgDir = fileURLToPath(new URL("../../", import.meta.url));
export const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
export const specPath = process.env.LOOM_GATEWAY_SPEC ?? join(repoRoot, "api", "openapi.yaml");

export interface Gateway {
  agentURL: string; // the gateway's own agent listener
  hostURL: string; // the host listener (TCP)
  hostBaseURL: string; // where the host client talks: hostURL, or Prism in front of it
  hostToken: string;
  demoRunToken: string;
  baseURL: string; // where the agent client talks: agentURL, or Prism in front of it
  via: "direct" | "prism";
  prismLog: () => string;
  gatewayLog: () => string;
  stop: () => Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function buildGateway(): { bin: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "loom-gateway-sdk-"));
  const bin = join(dir, "gateway");
  const r = spawnSync("go", ["build", "-o", bin, "./cmd/gateway"], { cwd: repoRoot, stdio: "inherit" });
  if (r.status !== 0) throw new Error(`go build ./cmd/gateway failed (status ${r.status})`);
  return { bin, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function capture(child: ChildProcess): () => string {
  let out = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr?.setEncoding("utf8").on("data", (s: string) => (out += s));
  return () => out;
}

async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined>, died: () => string | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const gone = died();
    if (gone !== undefined) throw new Error(`${what}: process exited early\n${gone}`);
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not ready after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

export async function startGateway(): Promise<Gateway> {
  const via = process.env.LOOM_GATEWAY_VIA === "prism" ? "prism" : "direct";
  let bin = process.env.LOOM_GATEWAY_BIN;
  let cleanupBin = () => {};
  if (!bin) ({ bin, cleanup: cleanupBin } = buildGateway());

  const listen = process.env.LOOM_GATEWAY_LISTEN ?? `127.0.0.1:${await freePort()}`;
  const hostListen = process.env.LOOM_GATEWAY_HOST_LISTEN ?? `127.0.0.1:${await freePort()}`;
  const gw = spawn(bin, ["--demo", "--listen", listen, "--host-listen", hostListen, "--log-format", "text"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const gatewayLog = capture(gw);
  const exited = (c: ChildProcess, log: () => string) => () =>
    c.exitCode !== null || c.signalCode !== null ? `exit ${c.exitCode ?? c.signalCode}\n${log()}` : undefined;

  const children: ChildProcess[] = [gw];
  const stop = async () => {
    for (const c of children.reverse()) await stopChild(c);
    cleanupBin();
  };
  try {
    // --demo prints the run token and the host token once the demo run exists.
    const tokens = await waitFor("gateway --demo", 30_000, async () => {
      const out = gatewayLog();
      const run = /Agent API \(run token\):\s*\n\s*curl -s -H "Authorization: Bearer ([^"]+)"/.exec(out);
      const host = /Host API \(host token\):\s*\n\s*curl -s -H "Authorization: Bearer ([^"]+)"/.exec(out);
      return run && host ? { run: run[1]!, host: host[1]! } : undefined;
    }, exited(gw, gatewayLog));

    const agentURL = `http://${listen}`;
    const hostURL = `http://${hostListen}`;
    let baseURL = process.env.AGENT_BASE_URL ?? agentURL;
    let hostBaseURL = hostURL;
    let prismLog = () => "";
    if (via === "prism" && !process.env.AGENT_BASE_URL) {
      // One Prism in front of each listener, started side by side.
      const [a, h] = await Promise.all([startPrism(agentURL, children, exited), startPrism(hostURL, children, exited)]);
      baseURL = a.url;
      hostBaseURL = h.url;
      prismLog = () => `${a.log()}\n${h.log()}`;
    }
    return {
      agentURL,
      hostURL,
      hostBaseURL,
      hostToken: tokens.host,
      demoRunToken: tokens.run,
      baseURL,
      via,
      prismLog,
      gatewayLog,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Starts `prism proxy --errors` in front of upstream on a free port and waits until it forwards. */
async function startPrism(
  upstream: string,
  children: ChildProcess[],
  exited: (c: ChildProcess, log: () => string) => () => string | undefined,
): Promise<{ url: string; log: () => string }> {
  const port = await freePort();
  const prismBin = join(pkgDir, "node_modules", ".bin", "prism");
  const prism = spawn(prismBin, ["proxy", specPath, upstream, "--errors", "--host", "127.0.0.1", "--port", String(port)], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FORCE_COLOR: "0", NO_COLOR: "1" },
  });
  children.push(prism);
  const log = capture(prism);
  const url = `http://127.0.0.1:${port}`;
  // /healthz is in the contract with no security: a proxied 200 means Prism is up and forwarding.
  await waitFor(`prism proxy ${upstream}`, 60_000, async () => {
    const r = await fetch(`${url}/healthz`);
    return r.status === 200 ? true : undefined;
  }, exited(prism, log));
  return { url, log };
}

/**
 * The lines of Prism's log that report a contract violation or a request it
 * refused. Prism logs each violation (error or warning) and each request it
 * terminates itself; a clean run has none.
 */
export function prismViolations(log: string): string[] {
  return log
    .split("\n")
    .filter((l) => /✖|⚠|\berror\b|\bwarning\b|violation/i.test(l))
    .filter((l) => !/The upstream call to .* has returned \d+/.test(l));
}
