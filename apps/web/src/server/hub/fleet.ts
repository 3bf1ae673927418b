import { createHash } from "node:crypto";
import { z } from "zod";
import type { FleetRepo, PublishedCluster } from "../store/fleet.js";
import type { ClusterSummary } from "./hub.js";
import type { HubIpState, IpRow } from "./views.js";

/** PUBLISH_MS: how often the leading hub writes its cluster's summary (its heartbeat in the fleet) and changed IPs. */
export const PUBLISH_MS = 5000;
/** STALE_MS: a cluster whose hub has not published for this long is shown as not reporting (its rows as of then). */
export const STALE_MS = 30_000;
/**
 * REBUILD_MS: how often a publish builds every row again; in between it builds only the rows whose judgement moved
 * (a silent drop or an owner can change without the verdict moving; they show within this).
 */
export const REBUILD_MS = 60_000;

/**
 * A FleetIp is one IP's row as the fleet shows it: the list row without what changes with every request (counts,
 * rates), so that a cluster's hub writes a row again only when its verdict or what it rests on changes.
 */
export type FleetIp = Omit<
  IpRow,
  "requests" | "lastRequest" | "changesPerHour" | "askersChanged" | "fastest" | "lastHandover" | "responders"
> & {
  readonly responders: readonly Omit<IpRow["responders"][number], "lastGratuitous">[];
};

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
export interface FleetCluster extends FleetEntry {
  /** Null when what its hub published cannot be read (a hub of another version, or a broken row). */
  readonly summary: FleetSummary | null;
}

/** A FleetEntry is a cluster as the top bar's switch lists it: where it is, and whether it still reports. */
export interface FleetEntry {
  readonly name: string;
  /** Its dashboard (its hub's alerting.externalUrl), null when it did not say. */
  readonly url: string | null;
  /** The cluster this hub watches. */
  readonly self: boolean;
  /** Whether its hub published within STALE_MS: when not, what it shows is as of `reportedAt`, and may be wrong. */
  readonly reporting: boolean;
  /** When its hub last published, in this hub's clock (from the age the database measured). */
  readonly reportedAt: number;
}

export interface FleetOptions {
  /** This hub's cluster. */
  readonly name: string;
  /** This hub's dashboard for people (alerting.externalUrl), published for the other hubs' links. */
  readonly url: string | null;
  readonly repo: FleetRepo;
  /** This cluster's IP rows, live (every one built: for a request, not for each publish). */
  readonly rows: () => readonly IpRow[];
  /** This cluster's IP keys (in any order), and one key's row (null: gone), for the publish: it builds only the rows that moved. */
  readonly keys: () => readonly string[];
  /**
   * shown makes, once per publish, the test of which IPs the fleet shows: the LoadBalancer IPs, and any IP with a
   * problem (several responders, no responder, a finding open); not every host of every segment.
   */
  readonly shown: () => (key: string) => boolean;
  readonly row: (key: string) => IpRow | null;
  /**
   * mark is a value that stays the same (===) while the judgement of `key` has not moved (the latest verdict's key);
   * epoch one that stays the same while the cluster's inventory (Services, owners) has not changed.
   */
  readonly mark: (key: string) => unknown;
  readonly epoch: () => unknown;
  readonly summary: () => ClusterSummary;
  readonly openIncidents: () => Promise<number>;
  readonly agents: () => { up: number; total: number };
  readonly clock: () => number;
}

/**
 * dashboardUrl is a published address as this hub's pages may link to it: an http(s) URL, else null. Another
 * cluster's hub writes it; whoever can write the shared database must not put a `javascript:` link in front of an
 * operator.
 */
export function dashboardUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? `${u.origin}${u.pathname.replace(/\/$/, "")}` : null;
  } catch {
    return null;
  }
}

/** fleetIp drops what changes with every request or race from a row: counts, rates, the fastest, the latest times. */
export function fleetIp(r: IpRow): FleetIp {
  const { requests: _r, lastRequest: _l, changesPerHour: _c, askersChanged: _a, fastest: _f, lastHandover: _h, responders, ...rest } = r;
  return { ...rest, responders: responders.map(({ lastGratuitous: _g, ...x }) => x) };
}

