import { SILENCE_MS, type AgentMessage, type InterfaceInfo, type NodeFacts } from "@whohas/core";
import type { AgentsRepo, StoredAgent } from "../store/agents.js";
import type { Feed } from "./feed.js";
import { LoadWatch } from "./load-watch.js";

/**
 * SATURATED_SILENCE_MS: an agent silent this long is down even while the hub is saturated: a backlog of unread
 * messages is seconds to tens of seconds old, not minutes.
 */
export const SATURATED_SILENCE_MS = 5 * SILENCE_MS;

type Hello = Extract<AgentMessage, { type: "hello" }>;

/** An AgentView is one node's agent as the dashboard shows it. */
export interface AgentView {
  readonly node: string;
  readonly version: string;
  readonly connected: boolean;
  /** Connected and heard from within SILENCE_MS. */
  readonly up: boolean;
  readonly lastSeen: number;
  readonly interfaces: readonly InterfaceInfo[];
  /** Frames the agent reported dropped (its buffer was full while the hub was away). */
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
  /** The IPs its agent takes in one probe-many, as its hello said (null: it takes none, or has not said hello yet). */
  probeMany: number | null;
}

/** A MacConflict: two nodes' agents report the same MAC; the first live one keeps it. */
export interface MacConflict {
  readonly mac: string;
  readonly holder: string;
  readonly claimant: string;
}

/**
 * The AgentRegistry knows every node's agent: connected or not, when it was last heard from, its interfaces (and so
 * which node each MAC belongs to) and its facts. It remembers them across restarts (down until they reconnect), and
 * forgets an agent down for longer than the retention.
 *
 * A MAC belongs to the first live node that reports it: a node's MACs are replaced by each hello and facts it sends,
 * and a node cannot take a MAC another live node reports (an agent cannot pass a node's answers off as its own); a
 * MAC moves when its holder stops reporting it or goes down (a VRRP virtual MAC after a failover).
 */
export class AgentRegistry {
  readonly #agents = new Map<string, AgentRecord>();
  /** Every node reporting each MAC, in the order they claimed it. */
  readonly #listers = new Map<string, string[]>();
  readonly #flushers = new Set<string>();
  /** The node each MAC belongs to: its first live lister, else its first lister. */
  readonly #macToNode = new Map<string, string>();
  /** The MACs each node reports now. */
  readonly #listed = new Map<string, Set<string>>();
  #macVersion = 0;
  readonly #startedAt: number;

  constructor(
    readonly repo: AgentsRepo,
    readonly feed: Feed,
    readonly clock: () => number,
    stored: readonly StoredAgent[],
    readonly onConflict: (c: MacConflict) => void = () => undefined,
  ) {
    this.#startedAt = clock();
    for (const a of stored) {
      this.#agents.set(a.node, { ...a, connections: 0, probeMany: null });
      this.#relist(a.node, false);
    }
  }

  /** nodeOfMac names the node a MAC belongs to (from the agents' interfaces), null when no agent has it. */
  readonly nodeOfMac = (mac: string): string | null => this.#macToNode.get(mac) ?? null;

  /** macVersion changes whenever a MAC changes node (every IP's view may then read differently). */
  get macVersion(): number {
    return this.#macVersion;
  }

  /** interfacesOf lists `node`'s interfaces (name and MAC), as its agent reported them. */
  interfacesOf(node: string): { readonly name: string; readonly mac: string }[] {
    const r = this.#agents.get(node);
    if (r === undefined) return [];
    return [...r.interfaces, ...(r.facts?.interfaces ?? [])];
  }

  /** macsOf lists the MACs of `node`'s interfaces, as its agent reported them. */
  macsOf(node: string): string[] {
    const r = this.#agents.get(node);
    if (r === undefined) return [];
    return [...new Set([...r.interfaces, ...(r.facts?.interfaces ?? [])].map((i) => i.mac))];
  }

  /**
   * askersOf lists what names `node` as the asker of a request it sends: its interfaces' MACs, and their addresses as
   * its facts last reported them.
   */
  askersOf(node: string): string[] {
    const r = this.#agents.get(node);
    if (r === undefined) return [];
    // kube-ipvs0 holds the Service IPs themselves: never what the node asks from.
    const addresses = (r.facts?.interfaces ?? [])
      .filter((i) => i.name !== "kube-ipvs0")
      .flatMap((i) => i.addresses.map((a) => a.split("/")[0] ?? a));
    return [...new Set([...this.macsOf(node), ...addresses])];
  }

