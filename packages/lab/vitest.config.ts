import { defineConfig } from "vitest/config";

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
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
