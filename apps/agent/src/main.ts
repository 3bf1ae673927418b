#!/usr/bin/env node
// whohas: the node agent and CLI. `whohas agent` runs the DaemonSet agent.
// Each command loads its own modules (dynamic import), so `whohas analyze` starts without libpcap or WebSockets.
import { parseArgs } from "node:util";
import { AGENT_VERSION } from "./version.js";

const USAGE = `Usage: whohas <command> [options]

Commands:
  agent     capture ARP on this node and stream it to the whohas hub (run by the DaemonSet)
  analyze   report who answers for which IP in pcap / pcapng captures

Run 'whohas <command> --help' for a command's options. 'whohas --version' prints the version.
`;

async function runAgent(argv: string[]): Promise<number> {
  const [{ Agent }, { AGENT_HELP, parseAgentConfig }, { listInterfaces, selectCaptureInterfaces }, { PcapSource }, { HubLink }, { jsonLogger }] =
    await Promise.all([
      import("./agent.js"),
      import("./config.js"),
      import("./capture/interfaces.js"),
      import("./capture/pcap-source.js"),
      import("./hub-link.js"),
      import("@whohas/core"),
    ]);
  const { values } = parseArgs({
    args: argv,
    options: {
      hub: { type: "string" },
      "token-file": { type: "string" },
      node: { type: "string" },
      interfaces: { type: "string" },
      "exclude-interfaces": { type: "string" },
      "max-buffered-entries": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(AGENT_HELP);
    return 0;
  }
  const config = parseAgentConfig(values);
  const logger = jsonLogger("agent", (line) => process.stderr.write(line));
  let agent: InstanceType<typeof Agent> | null = null;
  const link = new HubLink({
    url: config.hub,
    token: config.token,
    logger,
    hello: () => ({
      v: 1,
      type: "hello",
      node: config.node,
      agentVersion: AGENT_VERSION,
      interfaces: (agent?.interfaces ?? []).map(({ name, mac, up }) => ({ name, mac, up })),
    }),
  });
  agent = new Agent({
    node: config.node,
    logger,
    link,
    scan: async () => selectCaptureInterfaces(await listInterfaces(), config.interfaces, config.excludeInterfaces),
    openSource: (iface) => new PcapSource(iface),
    maxBufferedEntries: config.maxBufferedEntries,
  });
  await agent.start();
  logger.info("agent.started", { node: config.node, hub: config.hub, version: AGENT_VERSION });
  const running = agent;
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info("agent.stopping", { signal });
      const hard = setTimeout(() => process.exit(1), 5000);
      hard.unref();
      void running.stop().then(resolve);
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case "agent":
      return runAgent(rest);
    case "analyze":
      return (await import("./analyze.js")).runAnalyze(rest);
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
