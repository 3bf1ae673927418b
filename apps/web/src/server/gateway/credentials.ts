import { timingSafeEqual } from "node:crypto";

/**
 * An AgentIdentity is what an agent's credential proves: the shared token proves only that it is one of ours; a
 * ServiceAccount token bound to a Pod proves which node it runs on.
 */
export type AgentIdentity = { readonly via: "shared-token" } | { readonly via: "service-account"; readonly node: string };

/** A Review is what a TokenReview said of a token that is not the shared one. */
export type Review = { readonly ok: true; readonly node: string } | { readonly ok: false; readonly why: string };

/** tokenMatches compares bearer tokens in constant time. */
export function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? "");
  if (m?.[1] === undefined) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
