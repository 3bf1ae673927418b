import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import {
  DEFAULT_MAX_MACS_PER_IP,
  FindingTracker,
  IpTable,
  compareIP,
  inventoryByIp,
  FlipFlopWatch,
  liveFindings,
  nodeFindings,
  subjectNode,
  parseKubeProxyConfig,
  strictArpStatus,
  type AgentMessage,
  type ClusterInput,
  type InterfaceInfo,
  type LiveFinding,
  type NodeArp,
  SPLIT_BRAIN_MS,
  type IpInventory,
  type IpView,
  type KubeProxyConfig,
  type NodeFacts,
  type OpenFinding,
  type StrictArpStatus,
  type Transition,
} from "@whohas/core";
import { openSqlite } from "../store/db.js";
import { Store, WRITE_EVERY_MS, type Incident, type TimelinePoint } from "../store/store.js";

/** KubeProxyRollout is the state of DaemonSet kube-system/kube-proxy, as `kubectl rollout status` judges it. */
export interface KubeProxyRollout {
  readonly generation: number;
  readonly observedGeneration: number;
  readonly desired: number;
  readonly updated: number;
  readonly available: number;
  /** The last `kubectl rollout restart` (RFC 3339), null when never restarted that way. */
  readonly restartedAt: string | null;
  readonly complete: boolean;
}

/** ClusterSource is what the hub reads of Kubernetes (the informers), or nothing in traffic-only mode. */
export interface ClusterSource {
  snapshot(): ClusterInput;
  kubeProxyConfig(): string | null;
  kubeProxyRollout(): KubeProxyRollout | null;
  /** Since when the inventory is out of date (the API server unreachable or refusing), null when in sync. */
  stale?(): { since: number; message: string } | null;
  readonly metallb: boolean;
}

/** A HubIpView is an IP as the dashboard shows it: traffic (core's IpView) joined with what the cluster says. */
export interface HubIpView extends IpView {
  readonly services: IpInventory["services"];
  readonly expectedOwner: IpInventory["expectedOwner"];
  /** MetalLB's IPAddressPool holding the IP, when known. */
  readonly pool: string | null;
  /** Nodes hosting a serving endpoint (ETP Local: a responder elsewhere silently drops traffic). */
  readonly endpointNodes: readonly string[];
  /**
   * Answering nodes with no local endpoint of an externalTrafficPolicy Local Service: a client whose cache holds
   * their MAC sends traffic that kube-proxy drops without a word ("it worked for a minute, then timeouts").
   */
  readonly silentDropNodes: readonly string[];
  /** Open findings (incidents) on this IP. */
  readonly findings: readonly (OpenFinding & { readonly incidentId: number })[];
}

/**
 * An IpRow is the part of an IP the lists show (the IPs page, the Overview): about a third of a HubIpView, so that
 * thousands of IPs travel and parse quickly. The IP detail uses the whole view.
 */
export interface IpRow {
  readonly ip: string;
  readonly state: IpView["state"];
  readonly services: readonly { readonly namespace: string; readonly name: string; readonly externalTrafficPolicy: "Cluster" | "Local" }[];
  readonly expectedOwner: IpInventory["expectedOwner"];
  readonly responders: readonly { readonly mac: string; readonly node: string | null; readonly answering: boolean; readonly lastGratuitous: number | null }[];
  readonly fastest: string | null;
  readonly findings: readonly { readonly type: OpenFinding["type"]; readonly detail: string; readonly firstSeen: number }[];
  readonly requests: number;
  readonly lastRequest: number | null;
  readonly silentDropNodes: readonly string[];
}

/** rowOf projects a view to its list row. */
export function rowOf(v: HubIpView): IpRow {
  return {
    ip: v.ip,
    state: v.state,
    services: v.services.map((x) => ({ namespace: x.namespace, name: x.name, externalTrafficPolicy: x.externalTrafficPolicy })),
    expectedOwner: v.expectedOwner,
    responders: v.responders.map((r) => ({ mac: r.mac, node: r.node, answering: r.answering, lastGratuitous: r.lastGratuitous })),
    fastest: v.fastest,
    findings: v.findings.map((f) => ({ type: f.type, detail: f.detail, firstSeen: f.firstSeen })),
    requests: v.requests,
    lastRequest: v.lastRequest,
    silentDropNodes: v.silentDropNodes,
  };
}

