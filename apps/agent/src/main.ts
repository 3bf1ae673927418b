#!/usr/bin/env node
// whohas: the node agent and CLI. Each command loads its own modules, so `whohas analyze` starts without libpcap.
import { USAGE } from "./usage.js";
import { AGENT_VERSION } from "./version.js";

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case "agent":
      return (await import("./run-agent.js")).runAgent(rest);
    case "analyze":
      return (await import("./analyze.js")).runAnalyze(rest);
    case "probe":
      return (await import("./run-probe.js")).runProbeCli(rest);
    case "announce":
      return (await import("./run-probe.js")).runAnnounceCli(rest);
    case "--version":
    case "-v":
      process.stdout.write(`whohas ${AGENT_VERSION}\n`);
      return 0;
    case undefined:
    case "--help":
    case "-h":
    case "help":
      process.stdout.write(USAGE);
      return cmd === undefined ? 2 : 0;
    default:
      process.stderr.write(`whohas: unknown command ${JSON.stringify(cmd)}\n\n${USAGE}`);
      return 2;
  }
}

/** exit leaves once stdout and stderr are flushed: output to a pipe is asynchronous, and `| jq` must get all of it. */
function exit(code: number): void {
  process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
}

main(process.argv.slice(2)).then(exit, (e: unknown) => {
  process.stderr.write(`whohas: ${(e as Error).message}\n`);
  exit(2);
});
