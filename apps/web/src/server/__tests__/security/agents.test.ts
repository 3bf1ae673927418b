import { describe, expect, it } from "vitest";
import { once } from "node:events";
import WebSocket from "ws";
import type { AgentMessage } from "@whohas/core";
import { Hub } from "../../hub/hub.js";
import type { Review } from "../../gateway/credentials.js";
import { AGENT_TOKEN, startHub } from "./harness.js";

const mac = (n: number) => `02:00:5e:00:00:${n.toString(16).padStart(2, "0")}`;
const hello = (node: string, n = 10) => ({
  v: 2,
  type: "hello",
  node,
  agentVersion: "t",
  interfaces: [{ name: "eth0", mac: mac(n), up: true }],
});
const reply = (ip: string, n = 10) => ({
  ip,
  mac: mac(n),
  kind: "reply",
  iface: "eth0",
  count: 1,
  firstSeen: 1,
  lastSeen: 2,
  targetMac: null,
  ethernetMismatch: 0,
  ethSrc: null,
});

/** An Agent is a WebSocket that said hello: what the hub answered, and what it sent since. */
interface Agent {
  readonly ws: WebSocket;
  readonly outcome: string;
  readonly received: unknown[];
}

async function agent(url: string, node: string, token = AGENT_TOKEN, n = 10): Promise<Agent> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  const received: unknown[] = [];
  ws.on("message", (d: Buffer) => received.push(JSON.parse(d.toString())));
  await once(ws, "open");
  ws.send(JSON.stringify(hello(node, n)));
  const outcome = await new Promise<string>((resolve) => {
    ws.on("message", (d: Buffer) => {
      if ((JSON.parse(d.toString()) as { type: string }).type === "welcome") resolve("welcome");
    });
    ws.once("close", (code, reason) => resolve(`${code} ${reason.toString()}`));
  });
  return { ws, outcome, received };
}

const metric = async (url: string, name: string) =>
  Number(new RegExp(`^${name.replace(/[{}]/g, "\\$&")} (\\d+)`, "m").exec(await (await fetch(url)).text())?.[1] ?? 0);

