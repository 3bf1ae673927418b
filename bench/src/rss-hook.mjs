// Preloaded into the measured process (node --import): reports its peak resident set size on exit.
process.on("exit", () => {
  process.stderr.write(`\nwhohas-bench-maxrss-kb ${process.resourceUsage().maxRSS}\n`);
});
