import {
  allowsInterface,
  splitIpKey,
  subjectIsIp,
  type Handover,
  type IpContext,
  type IpInventory,
  type OpenFinding,
  type Transition,
  type VerdictKey,
} from "@whohas/core";
import type { AuditLog } from "../store/audit.js";
import { transient } from "../store/db.js";
import { holdingFindings, type Incident, type IncidentEvent, type IncidentsRepo } from "../store/incidents.js";
import type { AgentRegistry } from "./agents.js";
import type { ClusterState } from "./cluster.js";
import type { Feed } from "./feed.js";
import { NodeJudging, STRICT_ARP_SEEN } from "./node-judging.js";
import type { Traffic } from "./traffic.js";

/** WRITE_RETRIES_MS: the waits before each new try of an incident write that failed (about a minute in all). */
const WRITE_RETRIES_MS = [1000, 2000, 4000, 8000, 15_000, 15_000, 15_000];

/** WRITE_EVERY_MS: how often open incidents' evidence (last seen, count) is written. */
export const WRITE_EVERY_MS = 10_000;

/**
 * ROUND_SKIP_MS / STEADY_SKIP_MS: a round leaves out an IP judged this recently: one with something wrong, or
 * nobody answering, every round; one that a single MAC answers, with nothing open, every other round. What can
 * change such an IP at once (another MAC answering, an announcement, evidence) is judged as it arrives; the round is
 * for what changes with time alone (a MAC that stopped answering), which a second's delay does not hurt.
 */
const ROUND_SKIP_MS = 900;
const STEADY_SKIP_MS = 1900;

/** ANNOUNCED_BY_NODES: the announcers whose addresses only the cluster's nodes answer for. */
const ANNOUNCED_BY_NODES: ReadonlySet<string> = new Set(["metallb-l2", "kube-vip", "cilium"]);

/** CONTEXT_MS: the judgements' shared context (inventory, down nodes) is worked out again at most this often. */
const CONTEXT_MS = 250;

/** Context is what every judgement depends on besides an IP's own traffic; `key` moves when any of it does. */
interface Context {
  readonly now: number;
  readonly inventory: Map<string, IpInventory>;
  readonly down: ReadonlySet<string>;
  /** Every Node of the cluster has a live agent that reported its interfaces: a MAC none reports is no node's. */
  readonly watchedAll: boolean;
  readonly key: string;
}

export interface JudgingOptions {
  readonly traffic: Traffic;
  readonly agents: AgentRegistry;
  readonly cluster: ClusterState;
  readonly incidents: IncidentsRepo;
  readonly audit: AuditLog;
  readonly feed: Feed;
  readonly clock: () => number;
  /** What an incident records of its IP when it opens (the view's services, owner, responders). */
  readonly evidence: (ip: string) => unknown;
  /** Where the last strictARP seen is kept across restarts (absent: not kept). */
  readonly settings?: { set(key: string, value: unknown, now: number): Promise<void> };
  /** Where a write to the store that failed is told (the judging goes on; the incident may miss that change). */
  readonly onStoreError?: (what: string, e: Error) => void;
}

/** What judging starts from after a restart: the incidents open in the store, and the strictARP last seen. */
export interface JudgingStart {
  readonly open: readonly Incident[];
  readonly strictArpSeen: boolean | null;
}

/**
 * Judging asks core's Judge about IPs and keeps what it says: IPs reported by agents are judged at once (coalesced
 * per IP), and the IPs that may change with time alone once a round; findings become incidents in the store, their
 * changes and every handover go on the feed. Nodes are judged once a round too (agent down, strictARP drift).
 */
export class Judging {
  /** The open incident of each subject (an IP key, or node/NAME). */
  readonly #ids = new Map<string, number>();
  /** Nodes' and the cluster's findings (agent down, strictARP drift or reverted). */
  readonly #beyondIps: NodeJudging;
  /**
   * What each IP's latest judgement said (its verdict key: when it moves with time alone, subscribers are told),
   * when it was made, and whether the IP was steady then (one MAC answering, nothing open): one lookup per IP a round.
   */
  readonly #judged = new Map<string, { key: VerdictKey; at: number; steady: boolean }>();
  #rounds = 0;
  readonly #soon = new Set<string>();
  #scheduled = false;
  #contextKey = "";
  #round: { ctx: Context; ips: Iterator<string> } | null = null;
  #lastWrite = 0;
  #ctx: { at: number; version: string; ctx: Context } | null = null;
  readonly #handoverListeners: ((ip: string, h: Handover) => void)[] = [];
  /** The store's writes, one after another in the order the judge decided them: an incident opens before it updates. */
  #writes: Promise<void> = Promise.resolve();

