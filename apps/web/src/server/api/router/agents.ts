import type { TRPCRouterRecord } from "@trpc/server";
import { held, live, liveInput, matters } from "../live.js";
import { viewerProcedure } from "../trpc.js";

export const agentsRouter = {
  /** list returns every agent that ever said hello (remembered across restarts), with its liveness. */
  list: viewerProcedure.query(({ ctx }) => ctx.hub.agents.list()),

  /** live pushes the agent list whenever it changes; resumable. */
  live: viewerProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) =>
    held(
      ctx.streams,
      ctx.principal.user,
      live(ctx.hub.feed, signal, matters.agents, input?.lastEventId, () => ctx.hub.agents.list()),
    ),
  ),
} satisfies TRPCRouterRecord;
