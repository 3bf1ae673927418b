import { TRPCError, tracked, type TrackedEnvelope } from "@trpc/server";
import { z } from "zod";
import type { Change, Feed } from "../hub/feed.js";
import type { IpRow } from "../hub/views.js";
import type { StreamSlots } from "../limits.js";

/** liveInput is every subscription's input: the client's last event id, sent again by httpSubscriptionLink on reconnect. */
export const liveInput = z.object({ lastEventId: z.string().max(64).nullish() });

/** LIST_INTERVAL_MS: how often a whole list (every IP, every incident) may be pushed to one subscriber. */
export const LIST_INTERVAL_MS = 1000;

/** eventId writes a feed position as a subscription's event id; seqOf reads it back (null: not of this process). */
const eventId = (feed: Feed, seq: number) => `${feed.bootId}-${seq}`;
function seqOf(feed: Feed, id: string | null | undefined): number | null {
  const m = /^([0-9a-f]+)-(\d+)$/.exec(id ?? "");
  return m !== null && m[1] === feed.bootId ? Number(m[2]) : null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * live turns a read into a resumable subscription driven by the feed: it yields the value at once, then again after
 * each change that `matters`, at most every `minIntervalMs`. A client that reconnects with the event id it last got
 * is sent nothing until something that matters to it changes after that id. A read may wait on the store: its event
 * id is the feed's position before the read, so a change made while it reads is sent again, never missed.
 */
export async function* live<T>(
  feed: Feed,
  signal: AbortSignal | undefined,
  matters: (c: Change) => boolean,
  lastEventId: string | null | undefined,
  read: () => T | Promise<T>,
  minIntervalMs = 0,
): AsyncGenerator<TrackedEnvelope<T>> {
  const ac = signal ?? new AbortController().signal;
  const start = feed.seq;
  const resumed = seqOf(feed, lastEventId);
  if (resumed === null || feed.movedSince(resumed, matters)) yield tracked(eventId(feed, start), await read());
  let sentAt = Date.now();
  for await (const batch of feed.changes(ac, start)) {
    if (!batch.some(matters)) continue;
    // Large values (every IP, every incident) go at most every minIntervalMs: a busy hub changes many times a second.
    const wait = sentAt + minIntervalMs - Date.now();
    if (wait > 0) await sleep(wait);
    if (ac.aborted) return;
    sentAt = Date.now();
    const seq = feed.seq;
    yield tracked(eventId(feed, seq), await read());
  }
}

/**
 * liveIps streams the IP list as deltas: the whole list first (`full`), then only the IPs that changed, at most every
 * LIST_INTERVAL_MS. The event id is the feed's position, so a client that reconnects with it gets just what changed
 * while it was away (or the whole list again after a hub restart).
 */
export async function* liveIps(
  feed: Feed,
  rows: (ips: Iterable<string> | null) => IpRow[],
  signal: AbortSignal | undefined,
  lastEventId: string | null | undefined,
): AsyncGenerator<TrackedEnvelope<{ full: boolean; ips: IpRow[] }>> {
  const ac = signal ?? new AbortController().signal;
  let since = seqOf(feed, lastEventId) ?? 0;
  let sentAt = 0;
  const send = () => {
    const seq = feed.seq;
    const d = feed.ipsSince(since);
    since = seq;
    if (!d.full && d.ips.length === 0) return null;
    sentAt = Date.now();
    return tracked(eventId(feed, seq), { full: d.full, ips: rows(d.full ? null : d.ips) });
  };
  const first = send();
  if (first !== null) yield first;
  for await (const batch of feed.changes(ac, since)) {
    if (!batch.some((c) => c.kind === "ips" || c.kind === "everything")) continue;
    const wait = sentAt + LIST_INTERVAL_MS - Date.now();
    if (wait > 0) await sleep(wait);
    if (ac.aborted) return;
    const next = send();
    if (next !== null) yield next;
  }
}

/**
 * held runs a subscription while it holds one of its principal's stream slots (none: unbounded, in tests); a
 * principal past its limit gets an error it can read.
 */
export async function* held<T>(slots: StreamSlots | undefined, who: string, gen: AsyncGenerator<T>): AsyncGenerator<T> {
  let release: () => void = () => undefined;
  try {
    if (slots !== undefined) release = slots.open(who);
  } catch (e) {
    throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: (e as Error).message });
  }
  try {
    yield* gen;
  } finally {
    release();
  }
}

/** Filters of what matters to each subscription. */
export const matters = {
  ip: (ip: string) => (c: Change) =>
    (c.kind === "ips" && c.ips.includes(ip)) || c.kind === "everything" || (c.kind === "handover" && c.ip === ip),
  cluster: (c: Change) => c.kind === "cluster" || c.kind === "agents",
  agents: (c: Change) => c.kind === "agents",
  incidents: (c: Change) => c.kind === "incident",
};