/** ClusterSummary answers "am I affected?" at the cluster level. */
export interface ClusterSummary {
  readonly kubernetes: "connected" | "off";
  /**
   * While the API server cannot be listed or watched: since when (the inventory shown is as of then) and why. The
   * informers keep retrying and relist when the server is back.
   */
  readonly inventoryStale: { readonly since: number; readonly message: string } | null;
  /** The tracking limits and whether they were hit (the Overview warns when they were). */
  readonly limits: LimitStatus;
  readonly metallb: boolean;
  /** kube-proxy as configured in ConfigMap kube-system/kube-proxy; null when absent or unreadable. */
  readonly kubeProxy: (KubeProxyConfig & { readonly error: null }) | { readonly error: string } | null;
  readonly kubeProxyRollout: KubeProxyRollout | null;
  /** strictARP as configured against what each node's kernel does (agents' facts), with the drift between them. */
  readonly strictArp: StrictArpStatus;
}

/** MAX_TOUCHED bounds the IPs waiting for the fast pass; beyond it they wait for the round. */
const MAX_TOUCHED = 10_000;

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
  firstSeen: number;
  interfaces: InterfaceInfo[];
  connections: number;
  lastSeen: number;
  dropped: number;
  facts: NodeFacts | null;
}

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
}

/** TrackingLimits bound the hub's memory whatever the network sends: made-up IPs or MACs fold, never crash. */
export interface TrackingLimits {
  readonly maxIps: number;
  readonly maxMacsPerIp: number;
}

export const DEFAULT_LIMITS: TrackingLimits = { maxIps: 100_000, maxMacsPerIp: DEFAULT_MAX_MACS_PER_IP };

/** LimitStatus says whether a limit was hit and what it cost: shown on the Overview, logged, exported. */
export interface LimitStatus {
  readonly maxIps: number;
  readonly maxMacsPerIp: number;
  readonly ips: number;
  /** IPs let go from the live view at maxIps (the least recently active; their history stays in storage). */
  readonly evictedIps: number;
  /** Times a responder was folded into its IP's sum at maxMacsPerIp. */
  readonly foldedMacs: number;
  /** When a limit was last hit; null: never since start. */
  readonly lastHit: number | null;
}

/** Eviction frees this share of maxIps at once, so that a flood of new IPs sorts the table rarely. */
const EVICT_SHARE = 0.05;

const incidentKey = (ip: string, type: string) => `${ip}|${type}`;

/**
 * A Hub holds what every agent reported and turns it into per-IP views, findings and incidents. Its only I/O is the
 * store; the gateway feeds it messages, the API reads it, `tick()` judges the IPs, and `changes()` tells subscribers
 * when to look again.
 */