const count = z.number().int().nonnegative();
const STATES = ["single", "multi-responder", "no-responder", "idle", "not-layer2"] as const satisfies readonly HubIpState[];

/** What a summary must hold to be shown: another cluster's hub wrote it, maybe of another version, maybe broken. */
const SummarySchema = z.object({
  ips: count,
  states: z.partialRecord(z.enum(STATES), count),
  openIncidents: count,
  agents: z.object({ up: count, total: count }),
  kubernetes: z.enum(["connected", "off"]),
  strictArp: z.enum(["exposed", "ok", "unknown"]),
});

/** What an IP row must hold to be shown (its other fields pass through). */
const IpSchema = z.looseObject({
  ip: z.string(),
  address: z.string(),
  vlan: z.number().int().nullable(),
  family: z.union([z.literal(4), z.literal(6)]),
  state: z.enum(STATES),
  services: z.array(z.looseObject({ namespace: z.string(), name: z.string() })),
  announcer: z.string().nullable(),
  expectedOwner: z.looseObject({ node: z.string() }).nullable(),
  responders: z.array(
    z.looseObject({ mac: z.string(), node: z.string().nullable(), vendor: z.string().nullable(), answering: z.boolean() }),
  ),
  findings: z.array(z.looseObject({ type: z.string(), detail: z.string() })),
  silentDropNodes: z.array(z.string()),
});

