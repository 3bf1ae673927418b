import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIP } from "@whohas/core";
import { LIST_INTERVAL_MS, live, liveInput } from "../live.js";
import { TRPCError } from "@trpc/server";
import { operatorProcedure, viewerProcedure } from "../trpc.js";

const filter = z.object({ state: z.enum(["open", "resolved", "all"]).default("all"), ip: z.string().refine(isIP, "not an IP address").optional(), limit: z.number().int().min(1).max(5000).default(500) });
const query = (f: z.infer<typeof filter>) => ({ open: f.state === "all" ? undefined : f.state === "open", ip: f.ip, limit: f.limit });

export const incidentsRouter = {
  /** list: incidents newest first, open, resolved or all, optionally for one IP. */
  list: viewerProcedure.input(filter.optional()).query(({ ctx, input }) => ctx.hub.incidents(query(filter.parse(input ?? {})))),

  /** byId: one incident with its timeline (opened, updated, acknowledged, resolved), null when unknown. */
  byId: viewerProcedure.input(z.object({ id: z.number().int().positive() })).query(({ ctx, input }) => ctx.hub.store.incident(input.id)),

  /** acknowledge marks an incident seen (it stays open until its finding clears); audited. */
  acknowledge: operatorProcedure.input(z.object({ id: z.number().int().positive() })).mutation(({ ctx, input }) => {
    const now = ctx.hub.clock();
    const ok = ctx.hub.store.acknowledge(input.id, ctx.principal.user, now);
    ctx.hub.store.audit({ t: now, actor: ctx.principal.user, action: "incident.acknowledge", input, outcome: ok ? "ok" : "refused", detail: ok ? "acknowledged" : "no such incident" });
    if (!ok) throw new TRPCError({ code: "NOT_FOUND", message: `no incident ${input.id}` });
    return ctx.hub.store.incident(input.id);
  }),

  live: viewerProcedure
    .input(liveInput.extend({ filter: filter.optional() }).optional())
    .subscription(({ ctx, signal, input }) => {
      const f = filter.parse(input?.filter ?? {});
      return live(ctx.hub, signal, `incidents:${JSON.stringify(f)}`, input?.lastEventId, () => ctx.hub.incidents(query(f)), LIST_INTERVAL_MS);
    }),
} satisfies TRPCRouterRecord;
