import { randomBytes } from "node:crypto";
import { tracked, type TrackedEnvelope } from "@trpc/server";
import { z } from "zod";
import type { Hub, IpRow } from "../hub/hub.js";

/** BOOT makes event ids of this process distinct from a previous one's, so a resume after a restart resends. */
const BOOT = randomBytes(4).toString("hex");
/** MEMO_MAX bounds the remembered last values (one per subscription kind and input). */
const MEMO_MAX = 1000;

let seq = 0;
const memo = new Map<string, { id: string; json: string }>();

/** liveInput is every subscription's input: the client's last event id, sent again by httpSubscriptionLink on reconnect. */
export const liveInput = z.object({ lastEventId: z.string().max(64).nullish() });

/**
 * live turns a read of the hub into a resumable subscription: it yields the value, tracked with an id, at once and
 * whenever it differs from the last one sent (the hub wakes it on every change and once a second, as views age). A
 * client that reconnects with the id of the value that is still current gets nothing until the next change, instead
 * of the same value again.
 */
export async function* live<T>(
  hub: Hub,
  signal: AbortSignal | undefined,
  key: string,
  lastEventId: string | null | undefined,
  read: () => T,
  minIntervalMs = 0,
): AsyncGenerator<TrackedEnvelope<T>> {
  const known = memo.get(key);
  let last = lastEventId !== null && lastEventId !== undefined && known?.id === lastEventId ? known.json : "";
  let sentAt = 0;
  for await (const _ of hub.changes(signal ?? new AbortController().signal)) {
    // Large values (every IP) go at most every minIntervalMs: a busy hub changes many times a second.
    const wait = sentAt + minIntervalMs - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (signal?.aborted === true) return;
    const value = read();
    const json = JSON.stringify(value);
    if (json === last) continue;
    last = json;
    let m = memo.get(key);
    if (m?.json !== json) {
      m = { id: `${BOOT}-${++seq}`, json };
      memo.delete(key);
      memo.set(key, m);
      if (memo.size > MEMO_MAX) memo.delete(memo.keys().next().value ?? "");
    }
    sentAt = Date.now();
    yield tracked(m.id, value);
  }
}

/** LIST_INTERVAL_MS: how often a whole list (every IP, every incident) may be pushed to one subscriber. */
export const LIST_INTERVAL_MS = 1000;

/**
 * liveIps streams the IP list as deltas: the whole list first (`full`), then only the IPs whose view changed, at most
 * every LIST_INTERVAL_MS. The event id carries the hub's change sequence, so a client that reconnects with it gets
 * just what changed while it was away (or the whole list again after a hub restart).
 */
export async function* liveIps(hub: Hub, signal: AbortSignal | undefined, lastEventId: string | null | undefined): AsyncGenerator<TrackedEnvelope<{ full: boolean; ips: IpRow[] }>> {
  const m = /^([0-9a-f]+)-ips-(\d+)$/.exec(lastEventId ?? "");
  let since = m !== null && m[1] === hub.bootId ? Number(m[2]) : 0;
  let sentAt = 0;
  for await (const _ of hub.changes(signal ?? new AbortController().signal)) {
    const wait = sentAt + LIST_INTERVAL_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (signal?.aborted === true) return;
    const d = hub.ipsSince(since);
    since = d.seq;
    if (!d.full && d.ips.length === 0) continue;
    sentAt = Date.now();
    yield tracked(`${hub.bootId}-ips-${d.seq}`, { full: d.full, ips: d.ips });
  }
}