describe("agents are bound to one node", () => {
  it("refuses a second agent for a live node with the shared token (4409), and keeps the node's commands on the first", async () => {
    const { agentUrl, server, metrics } = await startHub();
    const first = await agent(agentUrl, "node-a");
    expect(first.outcome).toBe("welcome");
    const impostor = await agent(agentUrl, "node-a", AGENT_TOKEN, 66);
    expect(impostor.outcome).toMatch(/^4409 node-a already has a live agent connection/);
    const sent = server.gateway.command(
      "node-a",
      { v: 2, type: "probe", id: "p-1", ip: "198.51.100.7", durationMs: 1000, intervalMs: 1000 },
      () => undefined,
    );
    expect(sent).toBe(true);
    await expect.poll(() => first.received.some((m) => (m as { id?: string }).id === "p-1")).toBe(true);
    expect(await metric(metrics, 'whohas_hub_agent_rejected_total{reason="node-taken"}')).toBe(1);
    // Once the first connection is gone, the node's name is free again.
    first.ws.close();
    await once(first.ws, "close");
    await expect.poll(async () => (await agent(agentUrl, "node-a")).outcome).toBe("welcome");
  });

  it("takes a command's results only from the connection the command went to", async () => {
    const { agentUrl, server, metrics } = await startHub();
    const a = await agent(agentUrl, "node-a", AGENT_TOKEN, 10);
    const b = await agent(agentUrl, "node-b", AGENT_TOKEN, 11);
    const got: AgentMessage[] = [];
    server.gateway.command("node-a", { v: 2, type: "probe", id: "p-2", ip: "198.51.100.7", durationMs: 1000, intervalMs: 1000 }, (m) =>
      got.push(m),
    );
    // node-b forges node-a's clean probe result: exactly one answer per request, the expected owner's.
    b.ws.send(JSON.stringify({ v: 2, type: "probe-result", id: "p-2", seq: 1, sentAt: 1, replies: [{ mac: mac(10), latencyMs: 1 }] }));
    b.ws.send(JSON.stringify({ v: 2, type: "command-done", id: "p-2", ok: true, message: "forged" }));
    a.ws.send(
      JSON.stringify({
        v: 2,
        type: "probe-result",
        id: "p-2",
        seq: 1,
        sentAt: 1,
        replies: [
          { mac: mac(10), latencyMs: 1 },
          { mac: mac(11), latencyMs: 2 },
        ],
      }),
    );
    await expect.poll(() => got.length).toBe(1);
    expect(got[0]).toMatchObject({ type: "probe-result", replies: [{ mac: mac(10) }, { mac: mac(11) }] });
    expect(await metric(metrics, 'whohas_hub_agent_bad_messages_total{reason="foreign-result"}')).toBe(2);
    // The forger's connection stays (a bad message is dropped, not fatal), and the real result still arrives.
    a.ws.send(JSON.stringify({ v: 2, type: "command-done", id: "p-2", ok: true, message: "done" }));
    await expect.poll(() => got.length).toBe(2);
    expect(b.ws.readyState).toBe(WebSocket.OPEN);
  });

  it("refuses a hello for a node Kubernetes does not list", async () => {
    const hub = await Hub.open();
    hub.setCluster({
      snapshot: () => ({
        services: [],
        nodes: ["node-a", "node-b"].map((name) => ({ name, labels: {}, networkUnavailable: false })),
        l2Advertisements: [],
        l2Statuses: [],
        nodeAssigned: new Map(),
        metallbInstalled: false,
      }),
      kubeProxyConfig: () => null,
      kubeProxyRollout: () => null,
      metallb: false,
    });
    const { agentUrl } = await startHub({ hub });
    expect((await agent(agentUrl, "node-a")).outcome).toBe("welcome");
    expect((await agent(agentUrl, "node-zz")).outcome).toBe(
      "1008 node-zz is not a Node of this cluster: check the agent's --node (NODE_NAME from spec.nodeName)",
    );
    expect(hub.agents.list().map((a) => a.node)).toEqual(["node-a"]);
  });

  it("registers at most limits.maxAgents nodes: 500 invented names make no 500 agents", async () => {
    const { agentUrl, hub, metrics } = await startHub({ extra: { agentLimits: { maxAgents: 3 } } });
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++) {
      const a = await agent(agentUrl, `invented-${i}`, AGENT_TOKEN, 20 + i);
      outcomes.push(a.outcome);
      a.ws.close();
    }
    expect(outcomes.slice(0, 3)).toEqual(["welcome", "welcome", "welcome"]);
    expect(outcomes.slice(3).every((o) => o.startsWith("1008 the hub knows 3 nodes, none down long enough to make room"))).toBe(true);
    expect(hub.agentCount()).toBe(3);
    expect(await metric(metrics, 'whohas_hub_agent_rejected_total{reason="max-agents"}')).toBe(17);
    // A node it knows still comes back.
    await expect.poll(async () => (await agent(agentUrl, "invented-1", AGENT_TOKEN, 21)).outcome).toBe("welcome");
  });

  it("takes at most limits.newIpsPerAgentPerMinute new IPs from one agent: one message with 50 invented IPs makes 10", async () => {
    const { agentUrl, hub, metrics } = await startHub({ extra: { agentLimits: { newIpsPerAgentPerMinute: 10 } } });
    const a = await agent(agentUrl, "node-a");
    const ips = Array.from({ length: 50 }, (_, i) => `198.51.100.${i + 1}`);
    a.ws.send(JSON.stringify({ v: 2, type: "observations", dropped: 0, requests: [], entries: ips.map((ip) => reply(ip)) }));
    await expect.poll(() => metric(metrics, "whohas_hub_agent_new_ips_dropped_total")).toBe(40);
    expect(
      hub
        .ips()
        .map((v) => v.ip)
        .sort(),
    ).toEqual(ips.slice(0, 10).sort());
    // IPs it already brought keep counting.
    a.ws.send(JSON.stringify({ v: 2, type: "observations", dropped: 0, requests: [], entries: [reply("198.51.100.1")] }));
    await expect.poll(() => hub.ip("198.51.100.1")?.responders[0]?.replies).toBe(2);
    // Another agent has an allowance of its own.
    const b = await agent(agentUrl, "node-b", AGENT_TOKEN, 11);
    b.ws.send(JSON.stringify({ v: 2, type: "observations", dropped: 0, requests: [], entries: [reply("198.51.100.49", 11)] }));
    await expect.poll(() => hub.ip("198.51.100.49") !== null).toBe(true);
  });
});

