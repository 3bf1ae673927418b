import { once } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/** A WebhookReceiver is an HTTP server on loopback that takes the hub's notifications, at `url`. */
export interface WebhookReceiver {
  readonly url: string;
  close(): void;
}

/**
 * webhookReceiver starts one: each request's body and headers go to `take`, which returns the status to answer with
 * (200 "ok", anything else "try later": a receiver that is down, for the hub to retry).
 */
export async function webhookReceiver(take: (body: string, headers: IncomingHttpHeaders) => number): Promise<WebhookReceiver> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const status = take(body, req.headers);
      res.writeHead(status).end(status === 200 ? "ok" : "try later");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * notifying is the hub's config (StackOptions.hubConfig) that sends every notification to `receiver` as webhook
 * `name`: alerts grouped for a second, and loopback allowed, where the lab's receivers listen.
 */
export function notifying(receiver: WebhookReceiver, name: string): Readonly<Record<string, unknown>> {
  return { alerting: { groupWait: "1s", allowHosts: ["127.0.0.1"] }, webhooks: [{ name, url: receiver.url, format: "generic" }] };
}
