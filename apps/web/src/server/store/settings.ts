import type { Db } from "./db.js";

/** The SettingsRepo keeps small named values (JSON) that outlive a restart: Settings' choices, the hub's own keys. */
export class SettingsRepo {
  constructor(readonly db: Db) {}

  get<T>(key: string): T | null {
    const r = this.db.get<{ value: string }>("SELECT value FROM settings WHERE key = ?", [key]);
    return r === undefined ? null : (JSON.parse(r.value) as T);
  }

  set(key: string, value: unknown, now: number): void {
    this.db.run(
      "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
      [key, JSON.stringify(value), now],
    );
  }
}
