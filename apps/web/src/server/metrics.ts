import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { DEFAULT_CLUSTER, STATES, splitIpKey } from "@whohas/core";
import type { Hub } from "./hub/hub.js";

/** GAP_BUCKETS: handover gaps in seconds, from a clean MetalLB failover (well under a second) to a long outage. */
const GAP_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60];

/** MAX_IP_SERIES bounds the per-IP series, whatever the size of the segment the agents see. */
const MAX_IP_SERIES = 5000;

/** HubMetrics are the hub's Prometheus series; the gauges are read from the hub at scrape time. */
export class HubMetrics {
  readonly registry = new Registry();
  readonly messages = new Counter({
    name: "whohas_hub_agent_messages_total",
    help: "Agent messages accepted, by type.",
    labelNames: ["type"],
    registers: [this.registry],
  });
  readonly badMessages = new Counter({
    name: "whohas_hub_agent_bad_messages_total",
    help: "Malformed agent messages dropped (the connection kept), by reason.",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  readonly newIpsDropped = new Counter({
    name: "whohas_hub_agent_new_ips_dropped_total",
    help: "Entries for IPs the hub did not track dropped because their agent passed limits.newIpsPerAgentPerMinute.",
    registers: [this.registry],
  });
  readonly rejected = new Counter({
    name: "whohas_hub_agent_rejected_total",
    help: "Agent connections refused or closed, by reason.",
    labelNames: ["reason"],
    registers: [this.registry],
  });

  readonly tickSeconds = new Histogram({
    name: "whohas_hub_tick_seconds",
    help: "Time of the hub's periodic passes (each once a second): judging the IPs, writing to the store.",
    labelNames: ["pass"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });

  readonly flushesAsked = new Counter({
    name: "whohas_hub_agent_flushes_asked_total",
    help: "Times an agent was asked to send what it held at once: another node's report brought news of an IP (a MAC answering it anew) that its reports complete. At most 50 a second per agent.",
    registers: [this.registry],
  });

  readonly agentFlushSeconds = new Gauge({
    name: "whohas_hub_agent_flush_interval_seconds",
    help: "How often the hub has its agents send what they aggregated (news goes at once): 0.1 s up to limits.agentMessagesPerSecond / 10 agents, slower past it, at most 0.5 s.",
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: "whohas_webhook_deliveries_total",
    help: "Webhook notifications by receiver and outcome (delivered, retry, failed, gone, suppressed).",
    labelNames: ["receiver", "outcome"],
    registers: [this.registry],
  });

  readonly backgroundProbes = new Counter({
    name: "whohas_background_probes_total",
    help: "The hub's background probes of LoadBalancer IPs (one request each, from one node), by outcome: answered, unanswered, failed (the node could not reach the IP's network, or its agent did not answer).",
    labelNames: ["outcome"],
    registers: [this.registry],
  });

  readonly handoverGaps = new Histogram({
    name: "whohas_handover_gap_seconds",
    help: "Handovers (the answers moving from one node to another with no request answered by both), by their gap: from the old owner's last reply to the new owner's first answer.",
    buckets: GAP_BUCKETS,
    registers: [this.registry],
  });

  /** The walk over every IP that the scrape under way shares between its per-IP series, null between scrapes. */
  #scan: IpScan | null = null;
  #scrapes = 0;

  /** text is one scrape: every series, the per-IP ones from one walk over the IPs. */
  async text(): Promise<string> {
    this.#scrapes++;
    try {
      return await this.registry.metrics();
    } finally {
      if (--this.#scrapes === 0) this.#scan = null;
    }
  }

  #ipScan(hub: Hub): IpScan {
    if (this.#scrapes === 0) return scanIps(hub);
    return (this.#scan ??= scanIps(hub));
  }

  constructor(hub: Hub) {
    // In a fleet every series says its cluster; a single cluster's keep the labels they always had.
    if (hub.clusterName !== DEFAULT_CLUSTER) this.registry.setDefaultLabels({ cluster: hub.clusterName });
    // process_* and nodejs_* (memory, heap, event loop lag, GC): how the hub itself is doing.
    collectDefaultMetrics({ register: this.registry });
    hub.judging.onHandover((_ip, h) => this.handoverGaps.observe(h.gapMs / 1000));
    // A replica on standby serves this gauge at 0 (ha/standby.ts): the sum over replicas is how many lead.
    new Gauge({ name: "whohas_hub_leader", help: "1 on the replica that leads, 0 on a standby.", registers: [this.registry] }).set(1);
    new Gauge({
      name: "whohas_hub_store_pending_rows",
      help: "Per-minute rows waiting for the next write (growing means the disk is behind).",
      registers: [this.registry],
      collect() {
        this.set(hub.store.traffic.pendingRows);
      },
    });
    new Counter({
      name: "whohas_hub_late_request_reports_total",
      help: "Agents' reports of a request that reached the hub 2 s or more after it, when the request was already judged in order without them (counted as asked, not as a miss): a busy hub, agent clocks behind the hub's, or a slow link.",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(hub.traffic.judge.lateSightings);
      },
    });
    new Gauge({
      name: "whohas_hub_ips_tracked",
      help: "IPs held in the live view (bounded by limits.maxIps).",
      registers: [this.registry],
      collect() {
        this.set(hub.traffic.limitStatus().ips);
      },
    });
    new Gauge({
      name: "whohas_hub_ip_limit",
      help: "The most IPs the live view holds now: limits.maxIps, or fewer after the V8 heap came near its bound (LoadBalancer IPs and IPs with an open incident stay even past it).",
      registers: [this.registry],
      collect() {
        this.set(hub.traffic.limitStatus().ipLimit);
      },
    });
    new Counter({
      name: "whohas_hub_limit_hits_total",
      help: "IPs let go at the IP limit (what=ip: limits.maxIps, or less set by memory), and times an IP's oldest MAC was summed at limits.maxMacsPerIp (what=mac).",
      labelNames: ["what"],
      registers: [this.registry],
      collect() {
        const s = hub.traffic.limitStatus();
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
      collect: async () => {
        // As every incident change judged so far left it, like the incident lists. A store out of reach keeps the
        // last values (whohas_hub_store_* and the log say why) rather than failing the whole scrape.
        await hub.judging.settled();
        const open = await hub.store.incidents.openByType().catch(() => null);
        if (open === null) return;
        incidents.reset();
        for (const [type, n] of open) incidents.set({ type }, n);
      },
    });
    const agents = new Gauge({
      name: "whohas_hub_agents",
      help: "Agents known to the hub, by state.",
      labelNames: ["state"],
      registers: [this.registry],
      collect: () => {
        const all = hub.agents.list();
        agents.set({ state: "up" }, all.filter((a) => a.up).length);
        agents.set({ state: "down" }, all.filter((a) => !a.up).length);
      },
    });
    new Gauge({
      name: "whohas_agents_connected",
      help: "Agents connected to the hub now.",
      registers: [this.registry],
      collect() {
        this.set(hub.agents.list().filter((a) => a.up && a.connected).length);
      },
    });
    const findings = new Gauge({
      name: "whohas_findings",
      help: "IPs with each finding present now (as last judged).",
      labelNames: ["type"],
      registers: [this.registry],
      collect: () => {
        findings.reset();
        for (const t of ["multi-responder", "wrong-owner", "wrong-interface", "silent-drop", "split-brain", "no-responder"])
          findings.set({ type: t }, 0);
        for (const [type, n] of hub.judging.present()) findings.set({ type }, n);
      },
    });
    new Gauge({
      name: "whohas_strictarp_configured",
      help: "kube-proxy's strictARP as its ConfigMap says (1 true, 0 false; absent without Kubernetes or an IPVS config).",
      registers: [this.registry],
      collect() {
        this.reset();
        const kp = hub.cluster.view().kubeProxy;
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
        for (const n of hub.cluster.view().strictArp.nodes) arpIgnore.set({ node: n.node }, n.arpIgnore);
      },
    });
    const ips = new Gauge({
      name: "whohas_hub_ips",
      help: "IPs seen, by state as each IP's latest judgement gave it (multi-responder is the incident whohas exists for).",
      labelNames: ["state"],
      registers: [this.registry],
      collect: () => {
        ips.reset();
        for (const s of ["single", "multi-responder", "no-responder", "idle"]) ips.set({ state: s }, 0);
        for (const [state, n] of this.#ipScan(hub).states) ips.set({ state }, n);
      },
    });
    const responders = new Gauge({
      name: "whohas_ip_responders",
      help: `MACs answering now for each LoadBalancer IP, and any other IP several MACs answer for (at most ${MAX_IP_SERIES} IPs; more than 1 means several nodes answer).`,
      labelNames: ["ip", "vlan", "namespace", "service"],
      registers: [this.registry],
      collect: () => {
        responders.reset();
        for (const [key, n, svc] of this.#ipScan(hub).answering) {
          const { ip, vlan } = splitIpKey(key);
          responders.set({ ip, vlan: vlan === null ? "" : String(vlan), namespace: svc?.namespace ?? "", service: svc?.name ?? "" }, n);
        }
      },
    });
    const changes = new Counter({
      name: "whohas_first_answer_changes_total",
      help:
        "Times an asker's request was first answered by another node than its previous one, for each LoadBalancer IP and " +
        `any other IP it happened to (at most ${MAX_IP_SERIES} IPs): each is a router, firewall or client re-learning the ` +
        "IP's MAC from another node and its connections through the old one dropping. Starts over when the hub does, or lets go of the IP.",
      labelNames: ["ip", "vlan", "namespace", "service"],
      registers: [this.registry],
      collect: () => {
        changes.reset();
        for (const [key, n, svc] of this.#ipScan(hub).changes) {
          const { ip, vlan } = splitIpKey(key);
          changes.inc({ ip, vlan: vlan === null ? "" : String(vlan), namespace: svc?.namespace ?? "", service: svc?.name ?? "" }, n);
        }
      },
    });
  }
}

/** An IpSeries is one IP's value in a per-IP series, with the Service it belongs to (if any). */
type IpSeries = [string, number, { readonly namespace: string; readonly name: string } | null];

/** An IpScan is what one walk over every IP gives the per-IP series. */
interface IpScan {
  /** IPs by state, as each IP's latest judgement gave it. */
  readonly states: Map<string, number>;
  /**
   * How many MACs answer now for each LoadBalancer IP of the cluster and each IP with several answering (in
   * traffic-only mode, any IP with one or more): at most MAX_IP_SERIES of them, so that a segment with thousands of
   * hosts does not explode a metric's label set.
   */
  readonly answering: IpSeries[];
  /** The first-answer changes counted for each LoadBalancer IP (zero included) and each other IP with any: as bounded. */
  readonly changes: IpSeries[];
}

/**
 * scanIps walks every IP once for the three per-IP series. The states are read from the judging rounds (at most a
 * round old): working each IP's state out again on every scrape cost more than the rounds themselves. An IP not
 * judged yet is worked out.
 */
function scanIps(hub: Hub): IpScan {
  const now = hub.clock();
  const { judge } = hub.traffic;
  const lb = hub.cluster.inventory();
  const several = hub.cluster.connected ? 2 : 1;
  const states = new Map<string, number>();
  const answering: IpSeries[] = [];
  const changes: IpSeries[] = [];
  // As the latest judgement counted them, else worked out.
  const count = (ip: string, k = hub.judging.lastKey(ip)) => k?.macs.length ?? judge.answeringCount(ip, now);
  for (const [ip, inv] of lb) {
    answering.push([ip, count(ip), inv.services[0] ?? null]);
    changes.push([ip, judge.firstAnswerChanges(ip), inv.services[0] ?? null]);
  }
  for (const ip of judge.counts.ips()) {
    const k = hub.judging.lastKey(ip);
    const state = k === undefined ? judge.stateOf(ip, now) : STATES[k.state];
    states.set(state, (states.get(state) ?? 0) + 1);
    const roomA = answering.length < MAX_IP_SERIES;
    const roomC = changes.length < MAX_IP_SERIES;
    if ((!roomA && !roomC) || lb.has(ip)) continue;
    // A LoadBalancer IP seen inside a VLAN: its Service's series, labelled with the VLAN.
    const inv = lb.get(splitIpKey(ip).ip);
    const svc = inv?.services[0] ?? null;
    if (roomA) {
      const n = count(ip, k);
      if (inv !== undefined || n >= several) answering.push([ip, n, svc]);
    }
    if (roomC) {
      const n = judge.firstAnswerChanges(ip);
      if (n > 0 || inv !== undefined) changes.push([ip, n, svc]);
    }
  }
  return { states, answering: answering.slice(0, MAX_IP_SERIES), changes: changes.slice(0, MAX_IP_SERIES) };
}
