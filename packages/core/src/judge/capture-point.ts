import { formatIPv4Number, formatMacNumber, isIPv4, macToNumber, parseIPv4, parseMac } from "../packet/addr.js";
import type { FrameFields, ObservationKind } from "../packet/frame.js";
import { NO_MAC } from "../packet/link.js";
import type { ObservationAggregate, RequestReport } from "../wire.js";
import { MAX_REQUEST_TIMES, REPLY_WINDOW_MS } from "./findings.js";

const KINDS: readonly ObservationKind[] = [
  "request",
  "reply",
  "gratuitous-request",
  "gratuitous-reply",
  "probe",
  "ns",
  "ns-dad",
  "na-solicited",
  "na-unsolicited",
];
const KIND_INDEX: Readonly<Record<ObservationKind, number>> = Object.fromEntries(KINDS.map((k, i) => [k, i])) as Record<
  ObservationKind,
  number
>;

/** IpKey is an IPv4 address as a number, or IPv6 text: cheap to hash, formatted only when drained. */
type IpKey = number | string;

/**
 * A Slot aggregates one (link, ip, mac, kind). It stays in place after it is drained (count 0), so that a busy key
 * costs no allocation per drain; empty slots are forgotten IDLE_MS after their last frame, or at once past KEEP_SLOTS.
 */
interface Slot {
  readonly link: string;
  readonly ip: IpKey;
  readonly mac: number;
  readonly kind: number;
  count: number;
  /** Forgotten: no longer in the maps (a cache may still name it). */
  gone: boolean;
  firstSeen: number;
  lastSeen: number;
  targetMac: number;
  mismatch: number;
  ethSrc: number;
}

/**
 * A Sighting is one request this capture point saw, and the replies it saw to it (flat: mac, delay, mac, delay...).
 * `sent` counts the replies already drained: a sighting is drained once it has a reply (so a second responder is
 * known at once) and again for replies that come later, or once when its window passes unanswered.
 */
interface Sighting {
  t: number;
  /** Shared NO_REPLIES until the first reply (most requests get one or none). */
  replies: number[];
  sent: number;
  drained: boolean;
}

const NO_REPLIES: number[] = [];

/** reported: a request drained with all its replies, whose window is over: nothing more can come of it. */
const reported = (s: Sighting | undefined, now: number): boolean =>
  s !== undefined && s.drained && s.replies.length === s.sent && now - s.t > REPLY_WINDOW_MS;

/** Asked is what one capture point holds of one asker's requests for one IP on one interface. */
interface Asked {
  /** The link: the interface, or "NAME/VLAN" for a VLAN on it. */
  readonly iface: string;
  readonly ip: IpKey;
  readonly asker: IpKey;
  /** In time order; drained ones stay until their window is over, to time late replies. */
  readonly list: Sighting[];
  /** The latest request: an asker silent for IDLE_MS is forgotten (most ask again every second: they are kept). */
  last: number;
  /** In the due queue (something to report); forgotten: no longer in the maps. */
  due: boolean;
  gone: boolean;
}

/** VLAN_RESERVED: the VID no frame may carry. */
const VLAN_RESERVED = 4095;
/** SWEEP_MS: how often requests reported and over leave memory (a drain only looks at what has something new). */
const SWEEP_MS = 1000;
/** IDLE_MS: an asker with no request this long is forgotten, and so is an empty aggregate slot. */
const IDLE_MS = 10_000;
/**
 * CACHE_SIZE: direct-mapped caches of the slots and askers last used, by a hash of their IPv4 key. A flood of ARP
 * frames names few keys again and again, and the maps behind (numbers past 2^30 as keys, which Map hashes slowly) are
 * asked only on a miss. A power of two.
 */
const CACHE_SIZE = 4096;
const cacheIndex = (a: number, b: number, c: number): number =>
  (a ^ (b % 16_777_216) ^ Math.floor(b / 16_777_216) ^ (c << 7)) & (CACHE_SIZE - 1);

