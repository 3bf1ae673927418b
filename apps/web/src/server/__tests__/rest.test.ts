import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { Hub } from "../hub/hub.js";
import { ipJson } from "../hub/views.js";
import { STALE_MS } from "../hub/fleet.js";
import { createHubServer } from "../http.js";
import { ASKER, answered, hello, testAuth } from "./helpers.js";
import { silentLogger } from "@whohas/core";
import WebSocket from "ws";

const AGENT = "agent-token-0123456789";
const VIEWER = "viewer-token-0123456789";
const VIP = "192.0.2.200";

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function start(viewerToken: string | null, basePath = "") {
  let now = 10_000;
  const hub = await Hub.open({ clock: () => now });
  const server = createHubServer({
    hub,
    agentToken: AGENT,
    auth: await testAuth(hub, { viewerToken }),
    basePath,
    logger: silentLogger,
    pages: (q, res) => res.writeHead(404).end(`next: ${q.url ?? ""}`),
  }).createServer();
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
  const get = async (path: string, token: string | null = VIEWER) => {
    const res = await fetch(base + path, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  return { hub, get, advance: (ms: number) => (now += ms), origin: base.replace(/\/api\/v1$/, "") };
}

describe("read API", () => {
  it("serves IPs with responders and findings, one IP with its timeline and incidents, nodes and incidents", async () => {
    const { hub, get } = await start(VIEWER);
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    hub.connect(hello("node-b", "02:00:5e:00:00:0b"));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, "02:00:5e:00:00:0a"));
    hub.observe("node-b", answered(VIP, 9000, "02:00:5e:00:00:0b"));
    await new Promise((r) => setImmediate(r));
    await hub.flush(true);

    const ips = await get("/ips");
    expect(ips.status).toBe(200);
    expect(ips.body).toEqual([
      expect.objectContaining({
        ip: VIP,
        state: "multi-responder",
        services: [],
        expectedOwner: null,
        responders: [
          expect.objectContaining({ mac: "02:00:5e:00:00:0a", node: "node-a" }),
          expect.objectContaining({ mac: "02:00:5e:00:00:0b", node: "node-b" }),
        ],
        findings: [expect.objectContaining({ type: "multi-responder", incidentId: 1 })],
      }),
    ]);
    const one = (await get(`/ips/${VIP}`)).body as { timeline: unknown[]; incidents: unknown[] };
    expect(one.timeline).toEqual(expect.arrayContaining([expect.objectContaining({ mac: "02:00:5e:00:00:0b", kind: "reply", count: 1 })]));
    expect(one.incidents).toEqual([expect.objectContaining({ id: 1, type: "multi-responder", resolvedAt: null })]);
    expect((await get("/nodes")).body).toEqual([
      expect.objectContaining({ node: "node-a", agent: expect.objectContaining({ up: true }) }),
      expect.objectContaining({ node: "node-b" }),
    ]);
    expect((await get("/incidents?state=open")).body).toHaveLength(1);
    expect((await get("/incidents?state=resolved")).body).toHaveLength(0);
  });

  it("names the cluster of every entry, and serves another cluster of the fleet as its hub published it", async () => {
    const { hub, get } = await start(VIEWER);
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, "02:00:5e:00:00:0a"));
    await new Promise((r) => setImmediate(r));
    expect((await get("/ips")).body).toEqual([expect.objectContaining({ cluster: "default", ip: VIP, state: "single" })]);
    expect((await get("/ips?cluster=default")).body).toEqual((await get("/ips")).body);
    expect((await get("/ips?cluster=")).body).toEqual((await get("/ips")).body);
    expect((await get(`/ips/${VIP}`)).body).toMatchObject({ cluster: "default", ip: VIP });
    expect((await get("/nodes")).body).toEqual([expect.objectContaining({ cluster: "default", node: "node-a" })]);
    expect((await get("/cluster")).body).toMatchObject({ name: "default" });

    // What the hub of cluster west published to the shared database: the same address, with two responders there.
    const row = hub.listSnapshot().rows[0];
    if (row === undefined) throw new Error("no row");
    const responders = [
      { mac: "02:00:5e:00:00:1a", node: "west-a", vendor: null, answering: true, lastGratuitous: null },
      { mac: "02:00:5e:00:00:1b", node: "west-b", vendor: null, answering: true, lastGratuitous: null },
    ];
    await hub.store.fleet.writeIps("west", [{ key: VIP, json: JSON.stringify({ ...row, state: "multi-responder", responders }) }], []);
    const summary = {
      ips: 1,
      states: { "multi-responder": 1 },
      openIncidents: 1,
      agents: { up: 2, total: 2 },
      kubernetes: "off",
      strictArp: "exposed",
    };
    await hub.store.fleet.report("west", "https://west.example", summary);
    const west = (await get("/ips?cluster=west")).body;
    expect(west).toEqual([expect.objectContaining({ cluster: "west", ip: VIP, key: VIP, state: "multi-responder", reporting: true })]);
    // When west's hub published, by the database's clock, in this hub's time (the hub's clock here stands at 10 s).
    const { asOf } = (west as { asOf: number }[])[0] ?? { asOf: 0 };
    expect(asOf).toBeGreaterThan(9000);
    expect(asOf).toBeLessThanOrEqual(10_000);
    expect((west as { responders: { node: string }[] }[])[0]?.responders.map((r) => r.node)).toEqual(["west-a", "west-b"]);
    expect(((await get("/clusters")).body as { name: string; self: boolean }[]).map((c) => [c.name, c.self])).toEqual([
      ["default", true],
      ["west", false],
    ]);
    // Its hub silent past STALE_MS: the entries say so.
    await hub.store.db.run("UPDATE fleet_clusters SET reported_at = reported_at - ?", [STALE_MS + 1000]);
    expect((await get("/ips?cluster=west")).body).toEqual([expect.objectContaining({ cluster: "west", reporting: false })]);
    const none = await get("/ips?cluster=north");
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ error: 'no cluster "north" reports to this hub\'s database (clusters: default, west)' });
  });

  it("serves a list of many IPs in chunks, byte for byte what one JSON text of them all would be", async () => {
    const { hub, origin } = await start(VIEWER);
    const body = async (method = "GET") => {
      const res = await fetch(`${origin}/api/v1/ips`, { method, headers: { authorization: `Bearer ${VIEWER}` } });
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      return res.text();
    };
    expect(await body()).toBe("[]\n");
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    hub.tick();
    // Past two chunks, with one more to end on a short one.
    const ips = Array.from({ length: 600 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
    for (const ip of ips) hub.observe("node-a", answered(ip, 9000, "02:00:5e:00:00:0a"));
    await new Promise((r) => setImmediate(r));
    await hub.flush(true);
    const text = await body();
    expect(text).toBe(
      JSON.stringify(
        hub.ips().map((v) => ({ cluster: "default", ...ipJson(v) })),
        null,
        1,
      ) + "\n",
    );
    expect((JSON.parse(text) as { ip: string }[]).map((e) => e.ip)).toEqual(ips);
    expect(await body("HEAD")).toBe("");
  });

  it("serves each asker of an IP with its first-answer changes", async () => {
    const { hub, get, advance } = await start(VIEWER);
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    hub.connect(hello("node-b", "02:00:5e:00:00:0b"));
    hub.tick();
    // Both nodes answer each request; the first answer is node-a's, node-b's, node-a's: two changes.
    for (const [t, first] of [
      [9000, "node-a"],
      [9200, "node-b"],
      [9400, "node-a"],
    ] as const) {
      hub.observe("node-a", answered(VIP, t, "02:00:5e:00:00:0a", null, first === "node-a" ? 0.2 : 0.6));
      hub.observe("node-b", answered(VIP, t, "02:00:5e:00:00:0b", null, first === "node-b" ? 0.2 : 0.6));
    }
    await new Promise((r) => setImmediate(r));
    advance(3000);
    hub.tick();
    await hub.flush(true);
    const one = (await get(`/ips/${VIP}`)).body;
    expect(one).toMatchObject({
      askers: [{ mac: ASKER.mac, ip: ASKER.ip, requests: 3, firstAnswerChanges: 2, lastChange: 9400 }],
      firstAnswerChanges: 2,
    });
  });

  it("keeps an address seen on two VLANs apart: ip, vlan, family and key per row, each VLAN's page and incidents", async () => {
    const { hub, get } = await start(VIEWER);
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    hub.connect(hello("node-b", "02:00:5e:00:00:0b"));
    hub.tick();
    const v6 = "2001:db8::c8";
    hub.observe("node-a", answered(VIP, 9000, "02:00:5e:00:00:0a", 30));
    hub.observe("node-a", answered(VIP, 9000, "02:00:5e:00:00:0a", 40));
    hub.observe("node-b", answered(VIP, 9000, "02:00:5e:00:00:0b", 40));
    hub.observe("node-a", answered(v6, 9000, "02:00:5e:00:00:0a"));
    hub.observe("node-b", answered(v6, 9000, "02:00:5e:00:00:0b"));
    await new Promise((r) => setImmediate(r));
    await hub.flush(true);
    const rows = (await get("/ips")).body as { ip: string; vlan: number | null; family: number; key: string; state: string }[];
    expect(rows.map((r) => [r.ip, r.vlan, r.family, r.key, r.state])).toEqual([
      [VIP, 30, 4, `${VIP}@30`, "single"],
      [VIP, 40, 4, `${VIP}@40`, "multi-responder"],
      [v6, null, 6, v6, "multi-responder"],
    ]);
    const forty = await get(`/ips/${encodeURIComponent(`${VIP}@40`)}`);
    expect(forty.body).toMatchObject({
      ip: VIP,
      vlan: 40,
      incidents: [{ ip: VIP, vlan: 40, family: 4, key: `${VIP}@40`, type: "multi-responder" }],
    });
    // The address alone names the untagged one, which nobody saw here; a VLAN nobody saw it on is unknown too (even
    // for a Service's address); a VLAN out of range is a bad request.
    expect((await get(`/ips/${VIP}@123`)).status).toBe(404);
    expect((await get(`/ips/${VIP}`)).status).toBe(404);
    expect((await get(`/ips/${VIP}@4095`)).status).toBe(400);
    // IPv6 as written anywhere is found as RFC 5952 writes it.
    expect((await get(`/ips/${encodeURIComponent("2001:0db8:0:0::00c8")}`)).body).toMatchObject({ ip: v6, vlan: null, family: 6 });
    expect((await get(`/incidents?ip=${encodeURIComponent(`${VIP}@40`)}`)).body).toEqual([
      expect.objectContaining({ vlan: 40, family: 4 }),
    ]);
    expect((await get(`/incidents?ip=${encodeURIComponent(v6)}`)).body).toEqual([
      expect.objectContaining({ ip: v6, vlan: null, family: 6, key: v6, type: "multi-responder" }),
    ]);
  });

  it("answers 401 without or with a wrong token, 404 and 400 with what to do, 405 for writes", async () => {
    const { get } = await start(VIEWER);
    expect((await get("/ips", null)).status).toBe(401);
    expect((await get("/ips", "wrong-token-0123456789")).status).toBe(401);
    expect(await get("/ips/192.0.2.77")).toMatchObject({ status: 404, body: { error: expect.stringContaining("192.0.2.77") } });
    expect(await get("/ips/not-an-ip")).toMatchObject({ status: 400 });
    expect(await get("/incidents?state=maybe")).toMatchObject({ status: 400 });
    expect(await get("/nope")).toMatchObject({ status: 404, body: { error: expect.stringContaining("/api/v1/ips") } });
  });

  it("says how to get a token when none is configured", async () => {
    const { get } = await start(null);
    expect(await get("/ips")).toMatchObject({ status: 401, body: { error: expect.stringContaining("api.viewerTokenFile") } });
  });

  it("answers under the dashboard's base path too, and leaves the rest of the prefix to Next", async () => {
    const { hub, origin } = await start(VIEWER, "/whohas");
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    const auth = { authorization: `Bearer ${VIEWER}` };
    expect((await fetch(`${origin}/whohas/api/v1/nodes`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${origin}/api/v1/nodes`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${origin}/whohas/healthz`)).status).toBe(200);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    const trpc = (await (await fetch(`${origin}/whohas/api/trpc/agents.list`, { headers: auth })).json()) as {
      result: { data: { node: string }[] };
    };
    expect(trpc.result.data.map((a) => a.node)).toEqual(["node-a"]);
    // A page of the dashboard keeps its prefix for Next; without a sign-in it sends the browser to /login first.
    expect(await (await fetch(`${origin}/whohas/ips`, { headers: auth })).text()).toBe("next: /whohas/ips");
    const anon = await fetch(`${origin}/whohas/ips?q=1`, { redirect: "manual" });
    expect(anon.status).toBe(303);
    expect(anon.headers.get("location")).toBe(`/whohas/login?next=${encodeURIComponent("/whohas/ips?q=1")}`);
    const ws = new WebSocket(`${origin.replace("http", "ws")}/whohas/agent`, { headers: { authorization: `Bearer ${AGENT}` } });
    await once(ws, "open");
    ws.close();
  });
});
