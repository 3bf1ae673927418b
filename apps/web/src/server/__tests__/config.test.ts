import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/files.js";
import { loadConfig } from "../config/load.js";
import { parseDuration } from "../config/schema.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function files(entries: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), "whohas-config-"));
  dirs.push(d);
  for (const [name, text] of Object.entries(entries)) writeFileSync(join(d, name), text.replaceAll("DIR", d));
  return d;
}
const TOKEN = "0123456789abcdef0123";
const HASH = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$aGFzaA";

function failure(path: string | null, env: Record<string, string> = {}): string {
  try {
    loadConfig(path, env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("loadConfig accepted it");
}

describe("loadConfig", () => {
  it("reads every documented key", () => {
    const d = files({
      "hub.yaml": [
        `listen: "127.0.0.1:8080"`,
        `storage: { path: DIR/w.db, retention: 12h }`,
        `evidence: { maxFileBytes: 1048576 }`,
        `agents: { tokenFile: DIR/agent, allowProxied: true, serviceAccount: "whohas:whohas-agent" }`,
        `api: { viewerTokenFile: DIR/viewer }`,
        `kubernetes: { kubeconfig: DIR/kc }`,
        `log: { level: warn }`,
        `cluster: { name: prod-eu }`,
        `auth:`,
        `  users: [ { name: oncall, passwordHash: "${HASH}", role: operator } ]`,
        `  usersFile: DIR/users.yaml`,
        `  proxy: { userHeader: X-Forwarded-User, groupsHeader: X-Forwarded-Groups, trustedProxies: [10.0.0.0/8, "::1"], groupRoles: { sre: operator } }`,
        `  sessionTtl: 8h`,
        `  trustedProxies: [192.168.0.0/16]`,
        `actions: { probeDuration: 5s, announceDuration: 2s, fixRolloutTimeout: 90s, fixNodesTimeout: 1m }`,
        `backgroundProbe: { interval: 45s }`,
        `limits: { maxIps: 5000, maxMacsPerIp: 16, maxAgents: 300, newIpsPerAgentPerMinute: 500, newIpsPerMinute: 900, agentMessagesPerSecond: 4000, maxConnections: 2000, connectionsPerAddress: 32 }`,
        `metrics: { listen: "127.0.0.1:9474", tokenFile: DIR/metrics }`,
        `alerting: { groupWait: 0, groupInterval: 1m, repeatInterval: 2h, maxPerIpPerHour: 3, maxPerMinute: 12, sendResolved: false, allowHosts: [hooks.example], allowPrivate: true, externalUrl: "https://whohas.example" }`,
        `webhooks:`,
        `  - { name: ops, url: "https://hooks.example/whohas", format: generic, secretFile: DIR/hook }`,
        `  - { name: am, url: "https://hooks.example/am", format: alertmanager }`,
      ].join("\n"),
      hook: "hook-secret-0123456789\n",
      "users.yaml": `- { name: boss, passwordHash: "${HASH}", role: admin }\n`,
      agent: `${TOKEN}\n`,
      viewer: `viewer-${TOKEN}`,
      metrics: `metrics-${TOKEN}`,
    });
    expect(loadConfig(join(d, "hub.yaml"), {})).toEqual({
      listen: { host: "127.0.0.1", port: 8080 },
      dev: false,
      storage: { path: join(d, "w.db"), url: null, retentionMs: 12 * 3_600_000 },
      ha: false,
      clusterName: "prod-eu",
      replicaName: expect.any(String) as unknown,
      replicaUrl: expect.stringMatching(/^https?:\/\//) as unknown,
      evidence: { maxFileBytes: 1_048_576 },
      agentToken: TOKEN,
      agentSocket: null,
      agentServiceAccount: "whohas:whohas-agent",
      agentsAllowProxied: true,
      viewerToken: `viewer-${TOKEN}`,
      kubernetes: join(d, "kc"),
      logLevel: "warn",
      auth: {
        users: [
          { name: "oncall", passwordHash: HASH, role: "operator" },
          { name: "boss", passwordHash: HASH, role: "admin" },
        ],
        proxy: {
          userHeader: "X-Forwarded-User",
          groupsHeader: "X-Forwarded-Groups",
          trustedProxies: ["10.0.0.0/8", "::1"],
          groupRoles: { sre: "operator" },
          defaultRole: null,
        },
        sessionTtlMs: 8 * 3_600_000,
        trustedProxies: ["192.168.0.0/16"],
      },
      actions: { probeMs: 5000, announceMs: 2000, fixRolloutTimeoutMs: 90_000, fixNodesTimeoutMs: 60_000 },
      backgroundProbeMs: 45_000,
      limits: {
        maxIps: 5000,
        maxMacsPerIp: 16,
        maxAgents: 300,
        newIpsPerAgentPerMinute: 500,
        newIpsPerMinute: 900,
        agentMessagesPerSecond: 4000,
        maxConnections: 2000,
        connectionsPerAddress: 32,
      },
      metricsListen: { host: "127.0.0.1", port: 9474 },
      metricsToken: `metrics-${TOKEN}`,
      tls: null,
      alerting: {
        groupWaitMs: 0,
        groupIntervalMs: 60_000,
        repeatIntervalMs: 2 * 3_600_000,
        maxPerIpPerHour: 3,
        maxPerMinute: 12,
        sendResolved: false,
        allowHosts: ["hooks.example"],
        allowPrivate: true,
        externalUrl: "https://whohas.example",
      },
      webhooks: [
        { name: "ops", url: "https://hooks.example/whohas", format: "generic", secret: "hook-secret-0123456789", source: "config" },
        { name: "am", url: "https://hooks.example/am", format: "alertmanager", secret: null, source: "config" },
      ],
    });
  });

  it("lets the environment win over the file", () => {
    const d = files({ "hub.yaml": `listen: "127.0.0.1:8080"\nagents: { tokenFile: DIR/missing }\n` });
    const c = loadConfig(join(d, "hub.yaml"), {
      WHOHAS_AGENT_TOKEN: TOKEN,
      PORT: "9000",
      WHOHAS_KUBECONFIG: "off",
      KUBERNETES_SERVICE_HOST: "10.0.0.1",
      WHOHAS_RETENTION: "30m",
      WHOHAS_TRUSTED_PROXIES: "10.1.0.0/16, 10.2.0.7",
    });
    expect(c).toMatchObject({
      listen: { host: "127.0.0.1", port: 9000 },
      kubernetes: null,
      storage: { retentionMs: 30 * 60_000 },
      auth: { trustedProxies: ["10.1.0.0/16", "10.2.0.7"] },
    });
    expect(() => loadConfig(join(d, "hub.yaml"), { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_TRUSTED_PROXIES: "ingress" })).toThrow(
      /WHOHAS_TRUSTED_PROXIES/,
    );
  });

  it("takes a PostgreSQL URL for storage.url, and refuses any other", () => {
    const url = "postgres://whohas:secret@db.example:5432/whohas?sslmode=require";
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_STORAGE_URL: url }).storage).toEqual({
      path: "/var/lib/whohas/whohas.db",
      url,
      retentionMs: 7 * 86_400_000,
    });
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_STORAGE_URL: "mysql://x" })).toBe(
      "WHOHAS_STORAGE_URL: a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE",
    );
    const d = files({ "hub.yaml": `storage: { url: "mysql://x" }\n` });
    expect(failure(join(d, "hub.yaml"), { WHOHAS_AGENT_TOKEN: TOKEN })).toMatch(/^storage\.url: a PostgreSQL URL/);
  });

  it("names the cluster from cluster.name or WHOHAS_CLUSTER, default unless named, and refuses what is no DNS label", () => {
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN }).clusterName).toBe("default");
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_CLUSTER: "prod-eu" }).clusterName).toBe("prod-eu");
    const d = files({ "hub.yaml": `cluster: { name: lab-1 }\n` });
    expect(loadConfig(join(d, "hub.yaml"), { WHOHAS_AGENT_TOKEN: TOKEN }).clusterName).toBe("lab-1");
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_CLUSTER: "Prod_EU" })).toBe(
      "WHOHAS_CLUSTER: lowercase letters, digits and inner hyphens, at most 40 (a DNS label), e.g. prod-eu-1",
    );
  });

  it("uses the ServiceAccount in a pod when no kubeconfig is given, traffic-only outside", () => {
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN, KUBERNETES_SERVICE_HOST: "10.0.0.1" }).kubernetes).toBe("in-cluster");
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN }).kubernetes).toBeNull();
  });

  it("fails with the key and the reason", () => {
    const d = files({
      bad: "listen: [1, 2]\n",
      unknown: "storage: { pth: /x }\n",
      retention: "storage: { retention: soon }\n",
      yaml: 'listen: "a\n',
      short: "agents: { tokenFile: DIR/t }\n",
      t: "short",
    });
    expect(failure(join(d, "bad"), { WHOHAS_AGENT_TOKEN: TOKEN })).toMatch(/^listen: /);
    expect(failure(join(d, "unknown"), { WHOHAS_AGENT_TOKEN: TOKEN })).toBe("storage.pth: unknown key (see config.example.yaml)");
    expect(failure(join(d, "retention"), { WHOHAS_AGENT_TOKEN: TOKEN })).toMatch(/^storage.retention: a duration/);
    expect(failure(join(d, "yaml"), { WHOHAS_AGENT_TOKEN: TOKEN })).toMatch(/not valid YAML/);
    expect(failure(join(d, "short"))).toMatch(/^agents.tokenFile: the token in .* must be at least 16 characters/);
    expect(failure(join(d, "missing.yaml"))).toMatch(/^--config: cannot read .*ENOENT/);
    expect(failure(null)).toMatch(/^agents.tokenFile: required/);
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_LISTEN: "nope" })).toMatch(/^WHOHAS_LISTEN/);
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_LISTEN: "0.0.0.0:3000", WHOHAS_METRICS_LISTEN: "0.0.0.0:3000" })).toMatch(
      /^WHOHAS_METRICS_LISTEN: port 3000 is the dashboard's/,
    );
    // The one schema covers the environment: a bad value names its variable, and env-only keys stay out of the file.
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_LOG_LEVEL: "loud" })).toMatch(/^WHOHAS_LOG_LEVEL: /);
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_RETENTION: "soon" })).toMatch(/^WHOHAS_RETENTION: a duration/);
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, PORT: "http" })).toMatch(/^PORT: host:port/);
    const inline = files({ "hub.yaml": `agents: { token: "${TOKEN}" }\n` });
    expect(failure(join(inline, "hub.yaml"))).toBe("agents.token: unknown key (see config.example.yaml)");
    // Without metrics.listen the metrics still get a port of their own: 9473 on the dashboard's host.
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_LISTEN: "127.0.0.1:3000" })).toMatchObject({
      metricsListen: { host: "127.0.0.1", port: 9473 },
      metricsToken: null,
    });
    // Agents on ServiceAccount tokens only (deploy/base): no shared token is needed, and a bad name is refused.
    expect(loadConfig(null, { WHOHAS_AGENT_SERVICE_ACCOUNT: "whohas:whohas-agent" })).toMatchObject({
      agentToken: null,
      agentServiceAccount: "whohas:whohas-agent",
    });
    expect(failure(null, { WHOHAS_AGENT_SERVICE_ACCOUNT: "whohas-agent" })).toMatch(
      /^WHOHAS_AGENT_SERVICE_ACCOUNT: the agents' ServiceAccount/,
    );
    // The background probe: on at 30 s unless told, "off" turns it off, and an interval out of 5 s to 60 s is refused.
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN }).backgroundProbeMs).toBe(30_000);
    expect(loadConfig(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_BACKGROUND_PROBE: "off" }).backgroundProbeMs).toBeNull();
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_BACKGROUND_PROBE: "1s" })).toMatch(
      /^WHOHAS_BACKGROUND_PROBE: "1s" must be a duration of at least 5000 ms/,
    );
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_BACKGROUND_PROBE: "5m" })).toMatch(
      /^WHOHAS_BACKGROUND_PROBE: "5m" is longer than 60s/,
    );
    expect(failure(null, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_BACKGROUND_PROBE: "sometimes" })).toMatch(/^WHOHAS_BACKGROUND_PROBE: /);
  });

  it("refuses bad users and proxies with the key and what to do", () => {
    const d = files({
      plain: `auth: { users: [ { name: a, passwordHash: hunter2, role: admin } ] }\n`,
      role: `auth: { users: [ { name: a, passwordHash: "${HASH}", role: root } ] }\n`,
      twice: `auth: { users: [ { name: a, passwordHash: "${HASH}", role: admin }, { name: a, passwordHash: "${HASH}", role: viewer } ] }\n`,
      cidr: `auth: { proxy: { userHeader: X-User, trustedProxies: [10.0.0.0/33] } }\n`,
      noproxies: `auth: { proxy: { userHeader: X-User, trustedProxies: [] } }\n`,
      file: `auth: { usersFile: DIR/nope.yaml }\n`,
      hookScheme: `webhooks: [ { name: x, url: "ftp://hooks.example/" } ]\n`,
      hookHost: `alerting: { allowHosts: [hooks.example] }\nwebhooks: [ { name: x, url: "https://evil.example/" } ]\n`,
      hookLoopback: `webhooks: [ { name: x, url: "http://127.0.0.1:9093/" } ]\n`,
      hookMetadata: `alerting: { allowPrivate: true }\nwebhooks: [ { name: x, url: "http://169.254.169.254/latest/" } ]\n`,
      hookPrivateAllowed: `alerting: { allowPrivate: true }\nwebhooks: [ { name: x, url: "http://10.0.0.7:9093/" } ]\n`,
      trusted: `auth: { trustedProxies: [not-an-address] }\n`,
      tlsHalf: `tls: { certFile: DIR/cert.pem }\n`,
      tlsNotPem: `tls: { certFile: DIR/tlsNotPem, keyFile: DIR/tlsNotPem }\n`,
    });
    const env = { WHOHAS_AGENT_TOKEN: TOKEN };
    expect(failure(join(d, "plain"), env)).toMatch(/^auth.users.0.passwordHash: an argon2id hash .*whohas-hub hash-password/);
    expect(failure(join(d, "role"), env)).toMatch(/^auth.users.0.role: /);
    expect(failure(join(d, "twice"), env)).toBe('auth.users: user "a" is listed twice');
    expect(failure(join(d, "cidr"), env)).toBe('auth.proxy.trustedProxies: "10.0.0.0/33" is not an address or CIDR');
    expect(failure(join(d, "noproxies"), env)).toMatch(/^auth.proxy.trustedProxies: name the proxy's addresses/);
    expect(failure(join(d, "file"), env)).toMatch(/^auth.usersFile: cannot read .*ENOENT/);
    expect(failure(join(d, "hookScheme"), env)).toMatch(/^webhooks.0.url: only http and https/);
    expect(failure(join(d, "tlsHalf"), env)).toBe("tls: give both certFile and keyFile (or neither, for plain HTTP)");
    expect(failure(join(d, "tlsNotPem"), env)).toMatch(/^tls.certFile: .* holds no PEM certificate/);
    expect(failure(join(d, "hookHost"), env)).toMatch(/^webhooks.0.url: evil.example is not in alerting.allowHosts/);
    expect(failure(join(d, "hookLoopback"), env)).toBe(
      "webhooks.0.url: 127.0.0.1 is a loopback address: refused (list the host in alerting.allowHosts if this receiver is really meant)",
    );
    expect(failure(join(d, "hookMetadata"), env)).toMatch(/^webhooks.0.url: 169.254.169.254 is a link-local address: refused/);
    expect(loadConfig(join(d, "hookPrivateAllowed"), env).webhooks).toHaveLength(1);
    expect(failure(join(d, "trusted"), env)).toBe('auth.trustedProxies: "not-an-address" is not an address or CIDR');
    expect(failure(null, { ...env, WHOHAS_WEBHOOK_URL: "https://x.example/", WHOHAS_WEBHOOK_FORMAT: "teams" })).toMatch(
      /^WHOHAS_WEBHOOK_FORMAT: one of generic, slack, alertmanager/,
    );
  });

  it("accepts the shipped example once its files exist", () => {
    const example = fileURLToPath(new URL("../../../config.example.yaml", import.meta.url));
    const c = loadConfig(example, { WHOHAS_AGENT_TOKEN: TOKEN, WHOHAS_VIEWER_TOKEN: `v-${TOKEN}` });
    expect(c).toMatchObject({
      listen: { host: "0.0.0.0", port: 3000 },
      storage: { path: "/var/lib/whohas/whohas.db", url: null, retentionMs: 7 * 86_400_000 },
      auth: { users: [{ name: "oncall", role: "operator" }] },
      actions: { probeMs: 60_000, fixRolloutTimeoutMs: 300_000, fixNodesTimeoutMs: 120_000 },
      limits: { maxIps: 100_000, maxMacsPerIp: 64 },
    });
  });

  it("parses durations", () => {
    expect([parseDuration("7d"), parseDuration("500ms"), parseDuration("2h"), parseDuration("x")]).toEqual([
      7 * 86_400_000,
      500,
      7_200_000,
      null,
    ]);
  });
});
