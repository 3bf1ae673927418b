import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqlite } from "../store/db.js";
import { MIGRATIONS, migrate } from "../store/migrations.js";
import { MAX_ROWS_PER_FLUSH, Store } from "../store/store.js";
import { AUDIT_RETENTION_MS } from "../store/audit.js";
import { Hub } from "../hub/hub.js";
import { CLEAR_AFTER_MS, SILENCE_MS } from "@whohas/core";
import { aggregate, answered, hello } from "./helpers.js";

const VIP = "192.0.2.200";
const MIN = 60_000;
const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const entry = (kind: "request" | "reply" | "gratuitous-request", mac: string, t: number, count = 1) => aggregate(VIP, kind, mac, t, count);

const dirs: string[] = [];
function tmpDb(): string {
  const d = mkdtempSync(join(tmpdir(), "whohas-store-"));
  dirs.push(d);
  return join(d, "sub", "whohas.db");
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const nextTurn = () => new Promise((r) => setImmediate(r));

describe("migrations", () => {
  it("apply once, in order, and refuse a database newer than the code", () => {
    const db = openSqlite(":memory:");
    expect(migrate(db, 1)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(migrate(db, 2)).toEqual([]);
    db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [999, "future", 3]);
    expect(() => migrate(db, 4)).toThrow(/newer than this hub/);
  });

  it("put the database in WAL mode", () => {
    const path = tmpDb();
    const db = openSqlite(path);
    expect(db.get<{ journal_mode: string }>("PRAGMA journal_mode")?.journal_mode).toBe("wal");
    db.close();
  });
});

describe("Store", () => {
  it("counts a minute once across capture points (the most any saw), adds what follows a write, and shows unwritten minutes", () => {
    const s = new Store(openSqlite(":memory:"), 0);
    s.traffic.record("node-a", [
      entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 1, 3),
      entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 2, 2),
    ]);
    s.traffic.record("node-b", [entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 3, 4)]);
    expect(s.traffic.pendingRows).toBe(1);
    // Not written yet, and already in the timeline.
    expect(s.traffic.timeline(VIP, 0, 20 * MIN)).toEqual([{ minute: 10 * MIN, mac: "02:00:5e:00:00:0a", kind: "reply", count: 5 }]);
    expect(s.flush(10 * MIN + 5, true)).toBe(1);
    s.traffic.record("node-a", [entry("reply", "02:00:5e:00:00:0a", 10 * MIN + 4, 1), entry("reply", "02:00:5e:00:00:0a", 11 * MIN, 7)]);
    expect(s.flush(10 * MIN + 6)).toBe(2);
    expect(s.flush(10 * MIN + 7)).toBe(0);
    expect(s.traffic.timeline(VIP, 0, 20 * MIN)).toEqual([
      { minute: 10 * MIN, mac: "02:00:5e:00:00:0a", kind: "reply", count: 6 },
      { minute: 11 * MIN, mac: "02:00:5e:00:00:0a", kind: "reply", count: 7 },
    ]);
    expect(s.traffic.aggregates(0)).toEqual([
      expect.objectContaining({ ip: VIP, kind: "reply", count: 13, firstSeen: 10 * MIN + 1, lastSeen: 11 * MIN }),
    ]);
  });

  it("writes at most MAX_ROWS_PER_FLUSH rows per flush, oldest first, and everything when forced", () => {
    const s = new Store(openSqlite(":memory:"), 0);
    const n = MAX_ROWS_PER_FLUSH + 10;
    for (let i = 0; i < n; i++)
      s.traffic.record("node-a", [{ ...entry("request", "02:00:5e:00:00:01", MIN), ip: `10.1.${i >> 8}.${i & 255}` }]);
    expect(s.flush(MIN)).toBe(MAX_ROWS_PER_FLUSH);
    expect(s.traffic.pendingRows).toBe(10);
    expect(s.traffic.timeline("10.1.0.0", 0, 2 * MIN)).toHaveLength(1);
    expect(s.flush(MIN, true)).toBe(10);
  });

  it("keeps one row per MAC when a flood of MACs claims one IP, and lets written minutes go", () => {
    const s = new Store(openSqlite(":memory:"), 0);
    const macs = Array.from({ length: 100 }, (_, i) => `02:00:5e:00:01:${i.toString(16).padStart(2, "0")}`);
    for (const round of [1, 2])
      s.traffic.record(
        "node-a",
        macs.map((m, i) => entry("reply", m, 10 * MIN + round * 1000 + i)),
      );
    expect(s.traffic.pendingRows).toBe(100);
    const timeline = s.traffic.timeline(VIP, 0, 20 * MIN);
    expect(timeline).toHaveLength(100);
    expect(timeline.every((p) => p.count === 2)).toBe(true);
    expect(s.flush(11 * MIN, true)).toBe(100);
    // The minute is over and written: its buckets leave memory; a late frame for it adds to the stored row.
    s.flush(12 * MIN, false);
    s.traffic.record("node-a", [entry("reply", macs[0] ?? "", 10 * MIN + 59_000)]);
    s.flush(12 * MIN + 1, true);
    const first = s.traffic.timeline(VIP, 0, 20 * MIN).find((p) => p.mac === macs[0]);
    expect(first?.count).toBe(3);
    expect(s.traffic.aggregates(0).find((a) => a.mac === macs[0])).toMatchObject({
      firstSeen: 10 * MIN + 1000,
      lastSeen: 10 * MIN + 59_000,
    });
  });

  it("adds to a minute stored by a previous process instead of overwriting it", () => {
    const path = tmpDb();
    const a = new Store(openSqlite(path), 0);
    a.traffic.record("node-a", [entry("request", "02:00:5e:00:00:01", 10 * MIN, 5)]);
    a.close();
    const b = new Store(openSqlite(path), 0);
    b.traffic.record("node-a", [entry("request", "02:00:5e:00:00:01", 10 * MIN + 30_000, 2)]);
    b.flush(10 * MIN + 31_000, true);
    expect(b.traffic.timeline(VIP, 0, 20 * MIN)[0]?.count).toBe(7);
    b.close();
  });

  it("prunes traffic and resolved incidents past retention in bounded steps, keeps open incidents and recent audit", () => {
    const s = new Store(openSqlite(":memory:"), 0);
    for (let m = 0; m < 12_000; m++)
      s.traffic.record("node-a", [{ ...entry("request", "02:00:5e:00:00:01", m * MIN), ip: `10.0.${m >> 8}.${m & 255}` }]);
    s.flush(0, true);
    const f = { ip: VIP, type: "multi-responder" as const, macs: [], detail: "d", firstSeen: 0, lastSeen: 0, count: 1, samples: [0] };
    const resolved = s.incidents.open(f, {}).id;
    s.incidents.resolve(resolved, f, 1);
    s.incidents.open({ ...f, ip: "192.0.2.201" }, {});
    s.audit.append({ t: 5, actor: "alice", action: "announce", input: { ip: VIP }, outcome: "ok", detail: "" });
    const now = 12_000 * MIN;
    const steps: number[] = [];
    for (let n = -1; n !== 0;) steps.push((n = s.pruneStep(now, 1000 * MIN)));
    expect(Math.max(...steps)).toBeLessThanOrEqual(5000);
    expect(s.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM minute_stats")?.n).toBe(1000);
    expect(s.incidents.list().map((i) => i.ip)).toEqual(["192.0.2.201"]);
    expect(s.audit.list()).toHaveLength(1); // audit outlives traffic
    s.pruneStep(5 + AUDIT_RETENTION_MS + 1, 1000 * MIN);
    expect(s.audit.list()).toHaveLength(0);
  });

  it("keeps incidents with their events, acknowledgements and settings", () => {
    const s = new Store(openSqlite(":memory:"), 0);
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
    const id = s.incidents.open(f, { expectedOwner: { node: "node-a" } }).id;
    s.incidents.touch(id, { ...f, lastSeen: 200, count: 2 }, "now 2 MACs");
    expect(s.incidents.acknowledge(id, "alice", 250)).toBe(true);
    expect(s.incidents.acknowledge(999, "alice", 250)).toBe(false);
    s.incidents.resolve(id, { ...f, lastSeen: 200, count: 2 }, 300);
    const i = s.incidents.get(id);
    expect(i).toMatchObject({ resolvedAt: 300, acknowledgedBy: "alice", lastSeen: 200, evidence: { expectedOwner: { node: "node-a" } } });
    expect(i?.events.map((e) => e.kind)).toEqual(["opened", "updated", "acknowledged", "resolved"]);
    s.settings.set("retention", { days: 7 }, 1);
    expect(s.settings.get("retention")).toEqual({ days: 7 });
    expect(s.settings.get("nothing")).toBeNull();
  });
});

