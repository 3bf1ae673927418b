import type { Observation } from "./packet/classify.js";
import type { ObservationAggregate } from "./wire.js";

/**
 * An Aggregator folds observations into one entry per (ip, mac, kind, interface) so the agent sends a few hundred
 * entries per interval, never one message per frame. It is bounded: when `maxEntries` distinct keys are held, a new
 * key is dropped and counted (existing keys keep merging, so a flood of known frames loses nothing).
 */
export class Aggregator {
  readonly #entries = new Map<string, ObservationAggregate>();
  #dropped = 0;

  constructor(readonly maxEntries: number) {}

  /** size is the number of distinct keys held. */
  get size(): number {
    return this.#entries.size;
  }

  /** add folds one observation seen on `iface` at `now` (ms since the epoch). */
  add(obs: Observation, iface: string, now: number): void {
    this.merge({
      ip: obs.ip,
      mac: obs.mac,
      kind: obs.kind,
      iface,
      count: 1,
      firstSeen: now,
      lastSeen: now,
      peerIp: obs.peerIp,
      targetMac: obs.targetMac,
      ethernetMismatch: obs.ethernetMismatch ? 1 : 0,
    });
  }

  /** merge folds an aggregate in: used by add, and to put back a batch that could not be sent. */
  merge(e: ObservationAggregate): void {
    const key = `${e.ip}|${e.mac}|${e.kind}|${e.iface}`;
    const cur = this.#entries.get(key);
    if (cur === undefined) {
      if (this.#entries.size >= this.maxEntries) {
        this.#dropped += e.count;
        return;
      }
      this.#entries.set(key, { ...e });
      return;
    }
    cur.count += e.count;
    cur.ethernetMismatch += e.ethernetMismatch;
    if (e.firstSeen < cur.firstSeen) cur.firstSeen = e.firstSeen;
    if (e.lastSeen >= cur.lastSeen) {
      cur.lastSeen = e.lastSeen;
      cur.peerIp = e.peerIp;
      cur.targetMac = e.targetMac;
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
    for (const [key, e] of this.#entries) {
      if (entries.length === max) break;
      entries.push(e);
      this.#entries.delete(key);
    }
    const dropped = this.#dropped;
    this.#dropped = 0;
    return { entries, dropped };
  }
}
