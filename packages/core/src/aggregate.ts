import { formatIPv4Number, formatMacNumber, isIPv4, macToNumber, parseIPv4, parseMac } from "./packet/addr.js";
import type { Observation } from "./packet/classify.js";
import type { FrameFields, ObservationKind } from "./packet/frame.js";
import { NO_MAC } from "./packet/link.js";
import type { ObservationAggregate } from "./wire.js";
import { REQUEST_WINDOW_MS } from "./analysis/findings.js";

const KINDS: readonly ObservationKind[] = ["request", "reply", "gratuitous-request", "gratuitous-reply", "probe", "ns", "ns-dad", "na-solicited", "na-unsolicited"];
const KIND_INDEX: Readonly<Record<ObservationKind, number>> = Object.fromEntries(KINDS.map((k, i) => [k, i])) as Record<ObservationKind, number>;

type IpKey = number | string;

interface Slot {
  count: number;
  latencyCount: number;
  latencySum: number;
  firstSeen: number;
  lastSeen: number;
  peer: IpKey;
  targetMac: number;
  mismatch: number;
}

const ipText = (k: IpKey): string => (typeof k === "number" ? formatIPv4Number(k) : k);
const ipKey = (s: string): IpKey => (isIPv4(s) ? parseIPv4(s).reduce((n, b) => n * 256 + b, 0) : s);

/**
 * An Aggregator folds frames into one entry per (interface, ip, mac, kind), so the agent sends a few hundred entries
 * per interval, never one message per frame. Keys are numbers on the capture path (addFrame allocates nothing for a
 * key it holds); text appears only when entries are drained for the hub. It is bounded: when `maxEntries` keys are
 * held, a new key is dropped and counted, while known keys keep merging, so a flood of familiar frames loses nothing.
 */
export class Aggregator {
  readonly #byIface = new Map<string, Map<IpKey, Map<number, (Slot | undefined)[]>>>();
  /** Per interface, per IP: when the last request for it was seen (to time the replies that follow). */
  readonly #asked = new Map<string, Map<IpKey, number>>();
  #size = 0;
  #dropped = 0;

  constructor(readonly maxEntries: number) {}

  /** size is the number of keys held. */
  get size(): number {
    return this.#size;
  }

  /** addFrame folds one decoded frame seen on `iface` at `now` (ms since the epoch): the capture path. */
  addFrame(f: FrameFields, iface: string, now: number): void {
    const v4 = f.family === 4;
    const ip = v4 ? f.ip4 : f.ip6;
    let latency = -1;
    if (f.kind === "request" || f.kind === "ns") {
      let asked = this.#asked.get(iface);
      if (asked === undefined) this.#asked.set(iface, (asked = new Map<IpKey, number>()));
      if (asked.has(ip) || asked.size < this.maxEntries) asked.set(ip, now);
    } else if (f.kind === "reply" || f.kind === "na-solicited") {
      const t = this.#asked.get(iface)?.get(ip);
      if (t !== undefined && now >= t && now - t <= REQUEST_WINDOW_MS) latency = now - t;
    }
    this.#fold(iface, ip, f.mac, KIND_INDEX[f.kind], 1, now, now, v4 ? f.peer4 : f.peer6, f.targetMac, v4 && f.src !== NO_MAC && f.src !== f.mac ? 1 : 0, latency < 0 ? 0 : 1, latency < 0 ? 0 : latency);
  }

  /** add folds one observation (text form). */
  add(obs: Observation, iface: string, now: number): void {
    this.merge({ ip: obs.ip, mac: obs.mac, kind: obs.kind, iface, count: 1, firstSeen: now, lastSeen: now, peerIp: obs.peerIp, targetMac: obs.targetMac, ethernetMismatch: obs.ethernetMismatch ? 1 : 0 });
  }

  /** merge folds an aggregate in: used to put back a batch that could not be sent. */
  merge(e: ObservationAggregate): void {
    const tm = e.targetMac === null ? NO_MAC : macToNumber(parseMac(e.targetMac), 0);
    this.#fold(e.iface, ipKey(e.ip), macToNumber(parseMac(e.mac), 0), KIND_INDEX[e.kind], e.count, e.firstSeen, e.lastSeen, ipKey(e.peerIp), tm, e.ethernetMismatch, e.latencyCount ?? 0, e.latencySumMs ?? 0);
  }

  #fold(iface: string, ip: IpKey, mac: number, kind: number, count: number, first: number, last: number, peer: IpKey, targetMac: number, mismatch: number, latencyCount: number, latencySum: number): void {
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
      slots[kind] = { count, latencyCount, latencySum, firstSeen: first, lastSeen: last, peer, targetMac, mismatch };
      this.#size++;
      return;
    }
    s.count += count;
    s.mismatch += mismatch;
    s.latencyCount += latencyCount;
    s.latencySum += latencySum;
    if (first < s.firstSeen) s.firstSeen = first;
    if (last >= s.lastSeen) {
      s.lastSeen = last;
      s.peer = peer;
      s.targetMac = targetMac;
    }
  }

  /** putBack returns a drained batch that could not be sent, so that nothing is lost or counted twice. */
  putBack(entries: readonly ObservationAggregate[], dropped: number): void {
    for (const e of entries) this.merge(e);
    this.#dropped += dropped;
  }

  /** drain removes and returns up to `max` entries and the count of frames dropped since the last drain. */
  drain(max: number): { entries: ObservationAggregate[]; dropped: number } {
    const entries: ObservationAggregate[] = [];
    outer: for (const [iface, ips] of this.#byIface) {
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
              count: s.count,
              firstSeen: Math.round(s.firstSeen),
              lastSeen: Math.round(s.lastSeen),
              peerIp: ipText(s.peer),
              targetMac: s.targetMac === NO_MAC ? null : formatMacNumber(s.targetMac),
              ethernetMismatch: s.mismatch,
              ...(s.latencyCount > 0 ? { latencyCount: s.latencyCount, latencySumMs: Math.round(s.latencySum * 1000) / 1000 } : {}),
            });
            slots[k] = undefined;
            this.#size--;
          }
          if (slots.every((x) => x === undefined)) macs.delete(mac);
        }
        if (macs.size === 0) ips.delete(ip);
      }
      if (ips.size === 0) this.#byIface.delete(iface);
    }
    // Requests older than the window can no longer time a reply.
    const now = entries.reduce((t, e) => Math.max(t, e.lastSeen), 0);
    for (const [iface, asked] of this.#asked) {
      for (const [ip, t] of asked) if (now - t > REQUEST_WINDOW_MS) asked.delete(ip);
      if (asked.size === 0) this.#asked.delete(iface);
    }
    const dropped = this.#dropped;
    this.#dropped = 0;
    return { entries, dropped };
  }
}
