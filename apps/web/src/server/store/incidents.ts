import type { FindingType, OpenFinding } from "@whohas/core";
import type { Db, Param } from "./db.js";

/** MAX_LIST bounds one list of incidents. */
export const MAX_LIST = 5000;

/** An Incident is a finding's stored life: opened, its evidence, resolved (or still open). */
export interface Incident {
  readonly id: number;
  readonly ip: string;
  readonly type: FindingType;
  readonly macs: readonly string[];
  readonly detail: string;
  readonly evidence: unknown;
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly count: number;
  readonly samples: readonly number[];
  readonly resolvedAt: number | null;
  readonly acknowledgedBy: string | null;
  readonly acknowledgedAt: number | null;
}

export interface IncidentEvent {
  readonly t: number;
  readonly kind: "opened" | "updated" | "resolved" | "acknowledged";
  readonly detail: string;
}

interface IncidentRow {
  id: number;
  ip: string;
  type: string;
  macs: string;
  detail: string;
  evidence: string;
  first_seen: number;
  last_seen: number;
  count: number;
  samples: string;
  resolved_at: number | null;
  acknowledged_by: string | null;
  acknowledged_at: number | null;
}

const toIncident = (r: IncidentRow): Incident => ({
  id: r.id,
  ip: r.ip,
  type: r.type as FindingType,
  macs: JSON.parse(r.macs) as string[],
  detail: r.detail,
  evidence: JSON.parse(r.evidence) as unknown,
  firstSeen: r.first_seen,
  lastSeen: r.last_seen,
  count: r.count,
  samples: JSON.parse(r.samples) as number[],
  resolvedAt: r.resolved_at,
  acknowledgedBy: r.acknowledged_by,
  acknowledgedAt: r.acknowledged_at,
});

/** The IncidentsRepo keeps incidents (a finding's stored life) and their events, written when they happen. */
export class IncidentsRepo {
  constructor(readonly db: Db) {}

  /** openIncident stores a newly opened finding with its evidence and returns its id. */
  open(f: OpenFinding, evidence: unknown): number {
    return this.db.tx(() => {
      const row = this.db.get<{ id: number }>(
        `INSERT INTO incidents (ip, type, macs, detail, evidence, first_seen, last_seen, count, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        [
          f.ip,
          f.type,
          JSON.stringify(f.macs),
          f.detail,
          JSON.stringify(evidence),
          f.firstSeen,
          f.lastSeen,
          f.count,
          JSON.stringify(f.samples),
        ],
      );
      const id = row?.id ?? 0;
      this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, f.firstSeen, "opened", f.detail]);
      return id;
    });
  }

  /** touchIncident updates an open incident's evidence; `event` also records a timeline entry (new MACs). */
  touch(id: number, f: OpenFinding, event: string | null): void {
    this.db.tx(() => {
      this.db.run("UPDATE incidents SET macs = ?, detail = ?, last_seen = ?, count = ?, samples = ? WHERE id = ?", [
        JSON.stringify(f.macs),
        f.detail,
        f.lastSeen,
        f.count,
        JSON.stringify(f.samples),
        id,
      ]);
      if (event !== null)
        this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, f.lastSeen, "updated", event]);
    });
  }

  resolve(id: number, f: OpenFinding, at: number): void {
    this.db.tx(() => {
      this.db.run("UPDATE incidents SET last_seen = ?, count = ?, samples = ?, resolved_at = ? WHERE id = ?", [
        f.lastSeen,
        f.count,
        JSON.stringify(f.samples),
        at,
        id,
      ]);
      this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [
        id,
        at,
        "resolved",
        `cleared after ${Math.round((at - f.lastSeen) / 1000)} s without evidence`,
      ]);
    });
  }

  /** acknowledge marks an incident seen by `actor`; false when there is no such incident. */
  acknowledge(id: number, actor: string, at: number): boolean {
    return this.db.tx(() => {
      const { changes } = this.db.run("UPDATE incidents SET acknowledged_by = ?, acknowledged_at = ? WHERE id = ?", [actor, at, id]);
      if (changes > 0)
        this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [
          id,
          at,
          "acknowledged",
          `by ${actor}`,
        ]);
      return changes > 0;
    });
  }

  /** openAll lists every open incident (a restarting hub holds them all open again). */
  openAll(): Incident[] {
    return this.db.all<IncidentRow>("SELECT * FROM incidents WHERE resolved_at IS NULL ORDER BY id").map(toIncident);
  }

  /** openByType counts the open incidents of each finding type. */
  openByType(): Map<string, number> {
    return new Map(
      this.db
        .all<{ type: string; n: number }>("SELECT type, COUNT(*) AS n FROM incidents WHERE resolved_at IS NULL GROUP BY type")
        .map((r) => [r.type, r.n]),
    );
  }

  /** incidents lists incidents, newest first, at most MAX_LIST (1..5000) of them; `open` filters by state, `ip` by address. */
  list(q: { open?: boolean; ip?: string; limit?: number } = {}): Incident[] {
    const where: string[] = [];
    const params: Param[] = [];
    if (q.open === true) where.push("resolved_at IS NULL");
    if (q.open === false) where.push("resolved_at IS NOT NULL");
    if (q.ip !== undefined) {
      where.push("ip = ?");
      params.push(q.ip);
    }
    params.push(Math.max(1, Math.min(Math.trunc(q.limit ?? 500) || 500, MAX_LIST)));
    const sql = `SELECT * FROM incidents ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY first_seen DESC, id DESC LIMIT ?`;
    return this.db.all<IncidentRow>(sql, params).map(toIncident);
  }

  get(id: number): (Incident & { readonly events: readonly IncidentEvent[] }) | null {
    const r = this.db.get<IncidentRow>("SELECT * FROM incidents WHERE id = ?", [id]);
    if (r === undefined) return null;
    const events = this.db.all<IncidentEvent>("SELECT t, kind, detail FROM incident_events WHERE incident_id = ? ORDER BY t, id", [id]);
    return { ...toIncident(r), events };
  }

  /** prune deletes at most `limit` incidents resolved before `cut`; returns how many. */
  prune(cut: number, limit: number): number {
    return this.db.run(
      "DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE resolved_at IS NOT NULL AND resolved_at < ? LIMIT ?)",
      [cut, limit],
    ).changes;
  }
}
