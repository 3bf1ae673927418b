import { describe, expect, it } from "vitest";
import { jsonLogger } from "@whohas/core";
import { safeNext } from "../../auth/routes.js";
import { PASSWORD, signIn, startHub } from "./harness.js";

/** attempt posts one sign-in as a script would (JSON), from `client` behind the proxy when given. */
async function attempt(origin: string, username: string, password: string, client?: string): Promise<number> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (client !== undefined) headers["x-forwarded-for"] = client;
  return (await fetch(`${origin}/api/auth/login`, { method: "POST", headers, body: JSON.stringify({ username, password }) })).status;
}

describe("sign-in limits", () => {
  it("lets at most the burst of 200 parallel wrong passwords be checked: the rest are refused before the hash", async () => {
    const { origin } = await startHub();
    const statuses = await Promise.all(Array.from({ length: 200 }, (_, i) => attempt(origin, "ada", `guess-${i}`)));
    const checked = statuses.filter((s) => s === 401).length;
    expect(checked).toBeGreaterThan(0);
    expect(checked).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - checked);
    // The right password from the same address is refused too, until the window passes.
    expect(await attempt(origin, "ada", PASSWORD)).toBe(429);
  });

  it("checks a bounded number of passwords at once, whatever the number of addresses: the rest get 429", async () => {
    // 200 clients behind the proxy, each with a fresh allowance and a name of its own: only the hub-wide bound holds.
    const { origin } = await startHub({ trustedProxies: ["127.0.0.0/8"] });
    const statuses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => attempt(origin, `nobody-${i}`, "guess", `2001:db8:${i.toString(16)}::1`)),
    );
    // Without the bound every one of them would be hashed (401); with it, those past 4 running and 64 waiting are not.
    const checked = statuses.filter((s) => s === 401).length;
    expect(checked).toBeGreaterThanOrEqual(4 + 64);
    expect(checked).toBeLessThan(200);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - checked);
    // Once the flood has passed, the owner signs in.
    expect(await attempt(origin, "ada", PASSWORD, "198.51.100.30")).toBe(200);
    // Seventy-odd password hashes take about 2.5 s here, and twice that beside the suite's image build: the bound is
    // what is tested, not the time.
  }, 30_000);

  it("counts clients behind a trusted proxy by X-Forwarded-For: one guessing client locks out only itself", async () => {
    const { origin } = await startHub({ trustedProxies: ["127.0.0.0/8"] });
    for (let i = 0; i < 12; i++) await attempt(origin, "olga", `guess-${i}`, "203.0.113.5");
    expect(await attempt(origin, "olga", "guess-x", "203.0.113.5")).toBe(429);
    // The admin, behind the same ingress, signs in.
    expect(await attempt(origin, "ada", PASSWORD, "198.51.100.9")).toBe(200);
    // Entries a client wrote itself, left of the proxy's, do not change who it is.
    expect(await attempt(origin, "olga", "guess-y", "198.51.100.9, 203.0.113.5")).toBe(429);
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", async () => {
    const { origin } = await startHub({ trustedProxies: ["10.0.0.0/8"] });
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push(await attempt(origin, "olga", `guess-${i}`, `203.0.113.${i + 1}`));
    expect(statuses.slice(10)).toEqual([429, 429]);
  });

  it("slows guessing of one user from many addresses, and lets the user in from elsewhere once the window has passed", async () => {
    let now = 1_000_000;
    const lines: string[] = [];
    const logger = jsonLogger("hub", (l) => lines.push(l));
    const { origin } = await startHub({ trustedProxies: ["127.0.0.0/8"], clock: () => now, logger });
    for (const client of ["203.0.113.1", "203.0.113.2", "203.0.113.3"])
      for (let i = 0; i < 7; i++) await attempt(origin, "olga", `guess-${i}`, client);
    const locked = await fetch(`${origin}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.20" },
      body: JSON.stringify({ username: "olga", password: PASSWORD }),
    });
    expect(locked.status).toBe(429);
    expect(await locked.json()).toEqual({ error: "too many failed sign-ins for this user: wait a minute and try again" });
    // Other users are not held by it.
    expect(await attempt(origin, "vic", PASSWORD, "198.51.100.20")).toBe(200);
    now += 60_000;
    expect(await attempt(origin, "olga", PASSWORD, "198.51.100.20")).toBe(200);
    const throttled = lines
      .map((l) => JSON.parse(l) as { event?: string; scope?: string; user?: string; client?: string })
      .filter((l) => l.event === "auth.login_throttled");
    expect(throttled).toContainEqual(expect.objectContaining({ scope: "user", user: "olga", client: "198.51.100.20" }));
  });

  it("lets the owner in from a browser that signed in before while someone else's guessing holds the account", async () => {
    const { origin } = await startHub({ trustedProxies: ["127.0.0.0/8"] });
    const first = await fetch(`${origin}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.20" },
      body: JSON.stringify({ username: "ada", password: PASSWORD }),
    });
    const device =
      first.headers
        .getSetCookie()
        .find((c) => c.startsWith("whohas_device="))
        ?.split(";")[0] ?? "";
    expect(device).toMatch(/^whohas_device=[\w-]+\.[\w-]+\.[\w-]{32}$/);
    // Two addresses keep ada's account locked, each within its own allowance.
    for (const client of ["203.0.113.5", "203.0.113.6"]) for (let i = 0; i < 10; i++) await attempt(origin, "ada", `guess-${i}`, client);
    const login = (cookie: string, client: string) =>
      fetch(`${origin}/api/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": client, cookie },
        body: JSON.stringify({ username: "ada", password: PASSWORD }),
      });
    expect((await login("", "198.51.100.21")).status).toBe(429);
    expect((await login(device, "198.51.100.21")).status).toBe(200);
    // The cookie is ada's only, and cannot be forged or moved to another account.
    expect(
      (
        await fetch(`${origin}/api/auth/login`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.22", cookie: device },
          body: JSON.stringify({ username: "olga", password: "guess" }),
        })
      ).status,
    ).toBe(401);
    const forged = device.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    expect((await login(forged, "198.51.100.23")).status).toBe(429);
  });

  it("does not refund the address's attempt when the account's lock refused it", async () => {
    const { origin } = await startHub({ trustedProxies: ["127.0.0.0/8"] });
    for (const client of ["203.0.113.1", "203.0.113.2"]) for (let i = 0; i < 10; i++) await attempt(origin, "olga", `guess-${i}`, client);
    // 203.0.113.3 is refused by the account's lock 10 times: its own allowance is spent by them.
    for (let i = 0; i < 10; i++) expect(await attempt(origin, "olga", `guess-${i}`, "203.0.113.3")).toBe(429);
    expect(await attempt(origin, "vic", PASSWORD, "203.0.113.3")).toBe(429);
  });

  it("counts an IPv6 client by its /64: a new address in the same network does not start afresh", async () => {
    const { origin } = await startHub({ trustedProxies: ["127.0.0.0/8"] });
    for (let i = 0; i < 10; i++) await attempt(origin, "olga", `guess-${i}`, `2001:db8:1:2::${(i + 1).toString(16)}`);
    expect(await attempt(origin, "vic", PASSWORD, "2001:db8:1:2:ffff::99")).toBe(429);
    expect(await attempt(origin, "vic", PASSWORD, "2001:db8:1:3::1")).toBe(200);
  });

  it("says on the form which limit refused the sign-in", async () => {
    const { origin } = await startHub();
    for (let i = 0; i < 10; i++) await signIn(origin, "olga", `guess-${i}`);
    expect((await signIn(origin, "olga")).location).toBe("/login?error=throttled&next=%2F");
  });
});

describe("redirect after sign-in", () => {
  it.each([
    { next: "/ips?q=1", to: "/ips?q=1" },
    { next: "/ips/198.51.100.7#responders", to: "/ips/198.51.100.7#responders" },
    { next: "//evil.example/x", to: "/" },
    { next: "/\t/evil.example", to: "/" },
    { next: "/\n/evil.example", to: "/" },
    { next: "/\\evil.example", to: "/" },
    { next: "https://evil.example", to: "/" },
    { next: "javascript:alert(1)", to: "/" },
    { next: "/%2F/evil.example", to: "/%2F/evil.example" },
    { next: "/./../..//evil.example", to: "/" },
  ])("next=$next goes to $to", ({ next, to }) => {
    expect(safeNext(next, "")).toBe(to);
  });

  it("keeps a prefixed dashboard under its prefix", () => {
    expect(safeNext("/whohas/ips", "/whohas")).toBe("/whohas/ips");
    expect(safeNext("/other", "/whohas")).toBe("/whohas/");
    expect(safeNext("https://evil.example", "/whohas")).toBe("/whohas/");
  });

  it("sends the browser where it was going after the form, and never off this hub", async () => {
    const { origin } = await startHub();
    const form = async (next: string) =>
      (
        await fetch(`${origin}/api/auth/login`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded", origin },
          body: new URLSearchParams({ username: "vic", password: PASSWORD, next }),
        })
      ).headers.get("location");
    expect(await form("/nodes")).toBe("/nodes");
    expect(await form("/\t/evil.example")).toBe("/");
    expect(await form("/\\/evil.example")).toBe("/");
  });
});

describe("sign-out", () => {
  it("needs the page's CSRF token, in the header or the form", async () => {
    const { origin } = await startHub();
    const s = await signIn(origin, "vic");
    const out = (headers: Record<string, string>, body = "") =>
      fetch(`${origin}/api/auth/logout`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", origin, cookie: s.cookie, ...headers },
        body,
      });
    // One character changed (to another one: a token that ends in "x" must not come back unchanged).
    const changed = `${s.csrf.slice(0, -1)}${s.csrf.endsWith("x") ? "y" : "x"}`;
    expect((await out({ "x-whohas-csrf": changed })).status).toBe(403);
    expect((await out({}, "csrf=nope")).status).toBe(403);
    expect((await out({}, `csrf=${encodeURIComponent(s.csrf)}`)).status).toBe(303);
    expect((await fetch(`${origin}/api/auth/me`, { headers: { cookie: s.cookie } })).status).toBe(401);
  });
});
