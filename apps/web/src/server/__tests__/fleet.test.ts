// The fleet: each cluster's hub publishes its summary and IP rows to the shared database, and every hub reads the
// others' from there. On PostgreSQL two clusters' hubs share one database, each in its own schema.
import { describe, expect, it } from "vitest";
import pg from "pg";
import { Hub } from "../hub/hub.js";
import { Fleet, REBUILD_MS, STALE_MS } from "../hub/fleet.js";
import type { IpRow } from "../hub/views.js";
import { openPostgres } from "../store/postgres.js";
import { migrate } from "../store/migrate.js";
import { Store } from "../store/store.js";
import { ENGINES, fresh, opened, type Engine } from "./engines.js";
import { answered, cluster, hello, until } from "./helpers.js";

const VIP = "192.0.2.200";
const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const C = "02:00:5e:00:00:0c";

/** hubOf opens a hub of `cluster` on the database at `place` (PostgreSQL: that cluster's schema). */
async function hubOf(e: Engine, place: string, name: string, clock: () => number): Promise<Hub> {
  const db = await e.open(place, name);
  opened.push(db);
  const hub = await Hub.open({ store: await Store.open(db, clock()), clock, cluster: { name, url: `https://${name}.example/` } });
  hub.setCluster(cluster(["node-a", "node-b"], [VIP]));
  return hub;
}

/** writes records how many rows each publish of `store`'s fleet wrote. */
function writes(store: Store): number[] {
  const counts: number[] = [];
  const write = store.fleet.writeIps.bind(store.fleet);
  store.fleet.writeIps = (cluster, changed, gone) => {
    counts.push(changed.length);
    return write(cluster, changed, gone);
  };
  return counts;
}

/** aged makes a cluster's last publish `ms` older, as if its hub had been silent that long. */
const aged = (store: Store, name: string, ms: number) =>
  store.db.run(
    `UPDATE ${store.db.dialect === "postgres" ? "public." : ""}fleet_clusters SET reported_at = reported_at - ? WHERE name = ?`,
    [ms, name],
  );

/** A summary as a hub of this release publishes it. */
const SUMMARY = { ips: 1, states: { single: 1 }, openIncidents: 0, agents: { up: 1, total: 1 }, kubernetes: "off", strictArp: "unknown" };

