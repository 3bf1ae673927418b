// The hub's side of evidence over real WebSockets: agents here answer evidence-requests from frame lists they are
// given (the real agent's ring is tested in the agent and in the lab), so each answer's paging, cut and silence is
// chosen by the test.
import { afterEach, describe, expect, it } from "vitest";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { CaptureReader, WIRE_VERSION, newArpReply, newArpRequest, parseHubMessage, silentLogger, type EvidenceFrame } from "@whohas/core";
import { Hub } from "../hub/hub.js";
import { createHubServer } from "../http.js";
import { openSqlite } from "../store/db.js";
import { Store } from "../store/store.js";
import { answered, hello, testAuth } from "./helpers.js";

const AGENT = "agent-token-0123456789";
const VIEWER = "viewer-token-0123456789";
const VIP = "192.0.2.200";
const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const MAC: Record<string, string> = { "node-a": "02:00:5e:00:00:0a", "node-b": "02:00:5e:00:00:0b", "node-c": "02:00:5e:00:00:0c" };
const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
const REQUEST = b64(newArpRequest(CLIENT.mac, CLIENT.ip, VIP));
const replyOf = (node: string) => b64(newArpReply(MAC[node] ?? "", VIP, CLIENT.mac, CLIENT.ip));

/** framesOf: `n` requests a millisecond apart from `t0`, each followed by the node's reply in the same millisecond. */
function framesOf(node: string, t0: number, n: number): EvidenceFrame[] {
  return Array.from({ length: n }, (_, i) => [
    { tNs: String(BigInt(t0 + i) * 1_000_000n + 100n), iface: "eth0", vlan: null, data: REQUEST },
    { tNs: String(BigInt(t0 + i) * 1_000_000n + 900n), iface: "eth0", vlan: null, data: replyOf(node) },
  ]).flat();
}

interface FakeAgent {
  readonly ws: WebSocket;
  readonly asked: { fromMs: number; toMs: number; maxBytes: number }[];
}

/**
 * agent connects as `node` and answers each evidence-request from `held`: the frames in the window, cut after
 * `perAnswer` of them (truncated), or not at all when `silent`.
 */
async function agent(
  url: string,
  node: string,
  held: EvidenceFrame[],
  o: { perAnswer?: number; silent?: boolean } = {},
): Promise<FakeAgent> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${AGENT}` } });
  const asked: FakeAgent["asked"] = [];
  ws.on("message", (data: Buffer) => {
    const m = parseHubMessage(data.toString());
    if (!m.ok || m.value.type !== "evidence-request") return;
    const r = m.value;
    asked.push({ fromMs: r.fromMs, toMs: r.toMs, maxBytes: r.maxBytes });
    if (o.silent === true) return;
    const inWindow = held.filter((f) => {
      const ms = Number(BigInt(f.tNs) / 1_000_000n);
      return ms >= r.fromMs && ms <= r.toMs;
    });
    const frames = inWindow.slice(0, o.perAnswer ?? inWindow.length);
    ws.send(
      JSON.stringify({ v: WIRE_VERSION, type: "evidence", id: r.id, frames, truncated: frames.length < inWindow.length, heldFromMs: null }),
    );
  });
  await once(ws, "open");
  ws.send(JSON.stringify(hello(node, MAC[node] ?? "")));
  await once(ws, "message"); // welcome
  return { ws, asked };
}

const servers: Server[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function start(o: { store?: Store; maxFileBytes?: number } = {}) {
  const now = Date.now();
  const hub = new Hub({ clock: Date.now, store: o.store });
  const hs = createHubServer({
    hub,
    agentToken: AGENT,
    auth: testAuth(hub, { viewerToken: VIEWER }),
    logger: silentLogger,
    pages: (_q, res) => res.writeHead(404).end(),
    evidenceMaxFileBytes: o.maxFileBytes,
    evidenceAnswerTimeoutMs: 300,
  });
  const server = hs.createServer();
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}/api/v1`;
  const get = async (path: string) => {
    const res = await fetch(base + path, { headers: { authorization: `Bearer ${VIEWER}` } });
    const body = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, body, json: () => JSON.parse(Buffer.from(body).toString()) as { error: string } };
  };
  const connect = async (node: string, held: EvidenceFrame[], opts?: { perAnswer?: number; silent?: boolean }) => {
    const a = await agent(`ws://127.0.0.1:${port}/agent`, node, held, opts);
    sockets.push(a.ws);
    return a;
  };
  return { hub, hs, get, connect, now };
}

/** read returns the frames of a pcapng file: interface index, time in ns, and the bytes in base64. */
function read(file: Uint8Array) {
  const got: { iface: number; tNs: bigint; data: string }[] = [];
  const reader: CaptureReader = new CaptureReader((b, s, e, _l, _t, iface) =>
    got.push({ iface, tNs: reader.timestampNs(), data: b64(b.subarray(s, e)) }),
  );
  reader.push(file);
  reader.end();
  return got;
}
const text = (file: Uint8Array) => Buffer.from(file).toString("utf8");

