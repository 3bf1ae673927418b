import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Duplex } from "node:stream";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import type { Actions, CommandSender } from "./actions/actions.js";
import { appRouter } from "./api/root.js";
import { AUTH_PREFIX, LOGIN_PATH, handleAuth } from "./auth/routes.js";
import { CSRF_HEADER, ROLE_HEADER, USER_HEADER, type Auth } from "./auth/auth.js";
import type { Alerter } from "./alerts/alerter.js";
import type { Remediation } from "./remediation/remediation.js";
import type { Settings } from "./settings.js";
import { REST_PREFIX, handleRest } from "./api/rest.js";
import { AGENT_PATH, AgentGateway } from "./gateway/agent-gateway.js";
import type { Hub } from "./hub/hub.js";
import { HubMetrics } from "./metrics.js";
import type { Logger } from "@whohas/core";

/** MAX_TRPC_BODY_BYTES bounds one dashboard API request (a batch of mutations included). */
export const MAX_TRPC_BODY_BYTES = 64 * 1024;

/** TRPC_PREFIX is where the dashboard's API lives (the client's links point here). */
export const TRPC_PREFIX = "/api/trpc/";

export interface HubServerOptions {
  readonly hub: Hub;
  readonly agentToken: string | null;
  /** Validates agents' ServiceAccount tokens (TokenReview); absent: the shared token only. */
  readonly agentReviewer?: (token: string) => Promise<{ ok: boolean; why: string }>;
  /** Who may use the dashboard, tRPC and the read API. */
  readonly auth: Auth;
  /** Makes the operators' actions on the gateway's agents (absent: those procedures say they are unavailable). */
  readonly actions?: (agents: CommandSender) => Actions;
  readonly settings?: Settings;
  /** Makes the alerter, which counts its deliveries in the hub's metrics. */
  readonly alerter?: (metrics: HubMetrics) => Alerter;
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
  /** false when /metrics has a listener of its own (metrics.listen): the main one then answers 404 there. */
  readonly metricsHere?: boolean;
  /** WebSocket upgrades that are not ours (Next's dev hot reload at /_next/hmr). */
  readonly otherUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

/** A HubServer routes one process's HTTP: health, tRPC, the agent WebSocket, and Next.js for the rest. */
export interface HubServer {
  readonly gateway: AgentGateway;
  readonly actions: Actions | undefined;
  readonly alerter: Alerter | undefined;
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
  const serveMetrics = (res: ServerResponse) => void metrics.registry.metrics().then((body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body));
  // The metrics port (metrics.listen): Prometheus and the probes only.
  const metricsListener: RequestListener = (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/metrics") return serveMetrics(res);
    if (path === "/healthz" || path === "/readyz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    res.writeHead(404, { "content-type": "text/plain" }).end("this port serves /metrics, /healthz and /readyz only\n");
  };
  const gateway = new AgentGateway(opts.hub, opts.agentToken, opts.logger, metrics, opts.agentReviewer);
  const actions = opts.actions?.(gateway);
  const alerter = opts.alerter?.(metrics);
  const remediation = opts.remediation?.(actions);
  const trpc = createHTTPHandler({
    router: appRouter,
    basePath: TRPC_PREFIX,
    // The dashboard's inputs are a few hundred bytes: a larger body is refused before it is read whole (413).
    maxBodySize: MAX_TRPC_BODY_BYTES,
    createContext: ({ req }) => {
      const principal = auth.principal(req);
      return { hub: opts.hub, actions, settings: opts.settings, alerter, remediation, principal, csrfOk: principal !== null && auth.csrfOk(req, principal) };
    },
  });
  const base = opts.basePath ?? "";
  /** ours strips the prefix from a request for one of the hub's routes, so that handlers see /api/..., /agent. */
  const ours = (req: IncomingMessage): string => {
    const url = req.url ?? "/";
    if (base !== "" && (url.startsWith(`${base}/`) || url === base)) {
      const rest = url.slice(base.length) || "/";
      const p = rest.split("?")[0] ?? "/";
      if (p === "/healthz" || p === "/readyz" || p === "/metrics" || p === AGENT_PATH || p.startsWith(TRPC_PREFIX) || p.startsWith(REST_PREFIX) || p.startsWith(AUTH_PREFIX)) req.url = rest;
    }
    return (req.url ?? "/").split("?")[0] ?? "/";
  };
  const listener: RequestListener = (req, res) => {
    const path = ours(req);
    if (path === "/healthz" || path === "/readyz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return;
    }
    if (path === "/metrics") {
      if (opts.metricsHere === false) {
        res.writeHead(404, { "content-type": "text/plain" }).end("metrics are served on metrics.listen, not on the dashboard's port\n");
        return;
      }
      serveMetrics(res);
      return;
    }
    if (path.startsWith(AUTH_PREFIX)) {
      void handleAuth(auth, base, req, res, opts.logger);
      return;
    }
    if (path.startsWith(REST_PREFIX)) {
      handleRest(opts.hub, auth.principal(req), req, res);
      return;
    }
    if (path.startsWith(TRPC_PREFIX)) {
      trpc(req, res);
      return;
    }
    // The dashboard's pages: only the sign-in page and static assets without a sign-in. The pages learn who is
    // signed in (and the CSRF token for their mutations) from headers set here, never from the client.
    for (const h of [USER_HEADER, ROLE_HEADER, CSRF_HEADER]) delete req.headers[h];
    const page = path.startsWith(base) ? path.slice(base.length) || "/" : path;
    const open = page === LOGIN_PATH || page.startsWith("/_next/") || page === "/favicon.ico";
    const who = open ? null : auth.principal(req);
    if (!open && who === null) {
      res.writeHead(303, { location: `${base}${LOGIN_PATH}?next=${encodeURIComponent(req.url ?? "/")}`, "cache-control": "no-store" }).end();
      return;
    }
    if (who !== null) {
      req.headers[USER_HEADER] = encodeURIComponent(who.user);
      req.headers[ROLE_HEADER] = who.role;
      if (who.csrf !== null) req.headers[CSRF_HEADER] = who.csrf;
    }
    opts.pages(req, res);
  };
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = ours(req);
    if (path === AGENT_PATH) return gateway.handleUpgrade(req, socket, head);
    if (opts.otherUpgrade !== undefined) return opts.otherUpgrade(req, socket, head);
    socket.destroy();
  };
  return {
    gateway,
    actions,
    alerter,
    metrics,
    metricsListener,
    listener,
    upgrade,
    createServer(tls) {
      const s = tls === undefined || tls === null ? createServer(listener) : createTlsServer({ cert: tls.cert, key: tls.key, minVersion: "TLSv1.2" }, listener);
      s.on("upgrade", upgrade);
      return s;
    },
  };
}
