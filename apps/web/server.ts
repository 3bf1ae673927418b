// The whohas hub: one Node process (bundled to dist/server.js, so the Next app dir is one level up) serving Next.js,
// tRPC, the read API and the agent WebSocket. Started as `whohas-hub --config FILE`.
import { readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import next from "next";
import { Actions } from "./src/server/actions/actions.js";
import { BackgroundProbe } from "./src/server/actions/background-probe.js";
import { Alerter, OUTCOMES } from "./src/server/alerts/alerter.js";
import type { Receiver } from "./src/server/alerts/receivers.js";
import { Auth } from "./src/server/auth/auth.js";
import { Remediation } from "./src/server/remediation/remediation.js";
import { bootstrapAdmin } from "./src/server/auth/bootstrap.js";
import { hashPassword } from "./src/server/auth/passwords.js";
import { ENV_OVERRIDES, loadConfig, type HubConfig } from "./src/server/config/load.js";
import { nextConfig } from "./next.config.mjs";
import { createHubServer, type HubServer } from "./src/server/http.js";
import { Hub, type MacConflict } from "./src/server/hub/hub.js";
import { Scheduler } from "./src/server/hub/scheduler.js";
import { watchHeap } from "./src/server/hub/heap-guard.js";
import { loadKubeConfig, startInventory } from "./src/server/kube/inventory.js";
import { tokenReviewer } from "./src/server/kube/token-review.js";
import { registerHub } from "./src/server/registry.js";
import { Settings } from "./src/server/settings.js";
import { openDb } from "./src/server/store/open.js";
import { Store } from "./src/server/store/store.js";
import { jsonLogger, type Logger } from "@whohas/core";
import { standUntilLeading, takeOffice } from "./src/server/ha/replica.js";
import { listen } from "./src/server/listen.js";
import { LogThrottle } from "./src/server/log-throttle.js";

const HELP = `whohas-hub: the whohas hub and dashboard

Usage: whohas-hub [--config FILE]
       whohas-hub hash-password < password-file

  --config FILE   YAML configuration (see apps/web/config.example.yaml); every key is optional except the agent token
  --help          this text

  hash-password   reads a password on stdin and prints its argon2id hash for auth.users[].passwordHash, e.g.
                  printf '%s' 'the password' | whohas-hub hash-password

Environment overrides (they win over the file):
${Object.entries(ENV_OVERRIDES)
  .map(([k, v]) => `  ${k.padEnd(26)} ${v}`)
  .join("\n")}

Endpoints: / (dashboard, sign in at /login), /agent (agents' WebSocket), /api/v1/{ips,ips/IP,nodes,incidents} (read
API, Bearer token), /api/auth/{login,logout,me}, /api/trpc (dashboard API), /healthz, /readyz; /metrics on a port
of its own (metrics.listen, 9473 unless set).
`;

async function hashFromStdin(): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const password = Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
  if (password.length < 8) throw new Error("hash-password: give a password of at least 8 characters on stdin");
  process.stdout.write(`${await hashPassword(password)}\n`);
}

const portOf = (s: Server, fallback: number) => {
  const a = s.address();
  return typeof a === "object" && a !== null ? a.port : fallback;
};

/** startKube connects to Kubernetes when configured, and hands the inventory to the hub. */
async function startKube(config: HubConfig, hub: Hub, logger: Logger) {
  if (config.kubernetes === null) {
    logger.info("kube.off", {
      hint: "set kubernetes.kubeconfig (or WHOHAS_KUBECONFIG), or run in a pod, to join traffic with Services and expected owners",
    });
    return null;
  }
  const kc = loadKubeConfig(config.kubernetes === "in-cluster" ? null : config.kubernetes);
  const inventory = await startInventory(kc, () => hub.clusterChanged(), logger);
  hub.setCluster(inventory);
  logger.info("kube.connected", { source: config.kubernetes, server: kc.getCurrentCluster()?.server, metallb: inventory.metallb });
  return kc;
}

