import type { FindingType, InterfaceInfo, NodeFacts, ObservationAggregate, ObservationKind, OpenFinding } from "@whohas/core";
import type { Db, Param } from "./db.js";
import { migrate } from "./migrations.js";

const MINUTE_MS = 60_000;
/** PRUNE_BATCH bounds one delete, so retention never holds the writer long enough to delay ingest. */
const PRUNE_BATCH = 5000;
/** AUDIT_RETENTION_MS: the audit log outlives traffic data (issue 9). */
export const AUDIT_RETENTION_MS = 400 * 86_400_000;

/** A StoredAggregate is one capture point's sum for (ip, mac, kind) over the rows read: what restores the live view. */
export interface StoredAggregate {
  readonly node: string;
  readonly entry: ObservationAggregate;
}

/** A TimelinePoint is one minute of one MAC's frames of one kind for an IP (counted once across capture points). */
export interface TimelinePoint {
  readonly minute: number;
  readonly mac: string;
  readonly kind: ObservationKind;
  readonly count: number;
}

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

/** A StoredAgent is what the hub remembers of an agent across restarts. */
export interface StoredAgent {
  readonly node: string;
  readonly version: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly interfaces: InterfaceInfo[];
  readonly facts: NodeFacts | null;
  readonly dropped: number;
}

export interface AuditEntry {
  readonly t: number;
  readonly actor: string;
  readonly action: string;
  readonly input: unknown;
  readonly outcome: "ok" | "refused" | "failed";
  readonly detail: string;
}

interface Pending {
  node: string;
  minute: number;
  ip: string;
  mac: string;
  kind: string;
  count: number;
  first: number;
  last: number;
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

/**
 * A Store is everything the hub keeps on disk: per-minute traffic, incidents, agents, the audit log, settings. Ingest
 * is buffered in memory per minute and written in one transaction per `flush()` (the hub flushes every second and
 * on shutdown), so 50,000 observations a second become a few thousand row updates.
 */
export class Store {
  readonly #pending = new Map<string, Pending>();
  readonly #dirtyAgents = new Map<string, StoredAgent>();

  constructor(readonly db: Db, now: number) {
    migrate(db, now);
  }

  /** record adds one agent's batch to the current minute buckets (in memory until the next flush). */
  record(node: string, entries: readonly ObservationAggregate[]): void {
    for (const e of entries) {
      const minute = e.lastSeen - (e.lastSeen % MINUTE_MS);
      const key = `${minute}|${e.ip}|${e.mac}|${e.kind}|${node}`;
      const p = this.#pending.get(key);
      if (p === undefined) {
        this.#pending.set(key, { node, minute, ip: e.ip, mac: e.mac, kind: e.kind, count: e.count, first: e.firstSeen, last: e.lastSeen });
      } else {
        p.count += e.count;
        p.first = Math.min(p.first, e.firstSeen);
        p.last = Math.max(p.last, e.lastSeen);
      }
    }
  }

  /** saveAgent remembers an agent's identity and facts (written at the next flush). */
  saveAgent(a: StoredAgent): void {
    this.#dirtyAgents.set(a.node, a);
  }

  /** pendingRows is how many minute rows wait for the next flush (a growing number means the disk is behind). */
  get pendingRows(): number {
    return this.#pending.size;
  }

