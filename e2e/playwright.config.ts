import { defineConfig } from "@playwright/test";
import { CHROMIUM, CHROMIUM_ARGS } from "@whohas/lab";

/**
 * E2E runs in Debian's Chromium (never a downloaded browser) against the real stack: global-setup starts the lab,
 * the built hub and real agents, and hands the dashboard URL to the tests through WHOHAS_E2E_URL.
 */
export default defineConfig({
  testDir: "./tests",
  globalSetup: "./global-setup.ts",
  timeout: 60_000,
  expect: { timeout: 20_000 },
  // A flake must show, in CI too: no retry hides it.
  retries: 0,
  workers: 1,
  reporter: [["list"]],
  use: {
    // Signed in as an operator unless a test says otherwise (global-setup signs each role in through /login).
    storageState: "test-results/.auth/operator.json",
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS, "--disable-quic"],
    },
  },
});
