import { parseArgs } from "node:util";
import { PcapSource } from "@whohas/capture";
import { MAX_HELLO_INTERFACES, MAX_PROBE_TARGETS, WIRE_VERSION, jsonLogger, type AgentMessage, type HubMessage } from "@whohas/core";
import { Agent } from "./agent.js";
import { AGENT_HELP, readToken, parseAgentConfig } from "./config.js";
import { listInterfaces, selectCaptureInterfaces, type NetInterface } from "./capture/interfaces.js";
import { egressFor, runAnnounce, runProbe, type CommandIo } from "./commands.js";
import { collectFacts } from "./facts.js";
import { probeManyCommand } from "./probe-many.js";
import { FrameRing } from "./evidence/ring.js";
import { HubLink } from "./hub-link.js";
import { AgentMetrics, serveMetrics } from "./metrics.js";
import { AGENT_VERSION } from "./version.js";

type Command = Extract<HubMessage, { type: "announce" | "probe" }>;

const NODE_IO: CommandIo = {
  egress: (ip, vlan) => egressFor(ip, undefined, vlan),
  open: (iface) => new PcapSource(iface, "arp or icmp6"),
};

/**
 * hubCommand runs a probe or an announcement the hub asked for. An announcement is refused unless the hub names this
 * node as the IP's expected owner or sets force: whohas must never create the conflict it exists to find.
 */
export function hubCommand(node: string, io: CommandIo = NODE_IO) {
  return async (msg: Command, send: HubLink["send"]): Promise<void> => {
    if (msg.type === "announce" && !msg.force && msg.expectedOwner !== node) {
      send({
        v: WIRE_VERSION,
        type: "command-done",
        id: msg.id,
        ok: false,
        message: `refused: ${node} is not the expected owner of ${msg.ip} (${msg.expectedOwner ?? "none known"}); announcing would create a second responder`,
      });
      return;
    }
    const vlan = msg.vlan ?? null;
    const egress = io.egress(msg.ip, vlan);
    const { open, clock } = io;
    const where = `${vlan === null ? "" : ` on VLAN ${vlan}`} from ${egress.iface}`;
    if (msg.type === "announce") {
      const bursts = await runAnnounce({ ip: msg.ip, durationMs: msg.durationMs, egress, open, clock });
      send({
        v: WIRE_VERSION,
        type: "command-done",
        id: msg.id,
        ok: true,
        message: `announced ${msg.ip}${where} (${egress.mac})`,
        bursts,
      });
      return;
    }
    const summary = await runProbe({
      ip: msg.ip,
      durationMs: msg.durationMs,
      intervalMs: msg.intervalMs,
      egress,
      open,
      clock,
      onResult: (r) =>
        send({ v: WIRE_VERSION, type: "probe-result", id: msg.id, seq: r.seq, sentAt: Math.round(r.sentAt), replies: [...r.replies] }),
    });
    send({
      v: WIRE_VERSION,
      type: "command-done",
      id: msg.id,
      ok: true,
      message: `probed ${msg.ip}${where}`,
      probe: { ...summary, macs: [...summary.macs] },
    });
  };
}

/** runAgent is `whohas agent`: the DaemonSet's long-running process. */
/**
 * agentHello is what the agent says on every connection: its node, version and interfaces, and what it takes beyond
 * the base protocol (probe-many of up to MAX_PROBE_TARGETS IPs, flush, pace).
 */
export function agentHello(
  node: string,
  interfaces: readonly NetInterface[],
  cluster: string | null = null,
): Extract<AgentMessage, { type: "hello" }> {
  return {
    v: WIRE_VERSION,
    type: "hello",
    node,
    agentVersion: AGENT_VERSION,
    interfaces: interfaces.slice(0, MAX_HELLO_INTERFACES).map(({ name, mac, up }) => ({ name, mac, up })),
    probeMany: { maxTargets: MAX_PROBE_TARGETS },
    flush: true,
    pace: true,
    ...(cluster === null ? {} : { cluster }),
  };
}

export async function runAgent(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      hub: { type: "string" },
      "token-file": { type: "string" },
      "ca-file": { type: "string" },
      node: { type: "string" },
      cluster: { type: "string" },
      interfaces: { type: "string" },
      "exclude-interfaces": { type: "string" },
      "max-buffer-bytes": { type: "string" },
      "evidence-bytes": { type: "string" },
      "evidence-age": { type: "string" },
      "metrics-address": { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(AGENT_HELP);
    return 0;
  }
  const config = parseAgentConfig(values);
  const logger = jsonLogger(
    "agent",
    (line) => process.stderr.write(line),
    () => new Date(),
    config.logLevel,
  );
  const metrics = new AgentMetrics();
  const single = hubCommand(config.node);
  // The agent is created below; the link needs it for hello and commands, so they are wired through `agent`.
  let agent: Agent | null = null;
  const link = new HubLink({
    url: config.hubs,
    // Read again on every connection: a projected ServiceAccount token is rotated by the kubelet (hourly).
    token: () => readToken(config.tokenFile),
    ca: config.ca,
    logger,
    hello: () => agentHello(config.node, agent?.interfaces ?? [], config.cluster),
    onMessage: (m) => agent?.onHubMessage(m),
  });
  const running = new Agent({
    node: config.node,
    logger,
    link,
    scan: async () => selectCaptureInterfaces(await listInterfaces(), config.interfaces, config.excludeInterfaces),
    openSource: (iface) => new PcapSource(iface),
    maxBufferBytes: config.maxBufferBytes,
    facts: (captured, capture) => collectFacts({ node: config.node, captured, capture, logger }),
    command: (msg, send) => (msg.type === "probe-many" ? probeManyCommand(msg, send, NODE_IO) : single(msg, send)),
    metrics,
    evidence: config.evidenceBytes > 0 ? new FrameRing({ maxBytes: config.evidenceBytes, maxAgeMs: config.evidenceAgeMs }) : null,
  });
  agent = running;
  const http =
    config.metricsAddress === null
      ? null
      : await serveMetrics(config.metricsAddress, metrics, { live: () => true, ready: () => running.capturing.size > 0 });
  await running.start();
  logger.info("agent.started", { node: config.node, hub: config.hubs.join(","), version: AGENT_VERSION, metrics: config.metricsAddress });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info("agent.stopping", { signal });
      // Clean shutdown within 5 s, whatever hangs.
      const hard = setTimeout(() => process.exit(1), 5000);
      hard.unref();
      http?.close();
      void running.stop().then(resolve);
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
  return 0;
}
