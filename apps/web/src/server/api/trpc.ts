/**
 * 1. CONTEXT
 * Every procedure sees the one Hub of this process.
 * @see https://trpc.io/docs/server/context
 */
import { initTRPC } from "@trpc/server";
import type { Hub } from "../hub/hub.js";

export interface Context {
  readonly hub: Hub;
}

/**
 * 2. INITIALIZATION
 * The only initTRPC of the app. Plain JSON: every value the API returns is JSON-safe (times are epoch ms).
 */
const t = initTRPC.context<Context>().create();

/** 3. ROUTER AND PROCEDURES */
export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;
/** publicProcedure is readable by anyone who reaches the dashboard. */
export const publicProcedure = t.procedure;
