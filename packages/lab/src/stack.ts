import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { stringify as stringifyYaml } from "yaml";
import { createLab, type Lab } from "./lab.js";
import { unixWsUrl } from "./naming.js";
import { seedCluster, type SeedService } from "./kube/seed.js";
import { startTestApiServer, type ForbiddenRule, type TestApiServer } from "./kube/server.js";
import { startKubeProxies, type KubeProxies } from "./kube-proxy.js";
import { elect } from "@whohas/core";

/** REPO_ROOT: the lab starts the built hub and agent from the checkout it belongs to. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** HUB_BIN is the hub's production entry, `whohas-hub` (the same one a deployment runs). */
export const HUB_BIN = `${REPO_ROOT}apps/web/bin/whohas-hub.js`;
export const AGENT_MAIN = `${REPO_ROOT}apps/agent/dist/main.js`;
export const REQUESTER = `${REPO_ROOT}packages/lab/dist/requester.js`;
export const SPEAKER = `${REPO_ROOT}packages/lab/dist/speaker.js`;

export interface StackOptions {
  readonly nodes?: number;
  readonly vips?: number;
  /** TCP port of the hub; 0 picks a free one. */
  readonly port?: number;
  /** How often the client asks for each VIP. */
  readonly requestIntervalMs?: number;
  /** Where process logs go (default: $TMPDIR/whohas-lab-ID, kept after teardown for post-mortems). */
  readonly logDir?: string;
  /**
   * Also run the test Kubernetes API server with this lab's cluster (nodes, a LoadBalancer Service per VIP, kube-proxy
   * in IPVS mode with strictARP false, MetalLB's L2Advertisement), and point the hub at it.
   */
  readonly kube?: boolean;
  /** How long the dashboard's Probe runs (actions.probeDuration; the product's default is 60 s). */
  readonly probeDuration?: string;
  /** More keys for the hub's config file (alerting, webhooks, ...), merged over the lab's. */
  readonly hubConfig?: Readonly<Record<string, unknown>>;
  /**
   * Complete the cluster (needs `kube`): a MetalLB speaker in each node namespace answering for the IPs the election
   * gives its node, and a kube-proxy stand-in per node applying strictARP's sysctls on each DaemonSet restart. Then
   * strictARP true leaves exactly one responder per IP: the elected node's speaker.
   */
  readonly cluster?: boolean;
  /**
   * Agents authenticate with a projected ServiceAccount token (audience whohas) that the hub checks by TokenReview
   * against the test API server (needs `kube`), instead of the shared token.
   */
  readonly serviceAccountAgents?: boolean;
  /** Requests the test API server refuses with 403 (RBAC the hub lacks). */
  readonly forbidden?: readonly ForbiddenRule[];
}

/** A LabUser signs in to the lab's dashboard (names and random passwords made for each run). */
export interface LabUser {
  readonly name: string;
  readonly password: string;
  readonly role: "viewer" | "operator" | "admin";
}

/** A Stack is a running lab with its hub, one agent per node and the requesting client. */
export interface Stack {
  readonly lab: Lab;
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** Bearer token of the hub's read API (/api/v1). */
  readonly viewerToken: string;
  /** One user of each role, for the dashboard's sign-in. */
  readonly users: { readonly viewer: LabUser; readonly operator: LabUser; readonly admin: LabUser };
  /** The hub's config file and SQLite database. */
  readonly hubConfig: string;
  readonly dbPath: string;
  readonly logDir: string;
  /** The test API server, when `kube` was asked for. */
  readonly api: TestApiServer | null;
  /** ServiceAccount tokens the test API server knows (with serviceAccountAgents): the agents', one issued for another
   * audience, one of another ServiceAccount. */
  readonly saTokens: { readonly agent: string; readonly wrongAudience: string; readonly otherAccount: string } | null;
  /** The kube-proxy stand-ins and each VIP's elected owner, when `cluster` was asked for. */
  readonly kubeProxies: KubeProxies | null;
  readonly owners: ReadonlyMap<string, string>;
  /** restartHub stops the hub and starts a fresh one on the same port and socket (agents must reconnect). */
  restartHub(): Promise<void>;
  /** stopHub and startHub split a restart, for outages of a chosen length. */
  stopHub(): Promise<void>;
  /** killHub kills the hub with SIGKILL: nothing is flushed, as in a crash or an OOM kill. */
  killHub(): Promise<void>;
  startHub(): Promise<void>;
  /** stopAgent kills one node's agent (SIGKILL: the hub learns only from the silence); startAgent starts it again. */
  stopAgent(node: string): Promise<void>;
  startAgent(node: string): void;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      s.close(() => resolve(typeof addr === "object" && addr !== null ? addr.port : 0));
    });
  });
}

