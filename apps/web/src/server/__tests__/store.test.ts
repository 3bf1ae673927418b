import { describe, expect, it } from "vitest";
import { transient, type Db, type Param } from "../store/db.js";
import { openSqlite } from "../store/sqlite.js";
import { migrate } from "../store/migrate.js";
import { MIGRATIONS } from "../store/migrations.js";
import { MAX_ROWS_PER_FLUSH, Store } from "../store/store.js";
import { AUDIT_RETENTION_MS } from "../store/audit.js";
import { Hub } from "../hub/hub.js";
import { CLEAR_AFTER_MS, SILENCE_MS, type EvidenceFrame } from "@whohas/core";
import { ENGINES, fresh, freshStore, opened, tmpDb } from "./engines.js";
import { aggregate, answered, hello, until } from "./helpers.js";

const VIP = "192.0.2.200";
const MIN = 60_000;
const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const entry = (kind: "request" | "reply" | "gratuitous-request", mac: string, t: number, count = 1) => aggregate(VIP, kind, mac, t, count);

const nextTurn = () => new Promise((r) => setImmediate(r));

describe.each(ENGINES)("migrations on $name", (e) => {
  it("apply once, in order, and refuse a database newer than the code", async () => {
    const db = await fresh(e);
    expect(await migrate(db, 1)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await migrate(db, 2)).toEqual([]);
    await db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [999, "future", 3]);
    await expect(migrate(db, 4)).rejects.toThrow(/newer than this hub/);
  });

  // Hubs share a PostgreSQL database; a SQLite file is one hub's.
  it.runIf(e.name === "PostgreSQL")("apply each migration once when several hubs start on one database at the same moment", async () => {
    const place = await e.place();
    const dbs = await Promise.all([e.open(place), e.open(place), e.open(place)]);
    opened.push(...dbs);
    const applied = await Promise.all(dbs.map((db) => migrate(db, 1)));
    expect(applied.flat().sort()).toEqual(MIGRATIONS.map((m) => m.version));
    expect((await dbs[0].get<{ n: number }>("SELECT COUNT(*) AS n FROM schema_migrations"))?.n).toBe(MIGRATIONS.length);
  });
});

describe("transient", () => {
  it("tells a store away for a moment from a query it refuses", () => {
    const err = (code: string) => Object.assign(new Error(code), { code });
    for (const code of [
      "ECONNREFUSED",
      "ECONNRESET",
      "08006",
      "57P01",
      "57P03",
      "53300",
      "SQLITE_BUSY",
      "SQLITE_IOERR_WRITE",
      "SQLITE_FULL",
    ])
      expect(transient(err(code)), code).toBe(true);
    expect(transient(new Error("Connection terminated unexpectedly"))).toBe(true);
    for (const code of ["23505", "42P01", "22P02", "SQLITE_CONSTRAINT_PRIMARYKEY"]) expect(transient(err(code)), code).toBe(false);
    expect(transient(new Error("the store keeps integers: parameter 6 is 1.5"))).toBe(false);
  });
});

describe("SQLite", () => {
  it("puts the database in WAL mode", async () => {
    const db = openSqlite(tmpDb());
    opened.push(db);
    expect((await db.get<{ journal_mode: string }>("PRAGMA journal_mode"))?.journal_mode).toBe("wal");
  });

  it("runs transactions begun in the same moment one after the other: one that fails rolls back only itself", async () => {
    const db = openSqlite(":memory:");
    opened.push(db);
    await db.exec("CREATE TABLE t (x INTEGER)");
    const failing = db.tx(async (t) => {
      await t.run("INSERT INTO t VALUES (1)");
      await t.run("INSERT INTO t VALUES (2)");
      throw new Error("rolled back");
    });
    const next = db.tx(async (t) => {
      await t.run("INSERT INTO t VALUES (10)");
      await new Promise((r) => setTimeout(r, 10));
      await t.run("INSERT INTO t VALUES (11)");
    });
    // Queued behind both, in order: it lands in neither.
    const plain = db.run("INSERT INTO t VALUES (99)");
    const last = db.tx(async (t) => {
      await t.run("INSERT INTO t VALUES (20)");
      throw new Error("rolled back too");
    });
    const outcomes = await Promise.allSettled([failing, next, plain, last]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "fulfilled", "fulfilled", "rejected"]);
    expect((await db.all<{ x: number }>("SELECT x FROM t ORDER BY rowid")).map((r) => r.x)).toEqual([10, 11, 99]);
  });

  it("keeps other queries out of a transaction while it waits between its statements", async () => {
    const db = openSqlite(":memory:");
    opened.push(db);
    await db.exec("CREATE TABLE t (x INTEGER)");
    let inside: () => void = () => undefined;
    const gate = new Promise<void>((r) => (inside = r));
    const tx = db.tx(async (t) => {
      await t.run("INSERT INTO t VALUES (1)");
      await gate;
      throw new Error("rolled back");
    });
    // Issued while the transaction is open: it waits, and lands after the rollback, not inside it.
    const outside = db.run("INSERT INTO t VALUES (2)");
    inside();
    await expect(tx).rejects.toThrow("rolled back");
    await outside;
    expect(await db.all<{ x: number }>("SELECT x FROM t")).toEqual([{ x: 2 }]);
  });
});

