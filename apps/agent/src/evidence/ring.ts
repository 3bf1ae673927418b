import { LINKTYPE_ETHERNET, aboutIp, decodeFrame, newFrameFields } from "@whohas/core";

/**
 * Each frame is one record in the log, its header first:
 *
 *     | frame length 2 | interface id 2 | VLAN 2 (-1 untagged) | 0 2 | capture time, ms since the epoch, float64 8 |
 *     | frame bytes, padded to 4 |
 *
 * A frame length of 0 marks the end of the data before the log wraps to its start.
 */
const HEADER_LEN = 16;
const WRAP = 0;
/** MAX_FRAME_LEN: the length field has 16 bits (libpcap hands the agent at most SNAPLEN bytes). */
const MAX_FRAME_LEN = 0xffff;
/** MAX_IFACES: interface names held at once; ids are freed when their last frame goes. */
const MAX_IFACES = 0xffff;

/** A HeldFrame is one frame copied out of the ring. */
export interface HeldFrame {
  /** Capture time in nanoseconds since the epoch. */
  readonly tNs: bigint;
  readonly iface: string;
  /** Outer 802.1Q VLAN; null when untagged or priority-tagged (VLAN 0). */
  readonly vlan: number | null;
  readonly data: Uint8Array;
}

/** A Selection is what FrameRing.select found. */
export interface Selection {
  /** In capture-time order, the earliest first. */
  readonly frames: HeldFrame[];
  /** More frames matched than maxBytes allowed: those after the last one returned were left out. */
  readonly truncated: boolean;
  /** The capture time of the oldest frame held (matching or not), whole ms; null when the ring is empty. */
  readonly heldFromMs: number | null;
}

export interface FrameRingOptions {
  /** Bytes for frames and their headers; 0 keeps nothing. */
  readonly maxBytes: number;
  /** Frames older than this (behind the newest frame pushed, or the time given to expire) are dropped. */
  readonly maxAgeMs: number;
}

/**
 * A FrameRing keeps the most recent raw frames an agent captured, for an incident's evidence, within a bound in bytes
 * and in age; when full, the oldest go first. It is one preallocated buffer used as a circular log of records, so
 * that a push costs a copy of the frame and a few header writes, and no allocation: the capture path runs it for
 * every frame. Frames are classified only when selected, which is rare.
 */
export class FrameRing {
  /** bound is the size of the log: what the ring holds at most, headers included. */
  readonly bound: number;
  readonly maxAgeMs: number;
  readonly #log: Uint8Array;
  readonly #view: DataView;
  /** Where the next record goes, where the oldest one is, and how many there are. */
  #head = 0;
  #tail = 0;
  #count = 0;
  #used = 0;
  #evicted = 0;
  readonly #ids = new Map<string, number>();
  readonly #names: (string | undefined)[] = [];
  readonly #refs = new Uint32Array(MAX_IFACES);
  readonly #freeIds: number[] = [];
  readonly #fields = newFrameFields();

  constructor(opts: FrameRingOptions) {
    this.bound = Math.max(0, Math.floor(opts.maxBytes / 4) * 4);
    this.maxAgeMs = opts.maxAgeMs;
    this.#log = new Uint8Array(this.bound);
    this.#view = new DataView(this.#log.buffer);
  }

  /** bytes is what the records held take, headers and padding included. */
  get bytes(): number {
    return this.#used;
  }

  /** frames counts the frames held. */
  get frames(): number {
    return this.#count;
  }

  /** evicted counts the frames dropped for room or age since the ring was made. */
  get evicted(): number {
    return this.#evicted;
  }

  /**
   * push copies `frame`, captured at `tMs` (ms since the epoch; a fraction keeps sub-millisecond time) on `iface`, in
   * `vlan` (LinkFields.vlan: -1 untagged), dropping the oldest frames as the bounds require. Returns false when the
   * frame cannot be held at all (empty, or larger than the ring).
   */
  push(tMs: number, iface: string, vlan: number, frame: Uint8Array): boolean {
    const len = frame.length;
    const size = HEADER_LEN + ((len + 3) & ~3);
    if (len === 0 || len > MAX_FRAME_LEN || size > this.bound) return false;
    this.expire(tMs);
    const at = this.#place(size);
    const id = this.#idOf(iface);
    if (id < 0) return false;
    const v = this.#view;
    v.setUint16(at, len, true);
    v.setUint16(at + 2, id, true);
    v.setInt16(at + 4, vlan, true);
    v.setFloat64(at + 8, tMs, true);
    this.#log.set(frame, at + HEADER_LEN);
    this.#refs[id] = (this.#refs[id] ?? 0) + 1;
    this.#head = at + size;
    this.#count++;
    this.#used += size;
    return true;
  }

