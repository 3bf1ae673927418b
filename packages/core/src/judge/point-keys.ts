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

/** IPV6_BASE: IPv6 keys are numbered from here, past every IPv4 address. */
const IPV6_BASE = 4_294_967_296;

/**
 * IpNumbers gives every IP key a number for the capture point's KeyTables: an IPv4 address is its own number; an
 * IPv6 text gets one past IPV6_BASE while some key holds it (counted), and its number is given out again after.
 */
export class IpNumbers {
  readonly #ids = new Map<string, number>();
  readonly #refs: number[] = [];
  readonly #free: number[] = [];

  /** of is the number of `ip`, -1 for an IPv6 text that no key holds. */
  of(ip: IpKey): number {
    if (typeof ip === "number") return ip;
    const id = this.#ids.get(ip);
    return id === undefined ? -1 : IPV6_BASE + id;
  }

  /** hold is the number of `ip`, counted as held once more (a key made with it). */
  hold(ip: IpKey): number {
    if (typeof ip === "number") return ip;
    let id = this.#ids.get(ip);
    if (id === undefined) {
      id = this.#free.pop() ?? this.#refs.length;
      this.#ids.set(ip, id);
      this.#refs[id] = 0;
    }
    this.#refs[id] = (this.#refs[id] ?? 0) + 1;
    return IPV6_BASE + id;
  }

  /** release counts one key with `ip` gone. */
  release(ip: IpKey): void {
    if (typeof ip === "number") return;
    const id = this.#ids.get(ip);
    if (id === undefined) return;
    const refs = (this.#refs[id] ?? 1) - 1;
    this.#refs[id] = refs;
    if (refs > 0) return;
    this.#ids.delete(ip);
    this.#free.push(id);
  }
}

/**
 * LinkIds numbers links (an interface, or a VLAN on it) for the KeyTables; a capture point sees few, kept for good.
 * The last one asked is remembered: a capture point's frames mostly come from one link.
 */
export class LinkIds {
  readonly #ids = new Map<string, number>();
  #last = "";
  #lastId = -1;

  of(link: string): number {
    if (link === this.#last) return this.#lastId;
    let id = this.#ids.get(link);
    if (id === undefined) this.#ids.set(link, (id = this.#ids.size));
    this.#last = link;
    this.#lastId = id;
    return id;
  }
}
