import type { ObservationAggregate, ObservationKind } from "@whohas/core";
import { batches, type Db, type Param } from "./db.js";

const MINUTE_MS = 60_000;
/**
 * MAX_ROWS_PER_FLUSH bounds the traffic rows one flush writes (about 50 ms of SQLite), so a hub with tens of
 * thousands of busy IPs never stalls its event loop on the disk: rows wait their turn, oldest first. A cluster of
 * a few hundred IPs has everything written every second.
 */
export const MAX_ROWS_PER_FLUSH = 15_000;
/** EVICT_EVERY_MS: how often buckets of minutes that are over, once written, leave memory. */
const EVICT_EVERY_MS = 10_000;

/** A TimelinePoint is one minute of one MAC's frames of one kind for an IP (counted once across capture points). */
export interface TimelinePoint {
  readonly minute: number;
  readonly mac: string;
  readonly kind: ObservationKind;
  readonly count: number;
}

/**
 * A Bucket is one minute of (ip, mac, kind) in memory: each capture point's count (the row's count is the largest:
 * every agent on the segment sees the same broadcast), and how much of it is already written. Hundreds of thousands
 * live at once on a busy hub: its times are small integers (the minute's number, milliseconds from its start), which
 * V8 keeps unboxed.
 */
interface Bucket {
  /** The minute: its start is minuteNo * MINUTE_MS. */
  minuteNo: number;
  ip: string;
  mac: string;
  kind: string;
  /** The first capture point's count; the others' in `more` (allocated only when a second one reports). */
  node: string;
  nodeCount: number;
  more: Map<string, number> | null;
  count: number;
  written: number;
  /** First and last frame, in ms from the minute's start (the first may be before it). */
  first: number;
  last: number;
}

/** A GrownRow is a bucket taken to be written, with its count and times when taken. */
export interface GrownRow {
  readonly b: Bucket;
  readonly count: number;
  readonly first: number;
  readonly last: number;
}

/** CROWDED: past this many buckets an IP's are also indexed by key (a flood of MACs for one IP stays cheap). */
const CROWDED = 32;

const bucketKey = (minuteNo: number, mac: string, kind: string) => `${minuteNo}|${mac}|${kind}`;

/**
 * The TrafficRepo keeps per-minute counts per (IP, MAC, kind), counted once across capture points. Ingest is buffered
 * in memory per minute and written in `flush` (the hub writes every second and at shutdown), so 50,000 observations a
 * second become a few thousand row updates.
 */
export class TrafficRepo {
  /** Each IP's buckets (a few: its MACs and kinds, this minute and the last), and an index for crowded IPs. */
  readonly #buckets = new Map<string, Bucket[]>();
  readonly #crowded = new Map<string, Map<string, Bucket>>();
  readonly #dirty = new Set<Bucket>();
  #evicted = 0;

  constructor(readonly db: Db) {}

