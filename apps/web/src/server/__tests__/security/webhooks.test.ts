import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { silentLogger } from "@whohas/core";
import { Alerter } from "../../alerts/alerter.js";
import { Egress, MAX_ANSWER_BYTES } from "../../alerts/egress.js";
import { render, slackBody, type Notice } from "../../alerts/formats.js";
import { DEFAULT_POLICY, type AlertPolicy, type Receiver } from "../../alerts/receivers.js";
import { appRouter } from "../../api/root.js";
import { createCallerFactory } from "../../api/trpc.js";
import { Hub } from "../../hub/hub.js";
import { callerContext } from "../helpers.js";
import { AlertAdmin } from "../../alerts/admin.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** receiver listens on loopback and answers every request with `answer`; `hits` counts what reached it. */
async function receiver(answer: (res: ServerResponse) => void = (res) => res.writeHead(200).end("ok")) {
  const state = { hits: 0 };
  const s = createServer((req, res) => {
    state.hits++;
    req.resume();
    answer(res);
  });
  servers.push(s);
  s.listen(0, "127.0.0.1");
  await once(s, "listening");
  return { port: (s.address() as AddressInfo).port, state };
}

async function alerter(receivers: Receiver[], policy: Partial<AlertPolicy> = {}): Promise<{ hub: Hub; a: Alerter }> {
  const hub = await Hub.open();
  const a = new Alerter({
    hub,
    outbox: hub.store.outbox,
    settings: hub.store.settings,
    receivers: () => Promise.resolve(receivers),
    policy: { ...DEFAULT_POLICY, ...policy },
    logger: silentLogger,
  });
  return { hub, a };
}

const hook = (url: string): Receiver => ({ name: "ops", url, format: "generic", secret: null, source: "settings" });