describe("an IP's capture", () => {
  it("merges every connected agent's frames, pages through cut answers, and names the node that is down", async () => {
    const { hub, get, connect, now } = await start();
    const t0 = now - 20_000;
    // node-a's answers carry 7 frames at a time: the hub asks again from the last frame's millisecond.
    const a = await connect("node-a", framesOf("node-a", t0, 20), { perAnswer: 7 });
    await connect("node-b", framesOf("node-b", t0, 20));
    const c = await connect("node-c", []);
    c.ws.close();
    await new Promise((r) => setTimeout(r, 100));
    expect(hub.nodes().find((n) => n.node === "node-c")?.connected).toBe(false);

    const res = await get(`/ips/${VIP}/capture?since=${t0 - 1000}&until=${now}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/vnd.tcpdump.pcap");
    expect(res.headers.get("content-disposition")).toMatch(
      /^attachment; filename="whohas-192\.0\.2\.200-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.pcapng"$/,
    );
    const frames = read(res.body);
    // Every frame once, in time order, node-a's on interface 0 and node-b's on interface 1.
    expect(frames).toHaveLength(80);
    expect(frames.filter((f) => f.iface === 0)).toHaveLength(40);
    expect(frames.map((f) => f.tNs)).toEqual([...frames.map((f) => f.tNs)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    expect(new Set(frames.map((f) => `${f.iface}|${f.tNs}`)).size).toBe(80);
    expect(a.asked.length).toBeGreaterThan(2);
    expect(text(res.body)).toMatch(/missing: node-c: agent down since \d{4}-/);
    expect(text(res.body)).toContain("frames from: node-a (40 frames), node-b (40 frames)");
    expect(hub.store.audit.list(1)[0]).toMatchObject({
      actor: "viewer-token",
      action: "capture.download",
      outcome: "ok",
      input: { ip: VIP, since: t0 - 1000, until: now },
    });
  });

  it("names an agent that does not answer, and serves the others' frames", async () => {
    const { get, connect, now } = await start();
    await connect("node-a", framesOf("node-a", now - 5000, 3));
    await connect("node-b", framesOf("node-b", now - 5000, 3), { silent: true });
    const res = await get(`/ips/${VIP}/capture`);
    expect(res.status).toBe(200);
    expect(read(res.body)).toHaveLength(6);
    expect(text(res.body)).toContain("missing: node-b: no answer within 0.3 s");
  });

  it("refuses a window whose frames would pass evidence.maxFileBytes, with the reason, and audits the refusal", async () => {
    const { hub, get, connect, now } = await start({ maxFileBytes: 65_536 });
    await connect("node-a", framesOf("node-a", now - 10_000, 2000));
    const res = await get(`/ips/${VIP}/capture?since=${now - 11_000}`);
    expect(res.status).toBe(413);
    expect(res.json().error).toMatch(/larger than evidence\.maxFileBytes \(65536 bytes\): ask for a shorter window/);
    expect(hub.store.audit.list(1)[0]).toMatchObject({ action: "capture.download", outcome: "refused" });
  });

  it("says what is wrong with a bad address, time or window", async () => {
    const { get } = await start();
    expect((await get("/ips/not-an-ip/capture")).json().error).toMatch(/is not an IP address/);
    expect((await get(`/ips/${VIP}/capture?since=yesterday`)).status).toBe(400);
    expect((await get(`/ips/${VIP}/capture?since=yesterday`)).json().error).toMatch(/RFC 3339/);
    expect((await get(`/ips/${VIP}/capture?since=2026-12-01T12:00:00Z&until=2026-12-01T11:00:00Z`)).json().error).toBe(
      "since is after until",
    );
    expect((await get(`/ips/${VIP}/capture?since=2026-12-01T00:00:00Z&until=2026-12-01T12:00:00Z`)).json().error).toMatch(
      /longer than 60 minutes/,
    );
  });
});

describe("an incident's capture", () => {
  it("is taken from the agents, stored with the incident, and served from the store after a restart", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "whohas-evidence-")), "hub.db");
    const first = await start({ store: new Store(openSqlite(path), Date.now()) });
    const t = first.now - 2000;
    await first.connect("node-a", framesOf("node-a", t - 100, 50));
    await first.connect("node-b", framesOf("node-b", t - 100, 50));
    first.hub.tick();
    first.hub.observe("node-a", answered(VIP, t, MAC["node-a"] ?? ""));
    first.hub.observe("node-b", answered(VIP, t, MAC["node-b"] ?? ""));
    await new Promise((r) => setImmediate(r));
    const [inc] = first.hub.incidents({ ip: VIP });
    expect(inc?.type).toBe("multi-responder");
    const id = inc?.id ?? 0;
    const open = await first.get(`/incidents/${id}/capture`);
    expect(open.status).toBe(200);
    expect(open.headers.get("content-disposition")).toMatch(
      new RegExp(`filename="whohas-192\\.0\\.2\\.200-\\d{8}T\\d{6}Z-incident-${id}\\.pcapng"`),
    );
    expect(read(open.body)).toHaveLength(200);
    expect(text(open.body)).toContain(`whohas evidence: multi-responder for ${VIP} (incident ${id}, open)`);
    expect(text(open.body)).toContain("answering when it opened: 02:00:5e:00:00:0a (node-a), 02:00:5e:00:00:0b (node-b)");
    expect(first.hub.store.evidence.get(id)?.nodes.map((n) => [n.node, n.frames.length])).toEqual([
      ["node-a", 100],
      ["node-b", 100],
    ]);
    first.hub.store.close();

    // A new hub on the same database, no agent connected: the stored frames, with the nodes named missing now
    // keeping what they sent then.
    const second = await start({ store: new Store(openSqlite(path), Date.now()) });
    const again = await second.get(`/incidents/${id}/capture`);
    expect(again.status).toBe(200);
    expect(read(again.body)).toEqual(read(open.body));
  });

  it("says why there is no file for an unknown incident or a bad id", async () => {
    const { get } = await start();
    expect((await get("/incidents/999/capture")).status).toBe(404);
    expect((await get("/incidents/999/capture")).json().error).toBe("no incident 999");
    expect((await get("/incidents/x1/capture")).json().error).toMatch(/not an incident id/);
  });
});
