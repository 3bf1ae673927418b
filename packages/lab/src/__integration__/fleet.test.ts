// Two labs as two clusters of one fleet: each with its own nodes, kernels, agents, test API server and hub, both hubs
// on one real PostgreSQL. The same LoadBalancer IP is in both: east's three nodes all answer for it (kube-proxy's
// IPVS with strictARP false), west's one node alone. Either hub's dashboard shows both clusters, and the address is
// two rows, each with its own cluster's verdict.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../hub-process.js";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { startStack, type Stack } from "../stack.js";
import { api, eventually, signIn } from "./hub-client.js";

interface Row {
  cluster: string;
  ip: string;
  state: string;
  responders: { node: string | null; answering: boolean }[];
  reporting?: boolean;
}
interface Cluster {
  name: string;
  self: boolean;
  reporting: boolean;
  url: string | null;
  summary: { ips: number; states: Record<string, number>; agents: { up: number; total: number } };
}

describe("two clusters in one fleet", () => {
  let pg: TestPostgres;
  let dir: string;
  let east: Stack;
  let west: Stack;
  const started: Stack[] = [];

  beforeAll(async () => {
    pg = await startPostgres();
    dir = await mkdtemp(join(tmpdir(), "whohas-fleet-"));
    // The port is chosen first: the hub's address is in its own config, for the other hub's links.
    const lab = async (name: string, nodes: number, port: number) => {
      const s = await startStack({
        nodes,
        vips: 1,
        kube: true,
        port,
        clusterName: name,
        requestIntervalMs: 500,
        hubConfig: {
          storage: { path: join(dir, `${name}.db`), url: pg.url, retention: "1d" },
          alerting: { externalUrl: `http://localhost:${port}` },
        },
      });
      started.push(s);
      return s;
    };
    // One after the other: each lab's set-up is heavy on two cores.
    east = await lab("east", 3, await freePort());
    west = await lab("west", 1, await freePort());
  }, 240_000);
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const rows = (from: Stack, cluster: string) => api<Row[]>(from.url, from.viewerToken, `ips?cluster=${cluster}`);

  it("shows the same address as two rows, each with its own cluster's verdict, on either hub", async () => {
    const vip = east.lab.vips[0] ?? "";
    expect(west.lab.vips[0]).toBe(vip);
    for (const from of [east, west]) {
      await eventually(
        async () => rows(from, "east"),
        (r) => r.some((x) => x.ip === vip && x.state === "multi-responder"),
        30_000,
      );
      await eventually(
        async () => rows(from, "west"),
        (r) => r.some((x) => x.ip === vip && x.state === "single"),
        30_000,
      );
    }
    const [eastRow, westRow] = [(await rows(west, "east")).find((x) => x.ip === vip), (await rows(east, "west")).find((x) => x.ip === vip)];
    expect(eastRow).toMatchObject({ cluster: "east", reporting: true });
    expect(
      eastRow?.responders
        .filter((r) => r.answering)
        .map((r) => r.node)
        .sort(),
    ).toEqual(east.lab.nodes.map((n) => n.name).sort());
    expect(westRow).toMatchObject({ cluster: "west", reporting: true });
    expect(westRow?.responders.filter((r) => r.answering).map((r) => r.node)).toEqual([west.lab.nodes[0]?.name]);

    // The dashboard's own API (a signed-in session) lists both clusters, each linking to its hub.
    const session = await signIn(east, "viewer");
    const clusters = await session.query<Cluster[]>("fleet.clusters");
    expect(clusters.map((c) => [c.name, c.self, c.reporting, c.url])).toEqual([
      ["east", true, true, east.url],
      ["west", false, true, west.url],
    ]);
    expect(clusters.find((c) => c.name === "west")?.summary).toMatchObject({ states: { single: 1 }, agents: { up: 1, total: 1 } });
    expect(clusters.find((c) => c.name === "east")?.summary).toMatchObject({
      states: { "multi-responder": 1 },
      agents: { up: 3, total: 3 },
    });
    const fromDashboard = await session.query<{ rows: Row[] }>("fleet.ips", { cluster: "west" });
    expect(fromDashboard.rows.map((r) => [r.cluster, r.ip, r.state])).toEqual([["west", vip, "single"]]);
  });

  it("keeps each cluster's incidents and nodes its own", async () => {
    const incidents = (s: Stack) => api<{ cluster: string; ip: string; type: string }[]>(s.url, s.viewerToken, "incidents?state=open");
    await eventually(
      () => incidents(east),
      (l) => l.some((i) => i.type === "multi-responder"),
      30_000,
    );
    expect((await incidents(west)).filter((i) => i.type === "multi-responder")).toEqual([]);
    expect((await incidents(east)).every((i) => i.cluster === "east")).toBe(true);
    const nodes = (s: Stack) => api<{ cluster: string; node: string }[]>(s.url, s.viewerToken, "nodes");
    expect((await nodes(west)).map((n) => [n.cluster, n.node])).toEqual([["west", west.lab.nodes[0]?.name]]);
    expect((await nodes(east)).map((n) => n.cluster)).toEqual(["east", "east", "east"]);
  });

  it("shows a cluster whose hub stopped as not reporting, with what it last published", async () => {
    await west.stopHub();
    const seen = await eventually(
      () => api<Cluster[]>(east.url, east.viewerToken, "clusters"),
      (c) => c.find((x) => x.name === "west")?.reporting === false,
      60_000,
      1000,
    );
    expect(seen.find((c) => c.name === "west")?.summary.states).toEqual({ single: 1 });
    expect((await rows(east, "west")).map((r) => [r.state, r.reporting])).toEqual([["single", false]]);
  }, 90_000);
});
