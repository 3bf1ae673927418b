import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { stringify as stringifyYaml } from "yaml";
import { createLab } from "./lab.js";
import { unixWsUrl } from "./naming.js";
import { seedAgentPods, seedCluster, type SeedService } from "./kube/seed.js";
import { startTestApiServer, type TestApiServer } from "./kube/server.js";
import { startKubeProxies, type KubeProxies } from "./kube-proxy.js";
import { newAgentTokens, reviewable } from "./kube/agent-tokens.js";
import { elect } from "@whohas/core";
import { freePort, hashWithHub, stopChild, waitHealthy } from "./hub-process.js";
import { parseVlanIp, vlanIpText } from "./trunk.js";

export { freePort };

export { REPO_ROOT, HUB_BIN, AGENT_MAIN, REQUESTER, SPEAKER } from "./hub-process.js";
import { AGENT_MAIN, FORWARD, HUB_BIN, REQUESTER, SPEAKER } from "./hub-process.js";
import { bridgePorts } from "./forward.js";
import type { Server } from "node:net";

export type { LabUser, Replica, Stack, StackOptions } from "./stack-types.js";
import type { Stack, StackOptions } from "./stack-types.js";

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
  if ((opts.spareVips ?? []).length > 0 && opts.kube !== true)
    throw new TypeError("spareVips: a spare VIP is a Service's: start with kube");
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
    const metricsPort = await freePort([port]);
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    let kubeconfig: string | null = null;
    if (opts.kube === true) {
      const admin = randomBytes(24).toString("hex");
      const proxyToken = randomBytes(24).toString("hex");
      api = await startTestApiServer(
        {
          tokens: new Map([
            [admin, "system:serviceaccount:whohas:hub"],
            [proxyToken, "system:serviceaccount:kube-system:kube-proxy"],
          ]),
          daemonSetPods: opts.cluster === true,
          forbidden: opts.forbidden,
          beforeWrite: opts.beforeWrite,
          serviceAccountTokens: saTokens === null ? undefined : reviewable(saTokens),
        },
        // Not a port the kernel picks: it could pick the hub's, chosen above but not bound until the hub starts.
        await freePort([port, metricsPort]),
      );
      const service =
        (prefix: string) =>
        (ip: string, i: number): SeedService => ({
          namespace: "demo",
          name: `${prefix}-${i}`,
          ip,
          externalTrafficPolicy: i % 2 === 0 ? "Cluster" : "Local",
          endpointNodes: [lab.nodes[(i + 1) % lab.nodes.length]?.name ?? "node-1"],
        });
      const spare = new Set(opts.spareVips ?? []);
      const services = [...lab.vips.map(service("web")), ...lab.vips6.map(service("web6")), ...[...spare].map(service("spare"))];
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
          if (e.owner !== null && !spare.has(svc.ip)) owners.set(svc.ip, e.owner);
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
    const replicas = opts.replicas ?? 1;
    const hubDoc: Record<string, unknown> = {
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
      backgroundProbe: { interval: opts.backgroundProbe ?? "off" },
      ...(opts.clusterName === undefined ? {} : { cluster: { name: opts.clusterName } }),
      ...opts.hubConfig,
    };
    if (replicas > 1) {
      const storage = (opts.hubConfig?.storage ?? {}) as { url?: string };
      if (storage.url === undefined || hubNs !== null)
        throw new TypeError("replicas: hub replicas share one PostgreSQL (hubConfig.storage.url), and listen on this namespace");
      hubDoc.ha = { enabled: true, name: "hub-1" };
    }
    await writeFile(hubConfig, stringifyYaml(hubDoc));
    // The other replicas: the same file but for their own ports, agents' socket and name.
    const others: { name: string; config: string; port: number; metricsPort: number; socket: string }[] = [];
    const taken = [port, metricsPort];
    for (let i = 2; i <= replicas; i++) {
      const r = { name: `hub-${i}`, config: `${lab.names.stateDir}/hub-${i}.yaml`, port: 0, metricsPort: 0, socket: "" };
      r.port = await freePort(taken);
      r.metricsPort = await freePort([...taken, r.port]);
      taken.push(r.port, r.metricsPort);
      r.socket = lab.names.hubSocket.replace(/\.sock$/, `-${i}.sock`);
      const agentsDoc = hubDoc.agents as Record<string, unknown>;
      const doc = {
        ...hubDoc,
        listen: `127.0.0.1:${r.port}`,
        metrics: { listen: `127.0.0.1:${r.metricsPort}` },
        agents: { ...agentsDoc, socket: r.socket },
        ha: { enabled: true, name: r.name },
      };
      await writeFile(r.config, stringifyYaml(doc));
      others.push(r);
    }
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
    // The other replicas start once the first leads: they stand by.
    const replicaProcs = new Map<string, ChildProcess>();
    const startReplica = async (r: (typeof others)[number]) => {
      // Its own addresses and name come from its file: none of the environment's overrides (the demo's PORT) may win.
      const own = [
        "PORT",
        "HOST",
        "WHOHAS_LISTEN",
        "WHOHAS_METRICS_LISTEN",
        "WHOHAS_AGENT_SOCKET",
        "WHOHAS_HA_NAME",
        "WHOHAS_HA_ADVERTISE",
      ];
      const child = spawnLogged(r.name, process.execPath, [HUB_BIN, "--config", r.config], {
        NODE_ENV: "production",
        NEXT_TELEMETRY_DISABLED: "1",
        ...Object.fromEntries(own.map((k) => [k, undefined])),
      });
      replicaProcs.set(r.name, child);
      await waitHealthy(`http://127.0.0.1:${r.port}`, child, 30_000);
    };
    for (const r of others) await startReplica(r);
    const stopHub = () => stopChild(hub);
    /** sigkill ends a hub as a crash would; the launcher goes at once, and the server it started kills itself (server.ts). */
    const sigkill = async (child: ChildProcess | undefined) => {
      if (child?.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      killed.add(child);
      child.kill("SIGKILL");
      await exited;
    };
    const killHub = () => sigkill(hub);
    const startHubAgain = async () => {
      hub = await startHub();
    };
    const restartHub = async () => {
      await stopHub();
      await startHubAgain();
    };
    // With replicas every agent knows each one's address, as it would each Pod's behind a headless Service.
    const hubUrl =
      lab.hub === null
        ? [lab.names.hubSocket, ...others.map((r) => r.socket)].map((sock) => unixWsUrl(sock, "/agent")).join(",")
        : `ws://${lab.hub.ip}:${port}/agent`;
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
          ...(opts.clusterName === undefined ? [] : ["--cluster", opts.clusterName]),
        ]),
      );
    };
    /** capturing resolves once an agent says it captures (its capture.started line), and rejects if it exits first. */
    const capturing = (name: string, child: ChildProcess | undefined) =>
      new Promise<void>((resolve, reject) => {
        if (child === undefined) return resolve();
        let seen = "";
        const look = (chunk: Buffer) => {
          seen = (seen + chunk.toString()).slice(-4096);
          if (seen.includes("capture.started")) {
            child.stdout?.off("data", look);
            child.stderr?.off("data", look);
            resolve();
          }
        };
        child.stdout?.on("data", look);
        child.stderr?.on("data", look);
        child.once("exit", (code) => reject(new Error(`the agent on ${name} exited (${code}); see ${logDir}/agent-${name}.log`)));
      });
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
    // Every agent captures before the client asks: on a loaded machine one agent's Node can take a second longer
    // to start, and a test that counts each node's copies of the client's requests would find that node short.
    await Promise.all(lab.nodes.map((n) => capturing(n.name, agents.get(n.name))));
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
    // The stack is up once the client asks: a test that starts capturing at once must see requests, however long
    // a loaded machine takes to start the requester's Node.
    await new Promise<void>((resolve, reject) => {
      requester.stdout?.once("data", () => resolve());
      requester.once("exit", (code) => reject(new Error(`the client's requester exited (${code}); see ${logDir}/client.log`)));
    });
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
      replicas: [
        { name: "hub-1", url, metricsUrl, kill: killHub, start: startHubAgain },
        ...others.map((r) => ({
          name: r.name,
          url: `http://127.0.0.1:${r.port}`,
          metricsUrl: `http://127.0.0.1:${r.metricsPort}/metrics`,
          kill: () => sigkill(replicaProcs.get(r.name)),
          start: () => startReplica(r),
        })),
      ],
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
