import type { Logger } from "@whohas/core";

/** LOG_EVERY_MS: a repeated line is written at most this often per event and key. */
export const LOG_EVERY_MS = 60_000;
/** MAX_KEYS bounds what is remembered (a flood from many addresses forgets the oldest first). */
const MAX_KEYS = 10_000;

/**
 * A LogThrottle writes warnings that anyone can cause (a bad request target, a refused connection, a failed sign-in)
 * as the first one, then at most one line per LOG_EVERY_MS per event and key with the number `repeated` since: an
 * unauthenticated flood cannot flood the log, and nothing is hidden.
 */
export class LogThrottle {
  readonly #seen = new Map<string, { at: number; repeated: number }>();

  constructor(
    readonly logger: Logger,
    readonly clock: () => number = Date.now,
  ) {}

  warn(event: string, key: string, fields: Record<string, unknown>): void {
    this.#write("warn", event, key, fields);
  }

  /** error writes an error that repeats while its cause lasts (a database out of reach) in the same way. */
  error(event: string, key: string, fields: Record<string, unknown>): void {
    this.#write("error", event, key, fields);
  }

  #write(level: "warn" | "error", event: string, key: string, fields: Record<string, unknown>): void {
    const id = `${event}\0${key}`;
    const now = this.clock();
    const s = this.#seen.get(id);
    if (s !== undefined && now - s.at < LOG_EVERY_MS) {
      s.repeated++;
      return;
    }
    this.logger[level](event, s === undefined || s.repeated === 0 ? fields : { ...fields, repeated: s.repeated });
    this.#seen.delete(id);
    if (this.#seen.size >= MAX_KEYS) this.#seen.delete(this.#seen.keys().next().value ?? "");
    this.#seen.set(id, { at: now, repeated: 0 });
  }
}
