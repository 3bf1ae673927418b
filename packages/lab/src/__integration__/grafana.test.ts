import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import WebSocket from "ws";
import { parse as parseYaml } from "yaml";
import { INJECT, REPO_ROOT } from "../hub-process.js";
import { dashboardQueries, parseExposition, promqlRefs, unexported, type DashboardQuery } from "../metric-refs.js";
import { unixWsUrl } from "../naming.js";
import { inNs } from "../sh.js";
import { startStack, type Stack } from "../stack.js";
import { eventually } from "./hub-client.js";
import { notifying, webhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

const exec = promisify(execFile);

const MONITORING = join(REPO_ROOT, "deploy/overlays/monitoring");
const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, "deploy/monitoring/whohas-dashboard.json"), "utf8")) as unknown;
/** The fields of the monitoring overlay's manifests read here. */
interface RuleFile {
  readonly spec: { readonly groups: readonly { readonly rules: readonly { readonly alert: string; readonly expr: string }[] }[] };
}
interface MonitorFile {
  readonly spec: Readonly<Record<string, readonly { readonly relabelings?: readonly { readonly targetLabel?: string }[] }[]>>;
}
const ruleQueries: DashboardQuery[] = (
  parseYaml(readFileSync(join(MONITORING, "prometheusrule.yaml"), "utf8")) as RuleFile
).spec.groups.flatMap((g) => g.rules.map((r) => ({ where: `rule ${r.alert}`, expr: r.expr })));

/**
 * The labels the Prometheus Operator puts on every series of a target it scrapes (kubernetes_sd with its own
 * relabelling): a ServiceMonitor's targets also get `service`; a PodMonitor's none more.
 */
const OPERATOR_LABELS = ["job", "instance", "namespace", "pod", "container", "endpoint"];
/** relabelled names the target labels a ServiceMonitor endpoint's or PodMonitor endpoint's relabelings add. */
function relabelled(file: string, endpoints: string): string[] {
  const spec = (parseYaml(readFileSync(join(MONITORING, file), "utf8")) as MonitorFile).spec;
  return (spec[endpoints] ?? []).flatMap((e) => (e.relabelings ?? []).flatMap((r) => (r.targetLabel === undefined ? [] : [r.targetLabel])));
}
const HUB_TARGET_LABELS = [...OPERATOR_LABELS, "service", ...relabelled("servicemonitor.yaml", "endpoints")];
const AGENT_TARGET_LABELS = [...OPERATOR_LABELS, ...relabelled("podmonitor.yaml", "podMetricsEndpoints")];

/** scrape reads one component's /metrics into its sample names, each with its labels plus its target's. */
function scrape(text: string, targetLabels: readonly string[], into: Map<string, Set<string>>): void {
  for (const [name, labels] of parseExposition(text)) {
    const all = into.get(name) ?? new Set<string>();
    for (const l of [...labels, ...targetLabels]) all.add(l);
    into.set(name, all);
  }
}

/**
 * A frame every agent drops (reason malformed): Ethernet/IPv4 ARP with an IPv6-sized protocol length, long enough
 * that no padding could make it valid.
 */
function malformedArp(srcMac: string): string {
  const mac = srcMac.replaceAll(":", "");
  return `ffffffffffff${mac}0806` + "000108000610" + "0001" + "00".repeat(2 * 6 + 2 * 16);
}

