/** INLINE: replies a slot holds in place (most requests get one to three); more move to a list of their own. */
const INLINE = 4;
/** STRIDE: numbers a slot's replies take in place: MAC, delay, MAC, delay... */
const STRIDE = INLINE * 2;

/**
 * A SightingSlab holds a capture point's request sightings as records in typed arrays, by slot number: when the
 * request was seen, the replies seen to it (MAC as a number, delay in ms), how many of them were drained, and whether
 * it was drained at all. Hundreds of thousands of requests a second pass through a capture point and live a second:
 * a slot is used again once freed, so a request makes no object for the collector.
 */
export class SightingSlab {
  #t = new Float64Array(1024);
  /** Numbers of `#replies` used by each slot (two per reply). */
  #n = new Int32Array(1024);
  #sent = new Int32Array(1024);
  #drained = new Uint8Array(1024);
  #replies = new Float64Array(1024 * STRIDE);
  /** The replies of a slot past INLINE, all of them (flat), by slot. */
  readonly #more = new Map<number, number[]>();
  #free: number[] = [];
  #next = 0;

  /** add takes a slot for a request seen at `t`, with no reply yet. */
  add(t: number): number {
    let s = this.#free.pop();
    if (s === undefined) {
      if (this.#next === this.#t.length) this.#grow();
      s = this.#next++;
    }
    this.#t[s] = t;
    this.#n[s] = 0;
    this.#sent[s] = 0;
    this.#drained[s] = 0;
    return s;
  }

  /** free gives a slot back. */
  free(s: number): void {
    if ((this.#n[s] ?? 0) > STRIDE) this.#more.delete(s);
    this.#free.push(s);
  }

  t(s: number): number {
    return this.#t[s] ?? 0;
  }

  /** n is how many numbers of replies the slot holds (two per reply). */
  n(s: number): number {
    return this.#n[s] ?? 0;
  }

  sent(s: number): number {
    return this.#sent[s] ?? 0;
  }

  drained(s: number): boolean {
    return this.#drained[s] === 1;
  }

  /** markDrained records that every reply the slot holds was drained. */
  markDrained(s: number): void {
    this.#sent[s] = this.#n[s] ?? 0;
    this.#drained[s] = 1;
  }

  /** replied tells whether `mac` is among the slot's replies. */
  replied(s: number, mac: number): boolean {
    const n = this.#n[s] ?? 0;
    const { list, base } = this.replies(s);
    for (let k = 0; k < n; k += 2) if (list[base + k] === mac) return true;
    return false;
  }

  /** reply appends (mac, delay) to the slot's replies. */
  reply(s: number, mac: number, delay: number): void {
    const n = this.#n[s] ?? 0;
    if (n < STRIDE) {
      const at = s * STRIDE + n;
      this.#replies[at] = mac;
      this.#replies[at + 1] = delay;
    } else {
      let more = this.#more.get(s);
      if (more === undefined) this.#more.set(s, (more = Array.from(this.#replies.subarray(s * STRIDE, s * STRIDE + STRIDE))));
      more.push(mac, delay);
    }
    this.#n[s] = n + 2;
  }

  /** replies is where the slot's replies are: `list` from `base` on, `n(s)` numbers (read before the next change). */
  replies(s: number): { list: ArrayLike<number>; base: number } {
    const where = this.#where;
    if ((this.#n[s] ?? 0) > STRIDE) {
      where.list = this.#more.get(s) ?? [];
      where.base = 0;
    } else {
      where.list = this.#replies;
      where.base = s * STRIDE;
    }
    return where;
  }

  /** One object for replies() to return: read at once, by one caller at a time. */
  readonly #where: { list: ArrayLike<number>; base: number } = { list: [], base: 0 };

  #grow(): void {
    const size = this.#t.length * 2;
    const grown = <A extends Float64Array | Int32Array | Uint8Array>(a: A, make: (n: number) => A, per = 1): A => {
      const b = make(size * per);
      b.set(a);
      return b;
    };
    this.#t = grown(this.#t, (n) => new Float64Array(n));
    this.#n = grown(this.#n, (n) => new Int32Array(n));
    this.#sent = grown(this.#sent, (n) => new Int32Array(n));
    this.#drained = grown(this.#drained, (n) => new Uint8Array(n));
    this.#replies = grown(this.#replies, (n) => new Float64Array(n), STRIDE);
  }
}
