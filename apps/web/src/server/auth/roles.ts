/**
 * ROLES, weakest first: a viewer reads; an operator also acts on the network (re-announce, probe,
 * acknowledge, remediation); an admin also changes whohas itself (settings, receivers, tokens, the audit log).
 */
export const ROLES = ["viewer", "operator", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** allows says whether `role` may do what `needed` may. */
export function allows(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/** highest is the strongest of the roles given, or null for none. */
export function highest(roles: Iterable<Role>): Role | null {
  let best: Role | null = null;
  for (const r of roles) if (best === null || allows(r, best)) best = r;
  return best;
}
