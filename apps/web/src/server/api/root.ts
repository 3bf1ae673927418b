import { agentsRouter } from "./router/agents.js";
import { clusterRouter } from "./router/cluster.js";
import { ipsRouter } from "./router/ips.js";
import { createTRPCRouter } from "./trpc.js";

export const appRouter = createTRPCRouter({
  ips: ipsRouter,
  agents: agentsRouter,
  cluster: clusterRouter,
});

export type AppRouter = typeof appRouter;
