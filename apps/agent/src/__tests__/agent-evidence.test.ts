import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import { WebSocketServer } from "ws";
import type { AddressInfo } from "node:net";
import {
  WIRE_VERSION,
  newArpReply,
  newArpRequest,
  newNeighborSolicitation,
  parseAgentMessage,
  silentLogger,
  tagFrame,
  type AgentMessage,
} from "@whohas/core";
import { Agent } from "../agent.js";
import { FrameRing } from "../evidence/ring.js";
import { HubLink } from "../hub-link.js";
import { FakeSource } from "./fake-source.js";
import { AgentMetrics } from "../metrics.js";

const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const A = "02:00:5e:00:00:0a";
const VIP = "192.0.2.200";
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
const ns = (ms: number) => (BigInt(ms) * 1_000_000n).toString();
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** startAgent runs an agent with `evidence` against a hub on port 0; `ask` sends it a message as the hub. */
async function startAgent(evidence: FrameRing | null) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await once(wss, "listening");
  const messages: AgentMessage[] = [];
  wss.on("connection", (ws) =>
    ws.on("message", (d: Buffer) => {
      const m = parseAgentMessage(d.toString());
      // Every message must pass the schema the hub validates with.
      if (!m.ok) throw new Error(m.message);
      messages.push(m.value);
    }),
  );
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  );
  const src = new FakeSource("eth0");
  const metrics = new AgentMetrics();
  const agent: Agent = new Agent({
    node: "node-a",
    logger: silentLogger,
    link: new HubLink({
      url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/agent`,
      token: "t",
      logger: silentLogger,
      hello: () => ({ v: WIRE_VERSION, type: "hello", node: "node-a", agentVersion: "t", interfaces: [] }),
      onMessage: (m) => agent.onHubMessage(m),
    }),
    scan: () => Promise.resolve([{ name: "eth0", mac: A, up: true, noarp: false, hasMaster: false, master: null }]),
    openSource: () => src,
    maxBufferBytes: 1 << 20,
    metrics,
    evidence,
  });
  cleanups.push(() => agent.stop());
  await agent.start();
  await until(() => messages.length >= 1 && wss.clients.size === 1);
  const ask = async (msg: Record<string, unknown>) => {
    const before = messages.filter((m) => m.type === "evidence").length;
    for (const ws of wss.clients) ws.send(JSON.stringify({ v: WIRE_VERSION, type: "evidence-request", ...msg }));
    await until(() => messages.filter((m) => m.type === "evidence").length > before);
    return messages.filter((m) => m.type === "evidence").at(-1);
  };
  return { agent, src, metrics, ask };
}

describe("Agent evidence", () => {
  it("keeps every frame it decodes and answers an evidence-request with those about the IP, VLAN and window", async () => {
    const { agent, src, metrics, ask } = await startAgent(new FrameRing({ maxBytes: 1 << 20, maxAgeMs: 600_000 }));
    const request = newArpRequest(CLIENT.mac, CLIENT.ip, VIP);
    const reply = newArpReply(A, VIP, CLIENT.mac, CLIENT.ip);
    const tagged = tagFrame(newArpRequest(CLIENT.mac, CLIENT.ip, VIP), 42);
    src.push(request, T0);
    src.push(reply, T0 + 1);
    src.push(tagged, T0 + 2);
    src.push(newArpRequest(CLIENT.mac, CLIENT.ip, "192.0.2.201"), T0 + 3);
    src.push(newNeighborSolicitation(CLIENT.mac, "2001:db8::1", "2001:db8::c8"), T0 + 4);
    src.push(new Uint8Array(5), T0 + 5); // truncated: not decoded, not kept
    expect(agent.counts).toMatchObject({ observed: 5, truncated: 1 });
    expect(agent.evidence?.frames).toBe(5);

    expect(await ask({ id: "ev-1", ip: VIP, vlan: null, fromMs: T0, toMs: T0 + 60_000, maxBytes: 65536 })).toEqual({
      v: WIRE_VERSION,
      type: "evidence",
      id: "ev-1",
      frames: [
        { tNs: ns(T0), iface: "eth0", vlan: null, data: b64(request) },
        { tNs: ns(T0 + 1), iface: "eth0", vlan: null, data: b64(reply) },
      ],
      truncated: false,
      heldFromMs: T0,
    });
    expect(await ask({ id: "ev-2", ip: VIP, vlan: 42, fromMs: T0, toMs: T0 + 60_000, maxBytes: 65536 })).toMatchObject({
      frames: [{ tNs: ns(T0 + 2), vlan: 42, data: b64(tagged) }],
    });
    expect(await ask({ id: "ev-3", ip: "2001:db8::c8", vlan: null, fromMs: T0, toMs: T0 + 60_000, maxBytes: 65536 })).toMatchObject({
      frames: [{ tNs: ns(T0 + 4) }],
    });
    // A window after the first frame, and a cap of one frame.
    expect(await ask({ id: "ev-4", ip: VIP, vlan: null, fromMs: T0 + 1, toMs: T0 + 60_000, maxBytes: 65536 })).toMatchObject({
      frames: [{ tNs: ns(T0 + 1) }],
      truncated: false,
    });
    expect(await ask({ id: "ev-5", ip: VIP, vlan: null, fromMs: T0, toMs: T0 + 60_000, maxBytes: 60 })).toMatchObject({
      frames: [{ tNs: ns(T0) }],
      truncated: true,
    });

    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^whohas_agent_evidence_frames 5$/m);
    expect(text).toMatch(/^whohas_agent_evidence_bound_bytes 1048576$/m);
    // Each frame with its 16-byte header, padded to 4: three ARP frames of 60 bytes, a tagged one of 64, an NS of 86.
    expect(text).toMatch(/^whohas_agent_evidence_bytes 412$/m);
    expect(text).toMatch(/^whohas_agent_evidence_evicted_total 0$/m);
  });

  it("cuts an answer where one message the hub accepts ends", async () => {
    const { src, ask } = await startAgent(new FrameRing({ maxBytes: 8 << 20, maxAgeMs: 600_000 }));
    const big = new Uint8Array(1500);
    big.set(newArpRequest(CLIENT.mac, CLIENT.ip, VIP));
    for (let i = 0; i < 1000; i++) src.push(big, T0 + i);
    const answer = await ask({ id: "ev-big", ip: VIP, vlan: null, fromMs: T0, toMs: T0 + 60_000, maxBytes: 768 * 1024 });
    expect(answer).toMatchObject({ truncated: true });
    const frames = answer?.type === "evidence" ? answer.frames : [];
    // 1,500 bytes take 2,000 in base64: about 390 such frames fit 768 KiB of JSON.
    expect(frames.length).toBeGreaterThan(350);
    expect(frames.length).toBeLessThan(400);
    expect(JSON.stringify(answer).length).toBeLessThan(768 * 1024);
  });

  it("answers with nothing held when evidence is turned off", async () => {
    const { src, metrics, ask } = await startAgent(null);
    src.push(newArpRequest(CLIENT.mac, CLIENT.ip, VIP), T0);
    expect(await ask({ id: "ev-off", ip: VIP, vlan: null, fromMs: 0, toMs: T0 + 1, maxBytes: 1024 })).toEqual({
      v: WIRE_VERSION,
      type: "evidence",
      id: "ev-off",
      frames: [],
      truncated: false,
      heldFromMs: null,
    });
    expect(await metrics.registry.metrics()).toMatch(/^whohas_agent_evidence_bound_bytes 0$/m);
  });
});
