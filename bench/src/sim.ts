// Simulated agents and process figures shared by the hub and dashboard benchmarks.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WebSocket } from "ws";
import { HUB_BIN, freePort, observationsJson } from "@whohas/lab";

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
 * simIp is the `i`th IP of agent `index`: up to 512 per agent, distinct across up to 32,768 agents (200 x 300 =
 * 60,000 IPs in the hub's table; 5,000 x 60 = 300,000), all in 10.0.0.0/8.
 */
export function simIp(index: number, i: number): string {
  const n = index * 512 + i;
  return `10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`;
}

/** SimAgent is one node's agent as the hub sees it: hello, facts-free, observations every 100 ms. */
export class SimAgent {
  readonly ws: WebSocket;
  readonly mac: string;
  readonly ips: string[];
  sent = 0;
  entries = 0;
  #cursor = 0;

  constructor(
    url: string,
    readonly index: number,
    ipsPerAgent: number,
  ) {
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` }, perMessageDeflate: false });
    this.mac = `02:00:5e:10:${hex2(index >> 8)}:${hex2(index)}`;
    this.ips = Array.from({ length: ipsPerAgent }, (_, i) => simIp(index, i));
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
      }),
    );
    this.ws.on("message", () => undefined);
  }

  /** reply sends one reply from this node for `ip`, at `now`. */
  reply(ip: string, now: number): void {
    this.ws.send(
      `{"v":2,"type":"observations","dropped":0,"entries":[{"ip":"${ip}","mac":"${this.mac}","kind":"reply","iface":"eth0","count":1,"firstSeen":${now},"lastSeen":${now},"targetMac":null,"ethernetMismatch":0,"ethSrc":null}],"requests":[]}`,
    );
    this.sent++;
    this.entries++;
  }

  /**
   * batch sends `n` aggregates: a client's request and this node's reply for each IP in turn, round-robin, with the
   * request report an agent sends for each request it saw answered (this node's reply 0.3 ms after the request).
   */
  batch(n: number, now: number): void {
    this.ws.send(observationsJson(this.ips, this.mac, this.#cursor, n, now));
    this.#cursor += n;
    this.sent++;
    this.entries += n;
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

/** startHub writes a traffic-only config into `dir` and starts the production hub on a free port. */
export async function startHub(dir: string): Promise<RunningHub> {
  const port = await freePort();
  const metricsPort = await freePort();
  writeFileSync(join(dir, "agent-token"), TOKEN);
  writeFileSync(join(dir, "viewer-token"), VIEWER);
  writeFileSync(
    join(dir, "hub.yaml"),
    `listen: "127.0.0.1:${port}"\nmetrics: { listen: "127.0.0.1:${metricsPort}" }\nstorage: { path: ${dir}/whohas.db, retention: 1d }\nagents: { tokenFile: ${dir}/agent-token }\napi: { viewerTokenFile: ${dir}/viewer-token }\nkubernetes: { enabled: false }\nlog: { level: warn }\n` +
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
