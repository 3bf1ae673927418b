import WebSocket from "ws";
import {
  CLOSE_NODE_TAKEN,
  CLOSE_WRONG_CLUSTER,
  HEARTBEAT_MS,
  SILENCE_MS,
  WIRE_VERSION,
  type AgentMessage,
  type HubMessage,
  parseHubMessage,
} from "@whohas/core";
import type { Logger } from "@whohas/core";

/** BACKOFF_MIN_MS and BACKOFF_MAX_MS bound the reconnect delay: 0.5 s doubling to 30 s. */
export const BACKOFF_MIN_MS = 500;
export const BACKOFF_MAX_MS = 30_000;
export { HEARTBEAT_MS, SILENCE_MS };

/**
 * backoffDelay is the jittered exponential delay before reconnect attempt `attempt` (0-based): "full jitter" between
 * half and all of min × 2^attempt, capped, so that a hub restart does not get every agent back in the same instant.
 */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt, 16));
  return Math.round(base / 2 + (random() * base) / 2);
}

export interface HubLinkOptions {
  /**
   * ws://, wss:// or ws+unix:///path/to.sock:/agent; or several (each hub replica's): a connection lost or refused is
   * followed by one to the next address at once, and the backoff grows only when a whole round failed.
   */
  readonly url: string | readonly string[];
  /** The bearer token, or a function read on every connection (a projected ServiceAccount token is rotated). */
  readonly token: string | (() => string);
  /** PEM CA for a wss:// hub whose certificate the system does not trust; verification is never turned off. */
  readonly ca?: string | null;
  readonly logger: Logger;
  /** Sent first on every (re)connect. */
  readonly hello: () => AgentMessage;
  readonly onMessage?: (msg: HubMessage) => void;
}

/** A HubLink keeps one WebSocket to the hub open, reconnecting with backoff until closed. */
export class HubLink {
  #ws: WebSocket | null = null;
  #attempt = 0;
  /** #at: the address tried now; #failedInRound: the failures since the last open connection. */
  #at = 0;
  #failedInRound = 0;
  /** A hub replica on standby said when to come back (503 with Retry-After), in ms; null otherwise. */
  #retryAfterMs: number | null = null;
  #closed = false;
  #retryTimer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #lastHeard = 0;

  constructor(readonly opts: HubLinkOptions) {}

