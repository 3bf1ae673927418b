import type { TRPCRouterRecord } from "@trpc/server";
import { live } from "../live.js";
import { publicProcedure } from "../trpc.js";

export const agentsRouter = {
  /** list returns every agent that ever said hello, with its liveness. */
  list: publicProcedure.query(({ ctx }) => ctx.hub.agents()),

  /** live pushes the agent list whenever it changes. */
  live: publicProcedure.subscription(({ ctx, signal }) => live(ctx.hub, signal, () => ctx.hub.agents())),
} satisfies TRPCRouterRecord;
