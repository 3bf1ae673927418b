import { silentLogger } from "@whohas/core";
import { Auth, type LocalUser } from "../auth/auth.js";
import type { Hub } from "../hub/hub.js";

/** testAuth is a real Auth over the hub's store, with the given users and read-API token. */
export function testAuth(hub: Hub, o: { viewerToken?: string | null; users?: readonly LocalUser[] } = {}): Auth {
  return new Auth({ users: o.users ?? [], proxy: null, sessionTtlMs: 3_600_000, viewerToken: o.viewerToken ?? null }, hub.store, silentLogger, hub.clock);
}

/** A principal for callers made in tests (createCaller): who the procedure believes is asking. */
export const asRole = (role: "viewer" | "operator" | "admin", user = `test-${role}`) => ({ principal: { user, role, via: "session" as const, csrf: "t" }, csrfOk: true });
