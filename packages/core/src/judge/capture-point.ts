import { macToNumber, parseMac } from "../packet/addr.js";
import { OBSERVATION_KINDS, type FrameFields, type ObservationKind } from "../packet/frame.js";
import { NO_MAC } from "../packet/link.js";
import type { ObservationAggregate, RequestReport } from "../wire.js";
import { KeyTable } from "./key-table.js";
import { IDLE_MS, IpNumbers, LinkIds, TimeQueue, ipKey, ipText, macText, type IpKey } from "./point-keys.js";
import { RequestSightings, type RequestVisitor } from "./request-sightings.js";

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
  /** Its id in the capture point's KeyTable. */
  readonly id: number;
  readonly link: string;
  readonly ip: IpKey;
  readonly mac: number;
  readonly kind: number;
  count: number;
  firstSeen: number;
  lastSeen: number;
  targetMac: number;
  mismatch: number;
  ethSrc: number;
}

/** KIND_SLOTS: room per link for the kinds in a KeyTable's small key (a power of two past OBSERVATION_KINDS). */
const KIND_SLOTS = 16;

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
   * a tagged one's is "NAME/VLAN" ('/' is never in an interface name), made once per VLAN and kept here with its
   * place (an untagged link's place too, once asked for).
   */
  readonly #links = new Map<string, { readonly iface: string; readonly vlan: number | null }>();
  readonly #linkKeys = new Map<string, string[]>();
  /** The aggregate slots, by their id in #keys: (link and kind, IP, MAC). */
  readonly #keys = new KeyTable();
  readonly #byId: (Slot | undefined)[] = [];
  readonly #linkIds = new LinkIds();
  readonly #ipNumbers = new IpNumbers();
  /** Slots with frames not drained yet, in the order they filled. */
  #filled: Slot[] = [];
  /** Slots held in #keys, empty ones included; and the empty ones by when they emptied, to forget. */
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

  /** where tells the interface and VLAN of a link key (as a RequestVisitor is given it). */
  where(link: string): { readonly iface: string; readonly vlan: number | null } {
    return this.#where(link);
  }

  /** #where tells the interface and VLAN of a link key (an untagged link's is made once: a drain asks per aggregate). */
  #where(link: string): { readonly iface: string; readonly vlan: number | null } {
    let place = this.#links.get(link);
    if (place === undefined) this.#links.set(link, (place = { iface: link, vlan: null }));
    return place;
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
    const c = this.#linkIds.of(iface) * KIND_SLOTS + kind;
    const ipn = this.#ipNumbers.of(ip);
    const id = ipn < 0 ? -1 : this.#keys.find(ipn, mac, c);
    let s = id < 0 ? undefined : this.#byId[id];
    if (s === undefined || s.count === 0) {
      if (this.#size >= this.maxEntries) {
        this.#dropped += count;
        return;
      }
      if (s === undefined) {
        const id = this.#keys.add(this.#ipNumbers.hold(ip), mac, c);
        s = { id, link: iface, ip, mac, kind, count, firstSeen: first, lastSeen: last, targetMac, mismatch, ethSrc };
        this.#byId[id] = s;
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
    const entries = this.drainEntries(max, now);
    const requests: RequestReport[] = this.#requests.drain(max, now, final);
    return { entries, requests, dropped: this.takeDropped(now) };
  }

  /**
   * drainRequests hands the requests drain() would report to `to` as they are read, without making reports: how a
   * capture point feeds the judge in the same process. Call after drainEntries, and takeDropped after both.
   */
  drainRequests(to: RequestVisitor, max: number, now: number, final = false): void {
    this.#requests.drainTo(to, max, now, final);
  }

  /** takeDropped forgets the keys idle at `now` and returns the frames dropped since it was last called. */
  takeDropped(now: number): number {
    this.#forgetIdleSlots(now);
    const dropped = this.#dropped + this.#requests.takeDropped();
    this.#dropped = 0;
    return dropped;
  }

  /** drainEntries removes and returns up to `max` aggregates (the first part of a drain). */
  drainEntries(max: number, now: number): ObservationAggregate[] {
    const entries: ObservationAggregate[] = [];
    this.drainEntriesTo((e) => entries.push({ ...e }), max, now);
    return entries;
  }

  /**
   * drainEntriesTo hands what drainEntries would return to `to`, one aggregate at a time, in ONE object refilled for
   * each (how a capture point feeds the judge in the same process: no object per aggregate); `to` keeps none of it.
   */
  drainEntriesTo(to: (e: ObservationAggregate) => void, max: number, now: number): void {
    const filled = this.#filled;
    const n = Math.min(max, filled.length);
    const keep = this.#slots <= KEEP_SLOTS;
    const e = this.#entry;
    for (let i = 0; i < n; i++) {
      const s = filled[i];
      if (s === undefined) break;
      const where = this.#where(s.link);
      e.ip = ipText(s.ip);
      e.mac = macText(s.mac);
      e.kind = OBSERVATION_KINDS[s.kind] ?? "request";
      e.iface = where.iface;
      e.vlan = where.vlan;
      e.count = s.count;
      e.firstSeen = Math.round(s.firstSeen);
      e.lastSeen = Math.round(s.lastSeen);
      e.targetMac = s.targetMac === NO_MAC ? null : macText(s.targetMac);
      e.ethernetMismatch = s.mismatch;
      e.ethSrc = s.ethSrc === NO_MAC ? null : macText(s.ethSrc);
      s.count = 0;
      if (keep) this.#emptySlots.push(s, now);
      else this.#drop(s);
      to(e);
    }
    this.#size -= n;
    this.#filled = n === filled.length ? [] : filled.slice(n);
  }

  /** The object drainEntriesTo refills. */
  readonly #entry: ObservationAggregate = {
    ip: "",
    mac: "",
    kind: "request",
    iface: "",
    vlan: null,
    count: 0,
    firstSeen: 0,
    lastSeen: 0,
    targetMac: null,
    ethernetMismatch: 0,
    ethSrc: null,
  };

  /** #drop forgets an empty slot. */
  #drop(s: Slot): void {
    if (this.#byId[s.id] !== s) return;
    this.#byId[s.id] = undefined;
    this.#keys.remove(s.id);
    this.#ipNumbers.release(s.ip);
    this.#slots--;
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
