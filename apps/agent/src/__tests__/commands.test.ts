import { describe, expect, it } from "vitest";
import type { FrameHandler, PacketSource } from "@whohas/capture";
import { classifyFrame, newArpReply, newSolicitedAdvertisement, type HubMessage, type AgentMessage } from "@whohas/core";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir, type NetworkInterfaceInfo } from "node:os";
import { join } from "node:path";
import { egressFor, runAnnounce, runProbe, parseDuration, vlanDevices, type Clock, type Egress } from "../commands.js";
import { parseSize } from "../config.js";
import { parseListen } from "../metrics.js";
import { hubCommand } from "../run-agent.js";
import { fakeClock } from "./fake-clock.js";

const EGRESS: Egress = { iface: "eth0", mac: "02:00:5e:00:00:01", address: "192.0.2.1", linkLocal: "fe80::1" };
const VIP = "192.0.2.200";

/** FakeWire records what was sent and lets responders answer each request at once. */
class FakeWire implements PacketSource {
  sent: { t: number; frame: Uint8Array }[] = [];
  onFrame: FrameHandler | null = null;
  closed = false;
  constructor(
    readonly iface: string,
    readonly clock: Clock,
    readonly responders: (seq: number) => string[],
  ) {}
  start(f: FrameHandler) {
    this.onFrame = f;
  }
  send(frame: Uint8Array) {
    this.sent.push({ t: this.clock.now(), frame });
    const seq = this.sent.length;
    this.responders(seq).forEach((mac, i) => {
      const at = this.clock.now() + 0.1 * (i + 1);
      this.onFrame?.(newArpReply(mac, VIP, EGRESS.mac, EGRESS.address), at, at);
    });
  }
  stats() {
    return null;
  }
  close() {
    this.closed = true;
  }
}

describe("egress inside a VLAN", () => {
  it("reads the node's VLAN devices from /proc/net/vlan/config, and none when the file is absent", () => {
    const dir = mkdtempSync(join(tmpdir(), "whohas-vlan-"));
    const file = join(dir, "config");
    writeFileSync(
      file,
      "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\neth0.30        | 30  | eth0\nbond0.4094     | 4094  | bond0\n",
    );
    expect([...vlanDevices(file)]).toEqual([
      ["eth0.30", 30],
      ["bond0.4094", 4094],
    ]);
    expect(vlanDevices(join(dir, "absent")).size).toBe(0);
  });

  it("acts from the VLAN's device, falls back to one for an untagged IP no plain link has, and refuses a named link off the VLAN", () => {
    const addr = (address: string, cidr: string, mac: string) => ({
      address,
      netmask: "",
      family: "IPv4" as const,
      mac,
      internal: false,
      cidr,
    });
    const ifs = {
      eth0: [addr("10.0.0.5", "10.0.0.5/24", "02:00:5e:00:00:0a")],
      "eth0.30": [addr("10.30.0.5", "10.30.0.5/24", "02:00:5e:00:00:0a")],
    };
    const vlans = new Map([["eth0.30", 30]]);
    expect(egressFor("10.30.0.10", undefined, 30, vlans, ifs).iface).toBe("eth0.30");
    expect(egressFor("10.0.0.10", undefined, null, vlans, ifs).iface).toBe("eth0");
    expect(egressFor("10.30.0.10", undefined, null, vlans, ifs).iface).toBe("eth0.30");
    expect(() => egressFor("10.0.0.10", undefined, 30, vlans, ifs)).toThrow(/^no interface on VLAN 30 \(eth0\.30\) has an IPv4 address/);
    expect(() => egressFor("10.30.0.10", "eth0", 30, vlans, ifs)).toThrow(/^--interface eth0 is not on VLAN 30/);
    expect(egressFor("10.30.0.10", "eth0.30", 30, vlans, ifs).iface).toBe("eth0.30");
  });

  it("refuses an IP in a VLAN this node has no device on, saying which VLAN", () => {
    expect(() => egressFor("192.0.2.10", undefined, 30, new Map())).toThrow(
      /^this node has no interface on VLAN 30 .*\/proc\/net\/vlan\/config/,
    );
    // A device on another VLAN does not qualify.
    expect(() => egressFor("192.0.2.10", undefined, 30, new Map([["lo", 40]]))).toThrow(/no interface on VLAN 30/);
  });
});

