import { describe, expect, it } from "vitest";
import { appRouter } from "../../api/root.js";
import { parseTarget } from "../../request-target.js";
import { AGENT_TOKEN, VIEWER_TOKEN, raw, signIn, startHub } from "./harness.js";

/** PAGES: every page of the dashboard (the sign-in page aside). */
const PAGES = ["/", "/ips", "/ips/198.51.100.7", "/nodes", "/incidents", "/incidents/1", "/fix", "/settings"];
/** The read API's endpoints, and every tRPC query of the dashboard's API. */
const REST = ["/api/v1/ips", "/api/v1/ips/198.51.100.7", "/api/v1/nodes", "/api/v1/cluster", "/api/v1/incidents"];
/** PROCEDURES: every procedure of the dashboard's API, by its dotted name. */
const PROCEDURES = appRouter._def.procedures as unknown as Record<string, { _def: { type: "query" | "mutation" | "subscription" } }>;
const QUERIES = Object.entries(PROCEDURES)
  .filter(([, p]) => p._def.type === "query")
  .map(([name]) => `/api/trpc/${name}`);

/**
 * traversals: ways to write `target` behind a path that is open without sign-in, as an attacker would. Each holds a
 * dot segment (raw or percent-encoded, in any case), an encoded slash or backslash, or an empty segment.
 */
function traversals(target: string): string[] {
  const t = target.slice(1);
  return [
    `/_next/../${t}`,
    `/_next/%2e%2e/${t}`,
    `/_next/%2E%2E/${t}`,
    `/_next/.%2e/${t}`,
    `/_next/static/../../${t}`,
    `/_next/static/chunks/../../../${t}`,
    `/_next/static/..%2f..%2f${t}`,
    `/_next/static/..%2F..%2F${t}`,
    `/_next/static/..%5c..%5c${t}`,
    `/_next/static/%2e%2e%2f%2e%2e%2f${t}`,
    `/_next/static/..\\..\\${t}`,
    `/login/../${t}`,
    `/login%2f..%2f${t}`,
    `/favicon.ico/../${t}`,
    `/./${t}`,
    `/_next//../${t}`,
    `/_next/static/%00/../${t}`,
  ];
}

describe("request targets", () => {
  it.each([
    { case: "a plain path", url: "/ips?q=web", ok: true },
    { case: "an IPv6 address, encoded", url: "/ips/2001%3Adb8%3A%3A1", ok: true },
    { case: "a trailing slash", url: "/ips/", ok: true },
    { case: "absolute form", url: "http://evil.example/ips", ok: false, reason: "not-a-path" },
    { case: "a raw dot segment", url: "/_next/../ips", ok: false, reason: "dot-segment" },
    { case: "an encoded dot segment", url: "/_next/%2e%2e/ips", ok: false, reason: "dot-segment" },
    { case: "a single dot", url: "/./ips", ok: false, reason: "dot-segment" },
    { case: "an encoded slash", url: "/_next/static/..%2fips", ok: false, reason: "encoded-slash" },
    { case: "an encoded backslash", url: "/_next/static/..%5Cips", ok: false, reason: "encoded-slash" },
    { case: "a raw backslash", url: "/_next\\..\\ips", ok: false, reason: "backslash" },
    { case: "an empty segment", url: "//ips", ok: false, reason: "empty-segment" },
    { case: "an encoded NUL", url: "/ips%00", ok: false, reason: "control-character" },
    { case: "an escape that is not UTF-8", url: "/api/v1/ips/%E0", ok: false, reason: "undecodable" },
    { case: "a query that does not decode", url: "/ips?q=%E0", ok: false, reason: "undecodable" },
  ])("$case: $url", ({ url, ok, reason }) => {
    const r = parseTarget(url);
    expect(r.ok).toBe(ok);
    if (!r.ok) expect(r.reason).toBe(reason);
  });
});

