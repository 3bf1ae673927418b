import { TRPCError, tracked, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIpKey, normalizeIpKey } from "@whohas/core";
import { ActionRefused, type Actions } from "../../actions/actions.js";
import { operatorProcedure, viewerProcedure, type Context } from "../trpc.js";

const ip = z
  .string()
  .max(50)
  .refine(isIpKey, "not an IP address (optionally @VLAN)")
  .transform((s) => normalizeIpKey(s) ?? s);

function actionsOf(ctx: Context): Actions {
  if (ctx.actions === undefined) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "actions are not available in this process" });
  return ctx.actions;
}

/** refusal turns an action that could not start into a 412 with its reason (nothing was changed). */
async function refusal<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ActionRefused) throw new TRPCError({ code: "PRECONDITION_FAILED", message: e.message });
    throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: (e as Error).message });
  }
}

export const actionsRouter = {
  /** reannounce: the expected owner sends MetalLB's gratuitous announcements for the IP (audited). */
  reannounce: operatorProcedure
    .input(z.object({ ip }))
    .mutation(({ ctx, input }) => refusal(() => actionsOf(ctx).reannounce(input.ip, ctx.principal.user))),

  /** probe starts (or joins) a probe of the IP from two nodes and returns its id (audited). */
  probe: operatorProcedure
    .input(z.object({ ip }))
    .mutation(({ ctx, input }) => refusal(() => ({ id: actionsOf(ctx).probe(input.ip, ctx.principal.user) }))),

  /** durations: how long Probe and Force re-announce run (the buttons say it). */
  durations: viewerProcedure.query(({ ctx }) => actionsOf(ctx).durations),

  /** latestProbe: the newest probe of an IP, running or finished in the last minutes, null when none. */
  latestProbe: viewerProcedure.input(z.object({ ip })).query(({ ctx, input }) => {
    const a = actionsOf(ctx);
    const id = a.latestProbe(input.ip);
    return id === null ? null : a.view(id);
  }),

  /** probeLive pushes a probe run as it changes (about one round a second) until it ends. */
  probeLive: viewerProcedure.input(z.object({ id: z.string().uuid(), lastEventId: z.string().nullish() })).subscription(async function* ({
    ctx,
    input,
    signal,
  }) {
    const a = actionsOf(ctx);
    const ac = new AbortController();
    signal?.addEventListener("abort", () => ac.abort(), { once: true });
    let sent = Number(input.lastEventId ?? 0);
    while (!ac.signal.aborted) {
      const changed = a.changed(input.id, ac.signal);
      const v = a.view(input.id);
      if (v === null) return;
      if (v.version > sent) {
        sent = v.version;
        yield tracked(String(v.version), v);
      }
      if (v.state !== "running") return;
      await changed;
    }
  }),
} satisfies TRPCRouterRecord;
