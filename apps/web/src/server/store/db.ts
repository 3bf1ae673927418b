/** A Param is a value a query may bind: every engine whohas runs on takes these as they are. */
export type Param = string | number | bigint | null;

/** What a statement changed. */
export interface RunResult {
  readonly changes: number;
}

/** The engines the store runs on: SQLite embedded (the default), PostgreSQL when one machine is outgrown. */
export type Dialect = "sqlite" | "postgres";

/**
 * Db is the query layer the store talks to. Queries are plain SQL in the subset SQLite and PostgreSQL share: `?`
 * placeholders (the PostgreSQL Db numbers them), `INSERT ... ON CONFLICT ... DO UPDATE`, `RETURNING`, JSON kept as
 * TEXT, times as integer milliseconds, camelCase aliases quoted. Only the schema differs per engine (migrations.ts).
 * Every call is asynchronous: PostgreSQL answers over the network.
 */
export interface Db {
  readonly dialect: Dialect;
  /** exec runs statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  run(sql: string, params?: readonly Param[]): Promise<RunResult>;
  get<T>(sql: string, params?: readonly Param[]): Promise<T | undefined>;
  all<T>(sql: string, params?: readonly Param[]): Promise<T[]>;
  /**
   * tx runs `fn` in one transaction, all of it stored or none: `fn` queries through the Db it is given. Nothing else
   * the hub writes lands inside it. A tx inside a tx is part of the outer one.
   */
  tx<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * integers checks what a query binds: every number the store keeps is an integer (times in milliseconds, counts,
 * ids); a fraction is a bug upstream that PostgreSQL would refuse where SQLite keeps it, so both engines refuse it.
 */
export function integers(params: readonly Param[]): readonly Param[] {
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (typeof p === "number" && !Number.isSafeInteger(p)) throw new Error(`the store keeps integers: parameter ${i + 1} is ${p}`);
  }
  return params;
}

/** The errors of a store out of reach for a while: the server restarting or unreachable, the file busy or full. */
const TRANSIENT_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "53300"]);

/**
 * transient tells an error worth trying again later (the store away for a moment) from one that would fail again
 * (a query the store refuses): PostgreSQL's connection errors (class 08, 57P01-57P03 shut down or starting, 53300 too
 * many connections), the network's, and SQLite's busy, locked, I/O and full disk.
 */
export function transient(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  if (typeof code === "string")
    return TRANSIENT_CODES.has(code) || code.startsWith("08") || /^57P0[123]$/.test(code) || /^SQLITE_(BUSY|LOCKED|IOERR|FULL)/.test(code);
  // The driver's own words when the server closed the connection under a query.
  return e instanceof Error && /Connection terminated|connection timeout|Client has encountered a connection error/i.test(e.message);
}

/** MAX_PARAMS bounds the parameters of one statement (SQLite takes 32,766, PostgreSQL 65,535). */
export const MAX_PARAMS = 32_000;

/**
 * batches splits `rows` into runs that fit one multi-row statement of `width` parameters a row, and gives each run's
 * `VALUES` list: one statement writes hundreds of rows, a round trip per batch rather than per row.
 */
export function* batches<T>(rows: readonly T[], width: number, most = 500): Generator<{ rows: readonly T[]; values: string }> {
  const size = Math.max(1, Math.min(most, Math.floor(MAX_PARAMS / width)));
  const one = `(${Array.from({ length: width }, () => "?").join(", ")})`;
  for (let i = 0; i < rows.length; i += size) {
    const part = rows.slice(i, i + size);
    yield { rows: part, values: Array.from(part, () => one).join(", ") };
  }
}
