import { describe, expect, it } from "vitest";
import { AGENT_SILENCE_MS, Hub } from "../hub/hub.js";

const hello = { v: 1 as const, type: "hello" as const, node: "node-a", agentVersion: "t", interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }] };

describe("Hub", () => {
  it("shows a silent agent as down after 30 s, and a disconnected one at once", () => {
    let now = 0;
    const hub = new Hub({ clock: () => now });
    hub.connect(hello);
    expect(hub.agents()[0]?.up).toBe(true);
    now = AGENT_SILENCE_MS + 1;
    expect(hub.agents()[0]?.up).toBe(false);
    hub.heartbeat("node-a");
    expect(hub.agents()[0]?.up).toBe(true);
    hub.disconnect("node-a");
    expect(hub.agents()[0]).toMatchObject({ up: false, connected: false });
  });

  it("keeps an agent connected while an older socket of the same node closes late", () => {
    const hub = new Hub({ clock: () => 0 });
    hub.connect(hello);
    hub.connect(hello);
    hub.disconnect("node-a");
    expect(hub.agents()[0]?.connected).toBe(true);
  });

  it("wakes subscribers on change, coalescing bursts, and ends on abort", async () => {
    const hub = new Hub({ clock: () => 0 });
    const ac = new AbortController();
    const it = hub.changes(ac.signal, 60_000);
    expect((await it.next()).done).toBe(false); // immediate first yield
    const next = it.next();
    hub.connect(hello);
    hub.connect(hello);
    expect((await next).done).toBe(false);
    const ended = it.next();
    ac.abort();
    expect((await ended).done).toBe(true);
  });

  it("judges what agents just reported between the rounds (tickTouched), so a second responder opens at once", () => {
    const now = 10_000;
    const hub = new Hub({ clock: () => now });
    const b = { ...hello, node: "node-b", interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0b", up: true }] };
    hub.connect(hello);
    hub.connect(b);
    hub.tick(); // a round has run: the context is known
    const entry = (kind: "request" | "reply", mac: string) => ({ ip: "192.0.2.7", mac, kind, iface: "eth0", count: 1, firstSeen: now - 100, lastSeen: now - 100, peerIp: "192.0.2.1", targetMac: null, ethernetMismatch: 0 });
    hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: [entry("request", "02:00:5e:00:00:01"), entry("reply", "02:00:5e:00:00:0a"), entry("reply", "02:00:5e:00:00:0b")] });
    const t = hub.tickTouched();
    expect(t.map((x) => [x.kind, x.finding.type])).toEqual([["opened", "multi-responder"]]);
    expect(hub.tickTouched()).toEqual([]); // nothing new reported
    expect(hub.incidents({ open: true }).map((i) => i.type)).toEqual(["multi-responder"]);
  });

  it("opens an agent-down incident for a node silent past 30 s, and resolves it once the agent is back", () => {
    let now = 0;
    const hub = new Hub({ clock: () => now });
    hub.connect(hello);
    hub.tick();
    hub.disconnect("node-a");
    now = AGENT_SILENCE_MS + 1000;
    expect(hub.tick().map((t) => [t.kind, t.finding.type, t.finding.ip])).toEqual([["opened", "agent-down", "node/node-a"]]);
    expect(hub.incidents({ open: true })).toEqual([expect.objectContaining({ ip: "node/node-a", type: "agent-down", detail: expect.stringContaining("silent for 31 s") })]);
    hub.connect(hello);
    now += 61_000; // the 60 s of hysteresis every finding has
    hub.heartbeat("node-a");
    expect(hub.tick().map((t) => [t.kind, t.finding.type])).toEqual([["cleared", "agent-down"]]);
  });

  it("finds a flip-flop: the IP goes back to the node that had it within 10 min", () => {
    let now = 10_000;
    const hub = new Hub({ clock: () => now });
    const b = { ...hello, node: "node-b", interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0b", up: true }] };
    hub.connect(hello);
    hub.connect(b);
    const answer = (mac: string) => {
      const e = (kind: "request" | "reply", m: string) => ({ ip: "192.0.2.8", mac: m, kind, iface: "eth0", count: 1, firstSeen: now, lastSeen: now, peerIp: "192.0.2.1", targetMac: null, ethernetMismatch: 0 });
      hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: [e("request", "02:00:5e:00:00:01"), e("reply", mac)] });
      hub.heartbeat("node-a");
      hub.heartbeat("node-b");
      return hub.tick().map((t) => `${t.kind} ${t.finding.type}`);
    };
    expect(answer("02:00:5e:00:00:0a")).toEqual([]);
    now += 60_000;
    expect(answer("02:00:5e:00:00:0b")).toEqual([]); // a move is not a flip-flop
    now += 60_000;
    expect(answer("02:00:5e:00:00:0a")).toEqual(["opened flip-flop"]);
    expect(hub.incidents({ open: true }).find((i) => i.type === "flip-flop")?.detail).toContain("went back from node-b to node-a");
  });

  it("bounds the IPs it tracks: the least recently active go, IPs with an open incident stay, the limit is told", () => {
    let now = 10_000;
    const told: number[] = [];
    const hub = new Hub({ clock: () => now, limits: { maxIps: 100 }, onLimit: (s) => told.push(s.evictedIps) });
    hub.connect(hello);
    const e = (ip: string, kind: "request" | "reply", mac: string) => ({ ip, mac, kind, iface: "eth0", count: 1, firstSeen: now, lastSeen: now, peerIp: "192.0.2.1", targetMac: null, ethernetMismatch: 0 });
    // 192.0.2.200 has two responders: an open incident keeps it however old it gets.
    hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: [e("192.0.2.200", "request", "02:00:5e:00:00:01"), e("192.0.2.200", "reply", "02:00:5e:00:00:0a"), e("192.0.2.200", "reply", "02:00:5e:00:00:0b")] });
    hub.tick();
    expect(hub.incidents({ open: true }).map((i) => i.ip)).toEqual(["192.0.2.200"]);
    for (let i = 0; i < 150; i++) {
      now += 10;
      hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: [e(`198.51.${Math.floor(i / 250)}.${i % 250}`, "request", "02:00:5e:00:00:01")] });
    }
    const s = hub.limitStatus();
    expect(s.ips).toBeLessThanOrEqual(100);
    expect(s.evictedIps).toBe(150 + 1 - s.ips);
    expect(s.lastHit).not.toBeNull();
    expect(told).toHaveLength(1); // once a minute, not once per eviction
    const ips = new Set(hub.ips().map((v) => v.ip));
    expect(ips.has("192.0.2.200")).toBe(true);
    expect(ips.has("198.51.0.149")).toBe(true); // the newest stay
    expect(ips.has("198.51.0.0")).toBe(false); // the oldest went
    expect(hub.ipsSince(1).full).toBe(true); // live lists are sent whole once
  });

  it("does not sort the table at every batch when IPs that must stay hold it above the limit", () => {
    let now = 10_000;
    const hub = new Hub({ clock: () => now, limits: { maxIps: 100 } });
    // 120 LoadBalancer IPs: they always stay, whatever the limit.
    const lb = Array.from({ length: 120 }, (_, i) => `198.51.100.${i}`);
    hub.setCluster({
      snapshot: () => ({
        services: lb.map((ip, i) => ({ namespace: "demo", name: `svc-${i}`, externalTrafficPolicy: "Cluster" as const, ingressIPs: [ip], ports: [], endpoints: [] })),
        nodes: [{ name: "node-a", labels: {}, networkUnavailable: false }],
        l2Advertisements: [],
        l2Statuses: [],
        nodeAssigned: new Map(),
        metallbInstalled: false,
        pools: [],
      }),
      kubeProxyConfig: () => null,
      kubeProxyRollout: () => null,
      metallb: false,
    });
    hub.connect(hello);
    const e = (ip: string) => ({ ip, mac: "02:00:5e:00:00:01", kind: "request" as const, iface: "eth0", count: 1, firstSeen: now, lastSeen: now, peerIp: "192.0.2.1", targetMac: null, ethernetMismatch: 0 });
    hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: lb.map(e) });
    expect(hub.limitStatus()).toMatchObject({ ips: 120, evictedIps: 0 });
    // Plain IPs then: kept until the table grows another 5 % of the limit, then let go of, oldest first.
    const plain = (i: number) => `203.0.113.${i}`;
    for (let i = 0; i < 5; i++) {
      now += 10;
      hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: [e(plain(i))] });
    }
    expect(hub.limitStatus()).toMatchObject({ ips: 125, evictedIps: 0 });
    now += 10;
    hub.observe("node-a", { v: 1, type: "observations", dropped: 0, entries: [e(plain(5))] });
    expect(hub.limitStatus()).toMatchObject({ ips: 120, evictedIps: 6 });
    expect(hub.ips().filter((v) => v.ip.startsWith("198.51.100."))).toHaveLength(120);
  });
});
