import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIPv4 } from "@whohas/core";
import { live } from "../live.js";
import { publicProcedure } from "../trpc.js";

export const ipsRouter = {
  /** list returns every IP seen, with its responders and state. */
  list: publicProcedure.query(({ ctx }) => ctx.hub.ips()),

  /** byIp returns one IP, or null when nothing was seen for it. */
  byIp: publicProcedure.input(z.object({ ip: z.string().refine(isIPv4, "not an IPv4 address") })).query(({ ctx, input }) => ctx.hub.ip(input.ip)),

  /** live pushes the whole list whenever it changes (and as views age), over SSE. */
  live: publicProcedure.subscription(({ ctx, signal }) => live(ctx.hub, signal, () => ctx.hub.ips())),
} satisfies TRPCRouterRecord;
