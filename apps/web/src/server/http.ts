import { createServer, type IncomingMessage, type RequestListener, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { appRouter } from "./api/root.js";
import { REST_PREFIX, handleRest } from "./api/rest.js";
import { AGENT_PATH, AgentGateway } from "./gateway/agent-gateway.js";
import type { Hub } from "./hub/hub.js";
import { HubMetrics } from "./metrics.js";
import type { Logger } from "@whohas/core";

/** TRPC_PREFIX is where the dashboard's API lives (the client's links point here). */
export const TRPC_PREFIX = "/api/trpc/";

export interface HubServerOptions {
  readonly hub: Hub;
  readonly agentToken: string;
  /** Bearer token of the read API; null: /api/v1 answers 401 saying how to enable it. */
  readonly viewerToken: string | null;
  readonly logger: Logger;
  /** Serves everything that is not ours (Next.js); tests pass a 404 handler. */
  readonly pages: RequestListener;
  /**
   * The dashboard's path prefix (Next's basePath). The hub's own routes answer with and without it: an ingress
   * forwards /PREFIX/api/..., probes and agents inside the cluster call /healthz and /agent directly.
   */
  readonly basePath?: string;
  /** WebSocket upgrades that are not ours (Next's dev hot reload at /_next/hmr). */
  readonly otherUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

/** A HubServer routes one process's HTTP: health, tRPC, the agent WebSocket, and Next.js for the rest. */
export interface HubServer {
  readonly gateway: AgentGateway;
  readonly metrics: HubMetrics;
  /** listener and upgrade are attached to every http.Server the hub listens with (TCP and the lab's Unix socket). */
  readonly listener: RequestListener;
  readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** createServer returns a new http.Server wired to listener and upgrade. */
  createServer(): Server;
}

export function createHubServer(opts: HubServerOptions): HubServer {
  const trpc = createHTTPHandler({ router: appRouter, basePath: TRPC_PREFIX, createContext: () => ({ hub: opts.hub }) });
  const metrics = new HubMetrics(opts.hub);
  const gateway = new AgentGateway(opts.hub, opts.agentToken, opts.logger, metrics);
  const base = opts.basePath ?? "";
  /** ours strips the prefix from a request for one of the hub's routes, so that handlers see /api/..., /agent. */
  const ours = (req: IncomingMessage): string => {
    const url = req.url ?? "/";
    if (base !== "" && (url.startsWith(`${base}/`) || url === base)) {
      const rest = url.slice(base.length) || "/";
      const p = rest.split("?")[0] ?? "/";
      if (p === "/healthz" || p === "/readyz" || p === "/metrics" || p === AGENT_PATH || p.startsWith(TRPC_PREFIX) || p.startsWith(REST_PREFIX)) req.url = rest;
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
      void metrics.registry.metrics().then((body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body));
      return;
    }
    if (path.startsWith(REST_PREFIX)) {
      handleRest(opts.hub, opts.viewerToken, req, res);
      return;
    }
    if (path.startsWith(TRPC_PREFIX)) {
      trpc(req, res);
      return;
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
    metrics,
    listener,
    upgrade,
    createServer() {
      const s = createServer(listener);
      s.on("upgrade", upgrade);
      return s;
    },
  };
}
