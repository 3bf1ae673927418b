import { afterEach, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { jsonLogger, silentLogger } from "@whohas/core";
import { Alerter, type Outcome } from "../alerts/alerter.js";
import { DEFAULT_POLICY, checkUrl, type AlertPolicy, type Receiver } from "../alerts/receivers.js";
import { Hub } from "../hub/hub.js";
import { until } from "./helpers.js";

const IP = "192.0.2.10";
const SECRET = "whsec_" + Buffer.from("a very secret signing key!").toString("base64");

/** A Received request, as the loopback receiver saw it. */
interface Received {
  readonly at: number;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

/** receiver starts a real HTTP receiver on loopback that answers with `answer(n)` for its n-th request. */
async function receiver(answer: (n: number, res: ServerResponse) => void = (_n, res) => res.writeHead(200).end("ok")) {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      got.push({ at: Date.now(), headers: req.headers, body });
      answer(got.length, res);
    });
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}
const servers: Server[] = [];
const alerters: Alerter[] = [];
afterEach(async () => {
  for (const a of alerters.splice(0)) a.stop();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A clock the test moves by hand: waits the policy asks for pass without the test sleeping through them. */
function manualClock(start = Date.now()) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** untilStored waits, polling every 20 ms, for `ok` (a read of the store) to hold; it throws after 10 s. */
async function untilStored(ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error("not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function setup(receivers: Receiver[], policy: Partial<AlertPolicy> = {}, clock?: () => number, cluster?: string) {
  const hub = await Hub.open({ clock, cluster: cluster === undefined ? undefined : { name: cluster, url: null } });
  hub.connect({
    v: 2,
    type: "hello",
    node: "node-a",
    agentVersion: "t",
    interfaces: [{ name: "eth0", mac: "02:00:00:00:00:0a", up: true }],
  });
  hub.connect({
    v: 2,
    type: "hello",
    node: "node-b",
    agentVersion: "t",
    interfaces: [{ name: "eth0", mac: "02:00:00:00:00:0b", up: true }],
  });
  const outcomes: [string, Outcome][] = [];
  const alerter = new Alerter({
    hub,
    outbox: hub.store.outbox,
    settings: hub.store.settings,
    receivers: () => Promise.resolve(receivers),
    policy: { ...DEFAULT_POLICY, groupWaitMs: 0, allowHosts: ["127.0.0.1"], ...policy },
    logger: silentLogger,
    onOutcome: (r, o) => outcomes.push([r, o]),
    random: () => 0,
  });
  alerters.push(alerter);
  const open = async (type = "multi-responder", ip = IP) =>
    (
      await hub.store.incidents.open(
        {
          ip,
          type: type as "multi-responder",
          macs: ["02:00:00:00:00:0a", "02:00:00:00:00:0b"],
          detail: `2 nodes answer for ${IP} (node-a, node-b)`,
          firstSeen: Date.now() - 5000,
          lastSeen: Date.now(),
          count: 3,
          samples: [Date.now() - 5000],
        },
        {},
      )
    ).id;
  return { hub, alerter, outcomes, open };
}

describe("webhook formats", () => {
  it("signs the generic format per Standard Webhooks, and the receiver can verify it", async () => {
    const r = await receiver();
    const { alerter, open } = await setup([{ name: "ops", url: r.url, format: "generic", secret: SECRET, source: "config" }]);
    await open();
    await alerter.enqueue(IP, "firing");
    await until(() => r.got.length === 1);
    const req = r.got[0];
    if (req === undefined) throw new Error("nothing received");
    const id = String(req.headers["webhook-id"]);
    const ts = String(req.headers["webhook-timestamp"]);
    const key = Buffer.from(SECRET.slice(6), "base64");
    const expected = createHmac("sha256", key).update(`${id}.${ts}.${req.body}`).digest("base64");
    expect(req.headers["webhook-signature"]).toBe(`v1,${expected}`);
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(5);
    expect(JSON.parse(req.body)).toMatchObject({
      version: "1",
      type: "whohas.incident",
      id,
      status: "firing",
      ip: IP,
      alerts: [
        {
          type: "multi-responder",
          status: "firing",
          responders: [
            { mac: "02:00:00:00:00:0a", node: "node-a" },
            { mac: "02:00:00:00:00:0b", node: "node-b" },
          ],
        },
      ],
    });
  });

  it("links each IP incident's capture in every format when alerting.externalUrl is set", async () => {
    const [gen, am, chat] = [await receiver(), await receiver(), await receiver()];
    const { alerter, open } = await setup(
      [
        { name: "gen", url: gen.url, format: "generic", secret: null, source: "config" },
        { name: "am", url: am.url, format: "alertmanager", secret: null, source: "config" },
        { name: "chat", url: chat.url, format: "slack", secret: null, source: "config" },
      ],
      { externalUrl: "https://whohas.example/dash/" },
    );
    const id = await open();
    await alerter.enqueue(IP, "firing");
    await until(() => gen.got.length === 1 && am.got.length === 1 && chat.got.length === 1);
    const link = `https://whohas.example/dash/api/v1/incidents/${id}/capture`;
    const body = (r: { got: Received[] }) => JSON.parse(r.got[0]?.body ?? "{}") as Record<string, unknown>;
    expect(body(gen)).toMatchObject({ alerts: [{ incidentId: id, captureUrl: link }] });
    expect(body(am)).toMatchObject({ alerts: [{ annotations: { capture_url: link } }] });
    expect(JSON.stringify(body(chat))).toContain(`<${link}|capture>`);
  });

  it("names the cluster in every format; the default cluster's Alertmanager labels stay as they were", async () => {
    const [gen, am, chat] = [await receiver(), await receiver(), await receiver()];
    const { alerter, open } = await setup(
      [
        { name: "gen", url: gen.url, format: "generic", secret: null, source: "config" },
        { name: "am", url: am.url, format: "alertmanager", secret: null, source: "config" },
        { name: "chat", url: chat.url, format: "slack", secret: null, source: "config" },
      ],
      {},
      undefined,
      "prod-eu",
    );
    await open();
    await alerter.enqueue(IP, "firing");
    await until(() => gen.got.length === 1 && am.got.length === 1 && chat.got.length === 1);
    const body = (r: { got: Received[] }) => JSON.parse(r.got[0]?.body ?? "{}") as Record<string, unknown>;
    expect(body(gen)).toMatchObject({
      cluster: "prod-eu",
      summary: expect.stringMatching(new RegExp(`^FIRING: ${IP} in cluster prod-eu: `)),
    });
    expect(body(am)).toMatchObject({ commonLabels: { cluster: "prod-eu", ip: IP }, alerts: [{ labels: { cluster: "prod-eu" } }] });
    expect((body(chat) as { text: string }).text).toContain(`${IP} in cluster prod-eu`);

    const one = await receiver();
    const single = await setup([{ name: "am", url: one.url, format: "alertmanager", secret: null, source: "config" }]);
    await single.open();
    await single.alerter.enqueue(IP, "firing");
    await until(() => one.got.length === 1);
    const labels = (body(one) as { alerts: { labels: Record<string, string> }[] }).alerts[0]?.labels;
    expect(labels).not.toHaveProperty("cluster");
  });

  it("sends Alertmanager's webhook v4 shape, firing then resolved", async () => {
    const r = await receiver();
    const { hub, alerter, open } = await setup([{ name: "am", url: r.url, format: "alertmanager", secret: null, source: "config" }]);
    const id = await open();
    await alerter.enqueue(IP, "firing");
    await until(() => r.got.length === 1);
    const firing = JSON.parse(r.got[0]?.body ?? "{}") as Record<string, unknown>;
    expect(firing).toMatchObject({
      version: "4",
      groupKey: `{}:{ip="${IP}"}`,
      status: "firing",
      receiver: "am",
      groupLabels: { ip: IP },
      commonLabels: { alertname: "WhohasMultiResponder", ip: IP, severity: "critical" },
      truncatedAlerts: 0,
    });
    const alert = (firing.alerts as Record<string, unknown>[])[0];
    expect(alert).toMatchObject({
      status: "firing",
      endsAt: "0001-01-01T00:00:00Z",
      labels: { alertname: "WhohasMultiResponder", type: "multi-responder" },
    });
    expect(alert?.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    await hub.store.incidents.resolve(
      id,
      { ip: IP, type: "multi-responder", macs: [], detail: "", firstSeen: 0, lastSeen: Date.now(), count: 3, samples: [] },
      Date.now(),
    );
    await alerter.enqueue(IP, "resolved");
    await until(() => r.got.length === 2);
    const resolved = JSON.parse(r.got[1]?.body ?? "{}") as {
      status: string;
      alerts: { status: string; endsAt: string; fingerprint: string }[];
    };
    expect(resolved.status).toBe("resolved");
    expect(resolved.alerts[0]?.status).toBe("resolved");
    expect(resolved.alerts[0]?.endsAt).not.toBe("0001-01-01T00:00:00Z");
    expect(resolved.alerts[0]?.fingerprint).toBe(alert?.fingerprint);
  });

  it("names the VLAN and family of an address: their own labels and fields, and the VLAN in the summary", async () => {
    const generic = await receiver();
    const am = await receiver();
    const { alerter, open } = await setup([
      { name: "gen", url: generic.url, format: "generic", secret: SECRET, source: "config" },
      { name: "am", url: am.url, format: "alertmanager", secret: null, source: "config" },
    ]);
    await open("multi-responder", `${IP}@30`);
    await alerter.enqueue(`${IP}@30`, "firing");
    await until(() => generic.got.length === 1 && am.got.length === 1);
    expect(JSON.parse(generic.got[0]?.body ?? "{}")).toMatchObject({
      ip: IP,
      vlan: 30,
      family: 4,
      node: null,
      summary: expect.stringMatching(new RegExp(`^FIRING: ${IP} on VLAN 30: `)),
    });
    expect(JSON.parse(am.got[0]?.body ?? "{}")).toMatchObject({
      groupLabels: { ip: IP, vlan: "30" },
      commonLabels: { ip: IP, vlan: "30", family: "4" },
    });
    const v6 = "2001:db8::a";
    await open("multi-responder", `${v6}@40`);
    await alerter.enqueue(`${v6}@40`, "firing");
    await until(() => generic.got.length === 2 && am.got.length === 2);
    expect(JSON.parse(generic.got[1]?.body ?? "{}")).toMatchObject({ ip: v6, vlan: 40, family: 6 });
    expect(JSON.parse(am.got[1]?.body ?? "{}")).toMatchObject({ commonLabels: { ip: v6, vlan: "40", family: "6" } });
  });

  it("sends Slack a text and blocks", async () => {
    const r = await receiver();
    const { alerter, open } = await setup([{ name: "chat", url: r.url, format: "slack", secret: null, source: "settings" }]);
    await open();
    await alerter.enqueue(IP, "firing");
    await until(() => r.got.length === 1);
    const body = JSON.parse(r.got[0]?.body ?? "{}") as { text: string; blocks: { type: string }[] };
    expect(body.text).toBe(`FIRING: ${IP}: 2 nodes answer for ${IP} (node-a, node-b)`);
    expect(body.blocks.map((b) => b.type)).toEqual(["section", "section", "context"]);
  });

  it("names a host that is no node by its vendor in every format: an address conflict pages", async () => {
    const gen = await receiver();
    const chat = await receiver();
    const { hub, alerter } = await setup([
      { name: "gen", url: gen.url, format: "generic", secret: null, source: "config" },
      { name: "chat", url: chat.url, format: "slack", secret: null, source: "config" },
    ]);
    const STRANGER = "00:1b:21:00:00:2a";
    await hub.store.incidents.open(
      {
        ip: IP,
        type: "address-conflict",
        macs: [STRANGER],
        detail: `${STRANGER} (Intel Corporate), not a node of the cluster, answers for ${IP}`,
        firstSeen: Date.now(),
        lastSeen: Date.now(),
        count: 1,
        samples: [],
      },
      {},
    );
    await alerter.onTransition({
      kind: "opened",
      finding: { ip: IP, type: "address-conflict", macs: [STRANGER], detail: "", firstSeen: 0, lastSeen: 0, count: 1, samples: [] },
    });
    await until(() => gen.got.length === 1 && chat.got.length === 1);
    expect(JSON.parse(gen.got[0]?.body ?? "{}")).toMatchObject({
      alerts: [{ type: "address-conflict", responders: [{ mac: STRANGER, node: null, vendor: "Intel Corporate" }] }],
    });
    expect(chat.got[0]?.body).toContain(`not a cluster node, Intel Corporate (${STRANGER})`);
  });
});

describe("node incidents", () => {
  it("groups a node's incident by node: Alertmanager gets a node label, the generic body a node", async () => {
    const r = await receiver();
    const { hub, alerter } = await setup([{ name: "am", url: r.url, format: "alertmanager", secret: null, source: "config" }]);
    await hub.store.incidents.open(
      {
        ip: "node/node-b",
        type: "agent-down",
        macs: [],
        detail: "the whohas agent on node-b has been silent for 31 s",
        firstSeen: Date.now(),
        lastSeen: Date.now(),
        count: 1,
        samples: [],
      },
      {},
    );
    await alerter.enqueue("node/node-b", "firing");
    await until(() => r.got.length === 1);
    const body = JSON.parse(r.got[0]?.body ?? "{}") as {
      groupKey: string;
      groupLabels: Record<string, string>;
      alerts: { labels: Record<string, string> }[];
    };
    expect(body.groupKey).toBe('{}:{node="node-b"}');
    expect(body.groupLabels).toEqual({ node: "node-b" });
    expect(body.alerts[0]?.labels).toMatchObject({ alertname: "WhohasAgentDown", node: "node-b", type: "agent-down" });
  });
});

describe("kube-proxy's ConfigMap incidents", () => {
  it("pages a strictARP revert grouped by the ConfigMap, with the writer in the detail and a link to the incident", async () => {
    const r = await receiver();
    const { hub, alerter } = await setup(
      [
        { name: "am", url: r.url, format: "alertmanager", secret: null, source: "config" },
        { name: "hook", url: r.url, format: "generic", secret: null, source: "config" },
      ],
      { externalUrl: "https://whohas.example" },
    );
    const detail = "strictARP was turned off in ConfigMap kube-system/kube-proxy by field manager kubermatic-operator";
    const { id } = await hub.store.incidents.open(
      {
        ip: "cluster/kube-proxy",
        type: "strictarp-reverted",
        macs: [],
        detail,
        firstSeen: Date.now(),
        lastSeen: Date.now(),
        count: 1,
        samples: [],
      },
      {},
    );
    await alerter.enqueue("cluster/kube-proxy", "firing");
    await until(() => r.got.length === 2);
    const bodies = r.got.map((g) => JSON.parse(g.body) as Record<string, unknown>);
    const am = bodies.find((b) => b.version === "4") as {
      groupLabels: Record<string, string>;
      alerts: { labels: Record<string, string>; generatorURL: string }[];
    };
    expect(am.groupLabels).toEqual({ configmap: "kube-system/kube-proxy" });
    expect(am.alerts[0]?.labels).toMatchObject({ alertname: "WhohasStrictarpReverted", type: "strictarp-reverted" });
    expect(am.alerts[0]?.generatorURL).toBe(`https://whohas.example/incidents/${id}`);
    const generic = bodies.find((b) => b.type === "whohas.incident");
    expect(generic).toMatchObject({
      ip: null,
      vlan: null,
      family: null,
      node: null,
      status: "firing",
      alerts: [{ type: "strictarp-reverted", detail, captureUrl: null }],
    });
    expect(generic?.summary).toBe(`FIRING: ConfigMap kube-system/kube-proxy: ${detail}`);
  });
});

describe("delivery", () => {
  it("retries a receiver that fails twice, with the same id and body: one logical notification", async () => {
    const r = await receiver((n, res) => res.writeHead(n <= 2 ? 503 : 200).end(n <= 2 ? "busy" : "ok"));
    const clock = manualClock();
    const { hub, alerter, open, outcomes } = await setup(
      [{ name: "ops", url: r.url, format: "generic", secret: SECRET, source: "config" }],
      {},
      clock.now,
    );
    const attempts = async () => (await hub.store.outbox.recent(1))[0]?.attempts ?? 0;
    await open();
    await alerter.enqueue(IP, "firing");
    await untilStored(async () => (await attempts()) === 1);
    // Backoff with jitter: 0.5 s, then 1 s (random() = 0 takes the low end); not a millisecond sooner.
    for (const [k, wait] of [500, 1000].entries()) {
      clock.advance(wait - 1);
      await alerter.deliverDue();
      expect(r.got).toHaveLength(k + 1);
      clock.advance(1);
      await alerter.deliverDue();
      expect(r.got).toHaveLength(k + 2);
    }
    await until(() => outcomes.some(([, o]) => o === "delivered"));
    expect(new Set(r.got.map((g) => g.headers["webhook-id"])).size).toBe(1);
    expect(new Set(r.got.map((g) => g.body)).size).toBe(1);
    expect(await hub.store.outbox.recent(10)).toEqual([expect.objectContaining({ status: "delivered", attempts: 3, lastStatus: 200 })]);
    expect(outcomes).toEqual([
      ["ops", "retry"],
      ["ops", "retry"],
      ["ops", "delivered"],
    ]);
  });

  it("stops at 410 Gone: the receiver is marked and gets nothing more", async () => {
    const r = await receiver((_n, res) => res.writeHead(410).end("gone"));
    const { hub, alerter, open, outcomes } = await setup([{ name: "old", url: r.url, format: "generic", secret: null, source: "config" }]);
    await open();
    await alerter.enqueue(IP, "firing");
    await until(() => outcomes.length === 1);
    expect(outcomes).toEqual([["old", "gone"]]);
    expect((await alerter.goneReceivers()).has("old")).toBe(true);
    await alerter.enqueue("192.0.2.99", "firing");
    await alerter.deliverDue();
    expect(r.got).toHaveLength(1);
    expect((await hub.store.outbox.recent(10))[0]).toMatchObject({ status: "failed", lastStatus: 410 });
  });

  it("honours Slack's 429 Retry-After: no retry a millisecond before the two seconds it asked for, one at two", async () => {
    const r = await receiver((n, res) =>
      n === 1 ? res.writeHead(429, { "retry-after": "2" }).end("rate_limited") : res.writeHead(200).end("ok"),
    );
    const clock = manualClock();
    const { hub, alerter, open } = await setup(
      [{ name: "chat", url: r.url, format: "slack", secret: null, source: "config" }],
      {},
      clock.now,
    );
    await open();
    await alerter.enqueue(IP, "firing");
    await untilStored(async () => (await hub.store.outbox.recent(1))[0]?.lastStatus === 429);
    clock.advance(1999);
    await alerter.deliverDue();
    expect(r.got).toHaveLength(1);
    clock.advance(1);
    await alerter.deliverDue();
    expect(r.got).toHaveLength(2);
    await untilStored(async () => (await hub.store.outbox.recent(1))[0]?.status === "delivered");
  });

  it("groups findings of one IP that come within group_wait, and caps a flapping IP", async () => {
    const r = await receiver();
    const clock = manualClock();
    const { alerter, open, outcomes } = await setup(
      [{ name: "ops", url: r.url, format: "generic", secret: null, source: "config" }],
      { groupWaitMs: 300, maxPerIpPerHour: 2 },
      clock.now,
    );
    await open("multi-responder");
    await alerter.enqueue(IP, "firing");
    await open("wrong-owner");
    await alerter.enqueue(IP, "firing"); // joins the one waiting
    clock.advance(299);
    await alerter.deliverDue();
    expect(r.got).toHaveLength(0); // still within group_wait
    clock.advance(1);
    await alerter.deliverDue();
    expect(r.got).toHaveLength(1);
    expect((JSON.parse(r.got[0]?.body ?? "{}") as { alerts: { type: string }[] }).alerts.map((a) => a.type).sort()).toEqual([
      "multi-responder",
      "wrong-owner",
    ]);
    await alerter.enqueue(IP, "resolved");
    await alerter.enqueue(IP, "firing"); // joins
    clock.advance(300);
    await alerter.deliverDue();
    expect(r.got).toHaveLength(2);
    await alerter.enqueue(IP, "firing"); // the third in an hour: over the cap of 2
    expect(outcomes.filter(([, o]) => o === "suppressed")).toHaveLength(1);
  });

  it("sends a receiver at most maxPerMinute notifications however many IPs break at once, and says so once", async () => {
    const r = await receiver();
    const lines: string[] = [];
    const hub = await Hub.open();
    const alerter = new Alerter({
      hub,
      outbox: hub.store.outbox,
      settings: hub.store.settings,
      receivers: () => Promise.resolve([{ name: "ops", url: r.url, format: "generic", secret: null, source: "config" }]),
      policy: { ...DEFAULT_POLICY, groupWaitMs: 60_000, maxPerMinute: 3, allowHosts: ["127.0.0.1"] },
      logger: jsonLogger("hub", (l) => lines.push(l)),
    });
    for (let i = 1; i <= 50; i++) await alerter.enqueue(`198.51.100.${i}`, "firing");
    expect(await hub.store.outbox.recent(100)).toHaveLength(3);
    expect(lines.filter((l) => l.includes('"alert.storm"'))).toHaveLength(1);
  });
});

describe("one notification stream per incident", () => {
  const NODES = ["02:00:00:00:00:0a", "02:00:00:00:00:0b"];
  /** finding is what the judge hands on for `type` of the IP; its times are the test clock's. */
  const finding = (type: "multi-responder" | "wrong-owner" | "silent-drop", t: number) => ({
    ip: IP,
    type,
    macs: NODES,
    detail: `${type} on ${IP}`,
    firstSeen: t,
    lastSeen: t,
    count: 1,
    samples: [t],
  });
  type Type = Parameters<typeof finding>[0];
  interface Body {
    status: string;
    alerts: { type: string; status: string }[];
  }
  const bodies = (r: { got: Received[] }) => r.got.map((g) => JSON.parse(g.body) as Body);
  const alerts = (b: Body | undefined) => (b?.alerts ?? []).map((a) => `${a.type}:${a.status}`).sort();

  /** stream sets up a receiver and the hub's clock, and opens and clears findings as the judge does (store, then transition). */
  async function stream(policy: Partial<AlertPolicy> = {}) {
    const r = await receiver();
    const clock = manualClock();
    const s = await setup(
      [{ name: "ops", url: r.url, format: "generic", secret: null, source: "config" }],
      { groupWaitMs: 1000, ...policy },
      clock.now,
    );
    const ids = new Map<string, number>();
    const open = async (type: Type, ip = IP) => {
      const f = { ...finding(type, clock.now()), ip };
      ids.set(`${ip} ${type}`, (await s.hub.store.incidents.open(f, {})).id);
      await s.alerter.onTransition({ kind: "opened", finding: f });
    };
    const clear = async (type: Type, ip = IP) => {
      const f = { ...finding(type, clock.now()), ip };
      await s.hub.store.incidents.resolve(ids.get(`${ip} ${type}`) ?? 0, f, clock.now());
      await s.alerter.onTransition({ kind: "cleared", finding: f, at: clock.now() });
    };
    /** after moves the clock on and delivers whatever is due then. */
    const after = async (ms: number) => {
      clock.advance(ms);
      await s.alerter.deliverDue();
    };
    return { ...s, r, clock, open, clear, after };
  }

  it("sends nothing when one finding clears while another still pages, and resolved when the last one clears", async () => {
    const { r, open, clear, after, hub } = await stream();
    await open("multi-responder");
    await open("wrong-owner");
    await after(1000);
    expect(alerts(bodies(r)[0])).toEqual(["multi-responder:firing", "wrong-owner:firing"]);
    await clear("wrong-owner");
    await after(60 * 60_000);
    // Not a word: the incident still pages (multi-responder holds); no "resolved" that an SRE would read as all clear.
    expect(r.got).toHaveLength(1);
    expect(await hub.store.outbox.recent(10)).toHaveLength(1);
    await clear("multi-responder");
    await after(1000);
    expect(r.got).toHaveLength(2);
    const resolved = bodies(r)[1];
    expect(resolved?.status).toBe("resolved");
    // Both findings, each resolved: the one that cleared earlier is told too, in the next notification.
    expect(alerts(resolved)).toEqual(["multi-responder:resolved", "wrong-owner:resolved"]);
    expect((await hub.store.outbox.recent(10)).map((o) => o.kind)).toEqual(["resolved", "firing"]);
  });

  it("repeats an incident that still pages once repeat_interval has passed since its last notification, each on its own time", async () => {
    const HOUR = 3_600_000;
    const OTHER = "192.0.2.20";
    const { r, open, clear, after, alerter, hub } = await stream({ repeatIntervalMs: 4 * HOUR, maxPerIpPerHour: 100 });
    await open("multi-responder");
    await after(1000);
    await after(HOUR);
    await open("multi-responder", OTHER);
    await after(1000);
    expect(r.got).toHaveLength(2);
    // One millisecond short of four hours after the first: nothing yet.
    await after(3 * HOUR - 2001);
    await alerter.sweep();
    await after(0);
    expect(r.got).toHaveLength(2);
    await after(1);
    await alerter.sweep();
    await after(1000);
    expect(r.got).toHaveLength(3);
    expect(JSON.parse(r.got[2]?.body ?? "{}")).toMatchObject({ ip: IP, status: "firing" });
    // The other IP's incident repeats on its own time, an hour later; the first does not repeat again meanwhile.
    await after(HOUR);
    await alerter.sweep();
    await after(1000);
    expect(r.got.slice(3).map((g) => (JSON.parse(g.body) as { ip: string }).ip)).toEqual([OTHER]);
    // An incident that resolved is not repeated.
    await clear("multi-responder");
    await after(1000);
    await after(5 * HOUR);
    const before = r.got.length;
    await alerter.sweep();
    await after(1000);
    expect(r.got.slice(before).map((g) => (JSON.parse(g.body) as { ip: string }).ip)).toEqual([OTHER]);
    expect((await hub.store.outbox.recent(100)).filter((o) => o.kind === "repeat")).toHaveLength(3);
  });

  it("repeats to the receiver whose repeat is due, not to one added since that never heard of the incident", async () => {
    const { r, open, after, alerter, hub } = await stream({ repeatIntervalMs: 60 * 60_000 });
    await open("multi-responder");
    await after(1000);
    const late = await receiver();
    const receivers = (await alerter.o.receivers()) as Receiver[];
    receivers.push({ name: "late", url: late.url, format: "generic", secret: null, source: "settings" });
    await after(60 * 60_000);
    await alerter.sweep();
    await after(1000);
    expect(r.got).toHaveLength(2);
    expect(late.got).toHaveLength(0);
    expect((await hub.store.outbox.recent(10)).map((o) => [o.receiver, o.kind])).toEqual([
      ["ops", "repeat"],
      ["ops", "firing"],
    ]);
  });

  it("sends a finding that joins an incident already notified as one grouped update, groupInterval after the last", async () => {
    const MIN = 60_000;
    const { r, open, after, hub } = await stream({ groupIntervalMs: 5 * MIN });
    await open("multi-responder");
    await after(1000);
    expect(r.got).toHaveLength(1);
    // A minute later ETP Local's silent drop joins the incident: not paged at once, nor after groupWait, as a new one.
    await after(MIN);
    await open("silent-drop");
    await after(1000);
    await after(4 * MIN - 2001);
    expect(r.got).toHaveLength(1);
    // Another finding joins meanwhile: it goes out with the same update.
    await open("wrong-owner");
    await after(1);
    expect(r.got).toHaveLength(2);
    const update = bodies(r)[1];
    expect(update?.status).toBe("firing");
    expect(alerts(update)).toEqual(["multi-responder:firing", "silent-drop:firing", "wrong-owner:firing"]);
    expect((await hub.store.outbox.recent(10)).map((o) => o.kind)).toEqual(["update", "firing"]);
    // One incident throughout: every alert carries its id.
    const ids = (JSON.parse(r.got[1]?.body ?? "{}") as { alerts: { incidentId: number }[] }).alerts.map((a) => a.incidentId);
    expect(new Set(ids).size).toBe(1);
  });
});

describe("receiver URLs", () => {
  it("takes http and https only, without credentials, and only allowed hosts when a list is set", () => {
    const open = { allowHosts: [], allowPrivate: false };
    expect(checkUrl("https://hooks.example/x", open)).toBeNull();
    expect(checkUrl("file:///etc/passwd", open)).toMatch(/only http and https/);
    expect(checkUrl("https://u:p@hooks.example/", open)).toMatch(/user or password/);
    expect(checkUrl("https://evil.example/", { ...open, allowHosts: ["hooks.example"] })).toMatch(/not in alerting.allowHosts/);
    expect(checkUrl("nope", open)).toMatch(/not a URL/);
  });
});

describe("delivery limits", () => {
  it("keeps at most two first attempts in flight to one receiver, however many are due at once", async () => {
    let inFlight = 0;
    let most = 0;
    const r = await receiver((_n, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        res.writeHead(204).end();
      }, 50);
    });
    const hub = await Hub.open();
    const alerter = new Alerter({
      hub,
      outbox: hub.store.outbox,
      settings: hub.store.settings,
      receivers: () => Promise.resolve([{ name: "ops", url: r.url, format: "generic", secret: null, source: "config" }]),
      policy: { ...DEFAULT_POLICY, groupWaitMs: 0, maxPerMinute: 1000, allowHosts: ["127.0.0.1"] },
      logger: silentLogger,
    });
    alerters.push(alerter);
    const now = Date.now();
    for (let i = 1; i <= 10; i++) {
      const ip = `192.0.2.${i}`;
      const f = {
        ip,
        type: "multi-responder" as const,
        macs: ["02:00:5e:00:00:0a", "02:00:5e:00:00:0b"],
        detail: "d",
        firstSeen: now,
        lastSeen: now,
        count: 1,
        samples: [now],
      };
      await hub.store.incidents.open(f, {});
      await hub.store.outbox.add({ id: `msg_${i}`, receiver: "ops", groupKey: ip, kind: "firing", createdAt: now, notBefore: now });
    }
    await alerter.deliverDue();
    expect(r.got).toHaveLength(2);
    expect(most).toBe(2);
  });
});