describe.each(ENGINES)("Store on $name", (e) => {
  it("counts a minute once across capture points (the most any saw), adds what follows a write, and shows unwritten minutes", async () => {
    const s = await freshStore(e);
    s.traffic.record("node-a", [
      entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 1, 3),
      entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 2, 2),
    ]);
    s.traffic.record("node-b", [entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 3, 4)]);
    expect(s.traffic.pendingRows).toBe(1);
    // Not written yet, and already in the timeline.
    expect(await s.traffic.timeline(VIP, 0, 20 * MIN)).toEqual([{ minute: 10 * MIN, mac: "02:00:5e:00:00:0a", kind: "reply", count: 5 }]);
    expect(await s.flush(10 * MIN + 5, true)).toBe(1);
    s.traffic.record("node-a", [entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 4, 1), entry("reply", "02:00:5e:00:00:0a", 11 * MIN, 7)]);
    expect(await s.flush(10 * MIN + 6)).toBe(2);
    expect(await s.flush(10 * MIN + 7)).toBe(0);
    expect(await s.traffic.timeline(VIP, 0, 20 * MIN)).toEqual([
      { minute: 10 * MIN, mac: "02:00:5e:00:00:0a", kind: "reply", count: 6 },
      { minute: 11 * MIN, mac: "02:00:5e:00:00:0a", kind: "reply", count: 7 },
    ]);
    expect(await s.traffic.aggregates(0)).toEqual([
      expect.objectContaining({ ip: VIP, kind: "reply", count: 13, firstSeen: 10 * MIN + 1, lastSeen: 11 * MIN }),
    ]);
  });

  it("writes at most MAX_ROWS_PER_FLUSH rows per flush, oldest first, and everything when forced", async () => {
    const s = await freshStore(e);
    const n = MAX_ROWS_PER_FLUSH + 10;
    for (let i = 0; i < n; i++)
      s.traffic.record("node-a", [{ ...entry("request", "02:00:5e:00:00:01", MIN), ip: `10.1.${i >> 8}.${i & 255}` }]);
    expect(await s.flush(MIN)).toBe(MAX_ROWS_PER_FLUSH);
    expect(s.traffic.pendingRows).toBe(10);
    expect(await s.traffic.timeline("10.1.0.0", 0, 2 * MIN)).toHaveLength(1);
    expect(await s.flush(MIN, true)).toBe(10);
  });

  it("keeps one row per MAC when a flood of MACs claims one IP, and lets written minutes go", async () => {
    const s = await freshStore(e);
    const macs = Array.from({ length: 100 }, (_, i) => `02:00:5e:00:01:${i.toString(16).padStart(2, "0")}`);
    for (const round of [1, 2])
      s.traffic.record(
        "node-a",
        macs.map((m, i) => entry("reply", m, 10 * MIN + round * 1000 + i)),
      );
    expect(s.traffic.pendingRows).toBe(100);
    const timeline = await s.traffic.timeline(VIP, 0, 20 * MIN);
    expect(timeline).toHaveLength(100);
    expect(timeline.every((p) => p.count === 2)).toBe(true);
    expect(await s.flush(11 * MIN, true)).toBe(100);
    // The minute is over and written: its buckets leave memory; a late frame for it adds to the stored row.
    await s.flush(12 * MIN, false);
    s.traffic.record("node-a", [entry("reply", macs[0] ?? "", 10 * MIN + 59_000)]);
    await s.flush(12 * MIN + 1, true);
    const first = (await s.traffic.timeline(VIP, 0, 20 * MIN)).find((p) => p.mac === macs[0]);
    expect(first?.count).toBe(3);
    expect((await s.traffic.aggregates(0)).find((a) => a.mac === macs[0])).toMatchObject({
      firstSeen: 10 * MIN + 1000,
      lastSeen: 10 * MIN + 59_000,
    });
  });

  it("adds to a minute stored by a previous process instead of overwriting it", async () => {
    const place = await e.place();
    const a = await Store.open(await e.open(place), 0);
    a.traffic.record("node-a", [entry("request", "02:00:5e:00:00:01", 10 * MIN, 5)]);
    await a.close();
    const b = await Store.open(await e.open(place), 0);
    b.traffic.record("node-a", [entry("request", "02:00:5e:00:00:01", 10 * MIN + 30_000, 2)]);
    await b.flush(10 * MIN + 31_000, true);
    expect((await b.traffic.timeline(VIP, 0, 20 * MIN))[0]?.count).toBe(7);
    await b.close();
  });

  it("prunes traffic and resolved incidents past retention in bounded steps, keeps open incidents and recent audit", async () => {
    const s = await freshStore(e);
    for (let m = 0; m < 12_000; m++)
      s.traffic.record("node-a", [{ ...entry("request", "02:00:5e:00:00:01", m * MIN), ip: `10.0.${m >> 8}.${m & 255}` }]);
    await s.flush(0, true);
    const f = { ip: VIP, type: "multi-responder" as const, macs: [], detail: "d", firstSeen: 0, lastSeen: 0, count: 1, samples: [0] };
    const resolved = (await s.incidents.open(f, {})).id;
    await s.incidents.resolve(resolved, f, 1);
    await s.incidents.open({ ...f, ip: "192.0.2.201" }, {});
    await s.audit.append({ t: 5, actor: "alice", action: "announce", input: { ip: VIP }, outcome: "ok", detail: "" });
    const now = 12_000 * MIN;
    const steps: number[] = [];
    for (let n = -1; n !== 0;) steps.push((n = await s.pruneStep(now, 1000 * MIN)));
    expect(Math.max(...steps)).toBeLessThanOrEqual(5000);
    expect((await s.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM minute_stats"))?.n).toBe(1000);
    expect((await s.incidents.list()).map((i) => i.ip)).toEqual(["192.0.2.201"]);
    expect(await s.audit.list()).toHaveLength(1); // audit outlives traffic
    await s.pruneStep(5 + AUDIT_RETENTION_MS + 1, 1000 * MIN);
    expect(await s.audit.list()).toHaveLength(0);
  });

  it("keeps incidents with their events, acknowledgements and settings", async () => {
    const s = await freshStore(e);
    const f = {
      ip: VIP,
      type: "wrong-owner" as const,
      macs: ["02:00:5e:00:00:0b"],
      detail: "node-b answers",
      firstSeen: 100,
      lastSeen: 100,
      count: 1,
      samples: [100],
    };
    const id = (await s.incidents.open(f, { expectedOwner: { node: "node-a" } })).id;
    await s.incidents.touch(id, { ...f, lastSeen: 200, count: 2 }, "now 2 MACs");
    expect(await s.incidents.acknowledge(id, "alice", 250)).toBe(true);
    expect(await s.incidents.acknowledge(999, "alice", 250)).toBe(false);
    await s.incidents.resolve(id, { ...f, lastSeen: 200, count: 2 }, 300);
    const i = await s.incidents.get(id);
    expect(i).toMatchObject({ resolvedAt: 300, acknowledgedBy: "alice", lastSeen: 200, evidence: { expectedOwner: { node: "node-a" } } });
    expect(i?.events.map((e) => e.kind)).toEqual(["opened", "updated", "acknowledged", "resolved"]);
    await s.settings.set("retention", { days: 7 }, 1);
    expect(await s.settings.get("retention")).toEqual({ days: 7 });
    expect(await s.settings.get("nothing")).toBeNull();
  });
});

