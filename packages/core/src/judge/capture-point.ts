import { macToNumber, parseMac } from "../packet/addr.js";
import { OBSERVATION_KINDS, type FrameFields, type ObservationKind } from "../packet/frame.js";
import { NO_MAC } from "../packet/link.js";
import type { ObservationAggregate, RequestReport } from "../wire.js";
import { CACHE_SIZE, IDLE_MS, TimeQueue, cacheIndex, ipKey, ipText, macText, type IpKey } from "./point-keys.js";
import { RequestSightings } from "./request-sightings.js";

/** KIND_INDEX: a kind's index in OBSERVATION_KINDS, the number a Slot keeps for its kind. */
const KIND_INDEX: Readonly<Record<ObservationKind, number>> = Object.fromEntries(OBSERVATION_KINDS.map((k, i) => [k, i])) as Record<
  ObservationKind,
  number
>;

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

/** VLAN_RESERVED: the VID no frame may carry. */
const VLAN_RESERVED = 4095;
/** KEEP_SLOTS bounds the empty slots kept for their keys to come back (a flood of new keys keeps none). */
const KEEP_SLOTS = 65_536;

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
  /** Per link, IP and MAC: the aggregate slots by kind. */
  readonly #byIface = new Map<string, Map<IpKey, Map<number, (Slot | undefined)[]>>>();
  readonly #slotCache = new Array<Slot | undefined>(CACHE_SIZE);
  /** Slots with frames not drained yet, in the order they filled. */
  #filled: Slot[] = [];
  /** Slots held in #byIface, empty ones included; and the empty ones by when they emptied, to forget. */
  #slots = 0;
  readonly #emptySlots = new TimeQueue<Slot>();
  readonly #requests: RequestSightings;
  #size = 0;
  #dropped = 0;

  constructor(readonly maxEntries: number) {
    this.#requests = new RequestSightings(maxEntries, (link) => this.#where(link));
  }

  /** size is the number of aggregates held. */
  get size(): number {
    return this.#size;
  }

  /**
   * pending is the number of requests held: waiting for replies or for the next drain, and reported ones until the
   * sweep after their window.
   */
  get pending(): number {
    return this.#requests.held;
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
    const link = f.vlan > 0 ? this.#link(ifaceName, f.vlan) : ifaceName;
    const v4 = f.family === 4;
    const ip = v4 ? f.ip4 : f.ip6;
    const peer = v4 ? f.peer4 : f.peer6;
    if (f.kind === "request" || f.kind === "ns") this.#requests.ask(link, ip, peer, f.mac, now);
    else if (f.kind === "reply" || f.kind === "na-solicited") this.#requests.answer(link, ip, peer, f.mac, now);
    const mismatch = v4 && f.src !== NO_MAC && f.src !== f.mac;
    this.#fold(link, ip, f.mac, KIND_INDEX[f.kind], 1, now, now, f.targetMac, mismatch ? 1 : 0, mismatch ? f.src : NO_MAC);
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
    for (const r of batch.requests) this.#requests.putBack(r, this.#link(r.iface, r.vlan));
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
    const requests: RequestReport[] = this.#requests.drain(max, now, final);
    this.#forgetIdleSlots(now);
    const dropped = this.#dropped + this.#requests.takeDropped();
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
        kind: OBSERVATION_KINDS[s.kind] ?? "request",
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

  /** #forgetIdleSlots forgets the slots empty for IDLE_MS (one filled again since is queued again when drained). */
  #forgetIdleSlots(now: number): void {
    const empty = this.#emptySlots;
    while (empty.dueBy(now - IDLE_MS)) {
      const slot = empty.pop();
      if (slot.count === 0 && now - slot.lastSeen > IDLE_MS) this.#drop(slot);
    }
  }
}
