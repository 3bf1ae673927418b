#!/usr/bin/env node
// whohas: the node agent and CLI. Each command loads its own modules, so `whohas analyze` starts without libpcap.
import { AGENT_VERSION } from "./version.js";

const USAGE = `Usage: whohas <command> [options]

Commands:
  agent      capture ARP/NDP on this node and stream it to the whohas hub (run by the DaemonSet)
  analyze    report who answers for which IP in pcap / pcapng captures
  probe      count the MACs answering broadcast requests for an IP, request by request
  announce   send MetalLB's gratuitous announcements for an IP from this node

Run 'whohas <command> --help' for a command's options. 'whohas --version' prints the version.
`;

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