describe.each(ENGINES)("outbox, sign-ins, tokens and evidence on $name", (e) => {
  it("refuses a fraction where the store keeps integers (PostgreSQL would, SQLite would keep it)", async () => {
    const db = await fresh(e);
    await db.exec("CREATE TABLE t (x BIGINT)");
    await expect(db.run("INSERT INTO t VALUES (?)", [1731.25])).rejects.toThrow("the store keeps integers: parameter 1 is 1731.25");
  });

  it.runIf(e.name === "PostgreSQL")(
    "loses its connection in a transaction: that transaction fails, nothing is thrown past it, the next goes on",
    async () => {
      const db = await fresh(e);
      await db.exec("CREATE TABLE t (x BIGINT)");
      const tx = db.tx(async (t) => {
        const me = await t.get<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        // From another connection of the pool, as a server restart or a failover would.
        await db.get("SELECT pg_terminate_backend(?)", [me?.pid ?? 0]);
        await t.run("INSERT INTO t VALUES (1)");
      });
      await expect(tx).rejects.toThrow();
      await db.run("INSERT INTO t VALUES (2)");
      expect(await db.all<{ x: number }>("SELECT x FROM t")).toEqual([{ x: 2 }]);
    },
  );

  it("keeps each notification from its decision to its delivery, and the receivers of Settings", async () => {
    const s = await freshStore(e);
    const DAY = 86_400_000;
    await s.outbox.add({ id: "msg_1", receiver: "ops", groupKey: VIP, kind: "firing", createdAt: 10 * DAY, notBefore: 10 * DAY + 5 });
    await s.outbox.add({
      id: "msg_2",
      receiver: "ops",
      groupKey: "192.0.2.201",
      kind: "firing",
      createdAt: 10 * DAY,
      notBefore: 10 * DAY + 50,
    });
    expect((await s.outbox.waiting("ops", VIP))?.id).toBe("msg_1");
    expect(await s.outbox.waiting("ops", "192.0.2.9")).toBeNull();
    expect((await s.outbox.due(10 * DAY + 10, 100)).map((r) => r.id)).toEqual(["msg_1"]);
    await s.outbox.freeze("msg_1", '{"a":1}');
    await s.outbox.freeze("msg_1", '{"a":2}'); // the body is fixed at the first attempt
    await s.outbox.attempted("msg_1", {
      status: "delivered",
      notBefore: 10 * DAY + 5,
      lastStatus: 204,
      lastError: null,
      deliveredAt: 10 * DAY + 20,
    });
    expect(await s.outbox.get("msg_1")).toEqual({
      id: "msg_1",
      receiver: "ops",
      groupKey: VIP,
      kind: "firing",
      createdAt: 10 * DAY,
      notBefore: 10 * DAY + 5,
      attempts: 1,
      status: "delivered",
      body: '{"a":1}',
      lastStatus: 204,
      lastError: null,
      deliveredAt: 10 * DAY + 20,
    });
    expect(await s.outbox.waiting("ops", VIP)).toBeNull();
    expect(await s.outbox.sentSince("ops", VIP, 0)).toBe(1);
    expect(await s.outbox.lastCreated("ops", VIP)).toBe(10 * DAY);
    expect(await s.outbox.lastCreated("ops", "192.0.2.9")).toBeNull();
    expect(await s.outbox.previousDelivered("ops", VIP, 11 * DAY)).toBe(10 * DAY);
    expect(await s.outbox.cancel("ops", "the receiver answered 410 Gone")).toBe(1);
    expect((await s.outbox.recent(10)).map((r) => [r.id, r.status])).toEqual([
      ["msg_2", "cancelled"],
      ["msg_1", "delivered"],
    ]);
    // Kept a week after they end, then pruned.
    expect(await s.outbox.prune(20 * DAY, 100)).toBe(2);
    await s.outbox.saveReceiver({ name: "ops", url: "https://hooks.example/a", format: "slack", secret: null, createdBy: "alice" }, 5);
    await s.outbox.saveReceiver({ name: "ops", url: "https://hooks.example/b", format: "generic", secret: "s", createdBy: "alice" }, 6);
    expect(await s.outbox.receivers()).toEqual([
      { name: "ops", url: "https://hooks.example/b", format: "generic", secret: "s", createdBy: "alice", createdAt: 5, updatedAt: 6 },
    ]);
    expect(await s.outbox.deleteReceiver("ops")).toBe(true);
    expect(await s.outbox.deleteReceiver("ops")).toBe(false);
    expect(await s.outbox.receivers()).toEqual([]);
  });

  it("keeps sign-ins until they expire, tokens by their hash, and a value kept first by hubs that start together", async () => {
    const s = await freshStore(e);
    await s.access.createSession({ idHash: "h1", user: "alice", createdAt: 1, expiresAt: 100, peer: "192.0.2.1" });
    expect(await s.access.session("h1", 50)).toEqual({ idHash: "h1", user: "alice", createdAt: 1, expiresAt: 100, peer: "192.0.2.1" });
    expect(await s.access.session("h1", 100)).toBeNull();
    expect(await s.access.prune(101, 10)).toBe(1);
    const t = await s.access.createApiToken({ name: "grafana", hash: "th", prefix: "whv_ab", createdBy: "alice", createdAt: 7 });
    expect(t.id).toBeGreaterThan(0);
    expect(await s.access.apiTokenByHash("th", 9)).toEqual({
      id: t.id,
      name: "grafana",
      prefix: "whv_ab",
      createdBy: "alice",
      createdAt: 7,
      lastUsed: null,
    });
    expect((await s.access.apiTokens())[0]?.lastUsed).toBe(9);
    expect(await s.access.apiTokenByHash("other", 9)).toBeNull();
    expect(await s.access.deleteApiToken(t.id)).toBe(true);
    expect(await s.access.apiTokens()).toEqual([]);
    const kept = await Promise.all([s.settings.keep("auth.secret", "first", 1), s.settings.keep("auth.secret", "second", 2)]);
    expect(kept).toEqual(["first", "first"]);
  });

  it("keeps an incident's frames per node, and why a node's are missing", async () => {
    const s = await freshStore(e);
    const { id } = await s.incidents.open(
      { ip: VIP, type: "multi-responder", macs: [A, B], detail: "d", firstSeen: 1, lastSeen: 1, count: 1, samples: [1] },
      null,
    );
    const frame: EvidenceFrame = {
      tNs: "5000000",
      iface: "eth0",
      vlan: null,
      data: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7",
    };
    await s.evidence.put(id, {
      collectedAt: 9,
      fromMs: 0,
      toMs: 10,
      nodes: [{ node: "node-a", frames: [frame], truncated: true, heldFromMs: 3 }],
      missing: [{ node: "node-b", why: "its agent is down" }],
    });
    expect(await s.evidence.summary(id)).toEqual({
      collectedAt: 9,
      fromMs: 0,
      toMs: 10,
      nodes: [
        { node: "node-a", frames: 1, missing: null },
        { node: "node-b", frames: 0, missing: "its agent is down" },
      ],
    });
    expect(await s.evidence.get(id)).toEqual({
      collectedAt: 9,
      fromMs: 0,
      toMs: 10,
      nodes: [{ node: "node-a", frames: [frame], truncated: true, heldFromMs: 3 }],
      missing: [{ node: "node-b", why: "its agent is down" }],
    });
    expect(await s.evidence.get(id + 1)).toBeNull();
  });
});

