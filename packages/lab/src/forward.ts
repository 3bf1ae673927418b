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
