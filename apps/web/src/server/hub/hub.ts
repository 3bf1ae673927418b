import { DEFAULT_CLUSTER, splitIpKey, type AgentMessage, type NodeArp, type NodeFacts } from "@whohas/core";
import { openSqlite } from "../store/sqlite.js";
import { Store } from "../store/store.js";
import type { StoredAgent } from "../store/agents.js";
import type { TimelinePoint } from "../store/traffic.js";
import { AgentRegistry, type AgentView, type MacConflict } from "./agents.js";
import { ClusterState, type ClusterSource, type ClusterView } from "./cluster.js";
import { Feed } from "./feed.js";
import { Fleet } from "./fleet.js";
import { Judging, type JudgingStart } from "./judging.js";
import { STRICT_ARP_SEEN } from "./node-judging.js";
import { Traffic, type LimitStatus, type TrackingLimits } from "./traffic.js";
import { Views, evidenceOf, rowOf, type HubIpView, type IpRow } from "./views.js";

const NOBODY: readonly string[] = [];
/** MAX_NEWS_LOOKED_AT: the IPs with news of one message looked at for the nodes to ask (the rest wait for the flush). */
const MAX_NEWS_LOOKED_AT = 64;

export type { AgentView, MacConflict } from "./agents.js";
export type { ClusterSource, ClusterView, KubeProxyRollout } from "./cluster.js";
export type { LimitStatus, TrackingLimits } from "./traffic.js";
export type { HubIpView, IpRow } from "./views.js";
export { rowOf };

type Hello = Extract<AgentMessage, { type: "hello" }>;
type Observations = Extract<AgentMessage, { type: "observations" }>;

/** ClusterSummary is the cluster view with the hub's own limits (the Overview shows both). */
export type ClusterSummary = ClusterView & {
  readonly limits: LimitStatus;
  /** The cluster's nodes no live agent watches (no address conflict is judged meanwhile); null without a cluster. */
  readonly unwatchedNodes: readonly string[] | null;
};

export interface HubOptions {
  readonly clock?: () => number;
  /** Where history lives; an in-memory database when absent (tests). */
  readonly store?: Store;
  /** How far back the live view is restored from the store at start. */
  readonly restoreMs?: number;
  /** Bounds of what is tracked in memory (config `limits`). */
  readonly limits?: Partial<TrackingLimits>;
  /** Where a hit limit is told (at most once a minute). */
  readonly onLimit?: (status: LimitStatus) => void;
  /** Where a MAC claimed by two live nodes is told (the first keeps it). */
  readonly onMacConflict?: (c: MacConflict) => void;
  /** Where a write to the store that failed is told (the hub goes on from what it holds in memory). */
  readonly onStoreError?: (what: string, e: Error) => void;
  /** The cluster this hub watches (cluster.name; "default" when absent), and its dashboard's address for the fleet. */
  readonly cluster?: { readonly name: string; readonly url: string | null };
}

/** What a hub starts from: what its store kept of the agents, the incidents open, the traffic and strictARP seen. */
interface Start extends JudgingStart {
  readonly agents: readonly StoredAgent[];
  readonly history: Parameters<Traffic["restore"]>[0];
}

/**
 * The Hub puts its parts together: the agents (registry), the traffic (core's Judge and the per-minute store), the
 * judging (incidents), the cluster, the views, and the feed every change goes out on. The agent gateway writes
 * through it; the API, the alerter and the fix read through it.
 */
export class Hub {
  readonly clock: () => number;
  readonly store: Store;
  readonly feed = new Feed();
  readonly agents: AgentRegistry;
  readonly cluster: ClusterState;
  readonly traffic: Traffic;
  readonly judging: Judging;
  readonly views: Views;
  /** The clusters of the fleet, this one among them. */
  readonly fleet: Fleet;
  readonly #onStoreError: (what: string, e: Error) => void;

  /**
   * open starts a hub on `opts.store` (an in-memory SQLite database when absent: tests), from what the store kept:
   * the agents, the open incidents, the last `restoreMs` of traffic.
   */
  static async open(opts: HubOptions = {}): Promise<Hub> {
    const clock = opts.clock ?? Date.now;
    const now = clock();
    const store = opts.store ?? (await Store.open(openSqlite(":memory:"), now));
    const [agents, open, history, strictArpSeen] = await Promise.all([
      store.agents.list(),
      store.incidents.openAll(),
      store.traffic.aggregates(now - (opts.restoreMs ?? 3_600_000)),
      store.settings.get<boolean>(STRICT_ARP_SEEN),
    ]);
    return new Hub(opts, store, { agents, open, history, strictArpSeen });
  }