describe.each(ENGINES)("incidents on $name: one per subject, its findings as facets", (e) => {
  const finding = (type: "multi-responder" | "wrong-owner" | "silent-drop", at: number, ip = VIP) => ({
    ip,
    type,
    macs: [type === "wrong-owner" ? "02:00:5e:00:00:0b" : "02:00:5e:00:00:0a"],
    detail: `${type} on ${ip}`,
    firstSeen: at,
    lastSeen: at,
    count: 1,
    samples: [at],
  });

  it("keeps a finding dated to a fraction of a millisecond (a reply's delay) in whole milliseconds", async () => {
    const s = await freshStore(e);
    const { id } = await s.incidents.open(
      { ...finding("multi-responder", 0), firstSeen: 100.4, lastSeen: 200.6, samples: [100.4, 200.6] },
      null,
    );
    await s.incidents.touch(id, { ...finding("multi-responder", 0), firstSeen: 100.4, lastSeen: 300.5, samples: [300.5] }, "later");
    expect(
      await s.incidents.resolve(id, { ...finding("multi-responder", 0), firstSeen: 100.4, lastSeen: 300.5, samples: [300.5] }, 900.7),
    ).toBe(true);
    expect(await s.incidents.get(id)).toMatchObject({ firstSeen: 100, lastSeen: 301, resolvedAt: 901, samples: [301] });
  });

  it("adds a second finding to the IP's open incident, names it after the worst, and resolves it with its last facet", async () => {
    const s = await freshStore(e);
    const first = await s.incidents.open(finding("wrong-owner", 100), { evidence: "at the start" });
    expect(await s.incidents.acknowledge(first.id, "alice", 150)).toBe(true);
    const second = await s.incidents.open(finding("multi-responder", 200), null);
    // Something new is wrong: the acknowledgement was for what it held before.
    expect((await s.incidents.get(first.id))?.acknowledgedBy).toBeNull();
    expect(first.incidentOpened).toBe(true);
    expect(second).toEqual({ id: first.id, incidentOpened: false });
    expect((await s.incidents.open(finding("multi-responder", 250, "192.0.2.201"), null)).id).not.toBe(first.id);
    let i = await s.incidents.get(first.id);
    expect(i).toMatchObject({ type: "multi-responder", firstSeen: 100, lastSeen: 200, evidence: { evidence: "at the start" } });
    expect(i?.facets.map((f) => [f.type, f.resolvedAt])).toEqual([
      ["wrong-owner", null],
      ["multi-responder", null],
    ]);
    expect(i?.macs).toEqual(["02:00:5e:00:00:0a", "02:00:5e:00:00:0b"]);
    // The worst finding clears first: the incident stays open on the other, still named after its worst.
    expect(await s.incidents.resolve(first.id, finding("multi-responder", 200), 900)).toBe(false);
    i = await s.incidents.get(first.id);
    expect(i).toMatchObject({
      type: "multi-responder",
      resolvedAt: null,
      macs: ["02:00:5e:00:00:0b"],
      detail: "wrong-owner on 192.0.2.200",
    });
    expect(i?.facets.find((f) => f.type === "multi-responder")?.resolvedAt).toBe(900);
    expect(await s.incidents.resolve(first.id, finding("wrong-owner", 300), 1000)).toBe(true);
    i = await s.incidents.get(first.id);
    expect(i?.resolvedAt).toBe(1000);
    expect(i?.events.map((e) => e.kind)).toEqual(["opened", "acknowledged", "updated", "updated", "resolved"]);
    // A finding dated before the incident opened joins it after, in its timeline.
    const late = await s.incidents.open(finding("wrong-owner", 2500, "192.0.2.202"), null);
    await s.incidents.open(finding("multi-responder", 2400, "192.0.2.202"), null);
    expect((await s.incidents.get(late.id))?.events.map((e) => [e.kind, e.t])).toEqual([
      ["opened", 2500],
      ["updated", 2500],
    ]);
    // What opens after is a new incident.
    expect((await s.incidents.open(finding("silent-drop", 2000), null)).incidentOpened).toBe(true);
    expect((await s.incidents.list({ ip: VIP })).map((x) => x.facets.length)).toEqual([1, 2]);
  });

  // The data migrations are SQLite's alone: no PostgreSQL database predates them.
  it.runIf(e.name === "SQLite")(
    "migrates one incident per finding into one per subject: open ones of an IP merge into its oldest",
    async () => {
      const db = await fresh(e);
      await db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
      for (const m of MIGRATIONS.filter((m) => m.version <= 4)) {
        await db.exec(m.sql);
        await db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, 0]);
      }
      const put = async (ip: string, type: string, first: number, resolved: number | null) => {
        const row = await db.get<{ id: number }>(
          "INSERT INTO incidents (ip, type, macs, detail, evidence, first_seen, last_seen, count, samples, resolved_at) VALUES (?, ?, ?, ?, '{}', ?, ?, 1, ?, ?) RETURNING id",
          [
            ip,
            type,
            JSON.stringify([`02:00:5e:00:00:${type.length}`]),
            `${type} detail`,
            first,
            first + 10,
            JSON.stringify([first]),
            resolved,
          ],
        );
        const id = Number(row?.id);
        await db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, 'opened', ?)", [id, first, type]);
        await db.run(
          "INSERT INTO incident_evidence (incident_id, node, collected_at, from_ms, to_ms, missing, truncated, held_from, frame_count, frames) VALUES (?, 'node-a', 0, 0, 0, NULL, 0, NULL, 0, '[]')",
          [id],
        );
        return id;
      };
      const past = await put(VIP, "multi-responder", 10, 20);
      const oldest = await put(VIP, "wrong-owner", 100, null);
      const merged = await put(VIP, "multi-responder", 200, null);
      const other = await put("192.0.2.201", "silent-drop", 150, null);
      await db.run("UPDATE incidents SET acknowledged_by = 'alice', acknowledged_at = 205 WHERE id = ?", [merged]);
      expect(await migrate(db, 0)).toEqual([5, 6]);
      const s = await Store.open(db, 0);
      expect((await s.incidents.list({ open: true })).map((i) => i.id).sort()).toEqual([oldest, other].sort());
      const i = await s.incidents.get(oldest);
      expect(i).toMatchObject({ type: "multi-responder", firstSeen: 100, lastSeen: 210, resolvedAt: null, acknowledgedBy: "alice" });
      expect(i?.facets.map((f) => [f.type, f.resolvedAt])).toEqual([
        ["wrong-owner", null],
        ["multi-responder", null],
      ]);
      expect(i?.events.map((e) => e.detail)).toEqual([
        "wrong-owner",
        `multi-responder too (it was incident #${merged}): multi-responder detail`,
      ]);
      // The merged incident keeps its id, its evidence and its frames, resolved, naming the one that goes on.
      const gone = await s.incidents.get(merged);
      expect(gone).toMatchObject({ resolvedAt: 210 });
      expect(gone?.events.at(-1)?.detail).toBe(`merged into incident #${oldest}: one incident per IP or node`);
      expect((await s.incidents.get(past))?.facets).toHaveLength(1);
      expect((await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM incident_evidence"))?.n).toBe(4);
      // A new incident never takes a merged one's id.
      const opened = await s.incidents.open(
        { ip: "192.0.2.209", type: "silent-drop", macs: [], detail: "d", firstSeen: 5000, lastSeen: 5000, count: 1, samples: [] },
        null,
      );
      expect(opened.id).toBeGreaterThan(Math.max(past, oldest, merged, other));
    },
  );
});

