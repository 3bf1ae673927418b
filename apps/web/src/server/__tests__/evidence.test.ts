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
import {
  CaptureReader,
  WIRE_VERSION,
  newArpReply,
  newArpRequest,
  parseHubMessage,
  silentLogger,
  tagFrame,
  type EvidenceFrame,
} from "@whohas/core";
import { Hub } from "../hub/hub.js";
import { createHubServer } from "../http.js";
import { openSqlite } from "../store/sqlite.js";
import { Store } from "../store/store.js";
import { answered, hello, testAuth, until } from "./helpers.js";
import { Evidence } from "../evidence/evidence.js";

const AGENT = "agent-token-0123456789";
const VIEWER = "viewer-token-0123456789";
const VIP = "192.0.2.200";
const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const MAC: Record<string, string> = {
  "node-a": "02:00:5e:00:00:0a",
  "node-b": "02:00:5e:00:00:0b",
  "node-c": "02:00:5e:00:00:0c",
  "node-d": "02:00:5e:00:00:0d",
};
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
  readonly asked: { ip: string; vlan: number | null; fromMs: number; toMs: number; maxBytes: number }[];
}

interface AgentBehaviour {
  /** Frames per answer at most; the rest wait for the next request (truncated). */
  readonly perAnswer?: number;
  /** Never answer. */
  readonly silent?: boolean;
  /** Answer with these, whatever was asked (a broken or hostile agent). */
  readonly answer?: (asked: { fromMs: number; toMs: number }) => { frames: EvidenceFrame[]; truncated: boolean; heldFromMs: number | null };
}

/**
 * agent connects as `node` and answers each evidence-request from `held` as an agent does: the frames in the window
 * and VLAN, up to maxBytes, cut after `perAnswer` of them (truncated); or not at all, or with what `answer` makes.
 */
async function agent(url: string, node: string, held: EvidenceFrame[], o: AgentBehaviour = {}): Promise<FakeAgent> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${AGENT}` } });
  const asked: FakeAgent["asked"] = [];
  ws.on("message", (data: Buffer) => {
    const m = parseHubMessage(data.toString());
    if (!m.ok || m.value.type !== "evidence-request") return;
    const r = m.value;
    asked.push({ ip: r.ip, vlan: r.vlan, fromMs: r.fromMs, toMs: r.toMs, maxBytes: r.maxBytes });
    if (o.silent === true) return;
    if (o.answer !== undefined) return ws.send(JSON.stringify({ v: WIRE_VERSION, type: "evidence", id: r.id, ...o.answer(r) }));
    const inWindow = held.filter((f) => {
      const ms = Number(BigInt(f.tNs) / 1_000_000n);
      return ms >= r.fromMs && ms <= r.toMs && f.vlan === r.vlan;
    });
    const frames: EvidenceFrame[] = [];
    let bytes = 0;
    for (const f of inWindow.slice(0, o.perAnswer ?? inWindow.length)) {
      bytes += Buffer.from(f.data, "base64").length;
      if (bytes > r.maxBytes) break;
      frames.push(f);
    }
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
  const hub = await Hub.open({ clock: Date.now, store: o.store });
  const hs = createHubServer({
    hub,
    agentToken: AGENT,
    auth: await testAuth(hub, { viewerToken: VIEWER }),
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
  const connect = async (node: string, held: EvidenceFrame[], opts?: AgentBehaviour) => {
    const a = await agent(`ws://127.0.0.1:${port}/agent`, node, held, opts);
    sockets.push(a.ws);
    return a;
  };
  const head = async (path: string) =>
    (await fetch(base + path, { method: "HEAD", headers: { authorization: `Bearer ${VIEWER}` } })).status;
  return { hub, hs, get, head, connect, now };
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