describe("what one agent can make the hub believe and hold", () => {
  const helloWith = (node: string, macs: number[]) => ({
    v: 2,
    type: "hello",
    node,
    agentVersion: "t",
    interfaces: macs.map((n, i) => ({ name: `eth${i}`, mac: mac(n), up: true })),
  });
  async function raw(url: string, first: object): Promise<{ ws: WebSocket; outcome: string }> {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    await once(ws, "open");
    ws.send(JSON.stringify(first));
    const outcome = await new Promise<string>((resolve) => {
      ws.on("message", (d: Buffer) => (JSON.parse(d.toString()) as { type: string }).type === "welcome" && resolve("welcome"));
      ws.once("close", (code, reason) => resolve(`${code} ${reason.toString()}`));
    });
    return { ws, outcome };
  }

  /** welcomed retries a hello until the hub has let go of the node's previous connection. */
  async function welcomed(f: () => Promise<{ ws: WebSocket; outcome: string }>): Promise<{ ws: WebSocket; outcome: string }> {
    for (let i = 0; i < 50; i++) {
      const r = await f();
      if (r.outcome === "welcome") return r;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error("never welcomed");
  }

  it("keeps a MAC with the live node that reported it first: another agent cannot pass its answers off as its own", async () => {
    const conflicts: unknown[] = [];
    const hub = await Hub.open({ onMacConflict: (c) => conflicts.push(c) });
    const { agentUrl } = await startHub({ hub, extra: { agentFactsEveryMs: 0 } });
    const a = await raw(agentUrl, helloWith("node-a", [10]));
    const evil = await raw(agentUrl, helloWith("node-evil", [10, 66]));
    expect([a.outcome, evil.outcome]).toEqual(["welcome", "welcome"]);
    expect([hub.nodeOfMac(mac(10)), hub.nodeOfMac(mac(66))]).toEqual(["node-a", "node-evil"]);
    expect(conflicts).toEqual([{ mac: mac(10), holder: "node-a", claimant: "node-evil" }]);
    // A MAC node-a stops reporting is no longer node-a's.
    a.ws.send(JSON.stringify({ v: 2, type: "facts", facts: facts("node-a", [10, 12]) }));
    await expect.poll(() => hub.nodeOfMac(mac(12))).toBe("node-a");
    a.ws.send(JSON.stringify({ v: 2, type: "facts", facts: facts("node-a", [10]) }));
    await expect.poll(() => hub.nodeOfMac(mac(12))).toBe(null);
    // While node-a is away its MAC goes to the other live node that reports it; back, node-a has it again.
    a.ws.close();
    await expect.poll(() => hub.nodeOfMac(mac(10))).toBe("node-evil");
    await welcomed(() => raw(agentUrl, helloWith("node-a", [10])));
    await expect.poll(() => hub.nodeOfMac(mac(10))).toBe("node-a");
  });

  it("refuses node names that are not Kubernetes names, and hellos past the interface bound", async () => {
    const { agentUrl, hub } = await startHub();
    for (const node of ["!0-rogue", "Node-A", "a\nb", "@here", "x".repeat(64)])
      expect((await raw(agentUrl, helloWith(node, [10]))).outcome).toMatch(/^1008 wire: node: not a node name/);
    const many = Array.from({ length: 257 }, (_, i) => i);
    expect((await raw(agentUrl, helloWith("node-a", many))).outcome).toMatch(/^1008 wire: interfaces/);
    expect(hub.agentCount()).toBe(0);
  });

  it("keeps a node's new-IP allowance across its reconnects, counts request reports too, and bounds all agents together", async () => {
    const { agentUrl, hub, metrics } = await startHub({ extra: { agentLimits: { newIpsPerAgentPerMinute: 10, newIpsPerMinute: 25 } } });
    const send = (ws: WebSocket, from: number, n: number, as: "entries" | "requests", m = 10) => {
      const ips = Array.from({ length: n }, (_, i) => `198.51.${100 + Math.floor((from + i) / 250)}.${((from + i) % 250) + 1}`);
      const entries = as === "entries" ? ips.map((ip) => reply(ip, m)) : [];
      const requests = as === "requests" ? ips.map((ip) => ({ ip, asker: "192.0.2.1", iface: "eth0", times: [1], replies: [] })) : [];
      ws.send(JSON.stringify({ v: 2, type: "observations", dropped: 0, entries, requests }));
    };
    let x = await raw(agentUrl, helloWith("node-x", [10]));
    send(x.ws, 0, 8, "entries");
    await expect.poll(() => hub.ips().length).toBe(8);
    for (let k = 0; k < 3; k++) {
      x.ws.close();
      await once(x.ws, "close");
      x = await welcomed(() => raw(agentUrl, helloWith("node-x", [10])));
    }
    // Three reconnects later node-x has 2 new IPs left of its 10, for aggregates and request reports alike.
    send(x.ws, 100, 20, "entries");
    await expect.poll(() => hub.ips().length).toBe(10);
    const dropped = await metric(metrics, "whohas_hub_agent_new_ips_dropped_total");
    expect(dropped).toBe(18);
    send(x.ws, 300, 5, "requests");
    await expect.poll(() => metric(metrics, "whohas_hub_agent_new_ips_dropped_total")).toBe(dropped + 5);
    // Other nodes bring theirs, until everyone's 25 are spent.
    for (const [i, node] of ["node-y", "node-z", "node-w"].entries()) {
      const a = await raw(agentUrl, helloWith(node, [20 + i]));
      send(a.ws, 200 + i * 50, 10, "entries", 20 + i);
    }
    await expect.poll(() => hub.ips().length).toBe(25);
  });

  it("makes room for a new node by forgetting the agent down the longest, never a live one", async () => {
    let now = Date.now();
    const hub = await Hub.open({ clock: () => now });
    const { agentUrl } = await startHub({ hub, extra: { agentLimits: { maxAgents: 2 } } });
    const a = await raw(agentUrl, helloWith("node-a", [10]));
    const b = await raw(agentUrl, helloWith("node-b", [11]));
    expect((await raw(agentUrl, helloWith("node-c", [12]))).outcome).toMatch(/^1008 the hub knows 2 nodes, none down long enough/);
    b.ws.close();
    await expect.poll(() => hub.agents.list().find((x) => x.node === "node-b")?.connected).toBe(false);
    now += 60_000;
    expect((await raw(agentUrl, helloWith("node-c", [12]))).outcome).toBe("welcome");
    expect(hub.agents.list().map((x) => x.node)).toEqual(["node-a", "node-c"]);
    expect(hub.nodeOfMac(mac(11))).toBe(null);
    expect(a.ws.readyState).toBe(WebSocket.OPEN);
  });

  it("takes a node's facts at most every factsEveryMs, the latest of those sent sooner", async () => {
    const { agentUrl, hub } = await startHub({ extra: { agentFactsEveryMs: 300 } });
    const a = await raw(agentUrl, helloWith("node-a", [10]));
    for (const n of [1, 2, 3, 4])
      a.ws.send(
        JSON.stringify({
          v: 2,
          type: "facts",
          facts: { ...facts("node-a", [10]), capture: { ...facts("node-a", [10]).capture, frames: n } },
        }),
      );
    await expect.poll(() => hub.agents.list()[0]?.facts?.capture.frames).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(hub.agents.list()[0]?.facts?.capture.frames).toBe(1);
    await expect.poll(() => hub.agents.list()[0]?.facts?.capture.frames, { timeout: 2000 }).toBe(4);
  });

  it("refuses an agent that comes through a proxy unless agents.allowProxied", async () => {
    const { agentUrl, metrics } = await startHub();
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(agentUrl, { headers: { authorization: `Bearer ${AGENT_TOKEN}`, "x-forwarded-for": "203.0.113.9" } });
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => resolve(101));
      ws.once("error", () => undefined);
    });
    expect(status).toBe(403);
    expect(await metric(metrics, 'whohas_hub_agent_rejected_total{reason="proxied"}')).toBe(1);
    const allowed = await startHub({ extra: { agentsAllowProxied: true } });
    const ws = new WebSocket(allowed.agentUrl, { headers: { authorization: `Bearer ${AGENT_TOKEN}`, "x-forwarded-for": "203.0.113.9" } });
    await once(ws, "open");
    ws.close();
  });
});

