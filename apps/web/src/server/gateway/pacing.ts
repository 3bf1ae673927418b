import type { WebSocket } from "ws";
import { FLUSH_MS, PACE_MESSAGES_PER_SECOND, WIRE_VERSION, flushPace, ipKey, type AgentMessage, type NodeFacts } from "@whohas/core";
import { TokenBucket } from "../limits.js";

type Observations = Extract<AgentMessage, { type: "observations" }>;

/** AgentLimits bound what agents can make the hub hold (config `limits`). */
export interface AgentLimits {
  /** Distinct nodes the hub registers at most; a hello for one more is refused. */
  readonly maxAgents: number;
  /**
   * IPs the hub did not know that one node's agent may bring in a minute (across its reconnects); the rest of its
   * entries for new IPs are dropped.
   */
  readonly newIpsPerAgentPerMinute: number;
  /** The same, for all agents together. */
  readonly newIpsPerMinute: number;
  /**
   * The agents' periodic messages a second, all told, that their pace aims at (flushPace): past it agents send less
   * often, with more in each message. News goes out at once whatever the pace.
   */
  readonly agentMessagesPerSecond: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = {
  maxAgents: 5000,
  newIpsPerAgentPerMinute: 2000,
  newIpsPerMinute: 10_000,
  agentMessagesPerSecond: PACE_MESSAGES_PER_SECOND,
};

/**
 * NewIpBudget bounds the IPs agents bring that the hub did not track: each node has an allowance per minute that
 * survives its reconnects (a node cannot reset it by reconnecting), and all agents together have one more. An entry
 * or request report for a tracked IP always passes; one for a new IP passes while both allowances last.
 */
export class NewIpBudget {
  readonly #perNode = new Map<string, TokenBucket>();
  readonly #all: TokenBucket;

  constructor(
    readonly perNodePerMinute: number,
    readonly allPerMinute: number,
    readonly tracks: (ip: string) => boolean,
    now: number,
  ) {
    this.#all = new TokenBucket(allPerMinute / 60, allPerMinute, now);
  }

  /** admit keeps what `node` may bring of `m`; the same message when all of it passes. */
  admit(node: string, m: Observations, now: number): Observations {
    // Mostly every IP of a message is one the hub already tracks: that takes one lookup each, nothing made.
    if (m.entries.every((e) => this.tracks(ipKey(e.ip, e.vlan))) && m.requests.every((r) => this.tracks(ipKey(r.ip, r.vlan)))) return m;
    let mine = this.#perNode.get(node);
    if (mine === undefined) this.#perNode.set(node, (mine = new TokenBucket(this.perNodePerMinute / 60, this.perNodePerMinute, now)));
    const allowance = mine;
    const decided = new Map<string, boolean>();
    const ok = (ip: string): boolean => {
      let yes = decided.get(ip);
      if (yes === undefined) {
        yes = this.tracks(ip) || (allowance.peek(now) && this.#all.take(now) && allowance.take(now));
        decided.set(ip, yes);
      }
      return yes;
    };
    const entries = m.entries.filter((e) => ok(ipKey(e.ip, e.vlan)));
    const requests = m.requests.filter((r) => ok(ipKey(r.ip, r.vlan)));
    return entries.length === m.entries.length && requests.length === m.requests.length ? m : { ...m, entries, requests };
  }

  /** forget drops the allowances of nodes not `live` that have refilled (a new one would start full anyway). */
  forget(live: (node: string) => boolean, now: number): void {
    for (const [node, b] of this.#perNode) if (!live(node) && b.full(now)) this.#perNode.delete(node);
  }
}

/**
 * FactsPacer hands each node's facts on at most every `everyMs` (an agent sends them every 10 s and on change); a
 * report that comes sooner waits, and only the latest of those is handed on.
 */
export class FactsPacer {
  readonly #nodes = new Map<string, { at: number; pending: NodeFacts | null; timer: NodeJS.Timeout | null }>();

  constructor(
    readonly everyMs: number,
    readonly take: (node: string, facts: NodeFacts) => void,
  ) {}

  offer(node: string, facts: NodeFacts): void {
    const now = Date.now();
    let s = this.#nodes.get(node);
    if (s === undefined) this.#nodes.set(node, (s = { at: -Infinity, pending: null, timer: null }));
    const state = s;
    if (now - state.at >= this.everyMs) {
      state.at = now;
      this.take(node, facts);
      return;
    }
    state.pending = facts;
    state.timer ??= setTimeout(
      () => {
        state.timer = null;
        const latest = state.pending;
        state.pending = null;
        state.at = Date.now();
        if (latest !== null) this.take(node, latest);
      },
      this.everyMs - (now - state.at),
    );
    state.timer.unref();
  }

  /** drop forgets a node that left (what waited for it is not handed on). */
  drop(node: string): void {
    const s = this.#nodes.get(node);
    if (s?.timer != null) clearTimeout(s.timer);
    this.#nodes.delete(node);
  }
}

/**
 * PACE_HOLD_MS: a pace holds this long before it may get faster. A slower one is taken at once (it only lightens the
 * hub); agents joining and leaving, however often, change the pace at most twice in this time, and the hub tells
 * every agent as often.
 */
export const PACE_HOLD_MS = 30_000;

/**
 * AgentPace sets how often agents send what they aggregated (flushPace) by how many are connected, and tells those
 * whose hello takes a pace: each one after its welcome, and all of them when the pace changes. Agents of before it
 * keep sending every FLUSH_MS (they count, as they send).
 */
export class AgentPace {
  readonly #takers = new Set<WebSocket>();
  #flushMs = FLUSH_MS;
  #changedAt = -Infinity;

  constructor(
    /** The periodic messages a second, all told, the pace aims at (limits.agentMessagesPerSecond). */
    readonly perSecond: number,
    readonly onChange?: (flushMs: number, agents: number) => void,
    readonly holdMs: number = PACE_HOLD_MS,
    readonly clock: () => number = () => performance.now(),
  ) {}

  /** flushMs is the pace in force. */
  get flushMs(): number {
    return this.#flushMs;
  }

  /** joined: an agent was welcomed; `agents` are connected now, it included. */
  joined(ws: WebSocket, takesPace: boolean, agents: number): void {
    if (takesPace) this.#takers.add(ws);
    if (!this.#update(agents) && takesPace) this.#tell(ws);
  }

  /** left: an agent's connection closed; `agents` are connected now. */
  left(ws: WebSocket, agents: number): void {
    this.#takers.delete(ws);
    this.#update(agents);
  }

  /** #update takes the pace for `agents` and tells every agent that takes one when it changed; true when it did. */
  #update(agents: number): boolean {
    const next = flushPace(agents, this.#flushMs, this.perSecond);
    if (next === this.#flushMs) return false;
    const now = this.clock();
    if (next < this.#flushMs && now - this.#changedAt < this.holdMs) return false;
    this.#changedAt = now;
    this.#flushMs = next;
    this.onChange?.(next, agents);
    const text = this.#text();
    for (const ws of this.#takers) this.#tell(ws, text);
    return true;
  }

  /** #text is the pace message, written once for every agent it goes to. */
  #text(): string {
    return JSON.stringify({ v: WIRE_VERSION, type: "pace", flushMs: this.#flushMs });
  }

  #tell(ws: WebSocket, text = this.#text()): void {
    if (ws.readyState === ws.OPEN) ws.send(text);
  }
}