  /** expire drops the frames captured before `nowMs - maxAgeMs`. */
  expire(nowMs: number): void {
    const oldest = nowMs - this.maxAgeMs;
    while (this.#count > 0 && this.#view.getFloat64(this.#record(this.#tail) + 8, true) < oldest) this.#evictOldest();
  }

  /**
   * select copies out the frames about `ip` in `vlan` (null: untagged or priority-tagged) captured in [fromMs, toMs],
   * in time order, up to `maxBytes` of frame bytes. A frame is about an IPv4 address when it is the ARP sender or
   * target protocol address, about an IPv6 one when it is the NDP target or the IPv6 source.
   */
  select(ip: string, vlan: number | null, fromMs: number, toMs: number, maxBytes: number): Selection {
    const about = aboutIp(ip);
    const hits: { at: number; t: number }[] = [];
    let oldest = Infinity;
    const v = this.#view;
    this.#forEach((at) => {
      const t = v.getFloat64(at + 8, true);
      if (t < oldest) oldest = t;
      if (t < fromMs || t > toMs) return;
      const tag = v.getInt16(at + 4, true);
      if (vlan === null ? tag > 0 : tag !== vlan) return;
      const start = at + HEADER_LEN;
      const f = this.#fields;
      if (decodeFrame(this.#log, LINKTYPE_ETHERNET, f, start, start + v.getUint16(at, true)) === null && about(f, this.#log))
        hits.push({ at, t });
    });
    // Frames of several interfaces interleave slightly out of order; the sort is stable for equal times.
    hits.sort((a, b) => a.t - b.t);
    const frames: HeldFrame[] = [];
    let bytes = 0;
    for (const { at, t } of hits) {
      const len = v.getUint16(at, true);
      if (bytes + len > maxBytes) break;
      bytes += len;
      const tag = v.getInt16(at + 4, true);
      frames.push({
        tNs: nanos(t),
        iface: this.#names[v.getUint16(at + 2, true)] ?? "?",
        vlan: tag > 0 ? tag : null,
        data: this.#log.slice(at + HEADER_LEN, at + HEADER_LEN + len),
      });
    }
    return { frames, truncated: frames.length < hits.length, heldFromMs: this.#count === 0 ? null : Math.floor(oldest) };
  }

  /**
   * #place finds room for a record of `size` bytes at the head, evicting the oldest records until there is: after
   * the head when it fits before the end of the log, else at the start (leaving a wrap mark).
   */
  #place(size: number): number {
    for (;;) {
      if (this.#count === 0) {
        this.#head = this.#tail = 0;
        return 0;
      }
      if (this.#head > this.#tail) {
        if (this.bound - this.#head >= size) return this.#head;
        if (this.#tail >= size) {
          if (this.bound - this.#head >= 2) this.#view.setUint16(this.#head, WRAP, true);
          return 0;
        }
      } else if (this.#tail - this.#head >= size) {
        return this.#head;
      }
      this.#evictOldest();
    }
  }

  #evictOldest(): void {
    const at = this.#record(this.#tail);
    const v = this.#view;
    const size = HEADER_LEN + ((v.getUint16(at, true) + 3) & ~3);
    const id = v.getUint16(at + 2, true);
    const refs = (this.#refs[id] ?? 1) - 1;
    this.#refs[id] = refs;
    if (refs === 0) this.#freeId(id);
    this.#tail = at + size;
    this.#count--;
    this.#used -= size;
    this.#evicted++;
    if (this.#count === 0) this.#head = this.#tail = 0;
    else this.#tail = this.#record(this.#tail);
  }

  /** #record is where the record at `at` really starts: the start of the log past the end or a wrap mark. */
  #record(at: number): number {
    return at >= this.bound || this.#view.getUint16(at, true) === WRAP ? 0 : at;
  }

  #forEach(visit: (at: number) => void): void {
    let at = this.#tail;
    for (let i = 0; i < this.#count; i++) {
      at = this.#record(at);
      visit(at);
      at += HEADER_LEN + ((this.#view.getUint16(at, true) + 3) & ~3);
    }
  }

  /** #idOf numbers interface names, so that a record carries two bytes instead of the name; -1 when all are taken. */
  #idOf(name: string): number {
    const known = this.#ids.get(name);
    if (known !== undefined) return known;
    const id = this.#freeIds.pop() ?? this.#names.length;
    if (id >= MAX_IFACES) return -1;
    this.#ids.set(name, id);
    this.#names[id] = name;
    return id;
  }

  #freeId(id: number): void {
    const name = this.#names[id];
    if (name !== undefined) this.#ids.delete(name);
    this.#names[id] = undefined;
    this.#freeIds.push(id);
  }
}

/** nanos turns milliseconds since the epoch, with a fraction, into exact nanoseconds (the fraction to the nearest ns). */
function nanos(tMs: number): bigint {
  const ms = Math.floor(tMs);
  return BigInt(ms) * 1_000_000n + BigInt(Math.round((tMs - ms) * 1e6));
}
