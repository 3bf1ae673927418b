import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { stringify as stringifyYaml } from "yaml";
import { createLab, type Lab } from "./lab.js";
import { unixWsUrl } from "./naming.js";
import { seedAgentPods, seedCluster, type SeedService } from "./kube/seed.js";
import { startTestApiServer, type ForbiddenRule, type PendingWrite, type TestApiServer } from "./kube/server.js";
import { startKubeProxies, type KubeProxies } from "./kube-proxy.js";
import { newAgentTokens, reviewable, type AgentTokens } from "./kube/agent-tokens.js";
import { elect } from "@whohas/core";
import { freePort, hashWithHub, stopChild, waitHealthy } from "./hub-process.js";
import { parseVlanIp, vlanIpText } from "./trunk.js";

export { freePort };

export { REPO_ROOT, HUB_BIN, AGENT_MAIN, REQUESTER, SPEAKER } from "./hub-process.js";
import { AGENT_MAIN, FORWARD, HUB_BIN, REQUESTER, SPEAKER } from "./hub-process.js";
import { bridgePorts } from "./forward.js";
import type { Server } from "node:net";

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
  /**
   * The hub runs in its own namespace on the lab link (lab.hub) and the agents reach it over TCP at its address, as
   * they reach a hub Service in a cluster; the hub sees each agent's node address. Its dashboard, metrics and the
   * test API server are carried between that namespace and this one as `kubectl port-forward` would (Unix sockets
   * joined by forwards), so `url` and `metricsUrl` work as usual. Webhook receivers in this namespace are out of reach.
   */
  readonly hubOnLink?: boolean;
  /** Requests the test API server refuses with 403 (RBAC the hub lacks). */
  readonly forbidden?: readonly ForbiddenRule[];
  /** Holds each write to the test API server until it settles (see TestApiServerOptions.beforeWrite). */
  readonly beforeWrite?: (write: PendingWrite) => Promise<void> | void;
  /**
   * Changes the seeded cluster before the hub starts (needs `kube`): another announcer's Leases, a BGP pool, a
   * Service's loadBalancerClass: the hub's first verdicts then already follow them.
   */
  readonly kubeSetup?: (api: TestApiServer) => void;
  /**
   * Dual stack (LabOptions.ipv6): IPv6 VIPs beside the IPv4 ones, asked for by Neighbor Solicitation, seeded as
   * LoadBalancer Services with `kube` and answered by their elected owner's speaker with `cluster`.
   */
  readonly ipv6?: boolean;
  /**
   * Addresses on VLANs, each written IP@VLAN ("198.18.0.230@30", "2001:2::230@40" with ipv6): the client also asks for
   * them in 802.1Q-tagged frames. Nobody owns them at first (no Kubernetes Service is seeded for them): `own` decides
   * per VLAN which speakers answer, so one address can have one owner on VLAN 30 and two on VLAN 40.
   */
  readonly vlanVips?: readonly string[];
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
  /** The hub's /metrics (a port of its own, as metrics.listen gives it). */
  readonly metricsUrl: string;
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
  /** The ServiceAccount tokens the test API server knows, with serviceAccountAgents. */
  readonly saTokens: AgentTokens | null;
  /** The kube-proxy stand-ins and each VIP's elected owner, when `cluster` was asked for. */
  readonly kubeProxies: KubeProxies | null;
  /**
   * own tells `node`'s MetalLB-like speaker which IPs it owns now (with `cluster`): it answers for them, and sends
   * MetalLB's gratuitous burst for each it takes over, unless `quiet` (a speaker that fails to announce). An entry
   * written IP@VLAN is owned on that VLAN only (tagged requests, tagged answers); a plain IP untagged only.
   */
  own(node: string, ips: readonly string[], opts?: { readonly quiet?: boolean }): void;
  /** Each Service VIP's elected owner (IPv4 and, with ipv6, IPv6), with `cluster`. */
  readonly owners: ReadonlyMap<string, string>;
  /** The IP@VLAN addresses the client asks for in tagged frames (StackOptions.vlanVips). */
  readonly vlanVips: readonly string[];
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
  /** freezeAgent stops one node's agent where it is (SIGSTOP: its connection open and silent); thawAgent lets it go on. */
  freezeAgent(node: string): void;
  thawAgent(node: string): void;
  /** pauseRequests stops the client's ARP requests (nothing new on the wire); resumeRequests starts them again. */
  pauseRequests(): void;
  resumeRequests(): void;
  stop(): Promise<void>;
}

