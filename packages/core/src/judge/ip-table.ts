import type { ObservationAggregate } from "../wire.js";
import { roleOf } from "../packet/frame.js";
import { ANSWER_WINDOW_MS } from "./findings.js";

/** A ResponderCounts is one MAC that answered or announced for an IP, counted once across capture points. */
export interface ResponderCounts {
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
  /** Capture points (nodes) whose agents captured this MAC's answers. */
  readonly seenBy: readonly string[];
}

/** A CountsView is what the counts say of one IP: requests and responders, with no verdict. */
export interface CountsView {
  readonly ip: string;
  readonly requests: number;
  readonly lastRequest: number | null;
  readonly responders: readonly ResponderCounts[];
  /** Capture points (nodes) that captured anything for this IP (requests or answers). */
  readonly capturedBy: readonly string[];
  /**
   * MACs moved out of this IP's list when it held `maxMacsPerIp` (the least recently seen first), with their counts
   * summed: nothing they said is lost, only told apart. `macs` counts those not answering again since (each once).
   * null while the limit was never hit for this IP.
   */
  readonly folded: FoldedResponders | null;
}

/** FoldedResponders sums the responders an IP let go of at its MAC limit. */
export interface FoldedResponders {
  readonly macs: number;
  readonly replies: number;
  readonly gratuitous: number;
  readonly lastSeen: number;
}

/** The default bounds of an IpTable (the hub's `limits` config overrides them). */
export const DEFAULT_MAX_MACS_PER_IP = 64;

interface Counter {
  count: number;
  firstSeen: number;
  lastSeen: number;
}

/**
 * NodeCounters keeps one counter per capture point (node). Most IPs are seen by one agent, or by all of them for
 * broadcasts, so the first node's counter is kept inline and a map is made only when a second node reports: tens of
 * thousands of IPs then cost a few hundred bytes each.
 */
class NodeCounters {
  node = "";
  count = 0;
  firstSeen = 0;
  lastSeen = 0;
  more: Map<string, Counter> | null = null;

  bump(node: string, e: ObservationAggregate): void {
    if (this.node === "" || this.node === node) {
      if (this.node === "") {
        this.node = node;
        this.firstSeen = e.firstSeen;
      }
      this.count += e.count;
      this.firstSeen = Math.min(this.firstSeen, e.firstSeen);
      this.lastSeen = Math.max(this.lastSeen, e.lastSeen);
      return;
    }
    this.more ??= new Map();
    const c = this.more.get(node);
    if (c === undefined) this.more.set(node, { count: e.count, firstSeen: e.firstSeen, lastSeen: e.lastSeen });
    else {
      c.count += e.count;
      c.firstSeen = Math.min(c.firstSeen, e.firstSeen);
      c.lastSeen = Math.max(c.lastSeen, e.lastSeen);
    }
  }

  /**
   * fold combines the capture points (the largest count: each saw the same frames; the widest span) with the
   * history restored from storage, if any.
   */
  fold(base: Counter | null): Counter | null {
    let out: Counter | null = this.node === "" ? null : { count: this.count, firstSeen: this.firstSeen, lastSeen: this.lastSeen };
    for (const c of this.more?.values() ?? []) {
      out =
        out === null
          ? { ...c }
          : {
              count: Math.max(out.count, c.count),
              firstSeen: Math.min(out.firstSeen, c.firstSeen),
              lastSeen: Math.max(out.lastSeen, c.lastSeen),
            };
    }
    if (base === null) return out;
    if (out === null) return { ...base };
    return {
      count: out.count + base.count,
      firstSeen: Math.min(out.firstSeen, base.firstSeen),
      lastSeen: Math.max(out.lastSeen, base.lastSeen),
    };
  }

  nodes(): string[] {
    return this.node === "" ? [] : [this.node, ...(this.more?.keys() ?? [])];
  }

  /** each visits its nodes. */
  each(visit: (node: string) => void): void {
    if (this.node === "") return;
    visit(this.node);
    if (this.more !== null) for (const n of this.more.keys()) visit(n);
  }
}

interface Responder {
  readonly mac: string;
  replies: NodeCounters | null;
  gratuitous: NodeCounters | null;
  /** History restored from storage (already counted once across capture points), added to the live counts. */
  baseReplies: Counter | null;
  baseGratuitous: Counter | null;
  /** Newest answer or announcement, and newest announcement, over every capture point. */
  lastSeen: number;
  lastGratuitous: number;
}

interface IpRecord {
  requests: NodeCounters;
  baseRequests: Counter | null;
  firstRequest: number;
  lastRequest: number;
  responders: Map<string, Responder>;
  folded: { gone: Set<string>; more: number; replies: number; gratuitous: number; lastSeen: number } | null;
}

/** FOLDED_NAMES bounds the MACs an IP remembers as folded (to count them once each); beyond it they are only counted. */
const FOLDED_NAMES = 1024;

