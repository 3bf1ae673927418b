import type { Db } from "./db.js";
import { MIGRATIONS } from "./migrations.js";

/** MIGRATION_LOCK names the PostgreSQL advisory lock under which hubs starting together migrate one at a time. */
export const MIGRATION_LOCK = 0x77686f68;

const SCHEMA_TABLE = {
  sqlite: "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  postgres: "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
} as const;

/**
 * migrate brings the schema to the newest version, each migration in its own transaction, and returns the versions
 * it applied. A database newer than this build is refused rather than guessed at. On PostgreSQL each step holds an
 * advisory lock and reads the version again under it: replicas starting at once apply each migration once.
 */
export async function migrate(db: Db, now: number): Promise<number[]> {
  const newest = MIGRATIONS.at(-1)?.version ?? 0;
  const applied: number[] = [];
  for (;;) {
    const next = await db.tx(async (t) => {
      if (t.dialect === "postgres") await t.get("SELECT pg_advisory_xact_lock(?)", [MIGRATION_LOCK]);
      await t.exec(SCHEMA_TABLE[t.dialect]);
      const current = (await t.get<{ v: number | null }>("SELECT MAX(version) AS v FROM schema_migrations"))?.v ?? 0;
      if (current > newest)
        throw new Error(
          `the database is at schema version ${current}, newer than this hub (${newest}): run a newer whohas-hub, or restore a backup`,
        );
      const m = MIGRATIONS.find((x) => x.version > current);
      if (m === undefined) return null;
      await t.exec(t.dialect === "postgres" ? m.postgres : m.sql);
      if (t.dialect === "sqlite") await m.then?.(t);
      await t.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, now]);
      return m.version;
    });
    if (next === null) return applied;
    applied.push(next);
  }
}