describe("egress for IPv6", () => {
  const addr = (cidr: string, mac: string): NetworkInterfaceInfo => {
    const address = cidr.split("/")[0] ?? "";
    const base = { address, netmask: "", mac, internal: false, cidr };
    return address.includes(":") ? { ...base, family: "IPv6", scopeid: 0 } : { ...base, family: "IPv4" };
  };
  const MAC0 = "02:00:5e:00:00:0a";
  const MAC1 = "02:00:5e:00:00:1a";
  const ifs = {
    lo: [{ ...addr("::1/128", "00:00:00:00:00:00"), internal: true }],
    eth0: [addr("10.0.0.5/24", MAC0), addr("fe80::a/64", MAC0), addr("2001:db8::5/64", MAC0)],
    eth1: [addr("fe80::1a/64", MAC1), addr("2001:db8:1::5/64", MAC1)],
    "eth0.40": [addr("2001:db8:40::5/64", MAC0), addr("fe80::40/64", MAC0)],
    // A link with a link-local address alone reaches no prefix.
    eth2: [addr("fe80::2a/64", "02:00:5e:00:00:2a")],
  };
  const vlans = new Map([["eth0.40", 40]]);

  it("sends from the interface holding an address in the VIP's prefix, with that link's link-local address", () => {
    expect(egressFor("2001:db8::c8", undefined, null, vlans, ifs)).toEqual({
      iface: "eth0",
      mac: MAC0,
      address: "2001:db8::5",
      linkLocal: "fe80::a",
    });
    // Written in any spelling, the address is the same one.
    expect(egressFor("2001:0db8:0001:0:0::c8", undefined, null, vlans, ifs)).toEqual({
      iface: "eth1",
      mac: MAC1,
      address: "2001:db8:1::5",
      linkLocal: "fe80::1a",
    });
  });

  it("sends inside a VLAN from its device, and refuses a prefix the VLAN's device does not hold", () => {
    expect(egressFor("2001:db8:40::c8", undefined, 40, vlans, ifs)).toEqual({
      iface: "eth0.40",
      mac: MAC0,
      address: "2001:db8:40::5",
      linkLocal: "fe80::40",
    });
    expect(egressFor("2001:db8:40::c8", undefined, null, vlans, ifs).iface).toBe("eth0.40");
    expect(() => egressFor("2001:db8::c8", undefined, 40, vlans, ifs)).toThrow(
      /^no interface on VLAN 40 \(eth0\.40\) has an IPv6 address in the subnet of 2001:db8::c8; name one with --interface$/,
    );
    expect(() => egressFor("2001:db8:40::c8", undefined, 30, vlans, ifs)).toThrow(/^this node has no interface on VLAN 30 /);
  });

  it("says so when no interface is on the VIP's network: link-local and IPv4 addresses do not count", () => {
    expect(() => egressFor("2001:db8:99::c8", undefined, null, vlans, ifs)).toThrow(
      /^no interface has an IPv6 address in the subnet of 2001:db8:99::c8; name one with --interface$/,
    );
    expect(() => egressFor("2001:db8::c8", undefined, null, new Map(), { eth2: ifs.eth2, eth9: [addr("10.0.0.9/24", MAC0)] })).toThrow(
      /^no interface has an IPv6 address in the subnet of 2001:db8::c8/,
    );
    expect(() => egressFor("2001:db8::c8", "eth2", null, vlans, ifs)).toThrow(
      /^--interface eth2 has no IPv6 address \(link-local ones aside\) to send from$/,
    );
    expect(() => egressFor("192.0.2.10", "eth1", null, vlans, ifs)).toThrow(/^--interface eth1 has no IPv4 address to send from$/);
  });
});

