import type { Db } from "./db.js";

/** The formats a webhook receiver takes (DESIGN 2.6). */
export const FORMATS = ["generic", "slack", "alertmanager"] as const;
export type Format = (typeof FORMATS)[number];

/** A StoredReceiver is a webhook receiver added in Settings. */
export interface StoredReceiver {
  readonly name: string;
  readonly url: string;
  readonly format: Format;
  readonly secret: string | null;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type OutboxStatus = "pending" | "delivered" | "failed" | "cancelled";
/**
 * What decided a notification: a subject's first finding that pages (firing), a finding that joined an incident
 * already notified (update), repeat_interval passing (repeat), or its last paging finding clearing (resolved).
 */
export type OutboxKind = "firing" | "update" | "resolved" | "repeat";

/** An OutboxRow is one notification to one receiver, from the moment it is decided until it is delivered or given up. */
export interface OutboxRow {
  readonly id: string;
  readonly receiver: string;
  readonly groupKey: string;
  readonly kind: OutboxKind;
  readonly createdAt: number;
  readonly notBefore: number;
  readonly attempts: number;
  readonly status: OutboxStatus;
  readonly body: string | null;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly deliveredAt: number | null;
}

const COLUMNS = `id, receiver, group_key AS "groupKey", kind, created_at AS "createdAt", not_before AS "notBefore", attempts, status, body,
  last_status AS "lastStatus", last_error AS "lastError", delivered_at AS "deliveredAt"`;

/** OUTBOX_RETENTION_MS: delivered and given-up notifications are kept this long for the Settings page. */
export const OUTBOX_RETENTION_MS = 7 * 86_400_000;

/**
 * The Outbox is the notifications table: written before anything is sent, so a notification survives a crash and
 * goes out after the restart with the same id.
 */
export class Outbox {
  /** The receivers of Settings, read once and again after each change (the delivery loop asks 4 times a second). */
  #receivers: StoredReceiver[] | null = null;

  constructor(readonly db: Db) {}

  async add(r: { id: string; receiver: string; groupKey: string; kind: OutboxKind; createdAt: number; notBefore: number }): Promise<void> {
    await this.db.run(
      "INSERT INTO outbox (id, receiver, group_key, kind, created_at, not_before, status) VALUES (?, ?, ?, ?, ?, ?, 'pending')",
      [r.id, r.receiver, r.groupKey, r.kind, r.createdAt, r.notBefore],
    );
  }

  /** waiting is a pending notification of the group that has not been sent once yet (new findings join it). */
  async waiting(receiver: string, groupKey: string): Promise<OutboxRow | null> {
    return (
      (await this.db.get<OutboxRow>(
        `SELECT ${COLUMNS} FROM outbox WHERE receiver = ? AND group_key = ? AND status = 'pending' AND body IS NULL LIMIT 1`,
        [receiver, groupKey],
      )) ?? null
    );
  }

  /** sentSince counts the group's notifications to a receiver since `t` (the per-IP hourly cap). */
  async sentSince(receiver: string, groupKey: string, t: number): Promise<number> {
    return (
      (
        await this.db.get<{ n: number }>(
          "SELECT COUNT(*) AS n FROM outbox WHERE receiver = ? AND group_key = ? AND created_at >= ? AND status != 'cancelled'",
          [receiver, groupKey, t],
        )
      )?.n ?? 0
    );
  }

  /** lastCreated is when the group's newest notification to a receiver was decided (repeat_interval), null if never. */
  async lastCreated(receiver: string, groupKey: string): Promise<number | null> {
    return (
      (
        await this.db.get<{ t: number | null }>(
          "SELECT MAX(created_at) AS t FROM outbox WHERE receiver = ? AND group_key = ? AND status != 'cancelled'",
          [receiver, groupKey],
        )
      )?.t ?? null
    );
  }

  /** previousDelivered is when the group's last delivered notification before `before` was decided, null if none. */
  async previousDelivered(receiver: string, groupKey: string, before: number): Promise<number | null> {
    return (
      (
        await this.db.get<{ t: number | null }>(
          "SELECT MAX(created_at) AS t FROM outbox WHERE receiver = ? AND group_key = ? AND status = 'delivered' AND created_at < ?",
          [receiver, groupKey, before],
        )
      )?.t ?? null
    );
  }

  /** due returns pending notifications whose time has come, oldest first. */
  due(now: number, limit: number): Promise<OutboxRow[]> {
    return this.db.all<OutboxRow>(
      `SELECT ${COLUMNS} FROM outbox WHERE status = 'pending' AND not_before <= ? ORDER BY not_before, id LIMIT ?`,
      [now, limit],
    );
  }

  /** freeze fixes the body at the first attempt: every retry sends these bytes under the same id. */
  async freeze(id: string, body: string): Promise<void> {
    await this.db.run("UPDATE outbox SET body = ? WHERE id = ? AND body IS NULL", [body, id]);
  }

  async attempted(
    id: string,
    r: { status: OutboxStatus; notBefore: number; lastStatus: number | null; lastError: string | null; deliveredAt: number | null },
  ): Promise<void> {
    await this.db.run(
      "UPDATE outbox SET attempts = attempts + 1, status = ?, not_before = ?, last_status = ?, last_error = ?, delivered_at = ? WHERE id = ?",
      [r.status, r.notBefore, r.lastStatus, r.lastError, r.deliveredAt, id],
    );
  }

  /** cancel stops every pending notification to a receiver (it answered 410 Gone, or was deleted). */
  async cancel(receiver: string, why: string): Promise<number> {
    return (
      await this.db.run("UPDATE outbox SET status = 'cancelled', last_error = ? WHERE receiver = ? AND status = 'pending'", [why, receiver])
    ).changes;
  }

  recent(limit: number): Promise<OutboxRow[]> {
    return this.db.all<OutboxRow>(`SELECT ${COLUMNS} FROM outbox ORDER BY created_at DESC, id DESC LIMIT ?`, [limit]);
  }

  async get(id: string): Promise<OutboxRow | null> {
    return (await this.db.get<OutboxRow>(`SELECT ${COLUMNS} FROM outbox WHERE id = ?`, [id])) ?? null;
  }

  async prune(now: number, limit: number): Promise<number> {
    return (
      await this.db.run("DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE status != 'pending' AND created_at < ? LIMIT ?)", [
        now - OUTBOX_RETENTION_MS,
        limit,
      ])
    ).changes;
  }

  async receivers(): Promise<readonly StoredReceiver[]> {
    return (this.#receivers ??= await this.db.all<StoredReceiver>(
      `SELECT name, url, format, secret, created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt" FROM receivers ORDER BY name`,
    ));
  }

  /** saveReceiver adds or replaces a receiver added in Settings. */
  async saveReceiver(r: Omit<StoredReceiver, "createdAt" | "updatedAt">, now: number): Promise<void> {
    this.#receivers = null;
    await this.db.run(
      "INSERT INTO receivers (name, url, format, secret, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET url = excluded.url, format = excluded.format, secret = excluded.secret, updated_at = excluded.updated_at",
      [r.name, r.url, r.format, r.secret, r.createdBy, now, now],
    );
  }

  async deleteReceiver(name: string): Promise<boolean> {
    this.#receivers = null;
    return (await this.db.run("DELETE FROM receivers WHERE name = ?", [name])).changes > 0;
  }
}
