import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { silentLogger } from "@whohas/core";
import { HEARTBEAT_MS, HEARTBEAT_TIMEOUT_MS, Leadership, leaderName } from "../ha/leadership.js";
import { Standby } from "../ha/standby.js";
import { peerAddress, trustReplicas } from "../client-address.js";
import { WebSocket, WebSocketServer } from "ws";
import { loadConfig } from "../config/load.js";
// The lab runs the hub, so the hub cannot depend on the lab's package: its throwaway PostgreSQL is imported by path.
import { startPostgres, type TestPostgres } from "../../../../../packages/lab/src/postgres.js";

let server: TestPostgres | null = null;
let pool: pg.Pool | null = null;
beforeAll(async () => {
  server = await startPostgres();
  pool = new pg.Pool({ connectionString: server.url, max: 2 });
}, 120_000);
afterAll(async () => {
  await pool?.end();
  await server?.stop();
});
const held: Leadership[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const l of held.splice(0)) await l.release();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

const url = () => server?.url ?? "";
const db = () => {
  if (pool === null) throw new Error("no PostgreSQL");
  return pool;
};

/** campaign starts one replica's campaign; `lost` collects why it stopped leading. */
function campaign(name: string) {
  const lost: string[] = [];
  const won = Leadership.campaign({ url: url(), name, logger: silentLogger, onLost: (r) => lost.push(r) }).then((l) => {
    held.push(l);
    return l;
  });
  return { won, lost };
}

