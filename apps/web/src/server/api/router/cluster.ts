import type { TRPCRouterRecord } from "@trpc/server";
import { live, liveInput } from "../live.js";
import { viewerProcedure } from "../trpc.js";

export const clusterRouter = {
  /** summary: Kubernetes connection, MetalLB, kube-proxy's mode and strictARP as configured and as the nodes apply it. */
  summary: viewerProcedure.query(({ ctx }) => ctx.hub.cluster()),
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) => live(ctx.hub, signal, "cluster", input?.lastEventId, () => ctx.hub.cluster())),
} satisfies TRPCRouterRecord;