/** macConflictLog tells of a MAC two live nodes report at most once an hour per MAC and pair of nodes. */
function macConflictLog(logger: Logger): (c: MacConflict) => void {
  const told = new Map<string, number>();
  return (c) => {
    const key = `${c.mac} ${c.holder} ${c.claimant}`;
    const now = Date.now();
    if (now - (told.get(key) ?? -Infinity) < 3_600_000) return;
    if (told.size > 10_000) told.clear();
    told.set(key, now);
    logger.warn("agents.mac_conflict", {
      ...c,
      hint: `${c.claimant}'s agent reports a MAC ${c.holder}'s agent reported first; answers from it stay ${c.holder}'s. Two nodes sharing a MAC (cloned VMs, a virtual MAC) or an agent lying`,
    });
  };
}

/**
 * builtBasePath reads the path prefix the dashboard was built with (WHOHAS_BASE_PATH at `pnpm build`) from Next's
 * build output: the running hub serves what was built, whatever its own environment says. "" without a prefix (or
 * unbuilt).
 */
function builtBasePath(appDir: string): string {
  try {
    return (JSON.parse(readFileSync(`${appDir}/.next/routes-manifest.json`, "utf8")) as { basePath?: string }).basePath ?? "";
  } catch {
    return "";
  }
}

/** The Next app's directory (this file is bundled to dist/server.js, one level down). */
const APP_DIR = fileURLToPath(new URL("..", import.meta.url));