/** KEEP_SLOTS bounds the empty slots kept for their keys to come back (a flood of new keys keeps none). */
const KEEP_SLOTS = 65_536;

/** The texts of recent IPv4 keys, made once each: every drain names each busy IP again. */
const ipTexts = new Map<number, string>();
const MAX_IP_TEXTS = 200_000;

function ipText(k: IpKey): string {
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

function macText(mac: number): string {
  let t = macTexts.get(mac);
  if (t === undefined) {
    if (macTexts.size >= MAX_MAC_TEXTS) macTexts.clear();
    macTexts.set(mac, (t = formatMacNumber(mac)));
  }
  return t;
}
const ipKey = (s: string): IpKey => (isIPv4(s) ? parseIPv4(s).reduce((n, b) => n * 256 + b, 0) : s);

/** A Drained batch is what goes to the judge (the hub): aggregates, request reports, and frames lost to the bound. */
export interface Drained {
  readonly entries: ObservationAggregate[];
  readonly requests: RequestReport[];
  readonly dropped: number;
}

/**
 * A CapturePoint folds what one capture point (an agent, or a capture file) sees into what the judge needs:
 * aggregates per (interface, ip, mac, kind), which count frames, and the requests it saw with the replies it saw to
 * each, which tell who answered what. Keys are numbers on the capture path (a frame of a known key allocates
 * nothing); text appears only when drained. Bounded: past `maxEntries` aggregates (or pending requests) a new key is
 * dropped and counted, while known keys keep merging, so a flood of familiar frames loses nothing.
 */
export class CapturePoint {
  /**
   * A link is where frames were seen: an interface, or a VLAN on it. An untagged link's key is the interface's name;
   * a tagged one's is "NAME/VLAN" ('/' is never in an interface name), made once per VLAN and kept here.
   */
  readonly #links = new Map<string, { readonly iface: string; readonly vlan: number }>();
  readonly #linkKeys = new Map<string, string[]>();
  readonly #byIface = new Map<string, Map<IpKey, Map<number, (Slot | undefined)[]>>>();
  /** Per interface, IP and asker: the requests seen whose reply window is still open or that are not drained yet. */
  readonly #asked = new Map<string, Map<IpKey, Map<IpKey, Asked>>>();
  /**
   * The Asked with something to report (a request or a reply not drained yet), in the order they became due. A drain
   * walks these, not every asker of every IP (most have nothing new at any one drain); the rest is swept every SWEEP_MS.
   */
  #due: Asked[] = [];
  /**
   * The sweep's work, in time order: each request's asker once its window may have passed (#recent, with the
   * request's time), and askers left with no request (#emptied, with when they emptied). The sweep pops what is due
   * from their heads instead of visiting every asker of every IP.
   */
  readonly #recent = new TimeQueue<Asked>();
  readonly #emptied = new TimeQueue<Asked>();
  readonly #slotCache = new Array<Slot | undefined>(CACHE_SIZE);
  readonly #askedCache = new Array<Asked | undefined>(CACHE_SIZE);
  /** Slots with frames not drained yet, in the order they filled. */
  #filled: Slot[] = [];
  /** Slots held in #byIface, empty ones included; and the empty ones by when they emptied, to forget. */
  #slots = 0;
  readonly #emptySlots = new TimeQueue<Slot>();
  #swept = -Infinity;
  #size = 0;
  #sightings = 0;
  #dropped = 0;

  constructor(readonly maxEntries: number) {}

  /** size is the number of aggregates held. */
  get size(): number {
    return this.#size;
  }

  /**
   * pending is the number of requests held: waiting for replies or for the next drain, and reported ones until the
   * sweep after their window (at most SWEEP_MS later).
   */
  get pending(): number {
    return this.#sightings;
  }

  /** #link is the key of `vlan` on `iface` (the interface itself when untagged: vlan null, or 0, a priority tag). */
  #link(iface: string, vlan: number | null | undefined): string {
    if (vlan === null || vlan === undefined || vlan <= 0 || vlan >= VLAN_RESERVED) return iface;
    let keys = this.#linkKeys.get(iface);
    if (keys === undefined) this.#linkKeys.set(iface, (keys = []));
    let key = keys[vlan];
    if (key === undefined) {
      keys[vlan] = key = `${iface}/${vlan}`;
      this.#links.set(key, { iface, vlan });
    }
    return key;
  }

  /** #where tells the interface and VLAN of a link key. */
  #where(link: string): { readonly iface: string; readonly vlan: number | null } {
    return this.#links.get(link) ?? { iface: link, vlan: null };
  }

  /** addFrame folds one decoded frame seen on `iface` at `now` (ms since the epoch): the capture path. */
  addFrame(f: FrameFields, ifaceName: string, now: number): void {
    // VID 4095 is reserved (802.1Q): such a frame belongs to no VLAN, and one could otherwise spoil a whole batch.
    if (f.vlan === VLAN_RESERVED) return;
    const iface = f.vlan > 0 ? this.#link(ifaceName, f.vlan) : ifaceName;
    const v4 = f.family === 4;
    const ip = v4 ? f.ip4 : f.ip6;
    const peer = v4 ? f.peer4 : f.peer6;
    if (f.kind === "request" || f.kind === "ns") this.#ask(iface, ip, peer, now);
    else if (f.kind === "reply" || f.kind === "na-solicited") this.#answer(iface, ip, peer, f.mac, now);
    const mismatch = v4 && f.src !== NO_MAC && f.src !== f.mac;
    this.#fold(iface, ip, f.mac, KIND_INDEX[f.kind], 1, now, now, f.targetMac, mismatch ? 1 : 0, mismatch ? f.src : NO_MAC);
  }

  /** #findAsked is what is held of `asker`'s requests for `ip` on `iface`, if anything. */
  #findAsked(iface: string, ip: IpKey, asker: IpKey): Asked | undefined {
    if (typeof ip === "number" && typeof asker === "number") {
      const i = cacheIndex(ip, asker, 0);
      const c = this.#askedCache[i];
      if (c?.ip === ip && c.asker === asker && c.iface === iface && !c.gone) return c;
      const a = this.#asked.get(iface)?.get(ip)?.get(asker);
      if (a !== undefined) this.#askedCache[i] = a;
      return a;
    }
    return this.#asked.get(iface)?.get(ip)?.get(asker);
  }

  #askedOf(iface: string, ip: IpKey, asker: IpKey): Asked {
    const found = this.#findAsked(iface, ip, asker);
    if (found !== undefined) return found;
    let ips = this.#asked.get(iface);
    if (ips === undefined) this.#asked.set(iface, (ips = new Map<IpKey, Map<IpKey, Asked>>()));
    let askers = ips.get(ip);
    if (askers === undefined) ips.set(ip, (askers = new Map<IpKey, Asked>()));
    let a = askers.get(asker);
    if (a === undefined) askers.set(asker, (a = { iface, ip, asker, list: [], last: -Infinity, due: false, gone: false }));
    return a;
  }

  /** #markDue queues `a` for the next drain (once: a flag, not a hash, on the path of every frame). */
  #markDue(a: Asked): void {
    if (a.due) return;
    a.due = true;
    this.#due.push(a);
  }

  /** #ask notes a request: a new sighting for its asker (the latest one is what replies answer). */
  #ask(iface: string, ip: IpKey, asker: IpKey, now: number): void {
    if (this.#sightings >= this.maxEntries) {
      this.#dropped++;
      return;
    }
    const a = this.#askedOf(iface, ip, asker);
    a.list.push({ t: now, replies: NO_REPLIES, sent: 0, drained: false });
    if (now > a.last) a.last = now;
    this.#sightings++;
    this.#markDue(a);
    this.#recent.push(a, now);
  }

  /** #answer attaches a reply to the asker's latest request within REPLY_WINDOW_MS (once per MAC). */
  #answer(iface: string, ip: IpKey, asker: IpKey, mac: number, now: number): void {
    const a = this.#findAsked(iface, ip, asker);
    if (a === undefined) return;
    const list = a.list;
    for (let i = list.length - 1; i >= 0; i--) {
      const s = list[i];
      if (s === undefined || s.t > now) continue;
      if (now - s.t > REPLY_WINDOW_MS) return;
      for (let k = 0; k < s.replies.length; k += 2) if (s.replies[k] === mac) return;
      // An array literal has its exact size; one grown by push keeps room for sixteen.
      if (s.replies === NO_REPLIES) s.replies = [mac, now - s.t];
      else s.replies.push(mac, now - s.t);
      this.#markDue(a);
      return;
    }
  }

  /** merge folds an aggregate back in: a batch that could not be sent. */
  merge(e: ObservationAggregate): void {
    const tm = e.targetMac === null ? NO_MAC : macToNumber(parseMac(e.targetMac), 0);
    const src = e.ethSrc === null ? NO_MAC : macToNumber(parseMac(e.ethSrc), 0);
    this.#fold(
      this.#link(e.iface, e.vlan),
      ipKey(e.ip),
      macToNumber(parseMac(e.mac), 0),
      KIND_INDEX[e.kind],
      e.count,
      e.firstSeen,
      e.lastSeen,
      tm,
      e.ethernetMismatch,
      src,
    );
  }

  #fold(
    iface: string,
    ip: IpKey,
    mac: number,
    kind: number,
    count: number,
    first: number,
    last: number,
    targetMac: number,
    mismatch: number,
    ethSrc: number,
  ): void {
    const ci = typeof ip === "number" ? cacheIndex(ip, mac, kind) : -1;
    let s = ci < 0 ? undefined : this.#slotCache[ci];
    if (s?.ip !== ip || s.mac !== mac || s.kind !== kind || s.link !== iface || s.gone) {
      s = this.#slotOf(iface, ip, mac, kind);
      if (ci >= 0 && s !== undefined) this.#slotCache[ci] = s;
    }
    if (s === undefined || s.count === 0) {
      if (this.#size >= this.maxEntries) {
        this.#dropped += count;
        return;
      }
      if (s === undefined) {
        s = { link: iface, ip, mac, kind, count, gone: false, firstSeen: first, lastSeen: last, targetMac, mismatch, ethSrc };
        this.#slotsOf(iface, ip, mac)[kind] = s;
        if (ci >= 0) this.#slotCache[ci] = s;
        this.#slots++;
      } else {
        s.count = count;
        s.firstSeen = first;
        s.lastSeen = last;
        s.targetMac = targetMac;
        s.mismatch = mismatch;
        s.ethSrc = ethSrc;
      }
      this.#filled.push(s);
      this.#size++;
      return;
    }
    s.count += count;
    s.mismatch += mismatch;
    if (ethSrc !== NO_MAC) s.ethSrc = ethSrc;
    if (first < s.firstSeen) s.firstSeen = first;
    if (last >= s.lastSeen) {
      s.lastSeen = last;
      s.targetMac = targetMac;
    }
  }

  /** #slotOf is the slot of a key, if held. */
  #slotOf(iface: string, ip: IpKey, mac: number, kind: number): Slot | undefined {
    return this.#byIface.get(iface)?.get(ip)?.get(mac)?.[kind];
  }

  /** #slotsOf is the slots of (iface, ip, mac) by kind, made when missing. */
  #slotsOf(iface: string, ip: IpKey, mac: number): (Slot | undefined)[] {
    let ips = this.#byIface.get(iface);
    if (ips === undefined) this.#byIface.set(iface, (ips = new Map<IpKey, Map<number, (Slot | undefined)[]>>()));
    let macs = ips.get(ip);
    if (macs === undefined) ips.set(ip, (macs = new Map<number, (Slot | undefined)[]>()));
    let slots = macs.get(mac);
    if (slots === undefined) macs.set(mac, (slots = []));
    return slots;
  }

  /** putBack returns a drained batch that could not be sent, so that nothing is lost or counted twice. */
  putBack(batch: Drained): void {
    for (const e of batch.entries) this.merge(e);
    for (const r of batch.requests) {
      const ip = ipKey(r.ip);
      const asker = ipKey(r.asker);
      const replies = new Map<number, number[]>();
      for (const [i, mac, delay] of r.replies) replies.set(i, [...(replies.get(i) ?? []), macToNumber(parseMac(mac), 0), delay]);
      const a = this.#askedOf(this.#link(r.iface, r.vlan), ip, asker);
      const list = a.list;
      for (const [i, t] of r.times.entries()) {
        list.push({ t, replies: replies.get(i) ?? [], sent: 0, drained: false });
        this.#sightings++;
        this.#recent.push(a, t);
      }
      this.#markDue(a);
      list.sort((a, b) => a.t - b.t);
    }
    this.#dropped += batch.dropped;
  }

  /**
   * drain removes and returns up to `max` aggregates and `max` request reports, with the frames dropped since the
   * last drain. `now` decides which requests' reply windows are over: those are reported even unanswered (every
   * node's report of a request no one answered is how the hub counts requests left unanswered); `final` reports
   * every request (the end of a capture file).
   */
  drain(max: number, now: number, final = false): Drained {
    const entries = this.#drainEntries(max, now);
    const requests = this.#drainRequests(max, now, final);
    const dropped = this.#dropped;
    this.#dropped = 0;
    return { entries, requests, dropped };
  }

  #drainEntries(max: number, now: number): ObservationAggregate[] {
    const filled = this.#filled;
    const n = Math.min(max, filled.length);
    const entries = new Array<ObservationAggregate>(n);
    const keep = this.#slots <= KEEP_SLOTS;
    for (let i = 0; i < n; i++) {
      const s = filled[i];
      if (s === undefined) break;
      const { iface, vlan } = this.#where(s.link);
      entries[i] = {
        ip: ipText(s.ip),
        mac: macText(s.mac),
        kind: KINDS[s.kind] ?? "request",
        iface,
        vlan,
        count: s.count,
        firstSeen: Math.round(s.firstSeen),
        lastSeen: Math.round(s.lastSeen),
        targetMac: s.targetMac === NO_MAC ? null : macText(s.targetMac),
        ethernetMismatch: s.mismatch,
        ethSrc: s.ethSrc === NO_MAC ? null : macText(s.ethSrc),
      };
      s.count = 0;
      if (keep) this.#emptySlots.push(s, now);
      else this.#drop(s);
    }
    this.#size -= n;
    this.#filled = n === filled.length ? [] : filled.slice(n);
    return entries;
  }

  /** #drop forgets an empty slot, and the maps it leaves empty. */
  #drop(s: Slot): void {
    const ips = this.#byIface.get(s.link);
    const macs = ips?.get(s.ip);
    const slots = macs?.get(s.mac);
    if (ips === undefined || macs === undefined || slots?.[s.kind] !== s) return;
    slots[s.kind] = undefined;
    s.gone = true;
    this.#slots--;
    if (slots.some((x) => x !== undefined)) return;
    macs.delete(s.mac);
    if (macs.size > 0) return;
    ips.delete(s.ip);
    if (ips.size === 0) this.#byIface.delete(s.link);
  }

  #drainRequests(max: number, now: number, final: boolean): RequestReport[] {
    const out: RequestReport[] = [];
    const due = this.#due;
    this.#due = [];
    for (let n = 0; n < due.length; n++) {
      const a = due[n];
      if (a === undefined || a.gone) continue;
      if (out.length === max) {
        // The rest waits for the next drain, in order.
        for (const b of due.slice(n)) if (!b.gone) this.#due.push(b);
        break;
      }
      const list = a.list;
      // Most lists have nothing due at a drain: their arrays are made only when something is.
      let times: number[] | null = null;
      let replies: [number, string, number][] | null = null;
      let waiting = false;
      for (const s of list) {
        const over = final || now - s.t > REPLY_WINDOW_MS;
        const fresh = s.replies.length > s.sent;
        if (!fresh && (s.drained || !over)) {
          if (!s.drained) waiting = true;
          continue;
        }
        if (times?.length === MAX_REQUEST_TIMES) {
          waiting = true;
          break;
        }
        times ??= [];
        replies ??= [];
        const i = times.length;
        times.push(Math.round(s.t));
        for (let k = s.sent; k < s.replies.length; k += 2)
          replies.push([i, macText(s.replies[k] ?? 0), Math.round((s.replies[k + 1] ?? 0) * 1000) / 1000]);
        s.sent = s.replies.length;
        s.drained = true;
      }
      if (times !== null) {
        const { iface, vlan } = this.#where(a.iface);
        out.push({ ip: ipText(a.ip), asker: ipText(a.asker), iface, vlan, times, replies: replies ?? [] });
      }
      // Nothing left to report until a request or a reply comes (#ask and #answer queue it again).
      if (waiting) this.#due.push(a);
      else a.due = false;
    }
    if (final || now - this.#swept >= SWEEP_MS) this.#sweep(now, final);
    return out;
  }

  /**
   * #sweep forgets requests whose window is over and that were reported (the latest ones stay to time replies), and
   * the askers left with none for IDLE_MS; at the end of a capture (`final`), every reported request and every
   * asker left with none.
   */
  #sweep(now: number, final: boolean): void {
    this.#swept = now;
    if (final) {
      // forEach, not for-of over entries: an entry is an array made per key, and this visits every asker.
      this.#asked.forEach((ips) => ips.forEach((askers) => askers.forEach((a) => this.#trim(a, now, true))));
      return;
    }
    const recent = this.#recent;
    while (recent.dueBy(now - REPLY_WINDOW_MS)) {
      const a = recent.pop();
      // A request not reported yet (a drain was full) is looked at again after the next window.
      if (!a.gone && this.#trim(a, now, false)) recent.push(a, now);
    }
    const emptied = this.#emptied;
    while (emptied.dueBy(now - IDLE_MS)) {
      const a = emptied.pop();
      // An asker that asked again since is queued again from #recent when it empties.
      if (!a.gone && a.list.length === 0 && now - a.last > IDLE_MS) this.#forget(a);
    }
    const empty = this.#emptySlots;
    while (empty.dueBy(now - IDLE_MS)) {
      const slot = empty.pop();
      // A slot filled again since is queued again when it is drained.
      if (slot.count === 0 && now - slot.lastSeen > IDLE_MS) this.#drop(slot);
    }
  }

  /**
   * #trim drops the reported requests of `a` whose window is over (every reported one when `final`); returns whether
   * one over its window is still to report. An asker left with none is queued to be forgotten (at once when `final`).
   */
  #trim(a: Asked, now: number, final: boolean): boolean {
    const list = a.list;
    let keep = 0;
    let unreported = false;
    for (const s of list) {
      if (final ? s.drained && s.replies.length === s.sent : reported(s, now)) continue;
      if (now - s.t > REPLY_WINDOW_MS) unreported = true;
      list[keep++] = s;
    }
    if (keep < list.length) {
      this.#sightings -= list.length - keep;
      list.length = keep;
      if (keep === 0 && !final) this.#emptied.push(a, now);
    }
    if (keep === 0 && final) this.#forget(a);
    return unreported;
  }

  #forget(a: Asked): void {
    a.gone = true;
    const ips = this.#asked.get(a.iface);
    const askers = ips?.get(a.ip);
    if (ips === undefined || askers === undefined) return;
    askers.delete(a.asker);
    if (askers.size > 0) return;
    ips.delete(a.ip);
    if (ips.size === 0) this.#asked.delete(a.iface);
  }
}

/**
 * A TimeQueue holds items with times in the order they were pushed (times come in order, give or take a put-back
 * batch): a FIFO on an array whose consumed head is dropped once it is half of it.
 */
class TimeQueue<T> {
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
