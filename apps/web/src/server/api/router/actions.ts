import { TRPCError, tracked, type TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIpKey, normalizeIpKey } from "@whohas/core";
import type { Actions } from "../../actions/actions.js";
import { ActionRefused } from "../../actions/command.js";
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

/** A group of IPs to announce at once: those of one Service, or of one address pool. */
const group = z.union([
  z.object({ service: z.object({ namespace: z.string().min(1).max(253), name: z.string().min(1).max(253) }) }),
  z.object({ pool: z.string().min(1).max(253) }),
]);

/** groupIps names a group in words and lists its IPs announced over ARP/NDP (BGP's are the routers' business). */
function groupIps(ctx: Context, g: z.infer<typeof group>): { what: string; ips: string[] } {
  const arp = ctx.hub.ips().filter((v) => v.services.length > 0 && v.announcer !== "metallb-bgp");
  if ("pool" in g) return { what: `pool ${g.pool}`, ips: arp.filter((v) => v.pool === g.pool).map((v) => v.ip) };
  const { namespace, name } = g.service;
  return {
    what: `Service ${namespace}/${name}`,
    ips: arp.filter((v) => v.services.some((x) => x.namespace === namespace && x.name === name)).map((v) => v.ip),
  };
}

function announcementsOf(ctx: Context) {
  if (ctx.announcements === undefined)
    throw new TRPCError({ code: "PRECONDITION_FAILED", message: "actions are not available in this process" });
  return ctx.announcements;
}

export const actionsRouter = {
  /**
   * reannounceGroup: every IP of a Service or pool announced by its expected owner, a few at a time (audited as a
   * whole and per IP); returns the batch, which announceGroupLatest follows.
   */
  reannounceGroup: operatorProcedure.input(group).mutation(({ ctx, input }) =>
    refusal(async () => {
      const { what, ips } = groupIps(ctx, input);
      return structuredClone(await announcementsOf(ctx).start(what, ips, ctx.principal.user));
    }),
  ),

  /** announceGroupLatest: the newest re-announcement of a Service or pool (running or finished lately), null when none. */
  announceGroupLatest: viewerProcedure.input(group).query(({ ctx, input }) => {
    const b = announcementsOf(ctx).latest(groupIps(ctx, input).what);
    return b === null ? null : structuredClone(b);
  }),

  /** reannounce: the expected owner sends MetalLB's gratuitous announcements for the IP (audited). */
  reannounce: operatorProcedure
    .input(z.object({ ip }))
    .mutation(({ ctx, input }) => refusal(() => actionsOf(ctx).reannounce(input.ip, ctx.principal.user))),

  /** probe starts (or joins) a probe of the IP from two nodes and returns its id (audited). */
  probe: operatorProcedure
    .input(z.object({ ip }))
    .mutation(({ ctx, input }) => refusal(async () => ({ id: await actionsOf(ctx).probe(input.ip, ctx.principal.user) }))),

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
