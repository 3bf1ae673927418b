import { defineConfig } from "vitest/config";

const FAULTS = "src/__integration__/faults.test.ts";

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
          exclude: [FAULTS],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // The fault tests spend most of their six minutes waiting out outages (a hub stopped for two minutes, an API
        // server down for one, agents silent past their timeout): scripts/integration.sh runs them in a vitest of their
        // own beside the other files (projects of one vitest share its workers, so they would not overlap).
        test: {
          name: "faults",
          include: [FAULTS],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