describe.each(ENGINES)("Hub with a store on $name", (e) => {
  it("opens an incident for one request answered twice, keeps it across a restart, and resolves it after the hysteresis", async () => {
    const place = await e.place();
    let now = 100 * MIN;
    const clock = () => now;
    const hub = await Hub.open({ clock, store: await Store.open(await e.open(place), now) });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered(VIP, now - 100, A));
    hub.observe("node-b", answered(VIP, now - 100, B));
    await nextTurn();
    expect((await hub.incidents({ open: true })).map((i) => i.type)).toEqual(["multi-responder"]);
    await hub.flush(true);
    await hub.store.close();

    // Restart: same database; the agents come back as down, the traffic and the open incident are there.
    now += 2000;
    const again = await Hub.open({ clock, store: await Store.open(await e.open(place), now) });
    expect(again.agents.list().map((a) => [a.node, a.up])).toEqual([
      ["node-a", false],
      ["node-b", false],
    ]);
    const v = again.ip(VIP);
    expect(v?.responders.map((r) => [r.node, r.replies])).toEqual([
      ["node-a", 1],
      ["node-b", 1],
    ]);
    expect(v?.findings.map((f) => [f.type, f.incidentId])).toEqual([["multi-responder", 1]]);
    again.tick();
    expect(await again.incidents({ open: true })).toHaveLength(1); // not opened a second time

    now += CLEAR_AFTER_MS + 1000;
    again.tick();
    expect(await again.incidents({ open: false })).toEqual([expect.objectContaining({ id: 1, resolvedAt: now })]);
    await again.store.close();
  });
});

