// A minimal reader of the hub's API for tests: plain HTTP GET on tRPC queries with the read token, as any client may do.
import { createHash } from "node:crypto";
import { request } from "node:http";

/**
 * electedBy is MetalLB's layer 2 rule written from its definition, independently of core's election (which the lab's
 * speakers also run): the node with the smallest sha256 of "node#ip" among the candidates.
 */
export function electedBy(candidates: readonly string[], ip: string): string | undefined {
  const hash = (n: string) => createHash("sha256").update(`${n}#${ip}`).digest("hex");
  return [...candidates].sort((a, b) => (hash(a) < hash(b) ? -1 : hash(a) > hash(b) ? 1 : 0))[0];
}

export interface ResponderView {
  mac: string;
  node: string | null;
  replies: number;
  answering: boolean;
  lastSeen: number;
}
export interface IpView {
  ip: string;
  state: string;
  requests: number;
  responders: ResponderView[];
}
/** A finding's life inside an incident, as the read API shows it. */
export interface FacetView {
  type: string;
  macs: string[];
  detail: string;
  firstSeen: number;
  lastSeen: number;
  resolvedAt: number | null;
}
/** An incident as the read API shows it: one per subject (an IP, or node/NAME), named after its worst finding. */
export interface IncidentView extends FacetView {
  id: number;
  ip: string;
  vlan?: number | null;
  acknowledgedBy?: string | null;
  facets: FacetView[];
}

/** findingsIn lists the findings of incidents (their facets), each with its incident's id and subject. */
export function findingsIn(list: readonly IncidentView[]): (FacetView & { incidentId: number; ip: string })[] {
  return list.flatMap((i) => i.facets.map((f) => ({ ...f, incidentId: i.id, ip: i.ip })));
}

export interface AgentView {
  node: string;
  up: boolean;
  interfaces: { name: string; mac: string }[];
}

export async function query<T>(stack: { readonly url: string; readonly viewerToken: string }, path: string): Promise<T> {
  const res = await fetch(`${stack.url}/api/trpc/${path}`, { headers: { authorization: `Bearer ${stack.viewerToken}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return ((await res.json()) as { result: { data: T } }).result.data;
}

/** api reads the hub's read API (/api/v1/...) with the viewer token: the full view of every IP. */
export async function api<T>(base: string, token: string, path: string): Promise<T> {
  const res = await fetch(`${base}/api/v1/${path}`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/**
 * eventually polls `probe` every `everyMs` until it returns a value for which `ok` holds, or fails with the last value
 * seen.
 */
export async function eventually<T>(probe: () => Promise<T>, ok: (v: T) => boolean, ms: number, everyMs = 250): Promise<T> {
  const end = Date.now() + ms;
  let last: T | undefined;
  while (Date.now() < end) {
    last = await probe();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`not reached within ${ms} ms; last value: ${JSON.stringify(last)}`);
}

/**
 * passed waits until two of the hub's periodic passes ("write": the store holds everything the hub held; "judge":
 * every IP was judged on what had arrived) completed since the call: the first may have begun before it, the second
 * began after it. Read from the hub's own /metrics.
 */
export async function passed(stack: { readonly metricsUrl: string }, pass: "write" | "judge"): Promise<void> {
  const count = async () => {
    const text = await (await fetch(stack.metricsUrl)).text();
    if (!text.includes("whohas_hub_tick_seconds")) throw new Error(`the hub's /metrics has no whohas_hub_tick_seconds`);
    // A hub just started has no series for a pass it has not run yet: none so far.
    return Number(new RegExp(`^whohas_hub_tick_seconds_count\\{pass="${pass}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
  };
  const start = await count();
  await eventually(count, (n) => n >= start + 2, 20_000);
}

/**
 * signIn signs in as one of the stack's users and returns an HTTP client of the dashboard's API with its session
 * cookie and CSRF token, as the browser sends them.
 */
export async function signIn(
  stack: {
    readonly url: string;
    readonly users: Record<"viewer" | "operator" | "admin", { readonly name: string; readonly password: string }>;
  },
  role: "viewer" | "operator" | "admin",
) {
  const user = stack.users[role];
  const login = await fetch(`${stack.url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: user.name, password: user.password }),
  });
  if (!login.ok) throw new Error(`sign-in as ${user.name}: HTTP ${login.status}`);
  const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const { csrf } = (await (await fetch(`${stack.url}/api/auth/me`, { headers: { cookie } })).json()) as { csrf: string };
  const headers = { cookie, "x-whohas-csrf": csrf, "content-type": "application/json" };
  return {
    headers,
    query: async <T>(path: string, input?: unknown) => {
      const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(input))}`;
      const res = await fetch(`${stack.url}/api/trpc/${path}${q}`, { headers });
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { result: { data: T } }).result.data;
    },
    mutate: async (path: string, input: unknown) => {
      const res = await fetch(`${stack.url}/api/trpc/${path}`, { method: "POST", headers, body: JSON.stringify(input) });
      return {
        status: res.status,
        body: (await res.json()) as { result?: { data: unknown }; error?: { message: string; data: { code: string } } },
      };
    },
  };
}

/** raw sends one request with its target exactly as written (no URL normalisation, as `curl --path-as-is`). */
export function raw(
  base: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: target, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${target} within 10 s`)));
    req.on("error", reject);
    req.end();
  });
}

/** The dashboard's pages, each of which a signed-in user can open. */
export const PAGES = ["/", "/ips", "/nodes", "/incidents", "/settings", "/fix"] as const;

/**
 * bootstrapPages signs in a just-installed hub's bootstrap admin at `base` with `password` (its
 * initial-admin-password file) and opens every page: returns the session's cookie and each page's HTTP status.
 */
export async function bootstrapPages(base: string, password: string): Promise<{ cookie: string; pages: [string, number][] }> {
  const signin = await fetch(`${base}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password }),
  });
  if (signin.status !== 200) throw new Error(`the bootstrap admin's sign-in: HTTP ${signin.status}`);
  const cookie = (signin.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const pages: [string, number][] = [];
  for (const page of PAGES) pages.push([page, (await fetch(`${base}${page}`, { headers: { cookie } })).status]);
  return { cookie, pages };
}
