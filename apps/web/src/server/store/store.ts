import type { FindingType, InterfaceInfo, NodeFacts, ObservationAggregate, ObservationKind, OpenFinding } from "@whohas/core";
import type { Db, Param } from "./db.js";
import { migrate } from "./migrations.js";
import { Outbox } from "./outbox.js";

const MINUTE_MS = 60_000;
/**
 * MAX_ROWS_PER_FLUSH bounds the traffic rows one flush writes (about 50 ms of SQLite), so a hub with tens of
 * thousands of busy IPs never stalls its event loop on the disk: rows wait their turn, oldest first. A cluster of
 * a few hundred IPs has everything written every second.
 */
export const MAX_ROWS_PER_FLUSH = 15_000;
/** WRITE_EVERY_MS: how often open incidents' evidence (last seen, count) is written. */
export const WRITE_EVERY_MS = 10_000;
/** PRUNE_BATCH bounds one delete, so retention never holds the writer long enough to delay ingest. */
const PRUNE_BATCH = 5000;
/** AUDIT_RETENTION_MS: the audit log outlives traffic data (issue 9). */
export const AUDIT_RETENTION_MS = 400 * 86_400_000;

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

/** A StoredSession is one dashboard sign-in; the cookie's id is kept only as its SHA-256. */
export interface StoredSession {
  readonly idHash: string;
  readonly user: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly peer: string;
}

/** An ApiToken is a read-API Bearer token made in Settings (the token itself is shown once, never stored). */
export interface ApiToken {
  readonly id: number;
  readonly name: string;
  /** The first characters, so a person can tell tokens apart. */
  readonly prefix: string;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly lastUsed: number | null;
}

export interface AuditEntry {
  readonly t: number;
  readonly actor: string;
  readonly action: string;
  readonly input: unknown;
  readonly outcome: "ok" | "refused" | "failed";
  readonly detail: string;
}

/**
 * A Bucket is one minute of (ip, mac, kind) in memory: each capture point's count (the row's count is the largest:
 * every agent on the segment sees the same broadcast), and how much of it is already written.
 */
interface Bucket {
  minute: number;
  ip: string;
  mac: string;
  kind: string;
  /** The first capture point's count; the others' in `more` (allocated only when a second one reports). */
  node: string;
  nodeCount: number;
  more: Map<string, number> | null;
  count: number;
  written: number;
  first: number;
  last: number;
}

