import type { Db } from "./db.js";
import { openPostgres, where } from "./postgres.js";
import { openSqlite } from "./sqlite.js";

/** openDb opens the database the configuration names: PostgreSQL at `url` when given, else SQLite at `path`. */
export async function openDb(
  storage: { readonly path: string; readonly url: string | null },
  warn: (event: string, fields: Record<string, unknown>) => void,
): Promise<{ db: Db; where: string }> {
  if (storage.url !== null) return { db: await openPostgres(storage.url, { warn }), where: `postgres://${where(storage.url)}` };
  return { db: openSqlite(storage.path), where: storage.path };
}
