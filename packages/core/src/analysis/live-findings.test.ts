import { describe, expect, it } from "vitest";
import { FindingTracker, liveFindings, type LiveContext } from "./live-findings.js";
import { IpTable } from "./ip-table.js";
import { CLEAR_AFTER_MS } from "./findings.js";
import type { ObservationAggregate } from "../wire.js";
import { CLIENT_IP, CLIENT_MAC, NODE_A_MAC, NODE_B_MAC, VIP } from "../__tests__/fixtures.js";

function agg(kind: ObservationAggregate["kind"], mac: string, t: number): ObservationAggregate {
  return { ip: VIP, mac, kind, iface: "eth0", count: 1, firstSeen: t, lastSeen: t, peerIp: CLIENT_IP, targetMac: CLIENT_MAC, ethernetMismatch: 0 };
}
const nodes = new Map([[NODE_A_MAC, "node-a"], [NODE_B_MAC, "node-b"]]);
const nodeOf = (mac: string) => nodes.get(mac) ?? null;
const ctx = (c: Partial<LiveContext> = {}): LiveContext => ({ expectedOwner: null, silentDropNodes: [], downAgents: new Set(), ...c });

function view(entries: [string, ObservationAggregate[]][], now: number) {
  const t = new IpTable();
  for (const [node, e] of entries) t.apply(node, e);
  const v = t.view(VIP, now, nodeOf);
  if (v === null) throw new Error("no view");
  return v;
}

describe("liveFindings", () => {
  it("finds multi-responder and wrong-owner when two nodes answer and one is not the owner", () => {
    const v = view([["node-a", [agg("request", CLIENT_MAC, 1000), agg("reply", NODE_A_MAC, 1000), agg("reply", NODE_B_MAC, 1001)]]], 2000);
    const f = liveFindings(v, ctx({ expectedOwner: "node-a" }), 2000);
    expect(f.map((x) => x.type)).toEqual(["multi-responder", "wrong-owner"]);
    expect(f[1]?.macs).toEqual([NODE_B_MAC]);
    expect(f[1]?.detail).toContain("owner should be node-a");
  });

  it("finds nothing when only the expected owner answers", () => {
    const v = view([["node-a", [agg("request", CLIENT_MAC, 1000), agg("reply", NODE_A_MAC, 1000)]]], 2000);
    expect(liveFindings(v, ctx({ expectedOwner: "node-a" }), 2000)).toEqual([]);
  });

  it("waits NO_RESPONDER_MS before calling a first unanswered request no-responder", () => {
    const young = view([["node-a", [agg("request", CLIENT_MAC, 1000)]]], 1100);
    expect(liveFindings(young, ctx(), 1100)).toEqual([]);
    const old = view([["node-a", [agg("request", CLIENT_MAC, 1000), agg("request", CLIENT_MAC, 4500)]]], 4500);
    expect(liveFindings(old, ctx(), 4500).map((x) => x.type)).toEqual(["no-responder"]);
  });

  it("finds split-brain when two MACs announce within the window, not when they are far apart", () => {
    const close = view([["node-a", [agg("gratuitous-request", NODE_A_MAC, 1000), agg("gratuitous-request", NODE_B_MAC, 3000)]]], 4000);
    expect(liveFindings(close, ctx(), 4000).map((x) => x.type)).toContain("split-brain");
    const far = view([["node-a", [agg("gratuitous-request", NODE_A_MAC, 1000), agg("gratuitous-request", NODE_B_MAC, 30_000)]]], 30_500);
    expect(liveFindings(far, ctx(), 30_500).map((x) => x.type)).not.toContain("split-brain");
  });

  it("finds capture-lost only when every agent that captured the IP is down", () => {
    const v = view([["node-a", [agg("request", CLIENT_MAC, 1000)]], ["node-b", [agg("request", CLIENT_MAC, 1000)]]], 1500);
    expect(liveFindings(v, ctx({ downAgents: new Set(["node-a"]) }), 1500).map((x) => x.type)).not.toContain("capture-lost");
    const f = liveFindings(v, ctx({ downAgents: new Set(["node-a", "node-b"]) }), 1500);
    expect(f.find((x) => x.type === "capture-lost")?.detail).toContain("node-a, node-b");
  });

  it("carries the silent-drop nodes' MACs", () => {
    const v = view([["node-a", [agg("reply", NODE_B_MAC, 1000)]]], 1500);
    const f = liveFindings(v, ctx({ silentDropNodes: ["node-b"] }), 1500);
    expect(f).toEqual([expect.objectContaining({ type: "silent-drop", macs: [NODE_B_MAC] })]);
  });
});

describe("FindingTracker", () => {
  const multi = { type: "multi-responder" as const, macs: [NODE_A_MAC, NODE_B_MAC], detail: "two" };

  it("opens once, stays open through gaps shorter than the hysteresis, then clears", () => {
    const t = new FindingTracker();
    expect(t.update(VIP, 0, [multi]).map((x) => x.kind)).toEqual(["opened"]);
    expect(t.update(VIP, 1000, [multi])).toEqual([]);
    expect(t.update(VIP, 1000 + CLEAR_AFTER_MS - 1, [])).toEqual([]);
    expect(t.update(VIP, 2000, [multi])).toEqual([]);
    const cleared = t.update(VIP, 2000 + CLEAR_AFTER_MS, []);
    expect(cleared).toEqual([expect.objectContaining({ kind: "cleared", at: 2000 + CLEAR_AFTER_MS, finding: expect.objectContaining({ firstSeen: 0, lastSeen: 2000, count: 3 }) })]);
    expect(t.open()).toEqual([]);
    expect(t.ips()).toEqual([]);
  });

  it("reports an update when a new MAC joins an open finding", () => {
    const t = new FindingTracker();
    t.update(VIP, 0, [{ ...multi, macs: [NODE_A_MAC] }]);
    const u = t.update(VIP, 10, [multi]);
    expect(u).toEqual([expect.objectContaining({ kind: "updated", finding: expect.objectContaining({ macs: [NODE_A_MAC, NODE_B_MAC] }) })]);
  });

  it("restores open findings so a restart does not open them again", () => {
    const a = new FindingTracker();
    a.update(VIP, 0, [multi]);
    const b = new FindingTracker();
    b.restore(a.open());
    expect(b.update(VIP, 100, [multi])).toEqual([]);
    expect(b.open(VIP)[0]?.firstSeen).toBe(0);
  });
});
