import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { statSync } from "node:fs";
import { join } from "node:path";
import { startLoneHub, type LoneHub } from "../lone-hub.js";
import { raw } from "./hub-client.js";

/** PAGES: every page of the dashboard, as Next.js serves it from the production build. */
const PAGES = ["/", "/ips", "/ips/198.51.100.7", "/nodes", "/incidents", "/incidents/1", "/fix", "/settings"];
const API = [
  "/api/v1/ips",
  "/api/v1/nodes",
  "/api/v1/cluster",
  "/api/v1/incidents",
  "/api/trpc/ips.list",
  "/api/trpc/settings.audit",
  "/api/auth/me",
];

/** traversals: a target written behind the paths open without sign-in, raw and percent-encoded. */
const traversals = (target: string): string[] => {
  const t = target.slice(1);
  return [
    `/_next/../${t}`,
    `/_next/%2e%2e/${t}`,
    `/_next/static/../../${t}`,
    `/_next/static/%2E%2E/%2e%2e/${t}`,
    `/_next/static/..%2f..%2f${t}`,
    `/_next/static/..%5c..%5c${t}`,
    `/login/../${t}`,
    `/favicon.ico/%2e%2e/${t}`,
    `/./${t}`,
    `//${t}`,
  ];
};

/** session signs in through the form and returns the cookie header a browser would send. */
async function session(hub: LoneHub, role: "viewer" | "operator" | "admin"): Promise<string> {
  const u = hub.users[role];
  const res = await fetch(`${hub.url}/api/auth/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: hub.url },
    body: new URLSearchParams({ username: u.name, password: u.password }),
  });
  return (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
}

// The production hub with its real Next.js build behind it: what the traversal fix must hold against is Next's own
// reading of the path, so the unit tests' stub of Next is not enough here.
describe("the production hub's HTTP surface", () => {
  let hub: LoneHub;
  beforeAll(async () => {
    hub = await startLoneHub();
  });
  afterAll(async () => {
    await hub.stop();
  });

  it("answers 400 to every page and API route reached through a traversal, signed in or not", async () => {
    const admin = await session(hub, "admin");
    for (const target of [...PAGES, ...API]) {
      for (const v of traversals(target)) {
        for (const headers of [{}, { cookie: admin }] as Record<string, string>[]) {
          const r = await raw(hub.url, v, headers);
          expect([v, r.status]).toEqual([v, 400]);
          expect(r.body).not.toMatch(/<html|responders|"ip"/);
        }
      }
    }
  });

  it("serves the sign-in page and its assets to anyone, and nothing else under /_next/", async () => {
    const login = await raw(hub.url, "/login");
    expect(login.status).toBe(200);
    const assets = [...login.body.matchAll(/(?:src|href)="(\/_next\/static\/[^"]+)"/g)].map((m) => m[1] ?? "");
    expect(assets.length).toBeGreaterThan(0);
    for (const a of assets) expect([a, (await raw(hub.url, a)).status]).toEqual([a, 200]);
    // A name Next.js would decode into a dot segment is a file name to the static server: not found, never a page.
    const doubled = await raw(hub.url, "/_next/static/%252e%252e/ips");
    expect(doubled.status).toBe(404);
    for (const p of ["/_next/data/x/ips.json", "/_next/image?url=%2Fips&w=64&q=75", "/_next/ips"])
      expect([p, (await raw(hub.url, p)).status]).toEqual([p, 303]);
  });

  it("gives every role its pages and the agent token none, with scripts that run only with the page's nonce", async () => {
    for (const p of PAGES) expect([p, (await raw(hub.url, p)).status]).toEqual([p, 303]);
    for (const p of PAGES) expect([p, (await raw(hub.url, p, { authorization: `Bearer ${hub.agentToken}` })).status]).toEqual([p, 303]);
    for (const role of ["viewer", "operator", "admin"] as const) {
      const cookie = await session(hub, role);
      for (const p of PAGES) {
        const r = await raw(hub.url, p, { cookie });
        expect([role, p, r.status]).toEqual([role, p, 200]);
        const nonce = /'nonce-([^']+)'/.exec(String(r.headers["content-security-policy"]))?.[1];
        expect(nonce).toBeDefined();
        const scripts = [...r.body.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
        expect(scripts.length).toBeGreaterThan(0);
        for (const s of scripts) expect([p, s.includes(`nonce="${nonce ?? ""}"`)]).toEqual([p, true]);
        expect(r.headers["x-frame-options"]).toBe("DENY");
      }
    }
  });

  it("answers undecodable input with 400 or as no credential, at once", async () => {
    expect((await raw(hub.url, "/api/v1/ips/%E0")).status).toBe(400);
    expect((await raw(hub.url, "/ips/%E0", { cookie: await session(hub, "viewer") })).status).toBe(400);
    expect((await raw(hub.url, "/ips", { cookie: "whohas_session=%E0" })).status).toBe(303);
    expect((await raw(hub.url, "/api/v1/ips", { cookie: "whohas_session=%E0" })).status).toBe(401);
  });

  it("serves /metrics only on its own port, and keeps its database private", async () => {
    expect((await raw(hub.url, "/metrics")).status).toBe(404);
    expect((await fetch(hub.metricsUrl)).status).toBe(200);
    const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
    const db = join(hub.dir, "db", "whohas.db");
    expect([mode(join(hub.dir, "db")), mode(db), mode(`${db}-wal`)]).toEqual(["700", "600", "600"]);
  });
});

describe("a hub whose log reader is gone", () => {
  it("exits (141, as SIGPIPE would) instead of spinning on writes that fail", async () => {
    const hub = await startLoneHub();
    try {
      const exited = new Promise<number | null>((r) => hub.process.once("exit", (code) => r(code)));
      // Whatever read the hub's output dies: its end of the pipes closes.
      hub.process.stdout?.destroy();
      hub.process.stderr?.destroy();
      // Something for the hub to log.
      await raw(hub.url, "/_next/../ips").catch(() => undefined);
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("still running"), 10_000))]);
      expect(code).toBe(141);
    } finally {
      await hub.stop();
    }
  });
});
