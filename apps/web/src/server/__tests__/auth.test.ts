import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { silentLogger } from "@whohas/core";
import { Auth, type ProxyAuth } from "../auth/auth.js";
import { hashPassword } from "../auth/passwords.js";
import { safeNext } from "../auth/routes.js";
import { createHubServer } from "../http.js";
import { Hub } from "../hub/hub.js";
import { Settings } from "../settings.js";

const AGENT = "agent-token-0123456789";
const VIEWER = "viewer-token-0123456789";
let HASH = "";
beforeAll(async () => {
  HASH = await hashPassword("correct horse");
});

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function start(proxy: ProxyAuth | null = null) {
  const hub = await Hub.open();
  const users = [
    { name: "olga", passwordHash: HASH, role: "operator" as const },
    { name: "vic", passwordHash: HASH, role: "viewer" as const },
    { name: "ada", passwordHash: HASH, role: "admin" as const },
  ];
  const auth = await Auth.open(
    { users, proxy, sessionTtlMs: 3_600_000, viewerToken: VIEWER },
    hub.store.access,
    hub.store.settings,
    silentLogger,
  );
  const settings = new Settings({
    settings: hub.store.settings,
    access: hub.store.access,
    audit: hub.store.audit,
    fileRetentionMs: 7 * 86_400_000,
    users,
    methods: auth.methods,
    clock: hub.clock,
  });
  const server = createHubServer({
    hub,
    agentToken: AGENT,
    auth,
    settings,
    logger: silentLogger,
    pages: (q, res) =>
      res.writeHead(200).end(`page ${q.url ?? ""} as ${String(q.headers["x-whohas-user"])}/${String(q.headers["x-whohas-role"])}`),
  }).createServer();
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { hub, origin };
}

/** login signs in through the HTML form, as a browser does, and returns the session cookie and the page's CSRF token. */
async function login(origin: string, username: string, password = "correct horse") {
  const res = await fetch(`${origin}/api/auth/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin },
    body: new URLSearchParams({ username, password, next: "/ips?q=x" }),
  });
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const me = cookie === "" ? null : ((await (await fetch(`${origin}/api/auth/me`, { headers: { cookie } })).json()) as { csrf: string });
  return {
    status: res.status,
    location: res.headers.get("location"),
    setCookie: res.headers.getSetCookie().find((c) => c.startsWith("whohas_session=")) ?? null,
    device: res.headers.getSetCookie().find((c) => c.startsWith("whohas_device=")) ?? null,
    cookie,
    csrf: me?.csrf ?? "",
  };
}

async function mutate(origin: string, path: string, input: unknown, headers: Record<string, string>) {
  const res = await fetch(`${origin}/api/trpc/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(input),
  });
  return {
    status: res.status,
    body: (await res.json()) as { result?: { data: unknown }; error?: { message: string; data: { code: string } } },
  };
}

describe("sign-in", () => {
  it("signs in with the form, sets an HttpOnly SameSite cookie, and the pages know who it is", async () => {
    const { origin } = await start();
    const anon = await fetch(`${origin}/ips`, { redirect: "manual" });
    expect(anon.status).toBe(303);
    expect(anon.headers.get("location")).toBe("/login?next=%2Fips");
    expect((await fetch(`${origin}/login`)).status).toBe(200);

    const s = await login(origin, "olga");
    expect(s.status).toBe(303);
    expect(s.location).toBe("/ips?q=x");
    expect(s.setCookie).toMatch(/^whohas_session=[\w-]{40,}; Path=\/; Max-Age=3600; HttpOnly; SameSite=Lax$/);
    expect(s.device).toMatch(/^whohas_device=[\w.-]+; Path=\/; Max-Age=31536000; HttpOnly; SameSite=Lax$/);
    expect(await (await fetch(`${origin}/ips`, { headers: { cookie: s.cookie } })).text()).toBe("page /ips as olga/operator");
    // A client cannot claim to be someone through the headers the hub sets for the pages.
    expect(
      await (await fetch(`${origin}/ips`, { headers: { cookie: s.cookie, "x-whohas-user": "mallory", "x-whohas-role": "admin" } })).text(),
    ).toBe("page /ips as olga/operator");

    await fetch(`${origin}/api/auth/logout`, { method: "POST", headers: { cookie: s.cookie, "x-whohas-csrf": s.csrf, origin } });
    expect((await fetch(`${origin}/ips`, { headers: { cookie: s.cookie }, redirect: "manual" })).status).toBe(303);
  });

  it("refuses a wrong password or unknown user alike, a cross-site form, and throttles guessing", async () => {
    const { origin } = await start();
    const wrong = await login(origin, "olga", "nope");
    expect([wrong.status, wrong.location, wrong.setCookie]).toEqual([
      303,
      `/login?error=invalid&next=${encodeURIComponent("/ips?q=x")}`,
      null,
    ]);
    expect((await login(origin, "nobody")).location).toMatch(/error=invalid/);
    const cross = await fetch(`${origin}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" },
      body: "username=olga&password=correct+horse",
    });
    expect(cross.status).toBe(403);
    for (let i = 0; i < 10; i++) await login(origin, "olga", `guess-${i}`);
    const locked = await fetch(`${origin}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "olga", password: "correct horse" }),
    });
    expect(locked.status).toBe(429);
    expect(await locked.json()).toEqual({ error: expect.stringContaining("too many failed sign-ins") });
  });

  it("keeps redirects on this site", () => {
    expect(safeNext("/ips?q=1", "")).toBe("/ips?q=1");
    expect(safeNext("//evil.example/x", "")).toBe("/");
    expect(safeNext("https://evil.example", "/whohas")).toBe("/whohas/");
    expect(safeNext("/\\evil.example", "")).toBe("/");
  });
});