/**
 * startStack brings up everything the demo, the integration tests and the e2e tests need. Whatever fails, what was
 * started is stopped again; `stop()` tears it all down (processes first, then namespaces).
 */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const vlanVips = (opts.vlanVips ?? []).map((text) => {
    const v = parseVlanIp(text);
    if (v.vlan === null) throw new TypeError(`vlanVips: ${JSON.stringify(text)} names no VLAN (write IP@VLAN)`);
    if (v.ip.includes(":") && opts.ipv6 !== true) throw new TypeError(`vlanVips: ${JSON.stringify(text)} is IPv6: start with ipv6`);
    return vlanIpText(v);
  });
  const lab = await createLab({
    nodes: opts.nodes ?? 3,
    vips: opts.vips ?? 3,
    hubOnLink: opts.hubOnLink === true,
    ipv6: opts.ipv6 === true,
  });
  const forwards: Server[] = [];
  const children: ChildProcess[] = [];
  const logDir = opts.logDir ?? `${tmpdir()}/whohas-lab-${lab.names.id}`;
  let stopping = false;
  let api: TestApiServer | null = null;
  let kubeProxies: KubeProxies | null = null;
  const saTokens = opts.serviceAccountAgents === true ? newAgentTokens(lab.nodes.map((n) => n.name)) : null;
  const owners = new Map<string, string>();
  const stop = async () => {
    stopping = true;
    kubeProxies?.stop();
    await Promise.all(children.map(stopChild));
    for (const f of forwards) f.close();
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
        if (!stopping && !asked)
          process.stderr.write(`whohas-lab: ${name} exited (code ${code}, signal ${signal}); see ${logDir}/${name}.log\n`);
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
    const metricsPort = await freePort();
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    let kubeconfig: string | null = null;
    if (opts.kube === true) {
      const admin = randomBytes(24).toString("hex");
      const proxyToken = randomBytes(24).toString("hex");
      api = await startTestApiServer({
        tokens: new Map([
          [admin, "system:serviceaccount:whohas:hub"],
          [proxyToken, "system:serviceaccount:kube-system:kube-proxy"],
        ]),
        daemonSetPods: opts.cluster === true,
        forbidden: opts.forbidden,
        beforeWrite: opts.beforeWrite,
        serviceAccountTokens: saTokens === null ? undefined : reviewable(saTokens),
      });
      const service =
        (prefix: string) =>
        (ip: string, i: number): SeedService => ({
          namespace: "demo",
          name: `${prefix}-${i}`,
          ip,
          externalTrafficPolicy: i % 2 === 0 ? "Cluster" : "Local",
          endpointNodes: [lab.nodes[(i + 1) % lab.nodes.length]?.name ?? "node-1"],
        });
      const services = [...lab.vips.map(service("web")), ...lab.vips6.map(service("web6"))];
      seedCluster(
        api,
        lab.nodes.map((n) => n.name),
        services,
      );
      opts.kubeSetup?.(api);
      // The agents' Pods, as the DaemonSet makes them: the hub reads one to learn the node of a Pod-bound token.
      if (saTokens !== null)
        seedAgentPods(
          api,
          lab.nodes.map((n) => n.name),
        );
      if (opts.cluster === true) {
        const log = createWriteStream(`${logDir}/kube-proxy.log`, { flags: "a" });
        kubeProxies = startKubeProxies({ url: api.url, ca: api.ca, token: proxyToken }, lab, (line) =>
          log.write(`${new Date().toISOString()} ${line}\n`),
        );
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
    // The hub's namespace reaches this one's test API server, and this one its dashboard and metrics, through
    // forwards joined by Unix sockets (files, seen from every namespace).
    const hubNs = lab.hub?.ns ?? null;
    if (hubNs !== null)
      forwards.push(
        ...(await bridgePorts({
          dir: lab.names.stateDir,
          outward: [port, metricsPort],
          inward: api === null ? [] : [Number(new URL(api.url).port)],
          startRelay: (pairs) => spawnLogged("forward", "ip", ["netns", "exec", hubNs, process.execPath, FORWARD, ...pairs]),
        }).catch((e: unknown) => {
          throw new Error(`${(e as Error).message}; see ${logDir}/forward.log`);
        })),
      );
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
        listen: hubNs === null ? `127.0.0.1:${port}` : `0.0.0.0:${port}`,
        metrics: { listen: `127.0.0.1:${metricsPort}` },
        storage: { path: dbPath, retention: "1d" },
        agents: {
          tokenFile,
          ...(hubNs === null ? { socket: lab.names.hubSocket } : {}),
          ...(saTokens === null ? {} : { serviceAccount: "whohas:whohas-agent" }),
        },
        api: { viewerTokenFile },
        kubernetes: kubeconfig === null ? { enabled: false } : { kubeconfig },
        auth: { users: Object.values(users).map((u, i) => ({ name: u.name, passwordHash: hashes[i], role: u.role })) },
        actions: { probeDuration: opts.probeDuration ?? "60s" },
        ...opts.hubConfig,
      }),
    );
    const startHub = async () => {
      const hubArgs = [HUB_BIN, "--config", hubConfig];
      const [cmd, args] = hubNs === null ? [process.execPath, hubArgs] : ["ip", ["netns", "exec", hubNs, process.execPath, ...hubArgs]];
      const child = spawnLogged("hub", cmd, args, {
        NODE_ENV: "production",
        NEXT_TELEMETRY_DISABLED: "1",
      });
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
    const hubUrl = lab.hub === null ? unixWsUrl(lab.names.hubSocket, "/agent") : `ws://${lab.hub.ip}:${port}/agent`;
    const agents = new Map<string, ChildProcess>();
    // With ServiceAccount agents, each agent's token file holds its own Pod's projected token (as kubelet mounts it).
    const agentTokenFile = (node: string) => `${lab.names.stateDir}/agent-sa-token-${node}`;
    for (const [node, t] of saTokens?.agents ?? []) await writeFile(agentTokenFile(node), t, { mode: 0o600 });
    const startAgent = (name: string) => {
      const n = lab.nodes.find((x) => x.name === name);
      if (n === undefined) throw new Error(`no node ${name} in this lab`);
      agents.set(
        name,
        spawnLogged(`agent-${n.name}`, "ip", [
          "netns",
          "exec",
          n.ns,
          process.execPath,
          AGENT_MAIN,
          "agent",
          "--hub",
          hubUrl,
          "--node",
          n.name,
          "--interfaces",
          "^eth",
          "--token-file",
          saTokens === null ? tokenFile : agentTokenFile(n.name),
        ]),
      );
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
    // SIGSTOP: the agent's socket stays open and says nothing, as a node that froze or lost its network would.
    const freezeAgent = (name: string) => void agents.get(name)?.kill("SIGSTOP");
    const thawAgent = (name: string) => void agents.get(name)?.kill("SIGCONT");
    for (const n of lab.nodes) startAgent(n.name);
    const speakers = new Map<string, ChildProcess>();
    if (opts.cluster === true) {
      for (const n of lab.nodes) {
        const speaker = spawnLogged(`speaker-${n.name}`, "ip", ["netns", "exec", n.ns, process.execPath, SPEAKER, "eth0"], {}, true);
        const elected = [...lab.vips, ...lab.vips6].filter((v) => owners.get(v) === n.name);
        // The speaker says what it owns once it has taken it over (after its first gratuitous burst).
        const took = new Promise<void>((resolve, reject) => {
          speaker.stdout?.once("data", () => resolve());
          speaker.once("exit", (code) =>
            reject(new Error(`the speaker on ${n.name} exited (${code}); see ${logDir}/speaker-${n.name}.log`)),
          );
        });
        speaker.stdin?.write(`${JSON.stringify({ owned: elected })}\n`);
        speakers.set(n.name, speaker);
        await took;
      }
    }
    const own = (node: string, ips: readonly string[], o: { readonly quiet?: boolean } = {}) => {
      const speaker = speakers.get(node);
      if (speaker === undefined) throw new Error(`no speaker on ${node} (start the stack with cluster: true)`);
      speaker.stdin?.write(`${JSON.stringify({ owned: ips, quiet: o.quiet === true })}\n`);
    };
    const requester = spawnLogged("client", "ip", [
      "netns",
      "exec",
      lab.client.ns,
      process.execPath,
      REQUESTER,
      ...(lab.client.ip6 === null ? [] : [`--ip6=${lab.client.ip6}`]),
      "eth0",
      lab.client.ip,
      String(opts.requestIntervalMs ?? 1000),
      ...lab.vips,
      ...lab.vips6,
      ...vlanVips,
    ]);
    return {
      lab,
      url,
      port,
      metricsUrl,
      token,
      viewerToken,
      users,
      hubConfig,
      dbPath,
      logDir,
      api,
      stop,
      restartHub,
      stopHub,
      killHub,
      startHub: startHubAgain,
      kubeProxies,
      owners,
      own,
      vlanVips,
      saTokens,
      stopAgent,
      startAgent,
      freezeAgent,
      thawAgent,
      // SIGSTOP holds the client as it is (its socket, its schedule); SIGCONT lets it go on.
      pauseRequests: () => void requester.kill("SIGSTOP"),
      resumeRequests: () => void requester.kill("SIGCONT"),
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
