import type { TRPCRouterRecord } from "@trpc/server";
import { live, liveInput } from "../live.js";
import { viewerProcedure } from "../trpc.js";

export const agentsRouter = {
  /** list returns every agent that ever said hello (remembered across restarts), with its liveness. */
  list: viewerProcedure.query(({ ctx }) => ctx.hub.agents()),

  /** live pushes the agent list whenever it changes; resumable. */
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) => live(ctx.hub, signal, "agents", input?.lastEventId, () => ctx.hub.agents())),
} satisfies TRPCRouterRecord;
