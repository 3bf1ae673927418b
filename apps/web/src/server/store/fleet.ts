import type { Db } from "./db.js";

/** FLEET_SCHEMA holds, in PostgreSQL, what every cluster's hub publishes for the others: the fleet's overview. */
export const FLEET_SCHEMA = "whohas_fleet";

/** A ClusterReport is one cluster's row in the fleet: its hub's dashboard and its summary, as last published. */
export interface ClusterReport<S> {
  readonly name: string;
  readonly url: string | null;
  readonly summary: S;
  readonly reportedAt: number;
}

/** A PublishedIp is one IP's row as its cluster's hub published it. */
export interface PublishedIp<E> {
  readonly key: string;
  readonly entry: E;
  readonly reportedAt: number;
}

/** ROWS_PER_STATEMENT: IP rows written per INSERT (a few hundred parameters, under both engines' bounds). */
const ROWS_PER_STATEMENT = 100;

/**
 * The FleetRepo keeps the fleet's overview: each cluster's summary and IP rows, written by that cluster's leading
 * hub, read by every hub of the fleet. In PostgreSQL the tables are shared by every cluster's schema (FLEET_SCHEMA);
 * in SQLite they hold the one cluster of the file.
 */
export class FleetRepo {
  readonly #clusters: string;
  readonly #ips: string;

  constructor(readonly db: Db) {
    const postgres = db.dialect === "postgres";
    this.#clusters = postgres ? `${FLEET_SCHEMA}.clusters` : "fleet_clusters";
    this.#ips = postgres ? `${FLEET_SCHEMA}.ips` : "fleet_ips";
  }

  /** report writes a cluster's summary (every publish: its time says the cluster's hub is alive). */
  async report(name: string, url: string | null, summary: unknown, now: number): Promise<void> {
    await this.db.run(
      `INSERT INTO ${this.#clusters} (name, url, summary, reported_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET url = excluded.url, summary = excluded.summary, reported_at = excluded.reported_at`,
      [name, url, JSON.stringify(summary), now],
    );
  }

  /** writeIps writes the IP rows of `cluster` that changed and deletes those that are gone, in one transaction. */
  async writeIps(
    cluster: string,
    changed: readonly { key: string; entry: unknown }[],
    gone: readonly string[],
    now: number,
  ): Promise<void> {
    if (changed.length === 0 && gone.length === 0) return;
    await this.db.tx(async (t) => {
      for (let i = 0; i < changed.length; i += ROWS_PER_STATEMENT) {
        const part = changed.slice(i, i + ROWS_PER_STATEMENT);
        await t.run(
          `INSERT INTO ${this.#ips} (cluster, key, entry, reported_at) VALUES ${part.map(() => "(?, ?, ?, ?)").join(", ")}
           ON CONFLICT (cluster, key) DO UPDATE SET entry = excluded.entry, reported_at = excluded.reported_at`,
          part.flatMap((r) => [cluster, r.key, JSON.stringify(r.entry), now]),
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

  /** clusters lists every cluster that published, by name. */
  async clusters<S>(): Promise<ClusterReport<S>[]> {
    const rows = await this.db.all<{ name: string; url: string | null; summary: string; reportedAt: number }>(
      `SELECT name, url, summary, reported_at AS "reportedAt" FROM ${this.#clusters} ORDER BY name`,
    );
    return rows.map((r) => ({ name: r.name, url: r.url, summary: JSON.parse(r.summary) as S, reportedAt: r.reportedAt }));
  }

  /** ips lists the IP rows a cluster published, by key. */
  async ips<E>(cluster: string): Promise<PublishedIp<E>[]> {
    const rows = await this.db.all<{ key: string; entry: string; reportedAt: number }>(
      `SELECT key, entry, reported_at AS "reportedAt" FROM ${this.#ips} WHERE cluster = ? ORDER BY key`,
      [cluster],
    );
    return rows.map((r) => ({ key: r.key, entry: JSON.parse(r.entry) as E, reportedAt: r.reportedAt }));
  }

  /** prune forgets the clusters (and their IPs) that have not published since `cut`: they were taken down. */
  async prune(cut: number): Promise<number> {
    const gone = await this.db.all<{ name: string }>(`SELECT name FROM ${this.#clusters} WHERE reported_at < ?`, [cut]);
    let n = 0;
    for (const { name } of gone) {
      n += (await this.db.run(`DELETE FROM ${this.#ips} WHERE cluster = ?`, [name])).changes;
      n += (await this.db.run(`DELETE FROM ${this.#clusters} WHERE name = ? AND reported_at < ?`, [name, cut])).changes;
    }
    return n;
  }
}
