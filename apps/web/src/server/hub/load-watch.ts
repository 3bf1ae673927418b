/** SATURATED: the share of its time the hub's event loop was busy above which it is behind on what agents send. */
export const SATURATED = 0.9;
/** KEEP_MS: how far back the samples go (more than an agent's silence needs to be judged). */
const KEEP_MS = 120_000;

/**
 * A LoadWatch remembers how busy the hub's event loop was, second by second. A hub that is busy all the time reads its
 * agents' messages late, or not at all before they pile up: an agent it has not heard from for a while may well have
 * spoken. Silence over a stretch when the hub was saturated is no evidence that an agent is down (unknown beats a
 * guess: thousands of agent-down incidents for one overloaded hub page for the wrong thing). Pure: times and loads are
 * given.
 */
export class LoadWatch {
  readonly #at: number[] = [];
  readonly #busy: number[] = [];

  /** record notes that over the second before `at` the event loop was busy `busy` of the time (0 to 1). */
  record(at: number, busy: number): void {
    this.#at.push(at);
    this.#busy.push(busy);
    let old = 0;
    while (old < this.#at.length && at - (this.#at[old] ?? at) > KEEP_MS) old++;
    if (old > 0) {
      this.#at.splice(0, old);
      this.#busy.splice(0, old);
    }
  }

  /** busy is how busy the event loop was over (`from`, `to`] on average; null when no sample covers it. */
  busy(from: number, to: number): number | null {
    let sum = 0;
    let n = 0;
    for (let i = this.#at.length - 1; i >= 0; i--) {
      const at = this.#at[i] ?? 0;
      if (at <= from) break;
      if (at > to) continue;
      sum += this.#busy[i] ?? 0;
      n++;
    }
    return n === 0 ? null : sum / n;
  }

  /** saturated tells whether the hub was saturated over (`from`, `to`]: its silence then says nothing of its agents. */
  saturated(from: number, to: number): boolean {
    return (this.busy(from, to) ?? 0) >= SATURATED;
  }

  /** now is the latest sample's load (0 before the first). */
  get now(): number {
    return this.#busy[this.#busy.length - 1] ?? 0;
  }
}
