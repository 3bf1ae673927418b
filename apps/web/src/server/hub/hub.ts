import { EventEmitter } from "node:events";
import { compareIP } from "@whohas/core";

function join(v: IpView, i: IpInventory | undefined): HubIpView {
  const local = i?.services.some((s) => s.externalTrafficPolicy === "Local") ?? false;
  const endpointNodes = i?.endpointNodes ?? [];
  const silentDropNodes = local
    ? [...new Set(v.responders.filter((r) => r.answering && r.node !== null && !endpointNodes.includes(r.node)).map((r) => r.node ?? ""))].sort()
    : [];
  return { ...v, services: i?.services ?? [], expectedOwner: i?.expectedOwner ?? null, endpointNodes, silentDropNodes };
}
import { IpTable, inventoryByIp, parseKubeProxyConfig, type AgentMessage, type ClusterInput, type InterfaceInfo, type IpInventory, type IpView, type KubeProxyConfig, type NodeFacts } from "@whohas/core";

/** ClusterSource is what the hub reads of Kubernetes (the informers), or nothing in traffic-only mode. */
export interface ClusterSource {
  snapshot(): ClusterInput;
  kubeProxyConfig(): string | null;
  readonly metallb: boolean;
}

/** A HubIpView is an IP as the dashboard shows it: traffic (core's IpView) joined with what the cluster says. */
export interface HubIpView extends IpView {
  readonly services: IpInventory["services"];
  readonly expectedOwner: IpInventory["expectedOwner"];
  /** Nodes hosting a serving endpoint (ETP Local: a responder elsewhere silently drops traffic). */
  readonly endpointNodes: readonly string[];
  /**
   * Answering nodes with no local endpoint of an externalTrafficPolicy Local Service: a client whose cache holds
   * their MAC sends traffic that kube-proxy drops without a word ("it worked for a minute, then timeouts").
   */
  readonly silentDropNodes: readonly string[];
}

/** ClusterSummary answers "am I affected?" at the cluster level. */
export interface ClusterSummary {
  readonly kubernetes: "connected" | "off";
  readonly metallb: boolean;
  /** kube-proxy as configured in ConfigMap kube-system/kube-proxy; null when absent or unreadable. */
  readonly kubeProxy: (KubeProxyConfig & { readonly error: null }) | { readonly error: string } | null;
}

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

  #cluster: ClusterSource | null = null;

  constructor(readonly clock: () => number = Date.now) {
    this.#events.setMaxListeners(0);
  }

  /** setCluster attaches the Kubernetes inventory (null: traffic-only mode). */
  setCluster(source: ClusterSource | null): void {
    this.#cluster = source;
    this.#emit();
  }

  /** clusterChanged tells subscribers that the inventory moved. */
  clusterChanged(): void {
    this.#emit();
  }

  cluster(): ClusterSummary {
    const c = this.#cluster;
    if (c === null) return { kubernetes: "off", metallb: false, kubeProxy: null };
    const text = c.kubeProxyConfig();
    const parsed = text === null ? null : parseKubeProxyConfig(text);
    return {
      kubernetes: "connected",
      metallb: c.metallb,
      kubeProxy: parsed === null ? null : parsed.ok ? { ...parsed.value, error: null } : { error: parsed.message },
    };
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

  /** speakers are the nodes whose agent is up: whohas's stand-in for MetalLB's live speakers in the election. */
  #speakers(): Set<string> {
    const up = this.agents().filter((a) => a.up).map((a) => a.node);
    if (up.length > 0 || this.#cluster === null) return new Set(up);
    return new Set(this.#cluster.snapshot().nodes.map((n) => n.name));
  }

  ips(): HubIpView[] {
    const inv = this.#cluster === null ? new Map<string, IpInventory>() : inventoryByIp(this.#cluster.snapshot(), this.#speakers());
    const out: HubIpView[] = this.#table.views(this.clock(), this.nodeOfMac).map((v) => join(v, inv.get(v.ip)));
    const seen = new Set(out.map((v) => v.ip));
    // LoadBalancer IPs nobody asked for yet still belong on the list.
    for (const [ip, i] of inv) if (!seen.has(ip)) out.push(join({ ip, state: "idle", requests: 0, lastRequest: null, responders: [] }, i));
    return out.sort((a, b) => compareIP(a.ip, b.ip));
  }

  ip(ip: string): HubIpView | null {
    return this.ips().find((v) => v.ip === ip) ?? null;
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
