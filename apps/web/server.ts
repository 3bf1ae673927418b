// The whohas hub: one Node process (bundled to dist/server.js, so the Next app dir is one level up) serving Next.js,
// tRPC, the read API and the agent WebSocket (STYLE 8). Started as `whohas-hub --config FILE`.
import { rmSync } from "node:fs";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import next from "next";
import { Actions } from "./src/server/actions/actions.js";
import { Alerter } from "./src/server/alerts/alerter.js";
import type { Receiver } from "./src/server/alerts/receivers.js";
import { Auth } from "./src/server/auth/auth.js";
import { Remediation } from "./src/server/remediation/remediation.js";
import { bootstrapAdmin } from "./src/server/auth/bootstrap.js";
import { hashPassword } from "./src/server/auth/passwords.js";
import { ENV_OVERRIDES, applyBuiltBasePath, loadConfig } from "./src/server/config.js";
import { createHubServer } from "./src/server/http.js";
import { Hub } from "./src/server/hub/hub.js";
import { loadKubeConfig, startInventory } from "./src/server/kube/inventory.js";
import { tokenReviewer } from "./src/server/kube/token-review.js";
import { registerHub } from "./src/server/registry.js";
import { Settings } from "./src/server/settings.js";
import { openSqlite } from "./src/server/store/db.js";
import { MAX_ROWS_PER_FLUSH, Store } from "./src/server/store/store.js";
import { jsonLogger } from "@whohas/core";

const HELP = `whohas-hub: the whohas hub and dashboard

Usage: whohas-hub [--config FILE]
       whohas-hub hash-password < password-file

  --config FILE   YAML configuration (see apps/web/config.example.yaml); every key is optional except the agent token
  --help          this text

  hash-password   reads a password on stdin and prints its argon2id hash for auth.users[].passwordHash, e.g.
                  printf '%s' 'the password' | whohas-hub hash-password

Environment overrides (they win over the file):
${Object.entries(ENV_OVERRIDES).map(([k, v]) => `  ${k.padEnd(26)} ${v}`).join("\n")}

Endpoints: / (dashboard, sign in at /login), /agent (agents' WebSocket), /api/v1/{ips,ips/IP,nodes,incidents} (read
API, Bearer token), /api/auth/{login,logout,me}, /api/trpc (dashboard API), /healthz, /readyz; /metrics on a port
of its own (metrics.listen, 9473 unless set).
`;

/** TICK_MS: how often the hub judges IPs and writes what it buffered. */
const TICK_MS = 1000;
/** FAST_TICK_MS: how often the IPs agents just reported are judged between the rounds. */
const FAST_TICK_MS = 100;
/** JUDGE_SLICE / WRITE_SLICE: IPs judged, rows written, between two turns of the event loop (a few ms each). */
const JUDGE_SLICE = 2500;
const WRITE_SLICE = 1500;
/** PRUNE_EVERY_MS: how often retention runs (in small batches that yield to ingest). */
const PRUNE_EVERY_MS = 10 * 60_000;

