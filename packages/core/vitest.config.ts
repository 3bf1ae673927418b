import { defineConfig } from "vitest/config";

// Property tests run thousands of cases: on a loaded 2-core machine (turbo runs packages in parallel) they can pass
// the default 5 s. The timeout guards against hangs, it is not a performance check (those live in bench/).
export default defineConfig({ test: { include: ["src/**/*.test.ts"], testTimeout: 30_000 } });
