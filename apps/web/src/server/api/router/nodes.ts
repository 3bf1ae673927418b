import type { TRPCRouterRecord } from "@trpc/server";
import type { Hub } from "../../hub/hub.js";
import { live, liveInput } from "../live.js";
import { publicProcedure } from "../trpc.js";

/** nodes joins each agent with its node's ARP behaviour (effective arp_ignore / arp_announce, strict or not). */
export function nodes(hub: Hub) {
  const arp = new Map(hub.cluster().strictArp.nodes.map((n) => [n.node, n]));
  return hub.agents().map((a) => ({ ...a, arp: arp.get(a.node) ?? null }));
}

export const nodesRouter = {
  /** list: per node, its agent's state, version, interfaces and facts, and its ARP behaviour. */
  list: publicProcedure.query(({ ctx }) => nodes(ctx.hub)),
  live: publicProcedure.input(liveInput.optional()).subscription(({ ctx, signal, input }) => live(ctx.hub, signal, "nodes", input?.lastEventId, () => nodes(ctx.hub))),
} satisfies TRPCRouterRecord;
