import type { IncomingMessage, ServerResponse } from "node:http";
import { LogThrottle } from "../log-throttle.js";
import type { Logger } from "@whohas/core";
import type { Auth } from "./auth.js";

/** AUTH_PREFIX: sign-in, sign-out and "who am I" (README "Signing in"). */
export const AUTH_PREFIX = "/api/auth/";
/** LOGIN_PATH is the sign-in page (a Next page posting to AUTH_PREFIX + "login"). */
export const LOGIN_PATH = "/login";
/** MAX_BODY_BYTES bounds a sign-in form. */
const MAX_BODY_BYTES = 16 * 1024;

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  res
    .writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers })
    .end(JSON.stringify(body) + "\n");
}

/** readBody reads a small request body; null when it is larger than MAX_BODY_BYTES. */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** fields reads a form (urlencoded) or JSON body into strings. */
function fields(req: IncomingMessage, body: string): Record<string, string> {
  if ((req.headers["content-type"] ?? "").startsWith("application/json")) {
    try {
      const o = JSON.parse(body) as unknown;
      if (typeof o !== "object" || o === null) return {};
      return Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => typeof e[1] === "string"));
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(body));
}

/**
 * safeNext keeps a post-sign-in redirect on this hub: `next` is resolved against the hub's own origin, as a browser
 * would resolve it, and must stay there and under the dashboard's prefix. Control characters are refused outright
 * (browsers drop tabs and newlines from URLs, so "/\t/evil.example" would become "//evil.example").
 */
export function safeNext(next: string | undefined, base: string): string {
  const home = `${base}/`;
  // eslint-disable-next-line no-control-regex
  if (next === undefined || next.length > 2048 || /[\u0000-\u001f\u007f\\]/.test(next) || !next.startsWith("/")) return home;
  const origin = "http://hub.invalid";
  let u: URL;
  try {
    u = new URL(next, origin);
  } catch {
    return home;
  }
  if (u.origin !== origin) return home;
  if (base !== "" && u.pathname !== base && !u.pathname.startsWith(home)) return home;
  // What is sent back is read again by the browser: a path that resolved to "//host" would leave this hub.
  const out = `${u.pathname}${u.search}${u.hash}`;
  if (out.startsWith("//") || new URL(out, origin).origin !== origin) return home;
  return out;
}

/** sameOrigin refuses a form posted from another site (login CSRF); requests without Origin (scripts) pass. */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || origin === "null") return origin === undefined;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/**
 * handleAuth serves AUTH_PREFIX: `POST login` (form fields username, password, next; or JSON), `POST logout`,
 * `GET me`. Forms get redirects (303), scripts asking for JSON get JSON.
 */
export async function handleAuth(
  auth: Auth,
  base: string,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
  noisy: LogThrottle = new LogThrottle(logger),
): Promise<void> {
  const path = (req.url ?? "").split("?")[0]?.slice(AUTH_PREFIX.length) ?? "";
  const cookiePath = base === "" ? "/" : base;
  const wantsJson =
    (req.headers["content-type"] ?? "").startsWith("application/json") || (req.headers.accept ?? "").startsWith("application/json");
  try {
    if (path === "me" && (req.method === "GET" || req.method === "HEAD")) {
      const p = await auth.principal(req);
      if (p === null) return json(res, 401, { error: "not signed in" });
      return json(res, 200, { user: p.user, role: p.role, via: p.via, csrf: p.csrf });
    }
    if (req.method !== "POST") return json(res, 405, { error: `${AUTH_PREFIX}${path} takes POST` }, { allow: "POST" });
    if (!sameOrigin(req)) return json(res, 403, { error: "cross-site form refused: sign in from this hub's own page" });
    const body = await readBody(req);
    if (body === null) return json(res, 413, { error: `body larger than ${MAX_BODY_BYTES} bytes` });
    const f = fields(req, body);
    if (path === "login") {
      const next = safeNext(f.next, base);
      if (f.username === undefined || f.password === undefined || f.username === "" || f.username.length > 64 || f.password.length > 1024) {
        if (wantsJson) return json(res, 400, { error: "send username and password" });
        return void res.writeHead(303, { location: `${base}/login?error=missing&next=${encodeURIComponent(next)}` }).end();
      }
      const r = await auth.login(f.username, f.password, req, cookiePath);
      if (!r.ok) {
        if (wantsJson) return json(res, r.status, { error: r.message });
        return void res.writeHead(303, { location: `${base}/login?error=${r.reason}&next=${encodeURIComponent(next)}` }).end();
      }
      if (wantsJson) return json(res, 200, { user: r.user, role: r.role }, { "set-cookie": [...r.setCookie] });
      return void res.writeHead(303, { location: next, "set-cookie": [...r.setCookie], "cache-control": "no-store" }).end();
    }
    if (path === "logout") {
      const p = await auth.principal(req);
      // Signing out needs the page's CSRF token too: another site must not be able to sign a user out.
      if (p !== null && !auth.csrfOk(req, p, f.csrf))
        return json(res, 403, { error: "missing CSRF token: sign out from the dashboard's button" });
      const clear = await auth.logout(req, cookiePath);
      if (p !== null) logger.info("auth.logout", { user: p.user });
      if (wantsJson) return json(res, 200, { ok: true }, { "set-cookie": clear });
      return void res.writeHead(303, { location: `${base}/login`, "set-cookie": clear }).end();
    }
    json(res, 404, { error: `no such endpoint: ${AUTH_PREFIX}${path} (login, logout, me)` });
  } catch (e) {
    // A client that hangs up or trickles its form is its own problem (told once a minute per address); anything
    // else is the hub's.
    const message = (e as Error).message;
    if (/aborted|timed? ?out|too large/i.test(message))
      noisy.warn("auth.failed", auth.clients.of(req), { message, client: auth.clients.of(req) });
    else logger.error("auth.failed", { message });
    if (!res.headersSent) json(res, 500, { error: "sign-in failed on the hub; see its log" });
  }
}
