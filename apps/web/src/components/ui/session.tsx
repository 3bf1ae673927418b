"use client";

import { createContext, useContext, type ReactNode } from "react";

export type Role = "viewer" | "operator" | "admin";

/** A Session is who is signed in, as the hub told the page (never what the browser claims). */
export interface Session {
  readonly user: string;
  readonly role: Role;
  /** Sent with every mutation (CSRF_HEADER); "" for none. */
  readonly csrf: string;
}

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ session, children }: { session: Session | null; children: ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

/** useSession returns who is signed in (null on the sign-in page). */
export function useSession(): Session | null {
  return useContext(SessionContext);
}

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** can says whether `have` is at least `need` (the hub checks again: this only hides links and buttons). */
export function can(have: Role, need: Role): boolean {
  return RANK[have] >= RANK[need];
}

/** useCan says whether the signed-in user has at least `role`. */
export function useCan(role: Role): boolean {
  const s = useSession();
  return s !== null && can(s.role, role);
}
