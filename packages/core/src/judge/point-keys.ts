import { formatIPv4Number, formatMacNumber, isIPv4, parseIPv4 } from "../packet/addr.js";

/** IpKey is an IPv4 address as a number, or IPv6 text: cheap to hash, formatted only when drained. */
export type IpKey = number | string;

/** IDLE_MS: what a capture point keeps of a key (an asker's requests, an aggregate) goes this long after its last frame. */
export const IDLE_MS = 10_000;

/** The texts of recent IPv4 keys, made once each: every drain names each busy IP again. */
const ipTexts = new Map<number, string>();
const MAX_IP_TEXTS = 200_000;

/** ipText is the text of an IP key. */
export function ipText(k: IpKey): string {
  if (typeof k !== "number") return k;
  let t = ipTexts.get(k);
  if (t === undefined) {
    if (ipTexts.size >= MAX_IP_TEXTS) ipTexts.clear();
    ipTexts.set(k, (t = formatIPv4Number(k)));
  }
  return t;
}

/** The texts of recent MACs, likewise: a busy link has few MACs, named in every drain. */
const macTexts = new Map<number, string>();
const MAX_MAC_TEXTS = 100_000;

/** macText is the text of a MAC held as a number. */
export function macText(mac: number): string {
  let t = macTexts.get(mac);
  if (t === undefined) {
    if (macTexts.size >= MAX_MAC_TEXTS) macTexts.clear();
    macTexts.set(mac, (t = formatMacNumber(mac)));
  }
  return t;
}

/** ipKey is the key of an IP's text (a batch put back). */
export const ipKey = (s: string): IpKey => (isIPv4(s) ? parseIPv4(s).reduce((n, b) => n * 256 + b, 0) : s);

/**
 * CACHE_SIZE: direct-mapped caches of the keys last used, by a hash of their numbers. A flood of ARP frames names few
 * keys again and again, and the maps behind (numbers past 2^30 as keys, which Map hashes slowly) are asked only on a
 * miss. A power of two.
 */
export const CACHE_SIZE = 16_384;
const CACHE_SHIFT = 32 - Math.log2(CACHE_SIZE);

/**
 * cacheIndex hashes up to three numbers (the second may be a 48-bit MAC) to a cache index. Multiplicative (odd
 * constants, top bits taken): addresses of one subnet differ in their low bits only, which a plain XOR folds onto a
 * few hundred indexes.
 */
export const cacheIndex = (a: number, b: number, c: number): number => {
  let h = Math.imul(a | 0, 0x9e3779b1);
  h = Math.imul(h ^ (b % 16_777_216), 0x85ebca77);
  h = Math.imul(h ^ Math.floor(b / 16_777_216) ^ c, 0xc2b2ae3d);
  return (h ^ (h >>> 15)) >>> CACHE_SHIFT;
};

/**
 * A TimeQueue holds items with times in the order they were pushed (times come in order, give or take a put-back
 * batch): a FIFO on an array whose consumed head is dropped once it is half of it.
 */
export class TimeQueue<T> {
  #items: T[] = [];
  #times: number[] = [];
  #head = 0;

  push(item: T, t: number): void {
    this.#items.push(item);
    this.#times.push(t);
  }

  /** dueBy tells whether the head was pushed with a time at or before `t`. */
  dueBy(t: number): boolean {
    return this.#head < this.#items.length && (this.#times[this.#head] ?? Infinity) <= t;
  }

  /** pop takes the head (call after dueBy said there is one). */
  pop(): T {
    const item = this.#items[this.#head] as T;
    this.#head++;
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items.splice(0, this.#head);
      this.#times.splice(0, this.#head);
      this.#head = 0;
    }
    return item;
  }
}
