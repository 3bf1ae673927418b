import { describe, expect, it } from "vitest";
import { silentLogger } from "@whohas/core";
import { BackgroundProbe } from "../actions/background-probe.js";
import { appRouter } from "../api/root.js";
import { createCallerFactory } from "../api/trpc.js";
import { Hub } from "../hub/hub.js";
import { callerContext, cluster, facts, hello } from "./helpers.js";

const VIP = "198.51.100.7";
const NODE_MAC = "02:00:00:00:00:0a";
/** An Intel prefix (00:1b:21), as the IEEE registry lists it. */
const STRANGER = "00:1b:21:00:00:2a";
/** Locally administered (a VM's chosen address): no vendor stands behind it. */
const VM = "52:54:00:12:34:56";

async function setup() {
  const clock = { now: 1_000_000 };
  const hub = await Hub.open({ clock: () => clock.now });
  hub.setCluster(cluster(["node-a"], [VIP]));
  hub.connect(hello("node-a", NODE_MAC));
  hub.setFacts("node-a", facts("node-a", [{ name: "eth0", mac: NODE_MAC, addresses: ["192.0.2.10/24"] }]));
  return { hub, clock };
}

// The pages name a host that is no node by its vendor: the API tells them, per MAC, its node and its vendor.
describe("naming strangers for the pages", () => {
  it("gives an incident's page the node or vendor of every MAC its findings name", async () => {
    const { hub, clock } = await setup();
    const finding = { firstSeen: clock.now, lastSeen: clock.now, count: 1, samples: [] };
    const { id } = await hub.store.incidents.open(
      { ...finding, ip: VIP, type: "address-conflict", macs: [STRANGER, VM], detail: "strangers answer" },
      {},
    );
    await hub.store.incidents.open({ ...finding, ip: VIP, type: "multi-responder", macs: [NODE_MAC, STRANGER], detail: "a race" }, {});
    const caller = createCallerFactory(appRouter)(callerContext(hub, "viewer"));
    const i = await caller.incidents.byId({ id });
    expect([...(i?.named ?? [])].sort((a, b) => a.mac.localeCompare(b.mac))).toEqual([
      { mac: STRANGER, node: null, vendor: "Intel Corporate" },
      { mac: NODE_MAC, node: "node-a", vendor: null },
      { mac: VM, node: null, vendor: null },
    ]);
  });

  it("tells the IP page who answered the background probe: a node by its name, a stranger with its vendor", async () => {
    const { hub } = await setup();
    const sent: { id: string; onResult: Parameters<BackgroundProbe["o"]["agents"]["command"]>[2] }[] = [];
    const probe = new BackgroundProbe({
      hub,
      agents: { command: (_node, msg, onResult) => (sent.push({ id: msg.id, onResult }), true) },
      intervalMs: 10_000,
      logger: silentLogger,
      random: () => 0,
    });
    probe.tick();
    probe.tick();
    const s = sent[0];
    if (s === undefined) throw new Error("no probe sent");
    s.onResult({
      v: 2,
      type: "command-done",
      id: s.id,
      ok: true,
      message: "done",
      probe: {
        ip: VIP,
        requests: 1,
        unanswered: 0,
        multiAnswered: 1,
        macs: [NODE_MAC, STRANGER].map((mac) => ({ mac, replies: 1, first: 1 })),
      },
    });
    const caller = createCallerFactory(appRouter)({ ...callerContext(hub, "viewer"), backgroundProbe: probe });
    const p = await caller.ips.backgroundProbe({ ip: VIP });
    expect(p.last?.answeredBy).toEqual([
      { mac: NODE_MAC, node: "node-a", vendor: null },
      { mac: STRANGER, node: null, vendor: "Intel Corporate" },
    ]);
  });
});