/** EVICT_EVERY_MS: how often buckets of minutes that are over, once written, leave memory. */
const EVICT_EVERY_MS = 10_000;

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
  readonly #buckets = new Map<string, Bucket>();
  readonly #dirty = new Set<Bucket>();
  readonly #dirtyAgents = new Map<string, StoredAgent>();
  #evicted = 0;
  /** Alert receivers added in Settings and the notifications outbox. */
  readonly outbox: Outbox;

  constructor(readonly db: Db, now: number) {
    migrate(db, now);
    this.outbox = new Outbox(db);
  }

  /** record adds one agent's batch to the minute buckets (in memory until the next flush). */
  record(node: string, entries: readonly ObservationAggregate[]): void {
    for (const e of entries) {
      const minute = e.lastSeen - (e.lastSeen % MINUTE_MS);
      const key = `${minute}|${e.ip}|${e.mac}|${e.kind}`;
      let b = this.#buckets.get(key);
      if (b === undefined) {
        b = { minute, ip: e.ip, mac: e.mac, kind: e.kind, node, nodeCount: 0, more: null, count: 0, written: 0, first: e.firstSeen, last: e.lastSeen };
        this.#buckets.set(key, b);
      }
      let n: number;
      if (b.node === node) n = b.nodeCount += e.count;
      else {
        b.more ??= new Map();
        n = (b.more.get(node) ?? 0) + e.count;
        b.more.set(node, n);
      }
      if (n > b.count) b.count = n;
      if (e.firstSeen < b.first) b.first = e.firstSeen;
      if (e.lastSeen > b.last) b.last = e.lastSeen;
      this.#dirty.add(b);
    }
  }

  /** saveAgent remembers an agent's identity and facts (written at the next flush). */
  saveAgent(a: StoredAgent): void {
    this.#dirtyAgents.set(a.node, a);
  }

  /** pendingRows is how many minute rows wait for the next flush (a growing number means the disk is behind). */
  get pendingRows(): number {
    return this.#dirty.size;
  }

  /**
   * flush writes the agents that changed and the traffic rows that grew since they were last written (at most
   * MAX_ROWS_PER_FLUSH of them, all when forced at shutdown): each row's growth is added to the stored count, so a
   * minute continued after a restart keeps what was stored before. One transaction; returns the rows written.
   */
  flush(now = Date.now(), force = false, maxRows = MAX_ROWS_PER_FLUSH): number {
    if (this.#dirty.size === 0 && this.#dirtyAgents.size === 0) return 0;
    const rows: Bucket[] = [];
    for (const b of this.#dirty) {
      if (!force && rows.length >= maxRows) break;
      rows.push(b);
    }
    for (const b of rows) this.#dirty.delete(b);
    const agents = [...this.#dirtyAgents.values()];
    this.#dirtyAgents.clear();
    this.db.tx(() => {
      for (const b of rows) {
        const delta = b.count - b.written;
        if (delta <= 0) continue;
        this.db.run(
          `INSERT INTO minute_stats (minute, ip, mac, kind, count, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (minute, ip, mac, kind) DO UPDATE SET count = minute_stats.count + excluded.count,
             first_seen = MIN(minute_stats.first_seen, excluded.first_seen), last_seen = MAX(minute_stats.last_seen, excluded.last_seen)`,
          [b.minute, b.ip, b.mac, b.kind, delta, b.first, b.last],
        );
        b.written = b.count;
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
    // Minutes that are over leave memory once written; a late batch for one starts a fresh bucket whose counts are
    // added to the stored row.
    if (now - this.#evicted >= EVICT_EVERY_MS) {
      this.#evicted = now;
      const current = now - (now % MINUTE_MS);
      for (const [key, b] of this.#buckets) if (b.minute < current && !this.#dirty.has(b)) this.#buckets.delete(key);
    }
    return rows.length + agents.length;
  }

  /** aggregates sums the stored traffic since `since` per (ip, mac, kind): the history the live view restores. */
  aggregates(since: number): ObservationAggregate[] {
    const rows = this.db.all<{ ip: string; mac: string; kind: ObservationKind; count: number; first: number; last: number }>(
      `SELECT ip, mac, kind, SUM(count) AS count, MIN(first_seen) AS first, MAX(last_seen) AS last
       FROM minute_stats WHERE minute >= ? GROUP BY ip, mac, kind`,
      [since - (since % MINUTE_MS)],
    );
    return rows.map((r) => ({ ip: r.ip, mac: r.mac, kind: r.kind, iface: "stored", count: r.count, firstSeen: r.first, lastSeen: r.last, peerIp: r.ip, targetMac: null, ethernetMismatch: 0 }));
  }

  /** timeline returns one IP's minutes in [from, to] per MAC and kind, the part not yet written included. */
  timeline(ip: string, from: number, to: number): TimelinePoint[] {
    const start = from - (from % MINUTE_MS);
    const rows = this.db.all<TimelinePoint>("SELECT minute, mac, kind, count FROM minute_stats WHERE ip = ? AND minute >= ? AND minute <= ?", [ip, start, to]);
    const byKey = new Map(rows.map((r) => [`${r.minute}|${r.mac}|${r.kind}`, { ...r }]));
    for (const b of this.#dirty) {
      if (b.ip !== ip || b.minute < start || b.minute > to || b.count === b.written) continue;
      const key = `${b.minute}|${b.mac}|${b.kind}`;
      const r = byKey.get(key);
      if (r === undefined) byKey.set(key, { minute: b.minute, mac: b.mac, kind: b.kind as ObservationKind, count: b.count - b.written });
      else r.count += b.count - b.written;
    }
    return [...byKey.values()].sort((a, b) => a.minute - b.minute || a.mac.localeCompare(b.mac) || a.kind.localeCompare(b.kind));
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

  createSession(s: StoredSession): void {
    this.db.run("INSERT INTO sessions (id_hash, user, created_at, expires_at, peer) VALUES (?, ?, ?, ?, ?)", [s.idHash, s.user, s.createdAt, s.expiresAt, s.peer]);
  }

  /** session returns the unexpired session with this id hash, or null. */
  session(idHash: string, now: number): StoredSession | null {
    const r = this.db.get<{ id_hash: string; user: string; created_at: number; expires_at: number; peer: string }>("SELECT * FROM sessions WHERE id_hash = ? AND expires_at > ?", [idHash, now]);
    return r === undefined ? null : { idHash: r.id_hash, user: r.user, createdAt: r.created_at, expiresAt: r.expires_at, peer: r.peer };
  }

  deleteSession(idHash: string): void {
    this.db.run("DELETE FROM sessions WHERE id_hash = ?", [idHash]);
  }

  createApiToken(t: { name: string; hash: string; prefix: string; createdBy: string; createdAt: number }): ApiToken {
    const { lastInsertRowid } = this.db.run("INSERT INTO api_tokens (name, hash, prefix, created_by, created_at) VALUES (?, ?, ?, ?, ?)", [t.name, t.hash, t.prefix, t.createdBy, t.createdAt]);
    return { id: Number(lastInsertRowid), name: t.name, prefix: t.prefix, createdBy: t.createdBy, createdAt: t.createdAt, lastUsed: null };
  }

  apiTokens(): ApiToken[] {
    return this.db.all<ApiToken>("SELECT id, name, prefix, created_by AS createdBy, created_at AS createdAt, last_used AS lastUsed FROM api_tokens ORDER BY created_at, id");
  }

  /** apiTokenByHash finds a token by its hash and marks it used; null when unknown (or revoked). */
  apiTokenByHash(hash: string, now: number): ApiToken | null {
    const r = this.db.get<ApiToken>("SELECT id, name, prefix, created_by AS createdBy, created_at AS createdAt, last_used AS lastUsed FROM api_tokens WHERE hash = ?", [hash]);
    if (r === undefined) return null;
    if (r.lastUsed === null || now - r.lastUsed > 60_000) this.db.run("UPDATE api_tokens SET last_used = ? WHERE id = ?", [now, r.id]);
    return r;
  }

  deleteApiToken(id: number): boolean {
    return this.db.run("DELETE FROM api_tokens WHERE id = ?", [id]).changes > 0;
  }

  /**
   * pruneStep deletes at most PRUNE_BATCH expired rows (traffic and resolved incidents older than `retentionMs`,
   * audit entries older than AUDIT_RETENTION_MS) and returns how many; call it again while it returns a full batch,
   * yielding between calls so ingest goes on.
   */
  pruneStep(now: number, retentionMs: number): number {
    const cut = now - retentionMs;
    let n = this.db.run(
      "DELETE FROM minute_stats WHERE (minute, ip, mac, kind) IN (SELECT minute, ip, mac, kind FROM minute_stats WHERE minute < ? ORDER BY minute LIMIT ?)",
      [cut, PRUNE_BATCH],
    ).changes;
    if (n < PRUNE_BATCH) n += this.db.run("DELETE FROM incidents WHERE id IN (SELECT id FROM incidents WHERE resolved_at IS NOT NULL AND resolved_at < ? LIMIT ?)", [cut, PRUNE_BATCH - n]).changes;
    if (n < PRUNE_BATCH) n += this.db.run("DELETE FROM sessions WHERE id_hash IN (SELECT id_hash FROM sessions WHERE expires_at < ? LIMIT ?)", [now, PRUNE_BATCH - n]).changes;
    if (n < PRUNE_BATCH) n += this.outbox.prune(now, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += this.db.run("DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE t < ? LIMIT ?)", [now - AUDIT_RETENTION_MS, PRUNE_BATCH - n]).changes;
    return n;
  }

  close(): void {
    this.flush(Date.now(), true);
    this.db.close();
  }
}
