import type { ObservationAggregate } from "../wire.js";
import { roleOf } from "../packet/frame.js";
import { parseIPv6 } from "../packet/addr.js";

/**
 * ANSWER_WINDOW_MS is how recent a reply or announcement must be for its MAC to count as answering now. Clients in
 * the field re-ARP every few seconds at most (Linux's base_reachable_time is 30 s, routers poll more often), and the
 * lab's client asks every second, so 5 s shows a change within one refresh without flapping between requests.
 */
export const ANSWER_WINDOW_MS = 5000;

/**
 * IpState is the verdict for one IP:
 * - `single`: exactly one MAC answers: what MetalLB L2 needs.
 * - `multi-responder`: several MACs answer now: the incident whohas exists for.
 * - `no-responder`: it is being asked for and nobody answered within the window.
 * - `idle`: nothing recent either way.
 */
export type IpState = "single" | "multi-responder" | "no-responder" | "idle";

/** A ResponderView is one MAC that answered for an IP. */
export interface ResponderView {
  readonly mac: string;
  /** The node that owns this MAC, when an agent reported it among its interfaces. */
  readonly node: string | null;
  /** Replies, counted once even when several capture points saw the same replies. */
  readonly replies: number;
  /** Gratuitous announcements (requests and replies). */
  readonly gratuitous: number;
  /** Time of the last gratuitous announcement, null when none was seen. */
  readonly lastGratuitous: number | null;
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly answering: boolean;
  /** Nodes whose agents captured this MAC's answers. */
  readonly seenBy: readonly string[];
}

/** An IpView is everything the hub shows for one IP. */
export interface IpView {
  readonly ip: string;
  readonly state: IpState;
  readonly requests: number;
  readonly lastRequest: number | null;
  readonly responders: readonly ResponderView[];
  /** Nodes whose agents captured anything for this IP (requests or answers): its capture points. */
  readonly capturedBy: readonly string[];
}

interface Counter {
  count: number;
  firstSeen: number;
  lastSeen: number;
}

interface Responder {
  replies: Map<string, Counter>;
  gratuitous: Map<string, Counter>;
}

interface IpRecord {
  requests: Map<string, Counter>;
  responders: Map<string, Responder>;
}

function bump(m: Map<string, Counter>, node: string, e: ObservationAggregate): void {
  const c = m.get(node);
  if (c === undefined) {
    m.set(node, { count: e.count, firstSeen: e.firstSeen, lastSeen: e.lastSeen });
    return;
  }
  c.count += e.count;
  c.firstSeen = Math.min(c.firstSeen, e.firstSeen);
  c.lastSeen = Math.max(c.lastSeen, e.lastSeen);
}

/** fold combines one counter per capture point: the largest count (each saw the same frames) and the widest span. */
function fold(m: Map<string, Counter>): Counter | null {
  let out: Counter | null = null;
  for (const c of m.values()) {
    out = out === null ? { ...c } : {
      count: Math.max(out.count, c.count),
      firstSeen: Math.min(out.firstSeen, c.firstSeen),
      lastSeen: Math.max(out.lastSeen, c.lastSeen),
    };
  }
  return out;
}

/**
 * An IpTable is the hub's per-IP picture built from every agent's aggregates. Counts are kept per capture point
 * (node) so a broadcast request seen by three agents counts once, not three times.
 */
export class IpTable {
  readonly #ips = new Map<string, IpRecord>();

  /** apply folds one batch from `node` and returns the IPs it touched, for the hub to push. */
  apply(node: string, entries: readonly ObservationAggregate[]): Set<string> {
    const touched = new Set<string>();
    for (const e of entries) {
      let rec = this.#ips.get(e.ip);
      if (rec === undefined) {
        rec = { requests: new Map(), responders: new Map() };
        this.#ips.set(e.ip, rec);
      }
      touched.add(e.ip);
      const role = roleOf(e.kind);
      if (role === "ask") {
        // Probes (RFC 5227) and DAD solicitations check that an address is free; they are not clients asking.
        if (e.kind === "request" || e.kind === "ns") bump(rec.requests, node, e);
        continue;
      }
      let r = rec.responders.get(e.mac);
      if (r === undefined) {
        r = { replies: new Map(), gratuitous: new Map() };
        rec.responders.set(e.mac, r);
      }
      bump(role === "answer" ? r.replies : r.gratuitous, node, e);
    }
    return touched;
  }

  /** view renders one IP at `now`; `nodeOfMac` maps a MAC to the node that owns it. */
  view(ip: string, now: number, nodeOfMac: (mac: string) => string | null): IpView | null {
    const rec = this.#ips.get(ip);
    if (rec === undefined) return null;
    const responders: ResponderView[] = [];
    for (const [mac, r] of rec.responders) {
      const replies = fold(r.replies);
      const grat = fold(r.gratuitous);
      const firstSeen = Math.min(replies?.firstSeen ?? Infinity, grat?.firstSeen ?? Infinity);
      const lastSeen = Math.max(replies?.lastSeen ?? 0, grat?.lastSeen ?? 0);
      responders.push({
        mac,
        node: nodeOfMac(mac),
        replies: replies?.count ?? 0,
        gratuitous: grat?.count ?? 0,
        lastGratuitous: grat?.lastSeen ?? null,
        firstSeen,
        lastSeen,
        answering: now - lastSeen <= ANSWER_WINDOW_MS,
        seenBy: [...new Set([...r.replies.keys(), ...r.gratuitous.keys()])].sort(),
      });
    }
    // Stable order for people reading a live table: answering first, then by node, then MAC.
    responders.sort((a, b) => Number(b.answering) - Number(a.answering) || (a.node ?? "~").localeCompare(b.node ?? "~") || a.mac.localeCompare(b.mac));
    const req = fold(rec.requests);
    const answering = responders.filter((r) => r.answering).length;
    const asked = req !== null && now - req.lastSeen <= ANSWER_WINDOW_MS;
    const state: IpState = answering >= 2 ? "multi-responder" : answering === 1 ? "single" : asked ? "no-responder" : "idle";
    const capturedBy = new Set(rec.requests.keys());
    for (const r of responders) for (const n of r.seenBy) capturedBy.add(n);
    return { ip, state, requests: req?.count ?? 0, lastRequest: req?.lastSeen ?? null, responders, capturedBy: [...capturedBy].sort() };
  }

  /** ips lists every IP seen, unordered. */
  ips(): IterableIterator<string> {
    return this.#ips.keys();
  }

  /** size is the number of IPs tracked. */
  get size(): number {
    return this.#ips.size;
  }

  /** views renders every IP, sorted numerically. */
  views(now: number, nodeOfMac: (mac: string) => string | null): IpView[] {
    return [...this.#ips.keys()]
      .sort(compareIP)
      .map((ip) => this.view(ip, now, nodeOfMac))
      .filter((v): v is IpView => v !== null);
  }
}

/** compareIP orders addresses numerically, IPv4 before IPv6. */
export function compareIP(a: string, b: string): number {
  const a6 = a.includes(":");
  const b6 = b.includes(":");
  if (a6 !== b6) return a6 ? 1 : -1;
  const pa = a6 ? [...(parseIPv6(a) ?? [])] : a.split(".").map(Number);
  const pb = b6 ? [...(parseIPv6(b) ?? [])] : b.split(".").map(Number);
  for (let i = 0; i < pa.length; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