describe("runProbe", () => {
  it("broadcasts every interval and counts every MAC per request", async () => {
    const clock = fakeClock();
    const A = "02:00:5e:00:00:0a";
    const B = "02:00:5e:00:00:0b";
    let wire: FakeWire | null = null;
    const results: number[] = [];
    const summary = await runProbe({
      ip: VIP,
      durationMs: 5000,
      intervalMs: 1000,
      egress: EGRESS,
      clock,
      open: (iface) => (wire = new FakeWire(iface, clock, (seq) => (seq === 3 ? [A] : seq === 5 ? [] : [A, B]))),
      onResult: (r) => results.push(r.replies.length),
    });
    expect(results).toEqual([2, 2, 1, 2, 0]);
    expect(summary).toMatchObject({
      requests: 5,
      unanswered: 1,
      multiAnswered: 3,
      macs: [
        { mac: A, replies: 4, first: 4 },
        { mac: B, replies: 3, first: 0 },
      ],
    });
    const w = wire as unknown as FakeWire;
    expect(w.sent.map((s) => s.t)).toEqual([0, 1000, 2000, 3000, 4000]);
    expect(w.sent.every((s) => classifyFrame(s.frame).kind === "observed")).toBe(true);
    expect(classifyFrame(w.sent[0]?.frame ?? new Uint8Array())).toMatchObject({
      obs: { kind: "request", ip: VIP, ethDst: "ff:ff:ff:ff:ff:ff", peerIp: "192.0.2.1" },
    });
    expect(w.closed).toBe(true);
  });
});

describe("runProbe over IPv6", () => {
  it("sends neighbor solicitations and counts solicited advertisements per request", async () => {
    const clock = fakeClock();
    const egress6: Egress = { iface: "eth0", mac: EGRESS.mac, address: "2001:db8::1", linkLocal: "fe80::1" };
    const vip6 = "2001:db8::c8";
    const sent: Uint8Array[] = [];
    let deliver: FrameHandler | null = null;
    const wire: PacketSource = {
      iface: "eth0",
      start: (f) => (deliver = f),
      send: (frame) => {
        sent.push(frame);
        for (const [mac, ll] of [
          ["02:00:5e:00:00:0a", "fe80::a"],
          ["02:00:5e:00:00:0b", "fe80::b"],
        ] as const) {
          const at = clock.now() + 0.2;
          deliver?.(newSolicitedAdvertisement(mac, ll, vip6, egress6.mac, egress6.address), at, at);
        }
      },
      stats: () => null,
      close: () => undefined,
    };
    const summary = await runProbe({ ip: vip6, durationMs: 3000, intervalMs: 1000, egress: egress6, clock, open: () => wire });
    expect(summary).toMatchObject({ requests: 3, multiAnswered: 3 });
    expect(classifyFrame(sent[0] ?? new Uint8Array())).toMatchObject({ obs: { kind: "ns", ip: vip6, peerIp: "2001:db8::1" } });
  });
});

describe("runAnnounce", () => {
  it("bursts at once and on each 1.1 s tick until 5 s after the last set, two frames a burst", async () => {
    const clock = fakeClock();
    let wire: FakeWire | null = null;
    const bursts = await runAnnounce({
      ip: VIP,
      durationMs: 2000,
      egress: EGRESS,
      clock,
      open: (iface) => (wire = new FakeWire(iface, clock, () => [])),
    });
    const w = wire as unknown as FakeWire;
    expect(bursts).toBe(6);
    const times = [...new Set(w.sent.map((s) => s.t))];
    expect(times).toEqual([0, 1100, 2200, 3300, 4400, 5500]);
    expect(w.sent.map((s) => classifyFrame(s.frame)).slice(0, 2)).toMatchObject([
      { obs: { kind: "gratuitous-request", ip: VIP, mac: EGRESS.mac, targetMac: "ff:ff:ff:ff:ff:ff" } },
      { obs: { kind: "gratuitous-reply", ip: VIP, mac: EGRESS.mac, targetMac: "ff:ff:ff:ff:ff:ff" } },
    ]);
  });
});

