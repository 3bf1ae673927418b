import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Hub } from "./hub/hub.js";

/** MAX_IP_SERIES bounds the per-IP series, whatever the size of the segment the agents see. */
const MAX_IP_SERIES = 5000;

/** HubMetrics are the hub's Prometheus series; the gauges are read from the hub at scrape time. */
export class HubMetrics {
  readonly registry = new Registry();
  readonly messages = new Counter({ name: "whohas_hub_agent_messages_total", help: "Agent messages accepted, by type.", labelNames: ["type"], registers: [this.registry] });
  readonly badMessages = new Counter({ name: "whohas_hub_agent_bad_messages_total", help: "Malformed agent messages dropped (the connection kept), by reason.", labelNames: ["reason"], registers: [this.registry] });
  readonly newIpsDropped = new Counter({ name: "whohas_hub_agent_new_ips_dropped_total", help: "Entries for IPs the hub did not track dropped because their agent passed limits.newIpsPerAgentPerMinute.", registers: [this.registry] });
  readonly rejected = new Counter({ name: "whohas_hub_agent_rejected_total", help: "Agent connections refused or closed, by reason.", labelNames: ["reason"], registers: [this.registry] });

  readonly tickSeconds = new Histogram({
    name: "whohas_hub_tick_seconds",
    help: "Time of the hub's periodic passes (each once a second): judging the IPs, writing to the store.",
    labelNames: ["pass"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: "whohas_webhook_deliveries_total",
    help: "Webhook notifications by receiver and outcome (delivered, retry, failed, gone, suppressed).",
    labelNames: ["receiver", "outcome"],
    registers: [this.registry],
  });

  constructor(hub: Hub) {
    // process_* and nodejs_* (memory, heap, event loop lag, GC): how the hub itself is doing.
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: "whohas_hub_store_pending_rows",
      help: "Per-minute rows waiting for the next write (growing means the disk is behind).",
      registers: [this.registry],
      collect() {
        this.set(hub.store.pendingRows);
      },
    });
    new Gauge({
      name: "whohas_hub_ips_tracked",
      help: "IPs held in the live view (bounded by limits.maxIps).",
      registers: [this.registry],
      collect() {
        this.set(hub.limitStatus().ips);
      },
    });
    new Counter({
      name: "whohas_hub_limit_hits_total",
      help: "IPs let go at limits.maxIps (what=ip), and times an IP's oldest MAC was summed at limits.maxMacsPerIp (what=mac).",
      labelNames: ["what"],
      registers: [this.registry],
      collect() {
        const s = hub.limitStatus();
        this.reset();
        this.inc({ what: "ip" }, s.evictedIps);
        this.inc({ what: "mac" }, s.foldedMacs);
      },
    });
    const incidents = new Gauge({
      name: "whohas_incidents_open",
      help: "Open incidents, by finding type.",
      labelNames: ["type"],
      registers: [this.registry],
      collect: () => {
        incidents.reset();
        for (const i of hub.incidents({ open: true, limit: 5000 })) incidents.inc({ type: i.type });
      },
    });
    const agents = new Gauge({
      name: "whohas_hub_agents",
      help: "Agents known to the hub, by state.",
      labelNames: ["state"],
      registers: [this.registry],
      collect: () => {
        const all = hub.agents();
        agents.set({ state: "up" }, all.filter((a) => a.up).length);
        agents.set({ state: "down" }, all.filter((a) => !a.up).length);
      },
    });
    new Gauge({
      name: "whohas_agents_connected",
      help: "Agents connected to the hub now.",
      registers: [this.registry],
      collect() {
        this.set(hub.agents().filter((a) => a.up && a.connected).length);
      },
    });
    const findings = new Gauge({
      name: "whohas_findings",
      help: "IPs with each finding present now (as last judged).",
      labelNames: ["type"],
      registers: [this.registry],
      collect: () => {
        findings.reset();
        for (const t of ["multi-responder", "wrong-owner", "silent-drop", "split-brain", "no-responder"]) findings.set({ type: t }, 0);
        for (const [type, n] of hub.findingCounts()) findings.set({ type }, n);
      },
    });
    new Gauge({
      name: "whohas_strictarp_configured",
      help: "kube-proxy's strictARP as its ConfigMap says (1 true, 0 false; absent without Kubernetes or an IPVS config).",
      registers: [this.registry],
      collect() {
        this.reset();
        const kp = hub.cluster().kubeProxy;
        if (kp !== null && kp.error === null) this.set(kp.strictARP ? 1 : 0);
      },
    });
    const arpIgnore = new Gauge({
      name: "whohas_node_arp_ignore",
      help: "Each node's effective arp_ignore (the weakest over its captured interfaces; strictARP makes it 1).",
      labelNames: ["node"],
      registers: [this.registry],
      collect: () => {
        arpIgnore.reset();
        for (const n of hub.cluster().strictArp.nodes) arpIgnore.set({ node: n.node }, n.arpIgnore);
      },
    });
    const ips = new Gauge({
      name: "whohas_hub_ips",
      help: "IPs seen, by state (multi-responder is the incident whohas exists for).",
      labelNames: ["state"],
      registers: [this.registry],
      collect: () => {
        ips.reset();
        for (const s of ["single", "multi-responder", "no-responder", "idle"]) ips.set({ state: s }, 0);
        for (const [state, n] of Object.entries(hub.stateCounts())) ips.set({ state }, n);
      },
    });
    const responders = new Gauge({
      name: "whohas_ip_responders",
      help: `MACs answering now for each LoadBalancer IP, and any other IP several MACs answer for (at most ${MAX_IP_SERIES} IPs; more than 1 means several nodes answer).`,
      labelNames: ["ip", "namespace", "service"],
      registers: [this.registry],
      collect: () => {
        responders.reset();
        for (const [ip, n, svc] of hub.answering(MAX_IP_SERIES)) responders.set({ ip, namespace: svc?.namespace ?? "", service: svc?.name ?? "" }, n);
      },
    });
  }
}
