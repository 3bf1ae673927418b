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

interface Slot {
  count: number;
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
/** IDLE_MS: an asker with no request this long is forgotten. */
const IDLE_MS = 10_000;

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

  #askedOf(iface: string, ip: IpKey, asker: IpKey): Asked {
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
  }

  /** #answer attaches a reply to the asker's latest request within REPLY_WINDOW_MS (once per MAC). */
  #answer(iface: string, ip: IpKey, asker: IpKey, mac: number, now: number): void {
    const a = this.#asked.get(iface)?.get(ip)?.get(asker);
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
    let ips = this.#byIface.get(iface);
    if (ips === undefined) this.#byIface.set(iface, (ips = new Map<IpKey, Map<number, (Slot | undefined)[]>>()));
    let macs = ips.get(ip);
    if (macs === undefined) ips.set(ip, (macs = new Map<number, (Slot | undefined)[]>()));
    let slots = macs.get(mac);
    if (slots === undefined) macs.set(mac, (slots = []));
    const s = slots[kind];
    if (s === undefined) {
      if (this.#size >= this.maxEntries) {
        this.#dropped += count;
        return;
      }
      slots[kind] = { count, firstSeen: first, lastSeen: last, targetMac, mismatch, ethSrc };
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
    const entries = this.#drainEntries(max);
    const requests = this.#drainRequests(max, now, final);
    const dropped = this.#dropped;
    this.#dropped = 0;
    return { entries, requests, dropped };
  }

  #drainEntries(max: number): ObservationAggregate[] {
    const entries: ObservationAggregate[] = [];
    outer: for (const [link, ips] of this.#byIface) {
      const { iface, vlan } = this.#where(link);
      for (const [ip, macs] of ips) {
        for (const [mac, slots] of macs) {
          for (let k = 0; k < slots.length; k++) {
            const s = slots[k];
            if (s === undefined) continue;
            if (entries.length === max) break outer;
            entries.push({
              ip: ipText(ip),
              mac: formatMacNumber(mac),
              kind: KINDS[k] ?? "request",
              iface,
              vlan,
              count: s.count,
              firstSeen: Math.round(s.firstSeen),
              lastSeen: Math.round(s.lastSeen),
              targetMac: s.targetMac === NO_MAC ? null : formatMacNumber(s.targetMac),
              ethernetMismatch: s.mismatch,
              ethSrc: s.ethSrc === NO_MAC ? null : formatMacNumber(s.ethSrc),
            });
            slots[k] = undefined;
            this.#size--;
          }
          if (slots.every((x) => x === undefined)) macs.delete(mac);
        }
        if (macs.size === 0) ips.delete(ip);
      }
      if (ips.size === 0) this.#byIface.delete(link);
    }
    return entries;
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
          replies.push([i, formatMacNumber(s.replies[k] ?? 0), Math.round((s.replies[k + 1] ?? 0) * 1000) / 1000]);
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
   * the askers left with none.
   */
  #sweep(now: number, final: boolean): void {
    this.#swept = now;
    for (const [iface, ips] of this.#asked) {
      for (const [ip, askers] of ips) {
        for (const [asker, a] of askers) {
          const list = a.list;
          let keep = 0;
          for (const s of list) if (!(final ? s.drained && s.replies.length === s.sent : reported(s, now))) list[keep++] = s;
          if (keep < list.length) {
            this.#sightings -= list.length - keep;
            list.length = keep;
          }
          if (keep === 0 && (final || now - a.last > IDLE_MS)) {
            askers.delete(asker);
            a.gone = true;
          }
        }
        if (askers.size === 0) ips.delete(ip);
      }
      if (ips.size === 0) this.#asked.delete(iface);
    }
  }
}