async function waitHealthy(url: string, child: ChildProcess, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`the hub exited with code ${child.exitCode} before it was ready`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the hub did not answer ${url}/healthz within ${ms} ms`);
}

/** stopChild sends SIGTERM and, after 5 s, SIGKILL; resolves when the process is gone. */
function stopChild(c: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    const t = setTimeout(() => c.kill("SIGKILL"), 5000);
    c.once("exit", () => {
      clearTimeout(t);
      resolve();
    });
    c.kill("SIGTERM");
  });
}

/** hashWithHub runs `whohas-hub hash-password` with the password on stdin and returns the hash it prints. */
async function hashWithHub(password: string): Promise<string> {
  const child = spawn(process.execPath, [HUB_BIN, "hash-password"], { stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(password);
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  if (code !== 0 || !out.startsWith("$argon2id$")) throw new Error(`whohas-hub hash-password failed (${code}): ${err.trim()}`);
  return out.trim();
}

/**
 * startStack brings up everything the demo, the integration tests and the e2e tests need. Whatever fails, what was
 * started is stopped again; `stop()` tears it all down (processes first, then namespaces).
 */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const lab = await createLab({ nodes: opts.nodes ?? 3, vips: opts.vips ?? 3 });
  const children: ChildProcess[] = [];
  const logDir = opts.logDir ?? `${tmpdir()}/whohas-lab-${lab.names.id}`;
  let stopping = false;
  let api: TestApiServer | null = null;
  let kubeProxies: KubeProxies | null = null;
  const saTokens = opts.serviceAccountAgents === true ? { agent: randomBytes(32).toString("base64url"), wrongAudience: randomBytes(32).toString("base64url"), otherAccount: randomBytes(32).toString("base64url") } : null;
  const owners = new Map<string, string>();
  const stop = async () => {
    stopping = true;
    kubeProxies?.stop();
    await Promise.all(children.map(stopChild));
    await api?.close();
    await lab.destroy();
  };
  try {
    await mkdir(logDir, { recursive: true });
    const killed = new WeakSet<ChildProcess>();
    const spawnLogged = (name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, stdin = false) => {
      const log = createWriteStream(`${logDir}/${name}.log`, { flags: "a" });
      // Children inherit this process's environment (PATH, CI) plus their own settings.
      // eslint-disable-next-line no-restricted-properties
      const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"] });
      child.stdout?.pipe(log);
      child.stderr?.pipe(log);
      children.push(child);
      child.once("exit", (code, signal) => {
        // A clean exit or one asked for (Ctrl-C reaches the whole process group) is not news; a crash is.
        const asked = code === 0 || signal === "SIGINT" || signal === "SIGTERM" || killed.has(child);
        if (!stopping && !asked) process.stderr.write(`whohas-lab: ${name} exited (code ${code}, signal ${signal}); see ${logDir}/${name}.log\n`);
      });
      return child;
    };
    const port = opts.port === undefined || opts.port === 0 ? await freePort() : opts.port;
    const token = randomBytes(24).toString("hex");
    const tokenFile = `${lab.names.stateDir}/agent-token`;
    await writeFile(tokenFile, token, { mode: 0o600 });
    const viewerToken = randomBytes(24).toString("hex");
    const viewerTokenFile = `${lab.names.stateDir}/viewer-token`;
    await writeFile(viewerTokenFile, viewerToken, { mode: 0o600 });
    const url = `http://localhost:${port}`;
    let kubeconfig: string | null = null;
    if (opts.kube === true) {
      const admin = randomBytes(24).toString("hex");
      const proxyToken = randomBytes(24).toString("hex");
      api = await startTestApiServer({ tokens: new Map([[admin, "system:serviceaccount:whohas:hub"], [proxyToken, "system:serviceaccount:kube-system:kube-proxy"]]), daemonSetPods: opts.cluster === true,
        forbidden: opts.forbidden,
        serviceAccountTokens:
          saTokens === null
            ? undefined
            : new Map([
                [saTokens.agent, { user: "system:serviceaccount:whohas:whohas-agent", audiences: ["whohas"] }],
                [saTokens.wrongAudience, { user: "system:serviceaccount:whohas:whohas-agent", audiences: ["https://kubernetes.default.svc"] }],
                [saTokens.otherAccount, { user: "system:serviceaccount:default:default", audiences: ["whohas"] }],
              ]),
      });
      const services: SeedService[] = lab.vips.map((ip, i) => ({ namespace: "demo", name: `web-${i}`, ip, externalTrafficPolicy: i % 2 === 0 ? "Cluster" : "Local", endpointNodes: [lab.nodes[(i + 1) % lab.nodes.length]?.name ?? "node-1"] }));
      seedCluster(
        api,
        lab.nodes.map((n) => n.name),
        services,
      );
      if (opts.cluster === true) {
        const log = createWriteStream(`${logDir}/kube-proxy.log`, { flags: "a" });
        kubeProxies = startKubeProxies({ url: api.url, ca: api.ca, token: proxyToken }, lab, (line) => log.write(`${new Date().toISOString()} ${line}\n`));
        // MetalLB's election, as every speaker runs it: all nodes have a speaker, one L2Advertisement selects all.
        for (const svc of services) {
          const e = elect({
            ingressIPs: [svc.ip],
            externalTrafficPolicy: svc.externalTrafficPolicy,
            endpoints: svc.endpointNodes.map((nodeName) => ({ nodeName, ready: true, serving: true })),
            nodes: lab.nodes.map((n) => ({ name: n.name, labels: {}, networkUnavailable: false })),
            speakers: new Set(lab.nodes.map((n) => n.name)),
            l2Advertisements: [{ nodeSelectors: [] }],
          });
          if (e.owner !== null) owners.set(svc.ip, e.owner);
        }
      }
      kubeconfig = `${lab.names.stateDir}/kubeconfig`;
      await writeFile(kubeconfig, api.kubeconfig(admin), { mode: 0o600 });
    }
    // One user per role, hashed by the hub's own `whohas-hub hash-password`, as an operator would.
    const users = {
      viewer: { name: "viewer", password: randomBytes(12).toString("base64url"), role: "viewer" as const },
      operator: { name: "oncall", password: randomBytes(12).toString("base64url"), role: "operator" as const },
      admin: { name: "admin", password: randomBytes(12).toString("base64url"), role: "admin" as const },
    };
    const hashes = await Promise.all(Object.values(users).map((u) => hashWithHub(u.password)));
    // The hub runs from a config file, as a deployment does (apps/web/config.example.yaml).
    const dbPath = `${lab.names.stateDir}/whohas.db`;
    const hubConfig = `${lab.names.stateDir}/hub.yaml`;
    await writeFile(
      hubConfig,
      stringifyYaml({
        listen: `127.0.0.1:${port}`,
        storage: { path: dbPath, retention: "1d" },
        agents: { tokenFile, socket: lab.names.hubSocket, ...(saTokens === null ? {} : { serviceAccount: "whohas:whohas-agent" }) },
        api: { viewerTokenFile },
        kubernetes: kubeconfig === null ? { enabled: false } : { kubeconfig },
        auth: { users: Object.values(users).map((u, i) => ({ name: u.name, passwordHash: hashes[i], role: u.role })) },
        actions: { probeDuration: opts.probeDuration ?? "60s" },
        ...opts.hubConfig,
      }),
    );
    const startHub = async () => {
      const child = spawnLogged("hub", process.execPath, [HUB_BIN, "--config", hubConfig], { NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" });
      await waitHealthy(url, child, 30_000);
      return child;
    };
    let hub = await startHub();
    const stopHub = () => stopChild(hub);
    const killHub = async () => {
      if (hub.exitCode !== null || hub.signalCode !== null) return;
      const exited = new Promise((r) => hub.once("exit", r));
      killed.add(hub);
      // The launcher goes at once; the server it started sees its IPC channel close and kills itself (server.ts).
      hub.kill("SIGKILL");
      await exited;
    };
    const startHubAgain = async () => {
      hub = await startHub();
    };
    const restartHub = async () => {
      await stopHub();
      await startHubAgain();
    };
    const hubUrl = unixWsUrl(lab.names.hubSocket, "/agent");
    const agents = new Map<string, ChildProcess>();
    // With ServiceAccount agents, each agent's token file holds the projected token (as the DaemonSet mounts it).
    const agentTokenFile = `${lab.names.stateDir}/agent-sa-token`;
    if (saTokens !== null) await writeFile(agentTokenFile, saTokens.agent, { mode: 0o600 });
    const startAgent = (name: string) => {
      const n = lab.nodes.find((x) => x.name === name);
      if (n === undefined) throw new Error(`no node ${name} in this lab`);
      agents.set(name, spawnLogged(`agent-${n.name}`, "ip", ["netns", "exec", n.ns, process.execPath, AGENT_MAIN, "agent", "--hub", hubUrl, "--node", n.name, "--interfaces", "^eth", "--token-file", saTokens === null ? tokenFile : agentTokenFile]));
    };
    const stopAgent = async (name: string) => {
      const child = agents.get(name);
      if (child?.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      // `ip netns exec` execs the agent, so the child is the agent itself.
      killed.add(child);
      child.kill("SIGKILL");
      await exited;
    };
    for (const n of lab.nodes) startAgent(n.name);
    if (opts.cluster === true) {
      for (const n of lab.nodes) {
        const speaker = spawnLogged(`speaker-${n.name}`, "ip", ["netns", "exec", n.ns, process.execPath, SPEAKER, "eth0"], {}, true);
        speaker.stdin?.write(`${JSON.stringify({ owned: lab.vips.filter((v) => owners.get(v) === n.name) })}\n`);
      }
    }
    spawnLogged("client", "ip", ["netns", "exec", lab.client.ns, process.execPath, REQUESTER, "eth0", lab.client.ip, String(opts.requestIntervalMs ?? 1000), ...lab.vips]);
    return { lab, url, port, token, viewerToken, users, hubConfig, dbPath, logDir, api, stop, restartHub, stopHub, killHub, startHub: startHubAgain, kubeProxies, owners, saTokens, stopAgent, startAgent };
  } catch (e) {
    await stop();
    throw e;
  }
}
