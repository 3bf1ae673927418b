import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import type { Actions } from "./actions/actions.js";
import type { CommandSender } from "./actions/command.js";
import { AnnounceBatches, announcerOf } from "./actions/announce-batch.js";
import type { BackgroundProbe } from "./actions/background-probe.js";
import { appRouter } from "./api/root.js";
import { AUTH_PREFIX, LOGIN_PATH, handleAuth } from "./auth/routes.js";
import { CSRF_HEADER, ROLE_HEADER, USER_HEADER, type Auth, type Principal } from "./auth/auth.js";
import type { Alerter } from "./alerts/alerter.js";
import { AlertAdmin } from "./alerts/admin.js";
import type { Remediation } from "./remediation/remediation.js";
import type { Settings } from "./settings.js";
import { REST_PREFIX, handleRest } from "./api/rest.js";
import { Evidence } from "./evidence/evidence.js";
import { AGENT_PATH, AgentGateway } from "./gateway/agent-gateway.js";
import type { Review } from "./gateway/credentials.js";
import type { AgentLimits } from "./gateway/pacing.js";
import type { Hub } from "./hub/hub.js";
import { HubMetrics } from "./metrics.js";
import { StreamSlots } from "./limits.js";
import { LogThrottle } from "./log-throttle.js";
import { parseTarget, type RequestTarget } from "./request-target.js";
import { apiHeaders, pageHeaders } from "./security-headers.js";
import { isReplicaAddress, limitKey, peerAddress } from "./client-address.js";
import { timingSafeEqual } from "node:crypto";
import type { Logger } from "@whohas/core";

/** MAX_TRPC_BODY_BYTES bounds one dashboard API request (a batch of mutations included). */
export const MAX_TRPC_BODY_BYTES = 64 * 1024;

/** TRPC_PREFIX is where the dashboard's API lives (the client's links point here). */
export const TRPC_PREFIX = "/api/trpc/";

/** isHubRoute: a path the hub answers itself, never Next.js. */
function isHubRoute(p: string): boolean {
  return (
    p === "/healthz" ||
    p === "/readyz" ||
    p === "/metrics" ||
    p === AGENT_PATH ||
    p.startsWith(TRPC_PREFIX) ||
    p.startsWith(REST_PREFIX) ||
    p.startsWith(AUTH_PREFIX) ||
    p === "/api" ||
    p.startsWith("/api/")
  );
}

/**
 * openWithoutSignIn: the sign-in page and what it loads (Next.js's built static assets, the icon). Nothing else under
 * /_next/ is open: the hub does not know what Next.js would serve there. Development mode adds its hot reload.
 */
function openWithoutSignIn(page: string, dev: boolean): boolean {
  if (page === LOGIN_PATH || page === "/favicon.ico" || page.startsWith("/_next/static/")) return true;
  return dev && (page.startsWith("/_next/") || page.startsWith("/__nextjs"));
}

/** bearerIs compares a request's Bearer token with `token` in constant time. */
function bearerIs(req: IncomingMessage, token: string): boolean {
  const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "");
  if (m?.[1] === undefined) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface HubServerOptions {
  readonly hub: Hub;
  readonly agentToken: string | null;
  /** Validates agents' ServiceAccount tokens (TokenReview) and names the node each is bound to; absent: the shared token only. */
  readonly agentReviewer?: (token: string) => Promise<Review>;
  /** Bounds on agents and the new IPs each may bring (config `limits`). */
  readonly agentLimits?: Partial<AgentLimits>;
  /** Who may use the dashboard, tRPC and the read API. */
  readonly auth: Auth;
  /** Makes the operators' actions on the gateway's agents (absent: those procedures say they are unavailable). */
  readonly actions?: (agents: CommandSender) => Actions;
  readonly settings?: Settings;
  /** Makes the alerter, which counts its deliveries in the hub's metrics. */
  readonly alerter?: (metrics: HubMetrics) => Alerter;
  /** Makes the background probe of every LoadBalancer IP, on the gateway's agents (absent: off). */
  readonly backgroundProbe?: (agents: CommandSender, metrics: HubMetrics, actions: Actions | undefined) => BackgroundProbe;
  /** Makes the strictARP fix, which probes through the actions (absent without Kubernetes). */
  readonly remediation?: (actions: Actions | undefined) => Remediation;
  readonly logger: Logger;
  /** Serves everything that is not ours (Next.js); tests pass a 404 handler. */
  readonly pages: RequestListener;
  /**
   * The dashboard's path prefix (Next's basePath). The hub's own routes answer with and without it: an ingress
   * forwards /PREFIX/api/..., probes and agents inside the cluster call /healthz and /agent directly.
   */
  readonly basePath?: string;
  /** The Bearer token /metrics asks for on the metrics port (metrics.tokenFile); null: open on that port. */
  readonly metricsToken?: string | null;
  /** Next.js in development mode: its hot-reload endpoints are open and scripts may use eval. */
  readonly dev?: boolean;
  /** WebSocket upgrades that are not ours (Next's dev hot reload at /_next/hmr). */
  readonly otherUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Take agents that come through a proxy (config agents.allowProxied). */
  readonly agentsAllowProxied?: boolean;
  /** How often a node's facts are taken at most (tests shorten it). */
  readonly agentFactsEveryMs?: number;
  /** How often agents are pinged (tests shorten it). */
  readonly agentPingMs?: number;
  /** How long the agents' pace holds before it may get faster (PACE_HOLD_MS; tests shorten it). */
  readonly agentPaceHoldMs?: number;
  /** Open connections taken at most, and from one address (trusted proxies excepted); config `limits`. */
  readonly connections?: { readonly max: number; readonly perAddress: number };
  /** The largest capture file the hub stores or serves (config evidence.maxFileBytes). */
  readonly evidenceMaxFileBytes?: number;
  /** How long an agent has to answer an evidence-request (tests shorten it). */
  readonly evidenceAnswerTimeoutMs?: number;
  /** Live streams (subscriptions) open at most per principal and in total. */
  readonly streamsPerUser?: number;
  readonly maxStreams?: number;
}