const newResponder = (mac: string): Responder => ({
  mac,
  replies: null,
  gratuitous: null,
  baseReplies: null,
  baseGratuitous: null,
  lastSeen: 0,
  lastGratuitous: 0,
});
const newRecord = (): IpRecord => ({
  requests: new NodeCounters(),
  baseRequests: null,
  firstRequest: Infinity,
  lastRequest: 0,
  responders: new Map(),
  folded: null,
});

function addBase(c: Counter | null, e: ObservationAggregate): Counter {
  if (c === null) return { count: e.count, firstSeen: e.firstSeen, lastSeen: e.lastSeen };
  return { count: c.count + e.count, firstSeen: Math.min(c.firstSeen, e.firstSeen), lastSeen: Math.max(c.lastSeen, e.lastSeen) };
}

/**
 * An IpTable counts, per IP, the requests and each MAC's replies and announcements from every capture point's
 * aggregates (the Judge says what they mean). Counts are kept per capture point (node) so a broadcast request seen
 * by three agents counts once, not three times; it is bounded in MACs per IP, and restores history from storage.
 */
export class IpTable {
  readonly #ips = new Map<string, IpRecord>();
  readonly #maxMacs: number;
  #foldedMacs = 0;

  /** `maxMacsPerIp` bounds the responders kept per IP: a flood of made-up MACs folds the oldest, never grows. */
  constructor(opts: { readonly maxMacsPerIp?: number } = {}) {
    this.#maxMacs = Math.max(2, opts.maxMacsPerIp ?? DEFAULT_MAX_MACS_PER_IP);
  }

  /** size is the number of IPs held. */
  get size(): number {
    return this.#ips.size;
  }

  /** foldedMacs counts the times a responder was folded at the per-IP limit since the table was made. */
  get foldedMacs(): number {
    return this.#foldedMacs;
  }

