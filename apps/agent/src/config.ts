import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { z } from "zod";
import { CLUSTER_NAME_HELP, isClusterName, isNodeName, type LogLevel } from "@whohas/core";
import { DEFAULT_EXCLUDE } from "./capture/interfaces.js";
import { parseDuration } from "./commands.js";

/** AgentConfig is everything `whohas agent` runs on, parsed once from flags and environment. */
export interface AgentConfig {
  /** The hub's agent endpoints: one, or each replica's (every reconnect tries the next). */
  readonly hubs: readonly string[];
  readonly node: string;
  /** The cluster this node belongs to (--cluster): a hub of another cluster refuses the agent. Null: none named. */
  readonly cluster: string | null;
  readonly interfaces: RegExp;
  readonly excludeInterfaces: RegExp | null;
  /** The token as read at start (checked there), and its file, read again on each connection. */
  readonly token: string;
  readonly tokenFile: string;
  /** PEM of the CA that signed the hub's certificate (wss://), null: the system's CAs. */
  readonly ca: string | null;
  readonly maxBufferBytes: number;
  /** Bound of the recent raw frames kept for evidence, in bytes (0: none kept) and in age. */
  readonly evidenceBytes: number;
  readonly evidenceAgeMs: number;
  readonly metricsAddress: string | null;
  readonly logLevel: LogLevel;
}

export const AGENT_HELP = `Usage: whohas agent --hub URL --token-file FILE [options]

Captures ARP and NDP on this node with libpcap and streams who answers for which IP to the whohas hub; reports
the node's ARP sysctls and kube-ipvs0; runs probes and re-announcements the hub asks for (a probe of many IPs asks
up to 512 at once on one capture, one request per IP a second, spread over the second).
Needs root, or CAP_NET_RAW and CAP_NET_ADMIN.

Options:
  --hub URL[,URL...]        hub agent endpoint: ws://HOST:PORT/agent, wss://..., or ws+unix:///PATH.sock:/agent;
                            with hub replicas, one Service's address or each replica's, comma-separated (on a
                            lost or refused connection the next is tried: a standby refuses, the leader takes)
  --token-file FILE         file holding the bearer token: the hub's shared agent token, or a projected
                            ServiceAccount token with audience whohas (read again on each connection)
  --ca-file FILE            CA certificate (PEM) the hub's wss:// certificate must chain to (default: system CAs);
                            the certificate is always verified
  --node NAME               this node's name (default: $NODE_NAME from the downward API, else the hostname)
  --cluster NAME            the cluster this node belongs to, when one hub per cluster reports to a shared
                            database (a fleet): the hub of another cluster refuses the agent (default:
                            $WHOHAS_CLUSTER, else none: any hub takes it)
  --interfaces REGEX        capture only on interfaces matching REGEX (default: all)
  --exclude-interfaces REGEX
                            never capture on these (default: MetalLB's list, ^veth.* ^docker.* ^kube-ipvs.* ...)
                            pass '' to exclude nothing
  --max-buffer-bytes SIZE   what is kept while the hub is unreachable, merged per (IP, MAC, kind); 16MiB default
  --evidence-bytes SIZE     recent ARP/NDP frames kept for an incident's evidence (pcapng from the hub);
                            4MiB default, 0 keeps none
  --evidence-age DURATION   how long a frame is kept for evidence at most (default 10m)
  --metrics-address ADDR    Prometheus /metrics, /healthz and /readyz (default :9472; '' turns it off)
  --log-level LEVEL         info, warn or error (default info); logs are JSON lines on stderr
  -h, --help                this text
`;

