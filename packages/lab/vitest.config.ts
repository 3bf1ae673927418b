import { defineConfig } from "vitest/config";

/**
 * The files run in a second vitest beside the others (scripts/integration.sh): the fault tests spend most of their
 * six minutes waiting out the outages they cause (a hub stopped for two minutes, an API server down for one, agents
 * silent past their timeout) and the remediation tests wait for rollouts and a fix's verification. Two labs at a
 * time, each of its own, and the two halves take about as long.
 */
const BESIDE = [
  "src/__integration__/faults.test.ts",
  "src/__integration__/remediation.test.ts",
  "src/__integration__/kubectl-plugin.test.ts",
  "src/__integration__/cluster.test.ts",
  "src/__integration__/replicas.test.ts",
];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["src/**/*.test.ts"],
          exclude: ["src/__integration__/**"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // Real namespaces, real kernels, the built hub and agent: needs root and `pnpm build` first.
        test: {
          name: "integration",
          include: ["src/__integration__/**/*.test.ts"],
          exclude: BESIDE,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // Run beside the integration project by scripts/integration.sh (projects of one vitest share its workers, so
        // they would not overlap).
        test: {
          name: "beside",
          include: BESIDE,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