describe("runAnnounce over IPv6", () => {
  it("sends MetalLB's unsolicited NA from the link-local address, one a burst", async () => {
    const clock = fakeClock();
    let wire: FakeWire | null = null;
    const vip6 = "2001:db8::c8";
    const bursts = await runAnnounce({
      ip: vip6,
      durationMs: 1000,
      egress: EGRESS,
      clock,
      open: (i) => (wire = new FakeWire(i, clock, () => [])),
    });
    const w = wire as unknown as FakeWire;
    expect(w.sent).toHaveLength(bursts);
    expect(classifyFrame(w.sent[0]?.frame ?? new Uint8Array())).toMatchObject({
      obs: { kind: "na-unsolicited", ip: vip6, mac: EGRESS.mac, peerIp: "ff02::1" },
    });
  });

  it("refuses, naming the interface, when it has no IPv6 link-local address to announce from", async () => {
    const opened: string[] = [];
    const clock = fakeClock();
    const announce = runAnnounce({
      ip: "2001:db8::c8",
      durationMs: 1000,
      egress: { ...EGRESS, iface: "eth3", linkLocal: null },
      clock,
      open: (i) => (opened.push(i), new FakeWire(i, clock, () => [])),
    });
    await expect(announce).rejects.toThrow(/^eth3 has no IPv6 link-local address to announce 2001:db8::c8 from/);
    expect(opened).toEqual([]);
  });
});

describe("hubCommand", () => {
  it("announces an IP seen in VLAN 30 from the egress chosen for that VLAN, and says where", async () => {
    const sent: AgentMessage[] = [];
    const asked: [string, number | null][] = [];
    const clock = fakeClock();
    let wire: FakeWire | null = null;
    const egress30: Egress = { ...EGRESS, iface: "eth0.30", address: "10.30.0.5" };
    const run = hubCommand("node-1", {
      egress: (ip, vlan) => (asked.push([ip, vlan]), egress30),
      open: (iface) => (wire = new FakeWire(iface, clock, () => [])),
      clock,
    });
    await run(
      { v: 2, type: "announce", id: "c2", ip: VIP, vlan: 30, durationMs: 1000, expectedOwner: "node-1", force: false },
      (m) => (sent.push(m), true),
    );
    expect(asked).toEqual([[VIP, 30]]);
    const w = wire as unknown as FakeWire;
    expect(w.iface).toBe("eth0.30");
    expect(classifyFrame(w.sent[0]?.frame ?? new Uint8Array())).toMatchObject({ obs: { kind: "gratuitous-request", ip: VIP } });
    expect(sent).toEqual([
      expect.objectContaining({
        type: "command-done",
        id: "c2",
        ok: true,
        message: `announced ${VIP} on VLAN 30 from eth0.30 (${EGRESS.mac})`,
      }),
    ]);
  });

  it("refuses to announce from a node that is not the expected owner", async () => {
    const sent: AgentMessage[] = [];
    const msg: Extract<HubMessage, { type: "announce" }> = {
      v: 2,
      type: "announce",
      id: "c1",
      ip: VIP,
      durationMs: 1000,
      expectedOwner: "node-2",
      force: false,
    };
    await hubCommand("node-1")(msg, (m) => (sent.push(m), true));
    expect(sent).toEqual([
      expect.objectContaining({
        type: "command-done",
        id: "c1",
        ok: false,
        message: expect.stringMatching(/node-1 is not the expected owner of 192.0.2.200 \(node-2\)/),
      }),
    ]);
  });
});

describe("flag parsing", () => {
  it.each([
    ["16MiB", 16 * 1024 ** 2],
    ["512k", 512 * 1024],
    ["1048576", 1048576],
    ["1G", 1024 ** 3],
  ])("size %s", (s, n) => expect(parseSize(s)).toBe(n));
  it("refuses a bad size", () => expect(() => parseSize("lots")).toThrow(/not a size/));
  it.each([
    ["60s", 60_000],
    ["1500ms", 1500],
    ["2m", 120_000],
    ["250", 250],
  ])("duration %s", (s, n) => expect(parseDuration(s)).toBe(n));
  it.each([
    [":9472", { host: "0.0.0.0", port: 9472 }],
    ["127.0.0.1:9", { host: "127.0.0.1", port: 9 }],
    ["[::1]:80", { host: "::1", port: 80 }],
  ])("listen %s", (s, v) => expect(parseListen(s)).toEqual(v));
  it("refuses a bad listen address", () => expect(() => parseListen("nope")).toThrow(/expected \[HOST\]:PORT/));
});
