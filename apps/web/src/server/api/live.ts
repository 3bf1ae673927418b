import { randomBytes } from "node:crypto";
import { tracked, type TrackedEnvelope } from "@trpc/server";
import { z } from "zod";
import type { Hub } from "../hub/hub.js";

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
export async function* live<T>(hub: Hub, signal: AbortSignal | undefined, key: string, lastEventId: string | null | undefined, read: () => T): AsyncGenerator<TrackedEnvelope<T>> {
  const known = memo.get(key);
  let last = lastEventId !== null && lastEventId !== undefined && known?.id === lastEventId ? known.json : "";
  for await (const _ of hub.changes(signal ?? new AbortController().signal)) {
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
    yield tracked(m.id, value);
  }
}
