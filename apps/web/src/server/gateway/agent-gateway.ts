import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import {
  CLOSE_NODE_TAKEN,
  CLOSE_REPLACED,
  CLOSE_WRONG_CLUSTER,
  WIRE_VERSION,
  parseAgentMessage,
  type CommandResult,
  type EvidenceAnswer,
  type EvidenceRequest,
  type HubCommand,
  type ParseFailure,
} from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import { limitKey, peerAddress, type ClientAddresses } from "../client-address.js";
import { AttemptLimiter, TokenBucket } from "../limits.js";
import { Awaited } from "./awaited.js";
import { tokenMatches, type AgentIdentity, type Review } from "./credentials.js";
import { AgentPace, DEFAULT_AGENT_LIMITS, FactsPacer, NewIpBudget, type AgentLimits } from "./pacing.js";
import { LogThrottle } from "../log-throttle.js";
import type { HubMetrics } from "../metrics.js";
import type { Logger } from "@whohas/core";

/** FLUSH_GAP_MS: a node's agent is asked to send what it holds at most this often. */
const FLUSH_GAP_MS = 20;
const FLUSH = JSON.stringify({ v: WIRE_VERSION, type: "flush" });

/** AGENT_PATH is where agents connect. */
export const AGENT_PATH = "/agent";
/** MAX_PAYLOAD_BYTES bounds one agent message: 1,000 aggregates of ~250 bytes fit with room to spare. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;
/**
 * PING_MS: the hub pings and heartbeats each agent this often; one from which neither a pong nor a message came in
 * that time is dropped.
 */
export const PING_MS = 10_000;

/**
 * RATE_PER_SECOND / RATE_BURST bound what one agent may send: it flushes every 100 ms, sends news early at most every
 * 20 ms, is asked to send at most every 20 ms (FLUSH_GAP_MS) and heartbeats every 10 s: at most about 110 messages a
 * second. 200 a second with bursts of 400 leave room for probes and reconnect catch-up, and stop a broken or hostile
 * agent from starving the others.
 */
export const RATE_PER_SECOND = 200;
export const RATE_BURST = 400;

/** BAD_LOG_MS: malformed messages of one connection are logged at most this often (with their count). */
const BAD_LOG_MS = 10_000;

/** NEW_IP_LOG_MS: an agent's new IPs dropped at its limit are logged at most this often (with their count). */
const NEW_IP_LOG_MS = 60_000;

/**
 * FACTS_EVERY_MS: an agent's facts are taken at most this often (it sends them every 10 s and on change); a newer
 * report arriving sooner waits, and only the latest is kept.
 */
export const FACTS_EVERY_MS = 5_000;

/** FAILED_RATE / FAILED_BURST: failed agent connections allowed per address (10 a minute, bursts of 20). */
const FAILED_RATE = 10 / 60;
const FAILED_BURST = 20;

export interface AgentGatewayOptions {
  readonly hub: Hub;
  /** The shared token; null when agents sign in with ServiceAccount tokens only. */
  readonly token: string | null;
  readonly logger: Logger;
  readonly metrics?: HubMetrics;
  /** Reviews a token that is not the shared one (a ServiceAccount token, by TokenReview). */
  readonly reviewer?: (token: string) => Promise<Review>;
  /** Who a request comes from (behind trusted proxies), for the failed-connection limit. */
  readonly clients?: ClientAddresses;
  readonly limits?: Partial<AgentLimits>;
  /** Take agents that come through a proxy (off: an Ingress in front of the dashboard cannot publish /agent). */
  readonly allowProxied?: boolean;
  /** How often a node's facts are taken at most (FACTS_EVERY_MS; tests shorten it). */
  readonly factsEveryMs?: number;
  /** How often agents are pinged (PING_MS; tests shorten it). */
  readonly pingMs?: number;
  /** How long the agents' pace holds before it may get faster (PACE_HOLD_MS; tests shorten it). */
  readonly paceHoldMs?: number;
}

interface Live {
  readonly ws: WebSocket;
  readonly peer: string;
  readonly since: number;
}