  /** #responder finds or adds `mac`'s responder, folding the least recently seen one when the IP is at its limit. */
  #responder(rec: IpRecord, mac: string): Responder {
    let r = rec.responders.get(mac);
    if (r !== undefined) return r;
    if (rec.responders.size >= this.#maxMacs) {
      let oldest: [string, Responder] | null = null;
      for (const e of rec.responders) if (oldest === null || e[1].lastSeen < oldest[1].lastSeen) oldest = e;
      if (oldest !== null) {
        const [gone, o] = oldest;
        rec.responders.delete(gone);
        const f = (rec.folded ??= { gone: new Set(), more: 0, replies: 0, gratuitous: 0, lastSeen: 0 });
        if (f.gone.size < FOLDED_NAMES) f.gone.add(gone);
        else f.more++;
        f.replies += o.replies?.fold(o.baseReplies)?.count ?? o.baseReplies?.count ?? 0;
        f.gratuitous += o.gratuitous?.fold(o.baseGratuitous)?.count ?? o.baseGratuitous?.count ?? 0;
        f.lastSeen = Math.max(f.lastSeen, o.lastSeen);
        this.#foldedMacs++;
      }
    }
    // A folded MAC that answers again is a responder again; what it said before stays in the folded sums.
    rec.folded?.gone.delete(mac);
    r = newResponder(mac);
    rec.responders.set(mac, r);
    return r;
  }

  /** lastActivity is the newest request, answer or announcement for `ip` (0 when unknown): what eviction orders by. */
  lastActivity(ip: string): number {
    const rec = this.#ips.get(ip);
    if (rec === undefined) return 0;
    let t = rec.lastRequest;
    for (const r of rec.responders.values()) if (r.lastSeen > t) t = r.lastSeen;
    return Math.max(t, rec.folded?.lastSeen ?? 0);
  }

  /** has tells whether `ip` is held. */
  has(ip: string): boolean {
    return this.#ips.has(ip);
  }

  /** remove lets go of `ip` (its history stays in the hub's storage); true when it was held. */
  remove(ip: string): boolean {
    return this.#ips.delete(ip);
  }

  /** apply folds one batch from `node` and returns the IPs it touched, for the hub to push. */
  apply(node: string, entries: readonly ObservationAggregate[]): Set<string> {
    const touched = new Set<string>();
    for (const e of entries) this.applyOne(node, e, touched);
    return touched;
  }

  /** applyOne folds one aggregate from `node` and adds its IP to `touched` (it keeps nothing of `e` but its texts). */
  applyOne(node: string, e: ObservationAggregate, touched: Set<string>): void {
    let rec = this.#ips.get(e.ip);
    if (rec === undefined) {
      rec = newRecord();
      this.#ips.set(e.ip, rec);
    }
    touched.add(e.ip);
    const role = roleOf(e.kind);
    if (role === "ask") {
      // Probes (RFC 5227) and DAD solicitations check that an address is free; they are not clients asking.
      if (e.kind === "request" || e.kind === "ns") {
        rec.requests.bump(node, e);
        if (e.lastSeen > rec.lastRequest) rec.lastRequest = e.lastSeen;
        if (e.firstSeen < rec.firstRequest) rec.firstRequest = e.firstSeen;
      }
      return;
    }
    const r = this.#responder(rec, e.mac);
    if (role === "answer") {
      (r.replies ??= new NodeCounters()).bump(node, e);
    } else (r.gratuitous ??= new NodeCounters()).bump(node, e);
    if (e.lastSeen > r.lastSeen) r.lastSeen = e.lastSeen;
    if (role !== "answer" && e.lastSeen > r.lastGratuitous) r.lastGratuitous = e.lastSeen;
  }

  /**
   * restore adds history read back from storage: aggregates already counted once across capture points. They add to
   * the counts and times but belong to no capture point.
   */
  restore(entries: readonly ObservationAggregate[]): void {
    for (const e of entries) {
      let rec = this.#ips.get(e.ip);
      if (rec === undefined) {
        rec = newRecord();
        this.#ips.set(e.ip, rec);
      }
      const role = roleOf(e.kind);
      if (role === "ask") {
        if (e.kind === "request" || e.kind === "ns") {
          rec.baseRequests = addBase(rec.baseRequests, e);
          rec.lastRequest = Math.max(rec.lastRequest, e.lastSeen);
          rec.firstRequest = Math.min(rec.firstRequest, e.firstSeen);
        }
        continue;
      }
      const r = this.#responder(rec, e.mac);
      if (role === "answer") r.baseReplies = addBase(r.baseReplies, e);
      else {
        r.baseGratuitous = addBase(r.baseGratuitous, e);
        r.lastGratuitous = Math.max(r.lastGratuitous, e.lastSeen);
      }
      r.lastSeen = Math.max(r.lastSeen, e.lastSeen);
    }
  }

  /**
   * recentMacs writes the MACs that answered or announced for `ip` within ANSWER_WINDOW_MS of `now` into `out` from
   * its start, and returns how many (no view built). It runs for every IP every second, so it makes nothing: the
   * caller reuses one array, which is never shortened (an array cut to nothing lets go of its storage, and the next
   * write allocates it again).
   */
  recentMacs(ip: string, now: number, out: string[]): number {
    const responders = this.#ips.get(ip)?.responders;
    if (responders === undefined) return 0;
    let n = 0;
    for (const r of responders.values()) if (now - r.lastSeen <= ANSWER_WINDOW_MS) out[n++] = r.mac;
    return n;
  }

  /** eachCapturer visits the nodes whose agents captured anything for `ip`, a node maybe more than once (nothing is built). */
  eachCapturer(ip: string, visit: (node: string) => void): void {
    const rec = this.#ips.get(ip);
    if (rec === undefined) return;
    rec.requests.each(visit);
    for (const r of rec.responders.values()) {
      r.replies?.each(visit);
      r.gratuitous?.each(visit);
    }
  }

  /** capturePoints lists the nodes whose agents captured anything for `ip` (no view built). */
  capturePoints(ip: string): string[] {
    const rec = this.#ips.get(ip);
    if (rec === undefined) return [];
    const out = new Set(rec.requests.nodes());
    for (const r of rec.responders.values()) for (const c of [r.replies, r.gratuitous]) for (const n of c?.nodes() ?? []) out.add(n);
    return [...out].sort();
  }

  /** view renders the counts of one IP; `nodeOfMac` maps a MAC to the node that owns it. */
  view(ip: string, nodeOfMac: (mac: string) => string | null): CountsView | null {
    const rec = this.#ips.get(ip);
    if (rec === undefined) return null;
    const responders: ResponderCounts[] = [];
    for (const [mac, r] of rec.responders) {
      const replies = r.replies?.fold(r.baseReplies) ?? r.baseReplies;
      const grat = r.gratuitous?.fold(r.baseGratuitous) ?? r.baseGratuitous;
      responders.push({
        mac,
        node: nodeOfMac(mac),
        replies: replies?.count ?? 0,
        gratuitous: grat?.count ?? 0,
        lastGratuitous: grat?.lastSeen ?? null,
        firstSeen: Math.min(replies?.firstSeen ?? Infinity, grat?.firstSeen ?? Infinity),
        lastSeen: Math.max(replies?.lastSeen ?? 0, grat?.lastSeen ?? 0),
        seenBy: [...new Set([...(r.replies?.nodes() ?? []), ...(r.gratuitous?.nodes() ?? [])])].sort(),
      });
    }
    const req = rec.requests.fold(rec.baseRequests);
    const f = rec.folded;
    return {
      ip,
      requests: req?.count ?? 0,
      lastRequest: req?.lastSeen ?? null,
      responders,
      capturedBy: this.capturePoints(ip),
      folded: f === null ? null : { macs: f.gone.size + f.more, replies: f.replies, gratuitous: f.gratuitous, lastSeen: f.lastSeen },
    };
  }

  /** ips lists every IP seen, unordered. */
  ips(): IterableIterator<string> {
    return this.#ips.keys();
  }
}
