/** A TokenBucket allows `rate` events per second with bursts of `burst`. */
export class TokenBucket {
  #tokens: number;
  #at: number;
  constructor(readonly rate: number, readonly burst: number, now: number) {
    this.#tokens = burst;
    this.#at = now;
  }
  take(now: number): boolean {
    if (!this.peek(now)) return false;
    this.#tokens -= 1;
    return true;
  }
  /** peek refills and says whether an event would be allowed now, without taking it. */
  peek(now: number): boolean {
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#at) / 1000) * this.rate);
    this.#at = now;
    return this.#tokens >= 1;
  }
}

/** MAX_TRACKED_PEERS bounds a FailureLimiter's table (the oldest address is forgotten first). */
const MAX_TRACKED_PEERS = 10_000;

/**
 * A FailureLimiter slows guessing: each client address may fail `rate` times a second with bursts of `burst`;
 * `allowed` says whether an address may try at all now. Used for sign-ins and agent connections.
 */
export class FailureLimiter {
  readonly #buckets = new Map<string, TokenBucket>();

  constructor(readonly rate: number, readonly burst: number) {}

  allowed(peer: string, now: number): boolean {
    return this.#buckets.get(peer)?.peek(now) ?? true;
  }

  fail(peer: string, now: number): void {
    let b = this.#buckets.get(peer);
    if (b === undefined) {
      if (this.#buckets.size >= MAX_TRACKED_PEERS) {
        const oldest = this.#buckets.keys().next();
        if (oldest.done !== true) this.#buckets.delete(oldest.value);
      }
      b = new TokenBucket(this.rate, this.burst, now);
      this.#buckets.set(peer, b);
    }
    b.take(now);
  }
}
