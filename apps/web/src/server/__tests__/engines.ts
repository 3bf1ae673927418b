// The store's engines for tests: SQLite in a temporary file, and a real PostgreSQL (one throwaway server per test
// file, a database of its own per test). Each test's databases are closed and removed after it.
import { afterAll, afterEach, beforeAll } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { Db } from "../store/db.js";
import { openPostgres } from "../store/postgres.js";
import { openSqlite } from "../store/sqlite.js";
import { Store } from "../store/store.js";
// The lab runs the hub, so the hub cannot depend on the lab's package: its throwaway PostgreSQL is imported by path.
import { startPostgres, type TestPostgres } from "../../../../../packages/lab/src/postgres.js";

const dirs: string[] = [];
export function tmpDb(): string {
  const d = mkdtempSync(join(tmpdir(), "whohas-store-"));
  dirs.push(d);
  return join(d, "sub", "whohas.db");
}
export const opened: Db[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

// One real PostgreSQL server per test file; each test gets a database of its own.
let server: TestPostgres | null = null;
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(() => server?.stop());
let databases = 0;

/**
 * An Engine makes empty databases of one kind. `place` names a database that outlives one Db, for the tests of what
 * a second process (a restart, another hub) finds.
 */
export interface Engine {
  readonly name: string;
  place(): Promise<string>;
  /** open opens the database at `place`; on PostgreSQL, as the hub of `cluster` (its own schema) when given. */
  open(place: string, cluster?: string): Promise<Db>;
}
export const ENGINES: readonly Engine[] = [
  { name: "SQLite", place: () => Promise.resolve(tmpDb()), open: (path) => Promise.resolve(openSqlite(path)) },
  {
    name: "PostgreSQL",
    place: async () => {
      if (server === null) throw new Error("no PostgreSQL server");
      const name = `whohas_t${++databases}`;
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      const u = new URL(server.url);
      u.pathname = `/${name}`;
      return u.toString();
    },
    open: (url, cluster) => openPostgres(url, { cluster }),
  },
];
/** server is the test file's PostgreSQL (its URL for tools of their own, such as a leader's lock). */
export function pgServer(): TestPostgres {
  if (server === null) throw new Error("no PostgreSQL server");
  return server;
}
export const fresh = async (e: Engine): Promise<Db> => {
  const db = await e.open(await e.place());
  opened.push(db);
  return db;
};
export const freshStore = async (e: Engine, now = 0) => Store.open(await fresh(e), now);
