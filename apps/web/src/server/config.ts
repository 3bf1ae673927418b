import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import type { LocalUser, ProxyAuth } from "./auth/auth.js";
import { trustList } from "./client-address.js";
import { HASH_PREFIX } from "./auth/passwords.js";
import { DEFAULT_POLICY, checkUrl, type AlertPolicy, type Receiver } from "./alerts/receivers.js";
import { Egress } from "./alerts/egress.js";
import { FORMATS } from "./store/outbox.js";
import { ROLES } from "./auth/roles.js";

/**
 * HubConfig is the hub's whole configuration: a YAML file (`whohas-hub --config FILE`) with environment overrides,
 * read here and nowhere else (STYLE 3). See `config.example.yaml` for every key.
 */
export interface HubConfig {
  readonly listen: { readonly host: string; readonly port: number };
  /**
   * The listener of /metrics (and /healthz, /readyz), never the dashboard's: an Ingress in front of the dashboard
   * does not publish the metrics. Port 9473 on the dashboard's host unless set.
   */
  readonly metricsListen: { readonly host: string; readonly port: number };
  /** The Bearer token /metrics asks for (metrics.tokenFile); null: open to whoever reaches the metrics port. */
  readonly metricsToken: string | null;
  readonly dev: boolean;
  readonly storage: { readonly path: string; readonly retentionMs: number };
  /** The shared bearer token agents may present on /agent; null when they authenticate only with ServiceAccount tokens. */
  readonly agentToken: string | null;
  /** Extra Unix socket for agents (the lab's agents live in other network namespaces). */
  readonly agentSocket: string | null;
  /** Agents' ServiceAccount ("namespace:name"), whose tokens (audience whohas) are accepted by TokenReview; null: off. */
  readonly agentServiceAccount: string | null;
  /** Whether agents may connect through a proxy (X-Forwarded-For / Forwarded); off, an Ingress cannot publish /agent. */
  readonly agentsAllowProxied: boolean;
  /** Bearer token accepted by the read API (/api/v1/*); null: the read API answers 401 with how to enable it. */
  readonly viewerToken: string | null;
  /** Kubernetes: a kubeconfig path, "in-cluster", or null for traffic-only mode. */
  readonly kubernetes: string | null;
  readonly logLevel: "info" | "warn" | "error";
  /** Who may use the dashboard: local users (from the file and auth.usersFile) and an authenticating proxy. */
  readonly auth: { readonly users: readonly LocalUser[]; readonly proxy: ProxyAuth | null; readonly sessionTtlMs: number; readonly trustedProxies: readonly string[] };
  /** HTTPS/WSS: the certificate chain and key (PEM); null: plain HTTP (behind a TLS-terminating ingress). */
  readonly tls: { readonly cert: string; readonly key: string } | null;
  /** Notification policy (group_wait, repeat_interval, the per-IP cap) and the receivers of the file and environment. */
  readonly alerting: AlertPolicy;
  readonly webhooks: readonly Receiver[];
  /** How long the dashboard's actions run: Probe (60 s) and Force re-announce (MetalLB's 5 s). */
  readonly actions: { readonly probeMs: number; readonly announceMs: number };
  /** What the hub tracks in memory at most: IPs (least recently active let go) and MACs per IP (oldest folded). */
  readonly limits: {
    readonly maxIps: number;
    readonly maxMacsPerIp: number;
    readonly maxAgents: number;
    readonly newIpsPerAgentPerMinute: number;
    readonly newIpsPerMinute: number;
    /** Open connections the hub takes at most (agents, browsers, API clients), and from one address. */
    readonly maxConnections: number;
    readonly connectionsPerAddress: number;
  };
}

/** MIN_TOKEN_LEN refuses guessable tokens: `openssl rand -hex 32` gives 64. */
export const MIN_TOKEN_LEN = 16;

const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** parseDuration reads "7d", "12h", "30m", "10s", "500ms"; null when it is none of these. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text.trim());
  if (m === null) return null;
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

const duration = z.string().refine((s) => parseDuration(s) !== null, 'a duration such as "7d", "12h" or "30m"');
const listen = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/, 'host:port, e.g. "0.0.0.0:3000"');

const role = z.enum(ROLES);
const user = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, "letters, digits, . _ @ - (at most 64)"),
  passwordHash: z.string().startsWith(HASH_PREFIX, `an argon2id hash (${HASH_PREFIX}...): make one with \`whohas-hub hash-password\``),
  role,
});
const users = z.array(user).max(1000);

