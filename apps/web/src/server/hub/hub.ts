import { EventEmitter } from "node:events";
import { IpTable, type AgentMessage, type InterfaceInfo, type IpView, type NodeFacts } from "@whohas/core";

/** AGENT_SILENCE_MS: an agent silent this long is shown as down (issue 4: within 30 s). */
export const AGENT_SILENCE_MS = 30_000;

type Hello = Extract<AgentMessage, { type: "hello" }>;
type Observations = Extract<AgentMessage, { type: "observations" }>;

/** An AgentView is one node's agent as the dashboard shows it. */
export interface AgentView {
  readonly node: string;
  readonly version: string;
  readonly connected: boolean;
  readonly up: boolean;
  readonly lastSeen: number;
  readonly interfaces: readonly InterfaceInfo[];
  /** Aggregates the agent reported dropped (its buffer was full while the hub was away). */
  readonly dropped: number;
  /** The node's last reported facts (sysctls, kube-ipvs0, capture statistics), null until the first report. */
  readonly facts: NodeFacts | null;
}

interface AgentRecord {
  node: string;
  version: string;
  interfaces: InterfaceInfo[];
  connections: number;
  lastSeen: number;
  dropped: number;
  facts: NodeFacts | null;
}

/**
 * A Hub holds what every agent reported and turns it into per-IP views. It does no I/O: the gateway feeds it
 * messages, the API reads it, and `changes()` tells subscribers when to look again.
 */
export class Hub {
  readonly #table = new IpTable();
  readonly #agents = new Map<string, AgentRecord>();
  readonly #macToNode = new Map<string, string>();
  readonly #events = new EventEmitter<{ change: [] }>();

  constructor(readonly clock: () => number = Date.now) {
    this.#events.setMaxListeners(0);
  }

  /** connect registers an agent's hello; the same node may reconnect before its old socket is noticed closed. */
  connect(hello: Hello): void {
    const now = this.clock();
    const rec = this.#agents.get(hello.node);
    if (rec === undefined) {
      this.#agents.set(hello.node, { node: hello.node, version: hello.agentVersion, interfaces: hello.interfaces, connections: 1, lastSeen: now, dropped: 0, facts: null });
    } else {
      Object.assign(rec, { version: hello.agentVersion, interfaces: hello.interfaces, lastSeen: now });
      rec.connections++;
    }
    for (const i of hello.interfaces) this.#macToNode.set(i.mac, hello.node);
    this.#emit();
  }

  /** disconnect notes that one of a node's sockets closed. */
  disconnect(node: string): void {
    const rec = this.#agents.get(node);
    if (rec === undefined) return;
    rec.connections = Math.max(0, rec.connections - 1);
    this.#emit();
  }

  /** heartbeat notes that `node` is alive. */
  heartbeat(node: string): void {
    const rec = this.#agents.get(node);
    if (rec !== undefined) rec.lastSeen = this.clock();
  }

  /** setFacts stores what an agent reports of its node. */
  setFacts(node: string, facts: NodeFacts): void {
    const rec = this.#agents.get(node);
    if (rec === undefined) return;
    rec.lastSeen = this.clock();
    rec.facts = facts;
    for (const i of facts.interfaces) this.#macToNode.set(i.mac, node);
    this.#emit();
  }

  /** observe folds one observations message from `node`. */
  observe(node: string, msg: Observations): void {
    const rec = this.#agents.get(node);
    if (rec !== undefined) {
      rec.lastSeen = this.clock();
      rec.dropped += msg.dropped;
    }
    if (this.#table.apply(node, msg.entries).size > 0) this.#emit();
  }

  nodeOfMac = (mac: string): string | null => this.#macToNode.get(mac) ?? null;

  ips(): IpView[] {
    return this.#table.views(this.clock(), this.nodeOfMac);
  }

  ip(ip: string): IpView | null {
    return this.#table.view(ip, this.clock(), this.nodeOfMac);
  }

  agents(): AgentView[] {
    const now = this.clock();
    return [...this.#agents.values()]
      .sort((a, b) => a.node.localeCompare(b.node))
      .map((r) => ({
        node: r.node,
        version: r.version,
        connected: r.connections > 0,
        up: r.connections > 0 && now - r.lastSeen <= AGENT_SILENCE_MS,
        lastSeen: r.lastSeen,
        interfaces: r.interfaces,
        dropped: r.dropped,
        facts: r.facts,
      }));
  }

  /**
   * changes yields once at once, then each time the hub's picture changed, and at least every `tickMs` (views age with
   * time: a MAC stops answering without any new message). Bursts of changes coalesce into one wake-up. Ends when
   * `signal` aborts.
   */
  async *changes(signal: AbortSignal, tickMs = 1000): AsyncGenerator<void> {
    let pending = true;
    let wake: (() => void) | null = null;
    const poke = () => {
      pending = true;
      wake?.();
    };
    // Listen before the first yield so that no change between the two is missed (STYLE 7).
    this.#events.on("change", poke);
    const tick = setInterval(poke, tickMs);
    tick.unref();
    signal.addEventListener("abort", poke);
    try {
      for (;;) {
        if (signal.aborted) return;
        if (!pending) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
          continue;
        }
        pending = false;
        yield;
      }
    } finally {
      this.#events.off("change", poke);
      clearInterval(tick);
      signal.removeEventListener("abort", poke);
    }
  }

  #emit(): void {
    this.#events.emit("change");
  }
}
