import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { WIRE_VERSION, parseAgentMessage, type AgentMessage, type HubMessage } from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import { FailureLimiter, TokenBucket } from "../limits.js";
import { peerAddress } from "../auth/auth.js";
import type { HubMetrics } from "../metrics.js";
import type { Logger } from "@whohas/core";

/** AGENT_PATH is where agents connect. */
export const AGENT_PATH = "/agent";
/** MAX_PAYLOAD_BYTES bounds one agent message: 1,000 aggregates of ~250 bytes fit with room to spare. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;
/** PING_MS: the hub pings and heartbeats each agent this often; one that misses a pong is dropped. */
export const PING_MS = 10_000;

/**
 * RATE_PER_SECOND / RATE_BURST bound what one agent may send: it flushes at most every 100 ms and heartbeats every
 * 10 s, so 200 messages a second with bursts of 400 leave room for probes and reconnect catch-up, and stop a broken
 * or hostile agent from starving the others.
 */
export const RATE_PER_SECOND = 200;
export const RATE_BURST = 400;

/** BAD_LOG_MS: malformed messages of one connection are logged at most this often (with their count). */
const BAD_LOG_MS = 10_000;


/** FAILED_RATE / FAILED_BURST: failed agent connections allowed per address (10 a minute, bursts of 20). */
const FAILED_RATE = 10 / 60;
const FAILED_BURST = 20;

/** tokenMatches compares bearer tokens in constant time. */
export function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? "");
  if (m?.[1] === undefined) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * An AgentGateway accepts agent WebSockets on /agent: the token is checked before the upgrade completes (401
 * otherwise), every message is validated against core's wire schema, and a bad message closes only that socket
 * with 1008 and a logged reason.
 */
