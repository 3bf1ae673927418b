import type { LocalUser } from "./auth/auth.js";
import type { Store } from "./store/store.js";

/** RETENTION_KEY: the retention an admin set in Settings; it wins over storage.retention until reset. */
const RETENTION_KEY = "storage.retentionMs";
/** MIN_RETENTION_MS / MAX_RETENTION_MS: what Settings accepts (an hour to a year). */
export const MIN_RETENTION_MS = 3_600_000;
export const MAX_RETENTION_MS = 366 * 86_400_000;

/**
 * Settings are what admins change at run time, stored in the database; the config file gives the defaults. Each
 * change is audited by the caller.
 */
export class Settings {
  constructor(
    readonly store: Store,
    /** storage.retention from the config file. */
    readonly fileRetentionMs: number,
    readonly users: readonly LocalUser[],
    readonly methods: { readonly local: boolean; readonly proxy: boolean },
  ) {}

  /** retention is the retention in force and where it comes from. */
  retention(): { readonly ms: number; readonly source: "settings" | "config" } {
    const set = this.store.setting<number>(RETENTION_KEY);
    return set === null ? { ms: this.fileRetentionMs, source: "config" } : { ms: set, source: "settings" };
  }

  /** setRetention stores a retention (null: back to the config file's). */
  setRetention(ms: number | null, now: number): void {
    if (ms === null) this.store.setSetting(RETENTION_KEY, null, now);
    else this.store.setSetting(RETENTION_KEY, ms, now);
  }
}
