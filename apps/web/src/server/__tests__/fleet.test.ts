// The fleet: each cluster's hub publishes its summary and IP rows to the shared database, and every hub reads the
// others' from there. On PostgreSQL two clusters' hubs share one database, each in its own schema.
import { describe, expect, it } from "vitest";
import { Hub } from "../hub/hub.js";
import { STALE_MS } from "../hub/fleet.js";
import { Store } from "../store/store.js";
import { ENGINES, fresh, opened, type Engine } from "./engines.js";
import { answered, hello, until } from "./helpers.js";

const VIP = "192.0.2.200";
const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";
const C = "02:00:5e:00:00:0c";

/** hubOf opens a hub of `cluster` on the database at `place` (PostgreSQL: that cluster's schema). */
async function hubOf(e: Engine, place: string, cluster: string, clock: () => number): Promise<Hub> {
  const db = await e.open(place, cluster);
  opened.push(db);
  return Hub.open({ store: await Store.open(db, clock()), clock, cluster: { name: cluster, url: `https://${cluster}.example/` } });
}

describe.each(ENGINES)("the fleet on $name", (e) => {
  it("publishes a row when its verdict or what it rests on changes, not for every request, and deletes rows gone", async () => {
    let now = 10_000;
    const store = await Store.open(await fresh(e), now);
    // A row an earlier leader published for an IP this hub no longer holds.
    await store.fleet.writeIps("east", [{ key: "192.0.2.99", entry: { state: "single" } }], [], 1000);
    const hub = await Hub.open({ store, clock: () => now, cluster: { name: "east", url: "https://east.example" } });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, A));
    hub.observe("node-b", answered(VIP, 9000, null));
    await hub.fleet.publish();
    const first = await store.fleet.ips<{ state: string; responders: { mac: string }[] }>("east");
    expect(first.map((r) => [r.key, r.entry.state, r.entry.responders.map((x) => x.mac), r.reportedAt])).toEqual([
      [VIP, "single", [A], 10_000],
    ]);

    now = 15_000;
    hub.observe("node-a", answered(VIP, 14_000, A));
    hub.observe("node-b", answered(VIP, 14_000, null));
    await hub.fleet.publish();
    expect((await store.fleet.ips("east")).map((r) => r.reportedAt)).toEqual([10_000]);
    expect(await store.fleet.clusters()).toEqual([
      {
        name: "east",
        url: "https://east.example",
        reportedAt: 15_000,
        summary: expect.objectContaining({ ips: 1, states: { single: 1 }, openIncidents: 0, agents: { up: 2, total: 2 } }),
      },
    ]);

    now = 20_000;
    hub.observe("node-b", answered(VIP, 19_000, B));
    hub.observe("node-a", answered(VIP, 19_000, A));
    await hub.fleet.publish();
    const second = await store.fleet.ips<{ state: string }>("east");
    expect(second.map((r) => [r.entry.state, r.reportedAt])).toEqual([["multi-responder", 20_000]]);
  });

  it("lists this cluster live and rows of its own with their cluster's name", async () => {
    const now = 10_000;
    const hub = await Hub.open({ store: await Store.open(await fresh(e), now), clock: () => now });
    hub.connect(hello("node-a", A));
    hub.tick();
    hub.observe("node-a", answered(VIP, 9000, A));
    expect(await hub.fleet.clusters()).toEqual([
      expect.objectContaining({ name: "default", self: true, reporting: true, url: null, summary: expect.objectContaining({ ips: 1 }) }),
    ]);
    expect((await hub.fleet.ips("default"))?.rows).toEqual([expect.objectContaining({ cluster: "default", ip: VIP, state: "single" })]);
    expect(await hub.fleet.ips("west")).toBeNull();
  });

  it.runIf(e.name === "PostgreSQL")(
    "keeps two clusters' hubs apart in one database, each with its own verdicts, and shows each the other's",
    async () => {
      let now = 10_000;
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
        expect(clusters.find((c) => c.name === other)?.url).toBe(`https://${other}.example/`);
      }
      const rows = async (h: Hub, c: string) => (await h.fleet.ips(c))?.rows.map((r) => [r.cluster, r.ip, r.state]);
      expect(await rows(west, "east")).toEqual([["east", VIP, "multi-responder"]]);
      expect(await rows(west, "west")).toEqual([["west", VIP, "single"]]);
      expect(await rows(east, "west")).toEqual([["west", VIP, "single"]]);
      expect((await west.fleet.clusters()).find((c) => c.name === "east")?.summary).toMatchObject({
        states: { "multi-responder": 1 },
        openIncidents: 1,
      });

      // West's hub goes silent: east shows it as not reporting, with what it last said.
      now += STALE_MS + 1;
      await east.fleet.publish();
      const seen = await east.fleet.clusters();
      expect(seen.find((c) => c.name === "west")).toMatchObject({ reporting: false, reportedAt: 10_000 });
      expect((await east.fleet.ips("west"))?.cluster.reporting).toBe(false);
    },
  );
});
