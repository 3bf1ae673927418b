import type { Hub } from "./hub/hub.js";

/**
 * The hub of this process, for the dashboard's server components: Next.js runs in the same process as the custom
 * server (server.ts) but bundles its own copy of the modules, so the one Hub is handed over on globalThis.
 */
const KEY = Symbol.for("whohas.hub");

export function registerHub(hub: Hub): void {
  (globalThis as Record<symbol, unknown>)[KEY] = hub;
}

/** registeredHub returns the running hub, or null (at build time, in tests). */
export function registeredHub(): Hub | null {
  return ((globalThis as Record<symbol, unknown>)[KEY] as Hub | undefined) ?? null;
}