const FileSchema = z.strictObject({
  listen: listen.optional(),
  metrics: z.strictObject({ listen: listen.optional(), tokenFile: z.string().min(1).optional() }).optional(),
  storage: z.strictObject({ path: z.string().min(1).optional(), retention: duration.optional() }).optional(),
  agents: z
    .strictObject({
      tokenFile: z.string().min(1).optional(),
      socket: z.string().min(1).optional(),
      serviceAccount: z.string().regex(/^[a-z0-9-]+:[a-z0-9.-]+$/, 'the agents\' ServiceAccount as "namespace:name", e.g. "whohas:whohas-agent"').optional(),
      allowProxied: z.boolean().optional(),
    })
    .optional(),
  api: z.strictObject({ viewerTokenFile: z.string().min(1).optional() }).optional(),
  kubernetes: z.strictObject({ kubeconfig: z.string().min(1).optional(), enabled: z.boolean().optional() }).nullable().optional(),
  log: z.strictObject({ level: z.enum(["info", "warn", "error"]).optional() }).optional(),
  auth: z
    .strictObject({
      users: users.optional(),
      usersFile: z.string().min(1).optional(),
      proxy: z
        .strictObject({
          userHeader: z.string().regex(/^[A-Za-z0-9-]+$/, "an HTTP header name"),
          groupsHeader: z.string().regex(/^[A-Za-z0-9-]+$/, "an HTTP header name").optional(),
          trustedProxies: z.array(z.string()).min(1, "name the proxy's addresses or CIDRs: its headers are trusted from there only"),
          groupRoles: z.record(z.string(), role).optional(),
          defaultRole: role.optional(),
        })
        .optional(),
      sessionTtl: duration.optional(),
      trustedProxies: z.array(z.string()).optional(),
    })
    .optional(),
  tls: z.strictObject({ certFile: z.string().min(1), keyFile: z.string().min(1) }).optional(),
  actions: z.strictObject({ probeDuration: duration.optional(), announceDuration: duration.optional() }).optional(),
  limits: z
    .strictObject({
      maxIps: z.number().int().min(100, "at least 100").max(10_000_000).optional(),
      maxMacsPerIp: z.number().int().min(2, "at least 2").max(10_000).optional(),
      maxAgents: z.number().int().min(1).max(100_000).optional(),
      newIpsPerAgentPerMinute: z.number().int().min(10, "at least 10").max(10_000_000).optional(),
      newIpsPerMinute: z.number().int().min(10, "at least 10").max(100_000_000).optional(),
      maxConnections: z.number().int().min(16, "at least 16").max(1_000_000).optional(),
      connectionsPerAddress: z.number().int().min(4, "at least 4").max(1_000_000).optional(),
    })
    .optional(),
  alerting: z
    .strictObject({
      groupWait: z.union([duration, z.literal(0), z.literal("0")]).optional(),
      repeatInterval: duration.optional(),
      maxPerIpPerHour: z.number().int().min(1).max(1000).optional(),
      maxPerMinute: z.number().int().min(1).max(100_000).optional(),
      sendResolved: z.boolean().optional(),
      allowHosts: z.array(z.string().min(1)).optional(),
      allowPrivate: z.boolean().optional(),
      externalUrl: z.string().url().optional(),
    })
    .optional(),
  webhooks: z
    .array(
      z.strictObject({
        name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (at most 64)"),
        url: z.string().min(1),
        format: z.enum(FORMATS).default("generic"),
        secretFile: z.string().min(1).optional(),
      }),
    )
    .max(50)
    .optional(),
});
type FileConfig = z.infer<typeof FileSchema>;

