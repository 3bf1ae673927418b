import { PerformanceObserver, constants } from "node:perf_hooks";
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8";

/**
 * A HeapSample is V8's old generation just after a full collection: what is live there, against its bound (the
 * hub's launcher sets it: WHOHAS_HEAP_MB). V8 runs out of memory when the old generation cannot grow past it.
 */
export interface HeapSample {
  readonly usedBytes: number;
  readonly limitBytes: number;
}

/** GUARD: when the live view shrinks near the heap's bound, by how much, and when it grows back. */
export const GUARD = {
  /** Live data above this share of the heap's bound shrinks the live view before V8 runs out. */
  high: 0.8,
  /** A shrink sets the limit to this share of the IPs held (eviction then leaves 95 % of that: about 71 %). */
  keep: 0.75,
  /** Above this share a shrink keeps only `keepHard`: a flood can bring the heap this far before a collection tells. */
  critical: 0.9,
  keepHard: 0.5,
  /** A shrink waits this long after the last: what it let go becomes free only as V8 collects it. */
  shrinkEveryMs: 5_000,
  /**
   * Below `critical`, another shrink comes only if the last one lowered the heap's share by this much: when letting
   * IPs go frees nothing, the pressure comes from elsewhere, and more of the same would empty the view for nothing.
   */
  progress: 0.03,
  /** Below this share the live view may grow back towards limits.maxIps, by `grow`, at most every `growEveryMs`. */
  low: 0.7,
  grow: 1.1,
  growEveryMs: 60_000,
  /** Memory never holds the live view below this many IPs (a hub that small is misconfigured, not flooded). */
  minIps: 1_000,
} as const;

/** The state the decision reads: the configured limit, the one in force, the IPs held, and its last change. */
export interface IpLimitState {
  readonly configured: number;
  readonly current: number;
  readonly held: number;
  /** When memory last changed the limit (-Infinity: never). */
  readonly changedAt: number;
  /** The heap's share when memory last lowered the limit; null when it has not (or the limit has grown back since). */
  readonly shareAtShrink: number | null;
}

/**
 * nextIpLimit decides the live view's IP limit after a heap sample: near the heap's bound it keeps a share of the IPs
 * held (every IP costs a few KB, and a flood of new IPs is what runs a hub out of memory), again only if the last
 * shrink helped or the end is near; once the heap has room again it grows back a tenth a minute, up to the
 * configured limit. Pure: the caller evicts.
 */
export function nextIpLimit(s: IpLimitState, heap: HeapSample, now: number): number {
  const share = heap.usedBytes / heap.limitBytes;
  if (share >= GUARD.high && now - s.changedAt >= GUARD.shrinkEveryMs) {
    const critical = share >= GUARD.critical;
    if (!critical && s.shareAtShrink !== null && share > s.shareAtShrink - GUARD.progress) return s.current;
    const keep = critical ? GUARD.keepHard : GUARD.keep;
    return Math.min(s.current, Math.max(GUARD.minIps, Math.floor(Math.min(s.current, s.held) * keep)));
  }
  if (share <= GUARD.low && s.current < s.configured && now - s.changedAt >= GUARD.growEveryMs) {
    return Math.min(s.configured, Math.ceil(s.current * GUARD.grow));
  }
  return s.current;
}

/** YOUNG_SPACES: the young generation's spaces, outside the old generation's bound. */
const YOUNG_SPACES = new Set(["new_space", "new_large_object_space"]);

/**
 * oldGenerationBound is the old generation's bound in bytes: --max-old-space-size when Node was started with it (on
 * its command line or in NODE_OPTIONS), else V8's whole heap limit (which also counts the young generation's room,
 * about 48 MB more: the guard then acts a little late, which only a hub started without its launcher does).
 */
export function oldGenerationBound(execArgv: readonly string[], nodeOptions: string, heapSizeLimit: number): number {
  // Node reads NODE_OPTIONS first and its command line after: the command line's flag wins.
  const flag = [...nodeOptions.split(/\s+/), ...execArgv].map((a) => /^--max-old-space-size=(\d+)$/.exec(a)).findLast((m) => m !== null);
  return flag == null ? heapSizeLimit : Number(flag[1]) * 1_048_576;
}

/** heapNow is the old generation's use and bound now (meaningful right after a full collection). */
function heapNow(bound: number): HeapSample {
  let used = 0;
  for (const s of getHeapSpaceStatistics()) if (!YOUNG_SPACES.has(s.space_name)) used += s.space_used_size;
  return { usedBytes: used, limitBytes: bound };
}

/**
 * watchHeap calls `onSample` after each full collection of the V8 heap, with what is live then. Returns the function
 * that stops watching.
 */
export function watchHeap(onSample: (s: HeapSample) => void): () => void {
  // eslint-disable-next-line no-restricted-properties
  const bound = oldGenerationBound(process.execArgv, process.env.NODE_OPTIONS ?? "", getHeapStatistics().heap_size_limit);
  const observer = new PerformanceObserver((list) => {
    // A gc entry's detail says which collection it was (Node's PerformanceEntry type does not declare it).
    const major = list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
    if (!major) return;
    onSample(heapNow(bound));
  });
  observer.observe({ entryTypes: ["gc"] });
  return () => observer.disconnect();
}
