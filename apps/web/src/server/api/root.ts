import { agentsRouter } from "./router/agents.js";
import { ipsRouter } from "./router/ips.js";
import { createTRPCRouter } from "./trpc.js";

export const appRouter = createTRPCRouter({
  ips: ipsRouter,
  agents: agentsRouter,
});

export type AppRouter = typeof appRouter;
