import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:http";
import WebSocket from "ws";
import { Hub } from "../hub/hub.js";
import { createHubServer } from "../http.js";
import { testAuth } from "./helpers.js";
import { CLOSE_WRONG_CLUSTER, silentLogger } from "@whohas/core";
import type { AgentGateway } from "../gateway/agent-gateway.js";
import { tokenMatches } from "../gateway/credentials.js";
import { TokenBucket } from "../limits.js";
import type { AgentLimits } from "../gateway/pacing.js";

const gatewayOf = (r: Running | undefined): AgentGateway => {
  if (r === undefined) throw new Error("no server");
  return r.gateway;
};

const TOKEN = "test-token-0123456789";
const VIEWER = "viewer-token-0123456789";
const asViewer = { headers: { authorization: `Bearer ${VIEWER}` } };
const hello = {
  v: 2,
  type: "hello",
  node: "node-a",
  agentVersion: "t",
  interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }],
};
const reply = {
  ip: "192.0.2.200",
  mac: "02:00:5e:00:00:0a",
  kind: "reply",
  iface: "eth0",
  count: 4,
  firstSeen: 1,
  lastSeen: 2,
  targetMac: "02:00:5e:00:00:01",
  ethernetMismatch: 0,
  ethSrc: null,
};

interface Running {
  server: Server;
  side: Server;
  hub: Hub;
  base: string;
  metrics: string;
  ws: string;
  gateway: AgentGateway;
}
const open: Running[] = [];

async function start(clock: () => number = Date.now, agentPingMs?: number, agentLimits?: Partial<AgentLimits>): Promise<Running> {
  const hub = await Hub.open({ clock });
  const hs = createHubServer({
    hub,
    agentPingMs,
    agentLimits,
    agentPaceHoldMs: 0,
    agentToken: TOKEN,
    auth: await testAuth(hub, { viewerToken: VIEWER }),
    logger: silentLogger,
    pages: (_req, res) => res.writeHead(404).end(),
  });
  const server = hs.createServer();
  const side = createServer(hs.metricsListener);
  for (const s of [server, side]) {
    s.listen(0, "127.0.0.1");
    await once(s, "listening");
  }
  const port = (server.address() as AddressInfo).port;
  const r = {
    server,
    side,
    hub,
    base: `http://127.0.0.1:${port}`,
    metrics: `http://127.0.0.1:${(side.address() as AddressInfo).port}/metrics`,
    ws: `ws://127.0.0.1:${port}/agent`,
    gateway: hs.gateway,
  };
  open.push(r);
  return r;
}

afterEach(async () => {
  for (const r of open.splice(0)) {
    r.gateway.terminate();
    for (const s of [r.server, r.side]) {
      s.closeAllConnections();
      await new Promise((res) => s.close(res));
    }
  }
});

function connect(url: string, token = TOKEN): WebSocket {
  return new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
}