// The dashboard, and the alert rules, may read only series that whohas really exports: a lab with traffic of each
// kind the panels show (several responders, webhooks, background probes, refused and malformed agent messages,
// malformed frames), the hub's /metrics and every agent's scraped, and every query's metrics and labels looked up.
describe("the Grafana dashboard reads series the hub and the agents export", () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  let delivered = 0;

  beforeAll(async () => {
    receiver = await webhookReceiver(() => {
      delivered++;
      return 200;
    });
    stack = await startStack({
      nodes: 3,
      vips: 2,
      kube: true,
      requestIntervalMs: 500,
      backgroundProbe: "5s",
      hubConfig: notifying(receiver, "ops"),
    });
  });
  afterAll(async () => {
    await stack.stop();
    receiver.close();
  });

  /** agentMetrics reads one node's agent's /metrics inside its namespace (the agents listen on :9472 there). */
  const agentMetrics = (ns: string) =>
    inNs(ns, process.execPath, "-e", `fetch("http://127.0.0.1:9472/metrics").then(async r => process.stdout.write(await r.text()))`);

  it("every metric and label of every panel, variable and alert rule is on a series some component exports", async () => {
    // An agent with a wrong token is refused. With the right token, in place of a node's agent (stopped: the hub
    // refuses a second connection for a node), a binary frame is dropped as a bad message; then the agent is back.
    await new Promise<void>((resolve) => {
      const ws = new WebSocket(unixWsUrl(stack.lab.names.hubSocket, "/agent"), { headers: { authorization: "Bearer not-the-token" } });
      ws.once("unexpected-response", () => resolve());
      ws.once("error", () => undefined);
    });
    const connected = async () => Number(/^whohas_agents_connected (\d+)$/m.exec(await (await fetch(stack.metricsUrl)).text())?.[1]);
    await eventually(connected, (n) => n === 3, 20_000);
    const node = stack.lab.nodes[2]?.name ?? "";
    await stack.stopAgent(node);
    await eventually(connected, (n) => n === 2, 20_000);
    await new Promise<void>((resolve) => {
      const ws = new WebSocket(unixWsUrl(stack.lab.names.hubSocket, "/agent"), { headers: { authorization: `Bearer ${stack.token}` } });
      ws.once("open", () => ws.send(JSON.stringify({ v: 2, type: "hello", node, agentVersion: "test", interfaces: [] })));
      ws.on("message", (data: Buffer) => {
        if ((JSON.parse(data.toString()) as { type: string }).type === "welcome")
          ws.send(Buffer.from([0xde, 0xad]), { binary: true }, () => ws.close());
      });
      ws.once("close", () => resolve());
      ws.once("unexpected-response", (_req, res) => {
        throw new Error(`the hub refused the agent token: HTTP ${res.statusCode ?? 0}`);
      });
      ws.once("error", () => undefined);
    });
    stack.startAgent(node);
    await eventually(connected, (n) => n === 3, 20_000);
    // Every agent captures before the frame goes out (the restarted one opens its capture and its /metrics anew).
    await eventually(
      () => Promise.all(stack.lab.nodes.map((n) => agentMetrics(n.ns).catch(() => ""))),
      (texts) => texts.every((t) => /^whohas_agent_kernel_received_packets\{interface="eth0"\} [1-9]/m.test(t)),
      20_000,
    );
    await exec("ip", ["netns", "exec", stack.lab.client.ns, process.execPath, INJECT, "eth0", malformedArp(stack.lab.client.mac)]);

    // Everything that traffic makes, counted: the webhook of the several responders delivered, a background probe
    // done, the refusal and the bad message counted, and each agent's malformed frame. The hub exports every
    // receiver's outcomes from zero at its start, so a series being there says nothing: each must have counted one.
    const hubText = await eventually(
      async () => (await fetch(stack.metricsUrl)).text(),
      (t) =>
        /^whohas_agents_connected 3$/m.test(t) &&
        [
          'whohas_webhook_deliveries_total\\{receiver="ops",outcome="delivered"\\}',
          "whohas_background_probes_total\\{[^}]*\\}",
          "whohas_hub_agent_rejected_total\\{[^}]*\\}",
          "whohas_hub_agent_bad_messages_total\\{[^}]*\\}",
        ].every((m) => new RegExp(`^${m} [1-9]`, "m").test(t)),
      45_000,
    );
    expect(delivered).toBeGreaterThan(0);
    const agentTexts = await eventually(
      () => Promise.all(stack.lab.nodes.map((n) => agentMetrics(n.ns))),
      (texts) => texts.every((t) => /^whohas_agent_frames_dropped_total\{reason="malformed"\} [1-9]/m.test(t)),
      20_000,
    );

    const exported = new Map<string, Set<string>>();
    scrape(hubText, HUB_TARGET_LABELS, exported);
    for (const t of agentTexts) scrape(t, AGENT_TARGET_LABELS, exported);

    const queries = [...dashboardQueries(dashboard), ...ruleQueries];
    const problems = queries.flatMap((q) => unexported(q.expr, exported).map((p) => `${q.where}: ${p} (${q.expr})`));
    expect(problems).toEqual([]);

    // Not vacuous: the dashboard reads the series of each thing it shows, and the hub's and the agents' both.
    const used = new Set(queries.flatMap((q) => promqlRefs(q.expr).selectors.map((s) => s.metric)));
    for (const m of [
      "whohas_hub_ips",
      "whohas_ip_responders",
      "whohas_handover_gap_seconds_bucket",
      "whohas_incidents_open",
      "whohas_hub_agents",
      "whohas_agent_kernel_dropped_packets",
      "whohas_agent_frames_dropped_total",
      "whohas_webhook_deliveries_total",
      "whohas_hub_agent_messages_total",
      "whohas_hub_tick_seconds_bucket",
    ])
      expect(used).toContain(m);
    // The made-up name a careless edit could bring is caught against these very scrapes.
    expect(unexported("sum(rate(whohas_hub_frames_total[$__rate_interval]))", exported)).toEqual(["metric whohas_hub_frames_total"]);
  });
});