/** settledWithin tells whether `p` settles within `ms`. */
const settledWithin = (p: Promise<unknown>, ms: number) =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe("leadership on PostgreSQL", () => {
  it("lets one replica lead; a second waits, and takes over at once when the first lets go", async () => {
    const a = campaign("hub-a");
    const first = await a.won;
    expect(await leaderName(db())).toBe("hub-a");
    const b = campaign("hub-b");
    expect(await settledWithin(b.won, 1500)).toBe(false);
    const released = Date.now();
    await first.release();
    await b.won;
    expect(Date.now() - released).toBeLessThan(1000);
    expect(await leaderName(db())).toBe("hub-b");
    expect(a.lost).toEqual([]);
    expect(b.lost).toEqual([]);
  });

  it("tells the leader it lost the lock when its session ends, and the waiting replica leads", async () => {
    const a = campaign("hub-a");
    await a.won;
    const b = campaign("hub-b");
    expect(await settledWithin(b.won, 500)).toBe(false);
    // An administrator, or a failover of the database, ends the leader's session.
    await db().query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'whohas-hub leader hub-a'");
    await b.won;
    const deadline = Date.now() + HEARTBEAT_MS + HEARTBEAT_TIMEOUT_MS + 1000;
    while (a.lost.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(a.lost).toHaveLength(1);
    expect(a.lost[0]).toMatch(/connection|heartbeat/);
    expect(await leaderName(db())).toBe("hub-b");
  });

  it("says plainly when PostgreSQL cannot be reached", async () => {
    await expect(
      Leadership.campaign({ url: "postgres://whohas@127.0.0.1:9/whohas", name: "x", logger: silentLogger, onLost: () => undefined }),
    ).rejects.toThrow(/cannot take the leader's lock in PostgreSQL at 127\.0\.0\.1:9\/whohas/);
  });
});

describe("a replica on standby", () => {
  const KEY = "k".repeat(43);
  /** leader is a stand-in for the leading hub: it answers with the client's address as the hub's own code reads it. */
  async function leader() {
    trustReplicas(KEY);
    const s = createServer((req, res) => {
      res.writeHead(200, { "content-type": "application/json", "x-leader": "yes" });
      res.end(JSON.stringify({ peer: peerAddress(req), path: req.url, cookie: req.headers.cookie ?? null }));
    });
    const wss = new WebSocketServer({ server: s });
    wss.on("connection", (ws, req) => ws.send(`hello ${peerAddress(req)}`));
    servers.push(s);
    s.listen(0, "127.0.0.1");
    await once(s, "listening");
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  }
  async function serve(lookup: () => Promise<{ leader: { name: string; url: string | null } | null; key: string | null }>) {
    const standby = new Standby({ name: "hub-b", agentPaths: ["/agent", "/whohas/agent"], lookup });
    const s = createServer(standby.listener).on("upgrade", standby.upgrade);
    servers.push(s);
    s.listen(0, "127.0.0.1");
    await once(s, "listening");
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  }
  afterEach(() => trustReplicas(null));

  it("passes people's requests and WebSockets to the leader, vouching for the client's address with the shared key", async () => {
    const url = await leader();
    const base = await serve(async () => ({ leader: { name: "hub-a", url }, key: KEY }));
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${base}/readyz`)).json()).toMatchObject({ ready: true, role: "standby", replica: "hub-b", leader: "hub-a" });
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^whohas_hub_leader 0$/m);
    const res = await fetch(`${base}/api/v1/ips?x=1`, {
      headers: { cookie: "s=1", "x-whohas-replica": "forged", "x-whohas-replica-peer": "203.0.113.9" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-leader")).toBe("yes");
    // The leader sees the standby's own peer, not what the client claimed.
    expect(await res.json()).toEqual({ peer: "127.0.0.1", path: "/api/v1/ips?x=1", cookie: "s=1" });
    const ws = new WebSocket(`${base.replace("http", "ws")}/api/trpc`);
    const [greeting] = (await once(ws, "message")) as [Buffer];
    expect(greeting.toString()).toBe("hello 127.0.0.1");
    ws.close();
  });

  it("counts a request as its client's only with the right key: the leader's limits and audit see the real client", () => {
    const req = (headers: Record<string, string>) => ({ headers, socket: { remoteAddress: "10.0.0.5" } }) as unknown as IncomingMessage;
    trustReplicas(KEY);
    expect(peerAddress(req({ "x-whohas-replica": KEY, "x-whohas-replica-peer": "198.51.100.7" }))).toBe("198.51.100.7");
    expect(peerAddress(req({ "x-whohas-replica": "k".repeat(42) + "j", "x-whohas-replica-peer": "198.51.100.7" }))).toBe("10.0.0.5");
    expect(peerAddress(req({ "x-whohas-replica": KEY, "x-whohas-replica-peer": "not an address" }))).toBe("10.0.0.5");
    trustReplicas(null);
    expect(peerAddress(req({ "x-whohas-replica": KEY, "x-whohas-replica-peer": "198.51.100.7" }))).toBe("10.0.0.5");
  });

  it("refuses agents with 503 and Retry-After, so they try the next address until they reach the leader", async () => {
    const url = await leader();
    const base = await serve(async () => ({ leader: { name: "hub-a", url }, key: KEY }));
    const upgrade = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${base}/agent`, { headers: { connection: "Upgrade", upgrade: "websocket" } });
      req.on("response", (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on("error", reject);
      req.end();
    });
    expect(upgrade.status).toBe(503);
    expect(upgrade.body).toContain("(hub-b) is on standby; hub-a leads; agents connect to the leader");
  });

  it("is not ready, and says so, while no replica leads or the leader has not said where it is", async () => {
    for (const leaderNow of [null, { name: "hub-a", url: null }]) {
      const base = await serve(async () => ({ leader: leaderNow, key: KEY }));
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(503);
      expect(page.headers.get("retry-after")).toBe("1");
      expect((await page.json()) as { error: string }).toMatchObject({ error: expect.stringMatching(/on standby/) as unknown });
    }
  });

  it("tells the client the leader did not answer, and looks again, when the leader has gone", async () => {
    let looks = 0;
    const base = await serve(async () => {
      looks++;
      return { leader: { name: "hub-a", url: "http://127.0.0.1:9" }, key: KEY };
    });
    const res = await fetch(`${base}/ips`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toMatch(/hub-a leads; the leader did not answer/);
    await fetch(`${base}/ips`);
    expect(looks).toBe(2);
  });

  it("names the leader from PostgreSQL's own locks", async () => {
    const a = campaign("hub-a");
    await a.won;
    expect(await leaderName(db())).toBe("hub-a");
  });
});

describe("ha in the configuration", () => {
  it("needs PostgreSQL: replicas cannot share a SQLite file", () => {
    expect(() => loadConfig(null, { WHOHAS_AGENT_TOKEN: "a".repeat(32), WHOHAS_HA: "true" })).toThrow(
      /WHOHAS_HA: replicas share one PostgreSQL: set storage\.url/,
    );
    const c = loadConfig(null, { WHOHAS_AGENT_TOKEN: "a".repeat(32), WHOHAS_HA: "true", WHOHAS_STORAGE_URL: "postgres://h/db" });
    expect(c.ha).toBe(true);
    expect(() => loadConfig(null, { WHOHAS_AGENT_TOKEN: "a".repeat(32), WHOHAS_HA: "yes" })).toThrow(/true or false/);
  });
});
