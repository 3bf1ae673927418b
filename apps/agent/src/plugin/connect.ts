import { spawn, execFile, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import type { Connection } from "./args.js";

const exec = promisify(execFile);

/** PORT_FORWARD_MS: how long kubectl port-forward may take to say where it listens. */
const PORT_FORWARD_MS = 20_000;
/** KUBECTL_MS: how long kubectl may take to read the token's Secret (a server that accepts and never answers). */
const KUBECTL_MS = 30_000;

/** TOKEN_SECRET: the Secret (key `token`) a team keeps its read-API token in, in the hub's namespace. */
export const TOKEN_SECRET = "whohas-read-token";

/** A HubSession is a way to the hub's read API for one command: its base URL and token; close() ends it. */
export interface HubSession {
  readonly base: string;
  readonly token: string;
  /** What the user should know before trusting the answer (a token sent in the clear). */
  readonly warnings: readonly string[];
  close(): void;
}

/** ConnectError: the hub could not be reached or no token was found (exit 2, with the message). */
export class ConnectError extends Error {}

/**
 * The port-forwards running: killed when this process exits for any reason, so that none outlives the command as a
 * listener into the hub (the entry point turns SIGINT, SIGTERM and SIGHUP into an exit).
 */
const forwards = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of forwards) child.kill("SIGTERM");
});

/** kubectlArgs are the flags that pick the cluster, passed to every kubectl this plugin runs. */
function kubectlArgs(c: Connection): string[] {
  return [
    ...(c.kubeconfig === null ? [] : ["--kubeconfig", c.kubeconfig]),
    ...(c.context === null ? [] : ["--context", c.context]),
    "-n",
    c.namespace,
  ];
}

/** connect opens a session: the URL as given, or a port-forward to the hub's Service through the kubeconfig. */
export async function connect(c: Connection): Promise<HubSession> {
  if (c.url !== null) {
    const host = new URL(c.url).hostname;
    const loopback = host === "localhost" || host === "[::1]" || host.startsWith("127.");
    const warnings =
      c.url.startsWith("http://") && !loopback ? [`the token goes to ${host} unencrypted (http://): use https:// beyond this machine`] : [];
    return { base: c.url, token: await token(c, false), warnings, close: () => undefined };
  }
  const tok = await token(c, true);
  const pf = await portForward(c);
  return {
    base: `http://127.0.0.1:${pf.port}`,
    token: tok,
    warnings: [],
    close: () => {
      forwards.delete(pf.child);
      pf.child.kill("SIGTERM");
    },
  };
}

/**
 * checked is `text` as a token: one word of printable ASCII, which is what the hub hands out and what an HTTP header
 * can carry. Anything else is refused without being repeated (a file with a comment line must not end up in a log).
 */
function checked(text: string, from: string): string {
  const t = text.trim();
  if (t === "") throw new ConnectError(`the read-API token from ${from} is empty`);
  if (!/^[\x21-\x7e]+$/.test(t))
    throw new ConnectError(
      `the read-API token from ${from} is not one word of printable ASCII (${t.length} characters): put the token alone in it`,
    );
  return t;
}

/** token finds the read-API token: --token / WHOHAS_TOKEN, --token-file, or (`cluster`) the team's Secret. */
async function token(c: Connection, cluster: boolean): Promise<string> {
  if (c.token !== null) return checked(c.token, "--token or WHOHAS_TOKEN");
  if (c.tokenFile !== null) {
    const text = await readFile(c.tokenFile, "utf8").catch((e: NodeJS.ErrnoException) => {
      throw new ConnectError(`--token-file ${c.tokenFile}: ${e.code === "ENOENT" ? "no such file" : e.message}`);
    });
    return checked(text, `--token-file ${c.tokenFile}`);
  }
  const howTo =
    `make one in the dashboard (Settings > Read-API tokens) and pass --token-file FILE, or store it once for your team: ` +
    `kubectl -n ${c.namespace} create secret generic ${TOKEN_SECRET} --from-file=token=/dev/stdin`;
  if (!cluster) throw new ConnectError(`no read-API token (--token-file, --token or WHOHAS_TOKEN): ${howTo}`);
  const args = [...kubectlArgs(c), "--request-timeout=20s", "get", "secret", TOKEN_SECRET, "-o", "jsonpath={.data.token}"];
  const r = await exec(c.kubectl, args, { timeout: KUBECTL_MS }).then(
    (ok) => ({ stdout: ok.stdout, error: null }),
    (e: { stderr?: string; message: string; code?: string | number; killed?: boolean }) => ({
      stdout: "",
      error:
        e.code === "ENOENT"
          ? `${c.kubectl} is not on PATH (set KUBECTL, or use --url)`
          : e.killed === true
            ? `no answer within ${KUBECTL_MS / 1000} s`
            : (e.stderr ?? e.message).trim(),
    }),
  );
  if (r.error !== null && !/NotFound|not found/.test(r.error)) throw new ConnectError(`kubectl get secret ${TOKEN_SECRET}: ${r.error}`);
  const text = Buffer.from(r.stdout.trim(), "base64").toString("utf8");
  if (text.trim() !== "") return checked(text, `the Secret ${TOKEN_SECRET}`);
  const missing = r.error === null ? `the Secret ${TOKEN_SECRET} has no key "token"` : `no Secret ${TOKEN_SECRET} in ${c.namespace}`;
  throw new ConnectError(`no read-API token (--token-file, --token, WHOHAS_TOKEN, or ${missing}): ${howTo}`);
}

/** portForward runs `kubectl port-forward` to the hub's Service on a free local port and waits until it listens. */
function portForward(c: Connection): Promise<{ child: ChildProcess; port: number }> {
  const args = [...kubectlArgs(c), "port-forward", `service/${c.service}`, `:${c.port}`, "--address", "127.0.0.1"];
  const child = spawn(c.kubectl, args, { stdio: ["ignore", "pipe", "pipe"] });
  forwards.add(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    let settled = false;
    const fail = (why: string) => {
      clearTimeout(timer);
      forwards.delete(child);
      child.kill("SIGTERM");
      if (settled) return;
      settled = true;
      reject(new ConnectError(`kubectl port-forward to service/${c.service} in ${c.namespace}: ${why}`));
    };
    const timer = setTimeout(
      () => fail(`no port after ${PORT_FORWARD_MS / 1000} s${err === "" ? "" : `: ${err.trim()}`}`),
      PORT_FORWARD_MS,
    );
    child.once("error", (e: NodeJS.ErrnoException) =>
      fail(e.code === "ENOENT" ? `${c.kubectl} is not on PATH (set KUBECTL, or use --url)` : e.message),
    );
    const { stdout, stderr } = child as ChildProcess & { stdout: Readable; stderr: Readable };
    stderr.on("data", (d: Buffer) => (err += d.toString()));
    stdout.on("data", (d: Buffer) => {
      out += d.toString();
      // "Forwarding from 127.0.0.1:43127 -> 3000"
      const port = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(out)?.[1];
      if (port === undefined || settled) return;
      settled = true;
      clearTimeout(timer);
      stdout.removeAllListeners("data");
      stdout.resume();
      resolve({ child, port: Number(port) });
    });
    child.once("exit", (code) => fail(err.trim() === "" ? `kubectl exited with ${code}` : err.trim()));
  });
}