/** slow is a Db that answers 20 ms late, as a PostgreSQL across a network does. */
function slow(db: Db): Db {
  const late = () => new Promise((r) => setTimeout(r, 20));
  const wrap = (d: Db): Db => ({
    dialect: d.dialect,
    exec: async (sql) => (await late(), d.exec(sql)),
    run: async (sql, p) => (await late(), d.run(sql, p)),
    get: async <T>(sql: string, p?: readonly Param[]) => (await late(), d.get<T>(sql, p)),
    all: async <T>(sql: string, p?: readonly Param[]) => (await late(), d.all<T>(sql, p)),
    tx: (fn) => d.tx((t) => fn(wrap(t))),
    close: () => d.close(),
  });
  return wrap(db);
}

describe("Hub on a store that answers late", () => {
  it("records the evidence of an incident that opens again before the last one's end is written", async () => {
    let now = 100 * MIN;
    const hub = await Hub.open({ clock: () => now, store: await Store.open(slow(openSqlite(":memory:")), now) });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered(VIP, now - 50, A));
    hub.observe("node-b", answered(VIP, now - 49, B));
    await nextTurn();
    const [first] = await hub.incidents({ open: true });
    expect(first?.evidence).not.toBeNull();
    // Quiet long enough to clear: the round resolves it (written later), and both answer again at once.
    now += CLEAR_AFTER_MS + 10_000;
    hub.heartbeat("node-a");
    hub.heartbeat("node-b");
    hub.tick();
    hub.observe("node-a", answered(VIP, now - 50, A));
    hub.observe("node-b", answered(VIP, now - 49, B));
    await nextTurn();
    const again = (await hub.incidents({})).find((i) => i.id !== first?.id);
    expect(again?.resolvedAt).toBeNull();
    expect(again?.evidence).toMatchObject({ services: [] });
  });
});

