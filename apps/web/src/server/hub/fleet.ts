import type { FleetRepo } from "../store/fleet.js";
import type { ClusterSummary } from "./hub.js";
import type { HubIpState, IpRow } from "./views.js";

/** PUBLISH_MS: how often the leading hub writes its cluster's summary (its heartbeat in the fleet) and changed IPs. */
export const PUBLISH_MS = 5000;
/** STALE_MS: a cluster whose hub has not published for this long is shown as not reporting (its rows as of then). */
export const STALE_MS = 30_000;

/**
 * A FleetIp is one IP's row as the fleet shows it: the list row without what changes with every request (counts,
 * rates), so that a cluster's hub writes a row again only when its verdict or what it rests on changes.
 */
export type FleetIp = Omit<IpRow, "requests" | "lastRequest" | "changesPerHour" | "askersChanged">;

/** A FleetSummary is one cluster at a glance: its IPs per verdict, open incidents, agents, strictARP. */
export interface FleetSummary {
  readonly ips: number;
  readonly states: Partial<Record<HubIpState, number>>;
  readonly openIncidents: number;
  readonly agents: { readonly up: number; readonly total: number };
  readonly kubernetes: "connected" | "off";
  /** strictARP as the nodes apply it: "exposed" when some IPVS node answers for every address. */
  readonly strictArp: "exposed" | "ok" | "unknown";
}

/** A FleetCluster is a cluster of the fleet as a hub reads it: its own live, the others as they last published. */
export interface FleetCluster {
  readonly name: string;
  /** Its dashboard (its hub's alerting.externalUrl), null when it did not say. */
  readonly url: string | null;
  /** The cluster this hub watches. */
  readonly self: boolean;
  /** Whether its hub published within STALE_MS: when not, what it shows is as of `reportedAt`, and may be wrong. */
  readonly reporting: boolean;
  readonly reportedAt: number;
  readonly summary: FleetSummary;
}

export interface FleetOptions {
  /** This hub's cluster. */
  readonly name: string;
  /** This hub's dashboard for people (alerting.externalUrl), published for the other hubs' links. */
  readonly url: string | null;
  readonly repo: FleetRepo;
  /** This cluster's IP rows, live. */
  readonly rows: () => readonly IpRow[];
  readonly summary: () => ClusterSummary;
  readonly openIncidents: () => Promise<number>;
  readonly agents: () => { up: number; total: number };
  readonly clock: () => number;
}

/** fleetIp drops a row's counts and rates. */
export function fleetIp(r: IpRow): FleetIp {
  const { requests: _r, lastRequest: _l, changesPerHour: _c, askersChanged: _a, ...rest } = r;
  return rest;
}

/**
 * The Fleet is the clusters seen from this hub. Several clusters' hubs (each with its own agents, Kubernetes access
 * and schema) share one PostgreSQL; each cluster's leading hub publishes its summary and its IP rows there, and every
 * hub reads the others' from it: one place to look at every cluster, with links to the hub that holds the detail.
 */
export class Fleet {
  /** The rows this hub last wrote, as JSON by key; null until it read what its cluster had published before. */
  #written: Map<string, string> | null = null;

  constructor(readonly o: FleetOptions) {}

  get name(): string {
    return this.o.name;
  }

  /** summary is this cluster at a glance, now. */
  async summary(): Promise<FleetSummary> {
    const rows = this.o.rows();
    const states: Partial<Record<HubIpState, number>> = {};
    for (const r of rows) states[r.state] = (states[r.state] ?? 0) + 1;
    const s = this.o.summary();
    return {
      ips: rows.length,
      states,
      openIncidents: await this.o.openIncidents(),
      agents: this.o.agents(),
      kubernetes: s.kubernetes,
      strictArp: s.strictArp.verdict,
    };
  }

  /**
   * publish writes this cluster's summary, and the IP rows that changed since the last publish (and deletes those
   * gone): the leading hub's duty every PUBLISH_MS. A hub that starts leading first reads what was published before.
   */
  async publish(): Promise<void> {
    const { repo, name } = this.o;
    const now = this.o.clock();
    const written = this.#written ?? new Map((await repo.keys(name)).map((k) => [k, ""]));
    const next = new Map<string, string>();
    const changed: { key: string; entry: FleetIp }[] = [];
    for (const r of this.o.rows()) {
      const entry = fleetIp(r);
      const json = JSON.stringify(entry);
      next.set(r.ip, json);
      if (written.get(r.ip) !== json) changed.push({ key: r.ip, entry });
    }
    const gone = [...written.keys()].filter((k) => !next.has(k));
    try {
      await repo.writeIps(name, changed, gone, now);
      await repo.report(name, this.o.url, await this.summary(), now);
      this.#written = next;
    } catch (e) {
      // What was not written is written by the next publish, from what was last known to be there.
      this.#written = written;
      throw e;
    }
  }

  /** stop forgets what was written: a hub that leads again later reads it again first. */
  forget(): void {
    this.#written = null;
  }

  /** clusters lists every cluster of the fleet by name: this one live, the others as their hubs last published. */
  async clusters(): Promise<FleetCluster[]> {
    const now = this.o.clock();
    const published = await this.o.repo.clusters<FleetSummary>();
    const self: FleetCluster = {
      name: this.o.name,
      url: this.o.url,
      self: true,
      reporting: true,
      reportedAt: now,
      summary: await this.summary(),
    };
    const others = published
      .filter((c) => c.name !== this.o.name)
      .map((c): FleetCluster => ({ ...c, self: false, reporting: now - c.reportedAt <= STALE_MS }));
    return [self, ...others].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * ips is one cluster and its IP rows, each row with its cluster's name: this cluster's live, another's as its hub
   * last published them (true as of the cluster's `reportedAt`); null for a cluster no hub of the fleet published.
   */
  async ips(name: string): Promise<{ cluster: FleetCluster; rows: (FleetIp & { cluster: string })[] } | null> {
    const cluster = (await this.clusters()).find((c) => c.name === name);
    if (cluster === undefined) return null;
    const rows = cluster.self ? this.o.rows().map(fleetIp) : (await this.o.repo.ips<FleetIp>(name)).map((p) => p.entry);
    return { cluster, rows: rows.map((r) => ({ ...r, cluster: name })) };
  }
}
