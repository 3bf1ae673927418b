import { spawn, execFile, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import type { Connection } from "./args.js";

const exec = promisify(execFile);

/** PORT_FORWARD_MS: how long kubectl port-forward may take to say where it listens. */
const PORT_FORWARD_MS = 20_000;

/** TOKEN_SECRET: the Secret (key `token`) a team keeps its read-API token in, in the hub's namespace. */
export const TOKEN_SECRET = "whohas-read-token";

/** A HubSession is a way to the hub's read API for one command: its base URL and token; close() ends it. */
export interface HubSession {
  readonly base: string;
  readonly token: string;
  close(): void;
}

/** ConnectError: the hub could not be reached or no token was found (exit 2, with the message). */
export class ConnectError extends Error {}

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
  if (c.url !== null) return { base: c.url, token: await token(c, false), close: () => undefined };
  const tok = await token(c, true);
  const pf = await portForward(c);
  return { base: `http://127.0.0.1:${pf.port}`, token: tok, close: () => pf.child.kill("SIGTERM") };
}

/** token finds the read-API token: --token / WHOHAS_TOKEN, --token-file, or (`cluster`) the team's Secret. */
async function token(c: Connection, cluster: boolean): Promise<string> {
  if (c.token !== null) return c.token.trim();
  if (c.tokenFile !== null) {
    const text = await readFile(c.tokenFile, "utf8").catch((e: NodeJS.ErrnoException) => {
      throw new ConnectError(`--token-file ${c.tokenFile}: ${e.code === "ENOENT" ? "no such file" : e.message}`);
    });
    if (text.trim() === "") throw new ConnectError(`--token-file ${c.tokenFile} is empty`);
    return text.trim();
  }
  const howTo =
    `make one in the dashboard (Settings > Read-API tokens) and pass --token-file FILE, or store it once for your team: ` +
    `kubectl -n ${c.namespace} create secret generic ${TOKEN_SECRET} --from-literal=token=TOKEN`;
  if (!cluster) throw new ConnectError(`no read-API token (--token, --token-file or WHOHAS_TOKEN): ${howTo}`);
  const r = await exec(c.kubectl, [...kubectlArgs(c), "get", "secret", TOKEN_SECRET, "-o", "jsonpath={.data.token}"]).then(
    (ok) => ({ stdout: ok.stdout, error: null }),
    (e: { stderr?: string; message: string; code?: string }) => ({
      stdout: "",
      error: e.code === "ENOENT" ? `${c.kubectl} is not on PATH (set KUBECTL, or use --url)` : (e.stderr ?? e.message).trim(),
    }),
  );
  if (r.error !== null && !/NotFound|not found/.test(r.error)) throw new ConnectError(`kubectl get secret ${TOKEN_SECRET}: ${r.error}`);
  const text = Buffer.from(r.stdout.trim(), "base64").toString("utf8").trim();
  if (text !== "") return text;
  const missing = r.error === null ? `the Secret ${TOKEN_SECRET} has no key "token"` : `no Secret ${TOKEN_SECRET} in ${c.namespace}`;
  throw new ConnectError(`no read-API token (--token, --token-file, WHOHAS_TOKEN, or ${missing}): ${howTo}`);
}

/** portForward runs `kubectl port-forward` to the hub's Service on a free local port and waits until it listens. */
function portForward(c: Connection): Promise<{ child: ChildProcess; port: number }> {
  const args = [...kubectlArgs(c), "port-forward", `service/${c.service}`, `:${c.port}`, "--address", "127.0.0.1"];
  const child = spawn(c.kubectl, args, { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill("SIGTERM");
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
      if (port === undefined) return;
      clearTimeout(timer);
      stdout.removeAllListeners("data");
      stdout.resume();
      resolve({ child, port: Number(port) });
    });
    child.once("exit", (code) => fail(err.trim() === "" ? `kubectl exited with ${code}` : err.trim()));
  });
}
