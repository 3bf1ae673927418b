import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import WebSocket from "ws";
import { STRANGER_GRACE_MS } from "@whohas/core";
import { startStack, type Stack } from "../stack.js";
import { eventually, findingsIn, passed, query, signIn, type IncidentView as Incident } from "./hub-client.js";

interface Finding {
  type: string;
  macs: string[];
  incidentId: number;
}
interface ApiIp {
  ip: string;
  state: string;
  services: { name: string; externalTrafficPolicy: string }[];
  expectedOwner: { node: string; source: string } | null;
  responders: { mac: string; node: string | null; vendor: string | null; answering: boolean; meanLatencyMs: number | null }[];
  fastest: string | null;
  findings: Finding[];
  requests: number;
}
interface ApiIpDetail extends ApiIp {
  timeline: { minute: number; mac: string; kind: string; count: number }[];
  incidents: { id: number; type: string }[];
}
interface AgentRow {
  node: string;
  up: boolean;
  connected: boolean;
}

// The hub as a deployment runs it (`whohas-hub --config`), with real agents, the lab's kernels and the test API server.
describe("the hub: findings, the read API, storage and liveness", () => {
  let stack: Stack;
  const api = async <T>(path: string, token: string | null = stack.viewerToken): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${stack.url}/api/v1${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const ips = async () => (await api<ApiIp[]>("/ips")).body;
  const agents = () => query<AgentRow[]>(stack, "agents.list");

  beforeAll(async () => {
    stack = await startStack({ nodes: 3, vips: 2, kube: true, requestIntervalMs: 500 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("flags several responders, the nodes that are not the owner, and ETP Local silent drops, through the read API", async () => {
    const [vip0, vip1] = stack.lab.vips;
    const has = (r: ApiIp | undefined, t: string) => r?.findings.some((f) => f.type === t) ?? false;
    // Agents connect one after the other: wait until all three answer, so every finding has had its tick.
    const rows = await eventually(
      ips,
      (r) =>
        has(
          r.find((x) => x.ip === vip0),
          "multi-responder",
        ) &&
        has(
          r.find((x) => x.ip === vip0),
          "wrong-owner",
        ) &&
        has(
          r.find((x) => x.ip === vip1),
          "silent-drop",
        ) &&
        r.find((x) => x.ip === vip0)?.findings.find((f) => f.type === "wrong-owner")?.macs.length === 2,
      20_000,
    );
    const r0 = rows.find((r) => r.ip === vip0);
    expect(r0?.state).toBe("multi-responder");
    expect(r0?.findings.map((f) => f.type).sort()).toEqual(["multi-responder", "wrong-owner"]);
    // wrong-owner carries the two MACs of the nodes that are not the expected owner.
    const owner = r0?.expectedOwner?.node;
    const wrongMacs = stack.lab.nodes
      .filter((n) => n.name !== owner)
      .map((n) => n.mac)
      .sort();
    expect(r0?.findings.find((f) => f.type === "wrong-owner")?.macs).toEqual(wrongMacs);
    // Each node times its own replies against the broadcast request it saw: one of them is the usual winner.
    expect(r0?.responders.every((r) => typeof r.meanLatencyMs === "number")).toBe(true);
    expect(stack.lab.nodes.map((n) => n.mac)).toContain(r0?.fastest);
    const r1 = rows.find((r) => r.ip === vip1);
    expect(r1?.services).toEqual([
      { namespace: "demo", name: "web-1", externalTrafficPolicy: "Local", ports: [{ port: 80, protocol: "TCP" }] },
    ]);
    // One incident per IP, named after its worst finding, its findings as facets: the pager says it once.
    const open = (await api<Incident[]>("/incidents?state=open")).body;
    const ofIp = open.filter((i) => !i.ip.startsWith("node/"));
    expect(ofIp.map((i) => i.ip).sort()).toEqual([vip0, vip1].sort());
    expect(ofIp.find((i) => i.ip === vip0)?.type).toBe("multi-responder");
    expect(
      findingsIn(ofIp)
        .filter((f) => f.ip === vip0)
        .map((f) => f.type)
        .sort(),
    ).toEqual(["multi-responder", "wrong-owner"]);
    expect(findingsIn(ofIp).some((f) => f.ip === vip1 && f.type === "silent-drop")).toBe(true);
    const nodes = (await api<{ node: string; agent: { up: boolean }; arp: { arpIgnore: number; strict: boolean } | null }[]>("/nodes"))
      .body;
    expect(nodes.map((n) => [n.node, n.agent.up, n.arp?.arpIgnore, n.arp?.strict])).toEqual([
      ["node-1", true, 0, false],
      ["node-2", true, 0, false],
      ["node-3", true, 0, false],
    ]);
  });

  it("refuses the read API without the viewer token", async () => {
    expect((await api("/ips", null)).status).toBe(401);
    expect((await api("/ips", "not-the-token-0123456789")).status).toBe(401);
  });

  it("shows a killed agent down within 30 s and takes it back when it returns", async () => {
    await eventually(agents, (a) => a.filter((x) => x.up).length === 3, 15_000);
    const t0 = Date.now();
    await stack.stopAgent("node-3");
    await eventually(agents, (a) => a.find((x) => x.node === "node-3")?.up === false, 30_000);
    const downAfter = Date.now() - t0;
    expect(downAfter).toBeLessThan(30_000);
    stack.startAgent("node-3");
    await eventually(agents, (a) => a.find((x) => x.node === "node-3")?.up === true, 20_000);
  });

  it("keeps history, open incidents and agents across a hub restart", async () => {
    const vip0 = stack.lab.vips[0] ?? "";
    // Let the current minute reach the database (the hub writes every second).
    await passed(stack, "write");
    const before = (await api<ApiIpDetail>(`/ips/${vip0}`)).body;
    expect(before.timeline.length).toBeGreaterThan(0);
    const openBefore = (await api<Incident[]>("/incidents?state=open")).body;
    await stack.restartHub();
    // Right after the restart, before any agent is back, the picture is already there.
    const after = (await api<ApiIpDetail>(`/ips/${vip0}`)).body;
    expect(after.requests).toBeGreaterThanOrEqual(before.requests);
    const firstMinute = before.timeline[0]?.minute;
    expect(after.timeline.some((p) => p.minute === firstMinute)).toBe(true);
    expect(after.findings.map((f) => f.incidentId).sort()).toEqual(before.findings.map((f) => f.incidentId).sort());
    expect((await agents()).map((a) => a.node)).toEqual(["node-1", "node-2", "node-3"]);
    // The agents reconnect, the findings go on, and no incident was opened twice.
    await eventually(agents, (a) => a.filter((x) => x.up).length === 3, 20_000);
    await eventually(
      async () => (await api<ApiIpDetail>(`/ips/${vip0}`)).body.requests,
      (n) => n > after.requests,
      20_000,
    );
    await passed(stack, "judge");
    const openAfter = (await api<Incident[]>("/incidents?state=open")).body;
    for (const i of openBefore) expect(openAfter.filter((x) => x.ip === i.ip).map((x) => x.id)).toEqual([i.id]);
  });

  it("rejects unauthenticated, malformed and oversized agent messages and carries on", async () => {
    const wsUrl = `ws://127.0.0.1:${stack.port}/agent`;
    const bad = new WebSocket(wsUrl, { headers: { authorization: "Bearer wrong-token-0123456789" } });
    const [, res] = (await once(bad, "unexpected-response")) as [unknown, { statusCode: number }];
    expect(res.statusCode).toBe(401);

    const garbage = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${stack.token}` } });
    await once(garbage, "open");
    garbage.send("{not json");
    const [code1] = (await once(garbage, "close")) as [number];
    expect(code1).toBe(1008);

    const big = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${stack.token}` } });
    await once(big, "open");
    big.send("x".repeat(2 * 1024 * 1024));
    const [code2] = (await once(big, "close")) as [number];
    expect(code2).toBe(1009);

    const vip0 = stack.lab.vips[0] ?? "";
    const r0 = (await api<ApiIpDetail>(`/ips/${vip0}`)).body.requests;
    await eventually(
      async () => (await api<ApiIpDetail>(`/ips/${vip0}`)).body.requests,
      (n) => n >= r0 + 3,
      10_000,
    );
    expect((await agents()).every((a) => a.up)).toBe(true);
  });
  it("names a host that is no node answering for a LoadBalancer IP by its vendor, as an address conflict", async () => {
    const vip1 = stack.lab.vips[1] ?? "";
    const STRANGER = "00:1b:21:00:00:2a";
    await eventually(agents, (a) => a.filter((x) => x.up).length === 3, 30_000);
    await stack.lab.addStranger(STRANGER, [vip1]);
    // Its answers to the client are unicast, past every agent: a node asking for the IP hears it (a probe asks for a
    // minute); it is called a stranger once it has kept answering for STRANGER_GRACE_MS.
    const op = await signIn(stack, "operator");
    expect((await op.mutate("actions.probe", { ip: vip1 })).status).toBe(200);
    const rows = await eventually(ips, (r) => r.find((x) => x.ip === vip1)?.responders.some((x) => x.mac === STRANGER) === true, 30_000);
    expect(rows.find((x) => x.ip === vip1)?.responders.find((x) => x.mac === STRANGER)).toMatchObject({
      node: null,
      vendor: "Intel Corporate",
    });
    // The node MACs are locally administered (the lab's veths): no vendor stands behind them.
    expect(rows.find((x) => x.ip === vip1)?.responders.filter((x) => x.node !== null && x.vendor !== null)).toEqual([]);
    const open = await eventually(
      async () => (await api<Incident[]>(`/incidents?state=open&ip=${vip1}`)).body,
      (list) => findingsIn(list).some((f) => f.type === "address-conflict"),
      STRANGER_GRACE_MS + 30_000,
    );
    expect(open).toHaveLength(1);
    const conflict = findingsIn(open).find((f) => f.type === "address-conflict");
    expect(conflict?.macs).toEqual([STRANGER]);
    expect(conflict?.detail).toContain(`${STRANGER} (Intel Corporate), not a node of the cluster`);
  }, 90_000);
});
