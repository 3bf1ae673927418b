import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify as stringifyYaml } from "yaml";
import { HUB_BIN, freePort, hashWithHub, stopChild, waitHealthy } from "./hub-process.js";
import type { LabUser } from "./stack.js";

/** A LoneHub is the production hub started alone (no lab, no Kubernetes): what a test of its HTTP surface needs. */
export interface LoneHub {
  readonly url: string;
  readonly metricsUrl: string;
  readonly agentToken: string;
  readonly viewerToken: string;
  readonly users: { readonly viewer: LabUser; readonly operator: LabUser; readonly admin: LabUser };
  readonly dir: string;
  /** The launcher's process (its output goes to hub.log). */
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * startLoneHub runs `whohas-hub --config` in traffic-only mode with one user per role, in a directory of its own
 * (removed by stop; the hub's log is `hub.log` there until then), with `extra` config keys and `env` variables beside
 * the test's own. Needs the built hub, not root.
 */
export async function startLoneHub(
  extra: Readonly<Record<string, unknown>> = {},
  extraEnv: Readonly<Record<string, string>> = {},
): Promise<LoneHub> {
  const dir = await mkdtemp(join(tmpdir(), "whohas-hub-"));
  const [port, metricsPort] = [await freePort(), await freePort()];
  const agentToken = randomBytes(24).toString("hex");
  const viewerToken = randomBytes(24).toString("hex");
  await writeFile(join(dir, "agent-token"), agentToken, { mode: 0o600 });
  await writeFile(join(dir, "viewer-token"), viewerToken, { mode: 0o600 });
  const users = {
    viewer: { name: "viewer", password: randomBytes(12).toString("base64url"), role: "viewer" as const },
    operator: { name: "oncall", password: randomBytes(12).toString("base64url"), role: "operator" as const },
    admin: { name: "admin", password: randomBytes(12).toString("base64url"), role: "admin" as const },
  };
  const hashes = await Promise.all(Object.values(users).map((u) => hashWithHub(u.password)));
  await writeFile(
    join(dir, "hub.yaml"),
    stringifyYaml({
      listen: `127.0.0.1:${port}`,
      metrics: { listen: `127.0.0.1:${metricsPort}` },
      storage: { path: join(dir, "db", "whohas.db") },
      agents: { tokenFile: join(dir, "agent-token") },
      api: { viewerTokenFile: join(dir, "viewer-token") },
      kubernetes: { enabled: false },
      auth: { users: Object.values(users).map((u, i) => ({ name: u.name, passwordHash: hashes[i], role: u.role })) },
      ...extra,
    }),
  );
  const log = createWriteStream(join(dir, "hub.log"));
  // eslint-disable-next-line no-restricted-properties
  const env = { ...process.env, NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1", ...extraEnv };
  const child = spawn(process.execPath, [HUB_BIN, "--config", join(dir, "hub.yaml")], { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitHealthy(url, child, 30_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, agentToken, viewerToken, users, dir, process: child, stop };
}