/** MAX_BATCH: tRPC calls one request may batch (the dashboard's client sends at most as many). */
export const MAX_BATCH = 10;
/** STREAMS_PER_USER / MAX_STREAMS: live views one principal, and everyone, may hold open. */
export const STREAMS_PER_USER = 32;
export const MAX_STREAMS = 2000;
/**
 * HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS: a client has this long to send a request's headers, and all of it (a
 * sign-in form is a few hundred bytes): a client that trickles bytes cannot hold a connection for minutes.
 * Responses (live streams) and WebSockets are not bounded by them.
 */
export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 30_000;

/** A HubServer routes one process's HTTP: health, tRPC, the agent WebSocket, and Next.js for the rest. */
export interface HubServer {
  readonly gateway: AgentGateway;
  readonly actions: Actions | undefined;
  readonly backgroundProbe: BackgroundProbe | undefined;
  readonly alerter: Alerter | undefined;
  /** Incidents' frames: asked of the agents when an incident opens (start it), stored, served as capture files. */
  readonly evidence: Evidence;
  readonly metrics: HubMetrics;
  /** metricsListener serves /metrics, /healthz and /readyz on the metrics port (metrics.listen). */
  readonly metricsListener: RequestListener;
  /** listener and upgrade are attached to every http.Server the hub listens with (TCP and the lab's Unix socket). */
  readonly listener: RequestListener;
  readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** createServer returns a new server wired to listener and upgrade: HTTPS/WSS when given a certificate and key. */
  createServer(tls?: { readonly cert: string; readonly key: string } | null): Server;
}