describe("incidents: one per subject, its findings as facets", () => {
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

  it("adds a second finding to the IP's open incident, names it after the worst, and resolves it with its last facet", () => {
    const s = new Store(openSqlite(":memory:"), 0);
    const first = s.incidents.open(finding("wrong-owner", 100), { evidence: "at the start" });
    expect(s.incidents.acknowledge(first.id, "alice", 150)).toBe(true);
    const second = s.incidents.open(finding("multi-responder", 200), null);
    // Something new is wrong: the acknowledgement was for what it held before.
    expect(s.incidents.get(first.id)?.acknowledgedBy).toBeNull();
    expect(first.incidentOpened).toBe(true);
    expect(second).toEqual({ id: first.id, incidentOpened: false });
    expect(s.incidents.open(finding("multi-responder", 250, "192.0.2.201"), null).id).not.toBe(first.id);
    let i = s.incidents.get(first.id);
    expect(i).toMatchObject({ type: "multi-responder", firstSeen: 100, lastSeen: 200, evidence: { evidence: "at the start" } });
    expect(i?.facets.map((f) => [f.type, f.resolvedAt])).toEqual([
      ["wrong-owner", null],
      ["multi-responder", null],
    ]);
    expect(i?.macs).toEqual(["02:00:5e:00:00:0a", "02:00:5e:00:00:0b"]);
    // The worst finding clears first: the incident stays open on the other, still named after its worst.
    expect(s.incidents.resolve(first.id, finding("multi-responder", 200), 900)).toBe(false);
    i = s.incidents.get(first.id);
    expect(i).toMatchObject({
      type: "multi-responder",
      resolvedAt: null,
      macs: ["02:00:5e:00:00:0b"],
      detail: "wrong-owner on 192.0.2.200",
    });
    expect(i?.facets.find((f) => f.type === "multi-responder")?.resolvedAt).toBe(900);
    expect(s.incidents.resolve(first.id, finding("wrong-owner", 300), 1000)).toBe(true);
    i = s.incidents.get(first.id);
    expect(i?.resolvedAt).toBe(1000);
    expect(i?.events.map((e) => e.kind)).toEqual(["opened", "acknowledged", "updated", "updated", "resolved"]);
    // A finding dated before the incident opened joins it after, in its timeline.
    const late = s.incidents.open(finding("wrong-owner", 2500, "192.0.2.202"), null);
    s.incidents.open(finding("multi-responder", 2400, "192.0.2.202"), null);
    expect(s.incidents.get(late.id)?.events.map((e) => [e.kind, e.t])).toEqual([
      ["opened", 2500],
      ["updated", 2500],
    ]);
    // What opens after is a new incident.
    expect(s.incidents.open(finding("silent-drop", 2000), null).incidentOpened).toBe(true);
    expect(s.incidents.list({ ip: VIP }).map((x) => x.facets.length)).toEqual([1, 2]);
  });

  it("migrates one incident per finding into one per subject: open ones of an IP merge into its oldest", () => {
    const db = openSqlite(":memory:");
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    for (const m of MIGRATIONS.filter((m) => m.version <= 4)) {
      db.exec(m.sql);
      db.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, 0]);
    }
    const put = (ip: string, type: string, first: number, resolved: number | null) => {
      const id = Number(
        db.run(
          "INSERT INTO incidents (ip, type, macs, detail, evidence, first_seen, last_seen, count, samples, resolved_at) VALUES (?, ?, ?, ?, '{}', ?, ?, 1, ?, ?)",
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
        ).lastInsertRowid,
      );
      db.run("INSERT INTO incident_events (incident_id, t, kind, detail) VALUES (?, ?, 'opened', ?)", [id, first, type]);
      db.run(
        "INSERT INTO incident_evidence (incident_id, node, collected_at, from_ms, to_ms, missing, truncated, held_from, frame_count, frames) VALUES (?, 'node-a', 0, 0, 0, NULL, 0, NULL, 0, '[]')",
        [id],
      );
      return id;
    };
    const past = put(VIP, "multi-responder", 10, 20);
    const oldest = put(VIP, "wrong-owner", 100, null);
    const merged = put(VIP, "multi-responder", 200, null);
    const other = put("192.0.2.201", "silent-drop", 150, null);
    db.run("UPDATE incidents SET acknowledged_by = 'alice', acknowledged_at = 205 WHERE id = ?", [merged]);
    expect(migrate(db, 0)).toEqual([5]);
    const s = new Store(db, 0);
    expect(
      s.incidents
        .list({ open: true })
        .map((i) => i.id)
        .sort(),
    ).toEqual([oldest, other].sort());
    const i = s.incidents.get(oldest);
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
    const gone = s.incidents.get(merged);
    expect(gone).toMatchObject({ resolvedAt: 210 });
    expect(gone?.events.at(-1)?.detail).toBe(`merged into incident #${oldest}: one incident per IP or node`);
    expect(s.incidents.get(past)?.facets).toHaveLength(1);
    expect(db.get<{ n: number }>("SELECT COUNT(*) AS n FROM incident_evidence")?.n).toBe(4);
    // A new incident never takes a merged one's id.
    const fresh = s.incidents.open(
      { ip: "192.0.2.209", type: "silent-drop", macs: [], detail: "d", firstSeen: 5000, lastSeen: 5000, count: 1, samples: [] },
      null,
    );
    expect(fresh.id).toBeGreaterThan(Math.max(past, oldest, merged, other));
  });
});