  /**
   * probeManyLimit is how many IPs `node`'s agent takes in one probe-many, as its latest hello said; null when it
   * takes none (an agent of a release before it), or is unknown.
   */
  probeManyLimit(node: string): number | null {
    return this.#agents.get(node)?.probeMany ?? null;
  }

  /** flushers are the nodes whose agents are connected and, as their latest hello said, send what they hold when asked. */
  get flushers(): ReadonlySet<string> {
    return this.#flushers;
  }

  has(node: string): boolean {
    return this.#agents.has(node);
  }

  /** reported tells whether `node`'s agent sent its facts: every interface of the node, not only those it captures. */
  reported(node: string): boolean {
    return (this.#agents.get(node)?.facts ?? null) !== null;
  }

  get size(): number {
    return this.#agents.size;
  }

  /** connect registers an agent's hello. */
  connect(hello: Hello): void {
    const now = this.clock();
    const rec = this.#agents.get(hello.node);
    if (rec === undefined) {
      this.#agents.set(hello.node, {
        node: hello.node,
        version: hello.agentVersion,
        firstSeen: now,
        interfaces: hello.interfaces,
        connections: 1,
        lastSeen: now,
        dropped: 0,
        facts: null,
        probeMany: hello.probeMany?.maxTargets ?? null,
      });
    } else {
      Object.assign(rec, {
        version: hello.agentVersion,
        interfaces: hello.interfaces,
        lastSeen: now,
        probeMany: hello.probeMany?.maxTargets ?? null,
      });
      rec.connections++;
    }
    if (hello.flush === true) this.#flushers.add(hello.node);
    else this.#flushers.delete(hello.node);
    this.#relist(hello.node, true);
    // Back up: the MACs it listed first go back to it from whoever held them while it was away.
    this.#rehome(this.#listed.get(hello.node) ?? new Set<string>());
    this.#save(hello.node);
    this.feed.publish({ kind: "agents" });
  }

  /** disconnect notes that one of a node's connections closed. */
  disconnect(node: string): void {
    const rec = this.#agents.get(node);
    if (rec === undefined) return;
    rec.connections = Math.max(0, rec.connections - 1);
    if (rec.connections === 0) this.#flushers.delete(node);
    // A MAC it shares with a live node goes to that node.
    if (rec.connections === 0) this.#rehome(this.#listed.get(node) ?? new Set());
    this.#save(node);
    this.feed.publish({ kind: "agents" });
  }

  /** heard notes that `node` spoke (any message), and what it dropped while the hub was away. */
  heard(node: string, dropped = 0): void {
    const rec = this.#agents.get(node);
    if (rec === undefined) return;
    rec.lastSeen = this.clock();
    if (dropped > 0) {
      rec.dropped += dropped;
      this.#save(node);
    }
  }

  /** setFacts stores what an agent reports of its node. */
  setFacts(node: string, facts: NodeFacts): void {
    const rec = this.#agents.get(node);
    if (rec === undefined) return;
    rec.lastSeen = this.clock();
    rec.facts = facts;
    this.#relist(node, true);
    this.#save(node);
    this.feed.publish({ kind: "agents" });
  }

  /** How busy the hub was, second by second (the scheduler records it): a saturated hub's silence proves nothing. */
  readonly load = new LoadWatch();

  /**
   * dead: the node's agent is down and has been silent for SILENCE_MS, counted from this hub's start (agents
   * reconnect after a hub restart, which is no evidence against them), while the hub was not too busy to hear it; or
   * silent for SATURATED_SILENCE_MS whatever the hub's load (a hub saturated for good still calls a dead agent dead).
   */
  dead(a: AgentView, now: number): boolean {
    const since = Math.max(a.lastSeen, this.#startedAt);
    const silent = now - since;
    return !a.up && silent > SILENCE_MS && (silent > SATURATED_SILENCE_MS || !this.load.saturated(since, now));
  }

  /** silentFor is how long `a` has been silent, counted from this hub's start at most. */
  silentFor(a: AgentView, now: number): number {
    return now - Math.max(a.lastSeen, this.#startedAt);
  }

  list(): AgentView[] {
    return [...this.#agents.values()].sort((a, b) => a.node.localeCompare(b.node)).map((r) => this.#view(r, this.clock()));
  }

  /** downNodes lists the nodes whose agents are dead now. */
  downNodes(now: number): Set<string> {
    return new Set(
      this.list()
        .filter((a) => this.dead(a, now))
        .map((a) => a.node),
    );
  }

  /** longestDead names the agent dead (and disconnected) the longest, to make room for a new node; null when none is. */
  longestDead(now: number): string | null {
    let best: AgentRecord | null = null;
    for (const r of this.#agents.values())
      if (r.connections === 0 && this.dead(this.#view(r, now), now) && (best === null || r.lastSeen < best.lastSeen)) best = r;
    return best?.node ?? null;
  }

  /**
   * forgetStale forgets the agents not connected and silent for longer than `afterMs`, and those `gone` says are no
   * longer Nodes of the cluster once they are dead; returns the nodes forgotten.
   */
  async forgetStale(now: number, afterMs: number, gone: (node: string) => boolean = () => false): Promise<string[]> {
    const out: string[] = [];
    for (const r of [...this.#agents.values()]) {
      const v = this.#view(r, now);
      if (v.connected) continue;
      if (now - r.lastSeen > afterMs || (this.dead(v, now) && gone(r.node))) {
        const deleted = this.forget(r.node);
        if (deleted === null) continue;
        await deleted;
        out.push(r.node);
      }
    }
    return out;
  }

  /**
   * forget drops what the hub knows of a node's agent: from memory at once, from storage by the promise it returns;
   * null when it did not (a live agent cannot be forgotten).
   */
  forget(node: string): Promise<void> | null {
    const r = this.#agents.get(node);
    if (r === undefined || r.connections > 0) return null;
    this.#agents.delete(node);
    const deleted = this.repo.forget(node);
    const had = this.#listed.get(node) ?? new Set<string>();
    this.#listed.delete(node);
    for (const mac of had) this.#unlist(mac, node);
    this.#rehome(had);
    this.feed.publish({ kind: "agents" });
    return deleted;
  }

  #view(r: AgentRecord, now: number): AgentView {
    return {
      node: r.node,
      version: r.version,
      connected: r.connections > 0,
      up: r.connections > 0 && now - r.lastSeen <= SILENCE_MS,
      lastSeen: r.lastSeen,
      interfaces: r.interfaces,
      dropped: r.dropped,
      facts: r.facts,
    };
  }

  /** #relist replaces the MACs `node` reports with those of its latest hello and facts. */
  #relist(node: string, tell: boolean): void {
    const now = new Set(this.macsOf(node));
    const before = this.#listed.get(node) ?? new Set<string>();
    this.#listed.set(node, now);
    const touched = new Set<string>();
    for (const mac of before) {
      if (now.has(mac)) continue;
      this.#unlist(mac, node);
      touched.add(mac);
    }
    for (const mac of now) {
      if (before.has(mac)) continue;
      const listers = this.#listers.get(mac);
      if (listers === undefined) this.#listers.set(mac, [node]);
      else listers.push(node);
      touched.add(mac);
    }
    this.#rehome(touched, tell ? node : null);
  }

  #unlist(mac: string, node: string): void {
    const listers = this.#listers.get(mac)?.filter((n) => n !== node) ?? [];
    if (listers.length === 0) this.#listers.delete(mac);
    else this.#listers.set(mac, listers);
  }

  /** #rehome settles who holds each of `macs` now; a claim by `claimant` refused for a live holder is told. */
  #rehome(macs: Iterable<string>, claimant: string | null = null): void {
    let moved = false;
    for (const mac of macs) {
      const listers = this.#listers.get(mac) ?? [];
      const holder = listers.find((n) => (this.#agents.get(n)?.connections ?? 0) > 0) ?? listers[0];
      if (holder === undefined) {
        if (this.#macToNode.delete(mac)) moved = true;
        continue;
      }
      if (claimant !== null && holder !== claimant && listers.includes(claimant)) this.onConflict({ mac, holder, claimant });
      if (this.#macToNode.get(mac) === holder) continue;
      this.#macToNode.set(mac, holder);
      moved = true;
    }
    if (!moved) return;
    this.#macVersion++;
    this.feed.publish({ kind: "everything" });
  }

  #save(node: string): void {
    const r = this.#agents.get(node);
    if (r !== undefined)
      this.repo.save({
        node: r.node,
        version: r.version,
        firstSeen: r.firstSeen,
        lastSeen: r.lastSeen,
        interfaces: r.interfaces,
        facts: r.facts,
        dropped: r.dropped,
      });
  }
}
