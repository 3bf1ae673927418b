import type { TRPCRouterRecord } from "@trpc/server";
import { held, live, liveInput, matters } from "../live.js";
import { viewerProcedure } from "../trpc.js";

export const clusterRouter = {
  /** summary: Kubernetes connection, MetalLB, kube-proxy's mode and strictARP as configured and as the nodes apply it. */
  summary: viewerProcedure.query(({ ctx }) => ctx.hub.summary()),
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) =>
    held(
      ctx.streams,
      ctx.principal.user,
      live(ctx.hub.feed, signal, matters.cluster, input?.lastEventId, () => ctx.hub.summary()),
    ),
  ),
} satisfies TRPCRouterRecord;
