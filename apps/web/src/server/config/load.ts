import { hostname, networkInterfaces } from "node:os";
import { DEFAULT_CLUSTER } from "@whohas/core";
import type { LocalUser, ProxyAuth } from "../auth/auth.js";
import { trustList } from "../client-address.js";
import { DEFAULT_POLICY, checkUrl, type AlertPolicy, type Receiver } from "../alerts/receivers.js";
import { Egress } from "../alerts/egress.js";
import { DEFAULT_MAX_FILE_BYTES } from "../evidence/evidence.js";
import { ConfigError, checkToken, readPem, readToken, readUsers, readYaml } from "./files.js";
import { ConfigSchema, DEFAULTS, ENV_KEYS, ENV_ONLY, parseDuration, type ConfigDoc } from "./schema.js";

/**
 * HubConfig is the hub's whole configuration: a YAML file (`whohas-hub --config FILE`) with environment overrides,
 * read here and nowhere else. See `config.example.yaml` for every key.
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
  /** SQLite at `path`, or PostgreSQL at `url` when given (`path`'s directory still holds the bootstrap password). */
  readonly storage: { readonly path: string; readonly url: string | null; readonly retentionMs: number };
  /**
   * One of several replicas on one PostgreSQL (ha.enabled): the replica holding the leader's lock serves everything,
   * the others stand by, not ready, until it is gone.
   */
  readonly ha: boolean;
  /**
   * The cluster this hub watches (cluster.name, "default" unless named): its agents must say the same, its rows are
   * in its own schema of a shared PostgreSQL, and the fleet's overview lists it under this name.
   */
  readonly clusterName: string;
  /** This replica's name in logs, on a standby's answers and in PostgreSQL's list of sessions: ha.name, or the host's. */
  readonly replicaName: string;
  /** Where the other replicas reach this one when it leads: ha.advertise, or this host's first IPv4 and the listen port. */
  readonly replicaUrl: string;
  /** Incidents' frames: the largest capture file the hub stores or serves. */
  readonly evidence: { readonly maxFileBytes: number };
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
  readonly auth: {
    readonly users: readonly LocalUser[];
    readonly proxy: ProxyAuth | null;
    readonly sessionTtlMs: number;
    readonly trustedProxies: readonly string[];
  };
  /** HTTPS/WSS: the certificate chain and key (PEM); null: plain HTTP (behind a TLS-terminating ingress). */
  readonly tls: { readonly cert: string; readonly key: string } | null;
  /** Notification policy (group_wait, repeat_interval, the caps) and the receivers of the file and environment. */
  readonly alerting: AlertPolicy;
  readonly webhooks: readonly Receiver[];
  /** How long the dashboard's actions run: Probe (60 s) and Force re-announce (MetalLB's 5 s). */
  readonly actions: {
    readonly probeMs: number;
    readonly announceMs: number;
    readonly fixRolloutTimeoutMs: number;
    readonly fixNodesTimeoutMs: number;
  };
  /**
   * How often the hub asks for each LoadBalancer IP from one of the nodes (rotating, jittered), to hear hosts that
   * answer only off-cluster clients; null: off.
   */
  readonly backgroundProbeMs: number | null;
  /** What the hub holds at most: IPs (least recently active let go), MACs per IP (oldest folded), agents, connections. */
  readonly limits: {
    readonly maxIps: number;
    readonly maxMacsPerIp: number;
    readonly maxAgents: number;
    readonly newIpsPerAgentPerMinute: number;
    readonly newIpsPerMinute: number;
    /** The agents' periodic messages a second, all told, that the pace the hub sets them aims at. */
    readonly agentMessagesPerSecond: number;
    /** Open connections the hub takes at most (agents, browsers, API clients), and from one address. */
    readonly maxConnections: number;
    readonly connectionsPerAddress: number;
  };
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * advertised is where other replicas reach this one when ha.advertise is not set: the listen address, or when it
 * listens on every address, the host's first IPv4 that is not loopback (a Pod's IP).
 */
function advertised(at: { host: string; port: number }, tls: boolean): string {
  const any = at.host === "0.0.0.0" || at.host === "::" || at.host === "";
  const own = Object.values(networkInterfaces())
    .flat()
    .find((a) => a?.family === "IPv4" && !a.internal)?.address;
  const host = any ? (own ?? "127.0.0.1") : at.host.includes(":") ? `[${at.host}]` : at.host;
  return `${tls ? "https" : "http"}://${host}:${at.port}`;
}
type Doc = Record<string, unknown>;

/** Where each key of the merged document came from: the environment variable that set it, for error messages. */
type Origins = Map<string, string>;

function child(doc: Doc, key: string): Doc {
  const v = doc[key];
  if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Doc;
  const fresh: Doc = {};
  doc[key] = fresh;
  return fresh;
}

