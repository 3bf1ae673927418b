import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { writeFile } from "node:fs/promises";
import type { IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startStack, type Stack } from "../stack.js";
import { eventually } from "./hub-client.js";
import { webhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

interface Got {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

// Alerting end to end: the lab's three nodes answer for every VIP, the hub opens incidents, and notifications reach
// a real HTTP receiver on loopback, signed; one still failing when the hub is killed is delivered after the restart.
describe("alerts: incidents reach webhook receivers, and survive a crash", () => {
  let stack: Stack;
  let receiver: WebhookReceiver;
  const got: Got[] = [];
  let answer = 200;
  const secret = "lab-signing-secret-0123456789";

  beforeAll(async () => {
    receiver = await webhookReceiver((body, headers) => {
      got.push({ headers, body });
      return answer;
    });
    const { url } = receiver;
    const secretFile = join(tmpdir(), `whohas-lab-hook-secret-${process.pid}`);
    await writeFile(secretFile, secret, { mode: 0o600 });
    answer = 503; // the receiver is down when the incidents open
    stack = await startStack({
      nodes: 3,
      vips: 1,
      kube: true,
      requestIntervalMs: 500,
      hubConfig: {
        alerting: { groupWait: "1s", allowHosts: ["127.0.0.1"] },
        webhooks: [{ name: "ops", url, format: "generic", secretFile }],
      },
    });
  });
  afterAll(async () => {
    await stack.stop();
    receiver.close();
  });

  it("keeps trying with the same id, loses nothing to a SIGKILL, and delivers a signed notice of the three responders", async () => {
    // The receiver refuses: the hub retries with the same webhook-id.
    await eventually(
      async () => got.length,
      (n) => n >= 2,
      30_000,
    );
    const id = got[0]?.headers["webhook-id"];
    expect(typeof id).toBe("string");
    expect(got.every((g) => g.headers["webhook-id"] === id)).toBe(true);

    // A crash while the notification is pending: nothing flushed, nothing said to the agents.
    await stack.killHub();
    answer = 200;
    const before = got.length;
    await stack.startHub();
    const delivered = await eventually(
      async () => got.slice(before).find((g) => g.headers["webhook-id"] === id),
      (g) => g !== undefined,
      30_000,
    );
    if (delivered === undefined) throw new Error("not delivered");

    // Signed per Standard Webhooks with the receiver's secret.
    const ts = String(delivered.headers["webhook-timestamp"]);
    const sig = createHmac("sha256", Buffer.from(secret))
      .update(`${String(id)}.${ts}.${delivered.body}`)
      .digest("base64");
    expect(delivered.headers["webhook-signature"]).toBe(`v1,${sig}`);
    // The same logical notification as the failed attempts: the body is the one fixed at the first attempt.
    expect(delivered.body).toBe(got[0]?.body);
    const body = JSON.parse(delivered.body) as {
      status: string;
      ip: string;
      services: { name: string }[];
      alerts: { type: string; responders: { node: string | null }[] }[];
    };
    expect(body.status).toBe("firing");
    expect(body.ip).toBe(stack.lab.vips[0]);
    expect(body.services.map((s) => s.name)).toEqual(["web-0"]);
    const multi = body.alerts.find((a) => a.type === "multi-responder");
    expect(multi?.responders.map((r) => r.node).sort()).toEqual(stack.lab.nodes.map((n) => n.name).sort());
  });
});