export class AgentGateway {
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD_BYTES });
  readonly #alive = new WeakMap<WebSocket, boolean>();
  readonly #ping: NodeJS.Timeout;
  /** The open socket of each node, for commands. */
  readonly #byNode = new Map<string, WebSocket>();
  /** Listeners of command results (probe-result, command-done), by command id. */
  readonly #results = new Map<string, (m: Extract<AgentMessage, { type: "probe-result" | "command-done" }>) => void>();

  /** Failed attempts per address (rate-limited: a token cannot be guessed at network speed). */
  readonly #failures = new FailureLimiter(FAILED_RATE, FAILED_BURST);

  constructor(
    readonly hub: Hub,
    readonly token: string | null,
    readonly logger: Logger,
    readonly metrics?: HubMetrics,
    /** Validates a token that is not the shared one (a ServiceAccount token, by TokenReview). */
    readonly reviewer?: (token: string) => Promise<{ ok: boolean; why: string }>,
  ) {
    this.#ping = setInterval(() => {
      for (const ws of this.#wss.clients) {
        if (this.#alive.get(ws) === false) {
          ws.terminate();
          continue;
        }
        this.#alive.set(ws, false);
        ws.ping();
        // Heartbeats both ways (issue 4): the agent takes 30 s without a word from the hub as a dead link.
        ws.send(JSON.stringify({ v: WIRE_VERSION, type: "heartbeat", t: Date.now() }));
      }
    }, PING_MS);
    this.#ping.unref();
  }

  /** handleUpgrade takes an HTTP upgrade for AGENT_PATH. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const peer = peerAddress(req);
    const now = Date.now();
    // The shared token is checked first (constant time, no I/O); an address that keeps failing is then refused
    // before anything else, TokenReview included.
    if (this.token !== null && tokenMatches(req.headers.authorization, this.token)) return this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, peer));
    if (!this.#failures.allowed(peer, now)) {
      this.logger.warn("agent.throttled", { peer, hint: "too many failed connections from this address: wait a minute" });
      this.metrics?.rejected.inc({ reason: "throttled" });
      socket.end("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 60\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const review = bearer === undefined || this.reviewer === undefined ? Promise.resolve({ ok: false, why: "no valid token" }) : this.reviewer(bearer);
    void review
      .catch((e: unknown) => ({ ok: false, why: `TokenReview failed: ${(e as Error).message}` }))
      .then((r) => {
        if (socket.destroyed) return;
        if (r.ok) return this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, peer));
        this.#failures.fail(peer, Date.now());
        this.logger.warn("agent.unauthorized", { peer, reason: r.why });
        this.metrics?.rejected.inc({ reason: "unauthorized" });
        socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      });
  }

  #accept(ws: WebSocket, peer: string): void {
    let node: string | null = null;
    const bucket = new TokenBucket(RATE_PER_SECOND, RATE_BURST, Date.now());
    const bad = { count: 0, told: 0, loggedAt: -Infinity };
    this.#alive.set(ws, true);
    ws.on("pong", () => this.#alive.set(ws, true));
    ws.on("message", (data: Buffer, isBinary) => {
      // Frames already on the wire after a refusal are dropped, not judged (and counted) again.
      if (ws.readyState !== ws.OPEN) return;
      if (!bucket.take(Date.now())) return this.#refuse(ws, node, peer, `rate limit: more than ${RATE_PER_SECOND} messages/s`);
      // Before hello nothing says who is talking: the connection is refused. After it, a malformed message is dropped
      // and counted, and the agent's good messages around it still count (a newer agent's message, a bit flip...).
      if (isBinary) return node === null ? this.#refuse(ws, node, peer, "binary frames are not part of wire v1") : this.#drop(bad, node, peer, "binary frames are not part of wire v1");
      const msg = parseAgentMessage(data.toString("utf8"));
      if (!msg.ok) return node === null ? this.#refuse(ws, node, peer, msg.message) : this.#drop(bad, node, peer, msg.message);
      const m = msg.value;
      this.metrics?.messages.inc({ type: m.type });
      if (node === null && m.type !== "hello") return this.#refuse(ws, node, peer, "first message must be hello");
      switch (m.type) {
        case "hello":
          if (node !== null) return this.#refuse(ws, node, peer, "hello sent twice");
          node = m.node;
          this.#byNode.set(node, ws);
          this.hub.connect(m);
          ws.send(JSON.stringify({ v: WIRE_VERSION, type: "welcome", hubVersion: "0.1.0" }));
          this.logger.info("agent.connected", { node, peer, version: m.agentVersion, interfaces: m.interfaces.length });
          return;
        case "observations":
          if (node !== null) this.hub.observe(node, m);
          return;
        case "heartbeat":
          if (node !== null) this.hub.heartbeat(node);
          return;
        case "facts":
          if (node !== null && m.facts.node !== node) return this.#refuse(ws, node, peer, `facts for ${m.facts.node} on ${node}'s connection`);
          if (node !== null) this.hub.setFacts(node, m.facts);
          return;
        case "probe-result":
        case "command-done":
          this.#results.get(m.id)?.(m);
          if (m.type === "command-done") this.#results.delete(m.id);
          return;
      }
    });
    ws.on("error", (err) => this.logger.warn("agent.socket_error", { node, peer, message: err.message }));
    ws.on("close", (code) => {
      if (node !== null && this.#byNode.get(node) === ws) this.#byNode.delete(node);
      if (node !== null) this.hub.disconnect(node);
      this.logger.info("agent.disconnected", { node, peer, code });
    });
  }

  /**
   * #drop counts a malformed message of an identified agent and lets the connection live. The log tells the first
   * one, then at most one line per BAD_LOG_MS per connection with the count since, so a flood cannot flood the log.
   */
  #drop(bad: { count: number; told: number; loggedAt: number }, node: string, peer: string, reason: string): void {
    bad.count++;
    this.metrics?.badMessages.inc({ reason: reason.startsWith("wire: not JSON") ? "not-json" : reason.startsWith("binary") ? "binary" : "invalid" });
    const now = Date.now();
    if (now - bad.loggedAt < BAD_LOG_MS) return;
    this.logger.warn("agent.bad_message", { node, peer, reason, dropped: bad.count - bad.told, hint: "the message was dropped and the connection kept; an agent newer or older than the hub sends this (compare versions on the Nodes page)" });
    bad.loggedAt = now;
    bad.told = bad.count;
  }

  #refuse(ws: WebSocket, node: string | null, peer: string, reason: string): void {
    this.logger.warn("agent.bad_message", { node, peer, reason });
    this.metrics?.rejected.inc({ reason: reason.startsWith("rate limit") ? "rate-limit" : "bad-message" });
    ws.close(1008, reason.slice(0, 120));
  }

  /**
   * command sends an announce or probe to one node's agent; results come to `onResult` until command-done. Returns
   * false when the node has no agent connected.
   */
  command(node: string, msg: Extract<HubMessage, { type: "announce" | "probe" }>, onResult: (m: Extract<AgentMessage, { type: "probe-result" | "command-done" }>) => void): boolean {
    const ws = this.#byNode.get(node);
    if (ws === undefined) return false;
    this.#results.set(msg.id, onResult);
    ws.send(JSON.stringify(msg));
    return true;
  }

  /** close tells agents the hub is going away (1001) so they reconnect to the next one. */
  close(): void {
    clearInterval(this.#ping);
    for (const ws of this.#wss.clients) ws.close(1001, "hub shutting down");
    this.#wss.close();
  }
}