function has(doc: unknown, dotted: string): boolean {
  let v: unknown = doc;
  for (const k of dotted.split(".")) {
    if (typeof v !== "object" || v === null) return false;
    v = (v as Doc)[k];
  }
  return v !== undefined;
}

/**
 * merge lays the environment over the file's document: each variable of ENV_KEYS sets its key (PORT and HOST one
 * half of `listen`). Returns the document and where its keys came from.
 */
function merge(file: unknown, env: Env): { doc: Doc; origins: Origins } {
  if (typeof file !== "object" || file === null || Array.isArray(file))
    throw new ConfigError("--config", "the file must hold a YAML mapping of keys (see config.example.yaml)");
  for (const k of ENV_ONLY) if (has(file, k)) throw new ConfigError(k, "unknown key (see config.example.yaml)");
  const doc = structuredClone(file) as Doc;
  const origins: Origins = new Map();
  for (const [name, { key, list }] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value === undefined || name === "PORT" || name === "HOST") continue;
    const parts = key.split(".");
    const last = parts.pop() ?? key;
    const at = parts.reduce(child, doc);
    at[last] =
      list === true
        ? value
            .split(",")
            .map((x) => x.trim())
            .filter((x) => x !== "")
        : value;
    origins.set(key, name);
  }
  if (env.PORT !== undefined || env.HOST !== undefined) {
    const current = typeof doc.listen === "string" ? doc.listen : DEFAULTS.listen;
    const i = current.lastIndexOf(":");
    doc.listen = `${env.HOST ?? current.slice(0, i)}:${env.PORT ?? current.slice(i + 1)}`;
    origins.set("listen", env.PORT !== undefined ? "PORT" : "HOST");
  }
  return { doc, origins };
}

/** validate checks the merged document against the one schema, naming the file's key or the variable at fault. */
function validate(doc: Doc, origins: Origins, file: string): ConfigDoc {
  const r = ConfigSchema.safeParse(doc);
  if (r.success) return r.data;
  const i = r.error.issues[0];
  const key = [...(i?.path ?? []).map(String), ...(i?.code === "unrecognized_keys" ? i.keys : [])].join(".");
  const reason = i?.code === "unrecognized_keys" ? "unknown key (see config.example.yaml)" : (i?.message ?? "invalid");
  const from = [...origins].find(([k]) => key === k || key.startsWith(`${k}.`))?.[1];
  throw new ConfigError(from ?? (key === "" ? file : key), reason);
}

