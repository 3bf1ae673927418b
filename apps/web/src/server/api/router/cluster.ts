import type { TRPCRouterRecord } from "@trpc/server";
import { live } from "../live.js";
import { publicProcedure } from "../trpc.js";

export const clusterRouter = {
  /** summary: Kubernetes connection, MetalLB presence, kube-proxy mode and strictARP as configured. */
  summary: publicProcedure.query(({ ctx }) => ctx.hub.cluster()),
  live: publicProcedure.subscription(({ ctx, signal }) => live(ctx.hub, signal, () => ctx.hub.cluster())),
} satisfies TRPCRouterRecord;