/** untilAsync waits, polling every 20 ms, for `ok` (which asks the store) to hold; it throws after `ms`. */
async function untilAsync(ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error("not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("an IP's capture", () => {
  it("merges every connected agent's frames, pages through cut answers, and names the node that is down", async () => {
    const { hub, get, connect, now } = await start();
    const t0 = now - 20_000;
    // node-a's answers carry 7 frames at a time: the hub asks again from the last frame's millisecond.
    const a = await connect("node-a", framesOf("node-a", t0, 20), { perAnswer: 7 });
    await connect("node-b", framesOf("node-b", t0, 20));
    const c = await connect("node-c", []);
    c.ws.close();
    await until(() => hub.nodes().find((n) => n.node === "node-c")?.connected === false);

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
    // 40 frames, 7 an answer: pages from the last frame's millisecond on, each asking for this IP, untagged.
    expect(a.asked.length).toBeGreaterThan(2);
    for (const q of a.asked) expect(q).toMatchObject({ ip: VIP, vlan: null, toMs: now });
    expect(a.asked.map((q) => q.fromMs)).toEqual([...a.asked.map((q) => q.fromMs)].sort((x, y) => x - y));
    expect(text(res.body)).toMatch(/missing: node-c: agent down since \d{4}-/);
    expect(text(res.body)).toContain("frames from: node-a (40 frames), node-b (40 frames)");
    expect((await hub.store.audit.list(1))[0]).toMatchObject({
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
    expect((await hub.store.audit.list(1))[0]).toMatchObject({ action: "capture.download", outcome: "refused" });
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

describe("what an agent sends is checked, not trusted", () => {
  it("keeps only frames about the IP, in its VLAN and window, within maxBytes; a nonsense time does not break the file", async () => {
    const { hub, get, connect, now } = await start({ maxFileBytes: 65_536 });
    const good = framesOf("node-a", now - 3000, 5);
    const other = b64(newArpReply("02:00:5e:00:00:0a", "192.0.2.99", CLIENT.mac, CLIENT.ip));
    const lies: EvidenceFrame[] = [
      { tNs: "1000000", iface: "eth0", vlan: null, data: REQUEST }, // 1970
      { tNs: String(BigInt(now - 2000) * 1_000_000n), iface: "eth0", vlan: 99, data: REQUEST }, // another VLAN
      { tNs: String(BigInt(now - 2000) * 1_000_000n), iface: "eth0", vlan: null, data: other }, // another IP
      ...Array.from({ length: 3000 }, (_, i) => ({
        tNs: String(BigInt(now - 2000) * 1_000_000n + BigInt(i)),
        iface: "eth9",
        vlan: null,
        data: REQUEST,
      })),
    ];
    await connect("node-a", [], { answer: () => ({ frames: [...good, ...lies], truncated: false, heldFromMs: 9e15 }) });
    const res = await get(`/ips/${VIP}/capture?since=${now - 10_000}&until=${now}`);
    expect(res.status).toBe(200);
    const frames = read(res.body);
    // The ten true frames, and as many of the 3,000 extra requests as fit the 32 KiB asked for: none of the rest.
    expect(frames.slice(0, 10).map((f) => f.data)).toEqual(good.map((f) => f.data));
    expect(frames.every((f) => f.data === REQUEST || f.data === replyOf("node-a"))).toBe(true);
    expect(frames).toHaveLength(Math.floor(32_768 / 60));
    expect(text(res.body)).not.toContain("partial:");
    expect((await hub.store.audit.list(1))[0]).toMatchObject({ outcome: "ok" });
  });

  it("asks a node that keeps saying there is more only while its pages move on in time", async () => {
    const { get, connect, now } = await start();
    const same = framesOf("node-a", now - 2000, 1);
    const a = await connect("node-a", [], { answer: () => ({ frames: same, truncated: true, heldFromMs: null }) });
    const res = await get(`/ips/${VIP}/capture?since=${now - 3000}&until=${now}`);
    expect(res.status).toBe(200);
    expect(a.asked).toHaveLength(2);
    expect(text(res.body)).toContain("cut: node-a held more frames than the file's bound");
  });

  it("shares the byte budget between the nodes: four full rings make a 413, not a file past the bound", async () => {
    const { get, connect, now } = await start({ maxFileBytes: 65_536 });
    for (const n of ["node-a", "node-b", "node-c"]) await connect(n, framesOf(n, now - 10_000, 100));
    const d = await connect("node-d", framesOf("node-a", now - 10_000, 100));
    const res = await get(`/ips/${VIP}/capture?since=${now - 11_000}&until=${now}`);
    expect(res.status).toBe(413);
    // Each node was asked for its quarter of the budget (half of the file's bound) at most.
    expect(Math.max(...d.asked.map((q) => q.maxBytes))).toBe(65_536 / 2 / 4);
  });

  it("refuses a third capture one user builds at once (429), and HEAD (405)", async () => {
    const { get, head, connect } = await start();
    await connect("node-a", [], { silent: true });
    const three = await Promise.all([1, 2, 3].map(() => get(`/ips/${VIP}/capture`)));
    expect(three.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    expect(three.find((r) => r.status === 429)?.json().error).toMatch(/2 of your captures are being built/);
    expect(await head(`/ips/${VIP}/capture`)).toBe(405);
  });

  it("asks for an address seen in a VLAN by its address and VLAN", async () => {
    const { get, connect, now } = await start();
    const tagged = framesOf("node-a", now - 2000, 2).map((f) => ({
      ...f,
      vlan: 30,
      data: b64(tagFrame(Buffer.from(f.data, "base64"), 30)),
    }));
    const a = await connect("node-a", [...tagged, ...framesOf("node-a", now - 2000, 2)]);
    const res = await get(`/ips/${VIP}@30/capture?last=10s`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toContain(`whohas-${VIP}_vlan30-`);
    expect(a.asked[0]).toMatchObject({ ip: VIP, vlan: 30 });
    expect(read(res.body).map((f) => f.data)).toEqual(tagged.map((f) => f.data));
  });
});

describe("snapshots taken by themselves", () => {
  it("stores an incident's frames once its window has passed, and after a restart waits for an agent to answer", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "whohas-evidence-")), "hub.db");
    const first = await start({ store: await Store.open(openSqlite(path), Date.now()) });
    const t = first.now - 1000;
    first.hub.connect(hello("node-a", MAC["node-a"] ?? ""));
    first.hub.connect(hello("node-b", MAC["node-b"] ?? ""));
    first.hub.tick();
    first.hub.observe("node-a", answered(VIP, t, MAC["node-a"] ?? ""));
    first.hub.observe("node-b", answered(VIP, t, MAC["node-b"] ?? ""));
    await new Promise((r) => setImmediate(r));
    const id = (await first.hub.incidents({ ip: VIP }))[0]?.id ?? 0;
    expect(id).toBeGreaterThan(0);
    await first.hub.store.close();

    // The hub comes back; no agent is connected yet: the snapshot waits instead of storing "all missing".
    const second = await start({ store: await Store.open(openSqlite(path), Date.now()) });
    const evidence = new Evidence({
      hub: second.hub,
      asker: second.hs.gateway,
      logger: silentLogger,
      windowAfterMs: 500,
      reconnectGraceMs: 50,
      retryMs: 300,
    });
    evidence.start();
    try {
      await new Promise((r) => setTimeout(r, 200));
      expect(await second.hub.store.evidence.summary(id)).toBeNull();
      expect(evidence.waiting).toBe(1);
      await second.connect("node-a", framesOf("node-a", t - 1000, 10));
      await untilAsync(async () => (await second.hub.store.evidence.summary(id)) !== null, 5000);
      expect((await second.hub.store.evidence.summary(id))?.nodes).toEqual([
        { node: "node-a", frames: 20, missing: null },
        { node: "node-b", frames: 0, missing: expect.stringMatching(/^agent down since /) as unknown },
      ]);
    } finally {
      evidence.stop();
    }
  });

  it("asks a while after the window ends, for a window that ends that while before the asking", async () => {
    const h = await start();
    const asks: { at: number; toMs: number }[] = [];
    const answer = (r: { toMs: number }) => {
      asks.push({ at: Date.now(), toMs: r.toMs });
      return { frames: [], truncated: false, heldFromMs: null };
    };
    await h.connect("node-a", [], { answer });
    await h.connect("node-b", [], { answer });
    const evidence = new Evidence({ hub: h.hub, asker: h.hs.gateway, logger: silentLogger, windowAfterMs: 500, reconnectGraceMs: 0 });
    evidence.start();
    try {
      const t = Date.now();
      h.hub.tick();
      h.hub.observe("node-a", answered(VIP, t, MAC["node-a"] ?? ""));
      h.hub.observe("node-b", answered(VIP, t, MAC["node-b"] ?? ""));
      await untilAsync(async () => asks.length >= 2, 8000);
      const [inc] = await h.hub.incidents({ ip: VIP });
      // A loaded node's libpcap may still hold the window's last frames when it ends: the hub waits for them.
      for (const a of asks) {
        expect(a.at - (inc?.firstSeen ?? 0)).toBeGreaterThanOrEqual(2500);
        expect(a.toMs).toBeLessThanOrEqual(a.at - 2000);
      }
    } finally {
      evidence.stop();
    }
  });
});

describe("an incident's capture", () => {
  it("is taken from the agents, stored with the incident, and served from the store after a restart", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "whohas-evidence-")), "hub.db");
    const first = await start({ store: await Store.open(openSqlite(path), Date.now()) });
    const t = first.now - 2000;
    await first.connect("node-a", framesOf("node-a", t - 100, 50));
    await first.connect("node-b", framesOf("node-b", t - 100, 50));
    first.hub.tick();
    first.hub.observe("node-a", answered(VIP, t, MAC["node-a"] ?? ""));
    first.hub.observe("node-b", answered(VIP, t, MAC["node-b"] ?? ""));
    await new Promise((r) => setImmediate(r));
    const [inc] = await first.hub.incidents({ ip: VIP });
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
    expect((await first.hub.store.evidence.get(id))?.nodes.map((n) => [n.node, n.frames.length])).toEqual([
      ["node-a", 100],
      ["node-b", 100],
    ]);
    await first.hub.store.close();

    // A new hub on the same database, no agent connected: the stored frames, with the nodes named missing now
    // keeping what they sent then.
    const second = await start({ store: await Store.open(openSqlite(path), Date.now()) });
    const again = await second.get(`/incidents/${id}/capture`);
    expect(again.status).toBe(200);
    expect(read(again.body)).toEqual(read(open.body));
  });

  it("answers 500 with the reason, audited, when the stored frames cannot be read, and the hub carries on", async () => {
    const { hub, get, now } = await start();
    hub.connect(hello("node-a", MAC["node-a"] ?? ""));
    hub.connect(hello("node-b", MAC["node-b"] ?? ""));
    hub.tick();
    hub.observe("node-a", answered(VIP, now - 1000, MAC["node-a"] ?? ""));
    hub.observe("node-b", answered(VIP, now - 1000, MAC["node-b"] ?? ""));
    await new Promise((r) => setImmediate(r));
    const id = (await hub.incidents({ ip: VIP }))[0]?.id ?? 0;
    // A row a broken disk or a hand edit left behind.
    await hub.store.db.run(
      "INSERT INTO incident_evidence (incident_id, node, collected_at, from_ms, to_ms, missing, truncated, held_from, frame_count, frames) VALUES (?, 'node-a', ?, 0, 1, NULL, 0, NULL, 1, '[{not json')",
      [id, now],
    );
    const res = await get(`/incidents/${id}/capture`);
    expect(res.status).toBe(500);
    expect(res.json().error).toMatch(/^the capture could not be built: /);
    expect((await hub.store.audit.list(1))[0]).toMatchObject({ action: "capture.download", outcome: "failed", input: { incident: id } });
    expect((await get("/incidents/999/capture")).status).toBe(404);
  });

  it("says why there is no file for an unknown incident or a bad id", async () => {
    const { get } = await start();
    expect((await get("/incidents/999/capture")).status).toBe(404);
    expect((await get("/incidents/999/capture")).json().error).toBe("no incident 999");
    expect((await get("/incidents/x1/capture")).json().error).toMatch(/not an incident id/);
  });
});
