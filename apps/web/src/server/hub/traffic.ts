import {
  DEFAULT_MAX_MACS_PER_IP,
  Judge,
  OwnRequests,
  clientEntries,
  nodeOfPoint,
  type Batch,
  type Ingested,
  type Lens,
  type ObservationAggregate,
} from "@whohas/core";
import { vendorOf } from "../vendors.js";
import type { TrafficRepo } from "../store/traffic.js";
import type { Feed } from "./feed.js";
import { nextIpLimit, type HeapSample } from "./heap-guard.js";

/** TrackingLimits bound the hub's memory whatever the network sends: made-up IPs or MACs fold, never crash. */
export interface TrackingLimits {
  readonly maxIps: number;
  readonly maxMacsPerIp: number;
}

export const DEFAULT_LIMITS: TrackingLimits = { maxIps: 100_000, maxMacsPerIp: DEFAULT_MAX_MACS_PER_IP };

/** LimitStatus says whether a limit was hit and what it cost: shown on the Overview, logged, exported. */
export interface LimitStatus {
  readonly maxIps: number;
  readonly maxMacsPerIp: number;
  /**
   * The IP limit in force: maxIps, or less while the V8 heap is near its bound (the live view shrinks rather than the
   * hub running out of memory, and grows back once there is room).
   */
  readonly ipLimit: number;
  /** The V8 heap after its latest full collection, in MB; null before the first. */
  readonly heap: { readonly usedMb: number; readonly limitMb: number } | null;
  readonly ips: number;
  /** IPs let go from the live view at the IP limit (the least recently active; their history stays in storage). */
  readonly evictedIps: number;
  /** Times a responder was folded into its IP's sum at maxMacsPerIp. */
  readonly foldedMacs: number;
  /** When a limit was last hit; null: never since start. */
  readonly lastHit: number | null;
}

/** Eviction frees this share of maxIps at once, so that a flood of new IPs sorts the table rarely. */
const EVICT_SHARE = 0.05;
/** LIMIT_LOG_MS: a hit limit is told at most this often. */
const LIMIT_LOG_MS = 60_000;

export interface TrafficOptions {
  readonly repo: TrafficRepo;
  readonly feed: Feed;
  readonly clock: () => number;
  /** Which node a MAC belongs to (the agents' interfaces). */
  readonly nodeOfMac: (mac: string) => string | null;
  /** IPs that must stay in the live view whatever the limits (the cluster's LoadBalancer IPs, open incidents). */
  readonly mustStay: (ip: string) => boolean;
  readonly limits?: Partial<TrackingLimits>;
  /** Where a hit limit is told (at most once a minute). */
  readonly onLimit?: (status: LimitStatus) => void;
}

/**
 * Traffic takes what the agents report into core's Judge and the per-minute store, and keeps the live view within
 * its limits: past maxIps the least recently active IPs leave it (their history stays stored), past maxMacsPerIp an
 * IP's oldest MACs are summed. Every IP a batch touched is published on the feed.
 */
export class Traffic {
  readonly judge: Judge;
  /** The hub's lens: a node's capture points see that node's replies (and broadcasts), not the other nodes'. */
  readonly lens: Lens;
  /** The requests whohas sends itself (background and operators' probes): judged for who answers, not counted. */
  readonly own = new OwnRequests();
  readonly #limits: TrackingLimits;
  #evictedIps = 0;
  #foldedSeen = 0;
  #lastHit: number | null = null;
  #lastTold = -Infinity;
  /** The table size above which the next eviction pass runs (the IP limit, unless IPs that must stay fill it). */
  #evictAbove: number;
  /** The IP limit in force (maxIps unless memory lowered it), when memory last changed it, and the latest heap. */
  #ipLimit: number;
  #ipLimitChanged = -Infinity;
  #shareAtShrink: number | null = null;
  #heap: HeapSample | null = null;

