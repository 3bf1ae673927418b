import { fileURLToPath } from "node:url";
import WebSocket from "ws";

/**
 * An Attempt is one connection to the hub's agent endpoint, made from wherever this script runs (a node's namespace
 * with `ip netns exec`): the token it shows, then what it does once the upgrade is accepted.
 */
export interface Attempt {
  readonly token: string;
  /**
   * hello: say hello as this node; raw: send this text; oversized: send a message of this many bytes; burst: say
   * hello as `node`, then send `count` heartbeats at once.
   */
  readonly then?:
    | { readonly hello: string }
    | { readonly raw: string }
    | { readonly oversized: number }
    | { readonly burst: { readonly node: string; readonly count: number } };
}

/**
 * attempt returns what the hub did: "http STATUS" for a refused upgrade, "welcome" for a hello it accepted, "close
 * CODE REASON" when it closed the connection, "open" when the connection was still open after everything was sent
 * (a ping answered after the hub had read it all).
 */
export function attempt(url: string, a: Attempt): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${a.token}` }, maxPayload: 1024 * 1024 });
    ws.once("unexpected-response", (_req, res) => resolve(`http ${res.statusCode ?? 0}`));
    ws.once("error", (e) => resolve(`error ${e.message}`));
    ws.once("close", (code, reason) => resolve(`close ${code} ${reason.toString()}`.trim()));
    ws.once("open", () => {
      const then = a.then;
      if (then !== undefined && "hello" in then) {
        ws.on("message", (data: Buffer) => {
          if ((JSON.parse(data.toString()) as { type?: string }).type !== "welcome") return;
          resolve("welcome");
          ws.close();
        });
        ws.send(JSON.stringify({ v: 2, type: "hello", node: then.hello, agentVersion: "attempt", interfaces: [] }));
        return;
      }
      if (then !== undefined && "burst" in then) {
        ws.send(JSON.stringify({ v: 2, type: "hello", node: then.burst.node, agentVersion: "attempt", interfaces: [] }));
        const beat = JSON.stringify({ v: 2, type: "heartbeat", t: Date.now() });
        for (let i = 0; i < then.burst.count; i++) ws.send(beat);
      } else if (then !== undefined) ws.send("raw" in then ? then.raw : "x".repeat(then.oversized));
      // The hub reads a connection's frames in order: its pong comes after it has handled what was sent.
      ws.once("pong", () => {
        resolve("open");
        ws.close();
      });
      ws.ping();
    });
  });
}

/** Run as `node agent-attempt.js URL ATTEMPTS_JSON`: prints one JSON array of outcomes, in order. */
async function main(args: readonly string[]): Promise<void> {
  const [url, json] = args;
  if (url === undefined || json === undefined) {
    process.stderr.write('usage: agent-attempt.js ws://HOST:PORT/agent \'[{"token": "...", "then": {"hello": "node-1"}}]\'\n');
    process.exit(2);
  }
  const out: string[] = [];
  for (const a of JSON.parse(json) as Attempt[]) out.push(await attempt(url, a));
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`agent-attempt: ${(e as Error).message}\n`);
    process.exit(1);
  });
