import { describe, expect, it } from "vitest";
import { once } from "node:events";
import WebSocket from "ws";
import type { AgentMessage } from "@whohas/core";
import { Hub } from "../../hub/hub.js";
import type { Review } from "../../gateway/agent-gateway.js";
import { AGENT_TOKEN, startHub } from "./harness.js";

const mac = (n: number) => `02:00:5e:00:00:${n.toString(16).padStart(2, "0")}`;
const hello = (node: string, n = 10) => ({ v: 1, type: "hello", node, agentVersion: "t", interfaces: [{ name: "eth0", mac: mac(n), up: true }] });
const reply = (ip: string, n = 10) => ({ ip, mac: mac(n), kind: "reply", iface: "eth0", count: 1, firstSeen: 1, lastSeen: 2, peerIp: "192.0.2.1", targetMac: null, ethernetMismatch: 0 });

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

const metric = async (url: string, name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, "\\$&")} (\\d+)`, "m").exec(await (await fetch(url)).text())?.[1] ?? 0);

describe("agents are bound to one node", () => {
  it("refuses a second agent for a live node with the shared token (4409), and keeps the node's commands on the first", async () => {
    const { agentUrl, server, metrics } = await startHub();
    const first = await agent(agentUrl, "node-a");
    expect(first.outcome).toBe("welcome");
    const impostor = await agent(agentUrl, "node-a", AGENT_TOKEN, 66);
    expect(impostor.outcome).toMatch(/^4409 node-a already has a live agent connection/);
    const sent = server.gateway.command("node-a", { v: 1, type: "probe", id: "p-1", ip: "198.51.100.7", durationMs: 1000, intervalMs: 1000 }, () => undefined);
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
    server.gateway.command("node-a", { v: 1, type: "probe", id: "p-2", ip: "198.51.100.7", durationMs: 1000, intervalMs: 1000 }, (m) => got.push(m));
    // node-b forges node-a's clean probe result: exactly one answer per request, the expected owner's.
    b.ws.send(JSON.stringify({ v: 1, type: "probe-result", id: "p-2", seq: 1, sentAt: 1, replies: [{ mac: mac(10), latencyMs: 1 }] }));
    b.ws.send(JSON.stringify({ v: 1, type: "command-done", id: "p-2", ok: true, message: "forged" }));
    a.ws.send(JSON.stringify({ v: 1, type: "probe-result", id: "p-2", seq: 1, sentAt: 1, replies: [{ mac: mac(10), latencyMs: 1 }, { mac: mac(11), latencyMs: 2 }] }));
    await expect.poll(() => got.length).toBe(1);
    expect(got[0]).toMatchObject({ type: "probe-result", replies: [{ mac: mac(10) }, { mac: mac(11) }] });
    expect(await metric(metrics, 'whohas_hub_agent_bad_messages_total{reason="foreign-result"}')).toBe(2);
    // The forger's connection stays (a bad message is dropped, not fatal), and the real result still arrives.
    a.ws.send(JSON.stringify({ v: 1, type: "command-done", id: "p-2", ok: true, message: "done" }));
    await expect.poll(() => got.length).toBe(2);
    expect(b.ws.readyState).toBe(WebSocket.OPEN);
  });

  it("refuses a hello for a node Kubernetes does not list", async () => {
    const hub = new Hub();
    hub.setCluster({
      snapshot: () => ({ services: [], nodes: ["node-a", "node-b"].map((name) => ({ name, labels: {}, networkUnavailable: false })), l2Advertisements: [], l2Statuses: [], nodeAssigned: new Map(), metallbInstalled: false }),
      kubeProxyConfig: () => null,
      kubeProxyRollout: () => null,
      metallb: false,
    });
    const { agentUrl } = await startHub({ hub });
    expect((await agent(agentUrl, "node-a")).outcome).toBe("welcome");
    expect((await agent(agentUrl, "node-zz")).outcome).toBe("1008 node-zz is not a Node of this cluster: check the agent's --node (NODE_NAME from spec.nodeName)");
    expect(hub.agents().map((a) => a.node)).toEqual(["node-a"]);
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
    expect(outcomes.slice(3).every((o) => o.startsWith("1008 the hub already knows 3 nodes (limits.maxAgents 3)"))).toBe(true);
    expect(hub.agentCount()).toBe(3);
    expect(await metric(metrics, 'whohas_hub_agent_rejected_total{reason="max-agents"}')).toBe(17);
    // A node it knows still comes back.
    await expect.poll(async () => (await agent(agentUrl, "invented-1", AGENT_TOKEN, 21)).outcome).toBe("welcome");
  });

  it("takes at most limits.newIpsPerAgentPerMinute new IPs from one agent: one message with 50 invented IPs makes 10", async () => {
    const { agentUrl, hub, metrics } = await startHub({ extra: { agentLimits: { newIpsPerAgentPerMinute: 10 } } });
    const a = await agent(agentUrl, "node-a");
    const ips = Array.from({ length: 50 }, (_, i) => `198.51.100.${i + 1}`);
    a.ws.send(JSON.stringify({ v: 1, type: "observations", dropped: 0, entries: ips.map((ip) => reply(ip)) }));
    await expect.poll(() => metric(metrics, "whohas_hub_agent_new_ips_dropped_total")).toBe(40);
    expect(hub.ips().map((v) => v.ip).sort()).toEqual(ips.slice(0, 10).sort());
    // IPs it already brought keep counting.
    a.ws.send(JSON.stringify({ v: 1, type: "observations", dropped: 0, entries: [reply("198.51.100.1")] }));
    await expect.poll(() => hub.ip("198.51.100.1")?.responders[0]?.replies).toBe(2);
    // Another agent has an allowance of its own.
    const b = await agent(agentUrl, "node-b", AGENT_TOKEN, 11);
    b.ws.send(JSON.stringify({ v: 1, type: "observations", dropped: 0, entries: [reply("198.51.100.49", 11)] }));
    await expect.poll(() => hub.ip("198.51.100.49") !== null).toBe(true);
  });
});

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
    expect((await agent(agentUrl, "node-b", "token-of-node-a-0123456789")).outcome).toBe("1008 hello names node-b but the token is bound to a Pod on node-a");
    const old = await agent(agentUrl, "node-a", "token-of-node-a-0123456789");
    expect(old.outcome).toBe("welcome");
    const closed = once(old.ws, "close");
    const newer = await agent(agentUrl, "node-a", "token-of-node-a-0123456789");
    expect(newer.outcome).toBe("welcome");
    const [code, reason] = (await closed) as [number, Buffer];
    expect([code, reason.toString()]).toEqual([4000, "replaced by a newer connection of the same node"]);
    expect(hub.agents().find((x) => x.node === "node-a")).toMatchObject({ up: true, connected: true });
    newer.ws.close();
    await expect.poll(() => hub.agents().find((x) => x.node === "node-a")?.connected).toBe(false);
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
