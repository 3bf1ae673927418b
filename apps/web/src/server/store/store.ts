import { AccessRepo } from "./access.js";
import { AgentsRepo } from "./agents.js";
import { AuditLog } from "./audit.js";
import type { Db } from "./db.js";
import { EvidenceRepo } from "./evidence.js";
import { FleetRepo } from "./fleet.js";
import { IncidentsRepo } from "./incidents.js";
import { migrate } from "./migrate.js";
import { Outbox } from "./outbox.js";
import { SettingsRepo } from "./settings.js";
import { MAX_ROWS_PER_FLUSH, TrafficRepo } from "./traffic.js";

export { MAX_ROWS_PER_FLUSH };
/** PRUNE_BATCH bounds one delete, so retention never holds the writer long enough to delay ingest. */
const PRUNE_BATCH = 5000;
/**
 * FLEET_FORGET_MS: a cluster of the fleet silent this long (or the retention, when longer) is forgotten; any hub's
 * retention applies to every cluster's rows, so a short one must not drop a cluster that restarts.
 */
const FLEET_FORGET_MS = 86_400_000;

/**
 * A Store is the hub's database, opened and migrated, as one repository per table family: traffic, incidents,
 * agents, access (sessions and read-API tokens), the audit log, settings, the notifications outbox and incidents'
 * evidence. Each part of the hub is given the repositories it uses.
 */
export class Store {
  readonly traffic: TrafficRepo;
  readonly incidents: IncidentsRepo;
  readonly agents: AgentsRepo;
  readonly access: AccessRepo;
  readonly audit: AuditLog;
  readonly settings: SettingsRepo;
  readonly outbox: Outbox;
  readonly evidence: EvidenceRepo;
  readonly fleet: FleetRepo;

  /** Given a migrated database: `Store.open` migrates. */
  private constructor(readonly db: Db) {
    this.traffic = new TrafficRepo(db);
    this.incidents = new IncidentsRepo(db);
    this.agents = new AgentsRepo(db);
    this.access = new AccessRepo(db);
    this.audit = new AuditLog(db);
    this.settings = new SettingsRepo(db);
    this.outbox = new Outbox(db);
    this.evidence = new EvidenceRepo(db);
    this.fleet = new FleetRepo(db);
  }

  /** open migrates `db` to this build's schema (refusing a newer one) and returns the store on it. */
  static async open(db: Db, now: number): Promise<Store> {
    await migrate(db, now);
    return new Store(db);
  }

  /**
   * flush writes, in one transaction, the agents that changed and the traffic rows that grew (at most `maxRows` of
   * them, all when `force`d at shutdown). Returns the rows written. When the write fails, what it held waits for the
   * next flush, and the error is thrown for the caller to tell.
   */
  async flush(now = Date.now(), force = false, maxRows = MAX_ROWS_PER_FLUSH): Promise<number> {
    if (this.traffic.pendingRows === 0 && !this.agents.pending) return 0;
    const rows = this.traffic.takeRows(force, maxRows);
    const agents = this.agents.takeDirty();
    try {
      await this.db.tx(async (t) => {
        await this.traffic.writeRows(t, rows);
        await this.agents.writeDirty(t, agents);
      });
    } catch (e) {
      this.traffic.settle(rows, false, now);
      this.agents.unwritten(agents);
      throw e;
    }
    this.traffic.settle(rows, true, now);
    return rows.length + agents.length;
  }

  /**
   * pruneStep deletes at most PRUNE_BATCH expired rows (traffic and resolved incidents older than `retentionMs`,
   * expired sessions, old notifications, audit entries past their own retention) and returns how many; call it again
   * while it returns a full batch, yielding between calls so ingest goes on.
   */
  async pruneStep(now: number, retentionMs: number): Promise<number> {
    const cut = now - retentionMs;
    let n = await this.traffic.prune(cut, PRUNE_BATCH);
    if (n < PRUNE_BATCH) n += await this.incidents.prune(cut, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += await this.access.prune(now, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += await this.outbox.prune(now, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += await this.audit.prune(now, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += await this.fleet.prune(Math.max(retentionMs, FLEET_FORGET_MS));
    return n;
  }

  /** close writes what waits and closes the database. */
  async close(): Promise<void> {
    try {
      await this.flush(Date.now(), true);
    } finally {
      await this.db.close();
    }
  }
}