/** ENV documents each environment override and the config key it replaces (README "Configuration"). */
export const ENV_OVERRIDES = {
  WHOHAS_LISTEN: "listen",
  WHOHAS_METRICS_LISTEN: "metrics.listen",
  WHOHAS_METRICS_TOKEN_FILE: "metrics.tokenFile",
  PORT: "listen (port only)",
  HOST: "listen (host only)",
  WHOHAS_STORAGE_PATH: "storage.path",
  WHOHAS_RETENTION: "storage.retention",
  WHOHAS_AGENT_TOKEN: "agents.tokenFile (the token itself)",
  WHOHAS_AGENT_TOKEN_FILE: "agents.tokenFile",
  WHOHAS_AGENT_SOCKET: "agents.socket",
  WHOHAS_AGENT_SERVICE_ACCOUNT: "agents.serviceAccount",
  WHOHAS_VIEWER_TOKEN: "api.viewerTokenFile (the token itself)",
  WHOHAS_VIEWER_TOKEN_FILE: "api.viewerTokenFile",
  WHOHAS_KUBECONFIG: 'kubernetes.kubeconfig ("off": traffic-only)',
  WHOHAS_LOG_LEVEL: "log.level",
  WHOHAS_USERS_FILE: "auth.usersFile",
  WHOHAS_TRUSTED_PROXIES: "auth.trustedProxies (comma-separated)",
  WHOHAS_PROBE_DURATION: "actions.probeDuration",
  WHOHAS_TLS_CERT_FILE: "tls.certFile",
  WHOHAS_TLS_KEY_FILE: "tls.keyFile",
  WHOHAS_WEBHOOK_URL: "webhooks (one more receiver, named env)",
  WHOHAS_WEBHOOK_FORMAT: "its format: generic, slack or alertmanager",
  WHOHAS_WEBHOOK_SECRET_FILE: "its signing secret",
} as const;

/** A ConfigError names the key at fault and why, so start-up can fail with one line a person can act on. */
export class ConfigError extends Error {
  constructor(readonly key: string, reason: string) {
    super(`${key}: ${reason}`);
  }
}

function readToken(key: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (e) {
    throw new ConfigError(key, `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (text.length < MIN_TOKEN_LEN) throw new ConfigError(key, `the token in ${path} must be at least ${MIN_TOKEN_LEN} characters (try: openssl rand -hex 32 > ${path})`);
  return text;
}

function checkToken(key: string, token: string): string {
  if (token.length < MIN_TOKEN_LEN) throw new ConfigError(key, `must be at least ${MIN_TOKEN_LEN} characters (try: openssl rand -hex 32)`);
  return token;
}

function readFile(path: string): FileConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError("--config", `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text) ?? {};
  } catch (e) {
    throw new ConfigError(path, `not valid YAML: ${(e as Error).message.split("\n")[0] ?? ""}`);
  }
  const r = FileSchema.safeParse(doc);
  if (!r.success) {
    const i = r.error.issues[0];
    const key = [...(i?.path ?? []).map(String), ...(i?.code === "unrecognized_keys" ? i.keys : [])].join(".");
    const reason = i?.code === "unrecognized_keys" ? "unknown key (see config.example.yaml)" : (i?.message ?? "invalid");
    throw new ConfigError(key === "" ? path : key, reason);
  }
  return r.data;
}

function splitListen(text: string, key: string): { host: string; port: number } {
  const i = text.lastIndexOf(":");
  const port = Number(text.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(key, `port ${text.slice(i + 1)} is not 0-65535`);
  return { host: text.slice(0, i).replace(/^\[|\]$/g, ""), port };
}

/** The defaults of every key: what a deployment gets with an empty file. */
export const DEFAULTS = {
  listen: "0.0.0.0:3000",
  storagePath: "/var/lib/whohas/whohas.db",
  retention: "7d",
  sessionTtl: "12h",
  probeDuration: "60s",
  announceDuration: "5s",
  maxIps: 100_000,
  maxMacsPerIp: 64,
  metricsPort: 9473,
  maxAgents: 5000,
  newIpsPerAgentPerMinute: 2000,
  newIpsPerMinute: 10_000,
  maxConnections: 10_000,
  connectionsPerAddress: 256,
} as const;

/** readUsers reads a users file: a YAML list of { name, passwordHash, role } (such as a mounted Secret's key). */
function readUsers(key: string, path: string): LocalUser[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, "utf8")) ?? [];
  } catch (e) {
    throw new ConfigError(key, `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message.split("\n")[0] ?? ""})`);
  }
  const r = users.safeParse(doc);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new ConfigError(`${path}: ${(i?.path ?? []).map(String).join(".")}`, i?.message ?? "invalid");
  }
  return r.data;
}

