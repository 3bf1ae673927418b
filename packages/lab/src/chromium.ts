/** CHROMIUM is Debian's Chromium: the e2e tests and the dashboard benchmark run in it, never in a downloaded browser. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * CHROMIUM_ARGS start it headless and quiet, the same for the e2e tests and the benchmark: no sandbox (the suites run
 * as root), no GPU, and none of its own background traffic (updates, sync, first-run pages) beside the page.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
];