async function main(): Promise<void> {
  // Started by bin/whohas-hub.js with a heap bound: if that parent is killed, the hub goes as abruptly (no flush).
  if (process.send !== undefined) process.once("disconnect", () => process.kill(process.pid, "SIGKILL"));
  // The channel only watches the launcher: it must not keep a one-shot command (--help, hash-password) running.
  process.channel?.unref();
  const args = parseArgs({ options: { config: { type: "string" }, help: { type: "boolean" } }, strict: true, allowPositionals: true });
  if (args.values.help === true) {
    process.stdout.write(HELP);
    return;
  }
  if (args.positionals[0] === "hash-password") {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    const password = Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
    if (password.length < 8) throw new Error("hash-password: give a password of at least 8 characters on stdin");
    process.stdout.write(`${await hashPassword(password)}\n`);
    return;
  }
  if (args.positionals.length > 0) throw new Error(`unknown command "${args.positionals.join(" ")}"\n\n${HELP}`);
  const config = loadConfig(args.values.config ?? null);
  const logger = jsonLogger("hub", (line) => process.stderr.write(line), undefined, config.logLevel);
  const store = new Store(openSqlite(config.storage.path), Date.now());
  const hub = new Hub({
    store,
    restoreMs: config.storage.retentionMs,
    limits: config.limits,
    onLimit: (s) =>
      logger.warn("hub.limit_reached", {
        ...s,
        hint: "the least recently active IPs left the live view (their history stays in storage) and the oldest MACs of crowded IPs were summed; raise limits.maxIps / limits.maxMacsPerIp if this network is really this large",
      }),
  });
  registerHub(hub);
  logger.info("store.opened", { path: config.storage.path, retentionMs: config.storage.retentionMs, agents: hub.agents().length, openIncidents: hub.incidents({ open: true }).length });

  const appDir = fileURLToPath(new URL("..", import.meta.url));
  const basePath = applyBuiltBasePath(appDir);
  const app = next({ dev: config.dev, dir: appDir });
  await app.prepare();
  const handle = app.getRequestHandler();
  const nextUpgrade = app.getUpgradeHandler();
  let kc: ReturnType<typeof loadKubeConfig> | null = null;
  if (config.kubernetes !== null) {
    kc = loadKubeConfig(config.kubernetes === "in-cluster" ? null : config.kubernetes);
    const inventory = await startInventory(kc, () => hub.clusterChanged(), logger);
    hub.setCluster(inventory);
    logger.info("kube.connected", { source: config.kubernetes, server: kc.getCurrentCluster()?.server, metallb: inventory.metallb });
  } else {
    logger.info("kube.off", { hint: "set kubernetes.kubeconfig (or WHOHAS_KUBECONFIG), or run in a pod, to join traffic with Services and expected owners" });
  }
  if (config.agentToken === null && (kc === null || config.agentServiceAccount === null)) {
    logger.error("config.invalid", { key: "agents.serviceAccount", message: "agents can only sign in with ServiceAccount tokens, which needs Kubernetes access: set agents.tokenFile, or run in a cluster (or give kubernetes.kubeconfig)" });
    process.exit(2);
  }
  let users = config.auth.users;
  if (users.length === 0 && config.auth.proxy === null) {
    const b = await bootstrapAdmin(store, config.storage.path, Date.now());
    users = [b.user];
    logger.warn("auth.bootstrap_admin", { user: "admin", passwordFile: b.file, created: b.created, hint: "sign in as admin with the password in that file; list users under auth.users (whohas-hub hash-password) to replace it" });
  }
  const auth = new Auth({ users, proxy: config.auth.proxy, sessionTtlMs: config.auth.sessionTtlMs, trustedProxies: config.auth.trustedProxies, viewerToken: config.viewerToken }, store, logger);
  const settings = new Settings(store, config.storage.retentionMs, users, auth.methods);
  const receivers = (): Receiver[] => [...config.webhooks, ...store.outbox.receivers().map((r) => ({ name: r.name, url: r.url, format: r.format, secret: r.secret, source: "settings" as const }))];
  hub.onTransition((t, id) => logger.info(`incident.${t.kind}`, { id, ip: t.finding.ip, type: t.finding.type, macs: t.finding.macs, detail: t.finding.detail }));
  const server = createHubServer({
    hub,
    metricsToken: config.metricsToken,
    dev: config.dev,
    agentLimits: config.limits,
    agentToken: config.agentToken,
    agentReviewer: kc !== null && config.agentServiceAccount !== null ? tokenReviewer(kc, config.agentServiceAccount) : undefined,
    auth,
    actions: (agents) => new Actions({ hub, agents, logger, probeMs: config.actions.probeMs, announceMs: config.actions.announceMs }),
    settings,
    remediation: kc === null ? undefined : (actions) => new Remediation({ kc, hub, actions: () => actions, logger }),
    alerter: (metrics) =>
      new Alerter({ hub, outbox: store.outbox, receivers, policy: config.alerting, logger, onOutcome: (receiver, outcome) => metrics.deliveries.inc({ receiver, outcome }) }),
    logger,
    basePath,
    pages: (req, res) => void handle(req, res),
    otherUpgrade: config.dev ? (req, socket, head) => void nextUpgrade(req, socket, head) : undefined,
  });

  server.alerter?.start();
  logger.info("alerting", { receivers: receivers().map((r) => `${r.name} (${r.format}, ${r.source})`), groupWaitMs: config.alerting.groupWaitMs, repeatIntervalMs: config.alerting.repeatIntervalMs });

  // Once a second the hub judges its IPs, and half a second later writes what it buffered; both in slices with
  // network I/O served between them, so that tens of thousands of IPs never pause the event loop for long.
  const slice = () => new Promise((r) => setImmediate(r));
  let judging = false;
  let writing = false;
  const judge = async () => {
    if (judging) return; // the previous round is still going: this second is skipped
    judging = true;
    const end = server.metrics.tickSeconds.startTimer({ pass: "judge" });
    try {
      do {
        hub.tick(JUDGE_SLICE);
        await slice();
      } while (hub.ticking);
    } catch (e) {
      logger.error("hub.tick_failed", { message: (e as Error).message });
    }
    end();
    judging = false;
  };
  const write = async () => {
    if (writing) return;
    writing = true;
    const end = server.metrics.tickSeconds.startTimer({ pass: "write" });
    try {
      for (let written = 0; written < MAX_ROWS_PER_FLUSH; ) {
        const n = hub.flush(false, WRITE_SLICE);
        written += n;
        if (n < WRITE_SLICE) break;
        await slice();
      }
    } catch (e) {
      // A full disk or a locked database must not stop ingest: the live view goes on, the error says what to fix.
      logger.error("store.write_failed", { message: (e as Error).message, hint: `check free space and permissions of ${config.storage.path}` });
    }
    end();
    writing = false;
  };
  const tick = setInterval(() => void judge(), TICK_MS);
  // Between the rounds, what agents just reported is judged at once: a second responder becomes an incident (and a
  // notification) within a fraction of a second.
  const fast = setInterval(() => {
    if (judging) return;
    try {
      hub.tickTouched();
    } catch (e) {
      logger.error("hub.tick_failed", { message: (e as Error).message });
    }
  }, FAST_TICK_MS);
  let writer: NodeJS.Timeout | null = null;
  const offset = setTimeout(() => (writer = setInterval(() => void write(), TICK_MS)), TICK_MS / 2);
  const prune = async () => {
    let removed = 0;
    for (let n = -1; n !== 0; ) {
      n = store.pruneStep(Date.now(), settings.retention().ms);
      removed += n;
      await new Promise((r) => setImmediate(r));
    }
    if (removed > 0) logger.info("store.pruned", { rows: removed });
  };
  const pruner = setInterval(() => void prune().catch((e: unknown) => logger.error("store.prune_failed", { message: (e as Error).message })), PRUNE_EVERY_MS);
  void prune();

  const tcp = server.createServer(config.tls);
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(config.listen.port, config.listen.host, resolve);
  });
  const address = tcp.address();
  const port = typeof address === "object" && address !== null ? address.port : config.listen.port;
  logger.info("hub.listening", { url: `${config.tls === null ? "http" : "https"}://localhost:${port}${basePath}/`, tls: config.tls !== null, host: config.listen.host, readApi: config.viewerToken !== null, signIn: auth.methods, basePath });
  const metricsServer = createServer(server.metricsListener);
  const at = config.metricsListen;
  await new Promise<void>((resolve, reject) => {
    metricsServer.once("error", (e: NodeJS.ErrnoException) => reject(e.code === "EADDRINUSE" ? new Error(`metrics.listen: ${at.host}:${at.port} is in use (set metrics.listen or WHOHAS_METRICS_LISTEN to a free port)`) : e));
    metricsServer.listen(at.port, at.host, resolve);
  });
  const metricsAddress = metricsServer.address();
  logger.info("hub.listening_metrics", { host: at.host, port: typeof metricsAddress === "object" && metricsAddress !== null ? metricsAddress.port : at.port, token: config.metricsToken !== null });
  const unix = config.agentSocket === null ? null : server.createServer();
  if (unix !== null && config.agentSocket !== null) {
    rmSync(config.agentSocket, { force: true });
    await new Promise<void>((resolve, reject) => {
      unix.once("error", reject);
      unix.listen(config.agentSocket ?? "", resolve);
    });
    logger.info("hub.listening_unix", { path: config.agentSocket });
  }
  const stop = (signal: string) => {
    logger.info("hub.stopping", { signal });
    clearInterval(tick);
    clearInterval(fast);
    clearTimeout(offset);
    if (writer !== null) clearInterval(writer);
    clearInterval(pruner);
    server.alerter?.stop();
    server.gateway.close();
    tcp.close();
    metricsServer.close();
    unix?.close();
    tcp.closeAllConnections();
    unix?.closeAllConnections();
    // Everything buffered reaches the disk before the process goes.
    while (hub.ticking) hub.tick();
    hub.tick();
    hub.flush(true);
    store.close();
    setTimeout(() => process.exit(0), 200).unref();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

main().catch((e: unknown) => {
  process.stderr.write(`whohas-hub: ${(e as Error).message}\n`);
  process.exit(1);
});