/** compose builds the hub's parts from the configuration and returns its server, not yet listening. */
async function compose(
  config: HubConfig,
  logger: Logger,
): Promise<{ hub: Hub; server: HubServer; settings: Settings; basePath: string; storageHint: string }> {
  const opened = await openDb(config.storage, (event, fields) => logger.warn(event, fields), config.clusterName);
  // While the database is out of reach every incident change fails: one line a minute says so, with the count.
  const storeErrors = new LogThrottle(logger);
  const store = await Store.open(opened.db, Date.now());
  const hub = await Hub.open({
    store,
    onStoreError: (what, e) => storeErrors.error("store.write_failed", "incidents", { what, message: e.message }),
    restoreMs: config.storage.retentionMs,
    limits: config.limits,
    onLimit: (s) =>
      logger.warn("hub.limit_reached", {
        ...s,
        hint: [
          s.ipLimit < s.maxIps
            ? `the hub's heap came near its bound: the live view holds at most ${s.ipLimit} IPs, not limits.maxIps = ${s.maxIps} ` +
              `(the heap: ${s.heap === null ? "?" : `${s.heap.usedMb} of ${s.heap.limitMb} MB`} at its latest full collection); ` +
              "give the hub more memory (WHOHAS_HEAP_MB, and the container's limit above it)"
            : null,
          s.evictedIps > 0 ? "the least recently active IPs left the live view (their history stays in storage)" : null,
          s.foldedMacs > 0 ? "the oldest MACs of crowded IPs were summed" : null,
          s.ipLimit < s.maxIps ? null : "raise limits.maxIps / limits.maxMacsPerIp if this network is really this large",
        ]
          .filter((x) => x !== null)
          .join("; "),
      }),
    onMacConflict: macConflictLog(logger),
    cluster: { name: config.clusterName, url: config.alerting.externalUrl },
  });
  registerHub(hub);
  logger.info("store.opened", {
    cluster: config.clusterName,
    engine: opened.db.dialect,
    at: opened.where,
    retentionMs: config.storage.retentionMs,
    agents: hub.agents.size,
    openIncidents: (await hub.incidents({ open: true })).length,
  });
  const basePath = builtBasePath(APP_DIR);
  const app = next({ dev: config.dev, dir: APP_DIR, conf: nextConfig(basePath) });
  await app.prepare();
  const handle = app.getRequestHandler();
  const nextUpgrade = app.getUpgradeHandler();
  const kc = await startKube(config, hub, logger);
  if (config.agentToken === null && (kc === null || config.agentServiceAccount === null)) {
    throw new Error(
      "agents.serviceAccount: agents can only sign in with ServiceAccount tokens, which needs Kubernetes access: set agents.tokenFile, or run in a cluster (or give kubernetes.kubeconfig)",
    );
  }
  let users = config.auth.users;
  if (users.length === 0 && config.auth.proxy === null) {
    const b = await bootstrapAdmin(store.settings, config.storage.path, Date.now());
    users = [b.user];
    logger.warn("auth.bootstrap_admin", {
      user: "admin",
      passwordFile: b.file,
      created: b.created,
      hint: "sign in as admin with the password in that file; list users under auth.users (whohas-hub hash-password) to replace it",
    });
  }
  const auth = await Auth.open(
    {
      users,
      proxy: config.auth.proxy,
      sessionTtlMs: config.auth.sessionTtlMs,
      trustedProxies: config.auth.trustedProxies,
      viewerToken: config.viewerToken,
    },
    store.access,
    store.settings,
    logger,
  );
  const settings = new Settings({
    settings: store.settings,
    access: store.access,
    audit: store.audit,
    fileRetentionMs: config.storage.retentionMs,
    users,
    methods: auth.methods,
    clock: Date.now,
  });
  const receivers = async (): Promise<Receiver[]> => [
    ...config.webhooks,
    ...(await store.outbox.receivers()).map((r) => ({
      name: r.name,
      url: r.url,
      format: r.format,
      secret: r.secret,
      source: "settings" as const,
    })),
  ];
  const atStart = await receivers();
  const probeEvery = config.backgroundProbeMs;
  const server = createHubServer({
    hub,
    metricsToken: config.metricsToken,
    dev: config.dev,
    agentLimits: config.limits,
    agentsAllowProxied: config.agentsAllowProxied,
    connections: { max: config.limits.maxConnections, perAddress: config.limits.connectionsPerAddress },
    evidenceMaxFileBytes: config.evidence.maxFileBytes,
    agentToken: config.agentToken,
    agentReviewer: kc !== null && config.agentServiceAccount !== null ? tokenReviewer(kc, config.agentServiceAccount) : undefined,
    auth,
    actions: (agents) => new Actions({ hub, agents, logger, probeMs: config.actions.probeMs, announceMs: config.actions.announceMs }),
    backgroundProbe:
      probeEvery === null
        ? undefined
        : (agents, metrics, actions) =>
            new BackgroundProbe({
              hub,
              agents,
              intervalMs: probeEvery,
              logger,
              paused: () => actions?.busy === true,
              onOutcome: (outcome) => metrics.backgroundProbes.inc({ outcome }),
            }),
    settings,
    remediation:
      kc === null
        ? undefined
        : (actions) =>
            new Remediation({
              kc,
              hub,
              actions: () => actions,
              logger,
              rolloutTimeoutMs: config.actions.fixRolloutTimeoutMs,
              sysctlTimeoutMs: config.actions.fixNodesTimeoutMs,
            }),
    alerter: (metrics) => {
      // Every receiver's series from zero: a counter that first appears at 1 shows no increase, so the first failed
      // delivery would move no panel and fire no alert.
      for (const r of atStart) for (const outcome of OUTCOMES) metrics.deliveries.inc({ receiver: r.name, outcome }, 0);
      return new Alerter({
        hub,
        outbox: store.outbox,
        settings: store.settings,
        receivers,
        policy: config.alerting,
        logger,
        onOutcome: (receiver, outcome) => metrics.deliveries.inc({ receiver, outcome }),
      });
    },
    logger,
    basePath,
    pages: (req, res) => void handle(req, res),
    otherUpgrade: config.dev ? (req, socket, head) => void nextUpgrade(req, socket, head) : undefined,
  });
  logger.info("alerting", {
    receivers: atStart.map((r) => `${r.name} (${r.format}, ${r.source})`),
    groupWaitMs: config.alerting.groupWaitMs,
    repeatIntervalMs: config.alerting.repeatIntervalMs,
  });
  const storageHint =
    opened.db.dialect === "sqlite"
      ? `check free space and permissions of ${opened.where}`
      : `check that PostgreSQL at ${opened.where} is up and reachable (store.postgres_connection_lost says when it was lost)`;
  return { hub, server, settings, basePath, storageHint };
}

/** logIncidents writes every incident's life to the log, from the hub's feed. */
async function logIncidents(hub: Hub, logger: Logger, signal: AbortSignal): Promise<void> {
  for await (const batch of hub.feed.changes(signal)) {
    for (const c of batch) {
      if (c.kind !== "incident" || c.transition === null) continue;
      const f = c.transition.finding;
      logger.info(`incident.${c.transition.kind}`, { id: c.id, ip: f.ip, type: f.type, macs: f.macs, detail: f.detail });
    }
  }
}