  constructor(
    readonly o: JudgingOptions,
    start: JudgingStart,
  ) {
    const { open } = start;
    for (const i of open) this.#ids.set(i.ip, i.id);
    o.traffic.judge.reopen(open.filter((i) => subjectIsIp(i.ip)).flatMap(holdingFindings));
    const settings = o.settings;
    this.#beyondIps = new NodeJudging(
      {
        ...o,
        keepStrictArp:
          settings === undefined ? undefined : (seen, now) => this.#write("strictARP seen", () => settings.set(STRICT_ARP_SEEN, seen, now)),
      },
      open,
      start.strictArpSeen,
    );
  }

  /**
   * #write queues a write to the store behind those already decided. One that fails because the store is away is told and tried again, after
   * 1, 2, 4, 8 and then 15 s, for about a minute (a PostgreSQL restarting, a failover): the writes behind it wait, in
   * order, and an incident opened meanwhile is stored and notified once the store is back. Past that it is given up
   * and the next goes on: the judge's state in memory is the truth while it runs; the store is what outlives it.
   */
  #write(what: string, fn: () => Promise<void>): void {
    this.#writes = this.#writes.then(async () => {
      for (const wait of [...WRITE_RETRIES_MS, null]) {
        try {
          return await fn();
        } catch (e) {
          this.o.onStoreError?.(what, e as Error);
          // A write the store refuses would be refused again: only a store away for a moment is waited for.
          if (wait === null || !transient(e)) return;
          await new Promise((r) => setTimeout(r, wait).unref());
        }
      }
    });
  }

  /** settled resolves once every write decided so far is in the store (reads of incidents wait for it). */
  settled(): Promise<void> {
    return this.#writes;
  }

  /**
   * #context is what every IP's judgement shares: the inventory, the nodes that are down, and a key that changes with
   * them. Agents report many times a second; it is worked out again at most every CONTEXT_MS (a node goes down after
   * 30 s of silence, the inventory and MAC versions move its key at once).
   */
  #context(now: number): Context {
    const c = this.#ctx;
    const version = `${this.o.cluster.version}|${this.o.agents.macVersion}`;
    if (c !== null && now - c.at < CONTEXT_MS && c.version === version) return { ...c.ctx, now };
    const inventory = this.o.cluster.inventory();
    const down = this.o.agents.downNodes(now);
    const nodes = this.o.cluster.nodeNames();
    // Its facts name every interface of the node (the hello only those its agent captures on).
    const watched = (n: string) => this.o.agents.has(n) && !down.has(n) && this.o.agents.reported(n);
    const watchedAll = nodes?.every(watched) === true;
    const ctx = { now, inventory, down, watchedAll, key: `${version}|${[...down].sort().join(",")}|${watchedAll}` };
    this.#ctx = { at: now, version, ctx };
    return ctx;
  }

  /**
   * unwatchedNodes names the cluster's nodes without a live agent that reported its facts: while there is one, a MAC
   * no agent reports may be that node's, and no address conflict is judged. Null without a cluster to list nodes.
   */
  unwatchedNodes(now: number): string[] | null {
    const nodes = this.o.cluster.nodeNames();
    if (nodes === null) return null;
    const down = this.o.agents.downNodes(now);
    return nodes.filter((n) => !(this.o.agents.has(n) && !down.has(n) && this.o.agents.reported(n))).sort();
  }

  /**
   * ipContext is what the judge is told of `ip`: its expected owner with the owner's MACs, ETP Local, the blind
   * nodes, and whether a MAC no agent reports is a stranger (one of the cluster's IPs, every node watched).
   */
  ipContext(ip: string, inventory: Map<string, IpInventory>, down: ReadonlySet<string>, watchedAll = false): IpContext {
    // A Service's address holds on whichever VLAN it is seen: the cluster does not say which.
    const key = splitIpKey(ip);
    const inv = inventory.get(key.ip);
    // A stranger is one only where the cluster announces the address itself (not another load balancer's address
    // that a Service reports, nor the same address reused inside a VLAN), and while every node is watched.
    const strangers = watchedAll && key.vlan === null && inv !== undefined && ANNOUNCED_BY_NODES.has(inv.announcer ?? "");
    const ownerNode = inv?.expectedOwner?.node ?? null;
    const local = inv?.services.some((s) => s.externalTrafficPolicy === "Local") === true ? { endpointNodes: inv.endpointNodes } : null;
    // MetalLB BGP only: not announced over ARP, not judged.
    if (inv?.announcer === "metallb-bgp") return { owner: null, local: null, downNodes: down, layer2: false };
    if (ownerNode === null) return { owner: null, local, downNodes: down, strangers };
    // The owner answers from the interfaces its announcer names; its other MACs answering is wrong-interface.
    const ifaces = this.o.agents.interfacesOf(ownerNode);
    const allowed = (name: string) => allowsInterface(inv?.interfaces ?? null, name);
    const macs = [...new Set(ifaces.filter((i) => allowed(i.name)).map((i) => i.mac))];
    const other = [...new Set(ifaces.filter((i) => !allowed(i.name)).map((i) => i.mac))].filter((m) => !macs.includes(m));
    return { owner: { node: ownerNode, macs }, local, downNodes: down, strangers, ...(other.length > 0 ? { ownerOtherMacs: other } : {}) };
  }

  /** onHandover calls `fn` for every handover (the metrics' histogram). */
  onHandover(fn: (ip: string, h: Handover) => void): void {
    this.#handoverListeners.push(fn);
  }

  /** soon judges `ips` as soon as the event loop turns (what agents just reported: a second answer pages at once). */
  soon(ips: Iterable<string>): void {
    for (const ip of ips) this.#soon.add(ip);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const ctx = this.#context(this.o.clock());
      const ips = [...this.#soon];
      this.#soon.clear();
      // The context moved: the next round judges everything with it (these IPs are awake).
      if (ctx.key !== this.#contextKey) return;
      for (const ip of ips) this.#judge(ip, ctx);
    });
  }

  /**
   * round judges the IPs that may change with time alone (and every IP when the context moved), and the nodes; at
   * most `budget` IPs per call: a round over tens of thousands of IPs is cut into slices between which the server
   * serves the network (`ticking` says whether it is still open).
   */
  round(budget = Infinity): void {
    if (this.#round === null) {
      const ctx = this.#context(this.o.clock());
      if (ctx.key !== this.#contextKey) {
        this.#contextKey = ctx.key;
        this.o.traffic.judge.wakeAll();
        // Every IP is judged again with the new context, however recently it was judged with the old; subscribers
        // of the cluster's IPs hear of each (their Service, their owner may have moved).
        for (const j of this.#judged.values()) j.at = -Infinity;
        for (const ip of ctx.inventory.keys()) this.#judged.delete(ip);
      }
      // The awake set itself is walked (no copy of tens of thousands of IPs a second): IPs that wake meanwhile are
      // judged in this round too, those that fall quiet leave it.
      this.#round = { ctx, ips: this.o.traffic.judge.awake() };
      this.#beyondIps.judge(ctx.now, (t, subject, evidence) => this.#record(t, subject, evidence));
      // Once a minute, what is kept per IP for IPs that left the live view goes.
      if (++this.#rounds % 60 === 0) this.#forgetGone();
    }
    const { ctx, ips } = this.#round;
    for (let n = 0; n < budget;) {
      const next = ips.next();
      if (next.done === true) {
        this.#round = null;
        return;
      }
      // An IP judged a moment ago needs no second look yet (the context moving clears these times).
      const ip = next.value;
      const last = this.#judged.get(ip);
      if (last !== undefined && ctx.now - last.at < (last.steady ? STEADY_SKIP_MS : ROUND_SKIP_MS)) continue;
      this.#judge(ip, ctx);
      n++;
    }
  }

  /**
   * lastKey is what the latest judgement of `ip` said of it (its state, the MACs answering), undefined before its
   * first: at most a round old (about 2 s) for an IP with traffic; a quiet IP's stands until its traffic resumes.
   */
  lastKey(ip: string): VerdictKey | undefined {
    return this.#judged.get(ip)?.key;
  }

  get ticking(): boolean {
    return this.#round !== null;
  }

  #forgetGone(): void {
    const t = this.o.traffic;
    for (const ip of this.#judged.keys()) if (!t.tracks(ip)) this.#judged.delete(ip);
  }

  #judge(ip: string, ctx: Context): void {
    const t = this.o.traffic;
    if (!t.tracks(ip)) return;
    const v = t.judge.judge(ip, ctx.now, this.ipContext(ip, ctx.inventory, ctx.down, ctx.watchedAll), t.lens);
    for (const h of v.handovers) {
      this.o.feed.publish({ kind: "handover", ip, handover: h });
      for (const fn of this.#handoverListeners) fn(ip, h);
    }
    for (const tr of v.transitions) this.#record(tr, ip);
    const before = this.#judged.get(ip);
    const moved = !v.same(before?.key);
    const key = before === undefined || moved ? v.key() : before.key;
    const steady = key.state === "s" && !t.judge.holds(ip);
    if (before === undefined) this.#judged.set(ip, { key, at: ctx.now, steady });
    else {
      before.key = key;
      before.at = ctx.now;
      before.steady = steady;
    }
    if (moved) this.o.feed.publish({ kind: "ips", ips: [ip] });
  }

  /**
   * #record keeps a finding's transition in its subject's incident: a finding that opens joins the open incident as a
   * facet, or opens one; the incident resolves when its last facet clears.
   */
  #record(t: Transition, subject: string, nodeEvidence?: unknown): void {
    const f = t.finding;
    const repo = this.o.incidents;
    // The subject's evidence is taken now, as the judge saw it: the write may run a moment later, and whether the
    // finding opens an incident or joins one is known only then (a resolve written before it may close the last).
    const evidence = t.kind === "opened" ? (nodeEvidence ?? this.o.evidence(subject)) : null;
    this.#write(`incident of ${subject}`, async () => {
      let id = this.#ids.get(subject) ?? 0;
      let opened = false;
      let resolved = false;
      if (t.kind === "opened") {
        // The evidence is recorded only when the incident opens: a facet joining finds it recorded.
        const o = await repo.open(f, id === 0 ? evidence : null);
        id = o.id;
        opened = o.incidentOpened;
        this.#ids.set(subject, id);
      } else if (id === 0) return;
      else if (t.kind === "updated") await repo.touch(id, f, `now ${f.macs.join(", ")}`);
      else {
        resolved = await repo.resolve(id, f, t.at);
        if (resolved) this.#ids.delete(subject);
      }
      this.o.feed.publish({ kind: "incident", id, subject, transition: t, opened, resolved });
      if (subjectIsIp(subject)) this.o.feed.publish({ kind: "ips", ips: [subject] });
    });
  }

  /** open lists the open findings of an IP with their incident ids. */
  open(ip: string): (OpenFinding & { readonly incidentId: number })[] {
    const id = this.#ids.get(ip) ?? 0;
    return this.o.traffic.judge.open(ip).map((f) => ({ ...f, incidentId: id }));
  }

  /** present counts the IPs holding each finding now (metrics). */
  present(): Map<string, number> {
    const out = new Map<string, number>();
    for (const f of this.o.traffic.judge.open()) out.set(f.type, (out.get(f.type) ?? 0) + 1);
    return out;
  }

  /** writeEvidence writes open incidents' latest evidence (last seen, count) every WRITE_EVERY_MS, or when forced. */
  writeEvidence(force = false): void {
    const now = this.o.clock();
    if (!force && now - this.#lastWrite < WRITE_EVERY_MS) return;
    this.#lastWrite = now;
    for (const f of [...this.o.traffic.judge.open(), ...this.#beyondIps.open()]) {
      this.#write(`evidence of ${f.ip}`, async () => {
        const id = this.#ids.get(f.ip);
        if (id !== undefined) await this.o.incidents.touch(id, f, null);
      });
    }
  }

  /** incidents lists incidents from the store, once every change decided so far is written. */
  async incidents(q: { open?: boolean; ip?: string; limit?: number } = {}): Promise<Incident[]> {
    await this.#writes;
    return this.o.incidents.list(q);
  }

  async incident(id: number): Promise<(Incident & { readonly events: readonly IncidentEvent[] }) | null> {
    await this.#writes;
    return this.o.incidents.get(id);
  }

  /** acknowledge marks an incident seen by `actor` (it stays open until its finding clears); audited. */
  async acknowledge(id: number, actor: string): Promise<boolean> {
    await this.#writes;
    const now = this.o.clock();
    const ok = await this.o.incidents.acknowledge(id, actor, now);
    await this.o.audit.append({
      t: now,
      actor,
      action: "incident.acknowledge",
      input: { id },
      outcome: ok ? "ok" : "refused",
      detail: ok ? "acknowledged" : "no such incident",
    });
    if (ok)
      this.o.feed.publish({
        kind: "incident",
        id,
        subject: (await this.o.incidents.get(id))?.ip ?? "",
        transition: null,
        opened: false,
        resolved: false,
      });
    return ok;
  }
}