/** readPem reads a PEM file and checks it holds what it should (a certificate, a private key). */
function readPem(key: string, path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(key, `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (!new RegExp(`-----BEGIN [A-Z ]*${what}-----`).test(text)) throw new ConfigError(key, `${path} holds no PEM ${what.toLowerCase()}`);
  return text;
}

function durationMs(key: string, text: string, min: number): number {
  const ms = parseDuration(text);
  if (ms === null || ms < min) throw new ConfigError(key, `"${text}" must be a duration of at least ${min} ms`);
  return ms;
}

/**
 * loadConfig reads `--config FILE` (optional) and the environment, environment winning, and validates the result.
 * Throws a ConfigError naming the key and the reason.
 */
export function loadConfig(configPath: string | null, env: Readonly<Record<string, string | undefined>> = process.env): HubConfig {
  const f = configPath === null ? {} : readFile(configPath);
  let listenAt = splitListen(f.listen ?? DEFAULTS.listen, "listen");
  if (env.WHOHAS_LISTEN !== undefined) {
    if (!listen.safeParse(env.WHOHAS_LISTEN).success) throw new ConfigError("WHOHAS_LISTEN", 'host:port, e.g. "0.0.0.0:3000"');
    listenAt = splitListen(env.WHOHAS_LISTEN, "WHOHAS_LISTEN");
  }
  if (env.PORT !== undefined) listenAt = { ...listenAt, port: splitListen(`x:${env.PORT}`, "PORT").port };
  if (env.HOST !== undefined) listenAt = { ...listenAt, host: env.HOST };
  let metricsListen = f.metrics?.listen === undefined ? { host: listenAt.host, port: DEFAULTS.metricsPort } : splitListen(f.metrics.listen, "metrics.listen");
  if (env.WHOHAS_METRICS_LISTEN !== undefined) {
    if (!listen.safeParse(env.WHOHAS_METRICS_LISTEN).success) throw new ConfigError("WHOHAS_METRICS_LISTEN", 'host:port, e.g. "0.0.0.0:9473"');
    metricsListen = splitListen(env.WHOHAS_METRICS_LISTEN, "WHOHAS_METRICS_LISTEN");
  }
  if (metricsListen.port === listenAt.port && metricsListen.port !== 0) throw new ConfigError("metrics.listen", `port ${metricsListen.port} is the dashboard's (listen): the metrics need a port of their own (9473 unless set)`);
  const metricsTokenFile = env.WHOHAS_METRICS_TOKEN_FILE ?? f.metrics?.tokenFile;
  const metricsToken = metricsTokenFile === undefined ? null : readToken(env.WHOHAS_METRICS_TOKEN_FILE !== undefined ? "WHOHAS_METRICS_TOKEN_FILE" : "metrics.tokenFile", metricsTokenFile);

  const retentionText = env.WHOHAS_RETENTION ?? f.storage?.retention ?? DEFAULTS.retention;
  const retentionMs = parseDuration(retentionText);
  if (retentionMs === null || retentionMs < 60_000) throw new ConfigError(env.WHOHAS_RETENTION !== undefined ? "WHOHAS_RETENTION" : "storage.retention", `"${retentionText}" must be a duration of at least 1m, such as "7d"`);

  let agentToken: string | undefined;
  if (env.WHOHAS_AGENT_TOKEN !== undefined) agentToken = checkToken("WHOHAS_AGENT_TOKEN", env.WHOHAS_AGENT_TOKEN);
  else if (env.WHOHAS_AGENT_TOKEN_FILE !== undefined) agentToken = readToken("WHOHAS_AGENT_TOKEN_FILE", env.WHOHAS_AGENT_TOKEN_FILE);
  else if (f.agents?.tokenFile !== undefined) agentToken = readToken("agents.tokenFile", f.agents.tokenFile);
  const agentServiceAccount = env.WHOHAS_AGENT_SERVICE_ACCOUNT ?? f.agents?.serviceAccount ?? null;
  if (agentServiceAccount !== null && !/^[a-z0-9-]+:[a-z0-9.-]+$/.test(agentServiceAccount)) throw new ConfigError("WHOHAS_AGENT_SERVICE_ACCOUNT", 'the agents\' ServiceAccount as "namespace:name", e.g. "whohas:whohas-agent"');
  if (agentToken === undefined && agentServiceAccount === null) throw new ConfigError("agents.tokenFile", "required: agents authenticate with this token (or set WHOHAS_AGENT_TOKEN_FILE), or with their ServiceAccount's token (agents.serviceAccount)");

  let viewerToken: string | null = null;
  if (env.WHOHAS_VIEWER_TOKEN !== undefined) viewerToken = checkToken("WHOHAS_VIEWER_TOKEN", env.WHOHAS_VIEWER_TOKEN);
  else if (env.WHOHAS_VIEWER_TOKEN_FILE !== undefined) viewerToken = readToken("WHOHAS_VIEWER_TOKEN_FILE", env.WHOHAS_VIEWER_TOKEN_FILE);
  else if (f.api?.viewerTokenFile !== undefined) viewerToken = readToken("api.viewerTokenFile", f.api.viewerTokenFile);

  // A kubeconfig when given; in a pod, the ServiceAccount; "off", `enabled: false` or nothing at all is traffic-only.
  const kubeconfig = env.WHOHAS_KUBECONFIG ?? (f.kubernetes?.enabled === false ? "off" : f.kubernetes?.kubeconfig);
  const kubernetes = kubeconfig === "off" ? null : (kubeconfig ?? (env.KUBERNETES_SERVICE_HOST !== undefined ? "in-cluster" : null));

  const level = env.WHOHAS_LOG_LEVEL ?? f.log?.level ?? "info";
  if (!["info", "warn", "error"].includes(level)) throw new ConfigError("WHOHAS_LOG_LEVEL", "one of info, warn, error");

  const localUsers = [...(f.auth?.users ?? [])];
  const usersFile = env.WHOHAS_USERS_FILE ?? f.auth?.usersFile;
  if (usersFile !== undefined) localUsers.push(...readUsers(env.WHOHAS_USERS_FILE !== undefined ? "WHOHAS_USERS_FILE" : "auth.usersFile", usersFile));
  const names = new Set<string>();
  for (const u of localUsers) {
    if (names.has(u.name)) throw new ConfigError("auth.users", `user "${u.name}" is listed twice`);
    names.add(u.name);
  }
  const p = f.auth?.proxy;
  if (p !== undefined) {
    try {
      trustList(p.trustedProxies);
    } catch (e) {
      throw new ConfigError("auth.proxy.trustedProxies", (e as Error).message);
    }
  }
  const trustedProxies = env.WHOHAS_TRUSTED_PROXIES !== undefined ? env.WHOHAS_TRUSTED_PROXIES.split(",").map((x) => x.trim()).filter((x) => x !== "") : (f.auth?.trustedProxies ?? []);
  try {
    trustList(trustedProxies);
  } catch (e) {
    throw new ConfigError(env.WHOHAS_TRUSTED_PROXIES !== undefined ? "WHOHAS_TRUSTED_PROXIES" : "auth.trustedProxies", (e as Error).message);
  }
  const proxy: ProxyAuth | null =
    p === undefined ? null : { userHeader: p.userHeader, groupsHeader: p.groupsHeader ?? null, trustedProxies: p.trustedProxies, groupRoles: p.groupRoles ?? {}, defaultRole: p.defaultRole ?? null };

  const certFile = env.WHOHAS_TLS_CERT_FILE ?? f.tls?.certFile;
  const keyFile = env.WHOHAS_TLS_KEY_FILE ?? f.tls?.keyFile;
  if ((certFile === undefined) !== (keyFile === undefined)) throw new ConfigError("tls", "give both certFile and keyFile (or neither, for plain HTTP)");
  const tls = certFile === undefined || keyFile === undefined ? null : { cert: readPem("tls.certFile", certFile, "CERTIFICATE"), key: readPem("tls.keyFile", keyFile, "PRIVATE KEY") };

  const allowHosts = f.alerting?.allowHosts ?? [];
  const egress = { allowHosts, allowPrivate: f.alerting?.allowPrivate ?? DEFAULT_POLICY.allowPrivate };
  try {
    new Egress(egress);
  } catch (e) {
    throw new ConfigError("alerting.allowHosts", (e as Error).message);
  }
  const webhooks: Receiver[] = (f.webhooks ?? []).map((w, i) => {
    const bad = checkUrl(w.url, egress);
    if (bad !== null) throw new ConfigError(`webhooks.${i}.url`, bad);
    return { name: w.name, url: w.url, format: w.format, secret: w.secretFile === undefined ? null : readToken(`webhooks.${i}.secretFile`, w.secretFile), source: "config" };
  });
  if (env.WHOHAS_WEBHOOK_URL !== undefined) {
    const bad = checkUrl(env.WHOHAS_WEBHOOK_URL, egress);
    if (bad !== null) throw new ConfigError("WHOHAS_WEBHOOK_URL", bad);
    const format = env.WHOHAS_WEBHOOK_FORMAT ?? "generic";
    if (!(FORMATS as readonly string[]).includes(format)) throw new ConfigError("WHOHAS_WEBHOOK_FORMAT", `one of ${FORMATS.join(", ")}`);
    const secret = env.WHOHAS_WEBHOOK_SECRET_FILE === undefined ? null : readToken("WHOHAS_WEBHOOK_SECRET_FILE", env.WHOHAS_WEBHOOK_SECRET_FILE);
    webhooks.push({ name: "env", url: env.WHOHAS_WEBHOOK_URL, format: format as Receiver["format"], secret, source: "env" });
  }
  const receiverNames = new Set<string>();
  for (const w of webhooks) {
    if (receiverNames.has(w.name)) throw new ConfigError("webhooks", `receiver "${w.name}" is listed twice`);
    receiverNames.add(w.name);
  }
  const gw = f.alerting?.groupWait;
  const alerting: AlertPolicy = {
    groupWaitMs: gw === undefined ? DEFAULT_POLICY.groupWaitMs : gw === 0 || gw === "0" ? 0 : (parseDuration(gw) ?? 0),
    repeatIntervalMs: f.alerting?.repeatInterval === undefined ? DEFAULT_POLICY.repeatIntervalMs : durationMs("alerting.repeatInterval", f.alerting.repeatInterval, 60_000),
    maxPerIpPerHour: f.alerting?.maxPerIpPerHour ?? DEFAULT_POLICY.maxPerIpPerHour,
    maxPerMinute: f.alerting?.maxPerMinute ?? DEFAULT_POLICY.maxPerMinute,
    sendResolved: f.alerting?.sendResolved ?? DEFAULT_POLICY.sendResolved,
    allowHosts,
    allowPrivate: egress.allowPrivate,
    externalUrl: f.alerting?.externalUrl ?? null,
  };

  return {
    listen: listenAt,
    metricsListen,
    metricsToken,
    dev: env.NODE_ENV === "development",
    storage: { path: env.WHOHAS_STORAGE_PATH ?? f.storage?.path ?? DEFAULTS.storagePath, retentionMs },
    agentToken: agentToken ?? null,
    agentSocket: env.WHOHAS_AGENT_SOCKET ?? f.agents?.socket ?? null,
    agentServiceAccount,
    agentsAllowProxied: f.agents?.allowProxied ?? false,
    viewerToken,
    kubernetes,
    logLevel: level as HubConfig["logLevel"],
    auth: { users: localUsers, proxy, sessionTtlMs: durationMs("auth.sessionTtl", f.auth?.sessionTtl ?? DEFAULTS.sessionTtl, 60_000), trustedProxies },
    tls,
    alerting,
    webhooks,
    actions: {
      probeMs: durationMs(env.WHOHAS_PROBE_DURATION !== undefined ? "WHOHAS_PROBE_DURATION" : "actions.probeDuration", env.WHOHAS_PROBE_DURATION ?? f.actions?.probeDuration ?? DEFAULTS.probeDuration, 1000),
      announceMs: durationMs("actions.announceDuration", f.actions?.announceDuration ?? DEFAULTS.announceDuration, 1000),
    },
    limits: {
      maxIps: f.limits?.maxIps ?? DEFAULTS.maxIps,
      maxMacsPerIp: f.limits?.maxMacsPerIp ?? DEFAULTS.maxMacsPerIp,
      maxAgents: f.limits?.maxAgents ?? DEFAULTS.maxAgents,
      newIpsPerAgentPerMinute: f.limits?.newIpsPerAgentPerMinute ?? DEFAULTS.newIpsPerAgentPerMinute,
      newIpsPerMinute: f.limits?.newIpsPerMinute ?? DEFAULTS.newIpsPerMinute,
      maxConnections: f.limits?.maxConnections ?? DEFAULTS.maxConnections,
      connectionsPerAddress: f.limits?.connectionsPerAddress ?? DEFAULTS.connectionsPerAddress,
    },
  };
}

/**
 * applyBuiltBasePath reads the path prefix the dashboard was built with (WHOHAS_BASE_PATH at `pnpm build`) from Next's
 * build output, and hands it to next.config.mjs, which Next evaluates again when the server starts: the two must
 * agree, whatever the environment of the running hub says. "" without a prefix (or in dev, or unbuilt).
 */
export function applyBuiltBasePath(appDir: string): string {
  let base = "";
  try {
    base = (JSON.parse(readFileSync(`${appDir}/.next/routes-manifest.json`, "utf8")) as { basePath?: string }).basePath ?? "";
  } catch {
    base = "";
  }
  process.env.WHOHAS_BASE_PATH = base;
  return base;
}
