import type { TRPCRouterRecord } from "@trpc/server";
import { z } from "zod";
import { isIpKey, normalizeIpKey, splitIpKey } from "@whohas/core";
import { held, live, liveInput, liveIps, matters } from "../live.js";
import { viewerProcedure } from "../trpc.js";
import { rowOf } from "../../hub/views.js";
import { namesOf } from "../../vendors.js";

const ip = z
  .string()
  .max(50)
  .refine(isIpKey, "not an IP address (optionally @VLAN)")
  .transform((s) => normalizeIpKey(s) ?? s);
/** RANGES are the timeline windows the dashboard offers. */
const RANGE_MS = { "15m": 15 * 60_000, "1h": 3_600_000, "24h": 86_400_000 } as const;

export const ipsRouter = {
  /** list returns every IP seen or known from the cluster as list rows (responders, state, open findings). */
  list: viewerProcedure.query(({ ctx }) => ctx.hub.ips().map(rowOf)),

  /** snapshot: every IP as list rows, with the event id `live` resumes from (so the list is sent once, then deltas). */
  snapshot: viewerProcedure.query(({ ctx }) => ctx.hub.listSnapshot()),

  /** byIp returns one IP (with its handovers), or null when nothing was seen or known for it. */
  byIp: viewerProcedure.input(z.object({ ip })).query(({ ctx, input }) => ctx.hub.ip(input.ip)),

  /**
   * backgroundProbe: whether the hub probes LoadBalancer IPs in the background, how often, and its latest probe of
   * `ip` (null: none yet, or not a LoadBalancer IP).
   */
  backgroundProbe: viewerProcedure.input(z.object({ ip })).query(({ ctx, input }) => {
    const p = ctx.backgroundProbe;
    if (p === undefined) return { enabled: false as const, intervalMs: null, last: null };
    // Probes are of LoadBalancer addresses; the page may be the address's row on the VLAN the agents saw it on.
    const last = p.last(splitIpKey(input.ip).ip);
    return {
      enabled: true as const,
      intervalMs: p.o.intervalMs,
      last: last === null ? null : { ...last, answeredBy: namesOf(last.macs ?? [], (m) => ctx.hub.nodeOfMac(m)) },
    };
  }),

  /** timeline: one IP's replies, announcements and requests per minute and MAC over the last 15 min, 1 h or 24 h. */
  timeline: viewerProcedure.input(z.object({ ip, range: z.enum(["15m", "1h", "24h"]).default("1h") })).query(({ ctx, input }) => {
    const now = ctx.hub.clock();
    return ctx.hub.timeline(input.ip, now - RANGE_MS[input.range], now);
  }),

  /** live pushes the whole list, then only the IPs that changed, at most once a second; resumable. */
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) =>
    held(
      ctx.streams,
      ctx.principal.user,
      liveIps(ctx.hub.feed, (ips) => (ips === null ? ctx.hub.ips().map(rowOf) : ctx.hub.views.rows(ips)), signal, input?.lastEventId),
    ),
  ),

  /** byIpLive pushes one IP whenever it changes. */
  byIpLive: viewerProcedure.input(liveInput.extend({ ip })).subscription(({ ctx, signal, input }) =>
    held(
      ctx.streams,
      ctx.principal.user,
      live(ctx.hub.feed, signal, matters.ip(input.ip), input.lastEventId, () => ctx.hub.ip(input.ip)),
    ),
  ),
} satisfies TRPCRouterRecord;
