import type { Hub } from "./hub.js";

/**
 * The custom server (server.ts) and the Next.js pages are bundled apart but run in one process: the server puts its
 * Hub here so that server-rendered pages can read it directly instead of calling the API over HTTP.
 */
const slot = globalThis as { whohasHub?: Hub };

export function setCurrentHub(hub: Hub): void {
  slot.whohasHub = hub;
}

/** currentHub is the process's Hub, or null outside the hub's server (e.g. `next build`). */
export function currentHub(): Hub | null {
  return slot.whohasHub ?? null;
}
