import { createServer, type Server } from "node:http";
import { Counter, Gauge, Registry } from "prom-client";
import type { ObservationKind } from "@whohas/core";

/** EvidenceStats is what the evidence series read from the agent's frame ring. */
export interface EvidenceStats {
  readonly bytes: number;
  readonly bound: number;
  readonly frames: number;
  readonly evicted: number;
}

/** CaptureCounters is what the metrics read at scrape time: the capture path only bumps plain numbers. */
export interface CaptureCounters {
  readonly counts: Readonly<Record<string, number>>;
  readonly kinds: ReadonlyMap<ObservationKind, number>;
  /** The frame ring, null when evidence is turned off. */
  readonly evidence?: EvidenceStats | null;
  kernelStats(): unknown;
}

/** AgentMetrics are the agent's Prometheus series: counters per outcome and per IP. */
export class AgentMetrics {
  readonly registry = new Registry();
  #source: CaptureCounters | null = null;

  /** #evidenceGauge is a series read from the frame ring at scrape time (0 when evidence is off). */
  #evidenceGauge(name: string, help: string, field: keyof EvidenceStats): Gauge {
    const source = () => this.#source;
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(source()?.evidence?.[field] ?? 0);
      },
    });
  }
  readonly frames = new Counter({
    name: "whohas_agent_frames_total",
    help: "Frames classified, by kind.",
    labelNames: ["kind"],
    registers: [this.registry],
    collect: () => {
      const s = this.#source;
      if (s === null) return;
      this.frames.reset();
      for (const [kind, n] of s.kinds) this.frames.inc({ kind }, n);
    },
  });
  readonly drops = new Counter({
    name: "whohas_agent_frames_dropped_total",
    help: "Frames not analysed, by reason.",
    labelNames: ["reason"],
    registers: [this.registry],
    collect: () => {
      const s = this.#source;
      if (s === null) return;
      this.drops.reset();
      // Every reason, zeros included: a series that first appears at 1 shows no increase, and the first drops would be
      // invisible to rate().
      for (const [reason, n] of Object.entries(s.counts)) if (reason !== "observed") this.drops.inc({ reason }, n);
    },
  });
  readonly kernelDrops = new Gauge({
    name: "whohas_agent_kernel_dropped_packets",
    help: "Packets libpcap reports the kernel dropped (pcap_stats), per interface.",
    labelNames: ["interface"],
    registers: [this.registry],
    collect: () => void this.#source?.kernelStats(), // refreshes this gauge and kernelReceived
  });
  readonly kernelReceived = new Gauge({
    name: "whohas_agent_kernel_received_packets",
    help: "Packets libpcap received (pcap_stats), per interface.",
    labelNames: ["interface"],
    registers: [this.registry],
  });
  readonly hubConnected = new Gauge({
    name: "whohas_agent_hub_connected",
    help: "1 while the WebSocket to the hub is open.",
    registers: [this.registry],
  });
  readonly bufferedBytes = new Gauge({
    name: "whohas_agent_buffered_bytes",
    help: "Estimated bytes of aggregates waiting for the hub.",
    registers: [this.registry],
  });
  readonly aggregatesDropped = new Counter({
    name: "whohas_agent_aggregates_dropped_total",
    help: "Frames whose aggregate could not be kept while the hub was away.",
    registers: [this.registry],
  });
  readonly responders = new Gauge({
    name: "whohas_agent_responders",
    help: "Distinct MACs seen answering or announcing, per IP.",
    labelNames: ["ip"],
    registers: [this.registry],
  });
  readonly evidenceBytes = this.#evidenceGauge(
    "whohas_agent_evidence_bytes",
    "Bytes of raw frames (with their headers) held for evidence.",
    "bytes",
  );
  readonly evidenceBoundBytes = this.#evidenceGauge(
    "whohas_agent_evidence_bound_bytes",
    "Most bytes of raw frames held for evidence (--evidence-bytes); 0 when turned off.",
    "bound",
  );
  readonly evidenceFrames = this.#evidenceGauge("whohas_agent_evidence_frames", "Raw frames held for evidence.", "frames");
  readonly evidenceEvicted = new Counter({
    name: "whohas_agent_evidence_evicted_total",
    help: "Frames dropped from the evidence held, for room (--evidence-bytes) or age (--evidence-age).",
    registers: [this.registry],
    collect: () => {
      this.evidenceEvicted.reset();
      this.evidenceEvicted.inc(this.#source?.evidence?.evicted ?? 0);
    },
  });

  /** bind makes the series read the agent's counters at each scrape (per-frame prom-client calls cost too much). */
  bind(source: CaptureCounters): void {
    this.#source = source;
  }
}

export interface HealthState {
  /** Live: the process runs its loops. */
  live(): boolean;
  /** Ready: at least one capture is open. */
  ready(): boolean;
}

/** parseListen reads ":9472" or "127.0.0.1:9472" into host and port. */
export function parseListen(addr: string): { host: string; port: number } {
  const m = /^(.*):(\d{1,5})$/.exec(addr);
  const port = Number(m?.[2]);
  if (m === null || !(port >= 0 && port <= 65535)) throw new Error(`--metrics-address ${addr}: expected [HOST]:PORT, e.g. :9472`);
  const host = (m[1] ?? "").replace(/^\[(.*)\]$/, "$1");
  return { host: host === "" ? "0.0.0.0" : host, port };
}

/** serveMetrics exposes /metrics, /healthz and /readyz. */
export async function serveMetrics(addr: string, metrics: AgentMetrics, health: HealthState): Promise<Server> {
  const { host, port } = parseListen(addr);
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/metrics") {
      void metrics.registry.metrics().then((body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body));
      return;
    }
    if (path === "/healthz") return void res.writeHead(health.live() ? 200 : 503).end(health.live() ? "ok\n" : "not live\n");
    if (path === "/readyz") return void res.writeHead(health.ready() ? 200 : 503).end(health.ready() ? "ok\n" : "no capture open\n");
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  return server;
}
