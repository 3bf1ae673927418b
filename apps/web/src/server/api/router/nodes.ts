import type { TRPCRouterRecord } from "@trpc/server";
import { live, liveInput } from "../live.js";
import { viewerProcedure } from "../trpc.js";

export const nodesRouter = {
  /** list: per node, its agent's state, version, interfaces and facts, and its ARP behaviour. */
  list: viewerProcedure.query(({ ctx }) => ctx.hub.nodes()),
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) => live(ctx.hub, signal, "nodes", input?.lastEventId, () => ctx.hub.nodes())),
} satisfies TRPCRouterRecord;