describe("agent gateway", () => {
  it("refuses a wrong token before the upgrade with 401", async () => {
    const { ws } = await start();
    const c = connect(ws, "wrong-token-0123456789");
    const [, res] = (await once(c, "unexpected-response")) as [unknown, { statusCode: number }];
    expect(res.statusCode).toBe(401);
  });

  it("takes hello and observations, and the API shows them", async () => {
    const { ws, base, hub } = await start(() => 1000);
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    const [welcome] = (await once(c, "message")) as [Buffer];
    expect(JSON.parse(welcome.toString())).toMatchObject({ type: "welcome" });
    c.send(JSON.stringify({ v: 2, type: "observations", entries: [reply], requests: [], dropped: 0 }));
    await expect.poll(() => hub.ips().length).toBe(1);
    const body = (await (await fetch(`${base}/api/trpc/ips.list`, asViewer)).json()) as {
      result: { data: { ip: string; responders: { node: string }[] }[] };
    };
    expect(body.result.data[0]).toMatchObject({ ip: "192.0.2.200", state: "single", responders: [{ node: "node-a" }] });
    const one = (await (
      await fetch(`${base}/api/trpc/ips.byIp?input=${encodeURIComponent(JSON.stringify({ ip: "192.0.2.200" }))}`, asViewer)
    ).json()) as { result: { data: { responders: { replies: number }[] } } };
    expect(one.result.data.responders[0]?.replies).toBe(4);
    const agents = (await (await fetch(`${base}/api/trpc/agents.list`, asViewer)).json()) as {
      result: { data: { node: string; up: boolean }[] };
    };
    expect(agents.result.data).toEqual([expect.objectContaining({ node: "node-a", up: true })]);
    c.close();
  });

  it("keeps an agent whose pongs do not come while its messages do, and drops it once both stop", async () => {
    const { ws } = await start(Date.now, 100);
    // No pongs, as from a hub that reads them late behind a backlog of the agent's messages.
    const c = new WebSocket(ws, { headers: { authorization: `Bearer ${TOKEN}` }, autoPong: false });
    const closed = once(c, "close");
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    const talking = setInterval(
      () => c.send(JSON.stringify({ v: 2, type: "observations", entries: [reply], requests: [], dropped: 0 })),
      20,
    );
    try {
      // Ten pings' worth of silence on the pong side: each would have dropped it.
      await new Promise((r) => setTimeout(r, 1000));
      expect(c.readyState).toBe(WebSocket.OPEN);
    } finally {
      clearInterval(talking);
    }
    // Silent on both sides: gone within two pings.
    const started = Date.now();
    await closed;
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it.each([
    { case: "not JSON before hello", msg: "{", reason: /not JSON/ },
    {
      case: "observations before hello",
      msg: JSON.stringify({ v: 2, type: "observations", entries: [], requests: [], dropped: 0 }),
      reason: /first message must be hello/,
    },
    {
      case: "a bad MAC",
      msg: JSON.stringify({ ...hello, interfaces: [{ name: "eth0", mac: "zz", up: true }] }),
      reason: /interfaces\.0\.mac/,
    },
  ])("closes a socket that sends $case with 1008 and keeps serving others", async ({ msg, reason }) => {
    const { ws, base } = await start();
    const good = connect(ws);
    await once(good, "open");
    good.send(JSON.stringify(hello));
    await once(good, "message");
    const bad = connect(ws);
    await once(bad, "open");
    bad.send(msg);
    const [code, why] = (await once(bad, "close")) as [number, Buffer];
    expect(code).toBe(1008);
    expect(why.toString()).toMatch(reason);
    expect(good.readyState).toBe(WebSocket.OPEN);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    good.close();
  });

  it("refuses an agent of another cluster with 4412, naming both, and takes one of its own cluster or naming none", async () => {
    const { ws } = await start();
    const other = connect(ws);
    await once(other, "open");
    other.send(JSON.stringify({ ...hello, cluster: "west" }));
    const [code, why] = (await once(other, "close")) as [number, Buffer];
    expect(code).toBe(CLOSE_WRONG_CLUSTER);
    expect(why.toString()).toBe("this hub watches cluster default, the agent west");
    for (const [node, cluster] of [
      ["node-a", { cluster: "default" }],
      ["node-b", {}],
    ] as const) {
      const c = connect(ws);
      await once(c, "open");
      c.send(JSON.stringify({ ...hello, node, ...cluster }));
      const [msg] = (await once(c, "message")) as [Buffer];
      expect(JSON.parse(msg.toString())).toMatchObject({ type: "welcome" });
      c.close();
    }
  });

  it("asks the other nodes that captured an IP to send what they hold when one node's report brings news of it", async () => {
    const { ws, metrics } = await start();
    const MACS: Record<string, string> = { "node-a": "02:00:5e:00:00:0a", "node-b": "02:00:5e:00:00:0b", "node-c": "02:00:5e:00:00:0c" };
    const agents = new Map<string, { c: WebSocket; got: string[] }>();
    for (const [node, flush] of [
      ["node-a", true],
      ["node-b", true],
      ["node-c", false],
    ] as const) {
      const c = connect(ws);
      const got: string[] = [];
      c.on("message", (d: Buffer) => got.push((JSON.parse(d.toString()) as { type: string }).type));
      await once(c, "open");
      c.send(JSON.stringify({ ...hello, node, interfaces: [{ name: "eth0", mac: MACS[node], up: true }], ...(flush ? { flush } : {}) }));
      await expect.poll(() => got.includes("welcome")).toBe(true);
      agents.set(node, { c, got });
    }
    const ip = "192.0.2.200";
    /** observed: what `node`'s agent sends of a client's request for `of` at `t`, answered by `answers` (its own MAC, or nobody). */
    const observed = (node: string, t: number, answers: boolean, of = ip) =>
      JSON.stringify({
        v: 2,
        type: "observations",
        entries: [
          { ...reply, ip: of, mac: "02:00:5e:00:00:01", kind: "request", count: 1, firstSeen: t, lastSeen: t, targetMac: null },
          ...(answers ? [{ ...reply, ip: of, mac: MACS[node], count: 1, firstSeen: t, lastSeen: t }] : []),
        ],
        requests: [{ ip: of, asker: "192.0.2.1", iface: "eth0", times: [t], replies: answers ? [[0, MACS[node], 0.3]] : [] }],
        dropped: 0,
      });
    const report = (node: string, t: number, answers: boolean) => agents.get(node)?.c.send(observed(node, t, answers));
    const flushes = (node: string) => agents.get(node)?.got.filter((t) => t === "flush").length ?? 0;
    const sent = async () => Number(/^whohas_hub_agent_flushes_asked_total (\d+)$/m.exec(await (await fetch(metrics)).text())?.[1]);

    // Every node sees the client's requests; node-a answers them. Its first answer is news, but nobody else has
    // captured the IP yet: nobody is asked.
    const t0 = Date.now() - 10_000;
    report("node-a", t0, true);
    await expect.poll(sent).toBe(0);
    report("node-b", t0, false);
    report("node-c", t0, false);
    report("node-a", t0 + 1000, true);
    report("node-b", t0 + 1000, false);
    await new Promise((r) => setTimeout(r, 100));
    expect([flushes("node-a"), flushes("node-b"), flushes("node-c")]).toEqual([0, 0, 0]);

    // node-b starts answering too: news. node-a captured the IP and takes flush: asked. node-c captured it but its
    // agent did not say it takes flush: not asked (an older agent would log it as a bad message). node-b sent it.
    report("node-b", t0 + 2000, true);
    await expect.poll(() => flushes("node-a")).toBe(1);
    expect([flushes("node-b"), flushes("node-c")]).toEqual([0, 0]);
    expect(await sent()).toBe(1);

    // node-b answering again is no news: nobody is asked again.
    report("node-b", t0 + 3000, true);
    report("node-a", t0 + 3000, true);
    await new Promise((r) => setTimeout(r, 100));
    expect([flushes("node-a"), flushes("node-b"), flushes("node-c")]).toEqual([1, 0, 0]);

    // node-c's agent reconnects with a hello that takes flush: now it is asked too. Two reports with news at once (two
    // IPs node-b starts answering) ask each node once: at most one ask a node per 20 ms.
    agents.get("node-c")?.c.close();
    const c = connect(ws);
    const gotC: string[] = [];
    c.on("message", (d: Buffer) => gotC.push((JSON.parse(d.toString()) as { type: string }).type));
    await once(c, "open");
    c.send(JSON.stringify({ ...hello, node: "node-c", interfaces: [{ name: "eth0", mac: MACS["node-c"], up: true }], flush: true }));
    await expect.poll(() => gotC.includes("welcome")).toBe(true);
    agents.set("node-c", { c, got: gotC });
    for (const other of ["192.0.2.201", "192.0.2.202"])
      for (const node of ["node-a", "node-c"]) agents.get(node)?.c.send(observed(node, t0 + 4000, false, other));
    await new Promise((r) => setTimeout(r, 100));
    const b = agents.get("node-b")?.c;
    b?.send(observed("node-b", t0 + 4000, true, "192.0.2.201"));
    b?.send(observed("node-b", t0 + 4000, true, "192.0.2.202"));
    await expect.poll(() => [flushes("node-a"), flushes("node-c")]).toEqual([2, 1]);
    await new Promise((r) => setTimeout(r, 100));
    expect([flushes("node-a"), flushes("node-b"), flushes("node-c")]).toEqual([2, 0, 1]);
    expect(await sent()).toBe(3);
    for (const a of agents.values()) a.c.close();
  });

  it("sets the agents' pace by how many are connected, and tells those that take one", async () => {
    // Aiming at 10 messages a second: 1 agent every 100 ms, 2 every 200, 3 every 300.
    const { ws, metrics } = await start(Date.now, undefined, { agentMessagesPerSecond: 10 });
    const paces = new Map<string, number[]>();
    const join = async (node: string, takesPace: boolean) => {
      const c = connect(ws);
      const got: number[] = [];
      let welcomed = false;
      c.on("message", (d: Buffer) => {
        const m = JSON.parse(d.toString()) as { type: string; flushMs?: number };
        if (m.type === "welcome") welcomed = true;
        // The pace comes after the welcome (on which an agent goes back to FLUSH_MS).
        if (m.type === "pace") got.push(welcomed ? (m.flushMs ?? 0) : -1);
      });
      await once(c, "open");
      c.send(JSON.stringify({ ...hello, node, ...(takesPace ? { pace: true } : {}) }));
      await expect.poll(() => welcomed).toBe(true);
      paces.set(node, got);
      return c;
    };
    const seconds = async () => Number(/^whohas_hub_agent_flush_interval_seconds (\S+)$/m.exec(await (await fetch(metrics)).text())?.[1]);
    await join("node-a", true);
    await expect.poll(() => paces.get("node-a")).toEqual([100]);
    await join("node-b", true);
    await expect.poll(() => [paces.get("node-a"), paces.get("node-b")]).toEqual([[100, 200], [200]]);
    // An agent whose hello does not take a pace (an older one) counts, and is told nothing it would not understand.
    const c = await join("node-c", false);
    await expect
      .poll(() => [paces.get("node-a"), paces.get("node-b")])
      .toEqual([
        [100, 200, 300],
        [200, 300],
      ]);
    expect(await seconds()).toBe(0.3);
    // One leaves: faster again, though not at once to what two agents need (the slack keeps the pace from flapping).
    c.close();
    await expect.poll(() => paces.get("node-a")).toEqual([100, 200, 300, 250]);
    expect(paces.get("node-b")).toEqual([200, 300, 250]);
    expect(paces.get("node-c")).toEqual([]);
    expect(await seconds()).toBe(0.25);
  });

  it("drops and counts malformed messages after hello, keeping the connection and the good messages around them", async () => {
    const { ws, metrics: metricsUrl, hub } = await start(() => 1000);
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    const junk = [
      "{",
      "null",
      JSON.stringify({ v: 2, type: "observations", entries: [{ ...reply, mac: "zz" }], requests: [], dropped: 0 }),
      JSON.stringify({ v: 9, type: "telemetry" }),
    ];
    for (const j of junk) c.send(j);
    c.send(Buffer.from([1, 2, 3]), { binary: true });
    c.send(JSON.stringify({ v: 2, type: "observations", entries: [reply], requests: [], dropped: 0 }));
    await expect.poll(() => hub.ips().length).toBe(1);
    expect(c.readyState).toBe(WebSocket.OPEN);
    const metrics = await (await fetch(metricsUrl)).text();
    const count = (reason: string) =>
      Number(new RegExp(`whohas_hub_agent_bad_messages_total\\{reason="${reason}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
    expect([count("not-json"), count("invalid"), count("version"), count("binary")]).toEqual([1, 2, 1, 1]);
    c.close();
  });

  it("closes with 1009 when a message exceeds the payload limit", async () => {
    const { ws } = await start();
    const c = connect(ws);
    await once(c, "open");
    c.send("x".repeat(2 * 1024 * 1024));
    const [code] = (await once(c, "close")) as [number];
    expect(code).toBe(1009);
  });

  it("stores an agent's facts and routes a command to it and its results back", async () => {
    const { ws, hub } = await start(() => 1000);
    const hs = open[open.length - 1];
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    const facts = {
      node: "node-a",
      agentVersion: "t",
      interfaces: [
        {
          name: "eth0",
          mac: "02:00:5e:00:00:0a",
          up: true,
          master: null,
          addresses: ["192.0.2.10"],
          own: { arpIgnore: 0, arpAnnounce: 0 },
          effective: { arpIgnore: 1, arpAnnounce: 2 },
          captured: true,
        },
      ],
      sysctl: { all: { arpIgnore: 1, arpAnnounce: 2 }, default: { arpIgnore: 0, arpAnnounce: 0 } },
      kubeIpvs0: { present: true, addresses: 306 },
      kubeProxyMode: "ipvs",
      capture: { frames: 10, dropped: {}, kernelReceived: 10, kernelDropped: 0 },
    };
    c.send(JSON.stringify({ v: 2, type: "facts", facts }));
    await expect.poll(() => hub.agents.list()[0]?.facts?.kubeIpvs0.addresses).toBe(306);
    const results: string[] = [];
    const commandArrives = once(c, "message");
    expect(
      gatewayOf(hs).command("node-a", { v: 2, type: "probe", id: "p1", ip: "192.0.2.200", durationMs: 1000, intervalMs: 500 }, (m) =>
        results.push(m.type),
      ),
    ).toBe(true);
    const [cmd] = (await commandArrives) as [Buffer];
    expect(JSON.parse(cmd.toString())).toMatchObject({ type: "probe", id: "p1" });
    c.send(
      JSON.stringify({ v: 2, type: "probe-result", id: "p1", seq: 1, sentAt: 5, replies: [{ mac: "02:00:5e:00:00:0b", latencyMs: 0.2 }] }),
    );
    c.send(JSON.stringify({ v: 2, type: "command-done", id: "p1", ok: true, message: "done" }));
    await expect.poll(() => results).toEqual(["probe-result", "command-done"]);
    expect(
      gatewayOf(hs).command(
        "node-zz",
        { v: 2, type: "probe", id: "p2", ip: "192.0.2.200", durationMs: 1000, intervalMs: 500 },
        () => undefined,
      ),
    ).toBe(false);
    c.close();
  });

  it("refuses facts about another node on an agent's connection", async () => {
    const { ws } = await start();
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    c.send(
      JSON.stringify({
        v: 2,
        type: "facts",
        facts: {
          node: "node-b",
          agentVersion: "t",
          interfaces: [],
          sysctl: { all: { arpIgnore: 0, arpAnnounce: 0 }, default: { arpIgnore: 0, arpAnnounce: 0 } },
          kubeIpvs0: { present: false, addresses: 0 },
          kubeProxyMode: "not-ipvs",
          capture: { frames: 0, dropped: {}, kernelReceived: 0, kernelDropped: 0 },
        },
      }),
    );
    const [code, why] = (await once(c, "close")) as [number, Buffer];
    expect([code, why.toString()]).toEqual([1008, "facts for node-b on node-a's connection"]);
  });

  it("closes an agent that floods the hub with 1008 and counts it in /metrics", async () => {
    const { ws, metrics: metricsUrl } = await start();
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    for (let i = 0; i < 1000; i++) c.send(JSON.stringify({ v: 2, type: "heartbeat", t: i }));
    const [code, why] = (await once(c, "close")) as [number, Buffer];
    expect([code, why.toString()]).toEqual([1008, "rate limit: more than 200 messages/s"]);
    const metrics = await (await fetch(metricsUrl)).text();
    expect(metrics).toMatch(/whohas_hub_agent_rejected_total\{reason="rate-limit"\} 1/);
    expect(metrics).toMatch(/whohas_hub_agent_messages_total\{type="heartbeat"\} \d+/);
  });

  it("serves Prometheus metrics of agents and IPs", async () => {
    const { ws, base, metrics } = await start(() => 1000);
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    c.send(JSON.stringify({ v: 2, type: "observations", entries: [reply], requests: [], dropped: 0 }));
    await expect.poll(async () => (await fetch(metrics)).text()).toMatch(/whohas_hub_ips\{state="single"\} 1/);
    const m = await (await fetch(metrics)).text();
    expect(m).toMatch(/whohas_hub_agents\{state="up"\} 1/);
    expect(m).toMatch(/whohas_ip_responders\{ip="192.0.2.200",vlan="",namespace="",service=""\} 1/);
    expect(m).toMatch(/whohas_agents_connected 1/);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    c.close();
  });

  it("counts in /metrics the reports of a request that came too late to judge it in order", async () => {
    const { ws, metrics } = await start();
    const c = connect(ws);
    await once(c, "open");
    c.send(JSON.stringify(hello));
    await once(c, "message");
    const late = async () => Number(/^whohas_hub_late_request_reports_total (\d+)$/m.exec(await (await fetch(metrics)).text())?.[1]);
    const report = (ageMs: number) =>
      JSON.stringify({
        v: 2,
        type: "observations",
        entries: [],
        requests: [{ ip: "192.0.2.200", asker: "192.0.2.1", iface: "eth0", times: [Date.now() - ageMs], replies: [] }],
        dropped: 0,
      });
    c.send(report(100));
    await expect.poll(async () => (await fetch(metrics)).text()).toMatch(/whohas_hub_ips\{state="/);
    expect(await late()).toBe(0);
    c.send(report(3000));
    await expect.poll(late).toBe(1);
    c.close();
  });

  it("serves /metrics only on a port of its own, with its token when metrics.tokenFile is set", async () => {
    const hub = await Hub.open();
    const hs = createHubServer({
      hub,
      metricsToken: "metrics-token-0123456789",
      agentToken: TOKEN,
      auth: await testAuth(hub, { viewerToken: VIEWER }),
      logger: silentLogger,
      pages: (_req, res) => res.writeHead(404).end(),
    });
    const main = hs.createServer();
    const side = createServer(hs.metricsListener);
    for (const s of [main, side]) {
      s.listen(0, "127.0.0.1");
      await once(s, "listening");
    }
    const url = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    try {
      const onMain = await fetch(`${url(main)}/metrics`, asViewer);
      expect([onMain.status, await onMain.text()]).toEqual([
        404,
        "metrics are served on metrics.listen (port 9473 unless set), not on the dashboard's port\n",
      ]);
      expect((await fetch(`${url(side)}/metrics`)).status).toBe(401);
      expect((await fetch(`${url(side)}/metrics`, { headers: { authorization: "Bearer metrics-token-012345678X" } })).status).toBe(401);
      expect(await (await fetch(`${url(side)}/metrics`, { headers: { authorization: "Bearer metrics-token-0123456789" } })).text()).toMatch(
        /whohas_agents_connected 0/,
      );
      expect((await fetch(`${url(side)}/readyz`)).status).toBe(200);
      expect((await fetch(`${url(side)}/api/v1/ips`)).status).toBe(404);
    } finally {
      for (const s of [main, side]) {
        s.closeAllConnections();
        s.close();
      }
    }
  });

  it("destroys upgrades on paths that are not ours", async () => {
    const { base } = await start();
    const c = new WebSocket(base.replace("http", "ws") + "/elsewhere");
    const [err] = (await once(c, "error")) as [Error];
    expect(err.message).toMatch(/socket hang up|ECONNRESET/);
  });
});

describe("TokenBucket", () => {
  it("allows the burst, then the rate", () => {
    const b = new TokenBucket(10, 3, 0);
    expect([b.take(0), b.take(0), b.take(0), b.take(0)]).toEqual([true, true, true, false]);
    expect(b.take(100)).toBe(true); // 0.1 s at 10/s refills one
    expect(b.take(100)).toBe(false);
  });
});

describe("tokenMatches", () => {
  it.each([
    { header: `Bearer ${TOKEN}`, ok: true },
    { header: `Bearer ${TOKEN}x`, ok: false },
    { header: TOKEN, ok: false },
    { header: undefined, ok: false },
  ])("$header -> $ok", ({ header, ok }) => expect(tokenMatches(header, TOKEN)).toBe(ok));
});
