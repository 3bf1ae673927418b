import { createHash } from "node:crypto";
import pg from "pg";
import type { Logger } from "@whohas/core";
import { DEFAULT_CLUSTER } from "@whohas/core";
import { where } from "../store/postgres.js";

/**
 * LEADER_LOCK names the PostgreSQL session advisory lock whose holder is the leading hub: the one replica that takes
 * agents, judges, notifies, keeps retention and runs remediation. Another number than the migrations' lock.
 */
export const LEADER_LOCK = 0x77686f6c;

/**
 * leaderLock is the lock of one cluster's leader: the hubs of a fleet share one database, and each cluster has a
 * leader of its own. The default cluster keeps LEADER_LOCK as it always was (a replica of an older build and one of
 * this build never lead at once); a named cluster's key is the first 63 bits of the SHA-256 of its name, so two
 * names meet by chance only (one in 2^63). `classid` and `objid` are the key's halves as pg_locks shows them.
 */
export function leaderLock(cluster: string = DEFAULT_CLUSTER): { key: string; classid: number; objid: number } {
  if (cluster === DEFAULT_CLUSTER) return { key: String(LEADER_LOCK), classid: 0, objid: LEADER_LOCK };
  const digest = createHash("sha256").update(`whohas leader ${cluster}`).digest();
  const classid = digest.readUInt32BE(0) & 0x7fffffff;
  const objid = digest.readUInt32BE(4);
  return { key: String((BigInt(classid) << 32n) | BigInt(objid)), classid, objid };
}
/** HEARTBEAT_MS / HEARTBEAT_TIMEOUT_MS: the leader asks its lock's connection this often; no answer this long is a loss. */
export const HEARTBEAT_MS = 1000;
export const HEARTBEAT_TIMEOUT_MS = 3000;
/**
 * The server side of the lease: with these TCP keepalives (and the user timeout for data not acknowledged) PostgreSQL
 * ends the session of a leader whose machine went silent, and so frees the lock, within about LEASE_MS. The leader
 * itself gives up sooner (HEARTBEAT_TIMEOUT_MS), so two never lead at once. A leader that dies outright (SIGKILL, an
 * OOM kill) closes its socket and frees the lock at once.
 */
const KEEPALIVE = { idleS: 2, intervalS: 1, count: 3, userTimeoutMs: 5000 };
export const LEASE_MS = (KEEPALIVE.idleS + KEEPALIVE.intervalS * KEEPALIVE.count) * 1000 + 3000;
/** APP_PREFIX marks the lock's session in pg_stat_activity, where a standby reads who leads. */
const APP_PREFIX = "whohas ";

/**
 * sessionName is the application_name of a replica's lock session: PostgreSQL keeps 63 bytes of it, so a long
 * replica name is cut, and names are compared in this form.
 */
export function sessionName(name: string): string {
  return Buffer.from(`${APP_PREFIX}${name}`)
    .subarray(0, 63)
    .toString()
    .replace(/\uFFFD$/, "");
}

export interface LeadershipOptions {
  /** The PostgreSQL URL of the shared store (storage.url). */
  readonly url: string;
  /** This replica's name, as others show it (the Pod's name). */
  readonly name: string;
  /** The cluster this replica's hub watches: one leader per cluster. */
  readonly cluster?: string;
  readonly logger: Logger;
  /** Called once when this replica, leading, can no longer be sure it does; it must stop its duties at once. */
  readonly onLost: (reason: string) => void;
}

/**
 * A Leadership is this replica's claim on LEADER_LOCK. `campaign` waits (in PostgreSQL, without polling) until the
 * lock is free and takes it; from then on a heartbeat on the lock's own connection watches that it still holds it.
 */
export class Leadership {
  readonly #o: LeadershipOptions;
  readonly #client: pg.Client;
  #timer: NodeJS.Timeout | null = null;
  #lost = false;
  #released = false;

  private constructor(o: LeadershipOptions, client: pg.Client) {
    this.#o = o;
    this.#client = client;
  }

  /** campaign resolves once this replica leads; it rejects when PostgreSQL cannot be reached (the caller retries). */
  static async campaign(o: LeadershipOptions): Promise<Leadership> {
    const client = new pg.Client({
      connectionString: o.url,
      application_name: sessionName(o.name),
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE.idleS * 1000,
      connectionTimeoutMillis: 10_000,
    });
    const self = new Leadership(o, client);
    // Until it leads, an error fails the waiting query below; after, it is a loss.
    client.on("error", (e) => self.#lose(`the connection holding the lock failed: ${e.message}`));
    client.on("end", () => self.#lose("the connection holding the lock ended"));
    try {
      await client.connect();
      await client.query(
        `SET tcp_keepalives_idle = ${KEEPALIVE.idleS}; SET tcp_keepalives_interval = ${KEEPALIVE.intervalS}; ` +
          `SET tcp_keepalives_count = ${KEEPALIVE.count}; SET tcp_user_timeout = ${KEEPALIVE.userTimeoutMs}; ` +
          // A standby killed while it waits for the lock: its session notices the closed socket and ends.
          `SET client_connection_check_interval = ${KEEPALIVE.idleS * 1000}`,
      );
      await client.query("SELECT pg_advisory_lock($1::bigint)", [leaderLock(o.cluster).key]);
    } catch (e) {
      self.#released = true;
      await client.end().catch(() => undefined);
      throw new Error(`cannot take the leader's lock in PostgreSQL at ${where(o.url)}: ${(e as Error).message}`);
    }
    self.#timer = setInterval(() => void self.#beat(), HEARTBEAT_MS);
    self.#timer.unref();
    return self;
  }

  async #beat(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${HEARTBEAT_TIMEOUT_MS} ms`)), HEARTBEAT_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.#client.query("SELECT 1"), late]);
    } catch (e) {
      this.#lose(`the heartbeat on the lock's connection failed: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  #lose(reason: string): void {
    if (this.#released || this.#lost || this.#timer === null) return;
    this.#lost = true;
    clearInterval(this.#timer);
    this.#o.onLost(reason);
  }

  /** release gives the lock up (a clean stop, after the last writes): a standby takes over at once. */
  async release(): Promise<void> {
    this.#released = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    await this.#client.end().catch(() => undefined);
  }
}

/**
 * leaderSession reads the session name (sessionName) of the replica that holds LEADER_LOCK in this database now, from
 * PostgreSQL's own view of sessions and locks (no table of ours to go stale); null when none does.
 */
export async function leaderSession(q: pg.Pool, cluster?: string): Promise<string | null> {
  const lock = leaderLock(cluster);
  const r = await q.query<{ name: string }>(
    `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.objsubid = 1 LIMIT 1`,
    [lock.classid, lock.objid],
  );
  return r.rows[0]?.name ?? null;
}

/** leaderName is the leading replica's name as its session shows it (cut when long); null when none leads. */
export async function leaderName(q: pg.Pool, cluster?: string): Promise<string | null> {
  const session = await leaderSession(q, cluster);
  return session === null ? null : session.startsWith(APP_PREFIX) ? session.slice(APP_PREFIX.length) : session;
}