describe.each(ENGINES)("the fleet on $name", (e) => {
  it("publishes a row when its verdict or what it rests on changes, not for every request, and deletes rows gone", async () => {
    let now = 10_000;
    const store = await Store.open(await fresh(e), now);
    // A row an earlier leader published for an IP this hub no longer holds.
    await store.fleet.writeIps("east", [{ key: "192.0.2.99", json: JSON.stringify({ state: "single" }) }], []);
    const hub = await Hub.open({ store, clock: () => now, cluster: { name: "east", url: "https://east.example" } });
    // VIP is a LoadBalancer IP; another address of the segment with one responder is no business of the fleet.
    hub.setCluster(cluster(["node-a", "node-b"], [VIP]));
    const written = writes(store);
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, A));
    hub.observe("node-b", answered(VIP, 9000, null));
    hub.observe("node-a", answered("192.0.2.77", 9000, A));
    hub.tick();
    await hub.fleet.publish();
    expect((await store.fleet.keys("east")).sort()).toEqual([VIP]);
    expect((await hub.fleet.ips("east"))?.rows.map((r) => [r.ip, r.state, r.responders.map((x) => x.mac)])).toEqual([[VIP, "single", [A]]]);

    now = 15_000;
    hub.observe("node-a", answered(VIP, 14_000, A));
    hub.observe("node-b", answered(VIP, 14_000, null));
    await hub.fleet.publish();
    const [published] = await store.fleet.clusters();
    expect(published).toMatchObject({ name: "east", url: "https://east.example" });
    expect(JSON.parse(published?.summary ?? "")).toMatchObject({
      ips: 2,
      states: { single: 1 },
      openIncidents: 0,
      agents: { up: 2, total: 2 },
    });

    now = 20_000;
    hub.observe("node-b", answered(VIP, 19_000, B));
    hub.observe("node-a", answered(VIP, 19_000, A));
    // Two MACs answer the other address too: now it is the fleet's business.
    hub.observe("node-b", answered("192.0.2.77", 19_000, B));
    hub.observe("node-a", answered("192.0.2.77", 19_000, A));
    hub.tick();
    await hub.fleet.publish();
    expect((await store.fleet.keys("east")).sort()).toEqual([VIP, "192.0.2.77"]);
    expect((await store.fleet.ips("east")).map((r) => (JSON.parse(r.entry) as { state: string }).state)).toEqual([
      "multi-responder",
      "multi-responder",
    ]);
    // The first publish wrote the row; the second, with only more requests, none; the third the new verdicts.
    expect(written).toEqual([1, 0, 2]);
  });

  it("writes every row again after a failed publish, or when another hub pruned them while this one was silent", async () => {
    const now = 10_000;
    const store = await Store.open(await fresh(e), now);
    const hub = await Hub.open({ store, clock: () => now, cluster: { name: "east", url: null } });
    hub.setCluster(cluster(["node-a"], [VIP]));
    hub.connect(hello("node-a", A));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, A));
    await hub.fleet.publish();
    // Silent past any hub's forgetting: another hub's retention removes the cluster and its rows.
    await aged(store, "east", 2 * 86_400_000);
    await store.pruneStep(now, 60_000);
    expect(await store.fleet.keys("east")).toEqual([]);
    await hub.fleet.publish();
    expect(await store.fleet.keys("east")).toEqual([VIP]);

    const written = writes(store);
    const report = store.fleet.report.bind(store.fleet);
    store.fleet.report = () => Promise.reject(new Error("the database went away"));
    await expect(hub.fleet.publish()).rejects.toThrow("went away");
    store.fleet.report = report;
    await store.db.run("DELETE FROM fleet_ips");
    await hub.fleet.publish();
    expect(await store.fleet.keys("east")).toEqual([VIP]);
    expect(written).toEqual([0, 1]);
  });

  it("lists this cluster live, with rows of its own named after it", async () => {
    const now = 10_000;
    const hub = await Hub.open({ store: await Store.open(await fresh(e), now), clock: () => now });
    hub.setCluster(cluster(["node-a"], [VIP]));
    hub.connect(hello("node-a", A));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, A));
    expect(await hub.fleet.clusters()).toEqual([
      expect.objectContaining({ name: "default", self: true, reporting: true, url: null, summary: expect.objectContaining({ ips: 1 }) }),
    ]);
    expect((await hub.fleet.ips("default"))?.rows).toEqual([expect.objectContaining({ cluster: "default", ip: VIP, state: "single" })]);
    expect(await hub.fleet.ips("west")).toBeNull();
  });

  it("links only to http(s) addresses, and leaves out what another hub published that cannot be read", async () => {
    const now = 10_000;
    const store = await Store.open(await fresh(e), now);
    const hub = await Hub.open({ store, clock: () => now });
    await store.fleet.report("evil", "javascript:alert(document.cookie)", SUMMARY);
    await store.fleet.report("odd", "not a url", { ips: "many" });
    await store.fleet.report("west", "https://west.example/whohas/?x=1", SUMMARY);
    const clusters = await hub.fleet.clusters();
    expect(clusters.map((c) => [c.name, c.url, c.summary === null])).toEqual([
      ["default", null, false],
      ["evil", null, false],
      ["odd", null, true],
      ["west", "https://west.example/whohas", false],
    ]);
    expect((await hub.fleet.directory()).map((c) => [c.name, c.url])).toEqual(clusters.map((c) => [c.name, c.url]));

    const row = { ...hub.listSnapshot().rows[0], ip: VIP };
    await store.fleet.writeIps("west", [{ key: "bad", json: JSON.stringify({ ip: "198.51.100.1", state: "on fire" }) }], []);
    await store.db.run("INSERT INTO fleet_ips (cluster, key, entry, reported_at) VALUES ('west', 'broken', '{not json', 0)");
    hub.connect(hello("node-a", A));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, A));
    const good = hub.listSnapshot().rows[0] ?? row;
    await store.fleet.writeIps("west", [{ key: VIP, json: JSON.stringify(good) }], []);
    const west = await hub.fleet.ips("west");
    expect(west?.rows.map((r) => [r.cluster, r.ip, r.state])).toEqual([["west", VIP, "single"]]);
    expect(west?.unreadable).toBe(2);
  });

  it.runIf(e.name === "PostgreSQL")(
    "keeps two clusters' hubs apart in one database, each with its own verdicts, and shows each the other's",
    async () => {
      const now = 10_000;
      const clock = () => now;
      const place = await e.place();
      const [east, west] = await Promise.all([hubOf(e, place, "east", clock), hubOf(e, place, "west", clock)]);
      // The same address in both clusters, and the same node name: two nodes answer it in east, one in west.
      east.connect(hello("node-a", A));
      east.connect(hello("node-b", B));
      west.connect(hello("node-a", C));
      for (const h of [east, west]) h.tick();
      east.observe("node-a", answered(VIP, 9000, A));
      east.observe("node-b", answered(VIP, 9000, B));
      west.observe("node-a", answered(VIP, 9000, C));
      await until(() => (east.ip(VIP)?.findings.length ?? 0) > 0);
      await Promise.all([east.flush(true), west.flush(true)]);
      await Promise.all([east.fleet.publish(), west.fleet.publish()]);

      // Each cluster's rows are its own: incidents, agents.
      expect((await east.incidents({ open: true })).map((i) => i.ip)).toEqual([VIP]);
      expect(await west.incidents({ open: true })).toEqual([]);
      expect((await east.store.agents.list()).map((a) => [a.node, a.interfaces[0]?.mac])).toEqual([
        ["node-a", A],
        ["node-b", B],
      ]);
      expect((await west.store.agents.list()).map((a) => [a.node, a.interfaces[0]?.mac])).toEqual([["node-a", C]]);

      // Each hub shows both, the other as published, with the other's own verdict for the same address.
      for (const [h, other] of [
        [east, "west"],
        [west, "east"],
      ] as const) {
        const clusters = await h.fleet.clusters();
        expect(clusters.map((c) => [c.name, c.self, c.reporting])).toEqual([
          ["east", h === east, true],
          ["west", h === west, true],
        ]);
        expect(clusters.find((c) => c.name === other)?.url).toBe(`https://${other}.example`);
        const brief = (l: { name: string; url: string | null; self: boolean; reporting: boolean }[]) =>
          l.map(({ name, url, self, reporting }) => ({ name, url, self, reporting }));
        expect(brief(await h.fleet.directory())).toEqual(brief(clusters));
      }
      const rows = async (h: Hub, c: string) => (await h.fleet.ips(c))?.rows.map((r) => [r.cluster, r.ip, r.state]);
      expect(await rows(west, "east")).toEqual([["east", VIP, "multi-responder"]]);
      expect(await rows(west, "west")).toEqual([["west", VIP, "single"]]);
      expect(await rows(east, "west")).toEqual([["west", VIP, "single"]]);
      expect((await west.fleet.clusters()).find((c) => c.name === "east")?.summary).toMatchObject({
        states: { "multi-responder": 1 },
        openIncidents: 1,
      });

      // West's hub goes silent: east shows it as not reporting, with what it last said. The age is the database's:
      // east's own clock (not moved here) has no say in it.
      await aged(east.store, "west", STALE_MS + 1000);
      const seen = await east.fleet.clusters();
      expect(seen.find((c) => c.name === "west")).toMatchObject({ reporting: false, summary: expect.objectContaining({ ips: 1 }) });
      expect((await east.fleet.ips("west"))?.cluster.reporting).toBe(false);
      expect(await rows(east, "west")).toEqual([["west", VIP, "single"]]);
    },
  );

  it.runIf(e.name === "PostgreSQL")("refuses a storage.url whose options would put a named cluster in another schema", async () => {
    const url = new URL(await e.place());
    url.searchParams.set("options", "-c statement_timeout=60000");
    await expect(openPostgres(url.toString(), { cluster: "east" })).rejects.toThrow(
      /cluster east's connections use schema public, not whohas_east: remove options= from storage\.url/,
    );
  });

  it.runIf(e.name === "PostgreSQL")(
    "migrates a single cluster's database with a role that may create in public only, and a named one in a schema made for it",
    async () => {
      const place = new URL(await e.place());
      const admin = new pg.Client({ connectionString: place.toString() });
      await admin.connect();
      const role = `limited_${Math.random().toString(36).slice(2, 8)}`;
      const db = place.pathname.slice(1);
      // As a DBA sets it up on PostgreSQL 15 and later: the database is not the hub's, schema public is open to it.
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`REVOKE CREATE ON DATABASE ${db} FROM PUBLIC`);
      await admin.query(`GRANT CREATE, USAGE ON SCHEMA public TO ${role}`);
      const as = new URL(place);
      as.username = role;
      const single = await openPostgres(as.toString());
      opened.push(single);
      expect((await migrate(single, 1)).at(-1)).toBe(6);
      await expect(openPostgres(as.toString(), { cluster: "east" })).rejects.toThrow(
        /cannot create schema whohas_east for cluster east \(permission denied.*\): grant the hub's role CREATE on the database, or create the schema for it/,
      );
      await admin.query(`CREATE SCHEMA whohas_east AUTHORIZATION ${role}`);
      const east = await openPostgres(as.toString(), { cluster: "east" });
      opened.push(east);
      expect((await migrate(east, 1)).at(-1)).toBe(6);
      expect((await east.get<{ s: string }>("SELECT current_schema() AS s"))?.s).toBe("whohas_east");
      await admin.end();
    },
  );
});

