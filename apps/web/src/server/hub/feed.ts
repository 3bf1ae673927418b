import { randomBytes } from "node:crypto";
import type { Handover, Transition } from "@whohas/core";

/**
 * A Change is one thing that moved in the hub, as its parts publish it. Subscriptions, the alerter and the fix
 * consume these instead of polling and comparing.
 * - `ips`: these IPs' views changed (new traffic, a verdict, a finding): one change per agent message, not per IP.
 * - `everything`: what every IP's view depends on moved (the cluster's inventory, a MAC changing node).
 * - `agents`: an agent connected, left, reported facts, or went silent.
 * - `cluster`: the cluster summary moved (kube-proxy's config, its rollout, strictARP, staleness).
 * - `incident`: an incident opened, was updated, acknowledged or resolved (`subject`: its IP or node/NAME).
 * - `handover`: an IP moved from one node to another.
 */
export type Change =
  | { readonly kind: "ips"; readonly ips: readonly string[] }
  | { readonly kind: "everything" }
  | { readonly kind: "agents" }
  | { readonly kind: "cluster" }
  | {
      readonly kind: "incident";
      readonly id: number;
      readonly subject: string;
      /** The finding that moved (null: the incident itself changed, as when acknowledged). */
      readonly transition: Transition | null;
      /** The incident opened with this finding, or resolved with it (its last facet cleared). */
      readonly opened: boolean;
      readonly resolved: boolean;
    }
  | { readonly kind: "handover"; readonly ip: string; readonly handover: Handover };

/** A Sequenced change carries its place in the feed. */
export type Sequenced = Change & { readonly seq: number };

/**
 * LOG_SIZE: how many recent changes are kept to tell a resuming subscriber whether anything it cares for moved. The
 * log is trimmed by a quarter at a time, so that publishing stays O(1) amortised at tens of thousands a second.
 */
const LOG_SIZE = 10_000;
const LOG_SLACK = LOG_SIZE / 4;

/**
 * The Feed is the hub's typed, sequence-numbered change log. Publishing is synchronous and cheap; subscribers are
 * woken once per burst (a microtask later) with everything published since they last looked. Sequence numbers are
 * of this process (`bootId` tells a resuming client whether its number means anything here).
 */
export class Feed {
  readonly bootId = randomBytes(4).toString("hex");
  #seq = 0;
  #everythingSeq = 0;
  /** The sequence number of each IP's latest change. */
  readonly #ipSeq = new Map<string, number>();
  readonly #log: Sequenced[] = [];
  readonly #waiters = new Set<() => void>();
  #scheduled = false;

  /** seq is the number of the latest change. */
  get seq(): number {
    return this.#seq;
  }

  /** waiting is how many subscribers wait for the next change. */
  get waiting(): number {
    return this.#waiters.size;
  }

  publish(c: Change): void {
    const s: Sequenced = { ...c, seq: ++this.#seq };
    if (c.kind === "ips") for (const ip of c.ips) this.#ipSeq.set(ip, s.seq);
    if (c.kind === "everything") this.#everythingSeq = s.seq;
    this.#log.push(s);
    if (this.#log.length > LOG_SIZE + LOG_SLACK) this.#log.splice(0, this.#log.length - LOG_SIZE);
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      for (const w of [...this.#waiters]) w();
    });
  }

  /** forget drops an IP's change record (it left the live view). */
  forget(ip: string): void {
    this.#ipSeq.delete(ip);
  }

  /**
   * ipsSince tells which IPs changed after `since`: every IP (`full`) when `since` is 0, from another process, older
   * than the last `everything`, or in the future; else the IPs whose latest change is newer.
   */
  ipsSince(since: number): { full: boolean; ips: string[] } {
    if (since <= 0 || since < this.#everythingSeq || since > this.#seq) return { full: true, ips: [] };
    const ips: string[] = [];
    for (const [ip, s] of this.#ipSeq) if (s > since) ips.push(ip);
    return { full: false, ips };
  }

  /**
   * movedSince tells whether a change `matches` after `since`; true when it cannot tell (`since` is older than the
   * log, or ahead of it).
   */
  movedSince(since: number, matches: (c: Change) => boolean): boolean {
    if (since < 0 || since > this.#seq || (this.#log[0]?.seq ?? since + 1) > since + 1) return true;
    // Newest first, back to `since`: the log is consecutive, so this looks at the changes after `since` only.
    for (let i = this.#log.length - 1; i >= 0; i--) {
      const c = this.#log[i];
      if (c === undefined || c.seq <= since) break;
      if (matches(c)) return true;
    }
    return false;
  }

  /**
   * changes yields the changes published after `after`, in batches, as they come: a burst of publications is one
   * batch. Ends when `signal` aborts. Listens before it reads, so nothing between the two is missed.
   */
  async *changes(signal: AbortSignal, after = this.#seq): AsyncGenerator<readonly Sequenced[]> {
    let seen = after;
    let wake: (() => void) | null = null;
    const poke = () => wake?.();
    this.#waiters.add(poke);
    signal.addEventListener("abort", poke);
    try {
      for (;;) {
        if (signal.aborted) return;
        if (this.#seq > seen) {
          // Sequence numbers are consecutive in the log: the first unseen change is found by arithmetic.
          const first = Math.max(0, seen + 1 - (this.#log[0]?.seq ?? this.#seq + 1));
          const batch = this.#log.slice(first);
          seen = this.#seq;
          if (batch.length > 0) yield batch;
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    } finally {
      this.#waiters.delete(poke);
      signal.removeEventListener("abort", poke);
    }
  }
}
