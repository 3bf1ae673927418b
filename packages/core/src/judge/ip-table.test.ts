import { describe, expect, it } from "vitest";
import { compareIP, ipOrderKey } from "../packet/addr.js";
import { IpTable } from "./ip-table.js";
import type { ObservationAggregate } from "../wire.js";
import { CLIENT_MAC, NODE_A_MAC, NODE_B_MAC, VIP } from "../__tests__/fixtures.js";

function agg(kind: ObservationAggregate["kind"], mac: string, t: number, count = 1, ip = VIP): ObservationAggregate {
  return { ip, mac, kind, iface: "eth0", count, firstSeen: t, lastSeen: t, targetMac: CLIENT_MAC, ethernetMismatch: 0, ethSrc: null };
}
const VIP6 = "2001:db8::c8";
const nodes = new Map([
  [NODE_A_MAC, "node-a"],
  [NODE_B_MAC, "node-b"],
]);
const nodeOf = (mac: string) => nodes.get(mac) ?? null;
/** recent reads recentMacs the way the judge does: into an array already holding what an earlier IP left there. */
const recent = (t: IpTable, ip: string, now: number): string[] => {
  const out = ["left", "over", "from", "before"];
  return out.slice(0, t.recentMacs(ip, now, out));
};

describe("IpTable", () => {
  it("counts a request seen by several capture points once, and each responder with its node", () => {
    const t = new IpTable();
    t.apply("node-a", [agg("request", CLIENT_MAC, 1000, 3), agg("reply", NODE_A_MAC, 1000, 3)]);
    t.apply("node-b", [agg("request", CLIENT_MAC, 1000, 3), agg("reply", NODE_B_MAC, 1001, 3)]);
    const v = t.view(VIP, nodeOf);
    expect(v?.requests).toBe(3); // the same broadcasts seen by two capture points count once
    expect(v?.responders.map((r) => [r.node, r.replies, r.seenBy])).toEqual([
      ["node-a", 3, ["node-a"]],
      ["node-b", 3, ["node-b"]],
    ]);
    expect(recent(t, VIP, 2000).sort()).toEqual([NODE_A_MAC, NODE_B_MAC]);
    expect(recent(t, VIP, 1001 + 5001)).toEqual([]);
  });

  it("folds the least recently seen MACs into a sum at maxMacsPerIp, losing no count", () => {
    const t = new IpTable({ maxMacsPerIp: 4 });
    const mac = (i: number) => `02:00:00:00:01:${i.toString(16).padStart(2, "0")}`;
    for (let i = 0; i < 10; i++) t.apply("node-a", [agg("reply", mac(i), 1000 + i, i + 1)]);
    const v = t.view(VIP, nodeOf);
    expect(v?.responders.map((r) => r.mac).sort()).toEqual([6, 7, 8, 9].map(mac));
    expect(v?.folded).toEqual({ macs: 6, replies: 1 + 2 + 3 + 4 + 5 + 6, gratuitous: 0, lastSeen: 1005 });
    expect(t.foldedMacs).toBe(6);
    // A folded MAC that comes back is a responder again (no longer counted as folded); the oldest left goes instead.
    t.apply("node-a", [agg("reply", mac(0), 1020)]);
    expect(
      t
        .view(VIP, nodeOf)
        ?.responders.map((r) => r.mac)
        .sort(),
    ).toEqual([0, 7, 8, 9].map(mac));
    expect(t.view(VIP, nodeOf)?.folded?.macs).toBe(6); // 1-6 folded; 0 back
    expect(t.foldedMacs).toBe(7);
    // Three MACs taking turns under a limit of two are three MACs, however often they trade places.
    const churn = new IpTable({ maxMacsPerIp: 2 });
    for (let i = 0; i < 30; i++) churn.apply("node-a", [agg("reply", mac(i % 3), 2000 + i)]);
    expect(churn.view(VIP, nodeOf)?.folded?.macs).toBe(1);
  });

  it("removes an IP and tells its last activity", () => {
    const t = new IpTable();
    t.apply("node-a", [agg("request", CLIENT_MAC, 1000), agg("reply", NODE_A_MAC, 1500)]);
    expect(t.lastActivity(VIP)).toBe(1500);
    expect(t.size).toBe(1);
    expect(t.remove(VIP)).toBe(true);
    expect(t.view(VIP, nodeOf)).toBeNull();
    expect(t.lastActivity(VIP)).toBe(0);
  });

  it("counts announcements apart from replies, with the last one's time", () => {
    const t = new IpTable();
    t.apply("node-a", [agg("gratuitous-request", NODE_A_MAC, 1000), agg("gratuitous-reply", NODE_A_MAC, 1100)]);
    expect(t.view(VIP, nodeOf)?.responders[0]).toMatchObject({ gratuitous: 2, replies: 0, lastGratuitous: 1100 });
  });

  it("counts an unsolicited NA as an announcement and a solicited one as a reply, with the last announcement's time", () => {
    const t = new IpTable();
    t.apply("node-a", [agg("na-unsolicited", NODE_A_MAC, 1000, 3, VIP6), agg("na-solicited", NODE_A_MAC, 1100, 2, VIP6)]);
    t.apply("node-a", [agg("na-unsolicited", NODE_A_MAC, 1300, 1, VIP6)]);
    expect(t.view(VIP6, nodeOf)?.responders).toEqual([
      expect.objectContaining({ mac: NODE_A_MAC, gratuitous: 4, replies: 2, lastGratuitous: 1300, lastSeen: 1300 }),
    ]);
  });

  it.each([
    { case: "a DAD probe (NS from ::)", kind: "ns-dad" as const, ip: VIP6 },
    { case: "an ARP probe (sender 0.0.0.0)", kind: "probe" as const, ip: VIP },
  ])("counts no request and no responder for $case, live or restored", ({ kind, ip }) => {
    const t = new IpTable();
    t.apply("node-a", [agg(kind, NODE_B_MAC, 1000, 3, ip)]);
    t.restore([agg(kind, NODE_B_MAC, 500, 5, ip)]);
    expect(t.view(ip, nodeOf)).toMatchObject({ requests: 0, lastRequest: null, responders: [], capturedBy: [] });
    expect(recent(t, ip, 1000)).toEqual([]);
    // The solicitation a client sends for the same address is a request.
    t.apply("node-a", [agg(kind === "ns-dad" ? "ns" : "request", CLIENT_MAC, 2000, 2, ip)]);
    expect(t.view(ip, nodeOf)).toMatchObject({ requests: 2, lastRequest: 2000, responders: [] });
  });

  it("reports which IPs a batch touched", () => {
    const t = new IpTable();
    expect([...t.apply("node-a", [agg("reply", NODE_A_MAC, 1)])]).toEqual([VIP]);
    expect(t.view("192.0.2.9", nodeOf)).toBeNull();
  });

  it("sorts IPs numerically", () => {
    expect(["10.0.0.10", "10.0.0.9", "9.0.0.1"].sort(compareIP)).toEqual(["9.0.0.1", "10.0.0.9", "10.0.0.10"]);
    const mixed = ["2001:db8::10", "10.0.0.10", "2001:db8::9", "::1", "9.0.0.1", "2001:db8:0:1::"];
    const byKey = [...mixed].sort((a, b) => (ipOrderKey(a) < ipOrderKey(b) ? -1 : 1));
    expect(byKey).toEqual([...mixed].sort(compareIP));
    expect(byKey).toEqual(["9.0.0.1", "10.0.0.10", "::1", "2001:db8::9", "2001:db8::10", "2001:db8:0:1::"]);
  });

  it("adds restored history to the live counts without making it a capture point", () => {
    const t = new IpTable();
    t.restore([agg("request", CLIENT_MAC, 500, 10), agg("reply", NODE_A_MAC, 500, 10)]);
    t.apply("node-a", [agg("request", CLIENT_MAC, 1000, 2), agg("reply", NODE_A_MAC, 1000, 2)]);
    t.apply("node-b", [agg("request", CLIENT_MAC, 1000, 2)]);
    const v = t.view(VIP, nodeOf);
    expect(v?.requests).toBe(12);
    expect(v?.responders[0]).toMatchObject({ replies: 12, firstSeen: 500, lastSeen: 1000, seenBy: ["node-a"] });
    expect(v?.capturedBy).toEqual(["node-a", "node-b"]);
  });
});
