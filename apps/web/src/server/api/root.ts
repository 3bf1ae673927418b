import { actionsRouter } from "./router/actions.js";
import { agentsRouter } from "./router/agents.js";
import { alertsRouter } from "./router/alerts.js";
import { clusterRouter } from "./router/cluster.js";
import { fleetRouter } from "./router/fleet.js";
import { incidentsRouter } from "./router/incidents.js";
import { ipsRouter } from "./router/ips.js";
import { nodesRouter } from "./router/nodes.js";
import { remediationRouter } from "./router/remediation.js";
import { settingsRouter } from "./router/settings.js";
import { createTRPCRouter } from "./trpc.js";

/** appRouter: one router per domain; each procedure declares the role it needs (trpc.ts). */
export const appRouter = createTRPCRouter({
  cluster: clusterRouter,
  fleet: fleetRouter,
  ips: ipsRouter,
  nodes: nodesRouter,
  agents: agentsRouter,
  incidents: incidentsRouter,
  actions: actionsRouter,
  settings: settingsRouter,
  alerts: alertsRouter,
  remediation: remediationRouter,
});

export type AppRouter = typeof appRouter;
