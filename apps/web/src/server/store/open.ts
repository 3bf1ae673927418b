import type { Db } from "./db.js";
import { DEFAULT_CLUSTER } from "@whohas/core";
import { clusterSchema, openPostgres, where } from "./postgres.js";
import { openSqlite } from "./sqlite.js";

/** openDb opens the database the configuration names: PostgreSQL at `url` when given, else SQLite at `path`. */
export async function openDb(
  storage: { readonly path: string; readonly url: string | null },
  warn: (event: string, fields: Record<string, unknown>) => void,
  cluster: string = DEFAULT_CLUSTER,
): Promise<{ db: Db; where: string }> {
  if (storage.url !== null)
    return {
      db: await openPostgres(storage.url, { warn, cluster }),
      where: `postgres://${where(storage.url)} (schema ${clusterSchema(cluster)})`,
    };
  return { db: openSqlite(storage.path), where: storage.path };
}