describe("receivers cannot reach the hub's own network", () => {
  it.each([
    { case: "loopback written as an address", host: "127.0.0.1", why: /^127\.0\.0\.1 is a loopback address: refused/ },
    {
      case: "a name that resolves to loopback",
      host: "localhost",
      why: /^localhost resolves to (127\.0\.0\.1|::1), which is a loopback address: refused/,
    },
    { case: "loopback written as IPv4-mapped IPv6", host: "[::ffff:127.0.0.1]", why: /^::ffff:7f00:1 is a loopback address: refused/ },
    { case: "IPv6 loopback", host: "[::1]", why: /^::1 is a loopback address: refused/ },
    { case: "the unspecified address", host: "0.0.0.0", why: /^0\.0\.0\.0 is an unspecified address: refused/ },
  ])("refuses $case at send time, and nothing reaches it", async ({ host, why }) => {
    const r = await receiver();
    const { a } = await alerter([]);
    const res = await a.test(hook(`http://${host}:${r.port}/hook`));
    expect(res.status).toBeNull();
    expect(res.error).toMatch(why);
    expect(r.state.hits).toBe(0);
  });

  it("refuses cloud metadata and private networks unless allowed, and says which key allows them", () => {
    const strict = new Egress({ allowHosts: [], allowPrivate: false });
    expect(strict.addressRefusal("169.254.169.254", "169.254.169.254")).toBe(
      "169.254.169.254 is a link-local address: refused (list the host in alerting.allowHosts if this receiver is really meant)",
    );
    expect(strict.addressRefusal("am.corp", "10.1.2.3")).toBe(
      "am.corp resolves to 10.1.2.3, which is a private address: refused (set alerting.allowPrivate: true, or list the host in alerting.allowHosts)",
    );
    expect(strict.addressRefusal("hooks.example", "93.184.216.34")).toBeNull();
    const onPrem = new Egress({ allowHosts: [], allowPrivate: true });
    expect(onPrem.addressRefusal("am.corp", "10.1.2.3")).toBeNull();
    expect(onPrem.addressRefusal("am.corp", "fd00::7")).toBeNull();
    // allowPrivate is not a way to the metadata service or loopback.
    expect(onPrem.addressRefusal("evil.example", "169.254.169.254")).toMatch(/link-local address: refused/);
    expect(onPrem.addressRefusal("evil.example", "127.0.0.1")).toMatch(/loopback address: refused/);
    // A host named in allowHosts is trusted wherever it resolves, but only the hosts named there may receive.
    const listed = new Egress({ allowHosts: ["am.corp", "10.9.0.0/16"], allowPrivate: false });
    expect(listed.addressRefusal("am.corp", "127.0.0.1")).toBeNull();
    expect(listed.hostRefusal("10.9.3.4")).toBeNull();
    expect(listed.hostRefusal("hooks.example")).toMatch(/not in alerting.allowHosts/);
  });

  it("delivers to a loopback receiver named in allowHosts", async () => {
    const r = await receiver();
    const { a } = await alerter([], { allowHosts: ["127.0.0.1"] });
    expect((await a.test(hook(`http://127.0.0.1:${r.port}/hook`))).status).toBe(200);
    expect(r.state.hits).toBe(1);
  });

  it("does not follow a redirect, not even to an allowed host", async () => {
    const target = await receiver();
    const r = await receiver((res) => res.writeHead(302, { location: `http://127.0.0.1:${target.port}/elsewhere` }).end());
    const { a } = await alerter([], { allowHosts: ["127.0.0.1"] });
    const res = await a.test(hook(`http://127.0.0.1:${r.port}/hook`));
    expect(res.status).toBe(302);
    // The reason says what happened, never where the receiver points (an admin sees a status and a short reason).
    expect(res.error).toBe("the receiver answers 302 (a redirect): whohas does not follow redirects, use the final URL");
    expect(target.state.hits).toBe(0);
  });

  it("reads at most 2 KiB of an answer, however large, and closes the connection", async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let written = 0;
    let closed = false;
    const r = await receiver((res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.on("close", () => (closed = true));
      const pump = () => {
        // 1.5 GB unless the reader stops: the hub must not buffer it.
        while (written < 1536 * 1024 * 1024 && !closed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    });
    const { a } = await alerter([], { allowHosts: ["127.0.0.1"] });
    const res = await a.test(hook(`http://127.0.0.1:${r.port}/hook`));
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(MAX_ANSWER_BYTES);
    await expect.poll(() => closed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it("shows an admin only the status and a short reason of a test send, never the answer's body", async () => {
    const r = await receiver((res) => res.writeHead(200).end("secret-from-the-internal-service"));
    const { hub, a } = await alerter([hook(`http://127.0.0.1:${r.port}/hook`)], { allowHosts: ["127.0.0.1"] });
    const caller = createCallerFactory(appRouter)({ ...callerContext(hub, "admin"), alerts: new AlertAdmin(a, hub.store.audit) });
    const out = await caller.alerts.testReceiver({ name: "ops" });
    expect(out).toEqual({ ok: true, status: 200, ms: expect.any(Number) as number, error: null });
    expect(JSON.stringify(out)).not.toContain("secret-from");
  });

  it("keeps the status of a failed delivery, never the answer's body, and waits at most an hour for Retry-After", async () => {
    const r = await receiver((res) => res.writeHead(503, { "retry-after": "99999999999" }).end("secret-from-the-internal-service"));
    const { hub, a } = await alerter([hook(`http://127.0.0.1:${r.port}/hook`)], { allowHosts: ["127.0.0.1"], groupWaitMs: 0 });
    const now = Date.now();
    await hub.store.incidents.open(
      {
        ip: "198.51.100.7",
        type: "multi-responder",
        macs: ["02:00:5e:00:00:0a", "02:00:5e:00:00:0b"],
        detail: "two answer",
        firstSeen: now,
        lastSeen: now,
        count: 1,
        samples: [now],
      },
      {},
    );
    await a.enqueue("198.51.100.7", "firing");
    await a.deliverDue();
    const [row] = await hub.store.outbox.recent(10);
    expect(row).toMatchObject({ status: "pending", lastStatus: 503, lastError: "HTTP 503" });
    expect((row?.notBefore ?? 0) - Date.now()).toBeLessThanOrEqual(3_600_000);
    const caller = createCallerFactory(appRouter)({ ...callerContext(hub, "admin"), alerts: new AlertAdmin(a, hub.store.audit) });
    expect(JSON.stringify(await caller.alerts.deliveries())).not.toContain("secret-from");
  });

  it("refuses to save a receiver on loopback in Settings", async () => {
    const { hub, a } = await alerter([]);
    const caller = createCallerFactory(appRouter)({ ...callerContext(hub, "admin"), alerts: new AlertAdmin(a, hub.store.audit) });
    await expect(caller.alerts.saveReceiver({ name: "x", url: "http://127.0.0.1:9093/", format: "generic", secret: null })).rejects.toThrow(
      /loopback address: refused/,
    );
    expect((await hub.store.audit.list())[0]).toMatchObject({ action: "receiver.save", outcome: "refused" });
  });
});

describe("Slack messages", () => {
  const notice = (node: string, detail: string): Notice => ({
    id: "msg_1",
    receiver: "chat",
    cluster: "default",
    ip: "198.51.100.7",
    status: "firing",
    services: [{ namespace: "web", name: "<!here>" }],
    expectedOwner: node,
    alerts: [
      {
        incidentId: 1,
        type: "multi-responder",
        status: "firing",
        detail,
        macs: ["02:00:5e:00:00:0a"],
        nodes: [node],
        vendors: [null],
        firstSeen: 0,
        lastSeen: 0,
        resolvedAt: null,
        samples: [],
      },
    ],
    externalUrl: "https://whohas.example/a|b?x=1&y=2",
  });

  it("escapes &, < and > in every name and detail, so a node name cannot mention @channel or hide a link", () => {
    const body = render("slack", notice("<!channel>", "answers from <https://evil.example|your bank> & more"));
    expect(body).not.toMatch(/<!channel>|<!here>|<https:\/\/evil/);
    expect(body).toContain("&lt;!channel&gt;");
    expect(body).toContain("&lt;https://evil.example|your bank&gt; &amp; more");
    // whohas' own link stays a link, its "|" and "&" made harmless.
    const blocks = JSON.stringify(slackBody(notice("node-a", "x")));
    expect(blocks).toContain("<https://whohas.example/a%7Cb?x=1&amp;y=2/ips/198.51.100.7|open in whohas>");
  });

  it("sends every mrkdwn text verbatim (no mentions or links made from bare names), on one line per value", () => {
    const body = slackBody(notice("node-a", "one\nline\u2028more")) as {
      blocks: { text?: { type: string; verbatim?: boolean }; elements?: { type: string; verbatim?: boolean }[] }[];
    };
    const texts = body.blocks
      .flatMap((b) => [...(b.text === undefined ? [] : [b.text]), ...(b.elements ?? [])])
      .filter((t) => t.type === "mrkdwn");
    expect(texts.length).toBeGreaterThan(2);
    expect(texts.every((t) => t.verbatim === true)).toBe(true);
    expect(JSON.stringify(body)).toContain("one line more");
  });
});
