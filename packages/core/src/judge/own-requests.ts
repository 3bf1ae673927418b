import { FINAL_MS, REPLY_WINDOW_MS } from "./findings.js";

/**
 * SKEW_MS: a request is dated by the node that captured it, on that node's clock, and a probe by the hub when it
 * sent the command: a probe's window opens and closes this much wider, for the clocks (NTP keeps nodes within
 * milliseconds; a node without it drifts by seconds) and the command's way there.
 */
export const SKEW_MS = 10_000;

/**
 * addressOf is the address of an IP key: a probe is sent for a LoadBalancer address, and the agents report its
 * request under ADDRESS@VLAN when the node's interface on that network is a VLAN device.
 */
const addressOf = (key: string): string => {
  const at = key.lastIndexOf("@");
  return at < 0 ? key : key.slice(0, at);
};

interface Expected {
  /** The prober's addresses and MACs: what its request names as asker (a report) or source (an aggregate). */
  readonly askers: ReadonlySet<string>;
  readonly from: number;
  readonly to: number;
}

/**
 * OwnRequests remembers the requests whohas sends itself (the hub's background probe, an operator's probe): for
 * each IP, who asks and when. A request it names is judged for who answers it, and left out of what clients did
 * (requests counted, who answers first, requests left unanswered). A node asking for the IP at that moment for
 * another reason would be left out too: nodes seldom ask for their cluster's LoadBalancer IPs, and for a few seconds.
 */
export class OwnRequests {
  readonly #byIp = new Map<string, Expected[]>();
  #pruned = -Infinity;

  /** size is the number of IPs with a probe expected or recent. */
  get size(): number {
    return this.#byIp.size;
  }

  /**
   * expect notes a probe of `ip` (an address, or an IP key: its VLAN does not matter) by a node known by `askers` (its addresses and MACs), sending from `at`
   * for `durationMs`.
   */
  expect(ip: string, askers: Iterable<string>, at: number, durationMs: number): void {
    const e: Expected = { askers: new Set(askers), from: at - SKEW_MS, to: at + durationMs + SKEW_MS };
    const list = this.#byIp.get(addressOf(ip));
    if (list === undefined) this.#byIp.set(addressOf(ip), [e]);
    else list.push(e);
  }

  /** has tells whether the request of `asker` for `ip` at `t` is one of the probes expected. */
  has(ip: string, asker: string, t: number): boolean {
    const list = this.#byIp.get(addressOf(ip));
    if (list === undefined) return false;
    for (const e of list) if (t >= e.from && t <= e.to && e.askers.has(asker)) return true;
    return false;
  }

  /** prune forgets probes no report can name any more (their requests are final); at most once a second. */
  prune(now: number): void {
    if (now - this.#pruned < 1000) return;
    this.#pruned = now;
    const horizon = now - REPLY_WINDOW_MS - FINAL_MS - SKEW_MS;
    for (const [ip, list] of this.#byIp) {
      const kept = list.filter((e) => e.to >= horizon);
      if (kept.length === 0) this.#byIp.delete(ip);
      else if (kept.length < list.length) this.#byIp.set(ip, kept);
    }
  }
}

/** The fields of an aggregate that tell whether it counts requests of whohas's own. */
interface Counted {
  readonly ip: string;
  readonly mac: string;
  readonly kind: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/**
 * clientEntries leaves out of a batch's aggregates the requests whohas sent itself (every one they count was sent
 * by a prober, asked by its MAC within a probe's window): what remains is what clients did. The same array when
 * nothing is left out.
 */
export function clientEntries<T extends Counted>(
  entries: readonly T[],
  own: (ip: string, asker: string, t: number) => boolean,
): readonly T[] {
  const isOwn = (e: T) => isOwnEntry(e, own);
  return entries.some(isOwn) ? entries.filter((e) => !isOwn(e)) : entries;
}

/** isOwnEntry: an aggregate that counts only requests whohas sent itself (clientEntries leaves those out). */
export function isOwnEntry(e: Counted, own: (ip: string, asker: string, t: number) => boolean): boolean {
  return (e.kind === "request" || e.kind === "ns") && own(e.ip, e.mac, e.firstSeen) && own(e.ip, e.mac, e.lastSeen);
}