async function main(): Promise<void> {
  // Started by bin/whohas-hub.js with a heap bound: if that parent is killed, the hub goes as abruptly (no flush).
  if (process.send !== undefined) process.once("disconnect", () => process.kill(process.pid, "SIGKILL"));
  // The channel only watches the launcher: it must not keep a one-shot command (--help, hash-password) running.
  process.channel?.unref();
  // A log sink that went away (whatever read our output died) ends the hub, as SIGPIPE ends a C daemon: otherwise
  // each failed write is reported by writing again, and the process spins at full CPU for ever.
  for (const out of [process.stdout, process.stderr]) {
    out.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE" || e.code === "ECONNRESET" || e.code === "ERR_STREAM_DESTROYED") process.exit(141);
    });
  }
  const args = parseArgs({ options: { config: { type: "string" }, help: { type: "boolean" } }, strict: true, allowPositionals: true });
  if (args.values.help === true) return void process.stdout.write(HELP);
  if (args.positionals[0] === "hash-password") return hashFromStdin();
  if (args.positionals.length > 0) throw new Error(`unknown command "${args.positionals.join(" ")}"\n\n${HELP}`);

  const config = loadConfig(args.values.config ?? null);
  const logger = jsonLogger("hub", (line) => process.stderr.write(line), undefined, config.logLevel);
  const { leadership, endStandby } = await standUntilLeading(config, logger, ["/agent", `${builtBasePath(APP_DIR)}/agent`]);
  const { hub, server, settings, basePath, storageHint } = await compose(config, logger);
  if (leadership !== null) await takeOffice(hub.store.settings, config, logger);
  await endStandby();
  const feedLog = new AbortController();
  void logIncidents(hub, logger, feedLog.signal);
  server.alerter?.start();
  server.evidence.start();
  server.backgroundProbe?.start();
  logger.info("background_probe", {
    intervalMs: config.backgroundProbeMs,
    hint:
      config.backgroundProbeMs === null
        ? "off (backgroundProbe.interval: off): hosts that answer only off-cluster clients go unseen"
        : undefined,
  });
  const scheduler = new Scheduler({
    hub,
    logger,
    retentionMs: async () => (await settings.retention()).ms,
    storageHint,
    timer: (pass) => server.metrics.tickSeconds.startTimer({ pass }),
  });
  scheduler.start();
  // Near the heap's bound the live view gives up its least recently active IPs rather than the hub running out.
  const stopHeapWatch = watchHeap((sample) => hub.traffic.heap(sample, Date.now()));

  const tcp = await listen(server.createServer(config.tls), config.listen);
  logger.info("hub.listening", {
    url: `${config.tls === null ? "http" : "https"}://localhost:${portOf(tcp, config.listen.port)}${basePath}/`,
    tls: config.tls !== null,
    host: config.listen.host,
    readApi: config.viewerToken !== null,
    signIn: settings.methods,
    basePath,
  });
  const metrics = await listen(createServer(server.metricsListener), config.metricsListen);
  logger.info("hub.listening_metrics", {
    host: config.metricsListen.host,
    port: portOf(metrics, config.metricsListen.port),
    token: config.metricsToken !== null,
  });
  let unix: Server | null = null;
  if (config.agentSocket !== null) {
    rmSync(config.agentSocket, { force: true });
    unix = await listen(server.createServer(), config.agentSocket);
    logger.info("hub.listening_unix", { path: config.agentSocket });
  }

  const stop = (signal: string) => {
    logger.info("hub.stopping", { signal });
    feedLog.abort();
    stopHeapWatch();
    server.alerter?.stop();
    server.evidence.stop();
    server.backgroundProbe?.stop();
    server.gateway.close();
    for (const s of [tcp, metrics, unix]) {
      s?.close();
      s?.closeAllConnections();
    }
    // Everything buffered reaches the database before the process goes.
    scheduler
      .stop()
      .then(() => hub.store.close())
      // Only after the last write: a standby takes over the moment the lock is free.
      .then(() => leadership?.release())
      .catch((e: unknown) => logger.error("store.close_failed", { message: (e as Error).message }))
      .finally(() => setTimeout(() => process.exit(0), 200).unref());
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

main().catch((e: unknown) => {
  process.stderr.write(`whohas-hub: ${(e as Error).message}\n`);
  process.exit(1);
});