export class Hub {
  /** Distinguishes this process's change sequence from a previous one's (event ids of live lists). */
  readonly bootId = randomBytes(4).toString("hex");
  readonly clock: () => number;
  readonly store: Store;
  readonly #table: IpTable;
  readonly #limits: TrackingLimits;
  readonly #onLimit: ((status: LimitStatus) => void) | null;
  #evictedIps = 0;
  #foldedSeen = 0;
  #lastHit: number | null = null;
  #lastTold = -Infinity;
  /** The table size above which the next eviction pass runs (maxIps, unless IPs that must stay fill it). */
  #evictAbove: number;
  readonly #agents = new Map<string, AgentRecord>();
  readonly #macToNode = new Map<string, string>();
  readonly #events = new EventEmitter<{ change: []; transition: [Transition, number] }>();
  readonly #tracker = new FindingTracker();
  readonly #flips = new FlipFlopWatch();
  readonly #incidentIds = new Map<string, number>();
  /** Per IP, the signature it was last judged with, and what was present then (kept only while something is). */
  readonly #judged = new Map<string, number>();
  readonly #present = new Map<string, LiveFinding[]>();
  /** What every judgement also depends on (cluster, live agents, MAC owners); when it moves, every IP is judged. */
  #contextKey = "";
  #macVersion = 0;
  #lastTouch = 0;
  /** Change sequence: each IP's last change, and the last change to everything (cluster, MAC owners). */
  #seq = 0;
  #everythingSeq = 0;
  readonly #changed = new Map<string, number>();
  /** IPs reported since the fast pass last looked (tickTouched), at most MAX_TOUCHED. */
  readonly #touched = new Set<string>();
  #round: { now: number; inv: Map<string, IpInventory>; down: Set<string>; all: boolean; ips: Generator<string> } | null = null;
  readonly #startedAt: number;
  #cluster: ClusterSource | null = null;
  #clusterVersion = 0;
  #inventory: { key: string; map: Map<string, IpInventory> } | null = null;
  #kubeProxyParsed: { text: string | null; parsed: ReturnType<typeof parseKubeProxyConfig> | null } | null = null;

  constructor(opts: HubOptions = {}) {
    this.clock = opts.clock ?? Date.now;
    this.#limits = { ...DEFAULT_LIMITS, ...opts.limits };
    this.#onLimit = opts.onLimit ?? null;
    this.#table = new IpTable({ maxMacsPerIp: this.#limits.maxMacsPerIp });
    this.#evictAbove = this.#limits.maxIps;
    const now = this.clock();
    this.#startedAt = now;
    this.store = opts.store ?? new Store(openSqlite(":memory:"), now);
    this.#events.setMaxListeners(0);
    this.#restore(now - (opts.restoreMs ?? 3_600_000));
  }

