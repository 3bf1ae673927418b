import { afterEach, beforeAll } from "vitest";
import { once } from "node:events";
import { createServer, request, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { silentLogger, type Logger } from "@whohas/core";
import { Auth, type LocalUser } from "../../auth/auth.js";
import { hashPassword } from "../../auth/passwords.js";
import { createHubServer, type HubServer, type HubServerOptions } from "../../http.js";
import { Hub } from "../../hub/hub.js";
import { Settings } from "../../settings.js";

export const AGENT_TOKEN = "agent-token-0123456789";
export const VIEWER_TOKEN = "viewer-token-0123456789";
export const PASSWORD = "correct horse";

let hash = "";
beforeAll(async () => {
  hash = await hashPassword(PASSWORD);
});

/** users: one of each role, all with PASSWORD. */
export function users(): LocalUser[] {
  return [
    { name: "vic", passwordHash: hash, role: "viewer" },
    { name: "olga", passwordHash: hash, role: "operator" },
    { name: "ada", passwordHash: hash, role: "admin" },
  ];
}

/** A stub for Next.js: says what it was asked, and who the hub told it is signed in. */
export const echoPages: RequestListener = (req, res) =>
  res
    .writeHead(200, { "content-type": "text/plain" })
    .end(`page ${req.url ?? ""} as ${String(req.headers["x-whohas-user"])}/${String(req.headers["x-whohas-role"])}`);

export interface TestHub {
  readonly hub: Hub;
  readonly auth: Auth;
  readonly server: HubServer;
  readonly origin: string;
  readonly metrics: string;
  readonly agentUrl: string;
}

const servers: Server[] = [];
const hubs: HubServer[] = [];
afterEach(async () => {
  // Agents' WebSockets outlive closeAllConnections (they are upgraded): the gateway closes them first.
  for (const h of hubs.splice(0)) h.gateway.terminate();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

export interface StartOptions {
  readonly hub?: Hub;
  readonly trustedProxies?: readonly string[];
  readonly clock?: () => number;
  readonly logger?: Logger;
  readonly extra?: Partial<HubServerOptions>;
}

/** startHub serves a real hub (auth, gateway, tRPC, read API) on loopback with Next.js stubbed by echoPages. */
export async function startHub(o: StartOptions = {}): Promise<TestHub> {
  const hub = o.hub ?? (await Hub.open());
  const u = users();
  const auth = await Auth.open(
    { users: u, proxy: null, sessionTtlMs: 3_600_000, trustedProxies: o.trustedProxies ?? [], viewerToken: VIEWER_TOKEN },
    hub.store.access,
    hub.store.settings,
    o.logger ?? silentLogger,
    o.clock ?? Date.now,
  );
  const settings = new Settings({
    settings: hub.store.settings,
    access: hub.store.access,
    audit: hub.store.audit,
    fileRetentionMs: 7 * 86_400_000,
    users: u,
    methods: auth.methods,
    clock: hub.clock,
  });
  const server = createHubServer({
    hub,
    agentToken: AGENT_TOKEN,
    auth,
    settings,
    logger: o.logger ?? silentLogger,
    pages: echoPages,
    ...o.extra,
  });
  hubs.push(server);
  const main = server.createServer();
  const side = createServer(server.metricsListener);
  for (const s of [main, side]) {
    servers.push(s);
    s.listen(0, "127.0.0.1");
    await once(s, "listening");
  }
  const port = (main.address() as AddressInfo).port;
  return {
    hub,
    auth,
    server,
    origin: `http://127.0.0.1:${port}`,
    metrics: `http://127.0.0.1:${(side.address() as AddressInfo).port}/metrics`,
    agentUrl: `ws://127.0.0.1:${port}/agent`,
  };
}

/** signIn signs in through the form as a browser does; returns the cookie and the page's CSRF token. */
export async function signIn(
  origin: string,
  username: string,
  password = PASSWORD,
  headers: Record<string, string> = {},
): Promise<{ status: number; location: string | null; cookie: string; csrf: string }> {
  const res = await fetch(`${origin}/api/auth/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin, ...headers },
    body: new URLSearchParams({ username, password }),
  });
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const me = cookie === "" ? null : ((await (await fetch(`${origin}/api/auth/me`, { headers: { cookie } })).json()) as { csrf: string });
  return { status: res.status, location: res.headers.get("location"), cookie, csrf: me?.csrf ?? "" };
}

/** raw sends a request with its target exactly as given (no URL normalisation), and returns status and headers. */
export function raw(
  origin: string,
  target: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path: target, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.setTimeout(5000, () => req.destroy(new Error(`no answer to ${target} within 5 s`)));
    req.on("error", reject);
    req.end();
  });
}
