import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import { createServer } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { AddressInfo } from "node:net";
import { newArpReply, newArpRequest, parseAgentMessage, silentLogger, type AgentMessage } from "@whohas/core";
import { Agent, FLUSH_MS, SOON_GAP_MS } from "../agent.js";
import { HubLink } from "../hub-link.js";
import { FakeSource } from "./fake-source.js";

const quiet = silentLogger;

interface Hub {
  wss: WebSocketServer;
  url: string;
  messages: AgentMessage[];
  auth: (string | undefined)[];
  sockets: WebSocket[];
}

async function startHub(port = 0): Promise<Hub> {
  const wss = new WebSocketServer({ port, host: "127.0.0.1" });
  await once(wss, "listening");
  const hub: Hub = { wss, url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/agent`, messages: [], auth: [], sockets: [] };
  wss.on("connection", (ws, req) => {
    hub.auth.push(req.headers.authorization);
    hub.sockets.push(ws);
    ws.on("message", (d: Buffer) => {
      const m = parseAgentMessage(d.toString());
      if (m.ok) hub.messages.push(m.value);
    });
  });
  return hub;
}

/** closeHub drops every agent connection and stops listening (wss.close alone waits for clients to leave). */
async function closeHub(hub: Hub): Promise<void> {
  for (const c of hub.wss.clients) c.terminate();
  await new Promise<void>((r) => {
    hub.wss.close(() => r());
  });
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** CLIENT_MAC asks the agents' nodes. */
const CLIENT_MAC = "02:00:5e:00:00:01";
/** ETH0 is the interface the agents under test find on their node. */
const ETH0 = { name: "eth0", mac: "02:00:5e:00:00:0a", up: true, noarp: false, hasMaster: false, master: null };

/** newAgent makes an agent capturing `src` on eth0, with room for 100 aggregates, and stops it after the test. */
function newAgent(node: string, link: HubLink, src: FakeSource): Agent {
  const agent = new Agent({
    node,
    logger: quiet,
    link,
    scan: () => Promise.resolve([ETH0]),
    openSource: () => src,
    maxBufferBytes: 100 * 256,
  });
  cleanups.push(() => agent.stop());
  return agent;
}

/** startAgent starts one made by newAgent. */
async function startAgent(node: string, link: HubLink, src: FakeSource): Promise<Agent> {
  const agent = newAgent(node, link, src);
  await agent.start();
  return agent;
}

describe("Agent with HubLink", () => {
  it("sends its facts on welcome and runs commands, refusing beyond its limit", async () => {
    const hub = await startHub();
    cleanups.push(() => closeHub(hub));
    hub.wss.on("connection", (ws) =>
      ws.on("message", (d: Buffer) => {
        const m = parseAgentMessage(d.toString());
        if (m.ok && m.value.type === "hello") ws.send(JSON.stringify({ v: 2, type: "welcome", hubVersion: "t" }));
      }),
    );
    const src = new FakeSource("eth0");
    // What libpcap had counted by the time the agent reports.
    src.received = 7;
    src.dropped = 1;
    let release: () => void = () => undefined;
    const running: string[] = [];
    const agent: Agent = new Agent({
      node: "node-a",
      logger: quiet,
      openSource: () => src,
      maxBufferBytes: 1 << 20,
      link: new HubLink({
        url: hub.url,
        token: "t",
        logger: quiet,
        hello: () => ({ v: 2, type: "hello", node: "node-a", agentVersion: "t", interfaces: [] }),
        onMessage: (m) => agent.onHubMessage(m),
      }),
      scan: () => Promise.resolve([ETH0]),
      facts: (captured, capture) =>
        Promise.resolve({
          node: "node-a",
          agentVersion: "t",
          interfaces: [],
          sysctl: { all: { arpIgnore: 0, arpAnnounce: 0 }, default: { arpIgnore: 0, arpAnnounce: 0 } },
          kubeIpvs0: { present: captured.has("eth0"), addresses: 0 },
          kubeProxyMode: "not-ipvs",
          capture,
        }),
      command: (msg) => {
        running.push(msg.id);
        return new Promise<void>((r) => (release = r));
      },
    });
    cleanups.push(() => agent.stop());
    await agent.start();
    await until(() => hub.messages.some((m) => m.type === "facts"));
    expect(hub.messages.find((m) => m.type === "facts")).toMatchObject({
      facts: { kubeIpvs0: { present: true }, capture: { kernelReceived: 7, kernelDropped: 1 } },
    });
    const ws = [...hub.wss.clients][0];
    for (let i = 1; i <= 5; i++)
      ws?.send(JSON.stringify({ v: 2, type: "probe", id: `p${i}`, ip: "192.0.2.200", durationMs: 1000, intervalMs: 500 }));
    await until(() => hub.messages.some((m) => m.type === "command-done"));
    expect(running).toEqual(["p1", "p2", "p3", "p4"]);
    expect(hub.messages.find((m) => m.type === "command-done")).toMatchObject({
      id: "p5",
      ok: false,
      message: expect.stringMatching(/^busy: 4 commands already running/),
    });
    release();
  });

  it("says hello with its token and interfaces, then streams aggregates", async () => {
    const hub = await startHub();
    cleanups.push(() => closeHub(hub));
    const src = new FakeSource("eth0");
    const link: HubLink = new HubLink({
      url: hub.url,
      token: "s3cret",
      logger: quiet,
      hello: () => ({
        v: 2,
        type: "hello",
        node: "node-a",
        agentVersion: "t",
        interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }],
      }),
    });
    const agent = await startAgent("node-a", link, src);
    await until(() => hub.messages.length >= 1);
    expect(hub.auth[0]).toBe("Bearer s3cret");
    expect(hub.messages[0]).toMatchObject({ type: "hello", node: "node-a" });

    // Read 4 s after the kernel captured them (a stalled event loop): the capture times are what count.
    for (let i = 0; i < 50; i++) src.push(newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.200"), 5000 + i, 1000 + i);
    src.push(new Uint8Array(5), 2000);
    await until(() => hub.messages.some((m) => m.type === "observations"));
    const obs = hub.messages.filter((m) => m.type === "observations");
    expect(obs).toHaveLength(1); // 50 frames, one message
    expect(obs[0]).toMatchObject({
      entries: [{ ip: "192.0.2.200", kind: "request", count: 50, firstSeen: 1000, lastSeen: 1049 }],
      dropped: 0,
    });
    expect(agent.counts).toMatchObject({ observed: 50, truncated: 1 });
  });

  it("with several hub addresses, passes a standby's 503 and a dead one for the leader, and moves when it goes", async () => {
    // A replica on standby refuses every WebSocket with 503, as the hub's Standby does.
    const standby = createServer((_q, res) => res.writeHead(503).end());
    let refused = 0;
    standby.on("upgrade", (_req, socket: Duplex) => {
      // The agent may drop its end first: a reset here is no error of the test's.
      socket.on("error", () => undefined);
      refused++;
      socket.end("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    standby.listen(0, "127.0.0.1");
    await once(standby, "listening");
    cleanups.push(() => void standby.close());
    const standbyUrl = `ws://127.0.0.1:${(standby.address() as AddressInfo).port}/agent`;
    const first = await startHub();
    const link = new HubLink({
      url: [first.url, standbyUrl],
      token: "t",
      logger: quiet,
      hello: () => ({ v: 2, type: "hello", node: "node-a", agentVersion: "t", interfaces: [] }),
    });
    link.start();
    cleanups.push(() => link.close());
    await until(() => first.messages.length >= 1);
    // The leader goes; the other replica stands by until it takes over (here: a new leader on the first address).
    const port = Number(new URL(first.url).port);
    await closeHub(first);
    const gone = Date.now();
    await until(() => refused >= 2, 5000);
    const second = await startHub(port);
    cleanups.push(() => closeHub(second));
    await until(() => second.messages.length >= 1, 5000);
    // A round of two addresses that both failed waits longer, but not past a couple of seconds.
    expect(Date.now() - gone).toBeLessThan(5000);
    expect(second.messages[0]).toMatchObject({ type: "hello", node: "node-a" });
  });

  it("behind one Service address, comes back when a standby's Retry-After says, without growing its backoff", async () => {
    // Every try meets a standby first (as a Service may pick it); the backoff alone would wait 0.5, 1, 2, 4 s...
    const times: number[] = [];
    const standby = createServer((_q, res) => res.writeHead(503).end());
    standby.on("upgrade", (_req, socket: Duplex) => {
      socket.on("error", () => undefined);
      times.push(Date.now());
      socket.end("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    standby.listen(0, "127.0.0.1");
    await once(standby, "listening");
    cleanups.push(() => void standby.close());
    const link = new HubLink({
      url: `ws://127.0.0.1:${(standby.address() as AddressInfo).port}/agent`,
      token: "t",
      logger: quiet,
      hello: () => ({ v: 2, type: "hello", node: "node-a", agentVersion: "t", interfaces: [] }),
    });
    link.start();
    cleanups.push(() => link.close());
    await until(() => times.length >= 5, 10_000);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t));
    // 1 s jittered by half either way, each time: not 0.25, 0.5, 1, 2 s growing.
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(450);
    for (const g of gaps) expect(g).toBeLessThanOrEqual(1600);
  }, 15_000);

  it("sums libpcap's counters over its captures and keeps those of a capture it closed", async () => {
    const sources = new Map<string, FakeSource>();
    let names = ["eth0", "eth1"];
    const agent = new Agent({
      node: "node-a",
      logger: quiet,
      link: new HubLink({
        url: "ws://127.0.0.1:9/agent",
        token: "t",
        logger: quiet,
        hello: () => ({ v: 2, type: "hello", node: "node-a", agentVersion: "t", interfaces: [] }),
      }),
      scan: () => Promise.resolve(names.map((name) => ({ ...ETH0, name }))),
      openSource: (name) => {
        const src = new FakeSource(name);
        sources.set(name, src);
        return src;
      },
      maxBufferBytes: 1 << 20,
    });
    await agent.rescan();
    const frame = newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.200");
    for (let i = 0; i < 3; i++) sources.get("eth0")?.push(frame, 1000 + i);
    for (let i = 0; i < 4; i++) sources.get("eth1")?.push(frame, 1000 + i);
    const eth1 = sources.get("eth1");
    if (eth1 !== undefined) eth1.dropped = 2;
    expect(agent.kernelStats()).toEqual({ received: 7, dropped: 2 });
    // eth1 goes away: its capture closes, and what it counted stays in the totals.
    names = ["eth0"];
    await agent.rescan();
    expect(eth1?.closed).toBe(true);
    sources.get("eth0")?.push(frame, 2000);
    expect(agent.kernelStats()).toEqual({ received: 8, dropped: 2 });
    expect(agent.counts).toMatchObject({ observed: 8 });
    await agent.stop();
  });

  it("reads its token again on every connection (the kubelet rotates a projected ServiceAccount token)", async () => {
    const hub = await startHub();
    const port = (hub.wss.address() as AddressInfo).port;
    let token = "first-token";
    const link = new HubLink({
      url: hub.url,
      token: () => token,
      logger: quiet,
      hello: () => ({ v: 2, type: "hello", node: "n", agentVersion: "t", interfaces: [] }),
    });
    link.start();
    cleanups.push(() => link.close());
    await until(() => hub.auth.length >= 1);
    expect(hub.auth[0]).toBe("Bearer first-token");
    token = "rotated-token";
    await closeHub(hub);
    await until(() => !link.connected);
    const back = await startHub(port);
    cleanups.push(() => closeHub(back));
    await until(() => back.auth.length >= 1, 10_000);
    expect(back.auth[0]).toBe("Bearer rotated-token");
  });

  it("keeps aggregates while the hub is away and delivers them after it comes back", async () => {
    const hub = await startHub();
    const port = (hub.wss.address() as AddressInfo).port;
    const src = new FakeSource("eth0");
    const link = new HubLink({
      url: hub.url,
      token: "t",
      logger: quiet,
      hello: () => ({ v: 2, type: "hello", node: "n", agentVersion: "t", interfaces: [] }),
    });
    await startAgent("n", link, src);
    await until(() => hub.messages.length >= 1);
    await closeHub(hub);
    await until(() => !link.connected);
    for (let i = 0; i < 7; i++) src.push(newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.7"), 5000 + i);
    const back = await startHub(port);
    cleanups.push(() => closeHub(back));
    await until(() => back.messages.some((m) => m.type === "observations"), 10_000);
    expect(back.messages[0]?.type).toBe("hello");
    expect(back.messages.find((m) => m.type === "observations")).toMatchObject({ entries: [{ ip: "192.0.2.7", count: 7 }] });
  });

  it("sends news at once and the rest at its flush, and what it holds when the hub asks", async () => {
    const hub = await startHub();
    cleanups.push(() => closeHub(hub));
    const src = new FakeSource("eth0");
    const link = new HubLink({
      url: hub.url,
      token: "t",
      logger: quiet,
      hello: () => ({ v: 2, type: "hello", node: "node-a", agentVersion: "t", interfaces: [], flush: true }),
      onMessage: (m) => agent.onHubMessage(m),
    });
    // Captures and the link, without start()'s periodic flush: whatever reaches the hub went early.
    const agent = newAgent("node-a", link, src);
    await agent.rescan();
    link.start();
    await until(() => hub.messages.length >= 1);
    const observations = () => hub.messages.filter((m) => m.type === "observations");
    const settle = () => new Promise((r) => setTimeout(r, 300));

    // A request this node answers: its first answer for the IP is news, so the request and its reply go at once.
    const t = Date.now();
    src.push(newArpRequest(CLIENT_MAC, "192.0.2.1", "192.0.2.200"), t);
    src.push(newArpReply(ETH0.mac, "192.0.2.200", CLIENT_MAC, "192.0.2.1"), t);
    await until(() => observations().length === 1);
    expect(observations()[0]).toMatchObject({
      entries: expect.arrayContaining([expect.objectContaining({ ip: "192.0.2.200", mac: ETH0.mac, kind: "reply" })]),
      requests: [{ ip: "192.0.2.200", asker: "192.0.2.1", replies: [[0, ETH0.mac, expect.any(Number)]] }],
    });

    // The same answer again is no news: it waits for a flush (none runs here).
    src.push(newArpRequest(CLIENT_MAC, "192.0.2.1", "192.0.2.200"), t + 1000);
    src.push(newArpReply(ETH0.mac, "192.0.2.200", CLIENT_MAC, "192.0.2.1"), t + 1000);
    await settle();
    expect(observations()).toHaveLength(1);

    // The hub asks (another node's report brought news of the IP): what the agent held goes now.
    for (const ws of hub.sockets) ws.send(JSON.stringify({ v: 2, type: "flush" }));
    await until(() => observations().length === 2);
    expect(observations()[1]).toMatchObject({ requests: [{ ip: "192.0.2.200", times: [t + 1000] }] });
    await settle();
    expect(observations()).toHaveLength(2);

    // A takeover: this node starts answering 20 IPs, one every few ms. Early sends are at least SOON_GAP_MS apart:
    // however long the loop took on this machine, at most one message per SOON_GAP_MS of it (and one more at each
    // end), where one send per news frame would be several times that; and all of it goes.
    const from = performance.now();
    for (let k = 0; k < 20; k++) {
      const vip = `192.0.2.${10 + k}`;
      src.push(newArpRequest(CLIENT_MAC, "192.0.2.1", vip), Date.now());
      src.push(newArpReply(ETH0.mac, vip, CLIENT_MAC, "192.0.2.1"), Date.now());
      await new Promise((r) => setTimeout(r, 2));
    }
    const span = performance.now() - from;
    await settle();
    const burst = observations().slice(2);
    expect(burst.length).toBeGreaterThanOrEqual(1);
    expect(burst.length).toBeLessThanOrEqual(Math.floor(span / SOON_GAP_MS) + 2);
    expect(new Set(burst.flatMap((m) => m.requests.map((r) => r.ip)))).toHaveProperty("size", 20);
  });

  it("sends at the pace its hub sets, and at FLUSH_MS again on a connection that sets none", async () => {
    const hub = await startHub();
    const port = (hub.wss.address() as AddressInfo).port;
    // This hub welcomes the agent and sets a pace of 500 ms.
    const welcome = (h: Hub, pace: number | null) =>
      h.wss.on("connection", (ws) =>
        ws.on("message", (d: Buffer) => {
          const m = parseAgentMessage(d.toString());
          if (!m.ok || m.value.type !== "hello") return;
          ws.send(JSON.stringify({ v: 2, type: "welcome", hubVersion: "t" }));
          if (pace !== null) ws.send(JSON.stringify({ v: 2, type: "pace", flushMs: pace }));
        }),
      );
    welcome(hub, 500);
    const src = new FakeSource("eth0");
    const link = new HubLink({
      url: hub.url,
      token: "t",
      logger: quiet,
      hello: () => ({ v: 2, type: "hello", node: "node-a", agentVersion: "t", interfaces: [], pace: true }),
      onMessage: (m) => agent.onHubMessage(m),
    });
    const agent = await startAgent("node-a", link, src);
    await until(() => agent.flushMs === 500);

    // A client asks every 20 ms for 1.5 s (requests are no news): the agent sends about three times, not fifteen.
    // Bounds by the time the loop really took (timers run late on a loaded machine), with one send of slack each way.
    let took = 0;
    const sends = async (h: Hub) => {
      const before = h.messages.filter((m) => m.type === "observations").length;
      const from = performance.now();
      for (let k = 0; k < 75; k++) {
        src.push(newArpRequest(CLIENT_MAC, "192.0.2.1", "192.0.2.200"), Date.now());
        await new Promise((r) => setTimeout(r, 20));
      }
      took = performance.now() - from;
      return h.messages.filter((m) => m.type === "observations").length - before;
    };
    const paced = await sends(hub);
    expect(paced).toBeGreaterThanOrEqual(Math.floor(took / 500) - 1);
    expect(paced).toBeLessThanOrEqual(Math.ceil(took / 500) + 1);

    // A pace that changes every 50 ms (a hub with agents coming and going) keeps the flushes' phase: they still go.
    let flip = 0;
    const flipping = setInterval(() => {
      for (const ws of hub.sockets) ws.send(JSON.stringify({ v: 2, type: "pace", flushMs: flip++ % 2 === 0 ? 450 : 500 }));
    }, 50);
    const whileFlipping = await sends(hub).finally(() => clearInterval(flipping));
    expect(whileFlipping).toBeGreaterThanOrEqual(Math.floor(took / 500) - 1);

    // The agent reconnects to a hub that sets no pace (an older one): back to every FLUSH_MS.
    await closeHub(hub);
    await until(() => !link.connected);
    const older = await startHub(port);
    cleanups.push(() => closeHub(older));
    welcome(older, null);
    await until(() => link.connected && agent.flushMs === FLUSH_MS, 10_000);
    const unpaced = await sends(older);
    expect(unpaced).toBeGreaterThanOrEqual(Math.floor(took / 200));
    // Three stretches of 1.5 s of traffic and a reconnect: past vitest's 5 s default on a loaded machine.
  }, 30_000);
});