  /** #restore rebuilds the live picture from the store: agents (down until they reconnect), traffic, open incidents. */
  #restore(since: number): void {
    for (const a of this.store.agents()) {
      this.#agents.set(a.node, { ...a, connections: 0 });
      for (const i of a.interfaces) this.#macToNode.set(i.mac, a.node);
      for (const i of a.facts?.interfaces ?? []) this.#macToNode.set(i.mac, a.node);
    }
    this.#table.restore(this.store.aggregates(since));
    const open = this.store.incidents({ open: true, limit: 5000 });
    this.#tracker.restore(open.map((i) => ({ ip: i.ip, type: i.type, macs: i.macs, detail: i.detail, firstSeen: i.firstSeen, lastSeen: i.lastSeen, count: i.count, samples: i.samples })));
    for (const i of open) this.#incidentIds.set(incidentKey(i.ip, i.type), i.id);
    this.#enforceLimits(this.clock());
  }

  /** setCluster attaches the Kubernetes inventory (null: traffic-only mode). */
  setCluster(source: ClusterSource | null): void {
    this.#cluster = source;
    this.clusterChanged();
  }

  /** clusterChanged tells the hub and its subscribers that the inventory moved. */
  clusterChanged(): void {
    this.#clusterVersion++;
    this.#everything();
    this.#emit();
  }

  cluster(): ClusterSummary {
    const c = this.#cluster;
    const facts = this.agents().flatMap((a) => (a.up && a.facts !== null ? [a.facts] : []));
    if (c === null) return { kubernetes: "off", inventoryStale: null, limits: this.limitStatus(), metallb: false, kubeProxy: null, kubeProxyRollout: null, strictArp: strictArpStatus(null, facts) };
    const text = c.kubeProxyConfig();
    // Live subscribers read the summary on every change: parse the YAML again only when the ConfigMap's text moved.
    if (this.#kubeProxyParsed?.text !== text) this.#kubeProxyParsed = { text, parsed: text === null ? null : parseKubeProxyConfig(text) };
    const parsed = this.#kubeProxyParsed.parsed;
    return {
      kubernetes: "connected",
      inventoryStale: c.stale?.() ?? null,
      limits: this.limitStatus(),
      metallb: c.metallb,
      kubeProxy: parsed === null ? null : parsed.ok ? { ...parsed.value, error: null } : { error: parsed.message },
      kubeProxyRollout: c.kubeProxyRollout(),
      strictArp: strictArpStatus(parsed?.ok === true ? parsed.value : null, facts),
    };
  }

  /** hasAgent tells whether `node` has ever registered an agent (it counts against limits.maxAgents). */
  hasAgent(node: string): boolean {
    return this.#agents.has(node);
  }

  /** agentCount is how many nodes have registered an agent. */
  agentCount(): number {
    return this.#agents.size;
  }

  /** tracksIp tells whether `ip` is in the live view (an agent's entries for it are not new). */
  tracksIp(ip: string): boolean {
    return this.#table.has(ip);
  }

  /**
   * nodeKnown says whether Kubernetes lists `node`: null when the hub cannot tell (traffic-only, or no Node listed:
   * an inventory without Nodes must not lock every agent out).
   */
  nodeKnown(node: string): boolean | null {
    const nodes = this.#cluster?.snapshot().nodes;
    if (nodes === undefined || nodes.length === 0) return null;
    return nodes.some((n) => n.name === node);
  }

  /** connect registers an agent's hello; the same node may reconnect before its old socket is noticed closed. */
  connect(hello: Hello): void {
    const now = this.clock();
    const rec = this.#agents.get(hello.node);
    if (rec === undefined) {
      this.#agents.set(hello.node, { node: hello.node, version: hello.agentVersion, firstSeen: now, interfaces: hello.interfaces, connections: 1, lastSeen: now, dropped: 0, facts: null });
    } else {
      Object.assign(rec, { version: hello.agentVersion, interfaces: hello.interfaces, lastSeen: now });
      rec.connections++;
    }
    this.#learnMacs(hello.node, hello.interfaces);
    this.#save(hello.node);
    this.#emit();
  }

  /** disconnect notes that one of a node's sockets closed. */
  disconnect(node: string): void {
    const rec = this.#agents.get(node);
    if (rec === undefined) return;
    rec.connections = Math.max(0, rec.connections - 1);
    this.#save(node);
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
    this.#learnMacs(node, facts.interfaces);
    this.#save(node);
    this.#emit();
  }

  /** observe folds one observations message from `node` into the live view and the store. */
  observe(node: string, msg: Observations): void {
    const rec = this.#agents.get(node);
    if (rec !== undefined) {
      rec.lastSeen = this.clock();
      if (msg.dropped > 0) {
        rec.dropped += msg.dropped;
        this.#save(node);
      }
    }
    this.store.record(node, msg.entries);
    const touched = this.#table.apply(node, msg.entries);
    if (touched.size === 0) return;
    this.#enforceLimits(this.clock());
    const seq = ++this.#seq;
    for (const ip of touched) {
      this.#changed.set(ip, seq);
      if (this.#touched.size < MAX_TOUCHED) this.#touched.add(ip);
    }
    this.#emit();
  }

  /**
   * #enforceLimits lets go of the least recently active IPs when the table holds more than maxIps (5 % of the limit
   * at once), keeping the cluster's LoadBalancer IPs and IPs with an open finding. Their history stays in storage;
   * the live view, its findings and the metrics no longer hold them. Tells `onLimit` at most once a minute.
   */
  #enforceLimits(now: number): void {
    const folded = this.#table.foldedMacs;
    let hit = folded > this.#foldedSeen;
    this.#foldedSeen = folded;
    if (this.#table.size > this.#evictAbove) {
      hit = true;
      const keep = this.#inventoryMap();
      const target = Math.floor(this.#limits.maxIps * (1 - EVICT_SHARE));
      const candidates: [string, number][] = [];
      for (const ip of this.#table.ips()) if (!keep.has(ip) && !this.#tracker.has(ip)) candidates.push([ip, this.#table.lastActivity(ip)]);
      candidates.sort((a, b) => a[1] - b[1]);
      for (const [ip] of candidates.slice(0, Math.max(0, this.#table.size - target))) {
        this.#table.remove(ip);
        this.#judged.delete(ip);
        this.#present.delete(ip);
        this.#changed.delete(ip);
        this.#touched.delete(ip);
        this.#flips.forget(ip);
        this.#evictedIps++;
      }
      // Live lists send deltas, which cannot say "gone": their subscribers get the whole list once.
      this.#everything();
      // When the IPs that must stay (LoadBalancer IPs, open incidents) hold the table above the limit, the next pass
      // waits for another 5 % instead of sorting everything again at every batch.
      const share = Math.ceil(this.#limits.maxIps * EVICT_SHARE);
      this.#evictAbove = this.#table.size > this.#limits.maxIps ? this.#table.size + share : this.#limits.maxIps;
    }
    if (!hit) return;
    this.#lastHit = now;
    if (this.#onLimit !== null && now - this.#lastTold >= 60_000) {
      this.#lastTold = now;
      this.#onLimit(this.limitStatus());
    }
  }

  /** limitStatus tells the tracking limits and whether they were hit. */
  limitStatus(): LimitStatus {
    return { ...this.#limits, ips: this.#table.size, evictedIps: this.#evictedIps, foldedMacs: this.#table.foldedMacs, lastHit: this.#lastHit };
  }

  /** nodeOfMac names the node a MAC belongs to (from the agents' interfaces), null when no agent has it. */
  nodeOfMac = (mac: string): string | null => this.#macToNode.get(mac) ?? null;

  #learnMacs(node: string, interfaces: readonly { readonly mac: string }[]): void {
    for (const i of interfaces) {
      if (this.#macToNode.get(i.mac) === node) continue;
      this.#macToNode.set(i.mac, node);
      this.#macVersion++;
      this.#everything();
    }
  }

  /**
   * tick judges the IPs and records the transitions as incidents, and returns them; the server runs a round every
   * second. Every IP's signature (state, answering and announcing MACs: cheap) is compared with the one it was last
   * judged with; only IPs whose signature moved are judged again (view + findings), and all of them when the context
   * (the cluster, the live agents, the MACs' owners) moved. IPs holding a finding refresh it with what was present.
   * `budget` bounds the IPs looked at in this call: a round over tens of thousands of IPs is then cut into slices
   * between which the server serves the network (`ticking` tells whether the round is still open).
   */
  tick(budget = Infinity): Transition[] {
    const out: Transition[] = [];
    if (this.#round === null) {
      const now = this.clock();
      const { inv, down, key } = this.#context(now);
      this.#round = { now, inv, down, all: key !== this.#contextKey, ips: this.#allIps() };
      this.#contextKey = key;
      if (this.#round.all) this.#everything();
      this.#judgeNodes(now, out);
    }
    const { now, inv, down, all, ips } = this.#round;
    for (let n = 0; n < budget; n++) {
      const next = ips.next();
      if (next.done === true) {
        this.#round = null;
        break;
      }
      this.#judge(next.value, now, inv, down, all, out);
    }
    if (out.length > 0) this.#emit();
    return out;
  }

  /**
   * #judge looks at one IP: judged again when its signature moved (or `all`), its findings fed to the tracker, and
   * the transitions recorded as incidents and pushed to `out`.
   */
  #judge(ip: string, now: number, inv: Map<string, IpInventory>, down: ReadonlySet<string>, all: boolean, out: Transition[]): void {
    const sig = this.#table.signature(ip, now, SPLIT_BRAIN_MS);
    let present = this.#present.get(ip);
    // A flip-flop lasts a while after the last flip, with no traffic to say it ended: judged again when it expires.
    const flipExpired = present?.some((f) => f.type === "flip-flop") === true && this.#flips.active(ip, now) === null;
    if (all || flipExpired || this.#judged.get(ip) !== sig) {
      // Its view moved with time alone (a MAC stopped answering...): subscribers need it again.
      if (!all && this.#judged.has(ip)) this.#changed.set(ip, ++this.#seq);
      this.#judged.set(ip, sig);
      const v = this.#view(ip, now, inv);
      present = v === null ? [] : liveFindings(v, { expectedOwner: v.expectedOwner?.node ?? null, silentDropNodes: v.silentDropNodes, downAgents: down }, now);
      const flip = v === null ? null : this.#flips.see(ip, v.responders.filter((r) => r.answering), now);
      if (flip !== null) present.push(flip);
      if (present.length > 0) this.#present.set(ip, present);
      else this.#present.delete(ip);
    } else if (present === undefined && !this.#tracker.has(ip)) {
      return;
    }
    const changes = this.#tracker.update(ip, now, present ?? []);
    if (changes.length === 0) return;
    this.#changed.set(ip, ++this.#seq);
    const v = this.#view(ip, now, inv);
    for (const t of changes) {
      this.#record(t, v);
      out.push(t);
    }
  }

  /** #dead: an agent silent for AGENT_SILENCE_MS, counted from this hub's start (agents reconnect after a restart). */
  #dead(a: AgentView, now: number): boolean {
    return !a.up && now - Math.max(a.lastSeen, this.#startedAt) > AGENT_SILENCE_MS;
  }

  /**
   * #context is what every judgement depends on besides an IP's own traffic: the cluster's inventory and the dead
   * agents; `key` changes when either does (or a MAC changes hands), and then every IP is judged again.
   */
  #context(now: number): { inv: Map<string, IpInventory>; down: Set<string>; key: string } {
    const inv = this.#inventoryMap();
    const downList = this.agents()
      .filter((a) => this.#dead(a, now))
      .map((a) => a.node);
    return { inv, down: new Set(downList), key: `${this.#inventory?.key ?? ""}|${downList.join(",")}|${this.#macVersion}` };
  }

  /** #judgeNodes judges every node once a round: its agent down, its ARP behaviour drifted from kube-proxy's config. */
  #judgeNodes(now: number, out: Transition[]): void {
    const agents = this.agents();
    const strictArp = this.cluster().strictArp;
    const nodes = agents.map((a) => ({ node: a.node, down: this.#dead(a, now), silentForMs: now - Math.max(a.lastSeen, this.#startedAt) }));
    for (const [subject, present] of nodeFindings(nodes, strictArp.drift)) {
      const changes = this.#tracker.update(subject, now, present);
      if (changes.length === 0) continue;
      const node = subjectNode(subject);
      const evidence = { agent: agents.find((a) => a.node === node) ?? null, arp: strictArp.nodes.find((n) => n.node === node) ?? null, drift: strictArp.drift.find((d) => d.node === node) ?? null };
      for (const t of changes) {
        this.#record(t, null, evidence);
        out.push(t);
      }
    }
  }

  /**
   * tickTouched judges, between the rounds, the IPs agents reported since the last call (at most `max`; the round
   * gets the rest): a second responder is an incident, and a notification, within a fraction of a second rather
   * than at the next round. Nothing happens while the context has moved (the next round judges everything).
   */
  tickTouched(max = 500): Transition[] {
    const out: Transition[] = [];
    if (this.#touched.size === 0) return out;
    const now = this.clock();
    const { inv, down, key } = this.#context(now);
    if (key !== this.#contextKey) return out;
    let n = 0;
    for (const ip of this.#touched) {
      this.#touched.delete(ip);
      this.#judge(ip, now, inv, down, false, out);
      if (++n >= max) break;
    }
    if (out.length > 0) this.#emit();
    return out;
  }

  /** ticking tells whether a round of `tick` is still open (its budget ran out before the last IP). */
  get ticking(): boolean {
    return this.#round !== null;
  }

  /** onTransition calls `fn` for each incident opened, updated or resolved (alerting hangs here). */
  onTransition(fn: (t: Transition, incidentId: number) => void): () => void {
    this.#events.on("transition", fn);
    return () => this.#events.off("transition", fn);
  }

  #record(t: Transition, v: HubIpView | null, nodeEvidence?: unknown): void {
    const f = t.finding;
    const key = incidentKey(f.ip, f.type);
    let id = this.#incidentIds.get(key) ?? 0;
    if (t.kind === "opened") {
      const evidence = nodeEvidence ?? {
        services: v?.services ?? [],
        expectedOwner: v?.expectedOwner ?? null,
        responders: (v?.responders ?? []).map((r) => ({ mac: r.mac, node: r.node, answering: r.answering, replies: r.replies, gratuitous: r.gratuitous, lastGratuitous: r.lastGratuitous })),
        capturedBy: v?.capturedBy ?? [],
      };
      id = this.store.openIncident(f, evidence);
      this.#incidentIds.set(key, id);
    } else if (t.kind === "updated") {
      this.store.touchIncident(id, f, `now ${f.macs.join(", ")}`);
    } else {
      this.store.resolveIncident(id, f, t.at);
      this.#incidentIds.delete(key);
    }
    this.#events.emit("transition", t, id);
  }

  /**
   * flush writes agents and open incidents' latest evidence to the store, and the buffered traffic every
   * WRITE_EVERY_MS or when `force`d (shutdown).
   */
  flush(force = false, maxRows?: number): number {
    const now = this.clock();
    if (force || now - this.#lastTouch >= WRITE_EVERY_MS) {
      this.#lastTouch = now;
      for (const f of this.#tracker.open()) {
        const id = this.#incidentIds.get(incidentKey(f.ip, f.type));
        if (id !== undefined) this.store.touchIncident(id, f, null);
      }
    }
    return this.store.flush(now, force, maxRows);
  }

  /**
   * answering lists how many MACs answer now for each LoadBalancer IP of the cluster and each IP with several
   * answering (in traffic-only mode, any IP with one or more): at most `max` of them, so that a segment with
   * thousands of hosts does not explode a metric's label set.
   */
  answering(max: number): [string, number, { readonly namespace: string; readonly name: string } | null][] {
    const now = this.clock();
    const lb = this.#inventoryMap();
    const out: [string, number, { readonly namespace: string; readonly name: string } | null][] = [];
    for (const [ip, inv] of lb) out.push([ip, this.#table.answeringCount(ip, now), inv.services[0] ?? null]);
    for (const ip of this.#table.ips()) {
      if (out.length >= max) break;
      if (lb.has(ip)) continue;
      const n = this.#table.answeringCount(ip, now);
      if (n >= (this.#cluster === null ? 1 : 2)) out.push([ip, n, null]);
    }
    return out.slice(0, max);
  }

  /** findingCounts counts the IPs holding each finding now (without building any view: /metrics reads it). */
  findingCounts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const present of this.#present.values()) for (const f of present) out.set(f.type, (out.get(f.type) ?? 0) + 1);
    return out;
  }


  /** stateCounts counts the IPs per state without building views (for /metrics). */
  stateCounts(): Record<IpView["state"], number> {
    const now = this.clock();
    const out = { single: 0, "multi-responder": 0, "no-responder": 0, idle: 0 };
    for (const ip of this.#allIps()) out[this.#table.stateOf(ip, now)]++;
    return out;
  }

  /**
   * speakers are the nodes the election counts as running MetalLB's speaker: every Node of the cluster (the speaker
   * is a DaemonSet). Not the nodes whose whohas agent is up: an agent that crashed says nothing about the speaker
   * beside it, and taking it out would move the computed owner of every IP it held (false wrong-owner incidents).
   * MetalLB's ServiceL2Status and nodeAssigned events, when present, name the real owner anyway.
   */
  #speakers(): Set<string> {
    return new Set(this.#cluster === null ? [] : this.#cluster.snapshot().nodes.map((n) => n.name));
  }

  /** #inventoryMap is the cluster's per-IP inventory, recomputed only when the cluster or the live speakers change. */
  #inventoryMap(): Map<string, IpInventory> {
    if (this.#cluster === null) return new Map();
    const speakers = this.#speakers();
    const key = `${this.#clusterVersion}|${[...speakers].sort().join(",")}`;
    if (this.#inventory?.key !== key) this.#inventory = { key, map: inventoryByIp(this.#cluster.snapshot(), speakers) };
    return this.#inventory.map;
  }

  /** #allIps yields every IP seen, then the cluster's LoadBalancer IPs nobody asked for yet. */
  *#allIps(): Generator<string> {
    yield* this.#table.ips();
    for (const ip of this.#inventoryMap().keys()) if (this.#table.signature(ip, 0, 0) === 0) yield ip;
  }

  #view(ip: string, now: number, inv: Map<string, IpInventory>): HubIpView | null {
    const i = inv.get(ip);
    const v = this.#table.view(ip, now, this.nodeOfMac) ?? (i === undefined ? null : { ip, state: "idle" as const, requests: 0, lastRequest: null, unansweredSince: null, responders: [], capturedBy: [], fastest: null, folded: null });
    if (v === null) return null;
    const local = i?.services.some((s) => s.externalTrafficPolicy === "Local") ?? false;
    const endpointNodes = i?.endpointNodes ?? [];
    const silentDropNodes = local
      ? [...new Set(v.responders.filter((r) => r.answering && r.node !== null && !endpointNodes.includes(r.node)).map((r) => r.node ?? ""))].sort()
      : [];
    const findings = this.#tracker.open(ip).map((f) => ({ ...f, incidentId: this.#incidentIds.get(incidentKey(ip, f.type)) ?? 0 }));
    return { ...v, services: i?.services ?? [], expectedOwner: i?.expectedOwner ?? null, pool: i?.pool ?? null, endpointNodes, silentDropNodes, findings };
  }

  ips(): HubIpView[] {
    const now = this.clock();
    const inv = this.#inventoryMap();
    return [...this.#allIps()]
      .sort(compareIP)
      .map((ip) => this.#view(ip, now, inv))
      .filter((v): v is HubIpView => v !== null);
  }

  /**
   * ipsSince is what changed since change `since` (0: everything): every IP when `full`, else only the IPs whose view
   * moved, and the sequence number to ask from next time. Subscribers send deltas with it instead of whole lists.
   */
  ipsSince(since: number): { seq: number; full: boolean; ips: IpRow[] } {
    const seq = this.#seq;
    if (since <= 0 || since < this.#everythingSeq || since > seq) return { seq, full: true, ips: this.ips().map(rowOf) };
    const now = this.clock();
    const inv = this.#inventoryMap();
    const ips: IpRow[] = [];
    for (const [ip, s] of this.#changed) {
      if (s <= since) continue;
      const v = this.#view(ip, now, inv);
      if (v !== null) ips.push(rowOf(v));
    }
    return { seq, full: false, ips };
  }

  /** listSnapshot is the whole list and the event id a live subscription resumes from (server-rendered pages). */
  listSnapshot(): { id: string; rows: IpRow[] } {
    const d = this.ipsSince(0);
    return { id: `${this.bootId}-ips-${d.seq}`, rows: d.ips };
  }

  #everything(): void {
    this.#everythingSeq = ++this.#seq;
  }

  ip(ip: string): HubIpView | null {
    return this.#view(ip, this.clock(), this.#inventoryMap());
  }

  /** timeline is one IP's per-minute frames per MAC over [from, to] (from the store; the current minute once flushed). */
  timeline(ip: string, from: number, to: number): TimelinePoint[] {
    return this.store.timeline(ip, from, to);
  }

  incidents(q: { open?: boolean; ip?: string; limit?: number } = {}): Incident[] {
    return this.store.incidents(q);
  }

  /** nodes joins each agent with its node's ARP behaviour (effective arp_ignore / arp_announce, strict or not). */
  nodes(): (AgentView & { readonly arp: NodeArp | null })[] {
    const arp = new Map(this.cluster().strictArp.nodes.map((n) => [n.node, n]));
    return this.agents().map((a) => ({ ...a, arp: arp.get(a.node) ?? null }));
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

  #save(node: string): void {
    const r = this.#agents.get(node);
    if (r !== undefined) this.store.saveAgent({ node: r.node, version: r.version, firstSeen: r.firstSeen, lastSeen: r.lastSeen, interfaces: r.interfaces, facts: r.facts, dropped: r.dropped });
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