function splitListen(text: string, key: string): { host: string; port: number } {
  const i = text.lastIndexOf(":");
  const port = Number(text.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(key, `port ${text.slice(i + 1)} is not 0-65535`);
  return { host: text.slice(0, i).replace(/^\[|\]$/g, ""), port };
}

function durationMs(key: string, text: string, min: number): number {
  const ms = parseDuration(text);
  if (ms === null || ms < min)
    throw new ConfigError(key, `"${text}" must be a duration of at least ${min < 60_000 ? `${min} ms` : `${min / 60_000}m`}`);
  return ms;
}

/** BACKGROUND_PROBE_MIN_MS / MAX_MS: the background probe's interval, between a load no network notices and PROBE_ANSWER_MS's span. */
const BACKGROUND_PROBE_MIN_MS = 5000;
const BACKGROUND_PROBE_MAX_MS = 60_000;

function backgroundProbe(key: string, text: string): number | null {
  if (text === "off") return null;
  const ms = durationMs(key, text, BACKGROUND_PROBE_MIN_MS);
  if (ms > BACKGROUND_PROBE_MAX_MS)
    throw new ConfigError(key, `"${text}" is longer than 60s: a host seen only by the probe would blink in and out; say "off" to stop it`);
  return ms;
}

/**
 * loadConfig reads `--config FILE` (optional) and the environment, the environment winning, validates the merged
 * document against one schema and derives the hub's configuration (reading the files it names). Throws a
 * ConfigError naming the key, or the environment variable, and the reason.
 */
export function loadConfig(configPath: string | null, env: Env = process.env): HubConfig {
  const { doc, origins } = merge(configPath === null ? {} : readYaml(configPath), env);
  const c = validate(doc, origins, configPath ?? "--config");
  const key = (k: string) => origins.get(k) ?? k;

  const listenAt = splitListen(c.listen ?? DEFAULTS.listen, key("listen"));
  const metricsListen =
    c.metrics?.listen === undefined
      ? { host: listenAt.host, port: DEFAULTS.metricsPort }
      : splitListen(c.metrics.listen, key("metrics.listen"));
  if (metricsListen.port === listenAt.port && metricsListen.port !== 0)
    throw new ConfigError(
      key("metrics.listen"),
      `port ${metricsListen.port} is the dashboard's (listen): the metrics need a port of their own (9473 unless set)`,
    );
  const metricsToken = c.metrics?.tokenFile === undefined ? null : readToken(key("metrics.tokenFile"), c.metrics.tokenFile);
  const retentionMs = durationMs(key("storage.retention"), c.storage?.retention ?? DEFAULTS.retention, 60_000);
  const ha = c.ha?.enabled ?? false;
  if (ha && c.storage?.url === undefined)
    throw new ConfigError(
      key("ha.enabled"),
      "replicas share one PostgreSQL: set storage.url (WHOHAS_STORAGE_URL) too; with SQLite run one hub",
    );

  const agentToken =
    c.agents?.token !== undefined
      ? checkToken(key("agents.token"), c.agents.token)
      : c.agents?.tokenFile !== undefined
        ? readToken(key("agents.tokenFile"), c.agents.tokenFile)
        : null;
  const agentServiceAccount = c.agents?.serviceAccount ?? null;
  if (agentToken === null && agentServiceAccount === null)
    throw new ConfigError(
      "agents.tokenFile",
      "required: agents authenticate with this token (or set WHOHAS_AGENT_TOKEN_FILE), or with their ServiceAccount's token (agents.serviceAccount)",
    );
  const viewerToken =
    c.api?.viewerToken !== undefined
      ? checkToken(key("api.viewerToken"), c.api.viewerToken)
      : c.api?.viewerTokenFile !== undefined
        ? readToken(key("api.viewerTokenFile"), c.api.viewerTokenFile)
        : null;

  // A kubeconfig when given; in a pod, the ServiceAccount; "off", `enabled: false` or nothing at all is traffic-only.
  const kubeconfig = origins.has("kubernetes.kubeconfig")
    ? c.kubernetes?.kubeconfig
    : c.kubernetes?.enabled === false
      ? "off"
      : c.kubernetes?.kubeconfig;
  const kubernetes = kubeconfig === "off" ? null : (kubeconfig ?? (env.KUBERNETES_SERVICE_HOST !== undefined ? "in-cluster" : null));

  return {
    listen: listenAt,
    metricsListen,
    metricsToken,
    dev: env.NODE_ENV === "development",
    storage: { path: c.storage?.path ?? DEFAULTS.storagePath, url: c.storage?.url ?? null, retentionMs },
    ha,
    clusterName: c.cluster?.name ?? DEFAULT_CLUSTER,
    replicaName: c.ha?.name ?? hostname(),
    replicaUrl: (c.ha?.advertise ?? advertised(listenAt, c.tls?.certFile !== undefined)).replace(/\/$/, ""),
    evidence: { maxFileBytes: c.evidence?.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES },
    agentToken,
    agentSocket: c.agents?.socket ?? null,
    agentServiceAccount,
    agentsAllowProxied: c.agents?.allowProxied ?? false,
    viewerToken,
    kubernetes,
    logLevel: c.log?.level ?? "info",
    auth: auth(c, key),
    tls: tls(c, key),
    ...alerting(c, key),
    actions: {
      probeMs: durationMs(key("actions.probeDuration"), c.actions?.probeDuration ?? DEFAULTS.probeDuration, 1000),
      announceMs: durationMs(key("actions.announceDuration"), c.actions?.announceDuration ?? DEFAULTS.announceDuration, 1000),
      fixRolloutTimeoutMs: durationMs(key("actions.fixRolloutTimeout"), c.actions?.fixRolloutTimeout ?? DEFAULTS.fixRolloutTimeout, 1000),
      fixNodesTimeoutMs: durationMs(key("actions.fixNodesTimeout"), c.actions?.fixNodesTimeout ?? DEFAULTS.fixNodesTimeout, 1000),
    },
    backgroundProbeMs: backgroundProbe(key("backgroundProbe.interval"), c.backgroundProbe?.interval ?? DEFAULTS.backgroundProbe),
    limits: {
      maxIps: c.limits?.maxIps ?? DEFAULTS.maxIps,
      maxMacsPerIp: c.limits?.maxMacsPerIp ?? DEFAULTS.maxMacsPerIp,
      maxAgents: c.limits?.maxAgents ?? DEFAULTS.maxAgents,
      newIpsPerAgentPerMinute: c.limits?.newIpsPerAgentPerMinute ?? DEFAULTS.newIpsPerAgentPerMinute,
      newIpsPerMinute: c.limits?.newIpsPerMinute ?? DEFAULTS.newIpsPerMinute,
      agentMessagesPerSecond: c.limits?.agentMessagesPerSecond ?? DEFAULTS.agentMessagesPerSecond,
      maxConnections: c.limits?.maxConnections ?? DEFAULTS.maxConnections,
      connectionsPerAddress: c.limits?.connectionsPerAddress ?? DEFAULTS.connectionsPerAddress,
    },
  };
}

function trusted(k: string, list: readonly string[]): readonly string[] {
  try {
    trustList(list);
  } catch (e) {
    throw new ConfigError(k, (e as Error).message);
  }
  return list;
}

function auth(c: ConfigDoc, key: (k: string) => string): HubConfig["auth"] {
  const users = [...(c.auth?.users ?? [])];
  if (c.auth?.usersFile !== undefined) users.push(...readUsers(key("auth.usersFile"), c.auth.usersFile));
  const names = new Set<string>();
  for (const u of users) {
    if (names.has(u.name)) throw new ConfigError("auth.users", `user "${u.name}" is listed twice`);
    names.add(u.name);
  }
  const p = c.auth?.proxy;
  const proxy: ProxyAuth | null =
    p === undefined
      ? null
      : {
          userHeader: p.userHeader,
          groupsHeader: p.groupsHeader ?? null,
          trustedProxies: trusted("auth.proxy.trustedProxies", p.trustedProxies),
          groupRoles: p.groupRoles ?? {},
          defaultRole: p.defaultRole ?? null,
        };
  return {
    users,
    proxy,
    sessionTtlMs: durationMs("auth.sessionTtl", c.auth?.sessionTtl ?? DEFAULTS.sessionTtl, 60_000),
    trustedProxies: trusted(key("auth.trustedProxies"), c.auth?.trustedProxies ?? []),
  };
}

function tls(c: ConfigDoc, key: (k: string) => string): HubConfig["tls"] {
  const cert = c.tls?.certFile;
  const k = c.tls?.keyFile;
  if ((cert === undefined) !== (k === undefined))
    throw new ConfigError("tls", "give both certFile and keyFile (or neither, for plain HTTP)");
  return cert === undefined || k === undefined
    ? null
    : { cert: readPem(key("tls.certFile"), cert, "CERTIFICATE"), key: readPem(key("tls.keyFile"), k, "PRIVATE KEY") };
}

function alerting(c: ConfigDoc, key: (k: string) => string): Pick<HubConfig, "alerting" | "webhooks"> {
  const a = c.alerting;
  const egress = { allowHosts: a?.allowHosts ?? [], allowPrivate: a?.allowPrivate ?? DEFAULT_POLICY.allowPrivate };
  try {
    new Egress(egress);
  } catch (e) {
    throw new ConfigError("alerting.allowHosts", (e as Error).message);
  }
  const webhooks: Receiver[] = (c.webhooks ?? []).map((w, i) => {
    const bad = checkUrl(w.url, egress);
    if (bad !== null) throw new ConfigError(`webhooks.${i}.url`, bad);
    return {
      name: w.name,
      url: w.url,
      format: w.format,
      secret: w.secretFile === undefined ? null : readToken(`webhooks.${i}.secretFile`, w.secretFile),
      source: "config",
    };
  });
  const e = c.envWebhook;
  if (e !== undefined) {
    const bad = checkUrl(e.url, egress);
    if (bad !== null) throw new ConfigError(key("envWebhook.url"), bad);
    webhooks.push({
      name: "env",
      url: e.url,
      format: e.format,
      secret: e.secretFile === undefined ? null : readToken(key("envWebhook.secretFile"), e.secretFile),
      source: "env",
    });
  }
  const names = new Set<string>();
  for (const w of webhooks) {
    if (names.has(w.name)) throw new ConfigError("webhooks", `receiver "${w.name}" is listed twice`);
    names.add(w.name);
  }
  const gw = a?.groupWait;
  return {
    webhooks,
    alerting: {
      groupWaitMs: gw === undefined ? DEFAULT_POLICY.groupWaitMs : gw === 0 || gw === "0" ? 0 : (parseDuration(gw) ?? 0),
      groupIntervalMs:
        a?.groupInterval === undefined ? DEFAULT_POLICY.groupIntervalMs : durationMs("alerting.groupInterval", a.groupInterval, 1000),
      repeatIntervalMs:
        a?.repeatInterval === undefined ? DEFAULT_POLICY.repeatIntervalMs : durationMs("alerting.repeatInterval", a.repeatInterval, 60_000),
      maxPerIpPerHour: a?.maxPerIpPerHour ?? DEFAULT_POLICY.maxPerIpPerHour,
      maxPerMinute: a?.maxPerMinute ?? DEFAULT_POLICY.maxPerMinute,
      sendResolved: a?.sendResolved ?? DEFAULT_POLICY.sendResolved,
      allowHosts: egress.allowHosts,
      allowPrivate: egress.allowPrivate,
      externalUrl: a?.externalUrl ?? null,
    },
  };
}

/** ENV_OVERRIDES lists each environment variable with the key it replaces (`whohas-hub --help`, README). */
export const ENV_OVERRIDES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(ENV_KEYS).map(([name, k]) => [name, k.help]),
);
