import { CLUSTER_NAME, CLUSTER_NAME_HELP } from "@whohas/core";
import { z } from "zod";
import { HASH_PREFIX } from "../auth/passwords.js";
import { ROLES } from "../auth/roles.js";
import { FORMATS } from "../store/outbox.js";

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
const path = z.string().min(1);
/** A PostgreSQL connection URL: its scheme is checked here; the driver reads the rest (host, port, database, sslmode). */
const postgresUrl = z
  .string()
  .refine((s) => /^postgres(ql)?:\/\/[^\s]+$/.test(s) && URL.canParse(s), "a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE");
const role = z.enum(ROLES);
const serviceAccount = z
  .string()
  .regex(/^[a-z0-9-]+:[a-z0-9.-]+$/, 'the agents\' ServiceAccount as "namespace:name", e.g. "whohas:whohas-agent"');

/** UserSchema is one local user (`auth.users`, and each entry of `auth.usersFile`). */
export const UserSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, "letters, digits, . _ @ - (at most 64)"),
  passwordHash: z.string().startsWith(HASH_PREFIX, `an argon2id hash (${HASH_PREFIX}...): make one with \`whohas-hub hash-password\``),
  role,
});
export const UsersSchema = z.array(UserSchema).max(1000);

const format = z.enum(FORMATS, { error: `one of ${FORMATS.join(", ")}` }).default("generic");
const receiver = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (at most 64)"),
  url: path,
  format,
  secretFile: path.optional(),
});

/**
 * ConfigSchema is the hub's configuration: the YAML file (`whohas-hub --config FILE`, every key documented in
 * config.example.yaml) with the environment merged over it (ENV_KEYS). The few keys marked env-only come from the
 * environment alone: a file that sets them is refused as if they did not exist.
 */
