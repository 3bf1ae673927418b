import type { TRPCRouterRecord } from "@trpc/server";
import { held, live, liveInput, matters } from "../live.js";
import { viewerProcedure } from "../trpc.js";

export const nodesRouter = {
  /** list: per node, its agent's state, version, interfaces and facts, and its ARP behaviour. */
  list: viewerProcedure.query(({ ctx }) => ctx.hub.nodes()),
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) =>
    held(
      ctx.streams,
      ctx.principal.user,
      live(ctx.hub.feed, signal, matters.cluster, input?.lastEventId, () => ctx.hub.nodes()),
    ),
  ),
} satisfies TRPCRouterRecord;
