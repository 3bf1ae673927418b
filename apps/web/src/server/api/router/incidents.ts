import { TRPCError, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIpKey, normalizeIpKey } from "@whohas/core";
import { storyOf } from "../../hub/story.js";
import { namesOf } from "../../vendors.js";
import { LIST_INTERVAL_MS, held, live, liveInput, matters } from "../live.js";
import { allows } from "../../auth/roles.js";
import { operatorProcedure, viewerProcedure } from "../trpc.js";

const filter = z.object({
  state: z.enum(["open", "resolved", "all"]).default("all"),
  ip: z
    .string()
    .max(50)
    .refine(isIpKey, "not an IP address (optionally @VLAN)")
    .transform((s) => normalizeIpKey(s) ?? s)
    .optional(),
  limit: z.number().int().min(1).max(5000).default(500),
});
const query = (f: z.infer<typeof filter>) => ({ open: f.state === "all" ? undefined : f.state === "open", ip: f.ip, limit: f.limit });

export const incidentsRouter = {
  /** list: incidents newest first, open, resolved or all, optionally for one IP. */
  list: viewerProcedure.input(filter.optional()).query(({ ctx, input }) => ctx.hub.judging.incidents(query(filter.parse(input ?? {})))),

  /**
   * byId: one incident with its timeline (opened, updated, acknowledged, resolved), what is stored of its frames (null
   * until its snapshot is taken) and the node and vendor of each MAC its findings name; null when unknown.
   */
  byId: viewerProcedure.input(z.object({ id: z.number().int().positive() })).query(async ({ ctx, input }) => {
    const i = await ctx.hub.judging.incident(input.id);
    if (i === null) return null;
    const named = namesOf([...i.macs, ...i.facets.flatMap((f) => f.macs)], (m) => ctx.hub.nodeOfMac(m));
    return { ...i, capture: await ctx.hub.incidentCapture(input.id), named };
  }),

  /**
   * story: what happened to the incident's subject in time order (its events, the IP's handovers, the actions taken on
   * it and by whom) and what whohas knows of the subject now; null when unknown.
   */
  story: viewerProcedure.input(z.object({ id: z.number().int().positive() })).query(async ({ ctx, input }) => {
    const s = await storyOf(ctx.hub, input.id);
    if (s === null || allows(ctx.principal.role, "operator")) return s;
    // The audit log is the admins': a viewer sees that an action was taken and by whom (as the IP page shows a probe),
    // not attempts refused or what the audit recorded of them.
    const entries = s.entries
      .filter((e) => e.kind !== "action" || e.outcome !== "refused")
      .map((e) => (e.kind === "action" ? { ...e, detail: "" } : e));
    return { ...s, entries };
  }),

  /** acknowledge marks an incident seen (it stays open until its finding clears); audited. */
  acknowledge: operatorProcedure.input(z.object({ id: z.number().int().positive() })).mutation(async ({ ctx, input }) => {
    if (!(await ctx.hub.judging.acknowledge(input.id, ctx.principal.user)))
      throw new TRPCError({ code: "NOT_FOUND", message: `no incident ${input.id}` });
    return ctx.hub.judging.incident(input.id);
  }),

  live: viewerProcedure.input(liveInput.extend({ filter: filter.optional() }).optional()).subscription(({ ctx, signal, input }) => {
    const f = filter.parse(input?.filter ?? {});
    return held(
      ctx.streams,
      ctx.principal.user,
      live(ctx.hub.feed, signal, matters.incidents, input?.lastEventId, () => ctx.hub.judging.incidents(query(f)), LIST_INTERVAL_MS),
    );
  }),
} satisfies TRPCRouterRecord;
