import type { TRPCRouterRecord } from "@trpc/server";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { CLUSTER_NAME } from "@whohas/core";
import { viewerProcedure } from "../trpc.js";

export const fleetRouter = {
  /** clusters: every cluster whose hub publishes to this hub's database, this one live, the others as published. */
  clusters: viewerProcedure.query(({ ctx }) => ctx.hub.fleet.clusters()),
  /** directory: the clusters' names and dashboards only (the top bar's switch). */
  directory: viewerProcedure.query(({ ctx }) => ctx.hub.fleet.directory()),
  /** ips: one cluster's IP rows (verdict and what it rests on), with the cluster as of when they were published. */
  ips: viewerProcedure.input(z.object({ cluster: z.string().regex(CLUSTER_NAME) })).query(async ({ ctx, input }) => {
    const got = await ctx.hub.fleet.ips(input.cluster);
    if (got === null) throw new TRPCError({ code: "NOT_FOUND", message: `no cluster ${input.cluster} reports to this hub's database` });
    return got;
  }),
} satisfies TRPCRouterRecord;
