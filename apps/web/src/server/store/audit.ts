import type { Db } from "./db.js";

/** AUDIT_RETENTION_MS: the audit log outlives traffic data. */
export const AUDIT_RETENTION_MS = 400 * 86_400_000;

export interface AuditEntry {
  readonly t: number;
  readonly actor: string;
  readonly action: string;
  readonly input: unknown;
  readonly outcome: "ok" | "refused" | "failed";
  readonly detail: string;
}

/** The AuditLog records every action that changes something: who, when, what, and how it ended. */
export class AuditLog {
  constructor(readonly db: Db) {}

  async append(e: AuditEntry): Promise<void> {
    await this.db.run("INSERT INTO audit_log (t, actor, action, input, outcome, detail) VALUES (?, ?, ?, ?, ?, ?)", [
      e.t,
      e.actor,
      e.action,
      JSON.stringify(e.input),
      e.outcome,
      e.detail,
    ]);
  }

  async list(limit = 200): Promise<AuditEntry[]> {
    return (
      await this.db.all<{ t: number; actor: string; action: string; input: string; outcome: AuditEntry["outcome"]; detail: string }>(
        "SELECT t, actor, action, input, outcome, detail FROM audit_log ORDER BY t DESC, id DESC LIMIT ?",
        [limit],
      )
    ).map((r) => ({ ...r, input: JSON.parse(r.input) as unknown }));
  }

  /**
   * actionsBetween lists, oldest first, the actions on IPs, the capture downloads and the strictARP fixes audited in
   * [from, to] (at most `limit`): what an incident's story may hold.
   */
  async actionsBetween(from: number, to: number, limit = 500): Promise<AuditEntry[]> {
    return (
      await this.db.all<{ t: number; actor: string; action: string; input: string; outcome: AuditEntry["outcome"]; detail: string }>(
        `SELECT t, actor, action, input, outcome, detail FROM audit_log
          WHERE t >= ? AND t <= ? AND (action LIKE 'ip.%' OR action LIKE 'ips.%' OR action LIKE 'remediation.%' OR action = 'capture.download')
          ORDER BY t, id LIMIT ?`,
        [from, to, limit],
      )
    ).map((r) => ({ ...r, input: JSON.parse(r.input) as unknown }));
  }

  /** prune deletes at most `limit` entries older than AUDIT_RETENTION_MS; returns how many. */
  async prune(now: number, limit: number): Promise<number> {
    return (
      await this.db.run("DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE t < ? LIMIT ?)", [
        now - AUDIT_RETENTION_MS,
        limit,
      ])
    ).changes;
  }
}
