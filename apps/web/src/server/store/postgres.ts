import pg from "pg";
import { DEFAULT_CLUSTER } from "@whohas/core";
import { integers, type Db, type Param } from "./db.js";
import { MIGRATION_LOCK } from "./migrate.js";

/**
 * numbered rewrites `?` placeholders to PostgreSQL's `$1, $2, …`, leaving quoted text, identifiers and `--` comments alone: the store
 * writes one SQL for both engines.
 */
export function numbered(sql: string): string {
  let out = "";
  let n = 0;
  let quote: string | null = null;
  for (const c of sql) {
    if (quote !== null) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "-" && out.endsWith("-")) quote = "\n";
    else if (c === "?") {
      out += `$${++n}`;
      continue;
    }
    out += c;
  }
  return out;
}

/** A Logger for what happens to PostgreSQL connections out of any query (a server restart, a network cut). */
type Warn = (event: string, fields: Record<string, unknown>) => void;

/** What the store reads as numbers: int8 (times in ms, COUNT) and numeric (SUM) come as text from `pg` by default. */
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === 20 || oid === 1700) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format) as (v: string) => unknown;
  }) as typeof pg.types.getTypeParser,
};

/**
 * clusterSchema is the PostgreSQL schema that holds a cluster's tables when several clusters' hubs share one
 * database: `whohas_NAME` (hyphens as underscores; a cluster name has no underscore, so no two names meet). The
 * default cluster keeps `public`, where a single hub's tables have always been. The fleet's shared tables are in
 * public, named in full (fleet.ts).
 */
export function clusterSchema(cluster: string): string {
  return cluster === DEFAULT_CLUSTER ? "public" : `whohas_${cluster.replaceAll("-", "_")}`;
}

/**
 * sessionOptions are the server settings of each connection a hub opens for `cluster`: its schema first on the
 * search path, so the store's unqualified table names are that cluster's.
 */
export function sessionOptions(cluster: string): { options?: string } {
  const schema = clusterSchema(cluster);
  return schema === "public" ? {} : { options: `-c search_path=${schema}` };
}

/** where names the server for messages, without the password a URL may hold. */
export function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || "localhost"}${u.port === "" ? "" : `:${u.port}`}${u.pathname}`;
  } catch {
    return "(an invalid URL)";
  }
}

/**
 * placeCluster makes a named cluster's schema when it is missing (a role that may not create schemas uses one its DBA
 * made), under the migrations' lock (replicas starting at once would race), and checks that the pool's connections
 * use it; it returns what is wrong, or null. `?options=` in storage.url replaces the search path the hub sets: the
 * cluster's tables would land in another cluster's schema.
 */
async function placeCluster(pool: pg.Pool, cluster: string): Promise<string | null> {
  const schema = clusterSchema(cluster);
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${schema}`);
    await client.query("COMMIT");
    const at = (await client.query<{ s: string | null }>("SELECT current_schema() AS s")).rows[0]?.s ?? null;
    return at === schema
      ? null
      : `cluster ${cluster}'s connections use schema ${at ?? "(none)"}, not ${schema}: remove options= from storage.url (it replaces the search path that keeps each cluster's tables in its own schema)`;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    return `cannot create schema ${schema} for cluster ${cluster} (${(e as Error).message}): grant the hub's role CREATE on the database, or create the schema for it (CREATE SCHEMA ${schema} AUTHORIZATION its_role)`;
  } finally {
    client.release();
  }
}

/**
 * openPostgres connects a pool to the PostgreSQL server at `url` (postgres://user:password@host:port/database; the
 * `pg` driver's parameters, such as sslmode, go in its query) and checks it answers. Each transaction takes one
 * connection of the pool for itself; other queries go on beside it.
 */
export async function openPostgres(url: string, o: { max?: number; warn?: Warn; cluster?: string } = {}): Promise<Db> {
  const cluster = o.cluster ?? DEFAULT_CLUSTER;
  const pool = new pg.Pool({
    connectionString: url,
    max: o.max ?? 8,
    types: TYPES,
    connectionTimeoutMillis: 10_000,
    ...sessionOptions(cluster),
  });
  // An idle connection the server drops (a restart, a failover) is an event on the pool, not a query's error: told,
  // and the pool opens a new one for the next query.
  pool.on("error", (e) => o.warn?.("store.postgres_connection_lost", { server: where(url), error: e.message }));
  try {
    await pool.query("SELECT 1");
  } catch (e) {
    await pool.end().catch(() => undefined);
    throw new Error(`cannot reach PostgreSQL at ${where(url)}: ${(e as Error).message}`);
  }
  if (cluster !== DEFAULT_CLUSTER) {
    const problem = await placeCluster(pool, cluster);
    if (problem !== null) {
      await pool.end().catch(() => undefined);
      throw new Error(`PostgreSQL at ${where(url)}: ${problem}`);
    }
  }
  const text = new Map<string, string>();
  const sqlOf = (sql: string) => {
    let t = text.get(sql);
    if (t === undefined) text.set(sql, (t = numbered(sql)));
    return t;
  };
  const over = (q: pg.Pool | pg.PoolClient, tx: Db["tx"] | null): Db => {
    const db: Db = {
      dialect: "postgres",
      exec: async (sql) => void (await q.query(sql)),
      run: async (sql, params: readonly Param[] = []) => ({
        changes: (await q.query(sqlOf(sql), integers(params) as Param[])).rowCount ?? 0,
      }),
      get: async <T>(sql: string, params: readonly Param[] = []) =>
        (await q.query(sqlOf(sql), integers(params) as Param[])).rows[0] as T | undefined,
      all: async <T>(sql: string, params: readonly Param[] = []) => (await q.query(sqlOf(sql), integers(params) as Param[])).rows as T[],
      tx: tx ?? ((fn) => fn(db)),
      close: () => Promise.reject(new Error("the database cannot be closed inside a transaction")),
    };
    return db;
  };
  const root = over(pool, async (fn) => {
    const client = await pool.connect();
    // A client taken out of the pool has no listener of its own: the server going away mid-transaction would be an
    // uncaught error. The query in flight fails with it; this tells it once.
    const lost = (e: Error) => o.warn?.("store.postgres_connection_lost", { server: where(url), error: e.message });
    client.on("error", lost);
    let broken = false;
    try {
      await client.query("BEGIN");
      const value = await fn(over(client, null));
      await client.query("COMMIT");
      return value;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => (broken = true));
      throw e;
    } finally {
      client.off("error", lost);
      client.release(broken);
    }
  });
  return { ...root, close: () => pool.end() };
}
