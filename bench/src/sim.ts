// Simulated agents and process figures shared by the hub and dashboard benchmarks.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WebSocket } from "ws";
import { HUB_BIN, freePort, observationsMessage } from "@whohas/lab";

export const TICKS = 100; // USER_HZ
export const TOKEN = "bench-agent-token-0123456789abcdef";
export const VIEWER = "bench-viewer-token-0123456789abcdef";

export function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return Number(f[11]) + Number(f[12]);
}
export function rssMb(pid: number, key: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? 0) / 1024;
}
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hex2 = (n: number) => (n & 255).toString(16).padStart(2, "0");

/**
 * simIp is the `i`th IP of segment `segment`: up to 512 per segment, distinct across up to 32,768 segments (200 x 300
 * = 60,000 IPs in the hub's table; 5,000 nodes alone on their segments x 60 = 300,000), all in 10.0.0.0/8.
 */
export function simIp(segment: number, i: number): string {
  const n = segment * 512 + i;
  return `10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * SimAgent is one node's agent as the hub sees it: hello, facts-free, observations every 100 ms. Nodes are placed on
 * L2 segments of `segmentSize` nodes: the nodes of a segment see the same IPs, every one of them each client request
 * (a broadcast), and one of them answers each IP (MetalLB's elected node). Alone on its segment (1), a node sees
 * IPs of its own, which no other node sees: the most IPs for the hub to hold.
 */
export class SimAgent {
  readonly ws: WebSocket;
  readonly mac: string;
  readonly ips: string[];
  sent = 0;
  entries = 0;
  /** Request reports sent (each one request as this node saw it). */
  reports = 0;
  /** How often it sends: every 100 ms (FLUSH_MS) until the hub sets its pace. */
  flushMs = 100;
  #cursor = 0;
  /** Its place on its segment: the IPs it answers are those whose index modulo the segment's size is this. */
  readonly #position: number;

  constructor(
    url: string,
    readonly index: number,
    ipsPerAgent: number,
    readonly segmentSize = 1,
  ) {
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` }, perMessageDeflate: false });
    this.mac = `02:00:5e:10:${hex2(index >> 8)}:${hex2(index)}`;
    const segment = Math.floor(index / segmentSize);
    this.#position = index % segmentSize;
    this.ips = Array.from({ length: ipsPerAgent }, (_, i) => simIp(segment, i));
  }

  async open(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.ws.once("open", resolve);
      this.ws.once("error", reject);
    });
    this.ws.send(
      JSON.stringify({
        v: 2,
        type: "hello",
        node: `sim-${this.index}`,
        agentVersion: "bench",
        interfaces: [{ name: "eth0", mac: this.mac, up: true }],
        pace: true,
      }),
    );
    this.ws.on("message", (d: Buffer) => {
      const text = d.toString();
      if (!text.includes('"pace"')) return;
      const m = JSON.parse(text) as { type?: string; flushMs?: number };
      if (m.type === "pace" && typeof m.flushMs === "number") this.flushMs = m.flushMs;
    });
  }

  /** reply sends one reply from this node for `ip`, at `now`. */
  reply(ip: string, now: number): void {
    this.ws.send(
      `{"v":2,"type":"observations","dropped":0,"entries":[{"ip":"${ip}","mac":"${this.mac}","kind":"reply","iface":"eth0","count":1,"firstSeen":${now},"lastSeen":${now},"targetMac":null,"ethernetMismatch":0,"ethSrc":null}],"requests":[]}`,
    );
    this.sent++;
    this.entries++;
  }

  /** cursor: how many aggregates' positions it has sent (requests and replies, in turn). */
  get cursor(): number {
    return this.#cursor;
  }

  /**
   * batch sends up to `n` aggregates: a client's request for each IP in turn, round-robin, and this node's reply when
   * it answers the IP, with the request report an agent sends for each request it saw (its reply 0.3 ms after the
   * request). On a segment of several nodes the request at a position was on the wire at `askedAt(position)`, the
   * same for every node of the segment (they send in turn, as real agents do, but saw the broadcast at once).
   */
  batch(n: number, now: number, askedAt: (cursor: number) => number = () => now): void {
    const size = this.segmentSize;
    const place = { answers: (i: number) => i % size === this.#position, askedAt: size === 1 ? () => now : askedAt };
    const { text, entries, reports } = observationsMessage(this.ips, this.mac, this.#cursor, n, now, place);
    this.ws.send(text);
    this.#cursor += n;
    this.sent++;
    this.entries += entries;
    this.reports += reports;
  }
}

/** MAX_IPS: the benchmark hub's limits.maxIps, past its 300,000 IPs at 5,000 agents. */
export const MAX_IPS = 400_000;

/** A RunningHub is `whohas-hub --config` started for a benchmark, measured through its server process. */
export interface RunningHub {
  readonly base: string;
  readonly port: number;
  /** The hub's /metrics, on its own port (metrics.listen). */
  readonly metrics: string;
  /** The server process (child of the whohas-hub launcher) and the launcher. */
  readonly pid: number;
  readonly wrapper: number;
  stop(): Promise<void>;
}

/** startHub writes a traffic-only config into `dir` and starts the production hub on a free port (on PostgreSQL at `storageUrl` when given). */
export async function startHub(dir: string, storageUrl: string | null = null): Promise<RunningHub> {
  const port = await freePort();
  const metricsPort = await freePort();
  writeFileSync(join(dir, "agent-token"), TOKEN);
  writeFileSync(join(dir, "viewer-token"), VIEWER);
  writeFileSync(
    join(dir, "hub.yaml"),
    `listen: "127.0.0.1:${port}"\nmetrics: { listen: "127.0.0.1:${metricsPort}" }\nstorage: { path: ${dir}/whohas.db, ${storageUrl === null ? "" : `url: "${storageUrl}", `}retention: 1d }\nagents: { tokenFile: ${dir}/agent-token }\napi: { viewerTokenFile: ${dir}/viewer-token }\nkubernetes: { enabled: false }\nlog: { level: warn }\n` +
      // The benchmark brings its whole table (60,000 IPs) in the warm-up's first seconds, as no real network does:
      // the budget for new IPs is opened for it, so that it measures steady traffic. Its agents all connect from
      // 127.0.0.1, where a cluster's come from a Pod address each; and 5,000 agents of 60 IPs each are 300,000 IPs.
      `limits: { newIpsPerMinute: 10000000, connectionsPerAddress: 20000, maxIps: ${MAX_IPS} }\n`,
  );
  const hub = spawn(process.execPath, [HUB_BIN, "--config", join(dir, "hub.yaml")], { stdio: ["ignore", "ignore", "inherit"] });
  // A benchmark that dies on an error must not leave its hub running (and loading the machine for the next run):
  // the wrapper's end takes the hub with it.
  process.once("exit", () => hub.kill("SIGKILL"));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 150 || hub.exitCode !== null) throw new Error("the hub did not start");
    await sleep(200);
  }
  // bin/whohas-hub.js starts the hub as its child with a bounded heap: measure that child, and count the parent.
  const wrapper = hub.pid ?? 0;
  const pid = Number(readFileSync(`/proc/${wrapper}/task/${wrapper}/children`, "utf8").trim().split(" ")[0] ?? wrapper) || wrapper;
  return {
    base,
    port,
    metrics: `http://127.0.0.1:${metricsPort}/metrics`,
    pid,
    wrapper,
    stop: async () => {
      if (hub.exitCode !== null) return;
      const exited = new Promise((r) => hub.once("exit", r));
      hub.kill("SIGTERM");
      await exited;
    },
  };
}
