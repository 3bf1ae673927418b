import Database from "better-sqlite3";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";

/** A Param is a value a query may bind: every dialect whohas targets takes these as they are. */
export type Param = string | number | bigint | null;

/**
 * Db is the query layer the store talks to. Queries are plain SQL in the subset SQLite and PostgreSQL share
 * (`?` placeholders, `INSERT ... ON CONFLICT ... DO UPDATE`, `RETURNING`, JSON kept as TEXT, times as integer
 * milliseconds), so a PostgreSQL Db (placeholders rewritten to $n, migrations per dialect) can run them unchanged.
 */
export interface Db {
  readonly dialect: "sqlite";
  /** exec runs statements without parameters (migrations). */
  exec(sql: string): void;
  run(sql: string, params?: readonly Param[]): { readonly changes: number; readonly lastInsertRowid: number | bigint };
  get<T>(sql: string, params?: readonly Param[]): T | undefined;
  all<T>(sql: string, params?: readonly Param[]): T[];
  /** tx runs `fn` in one transaction: all of it is stored, or none. */
  tx<T>(fn: () => T): T;
  close(): void;
}

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
 */
export function openSqlite(path: string): Db {
  if (path !== ":memory:") privateFile(path);
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  // NORMAL in WAL mode: a commit survives the process being killed; only a power loss may lose the last commits.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  const cache = new Map<string, Database.Statement>();
  const stmt = (sql: string) => {
    let s = cache.get(sql);
    if (s === undefined) {
      s = db.prepare(sql);
      cache.set(sql, s);
    }
    return s;
  };
  return {
    dialect: "sqlite",
    exec: (sql) => void db.exec(sql),
    run: (sql, params = []) => {
      const r = stmt(sql).run(...params);
      return { changes: r.changes, lastInsertRowid: r.lastInsertRowid };
    },
    get: <T>(sql: string, params: readonly Param[] = []) => stmt(sql).get(...params) as T | undefined,
    all: <T>(sql: string, params: readonly Param[] = []) => stmt(sql).all(...params) as T[],
    tx: <T>(fn: () => T): T => db.transaction(fn)(),
    close: () => db.close(),
  };
}
