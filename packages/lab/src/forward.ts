import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { fileURLToPath } from "node:url";

/**
 * An Endpoint is where a forward listens or connects: a TCP address or a Unix socket. A Unix socket is a file, seen
 * from every network namespace: two forwards joined by one carry TCP from one namespace into another, as
 * `kubectl port-forward` carries a port of a Pod's network to the operator's machine.
 */
export type Endpoint = { readonly tcp: { readonly host: string; readonly port: number } } | { readonly unix: string };

/** parseEndpoint reads "tcp:HOST:PORT" or "unix:PATH". */
export function parseEndpoint(text: string): Endpoint {
  const tcp = /^tcp:(.+):(\d+)$/.exec(text);
  if (tcp !== null) return { tcp: { host: tcp[1] ?? "", port: Number(tcp[2]) } };
  if (text.startsWith("unix:/")) return { unix: text.slice("unix:".length) };
  throw new Error(`not an endpoint: ${JSON.stringify(text)} (tcp:HOST:PORT or unix:/PATH)`);
}

export const endpointText = (e: Endpoint): string => ("tcp" in e ? `tcp:${e.tcp.host}:${e.tcp.port}` : `unix:${e.unix}`);

/** forward listens on `from` and joins each connection to a new one to `to`; it resolves once listening. */
export async function forward(from: Endpoint, to: Endpoint): Promise<Server> {
  const server = createServer((inbound: Socket) => {
    const outbound = "tcp" in to ? connect(to.tcp.port, to.tcp.host) : connect(to.unix);
    inbound.pipe(outbound).pipe(inbound);
    // Either side going away closes the other; errors end the pair, never the forward.
    inbound.on("error", () => outbound.destroy());
    outbound.on("error", () => inbound.destroy());
    inbound.on("close", () => outbound.destroy());
    outbound.on("close", () => inbound.destroy());
  });
  if ("unix" in from) rmSync(from.unix, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if ("tcp" in from) server.listen(from.tcp.port, from.tcp.host, resolve);
    else server.listen(from.unix, resolve);
  });
  return server;
}

/**
 * bridgePorts makes loopback TCP ports of another network namespace and of this one reach each other, as kubectl
 * port-forward does: each port of `outward` is served there and reached here on the same number, each of `inward`
 * served here and reached there. Every pair is joined by a Unix socket under `dir`; `startRelay` runs this file in
 * the other namespace with its FROM=TO pairs. Resolves with this side's forwards once both sides listen.
 */
export async function bridgePorts(o: {
  readonly dir: string;
  readonly outward: readonly number[];
  readonly inward: readonly number[];
  readonly startRelay: (pairs: string[]) => ChildProcess;
}): Promise<Server[]> {
  const tcp = (port: number): Endpoint => ({ tcp: { host: "127.0.0.1", port } });
  const sock = (port: number): Endpoint => ({ unix: `${o.dir}/fwd-${port}.sock` });
  const there: [Endpoint, Endpoint][] = [...o.outward.map((p): [Endpoint, Endpoint] => [sock(p), tcp(p)])];
  const here: [Endpoint, Endpoint][] = [...o.outward.map((p): [Endpoint, Endpoint] => [tcp(p), sock(p)])];
  for (const p of o.inward) {
    there.push([tcp(p), sock(p)]);
    here.push([sock(p), tcp(p)]);
  }
  const servers: Server[] = [];
  for (const [from, to] of here) servers.push(await forward(from, to));
  const relay = o.startRelay(there.map(([from, to]) => `${endpointText(from)}=${endpointText(to)}`));
  await new Promise<void>((resolve, reject) => {
    relay.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) resolve();
    });
    relay.once("exit", (code) => reject(new Error(`the other namespace's forward exited (${code})`)));
  });
  return servers;
}

/** Run as `node forward.js FROM=TO ...` (inside a namespace with `ip netns exec`): prints "ready" once all listen. */
async function main(args: readonly string[]): Promise<void> {
  if (args.length === 0) {
    process.stderr.write("usage: forward.js FROM=TO ... (each tcp:HOST:PORT or unix:/PATH)\n");
    process.exit(2);
  }
  for (const pair of args) {
    const [from = "", to = ""] = pair.split("=");
    await forward(parseEndpoint(from), parseEndpoint(to));
  }
  process.stdout.write("ready\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`forward: ${(e as Error).message}\n`);
    process.exit(1);
  });