/** parsed reads published JSON against `schema`; null when it is not JSON or not of that shape. */
function parsed<T>(schema: z.ZodType<T>, json: string): T | null {
  try {
    const r = schema.safeParse(JSON.parse(json));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/**
 * The Fleet is the clusters seen from this hub. Several clusters' hubs (each with its own agents, Kubernetes access
 * and schema) share one PostgreSQL; each cluster's leading hub publishes its summary and its IP rows there, and every
 * hub reads the others' from it: one place to look at every cluster, with links to the hub that holds the detail.
 * What another hub published is checked before it is shown; what cannot be read is left out and counted.
 */
export class Fleet {
  /** What this hub last wrote, a digest of each row's JSON by key; null until it read what is in the database. */
  #written: Map<string, string> | null = null;
  /** Each row as last built: what it rested on (mark), its JSON's digest and its state. */
  #built = new Map<string, { mark: unknown; digest: string; state: HubIpState }>();
  #epoch: unknown = null;
  #rebuiltAt = -Infinity;

  constructor(readonly o: FleetOptions) {}

  get name(): string {
    return this.o.name;
  }

  /**
   * summary is this cluster at a glance, now: its IPs, and the states of those the fleet shows (every IP with
   * several or no responders among them), from the publish's rows when it has them.
   */
  async summary(states?: readonly HubIpState[], ips?: number): Promise<FleetSummary> {
    if (states === undefined) {
      const rows = this.o.rows();
      const shown = this.o.shown();
      return this.summary(
        rows.filter((r) => shown(r.ip)).map((r) => r.state),
        rows.length,
      );
    }
    const counts: Partial<Record<HubIpState, number>> = {};
    for (const state of states) counts[state] = (counts[state] ?? 0) + 1;
    const s = this.o.summary();
    return {
      ips: ips ?? states.length,
      states: counts,
      openIncidents: await this.o.openIncidents(),
      agents: this.o.agents(),
      kubernetes: s.kubernetes,
      strictArp: s.strictArp.verdict,
    };
  }

  /**
   * publish writes this cluster's summary, and the IP rows that changed since the last publish (and deletes those
   * gone): the leading hub's duty every PUBLISH_MS. It builds only the rows whose judgement moved, every row each
   * REBUILD_MS and when the inventory changed. It starts from what is in the database when it does not know (it just
   * started leading, its last write failed, or another hub pruned the cluster while it was silent).
   */
  async publish(): Promise<void> {
    const { repo, name } = this.o;
    const now = this.o.clock();
    const known = this.#written !== null && (await repo.count(name)) === this.#written.size ? this.#written : null;
    const written = known ?? new Map((await repo.keys(name)).map((k) => [k, ""]));
    this.#written = null;
    const epoch = this.o.epoch();
    const rebuild = epoch !== this.#epoch || now - this.#rebuiltAt >= REBUILD_MS;
    const built = new Map<string, { mark: unknown; digest: string; state: HubIpState }>();
    const next = new Map<string, string>();
    const changed: { key: string; json: string }[] = [];
    const shown = this.o.shown();
    const keys = this.o.keys();
    for (const key of keys) {
      if (!shown(key)) continue;
      const mark = this.o.mark(key);
      let b = rebuild || mark === undefined ? undefined : this.#built.get(key);
      let json: string | null = null;
      if (b === undefined || b.mark !== mark || written.get(key) !== b.digest) {
        const row = this.o.row(key);
        if (row === null) continue;
        json = JSON.stringify(fleetIp(row));
        b = { mark, digest: createHash("sha1").update(json).digest("base64"), state: row.state };
      }
      built.set(key, b);
      next.set(key, b.digest);
      if (json !== null && written.get(key) !== b.digest) changed.push({ key, json });
    }
    const gone = [...written.keys()].filter((k) => !next.has(k));
    this.#built = built;
    await repo.writeIps(name, changed, gone);
    await repo.report(
      name,
      this.o.url,
      await this.summary(
        [...built.values()].map((b) => b.state),
        keys.length,
      ),
    );
    this.#written = next;
    this.#epoch = epoch;
    if (rebuild) this.#rebuiltAt = now;
  }

  /** #others reads the other clusters' rows, their ages turned into this hub's time. */
  async #others(): Promise<(FleetEntry & { published: PublishedCluster })[]> {
    const now = this.o.clock();
    return (await this.o.repo.clusters())
      .filter((c) => c.name !== this.o.name)
      .map((c) => ({
        name: c.name,
        url: dashboardUrl(c.url),
        self: false,
        reporting: c.ageMs <= STALE_MS,
        reportedAt: now - Math.max(0, c.ageMs),
        published: c,
      }));
  }

  #self(): FleetEntry {
    return { name: this.o.name, url: this.o.url, self: true, reporting: true, reportedAt: this.o.clock() };
  }

  /**
   * directory lists the clusters by name with where their dashboards are, without their summaries: what the top
   * bar's switch needs on every page, without judging this cluster's every IP for it.
   */
  async directory(): Promise<FleetEntry[]> {
    const others = (await this.#others()).map(({ published: _p, ...c }) => c);
    return [this.#self(), ...others].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** clusters lists every cluster of the fleet by name: this one live, the others as their hubs last published. */
  async clusters(): Promise<FleetCluster[]> {
    const others = (await this.#others()).map(({ published, ...c }) => ({ ...c, summary: parsed(SummarySchema, published.summary) }));
    return [{ ...this.#self(), summary: await this.summary() }, ...others].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * ips is one cluster and its IP rows, each row with its cluster's name: this cluster's live, another's as its hub
   * last published them (true as of the cluster's `reportedAt`), with how many could not be read; null for a cluster
   * no hub of the fleet published.
   */
  async ips(name: string): Promise<{ cluster: FleetEntry; rows: (FleetIp & { cluster: string })[]; unreadable: number } | null> {
    if (name === this.o.name) {
      const shown = this.o.shown();
      const rows = this.o.rows().filter((r) => shown(r.ip));
      return { cluster: this.#self(), rows: rows.map((r) => ({ ...fleetIp(r), cluster: name })), unreadable: 0 };
    }
    const found = (await this.#others()).find((c) => c.name === name);
    if (found === undefined) return null;
    const { published: _p, ...cluster } = found;
    const rows: (FleetIp & { cluster: string })[] = [];
    let unreadable = 0;
    for (const p of await this.o.repo.ips(name)) {
      const entry = parsed(IpSchema, p.entry);
      if (entry === null) unreadable++;
      else rows.push({ ...(entry as unknown as FleetIp), cluster: name });
    }
    return { cluster, rows, unreadable };
  }
}
