/**
 * A KeyTable gives each key of three numbers a small id: `a` and `b` any integers a double holds exactly (an IPv4
 * address, a 48-bit MAC), `c` a small integer (a link and a kind). Open addressing with linear probing over typed
 * arrays: a lookup hashes three numbers and compares a few doubles, where nested Maps keyed by numbers past 2^30
 * hash each key as a heap number. Ids are dense and reused after remove(), so callers keep what they need per key in
 * plain arrays indexed by id.
 *
 * The keys come off the wire (addresses and MACs any host on the link may choose), so each table hashes with a seed
 * of its own, drawn at random: keys that collide in one table do not in another, and nobody can compute a flood of
 * colliding keys in advance.
 */
export class KeyTable {
  /** Per bucket: the id held there plus one (0: empty). */
  #buckets: Int32Array;
  #mask: number;
  /** A hash's top bits pick the bucket (its low bits mix least). */
  #shift: number;
  /** Per id: its key, and its bucket (to remove it without a lookup). */
  #a: Float64Array;
  #b: Float64Array;
  #c: Int32Array;
  /** Per id: whether it holds a key. */
  #live: Uint8Array;
  #free: number[] = [];
  #next = 0;
  #size = 0;

  constructor(
    capacity = 1024,
    /** The hash's seed: random unless given (tests give one). */
    readonly seed: number = crypto.getRandomValues(new Uint32Array(1))[0] ?? 0,
  ) {
    const n = 2 ** Math.ceil(Math.log2(Math.max(16, capacity)));
    this.#buckets = new Int32Array(n * 2);
    this.#mask = n * 2 - 1;
    this.#shift = 32 - Math.log2(n * 2);
    this.#a = new Float64Array(n);
    this.#b = new Float64Array(n);
    this.#c = new Int32Array(n);
    this.#live = new Uint8Array(n);
  }

  /** size is the number of keys held. */
  get size(): number {
    return this.#size;
  }

  /** find is the id of (a, b, c), or -1. */
  find(a: number, b: number, c: number): number {
    const buckets = this.#buckets;
    const mask = this.#mask;
    for (let i = keyHash(a, b, c, this.seed) >>> this.#shift; ; i = (i + 1) & mask) {
      const held = buckets[i] ?? 0;
      if (held === 0) return -1;
      const id = held - 1;
      if (this.#a[id] === a && this.#b[id] === b && this.#c[id] === c) return id;
    }
  }

  /** add gives (a, b, c) an id: call it only when find() said -1. */
  add(a: number, b: number, c: number): number {
    let id = this.#free.pop();
    if (id === undefined) {
      if (this.#next === this.#a.length) this.#grow();
      id = this.#next++;
    }
    this.#a[id] = a;
    this.#b[id] = b;
    this.#c[id] = c;
    this.#live[id] = 1;
    this.#place(id);
    this.#size++;
    return id;
  }

  /** remove lets `id` go (its key is no longer found; the id is given out again); an id not held is an error. */
  remove(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.#next || this.#live[id] !== 1) throw new RangeError(`KeyTable: id ${id} is not held`);
    const buckets = this.#buckets;
    const mask = this.#mask;
    let i = this.#home(id);
    while (buckets[i] !== id + 1) i = (i + 1) & mask;
    // Backward shift: the keys after the hole that probed past it move back, so no lookup stops at it.
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const held = buckets[j] ?? 0;
      if (held === 0) break;
      const home = this.#home(held - 1);
      // Move it when its home is not within (i, j] on the ring.
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
        buckets[i] = held;
        i = j;
      }
    }
    buckets[i] = 0;
    this.#live[id] = 0;
    this.#free.push(id);
    this.#size--;
  }

  /** #home is the bucket where the key of `id` starts its probe. */
  #home(id: number): number {
    return keyHash(this.#a[id] ?? 0, this.#b[id] ?? 0, this.#c[id] ?? 0, this.seed) >>> this.#shift;
  }

  #place(id: number): void {
    const buckets = this.#buckets;
    const mask = this.#mask;
    let i = this.#home(id);
    while (buckets[i] !== 0) i = (i + 1) & mask;
    buckets[i] = id + 1;
  }

  /** #grow doubles the ids' room and the buckets (at most half full), and places every key again. */
  #grow(): void {
    const n = this.#a.length * 2;
    const a = new Float64Array(n);
    const b = new Float64Array(n);
    const c = new Int32Array(n);
    const live = new Uint8Array(n);
    a.set(this.#a);
    b.set(this.#b);
    c.set(this.#c);
    live.set(this.#live);
    this.#live = live;
    this.#a = a;
    this.#b = b;
    this.#c = c;
    this.#buckets = new Int32Array(n * 2);
    this.#mask = n * 2 - 1;
    this.#shift = 32 - Math.log2(n * 2);
    for (let id = 0; id < this.#next; id++) if (this.#live[id] === 1) this.#place(id);
  }
}

/**
 * keyHash mixes three numbers (the first two up to 2^53) and a seed into 32 bits, the top ones best; multiplicative,
 * so one subnet spreads.
 */
export function keyHash(a: number, b: number, c: number, seed: number): number {
  // `a | 0` and `b & 0xffffff` take the low bits of any integer below 2^53 (ToInt32 is modulo 2^32) without the
  // floating-point remainder `%` would compute for numbers past 2^31.
  let h = Math.imul((a | 0) ^ seed, 0x9e3779b1) ^ Math.floor(a / 4_294_967_296);
  h = Math.imul(h ^ (b & 0xffffff), 0x85ebca77);
  h = Math.imul(h ^ Math.floor(b / 16_777_216) ^ Math.imul(c, 0x27d4eb2f), 0xc2b2ae3d);
  return (h ^ (h >>> 15)) >>> 0;
}