describe("roles and CSRF", () => {
  it("lets an operator acknowledge with the CSRF token, never without it, and audits it", async () => {
    const { hub, origin } = await start();
    const { id } = await hub.store.incidents.open(
      {
        ip: "192.0.2.1",
        type: "multi-responder",
        detail: "2 MACs",
        macs: ["02:00:00:00:00:01", "02:00:00:00:00:02"],
        firstSeen: 1,
        lastSeen: 2,
        count: 1,
        samples: [1],
      },
      {},
    );
    const s = await login(origin, "olga");
    const without = await mutate(origin, "incidents.acknowledge", { id }, { cookie: s.cookie });
    expect(without.status).toBe(403);
    expect(without.body.error?.message).toMatch(/CSRF/);
    const ok = await mutate(origin, "incidents.acknowledge", { id }, { cookie: s.cookie, "x-whohas-csrf": s.csrf });
    expect(ok.status).toBe(200);
    expect(ok.body.result?.data).toMatchObject({ id, acknowledgedBy: "olga" });
    expect(await hub.store.audit.list()).toEqual([
      expect.objectContaining({ actor: "olga", action: "incident.acknowledge", input: { id }, outcome: "ok" }),
    ]);
  });

  it("refuses a viewer's mutation (403 naming the role, audited) and anyone unsigned (401)", async () => {
    const { hub, origin } = await start();
    const v = await login(origin, "vic");
    const r = await mutate(origin, "incidents.acknowledge", { id: 1 }, { cookie: v.cookie, "x-whohas-csrf": v.csrf });
    expect(r.status).toBe(403);
    expect(r.body.error?.message).toBe(
      "vic is a viewer; this needs the operator role (ask an admin, or map your group in auth.proxy.groupRoles)",
    );
    expect(await hub.store.audit.list()).toEqual([
      expect.objectContaining({
        actor: "vic",
        action: "incidents.acknowledge",
        outcome: "refused",
        detail: expect.stringMatching(/needs the operator role/),
      }),
    ]);
    expect((await fetch(`${origin}/api/trpc/ips.list`)).status).toBe(401);
    // The read API's token reads, and cannot act.
    expect((await fetch(`${origin}/api/trpc/ips.list`, { headers: { authorization: `Bearer ${VIEWER}` } })).status).toBe(200);
    expect((await mutate(origin, "incidents.acknowledge", { id: 1 }, { authorization: `Bearer ${VIEWER}` })).status).toBe(403);
  });

  it("lets an admin make a read-API token that works until revoked, and shows it once", async () => {
    const { hub, origin } = await start();
    const a = await login(origin, "ada");
    const made = await mutate(origin, "settings.createToken", { name: "grafana" }, { cookie: a.cookie, "x-whohas-csrf": a.csrf });
    const t = made.body.result?.data as { id: number; token: string; prefix: string };
    expect(t.token).toMatch(/^whohas_/);
    expect(JSON.stringify(await hub.store.access.apiTokens())).not.toContain(t.token);
    expect((await fetch(`${origin}/api/v1/nodes`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(200);
    await mutate(origin, "settings.revokeToken", { id: t.id }, { cookie: a.cookie, "x-whohas-csrf": a.csrf });
    expect((await fetch(`${origin}/api/v1/nodes`, { headers: { authorization: `Bearer ${t.token}` } })).status).toBe(401);
    expect((await hub.store.audit.list()).map((e) => `${e.actor} ${e.action} ${e.outcome}`)).toEqual([
      "ada token.revoke ok",
      "ada token.create ok",
    ]);
    const o = await login(origin, "olga");
    expect((await mutate(origin, "settings.createToken", { name: "x" }, { cookie: o.cookie, "x-whohas-csrf": o.csrf })).status).toBe(403);
  });
});

describe("request limits", () => {
  it("refuses a dashboard API body over 64 KiB with 413, and a sign-in body over 16 KiB", async () => {
    const { origin } = await start();
    const s = await login(origin, "olga");
    const big = await mutate(
      origin,
      "incidents.acknowledge",
      { id: 1, pad: "x".repeat(70 * 1024) },
      { cookie: s.cookie, "x-whohas-csrf": s.csrf },
    );
    expect(big.status).toBe(413);
    const form = await fetch(`${origin}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `username=olga&password=${"x".repeat(20 * 1024)}`,
    });
    expect(form.status).toBe(413);
  });
});

describe("authenticating proxy", () => {
  const proxy = (trusted: string[]): ProxyAuth => ({
    userHeader: "X-Forwarded-User",
    groupsHeader: "X-Forwarded-Groups",
    trustedProxies: trusted,
    groupRoles: { sre: "operator", platform: "admin" },
    defaultRole: null,
  });

  it("takes the user and the strongest group's role from a trusted proxy", async () => {
    const { origin } = await start(proxy(["127.0.0.0/8"]));
    const page = await fetch(`${origin}/nodes`, { headers: { "x-forwarded-user": "pat", "x-forwarded-groups": "dev, sre" } });
    expect(await page.text()).toBe("page /nodes as pat/operator");
    // A proxy user with no mapped group and no default role is not let in.
    expect(
      (await fetch(`${origin}/nodes`, { headers: { "x-forwarded-user": "eve", "x-forwarded-groups": "dev" }, redirect: "manual" })).status,
    ).toBe(303);
  });

  it("ignores the headers from any other address", async () => {
    const { origin } = await start(proxy(["10.0.0.0/8"]));
    const r = await fetch(`${origin}/nodes`, {
      headers: { "x-forwarded-user": "pat", "x-forwarded-groups": "platform" },
      redirect: "manual",
    });
    expect(r.status).toBe(303);
  });
});
