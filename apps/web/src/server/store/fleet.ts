import type { Db } from "./db.js";

/** A PublishedCluster is one cluster's row in the fleet as stored: its summary still as its hub wrote it. */
export interface PublishedCluster {
  readonly name: string;
  readonly url: string | null;
  /** JSON, as the cluster's hub wrote it: the reader checks it. */
  readonly summary: string;
  /** How long ago its hub published, by the database's clock (every hub's clock may be off, the database's is one). */
  readonly ageMs: number;
}

/** ROWS_PER_STATEMENT: IP rows written per INSERT (a few hundred parameters, under both engines' bounds). */
const ROWS_PER_STATEMENT = 100;

/** The database's own time in ms since the epoch, in each engine's words. */
const DB_NOW = {
  postgres: "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint",
  sqlite: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
} as const;

/**
 * The FleetRepo keeps the fleet's overview: each cluster's summary and IP rows, written by that cluster's leading
 * hub, read by every hub of the fleet. In PostgreSQL the tables are in schema public, which every cluster's hub
 * names in full (a named cluster's own tables are in its schema); in SQLite they hold the one cluster of the file.
 * Times are the database's: hubs' clocks may disagree, and whether a cluster still reports must not depend on it.
 */
export class FleetRepo {
  readonly #clusters: string;
  readonly #ips: string;
  readonly #now: string;

  constructor(readonly db: Db) {
    const postgres = db.dialect === "postgres";
    this.#clusters = postgres ? "public.fleet_clusters" : "fleet_clusters";
    this.#ips = postgres ? "public.fleet_ips" : "fleet_ips";
    this.#now = DB_NOW[db.dialect];
  }

  /** report writes a cluster's summary (every publish: its time says the cluster's hub is alive). */
  async report(name: string, url: string | null, summary: unknown): Promise<void> {
    await this.db.run(
      `INSERT INTO ${this.#clusters} (name, url, summary, reported_at) VALUES (?, ?, ?, ${this.#now})
       ON CONFLICT (name) DO UPDATE SET url = excluded.url, summary = excluded.summary, reported_at = excluded.reported_at`,
      [name, url, JSON.stringify(summary)],
    );
  }

  /**
   * writeIps writes the IP rows of `cluster` that changed (each its JSON) and deletes those that are gone, in one
   * transaction.
   */
  async writeIps(cluster: string, changed: readonly { key: string; json: string }[], gone: readonly string[]): Promise<void> {
    if (changed.length === 0 && gone.length === 0) return;
    await this.db.tx(async (t) => {
      for (let i = 0; i < changed.length; i += ROWS_PER_STATEMENT) {
        const part = changed.slice(i, i + ROWS_PER_STATEMENT);
        await t.run(
          `INSERT INTO ${this.#ips} (cluster, key, entry, reported_at) VALUES ${part.map(() => `(?, ?, ?, ${this.#now})`).join(", ")}
           ON CONFLICT (cluster, key) DO UPDATE SET entry = excluded.entry, reported_at = excluded.reported_at`,
          part.flatMap((r) => [cluster, r.key, r.json]),
        );
      }
      for (let i = 0; i < gone.length; i += ROWS_PER_STATEMENT) {
        const part = gone.slice(i, i + ROWS_PER_STATEMENT);
        await t.run(`DELETE FROM ${this.#ips} WHERE cluster = ? AND key IN (${part.map(() => "?").join(", ")})`, [cluster, ...part]);
      }
    });
  }

  /** keys lists the IP rows a cluster has published (a new leader deletes those it no longer holds). */
  async keys(cluster: string): Promise<string[]> {
    return (await this.db.all<{ key: string }>(`SELECT key FROM ${this.#ips} WHERE cluster = ?`, [cluster])).map((r) => r.key);
  }

  /** count is how many IP rows a cluster has published (fewer than its hub wrote: another hub pruned them). */
  async count(cluster: string): Promise<number> {
    return (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${this.#ips} WHERE cluster = ?`, [cluster]))?.n ?? 0;
  }

  /** clusters lists every cluster that published, by name. */
  async clusters(): Promise<PublishedCluster[]> {
    return this.db.all<PublishedCluster>(
      `SELECT name, url, summary, ${this.#now} - reported_at AS "ageMs" FROM ${this.#clusters} ORDER BY name`,
    );
  }

  /** ips lists the IP rows a cluster published, by key, each still as its hub wrote it (JSON). */
  async ips(cluster: string): Promise<{ key: string; entry: string }[]> {
    return this.db.all<{ key: string; entry: string }>(`SELECT key, entry FROM ${this.#ips} WHERE cluster = ? ORDER BY key`, [cluster]);
  }

  /**
   * prune forgets the clusters (and their IPs) that have not published for `silentMs`: they were taken down or
   * renamed. Their hub publishing again puts them back whole.
   */
  async prune(silentMs: number): Promise<number> {
    const gone = await this.db.all<{ name: string }>(`SELECT name FROM ${this.#clusters} WHERE reported_at < ${this.#now} - ?`, [silentMs]);
    let n = 0;
    for (const { name } of gone) {
      n += (await this.db.run(`DELETE FROM ${this.#ips} WHERE cluster = ?`, [name])).changes;
      n += (await this.db.run(`DELETE FROM ${this.#clusters} WHERE name = ? AND reported_at < ${this.#now} - ?`, [name, silentMs])).changes;
    }
    return n;
  }
}
