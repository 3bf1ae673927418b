import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIP } from "@whohas/core";
import { LIST_INTERVAL_MS, live, liveInput } from "../live.js";
import { publicProcedure } from "../trpc.js";

const filter = z.object({ state: z.enum(["open", "resolved", "all"]).default("all"), ip: z.string().refine(isIP, "not an IP address").optional(), limit: z.number().int().min(1).max(5000).default(500) });
const query = (f: z.infer<typeof filter>) => ({ open: f.state === "all" ? undefined : f.state === "open", ip: f.ip, limit: f.limit });

export const incidentsRouter = {
  /** list: incidents newest first, open, resolved or all, optionally for one IP. */
  list: publicProcedure.input(filter.optional()).query(({ ctx, input }) => ctx.hub.incidents(query(filter.parse(input ?? {})))),

  /** byId: one incident with its timeline (opened, updated, acknowledged, resolved), null when unknown. */
  byId: publicProcedure.input(z.object({ id: z.number().int().positive() })).query(({ ctx, input }) => ctx.hub.store.incident(input.id)),

  live: publicProcedure
    .input(liveInput.extend({ filter: filter.optional() }).optional())
    .subscription(({ ctx, signal, input }) => {
      const f = filter.parse(input?.filter ?? {});
      return live(ctx.hub, signal, `incidents:${JSON.stringify(f)}`, input?.lastEventId, () => ctx.hub.incidents(query(f)), LIST_INTERVAL_MS);
    }),
} satisfies TRPCRouterRecord;