describe("a publish", () => {
  it("builds only the rows whose judgement moved; every row when the inventory changes, each REBUILD_MS, or rows went missing", async () => {
    const sqlite = ENGINES[0];
    if (sqlite === undefined) throw new Error("no engine");
    const store = await Store.open(await fresh(sqlite), 0);
    let now = 0;
    let epoch = 1;
    const marks = new Map([
      ["192.0.2.1", {}],
      ["192.0.2.2", {}],
    ]);
    const states = new Map<string, IpRow["state"]>([
      ["192.0.2.1", "single"],
      ["192.0.2.2", "single"],
    ]);
    const built: string[] = [];
    const row = (key: string): IpRow => ({
      ip: key,
      address: key,
      vlan: null,
      family: 4,
      state: states.get(key) ?? "idle",
      services: [],
      announcer: null,
      expectedOwner: null,
      responders: [],
      fastest: null,
      findings: [],
      requests: now,
      lastRequest: now,
      silentDropNodes: [],
      lastHandover: null,
      changesPerHour: 0,
      askersChanged: 0,
    });
    const fleet = new Fleet({
      name: "east",
      url: null,
      repo: store.fleet,
      rows: () => [...marks.keys()].map(row),
      keys: () => [...marks.keys()],
      shown: () => () => true,
      row: (key) => (built.push(key), row(key)),
      mark: (key) => marks.get(key),
      epoch: () => epoch,
      summary: () => ({ kubernetes: "off", strictArp: { verdict: "unknown" } }) as never,
      openIncidents: () => Promise.resolve(0),
      agents: () => ({ up: 0, total: 0 }),
      clock: () => now,
    });
    const publish = async () => {
      built.length = 0;
      await fleet.publish();
      return [...built];
    };
    expect(await publish()).toEqual(["192.0.2.1", "192.0.2.2"]);
    now += 5000;
    expect(await publish()).toEqual([]);
    // One judgement moved (a new verdict key): that row alone, and it is written.
    marks.set("192.0.2.2", {});
    states.set("192.0.2.2", "multi-responder");
    expect(await publish()).toEqual(["192.0.2.2"]);
    expect(JSON.parse((await store.fleet.ips("east"))[1]?.entry ?? "")).toMatchObject({ state: "multi-responder" });
    expect(JSON.parse((await store.fleet.clusters())[0]?.summary ?? "")).toMatchObject({ states: { single: 1, "multi-responder": 1 } });
    epoch++;
    expect(await publish()).toEqual(["192.0.2.1", "192.0.2.2"]);
    now += REBUILD_MS;
    expect(await publish()).toEqual(["192.0.2.1", "192.0.2.2"]);
    now += 5000;
    expect(await publish()).toEqual([]);
    await store.db.run("DELETE FROM fleet_ips WHERE key = '192.0.2.1'");
    expect(await publish()).toEqual(["192.0.2.1", "192.0.2.2"]);
    expect((await store.fleet.keys("east")).sort()).toEqual(["192.0.2.1", "192.0.2.2"]);
  });
});