  /** connected tells whether messages sent now reach the hub. */
  get connected(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  /** bufferedBytes is what the socket has queued but not yet written. */
  get bufferedBytes(): number {
    return this.#ws?.bufferedAmount ?? 0;
  }

  start(): void {
    this.#connect();
  }

  /** send returns false when not connected; the caller keeps the data for later. */
  send(msg: AgentMessage): boolean {
    const ws = this.#ws;
    if (ws?.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  /** close ends the link after what is queued is written; no reconnect follows. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    const ws = this.#ws;
    if (ws === null || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2000);
      ws.once("close", () => {
        clearTimeout(t);
        resolve();
      });
      ws.close(1000, "agent shutting down");
    });
  }

  get #urls(): readonly string[] {
    return typeof this.opts.url === "string" ? [this.opts.url] : this.opts.url;
  }

  #connect(): void {
    const { logger } = this.opts;
    const url = this.#urls[this.#at % this.#urls.length] ?? "";
    let token: string;
    try {
      token = typeof this.opts.token === "string" ? this.opts.token : this.opts.token();
    } catch (e) {
      logger.error("hub.token_unreadable", {
        message: (e as Error).message,
        hint: "check --token-file (a projected ServiceAccount token is rewritten by the kubelet)",
      });
      token = "";
    }
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      handshakeTimeout: 10_000,
      ...(this.opts.ca === undefined || this.opts.ca === null ? {} : { ca: this.opts.ca }),
    });
    this.#ws = ws;
    ws.on("open", () => {
      this.#attempt = 0;
      this.#failedInRound = 0;
      logger.info("hub.connected", { url });
      ws.send(JSON.stringify(this.opts.hello()));
      this.#lastHeard = Date.now();
      this.#heartbeat = setInterval(() => {
        if (Date.now() - this.#lastHeard > SILENCE_MS) {
          logger.warn("hub.silent", { silentMs: Date.now() - this.#lastHeard });
          ws.terminate();
          return;
        }
        this.send({ v: WIRE_VERSION, type: "heartbeat", t: Date.now() });
      }, HEARTBEAT_MS);
      this.#heartbeat.unref();
    });
    ws.on("ping", () => (this.#lastHeard = Date.now()));
    ws.on("message", (data, isBinary) => {
      this.#lastHeard = Date.now();
      if (isBinary) return;
      const text = Buffer.isBuffer(data)
        ? data.toString("utf8")
        : Array.isArray(data)
          ? Buffer.concat(data).toString("utf8")
          : Buffer.from(data).toString("utf8");
      const msg = parseHubMessage(text);
      if (!msg.ok) {
        logger.warn("hub.bad_message", { reason: msg.message });
        return;
      }
      this.opts.onMessage?.(msg.value);
    });
    ws.on("unexpected-response", (_req, res) => {
      const after = Number(res.headers["retry-after"]);
      this.#retryAfterMs = res.statusCode === 503 && after > 0 && after <= 30 ? after * 1000 : null;
      // 503: a hub replica on standby; the next address (or the Service, again) reaches the leader.
      logger[res.statusCode === 503 ? "warn" : "error"]("hub.refused", {
        url,
        status: res.statusCode,
        hint:
          res.statusCode === 401
            ? "check --token-file: the hub refused the token"
            : res.statusCode === 503
              ? "a hub replica on standby, or a hub starting: trying the next address"
              : undefined,
      });
      ws.terminate();
    });
    ws.on("error", (err: Error & { code?: string }) => {
      const tls = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(err.code ?? "");
      logger.warn("hub.error", {
        message: err.message,
        ...(tls ? { hint: "the hub's certificate is not trusted: pass --ca-file with the CA that signed it" } : {}),
      });
    });
    ws.on("close", (code, reason) => {
      if (this.#heartbeat) clearInterval(this.#heartbeat);
      if (this.#closed) return;
      // Another replica may lead: the next address at once, a longer wait only once every address failed.
      const n = this.#urls.length;
      this.#at = (this.#at + 1) % n;
      this.#failedInRound++;
      // A standby's 503 behind one Service address: back when it says (jittered), as the Service may pick the
      // leader next time; the backoff does not grow for it.
      const retryAfter = this.#retryAfterMs;
      this.#retryAfterMs = null;
      const delay =
        n > 1 && this.#failedInRound % n !== 0
          ? backoffDelay(0) / 5
          : retryAfter !== null
            ? Math.round(retryAfter * (0.5 + Math.random()))
            : backoffDelay(this.#attempt++);
      // The hub already has a live agent for this node name (two agents claim it, or the old link is dead).
      if (code === CLOSE_NODE_TAKEN)
        logger.error("hub.node_conflict", {
          reason: reason.toString(),
          retryInMs: delay,
          hint: "check --node (NODE_NAME): another agent speaks for this node; a dead old connection is dropped by the hub within 20 s",
        });
      // The hub watches another cluster than --cluster says: the agent was given another cluster's hub.
      else if (code === CLOSE_WRONG_CLUSTER)
        logger.error("hub.wrong_cluster", {
          reason: reason.toString(),
          retryInMs: delay,
          hint: "check --hub and --cluster (WHOHAS_CLUSTER): each cluster's agents report to that cluster's own hub",
        });
      else logger.warn("hub.disconnected", { code, reason: reason.toString(), retryInMs: delay });
      this.#retryTimer = setTimeout(() => this.#connect(), delay);
    });
  }
}
