import type { Db } from "./db.js";
import { summarize } from "./incidents.js";

/** A Migration moves the schema one version up. Never edit a released one: add the next. */
interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** Runs after `sql`, in its transaction: data moved by the same code the store runs. */
  readonly then?: (db: Db) => void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "traffic, incidents, agents, audit, settings",
    sql: `
      -- Per-minute aggregates per (ip, mac, kind), counted once across capture points (the most any agent saw):
      -- the timeline, and the history a restart restores.
      CREATE TABLE minute_stats (
        minute     INTEGER NOT NULL, -- ms since the epoch, floored to the minute
        ip         TEXT    NOT NULL,
        mac        TEXT    NOT NULL,
        kind       TEXT    NOT NULL,
        count      INTEGER NOT NULL,
        first_seen INTEGER NOT NULL,
        last_seen  INTEGER NOT NULL,
        PRIMARY KEY (minute, ip, mac, kind)
      ) WITHOUT ROWID; -- one B-tree, and the current minute's rows append at its end
      CREATE INDEX minute_stats_ip ON minute_stats (ip, minute);

      -- Findings as incidents: opened, updated with new evidence, resolved when the finding clears.
      CREATE TABLE incidents (
        id              INTEGER PRIMARY KEY,
        ip              TEXT    NOT NULL,
        type            TEXT    NOT NULL,
        macs            TEXT    NOT NULL, -- JSON array
        detail          TEXT    NOT NULL,
        evidence        TEXT    NOT NULL, -- JSON: services, expected owner, responders when opened
        first_seen      INTEGER NOT NULL,
        last_seen       INTEGER NOT NULL,
        count           INTEGER NOT NULL,
        samples         TEXT    NOT NULL, -- JSON array of times
        resolved_at     INTEGER,
        acknowledged_by TEXT,
        acknowledged_at INTEGER
      );
      CREATE INDEX incidents_open ON incidents (resolved_at, ip, type);
      CREATE INDEX incidents_first_seen ON incidents (first_seen);

      CREATE TABLE incident_events (
        id          INTEGER PRIMARY KEY,
        incident_id INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
        t           INTEGER NOT NULL,
        kind        TEXT    NOT NULL, -- opened, updated, resolved, acknowledged
        detail      TEXT    NOT NULL
      );
      CREATE INDEX incident_events_incident ON incident_events (incident_id, t);

      CREATE TABLE agents (
        node       TEXT    PRIMARY KEY,
        version    TEXT    NOT NULL,
        first_seen INTEGER NOT NULL,
        last_seen  INTEGER NOT NULL,
        interfaces TEXT    NOT NULL, -- JSON
        facts      TEXT,             -- JSON, null until the first report
        dropped    INTEGER NOT NULL DEFAULT 0
      );

      -- Every action that changes anything: who, when, what was asked, what came of it. Kept longer than traffic.
      CREATE TABLE audit_log (
        id      INTEGER PRIMARY KEY,
        t       INTEGER NOT NULL,
        actor   TEXT    NOT NULL,
        action  TEXT    NOT NULL,
        input   TEXT    NOT NULL, -- JSON
        outcome TEXT    NOT NULL,
        detail  TEXT    NOT NULL
      );
      CREATE INDEX audit_log_t ON audit_log (t);

      CREATE TABLE settings (
        key        TEXT    PRIMARY KEY,
        value      TEXT    NOT NULL, -- JSON
        updated_at INTEGER NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: "sessions and API tokens",
    sql: `
      -- Dashboard sign-ins. The cookie holds a random id; only its SHA-256 is stored, so a copy of the database
      -- signs no one in. The role is not stored: it is read from the configuration on every request.
      CREATE TABLE sessions (
        id_hash    TEXT    PRIMARY KEY,
        user       TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        peer       TEXT    NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX sessions_expires ON sessions (expires_at);

      -- Bearer tokens for the read API made by admins in Settings; only a hash is stored, the token is shown once.
      CREATE TABLE api_tokens (
        id         INTEGER PRIMARY KEY,
        name       TEXT    NOT NULL UNIQUE,
        hash       TEXT    NOT NULL UNIQUE,
        prefix     TEXT    NOT NULL,
        created_by TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        last_used  INTEGER
      );
    `,
  },
  {
    version: 3,
    name: "alert receivers and the notification outbox",
    sql: `
      -- Webhook receivers added in Settings (those of the config file are not stored).
      CREATE TABLE receivers (
        name       TEXT    PRIMARY KEY,
        url        TEXT    NOT NULL,
        format     TEXT    NOT NULL,
        secret     TEXT,
        created_by TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );

      -- Every notification is written here before it is sent, and survives a crash: at-least-once delivery with
      -- the same webhook id on every retry. The body is fixed at the first attempt (what the receiver may dedupe).
      CREATE TABLE outbox (
        id           TEXT    PRIMARY KEY, -- the webhook-id
        receiver     TEXT    NOT NULL,
        group_key    TEXT    NOT NULL,    -- the IP
        kind         TEXT    NOT NULL,    -- firing, update, resolved, repeat, test
        created_at   INTEGER NOT NULL,
        not_before   INTEGER NOT NULL,    -- group_wait, then the next retry
        attempts     INTEGER NOT NULL DEFAULT 0,
        status       TEXT    NOT NULL,    -- pending, delivered, failed, cancelled
        body         TEXT,               -- JSON, null until the first attempt
        last_status  INTEGER,
        last_error   TEXT,
        delivered_at INTEGER
      ) WITHOUT ROWID;
      CREATE INDEX outbox_due ON outbox (status, not_before);
      CREATE INDEX outbox_group ON outbox (receiver, group_key, created_at);
    `,
  },
  {
    version: 4,
    name: "incident evidence",
    sql: `
      -- The raw frames each node's agent held about an incident's IP around its first evidence, asked for when the
      -- incident opened (the agents' rings forget within minutes), or why a node's frames are missing.
      CREATE TABLE incident_evidence (
        incident_id  INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
        node         TEXT    NOT NULL,
        collected_at INTEGER NOT NULL,
        from_ms      INTEGER NOT NULL, -- the window asked for
        to_ms        INTEGER NOT NULL,
        missing      TEXT,             -- why this node's frames are not there; null when they are
        truncated    INTEGER NOT NULL, -- the node held more than it sent
        held_from    INTEGER,          -- the oldest frame the node's agent held when asked
        frame_count  INTEGER NOT NULL,
        frames       TEXT    NOT NULL, -- JSON array of the wire's evidence frames
        PRIMARY KEY (incident_id, node)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 5,
    name: "one incident per subject",
    sql: `
      -- An incident is one subject's (an IP on its VLAN, or a node's) from its first finding until its last clears;
      -- each finding's life in it is a facet with its own times.
      CREATE TABLE incident_facets (
        incident_id INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
        type        TEXT    NOT NULL,
        macs        TEXT    NOT NULL, -- JSON array
        detail      TEXT    NOT NULL,
        first_seen  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL,
        count       INTEGER NOT NULL,
        samples     TEXT    NOT NULL, -- JSON array of times
        resolved_at INTEGER,
        PRIMARY KEY (incident_id, type, first_seen)
      ) WITHOUT ROWID;
      CREATE INDEX incident_facets_holding ON incident_facets (incident_id, resolved_at);

      -- Each incident so far held one finding: it becomes its one facet.
      INSERT INTO incident_facets (incident_id, type, macs, detail, first_seen, last_seen, count, samples, resolved_at)
        SELECT id, type, macs, detail, first_seen, last_seen, count, samples, resolved_at FROM incidents;

      -- The open incidents of one subject merge into its oldest: their findings are copied there as facets, an
      -- acknowledgement carries over, and each merged one ends with an event that names the incident that goes on.
      -- They keep their ids, evidence and frames: links already sent in webhooks stay right.
      CREATE TEMP TABLE merged AS
        SELECT i.id AS id, k.id AS into_id FROM incidents i
        JOIN (SELECT ip, MIN(id) AS id FROM incidents WHERE resolved_at IS NULL GROUP BY ip) k ON k.ip = i.ip
        WHERE i.resolved_at IS NULL AND i.id <> k.id;
      INSERT OR IGNORE INTO incident_facets (incident_id, type, macs, detail, first_seen, last_seen, count, samples, resolved_at)
        SELECT m.into_id, f.type, f.macs, f.detail, f.first_seen, f.last_seen, f.count, f.samples, f.resolved_at
        FROM incident_facets f JOIN merged m ON m.id = f.incident_id;
      UPDATE incidents SET
        acknowledged_by = (SELECT i.acknowledged_by FROM incidents i JOIN merged m ON m.id = i.id
          WHERE m.into_id = incidents.id AND i.acknowledged_by IS NOT NULL ORDER BY i.acknowledged_at LIMIT 1),
        acknowledged_at = (SELECT i.acknowledged_at FROM incidents i JOIN merged m ON m.id = i.id
          WHERE m.into_id = incidents.id AND i.acknowledged_by IS NOT NULL ORDER BY i.acknowledged_at LIMIT 1)
        WHERE acknowledged_by IS NULL AND id IN (SELECT into_id FROM merged);
      INSERT INTO incident_events (incident_id, t, kind, detail)
        SELECT m.into_id, i.first_seen, 'updated', i.type || ' too (it was incident #' || m.id || '): ' || i.detail
        FROM merged m JOIN incidents i ON i.id = m.id;
      INSERT INTO incident_events (incident_id, t, kind, detail)
        SELECT m.id, i.last_seen, 'resolved', 'merged into incident #' || m.into_id || ': one incident per IP or node'
        FROM merged m JOIN incidents i ON i.id = m.id;
      UPDATE incident_facets SET resolved_at = (SELECT last_seen FROM incidents WHERE id = incident_facets.incident_id)
        WHERE incident_id IN (SELECT id FROM merged) AND resolved_at IS NULL;
      UPDATE incidents SET resolved_at = last_seen WHERE id IN (SELECT id FROM merged);
      CREATE TEMP TABLE summarize AS SELECT DISTINCT into_id AS id FROM merged;
      DROP TABLE merged;
    `,
    // The merged incidents' summaries (named after their worst facet) are written by the store's own code.
    then: (db) => {
      for (const { id } of db.all<{ id: number }>("SELECT id FROM temp.summarize")) summarize(db, id);
      db.exec("DROP TABLE temp.summarize");
    },
  },
];

/**
 * migrate brings the schema to the newest version, each migration in its own transaction, and returns the versions
 * it applied. A database newer than this build is refused rather than guessed at.
 */
export function migrate(db: Db, now: number): number[] {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
  const current = db.get<{ v: number | null }>("SELECT MAX(version) AS v FROM schema_migrations")?.v ?? 0;
  const newest = MIGRATIONS.at(-1)?.version ?? 0;
  if (current > newest)
    throw new Error(
      `the database is at schema version ${current}, newer than this hub (${newest}): run a newer whohas-hub, or restore a backup`,
    );
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue;
    db.tx(() => {
      db.exec(m.sql);
      m.then?.(db);
      db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, now]);
    });
    applied.push(m.version);
  }
  return applied;
}
