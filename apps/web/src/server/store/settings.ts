import type { Db } from "./db.js";

/** The SettingsRepo keeps small named values (JSON) that outlive a restart: Settings' choices, the hub's own keys. */
export class SettingsRepo {
  constructor(readonly db: Db) {}

  async get<T>(key: string): Promise<T | null> {
    const r = await this.db.get<{ value: string }>("SELECT value FROM settings WHERE key = ?", [key]);
    return r === undefined ? null : (JSON.parse(r.value) as T);
  }

  /**
   * keep stores `value` under `key` unless a value is there already, and returns the one that holds: hubs sharing one
   * database that start at once agree on the first one written.
   */
  async keep<T>(key: string, value: T, now: number): Promise<T> {
    await this.db.run("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING", [
      key,
      JSON.stringify(value),
      now,
    ]);
    return (await this.get<T>(key)) ?? value;
  }

  async set(key: string, value: unknown, now: number): Promise<void> {
    await this.db.run(
      "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
      [key, JSON.stringify(value), now],
    );
  }
}