/** readToken reads a bearer token file; throws a message naming --token-file when it cannot be read or is empty. */
export function readToken(path: string): string {
  let token: string;
  try {
    token = readFileSync(path, "utf8").trim();
  } catch (e) {
    throw new Error(`--token-file: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (token === "") throw new Error(`--token-file: ${path} is empty`);
  return token;
}

/** parseSize reads "16MiB", "512KiB", "1M", "1048576" as bytes. */
export function parseSize(s: string): number {
  const m = /^(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i.exec(s.trim());
  if (m === null) throw new Error(`not a size: ${JSON.stringify(s)} (try 16MiB)`);
  const unit = (m[2] ?? "b").toLowerCase()[0];
  const mult = unit === "k" ? 1024 : unit === "m" ? 1024 ** 2 : unit === "g" ? 1024 ** 3 : 1;
  return Number(m[1]) * mult;
}

const Schema = z.object({
  hub: z
    .string()
    .refine(
      (v) => v.split(",").every((u) => /^(wss?|ws\+unix):\/\//.test(u.trim())),
      "--hub must start with ws://, wss:// or ws+unix:// (several addresses: comma-separated, each so)",
    ),
  "token-file": z.string().min(1, "--token-file is required"),
  "ca-file": z.string().min(1).optional(),
  node: z.string().optional(),
  cluster: z.string().optional(),
  interfaces: z.string().default(".*"),
  "exclude-interfaces": z.string().default(DEFAULT_EXCLUDE),
  "max-buffer-bytes": z.string().default("16MiB"),
  "evidence-bytes": z.string().default("4MiB"),
  "evidence-age": z.string().default("10m"),
  "metrics-address": z.string().default(":9472"),
  "log-level": z.enum(["info", "warn", "error"]).default("info"),
});

function regex(flag: string, src: string): RegExp {
  try {
    return new RegExp(src);
  } catch (e) {
    throw new Error(`${flag}: not a regular expression: ${(e as Error).message}`);
  }
}

/** MAX_EVIDENCE_BYTES bounds --evidence-bytes: the ring is allocated whole at start. */
const MAX_EVIDENCE_BYTES = 1024 ** 3;

/** flagValue runs a flag's parser and names the flag in what it throws. */
function flagValue<T>(flag: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    throw new Error(`${flag}: ${(e as Error).message}`);
  }
}

/** parseAgentConfig turns parsed flags into an AgentConfig or throws an Error whose message names the flag. */
export function parseAgentConfig(flags: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const r = Schema.safeParse(flags);
  if (!r.success) {
    const i = r.error.issues[0];
    const path = i?.path.join(".") ?? "";
    throw new Error(i?.message.startsWith("--") ? i.message : `--${path}: ${i?.message ?? "invalid"}`);
  }
  const f = r.data;
  const token = readToken(f["token-file"]);
  let ca: string | null = null;
  if (f["ca-file"] !== undefined) {
    try {
      ca = readFileSync(f["ca-file"], "utf8");
    } catch (e) {
      throw new Error(`--ca-file: cannot read ${f["ca-file"]}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    if (!ca.includes("-----BEGIN CERTIFICATE-----")) throw new Error(`--ca-file: ${f["ca-file"]} holds no PEM certificate`);
  }
  const maxBufferBytes = flagValue("--max-buffer-bytes", () => parseSize(f["max-buffer-bytes"]));
  const evidenceBytes = flagValue("--evidence-bytes", () => parseSize(f["evidence-bytes"]));
  const evidenceAgeMs = flagValue("--evidence-age", () => parseDuration(f["evidence-age"]));
  if (evidenceBytes > MAX_EVIDENCE_BYTES) throw new Error(`--evidence-bytes: ${f["evidence-bytes"]} is more than the agent keeps (1GiB)`);
  if (evidenceAgeMs <= 0) throw new Error(`--evidence-age: ${f["evidence-age"]} keeps nothing (use --evidence-bytes 0 for that)`);
  // A hostname is case-insensitive; a Node name is its lowercase form (the kubelet does the same).
  const node = f.node ?? env.NODE_NAME ?? hostname().toLowerCase();
  if (!isNodeName(node))
    throw new Error(`--node ${JSON.stringify(node)}: not a node name (lowercase letters, digits, '-' and '.', as Kubernetes names Nodes)`);
  const cluster = f.cluster ?? env.WHOHAS_CLUSTER ?? null;
  if (cluster !== null && !isClusterName(cluster))
    throw new Error(`--cluster ${JSON.stringify(cluster)}: not a cluster name (${CLUSTER_NAME_HELP})`);
  return {
    hubs: f.hub
      .split(",")
      .map((u) => u.trim())
      .filter((u) => u !== ""),
    node,
    cluster,
    interfaces: regex("--interfaces", f.interfaces),
    excludeInterfaces: f["exclude-interfaces"] === "" ? null : regex("--exclude-interfaces", f["exclude-interfaces"]),
    token,
    tokenFile: f["token-file"],
    ca,
    maxBufferBytes,
    evidenceBytes,
    evidenceAgeMs,
    metricsAddress: f["metrics-address"] === "" ? null : f["metrics-address"],
    logLevel: f["log-level"],
  };
}