export function createHubServer(opts: HubServerOptions): HubServer {
  const { auth } = opts;
  const metrics = new HubMetrics(opts.hub);
  const serveMetrics = (res: ServerResponse) =>
    void metrics.text().then(
      (body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
      (e: unknown) => {
        opts.logger.error("metrics.failed", { message: (e as Error).message });
        res.writeHead(500, { "content-type": "text/plain" }).end("metrics failed: see the hub's log (metrics.failed)\n");
      },
    );
  // The metrics port (metrics.listen): Prometheus and the probes only.
  const metricsListener: RequestListener = (req, res) => {
    apiHeaders(res);
    const t = parseTarget(req.url);
    const path = t.ok ? t.target.path : null;
    if (path === "/metrics") {
      if (opts.metricsToken != null && !bearerIs(req, opts.metricsToken))
        return void res
          .writeHead(401, { "content-type": "text/plain", "www-authenticate": 'Bearer realm="whohas-metrics"' })
          .end("send Authorization: Bearer with metrics.tokenFile's token\n");
      return serveMetrics(res);
    }
    if (path === "/healthz" || path === "/readyz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    res.writeHead(404, { "content-type": "text/plain" }).end("this port serves /metrics, /healthz and /readyz only\n");
  };
  const gateway = new AgentGateway({
    hub: opts.hub,
    token: opts.agentToken,
    logger: opts.logger,
    metrics,
    reviewer: opts.agentReviewer,
    clients: auth.clients,
    limits: opts.agentLimits,
    allowProxied: opts.agentsAllowProxied,
    factsEveryMs: opts.agentFactsEveryMs,
    pingMs: opts.agentPingMs,
    paceHoldMs: opts.agentPaceHoldMs,
  });
  const actions = opts.actions?.(gateway);
  const backgroundProbe = opts.backgroundProbe?.(gateway, metrics, actions);
  const announcements =
    actions === undefined ? undefined : new AnnounceBatches(announcerOf(actions), (e) => opts.hub.store.audit.append(e));
  const evidence = new Evidence({
    hub: opts.hub,
    asker: gateway,
    logger: opts.logger,
    maxFileBytes: opts.evidenceMaxFileBytes,
    answerTimeoutMs: opts.evidenceAnswerTimeoutMs,
  });
  const alerter = opts.alerter?.(metrics);
  const remediation = opts.remediation?.(actions);
  const alerts = alerter === undefined ? undefined : new AlertAdmin(alerter, opts.hub.store.audit);
  const streams = new StreamSlots(opts.streamsPerUser ?? STREAMS_PER_USER, opts.maxStreams ?? MAX_STREAMS);
  const trpc = createHTTPHandler({
    router: appRouter,
    basePath: TRPC_PREFIX,
    // The dashboard's inputs are a few hundred bytes: a larger body is refused before it is read whole (413).
    maxBodySize: MAX_TRPC_BODY_BYTES,
    // One request answers at most MAX_BATCH calls (the dashboard's client batches as many): a URL naming the whole
    // IP list eighty times cannot make the hub build eighty copies of it.
    maxBatchSize: MAX_BATCH,
    createContext: async ({ req }) => {
      const principal = await auth.principal(req);
      return {
        hub: opts.hub,
        actions,
        announcements,
        backgroundProbe,
        settings: opts.settings,
        alerts,
        audit: opts.hub.store.audit,
        remediation,
        principal,
        csrfOk: principal !== null && auth.csrfOk(req, principal),
        streams,
      };
    },
  });
  const base = opts.basePath ?? "";
  const dev = opts.dev === true;
  const noisy = new LogThrottle(opts.logger);
  /**
   * unprefixed returns a checked path without the dashboard's prefix. For the hub's own routes req.url loses it too,
   * so that their handlers see /api/..., /agent; Next.js's pages keep it (Next strips it itself).
   */
  const unprefixed = (req: IncomingMessage, t: RequestTarget): string => {
    if (base === "" || (t.path !== base && !t.path.startsWith(`${base}/`))) return t.path;
    const rest = t.path.slice(base.length) || "/";
    if (isHubRoute(rest)) req.url = `${rest}${t.search}`;
    return rest;
  };
  const route = (req: IncomingMessage, res: ServerResponse): Promise<void> | undefined => {
    const t = parseTarget(req.url);
    if (!t.ok) {
      apiHeaders(res);
      noisy.warn("http.bad_target", limitKey(peerAddress(req)), { reason: t.reason, peer: peerAddress(req) });
      res.writeHead(400, { "content-type": "text/plain; charset=utf-8" }).end(`bad request: ${t.message}\n`);
      return;
    }
    const path = unprefixed(req, t.target);
    if (isHubRoute(path)) apiHeaders(res);
    if (path === "/healthz" || path === "/readyz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return;
    }
    if (path === "/metrics") {
      res
        .writeHead(404, { "content-type": "text/plain" })
        .end("metrics are served on metrics.listen (port 9473 unless set), not on the dashboard's port\n");
      return;
    }
    if (path.startsWith(AUTH_PREFIX)) {
      void handleAuth(auth, base, req, res, opts.logger, noisy);
      return;
    }
    if (path.startsWith(REST_PREFIX)) {
      return auth.principal(req).then((p) => handleRest(opts.hub, p, req, res, evidence));
    }
    if (path.startsWith(TRPC_PREFIX)) {
      trpc(req, res);
      return;
    }
    if (path === "/api" || path.startsWith("/api/")) {
      res
        .writeHead(404, { "content-type": "application/json; charset=utf-8" })
        .end(`${JSON.stringify({ error: `no such endpoint: ${path}` })}\n`);
      return;
    }
    if (path === AGENT_PATH) {
      res.writeHead(426, { "content-type": "text/plain", upgrade: "websocket" }).end("agents connect here with a WebSocket\n");
      return;
    }
    // The dashboard's pages: only the sign-in page and what it loads are open. The pages learn who is signed in (and
    // the CSRF token for their mutations) from headers set here, never from the client.
    for (const h of [USER_HEADER, ROLE_HEADER, CSRF_HEADER]) delete req.headers[h];
    pageHeaders(req, res, dev);
    const open = openWithoutSignIn(path, dev);
    return (open ? Promise.resolve(null) : auth.principal(req)).then((who) => page(req, res, t.target, open, who));
  };
  /** page hands a dashboard page to Next.js once it is known who asks (a page that needs a sign-in redirects). */
  const page = (req: IncomingMessage, res: ServerResponse, target: RequestTarget, open: boolean, who: Principal | null): void => {
    if (!open && who === null) {
      res
        .writeHead(303, {
          location: `${base}${LOGIN_PATH}?next=${encodeURIComponent(`${target.path}${target.search}`)}`,
          "cache-control": "no-store",
        })
        .end();
      return;
    }
    if (who !== null) {
      req.headers[USER_HEADER] = encodeURIComponent(who.user);
      req.headers[ROLE_HEADER] = who.role;
      if (who.csrf !== null) req.headers[CSRF_HEADER] = who.csrf;
    }
    opts.pages(req, res);
  };
  // A handler that throws, or whose answer written over time fails, answers 500 (or ends the answer it began) with a
  // line to look for in the log, and the process goes on.
  const failed = (req: IncomingMessage, res: ServerResponse, e: unknown) => {
    opts.logger.error("http.failed", { url: req.url?.slice(0, 200), message: (e as Error).message });
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end("internal error: see the hub's log (http.failed)\n");
    else res.destroy();
  };
  const listener: RequestListener = (req, res) => {
    try {
      route(req, res)?.catch((e: unknown) => failed(req, res, e));
    } catch (e) {
      failed(req, res, e);
    }
  };
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const t = parseTarget(req.url);
    if (!t.ok) {
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(t.message) + 1}\r\n\r\n${t.message}\n`,
      );
      return;
    }
    const path = unprefixed(req, t.target);
    if (path === AGENT_PATH) return gateway.handleUpgrade(req, socket, head);
    if (opts.otherUpgrade !== undefined) return opts.otherUpgrade(req, socket, head);
    socket.destroy();
  };
  return {
    gateway,
    actions,
    backgroundProbe,
    alerter,
    evidence,
    metrics,
    metricsListener,
    listener,
    upgrade,
    createServer(tls) {
      const options = { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS };
      const s =
        tls === undefined || tls === null
          ? createServer(options, listener)
          : createTlsServer({ ...options, cert: tls.cert, key: tls.key, minVersion: "TLSv1.2" }, listener);
      s.on("upgrade", upgrade);
      // A standby passing people's requests on counts each of its clients itself.
      if (opts.connections !== undefined)
        limitConnections(s, opts.connections, (addr) => auth.clients.isProxy(addr) || isReplicaAddress(addr), opts.logger);
      return s;
    },
  };
}

/** CONNECTION_LOG_MS: refused connections are logged at most this often per address (with their count). */
const CONNECTION_LOG_MS = 60_000;

/**
 * limitConnections caps a server's open connections, in total (the kernel queue holds the rest) and per client
 * address (trusted proxies excepted: every client behind them shares their address); a connection past the cap is
 * closed at once.
 */
export function limitConnections(
  s: Server,
  limits: { readonly max: number; readonly perAddress: number },
  isProxy: (addr: string) => boolean,
  logger: Logger,
): void {
  s.maxConnections = limits.max;
  const open = new Map<string, number>();
  const told = new Map<string, { at: number; refused: number }>();
  s.on("connection", (socket: Socket) => {
    const raw = socket.remoteAddress ?? "unix";
    const addr = raw.startsWith("::ffff:") ? raw.slice(7) : raw;
    if (raw === "unix" || isProxy(addr)) return;
    const key = limitKey(addr);
    const n = open.get(key) ?? 0;
    if (n >= limits.perAddress) {
      socket.destroy();
      const now = Date.now();
      const t = told.get(key) ?? { at: -Infinity, refused: 0 };
      t.refused++;
      if (now - t.at >= CONNECTION_LOG_MS) {
        logger.warn("http.connections_limited", {
          client: key,
          refused: t.refused,
          limit: limits.perAddress,
          hint: "one address holds limits.connectionsPerAddress connections: a client opening too many, or clients behind a proxy missing from auth.trustedProxies",
        });
        t.at = now;
        t.refused = 0;
      }
      if (told.size > 10_000) told.clear();
      told.set(key, t);
      return;
    }
    open.set(key, n + 1);
    socket.once("close", () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
  });
}