  #bucket(node: string, e: ObservationAggregate): Bucket {
    const minuteNo = Math.floor(e.lastSeen / MINUTE_MS);
    let list = this.#buckets.get(e.ip);
    if (list === undefined) this.#buckets.set(e.ip, (list = []));
    const index = this.#crowded.get(e.ip);
    if (index !== undefined) {
      const b = index.get(bucketKey(minuteNo, e.mac, e.kind));
      if (b !== undefined) return b;
    } else for (const b of list) if (b.minuteNo === minuteNo && b.mac === e.mac && b.kind === e.kind) return b;
    const start = minuteNo * MINUTE_MS;
    const b: Bucket = {
      minuteNo,
      ip: e.ip,
      mac: e.mac,
      kind: e.kind,
      node,
      nodeCount: 0,
      more: null,
      count: 0,
      written: 0,
      first: e.firstSeen - start,
      last: e.lastSeen - start,
    };
    list.push(b);
    if (index !== undefined) index.set(bucketKey(minuteNo, e.mac, e.kind), b);
    else if (list.length > CROWDED) this.#crowded.set(e.ip, new Map(list.map((x) => [bucketKey(x.minuteNo, x.mac, x.kind), x])));
    return b;
  }

  /** record adds one agent's batch to the minute buckets (in memory until the next flush). */
  record(node: string, entries: readonly ObservationAggregate[]): void {
    for (const e of entries) {
      const b = this.#bucket(node, e);
      let n: number;
      if (b.node === node) n = b.nodeCount += e.count;
      else {
        b.more ??= new Map();
        n = (b.more.get(node) ?? 0) + e.count;
        b.more.set(node, n);
      }
      if (n > b.count) b.count = n;
      const start = b.minuteNo * MINUTE_MS;
      if (e.firstSeen - start < b.first) b.first = e.firstSeen - start;
      if (e.lastSeen - start > b.last) b.last = e.lastSeen - start;
      this.#dirty.add(b);
    }
  }

  /** pendingRows is how many minute rows wait for the next flush (a growing number means the disk is behind). */
  get pendingRows(): number {
    return this.#dirty.size;
  }

  /**
   * takeRows takes the rows that grew since they were last written (at most `maxRows`, all when forced at shutdown),
   * as they are now: what `writeRows` writes and `settle` marks written once the transaction holds.
   */
  takeRows(force: boolean, maxRows: number): GrownRow[] {
    const rows: GrownRow[] = [];
    for (const b of this.#dirty) {
      if (!force && rows.length >= maxRows) break;
      this.#dirty.delete(b);
      if (b.count > b.written) rows.push({ b, count: b.count, first: b.first, last: b.last });
    }
    return rows;
  }

  /**
   * writeRows writes taken rows through `db`, the caller's transaction, hundreds to a statement: each row's growth is
   * added to the stored count, so a minute continued after a restart keeps what was stored before.
   */
  async writeRows(db: Db, rows: readonly GrownRow[]): Promise<void> {
    // Each bucket is one (minute, ip, mac, kind): no statement names a row twice, as PostgreSQL's upsert requires.
    for (const { rows: part, values } of batches(rows, 7)) {
      const params: Param[] = [];
      for (const { b, count, first, last } of part) {
        const start = b.minuteNo * MINUTE_MS;
        params.push(start, b.ip, b.mac, b.kind, count - b.written, start + first, start + last);
      }
      await db.run(
        `INSERT INTO minute_stats (minute, ip, mac, kind, count, first_seen, last_seen) VALUES ${values}
         ON CONFLICT (minute, ip, mac, kind) DO UPDATE SET count = minute_stats.count + excluded.count,
           first_seen = CASE WHEN excluded.first_seen < minute_stats.first_seen THEN excluded.first_seen ELSE minute_stats.first_seen END,
           last_seen = CASE WHEN excluded.last_seen > minute_stats.last_seen THEN excluded.last_seen ELSE minute_stats.last_seen END`,
        params,
      );
    }
  }

  /**
   * settle ends a write of taken rows: once stored they count as written; when the transaction failed they wait for
   * the next flush again, nothing lost. Then minutes that are over and written leave memory (a late batch for one
   * starts a fresh bucket whose counts are added to the stored row).
   */
  settle(rows: readonly GrownRow[], stored: boolean, now: number): void {
    for (const r of rows)
      if (stored) r.b.written = r.count;
      else this.#dirty.add(r.b);
    if (!stored || now - this.#evicted < EVICT_EVERY_MS) return;
    this.#evicted = now;
    const current = Math.floor(now / MINUTE_MS);
    const over = (b: Bucket) => b.minuteNo < current && !this.#dirty.has(b);
    for (const [ip, list] of this.#buckets) {
      if (!list.some(over)) continue;
      const kept = list.filter((b) => !over(b));
      if (kept.length === 0) this.#buckets.delete(ip);
      else this.#buckets.set(ip, kept);
      this.#crowded.delete(ip);
      if (kept.length > CROWDED) this.#crowded.set(ip, new Map(kept.map((x) => [bucketKey(x.minuteNo, x.mac, x.kind), x])));
    }
  }

  /** aggregates sums the stored traffic since `since` per (ip, mac, kind): the history the live view restores. */
  async aggregates(since: number): Promise<ObservationAggregate[]> {
    const rows = await this.db.all<{ ip: string; mac: string; kind: ObservationKind; count: number; first: number; last: number }>(
      `SELECT ip, mac, kind, SUM(count) AS count, MIN(first_seen) AS first, MAX(last_seen) AS last
       FROM minute_stats WHERE minute >= ? GROUP BY ip, mac, kind`,
      [since - (since % MINUTE_MS)],
    );
    return rows.map((r) => ({
      ip: r.ip,
      mac: r.mac,
      kind: r.kind,
      iface: "stored",
      count: r.count,
      firstSeen: r.first,
      lastSeen: r.last,
      targetMac: null,
      ethernetMismatch: 0,
      ethSrc: null,
    }));
  }

  /** timeline returns one IP's minutes in [from, to] per MAC and kind, the part not yet written included. */
  async timeline(ip: string, from: number, to: number): Promise<TimelinePoint[]> {
    const start = from - (from % MINUTE_MS);
    const rows = await this.db.all<TimelinePoint>(
      "SELECT minute, mac, kind, count FROM minute_stats WHERE ip = ? AND minute >= ? AND minute <= ?",
      [ip, start, to],
    );
    const byKey = new Map(rows.map((r) => [`${r.minute}|${r.mac}|${r.kind}`, { ...r }]));
    for (const b of this.#buckets.get(ip) ?? []) {
      const minute = b.minuteNo * MINUTE_MS;
      if (minute < start || minute > to || b.count === b.written) continue;
      const key = `${minute}|${b.mac}|${b.kind}`;
      const r = byKey.get(key);
      if (r === undefined) byKey.set(key, { minute, mac: b.mac, kind: b.kind as ObservationKind, count: b.count - b.written });
      else r.count += b.count - b.written;
    }
    return [...byKey.values()].sort((a, b) => a.minute - b.minute || a.mac.localeCompare(b.mac) || a.kind.localeCompare(b.kind));
  }

  /** prune deletes at most `limit` minutes older than `cut`; returns how many. */
  async prune(cut: number, limit: number): Promise<number> {
    return (
      await this.db.run(
        "DELETE FROM minute_stats WHERE (minute, ip, mac, kind) IN (SELECT minute, ip, mac, kind FROM minute_stats WHERE minute < ? ORDER BY minute LIMIT ?)",
        [cut, limit],
      )
    ).changes;
  }
}