export const ConfigSchema = z.strictObject({
  listen: listen.optional(),
  metrics: z.strictObject({ listen: listen.optional(), tokenFile: path.optional() }).optional(),
  storage: z.strictObject({ path: path.optional(), url: postgresUrl.optional(), retention: duration.optional() }).optional(),
  // The cluster this hub watches: several clusters' hubs on one PostgreSQL make a fleet, each in its own schema.
  cluster: z
    .strictObject({ name: z.string().regex(CLUSTER_NAME, CLUSTER_NAME_HELP).optional() })
    .nullable()
    .optional(),
  // Replicas on one PostgreSQL, one leading: true in the file, "true" or "false" from WHOHAS_HA.
  ha: z
    .strictObject({
      enabled: z.preprocess((v) => (v === "true" ? true : v === "false" ? false : v), z.boolean({ error: "true or false" })).optional(),
      name: z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,63}$/, "letters, digits, . _ - (at most 63)")
        .optional(),
      advertise: z
        .string()
        .regex(/^https?:\/\/[^/?#]+\/?$/, "an address other replicas reach this one at: http(s)://HOST:PORT")
        .optional(),
    })
    .optional(),
  evidence: z
    .strictObject({
      maxFileBytes: z
        .number()
        .int()
        .min(65_536)
        .max(1024 * 1024 * 1024)
        .optional(),
    })
    .optional(),
  agents: z
    .strictObject({
      tokenFile: path.optional(),
      /** env-only (WHOHAS_AGENT_TOKEN): the token itself. */
      token: z.string().optional(),
      socket: path.optional(),
      serviceAccount: serviceAccount.optional(),
      allowProxied: z.boolean().optional(),
    })
    .optional(),
  api: z
    .strictObject({ viewerTokenFile: path.optional(), /** env-only (WHOHAS_VIEWER_TOKEN) */ viewerToken: z.string().optional() })
    .optional(),
  kubernetes: z.strictObject({ kubeconfig: path.optional(), enabled: z.boolean().optional() }).nullable().optional(),
  log: z.strictObject({ level: z.enum(["info", "warn", "error"], { error: "one of info, warn, error" }).optional() }).optional(),
  auth: z
    .strictObject({
      users: UsersSchema.optional(),
      usersFile: path.optional(),
      proxy: z
        .strictObject({
          userHeader: z.string().regex(/^[A-Za-z0-9-]+$/, "an HTTP header name"),
          groupsHeader: z
            .string()
            .regex(/^[A-Za-z0-9-]+$/, "an HTTP header name")
            .optional(),
          trustedProxies: z.array(z.string()).min(1, "name the proxy's addresses or CIDRs: its headers are trusted from there only"),
          groupRoles: z.record(z.string(), role).optional(),
          defaultRole: role.optional(),
        })
        .optional(),
      sessionTtl: duration.optional(),
      trustedProxies: z.array(z.string()).optional(),
    })
    .optional(),
  tls: z.strictObject({ certFile: path.optional(), keyFile: path.optional() }).optional(),
  actions: z
    .strictObject({
      probeDuration: duration.optional(),
      announceDuration: duration.optional(),
      /** How long the strictARP fix waits for kube-proxy's rollout, then for every node's sysctls. */
      fixRolloutTimeout: duration.optional(),
      fixNodesTimeout: duration.optional(),
    })
    .optional(),
  /** The hub's own low-rate probe of every LoadBalancer IP, from one node at a time: an interval, or "off". */
  backgroundProbe: z.strictObject({ interval: z.union([duration, z.literal("off")]).optional() }).optional(),
  limits: z
    .strictObject({
      maxIps: z.number().int().min(100, "at least 100").max(10_000_000).optional(),
      maxMacsPerIp: z.number().int().min(2, "at least 2").max(10_000).optional(),
      maxAgents: z.number().int().min(1).max(100_000).optional(),
      newIpsPerAgentPerMinute: z.number().int().min(10, "at least 10").max(10_000_000).optional(),
      newIpsPerMinute: z.number().int().min(10, "at least 10").max(100_000_000).optional(),
      agentMessagesPerSecond: z.number().int().min(10, "at least 10").max(1_000_000).optional(),
      maxConnections: z.number().int().min(16, "at least 16").max(1_000_000).optional(),
      connectionsPerAddress: z.number().int().min(4, "at least 4").max(1_000_000).optional(),
    })
    .optional(),
  alerting: z
    .strictObject({
      groupWait: z.union([duration, z.literal(0), z.literal("0")]).optional(),
      groupInterval: duration.optional(),
      repeatInterval: duration.optional(),
      maxPerIpPerHour: z.number().int().min(1).max(1000).optional(),
      maxPerMinute: z.number().int().min(1).max(100_000).optional(),
      sendResolved: z.boolean().optional(),
      allowHosts: z.array(z.string().min(1)).optional(),
      allowPrivate: z.boolean().optional(),
      externalUrl: z
        .string()
        .url()
        .regex(/^https?:\/\//, "an http(s) address: the dashboard's, for links in notifications and from the other hubs of a fleet")
        .optional(),
    })
    .optional(),
  webhooks: z.array(receiver).max(50).optional(),
  /** env-only (WHOHAS_WEBHOOK_*): one more receiver, named env. */
  envWebhook: z.strictObject({ url: path, format, secretFile: path.optional() }).optional(),
});
export type ConfigDoc = z.infer<typeof ConfigSchema>;

/** ENV_ONLY lists the keys the environment alone may set (secrets given as values, the extra receiver). */
export const ENV_ONLY = ["agents.token", "api.viewerToken", "envWebhook"] as const;

/** An EnvKey says where one environment variable goes in the document, and what the help says of it. */
interface EnvKey {
  readonly key: string;
  readonly help: string;
  /** A comma-separated list. */
  readonly list?: boolean;
}

/** ENV_KEYS: each environment override, the key it sets (the environment wins over the file) and its help line. */
export const ENV_KEYS: Readonly<Record<string, EnvKey>> = {
  WHOHAS_LISTEN: { key: "listen", help: "listen" },
  PORT: { key: "listen", help: "listen (port only)" },
  HOST: { key: "listen", help: "listen (host only)" },
  WHOHAS_METRICS_LISTEN: { key: "metrics.listen", help: "metrics.listen" },
  WHOHAS_METRICS_TOKEN_FILE: { key: "metrics.tokenFile", help: "metrics.tokenFile" },
  WHOHAS_STORAGE_PATH: { key: "storage.path", help: "storage.path" },
  WHOHAS_STORAGE_URL: { key: "storage.url", help: "storage.url (PostgreSQL instead of SQLite)" },
  WHOHAS_RETENTION: { key: "storage.retention", help: "storage.retention" },
  WHOHAS_CLUSTER: { key: "cluster.name", help: "cluster.name (the cluster this hub watches, in a fleet of hubs on one PostgreSQL)" },
  WHOHAS_HA: { key: "ha.enabled", help: 'ha.enabled ("true": one of several replicas on storage.url; one leads)' },
  WHOHAS_HA_NAME: { key: "ha.name", help: "ha.name (this replica's name; default: the host name, a Pod's name)" },
  WHOHAS_HA_ADVERTISE: { key: "ha.advertise", help: "ha.advertise (where the other replicas reach this one)" },
  WHOHAS_AGENT_TOKEN: { key: "agents.token", help: "agents.tokenFile (the token itself)" },
  WHOHAS_AGENT_TOKEN_FILE: { key: "agents.tokenFile", help: "agents.tokenFile" },
  WHOHAS_AGENT_SOCKET: { key: "agents.socket", help: "agents.socket" },
  WHOHAS_AGENT_SERVICE_ACCOUNT: { key: "agents.serviceAccount", help: "agents.serviceAccount" },
  WHOHAS_VIEWER_TOKEN: { key: "api.viewerToken", help: "api.viewerTokenFile (the token itself)" },
  WHOHAS_VIEWER_TOKEN_FILE: { key: "api.viewerTokenFile", help: "api.viewerTokenFile" },
  WHOHAS_KUBECONFIG: { key: "kubernetes.kubeconfig", help: 'kubernetes.kubeconfig ("off": traffic-only)' },
  WHOHAS_LOG_LEVEL: { key: "log.level", help: "log.level" },
  WHOHAS_USERS_FILE: { key: "auth.usersFile", help: "auth.usersFile" },
  WHOHAS_TRUSTED_PROXIES: { key: "auth.trustedProxies", help: "auth.trustedProxies (comma-separated)", list: true },
  WHOHAS_PROBE_DURATION: { key: "actions.probeDuration", help: "actions.probeDuration" },
  WHOHAS_BACKGROUND_PROBE: { key: "backgroundProbe.interval", help: 'backgroundProbe.interval ("off": no background probe)' },
  WHOHAS_TLS_CERT_FILE: { key: "tls.certFile", help: "tls.certFile" },
  WHOHAS_TLS_KEY_FILE: { key: "tls.keyFile", help: "tls.keyFile" },
  WHOHAS_WEBHOOK_URL: { key: "envWebhook.url", help: "webhooks (one more receiver, named env)" },
  WHOHAS_WEBHOOK_FORMAT: { key: "envWebhook.format", help: "its format: generic, slack or alertmanager" },
  WHOHAS_WEBHOOK_SECRET_FILE: { key: "envWebhook.secretFile", help: "its signing secret" },
};

/** The defaults of every key: what a deployment gets with an empty file. */
export const DEFAULTS = {
  listen: "0.0.0.0:3000",
  storagePath: "/var/lib/whohas/whohas.db",
  retention: "7d",
  sessionTtl: "12h",
  probeDuration: "60s",
  backgroundProbe: "30s",
  announceDuration: "5s",
  fixRolloutTimeout: "5m",
  fixNodesTimeout: "2m",
  maxIps: 100_000,
  maxMacsPerIp: 64,
  metricsPort: 9473,
  maxAgents: 5000,
  newIpsPerAgentPerMinute: 2000,
  newIpsPerMinute: 10_000,
  agentMessagesPerSecond: 10_000,
  maxConnections: 10_000,
  connectionsPerAddress: 256,
} as const;