  /** flush writes every pending row and agent in one transaction and returns the number of rows written. */
  flush(): number {
    if (this.#pending.size === 0 && this.#dirtyAgents.size === 0) return 0;
    const rows = [...this.#pending.values()];
    const agents = [...this.#dirtyAgents.values()];
    this.#pending.clear();
    this.#dirtyAgents.clear();
    this.db.tx(() => {
      for (const r of rows) {
        this.db.run(
          `INSERT INTO minute_stats (minute, ip, mac, kind, node, count, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (ip, minute, mac, kind, node) DO UPDATE SET count = minute_stats.count + excluded.count,
             first_seen = MIN(minute_stats.first_seen, excluded.first_seen), last_seen = MAX(minute_stats.last_seen, excluded.last_seen)`,
          [r.minute, r.ip, r.mac, r.kind, r.node, r.count, r.first, r.last],
        );
      }
      for (const a of agents) {
        this.db.run(
          `INSERT INTO agents (node, version, first_seen, last_seen, interfaces, facts, dropped) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (node) DO UPDATE SET version = excluded.version, last_seen = excluded.last_seen, interfaces = excluded.interfaces,
             facts = COALESCE(excluded.facts, agents.facts), dropped = excluded.dropped`,
          [a.node, a.version, a.firstSeen, a.lastSeen, JSON.stringify(a.interfaces), a.facts === null ? null : JSON.stringify(a.facts), a.dropped],
        );
      }
    });
    return rows.length + agents.length;
  }

  /** aggregates sums the stored traffic since `since` per capture point and (ip, mac, kind): the live view's history. */
  aggregates(since: number): StoredAggregate[] {
    const rows = this.db.all<{ node: string; ip: string; mac: string; kind: ObservationKind; count: number; first: number; last: number }>(
      `SELECT node, ip, mac, kind, SUM(count) AS count, MIN(first_seen) AS first, MAX(last_seen) AS last
       FROM minute_stats WHERE minute >= ? GROUP BY node, ip, mac, kind`,
      [since - (since % MINUTE_MS)],
    );
    return rows.map((r) => ({
      node: r.node,
      entry: { ip: r.ip, mac: r.mac, kind: r.kind, iface: "stored", count: r.count, firstSeen: r.first, lastSeen: r.last, peerIp: r.ip, targetMac: null, ethernetMismatch: 0 },
    }));
  }

  /** timeline returns one IP's minutes in [from, to], each MAC and kind counted once across capture points (the most any one saw). */
  timeline(ip: string, from: number, to: number): TimelinePoint[] {
    return this.db.all<TimelinePoint>(
      `SELECT minute, mac, kind, MAX(count) AS count FROM minute_stats WHERE ip = ? AND minute >= ? AND minute <= ?
       GROUP BY minute, mac, kind ORDER BY minute, mac, kind`,
      [ip, from - (from % MINUTE_MS), to],
    );
  }

  agents(): StoredAgent[] {
    return this.db
      .all<{ node: string; version: string; first_seen: number; last_seen: number; interfaces: string; facts: string | null; dropped: number }>("SELECT * FROM agents ORDER BY node")
      .map((r) => ({
        node: r.node,
        version: r.version,
        firstSeen: r.first_seen,
        lastSeen: r.last_seen,
        interfaces: JSON.parse(r.interfaces) as InterfaceInfo[],
        facts: r.facts === null ? null : (JSON.parse(r.facts) as NodeFacts),
        dropped: r.dropped,
      }));
  }

  /** openIncident stores a newly opened finding with its evidence and returns its id. */
  openIncident(f: OpenFinding, evidence: unknown): number {
    return this.db.tx(() => {
      const row = this.db.get<{ id: number }>(
        `INSERT INTO incidents (ip, type, macs, detail, evidence, first_seen, last_seen, count, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        [f.ip, f.type, JSON.stringify(f.macs), f.detail, JSON.stringify(evidence), f.firstSeen, f.lastSeen, f.count, JSON.stringify(f.samples)],
      );
      const id = row?.id ?? 0;
      this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, f.firstSeen, "opened", f.detail]);
      return id;
    });
  }

  /** touchIncident updates an open incident's evidence; `event` also records a timeline entry (new MACs). */
  touchIncident(id: number, f: OpenFinding, event: string | null): void {
    this.db.tx(() => {
      this.db.run("UPDATE incidents SET macs = ?, detail = ?, last_seen = ?, count = ?, samples = ? WHERE id = ?", [JSON.stringify(f.macs), f.detail, f.lastSeen, f.count, JSON.stringify(f.samples), id]);
      if (event !== null) this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, f.lastSeen, "updated", event]);
    });
  }

  resolveIncident(id: number, f: OpenFinding, at: number): void {
    this.db.tx(() => {
      this.db.run("UPDATE incidents SET last_seen = ?, count = ?, samples = ?, resolved_at = ? WHERE id = ?", [f.lastSeen, f.count, JSON.stringify(f.samples), at, id]);
      this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, at, "resolved", `cleared after ${Math.round((at - f.lastSeen) / 1000)} s without evidence`]);
    });
  }

  /** acknowledge marks an incident seen by `actor`; false when there is no such incident. */
  acknowledge(id: number, actor: string, at: number): boolean {
    return this.db.tx(() => {
      const { changes } = this.db.run("UPDATE incidents SET acknowledged_by = ?, acknowledged_at = ? WHERE id = ?", [actor, at, id]);
      if (changes > 0) this.db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, ?, ?)", [id, at, "acknowledged", `by ${actor}`]);
      return changes > 0;
    });
  }

  /** incidents lists incidents, newest first; `open` filters by state, `ip` by address. */
  incidents(q: { open?: boolean; ip?: string; limit?: number } = {}): Incident[] {
    const where: string[] = [];
    const params: Param[] = [];
    if (q.open === true) where.push("resolved_at IS NULL");
    if (q.open === false) where.push("resolved_at IS NOT NULL");
    if (q.ip !== undefined) {
      where.push("ip = ?");
      params.push(q.ip);
    }
    params.push(Math.min(q.limit ?? 500, 5000));
    const sql = `SELECT * FROM incidents ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY first_seen DESC, id DESC LIMIT ?`;
    return this.db.all<IncidentRow>(sql, params).map(toIncident);
  }

  incident(id: number): (Incident & { readonly events: readonly IncidentEvent[] }) | null {
    const r = this.db.get<IncidentRow>("SELECT * FROM incidents WHERE id = ?", [id]);
    if (r === undefined) return null;
    const events = this.db.all<IncidentEvent>("SELECT t, kind, detail FROM incident_events WHERE incident_id = ? ORDER BY t, id", [id]);
    return { ...toIncident(r), events };
  }

  audit(e: AuditEntry): void {
    this.db.run("INSERT INTO audit_log (t, actor, action, input, outcome, detail) VALUES (?, ?, ?, ?, ?, ?)", [e.t, e.actor, e.action, JSON.stringify(e.input), e.outcome, e.detail]);
  }

  auditLog(limit = 200): AuditEntry[] {
    return this.db
      .all<{ t: number; actor: string; action: string; input: string; outcome: AuditEntry["outcome"]; detail: string }>("SELECT t, actor, action, input, outcome, detail FROM audit_log ORDER BY t DESC, id DESC LIMIT ?", [limit])
      .map((r) => ({ ...r, input: JSON.parse(r.input) as unknown }));
  }

  setting<T>(key: string): T | null {
    const r = this.db.get<{ value: string }>("SELECT value FROM settings WHERE key = ?", [key]);
    return r === undefined ? null : (JSON.parse(r.value) as T);
  }

  setSetting(key: string, value: unknown, now: number): void {
    this.db.run("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at", [key, JSON.stringify(value), now]);
  }

  /**
   * pruneStep deletes at most PRUNE_BATCH expired rows (traffic and resolved incidents older than `retentionMs`,
   * audit entries older than AUDIT_RETENTION_MS) and returns how many; call it again while it returns a full batch,
   * yielding between calls so ingest goes on.
   */
  pruneStep(now: number, retentionMs: number): number {
    const cut = now - retentionMs;
    // rowid is SQLite's row handle (PostgreSQL: ctid); the one dialect-specific query, kept here.
    let n = this.db.run("DELETE FROM minute_stats WHERE rowid IN (SELECT rowid FROM minute_stats WHERE minute < ? LIMIT ?)", [cut, PRUNE_BATCH]).changes;
    if (n < PRUNE_BATCH) n += this.db.run("DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE resolved_at IS NOT NULL AND resolved_at < ? LIMIT ?)", [cut, PRUNE_BATCH - n]).changes;
    if (n < PRUNE_BATCH) n += this.db.run("DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE t < ? LIMIT ?)", [now - AUDIT_RETENTION_MS, PRUNE_BATCH - n]).changes;
    return n;
  }

  close(): void {
    this.flush();
    this.db.close();
  }
}
