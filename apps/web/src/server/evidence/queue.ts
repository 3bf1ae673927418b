import type { Logger } from "@whohas/core";
import { LogThrottle } from "../log-throttle.js";

/** MAX_QUEUED: jobs waiting at most; past it the oldest is dropped, and said so. */
const MAX_QUEUED = 2000;

/** A Job is one thing to do at `due`; `tries` counts the times it ran and asked to run again. */
export interface Job {
  readonly id: number;
  readonly due: number;
  readonly tries: number;
}

export interface DueQueueOptions {
  readonly clock: () => number;
  /** Runs one job that is due; it may add() it again for later. */
  readonly run: (job: Job) => Promise<void>;
  /** Jobs run at once at most. */
  readonly parallel: number;
  readonly logger: Logger;
}

/**
 * A DueQueue runs jobs when they are due, a few at a time, on one timer set for the earliest: the incidents waiting
 * for their frames to be asked for, whose windows end at different times.
 */
export class DueQueue {
  readonly #jobs: Job[] = [];
  #timer: NodeJS.Timeout | null = null;
  #running = 0;
  #stopped = false;

  readonly #log: LogThrottle;

  constructor(readonly o: DueQueueOptions) {
    this.#log = new LogThrottle(o.logger, o.clock);
  }

  /** waiting is how many jobs wait to run. */
  get waiting(): number {
    return this.#jobs.length;
  }

  add(id: number, due: number, tries = 0): void {
    if (this.#jobs.length >= MAX_QUEUED) {
      const lost = this.#jobs.shift();
      // A burst of incidents past the bound is one line (with how many more) every few seconds, not one each.
      this.#log.warn("evidence.queue_full", "", {
        incident: lost?.id,
        hint: `more than ${MAX_QUEUED} incidents wait for their frames: the oldest is not snapshotted (its capture can still be downloaded while the agents hold its frames)`,
      });
    }
    this.#jobs.push({ id, due, tries });
    this.#wake();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #wake(): void {
    if (this.#stopped || this.#running >= this.o.parallel) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const next = Math.min(...this.#jobs.map((j) => j.due));
    if (!Number.isFinite(next)) return;
    this.#timer = setTimeout(() => this.#drain(), Math.max(0, next - this.o.clock()));
    this.#timer.unref();
  }

  /** #drain starts the jobs that are due, up to `parallel` at once. */
  #drain(): void {
    this.#timer = null;
    while (!this.#stopped && this.#running < this.o.parallel) {
      const now = this.o.clock();
      const i = this.#jobs.findIndex((j) => j.due <= now);
      if (i < 0) break;
      const [job] = this.#jobs.splice(i, 1);
      if (job === undefined) continue;
      this.#running++;
      void this.o.run(job).finally(() => {
        this.#running--;
        this.#wake();
      });
    }
    this.#wake();
  }
}