describe("Hub with a store", () => {
  it("opens an incident for one request answered twice, keeps it across a restart, and resolves it after the hysteresis", async () => {
    const path = tmpDb();
    let now = 100 * MIN;
    const clock = () => now;
    const hub = new Hub({ clock, store: new Store(openSqlite(path), now) });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered(VIP, now - 100, A));
    hub.observe("node-b", answered(VIP, now - 100, B));
    await nextTurn();
    expect(hub.incidents({ open: true }).map((i) => i.type)).toEqual(["multi-responder"]);
    hub.flush(true);
    hub.store.close();

    // Restart: same file; the agents come back as down, the traffic and the open incident are there.
    now += 2000;
    const again = new Hub({ clock, store: new Store(openSqlite(path), now) });
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
    expect(again.incidents({ open: true })).toHaveLength(1); // not opened a second time

    now += CLEAR_AFTER_MS + 1000;
    again.tick();
    expect(again.incidents({ open: false })).toEqual([expect.objectContaining({ id: 1, resolvedAt: now })]);
    again.store.close();
  });

  it("judges a round in slices when given a budget, with the same outcome", () => {
    const now = 100 * MIN;
    const hub = new Hub({ clock: () => now });
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
    expect(
      hub
        .incidents({ open: true })
        .map((i) => i.ip)
        .sort(),
    ).toEqual([...ips].sort());
  });

  it("tells subscribers only what changed since a sequence number, as time alone moves verdicts, and everything after a cluster change", () => {
    let now = 100 * MIN;
    const hub = new Hub({ clock: () => now });
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

  it("raises capture-lost when the only agent that saw an IP goes down", () => {
    let now = 100 * MIN;
    const hub = new Hub({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.traffic.ingest("node-a", answered(VIP, now, A));
    hub.tick();
    hub.disconnect("node-a");
    now += 6000;
    hub.tick();
    expect(hub.incidents({ open: true })).toEqual([]);
    now += SILENCE_MS;
    hub.tick();
    expect(hub.incidents({ open: true }).map((i) => i.type)).toContain("capture-lost");
  });
});