  private constructor(opts: HubOptions, store: Store, start: Start) {
    this.clock = opts.clock ?? Date.now;
    this.store = store;
    this.#onStoreError = opts.onStoreError ?? (() => undefined);
    this.agents = new AgentRegistry(this.store.agents, this.feed, this.clock, start.agents, opts.onMacConflict);
    this.cluster = new ClusterState(this.agents, this.feed);
    this.traffic = new Traffic({
      repo: this.store.traffic,
      feed: this.feed,
      clock: this.clock,
      nodeOfMac: this.agents.nodeOfMac,
      mustStay: (ip) => this.#mustStay(ip, this.cluster.inventory()),
      limits: opts.limits,
      onLimit: opts.onLimit,
    });
    this.views = new Views(this.traffic, this.cluster, () => this.judging, this.clock);
    this.judging = new Judging(
      {
        traffic: this.traffic,
        agents: this.agents,
        cluster: this.cluster,
        incidents: this.store.incidents,
        audit: this.store.audit,
        feed: this.feed,
        clock: this.clock,
        evidence: (ip) => evidenceOf(this.views.ip(ip)),
        settings: this.store.settings,
        onStoreError: opts.onStoreError,
      },
      start,
    );
    this.traffic.restore(start.history);
    this.fleet = new Fleet({
      name: opts.cluster?.name ?? DEFAULT_CLUSTER,
      url: opts.cluster?.url ?? null,
      repo: this.store.fleet,
      rows: () => this.views.ips().map(rowOf),
      keys: () => this.views.ipKeys(false),
      shown: () => {
        const inventory = this.cluster.inventory();
        // What the live view always keeps, and any IP several or no MACs answer.
        return (key) => {
          const state = this.judging.lastKey(key)?.state;
          return state === "m" || state === "n" || this.#mustStay(key, inventory);
        };
      },
      row: (key) => {
        const v = this.views.ip(key);
        return v === null ? null : rowOf(v);
      },
      mark: (key) => this.judging.lastKey(key),
      epoch: () => this.cluster.version,
      summary: () => this.summary(),
      openIncidents: async () => (await this.judging.incidents({ open: true })).length,
      agents: () => {
        const all = this.agents.list();
        return { up: all.filter((a) => a.up).length, total: all.length };
      },
      clock: this.clock,
    });
  }