interface Refusal {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

/**
 * An AgentGateway accepts agent WebSockets on /agent. The credential is checked before the upgrade completes (401
 * otherwise); the hello then binds the connection to one node: the node a ServiceAccount token is bound to, a Node
 * of the cluster when Kubernetes is known, and one live connection per node. Every message is validated against
 * core's wire schema; commands' results are taken only from the connection the command went to.
 */
export class AgentGateway {
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD_BYTES });
  readonly #alive = new WeakMap<WebSocket, boolean>();
  readonly #ping: NodeJS.Timeout;
  /** The live connection of each node, for commands. */
  readonly #byNode = new Map<string, Live>();
  /** When each node's agent was last asked to send what it holds. */
  readonly #flushAsked = new Map<string, number>();
  /** Command results and evidence answers waited for, each from the connection it went to. */
  readonly #awaited = new Awaited();
  /** Connection attempts per client address, counted before the token is checked, given back when it passes. */
  readonly #attempts = new AttemptLimiter(FAILED_RATE, FAILED_BURST);
  readonly #limits: AgentLimits;
  readonly #noisy: LogThrottle;
  readonly #newIps: NewIpBudget;
  readonly #facts: FactsPacer;
  readonly #pace: AgentPace;
  readonly hub: Hub;
  readonly logger: Logger;

  constructor(readonly o: AgentGatewayOptions) {
    this.hub = o.hub;
    this.logger = o.logger;
    this.#limits = { ...DEFAULT_AGENT_LIMITS, ...o.limits };
    this.#noisy = new LogThrottle(o.logger);
    this.#newIps = new NewIpBudget(
      this.#limits.newIpsPerAgentPerMinute,
      this.#limits.newIpsPerMinute,
      (ip) => o.hub.tracksIp(ip),
      Date.now(),
    );
    this.#facts = new FactsPacer(o.factsEveryMs ?? FACTS_EVERY_MS, (node, facts) => this.#byNode.has(node) && o.hub.setFacts(node, facts));
    this.#pace = new AgentPace(
      this.#limits.agentMessagesPerSecond,
      (flushMs, agents) => {
        o.metrics?.agentFlushSeconds.set(flushMs / 1000);
        o.logger.info("agents.pace", { flushMs, agents });
      },
      o.paceHoldMs,
    );
    o.metrics?.agentFlushSeconds.set(this.#pace.flushMs / 1000);
    const pingMs = o.pingMs ?? PING_MS;
    this.#ping = setInterval(() => {
      // A hub too busy to read what its agents sent has not heard their pongs either: no one is dropped this round.
      const now = this.hub.clock();
      const deaf = this.hub.agents.load.saturated(now - pingMs, now);
      for (const ws of this.#wss.clients) {
        if (this.#alive.get(ws) === false && !deaf) {
          ws.terminate();
          continue;
        }
        this.#alive.set(ws, false);
        ws.ping();
        // Heartbeats both ways: the agent takes 30 s without a word from the hub as a dead link.
        ws.send(JSON.stringify({ v: WIRE_VERSION, type: "heartbeat", t: Date.now() }));
      }
      // Allowances of nodes gone and refilled are forgotten (a new one starts full anyway).
      this.#newIps.forget((node) => this.#byNode.has(node), Date.now());
    }, pingMs);
    this.#ping.unref();
  }

  /** handleUpgrade takes an HTTP upgrade for AGENT_PATH. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const peer = this.o.clients?.of(req) ?? peerAddress(req);
    if (this.o.allowProxied !== true && ["x-forwarded-for", "forwarded", "x-real-ip"].some((h) => req.headers[h] !== undefined)) {
      this.#noisy.warn("agent.proxied", limitKey(peer), {
        peer,
        hint: "an agent connection came through a proxy (an Ingress?): agents connect to the hub's Service directly; set agents.allowProxied if a proxy in front of the agents is intended",
      });
      this.o.metrics?.rejected.inc({ reason: "proxied" });
      const body = "agents connect directly, not through a proxy (agents.allowProxied)\n";
      socket.end(
        `HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      return;
    }
    // The shared token is checked first (constant time, no I/O); any other credential is an attempt counted against
    // the address before it is reviewed, so parallel guesses cannot all reach TokenReview.
    if (this.o.token !== null && tokenMatches(req.headers.authorization, this.o.token))
      return this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, peer, { via: "shared-token" }));
    if (!this.#attempts.take(limitKey(peer), Date.now())) {
      this.#noisy.warn("agent.throttled", limitKey(peer), { peer, hint: "too many failed connections from this address: wait a minute" });
      this.o.metrics?.rejected.inc({ reason: "throttled" });
      socket.end("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 60\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    const review: Promise<Review> =
      bearer === undefined || this.o.reviewer === undefined
        ? Promise.resolve({ ok: false, why: "no valid token" })
        : this.o.reviewer(bearer);
    void review
      .catch((e: unknown): Review => ({ ok: false, why: `TokenReview failed: ${(e as Error).message}` }))
      .then((r) => {
        if (socket.destroyed) return;
        if (r.ok) {
          this.#attempts.succeeded(limitKey(peer));
          return this.#wss.handleUpgrade(req, socket, head, (ws) => this.#accept(ws, peer, { via: "service-account", node: r.node }));
        }
        this.#noisy.warn("agent.unauthorized", limitKey(peer), { peer, reason: r.why });
        this.o.metrics?.rejected.inc({ reason: "unauthorized" });
        socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      });
  }

  /**
   * #admit decides whether a hello for `node` may bind this connection, and makes room for it: a newer connection
   * proved to be the same node's takes the old one's place; with the shared token the first one keeps it.
   */
  #admit(node: string, cluster: string | undefined, identity: AgentIdentity, peer: string): Refusal | null {
    if (cluster !== undefined && cluster !== this.hub.clusterName)
      return {
        code: CLOSE_WRONG_CLUSTER,
        reason: "wrong-cluster",
        message: `this hub watches cluster ${this.hub.clusterName}, the agent ${cluster}`,
      };
    if (identity.via === "service-account" && identity.node !== node)
      return { code: 1008, reason: "node-mismatch", message: `hello names ${node} but the token is bound to a Pod on ${identity.node}` };
    if (this.hub.nodeKnown(node) === false)
      return {
        code: 1008,
        reason: "unknown-node",
        message: `${node} is not a Node of this cluster: check the agent's --node (NODE_NAME from spec.nodeName)`,
      };
    const live = this.#byNode.get(node);
    if (live !== undefined) {
      if (identity.via === "service-account") {
        this.logger.info("agent.replaced", { node, old: live.peer, peer });
        live.ws.close(CLOSE_REPLACED, "replaced by a newer connection of the same node");
        this.#byNode.delete(node);
        this.hub.disconnect(node);
      } else {
        const since = new Date(live.since).toISOString();
        return {
          code: CLOSE_NODE_TAKEN,
          reason: "node-taken",
          message: `${node} already has a live agent connection (from ${live.peer} since ${since}): two agents claim this node name, or the old connection is dead and the hub drops it within ${(2 * PING_MS) / 1000} s`,
        };
      }
    }
    // At the limit, the agent dead the longest makes room (it registers again when it comes back).
    if (!this.hub.hasAgent(node) && this.hub.agentCount() >= this.#limits.maxAgents && !this.hub.makeRoom()) {
      return {
        code: 1008,
        reason: "max-agents",
        message: `the hub knows ${this.hub.agentCount()} nodes, none down long enough to make room (limits.maxAgents ${this.#limits.maxAgents}): raise it if this cluster is really this large`,
      };
    }
    return null;
  }

  #accept(ws: WebSocket, peer: string, identity: AgentIdentity): void {
    let node: string | null = null;
    const bucket = new TokenBucket(RATE_PER_SECOND, RATE_BURST, Date.now());
    const newIpDrops = { count: 0, told: 0, loggedAt: -Infinity };
    const bad = { count: 0, told: 0, loggedAt: -Infinity };
    this.#alive.set(ws, true);
    ws.on("pong", () => this.#alive.set(ws, true));
    ws.on("message", (data: Buffer, isBinary) => {
      // Frames already on the wire after a refusal are dropped, not judged (and counted) again.
      if (ws.readyState !== ws.OPEN) return;
      // A message is as good a sign of life as a pong: a hub too busy to read its sockets in time reads the pong
      // after the messages queued before it, and must not drop a live agent (and report its IPs unseen) for that.
      this.#alive.set(ws, true);
      if (!bucket.take(Date.now()))
        return this.#refuse(ws, node, peer, `rate limit: more than ${RATE_PER_SECOND} messages/s`, "rate-limit");
      // Before hello nothing says who is talking: the connection is refused. After it, a malformed message is dropped
      // and counted, and the agent's good messages around it still count (a newer agent's message, a bit flip...).
      if (isBinary)
        return node === null
          ? this.#refuse(ws, node, peer, "binary frames are not part of the wire protocol")
          : this.#drop(bad, node, peer, "binary", "binary frames are not part of the wire protocol");
      const msg = parseAgentMessage(data.toString("utf8"));
      if (!msg.ok) return node === null ? this.#refuse(ws, node, peer, msg.message) : this.#drop(bad, node, peer, msg.reason, msg.message);
      const m = msg.value;
      this.o.metrics?.messages.inc({ type: m.type });
      if (node === null && m.type !== "hello") return this.#refuse(ws, node, peer, "first message must be hello");
      switch (m.type) {
        case "hello": {
          if (node !== null) return this.#refuse(ws, node, peer, "hello sent twice");
          const refused = this.#admit(m.node, m.cluster, identity, peer);
          if (refused !== null) {
            this.logger.warn("agent.refused", { node: m.node, peer, via: identity.via, reason: refused.reason, message: refused.message });
            this.o.metrics?.rejected.inc({ reason: refused.reason });
            ws.close(refused.code, refused.message.slice(0, 120));
            return;
          }
          node = m.node;
          this.#byNode.set(node, { ws, peer, since: Date.now() });
          this.hub.connect(m);
          ws.send(JSON.stringify({ v: WIRE_VERSION, type: "welcome", hubVersion: "0.1.0" }));
          this.#pace.joined(ws, m.pace === true, this.#byNode.size);
          this.logger.info("agent.connected", { node, peer, via: identity.via, version: m.agentVersion, interfaces: m.interfaces.length });
          return;
        }
        case "observations": {
          if (node === null) return;
          const admitted = this.#newIps.admit(node, m, Date.now());
          const dropped = m.entries.length - admitted.entries.length + m.requests.length - admitted.requests.length;
          if (dropped > 0) this.#droppedNewIps(newIpDrops, node, peer, dropped);
          for (const other of this.hub.observe(node, admitted)) this.#askToFlush(other);
          return;
        }
        case "heartbeat":
          if (node !== null) this.hub.heartbeat(node);
          return;
        case "facts":
          if (node !== null && m.facts.node !== node)
            return this.#refuse(ws, node, peer, `facts for ${m.facts.node} on ${node}'s connection`);
          if (node !== null) this.#facts.offer(node, m.facts);
          return;
        case "probe-result":
        case "probe-many-result":
        case "command-done":
          if (!this.#awaited.takeResult(m, ws))
            this.#drop(bad, node ?? "", peer, "foreign-result", `${m.type} for a command this connection was not sent`);
          return;
        case "evidence":
          if (!this.#awaited.takeAnswer(m, ws))
            this.#drop(bad, node ?? "", peer, "foreign-result", "evidence for a request this connection was not sent");
          return;
      }
    });
    ws.on("error", (err) => this.logger.warn("agent.socket_error", { node, peer, message: err.message }));
    ws.on("close", (code) => {
      if (node !== null && this.#byNode.get(node)?.ws === ws) {
        this.#byNode.delete(node);
        this.hub.disconnect(node);
      }
      this.#pace.left(ws, this.#byNode.size);
      this.#awaited.closed(ws);
      if (node !== null && !this.#byNode.has(node)) {
        this.#facts.drop(node);
        this.#flushAsked.delete(node);
      }
      this.logger.info("agent.disconnected", { node, peer, code });
    });
  }

  #droppedNewIps(drops: { count: number; told: number; loggedAt: number }, node: string, peer: string, n: number): void {
    drops.count += n;
    this.o.metrics?.newIpsDropped.inc(n);
    const now = Date.now();
    if (now - drops.loggedAt < NEW_IP_LOG_MS) return;
    this.logger.warn("agent.new_ips_limited", {
      node,
      peer,
      dropped: drops.count - drops.told,
      limit: this.#limits.newIpsPerAgentPerMinute,
      hint: "this agent reported more new IPs in a minute than limits.newIpsPerAgentPerMinute: raise it for a very large network, or check the agent",
    });
    drops.loggedAt = now;
    drops.told = drops.count;
  }

  /**
   * #drop counts a malformed message of an identified agent and lets the connection live. The log tells the first
   * one, then at most one line per BAD_LOG_MS per connection with the count since, so a flood cannot flood the log.
   */
  #drop(
    bad: { count: number; told: number; loggedAt: number },
    node: string,
    peer: string,
    kind: ParseFailure["reason"] | "binary" | "foreign-result",
    reason: string,
  ): void {
    bad.count++;
    this.o.metrics?.badMessages.inc({ reason: kind });
    const now = Date.now();
    if (now - bad.loggedAt < BAD_LOG_MS) return;
    this.logger.warn("agent.bad_message", {
      node,
      peer,
      reason,
      dropped: bad.count - bad.told,
      hint: "the message was dropped and the connection kept; an agent newer or older than the hub sends this (compare versions on the Nodes page)",
    });
    bad.loggedAt = now;
    bad.told = bad.count;
  }

  #refuse(ws: WebSocket, node: string | null, peer: string, reason: string, kind: "rate-limit" | "bad-message" = "bad-message"): void {
    this.logger.warn("agent.bad_message", { node, peer, reason });
    this.o.metrics?.rejected.inc({ reason: kind });
    ws.close(1008, reason.slice(0, 120));
  }

  /**
   * #askToFlush asks `node`'s agent to send what it holds now: another node's report brought news its reports of the
   * same requests complete. At most once per FLUSH_GAP_MS a node: news comes in bursts.
   */
  #askToFlush(node: string): void {
    const live = this.#byNode.get(node);
    // Monotonic: a wall clock stepped back would stop the asking for as long.
    const now = performance.now();
    if (live === undefined || now - (this.#flushAsked.get(node) ?? -Infinity) < FLUSH_GAP_MS) return;
    this.#flushAsked.set(node, now);
    this.o.metrics?.flushesAsked.inc();
    live.ws.send(FLUSH);
  }

  /**
   * command sends an announce, probe or probe-many to one node's agent; results come to `onResult` until command-done, from
   * that connection only. Returns false when the node has no agent connected.
   */
  command(node: string, msg: HubCommand, onResult: (m: CommandResult) => void): boolean {
    const live = this.#byNode.get(node);
    if (live === undefined) return false;
    this.#awaited.results(msg.id, live.ws, onResult);
    live.ws.send(JSON.stringify(msg));
    return true;
  }

  /** abandon stops waiting for a command's results (its sender gave up on an agent that never said it was done). */
  abandon(id: string): void {
    this.#awaited.abandon(id);
  }

  /**
   * askEvidence sends an evidence-request to one node's agent; its answer, from that connection only, goes to
   * `onAnswer` (null: the connection closed first). Returns a function that stops waiting, or null when the node has
   * no agent connected.
   */
  askEvidence(node: string, msg: EvidenceRequest, onAnswer: (m: EvidenceAnswer | null) => void): (() => void) | null {
    const live = this.#byNode.get(node);
    if (live === undefined) return null;
    const stop = this.#awaited.answer(msg.id, live.ws, onAnswer);
    live.ws.send(JSON.stringify(msg));
    return stop;
  }

  /** terminate drops every agent connection at once (tests; a hub that is going away uses close). */
  terminate(): void {
    clearInterval(this.#ping);
    for (const ws of this.#wss.clients) ws.terminate();
    this.#wss.close();
  }

  /** close tells agents the hub is going away (1001) so they reconnect to the next one. */
  close(): void {
    clearInterval(this.#ping);
    for (const ws of this.#wss.clients) ws.close(1001, "hub shutting down");
    this.#wss.close();
  }
}
