import { describe, expect, it } from "vitest";
import {
  GRATUITOUS_TICK_MS,
  GratuitousScheduler,
  arpDecision,
  gratuitousFrames,
  ndpDecision,
  speakerDecision,
  type SpeakerInterface,
} from "./speaker.js";
import { encodeArpFrame, newArpReply, newArpRequest } from "../packet/arp.js";
import { newNeighborSolicitation, newSolicitedAdvertisement, encodeNdpFrame } from "../packet/ndp.js";
import { classifyFrame } from "../packet/classify.js";

const IFACE: SpeakerInterface = { name: "eth0", mac: "02:00:5e:00:00:0a", linkLocal: "fe80::a" };
const CLIENT = { mac: "02:00:5e:00:00:01", ip: "192.0.2.1" };
const VIP = "192.0.2.200";
const VIP6 = "2001:db8::c8";
const owns = (ip: string) => ip === VIP || ip === VIP6;

describe("arpDecision", () => {
  it("answers a broadcast request for an announced IP, byte for byte as MetalLB", () => {
    const d = arpDecision(IFACE, owns, newArpRequest(CLIENT.mac, CLIENT.ip, VIP));
    expect(d.kind).toBe("reply");
    if (d.kind === "reply") expect(Buffer.from(d.frame).equals(Buffer.from(newArpReply(IFACE.mac, VIP, CLIENT.mac, CLIENT.ip)))).toBe(true);
  });

  it("answers a request unicast to its own MAC (a client re-checking its cache)", () => {
    const unicast = encodeArpFrame({
      ethDst: IFACE.mac,
      ethSrc: CLIENT.mac,
      op: 1,
      senderMac: CLIENT.mac,
      senderIp: CLIENT.ip,
      targetMac: IFACE.mac,
      targetIp: VIP,
    });
    expect(arpDecision(IFACE, owns, unicast).kind).toBe("reply");
  });

  it.each([
    { case: "a reply", frame: newArpReply("02:00:5e:00:00:0b", VIP, CLIENT.mac, CLIENT.ip), reason: "arpReply" },
    {
      case: "a request unicast to another MAC",
      frame: encodeArpFrame({
        ethDst: "02:00:5e:00:00:0b",
        ethSrc: CLIENT.mac,
        op: 1,
        senderMac: CLIENT.mac,
        senderIp: CLIENT.ip,
        targetMac: "00:00:00:00:00:00",
        targetIp: VIP,
      }),
      reason: "ethernetDestination",
    },
    { case: "a request for another IP", frame: newArpRequest(CLIENT.mac, CLIENT.ip, "192.0.2.9"), reason: "announceIP" },
    { case: "garbage", frame: new Uint8Array(10), reason: "error" },
  ])("drops $case with reason $reason", ({ frame, reason }) => {
    expect(arpDecision(IFACE, owns, frame)).toEqual({ kind: "drop", reason });
  });
});

describe("ndpDecision", () => {
  it("answers an NS with a solicited NA from the link-local address, S=1 O=0", () => {
    const d = speakerDecision(IFACE, owns, newNeighborSolicitation(CLIENT.mac, "2001:db8::1", VIP6));
    expect(d.kind).toBe("reply");
    if (d.kind === "reply") {
      expect(
        Buffer.from(d.frame).equals(Buffer.from(newSolicitedAdvertisement(IFACE.mac, "fe80::a", VIP6, CLIENT.mac, "2001:db8::1"))),
      ).toBe(true);
    }
  });

  it.each([
    {
      case: "a DAD probe (no source LLA)",
      frame: encodeNdpFrame({
        ethDst: "33:33:ff:00:00:c8",
        ethSrc: CLIENT.mac,
        type: "ns",
        src: "::",
        dst: "ff02::1:ff00:c8",
        target: VIP6,
        router: false,
        solicited: false,
        override: false,
        options: [],
      }),
      reason: "noSourceLL",
    },
    {
      case: "an advertisement",
      frame: newSolicitedAdvertisement("02:00:5e:00:00:0b", "fe80::b", VIP6, CLIENT.mac, "2001:db8::1"),
      reason: "messageType",
    },
    { case: "an NS for another IP", frame: newNeighborSolicitation(CLIENT.mac, "2001:db8::1", "2001:db8::9"), reason: "announceIP" },
  ])("drops $case", ({ frame, reason }) => {
    expect(ndpDecision(IFACE, owns, frame)).toEqual({ kind: "drop", reason });
  });
});

describe("gratuitousFrames", () => {
  it("sends an ARP request then a reply, broadcast, SPA = TPA, THA ff:ff:ff:ff:ff:ff", () => {
    const frames = gratuitousFrames(IFACE, VIP).map((f) => classifyFrame(f));
    expect(frames).toMatchObject([
      {
        kind: "observed",
        obs: { kind: "gratuitous-request", ip: VIP, mac: IFACE.mac, targetMac: "ff:ff:ff:ff:ff:ff", ethDst: "ff:ff:ff:ff:ff:ff" },
      },
      {
        kind: "observed",
        obs: { kind: "gratuitous-reply", ip: VIP, mac: IFACE.mac, targetMac: "ff:ff:ff:ff:ff:ff", ethDst: "ff:ff:ff:ff:ff:ff" },
      },
    ]);
  });

  it("sends one unsolicited NA with O=1 to ff02::1 for IPv6", () => {
    expect(gratuitousFrames(IFACE, VIP6).map((f) => classifyFrame(f))).toMatchObject([
      { kind: "observed", obs: { kind: "na-unsolicited", ip: VIP6, peerIp: "ff02::1" } },
    ]);
  });
});

describe("GratuitousScheduler (MetalLB PR #736)", () => {
  /** run drives a ticker from t=0 every 1.1 s and calls set at the given times; returns when bursts went out. */
  function run(sets: number[], until: number): number[] {
    const s = new GratuitousScheduler();
    const bursts: number[] = [];
    const events = [
      ...sets.map((t) => ({ t, set: true })),
      ...Array.from({ length: Math.floor(until / GRATUITOUS_TICK_MS) }, (_, i) => ({ t: (i + 1) * GRATUITOUS_TICK_MS, set: false })),
    ];
    events.sort((a, b) => a.t - b.t || Number(b.set) - Number(a.set));
    for (const e of events) {
      if (e.set) {
        if (s.set(VIP, e.t)) bursts.push(e.t);
      } else if (s.tick(e.t).includes(VIP)) bursts.push(e.t);
    }
    return bursts;
  }

  it("bursts at once, then on each tick for 5 s", () => {
    expect(run([50], 20_000)).toEqual([50, 1100, 2200, 3300, 4400]);
  });

  it("a repeated set extends the window without an extra immediate burst", () => {
    expect(run([50, 3000], 20_000)).toEqual([50, 1100, 2200, 3300, 4400, 5500, 6600, 7700]);
  });

  it("a set after the window closed bursts at once again", () => {
    expect(run([50, 10_000], 20_000)).toEqual([50, 1100, 2200, 3300, 4400, 10_000, 11_000, 12_100, 13_200, 14_300]);
  });

  it("stops at once on delete", () => {
    const s = new GratuitousScheduler();
    s.set(VIP, 0);
    s.delete(VIP);
    expect(s.tick(1100)).toEqual([]);
  });
});
