import Database from "better-sqlite3";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { integers, type Db, type Param } from "./db.js";

/**
 * privateFile makes the database readable by the hub's user only: it holds webhook secrets and the key that signs
 * CSRF tokens. A directory the hub creates is 0700; the database file is created 0600 (and set so if it was not),
 * and SQLite gives its -wal and -shm files the database's own mode.
 */
function privateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
  for (const p of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(p)) chmodSync(p, 0o600);
}

/**
 * openSqlite opens (creating when needed) a SQLite database in WAL mode: readers never block the writer, and a
 * committed transaction survives a crash of the process. `:memory:` is accepted for tests.
 *
 * SQLite answers at once; the Db is asynchronous only to share the store with PostgreSQL. One connection serves the
 * whole hub, so while a transaction awaits between its statements every other query waits for it to end (else it
 * would land inside it).
 */
export function openSqlite(path: string): Db {
  if (path !== ":memory:") privateFile(path);
  const raw = new Database(path);
  raw.pragma("journal_mode = WAL");
  // NORMAL in WAL mode: a commit survives the process being killed; only a power loss may lose the last commits.
  raw.pragma("synchronous = NORMAL");
  raw.pragma("foreign_keys = ON");
  raw.pragma("busy_timeout = 5000");
  const cache = new Map<string, Database.Statement>();
  const stmt = (sql: string) => {
    let s = cache.get(sql);
    if (s === undefined) {
      s = raw.prepare(sql);
      cache.set(sql, s);
    }
    return s;
  };
  /**
   * The queue: while a transaction runs (or waits its turn), every other query and transaction takes its turn after
   * it, first come first served; with nothing queued a query runs at once. A turn is taken in the same step as the
   * check, so two callers in one moment cannot both find the connection free.
   */
  let queued = 0;
  let tail: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(body: () => T | Promise<T>): Promise<T> => {
    queued++;
    const turn = tail.then(body).finally(() => queued--);
    tail = turn.catch(() => undefined);
    return turn;
  };
  const now = <T>(body: () => T): Promise<T> => {
    if (queued > 0) return inTurn(body);
    try {
      return Promise.resolve(body());
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  };

  const check = (params: readonly Param[]) => integers(params);
  const inTx: Db = {
    dialect: "sqlite",
    exec: (sql) => Promise.resolve(void raw.exec(sql)),
    run: (sql, params: readonly Param[] = []) => Promise.resolve({ changes: stmt(sql).run(...check(params)).changes }),
    get: <T>(sql: string, params: readonly Param[] = []) => Promise.resolve(stmt(sql).get(...check(params)) as T | undefined),
    all: <T>(sql: string, params: readonly Param[] = []) => Promise.resolve(stmt(sql).all(...check(params)) as T[]),
    tx: (fn) => fn(inTx),
    close: () => Promise.reject(new Error("the database cannot be closed inside a transaction")),
  };
  return {
    dialect: "sqlite",
    exec: (sql) => now(() => void raw.exec(sql)),
    run: (sql, params = []) => now(() => ({ changes: stmt(sql).run(...check(params)).changes })),
    get: <T>(sql: string, params: readonly Param[] = []) => now(() => stmt(sql).get(...check(params)) as T | undefined),
    all: <T>(sql: string, params: readonly Param[] = []) => now(() => stmt(sql).all(...check(params)) as T[]),
    tx: <T>(fn: (db: Db) => Promise<T>): Promise<T> =>
      inTurn(async () => {
        raw.exec("BEGIN IMMEDIATE");
        try {
          const value = await fn(inTx);
          raw.exec("COMMIT");
          return value;
        } catch (e) {
          if (raw.inTransaction) raw.exec("ROLLBACK");
          throw e;
        }
      }),
    close: () => inTurn(() => void raw.close()),
  };
}
