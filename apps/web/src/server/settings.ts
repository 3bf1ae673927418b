import { newApiToken, type LocalUser } from "./auth/auth.js";
import type { AccessRepo, ApiToken } from "./store/access.js";
import type { AuditEntry, AuditLog } from "./store/audit.js";
import type { SettingsRepo } from "./store/settings.js";

/** RETENTION_KEY: the retention an admin set in Settings; it wins over storage.retention until reset. */
const RETENTION_KEY = "storage.retentionMs";
/** MIN_RETENTION_MS / MAX_RETENTION_MS: what Settings accepts (an hour to a year). */
export const MIN_RETENTION_MS = 3_600_000;
export const MAX_RETENTION_MS = 366 * 86_400_000;

/** A SettingsRefused is a change that could not be made, with the reason (it is audited as refused). */
export class SettingsRefused extends Error {
  constructor(
    readonly code: "CONFLICT" | "NOT_FOUND",
    message: string,
  ) {
    super(message);
  }
}

export interface SettingsOptions {
  readonly settings: SettingsRepo;
  readonly access: AccessRepo;
  readonly audit: AuditLog;
  /** storage.retention from the config file. */
  readonly fileRetentionMs: number;
  readonly users: readonly LocalUser[];
  readonly methods: { readonly local: boolean; readonly proxy: boolean };
  readonly clock: () => number;
}

/**
 * Settings are what admins change at run time (retention, read-API tokens) and read (users, the audit log), stored in
 * the database; the config file gives the defaults. Every change is audited here.
 */
export class Settings {
  constructor(readonly o: SettingsOptions) {}

  get fileRetentionMs(): number {
    return this.o.fileRetentionMs;
  }

  get users(): readonly LocalUser[] {
    return this.o.users;
  }

  get methods(): { readonly local: boolean; readonly proxy: boolean } {
    return this.o.methods;
  }

  async #audit(e: Omit<AuditEntry, "t">): Promise<void> {
    await this.o.audit.append({ t: this.o.clock(), ...e });
  }

  /** retention is the retention in force and where it comes from. */
  async retention(): Promise<{ readonly ms: number; readonly source: "settings" | "config" }> {
    const set = await this.o.settings.get<number>(RETENTION_KEY);
    return set === null ? { ms: this.o.fileRetentionMs, source: "config" } : { ms: set, source: "settings" };
  }

  /** setRetention stores a retention (null: back to the config file's); audited. */
  async setRetention(ms: number | null, actor: string): Promise<{ readonly ms: number; readonly source: "settings" | "config" }> {
    const before = await this.retention();
    await this.o.settings.set(RETENTION_KEY, ms, this.o.clock());
    const after = await this.retention();
    await this.#audit({
      actor,
      action: "settings.retention",
      input: { ms },
      outcome: "ok",
      detail: `${before.ms} ms (${before.source}) -> ${after.ms} ms (${after.source})`,
    });
    return after;
  }

  tokens(): Promise<ApiToken[]> {
    return this.o.access.apiTokens();
  }

  /** createToken makes a read-API token; the token is in this answer only (a hash is stored); audited. */
  async createToken(name: string, actor: string): Promise<ApiToken & { readonly token: string }> {
    if ((await this.o.access.apiTokens()).some((t) => t.name === name)) {
      await this.#audit({ actor, action: "token.create", input: { name }, outcome: "refused", detail: "name taken" });
      throw new SettingsRefused("CONFLICT", `a token named ${name} exists: revoke it first or pick another name`);
    }
    const t = newApiToken();
    const stored = await this.o.access.createApiToken({
      name,
      hash: t.hash,
      prefix: t.prefix,
      createdBy: actor,
      createdAt: this.o.clock(),
    });
    await this.#audit({ actor, action: "token.create", input: { name }, outcome: "ok", detail: `prefix ${t.prefix}` });
    return { ...stored, token: t.token };
  }

  /** revokeToken deletes a read-API token at once; audited. */
  async revokeToken(id: number, actor: string): Promise<void> {
    const ok = await this.o.access.deleteApiToken(id);
    await this.#audit({
      actor,
      action: "token.revoke",
      input: { id },
      outcome: ok ? "ok" : "refused",
      detail: ok ? "revoked" : "no such token",
    });
    if (!ok) throw new SettingsRefused("NOT_FOUND", `no token ${id}`);
  }

  /** auditLog is the newest entries of the audit log. */
  auditLog(limit: number): Promise<AuditEntry[]> {
    return this.o.audit.list(limit);
  }
}