describe("sign-in cannot be walked around", () => {
  it("refuses every page and API route reached through a traversal or an encoding, signed in or not, with 400", async () => {
    const { origin } = await startHub();
    const s = await signIn(origin, "ada");
    const tried: string[] = [];
    for (const target of [...PAGES, ...REST, ...QUERIES, "/api/auth/me", "/agent"]) {
      for (const variant of traversals(target)) {
        for (const headers of [{}, { cookie: s.cookie }] as Record<string, string>[]) {
          const r = await raw(origin, variant, headers);
          tried.push(`${r.status} ${variant}`);
          expect(r.status, variant).toBe(400);
          expect(r.body, variant).toMatch(/^bad request: /);
        }
      }
    }
    expect(tried.length).toBeGreaterThan(1000);
  });

  it("opens without sign-in only the sign-in page and the built static assets", async () => {
    const { origin } = await startHub();
    expect((await raw(origin, "/login")).body).toBe("page /login as undefined/undefined");
    expect((await raw(origin, "/_next/static/chunks/app.js")).status).toBe(200);
    expect((await raw(origin, "/favicon.ico")).status).toBe(200);
    // Anything else under /_next/ may be a page to Next.js (its data and image routes): signed in only.
    for (const p of ["/_next/data/build/ips.json", "/_next/image?url=%2Fips", "/_next/ips", "/_next/staticx/ips", "/login/x", "/loginx"]) {
      const r = await raw(origin, p);
      expect([p, r.status]).toEqual([p, 303]);
    }
  });

  it("sends the anonymous visitor of every page to the sign-in page, and refuses every API route with 401", async () => {
    const { origin } = await startHub();
    for (const p of PAGES) {
      const r = await raw(origin, p);
      expect([p, r.status, r.headers.location]).toEqual([p, 303, `/login?next=${encodeURIComponent(p)}`]);
    }
    for (const p of [...REST, ...QUERIES]) expect([p, (await raw(origin, p)).status]).toEqual([p, 401]);
  });

  it("lets each role reach pages and reads, and the agent token nothing but /agent", async () => {
    const { origin } = await startHub();
    const roles = { viewer: await signIn(origin, "vic"), operator: await signIn(origin, "olga"), admin: await signIn(origin, "ada") };
    for (const [role, s] of Object.entries(roles)) {
      for (const p of PAGES) expect([role, p, (await raw(origin, p, { cookie: s.cookie })).status]).toEqual([role, p, 200]);
      for (const p of REST)
        expect([role, p, (await raw(origin, p, { cookie: s.cookie })).status]).toEqual([role, p, p.endsWith("198.51.100.7") ? 404 : 200]);
    }
    // The agents' token is no way into the dashboard or the read API.
    const agent = { authorization: `Bearer ${AGENT_TOKEN}` };
    for (const p of PAGES) expect([p, (await raw(origin, p, agent)).status]).toEqual([p, 303]);
    for (const p of [...REST, ...QUERIES]) expect([p, (await raw(origin, p, agent)).status]).toEqual([p, 401]);
    // The read API's token reads, as a viewer, whatever it asks.
    const viewer = { authorization: `Bearer ${VIEWER_TOKEN}` };
    expect((await raw(origin, "/api/v1/ips", viewer)).status).toBe(200);
    expect((await raw(origin, "/settings", viewer)).body).toBe("page /settings as viewer-token/viewer");
    expect((await raw(origin, "/api/trpc/settings.audit", viewer)).status).toBe(403);
  });

  it("builds a capture for a session only from the dashboard's own pages, for a token from anywhere, for nobody else", async () => {
    const { origin } = await startHub();
    const { cookie } = await signIn(origin, "vic");
    const capture = `${origin}/api/v1/ips/198.51.100.7/capture`;
    const get = (headers: Record<string, string>) => fetch(capture, { headers });
    expect((await get({})).status).toBe(401);
    const cross = await get({ cookie, "sec-fetch-site": "cross-site" });
    expect(cross.status).toBe(403);
    expect(((await cross.json()) as { error: string }).error).toMatch(/from the dashboard's own pages/);
    expect((await get({ cookie, "sec-fetch-site": "same-origin" })).status).toBe(200);
    expect((await get({ authorization: `Bearer ${VIEWER_TOKEN}`, "sec-fetch-site": "cross-site" })).status).toBe(200);
    expect((await fetch(`${origin}/api/v1/incidents/1/capture`, { headers: { cookie } })).status).toBe(404);
  });

  it("sends no stack trace with an error", async () => {
    const { origin } = await startHub();
    const s = await signIn(origin, "vic");
    const r = await raw(origin, "/api/trpc/settings.get", { cookie: s.cookie });
    expect(r.status).toBe(403);
    expect(r.body).not.toMatch(/stack|node_modules|\.ts:/);
  });

  it("holds every procedure of the dashboard's API to its role, for each role and without a sign-in", async () => {
    const procedures = PROCEDURES;
    expect(Object.keys(NEEDS).sort()).toEqual(Object.keys(procedures).sort());
    const { origin } = await startHub();
    const sessions = { viewer: await signIn(origin, "vic"), operator: await signIn(origin, "olga"), admin: await signIn(origin, "ada") };
    const rank = { viewer: 0, operator: 1, admin: 2 } as const;
    // A subscription answers over SSE with status 200 and the refusal as its only event; the others with the status.
    const call = async (name: string, headers: Record<string, string>) => {
      const type = procedures[name]?._def.type;
      if (type === "mutation")
        return (
          await fetch(`${origin}/api/trpc/${name}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...headers },
            body: "{}",
          })
        ).status;
      const r = await raw(origin, `/api/trpc/${name}`, headers);
      if (type !== "subscription") return r.status;
      const events = r.body.split("\n\n").filter((e) => e.trim() !== "");
      expect(events.map((e) => /^event: (.+)$/m.exec(e)?.[1] ?? "data")).toEqual(["connected", "serialized-error"]);
      return Number(/"httpStatus":(\d+)/.exec(r.body)?.[1] ?? r.status);
    };
    for (const [name, need] of Object.entries(NEEDS)) {
      expect([name, "anonymous", await call(name, {})]).toEqual([name, "anonymous", 401]);
      for (const [role, s] of Object.entries(sessions) as [keyof typeof rank, { cookie: string; csrf: string }][]) {
        const allowed = rank[role] >= rank[need];
        if (allowed && procedures[name]?._def.type === "subscription") continue;
        const status = await call(name, { cookie: s.cookie, "x-whohas-csrf": s.csrf });
        if (allowed) expect([name, role, [401, 403].includes(status)]).toEqual([name, role, false]);
        else expect([name, role, status]).toEqual([name, role, 403]);
      }
    }
  });
});

/** NEEDS: the role each procedure of the dashboard's API asks for (a new procedure must be added here). */
const NEEDS: Record<string, "viewer" | "operator" | "admin"> = {
  "actions.reannounce": "operator",
  "actions.reannounceGroup": "operator",
  "actions.announceGroupLatest": "viewer",
  "actions.probe": "operator",
  "actions.durations": "viewer",
  "actions.latestProbe": "viewer",
  "actions.probeLive": "viewer",
  "agents.list": "viewer",
  "agents.live": "viewer",
  "alerts.receivers": "admin",
  "alerts.deliveries": "admin",
  "alerts.saveReceiver": "admin",
  "alerts.deleteReceiver": "admin",
  "alerts.testReceiver": "admin",
  "cluster.summary": "viewer",
  "cluster.live": "viewer",
  "fleet.clusters": "viewer",
  "fleet.directory": "viewer",
  "fleet.ips": "viewer",
  "incidents.list": "viewer",
  "incidents.byId": "viewer",
  "incidents.story": "viewer",
  "incidents.acknowledge": "operator",
  "incidents.live": "viewer",
  "ips.list": "viewer",
  "ips.snapshot": "viewer",
  "ips.byIp": "viewer",
  "ips.backgroundProbe": "viewer",
  "ips.timeline": "viewer",
  "ips.live": "viewer",
  "ips.byIpLive": "viewer",
  "nodes.list": "viewer",
  "nodes.live": "viewer",
  "remediation.preview": "operator",
  "remediation.apply": "operator",
  "remediation.rollback": "operator",
  "remediation.live": "viewer",
  "settings.me": "viewer",
  "settings.get": "admin",
  "settings.setRetention": "admin",
  "settings.createToken": "admin",
  "settings.revokeToken": "admin",
  "settings.audit": "admin",
};

describe("undecodable input", () => {
  it("takes a cookie that does not decode as no cookie: an answer at once, never a hang", async () => {
    const { origin } = await startHub();
    const bad = { cookie: "whohas_session=%E0" };
    expect((await raw(origin, "/ips", bad)).status).toBe(303);
    expect((await raw(origin, "/api/v1/ips", bad)).status).toBe(401);
    expect((await raw(origin, "/api/trpc/ips.list", bad)).status).toBe(401);
    expect((await raw(origin, "/api/auth/me", bad)).status).toBe(401);
    expect((await raw(origin, "/api/auth/logout", bad, "POST")).status).toBe(303);
  });

  it.each(["/api/v1/ips/%E0", "/ips/%E0", "/api/trpc/ips.byIp?input=%E0", "/incidents/%FF%FE", "/%C0%AE%C0%AE/ips"])(
    "answers %s with 400",
    async (target) => {
      const { origin } = await startHub();
      const r = await raw(origin, target);
      expect([r.status, r.body]).toEqual([400, "bad request: the path holds a percent sign that does not start a valid UTF-8 escape\n"]);
    },
  );

  it("answers 500 when a handler throws, and goes on serving", async () => {
    const { origin } = await startHub({
      extra: {
        pages: (req, res) => {
          if (req.url === "/boom") throw new URIError("URI malformed");
          res.writeHead(200).end("fine");
        },
      },
    });
    const s = await signIn(origin, "vic");
    const r = await raw(origin, "/boom", { cookie: s.cookie });
    expect([r.status, r.body]).toEqual([500, "internal error: see the hub's log (http.failed)\n"]);
    expect((await raw(origin, "/nodes", { cookie: s.cookie })).body).toBe("fine");
  });
});

describe("response headers", () => {
  it("gives pages a nonce policy shared with Next.js, no framing, no sniffing, no Referer to other sites", async () => {
    let seen = "";
    const { origin } = await startHub({
      extra: {
        pages: (req, res) => {
          seen = String(req.headers["content-security-policy"]);
          res.writeHead(200).end();
        },
      },
    });
    const s = await signIn(origin, "vic");
    const r = await raw(origin, "/ips", { cookie: s.cookie, "content-security-policy": "script-src 'nonce-attacker'" });
    const csp = String(r.headers["content-security-policy"]);
    expect(csp).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{24}' 'strict-dynamic'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).toMatch(/object-src 'none'/);
    expect(seen).toBe(csp);
    expect(r.headers).toMatchObject({ "x-content-type-options": "nosniff", "referrer-policy": "same-origin", "x-frame-options": "DENY" });
    const again = await raw(origin, "/ips", { cookie: s.cookie });
    expect(again.headers["content-security-policy"]).not.toBe(csp);
  });

  it("gives the hub's own answers a policy that loads nothing", async () => {
    const { origin, metrics } = await startHub();
    for (const url of [`${origin}/api/v1/ips`, `${origin}/healthz`, `${origin}/api/auth/me`, `${origin}/api/trpc/ips.list`, metrics]) {
      const r = await fetch(url);
      expect([url, r.headers.get("content-security-policy"), r.headers.get("x-content-type-options")]).toEqual([
        url,
        "default-src 'none'; frame-ancestors 'none'",
        "nosniff",
      ]);
    }
  });
});
