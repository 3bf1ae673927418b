import { describe, expect, it, vi } from "vitest";
import { SILENCE_MS } from "@whohas/core";
import { Hub } from "../hub/hub.js";
import { SATURATED_SILENCE_MS } from "../hub/agents.js";
import { HubMetrics } from "../metrics.js";
import type { Sequenced } from "../hub/feed.js";
import { ASKER, aggregate, answered, cluster, facts, hello, observations } from "./helpers.js";

const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";

const nextTurn = () => new Promise((r) => setImmediate(r));

describe("Hub", () => {
  it("shows a silent agent as down after SILENCE_MS, and a disconnected one at once", async () => {
    let now = 0;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    expect(hub.agents.list()[0]?.up).toBe(true);
    now = SILENCE_MS + 1;
    expect(hub.agents.list()[0]?.up).toBe(false);
    hub.heartbeat("node-a");
    expect(hub.agents.list()[0]?.up).toBe(true);
    hub.disconnect("node-a");
    expect(hub.agents.list()[0]).toMatchObject({ up: false, connected: false });
  });

  it("judges what agents report at once: one request answered by two nodes is an incident before the next round", async () => {
    const now = 10_000;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick(); // a round has run: the context is known
    hub.observe("node-a", answered("192.0.2.7", now - 50, A));
    hub.observe("node-b", answered("192.0.2.7", now - 49, B));
    await nextTurn();
    expect((await hub.incidents({ open: true })).map((i) => [i.type, i.macs])).toEqual([["multi-responder", [A, B]]]);
    expect(hub.ip("192.0.2.7")?.state).toBe("multi-responder");
  });

  it("counts each IP in the metrics by the state its latest judgement gave, and one never judged by working it out", async () => {
    let now = 10_000;
    const hub = await Hub.open({ clock: () => now });
    const metrics = new HubMetrics(hub);
    const states = async (): Promise<Record<string, number>> => {
      const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === "whohas_hub_ips");
      return Object.fromEntries((m?.values ?? []).filter((v) => v.value > 0).map((v) => [String(v.labels.state), v.value]));
    };
    const responders = async () =>
      (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === "whohas_ip_responders")?.values.map((v) => [v.labels.ip, v.value]);
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered("192.0.2.7", now - 50, A));
    hub.observe("node-b", answered("192.0.2.7", now - 49, B));
    hub.observe("node-a", answered("192.0.2.8", now - 50, A));
    // Not judged yet: worked out at the scrape.
    expect(await states()).toEqual({ "multi-responder": 1, single: 1 });
    await nextTurn();
    expect(await states()).toEqual({ "multi-responder": 1, single: 1 });
    expect(await responders()).toEqual([
      ["192.0.2.7", 2],
      ["192.0.2.8", 1],
    ]);
    // A minute without traffic: both fall idle, as the next round finds (until it runs, the metric says what the
    // latest judgement said: the scrape reads the rounds' work, it does not redo it).
    now += 60_000;
    expect(await states()).toEqual({ "multi-responder": 1, single: 1 });
    hub.tick();
    expect(await states()).toEqual({ idle: 2 });
  });

  it("walks the IPs once per scrape for its three per-IP series, and again for the next scrape", async () => {
    const now = 10_000;
    const hub = await Hub.open({ clock: () => now });
    const metrics = new HubMetrics(hub);
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    hub.observe("node-a", answered("192.0.2.7", now - 50, A));
    const walks = vi.spyOn(hub.traffic.judge.counts, "ips");
    const first = await metrics.text();
    expect(walks).toHaveBeenCalledTimes(1);
    expect(first).toContain('whohas_hub_ips{state="single"} 1');
    expect(first).toContain('whohas_ip_responders{ip="192.0.2.7",vlan="",namespace="",service=""} 1');
    hub.observe("node-b", answered("192.0.2.7", now - 40, B));
    await nextTurn();
    const second = await metrics.text();
    expect(walks).toHaveBeenCalledTimes(2);
    expect(second).toContain('whohas_hub_ips{state="multi-responder"} 1');
    expect(second).toContain('whohas_ip_responders{ip="192.0.2.7",vlan="",namespace="",service=""} 2');
  });

  it("judges the same address on two VLANs apart: two rows, each with its own verdict and incident", async () => {
    const now = 10_000;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    // VLAN 30: node-a alone answers. VLAN 40: node-a and node-b both answer the same request.
    hub.observe("node-a", answered("192.0.2.7", now - 50, A, 30));
    hub.observe("node-a", answered("192.0.2.7", now - 40, A, 40));
    hub.observe("node-b", answered("192.0.2.7", now - 40, B, 40));
    await nextTurn();
    hub.tick();
    const rows = hub.ips().map((v) => [v.ip, v.address, v.vlan, v.family, v.state, v.responders.map((r) => r.mac)]);
    expect(rows).toEqual([
      ["192.0.2.7@30", "192.0.2.7", 30, 4, "single", [A]],
      ["192.0.2.7@40", "192.0.2.7", 40, 4, "multi-responder", [A, B]],
    ]);
    expect((await hub.incidents({ open: true })).map((i) => [i.ip, i.type])).toEqual([["192.0.2.7@40", "multi-responder"]]);
    expect(hub.ip("192.0.2.7")).toBeNull();
  });

  it("publishes what changed on the feed, a burst as one batch, and ends a subscriber on abort", async () => {
    const hub = await Hub.open({ clock: () => 10_000 });
    const ac = new AbortController();
    const it = hub.feed.changes(ac.signal);
    const next = it.next();
    hub.connect(hello("node-a", A));
    hub.observe("node-a", answered("192.0.2.7", 9_000, A));
    const batch = (await next).value as readonly Sequenced[];
    expect(batch.map((c) => c.kind)).toEqual(expect.arrayContaining(["agents", "everything", "ips"]));
    // Before the MACs learned (everything may read differently) a list is sent whole; after, only what changed.
    const everything = batch.find((c) => c.kind === "everything")?.seq ?? 0;
    expect(hub.feed.ipsSince(everything - 1)).toEqual({ full: true, ips: [] });
    expect(hub.feed.ipsSince(everything)).toEqual({ full: false, ips: ["192.0.2.7"] });
    const ended = it.next();
    ac.abort();
    expect((await ended).done).toBe(true);
  });

  /**
   * silentAgent: a hub whose node-a said hello and went silent at 0; `until(t, busy)` moves the clock to `t`, with the
   * hub's event loop that busy each second on the way (no load recorded when null).
   */
  const silentAgent = async () => {
    let now = 0;
    const hub = await Hub.open({ clock: () => now });
    hub.connect(hello("node-a", A));
    hub.tick();
    hub.disconnect("node-a");
    const until = (t: number, busy: number | null = null) => {
      if (busy !== null) for (now += 1000; now <= t; now += 1000) hub.agents.load.record(now, busy);
      now = t;
    };
    return { hub, until, now: () => now };
  };

  it("opens an agent-down incident for a node silent past SILENCE_MS, and resolves it once the agent is back", async () => {
    const { hub, until, now } = await silentAgent();
    until(SILENCE_MS + 1000);
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([
      expect.objectContaining({ ip: "node/node-a", type: "agent-down", detail: expect.stringContaining("silent for 31 s") as string }),
    ]);
    hub.connect(hello("node-a", A));
    until(now() + 61_000); // the 60 s of hysteresis every finding has
    hub.heartbeat("node-a");
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([]);
  });

  it("calls no agent down while the hub itself was too busy to hear it, and does once it was not", async () => {
    const { hub, until } = await silentAgent();
    // Saturated for the whole silence: the agent may well have spoken, unread.
    until(SILENCE_MS + 1000, 0.99);
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([]);
    // Then the hub has time again, and the agent is still silent: it is down.
    until(2 * SILENCE_MS + 2000, 0.3);
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([expect.objectContaining({ ip: "node/node-a", type: "agent-down" })]);
  });

  it("still calls an agent down after minutes of silence on a hub saturated for good", async () => {
    const { hub, until } = await silentAgent();
    until(SATURATED_SILENCE_MS, 0.99);
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([]);
    until(SATURATED_SILENCE_MS + 2000, 0.99);
    hub.tick();
    expect(await hub.incidents({ open: true })).toEqual([expect.objectContaining({ ip: "node/node-a", type: "agent-down" })]);
  });

  it("bounds the IPs it tracks: the least recently active go, IPs with an open incident stay, the limit is told", async () => {
    let now = 10_000;
    const told: number[] = [];
    const hub = await Hub.open({ clock: () => now, limits: { maxIps: 100 }, onLimit: (s) => told.push(s.evictedIps) });
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.tick();
    // 192.0.2.200 has two responders: its open incident keeps it however old it gets.
    hub.observe("node-a", answered("192.0.2.200", now, A));
    hub.observe("node-b", answered("192.0.2.200", now, B));
    await nextTurn();
    expect((await hub.incidents({ open: true })).map((i) => i.ip)).toEqual(["192.0.2.200"]);
    for (let i = 0; i < 150; i++) {
      now += 10;
      hub.observe("node-a", { ...answered(`198.51.${Math.floor(i / 250)}.${i % 250}`, now, null), requests: [] });
    }
    const s = hub.traffic.limitStatus();
    expect(s.ips).toBeLessThanOrEqual(100);
    expect(s.evictedIps).toBe(150 + 1 - s.ips);
    expect(s.lastHit).not.toBeNull();
    expect(told).toHaveLength(1); // once a minute, not once per eviction
    const ips = new Set(hub.ips().map((v) => v.ip));
    expect(ips.has("192.0.2.200")).toBe(true);
    expect(ips.has("198.51.0.149")).toBe(true); // the newest stay
    expect(ips.has("198.51.0.0")).toBe(false); // the oldest went
    expect(hub.feed.ipsSince(1).full).toBe(true); // live lists are sent whole once
  });

  it("names the cluster's nodes no live agent watches, and what their agents' probes send as theirs", async () => {
    let now = 10_000;
    const hub = await Hub.open({ clock: () => now });
    expect(hub.summary().unwatchedNodes).toBeNull();
    hub.setCluster(cluster(["node-a", "node-b", "node-c"]));
    // node-a connected but has not sent its facts (only its capture interfaces are known), node-b has, node-c none.
    hub.connect(hello("node-a", A));
    hub.connect(hello("node-b", B));
    hub.setFacts(
      "node-b",
      facts("node-b", [
        { name: "eth0", mac: B, addresses: ["192.0.2.10/24", "fe80::1/64"] },
        { name: "kube-ipvs0", mac: "02:00:5e:00:00:99", addresses: ["198.51.100.7/32"] },
      ]),
    );
    expect(hub.summary().unwatchedNodes).toEqual(["node-a", "node-c"]);
    // A probe from node-b asks from its addresses and MACs, never from kube-ipvs0's Service IPs.
    expect(hub.agents.askersOf("node-b").sort()).toEqual([B, "02:00:5e:00:00:99", "192.0.2.10", "fe80::1"].sort());
    now += SILENCE_MS + 1;
    expect(hub.summary().unwatchedNodes).toEqual(["node-a", "node-b", "node-c"]);
  });

  it("does not sort the table at every batch when IPs that must stay hold it above the limit", async () => {
    let now = 10_000;
    const hub = await Hub.open({ clock: () => now, limits: { maxIps: 100 } });
    // 120 LoadBalancer IPs: they always stay, whatever the limit.
    const lb = Array.from({ length: 120 }, (_, i) => `198.51.100.${i}`);
    hub.setCluster(cluster(["node-a"], lb));
    hub.connect(hello("node-a", A));
    const batch = (ips: string[]) => observations(ips.map((ip) => aggregate(ip, "request", ASKER.mac, now)));
    hub.observe("node-a", batch(lb));
    expect(hub.traffic.limitStatus()).toMatchObject({ ips: 120, evictedIps: 0 });
    // Sorting by activity reads each IP's last activity: watched, it says whether a batch sorted the table.
    const sorted = vi.spyOn(hub.traffic.judge.counts, "lastActivity");
    // Plain IPs then: kept until the table grows another 5 % of the limit, then let go of, oldest first.
    for (let i = 0; i < 5; i++) {
      now += 10;
      hub.observe("node-a", batch([`203.0.113.${i}`]));
    }
    expect(hub.traffic.limitStatus()).toMatchObject({ ips: 125, evictedIps: 0 });
    expect(sorted).not.toHaveBeenCalled();
    now += 10;
    hub.observe("node-a", batch(["203.0.113.5"]));
    expect(sorted).toHaveBeenCalled();
    expect(hub.traffic.limitStatus()).toMatchObject({ ips: 120, evictedIps: 6 });
    expect(hub.ips().filter((v) => v.ip.startsWith("198.51.100."))).toHaveLength(120);
  });
});