  /** #mustStay: LoadBalancer IPs and IPs with an open incident never leave the live view (nor the fleet's rows). */
  #mustStay(ip: string, inventory: ReadonlyMap<string, unknown>): boolean {
    return inventory.has(splitIpKey(ip).ip) || this.traffic.judge.holds(ip);
  }

  /** clusterName is the cluster this hub watches: its agents say the same, and the fleet lists it so. */
  get clusterName(): string {
    return this.fleet.name;
  }

  // What agents say (the gateway).

  connect(hello: Hello): void {
    this.agents.connect(hello);
  }

  disconnect(node: string): void {
    this.agents.disconnect(node);
  }

  heartbeat(node: string): void {
    this.agents.heard(node);
  }

  setFacts(node: string, facts: NodeFacts): void {
    this.agents.setFacts(node, facts);
    this.feed.publish({ kind: "cluster" });
  }

  /**
   * observe takes one observations message from `node`; what may have changed a verdict at once (a new IP, another
   * MAC answering, an announcement, evidence) is judged at once, the rest on the next round. Returns the other nodes
   * to ask for what they hold now (#completers), none mostly.
   */
  observe(node: string, msg: Observations): readonly string[] {
    this.agents.heard(node, msg.dropped);
    const { urgent, news } = this.traffic.ingest(node, msg);
    if (urgent.size > 0) this.judging.soon(urgent);
    return news.size === 0 ? NOBODY : this.#completers(node, news);
  }

  /**
   * #completers are the other nodes whose agents captured any of the IPs with news and send what they hold when
   * asked: their reports of the same requests complete the news (a second MAC on one request is known only then).
   */
  #completers(node: string, news: ReadonlySet<string>): readonly string[] {
    const flushers = this.agents.flushers;
    if (flushers.size === 0 || (flushers.size === 1 && flushers.has(node))) return NOBODY;
    const out = new Set<string>();
    const take = (n: string) => {
      if (n !== node && flushers.has(n)) out.add(n);
    };
    let looked = 0;
    for (const ip of news) {
      // An agent making news up in every message costs at most this many IPs' lookups a message.
      if (++looked > MAX_NEWS_LOOKED_AT) break;
      this.traffic.judge.counts.eachCapturer(ip, take);
    }
    return out.size === 0 ? NOBODY : [...out];
  }

  hasAgent(node: string): boolean {
    return this.agents.has(node);
  }

  agentCount(): number {
    return this.agents.size;
  }

  /** makeRoom forgets the agent dead the longest, to register a new node at the limit; false when none is dead. */
  makeRoom(): boolean {
    const node = this.agents.longestDead(this.clock());
    const deleted = node === null ? null : this.agents.forget(node);
    deleted?.catch((e: unknown) => this.#onStoreError(`forget agent ${node}`, e as Error));
    return deleted !== null;
  }

  /**
   * forgetStaleAgents forgets the agents silent for longer than `afterMs`, and, in a cluster, the dead agents of nodes
   * that are no longer Nodes; returns the nodes forgotten.
   */
  forgetStaleAgents(afterMs: number): Promise<string[]> {
    return this.agents.forgetStale(this.clock(), afterMs, (node) => this.cluster.nodeKnown(node) === false);
  }

  tracksIp(ip: string): boolean {
    return this.traffic.tracks(ip);
  }

  nodeKnown(node: string): boolean | null {
    return this.cluster.nodeKnown(node);
  }

  /** clusterNodes lists the cluster's Nodes, or null when the hub cannot tell. */
  clusterNodes(): string[] | null {
    return this.cluster.nodeNames();
  }

  nodeOfMac(mac: string): string | null {
    return this.agents.nodeOfMac(mac);
  }

  // The cluster (the informers).

  setCluster(source: ClusterSource | null): void {
    this.cluster.set(source);
  }

  clusterChanged(): void {
    this.cluster.changed();
  }

  // The periodic passes (the scheduler).

  /** tick runs (a slice of) a judging round: see Judging.round. */
  tick(budget = Infinity): void {
    this.judging.round(budget);
  }

  get ticking(): boolean {
    return this.judging.ticking;
  }

  /**
   * flush writes open incidents' latest evidence, agents, and the buffered traffic (all of it when `force`d); forced
   * (at shutdown), it waits for every incident change decided so far to be written too.
   */
  async flush(force = false, maxRows?: number): Promise<number> {
    this.judging.writeEvidence(force);
    if (force) await this.judging.settled();
    return this.store.flush(this.clock(), force, maxRows);
  }

  // Reads.

  ip(ip: string): HubIpView | null {
    return this.views.ip(ip);
  }

  ips(): HubIpView[] {
    return this.views.ips();
  }

  /** ipKeys lists the IPs ips() gives a view of, in the same order, without building the views. */
  ipKeys(): string[] {
    return this.views.ipKeys();
  }

  /** listSnapshot is every IP's row with the event id a live list resumes from (server-rendered pages). */
  listSnapshot(): { id: string; rows: IpRow[] } {
    const seq = this.feed.seq;
    return { id: `${this.feed.bootId}-${seq}`, rows: this.views.ips().map(rowOf) };
  }

  /** summary is the cluster view with the tracking limits (the Overview, the read API's /cluster). */
  summary(): ClusterSummary {
    return { ...this.cluster.view(), limits: this.traffic.limitStatus(), unwatchedNodes: this.judging.unwatchedNodes(this.clock()) };
  }

  /** nodes joins each agent with its node's ARP behaviour (effective arp_ignore / arp_announce, strict or not). */
  nodes(): (AgentView & { readonly arp: NodeArp | null })[] {
    const arp = new Map(this.cluster.view().strictArp.nodes.map((n) => [n.node, n]));
    return this.agents.list().map((a) => ({ ...a, arp: arp.get(a.node) ?? null }));
  }

  /** timeline is one IP's per-minute frames per MAC over [from, to] (the current minute once flushed). */
  timeline(ip: string, from: number, to: number): Promise<TimelinePoint[]> {
    return this.store.traffic.timeline(ip, from, to);
  }

  incidents(q: { open?: boolean; ip?: string; limit?: number } = {}) {
    return this.judging.incidents(q);
  }

  /** incidentCapture says what is stored of an incident's frames (per node), null until its snapshot is taken. */
  incidentCapture(id: number) {
    return this.store.evidence.summary(id);
  }
}
