import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIPv4 } from "@whohas/core";
import { publicProcedure } from "../trpc.js";

export const ipsRouter = {
  /** list returns every IP seen, with its responders and state. */
  list: publicProcedure.query(({ ctx }) => ctx.hub.ips()),

  /** byIp returns one IP, or null when nothing was seen for it. */
  byIp: publicProcedure.input(z.object({ ip: z.string().refine(isIPv4, "not an IPv4 address") })).query(({ ctx, input }) => ctx.hub.ip(input.ip)),

  /** live pushes the whole list whenever it changes (and as views age), over SSE. */
  live: publicProcedure.subscription(async function* ({ ctx, signal }) {
    let last = "";
    for await (const _ of ctx.hub.changes(signal ?? new AbortController().signal)) {
      const ips = ctx.hub.ips();
      const json = JSON.stringify(ips);
      if (json === last) continue;
      last = json;
      yield ips;
    }
  }),
} satisfies TRPCRouterRecord;