describe("Hub on a store out of reach for a moment", () => {
  it("stores and tells an incident that opened meanwhile, once the store is back", async () => {
    let down = false;
    const db = openSqlite(":memory:");
    opened.push(db);
    const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const flaky: Db = { ...db, tx: (fn) => (down ? Promise.reject(refused()) : db.tx(fn)) };
    const now = 100 * MIN;
    const failures: string[] = [];
    const hub = await Hub.open({ clock: () => now, store: await Store.open(flaky, now), onStoreError: (what) => failures.push(what) });
    const told: number[] = [];
    const ac = new AbortController();
    void (async () => {
      for await (const batch of hub.feed.changes(ac.signal)) for (const c of batch) if (c.kind === "incident" && c.opened) told.push(c.id);
    })();
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    down = true;
    hub.observe("node-a", answered(VIP, now - 50, A));
    hub.observe("node-b", answered(VIP, now - 49, B));
    // The judge saw it at once; the store is out of reach: the write is told as failed and tried again.
    await until(() => failures.length > 0, 5000);
    expect(hub.ip(VIP)?.findings.map((f) => f.type)).toContain("multi-responder");
    expect(told).toEqual([]);
    down = false;
    const open = await hub.incidents({ open: true });
    expect(open.map((i) => i.type)).toEqual(["multi-responder"]);
    await until(() => told.length > 0, 5000);
    expect(told).toEqual([open[0]?.id]);
    ac.abort();
  }, 20_000);
});