  constructor(readonly o: TrafficOptions) {
    this.#limits = { ...DEFAULT_LIMITS, ...o.limits };
    this.judge = new Judge({ maxMacsPerIp: this.#limits.maxMacsPerIp });
    this.#evictAbove = this.#limits.maxIps;
    this.#ipLimit = this.#limits.maxIps;
    this.lens = {
      nodeOf: (mac) => o.nodeOfMac(mac),
      watches: (mac, points) => {
        const node = o.nodeOfMac(mac);
        if (node === null) return false;
        for (const p of points) if (nodeOfPoint(p) === node) return true;
        return false;
      },
      vendorOf,
      ownRequest: (ip, asker, t) => this.own.has(ip, asker, t),
    };
  }

  /** restore takes back the traffic the store kept (counts only: verdicts start from live data). */
  restore(history: readonly ObservationAggregate[]): void {
    this.judge.restore(history);
  }

  /** ingest takes one agent's batch and returns the IPs it touched, and the urgent ones among them (Judge.ingest). */
  ingest(node: string, batch: Batch): Ingested {
    const now = this.o.clock();
    if (this.own.size > 0) this.own.prune(now);
    this.judge.intern(batch);
    // whohas's own requests are no client's: neither stored as traffic nor counted.
    const entries = this.own.size === 0 ? batch.entries : clientEntries(batch.entries, (ip, mac, t) => this.own.has(ip, mac, t));
    const clients = entries === batch.entries ? batch : { ...batch, entries };
    this.o.repo.record(node, clients.entries);
    const r = this.judge.ingest(node, clients, now, this.lens);
    if (r.touched.size === 0) return r;
    this.#enforceLimits(now);
    this.o.feed.publish({ kind: "ips", ips: [...r.touched] });
    return r;
  }

  /** tracks tells whether `ip` is in the live view. */
  tracks(ip: string): boolean {
    return this.judge.counts.has(ip);
  }

  ips(): IterableIterator<string> {
    return this.judge.counts.ips();
  }

  /**
   * heap takes a sample of the V8 heap after a full collection: near its bound the IP limit comes down and the least
   * recently active IPs go at once; with room again it grows back towards maxIps.
   */
  heap(sample: HeapSample, now: number): void {
    this.#heap = sample;
    const held = this.judge.counts.size;
    const state = {
      configured: this.#limits.maxIps,
      current: this.#ipLimit,
      held,
      changedAt: this.#ipLimitChanged,
      shareAtShrink: this.#shareAtShrink,
    };
    const limit = nextIpLimit(state, sample, now);
    if (limit === this.#ipLimit) return;
    const first = this.#ipLimit === this.#limits.maxIps;
    const lowered = limit < this.#ipLimit;
    this.#ipLimit = limit;
    this.#ipLimitChanged = now;
    this.#evictAbove = limit;
    this.#shareAtShrink = lowered ? sample.usedBytes / sample.limitBytes : null;
    if (!lowered) return;
    // The first time memory limits the view is told at once, whenever the last limit was told.
    if (first) this.#lastTold = -Infinity;
    if (held > limit) this.#enforceLimits(now);
    else this.#hit(now);
  }

  /**
   * #enforceLimits lets go of the least recently active IPs when the table holds more than the IP limit (5 % of it
   * at once); IPs that must stay are kept, and when they alone hold the table above the limit, the next pass waits
   * for another 5 % rather than sorting every IP at every batch.
   */
  #enforceLimits(now: number): void {
    const table = this.judge.counts;
    const folded = table.foldedMacs;
    if (folded > this.#foldedSeen) {
      this.#foldedSeen = folded;
      this.#hit(now);
    }
    if (table.size <= this.#evictAbove) return;
    const target = Math.floor(this.#ipLimit * (1 - EVICT_SHARE));
    const candidates = [...table.ips()].filter((ip) => !this.o.mustStay(ip)).sort((a, b) => table.lastActivity(a) - table.lastActivity(b));
    for (const ip of candidates) {
      if (table.size <= target) break;
      this.judge.forget(ip);
      this.o.feed.forget(ip);
      this.#evictedIps++;
    }
    const share = Math.ceil(this.#ipLimit * EVICT_SHARE);
    this.#evictAbove = table.size > this.#ipLimit ? table.size + share : this.#ipLimit;
    this.#hit(now);
    // Live lists send deltas, which cannot say "gone": their subscribers get the whole list once.
    this.o.feed.publish({ kind: "everything" });
  }

  #hit(now: number): void {
    this.#lastHit = now;
    if (this.o.onLimit !== undefined && now - this.#lastTold >= LIMIT_LOG_MS) {
      this.#lastTold = now;
      this.o.onLimit(this.limitStatus());
    }
  }

  /** limitStatus tells the tracking limits and whether they were hit. */
  limitStatus(): LimitStatus {
    const heap = this.#heap;
    return {
      ...this.#limits,
      ipLimit: this.#ipLimit,
      heap: heap === null ? null : { usedMb: Math.round(heap.usedBytes / 1_048_576), limitMb: Math.round(heap.limitBytes / 1_048_576) },
      ips: this.judge.counts.size,
      evictedIps: this.#evictedIps,
      foldedMacs: this.judge.counts.foldedMacs,
      lastHit: this.#lastHit,
    };
  }
}
