import { agentsRouter } from "./router/agents.js";
import { clusterRouter } from "./router/cluster.js";
import { incidentsRouter } from "./router/incidents.js";
import { ipsRouter } from "./router/ips.js";
import { nodesRouter } from "./router/nodes.js";
import { createTRPCRouter } from "./trpc.js";

/** appRouter: one router per domain. Actions (re-announce, probe, remediation) arrive with operator sessions (issue 9). */
export const appRouter = createTRPCRouter({
  cluster: clusterRouter,
  ips: ipsRouter,
  nodes: nodesRouter,
  agents: agentsRouter,
  incidents: incidentsRouter,
});

export type AppRouter = typeof appRouter;
