import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createTlsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { silentLogger } from "@whohas/core";
import {
  HEARTBEAT_MS,
  HEARTBEAT_TIMEOUT_MS,
  LEADER_LOCK,
  Leadership,
  leaderLock,
  leaderName,
  leaderSession,
  sessionName,
} from "../ha/leadership.js";
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
function campaign(name: string, cluster?: string) {
  const lost: string[] = [];
  const won = Leadership.campaign({ url: url(), name, cluster, logger: silentLogger, onLost: (r) => lost.push(r) }).then((l) => {
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

  it("gives each cluster of a fleet its own leader; the default cluster keeps the lock of a single cluster", async () => {
    const [east, west, single] = [campaign("east-1", "east"), campaign("west-1", "west"), campaign("hub-a")];
    const [eastLeader] = await Promise.all([east.won, west.won, single.won]);
    expect([await leaderName(db(), "east"), await leaderName(db(), "west"), await leaderName(db())]).toEqual(["east-1", "west-1", "hub-a"]);
    expect(await leaderName(db(), "north")).toBeNull();
    // A second replica of east waits for east's leader only.
    const east2 = campaign("east-2", "east");
    expect(await settledWithin(east2.won, 1000)).toBe(false);
    await eastLeader.release();
    await east2.won;
    expect(await leaderName(db(), "east")).toBe("east-2");
    expect(await leaderName(db(), "west")).toBe("west-1");
    // The default cluster's lock is the one replicas of an older build take.
    expect(leaderLock()).toEqual({ key: String(LEADER_LOCK), classid: 0, objid: LEADER_LOCK });
    expect(leaderLock("east").key).not.toBe(leaderLock("west").key);
  });

  it("tells the leader it lost the lock when its session ends, and the waiting replica leads", async () => {
    const a = campaign("hub-a");
    await a.won;
    const b = campaign("hub-b");
    expect(await settledWithin(b.won, 500)).toBe(false);
    // An administrator, or a failover of the database, ends the leader's session.
    await db().query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'whohas hub-a'");
    await b.won;
    const deadline = Date.now() + HEARTBEAT_MS + HEARTBEAT_TIMEOUT_MS + 1000;
    while (a.lost.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(a.lost).toHaveLength(1);
    expect(a.lost[0]).toMatch(/connection|heartbeat/);
    expect(await leaderName(db())).toBe("hub-b");
  });

  it("gives up leading within its heartbeat's timeout when its session stops answering, though the socket stays open", async () => {
    const a = campaign("hub-a");
    await a.won;
    const { rows } = await db().query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = 'whohas hub-a'");
    const backend = rows[0]?.pid ?? 0;
    expect(backend).toBeGreaterThan(0);
    // A session that hangs (a stuck server process, a half-open network path): no error, no answer.
    process.kill(backend, "SIGSTOP");
    const stalled = Date.now();
    try {
      while (a.lost.length === 0 && Date.now() - stalled < HEARTBEAT_MS + HEARTBEAT_TIMEOUT_MS + 2000)
        await new Promise((r) => setTimeout(r, 50));
      expect(a.lost[0]).toMatch(/no answer within 3000 ms/);
      expect(Date.now() - stalled).toBeLessThan(HEARTBEAT_MS + HEARTBEAT_TIMEOUT_MS + 1000);
    } finally {
      process.kill(backend, "SIGCONT");
    }
  });

  it("says plainly when PostgreSQL cannot be reached", async () => {
    await expect(
      Leadership.campaign({ url: "postgres://whohas@127.0.0.1:9/whohas", name: "x", logger: silentLogger, onLost: () => undefined }),
    ).rejects.toThrow(/cannot take the leader's lock in PostgreSQL at 127\.0\.0\.1:9\/whohas/);
  });
});

describe("a replica on standby", () => {
  const KEY = "k".repeat(43);
  type Lookup = () => Promise<{ leader: { name: string; url: string | null; self: boolean } | null; key: string | null }>;
  /** leader is a stand-in for the leading hub: it answers with the client's address as the hub's own code reads it. */
  async function leader(answer?: (req: IncomingMessage, res: ServerResponse) => void) {
    trustReplicas(KEY);
    const s = createServer(
      answer ??
        ((req, res) => {
          res.writeHead(200, { "content-type": "application/json", "x-leader": "yes" });
          res.end(JSON.stringify({ peer: peerAddress(req), path: req.url, csrf: req.headers["x-whohas-csrf"] ?? null }));
        }),
    );
    const wss = new WebSocketServer({ server: s });
    wss.on("connection", (ws, req) => ws.send(`hello ${peerAddress(req)}`));
    servers.push(s);
    s.listen(0, "127.0.0.1");
    await once(s, "listening");
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  }
  async function serve(lookup: Lookup) {
    const standby = new Standby({ name: "hub-b", agentPaths: ["/agent", "/whohas/agent"], lookup });
    const web = createServer(standby.listener).on("upgrade", standby.upgrade);
    const metrics = createServer(standby.metricsListener);
    servers.push(web, metrics);
    web.listen(0, "127.0.0.1");
    metrics.listen(0, "127.0.0.1");
    await Promise.all([once(web, "listening"), once(metrics, "listening")]);
    const port = (x: Server) => (x.address() as AddressInfo).port;
    return { base: `http://127.0.0.1:${port(web)}`, metrics: `http://127.0.0.1:${port(metrics)}` };
  }
  const leading = (url: string | null, self = false) => ({ name: "hub-a", url, self });
  /** get sends one request from the client address `from` (a loopback address of its own, not the standby's). */
  const get = (url: string, headers: Record<string, string> = {}, from = "127.0.0.2") =>
    new Promise<{ status: number; body: string; headers: IncomingMessage["headers"] }>((resolve, reject) => {
      const req = request(url, { headers, localAddress: from });
      req.on("response", (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      });
      req.on("error", reject);
      req.end();
    });
  afterEach(() => trustReplicas(null));

  it("passes people's requests and WebSockets to the leader, which sees the client's own address", async () => {
    const url = await leader();
    const { base, metrics } = await serve(async () => ({ leader: leading(url), key: KEY }));
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${base}/readyz`)).json()).toMatchObject({ ready: true, role: "standby", replica: "hub-b", leader: "hub-a" });
    expect(await (await fetch(`${metrics}/metrics`)).text()).toMatch(/^whohas_hub_leader 0$/m);
    // The metrics port is no second door to the dashboard.
    expect((await fetch(`${metrics}/api/v1/ips`)).status).toBe(404);
    // The client at 127.0.0.2 reaches the standby, which reaches the leader from 127.0.0.1: the leader sees 127.0.0.2;
    // what the client claimed in the replicas' own headers counts for nothing; its CSRF token goes through.
    const res = await get(`${base}/api/v1/ips?x=1`, {
      "x-whohas-csrf": "token-1",
      "x-whohas-replica": "forged",
      "x-whohas-replica-peer": "203.0.113.9",
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-leader"]).toBe("yes");
    expect(JSON.parse(res.body)).toEqual({ peer: "127.0.0.2", path: "/api/v1/ips?x=1", csrf: "token-1" });
    const ws = new WebSocket(`${base.replace("http", "ws")}/api/trpc`, { localAddress: "127.0.0.3" });
    const [greeting] = (await once(ws, "message")) as [Buffer];
    expect(greeting.toString()).toBe("hello 127.0.0.3");
    ws.close();
  });

  it("counts a request as its client's only with the right key", () => {
    const req = (headers: Record<string, string>) => ({ headers, socket: { remoteAddress: "10.0.0.5" } }) as unknown as IncomingMessage;
    trustReplicas(KEY);
    expect(peerAddress(req({ "x-whohas-replica": KEY, "x-whohas-replica-peer": "198.51.100.7" }))).toBe("198.51.100.7");
    expect(peerAddress(req({ "x-whohas-replica": "k".repeat(42) + "j", "x-whohas-replica-peer": "198.51.100.7" }))).toBe("10.0.0.5");
    expect(peerAddress(req({ "x-whohas-replica": KEY, "x-whohas-replica-peer": "not an address" }))).toBe("10.0.0.5");
    trustReplicas(null);
    expect(peerAddress(req({ "x-whohas-replica": KEY, "x-whohas-replica-peer": "198.51.100.7" }))).toBe("10.0.0.5");
  });

  it("breaks a stream off when the leader's breaks, so a live page reconnects instead of hanging", async () => {
    const url = await leader((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\n");
      setTimeout(() => res.socket?.destroy(), 200);
    });
    const { base } = await serve(async () => ({ leader: leading(url), key: KEY }));
    const started = Date.now();
    const res = await fetch(`${base}/api/trpc/ips.live`);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses agents with 503 and Retry-After, however they ask, so they go on to the leader", async () => {
    const url = await leader();
    const { base } = await serve(async () => ({ leader: leading(url), key: KEY }));
    const upgrade = await get(`${base}/agent`, { connection: "Upgrade", upgrade: "websocket" });
    expect(upgrade.status).toBe(503);
    expect(upgrade.body).toContain("(hub-b) is on standby; hub-a leads; agents connect to the leader");
    // An Upgrade header without Connection: Upgrade is a plain request here, and must not become an upgrade there.
    const sly = await get(`${base}/whohas/agent`, { connection: "keep-alive", upgrade: "websocket" });
    expect(sly.status).toBe(503);
  });

  it("never passes on what a replica passed on, nor to itself: no loop between or within replicas", async () => {
    const url = await leader();
    const { base } = await serve(async () => ({ leader: leading(url), key: KEY }));
    const looped = await get(`${base}/ips`, { "x-whohas-replica": KEY, "x-whohas-replica-peer": "127.0.0.9" });
    expect(looped.status).toBe(503);
    expect(looped.body).toContain("another replica passed on");
    const self = await serve(async () => ({ leader: leading(`${base}`, true), key: KEY }));
    const mine = await get(`${self.base}/ips`);
    expect(mine.status).toBe(503);
    expect(mine.body).toContain("under this replica's own name");
    expect((await fetch(`${self.base}/readyz`)).status).toBe(503);
  });

  it("is not ready, and says so, while no replica leads, the leader has not said where it is, or does not answer", async () => {
    for (const leaderNow of [null, leading(null)]) {
      const { base } = await serve(async () => ({ leader: leaderNow, key: KEY }));
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(503);
      expect(page.headers.get("retry-after")).toBe("1");
      expect(((await page.json()) as { error: string }).error).toMatch(/on standby/);
    }
    let looks = 0;
    const { base } = await serve(async () => {
      looks++;
      return { leader: leading("http://127.0.0.1:9"), key: KEY };
    });
    const res = await fetch(`${base}/ips`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: string }).error).toMatch(/hub-a leads; the leader did not answer/);
    expect(await (await fetch(`${base}/readyz`)).json()).toMatchObject({ ready: false, why: "the leader did not answer lately" });
    expect(looks).toBe(2);
  });

  it("with TLS, passes requests to a leader showing this replica's certificate, and sends nothing to any other", async () => {
    const dir = mkdtempSync(join(tmpdir(), "whohas-ha-tls-"));
    // Certificates for a name, not for the address the leader is reached at (a Pod's IP is in none), signed by nobody
    // the system trusts.
    const make = (n: string) => {
      const args =
        "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=whohas -addext subjectAltName=DNS:whohas.example";
      execFileSync("openssl", [...args.split(" "), "-keyout", join(dir, `${n}.key`), "-out", join(dir, `${n}.pem`)], { stdio: "ignore" });
      return { cert: readFileSync(join(dir, `${n}.pem`), "utf8"), key: readFileSync(join(dir, `${n}.key`), "utf8") };
    };
    const shared = make("shared");
    const other = make("other");
    let reached = 0;
    const tlsLeader = createTlsServer(shared, (_req, res) => {
      reached++;
      res.writeHead(200).end("leader");
    });
    servers.push(tlsLeader);
    tlsLeader.listen(0, "127.0.0.1");
    await once(tlsLeader, "listening");
    const url = `https://127.0.0.1:${(tlsLeader.address() as AddressInfo).port}`;
    const through = async (certificate: string) => {
      const standby = new Standby({
        name: "hub-b",
        agentPaths: ["/agent"],
        certificate,
        lookup: async () => ({ leader: leading(url), key: KEY }),
      });
      const web = createServer(standby.listener);
      servers.push(web);
      web.listen(0, "127.0.0.1");
      await once(web, "listening");
      return get(`http://127.0.0.1:${(web.address() as AddressInfo).port}/ips`);
    };
    const ok = await through(shared.cert);
    expect(ok).toMatchObject({ status: 200, body: "leader" });
    expect(reached).toBe(1);
    const refused = await through(other.cert);
    expect(refused.status).toBe(503);
    expect(refused.body).toContain("the leader's certificate is not this replica's");
    expect(reached).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  });

  it("names the leader from PostgreSQL's own locks, a long name cut as PostgreSQL cuts it", async () => {
    const long = `hub-${"x".repeat(70)}`;
    const a = campaign(long);
    await a.won;
    expect(await leaderSession(db())).toBe(sessionName(long));
    expect(sessionName(long)).toHaveLength(63);
    expect(long.startsWith((await leaderName(db())) ?? "?")).toBe(true);
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
