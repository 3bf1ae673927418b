import { describe, expect, it } from "vitest";
import { ProbeSession } from "./probe.js";
import { effectiveArpSetting, impliedProxyMode, isStrict } from "./kernel.js";

const A = "02:00:5e:00:00:0a";
const B = "02:00:5e:00:00:0b";

describe("ProbeSession", () => {
  it("keeps at most maxReplies distinct MACs per request and counts the rest as overflow, still answered by several", () => {
    const p = new ProbeSession("192.0.2.200", 1000, 4);
    p.request(0);
    const mac = (i: number) => `02:00:5e:00:01:${i.toString(16).padStart(2, "0")}`;
    for (let i = 0; i < 200; i++) expect(p.reply(mac(i), 1 + i / 1000)).toBe(1);
    expect(p.reply(mac(0), 5)).toBe(1);
    expect(p.result(1)?.replies.map((r) => r.mac)).toEqual([mac(0), mac(1), mac(2), mac(3)]);
    expect(p.overflow(1)).toBe(196);
    expect(p.summary()).toMatchObject({ requests: 1, multiAnswered: 1 });
    expect(new ProbeSession("192.0.2.200", 1000).maxReplies).toBe(16);
    expect(() => new ProbeSession("192.0.2.200", 1000, 1)).toThrow(RangeError);
  });

  it("attributes replies to the latest request and counts multi-answered requests", () => {
    const p = new ProbeSession("192.0.2.200", 1000);
    p.request(0);
    expect(p.reply(A, 0.2)).toBe(1);
    expect(p.reply(B, 0.3)).toBe(1);
    p.request(1000);
    expect(p.reply(A, 1000.1)).toBe(2);
    p.request(2000);
    expect(p.summary()).toEqual({
      ip: "192.0.2.200",
      requests: 3,
      unanswered: 1,
      multiAnswered: 1,
      macs: [
        { mac: A, replies: 2, first: 2 },
        { mac: B, replies: 1, first: 0 },
      ],
    });
    expect(p.result(1)?.replies.map((r) => [r.mac, r.latencyMs])).toEqual([
      [A, 0.2],
      [B, expect.closeTo(0.3, 6)],
    ]);
  });

  it("ignores replies before any request, after the window, and repeats of one MAC", () => {
    const p = new ProbeSession("192.0.2.200", 500);
    expect(p.reply(A, 0)).toBeNull();
    p.request(10);
    expect(p.reply(A, 600)).toBeNull();
    p.request(1000);
    p.reply(A, 1001);
    p.reply(A, 1002);
    expect(p.summary().macs).toEqual([{ mac: A, replies: 1, first: 1 }]);
  });
});

describe("kernel ARP settings", () => {
  it("takes the larger of all and the interface", () => {
    expect(effectiveArpSetting(1, 0)).toBe(1);
    expect(effectiveArpSetting(0, 2)).toBe(2);
  });
  it.each([
    { ignore: 0, announce: 0, strict: false },
    { ignore: 1, announce: 0, strict: false },
    { ignore: 1, announce: 2, strict: true },
    { ignore: 2, announce: 2, strict: true },
  ])("arp_ignore $ignore, arp_announce $announce -> strict $strict", ({ ignore, announce, strict }) =>
    expect(isStrict(ignore, announce)).toBe(strict),
  );
  it("reads IPVS mode off kube-ipvs0", () => {
    expect([impliedProxyMode(true), impliedProxyMode(false)]).toEqual(["ipvs", "not-ipvs"]);
  });
});
