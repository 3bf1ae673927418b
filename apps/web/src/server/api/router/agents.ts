import type { TRPCRouterRecord } from "@trpc/server";
import { publicProcedure } from "../trpc.js";

export const agentsRouter = {
  /** list returns every agent that ever said hello, with its liveness. */
  list: publicProcedure.query(({ ctx }) => ctx.hub.agents()),

  /** live pushes the agent list whenever it changes. */
  live: publicProcedure.subscription(async function* ({ ctx, signal }) {
    let last = "";
    for await (const _ of ctx.hub.changes(signal ?? new AbortController().signal)) {
      const agents = ctx.hub.agents();
      const json = JSON.stringify(agents);
      if (json === last) continue;
      last = json;
      yield agents;
    }
  }),
} satisfies TRPCRouterRecord;