describe("Hub", () => {
  it("judges a round in slices when given a budget, with the same outcome", async () => {
    const now = 100 * MIN;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    const ips = Array.from({ length: 10 }, (_, i) => `192.0.2.${i + 1}`);
    for (const ip of ips) {
      hub.traffic.ingest("node-a", answered(ip, now - 100, A));
      hub.traffic.ingest("node-b", answered(ip, now - 100, B));
    }
    let slices = 0;
    do {
      hub.tick(3);
      slices++;
    } while (hub.ticking);
    expect(slices).toBe(4);
    expect((await hub.incidents({ open: true })).map((i) => i.ip).sort()).toEqual([...ips].sort());
  });

  it("tells subscribers only what changed since a sequence number, as time alone moves verdicts, and everything after a cluster change", async () => {
    let now = 100 * MIN;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.tick();
    const obs = (ip: string) => hub.observe("node-a", answered(ip, now, A));
    obs("192.0.2.1");
    obs("192.0.2.2");
    const seq = hub.feed.seq;
    obs("192.0.2.2");
    expect(hub.feed.ipsSince(seq)).toEqual({ full: false, ips: ["192.0.2.2"] });
    expect(hub.feed.ipsSince(hub.feed.seq).ips).toEqual([]);
    // Time alone: the MAC stops answering; the next judging round says so.
    hub.tick();
    const quiet = hub.feed.seq;
    now += 6000;
    hub.tick();
    expect(hub.feed.ipsSince(quiet).ips.sort()).toEqual(["192.0.2.1", "192.0.2.2"]);
    expect(hub.ip("192.0.2.1")?.responders[0]?.answering).toBe(false);
    hub.clusterChanged();
    expect(hub.feed.ipsSince(quiet).full).toBe(true);
  });

  it("raises capture-lost when the only agent that saw an IP goes down", async () => {
    let now = 100 * MIN;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.traffic.ingest("node-a", answered(VIP, now, A));
    hub.tick();
    hub.disconnect("node-a");
    now += 6000;
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([]);
    now += SILENCE_MS;
    hub.tick();
    expect((await hub.incidents({ open: true })).map((i) => i.type)).toContain("capture-lost");
  });
});