/** facts is a node's facts report listing MACs `macs`. */
function facts(node: string, macs: number[]) {
  return {
    node,
    agentVersion: "t",
    interfaces: macs.map((n, i) => ({
      name: `eth${i}`,
      mac: mac(n),
      up: true,
      master: null,
      addresses: [],
      own: { arpIgnore: 0, arpAnnounce: 0 },
      effective: { arpIgnore: 0, arpAnnounce: 0 },
      captured: true,
    })),
    sysctl: { all: { arpIgnore: 0, arpAnnounce: 0 }, default: { arpIgnore: 0, arpAnnounce: 0 } },
    kubeIpvs0: { present: false, addresses: 0 },
    kubeProxyMode: "not-ipvs",
    capture: { frames: 0, dropped: {}, kernelReceived: 0, kernelDropped: 0 },
  };
}

describe("agents on ServiceAccount tokens", () => {
  /** A TokenReview stand-in: each token is bound to one node; anything else is refused. */
  const bound: Record<string, string> = { "token-of-node-a-0123456789": "node-a", "token-of-node-b-0123456789": "node-b" };
  let reviews = 0;
  const reviewer = (token: string): Promise<Review> => {
    reviews++;
    const node = bound[token];
    return Promise.resolve(node === undefined ? { ok: false, why: "invalid bearer token" } : { ok: true, node });
  };

  it("binds the connection to the token's node, and lets a newer connection of that node replace the old", async () => {
    const { agentUrl, hub } = await startHub({ extra: { agentReviewer: reviewer } });
    expect((await agent(agentUrl, "node-b", "token-of-node-a-0123456789")).outcome).toBe(
      "1008 hello names node-b but the token is bound to a Pod on node-a",
    );
    const old = await agent(agentUrl, "node-a", "token-of-node-a-0123456789");
    expect(old.outcome).toBe("welcome");
    const closed = once(old.ws, "close");
    const newer = await agent(agentUrl, "node-a", "token-of-node-a-0123456789");
    expect(newer.outcome).toBe("welcome");
    const [code, reason] = (await closed) as [number, Buffer];
    expect([code, reason.toString()]).toEqual([4000, "replaced by a newer connection of the same node"]);
    expect(hub.agents.list().find((x) => x.node === "node-a")).toMatchObject({ up: true, connected: true });
    newer.ws.close();
    await expect.poll(() => hub.agents.list().find((x) => x.node === "node-a")?.connected).toBe(false);
  });

  it("counts each failed token against its address before reviewing it: 200 parallel guesses make at most 20 reviews", async () => {
    const { agentUrl } = await startHub({ extra: { agentReviewer: reviewer } });
    reviews = 0;
    const statuses = await Promise.all(
      Array.from(
        { length: 200 },
        (_, i) =>
          new Promise<number>((resolve) => {
            const ws = new WebSocket(agentUrl, { headers: { authorization: `Bearer guess-${i}-0123456789` } });
            ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
            ws.once("open", () => resolve(101));
            ws.once("error", () => undefined);
          }),
      ),
    );
    expect(reviews).toBeLessThanOrEqual(20);
    expect(statuses.filter((s) => s === 401)).toHaveLength(reviews);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - reviews);
  });
});
