import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

/** REPO_ROOT: the lab starts the built hub and agent from the checkout it belongs to. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** HUB_BIN is the hub's production entry, `whohas-hub` (the same one a deployment runs). */
export const HUB_BIN = `${REPO_ROOT}apps/web/bin/whohas-hub.js`;
export const AGENT_MAIN = `${REPO_ROOT}apps/agent/dist/main.js`;
export const REQUESTER = `${REPO_ROOT}packages/lab/dist/requester.js`;
export const SPEAKER = `${REPO_ROOT}packages/lab/dist/speaker.js`;
export const INJECT = `${REPO_ROOT}packages/lab/dist/inject.js`;
export const TAP = `${REPO_ROOT}packages/lab/dist/tap.js`;
export const FORWARD = `${REPO_ROOT}packages/lab/dist/forward.js`;
export const AGENT_ATTEMPT = `${REPO_ROOT}packages/lab/dist/agent-attempt.js`;

/** freePort asks the kernel for a free TCP port on loopback, other than `notThese` (ports handed out already). */
export async function freePort(notThese: readonly number[] = []): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once("error", reject);
      s.listen(0, "127.0.0.1", () => {
        const addr = s.address();
        s.close(() => resolve(typeof addr === "object" && addr !== null ? addr.port : 0));
      });
    });
    // A port handed out earlier is not bound until its user starts: the kernel may offer it again.
    if (!notThese.includes(port)) return port;
  }
}

/** waitHealthy waits for the hub's /healthz, failing early when the process exits. */
export async function waitHealthy(url: string, child: ChildProcess, ms: number): Promise<void> {
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
export function stopChild(c: ChildProcess): Promise<void> {
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
export async function hashWithHub(password: string): Promise<string> {
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
