import { FLIP_FLOP_MS } from "./findings.js";
import type { LiveFinding } from "./live-findings.js";

interface Seen {
  mac: string;
  node: string | null;
  prev: string | null;
  prevNode: string | null;
  changedAt: number;
  flippedAt: number | null;
}

/**
 * A FlipFlopWatch follows which single MAC answers each IP and finds arpwatch's flip-flop live: the IP went back to
 * the MAC it had before within FLIP_FLOP_MS (two speakers taking it in turns, a flapping failover). The finding lasts
 * FLIP_FLOP_MS after the last flip. Pure: the hub feeds it each IP's answering MACs as it judges them.
 */
export class FlipFlopWatch {
  readonly #seen = new Map<string, Seen>();

  /** see notes who answers now (only a single answering MAC says who owns the IP) and returns the finding, if any. */
  see(ip: string, answering: readonly { readonly mac: string; readonly node: string | null }[], now: number): LiveFinding | null {
    const only = answering.length === 1 ? answering[0] : undefined;
    let s = this.#seen.get(ip);
    if (only !== undefined) {
      if (s === undefined) {
        s = { mac: only.mac, node: only.node, prev: null, prevNode: null, changedAt: now, flippedAt: null };
        this.#seen.set(ip, s);
      } else if (s.mac !== only.mac) {
        if (s.prev === only.mac && now - s.changedAt <= FLIP_FLOP_MS) s.flippedAt = now;
        s.prev = s.mac;
        s.prevNode = s.node;
        s.mac = only.mac;
        s.node = only.node;
        s.changedAt = now;
      }
    }
    return s === undefined ? null : this.#finding(ip, s, now);
  }

  /** active is the finding as of `now` without new traffic (it expires FLIP_FLOP_MS after the last flip). */
  active(ip: string, now: number): LiveFinding | null {
    const s = this.#seen.get(ip);
    return s === undefined ? null : this.#finding(ip, s, now);
  }

  forget(ip: string): void {
    this.#seen.delete(ip);
  }

  #finding(ip: string, s: Seen, now: number): LiveFinding | null {
    if (s.flippedAt === null || now - s.flippedAt > FLIP_FLOP_MS || s.prev === null) return null;
    const name = (mac: string, node: string | null) => node ?? mac;
    return {
      type: "flip-flop",
      macs: [s.prev, s.mac].sort(),
      detail: `${ip} went back from ${name(s.prev, s.prevNode)} to ${name(s.mac, s.node)} within ${FLIP_FLOP_MS / 60_000} min: clients keep switching nodes (two speakers taking turns, or a flapping failover)`,
    };
  }
}
