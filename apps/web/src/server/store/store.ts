import { AccessRepo } from "./access.js";
import { AgentsRepo } from "./agents.js";
import { AuditLog } from "./audit.js";
import type { Db } from "./db.js";
import { EvidenceRepo } from "./evidence.js";
import { IncidentsRepo } from "./incidents.js";
import { migrate } from "./migrations.js";
import { Outbox } from "./outbox.js";
import { SettingsRepo } from "./settings.js";
import { MAX_ROWS_PER_FLUSH, TrafficRepo } from "./traffic.js";

export { MAX_ROWS_PER_FLUSH };
/** PRUNE_BATCH bounds one delete, so retention never holds the writer long enough to delay ingest. */
const PRUNE_BATCH = 5000;

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

  constructor(
    readonly db: Db,
    now: number,
  ) {
    migrate(db, now);
    this.traffic = new TrafficRepo(db);
    this.incidents = new IncidentsRepo(db);
    this.agents = new AgentsRepo(db);
    this.access = new AccessRepo(db);
    this.audit = new AuditLog(db);
    this.settings = new SettingsRepo(db);
    this.outbox = new Outbox(db);
    this.evidence = new EvidenceRepo(db);
  }

  /**
   * flush writes, in one transaction, the agents that changed and the traffic rows that grew (at most `maxRows` of
   * them, all when `force`d at shutdown). Returns the rows written.
   */
  flush(now = Date.now(), force = false, maxRows = MAX_ROWS_PER_FLUSH): number {
    if (this.traffic.pendingRows === 0 && !this.agents.pending) return 0;
    return this.db.tx(() => this.traffic.writeRows(now, force, maxRows) + this.agents.writeDirty());
  }

  /**
   * pruneStep deletes at most PRUNE_BATCH expired rows (traffic and resolved incidents older than `retentionMs`,
   * expired sessions, old notifications, audit entries past their own retention) and returns how many; call it again
   * while it returns a full batch, yielding between calls so ingest goes on.
   */
  pruneStep(now: number, retentionMs: number): number {
    const cut = now - retentionMs;
    let n = this.traffic.prune(cut, PRUNE_BATCH);
    if (n < PRUNE_BATCH) n += this.incidents.prune(cut, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += this.access.prune(now, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += this.outbox.prune(now, PRUNE_BATCH - n);
    if (n < PRUNE_BATCH) n += this.audit.prune(now, PRUNE_BATCH - n);
    return n;
  }

  close(): void {
    this.flush(Date.now(), true);
    this.db.close();
  }
}
