import type { Hub } from "../hub/hub.js";

/**
 * live turns a read of the hub into a subscription: it yields the value at once and then whenever it differs from
 * the last one sent (the hub wakes it on every change and once a second, as views age).
 */
export async function* live<T>(hub: Hub, signal: AbortSignal | undefined, read: () => T): AsyncGenerator<T> {
  let last = "";
  for await (const _ of hub.changes(signal ?? new AbortController().signal)) {
    const value = read();
    const json = JSON.stringify(value);
    if (json === last) continue;
    last = json;
    yield value;
  }
}
