import { performance } from "node:perf_hooks";
import type { Logger } from "@whohas/core";
import { MAX_ROWS_PER_FLUSH } from "../store/store.js";
import { LogThrottle } from "../log-throttle.js";
import { PUBLISH_MS } from "./fleet.js";
import type { Hub } from "./hub.js";

/** ROUND_MS: how often the IPs that may change with time alone (and the nodes) are judged. */
export const ROUND_MS = 1000;
/** WRITE_MS: how often what the hub buffered is written (half a round after each round). */
const WRITE_MS = 1000;
/** JUDGE_SLICE / WRITE_SLICE: IPs judged, rows written, between two turns of the event loop (a few ms each). */
const JUDGE_SLICE = 1000;
const WRITE_SLICE = 500;
/** SATURATION_LOG_MS: the hub says it is saturated once it has been for this long (a busy second is no news). */
const SATURATION_LOG_MS = 10_000;
/** PRUNE_EVERY_MS: how often retention runs (in small batches that yield to ingest). */
const PRUNE_EVERY_MS = 10 * 60_000;

export interface SchedulerOptions {
  readonly hub: Hub;
  readonly logger: Logger;
  /** The retention in force (Settings may change it at run time). */
  readonly retentionMs: () => Promise<number>;
  /** What to check when a write fails (the disk of the SQLite file, or the PostgreSQL server). */
  readonly storageHint: string;
  /** Times each pass (the hub's metrics). */
  readonly timer?: (pass: "judge" | "write") => () => void;
}

const turn = () => new Promise((r) => setImmediate(r));

/**
 * The Scheduler runs the hub's periodic passes: a judging round every second, the writes half a second later, and
 * retention every ten minutes, each in slices with network I/O served between them, so that tens of thousands of
 * IPs never pause the event loop for long. What agents report is judged at once, outside these rounds.
 */
export class Scheduler {
  readonly #timers: NodeJS.Timeout[] = [];
  #judging = false;
  #writing = false;
  #publishing = false;
  #publishNoisy: LogThrottle | null = null;
  /** Since when writes fail (null while they go through), and the throttle of their error line. */
  #failingSince: number | null = null;
  #noisy: LogThrottle | null = null;
  /** Stopped: a pass between two slices stops there (the database may be closed next). */
  #stopped = false;
  #elu = performance.eventLoopUtilization();
  #saturated = false;

  constructor(readonly o: SchedulerOptions) {}

  start(): void {
    this.#timers.push(setInterval(() => this.#sampleLoad(), 1000));
    this.#timers.push(setInterval(() => void this.#round(), ROUND_MS));
    this.#timers.push(setTimeout(() => this.#timers.push(setInterval(() => void this.#write(), WRITE_MS)), ROUND_MS / 2));
    this.#timers.push(setInterval(() => void this.#prune(), PRUNE_EVERY_MS));
    this.#timers.push(setInterval(() => void this.#publish(), PUBLISH_MS));
    void this.#prune();
    void this.#publish();
  }

  /** #publish writes this cluster's summary and changed IP rows for the fleet's overview. */
  async #publish(): Promise<void> {
    if (this.#publishing || this.#stopped) return;
    this.#publishing = true;
    try {
      await this.o.hub.fleet.publish();
    } catch (e) {
      this.#publishNoisy ??= new LogThrottle(this.o.logger);
      this.#publishNoisy.error("fleet.publish_failed", "", {
        message: (e as Error).message,
        hint: `the other hubs of the fleet show this cluster as not reporting meanwhile; ${this.o.storageHint}`,
      });
    }
    this.#publishing = false;
  }

  /**
   * #sampleLoad records how busy the event loop was over the last second: agents' silence while it was saturated is
   * not held against them. Saying so once when it starts, and once when it ends.
   */
  #sampleLoad(): void {
    const { utilization } = performance.eventLoopUtilization(this.#elu);
    this.#elu = performance.eventLoopUtilization();
    const { load } = this.o.hub.agents;
    const now = this.o.hub.clock();
    load.record(now, utilization);
    const saturated = load.saturated(now - SATURATION_LOG_MS, now);
    if (saturated === this.#saturated) return;
    this.#saturated = saturated;
    const busy = Math.round(load.now * 100) / 100;
    if (saturated)
      this.o.logger.warn("hub.saturated", {
        busy,
        hint: "the hub is busy all the time and reads what agents send late: agents are not called down while it lasts; give it more CPU, or fewer agents per hub",
      });
    else this.o.logger.info("hub.saturation_ended", { busy });
  }

  /** stop ends the passes and writes everything still buffered (shutdown). */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearTimeout(t);
    const { hub } = this.o;
    while (hub.ticking) hub.tick();
    hub.tick();
    await hub.flush(true);
  }

  async #round(): Promise<void> {
    // The previous round is still going: this second is skipped.
    if (this.#judging) return;
    this.#judging = true;
    const end = this.o.timer?.("judge");
    try {
      do {
        this.o.hub.tick(JUDGE_SLICE);
        await turn();
      } while (this.o.hub.ticking && !this.#stopped);
    } catch (e) {
      this.o.logger.error("hub.tick_failed", { message: (e as Error).message });
    }
    end?.();
    this.#judging = false;
  }

  async #write(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    const end = this.o.timer?.("write");
    try {
      for (let written = 0; written < MAX_ROWS_PER_FLUSH && !this.#stopped;) {
        const n = await this.o.hub.flush(false, WRITE_SLICE);
        written += n;
        if (n < WRITE_SLICE) break;
        await turn();
      }
      if (this.#failingSince !== null) {
        this.o.logger.info("store.write_recovered", { failedForMs: Date.now() - this.#failingSince });
        this.#failingSince = null;
      }
    } catch (e) {
      // A full disk, a locked database or a lost PostgreSQL must not stop ingest: the live view goes on, what was not
      // written waits for the next pass, and the error says what to fix (once a minute while it lasts, with how many
      // passes failed since; store.write_recovered says when it ended).
      this.#failingSince ??= Date.now();
      this.#noisy ??= new LogThrottle(this.o.logger);
      this.#noisy.error("store.write_failed", "", { message: (e as Error).message, hint: this.o.storageHint });
    }
    end?.();
    this.#writing = false;
  }

  async #prune(): Promise<void> {
    try {
      const retentionMs = await this.o.retentionMs();
      const forgotten = await this.o.hub.forgetStaleAgents(retentionMs);
      if (forgotten.length > 0)
        this.o.logger.info("agents.forgotten", {
          nodes: forgotten.slice(0, 20),
          count: forgotten.length,
          why: "silent longer than the retention, or no longer a Node of the cluster",
        });
      let removed = 0;
      for (let n = -1; n !== 0 && !this.#stopped;) {
        n = await this.o.hub.store.pruneStep(Date.now(), retentionMs);
        removed += n;
        await turn();
      }
      if (removed > 0) this.o.logger.info("store.pruned", { rows: removed });
    } catch (e) {
      this.o.logger.error("store.prune_failed", { message: (e as Error).message });
    }
  }
}
