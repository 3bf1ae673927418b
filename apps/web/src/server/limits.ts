/** A TokenBucket allows `rate` events per second with bursts of `burst`. */
export class TokenBucket {
  #tokens: number;
  #at: number;
  constructor(
    readonly rate: number,
    readonly burst: number,
    now: number,
  ) {
    this.#tokens = burst;
    this.#at = now;
  }
  take(now: number): boolean {
    if (!this.peek(now)) return false;
    this.#tokens -= 1;
    return true;
  }
  /** give returns one event's allowance (an attempt that turned out not to count). */
  give(): void {
    this.#tokens = Math.min(this.burst, this.#tokens + 1);
  }
  /** peek refills and says whether an event would be allowed now, without taking it. */
  peek(now: number): boolean {
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#at) / 1000) * this.rate);
    this.#at = now;
    return this.#tokens >= 1;
  }
  /** full: the bucket has refilled completely (its key can be forgotten). */
  full(now: number): boolean {
    this.peek(now);
    return this.#tokens >= this.burst;
  }
}

/** MAX_TRACKED_KEYS bounds an AttemptLimiter's table (refilled keys go first, then the oldest). */
const MAX_TRACKED_KEYS = 10_000;

/**
 * An AttemptLimiter slows guessing per key (a client address, a user name): each key may make `rate` attempts a
 * second with bursts of `burst`. An attempt is taken *before* the slow check it guards (a password hash, a
 * TokenReview), so parallel attempts cannot all pass before any is counted; one that succeeds is given back, so only
 * failures use up the allowance.
 */
export class AttemptLimiter {
  readonly #buckets = new Map<string, TokenBucket>();

  constructor(
    readonly rate: number,
    readonly burst: number,
    /** Keys tracked at most (refilled keys go first, then the oldest); Infinity for a table bounded by its callers. */
    readonly maxKeys = MAX_TRACKED_KEYS,
  ) {}

  /** take counts an attempt for `key`; false when its allowance is spent (the attempt must be refused). */
  take(key: string, now: number): boolean {
    let b = this.#buckets.get(key);
    if (b === undefined) {
      if (this.#buckets.size >= this.maxKeys) this.#forget(now);
      b = new TokenBucket(this.rate, this.burst, now);
      this.#buckets.set(key, b);
    }
    return b.take(now);
  }

  /** succeeded gives back the attempt `take` counted for `key`. */
  succeeded(key: string): void {
    this.#buckets.get(key)?.give();
  }

  #forget(now: number): void {
    for (const [k, b] of this.#buckets) if (b.full(now)) this.#buckets.delete(k);
    if (this.#buckets.size < this.maxKeys) return;
    const oldest = this.#buckets.keys().next();
    if (oldest.done !== true) this.#buckets.delete(oldest.value);
  }
}

/**
 * A WorkGate bounds slow work done for anonymous callers (password hashes: 19 MiB and tens of ms each) in total:
 * at most `running` at once and `waiting` queued; past that, `enter` answers false and the caller is refused at once.
 * Per-address limits alone let a client with many addresses (an IPv6 /48) tie up every core.
 */
export class WorkGate {
  #running = 0;
  readonly #queue: (() => void)[] = [];

  constructor(
    readonly running: number,
    readonly waiting: number,
  ) {}

  /** run runs `work` when a slot is free; null (without running it) when the queue is full. */
  async run<T>(work: () => Promise<T>): Promise<T | null> {
    if (this.#running >= this.running) {
      if (this.#queue.length >= this.waiting) return null;
      await new Promise<void>((resolve) => this.#queue.push(resolve));
    } else this.#running++;
    try {
      return await work();
    } finally {
      const next = this.#queue.shift();
      if (next !== undefined) next();
      else this.#running--;
    }
  }
}

/** A StreamLimitError: a principal (or the hub) has as many live streams open as it may. */
export class StreamLimitError extends Error {}

/**
 * StreamSlots bounds the live streams (subscriptions) open at once, per principal and in total: each holds a
 * feed cursor and sends whole lists, so one principal's thousand tabs, or a script, cannot wear the hub down.
 */
export class StreamSlots {
  readonly #open = new Map<string, number>();
  #total = 0;

  constructor(
    readonly perKey: number,
    readonly total: number,
  ) {}

  /** open takes a slot for `key` and returns its release (idempotent); throws StreamLimitError when none is free. */
  open(key: string): () => void {
    const mine = this.#open.get(key) ?? 0;
    if (mine >= this.perKey) throw new StreamLimitError(`${key} has ${mine} live views open, the most one user may: close some tabs`);
    if (this.#total >= this.total) throw new StreamLimitError(`the hub serves ${this.#total} live views, its limit: try again later`);
    this.#open.set(key, mine + 1);
    this.#total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.#open.get(key) ?? 1) - 1;
      if (n === 0) this.#open.delete(key);
      else this.#open.set(key, n);
      this.#total--;
    };
  }

  get size(): number {
    return this.#total;
  }
}
